// For fbp-hoisted-constant-numeric-name.fir.
pattern @rand.matmul {
  %m = matmul(%a, %w)
}
