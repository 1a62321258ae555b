pattern @t.relu {
  %r = nn.relu(%a, %b)
}
