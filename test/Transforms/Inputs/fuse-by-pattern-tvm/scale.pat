pattern @t.scale_exp {
  %s = multiply(%x, %c)
  %e = exp(%s)
}
