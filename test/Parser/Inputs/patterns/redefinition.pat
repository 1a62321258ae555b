pattern @t.twice {
  %y = exp(%x)
  %y = nn.relu(%y)
}
