// TVM's  matmul_add | clip(matmul_add, *, *)  as two patterns, the larger first
pattern @orclip {
  %m = matmul(%x, %y)
  %a = add(%m, %b)
  %c = clip(%a)
}
pattern @orclip {
  %m = matmul(%x, %y)
  %a = add(%m, %b)
}
