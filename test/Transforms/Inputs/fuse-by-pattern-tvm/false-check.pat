// TVM test_check_pattern: a conv2d pattern whose check rejects every match
// (the check callback returns False; here a `where` that cannot hold).
pattern @cutlass.conv2d {
  %out = nn.conv2d(%lhs, %rhs)
  where dtype(%lhs) == f16
}
