// TVM's make_fused_bias_activation_pattern("relax.nn.conv2d", activation="relax.nn.relu").
pattern @compiler_A.conv2d_relu {
  %c = nn.conv2d(%data, %weight)
  %r = nn.relu(%c)
}
