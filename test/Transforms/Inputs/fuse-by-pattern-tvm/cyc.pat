pattern @compiler_A.conv2d_relu_add {
  %c = nn.conv2d(%data, %weight)
  %r = nn.relu(%c)
  %a = add(%r, %other)
}
