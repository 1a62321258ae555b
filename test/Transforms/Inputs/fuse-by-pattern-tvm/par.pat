pattern @lib.parallel_matmul {
  %m1 = matmul(%x, %w1)
  %m2 = matmul(%x, %w2)
  %c = concat(%m1, %m2) {axis = [1]}
}
