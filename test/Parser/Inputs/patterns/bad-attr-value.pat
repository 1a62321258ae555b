// An attribute value of the wrong form for its op: a dtype that is none.
pattern @bad.attr_value {
  %m = matmul(%a, %w) {out_dtype = "f99"}
  root %m
}
