#!/usr/bin/env python3
"""check-cubin.py --arch=sm_NN --samples=DIR --levels=O0,O1 CUBIN...

Checks that each CUBIN is a CUDA ELF (magic, EM_CUDA = 190) built for sm_NN
(the SM number sits in e_flags: bits 8-15 in the ABI of CUDA 12 and later,
bits 0-7 before), and that the files cover every DIR/*.fir at every level
(named <sample>.<level>.<arch>.cubin), so a new sample without RUN lines
in nvrtc-samples-sm*.test fails the test. Prints one summary line."""
import os
import struct
import sys

opts = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--"))
files = [a for a in sys.argv[1:] if not a.startswith("--")]
arch = opts["arch"]
sm = int(arch[3:])
errors = []
for path in files:
    with open(path, "rb") as f:
        head = f.read(64)
    if head[:4] != b"\x7fELF":
        errors.append("%s: not an ELF file" % path)
        continue
    machine = struct.unpack_from("<H", head, 18)[0]
    flags = struct.unpack_from("<I", head, 48)[0]
    if machine != 190:
        errors.append("%s: e_machine %d, not EM_CUDA (190)" % (path, machine))
    if sm not in ((flags >> 8) & 0xFF, flags & 0xFF):
        errors.append("%s: e_flags %#x do not name %s" % (path, flags, arch))
samples = sorted(n[:-4] for n in os.listdir(opts["samples"]) if n.endswith(".fir"))
have = {os.path.basename(p) for p in files}
for sample in samples:
    for level in opts["levels"].split(","):
        name = "%s.%s.%s.cubin" % (sample, level, arch)
        if name not in have:
            errors.append("no %s (add RUN lines for the sample)" % name)
for error in errors:
    print("error: " + error)
print("%d cubins for %s, %d samples, %d errors" % (len(files), arch, len(samples), len(errors)))
sys.exit(1 if errors else 0)
