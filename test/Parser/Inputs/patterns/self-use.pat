pattern @t.self {
  %r = add(%r, %x)
}
