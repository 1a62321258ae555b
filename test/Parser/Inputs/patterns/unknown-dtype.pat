pattern @lib.mm_relu {
  %m = matmul(%a, %w)
  %r = nn.relu(%m)
  root %r
  where dtype(%a) in [f64], single_use(%m)
}
