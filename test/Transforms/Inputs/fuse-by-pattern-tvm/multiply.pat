pattern @cutlass.multiply {
  %m = multiply(%x, %y)
}
