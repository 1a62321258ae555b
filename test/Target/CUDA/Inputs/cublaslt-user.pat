// A user's patterns that name cuBLASLt but check nothing (the shipped
// patterns guard dtype, out_dtype and the bias's shape).
pattern @cublaslt.mm_bias {
  %m = matmul(%a, %w)
  %y = add(%m, %bias)
}
pattern @cublaslt.mm_relu {
  %m = matmul(%a, %w)
  %y = nn.relu(%m)
}
