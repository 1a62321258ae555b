pattern @t.pair_add {
  %p = add | multiply(%x, %y)
  %q = add | multiply(%u, %v)
  %r = add(%p, %q)
}
