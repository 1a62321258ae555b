"""to-dev-full.py [--stderr] CMD ARGS...: runs CMD with stdout (with
--stderr: stderr) on /dev/full (every write fails with ENOSPC), the other
stream as it is, and exits with CMD's status."""
import subprocess
import sys

args = sys.argv[1:]
stream = "stdout"
if args and args[0] == "--stderr":
    stream = "stderr"
    args = args[1:]
with open("/dev/full", "wb") as full:
    sys.exit(subprocess.run(args, **{stream: full}).returncode)
