#!/usr/bin/env python3
"""expect-exit N CMD ARGS...: run CMD and succeed iff it exits with status N.

lit's `not` only tells zero from non-zero; fusec's exit codes (spec §7:
1 bad input, 2 usage error, 3 internal error) are part of its contract, so
the tests check them exactly. Output passes through unchanged.
"""
import subprocess
import sys

expected = int(sys.argv[1])
status = subprocess.call(sys.argv[2:])
if status != expected:
    sys.stderr.write("expect-exit: %s exited with %d, expected %d\n"
                     % (sys.argv[2], status, expected))
    sys.exit(1)
