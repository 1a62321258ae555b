pattern @t.where {
  %r = nn.relu(%x)
  where dtype(%x) in [f16, 2]
}
