pattern @x.split {
  %s = split(%inp)
  %g0 = get(%s, 0)
  %g1 = get(%s, 1)
  %a = add(%g0, %g1)
}
