#!/usr/bin/env python3
"""Runs every `$ command` line of README.md and docs/*.md.

A command is a line whose first non-blank characters are `$ `. It runs from
the repository root with `build/bin/` rewritten to the tested binary
directory, and must exit with 0. Commands write only below build/ or to
/dev/null; the script creates build/ first.
"""
import glob
import os
import subprocess
import sys

bin_dir, repo = sys.argv[1], sys.argv[2]
files = [os.path.join(repo, "README.md")] + sorted(glob.glob(os.path.join(repo, "docs", "*.md")))
os.makedirs(os.path.join(repo, "build"), exist_ok=True)
failures = 0
count = 0
for path in files:
    with open(path) as f:
        for number, line in enumerate(f, 1):
            text = line.strip()
            if not text.startswith("$ "):
                continue
            command = text[2:].replace("build/bin/", bin_dir.rstrip("/") + "/")
            count += 1
            result = subprocess.run(command, shell=True, cwd=repo,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            if result.returncode != 0:
                failures += 1
                sys.stderr.write("%s:%d: `%s` exited %d\n%s\n" % (
                    path, number, text[2:], result.returncode, result.stderr.decode()))
print("ran %d documented commands, %d failed" % (count, failures))
sys.exit(1 if failures or count == 0 else 0)
