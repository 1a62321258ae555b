pattern @t.split_exp {
  %t = split(%x)
  %g = get(%t, 1)
  %e = exp(%g)
}
