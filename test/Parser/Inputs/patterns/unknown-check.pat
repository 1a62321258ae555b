pattern @t.where {
  %r = nn.relu(%x)
  where size(%x) == 1
}
