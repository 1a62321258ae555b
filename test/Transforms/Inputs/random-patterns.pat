// Broad patterns for the differential test of fuse-by-pattern
// (random-graphs.py): they match often in the random programs, so that
// composites of many shapes (extra outputs, tuples of split, literals,
// shared wildcards, symbolic dims) are formed, legalized and merged by
// fuse-tir, and must compute what the unfused program computes. The prefix
// `rand` names no library: with annotate-codegen=true each composite is
// still compiled into one kernel. Earlier patterns have priority.

// make_positive's tail: x*x + 1 (a wildcard used twice, a literal operand).
pattern @rand.square_plus_one {
  %m = multiply(%v, %v)
  %r = add(%m, 1.0)
}

// A wildcard that feeds a later binding of a pattern (%b below) may depend
// on an earlier one (%m) where that is used outside the match too: the
// composite would then feed itself, which fuse-by-pattern rejects ("A
// cyclic dependency detected", exit 1, as in TVM). Every such wildcard is
// therefore a constant or follows only single_use intermediates, so that
// any valid program compiles; intermediates used outside a match (extra
// outputs) come from the patterns whose wildcards all feed the first
// binding.

// make_positive's other tails: a literal first (add is commutative), and
// float attributes.
pattern @rand.sigmoid_shift {
  %s = sigmoid(%v)
  %r = add(%s, 0.5)
}

pattern @rand.clip_exp {
  %c = clip(%v) {min = -2.0, max = 2.0}
  %e = exp(%c)
}

// g_int_roundtrip: float -> int -> int op with a literal -> float (a
// wildcard matches values, not literal operands: the literals are written
// out; an int literal equals a float of the same value).
pattern @rand.int_roundtrip {
  %m = multiply(%v, 8)
  %i = astype(%m)
  %j = add | subtract | multiply | divide | maximum(%i, 2.0)
  %f = astype(%j)
  where dtype(%i) in [i32, i64]
}

// The cuBLASLt shape, on any rank and dtype, with a relu or tanh epilogue.
pattern @rand.matmul_add_act {
  %m = matmul(%a, %w)
  %y = add(%m, %b)
  %r = nn.relu | tanh | nn.gelu_tanh(%y)
  where single_use(%m)
}

// matmul then add of a constant (%m may be used elsewhere: an extra output
// of the composite).
pattern @rand.matmul_add_const {
  %m = matmul(%a, %w)
  %y = add(%m, %b)
  where is_constant(%b)
}

pattern @rand.matmul_add {
  %m = matmul(%a, %w)
  %y = add(%m, %b)
  where single_use(%m)
}

// A binary op then a unary op.
pattern @rand.binary_unary {
  %x = add | subtract | multiply | maximum | minimum(%a, %b)
  %y = exp | negative | nn.relu | tanh | abs | sigmoid | sin(%x)
}

// A multiply whose only use is an add or subtract (single_use).
pattern @rand.mul_add_single_use {
  %x = multiply(%a, %b)
  %y = add | subtract(%x, %c)
  where single_use(%x)
}

// A field of a split, then a unary op or a concat of it (the split's tuple
// joins the composite; its other fields may be used outside).
pattern @rand.split_get_unary {
  %s = split(%x)
  %g = get(%s, 0)
  %y = exp | negative | nn.relu | tanh | abs | sigmoid | sin | cos(%g)
}

pattern @rand.split_get_binary {
  %s = split(%x)
  %g = get(%s, 1)
  %y = add | subtract | multiply(%g, %c)
  where is_constant(%c)
}

pattern @rand.split_get_binary_single_use {
  %s = split(%x)
  %g = get(%s, 1)
  %y = add | subtract | multiply | maximum(%g, %c)
  where single_use(%s), single_use(%g)
}

// A reduction over a float tensor of rank >= 2, then a unary op.
pattern @rand.sum_unary {
  %s = sum | mean(%x)
  %y = exp | negative | tanh | abs | sigmoid | sin(%s)
  where dtype(%x) in [f32, f16], rank(%x) >= 2
}

// A reduction, alone.
pattern @rand.sum {
  %s = sum(%x)
}

// keepdims reductions feeding a broadcast binary op (a diamond on %x).
pattern @rand.center {
  %m = mean | max(%x) {keepdims = true}
  %d = subtract(%x, %m)
}

// concat of anything, then anything elementwise.
pattern @rand.concat_unary {
  %c = concat(...)
  %y = exp | negative | nn.relu | tanh | abs | sigmoid(%c)
}

pattern @rand.concat {
  %c = concat(%a, ...)
}

// where over a comparison.
pattern @rand.cmp_where {
  %c = less | greater | less_equal | greater_equal(%a, %b)
  %w = where(%c, %x, %y)
  where single_use(%c)
}

// A single matmul (2-D or f16 only, so that other matmuls stay for fuse-ops).
pattern @rand.matmul {
  %m = matmul(%a, %w)
  where rank(%a) == 2, rank(%w) == 2
}

pattern @rand.matmul_f16 {
  %m = matmul(%a, %w)
  where dtype(%a) == f16, not(rank(%a) == 2)
}

// A permute_dims of a constant, reshaped.
pattern @rand.const_permute {
  %p = permute_dims(%w)
  %r = reshape(%p)
  where is_constant(%w)
}

// A field of any tuple (a tuple binding, a call's result, a split outside
// the match), then a unary op.
pattern @rand.get_unary {
  %g = get(%t, 0)
  %y = exp | negative | nn.relu | tanh | abs | sigmoid | sin | cos | floor(%g)
}

// Attribute defaults: strides not written are [1, 1], ceil_mode false.
pattern @rand.conv {
  %c = nn.conv2d(%x, %w) {strides = [1, 1], groups = 1}
}

pattern @rand.pool {
  %p = nn.max_pool2d | nn.avg_pool2d(%x) {ceil_mode = false, padding = [0, 0, 0, 0]}
}

// A reduction over axis 0 (an int axis is a one-element list), and one
// with keepdims.
pattern @rand.reduce_axis0 {
  %s = max | min | prod(%x) {axis = [0]}
}

pattern @rand.reduce_keepdims {
  %s = mean | max | min(%x) {keepdims = true}
}

// A norm, then a multiply by a constant.
pattern @rand.norm_scale {
  %n = nn.layer_norm(%x, %g, %b)
  %y = multiply(%n, %k)
  where is_constant(%k)
}

pattern @rand.rms_norm {
  %n = nn.rms_norm(%x, %g)
}

// take with constant indices.
pattern @rand.take_const {
  %t = take(%x, %i)
  where is_constant(%i)
}
