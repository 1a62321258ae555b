// A valid pattern file: comments anywhere, op alternatives, attributes,
// 'get', '...' on a variadic op, literal operands, and every kind of check.

pattern @test.matmul_bias_relu { // a comment after '{'
  %m = matmul(%a, %w)
  // a comment between bindings
  %y = add | subtract(%m, %bias)
  %r = nn.relu(%y)
  root %r
  where dtype(%a) in [f16, bf16], dtype(%w) == dtype(%a), dtype(%bias) != f32,
        rank(%a) == 2, rank(%bias) <= 1, rank(%w) >= 2, rank(%w) > 1, rank(%a) < 3,
        shape(%a)[1] == shape(%w)[0], shape(%bias)[0] != 0,
        not(is_constant(%a)), single_use(%m), single_use(%y)
}

pattern @test.concat_split {
  %c = concat(%x, ...) {axis = 0}
  %s = split(%c) {indices_or_sections = 2, axis = 0}
  %g = get(%s, 1)
  %r = maximum(%g, 0.0)
  root %r
  where not(rank(%x) == 0)
}
