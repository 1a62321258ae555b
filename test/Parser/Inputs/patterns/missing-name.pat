pattern {
  %r = nn.relu(%x)
}
