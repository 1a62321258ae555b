pattern @t.where {
  %r = nn.relu(%x)
  where rank(%bias) == 1
}
