// TVM: is_op("relax.nn.relu")(is_op("relax.nn.relu")(is_op("relax.nn.relu")(wildcard())))
pattern @compiler_A.relu_chain {
  %a = nn.relu(%x)
  %b = nn.relu(%a)
  %c = nn.relu(%b)
}
