#!/usr/bin/env python3
"""run-all.py FUSEC DIR: imports every DIR/*.onnx with `FUSEC X.onnx -o TMP.fir`
and prints `NAME: exit N: <first stderr line, the path removed>`, sorted by
name. Any exit other than 0 or 1 (a signal, an abort) or a message that
mentions an assertion, LLVM ERROR or a sanitizer prints `NAME: CRASH ...`."""
import os
import subprocess
import sys
import tempfile

fusec, directory = sys.argv[1], sys.argv[2]
with tempfile.TemporaryDirectory() as tmp:
    for name in sorted(f for f in os.listdir(directory) if f.endswith(".onnx")):
        path = os.path.join(directory, name)
        try:
            r = subprocess.run([fusec, path, "-o", os.path.join(tmp, "out.fir")],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               universal_newlines=True, errors="replace", timeout=60)
            code, err = r.returncode, r.stderr
        except subprocess.TimeoutExpired:
            code, err = "timeout", ""
        first = err.splitlines()[0] if err else ""
        first = first.replace(path + ": ", "")
        bad = code not in (0, 1) or any(
            word in err for word in ("Assertion", "LLVM ERROR", "Sanitizer", "Stack dump"))
        print("%s: %s exit %s: %s" % (name[:-5], "CRASH" if bad else "", code, first))
