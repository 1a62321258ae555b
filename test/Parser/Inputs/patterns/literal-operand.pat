pattern @t.relu {
  %r = nn.relu(1)
}
