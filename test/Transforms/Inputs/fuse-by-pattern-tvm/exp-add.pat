pattern @t.exp_add {
  %e = exp(%x)
  %s = add(%e, %y)
}
