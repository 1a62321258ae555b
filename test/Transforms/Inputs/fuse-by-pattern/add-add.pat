// Two adds in a row; a chain of three adds yields overlapping candidates.
pattern @t.add_add {
  %t = add(%a, %b)
  %r = add(%t, %c)
}
