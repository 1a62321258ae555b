pattern @t.bias_add {
  %m = matmul(%a, %w)
  %y = add(%m, %b)
  where rank(%b) == 1
}
