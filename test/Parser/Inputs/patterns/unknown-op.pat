pattern @t.relu {
  %r = nn.rellu(%x)
}
