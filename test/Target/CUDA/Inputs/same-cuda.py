#!/usr/bin/env python3
"""same-cuda.py --fusec=BIN --samples=DIR --levels=O0,O1 --base=sm_80 --arch=sm_86

Emits every DIR/*.fir at every level as CUDA C for --base and for --arch
and checks that the two texts are identical: fusec's code at those levels
depends on the architecture only through tensor cores (from sm_80), so an
NVRTC compile of the base's code covers --arch's. Prints one summary line;
exits 1 on a difference."""
import os
import subprocess
import sys

opts = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--"))
samples = sorted(n for n in os.listdir(opts["samples"]) if n.endswith(".fir"))
errors = 0
for sample in samples:
    for level in opts["levels"].split(","):
        texts = []
        for arch in (opts["base"], opts["arch"]):
            texts.append(subprocess.run(
                [opts["fusec"], os.path.join(opts["samples"], sample), "-" + level,
                 "--arch=" + arch, "--emit=cuda", "-o", "-"],
                stdout=subprocess.PIPE, check=True).stdout)
        if texts[0] != texts[1]:
            print("error: %s -%s: the CUDA C for %s differs from %s's" % (
                sample, level, opts["arch"], opts["base"]))
            errors += 1
print("%d modules: the CUDA C for %s is %s's, %d differ" % (
    len(samples) * len(opts["levels"].split(",")), opts["arch"], opts["base"], errors))
sys.exit(1 if errors else 0)
