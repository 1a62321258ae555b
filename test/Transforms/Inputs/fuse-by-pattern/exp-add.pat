pattern @t.exp_add {
  %a = exp(%x)
  %b = add(%a, %y)
}
