pattern @t.late {
  %r = nn.relu(%y)
  %y = exp(%x)
}
