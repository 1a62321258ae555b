// TVM: is_op("relax.concat")(wildcard())  (the wildcard is the whole tuple argument)
pattern @x.concat {
  %c = concat(...)
}
