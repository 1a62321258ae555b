#!/usr/bin/env python3
"""check-models.py --bin DIR --work DIR [--models DIR] [--levels L,...] [--cubin]
[--ort DIR] [--report FILE]: end-to-end checks of the reference models (test/Import/models,
exported from PyTorch by generate.py).

For each model NAME (NAME.onnx, NAME.in0.npy, NAME.ref0.npy):
  * `fusec NAME.onnx -o NAME.fir` (the import alone), `-O0` and `-O2` (to FIR),
    each run by `fusec-run --inputs=NAME.in0.npy --counters`, its output
    compared with PyTorch's: |out - ref| <= 1e-4 * max|ref| + 1e-6 everywhere
    (--levels picks among import, O0 and O2; default all three);
  * with --cubin: `fusec NAME.onnx -O2 --arch=sm_90 -o NAME.cubin
    --launcher=NAME.cpp` succeeds;
  * with --ort DIR (onnxruntime-node installed there, test/Import/ort):
    ONNX Runtime's output on the same input, compared with PyTorch's and
    with fusec's -O2 output, by the same tolerance.
Prints one line per check, then the counted figures (kernel launches and
global bytes at -O0 and -O2, exact), and `models: N checked, F failed`;
exits 1 on any failure. --report writes docs/models.md (compile times too).
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, **kw)


def within(out, ref):
    tol = 1e-4 * float(np.abs(ref).max()) + 1e-6
    if out.shape != ref.shape:
        return False, "shape %s, expected %s" % (list(out.shape), list(ref.shape))
    err = float(np.abs(out.astype(np.float64) - ref.astype(np.float64)).max())
    ok = bool(np.isfinite(out).all()) and err <= tol
    return ok, "max |err| %.3g %s %.3g" % (err, "<=" if ok else ">", tol)


def ops_of(models, name):
    """The op counts from NAME.ops.txt (written by generate.py)."""
    path = os.path.join(models, name + ".ops.txt")
    ops = []
    if os.path.exists(path):
        for line in open(path):
            parts = line.split()
            if len(parts) == 2 and parts[1].isdigit() and parts[0][0].isupper():
                ops.append("%s %s" % (parts[0], parts[1]))
    return ops


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--models", default=os.path.join(os.path.dirname(__file__), "models"))
    ap.add_argument("--cubin", action="store_true")
    ap.add_argument("--ort")
    ap.add_argument("--report")
    ap.add_argument("--only", help="comma-separated model names")
    ap.add_argument("--levels", default="import,O0,O2",
                    help="which of import, O0, O2 to compile and run")
    args = ap.parse_args()
    fusec = os.path.join(args.bin, "fusec")
    fusec_run = os.path.join(args.bin, "fusec-run")
    os.makedirs(args.work, exist_ok=True)
    names = sorted(f[:-5] for f in os.listdir(args.models) if f.endswith(".onnx"))
    if args.only:
        names = [n for n in names if n in args.only.split(",")]
    failures, rows = 0, []
    for name in names:
        model = os.path.join(args.models, name + ".onnx")
        inp = os.path.join(args.models, name + ".in0.npy")
        ref = np.load(os.path.join(args.models, name + ".ref0.npy"))
        row = {"name": name}
        outputs = {}
        for level in args.levels.split(","):
            fir = os.path.join(args.work, "%s.%s.fir" % (name, level))
            flags = [] if level == "import" else ["-" + level]
            start = time.time()
            r = run([fusec, model] + flags + ["-o", fir])
            row["compile_" + level] = time.time() - start
            if r.returncode != 0:
                print("%s %s: FAIL (fusec exit %d) %s" % (name, level, r.returncode,
                                                        r.stdout.strip()[:300]))
                failures += 1
                continue
            out_dir = os.path.join(args.work, "%s.%s.out" % (name, level))
            counters = os.path.join(args.work, "%s.%s.counters.json" % (name, level))
            r = run([fusec_run, fir, "--inputs=" + inp, "--outputs=" + out_dir,
                     "--counters=" + counters])
            if r.returncode != 0:
                print("%s %s: FAIL (fusec-run exit %d) %s" % (name, level, r.returncode,
                                                            r.stdout.strip()[:300]))
                failures += 1
                continue
            out = np.load(os.path.join(out_dir, "out0.npy"))
            outputs[level] = out
            ok, detail = within(out, ref)
            failures += not ok
            print("%s %s: %s (%s)" % (name, level, "ok" if ok else "FAIL", detail))
            row[level] = json.load(open(counters))
        if args.cubin:
            cubin = os.path.join(args.work, name + ".cubin")
            start = time.time()
            r = run([fusec, model, "-O2", "--arch=sm_90", "-o", cubin,
                     "--launcher=" + os.path.join(args.work, name + ".cpp")])
            row["compile_cubin"] = time.time() - start
            ok = r.returncode == 0 and os.path.getsize(cubin) > 0
            failures += not ok
            print("%s cubin sm_90: %s" % (name, "ok" if ok else "FAIL " + r.stdout[:300]))
        if args.ort:
            out_dir = os.path.join(args.work, name + ".ort")
            env = dict(os.environ, ORT_NODE_DIR=args.ort)
            r = run(["node", os.path.join(os.path.dirname(__file__), "ort", "run-ort.js"),
                     model, out_dir, inp], env=env)
            if r.returncode != 0:
                print("%s ort: FAIL (run-ort exit %d) %s" % (name, r.returncode, r.stdout[:300]))
                failures += 1
            else:
                ort = np.load(os.path.join(out_dir, "out0.npy"))
                ok, detail = within(ort, ref)
                print("%s ort vs pytorch: %s (%s)" % (name, "ok" if ok else "FAIL", detail))
                failures += not ok
                if "O2" in outputs:
                    ok, detail = within(outputs["O2"], ort)
                    print("%s O2 vs ort: %s (%s)" % (name, "ok" if ok else "FAIL", detail))
                    failures += not ok
        rows.append(row)
    for row in rows:
        if "O0" in row and "O2" in row:
            print("%s counters: launches %d -> %d, bytes read %d -> %d, written %d -> %d, "
                  "library calls %d" % (
                      row["name"], row["O0"]["kernel_launches"], row["O2"]["kernel_launches"],
                      row["O0"]["global_bytes_read"], row["O2"]["global_bytes_read"],
                      row["O0"]["global_bytes_written"], row["O2"]["global_bytes_written"],
                      row["O2"].get("library_calls", 0)))
    print("models: %d checked, %d failed" % (len(rows), failures))
    if args.report:
        write_report(args.report, args.models, rows)
    return 1 if failures else 0


def write_report(path, models, rows):
    lines = [
        "# Reference models",
        "",
        "Generated by `test/Import/check-models.py --report docs/models.md` (the models",
        "are exported from PyTorch by `test/Import/models/generate.py`; see",
        "[onnx.md](onnx.md)). Kernel launches and global-memory bytes are the",
        "interpreter's exact counters (`fusec-run --counters`) on the models' reference",
        "inputs; at -O2 a cuBLASLt call counts as a library call, not a launch, and its",
        "bytes are the ideal ones (operands read once, result written once). Compile",
        "times are wall-clock on the machine that wrote this file (2 cores), -O2 to",
        "FIR; every output matches PyTorch's within 1e-4 max|ref| + 1e-6.",
        "",
        "| model | ONNX ops | launches -O0 | launches -O2 (+ library calls) | bytes -O0 | bytes -O2 | compile -O0 | compile -O2 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        if "O0" not in row or "O2" not in row:
            continue
        o0, o2 = row["O0"], row["O2"]
        b0 = o0["global_bytes_read"] + o0["global_bytes_written"]
        b2 = o2["global_bytes_read"] + o2["global_bytes_written"]
        lines.append("| %s | %s | %d | %d (+%d) | %d | %d (%.0f%%) | %.0f ms | %.0f ms |" % (
            row["name"], ", ".join(ops_of(models, row["name"])), o0["kernel_launches"],
            o2["kernel_launches"], o2.get("library_calls", 0), b0, b2, 100.0 * b2 / b0,
            1000 * row["compile_O0"], 1000 * row["compile_O2"]))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
