pattern @t.unreachable {
  %e = exp(%x)
  %r = nn.relu(%x)
  root %r
}
