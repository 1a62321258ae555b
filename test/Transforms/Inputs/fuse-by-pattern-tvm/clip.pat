pattern @x.clip {
  %c = clip(%x)
}
