pattern @cutlass.conv2d_relu {
  %c = nn.conv2d(%data, %weight)
  %r = nn.relu(%c)
}
pattern @cutlass.conv2d {
  %c = nn.conv2d(%data, %weight)
}
