// A wildcard matches a literal operand too; is_constant holds for it.
pattern @t.scale_exp {
  %s = multiply(%x, %c)
  %e = exp(%s)
  where is_constant(%c)
}
