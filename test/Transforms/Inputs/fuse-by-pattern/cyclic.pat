// TVM's test_cyclic_dependency: add(relu(conv2d(*, *)), *).
pattern @compiler_A.conv2d_relu_add {
  %c = nn.conv2d(%data, %weight)
  %r = nn.relu(%c)
  %a = add(%r, %other)
}
