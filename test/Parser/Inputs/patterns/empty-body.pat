pattern @t.empty {
}
