// cuBLAS-style transposed matmul with an optional bias (two patterns, larger first)
pattern @cublas.matmul_transposed_bias {
  %wt = permute_dims(%w)
  %m = matmul(%x, %wt)
  %y = add(%m, %b)
}
pattern @cublas.matmul_transposed {
  %wt = permute_dims(%w)
  %m = matmul(%x, %wt)
}
