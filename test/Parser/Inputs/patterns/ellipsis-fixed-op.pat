pattern @t.add {
  %r = add(%a, ...)
}
