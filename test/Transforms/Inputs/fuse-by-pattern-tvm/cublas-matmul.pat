// get_patterns_with_prefix("cublas.matmul"), cut down: later registrations
// come first in TVM, so the transposed pattern has priority over plain matmul.
pattern @cublas.matmul_transposed {
  %wt = permute_dims(%w)
  %m = matmul(%x, %wt)
}
pattern @cublas.matmul {
  %m = matmul(%x, %w)
}
