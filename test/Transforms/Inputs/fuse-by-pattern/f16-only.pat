pattern @lib.matmul_f16 {
  %m = matmul(%a, %w)
  where dtype(%a) in [f16, bf16], dtype(%a) == dtype(%w), shape(%a)[-1] == shape(%w)[0],
        shape(%a)[0] == 16
}
