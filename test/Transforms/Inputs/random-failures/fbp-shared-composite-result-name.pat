// See fbp-shared-composite-result-name.fir.
pattern @p.sigmoid_shift {
  %s = sigmoid(%v)
  %r = add(%s, 0.5)
}
