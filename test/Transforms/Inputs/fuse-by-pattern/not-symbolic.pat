// `not` of a check that cannot be decided cannot be decided either: a
// symbolic batch may be 1 at run time.
pattern @lib.exp_not_batch1 {
  %e = exp(%x)
  where not(shape(%x)[0] == 1)
}
