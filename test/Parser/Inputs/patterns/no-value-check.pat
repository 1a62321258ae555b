pattern @t.nothing {
  %r = nn.relu(%x)
  where 2 == 3
}
