pattern @t.get_exp {
  %g = get(%t, 1)
  %e = exp(%g)
}
