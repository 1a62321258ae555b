// broadcast-symbolic-dim.fir: a composite whose group introduces a dim.
pattern @test.broadcast_sum {
  %c = broadcast_to(%y)
  %s = sum(%c)
  root %s
}
