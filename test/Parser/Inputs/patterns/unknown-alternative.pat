pattern @t.alt {
  %r = add | sub(%a, %b)
}
