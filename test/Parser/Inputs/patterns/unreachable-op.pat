pattern @t.unreachable {
  %m = matmul(%a, %w)
  %r = nn.relu(%x)
  root %r
}
