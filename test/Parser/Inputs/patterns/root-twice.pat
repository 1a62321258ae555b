pattern @t.root {
  %r = nn.relu(%x)
  root %r
  root %r
}
