// TVM: is_op("relax.concat")(is_tuple([is_op("relax.abs")(wildcard()), is_op("relax.abs")(wildcard())]))
pattern @x.concat_abs_abs {
  %a = abs(%x)
  %b = abs(%y)
  %c = concat(%a, %b)
}
