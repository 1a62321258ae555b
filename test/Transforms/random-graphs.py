#!/usr/bin/env python3
"""Differential tester for fusion: random, well-typed FIR programs (issue 4).

For each seed this script generates one module deterministically (the seed
alone decides the program: a seed's program does not depend on --count or on
which other seeds run) and checks that fusion does not change what it
computes:

  1. fusec M.fir --passes=legalize -o A.fir
  2. fusec M.fir --passes=legalize,annotate-pattern,fuse-ops,fuse-tir -o B.fir
  3. round trips (spec section 3): `fusec M.fir -o P.fir` and B.fir both
     print back identically through `fusec FILE`
  4. fusec-run M.fir, A.fir and B.fir with the same --random-inputs --seed and
     --dims; the outputs of A and B must be bitwise equal (NaN equals NaN):
     fusion must not change evaluation. M (graph ops) must match A too, since
     the interpreter runs a graph op through the kernel legalize produces.
  5. every VARIANT_EVERY-th program also runs fuse-ops with group limits
     (max-fused-ops / max-function-args / max-merges) and compares with A;
  6. every CHECK_EACH_EVERY-th program runs the fused pipeline with
     --check-each (exit 3 names the pass that changed the results).
  7. fuse-by-pattern (TVM's FuseOpsByPattern) before the fused pipeline
     (PIPES_PAT): F with the broad patterns of Inputs/random-patterns.pat,
     G with them and annotate-codegen=true,bind-constants=false (prefix
     `rand`: the composites are legalized and merged like fused groups), H
     with @cublaslt and annotate-codegen=true (library composites keep
     their graph ops; the interpreter runs them). Each compiles (a valid
     program must not be rejected), prints back identically and agrees
     with A bitwise; where no composite was formed, the module must be B's.
     F runs on every PATTERN_EVERY-th seed, G on the next, H on every
     program with a matmul. The summary counts the programs with at least
     one composite (--min-composites N fails below N).

Any non-zero exit of fusec on a generated program is a failure: the
generator only emits programs that spec section 4 accepts (it tracks dtypes,
shapes and value ranges in Python), so a rejection is either a generator bug
or a fusec bug ("a valid program rejected").

The generator covers the operator set of spec section 4: unary ops (with
nn.relu/gelu/gelu_tanh/silu, clip, astype to f16/f32/i32/i64/bool), binary
ops with NumPy broadcasting (size-1 dims, rank-changing, both operands
broadcasting), comparisons and logical ops feeding where, reshape (with -1
and symbolic names), permute_dims, expand_dims, squeeze, broadcast_to,
concat, split + get, strided_slice (negative strides, clamping), take (with
and without axis, i32/i64 indices, some computed by a fused producer), sum/mean/max/min/prod with axis and
keepdims, nn.softmax/log_softmax, nn.layer_norm/rms_norm, matmul (1-D,
batched, broadcast batch dims, out_dtype), nn.conv2d (padding forms,
strides, dilation, groups) and the pools (ceil_mode, dilation, adaptive);
constants (scalar, splat, dense, random), literal operands, tuples, aliases,
calls of small helper functions, matmul + 1-D bias + relu/gelu_tanh chains
of 2-D f32/f16 operands (what cuBLASLt's patterns match, and near misses),
and "twins" (a chain repeated on other
inputs, sometimes with another literal: identical groups share a function,
near-identical ones must not). DAG shapes: chains, diamonds, fan-out, values
used by several later ops, several block outputs, tuple returns; f32 and f16
(mostly f32); one to four dataflow blocks with values crossing them through
`output`, bindings outside blocks, empty blocks, and a symbolic batch dim `n`
(sometimes also `m`) in parameter types, bound by --dims to 0..8. Value
ranges are tracked as intervals so that log/sqrt/divide/power get operands
in their domain and f16 values stay far from overflow. Not generated, by
design: broadcast_to a symbolic dim the operand lacks, concat / split /
strided_slice along symbolic dims (all rejected by fusec), and integer ops
that could divide by zero.

Shapes stay small (at most MAX_ELEMS elements, symbolic dims counted as 8,
the size --check-each uses), so a program runs in milliseconds: 300
programs take about 17 s with 2 workers (13-14 s without step 7; 23 s with
--pattern-every 1).

On a failure the script writes the module to TMP/failures/seed-S.fir, then
shrinks it (one returned value; bindings cut into parameters; blocks merged)
while the same failure persists, writes TMP/failures/seed-S.min.fir with a
comment header saying what failed and how to reproduce it, and prints both
paths. A failure that matches an open bug of KNOWN_BUGS says so.

Known bugs: KNOWN_BUGS lists the open fusec bugs this tester found, each
with a reproducer under Inputs/random-failures/; KNOWN_FAILING_SEEDS maps
the seeds of the lit run (0..299) that hit one to its tag. Those seeds are
skipped. When a bug is fixed, `--only-known` says which seeds pass now;
after changing the generator, `--update-known` prints a new table.

Usage:
  random-graphs.py --fusec-bin DIR --tmp DIR [--count N] [--start S]
                   [--jobs 2] [--keep] [--no-shrink] [-v]
                   [--pattern-every N] [--min-composites N]
  random-graphs.py --print --seed S            print the program of seed S
  random-graphs.py ... --only-known | --update-known

Prints one line per failure and a summary "N programs, M failures (...);
composites in R programs (rand patterns), C (cublaslt)" and exits 1 on any
failure.
"""
import argparse
import concurrent.futures
import math
import os
import random
import re
import shutil
import subprocess
import sys
import time

import numpy as np

# Open fusec bugs this tester found: tag -> (reproducer under
# test/Transforms/, what is wrong, regex matching the failure message).
# Fixed so far: fuse-tir names for numeric values, split into one section,
# a scalar constant used as a take index inside a fused group; with
# fuse-by-pattern: one tuple name for the calls of a shared composite, a
# lifted constant's name %7_1 (Inputs/random-regressions/fbp-*.fir).
KNOWN_BUGS = {}  # none open; past ones are regression tests (random-regressions.test)

# Seeds whose program hits a known bug: seed -> tag of KNOWN_BUGS. They are
# generated but not checked, so the test stays green while the bug is open.
# `--only-known` checks just these seeds and says which pass now (remove
# them); `--update-known` prints this table for the seeds of --start/--count
# whose failures all match known bugs. The table depends on the generator:
# regenerate it after changing the generator.
KNOWN_FAILING_SEEDS = {}

assert all(tag in KNOWN_BUGS for tag in KNOWN_FAILING_SEEDS.values())

PIPE_A = "legalize"
PIPE_B = "legalize,annotate-pattern,fuse-ops,fuse-tir"
# The lowered forms (issue 5): -O0's and -O1's pipelines. Their reductions
# combine in another order (per-thread partials, warp shuffles), so they are
# compared with A within a tolerance, not bitwise.
PIPE_D = "legalize,schedule,lower"
# Ops that sum floats: lowered, they sum in another order (per-thread
# partials, shuffles). Their results, and everything computed from them, may
# differ from the interpreter's sequential order by more than any fixed
# tolerance where the sum is ill-conditioned (a layer_norm of a near-constant
# row, a truncating astype of a value near an integer).
REASSOC_OPS = {"sum", "mean", "prod", "nn.softmax", "nn.log_softmax", "nn.layer_norm",
               "nn.rms_norm", "matmul", "nn.conv2d", "nn.avg_pool2d", "nn.adaptive_avg_pool2d"}
# Ops whose result jumps where their operand crosses a point (an integer, a
# threshold): applied to a reassociated value, one flip changes everything
# computed from it (a floor of a whole-tensor sum broadcast to every
# element), so such outputs are not compared in the lowered forms.
DISCONTINUOUS_OPS = {"floor", "ceil", "round", "sign", "astype", "equal", "not_equal", "less",
                     "less_equal", "greater", "greater_equal"}
PIPE_E = "legalize,annotate-pattern,fuse-ops,fuse-tir,schedule,lower"
# -O2 (issues 7 and 8): cuBLASLt composites (the interpreter runs their
# bodies), cost-aware prologues and broadcast placement; every 2nd seed.
PIPE_O2 = ("fuse-by-pattern{patterns=@cublaslt,bind-constants=true,annotate-codegen=true,"
           "prologue-aware=true,target=sm_90},legalize,annotate-pattern,"
           "fuse-ops{prologue=true,recompute-veto=true,merge-reductions=true,target=sm_90},fuse-tir,"
           "schedule{cost-model=roofline,target=sm_90},lower")
O2_EVERY = 2
CHECK_EACH_EVERY = 4
VARIANT_EVERY = 3

# fuse-by-pattern (TVM's FuseOpsByPattern) before the fused pipeline: its
# composites are legalized and merged by fuse-tir like fused groups
# (prefix `rand`), or kept as graph ops that the interpreter runs (prefix
# `cublaslt`, a library). Either way the results must be bitwise equal to
# A's, as B's are. PATTERNS holds broad patterns that match often in these
# programs; g_linear emits the chains that patterns/cublaslt.pat matches.
PATTERNS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs", "random-patterns.pat")
FUSED = "legalize,annotate-pattern,fuse-ops,fuse-tir"
PIPES_PAT = {
    "F": "fuse-by-pattern{patterns=%s},%s" % (PATTERNS, FUSED),
    "G": "fuse-by-pattern{patterns=%s,annotate-codegen=true,bind-constants=false},%s" % (PATTERNS, FUSED),
    "H": "fuse-by-pattern{patterns=@cublaslt,annotate-codegen=true},%s" % FUSED,
}
PATTERN_EVERY = 2


def variant_pipeline(seed):
    """fuse-ops with options that cap groups, chosen by the seed."""
    r = random.Random(seed * 31 + 5)
    opts = r.choice([["max-fused-ops=%d" % r.randint(1, 5)],
                     ["max-function-args=%d" % r.randint(2, 6)],
                     ["max-merges=%d" % r.randint(0, 6)],
                     ["max-fused-ops=%d" % r.randint(2, 6), "max-function-args=%d" % r.randint(3, 8)]])
    return "legalize,annotate-pattern,fuse-ops{%s},fuse-tir" % ",".join(opts)


def pattern_tags(seed, text):
    """The fuse-by-pattern pipelines (PIPES_PAT) that check this program.
    PATTERN_EVERY spreads the two `rand` pipelines over the seeds (time);
    the cuBLASLt one runs where a matmul is, since nothing else matches."""
    tags = []
    if seed % PATTERN_EVERY == 0:
        tags.append("F")
    if seed % PATTERN_EVERY == 1 % PATTERN_EVERY:
        tags.append("G")
    if "matmul(" in text:
        tags.append("H")
    return tags

SYM_BUDGET = 8          # a symbolic dim counts as this many elements
MAX_ELEMS = 2048        # per tensor
MAX_MACS = 1 << 16      # matmul / conv2d multiply-accumulates
LIMIT = {"f32": 1e6, "f16": 1e3, "i32": 1e5, "i64": 1e5, "bool": 1}
FLOATS = ("f32", "f16")
INTS = ("i32", "i64")


# ---------------------------------------------------------------------------
# Program representation
# ---------------------------------------------------------------------------

class Val:
    """A tensor value (dtype, shape, value interval) or a tuple (fields)."""

    def __init__(self, name, dtype, shape, lo=-1.0, hi=1.0, fields=None):
        self.name = name
        self.dtype = dtype            # None for a tuple
        self.shape = tuple(shape) if shape is not None else None
        self.lo, self.hi = float(lo), float(hi)
        self.fields = fields          # list of Val (name unused) for tuples
        self.uses = 0

    @property
    def is_tuple(self):
        return self.fields is not None

    @property
    def rank(self):
        return len(self.shape)

    def type_str(self):
        if self.is_tuple:
            return "(" + ", ".join(f.type_str() for f in self.fields) + ")"
        return "%s[%s]" % (self.dtype, ",".join(str(d) for d in self.shape))

    def mag(self):
        return max(abs(self.lo), abs(self.hi))


class Binding:
    """`%name = TEXT` where TEXT holds @@i@@ for the name of operand i."""

    def __init__(self, val, fmt, ops, show_type):
        self.val, self.fmt, self.ops, self.show_type = val, fmt, list(ops), show_type

    def text(self):
        body = re.sub(r"@@(\d+)@@", lambda m: "%" + self.ops[int(m.group(1))].name, self.fmt)
        line = "%%%s = %s" % (self.val.name, body)
        if self.show_type and not body.startswith("constant"):
            line += " : " + self.val.type_str()
        return line


class Segment:
    def __init__(self, kind):
        self.kind = kind              # "dataflow" or "plain"
        self.bindings = []


class Program:
    def __init__(self, seed):
        self.seed = seed
        self.params = []
        self.segments = []
        self.returns = []
        self.ret_tuple = True
        self.module_name = None
        self.dims = {}                # symbol -> run-time size
        self.shuffle_outputs = False
        self.fname = "main"
        self.helpers = []             # Programs of functions @main calls

    def render(self):
        text = self.render_func()
        if self.module_name:
            text = "module @%s\n\n%s" % (self.module_name, text)
        for h in self.helpers:
            text += "\n" + h.render_func()
        return text

    def render_func(self):
        defseg = {}
        for si, seg in enumerate(self.segments):
            for b in seg.bindings:
                defseg[b.val.name] = si
        need = set()
        for si, seg in enumerate(self.segments):
            for b in seg.bindings:
                for o in b.ops:
                    if o.name in defseg and defseg[o.name] != si:
                        need.add(o.name)
        for r in self.returns:
            need.add(r.name)
        lines = []
        params = ", ".join("%%%s: %s" % (p.name, p.type_str()) for p in self.params)
        if self.ret_tuple or len(self.returns) != 1:
            rtype = "(" + ", ".join(r.type_str() for r in self.returns) + ")"
            rval = "(" + ", ".join("%" + r.name for r in self.returns) + ")"
        else:
            rtype, rval = self.returns[0].type_str(), "%" + self.returns[0].name
        lines.append("func @%s(%s) -> %s {" % (self.fname, params, rtype))
        for si, seg in enumerate(self.segments):
            if seg.kind == "plain":
                for b in seg.bindings:
                    lines.append("  " + b.text())
                continue
            lines.append("  dataflow {")
            outs = []
            for b in seg.bindings:
                lines.append("    " + b.text())
                if b.val.name in need:
                    outs.append("%" + b.val.name)
            if self.shuffle_outputs:
                random.Random(self.seed).shuffle(outs)
            if outs:
                lines.append("    output " + ", ".join(outs))
            lines.append("  }")
        lines.append("  return " + rval)
        lines.append("}")
        return "\n".join(lines) + "\n"

    def dims_arg(self):
        return ",".join("%s=%d" % kv for kv in sorted(self.dims.items()))

    # -- shrinking helpers ---------------------------------------------------
    def copy(self):
        p = Program(self.seed)
        p.params = list(self.params)
        for seg in self.segments:
            s = Segment(seg.kind)
            s.bindings = list(seg.bindings)
            p.segments.append(s)
        p.returns = list(self.returns)
        p.ret_tuple = self.ret_tuple
        p.module_name = self.module_name
        p.dims = dict(self.dims)
        p.shuffle_outputs = self.shuffle_outputs
        p.fname = self.fname
        p.helpers = list(self.helpers)
        return p

    def dce(self):
        live = set(r.name for r in self.returns)
        for seg in reversed(self.segments):
            kept = []
            for b in reversed(seg.bindings):
                if b.val.name in live:
                    kept.append(b)
                    live.update(o.name for o in b.ops)
            seg.bindings = kept[::-1]
        self.params = [p for p in self.params if p.name in live]
        self.segments = [s for s in self.segments if s.bindings]
        called = set()
        for seg in self.segments:
            for b in seg.bindings:
                called.update(re.findall(r"call @([A-Za-z0-9_]+)", b.fmt))
        self.helpers = [h for h in self.helpers if h.fname in called]
        # Symbolic dims must still be bound by a parameter.
        return self

    def num_bindings(self):
        return sum(len(s.bindings) for s in self.segments)


# ---------------------------------------------------------------------------
# Shape helpers
# ---------------------------------------------------------------------------

def elems(shape):
    n = 1
    for d in shape:
        n *= SYM_BUDGET if isinstance(d, str) else d
    return n


def is_static(shape):
    return all(isinstance(d, int) for d in shape)


def broadcast(a, b):
    """NumPy broadcasting with symbolic dims (never assumed to be 1)."""
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else 1
        y = b[-i] if i <= len(b) else 1
        if x == y:
            out.append(x)
        elif x == 1:
            out.append(y)
        elif y == 1:
            out.append(x)
        else:
            return None
    return tuple(reversed(out))


def slice_length(length, begin, end, stride):
    def clamp_index(index, low, high):
        if index < 0:
            index = low if index < -length else index + length
        return min(max(index, low), high)
    if stride > 0:
        start, stop = clamp_index(begin, 0, length), clamp_index(end, 0, length)
        return (stop - start + stride - 1) // stride if stop > start else 0
    start, stop = clamp_index(begin, -1, length - 1), clamp_index(end, -1, length - 1)
    return (start - stop + (-stride) - 1) // (-stride) if start > stop else 0


def fmt_float(x):
    if x == int(x) and abs(x) < 1e6:
        return "%.1f" % x
    return repr(float(x))


def fmt_list(xs):
    return "[" + ", ".join(str(x) for x in xs) + "]"


class Retry(Exception):
    """The chosen operator does not fit the chosen operands; pick again."""


# ---------------------------------------------------------------------------
# Generator
# ---------------------------------------------------------------------------

class Gen:
    UNARY_FLOAT = ["exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid",
                   "erf", "nn.gelu", "nn.gelu_tanh", "nn.silu"]
    UNARY_NUM = ["negative", "abs", "sign", "nn.relu", "floor", "ceil", "round"]
    ARITH = ["add", "subtract", "multiply", "divide", "power", "maximum", "minimum"]
    CMP = ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]

    def __init__(self, seed, rng=None, depth=0):
        self.seed = seed
        self.depth = depth
        self.r = rng or random.Random(seed * 7919 + 17)
        self.p = Program(seed)
        self.names = set()
        self.counter = 0
        self.visible = []         # values usable as operands, in definition order
        self.seg = None
        self.syms = []
        self.const_seed = self.r.randrange(1000)
        self.show_type_p = self.r.choice([0.0, 0.5, 0.8, 1.0])

    # -- names -----------------------------------------------------------------
    def fresh(self, hint=None):
        r = self.r
        while True:
            self.counter += 1
            k = self.counter
            style = r.random()
            if style < 0.3:
                name = "%s%d" % (hint or "v", k)
            elif style < 0.42:
                name = str(k)
            elif style < 0.55:
                name = "lv%d" % k
            elif style < 0.65:
                name = "v_%d" % k
            elif style < 0.72:
                name = "t.%d" % k
            elif style < 0.78:
                name = "a$%d-b" % k
            elif style < 0.8:
                name = "0%d" % k       # %07 and %7 are different names
            else:
                name = "x%d" % k
            if name not in self.names:
                self.names.add(name)
                return name

    # -- values ----------------------------------------------------------------
    def add_binding(self, fmt, ops, dtype, shape, lo, hi, hint=None, fields=None,
                    show=None):
        v = Val(self.fresh(hint), dtype, shape, lo, hi, fields)
        # Whether a float reduction (whose lowered form combines in another
        # order) feeds this value: see compare_outputs.
        head = fmt.split("(")[0].strip()
        v.reassoc = head in REASSOC_OPS or head.startswith("call") or \
            any(getattr(o, "reassoc", False) for o in ops)
        v.unstable = any(getattr(o, "unstable", False) for o in ops) or \
            (head in DISCONTINUOUS_OPS and any(getattr(o, "reassoc", False) for o in ops))
        for o in ops:
            o.uses += 1
        if show is None:
            show = self.r.random() < self.show_type_p
        self.seg.bindings.append(Binding(v, fmt, ops, show))
        self.visible.append(v)
        return v

    def new_param(self, dtype, shape, lo=None, hi=None):
        if lo is None:
            if dtype in FLOATS:
                lo, hi = -1.0, 1.0
            elif dtype == "bool":
                lo, hi = 0.0, 1.0
            else:
                lo, hi = -2.0, 2.0
        v = Val(self.fresh("p"), dtype, shape, lo, hi)
        self.p.params.append(v)
        self.visible.append(v)
        return v

    def new_leaf(self, dtype, shape, positive=False, usable_param=True):
        """A parameter or a constant of the given type."""
        r = self.r
        if dtype == "bool":
            return self.new_param(dtype, shape)
        choice = r.random()
        if usable_param and choice < 0.45 and not positive:
            return self.new_param(dtype, shape)
        n = elems(shape)
        if len(shape) == 0:
            c = r.choice([0.5, 2.0, 1.5, 0.25, 3.0]) if positive else \
                r.choice([0.5, -0.5, 2.0, -1.5, 0.25, 1.0, -3.0])
            if dtype in INTS:
                c = float(int(c) or 1)
            return self.add_binding("constant %s : %s[]" % (fmt_float(c) if dtype in FLOATS else int(c), dtype),
                                    [], dtype, shape, c, c, "c")
        if not is_static(shape):
            # Constants need static shapes.
            v = self.new_param(dtype, shape)
            return self.make_positive(v) if positive else v
        if n <= 8 and choice < 0.65:
            vals = [r.choice([0.5, 1.0, 1.5, 2.0, 0.25]) if positive else
                    r.choice([-1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 0.125, -0.75]) for _ in range(n)]
            if dtype in INTS:
                vals = [float(int(x * 2) or 1) for x in vals]
            arr = np.array(vals).reshape([int(d) for d in shape])
            txt = self.dense_text(arr, dtype)
            return self.add_binding("constant dense<%s> : %s" % (txt, Val("", dtype, shape).type_str()),
                                    [], dtype, shape, min(vals), max(vals), "w")
        if choice < 0.9 and not (positive and dtype in INTS):
            lo, hi = (-1.0, 1.0) if dtype in FLOATS else (-128.0, 127.0)
            v = self.add_binding("constant random<seed = %d> : %s" % (
                self.const_seed + self.counter, Val("", dtype, shape).type_str()),
                [], dtype, shape, lo, hi, "w")
            return self.make_positive(v) if positive else v
        c = r.choice([0.5, 2.0, 1.25, 0.75]) if positive else r.choice([0.5, -1.0, 2.0, 0.0, -0.25])
        if dtype in INTS:
            c = float(int(c) or 1)
        return self.add_binding("constant splat<%s> : %s" % (
            fmt_float(c) if dtype in FLOATS else int(c), Val("", dtype, shape).type_str()),
            [], dtype, shape, c, c, "s")

    def dense_text(self, arr, dtype):
        if arr.ndim == 0:
            return fmt_float(float(arr)) if dtype in FLOATS else str(int(arr))
        return "[" + ", ".join(self.dense_text(a, dtype) for a in arr) + "]"

    def pick(self, pred=lambda v: True, fresh_bias=True):
        cands = [v for v in self.visible if not v.is_tuple and pred(v)]
        if not cands:
            raise Retry()
        weights = []
        n = len(cands)
        for i, v in enumerate(cands):
            w = 1.0 + 3.0 * (i + 1) / n
            if fresh_bias and v.uses == 0:
                w *= 4.0
            weights.append(w)
        return self.r.choices(cands, weights)[0]

    def ok(self, shape):
        return elems(shape) <= MAX_ELEMS

    def in_limit(self, dtype, lo, hi):
        if dtype == "bool":
            return True
        if not (math.isfinite(lo) and math.isfinite(hi)):
            return False
        return max(abs(lo), abs(hi)) <= LIMIT[dtype]

    def random_shape(self, rank=None, budget=256):
        r = self.r
        if rank is None:
            rank = r.choices([0, 1, 2, 3, 4], [1, 5, 8, 5, 2])[0]
        for _ in range(20):
            shape = [r.choice([1, 2, 3, 4, 4, 5, 6, 8]) for _ in range(rank)]
            if self.syms and rank > 0 and r.random() < 0.6:
                shape[0] = r.choice(self.syms)
                if rank > 2 and r.random() < 0.15:
                    shape[r.randrange(1, rank)] = r.choice(self.syms)
            if elems(shape) <= budget:
                return tuple(shape)
        return tuple([2] * rank)

    # -- helpers that emit small chains --------------------------------------
    def make_positive(self, v):
        """A value derived from v with a positive lower bound."""
        r = self.r
        if v.dtype not in FLOATS:
            v = self.astype(v, "f32")
        k = r.randrange(4)
        if k == 0:
            a = self.add_binding("abs(@@0@@)", [v], v.dtype, v.shape, 0.0, v.mag())
            c = r.choice([0.5, 1.0, 0.25])
            return self.add_binding("add(@@0@@, %s)" % fmt_float(c), [a], v.dtype, v.shape, c, a.hi + c)
        if k == 1:
            s = self.add_binding("sigmoid(@@0@@)", [v], v.dtype, v.shape, 0.0, 1.0)
            return self.add_binding("add(%s, @@0@@)" % fmt_float(0.5), [s], v.dtype, v.shape, 0.5, 1.5)
        if k == 2:
            lo, hi = -2.0, 2.0
            c = self.add_binding("clip(@@0@@) {min = %s, max = %s}" % (fmt_float(lo), fmt_float(hi)),
                                 [v], v.dtype, v.shape, max(lo, v.lo), min(hi, v.hi))
            return self.add_binding("exp(@@0@@)", [c], v.dtype, v.shape, math.exp(c.lo), math.exp(c.hi))
        m = self.add_binding("multiply(@@0@@, @@0@@)", [v], v.dtype, v.shape, 0.0, v.mag() ** 2)
        if not self.in_limit(v.dtype, 0, m.hi + 1):
            m = self.add_binding("tanh(@@0@@)", [m], v.dtype, v.shape, 0.0, 1.0)
        return self.add_binding("add(@@0@@, 1.0)", [m], v.dtype, v.shape, 1.0, m.hi + 1.0)

    def tame(self, v):
        """v squashed into a small range (for ops that need one)."""
        if v.dtype in INTS:
            return self.add_binding("clip(@@0@@) {min = -3, max = 3}", [v], v.dtype, v.shape,
                                    max(-3, min(v.lo, 3)), min(3, max(v.hi, -3)))
        k = self.r.randrange(3)
        if k == 0:
            return self.add_binding("tanh(@@0@@)", [v], v.dtype, v.shape, -1, 1)
        if k == 1:
            return self.add_binding("clip(@@0@@) {min = -2.0, max = 2.0}", [v], v.dtype, v.shape,
                                    max(-2, min(v.lo, 2)), min(2, max(v.hi, -2)))
        return self.add_binding("sin(@@0@@)", [v], v.dtype, v.shape, -1, 1)

    def astype(self, v, dtype):
        lo, hi = v.lo, v.hi
        if dtype in INTS:
            lo, hi = math.floor(lo), math.ceil(hi)
        if dtype == "bool":
            lo, hi = 0.0, 1.0
        return self.add_binding('astype(@@0@@) {dtype = "%s"}' % dtype, [v], dtype, v.shape, lo, hi, "cast")

    def literal(self, dtype, positive=False, small=False):
        r = self.r
        if dtype in INTS:
            c = r.choice([1, 2, 3]) if positive else r.choice([-2, -1, 0, 1, 2, 3])
            return str(c), float(c)
        if dtype == "bool":
            c = r.choice([True, False])
            return ("true" if c else "false"), float(c)
        if positive:
            c = r.choice([0.5, 1.0, 2.0, 1.5, 0.25, 3.0])
        else:
            c = r.choice([0.5, -0.5, 1.0, 2.0, -1.5, 0.25, 0.1, -2.0, 0.0])
        if r.random() < 0.1 and c == int(c):
            return str(int(c)), float(c)          # an integer literal for a float op
        return fmt_float(c), c

    # -- operand shapes --------------------------------------------------------
    def partner_shape(self, shape):
        """A shape that broadcasts with `shape`."""
        r = self.r
        s = list(shape)
        out = []
        for d in s:
            x = r.random()
            if x < 0.55:
                out.append(d)
            elif x < 0.85:
                out.append(1)
            elif d == 1:
                out.append(r.choice([2, 3, 4] + self.syms))
            else:
                out.append(d)
        mode = r.random()
        if mode < 0.25 and out:
            out = out[r.randrange(len(out) + 1):]
        elif mode < 0.35 and len(out) < 4:
            out = [r.choice([1, 2, 3])] + out
        return tuple(out)

    def compatible(self, v, dtype, shape):
        if v.dtype != dtype or v.is_tuple:
            return False
        b = broadcast(v.shape, shape)
        return b is not None and self.ok(b)

    def second_operand(self, v, positive=False, allow_literal=True):
        """(fmt piece, operand list, lo, hi, shape) for a second operand."""
        r = self.r
        x = r.random()
        if allow_literal and x < 0.25:
            txt, c = self.literal(v.dtype, positive)
            return txt, [], c, c, ()
        if x < 0.65:
            try:
                pred = (lambda u: self.compatible(u, v.dtype, v.shape) and u is not v and
                        (not positive or u.lo > 0.05))
                u = self.pick(pred)
                return None, [u], u.lo, u.hi, u.shape
            except Retry:
                pass
        if r.random() < 0.1:
            return None, [v], v.lo, v.hi, v.shape        # x op x
        shape = self.partner_shape(v.shape)
        b = broadcast(v.shape, shape)
        if b is None or not self.ok(b):
            shape = v.shape
        u = self.new_leaf(v.dtype, shape, positive=positive)
        if positive and u.lo <= 0.05:
            u = self.make_positive(u)
        return None, [u], u.lo, u.hi, u.shape

    # -- operators ---------------------------------------------------------------
    def g_unary(self):
        r = self.r
        v = self.pick()
        if v.dtype == "bool":
            if r.random() < 0.6:
                self.add_binding("logical_not(@@0@@)", [v], "bool", v.shape, 0, 1)
            else:
                self.astype(v, r.choice(["f32", "f32", "f16", "i32"]))
            return
        if v.dtype in INTS:
            op = r.choice(self.UNARY_NUM + ["clip", "astype"])
        else:
            op = r.choice(self.UNARY_FLOAT + self.UNARY_NUM + ["clip", "clip", "astype"])
        lo, hi = v.lo, v.hi
        if op == "astype":
            if v.dtype in INTS:
                to = r.choice(["f32", "f16", "i64" if v.dtype == "i32" else "i32"])
                if to == "f16" and v.mag() > LIMIT["f16"]:
                    raise Retry()
            else:
                choices = ["f32" if v.dtype == "f16" else "f16", "i32", "i64", "bool"]
                to = r.choice(choices)
                if to in INTS + ("f16",) and not v.mag() <= LIMIT[to]:
                    v = self.tame(v)
            self.astype(v, to)
            return
        if op == "clip":
            a = r.choice([-2.0, -1.0, -0.5, 0.0, 0.25])
            b = a + r.choice([0.5, 1.0, 2.0, 3.5])
            if v.dtype in INTS:
                a, b = float(int(a)), float(int(b))
                txt = "clip(@@0@@) {min = %d, max = %d}" % (a, b)
            else:
                txt = "clip(@@0@@) {min = %s, max = %s}" % (fmt_float(a), fmt_float(b))
            nlo, nhi = min(max(lo, a), b), max(min(hi, b), a)
            self.add_binding(txt, [v], v.dtype, v.shape, nlo, nhi)
            return
        if op in ("log", "sqrt", "rsqrt"):
            if v.lo <= 0.05:
                v = self.make_positive(v)
            lo, hi = v.lo, v.hi
            if op == "log":
                lo, hi = math.log(lo), math.log(hi)
            elif op == "sqrt":
                lo, hi = math.sqrt(lo), math.sqrt(hi)
            else:
                lo, hi = 1 / math.sqrt(hi), 1 / math.sqrt(lo)
        elif op == "exp":
            if v.hi > math.log(LIMIT[v.dtype]) - 1:
                v = self.tame(v)
            lo, hi = math.exp(v.lo), math.exp(v.hi)
        elif op in ("sin", "cos", "erf", "sign"):
            lo, hi = -1.0, 1.0
        elif op == "tanh":
            lo, hi = math.tanh(lo), math.tanh(hi)
        elif op == "sigmoid":
            lo, hi = 0.0, 1.0
        elif op == "negative":
            lo, hi = -hi, -lo
        elif op == "abs":
            lo, hi = (0.0 if lo < 0 < hi else min(abs(lo), abs(hi))), v.mag()
        elif op == "nn.relu":
            lo, hi = max(lo, 0.0), max(hi, 0.0)
        elif op in ("nn.gelu", "nn.gelu_tanh", "nn.silu"):
            lo, hi = -0.3, max(hi, 0.0)
        elif op in ("floor", "ceil", "round"):
            lo, hi = lo - 1, hi + 1
        self.add_binding("%s(@@0@@)" % op, [v], v.dtype, v.shape, lo, hi, op.split(".")[-1])

    def g_binary(self):
        r = self.r
        v = self.pick()
        if v.dtype == "bool":
            op = r.choice(["logical_and", "logical_or", "equal", "not_equal"])
        elif v.dtype in INTS:
            op = r.choice(["add", "subtract", "multiply", "maximum", "minimum", "divide"] + self.CMP)
        else:
            op = r.choice(self.ARITH + self.ARITH + self.CMP)
        if op == "power":
            if v.lo <= 0.05:
                v = self.make_positive(v)
            if v.hi > 100:
                v = self.make_positive(self.tame(v))
            if r.random() < 0.6:
                e = r.choice([2.0, 0.5, -1.0, 3.0, 1.5, -0.5])
                lo = min(v.lo ** e, v.hi ** e)
                hi = max(v.lo ** e, v.hi ** e)
                if not self.in_limit(v.dtype, lo, hi):
                    raise Retry()
                self.add_binding("power(@@0@@, %s)" % fmt_float(e), [v], v.dtype, v.shape, lo, hi, "pow")
                return
            # A tensor exponent in [-2, 2].
            u = self.pick(lambda u: self.compatible(u, v.dtype, v.shape) and u.mag() <= 2) \
                if r.random() < 0.5 else self.new_leaf(v.dtype, self.partner_shape(v.shape))
            if u.mag() > 2 or broadcast(v.shape, u.shape) is None or not self.ok(broadcast(v.shape, u.shape)):
                raise Retry()
            cands = [v.lo ** u.lo, v.lo ** u.hi, v.hi ** u.lo, v.hi ** u.hi]
            lo, hi = min(cands), max(cands)
            if not self.in_limit(v.dtype, lo, hi):
                raise Retry()
            self.add_binding("power(@@0@@, @@1@@)", [v, u], v.dtype, broadcast(v.shape, u.shape), lo, hi, "pow")
            return
        positive = op == "divide"
        txt, ops, ulo, uhi, ushape = self.second_operand(v, positive=positive)
        if op == "divide" and v.dtype in INTS and txt is None:
            raise Retry()
        shape = broadcast(v.shape, ushape)
        if shape is None or not self.ok(shape):
            raise Retry()
        swap = r.random() < 0.3 and op != "divide"
        if op in ("add",):
            lo, hi = v.lo + ulo, v.hi + uhi
        elif op == "subtract":
            lo, hi = (v.lo - uhi, v.hi - ulo) if not swap else (ulo - v.hi, uhi - v.lo)
        elif op == "multiply":
            c = [v.lo * ulo, v.lo * uhi, v.hi * ulo, v.hi * uhi]
            lo, hi = min(c), max(c)
        elif op == "divide":
            c = [v.lo / ulo, v.lo / uhi, v.hi / ulo, v.hi / uhi]
            lo, hi = min(c), max(c)
        elif op == "maximum":
            lo, hi = max(v.lo, ulo), max(v.hi, uhi)
        elif op == "minimum":
            lo, hi = min(v.lo, ulo), min(v.hi, uhi)
        else:
            lo, hi = 0.0, 1.0
        dtype = "bool" if op in self.CMP else v.dtype
        if not self.in_limit(dtype, lo, hi):
            raise Retry()
        if txt is not None:
            fmt = "%s(%s, @@0@@)" % (op, txt) if swap else "%s(@@0@@, %s)" % (op, txt)
            self.add_binding(fmt, [v], dtype, shape, lo, hi)
        else:
            pair = [v, ops[0]] if not swap else [ops[0], v]
            if pair[0] is pair[1]:
                self.add_binding("%s(@@0@@, @@0@@)" % op, [v], dtype, shape, lo, hi)
            else:
                self.add_binding("%s(@@0@@, @@1@@)" % op, pair, dtype, shape, lo, hi)

    def condition(self, shape_hint):
        r = self.r
        try:
            if r.random() < 0.4:
                return self.pick(lambda u: u.dtype == "bool" and broadcast(u.shape, shape_hint) is not None
                                 and self.ok(broadcast(u.shape, shape_hint)))
        except Retry:
            pass
        base = self.pick(lambda u: u.dtype in FLOATS and broadcast(u.shape, shape_hint) is not None
                         and self.ok(broadcast(u.shape, shape_hint)))
        op = r.choice(self.CMP)
        txt, c = self.literal(base.dtype)
        if r.random() < 0.7:
            return self.add_binding("%s(@@0@@, %s)" % (op, txt), [base], "bool", base.shape, 0, 1, "cond")
        return self.add_binding("%s(@@0@@, @@1@@)" % op, [base, self.pick(
            lambda u: u.dtype == base.dtype and u.shape == base.shape)], "bool", base.shape, 0, 1, "cond")

    def g_where(self):
        r = self.r
        v = self.pick(lambda u: u.dtype != "bool")
        cond = self.condition(v.shape)
        txt, ops, ulo, uhi, ushape = self.second_operand(v)
        shape = broadcast(broadcast(cond.shape, v.shape) or (), ushape)
        if broadcast(cond.shape, v.shape) is None or shape is None or not self.ok(shape):
            raise Retry()
        lo, hi = min(v.lo, ulo), max(v.hi, uhi)
        if txt is not None:
            if r.random() < 0.5:
                self.add_binding("where(@@0@@, @@1@@, %s)" % txt, [cond, v], v.dtype, shape, lo, hi)
            else:
                self.add_binding("where(@@0@@, %s, @@1@@)" % txt, [cond, v], v.dtype, shape, lo, hi)
        else:
            order = [v, ops[0]] if r.random() < 0.5 else [ops[0], v]
            self.add_binding("where(@@0@@, @@1@@, @@2@@)", [cond] + order, v.dtype, shape, lo, hi)

    def factorize(self, count, rank):
        r = self.r
        dims = []
        rest = count
        for _ in range(rank - 1):
            divs = [d for d in range(1, rest + 1) if rest % d == 0]
            d = r.choice(divs)
            dims.append(d)
            rest //= d
        dims.append(rest)
        r.shuffle(dims)
        return dims

    def g_reshape(self):
        r = self.r
        v = self.pick(lambda u: len(set(d for d in u.shape if isinstance(d, str))) ==
                      len([d for d in u.shape if isinstance(d, str)]))
        syms = [d for d in v.shape if isinstance(d, str)]
        count = 1
        for d in v.shape:
            if isinstance(d, int):
                count *= d
        rank = r.choice([1, 1, 2, 2, 3, 4]) if count > 1 else r.choice([0, 1, 2])
        rank = max(rank, len(syms)) if rank else (0 if not syms else len(syms))
        static_rank = rank - len(syms)
        dims = self.factorize(count, static_rank) if static_rank > 0 else []
        if static_rank == 0 and count != 1:
            dims = [count]
        target = list(dims) + list(syms)
        r.shuffle(target)
        if target == list(v.shape) and r.random() < 0.5:
            raise Retry()
        shape = tuple(target)
        text = list(target)
        if target and r.random() < 0.4:
            i = r.randrange(len(text))
            text[i] = -1
        self.add_binding("reshape(@@0@@) {shape = %s}" % fmt_list(text), [v], v.dtype, shape,
                         v.lo, v.hi, "rs")

    def g_permute(self):
        r = self.r
        v = self.pick(lambda u: u.rank >= 2)
        axes = list(range(v.rank))
        r.shuffle(axes)
        if r.random() < 0.15:
            axes = list(range(v.rank))[::-1]
            attr = ""
        else:
            shown = [a - v.rank if r.random() < 0.2 else a for a in axes]
            attr = " {axes = %s}" % fmt_list(shown)
        shape = tuple(v.shape[a] for a in axes)
        self.add_binding("permute_dims(@@0@@)%s" % attr, [v], v.dtype, shape, v.lo, v.hi, "perm")

    def g_expand_dims(self):
        r = self.r
        v = self.pick(lambda u: u.rank <= 4)
        k = r.choice([1, 1, 1, 2]) if v.rank <= 3 else 1
        out_rank = v.rank + k
        axes = sorted(r.sample(range(out_rank), k))
        shape, it = [], iter(v.shape)
        for i in range(out_rank):
            shape.append(1 if i in axes else next(it))
        shown = [a - out_rank if r.random() < 0.25 else a for a in axes]
        attr = str(shown[0]) if (k == 1 and r.random() < 0.5) else fmt_list(shown)
        self.add_binding("expand_dims(@@0@@) {axis = %s}" % attr, [v], v.dtype, tuple(shape),
                         v.lo, v.hi, "ed")

    def g_squeeze(self):
        r = self.r
        v = self.pick(lambda u: u.rank >= 1)
        units = [i for i, d in enumerate(v.shape) if d == 1]
        if units and r.random() < 0.6:
            axes = sorted(r.sample(units, r.randint(1, len(units))))
            shown = [a - v.rank if r.random() < 0.25 else a for a in axes]
            attr = " {axis = %s}" % (str(shown[0]) if len(shown) == 1 and r.random() < 0.3
                                     else fmt_list(shown))
        else:
            axes = units
            attr = ""
        shape = tuple(d for i, d in enumerate(v.shape) if i not in axes)
        self.add_binding("squeeze(@@0@@)%s" % attr, [v], v.dtype, shape, v.lo, v.hi, "sq")

    def g_broadcast_to(self):
        r = self.r
        v = self.pick()
        target = []
        for d in v.shape:
            if d == 1 and r.random() < 0.6:
                opts = [2, 3, 4] + sorted(set(x for x in v.shape if isinstance(x, str)))
                target.append(r.choice(opts))
            else:
                target.append(d)
        if r.random() < 0.4 and len(target) < 4:
            target = [r.choice([1, 2, 3])] + target
        if tuple(target) == v.shape and r.random() < 0.7:
            raise Retry()
        if not self.ok(target):
            raise Retry()
        self.add_binding("broadcast_to(@@0@@) {shape = %s}" % fmt_list(target), [v], v.dtype,
                         tuple(target), v.lo, v.hi, "bc")

    def g_concat(self):
        r = self.r
        v = self.pick(lambda u: any(isinstance(d, int) for d in u.shape))
        axes = [i for i, d in enumerate(v.shape) if isinstance(d, int)]
        axis = r.choice(axes)
        ops = [v]
        total = v.shape[axis]
        for _ in range(r.choice([1, 1, 2])):
            def fits(u):
                return (u.dtype == v.dtype and u.rank == v.rank and
                        isinstance(u.shape[axis], int) and
                        all(u.shape[i] == v.shape[i] for i in range(v.rank) if i != axis))
            x = r.random()
            if x < 0.45:
                try:
                    u = self.pick(fits)
                except Retry:
                    u = None
            elif x < 0.6:
                u = v
            else:
                u = None
            if u is None:
                shape = list(v.shape)
                shape[axis] = r.choice([1, 2, 3, 4])
                u = self.new_leaf(v.dtype, tuple(shape))
            ops.append(u)
            total += u.shape[axis]
        shape = list(v.shape)
        shape[axis] = total
        if not self.ok(shape):
            raise Retry()
        r.shuffle(ops)
        uniq = []
        for o in ops:
            if o not in uniq:
                uniq.append(o)
        fmt = "concat(%s)" % ", ".join("@@%d@@" % uniq.index(o) for o in ops)
        ax = axis - v.rank if r.random() < 0.25 else axis
        if ax != 0 or r.random() < 0.5:
            fmt += " {axis = %s}" % (str(ax) if r.random() < 0.5 else "[%d]" % ax)
        self.add_binding(fmt, uniq, v.dtype, tuple(shape), min(o.lo for o in ops),
                         max(o.hi for o in ops), "cat")

    def g_split(self):
        r = self.r
        v = self.pick(lambda u: any(isinstance(d, int) and d >= 2 for d in u.shape))
        axes = [i for i, d in enumerate(v.shape) if isinstance(d, int) and d >= 2]
        axis = r.choice(axes)
        size = v.shape[axis]
        if r.random() < 0.5:
            # One section (the operand itself) is a corner case: keep it rare.
            opts = [s for s in range(2 if r.random() < 0.9 else 1, min(size, 4) + 1)
                    if (s - 1) * (-(-size // s)) < size]
            s = r.choice(opts)
            length = -(-size // s)
            ranges = [(min(i * length, size), min((i + 1) * length, size)) for i in range(s)]
            spec = str(s)
        else:
            k = r.randint(1, min(2, size - 1))
            idx = sorted(r.sample(range(1, size), k))
            ranges, b = [], 0
            for i in idx:
                ranges.append((b, i))
                b = i
            ranges.append((b, size))
            spec = fmt_list(idx) if len(idx) > 1 or r.random() < 0.5 else "[%d]" % idx[0]
        fields = []
        for b, e in ranges:
            shape = list(v.shape)
            shape[axis] = e - b
            fields.append(Val("", v.dtype, shape, v.lo, v.hi))
        attr = "{indices_or_sections = %s" % spec
        if axis != 0 or r.random() < 0.5:
            attr += ", axis = %d" % (axis - v.rank if r.random() < 0.25 else axis)
        attr += "}"
        if len(fields) == 1:  # one section: the operand itself, a tensor (TVM Relax)
            self.add_binding("split(@@0@@) %s" % attr, [v], v.dtype, tuple(v.shape), v.lo, v.hi,
                             "split")
            return
        t = self.add_binding("split(@@0@@) %s" % attr, [v], None, None, 0, 0, "split", fields=fields)
        picks = sorted(r.sample(range(len(fields)), r.randint(1, len(fields))))
        for i in picks:
            f = fields[i]
            self.add_binding("get(@@0@@, %d)" % i, [t], f.dtype, f.shape, f.lo, f.hi, "part")

    def g_strided_slice(self):
        r = self.r
        v = self.pick(lambda u: any(isinstance(d, int) and d >= 2 for d in u.shape))
        cand = [i for i, d in enumerate(v.shape) if isinstance(d, int) and d >= 2]
        axes = sorted(r.sample(cand, r.randint(1, min(2, len(cand)))))
        begins, ends, strides = [], [], []
        shape = list(v.shape)
        for a in axes:
            size = v.shape[a]
            for _ in range(50):
                st = r.choice([1, 1, 1, 2, 3, -1, -2])
                b = r.randint(-size - 1, size + 1)
                e = r.randint(-size - 2, size + 2)
                if r.random() < 0.1:
                    e = r.choice([2 ** 31 - 1, -(2 ** 31)])
                n = slice_length(size, b, e, st)
                if n >= 1:
                    break
            else:
                raise Retry()
            begins.append(b)
            ends.append(e)
            strides.append(st)
            shape[a] = n
        shown = [a - v.rank if r.random() < 0.2 else a for a in axes]
        attr = "{axes = %s, begin = %s, end = %s" % (fmt_list(shown), fmt_list(begins), fmt_list(ends))
        if any(s != 1 for s in strides) or r.random() < 0.3:
            attr += ", strides = %s" % fmt_list(strides)
        attr += "}"
        self.add_binding("strided_slice(@@0@@) %s" % attr, [v], v.dtype, tuple(shape), v.lo, v.hi, "sl")

    def g_take(self):
        r = self.r
        itype = r.choice(INTS)
        ishape = tuple(r.choice([[], [2], [3], [4], [2, 2], [1, 3]]))
        if r.random() < 0.2:
            # Flattened take: indices into the flattened data.
            # Static data only: a symbolic dim may be 0 at run time.
            v = self.pick(lambda u: is_static(u.shape) and elems(u.shape) >= 3)
            limit = elems(v.shape)
            axis = None
            shape = ishape
        else:
            v = self.pick(lambda u: any(isinstance(d, int) and d >= 3 for d in u.shape))
            axes = [i for i, d in enumerate(v.shape) if isinstance(d, int) and d >= 3]
            axis = r.choice(axes)
            limit = v.shape[axis]
            shape = v.shape[:axis] + ishape + v.shape[axis + 1:]
        if not self.ok(shape) or len(shape) > 5:
            raise Retry()
        if r.random() < 0.25:
            # Indices a fused producer computes (negated: still in [-2, 2]),
            # which `lower` inlines into the gather's index.
            raw = self.new_param(itype, ishape)
            idx = self.add_binding("negative(@@0@@)", [raw], itype, ishape, -2, 2, "idx")
        elif r.random() < 0.5:
            idx = self.new_param(itype, ishape)      # random inputs are in [-2, 2]
        else:
            n = elems(ishape)
            vals = np.array([r.randint(-limit, limit - 1) for _ in range(n)]).reshape(ishape)
            idx = self.add_binding("constant dense<%s> : %s" % (
                self.dense_text(vals, itype), Val("", itype, ishape).type_str()),
                [], itype, ishape, -limit, limit - 1, "idx")
        if axis is None:
            attr = ""
        else:
            attr = " {axis = %d}" % (axis - v.rank if r.random() < 0.2 else axis)
        self.add_binding("take(@@0@@, @@1@@)%s" % attr, [v, idx], v.dtype, shape, v.lo, v.hi, "take")

    def g_reduce(self):
        r = self.r
        v = self.pick(lambda u: u.dtype != "bool" and u.rank >= 1)
        op = r.choice(["sum", "sum", "mean", "mean", "max", "min", "prod"])
        if r.random() < 0.2:
            axes = list(range(v.rank))
            attr_axes = None
        else:
            axes = sorted(r.sample(range(v.rank), r.randint(1, v.rank)))
            shown = [a - v.rank if r.random() < 0.2 else a for a in axes]
            attr_axes = str(shown[0]) if len(shown) == 1 and r.random() < 0.4 else fmt_list(shown)
        keep = r.random() < 0.4
        count = elems([v.shape[a] for a in axes])
        if op == "mean" and v.dtype in INTS and not is_static([v.shape[a] for a in axes]):
            op = "sum"      # an integer mean over a dim that may be 0 divides by zero
        lo, hi = v.lo, v.hi
        if op == "sum":
            lo, hi = min(lo * count, lo), max(hi * count, hi)
        elif op == "prod":
            m = v.mag()
            if m > 1.0:
                if count * math.log(m) > math.log(LIMIT[v.dtype]):
                    v = self.tame(v)
                    m = v.mag()
            b = m ** count if m > 1 else m
            if v.dtype in INTS and m == 0:
                b = 0.0
            lo, hi = -b, b
        elif op == "mean" and v.dtype in INTS:
            lo, hi = lo - 1, hi + 1
        if not self.in_limit(v.dtype, lo, hi):
            if v.dtype in FLOATS:
                v = self.tame(v)
                lo, hi = -2.0 * count, 2.0 * count
                if not self.in_limit(v.dtype, lo, hi):
                    raise Retry()
            else:
                raise Retry()
        shape = []
        for i, d in enumerate(v.shape):
            if i in axes:
                if keep:
                    shape.append(1)
            else:
                shape.append(d)
        attrs = []
        if attr_axes is not None:
            attrs.append("axis = %s" % attr_axes)
        if keep or r.random() < 0.2:
            attrs.append("keepdims = %s" % ("true" if keep else "false"))
        attr = " {%s}" % ", ".join(attrs) if attrs else ""
        self.add_binding("%s(@@0@@)%s" % (op, attr), [v], v.dtype, tuple(shape), lo, hi, op)

    def g_softmax(self):
        r = self.r
        v = self.pick(lambda u: u.dtype in FLOATS and u.rank >= 1)
        op = r.choice(["nn.softmax", "nn.log_softmax"])
        a = r.randrange(v.rank)
        x = r.random()
        if x < 0.3 and a == v.rank - 1:
            attr = ""
        elif x < 0.6:
            attr = " {axis = %d}" % (a - v.rank if r.random() < 0.5 else a)
        else:
            attr = " {axis = [%d]}" % a
        if op == "nn.softmax":
            lo, hi = 0.0, 1.0
        else:
            d = v.shape[a]
            n = SYM_BUDGET if isinstance(d, str) else d
            lo, hi = -(v.hi - v.lo) - math.log(max(n, 1)) - 1, 0.0
        self.add_binding("%s(@@0@@)%s" % (op, attr), [v], v.dtype, v.shape, lo, hi,
                         op.split(".")[1])

    def g_norm(self):
        r = self.r
        v = self.pick(lambda u: u.dtype in FLOATS and u.rank >= 1)
        op = r.choice(["nn.layer_norm", "nn.rms_norm"])
        if r.random() < 0.6:
            axes = [v.rank - 1] if r.random() < 0.6 else list(range(r.randrange(v.rank), v.rank))
        else:
            axes = sorted(r.sample(range(v.rank), r.randint(1, v.rank)))
        pshape = tuple(v.shape[a] for a in axes)
        nparams = 2 if op == "nn.layer_norm" else 1
        ops = [v]
        for _ in range(nparams):
            try:
                if r.random() < 0.3:
                    ops.append(self.pick(lambda u: u.dtype == v.dtype and u.shape == pshape and u.mag() <= 2))
                    continue
            except Retry:
                pass
            ops.append(self.new_leaf(v.dtype, pshape))
        attrs = []
        shown = [a - v.rank if r.random() < 0.2 else a for a in axes]
        # layer_norm's axes has no default (TVM Relax); rms_norm's is -1.
        if op == "nn.layer_norm" or not (axes == [v.rank - 1] and r.random() < 0.4):
            attrs.append("axes = %s" % (str(shown[0]) if len(shown) == 1 and r.random() < 0.3
                                         else fmt_list(shown)))
        if r.random() < 0.4:
            attrs.append("epsilon = %s" % r.choice(["1e-5", "0.001", "1e-6", "0.01"]))
        attr = " {%s}" % ", ".join(attrs) if attrs else ""
        count = elems(pshape)
        bound = math.sqrt(count) + 1
        gm = max(o.mag() for o in ops[1:])
        lo, hi = -bound * gm - gm, bound * gm + gm
        if not self.in_limit(v.dtype, lo, hi):
            raise Retry()
        self.add_binding("%s(%s)%s" % (op, ", ".join("@@%d@@" % i for i in range(len(ops))), attr),
                         ops, v.dtype, v.shape, lo, hi, op.split(".")[1])

    def g_matmul(self):
        r = self.r
        v = self.pick(lambda u: u.dtype in FLOATS and u.rank >= 1)
        left = r.random() < 0.65
        if v.mag() > 10:
            v = self.tame(v)
        if left:
            if v.rank == 1:
                K = v.shape[0]
                if r.random() < 0.3:
                    oshape = (K,)
                else:
                    oshape = tuple(r.choice([[], [2], [1]])) + (K, r.choice([1, 2, 3, 4, 8] + self.syms))
            else:
                K = v.shape[-1]
                if r.random() < 0.25:
                    oshape = (K,)
                else:
                    batch = [d if r.random() < 0.6 else 1 for d in v.shape[:-2]]
                    if batch and r.random() < 0.3:
                        batch = batch[r.randrange(len(batch) + 1):]
                    if r.random() < 0.15 and len(batch) < 2:
                        batch = [r.choice([1, 2])] + batch
                    oshape = tuple(batch) + (K, r.choice([1, 2, 3, 4, 5, 8] + self.syms))
            a_shape, b_shape = v.shape, oshape
        else:
            if v.rank == 1:
                K = v.shape[0]
                oshape = tuple(r.choice([[], [2]])) + (r.choice([1, 2, 3, 4] + self.syms), K) \
                    if r.random() < 0.7 else (K,)
            else:
                K = v.shape[-2]
                if r.random() < 0.25:
                    oshape = (K,)
                else:
                    batch = [d if r.random() < 0.6 else 1 for d in v.shape[:-2]]
                    oshape = tuple(batch) + (r.choice([1, 2, 3, 4, 6] + self.syms), K)
            a_shape, b_shape = oshape, v.shape
        # Result shape, NumPy rules.
        A, B = list(a_shape), list(b_shape)
        av, bv = len(A) == 1, len(B) == 1
        if av:
            A = [1] + A
        if bv:
            B = B + [1]
        if A[-1] != B[-2]:
            raise Retry()
        batch = broadcast(tuple(A[:-2]), tuple(B[:-2]))
        if batch is None:
            raise Retry()
        out = list(batch) + ([] if av else [A[-2]]) + ([] if bv else [B[-1]])
        kk = SYM_BUDGET if isinstance(K, str) else K
        if not self.ok(out) or elems(out) * kk > MAX_MACS or len(out) > 4:
            raise Retry()
        other_shape = b_shape if left else a_shape
        try:
            if r.random() < 0.35:
                u = self.pick(lambda u: u.dtype == v.dtype and u.shape == tuple(other_shape) and u.mag() <= 10)
            else:
                raise Retry()
        except Retry:
            u = self.new_leaf(v.dtype, tuple(other_shape))
        ops = [v, u] if left else [u, v]
        bound = kk * v.mag() * u.mag()
        dtype = v.dtype
        attr = ""
        if r.random() < 0.15:
            dtype = "f32" if v.dtype == "f16" else r.choice(["f32", "f16"])
            attr = ' {out_dtype = "%s"}' % dtype
        if not self.in_limit(dtype, -bound, bound):
            raise Retry()
        if ops[0] is ops[1]:
            self.add_binding("matmul(@@0@@, @@0@@)%s" % attr, [v], dtype, tuple(out), -bound, bound, "mm")
        else:
            self.add_binding("matmul(@@0@@, @@1@@)%s" % attr, ops, dtype, tuple(out), -bound, bound, "mm")

    def nchw_input(self):
        """A rank-4 float value: an existing one, a reshape of one, or a new parameter."""
        r = self.r
        try:
            if r.random() < 0.6:
                return self.pick(lambda u: u.dtype in FLOATS and u.rank == 4 and isinstance(u.shape[1], int)
                                 and u.shape[1] <= 12 and all(
                                     isinstance(d, str) or d >= 2 for d in u.shape[2:]) and u.mag() <= 10)
        except Retry:
            pass
        if r.random() < 0.5:
            try:
                v = self.pick(lambda u: u.dtype in FLOATS and is_static(u.shape) and 8 <= elems(u.shape) <= 1024
                              and u.mag() <= 10)
                cnt = elems(v.shape)
                opts = []
                for c in (1, 2, 3, 4, 6, 8):
                    for h in (2, 3, 4, 5, 6, 8):
                        if cnt % (c * h) == 0:
                            w = cnt // (c * h)
                            n = 1
                            if 2 <= w <= 16:
                                opts.append((n, c, h, w))
                            if w % 2 == 0 and 2 <= w // 2:
                                opts.append((2, c, h, w // 2))
                if opts:
                    shape = r.choice(opts)
                    return self.add_binding("reshape(@@0@@) {shape = %s}" % fmt_list(shape), [v], v.dtype,
                                            shape, v.lo, v.hi, "img")
            except Retry:
                pass
        dtype = "f16" if r.random() < 0.2 else "f32"
        n = r.choice([1, 1, 2] + self.syms)
        c = r.choice([1, 2, 3, 4, 6])
        h = r.choice([3, 4, 5, 6, 7, 8])
        w = r.choice([3, 4, 5, 6, 8])
        if r.random() < 0.1 and self.syms:
            h = r.choice(self.syms)
        return self.new_param(dtype, (n, c, h, w))

    def window(self, size, k, stride, dil, pb, pe, ceil, check_cover=True):
        reach = dil * (k - 1) + 1
        if isinstance(size, str):
            if stride == 1 and pb + pe == reach - 1 and dil == 1:
                return size
            raise Retry()
        span = size + pb + pe - reach
        if span < 0:
            raise Retry()
        out = ((span + stride - 1) // stride if ceil else span // stride) + 1
        if check_cover:
            for o in range(out):
                start = o * stride - pb
                if not any(0 <= start + j * dil < size for j in range(k)):
                    raise Retry()
        return out

    def pads(self, maxpad):
        r = self.r
        x = r.random()
        if x < 0.35:
            return [0, 0, 0, 0], None
        if x < 0.55:
            p = r.randint(0, maxpad)
            return [p] * 4, str(p) if r.random() < 0.5 else "[%d]" % p
        if x < 0.75:
            a, b = r.randint(0, maxpad), r.randint(0, maxpad)
            return [a, b, a, b], "[%d, %d]" % (a, b)
        p = [r.randint(0, maxpad) for _ in range(4)]
        return p, fmt_list(p)

    def pair(self, values, weights=None):
        r = self.r
        a = r.choices(values, weights)[0]
        if r.random() < 0.7:
            b = a
        else:
            b = r.choices(values, weights)[0]
        if a == b and r.random() < 0.5:
            return (a, b), str(a)
        return (a, b), "[%d, %d]" % (a, b)

    def g_conv2d(self):
        r = self.r
        x = self.nchw_input()
        N, C, H, W = x.shape
        if isinstance(C, str):
            raise Retry()
        groups = r.choice([g for g in (1, 1, 1, 2, 3, 4, C) if C % g == 0])
        O = groups * r.choice([1, 1, 2, 3])
        if O > 12:
            raise Retry()
        (kh, kw), _ = self.pair([1, 2, 3], [2, 2, 3])
        if r.random() < 0.5:
            kw = kh
        (sh, sw), stext = self.pair([1, 2], [3, 1])
        (dh, dw), dtext = self.pair([1, 2], [5, 1])
        pad, ptext = self.pads(2)
        Ho = self.window(H, kh, sh, dh, pad[0], pad[2], False, check_cover=False)
        Wo = self.window(W, kw, sw, dw, pad[1], pad[3], False, check_cover=False)
        out = (N, O, Ho, Wo)
        macs = elems(out) * (C // groups) * kh * kw
        if not self.ok(out) or macs > MAX_MACS:
            raise Retry()
        wshape = (O, C // groups, kh, kw)
        w = self.new_leaf(x.dtype, wshape)
        attrs = []
        if (sh, sw) != (1, 1) or r.random() < 0.2:
            attrs.append("strides = %s" % stext)
        if ptext is not None:
            attrs.append("padding = %s" % ptext)
        if (dh, dw) != (1, 1) or r.random() < 0.1:
            attrs.append("dilation = %s" % dtext)
        if groups != 1 or r.random() < 0.1:
            attrs.append("groups = %d" % groups)
        attr = " {%s}" % ", ".join(attrs) if attrs else ""
        bound = (C // groups) * kh * kw * x.mag() * w.mag()
        if not self.in_limit(x.dtype, -bound, bound):
            raise Retry()
        self.add_binding("nn.conv2d(@@0@@, @@1@@)%s" % attr, [x, w], x.dtype, out, -bound, bound, "conv")

    def g_pool(self):
        r = self.r
        x = self.nchw_input()
        N, C, H, W = x.shape
        op = r.choice(["nn.max_pool2d", "nn.avg_pool2d", "nn.avg_pool2d", "nn.max_pool2d",
                       "nn.adaptive_avg_pool2d"])
        if op == "nn.adaptive_avg_pool2d":
            x_ = r.random()
            if x_ < 0.25:
                attr, out = "", (N, C, H, W)
            else:
                oh = r.choice([1, 2, 3]) if not isinstance(H, int) else r.randint(1, H)
                ow = r.choice([1, 2, 3]) if not isinstance(W, int) else r.randint(1, W)
                if oh == ow and r.random() < 0.5:
                    attr = " {output_size = %d}" % oh
                else:
                    attr = " {output_size = [%d, %d]}" % (oh, ow)
                out = (N, C, oh, ow)
            self.add_binding("%s(@@0@@)%s" % (op, attr), [x], x.dtype, out, x.lo, x.hi, "apool")
            return
        (kh, kw), ktext = self.pair([1, 2, 3], [1, 3, 3])
        (sh, sw), stext = self.pair([1, 2, 3], [3, 3, 1])
        (dh, dw), dtext = self.pair([1, 2], [6, 1])
        pad, ptext = self.pads(1)
        ceil = r.random() < 0.2
        Ho = self.window(H, kh, sh, dh, pad[0], pad[2], ceil)
        Wo = self.window(W, kw, sw, dw, pad[1], pad[3], ceil)
        out = (N, C, Ho, Wo)
        if not self.ok(out):
            raise Retry()
        attrs = ["pool_size = %s" % ktext]
        if (sh, sw) != (1, 1) or r.random() < 0.2:
            attrs.append("strides = %s" % stext)
        if ptext is not None:
            attrs.append("padding = %s" % ptext)
        if (dh, dw) != (1, 1):
            attrs.append("dilation = %s" % dtext)
        if ceil or r.random() < 0.1:
            attrs.append("ceil_mode = %s" % ("true" if ceil else "false"))
        r.shuffle(attrs)
        self.add_binding("%s(@@0@@) {%s}" % (op, ", ".join(attrs)), [x], x.dtype, out, x.lo, x.hi, "pool")

    def g_tuple(self):
        r = self.r
        k = r.randint(1, 3)
        vals = [self.pick() for _ in range(k)]
        uniq = []
        for v in vals:
            if v not in uniq:
                uniq.append(v)
        fields = [Val("", v.dtype, v.shape, v.lo, v.hi) for v in vals]
        t = self.add_binding("tuple(%s)" % ", ".join("@@%d@@" % uniq.index(v) for v in vals), uniq,
                             None, None, 0, 0, "tup", fields=fields)
        if r.random() < 0.75:
            for i in sorted(r.sample(range(k), r.randint(1, k))):
                f = fields[i]
                self.add_binding("get(@@0@@, %d)" % i, [t], f.dtype, f.shape, f.lo, f.hi, "g")
        if r.random() < 0.3:
            self.add_binding("@@0@@", [t], None, None, 0, 0, "alias", fields=fields)

    def g_call(self):
        """`call @helperK(...)`: a small graph function of the module."""
        r = self.r
        if self.depth > 0 or len(self.p.helpers) >= 2 or r.random() < 0.5:
            raise Retry()
        sub = Gen(self.seed, random.Random(r.randrange(1 << 30)), depth=1)
        sub.syms = list(self.syms)
        h = sub.generate(fname="helper%d" % (len(self.p.helpers) + 1), nops=r.randint(2, 8))
        ops = []
        for prm in h.params:
            try:
                # The helper's value ranges assume its parameters' ranges.
                if r.random() < 0.6:
                    ops.append(self.pick(lambda u: u.dtype == prm.dtype and u.shape == prm.shape
                                         and prm.lo <= u.lo and u.hi <= prm.hi))
                    continue
            except Retry:
                pass
            ops.append(self.new_param(prm.dtype, prm.shape))
        self.p.helpers.append(h)
        uniq = []
        for o in ops:
            if o not in uniq:
                uniq.append(o)
        fmt = "call @%s(%s)" % (h.fname, ", ".join("@@%d@@" % uniq.index(o) for o in ops))
        if len(h.returns) == 1 and not h.ret_tuple:
            rv = h.returns[0]
            self.add_binding(fmt, uniq, rv.dtype, rv.shape, rv.lo, rv.hi, "call", fields=rv.fields)
            return
        fields = [Val("", f.dtype, f.shape, f.lo, f.hi, f.fields) for f in h.returns]
        t = self.add_binding(fmt, uniq, None, None, 0, 0, "call", fields=fields)
        for i, f in enumerate(fields):
            if not f.is_tuple and r.random() < 0.8:
                self.add_binding("get(@@0@@, %d)" % i, [t], f.dtype, f.shape, f.lo, f.hi, "g")

    def g_twin(self):
        """Repeat the last few bindings on other inputs (fuse-ops shares the
        function of identical groups; near-identical ones must not share)."""
        r = self.r
        tail = []
        for b in reversed(self.seg.bindings):
            if (b.val.is_tuple or not b.ops or b.fmt.startswith("get(") or b.fmt.startswith("call ")
                    or b.fmt == "@@0@@" or len(tail) >= 4):
                break
            tail.append(b)
        if not tail:
            raise Retry()
        tail = tail[::-1][-r.randint(1, len(tail)):]
        mapping = {}
        for b in tail:
            ops = []
            for o in b.ops:
                if o.name in mapping:
                    ops.append(mapping[o.name])
                elif (r.random() < 0.5 and not o.is_tuple and o.dtype not in INTS and
                      (o.dtype == "bool" or (o.lo <= -1 and o.hi >= 1))):
                    # Random inputs lie in [-1, 1): inside the range o had.
                    ops.append(self.new_param(o.dtype, o.shape, o.lo, o.hi))
                else:
                    ops.append(o)
            fmt = b.fmt
            m = re.match(r"^(add|subtract|maximum|minimum|multiply)\((.*)\)$", fmt)
            if m and r.random() < 0.5:
                # A different scalar literal: same shape of group, other kernel.
                fmt = re.sub(r"(?<![\w.@-])(-?\d+\.\d+)", lambda x: fmt_float(float(x.group(1)) / 2), fmt)
            v = b.val
            nv = self.add_binding(fmt, ops, v.dtype, v.shape, min(v.lo, v.lo / 2), max(v.hi, v.hi / 2),
                                  "twin", fields=v.fields)
            mapping[v.name] = nv

    def g_linear(self):
        """matmul(2-D a, 2-D w) -> add(., 1-D bias over the columns) ->
        nn.relu | nn.gelu_tanh in f32 or f16: the chain patterns/cublaslt.pat
        matches (one cublasLtMatmul with a RELU_BIAS / GELU_BIAS epilogue),
        with variations that match a shorter pattern (no bias, no epilogue,
        the weight transposed) or none (nn.gelu, a 2-D bias, out_dtype of the
        other dtype)."""
        r = self.r
        a = None
        if r.random() < 0.5:
            try:
                a = self.pick(lambda u: u.dtype in FLOATS and u.rank == 2 and isinstance(u.shape[1], int)
                              and 1 <= u.shape[1] <= 16)
            except Retry:
                a = None
        if a is None:
            dtype = "f16" if r.random() < 0.4 else "f32"
            M = r.choice([1, 2, 3, 4, 8] + self.syms * 2)
            a = self.new_param(dtype, (M, r.choice([1, 2, 3, 4, 8, 16])))
        if a.mag() > 4:
            a = self.tame(a)
        dtype = a.dtype
        M, K = a.shape
        N = r.choice([1, 2, 3, 4, 6, 8, 16] + (self.syms if r.random() < 0.1 else []))
        if elems((M, N)) * K > MAX_MACS or not self.ok((M, N)):
            raise Retry()
        if r.random() < 0.25:
            # x @ W^T, as nn.Linear stores W (the "transposed" patterns).
            wt = self.new_leaf(dtype, (N, K))
            axes = " {axes = [1, 0]}" if r.random() < 0.85 else ""
            w = self.add_binding("permute_dims(@@0@@)%s" % axes, [wt], dtype, (K, N), wt.lo, wt.hi, "wT")
        else:
            w = self.new_leaf(dtype, (K, N))
        if w.mag() > 4:
            w = self.tame(w)
        bound = K * a.mag() * w.mag()
        attr = ""
        mdtype = dtype
        x = r.random()
        if x < 0.08:
            attr = ' {out_dtype = "%s"}' % dtype
        elif x < 0.12:
            mdtype = "f32" if dtype == "f16" else "f16"
            attr = ' {out_dtype = "%s"}' % mdtype
        if not self.in_limit(mdtype, -bound, bound):
            raise Retry()
        m = self.add_binding("matmul(@@0@@, @@1@@)%s" % attr, [a, w], mdtype, (M, N), -bound, bound, "mm")
        y = m
        if r.random() < 0.8:
            bshape = (N,) if r.random() < 0.9 else (1, N)
            try:
                if r.random() < 0.3:
                    b = self.pick(lambda u: u.dtype == mdtype and u.shape == bshape and u.mag() <= 4)
                else:
                    raise Retry()
            except Retry:
                b = self.new_leaf(mdtype, bshape)
            lo, hi = -bound - b.mag(), bound + b.mag()
            if not self.in_limit(mdtype, lo, hi):
                raise Retry()
            pair = [m, b] if r.random() < 0.75 else [b, m]
            y = self.add_binding("add(@@0@@, @@1@@)", pair, mdtype, (M, N), lo, hi, "bias")
        x = r.random()
        if x < 0.45:
            self.add_binding("nn.relu(@@0@@)", [y], mdtype, (M, N), 0.0, max(y.hi, 0.0), "relu")
        elif x < 0.8:
            self.add_binding("nn.gelu_tanh(@@0@@)", [y], mdtype, (M, N), -0.3, max(y.hi, 0.0), "gelu")
        elif x < 0.88:
            self.add_binding("nn.gelu(@@0@@)", [y], mdtype, (M, N), -0.3, max(y.hi, 0.0), "gelu")

    def g_alias(self):
        v = self.pick()
        self.add_binding("@@0@@", [v], v.dtype, v.shape, v.lo, v.hi, "alias")

    def g_int_roundtrip(self):
        r = self.r
        v = self.pick(lambda u: u.dtype in FLOATS)
        if v.mag() > 100:
            v = self.tame(v)
        k = r.choice([4.0, 8.0, 16.0])
        v = self.add_binding("multiply(@@0@@, %s)" % fmt_float(k), [v], v.dtype, v.shape, v.lo * k, v.hi * k)
        i = self.astype(v, r.choice(INTS))
        op = r.choice(["add", "multiply", "maximum", "subtract", "divide"])
        c = r.choice([1, 2, 3, -2])
        lo, hi = i.lo, i.hi
        if op == "add":
            lo, hi = lo + c, hi + c
        elif op == "subtract":
            lo, hi = lo - c, hi - c
        elif op == "multiply":
            lo, hi = min(lo * c, hi * c), max(lo * c, hi * c)
        elif op == "divide":
            lo, hi = -max(abs(lo), abs(hi)), max(abs(lo), abs(hi))
        elif op == "maximum":
            lo, hi = max(lo, c), max(hi, c)
        j = self.add_binding("%s(@@0@@, %d)" % (op, c), [i], i.dtype, i.shape, lo, hi)
        self.astype(j, r.choice(FLOATS))

    OPS = [
        ("g_unary", 14), ("g_binary", 18), ("g_where", 4), ("g_reshape", 5), ("g_permute", 4),
        ("g_expand_dims", 3), ("g_squeeze", 3), ("g_broadcast_to", 3), ("g_concat", 4),
        ("g_split", 3), ("g_strided_slice", 4), ("g_take", 3), ("g_reduce", 7), ("g_softmax", 3),
        ("g_norm", 3), ("g_matmul", 5), ("g_conv2d", 3), ("g_pool", 3), ("g_tuple", 1.5),
        ("g_alias", 1), ("g_int_roundtrip", 1.5), ("g_call", 1.5), ("g_twin", 2),
        ("g_linear", 2.5),
    ]

    def generate(self, fname="main", nops=None):
        r = self.r
        p = self.p
        p.fname = fname
        if self.depth == 0:
            sym_choice = r.random()
            if sym_choice < 0.35:
                self.syms = ["n"]
            elif sym_choice < 0.45:
                self.syms = ["n", "m"]
            for s in self.syms:
                p.dims[s] = r.choice([1, 2, 3, 4, 5, 8] * 4 + [0])
            if r.random() < 0.3:
                p.module_name = "rg_%d" % self.seed
        p.shuffle_outputs = r.random() < 0.3
        nseg = r.choices([1, 2, 3, 4], [4, 3, 2, 1])[0] if self.depth == 0 else r.choice([1, 1, 2])
        kinds = ["dataflow"] + [("plain" if r.random() < 0.2 else "dataflow") for _ in range(nseg - 1)]
        if r.random() < 0.15:
            kinds.insert(0, "plain")
        total = nops or r.randint(4, 36)
        # Initial parameters.
        f16_prog = r.random() < 0.25
        for _ in range(r.randint(1, 3)):
            dtype = "f16" if f16_prog and r.random() < 0.7 else "f32"
            self.new_param(dtype, self.random_shape(budget=512))
        names, weights = zip(*self.OPS)
        for si, kind in enumerate(kinds):
            seg = Segment(kind)
            p.segments.append(seg)
            self.seg = seg
            if kind == "dataflow" and r.random() < 0.05:
                continue                                    # an empty block
            count = r.randint(1, 3) if kind == "plain" else max(1, total // len(kinds) + r.randint(-2, 2))
            done = 0
            attempts = 0
            while done < count and attempts < count * 20:
                attempts += 1
                mark = (len(seg.bindings), len(self.visible), len(p.params), self.counter)
                uses = [v.uses for v in self.visible]
                try:
                    getattr(self, r.choices(names, weights)[0])()
                    done += 1
                except (Retry, OverflowError, ZeroDivisionError):
                    # Roll back whatever the failed attempt emitted.
                    del seg.bindings[mark[0]:]
                    del self.visible[mark[1]:]
                    del p.params[mark[2]:]
                    for v, u in zip(self.visible, uses):
                        v.uses = u
        # Often join unused values pairwise, so that fewer values end as
        # outputs (an output ends a fusion group) and the DAG reconverges.
        if r.random() < 0.6:
            for _ in range(12):
                sinks = [v for v in self.visible if v.uses == 0 and v not in p.params
                         and not v.is_tuple and v.dtype in FLOATS]
                pairs = [(a, b) for i, a in enumerate(sinks) for b in sinks[i + 1:]
                         if a.dtype == b.dtype and broadcast(a.shape, b.shape) is not None
                         and self.ok(broadcast(a.shape, b.shape))]
                if len(sinks) <= 2 or not pairs:
                    break
                a, b = r.choice(pairs)
                op = r.choice(["add", "multiply", "maximum", "subtract"])
                c = [a.lo + b.lo, a.hi + b.hi, a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi,
                     a.lo - b.hi, a.hi - b.lo]
                if not self.in_limit(a.dtype, min(c), max(c)):
                    continue
                self.add_binding("%s(@@0@@, @@1@@)" % op, [a, b], a.dtype,
                                 broadcast(a.shape, b.shape), min(c), max(c), "join")
        # Returns: every value nothing uses, plus a few intermediates.
        sinks = [v for v in self.visible if v.uses == 0 and v not in p.params]
        extra = [v for v in self.visible if v.uses > 0 and v not in p.params]
        if extra and (r.random() < 0.3 or not sinks):
            sinks += r.sample(extra, min(len(extra), r.randint(1, 2)))
        if not sinks:
            v = p.params[0]
            self.seg = p.segments[-1] if p.segments[-1].kind == "dataflow" else p.segments[0]
            sinks = [self.add_binding("exp(@@0@@)", [v], v.dtype, v.shape, -3, 3)] \
                if v.dtype in FLOATS else [self.add_binding("@@0@@", [v], v.dtype, v.shape, v.lo, v.hi)]
        if r.random() < 0.3:
            r.shuffle(sinks)
        p.returns = sinks
        p.ret_tuple = len(sinks) > 1 or r.random() < 0.1
        # Bind every symbolic dim by some parameter (fusec-run needs it).
        used = set(d for q in p.params for d in q.shape if isinstance(d, str))
        p.dims = {k: v for k, v in p.dims.items() if k in used}
        return p


def generate(seed):
    return Gen(seed).generate()


# ---------------------------------------------------------------------------
# Checker
# ---------------------------------------------------------------------------

class Failure(Exception):
    def __init__(self, kind, stage, detail, cmd=None):
        super().__init__("%s at %s" % (kind, stage))
        self.kind, self.stage, self.detail, self.cmd = kind, stage, detail, cmd

    def signature(self):
        return (self.kind, self.stage)


def known_bug(failure):
    """The tag of the known bug a failure matches, or None."""
    for tag, (_, _, pattern) in KNOWN_BUGS.items():
        if re.search(pattern, failure.detail):
            return tag
    return None


def run(cmd, timeout=60):
    try:
        res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, "", "timeout after %ds" % timeout
    except OSError as e:
        return None, "", "cannot run %s: %s" % (cmd[0], e)
    return res.returncode, res.stdout.decode(errors="replace"), res.stderr.decode(errors="replace")


def compare_outputs(dir_a, dir_b, exact=True, taints=None):
    """The first difference between two --outputs directories, or None.
    exact: floats bitwise equal (NaN equals NaN). Otherwise floats agree
    within a tolerance scaled by the output's magnitude (the lowered forms'
    reductions combine in another order), and an output that a float
    reduction feeds (taints) may have up to 5% of its elements (at least
    one: a comparison of two nearly equal sums flips) outside it
    (ill-conditioned sums; see REASSOC_OPS), and one it feeds through a
    discontinuous op ("unstable") any number; a wrong index or guard shows
    up in untainted outputs, and in more elements."""
    fa = sorted(os.listdir(dir_a))
    fb = sorted(os.listdir(dir_b))
    if fa != fb:
        return "different output files: %s vs %s" % (fa, fb)
    for name in fa:
        a = np.load(os.path.join(dir_a, name))
        b = np.load(os.path.join(dir_b, name))
        if a.dtype != b.dtype or a.shape != b.shape:
            return "%s: %s%s vs %s%s" % (name, a.dtype, a.shape, b.dtype, b.shape)
        if a.dtype.kind != "f":
            same = a == b
        elif exact:
            ia = a.view(np.uint16 if a.dtype.itemsize == 2 else np.uint32)
            same = (ia == b.view(ia.dtype)) | (np.isnan(a) & np.isnan(b))
        else:
            finite = np.isfinite(a)
            scale = max(1.0, float(np.max(np.abs(a[finite]))) if finite.any() else 1.0)
            tol = 1e-4 if a.dtype.itemsize == 4 else 4e-3
            same = (np.abs(a.astype(np.float64) - b) <= tol * scale) | (a == b) | \
                (np.isnan(a) & np.isnan(b))
        index = int(name[3:-4]) if name.startswith("out") else -1
        taint = taints[index] if not exact and taints and 0 <= index < len(taints) else False
        if taint == "unstable" or \
                (taint and np.count_nonzero(~same) <= max(1, 0.05 * same.size)):
            continue
        if not np.all(same):
            bad = np.argwhere(~same)
            i = tuple(bad[0])
            return "%s: %d of %d elements differ, first at %s: %r vs %r" % (
                name, len(bad), a.size, list(i), a[i], b[i])
    return None


def output_taints(prog):
    """Per flattened output: whether a float reduction feeds it (True), and
    "unstable" when it does through a discontinuous op (DISCONTINUOUS_OPS)."""
    taints = []
    def flatten(v, taint):
        if v.is_tuple:
            for f in v.fields:
                flatten(f, taint)
        else:
            taints.append(taint)
    for r in prog.returns:
        flatten(r, "unstable" if getattr(r, "unstable", False) else getattr(r, "reassoc", False))
    return taints


def check_text(text, prog, work, bins, check_each, stats=None):
    """The failures of one program (empty when it passes). A failure that
    leaves the later steps meaningful (a round trip) does not stop them.
    stats (a dict), if given, receives the number of composites each
    fuse-by-pattern pipeline formed (by tag of PIPES_PAT)."""
    fusec, fusec_run = bins
    failures = []
    os.makedirs(work, exist_ok=True)
    m = os.path.join(work, "M.fir")
    a = os.path.join(work, "A.fir")
    b = os.path.join(work, "B.fir")
    with open(m, "w") as f:
        f.write(text)
    for out, pipe, stage in ((a, PIPE_A, "legalize"), (b, PIPE_B, "fuse")):
        cmd = [fusec, m, "--passes=" + pipe, "-o", out]
        rc, so, se = run(cmd)
        if rc != 0:
            kind = "reject" if rc == 1 else ("crash" if rc is None or rc < 0 or rc > 3 else "exit%d" % rc)
            return failures + [Failure(kind, stage, se.strip()[-3000:], cmd)]
    # The printed input (no passes) and the fused module print back identically.
    pm = os.path.join(work, "P.fir")
    cmd = [fusec, m, "-o", pm]
    rc, so, se = run(cmd)
    if rc != 0:
        return failures + [Failure("reject" if rc == 1 else "crash", "print", se.strip()[-3000:], cmd)]
    for path, stage in ((pm, "roundtrip-input"), (b, "roundtrip")):
        cmd = [fusec, path]
        rc, so, se = run(cmd)
        with open(path) as f:
            text_in = f.read()
        if rc != 0:
            failures.append(Failure("roundtrip-reject" if rc == 1 else "crash", stage,
                                    se.strip()[-3000:], cmd))
        elif so != text_in:
            import difflib
            name = os.path.basename(path)
            diff = "".join(list(difflib.unified_diff(text_in.splitlines(True), so.splitlines(True),
                                                     name, "fusec " + name))[:40])
            failures.append(Failure("roundtrip", stage, diff, cmd))
    dims = prog.dims_arg()

    def execute(tag, path):
        """Runs `path` on the interpreter into work/out<tag>: (dir, failure)."""
        od = os.path.join(work, "out" + tag)
        shutil.rmtree(od, ignore_errors=True)
        os.makedirs(od)
        cmd = [fusec_run, path, "--random-inputs", "--seed=%d" % prog.seed, "--outputs=" + od]
        if dims:
            cmd.append("--dims=" + dims)
        rc, so, se = run(cmd)
        if rc != 0:
            kind = "run-error" if rc in (1, 2) else "crash"
            return od, Failure(kind, "run-" + tag, se.strip()[-3000:], cmd)
        return od, None

    def compile_kind(rc):
        return "reject" if rc == 1 else ("crash" if rc is None or rc < 0 or rc > 3 else "exit%d" % rc)

    def mismatch(tag, diff):
        return Failure("mismatch", "A-vs-" + tag, diff,
                       ["fusec-run", "A.fir|%s.fir" % tag, "--random-inputs",
                        "--seed=%d" % prog.seed] + (["--dims=" + dims] if dims else []))

    outs = {}
    for tag, path in (("M", m), ("A", a), ("B", b)):
        outs[tag], failure = execute(tag, path)
        if failure:
            return failures + [failure]
    # Every VARIANT_EVERY-th program also runs fuse-ops with limits that
    # split groups (max-fused-ops, max-function-args, max-merges).
    if prog.seed % VARIANT_EVERY == 1:
        c = os.path.join(work, "C.fir")
        cmd = [fusec, m, "--passes=" + variant_pipeline(prog.seed), "-o", c]
        rc, so, se = run(cmd)
        if rc != 0:
            return failures + [Failure(compile_kind(rc), "fuse-variant", se.strip()[-3000:], cmd)]
        od, failure = execute("C", c)
        if failure:
            return failures + [failure]
        diff = compare_outputs(outs["A"], od)
        if diff:
            failures.append(mismatch("C", diff))
    # The lowered forms run and agree with A; the -O1 form prints back.
    lowered = [("D", PIPE_D), ("E", PIPE_E)]
    if prog.seed % O2_EVERY == 0:
        lowered.append(("O2", PIPE_O2))
    for tag, pipe in lowered:
        path = os.path.join(work, tag + ".fir")
        cmd = [fusec, m, "--passes=" + pipe, "-o", path]
        rc, so, se = run(cmd)
        if rc != 0:
            return failures + [Failure(compile_kind(rc), "lower-" + tag, se.strip()[-3000:], cmd)]
        if tag in ("E", "O2"):
            rc, so, se = run([fusec, path])
            with open(path) as f:
                if rc != 0 or so != f.read():
                    failures.append(Failure("roundtrip", "roundtrip-lowered", se.strip()[-3000:],
                                            [fusec, path]))
        od, failure = execute(tag, path)
        if failure:
            return failures + [failure]
        diff = compare_outputs(outs["A"], od, exact=False, taints=output_taints(prog))
        if diff:
            failures.append(mismatch(tag, diff))
    diff = compare_outputs(outs["A"], outs["B"])
    if diff:
        failures.append(mismatch("B", diff))
    diff = compare_outputs(outs["M"], outs["A"])
    if diff:
        failures.append(Failure("mismatch", "M-vs-A", diff,
                                ["fusec-run", "M.fir|A.fir", "--random-inputs", "--seed=%d" % prog.seed] +
                                (["--dims=" + dims] if dims else [])))
    if check_each:
        cmd = [fusec, m, "--passes=" + PIPE_B, "--check-each", "-o", os.devnull]
        rc, so, se = run(cmd)
        if rc != 0:
            kind = "check-each" if rc == 3 else ("reject" if rc == 1 else "crash")
            failures.append(Failure(kind, "check-each", se.strip()[-3000:], cmd))
    # fuse-by-pattern, then the fused pipeline: runs, agrees with A bitwise
    # and prints back identically, as B does. A failure of one pipeline
    # does not stop the others.
    for tag in pattern_tags(prog.seed, text):
        pipe = PIPES_PAT[tag]
        path = os.path.join(work, tag + ".fir")
        cmd = [fusec, m, "--passes=" + pipe, "--stats", "-o", path]
        rc, so, se = run(cmd)
        made = sum(int(x) for x in re.findall(r"(\d+) num-composites", se))
        se = se.split("===---")[0]          # the message, without the --stats report
        if rc != 0:
            failures.append(Failure(compile_kind(rc), "pattern-" + tag, se.strip()[-3000:], cmd))
            continue
        with open(path) as f:
            fused = f.read()
        if stats is not None:
            stats[tag] = made
            if tag == "H":
                stats["H-text"] = fused.count('composite = "cublaslt.')
        if not made:
            # No match: fuse-by-pattern changed nothing, so the result is B.
            with open(b) as f:
                if f.read() != fused:
                    failures.append(Failure("no-match-differs", "pattern-" + tag,
                                            "no composite formed, yet %s.fir differs from B.fir" % tag, cmd))
            continue
        rc, so, se = run([fusec, path])
        if rc != 0:
            failures.append(Failure("roundtrip-reject" if rc == 1 else "crash", "roundtrip-" + tag,
                                    se.strip()[-3000:], [fusec, path]))
        elif so != fused:
            import difflib
            diff = "".join(list(difflib.unified_diff(fused.splitlines(True), so.splitlines(True),
                                                     tag + ".fir", "fusec " + tag + ".fir"))[:40])
            failures.append(Failure("roundtrip", "roundtrip-" + tag, diff, [fusec, path]))
        od, failure = execute(tag, path)
        if failure:
            failures.append(failure)
            continue
        diff = compare_outputs(outs["A"], od)
        if diff:
            failures.append(mismatch(tag, diff + "\n%s.fir: fusec F.fir --passes='%s'" % (
                tag, pipe.replace(PATTERNS, "test/Transforms/Inputs/random-patterns.pat"))))
    return failures


def shrink(prog, sig, work, bins, check_each, budget=150):
    """Greedy test-case reduction keeping the failure signature."""
    tries = [0]

    def fails(p):
        if tries[0] >= budget:
            return False
        tries[0] += 1
        return any(f.signature() == sig for f in check_text(p.render(), p, work, bins, check_each))

    best = prog.copy().dce()
    # 1. Fewer returned values.
    if len(best.returns) > 1:
        for r in list(best.returns):
            cand = best.copy()
            cand.returns = [r]
            cand.dce()
            if fails(cand):
                best = cand
                break
        else:
            changed = True
            while changed and len(best.returns) > 1:
                changed = False
                for r in list(best.returns):
                    cand = best.copy()
                    cand.returns = [x for x in best.returns if x is not r]
                    cand.dce()
                    if fails(cand):
                        best, changed = cand, True
                        break
    # 1b. Return one intermediate value instead (earliest first).
    for seg in best.segments:
        done = False
        for bnd in seg.bindings:
            if bnd.val in best.returns:
                continue
            cand = best.copy()
            cand.returns = [bnd.val]
            cand.dce()
            if fails(cand):
                best = cand
                done = True
                break
        if done:
            break
    # 2. Cut bindings into parameters (earliest first: removes the most).
    changed = True
    while changed:
        changed = False
        for seg in best.segments:
            for bnd in seg.bindings:
                if bnd.val.is_tuple:
                    continue
                cand = best.copy()
                for s in cand.segments:
                    s.bindings = [x for x in s.bindings if x is not bnd]
                cand.params.append(bnd.val)
                cand.dce()
                if fails(cand):
                    best, changed = cand, True
                    break
            if changed:
                break
    # 3. Merge neighbouring blocks.
    changed = True
    while changed and len(best.segments) > 1:
        changed = False
        for i in range(len(best.segments) - 1):
            cand = best.copy()
            a, b = cand.segments[i], cand.segments[i + 1]
            if a.kind != b.kind:
                continue
            merged = Segment(a.kind)
            merged.bindings = a.bindings + b.bindings
            cand.segments[i:i + 2] = [merged]
            if fails(cand):
                best, changed = cand, True
                break
    # Symbolic dims no parameter binds any more.
    used = set(d for q in best.params for d in q.shape if isinstance(d, str))
    best.dims = {k: v for k, v in best.dims.items() if k in used}
    return best


def header(prog, fail, bins):
    dims = prog.dims_arg()
    lines = ["// random-graphs.py seed %d: %s at stage %s" % (prog.seed, fail.kind, fail.stage)]
    if fail.cmd:
        words = []
        for c in fail.cmd:
            if c.endswith("M.fir"):
                c = "F.fir"
            elif c in bins or (os.path.isabs(c) and c != os.devnull):
                c = os.path.basename(c)
            elif c.startswith("--outputs="):
                c = "--outputs=DIR"
            elif c.startswith("--passes="):
                c = "--passes='%s'" % c[len("--passes="):].replace(
                    PATTERNS, "test/Transforms/Inputs/random-patterns.pat")
            words.append(c)
        lines.append("// command: " + " ".join(words))
    tag = fail.stage.rsplit("-", 1)[-1]
    tag = tag if tag in PIPES_PAT and fail.stage != tag else "B"
    pipe = PIPES_PAT[tag].replace(PATTERNS, "test/Transforms/Inputs/random-patterns.pat") \
        if tag != "B" else PIPE_B
    lines.append("// reproduce: fusec F.fir --passes='%s' -o %s.fir; fusec F.fir --passes=%s -o A.fir;" % (
        pipe, tag, PIPE_A))
    lines.append("//   fusec-run A.fir|%s.fir --random-inputs --seed=%d%s --outputs=DIR" % (
        tag, prog.seed, (" --dims=" + dims) if dims else ""))
    for l in fail.detail.splitlines()[:25]:
        lines.append("// | " + re.sub(r"/\S*/(work/s\d+(-shrink)?/)?", "", l))
    return "\n".join(lines) + "\n"


def check_seed(seed, args, bins):
    try:
        prog = generate(seed)
    except Exception:                           # a generator bug: report, go on
        import traceback
        return seed, [Failure("generator", "generate", traceback.format_exc())], None, None, {}
    work = os.path.join(args.tmp, "work", "s%d" % seed)
    check_each = seed % CHECK_EACH_EVERY == 0
    stats = {}
    fails = check_text(prog.render(), prog, work, bins, check_each, stats)
    if fails:
        f = fails[0]
        faildir = os.path.join(args.tmp, "failures")
        os.makedirs(faildir, exist_ok=True)
        full = os.path.join(faildir, "seed-%d.fir" % seed)
        with open(full, "w") as fh:
            fh.write("".join(header(prog, g, bins) for g in fails) + "\n" + prog.render())
        small_path = None
        if not args.no_shrink:
            small = shrink(prog, f.signature(), work + "-shrink", bins, check_each)
            # Re-run the reduced program for its own diagnostic.
            sf = [g for g in check_text(small.render(), small, work + "-shrink", bins, check_each)
                  if g.signature() == f.signature()] or [f]
            sf = sf[0]
            small_path = os.path.join(faildir, "seed-%d.min.fir" % seed)
            with open(small_path, "w") as fh:
                fh.write(header(small, sf, bins) + "\n" + small.render())
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
            shutil.rmtree(work + "-shrink", ignore_errors=True)
        return seed, fails, full, small_path, stats
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return seed, None, None, None, stats


def main():
    global PATTERN_EVERY
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fusec-bin", required=False, help="directory holding fusec and fusec-run")
    ap.add_argument("--tmp", help="scratch directory (wiped)")
    ap.add_argument("--count", type=int, default=300)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--seed", type=int, help="with --print: the seed to print")
    ap.add_argument("--print", action="store_true", help="print the program of --seed and exit")
    ap.add_argument("--keep", action="store_true", help="keep the work directories")
    ap.add_argument("--no-shrink", action="store_true")
    ap.add_argument("--only-known", action="store_true",
                    help="check only KNOWN_FAILING_SEEDS and report which pass now")
    ap.add_argument("--update-known", action="store_true",
                    help="print KNOWN_FAILING_SEEDS for the seeds whose failures all match KNOWN_BUGS")
    ap.add_argument("--pattern-every", type=int, default=PATTERN_EVERY,
                    help="run the two `rand` fuse-by-pattern pipelines on every N-th seed "
                         "each (default %d; 1: both on every seed)" % PATTERN_EVERY)
    ap.add_argument("--min-composites", type=int, default=0,
                    help="fail unless at least this many programs got a composite from "
                         "each of the two pattern files")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()

    if args.print:
        prog = generate(args.seed if args.seed is not None else args.start)
        sys.stdout.write(prog.render())
        if prog.dims:
            sys.stdout.write("// --dims=%s\n" % prog.dims_arg())
        return 0
    if not args.fusec_bin or not args.tmp:
        ap.error("--fusec-bin and --tmp are required")
    PATTERN_EVERY = max(1, args.pattern_every)
    bins = (os.path.join(args.fusec_bin, "fusec"), os.path.join(args.fusec_bin, "fusec-run"))
    for b in bins:
        if not os.access(b, os.X_OK):
            print("error: %s is not an executable" % b)
            return 2
    shutil.rmtree(args.tmp, ignore_errors=True)
    os.makedirs(args.tmp)

    in_range = range(args.start, args.start + args.count)
    if args.only_known:
        seeds = sorted(KNOWN_FAILING_SEEDS)
        args.no_shrink = True
    elif args.update_known:
        seeds = list(in_range)
        args.no_shrink = True
    else:
        seeds = [s for s in in_range if s not in KNOWN_FAILING_SEEDS]
    skipped = 0 if (args.only_known or args.update_known) else len(in_range) - len(seeds)
    t0 = time.time()
    failures = []
    table = {}
    composites = {}     # PIPES_PAT tag (and "rand") -> programs with a composite
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for seed, f, full, small, stats in pool.map(lambda s: check_seed(s, args, bins), seeds):
            for tag, n in stats.items():
                if n:
                    composites[tag] = composites.get(tag, 0) + 1
            if stats.get("F") or stats.get("G"):
                composites["rand"] = composites.get("rand", 0) + 1
            if not f:
                if args.only_known:
                    print("seed %d passes now (%s): remove it from KNOWN_FAILING_SEEDS" % (
                        seed, KNOWN_FAILING_SEEDS[seed]))
                elif args.verbose:
                    print("seed %d ok" % seed)
                continue
            tags = [known_bug(g) for g in f]
            if args.update_known and all(tags):
                table[seed] = tags[0]
                continue
            if args.only_known and tags[0] == KNOWN_FAILING_SEEDS[seed]:
                if args.verbose:
                    print("seed %d still fails (%s)" % (seed, tags[0]))
                continue
            failures.append(seed)
            for g, tag in zip(f, tags):
                first = g.detail.strip().splitlines()[:1]
                print("FAIL seed %d: %s at %s%s: %s" % (
                    seed, g.kind, g.stage, " [known bug %s]" % tag if tag else "",
                    first[0] if first else ""))
            if full:
                print("  module: %s" % full)
            if small:
                print("  reduced: %s" % small)
            sys.stdout.flush()
    dt = time.time() - t0
    if args.update_known:
        print("KNOWN_FAILING_SEEDS = {")
        items = sorted(table.items())
        for i in range(0, len(items), 4):
            print("    " + " ".join('%d: "%s",' % kv for kv in items[i:i + 4]))
        print("}")
    # Programs where fuse-by-pattern formed at least one composite: with
    # the patterns of PATTERNS (pipelines F and G), and with cuBLASLt's
    # (pipeline H; counted in its output, where they keep their graph ops).
    print("%d programs, %d failures (%d known-failing seeds skipped; %.1f s); "
          "composites in %d programs (rand patterns), %d (cublaslt)" % (
              len(seeds), len(failures), skipped, dt, composites.get("rand", 0),
              composites.get("H-text", 0)))
    if args.min_composites and min(composites.get("rand", 0), composites.get("H-text", 0)) < args.min_composites:
        print("error: fewer than %d programs with a composite of each pattern file: "
              "the patterns or the generator no longer match" % args.min_composites)
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
