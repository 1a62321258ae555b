#!/usr/bin/env python3
"""Every sample, at reduced sizes, through -O0, -O1 and -O2 down to the lowered
form, run by the interpreter: the lowered loops must compute what the graph
computes (issue 5). The samples' shapes (4096x4096 and the like) take minutes
to interpret, so each is scaled down first: every size inside a tensor type
is mapped through SCALE (sizes not listed stay); types that inference
derives are recomputed by fusec. The scaled module is then
  1. run as written (graph ops, each through its legalized kernel),
  2. compiled with -O0, -O1 and -O2 (legalize ... schedule, lower; -O2 with
     cuBLASLt composites, run by their bodies, and the cost model) and run,
and the results compared within a tolerance scaled by the output's magnitude
(reductions combine in another order once lowered). Each lowered module's
CUDA C is emitted too (--passes= --emit=cuda): the sanitizer build's check that code
generation of every sample is clean (nvrtc-samples-sm*.test compile it in
the release build). Prints one line per sample and pipeline; exits 1 on any
failure.

With --device=emulator the lowered forms run as CUDA C on fusec's emulator
(fusec-run --device=emulator, which also checks them against the
interpreter), the unlowered graph still on the interpreter."""
import argparse
import os
import re
import subprocess
import sys

import numpy as np

# 4096 -> 64 keeps the exp chain's broadcast shape; conv 224/112 and the
# attention 128/64 shrink consistently (stride 2, 7x7, pad 3: 16 -> 8).
SCALE = {4096: 64, 3072: 96, 1024: 32, 768: 48, 512: 16, 224: 16, 112: 8,
         128: 16, 64: 16}
TYPE = re.compile(r"\b(f16|f32|bf16|i8|i32|i64|bool)\[([^\]]*)\]")


def scale(text):
    def dims(match):
        sizes = []
        for dim in match.group(2).split(","):
            dim = dim.strip()
            sizes.append(str(SCALE.get(int(dim), int(dim))) if dim.isdigit() else dim)
        return "%s[%s]" % (match.group(1), ",".join(sizes))
    return TYPE.sub(dims, text)


def run(cmd):
    res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return res.returncode, res.stderr.decode(errors="replace")


def close(a_dir, b_dir):
    for name in sorted(os.listdir(a_dir)):
        a = np.load(os.path.join(a_dir, name))
        b = np.load(os.path.join(b_dir, name))
        if a.shape != b.shape or a.dtype != b.dtype:
            return "%s: %s%s vs %s%s" % (name, a.dtype, a.shape, b.dtype, b.shape)
        if a.dtype.kind == "f":
            finite = np.isfinite(a)
            mag = max(1.0, float(np.abs(a[finite]).max()) if finite.any() else 1.0)
            tol = 1e-4 if a.dtype.itemsize == 4 else 4e-3
            bad = ~((np.abs(a.astype(np.float64) - b) <= tol * mag) | (a == b) |
                    (np.isnan(a) & np.isnan(b)))
        else:
            bad = a != b
        if bad.any():
            i = tuple(np.argwhere(bad)[0])
            return "%s: %d of %d differ, first at %s: %r vs %r" % (
                name, bad.sum(), a.size, list(i), a[i], b[i])
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fusec-bin", required=True)
    ap.add_argument("--samples", required=True)
    ap.add_argument("--tmp", required=True)
    ap.add_argument("--device", default="cpu", choices=["cpu", "emulator"])
    args = ap.parse_args()
    fusec = os.path.join(args.fusec_bin, "fusec")
    fusec_run = os.path.join(args.fusec_bin, "fusec-run")
    os.makedirs(args.tmp, exist_ok=True)
    failures = 0
    for sample in sorted(os.listdir(args.samples)):
        if not sample.endswith(".fir"):
            continue
        name = sample[:-4]
        scaled = os.path.join(args.tmp, name + ".fir")
        with open(os.path.join(args.samples, sample)) as f:
            text = scale(f.read())
        with open(scaled, "w") as f:
            f.write(text)
        ref_dir = os.path.join(args.tmp, name + ".ref")
        rc, err = run([fusec_run, scaled, "--random-inputs", "--dims=n=4", "--outputs=" + ref_dir])
        if rc != 0:
            print("%s: graph run failed: %s" % (name, err.strip()))
            failures += 1
            continue
        for level in ("O0", "O1", "O2"):
            lowered = os.path.join(args.tmp, "%s.%s.fir" % (name, level))
            rc, err = run([fusec, scaled, "-" + level, "-o", lowered])
            if rc != 0:
                print("%s -%s: compile failed: %s" % (name, level, err.strip()))
                failures += 1
                continue
            rc, err = run([fusec, lowered, "--passes=", "--emit=cuda", "-o", lowered[:-4] + ".cu"])
            if rc != 0:
                print("%s -%s: CUDA C failed: %s" % (name, level, err.strip()))
                failures += 1
                continue
            out_dir = os.path.join(args.tmp, "%s.%s.out" % (name, level))
            rc, err = run([fusec_run, lowered, "--random-inputs", "--dims=n=4",
                           "--device=" + args.device, "--outputs=" + out_dir])
            if rc != 0:
                print("%s -%s: run failed: %s" % (name, level, err.strip()))
                failures += 1
                continue
            launches = sum(1 for line in open(lowered) if line.startswith("  launch "))
            problem = close(ref_dir, out_dir)
            if problem:
                print("%s -%s: MISMATCH %s" % (name, level, problem))
                failures += 1
            else:
                print("%s -%s: %d kernel launch statement(s), matches the graph" % (name, level, launches))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
