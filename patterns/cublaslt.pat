// patterns/cublaslt.pat - matmuls that fusec hands to cuBLASLt.
//
// Used by -O2 (as `fuse-by-pattern{patterns=@cublaslt,annotate-codegen=true}`)
// and by any pipeline that names this file. Earlier patterns have priority,
// so the longest matches come first: a transposed weight before a plain one
// (else the plain pattern would take the transpose as its operand), and a
// bias with an activation before a bias alone. Each composite becomes one
// cublasLtMatmul call whose epilogue (CUBLASLT_EPILOGUE_*) is named above
// the pattern. cuBLASLt cannot return an intermediate, so every
// intermediate is `single_use`. Its GELU epilogue is the tanh
// approximation, hence `nn.gelu_tanh`. Operands are 2-D, row-major, of one
// dtype (f16, bf16 or f32, accumulated in f32); the result has that dtype.

// RELU_BIAS, the weight transposed (x @ W^T, as nn.Linear stores W)
pattern @cublaslt.matmul_transposed_bias_relu {
  %wt = permute_dims(%w) {axes = [1, 0]}
  %m = matmul(%a, %wt)
  %y = add(%m, %bias)
  %r = nn.relu(%y)
  where dtype(%a) in [f16, bf16, f32], dtype(%w) == dtype(%a), dtype(%m) == dtype(%a),
        rank(%a) == 2, rank(%w) == 2,
        dtype(%bias) == dtype(%a), rank(%bias) == 1, shape(%bias)[0] == shape(%w)[0],
        single_use(%wt), single_use(%m), single_use(%y)
}

// RELU_BIAS
pattern @cublaslt.matmul_bias_relu {
  %m = matmul(%a, %w)
  %y = add(%m, %bias)
  %r = nn.relu(%y)
  where dtype(%a) in [f16, bf16, f32], dtype(%w) == dtype(%a), dtype(%m) == dtype(%a),
        rank(%a) == 2, rank(%w) == 2,
        dtype(%bias) == dtype(%a), rank(%bias) == 1, shape(%bias)[0] == shape(%w)[1],
        single_use(%m), single_use(%y)
}

// GELU_BIAS, the weight transposed (x @ W^T, as nn.Linear stores W)
pattern @cublaslt.matmul_transposed_bias_gelu {
  %wt = permute_dims(%w) {axes = [1, 0]}
  %m = matmul(%a, %wt)
  %y = add(%m, %bias)
  %r = nn.gelu_tanh(%y)
  where dtype(%a) in [f16, bf16, f32], dtype(%w) == dtype(%a), dtype(%m) == dtype(%a),
        rank(%a) == 2, rank(%w) == 2,
        dtype(%bias) == dtype(%a), rank(%bias) == 1, shape(%bias)[0] == shape(%w)[0],
        single_use(%wt), single_use(%m), single_use(%y)
}

// GELU_BIAS
pattern @cublaslt.matmul_bias_gelu {
  %m = matmul(%a, %w)
  %y = add(%m, %bias)
  %r = nn.gelu_tanh(%y)
  where dtype(%a) in [f16, bf16, f32], dtype(%w) == dtype(%a), dtype(%m) == dtype(%a),
        rank(%a) == 2, rank(%w) == 2,
        dtype(%bias) == dtype(%a), rank(%bias) == 1, shape(%bias)[0] == shape(%w)[1],
        single_use(%m), single_use(%y)
}

// BIAS, the weight transposed (x @ W^T, as nn.Linear stores W)
pattern @cublaslt.matmul_transposed_bias {
  %wt = permute_dims(%w) {axes = [1, 0]}
  %m = matmul(%a, %wt)
  %y = add(%m, %bias)
  where dtype(%a) in [f16, bf16, f32], dtype(%w) == dtype(%a), dtype(%m) == dtype(%a),
        rank(%a) == 2, rank(%w) == 2,
        dtype(%bias) == dtype(%a), rank(%bias) == 1, shape(%bias)[0] == shape(%w)[0],
        single_use(%wt), single_use(%m)
}

// BIAS
pattern @cublaslt.matmul_bias {
  %m = matmul(%a, %w)
  %y = add(%m, %bias)
  where dtype(%a) in [f16, bf16, f32], dtype(%w) == dtype(%a), dtype(%m) == dtype(%a),
        rank(%a) == 2, rank(%w) == 2,
        dtype(%bias) == dtype(%a), rank(%bias) == 1, shape(%bias)[0] == shape(%w)[1],
        single_use(%m)
}

// RELU, the weight transposed (x @ W^T, as nn.Linear stores W)
pattern @cublaslt.matmul_transposed_relu {
  %wt = permute_dims(%w) {axes = [1, 0]}
  %m = matmul(%a, %wt)
  %r = nn.relu(%m)
  where dtype(%a) in [f16, bf16, f32], dtype(%w) == dtype(%a), dtype(%m) == dtype(%a),
        rank(%a) == 2, rank(%w) == 2,
        single_use(%wt), single_use(%m)
}

// RELU
pattern @cublaslt.matmul_relu {
  %m = matmul(%a, %w)
  %r = nn.relu(%m)
  where dtype(%a) in [f16, bf16, f32], dtype(%w) == dtype(%a), dtype(%m) == dtype(%a),
        rank(%a) == 2, rank(%w) == 2,
        single_use(%m)
}

// GELU, the weight transposed (x @ W^T, as nn.Linear stores W)
pattern @cublaslt.matmul_transposed_gelu {
  %wt = permute_dims(%w) {axes = [1, 0]}
  %m = matmul(%a, %wt)
  %r = nn.gelu_tanh(%m)
  where dtype(%a) in [f16, bf16, f32], dtype(%w) == dtype(%a), dtype(%m) == dtype(%a),
        rank(%a) == 2, rank(%w) == 2,
        single_use(%wt), single_use(%m)
}

// GELU
pattern @cublaslt.matmul_gelu {
  %m = matmul(%a, %w)
  %r = nn.gelu_tanh(%m)
  where dtype(%a) in [f16, bf16, f32], dtype(%w) == dtype(%a), dtype(%m) == dtype(%a),
        rank(%a) == 2, rank(%w) == 2,
        single_use(%m)
}

// DEFAULT, the weight transposed (x @ W^T, as nn.Linear stores W)
pattern @cublaslt.matmul_transposed {
  %wt = permute_dims(%w) {axes = [1, 0]}
  %m = matmul(%a, %wt)
  where dtype(%a) in [f16, bf16, f32], dtype(%w) == dtype(%a), dtype(%m) == dtype(%a),
        rank(%a) == 2, rank(%w) == 2,
        single_use(%wt)
}

// DEFAULT
pattern @cublaslt.matmul {
  %m = matmul(%a, %w)
  where dtype(%a) in [f16, bf16, f32], dtype(%w) == dtype(%a), dtype(%m) == dtype(%a),
        rank(%a) == 2, rank(%w) == 2
}
