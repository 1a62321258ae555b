#!/usr/bin/env python3
"""ONNX backend node-test conformance runner for fusec's ONNX importer.

  node-tests.py --bin DIR [--data DIR] [--ops Add,Relu,...]
                [--known-failures FILE] [--work DIR] [--filter REGEX]
                [--fusec-args "-O2"] [--jobs N] [--shard K/N] [--list] [-v]

For every test directory under --data (default: the ONNX node tests in
/usr/share/libonnx-testdata/data/node) with a model.onnx and
test_data_set_*/input_*.pb, output_*.pb:
  * skip it unless every node (subgraphs included) is a supported op and every
    graph input/output (and inferred intermediate) is a supported tensor dtype;
  * fusec model.onnx [FUSEC_ARGS] -o WORK/<test>/t.fir   (exit != 0: import-error)
  * fusec-run t.fir --inputs=in0.npy,... --outputs=WORK/<test>/outN
  * compare outK.npy with output_K.pb: same shape and dtype; floats with
    |a - e| <= atol + rtol * |e| (rtol 1e-3, atol 1e-5) and NaNs in the same
    places; integers and bools exact.
Supported ops: --ops, else one op per line from `fusec --list-onnx-ops`.
Non-default domains are named DOMAIN.Op (e.g. ai.onnx.ml.Scaler).
Known failures: lines `test_name  # reason` (blank lines and # comments ok).
Exits 1 if a failure or import error is not a known failure.
"""

import argparse
import concurrent.futures
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import zlib

import numpy as np
import onnx
from onnx import numpy_helper

DEFAULT_DATA = "/usr/share/libonnx-testdata/data/node"
TIMEOUT_S = 60
RTOL, ATOL = 1e-3, 1e-5

# ONNX TensorProto elem types fusec handles (no float64/bf16/strings/wide unsigned).
SUPPORTED_ELEM = {
    onnx.TensorProto.FLOAT: "float32",
    onnx.TensorProto.FLOAT16: "float16",
    onnx.TensorProto.INT32: "int32",
    onnx.TensorProto.INT64: "int64",
    onnx.TensorProto.BOOL: "bool",
    onnx.TensorProto.INT8: "int8",
    onnx.TensorProto.UINT8: "uint8",
}
SUPPORTED_NP = set(SUPPORTED_ELEM.values())


def elem_name(t):
    try:
        return onnx.TensorProto.DataType.Name(t).lower()
    except ValueError:
        return "elem_type %d" % t


def op_key(node):
    if node.domain in ("", "ai.onnx"):
        return node.op_type
    return "%s.%s" % (node.domain, node.op_type)


def graph_ops(graph, out):
    for node in graph.node:
        out.add(op_key(node))
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                graph_ops(attr.g, out)
            elif attr.type == onnx.AttributeProto.GRAPHS:
                for g in attr.graphs:
                    graph_ops(g, out)
    return out


def value_type_problem(vi, what):
    """None if vi is a tensor of a supported dtype, else a skip reason."""
    t = vi.type
    if t.WhichOneof("value") != "tensor_type":
        return "%s '%s' is of type %s" % (what, vi.name, t.WhichOneof("value") or "untyped value")
    if t.tensor_type.elem_type not in SUPPORTED_ELEM:
        return "%s '%s' has dtype %s" % (what, vi.name, elem_name(t.tensor_type.elem_type))
    return None


def opset_of(model):
    for imp in model.opset_import:
        if imp.domain in ("", "ai.onnx"):
            return imp.version
    return None


def index_of(name):
    m = re.search(r"_(\d+)\.pb$", name)
    return int(m.group(1)) if m else -1


class Test:
    def __init__(self, name, path):
        self.name, self.path = name, path
        self.ops, self.opset, self.skip = set(), None, None
        self.datasets = []  # list of (inputs [paths], outputs [paths])
        self.status, self.detail = None, ""


def discover(data_dir, supported, filt):
    tests = []
    for name in sorted(os.listdir(data_dir)):
        path = os.path.join(data_dir, name)
        model_path = os.path.join(path, "model.onnx")
        if not os.path.isfile(model_path) or (filt and not filt.search(name)):
            continue
        t = Test(name, path)
        tests.append(t)
        for ds in sorted(d for d in os.listdir(path) if d.startswith("test_data_set_")):
            dsp = os.path.join(path, ds)
            files = os.listdir(dsp)
            ins = sorted((f for f in files if re.match(r"input_\d+\.pb$", f)), key=index_of)
            outs = sorted((f for f in files if re.match(r"output_\d+\.pb$", f)), key=index_of)
            t.datasets.append(([os.path.join(dsp, f) for f in ins],
                               [os.path.join(dsp, f) for f in outs]))
        try:
            model = onnx.load(model_path)
        except Exception as e:  # pragma: no cover - corrupt data
            t.skip = "cannot load model: %s" % e
            continue
        t.opset = opset_of(model)
        t.ops = graph_ops(model.graph, set())
        if not t.datasets or not any(outs for _, outs in t.datasets):
            t.skip = "no test data"
            continue
        missing = sorted(t.ops - supported)
        if missing:
            t.skip = "unsupported op %s" % ",".join(missing)
            continue
        g = model.graph
        inits = {i.name for i in g.initializer}
        problems = [value_type_problem(vi, "input") for vi in g.input if vi.name not in inits]
        problems += [value_type_problem(vi, "output") for vi in g.output]
        try:
            inferred = onnx.shape_inference.infer_shapes(model).graph.value_info
            problems += [value_type_problem(vi, "value") for vi in inferred]
        except Exception:
            pass
        problems = [p for p in problems if p]
        if problems:
            t.skip = "unsupported type: %s" % problems[0]
    return tests


def load_pb(path):
    tp = onnx.TensorProto()
    with open(path, "rb") as f:
        tp.ParseFromString(f.read())
    return numpy_helper.to_array(tp)


def first_error_line(text):
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    for l in lines:
        if "error" in l.lower():
            return l
    return lines[0] if lines else "(no output)"


def run(cmd, log):
    """Run cmd; return (rc, combined output). rc None on timeout."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, errors="replace", start_new_session=True)
    try:
        out, _ = p.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)  # its own session: children too
        except OSError:
            pass
        p.communicate()
        log.append("$ %s\n(timed out after %d s)" % (" ".join(cmd), TIMEOUT_S))
        return None, "timed out after %d s" % TIMEOUT_S
    log.append("$ %s\n%s" % (" ".join(cmd), out))
    return p.returncode, out


def compare(actual, expected):
    """None if equal enough, else a short reason."""
    if actual.shape != expected.shape:
        return "shape %s, expected %s" % (actual.shape, expected.shape)
    if actual.dtype != expected.dtype:
        bools = {np.dtype(bool), np.dtype(np.uint8), np.dtype(np.int8)}
        if not (expected.dtype == bool and actual.dtype in bools
                and np.isin(actual, (0, 1)).all()):
            return "dtype %s, expected %s" % (actual.dtype, expected.dtype)
        actual = actual.astype(bool)
    if expected.dtype.kind == "f":
        a, e = actual.astype(np.float64), expected.astype(np.float64)
        ok = np.isclose(a, e, rtol=RTOL, atol=ATOL, equal_nan=True)
        if not ok.all():
            bad = np.argwhere(~ok)
            i = tuple(bad[0])
            with np.errstate(invalid="ignore"):
                err = np.abs(a - e)[~ok]
            err = err[np.isfinite(err)]
            return "%d/%d values differ (first at %s: %r vs %r; max abs err %.3g)" % (
                len(bad), e.size, list(i), a[i].item(), e[i].item(),
                err.max() if err.size else float("nan"))
        return None
    if not np.array_equal(actual, expected):
        bad = np.argwhere(actual != expected)
        i = tuple(bad[0])
        return "%d/%d values differ (first at %s: %r vs %r)" % (
            len(bad), expected.size, list(i), actual[i].item(), expected[i].item())
    return None


def run_test(t, args, work):
    d = os.path.join(work, t.name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    log = []
    fir = os.path.join(d, "t.fir")
    model_path = os.path.join(t.path, "model.onnx")
    bound = 0
    try:
        if args.bind_inputs:
            # Inputs after the first become initializers holding the test's
            # data (data set 0): shape inputs (axes, pads, sizes, ...) become
            # the constants fusec's static types need; the expected outputs
            # stay ONNX's.
            import onnx
            from onnx import numpy_helper
            model = onnx.load(model_path)
            graph = model.graph
            initialized = {i.name for i in graph.initializer}
            inputs = [i for i in graph.input if i.name not in initialized]
            if len(inputs) < 2:
                return "skipped", "one input: nothing to bind", log
            for i, info in enumerate(inputs[1:], start=1):
                arr = load_pb(t.datasets[0][0][i])
                graph.initializer.append(numpy_helper.from_array(arr, info.name))
                graph.input.remove(info)
            bound = len(inputs) - 1
            model_path = os.path.join(d, "bound.onnx")
            onnx.save(model, model_path)
        rc, out = run([args.fusec, model_path] + args.fusec_args + ["-o", fir], log)
        if rc is None:
            return "fail", "fusec " + out, log
        if rc != 0:
            return "import-error", first_error_line(out), log
        for k, (ins, outs) in enumerate(t.datasets):
            npys = []
            for i, pb in enumerate(ins[:len(ins) - bound] if bound else ins):
                arr = load_pb(pb)
                if arr.dtype.name not in SUPPORTED_NP:
                    return "skipped", "input %d has dtype %s" % (i, arr.dtype), log
                npys.append(os.path.join(d, "ds%d_in%d.npy" % (k, i)))
                np.save(npys[-1], arr)
            odir = os.path.join(d, "out%d" % k)
            os.makedirs(odir)
            rc, out = run([args.fusec_run, fir] +
                          (["--inputs=" + ",".join(npys)] if npys else []) +
                          ["--outputs=" + odir] + args.run_args, log)
            if rc is None:
                return "fail", "fusec-run " + out, log
            if rc != 0:
                return "fail", "fusec-run exit %d: %s" % (rc, first_error_line(out)), log
            for i, pb in enumerate(outs):
                got = os.path.join(odir, "out%d.npy" % i)
                if not os.path.exists(got):
                    return "fail", "missing out%d.npy" % i, log
                why = compare(np.load(got), load_pb(pb))
                if why:
                    where = "output %d" % i + (" (data set %d)" % k if len(t.datasets) > 1 else "")
                    return "fail", "%s: %s" % (where, why), log
        return "pass", "", log
    except Exception as e:  # harness problem: report it as a failure
        return "fail", "runner exception: %s: %s" % (type(e).__name__, e), log


def read_known(path):
    known = {}
    if not path:
        return known
    with open(path) as f:
        for line in f:
            body, _, reason = line.partition("#")
            body = body.strip()
            if body:
                known[body.split()[0]] = reason.strip()
    return known


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default=os.environ.get("FUSEC_BIN_DIR"),
                    help="directory with fusec and fusec-run (default $FUSEC_BIN_DIR)")
    ap.add_argument("--data", default=DEFAULT_DATA, help="ONNX node test directory")
    ap.add_argument("--ops", help="comma-separated supported ops "
                    "(default: `fusec --list-onnx-ops`)")
    ap.add_argument("--known-failures", help="file of `test_name  # reason` lines")
    ap.add_argument("--work", help="work directory (default: a temporary one, removed)")
    ap.add_argument("--filter", help="only tests whose name matches this regex")
    ap.add_argument("--fusec-args", default="", help='extra fusec flags, e.g. "-O2"')
    ap.add_argument("--run-args", default="",
                    help='extra fusec-run flags, e.g. "--device=emulator" (with -O2)')
    ap.add_argument("--bind-inputs", action="store_true",
                    help="make every graph input after the first an initializer holding "
                         "the test's data (tests with one input are skipped)")
    ap.add_argument("--jobs", "-j", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--shard", default="0/1",
                    help="K/N: run only the tests whose name hashes (CRC-32) to K modulo N; "
                         "the others count as skipped (the sanitizer build runs a shard)")
    ap.add_argument("--list", action="store_true",
                    help="only list the tests (ops, opset, skip reason); runs nothing")
    ap.add_argument("-v", "--verbose", action="store_true",
                    help="also print skipped tests, and the commands and output of failures")
    args = ap.parse_args()
    args.fusec_args = args.fusec_args.split()
    args.run_args = args.run_args.split()

    if args.bin:
        args.fusec = os.path.join(args.bin, "fusec")
        args.fusec_run = os.path.join(args.bin, "fusec-run")
    elif not (args.list and args.ops):
        ap.error("--bin (or FUSEC_BIN_DIR) is required")

    if args.ops is not None:
        supported = {o.strip() for o in args.ops.split(",") if o.strip()}
    else:
        try:
            p = subprocess.run([args.fusec, "--list-onnx-ops"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, timeout=TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired) as e:
            ap.error("cannot run %s --list-onnx-ops (%s); pass --ops" % (args.fusec, e))
        if p.returncode != 0:
            ap.error("`%s --list-onnx-ops` failed; pass --ops" % args.fusec)
        supported = {l.split()[0] for l in p.stdout.splitlines() if l.strip()}

    if not os.path.isdir(args.data):
        ap.error("no such data directory: %s" % args.data)
    tests = discover(args.data, supported, re.compile(args.filter) if args.filter else None)

    if args.list:
        for t in tests:
            print("%-60s opset %-3s %-30s %s" % (t.name, t.opset, ",".join(sorted(t.ops)),
                                                  "skip: " + t.skip if t.skip else "run"))
        print("%d tests, %d runnable" % (len(tests), sum(not t.skip for t in tests)))
        return 0

    known = read_known(args.known_failures)
    work = args.work or tempfile.mkdtemp(prefix="fusec-node-tests-")
    os.makedirs(work, exist_ok=True)
    lock = threading.Lock()

    def one(t):
        t.status, t.detail, log = run_test(t, args, work)
        with lock:
            if t.status == "skipped":
                if args.verbose:
                    print("SKIPPED %s: %s" % (t.name, t.detail), flush=True)
                return
            tag = t.status.upper()
            if t.name in known:
                tag += " (known)" if t.status != "pass" else " (listed as known failure)"
            print("%s %s%s" % (tag, t.name, ": " + t.detail if t.detail else ""), flush=True)
            if args.verbose and t.status != "pass":
                print("\n".join("    " + l for l in "\n".join(log).splitlines()), flush=True)

    shard, shards = (int(part) for part in args.shard.split("/"))
    for t in tests:
        if not t.skip and zlib.crc32(t.name.encode()) % shards != shard:
            t.skip = "in another shard"
    runnable = [t for t in tests if not t.skip]
    for t in tests:
        if t.skip:
            t.status, t.detail = "skipped", t.skip
            if args.verbose:
                print("SKIPPED %s: %s" % (t.name, t.skip))
    try:
        with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
            list(pool.map(one, runnable))
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)

    count = {s: sum(t.status == s for t in tests)
             for s in ("pass", "fail", "import-error", "skipped")}
    unexpected = [t for t in tests
                  if t.status in ("fail", "import-error") and t.name not in known]
    fixed = [t.name for t in tests if t.status == "pass" and t.name in known]
    if fixed:
        print("known failures that now pass (remove them from the list): " + " ".join(fixed))
    if unexpected:
        print("unexpected failures: " + " ".join(t.name for t in unexpected))
    print("node tests: %d passed, %d failed, %d import errors, %d skipped (of %d)" % (
        count["pass"], count["fail"], count["import-error"], count["skipped"], len(tests)))
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main())
