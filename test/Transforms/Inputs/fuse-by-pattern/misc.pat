// Commutative add, attributes with defaults, variadic concat, get.
pattern @misc.bias_add {
  %m = matmul(%x, %w)
  %y = add(%m, %b)
  where rank(%b) == 1, single_use(%m)
}
pattern @misc.row_sum {
  %s = sum(%x) {axis = [1], keepdims = false}
}
pattern @misc.concat_relu {
  %c = concat(%first, ...) {axis = [0]}
  %r = nn.relu(%c)
}
pattern @misc.split_exp {
  %t = split(%x) {indices_or_sections = 2, axis = 0}
  %g = get(%t, 1)
  %e = exp(%g)
}
pattern @misc.scale {
  %s = multiply(%x, 0.5)
  %n = negative(%s)
}
