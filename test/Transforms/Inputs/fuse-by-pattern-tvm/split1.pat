pattern @x.split {
  %s = split(%inp)
}
