pattern @t.get {
  %s = split(%x) {indices_or_sections = 2}
  %g = get(%s, 0)
}
