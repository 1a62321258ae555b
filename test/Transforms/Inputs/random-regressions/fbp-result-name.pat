// For fbp-shared-composite-result-name.fir and
// fbp-result-name-clashes-with-parameter.fir.
pattern @p.sigmoid_shift {
  %s = sigmoid(%v)
  %r = add(%s, 0.5)
}
