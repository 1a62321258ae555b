pattern @orclip {
  %m = matmul(%x, %y)
  %a = add(%m, %b)
}
pattern @orclip {
  %m = matmul(%x, %y)
  %a = add(%m, %b)
  %c = clip(%a)
}
