pattern @t.root {
  %r = nn.relu(%x)
  root %x
}
