// A cut-down partition_for_cutlass: residual, bias, plain matmul; earlier first
pattern @cutlass.matmul_bias_residual_add {
  %m = matmul(%x, %w)
  %b = add(%m, %bias)
  %r = add(%b, %residual)
  where rank(%bias) == 1, single_use(%m), single_use(%b)
}
pattern @cutlass.matmul_bias {
  %m = matmul(%x, %w)
  %b = add(%m, %bias)
  where rank(%bias) == 1, single_use(%m)
}
pattern @cutlass.matmul {
  %m = matmul(%x, %w)
}
