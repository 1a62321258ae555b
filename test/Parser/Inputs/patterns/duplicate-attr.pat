pattern @t.permute {
  %r = permute_dims(%x) {axes = [1, 0], axes = [0, 1]}
}
