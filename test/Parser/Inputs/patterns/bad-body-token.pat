pattern @t.relu {
  %r = nn.relu(%x)
  return %r
}
