"""closed-pipe.py CMD ARGS...: runs CMD with stdout and stderr on a pipe
whose reading end is closed at once (a reader that went away, `| head`), so
its first write raises SIGPIPE, and exits with CMD's status (a signal's
death as 128 + the signal)."""
import os
import subprocess
import sys

read, write = os.pipe()
os.close(read)
status = subprocess.run(sys.argv[1:], stdout=write, stderr=write).returncode
sys.exit(128 - status if status < 0 else status)
