pattern @t.relu {
  %r = nn.relu(%x) {axis = 1}
}
