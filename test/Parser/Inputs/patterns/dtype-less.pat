pattern @t.where {
  %r = add(%a, %b)
  where dtype(%a) < dtype(%b)
}
