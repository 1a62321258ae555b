pattern @cutlass.conv2d {
  %c = nn.conv2d(%data, %weight)
}
