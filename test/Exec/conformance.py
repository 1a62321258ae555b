#!/usr/bin/env python3
"""Op conformance suite: fusec-run against NumPy for every operator of spec §4.

For each case this script writes a small module (`func @main` with one op
binding, or a few where a rule needs a chain) and its input `.npy` files into
a temporary directory, runs `fusec-run --inputs=... --outputs=...`, and
compares each result with a NumPy reference computed in float64 (int64 for
integers) and rounded to the result dtype:

  * f16 uses np.float16 (NumPy rounds float64 -> float16 directly, to nearest
    even); bf16 is emulated bit-exactly (float64 -> float32 with round-to-odd,
    then round-to-nearest-even on the float32 bits), and bf16 tensors travel as
    float32 `.npy` files, as fusec-run expects (spec §7);
  * integers wrap as two's complement; integer division truncates toward zero
    (TVM TIR), including in `mean` and integer average pools;
  * `round` is half-to-even; maximum/minimum (and max/min reductions, relu,
    clip, max pools) propagate NaN; `take` wraps a negative index once;
  * `split` into sections ceil-divides, as in TVM Relax (docs/ir.md).

Tolerances, |got - want| <= atol + rtol * |want| (NaN equals NaN):
    f32  atol 1e-5 rtol 1e-5
    f16  atol 1e-3 rtol 1e-2
    bf16 atol 1e-2 rtol 2e-2
    integers and bool: exact.
Cases marked `exact` (astype, data movement, the rounding-rule cases) compare
bit for bit (NaN equals NaN), since their result is determined exactly. bf16
results must also hold bf16 values (the low 16 bits of the float32 are 0).

The rounding rules (spec §4 "Numerics") have dedicated cases: f16/bf16 ops
round after each operator, reductions and matmul accumulate in f32,
softmax/norms compute in f32 and round once.

Usage:
  conformance.py --fusec-run build/bin/fusec-run --tmp DIR [-k SUBSTR] [-v] [-j N]
                 [--shard K/N]

--shard K/N runs the cases whose name hashes (CRC-32) to K modulo N: a
deterministic sample spread over every operator and dtype (the sanitizer
build's run, where each case costs ten times as much).

Prints one line per failing case and a summary "N cases, M failed"; exits 1
if a case fails that is not listed in KNOWN_FAILURES, or if a listed case
passes (remove it from the list once the bug is fixed).
"""
import argparse
import concurrent.futures
import zlib
import math
import os
import shutil
import subprocess
import sys

import numpy as np

# Cases where fusec disagrees with NumPy/TVM semantics: real bugs, kept in the
# suite and reported, not hidden. Key: case name, value: what is wrong.
KNOWN_FAILURES = {}

FLOATS = ["f32", "f16", "bf16"]
INTS = ["i8", "i32", "i64"]
NUMERIC = FLOATS + INTS
ALL = NUMERIC + ["bool"]
STORAGE = {"f32": np.float32, "f16": np.float16, "bf16": np.float32,
           "i8": np.int8, "i32": np.int32, "i64": np.int64, "bool": np.bool_}
TOL = {"f32": (1e-5, 1e-5), "f16": (1e-3, 1e-2), "bf16": (1e-2, 2e-2)}

R = np.random.default_rng(20240611)


# ---------------------------------------------------------------------------
# Rounding to a dtype
# ---------------------------------------------------------------------------

def bf16_round(x):
    """float64 -> bf16 values (as float32), round to nearest even, once."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        f = x.astype(np.float32)
        back = f.astype(np.float64)
        bits = f.view(np.uint32).copy()
        finite = np.isfinite(x)
        # Round-to-odd float64 -> float32 so that the step below rounds once.
        away = finite & (np.abs(back) > np.abs(x))
        bits[away] -= 1
        bits[finite & (back != x)] |= 1
    u = np.atleast_1d(bits).astype(np.uint64)
    u = (u + np.uint64(0x7FFF) + ((u >> np.uint64(16)) & np.uint64(1))) & np.uint64(0xFFFF0000)
    out = u.astype(np.uint32).reshape(bits.shape)
    out[np.isnan(x)] = 0x7FC00000
    return out.view(np.float32)


def round_to(x, dt):
    """A float64/int64/bool array rounded to dtype `dt`, in storage form."""
    x = np.asarray(x)
    with np.errstate(all="ignore"):
        if dt == "bool":
            return x != 0
        if dt in INTS:
            if x.dtype.kind == "f":
                x = np.trunc(x).astype(np.int64)
            return x.astype(np.int64).astype(STORAGE[dt])
        if dt == "bf16":
            return bf16_round(x.astype(np.float64))
        return x.astype(np.float64).astype(STORAGE[dt])


def wide(arr, dt):
    """Storage array -> computation form: float64, int64 or bool."""
    if dt in FLOATS:
        return arr.astype(np.float64)
    if dt in INTS:
        return arr.astype(np.int64)
    return arr.astype(np.bool_)


# ---------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------

SPECIAL = [0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 1.5, -1.5, 2.5, -2.5, 3.7, -3.7,
           0.1, 10.0, -10.0, 100.0, 1e-3, float("inf"), float("-inf"),
           float("nan")]
INT_SPECIAL = {"i8": [0, 1, -1, 5, -7, 127, -128, 100],
               "i32": [0, 1, -1, 5, -7, 2147483647, -2147483648, 100000],
               "i64": [0, 1, -1, 5, -7, 2 ** 40, -(2 ** 40), 100000]}


def rand(dt, shape, lo=-2.0, hi=2.0):
    shape = tuple(shape)
    if dt in FLOATS:
        return round_to(R.uniform(lo, hi, shape), dt)
    if dt in INTS:
        return R.integers(int(lo), int(hi) + 1, shape).astype(STORAGE[dt])
    return R.random(shape) < 0.5


def contig(a):
    """A C-ordered copy that keeps 0-d arrays 0-d (np.ascontiguousarray does not)."""
    return np.array(a, order="C", copy=True)


def arr(values, dt):
    return round_to(np.array(values, dtype=np.float64 if dt in FLOATS else
                             (np.int64 if dt in INTS else np.bool_)), dt)


def nonzero_ints(dt, shape, lo, hi):
    v = R.integers(lo, hi + 1, tuple(shape))
    v[v == 0] = 1
    return v.astype(STORAGE[dt])


# ---------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------

def fir_type(dt, shape):
    return "%s[%s]" % (dt, ",".join(str(d) for d in shape))


def lit(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    return str(v)


class Case:
    def __init__(self, name, params, body, rets, expected, ret_types=None,
                 exact=False):
        # params: [(dt, array, declared shape or None)]; body: lines using
        # %a, %b, ...; rets: returned names; expected: [(dt, array)].
        self.name = name
        self.params = params
        self.body = body
        self.rets = rets
        self.expected = expected
        self.ret_types = ret_types
        self.exact = exact

    def fir(self):
        names = [chr(ord("a") + i) for i in range(len(self.params))]
        decls = []
        for n, (dt, a, decl) in zip(names, self.params):
            decls.append("%%%s: %s" % (n, fir_type(dt, a.shape if decl is None else decl)))
        if self.ret_types is not None:
            rtypes = self.ret_types
        else:
            rtypes = [fir_type(dt, a.shape) for dt, a in self.expected]
        if isinstance(self.rets, str):  # one tuple value (split)
            rtype = "(%s)" % ", ".join(rtypes)
            ret = "%" + self.rets
        elif len(self.rets) == 1:
            rtype, ret = rtypes[0], "%" + self.rets[0]
        else:
            rtype = "(%s)" % ", ".join(rtypes)
            ret = "(%s)" % ", ".join("%" + r for r in self.rets)
        lines = ["func @main(%s) -> %s {" % (", ".join(decls), rtype)]
        lines += ["  " + b for b in self.body]
        lines += ["  return %s" % ret, "}", ""]
        return "\n".join(lines)


CASES = []


def add_case(case):
    CASES.append(case)


def op1(name, call, params, expected, ret_types=None, exact=False):
    """One binding `%r = CALL` returning %r (a tensor, or a tuple for split
    into more than one section: one section is the operand itself)."""
    rets = "r" if call.startswith("split(") and len(expected) > 1 else ["r"]
    add_case(Case(name, params, ["%r = " + call], rets, expected, ret_types, exact))


def shp(shape):
    return "x".join(str(d) for d in shape) if len(shape) else "scalar"


def attrs_text(attrs):
    if not attrs:
        return ""
    parts = []
    for k, v in attrs.items():
        if isinstance(v, (list, tuple)):
            v = "[" + ", ".join(lit(x) if not isinstance(x, str) else x for x in v) + "]"
        elif isinstance(v, str) and k in ("dtype", "out_dtype"):
            v = '"%s"' % v
        else:
            v = lit(v)
        parts.append("%s = %s" % (k, v))
    return " {" + ", ".join(parts) + "}"


# --- unary -----------------------------------------------------------------

def np_erf(x):
    if x.size == 0:
        return x.astype(np.float64)
    return np.vectorize(math.erf, otypes=[np.float64])(x)


UNARY_FLOAT = {
    "exp": np.exp, "log": np.log, "sqrt": np.sqrt,
    "rsqrt": lambda x: 1.0 / np.sqrt(x),
    "sin": np.sin, "cos": np.cos, "tanh": np.tanh,
    "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
    "erf": np_erf,
    "nn.gelu": lambda x: 0.5 * x * (1.0 + np_erf(x / math.sqrt(2.0))),
    "nn.gelu_tanh": lambda x: 0.5 * x * (1.0 + np.tanh(
        math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x))),
    "nn.silu": lambda x: x / (1.0 + np.exp(-x)),
}
UNARY_NUMERIC = {
    "negative": np.negative, "abs": np.abs, "sign": np.sign,
    "nn.relu": lambda x: np.maximum(x, np.zeros((), x.dtype)),
    "floor": np.floor, "ceil": np.ceil, "round": np.rint,
}


def unary_ref(fn, a, dt, out_dt=None):
    with np.errstate(all="ignore"):
        return round_to(fn(wide(a, dt)), out_dt or dt)


def gen_unary():
    for op, fn in list(UNARY_FLOAT.items()) + list(UNARY_NUMERIC.items()):
        dts = FLOATS if op in UNARY_FLOAT else NUMERIC
        for dt in dts:
            if dt in FLOATS:
                special = arr(SPECIAL, dt)
            else:
                special = arr(INT_SPECIAL[dt], dt)
            op1("%s/%s/special" % (op, dt), "%s(%%a)" % op, [(dt, special, None)],
                [(dt, unary_ref(fn, special, dt))])
            x = rand(dt, [3, 4], -3, 3)
            op1("%s/%s/3x4" % (op, dt), "%s(%%a)" % op, [(dt, x, None)],
                [(dt, unary_ref(fn, x, dt))])
    # Edge shapes: scalar, zero-size, size-1 dims, rank 4.
    for op in ["exp", "negative", "nn.gelu", "round"]:
        for shape in [[], [0], [2, 0, 3], [1, 1, 1], [2, 1, 2, 3]]:
            x = rand("f32", shape, -3, 3)
            op1("%s/f32/%s" % (op, shp(shape)), "%s(%%a)" % op, [("f32", x, None)],
                [("f32", unary_ref({**UNARY_FLOAT, **UNARY_NUMERIC}[op], x, "f32"))])
    for shape in [[5], [2, 3], [], [0, 2]]:
        x = rand("bool", shape)
        op1("logical_not/bool/%s" % shp(shape), "logical_not(%a)", [("bool", x, None)],
            [("bool", ~x)], exact=True)
    # round: half to even, in every float dtype and f16 / bf16 ties.
    halves = [0.5, 1.5, 2.5, 3.5, -0.5, -1.5, -2.5, -3.5, 4.5, 5.5, 0.49, -0.51, 1e7 + 0.5]
    for dt in FLOATS:
        x = arr(halves, dt)
        op1("round/%s/half-to-even" % dt, "round(%a)", [(dt, x, None)],
            [(dt, round_to(np.rint(wide(x, dt)), dt))], exact=True)
    # clip
    for dt in NUMERIC:
        if dt in FLOATS:
            x = arr(SPECIAL, dt)
            lo, hi = -1.5, 2.0
        else:
            x = arr(INT_SPECIAL[dt] + [2, 3, -2, -3], dt)
            lo, hi = -2, 3
        ref = np.minimum(np.maximum(wide(x, dt), lo), hi)
        op1("clip/%s/special" % dt, "clip(%%a) {min = %s, max = %s}" % (lit(lo), lit(hi)),
            [(dt, x, None)], [(dt, round_to(ref, dt))])
    x = rand("f16", [2, 3], -3, 3)
    op1("clip/f16/min=max", "clip(%a) {min = 0.1, max = 0.1}", [("f16", x, None)],
        [("f16", round_to(np.full((2, 3), np.float16(0.1)), "f16"))], exact=True)
    x = rand("i32", [0, 3])
    op1("clip/i32/0x3", "clip(%a) {min = 0, max = 1}", [("i32", x, None)],
        [("i32", x)], exact=True)


def gen_astype():
    src_values = {
        "f32": [0.0, -0.0, 1.0, -1.0, 2.75, -2.75, 0.3, 100.6, -100.6, 65519.0,
                70000.0, 1.0 + 2 ** -8, 1.0 + 3 * 2 ** -8, 1.0 + 2 ** -11,
                1.0 + 3 * 2 ** -11, 1e-6, 126.9, -127.9, float("nan"), float("inf"),
                float("-inf"), 1e-30, 3.4e38],
        "f16": [0.0, -0.0, 1.0, -1.0, 2.75, -2.75, 0.3, 100.6, -100.6, 65504.0,
                1.0 + 2 ** -8, 1.0 + 3 * 2 ** -8, 1.0 + 2 ** -10, 1e-6, 126.9, -127.9,
                float("nan"), float("-inf"), 2 ** -24],
        "bf16": [0.0, -0.0, 1.0, -1.0, 2.75, -2.75, 0.3, 100.6, -100.6, 70000.0,
                 1e-6, 126.9, -127.9, 3.0e38, float("nan"), float("inf"), 1e-30],
        "i8": [0, 1, -1, 127, -128, 100, -100, 7],
        "i32": [0, 1, -1, 127, 128, -129, 255, 256, 70000, -70000, 2147483647,
                -2147483648, 16777217],
        "i64": [0, 1, -1, 127, 128, -129, 255, 2147483648, -2147483649, 70000,
                2 ** 40 + 1, -(2 ** 40) - 3],
        "bool": [True, False, True],
    }
    for src in ALL:
        for dst in ALL:
            vals = src_values[src]
            if src in FLOATS and dst in INTS:
                # Only values that fit the target (out of range is undefined).
                lim = {"i8": 127, "i32": 2 ** 31 - 1, "i64": 2 ** 62}[dst]
                vals = [v for v in vals if math.isfinite(v) and abs(v) <= lim]

            x = arr(vals, src)
            w = wide(x, src)
            if dst in FLOATS and src in INTS:
                w = w.astype(np.float64)
            ref = round_to(w, dst)
            op1("astype/%s->%s" % (src, dst), 'astype(%%a) {dtype = "%s"}' % dst,
                [(src, x, None)], [(dst, ref)], exact=True)
    # i64 values beyond 2^53 (exact in i64; not in a double).
    x = arr([2 ** 53 + 1, 2 ** 62 + 3, -(2 ** 63) + 1, 2 ** 63 - 1], "i64")
    for dst in ["i64", "i32", "i8"]:
        op1("astype/i64->%s/beyond-2^53" % dst, 'astype(%%a) {dtype = "%s"}' % dst,
            [("i64", x, None)], [(dst, round_to(wide(x, "i64"), dst))], exact=True)
    op1("reshape/i64/beyond-2^53", "reshape(%a) {shape = [2, 2]}", [("i64", x, None)],
        [("i64", x.reshape(2, 2))], exact=True)
    x = arr([2.0 ** 62, -(2.0 ** 63), 2.0 ** 40 + 0.5, -3.5e15], "f32")
    op1("astype/f32->i64/large", 'astype(%a) {dtype = "i64"}', [("f32", x, None)],
        [("i64", round_to(wide(x, "f32"), "i64"))], exact=True)
    # Shapes: scalar, zero-size, symbolic.
    x = arr(3.7, "f32")
    op1("astype/f32->i32/scalar", 'astype(%a) {dtype = "i32"}', [("f32", x, None)],
        [("i32", round_to(wide(x, "f32"), "i32"))], exact=True)
    x = rand("f16", [0, 4])
    op1("astype/f16->bf16/0x4", 'astype(%a) {dtype = "bf16"}', [("f16", x, None)],
        [("bf16", round_to(wide(x, "f16"), "bf16"))], exact=True)
    x = rand("f32", [3, 2])
    op1("astype/f32->f16/symbolic", 'astype(%a) {dtype = "f16"}', [("f32", x, ["n", "m"])],
        [("f16", round_to(wide(x, "f32"), "f16"))], ret_types=["f16[n,m]"], exact=True)


# --- binary ----------------------------------------------------------------

def trunc_div(a, b):
    """C's truncating division, in Python integers (np.abs(-2^63) overflows)
    and wrapped back to the operands' dtype."""
    a, b = np.broadcast_arrays(np.asarray(a), np.asarray(b))
    dtype = np.result_type(a, b)
    bits = np.iinfo(dtype).bits
    def one(x, y):
        q = abs(int(x)) // abs(int(y))
        q = -q if (x < 0) != (y < 0) else q
        q %= 1 << bits
        return q - (1 << bits) if q >= 1 << (bits - 1) else q
    return np.array([one(x, y) for x, y in zip(a.ravel(), b.ravel())],
                    dtype=dtype).reshape(a.shape)


def ref_divide(a, b, dt):
    if dt in INTS:
        return trunc_div(a, b)
    return a / b


ARITH = {
    "add": lambda a, b, dt: a + b,
    "subtract": lambda a, b, dt: a - b,
    "multiply": lambda a, b, dt: a * b,
    "divide": ref_divide,
    "power": lambda a, b, dt: np.power(a, b),
    "maximum": lambda a, b, dt: np.maximum(a, b),
    "minimum": lambda a, b, dt: np.minimum(a, b),
}
COMPARE = {
    "equal": np.equal, "not_equal": np.not_equal, "less": np.less,
    "less_equal": np.less_equal, "greater": np.greater,
    "greater_equal": np.greater_equal,
}


def binary_inputs(op, dt, sa, sb):
    if op == "divide" and dt in INTS:
        return rand(dt, sa, -50, 50), nonzero_ints(dt, sb, -7, 7)
    if op == "power":
        if dt in INTS:
            return rand(dt, sa, -3, 3), rand(dt, sb, 0, 4 if dt != "i8" else 3)
        return rand(dt, sa, 0.1, 3), rand(dt, sb, -2, 2)
    if op == "divide":
        return rand(dt, sa), round_to(np.where(R.random(sb) < 0.5, -1, 1) *
                                      R.uniform(0.25, 2, sb), dt)
    if op in ("add", "subtract", "multiply", "maximum", "minimum") and dt in INTS:
        return rand(dt, sa, -20, 20), rand(dt, sb, -20, 20)
    return rand(dt, sa, -4, 4), rand(dt, sb, -4, 4)


def binary_ref(op, a, b, dt):
    A, B = wide(a, dt), wide(b, dt)
    with np.errstate(all="ignore"):
        if op in ARITH:
            return dt, round_to(ARITH[op](A, B, dt), dt)
        if op in COMPARE:
            return "bool", COMPARE[op](A, B)
        return "bool", {"logical_and": np.logical_and, "logical_or": np.logical_or}[op](A, B)


def binary_case(name, op, dt, a, b, decl_a=None, decl_b=None, ret_types=None, exact=False):
    out_dt, ref = binary_ref(op, a, b, dt)
    op1(name, "%s(%%a, %%b)" % op, [(dt, a, decl_a), (dt, b, decl_b)], [(out_dt, ref)],
        ret_types=ret_types, exact=exact)


BROADCAST_SHAPES = [
    ([2, 3], [2, 3]), ([2, 3], [3]), ([2, 3], [1, 3]), ([2, 3], [2, 1]),
    ([4, 1], [1, 5]), ([3], [2, 1]), ([], [2, 3]), ([2, 3], []), ([], []),
    ([2, 1, 3], [4, 1]), ([1], [5]), ([5], [1]), ([0, 3], [3]), ([0, 3], [1, 1]),
    ([2, 0], [2, 1]), ([1], [0]), ([1, 1, 1], [2]), ([2, 1, 4, 1], [3, 1, 5]),
]


def gen_binary():
    for op in ARITH:
        for dt in NUMERIC:
            for sa, sb in [([2, 3], [2, 3]), ([4, 1], [3])]:
                a, b = binary_inputs(op, dt, sa, sb)
                binary_case("%s/%s/%s,%s" % (op, dt, shp(sa), shp(sb)), op, dt, a, b)
    for op in COMPARE:
        for dt in ALL:
            for sa, sb in [([2, 3], [2, 3]), ([3, 1], [4])]:
                if dt == "bool":
                    a, b = rand(dt, sa), rand(dt, sb)
                elif dt in FLOATS:
                    a = arr(R.choice([-1.0, 0.0, 0.5, 2.0], sa), dt)
                    b = arr(R.choice([-1.0, 0.0, 0.5, 2.0], sb), dt)
                else:
                    a, b = rand(dt, sa, -2, 2), rand(dt, sb, -2, 2)
                binary_case("%s/%s/%s,%s" % (op, dt, shp(sa), shp(sb)), op, dt, a, b)
    for op in ["logical_and", "logical_or"]:
        for sa, sb in [([2, 3], [2, 3]), ([4, 1], [1, 3]), ([], [2])]:
            binary_case("%s/bool/%s,%s" % (op, shp(sa), shp(sb)), op, "bool",
                        rand("bool", sa), rand("bool", sb))
    # Broadcasting sweep, incl. rank change, size-1 and zero-size dims.
    for sa, sb in BROADCAST_SHAPES:
        for op, dt in [("add", "f32"), ("subtract", "i32"), ("less", "f16"),
                       ("maximum", "bf16")]:
            a, b = binary_inputs(op, dt, sa, sb)
            binary_case("%s/%s/bcast %s,%s" % (op, dt, shp(sa), shp(sb)), op, dt, a, b)
    # Special float values (NaN propagation, inf, signed zero, x/0).
    sp = SPECIAL
    for dt in FLOATS:
        a = arr([v for v in sp for _ in sp], dt)
        b = arr([v for _ in sp for v in sp], dt)
        for op in ["add", "subtract", "multiply", "divide", "maximum", "minimum",
                   "power", "equal", "not_equal", "less", "less_equal", "greater",
                   "greater_equal"]:
            binary_case("%s/%s/special" % (op, dt), op, dt, a, b)
    # Integer edge values: wrap-around, truncating division.
    for dt in INTS:
        n = {"i8": 2 ** 7, "i32": 2 ** 31, "i64": 2 ** 63}[dt]
        a = arr([n - 1, -n, n - 1, -n, 7, -7, 7, -7, 1, 0, -1, n - 1], dt)
        b = arr([1, -1, n - 1, 1, 2, 2, -2, -2, 3, 5, 3, 2], dt)
        for op in ["add", "subtract"]:
            binary_case("%s/%s/wrap" % (op, dt), op, dt, a, b)
        # (MIN / -1 is left out: it overflows, undefined in TIR/LLVM.)
        a = arr([n - 1, -n, n - 1, -n, 7, -7, 7, -7, 1, 0, -1, n - 1, -n + 1], dt)
        b = arr([1, 1, n - 1, 2, 2, 2, -2, -2, 3, 5, 3, 2, -1], dt)
        binary_case("divide/%s/trunc" % dt, "divide", dt, a, b)
    a = arr([-7, 7, -7, 7, -1, 1, 0, -9, 9, -127], "i8")
    b = arr([2, -2, -2, 2, 2, -2, -3, 4, -4, -1], "i8")
    binary_case("divide/i8/trunc-signs", "divide", "i8", a, b)
    a = arr([100, 100, -100, 16, 127], "i8")
    b = arr([2, 3, 3, 16, 127], "i8")
    binary_case("multiply/i8/wrap", "multiply", "i8", a, b)
    a = arr([123456789, 65536, -65536, 46341, 2147483647], "i32")
    b = arr([987654321, 65536, 65537, 46341, 2147483647], "i32")
    binary_case("multiply/i32/wrap", "multiply", "i32", a, b)
    a = arr([2 ** 62, 3037000500, -(2 ** 62), 2 ** 40], "i64")
    b = arr([4, 3037000500, 3, 2 ** 30], "i64")
    binary_case("multiply/i64/wrap", "multiply", "i64", a, b)
    a = arr([2 ** 53 + 1, -(2 ** 53) - 1, 2 ** 62 + 1, 9007199254740993], "i64")
    b = arr([0, 0, 2, 1], "i64")
    binary_case("add/i64/beyond-2^53", "add", "i64", a, b)
    a = arr([5, 3, 2, -2, 2, 0], "i8")
    b = arr([4, 5, 7, 7, 0, 0], "i8")
    binary_case("power/i8/wrap", "power", "i8", a, b)
    # Literal operands take the dtype of the tensor operand (spec §3).
    for dt in FLOATS:
        x = rand(dt, [2, 3])
        q = float(round_to(np.float64(0.1), dt))
        op1("multiply/%s/literal 0.1 first" % dt, "multiply(0.1, %a)", [(dt, x, None)],
            [(dt, round_to(q * wide(x, dt), dt))])
        op1("add/%s/literal 2.5" % dt, "add(%a, 2.5)", [(dt, x, None)],
            [(dt, round_to(wide(x, dt) + 2.5, dt))])
        op1("less/%s/literal" % dt, "less(%a, 0.5)", [(dt, x, None)],
            [("bool", wide(x, dt) < 0.5)])
        op1("power/%s/literal 2.0" % dt, "power(%a, 2.0)", [(dt, x, None)],
            [(dt, round_to(wide(x, dt) ** 2, dt))])
    for dt in INTS:
        x = rand(dt, [2, 3], -9, 9)
        op1("subtract/%s/literal 3 first" % dt, "subtract(3, %a)", [(dt, x, None)],
            [(dt, round_to(3 - wide(x, dt), dt))])
        op1("divide/%s/literal -2" % dt, "divide(%a, -2)", [(dt, x, None)],
            [(dt, round_to(trunc_div(wide(x, dt), np.int64(-2)), dt))])
        op1("maximum/%s/literal 0" % dt, "maximum(%a, 0)", [(dt, x, None)],
            [(dt, round_to(np.maximum(wide(x, dt), 0), dt))])
    for dt in FLOATS:
        x = arr(SPECIAL, dt)
        op1("maximum/%s/literal nan" % dt, "maximum(%a, nan)", [(dt, x, None)],
            [(dt, arr([float("nan")] * len(SPECIAL), dt))], exact=True)
        op1("minimum/%s/literal inf" % dt, "minimum(inf, %a)", [(dt, x, None)],
            [(dt, round_to(np.minimum(np.inf, wide(x, dt)), dt))], exact=True)
        op1("power/%s/literal 0.5" % dt, "power(%a, 0.5)", [(dt, x, None)],
            [(dt, unary_ref(lambda v: np.power(v, 0.5), x, dt))])
    x = rand("f32", [2, 3])
    op1("add/f32/same operand twice", "add(%a, %a)", [("f32", x, None)],
        [("f32", round_to(2 * wide(x, "f32"), "f32"))], exact=True)
    x = rand("bool", [4])
    op1("logical_and/bool/literal", "logical_and(%a, true)", [("bool", x, None)],
        [("bool", x)])
    op1("equal/bool/literal", "equal(false, %a)", [("bool", x, None)], [("bool", ~x)])


def gen_where():
    for dt in ALL:
        c = rand("bool", [2, 3])
        a, b = rand(dt, [2, 3]), rand(dt, [2, 3])
        op1("where/%s/2x3" % dt, "where(%a, %b, %c)", [("bool", c, None), (dt, a, None), (dt, b, None)],
            [(dt, np.where(c, a, b))], exact=True)
    for sc, sa, sb in [([2, 1], [1, 3], []), ([3], [2, 1], [2, 3]), ([], [2, 2], [2]),
                       ([1, 4], [4], [3, 1]), ([0, 2], [2], [1]), ([2, 1, 3], [4, 1], [3])]:
        c, a, b = rand("bool", sc), rand("f32", sa), rand("f32", sb)
        op1("where/f32/bcast %s,%s,%s" % (shp(sc), shp(sa), shp(sb)), "where(%a, %b, %c)",
            [("bool", c, None), ("f32", a, None), ("f32", b, None)],
            [("f32", np.where(c, a, b).astype(np.float32))], exact=True)
    c, x = rand("bool", [2, 3]), rand("f16", [2, 3])
    op1("where/f16/literal else", "where(%a, %b, 0.0)", [("bool", c, None), ("f16", x, None)],
        [("f16", np.where(c, x, np.float16(0)))], exact=True)
    x = rand("i32", [3])
    op1("where/i32/literal then", "where(%a, 7, %b)", [("bool", c[0], None), ("i32", x, None)],
        [("i32", np.where(c[0], np.int32(7), x))], exact=True)
    x = rand("f32", [2, 3])
    op1("where/f32/literal cond", "where(true, %a, 1.5)", [("f32", x, None)],
        [("f32", x)], exact=True)
    # NaN is a value like any other for where.
    a = arr([float("nan"), 1.0], "bf16")
    c = np.array([True, False])
    op1("where/bf16/nan", "where(%a, %b, %c)", [("bool", c, None), ("bf16", a, None), ("bf16", a[::-1].copy(), None)],
        [("bf16", np.where(c, a, a[::-1]))], exact=True)


# --- injective -------------------------------------------------------------

def gen_injective():
    # Every dtype through one representative config of each op.
    for dt in ALL:
        x = rand(dt, [2, 3, 4], -9, 9)
        op1("reshape/%s/[4,-1]" % dt, "reshape(%a) {shape = [4, -1]}", [(dt, x, None)],
            [(dt, x.reshape(4, -1))], exact=True)
        op1("permute_dims/%s/[1,2,0]" % dt, "permute_dims(%a) {axes = [1, 2, 0]}",
            [(dt, x, None)], [(dt, x.transpose(1, 2, 0))], exact=True)
        op1("expand_dims/%s/1" % dt, "expand_dims(%a) {axis = 1}", [(dt, x, None)],
            [(dt, np.expand_dims(x, 1))], exact=True)
        y = rand(dt, [1, 3, 1], -9, 9)
        op1("squeeze/%s/default" % dt, "squeeze(%a)", [(dt, y, None)],
            [(dt, np.squeeze(y))], exact=True)
        op1("broadcast_to/%s/[2,3,4]" % dt, "broadcast_to(%a) {shape = [2, 3, 4]}",
            [(dt, y, None)], [(dt, contig(np.broadcast_to(y, (2, 3, 4))))], exact=True)
        z = rand(dt, [2, 2, 4], -9, 9)
        op1("concat/%s/axis1" % dt, "concat(%a, %b) {axis = 1}", [(dt, x, None), (dt, z, None)],
            [(dt, np.concatenate([x, z], 1))], exact=True)
        op1("split/%s/sections2 axis-1" % dt, "split(%a) {indices_or_sections = 2, axis = -1}",
            [(dt, x, None)], [(dt, p) for p in np.split(x, 2, -1)], exact=True)
        op1("strided_slice/%s/axis2 1:4:2" % dt,
            "strided_slice(%a) {axes = [2], begin = [1], end = [4], strides = [2]}",
            [(dt, x, None)], [(dt, x[:, :, 1:4:2])], exact=True)
        idx = np.array([2, 0, -1, 1], np.int64)
        op1("take/%s/axis1 i64" % dt, "take(%a, %b) {axis = 1}", [(dt, x, None), ("i64", idx, None)],
            [(dt, np.take(x, idx, 1))], exact=True)

    f = lambda shape: rand("f32", shape)
    # reshape
    for src, shape in [([2, 3], [3, 2]), ([6], [-1]), ([2, 3, 4], [-1]),
                       ([2, 3, 4], [2, -1, 2]), ([1], []), ([], [1, 1]), ([], [-1]),
                       ([0, 3], [-1]), ([0, 3], [3, -1]), ([4, 1], [1, 4]), ([2, 3], [2, 3])]:
        x = f(src)
        want = x.reshape(shape)
        op1("reshape/f32/%s->%s" % (shp(src), shape), "reshape(%%a) {shape = [%s]}" %
            ", ".join(map(str, shape)), [("f32", x, None)], [("f32", want)], exact=True)
    # permute_dims
    for src, axes in [([2, 3], None), ([2, 3, 4], None), ([2, 3, 4], [-1, 0, 1]),
                      ([2, 3, 4], [0, 1, 2]), ([5], None), ([], None), ([2, 0, 3], [2, 0, 1]),
                      ([1, 2, 1, 3], [3, 1, 0, 2])]:
        x = f(src)
        call = "permute_dims(%a)" + (attrs_text({"axes": axes}) if axes is not None else "")
        op1("permute_dims/f32/%s %s" % (shp(src), axes), call, [("f32", x, None)],
            [("f32", contig(np.transpose(x, axes)))], exact=True)
    # expand_dims
    for src, axis in [([2, 3], 0), ([2, 3], 2), ([2, 3], -1), ([2, 3], -3), ([2, 3], [0, 2]),
                      ([2, 3], [-1, 0]), ([], 0), ([], [0, 1]), ([0, 2], [1, -1])]:
        x = f(src)
        want = np.expand_dims(x, tuple(axis) if isinstance(axis, list) else axis)
        op1("expand_dims/f32/%s %s" % (shp(src), axis), "expand_dims(%%a)%s" %
            attrs_text({"axis": axis}), [("f32", x, None)], [("f32", want)], exact=True)
    # squeeze
    for src, axis in [([1, 3, 1], [0]), ([1, 3, 1], [-1]), ([1, 3, 1], [0, 2]),
                      ([1, 1], None), ([2, 3], None), ([1, 0, 1], None), ([3, 1], -1),
                      ([1], None)]:
        x = f(src)
        want = np.squeeze(x, tuple(axis) if isinstance(axis, list) else axis)
        call = "squeeze(%a)" + (attrs_text({"axis": axis}) if axis is not None else "")
        op1("squeeze/f32/%s %s" % (shp(src), axis), call, [("f32", x, None)],
            [("f32", want)], exact=True)
    # broadcast_to
    for src, shape in [([3], [2, 3]), ([1], [4]), ([2, 1], [2, 3]), ([], [2, 2]),
                       ([2, 3], [2, 3]), ([1, 3], [0, 3]), ([2, 1], [4, 2, 5]), ([], [])]:
        x = f(src)
        op1("broadcast_to/f32/%s->%s" % (shp(src), shape), "broadcast_to(%%a) {shape = [%s]}" %
            ", ".join(map(str, shape)), [("f32", x, None)],
            [("f32", contig(np.broadcast_to(x, shape)))], exact=True)
    # concat
    for shapes, axis in [([[2, 3], [4, 3]], None), ([[2, 3], [2, 1], [2, 2]], 1),
                         ([[2, 3], [2, 5]], -1), ([[2, 0], [2, 3]], 1), ([[0, 3], [0, 3]], 0),
                         ([[3]], None), ([[1, 2, 2], [1, 2, 2]], -2), ([[1], [1], [1], [1]], 0)]:
        xs = [f(s) for s in shapes]
        names = ", ".join("%" + chr(ord("a") + i) for i in range(len(xs)))
        call = "concat(%s)%s" % (names, attrs_text({"axis": axis}) if axis is not None else "")
        op1("concat/f32/%s axis=%s" % (",".join(shp(s) for s in shapes), axis), call,
            [("f32", x, None) for x in xs],
            [("f32", np.concatenate(xs, 0 if axis is None else axis))], exact=True)
    # split (sections are ceil-divided as in TVM Relax; the last takes the rest)
    def tvm_split(x, sections, axis):
        n = x.shape[axis]
        length = -(-n // sections)
        bounds = [min(i * length, n) for i in range(1, sections)]
        return np.split(x, bounds, axis)
    for src, ios, axis in [([6, 2], 3, None), ([6, 2], 1, None), ([2, 7], 3, 1), ([5, 2], 4, 0),
                           ([2, 6], [2, 5], 1), ([2, 6], [2, 10], -1), ([4], [0, 0, 4], None),
                           ([2, 6], [], 1), ([0, 4], 2, 1)]:
        x = f(src)
        ax = 0 if axis is None else axis
        parts = tvm_split(x, ios, ax) if isinstance(ios, int) else np.split(x, ios, ax)
        attrs = {"indices_or_sections": ios}
        if axis is not None:
            attrs["axis"] = axis
        op1("split/f32/%s %s axis=%s" % (shp(src), ios, axis), "split(%%a)%s" % attrs_text(attrs),
            [("f32", x, None)], [("f32", p) for p in parts], exact=True)
    # strided_slice (Python slicing: negative begin/end, clamping, negative strides)
    for src, axes, begin, end, strides in [
            ([6], [0], [1], [5], None), ([6], [0], [-4], [-1], None), ([6], [0], [5], [0], [-1]),
            ([6], [0], [-1], [-100], [-2]), ([6], [0], [-100], [100], [2]), ([6], [0], [4], [2], [1]),
            ([6], [0], [100], [-100], [-1]), ([3, 5], [1, 0], [4, 0], [0, 2], [-2, 1]),
            ([3, 5], [-1], [1], [3], [1]), ([2, 3, 4], [0, 2], [1, -3], [2, 4], [1, 3]),
            ([4, 5], 1, 1, 3, None), ([0, 5], [1], [1], [3], None), ([6], [0], [0], [6], [4])]:
        x = f(src)
        ax_list = axes if isinstance(axes, list) else [axes]
        b_list = begin if isinstance(begin, list) else [begin] * len(ax_list)
        e_list = end if isinstance(end, list) else [end] * len(ax_list)
        s_list = strides if isinstance(strides, list) else [1] * len(ax_list)
        sl = [slice(None)] * len(src)
        for a, b_, e_, s_ in zip(ax_list, b_list, e_list, s_list):
            sl[a] = slice(b_, e_, s_)
        attrs = {"axes": axes, "begin": begin, "end": end}
        if strides is not None:
            attrs["strides"] = strides
        op1("strided_slice/f32/%s %s" % (shp(src), attrs_text(attrs).strip()),
            "strided_slice(%%a)%s" % attrs_text(attrs), [("f32", x, None)],
            [("f32", contig(x[tuple(sl)]))], exact=True)
    # take
    for src, idx, idt, axis in [
            ([5, 3], [0, 4, -1, -5], "i32", 0), ([5, 3], [[0, 2], [-1, 1]], "i64", 1),
            ([5, 3], 2, "i32", 0), ([5, 3], -1, "i64", -1), ([2, 3, 4], [3, -4], "i32", 2),
            ([2, 3], [5, -6, 0], "i64", None), ([2, 3], [[1], [-2]], "i32", None),
            ([5, 3], [], "i32", 0), ([4], [-4, -3, -2, -1, 0, 1, 2, 3], "i64", None)]:
        x = f(src)
        ind = np.array(idx, dtype=STORAGE[idt])
        want = np.take(x, ind, axis)
        call = "take(%a, %b)" + (attrs_text({"axis": axis}) if axis is not None else "")
        op1("take/f32/%s %s %s axis=%s" % (shp(src), idx, idt, axis), call,
            [("f32", x, None), (idt, ind, None)], [("f32", contig(want))], exact=True)


# --- reductions ------------------------------------------------------------

def reduce_ref(op, x, dt, axis, keepdims):
    w = wide(x, dt)
    ax = tuple(axis) if isinstance(axis, list) else axis
    with np.errstate(all="ignore"):
        if op == "sum":
            r = np.sum(w, axis=ax, keepdims=keepdims)
        elif op == "prod":
            r = np.prod(w, axis=ax, keepdims=keepdims)
        elif op == "max":
            r = np.max(w, axis=ax, keepdims=keepdims)
        elif op == "min":
            r = np.min(w, axis=ax, keepdims=keepdims)
        else:
            s = np.sum(w, axis=ax, keepdims=keepdims)
            count = w.size // max(1, np.asarray(s).size) if w.size else (
                int(np.prod([w.shape[a] for a in (range(w.ndim) if ax is None else
                             ([ax] if isinstance(ax, int) else ax))])))
            if dt in INTS:
                r = trunc_div(s, np.int64(count))
            else:
                r = s / count
    return round_to(r, dt)


def gen_reductions():
    configs = [(None, None), ([1], None), (-1, True), ([0, 2], True), ([-1, -3], False),
               (None, True)]
    for op in ["sum", "mean", "max", "min", "prod"]:
        for dt in NUMERIC:
            for axis, keep in configs:
                if dt not in ("f32", "i32") and (axis, keep) in [([-1, -3], False), (None, True)]:
                    continue
                if op == "prod":
                    x = rand(dt, [2, 3, 4], 0.5, 1.5) if dt in FLOATS else rand(dt, [2, 3, 4], -2, 2)
                else:
                    x = rand(dt, [2, 3, 4], -9, 9)
                attrs = {}
                if axis is not None:
                    attrs["axis"] = axis
                if keep is not None:
                    attrs["keepdims"] = keep
                op1("%s/%s/2x3x4%s" % (op, dt, attrs_text(attrs)), "%s(%%a)%s" % (op, attrs_text(attrs)),
                    [(dt, x, None)], [(dt, reduce_ref(op, x, dt, axis, bool(keep)))])
    # NaN propagation and infinities.
    for dt in FLOATS:
        x = arr([[1.0, float("nan"), 3.0], [float("-inf"), 2.0, 0.5], [-1.0, float("inf"), 0.0]], dt)
        for op in ["max", "min", "sum", "mean", "prod"]:
            for axis in [None, [1], [0]]:
                attrs = attrs_text({"axis": axis}) if axis is not None else ""
                op1("%s/%s/nan-inf%s" % (op, dt, attrs), "%s(%%a)%s" % (op, attrs),
                    [(dt, x, None)], [(dt, reduce_ref(op, x, dt, axis, False))])
    # Edge shapes: scalars, zero-size reductions, size-1 axes.
    for op in ["sum", "mean", "max", "min", "prod"]:
        x = rand("f32", [])
        op1("%s/f32/scalar" % op, "%s(%%a)" % op, [("f32", x, None)],
            [("f32", reduce_ref(op, x, "f32", None, False))])
        x = rand("f32", [1, 3, 1])
        op1("%s/f32/1x3x1 axis=[0,2]" % op, "%s(%%a) {axis = [0, 2]}" % op, [("f32", x, None)],
            [("f32", reduce_ref(op, x, "f32", [0, 2], False))])
        x = rand("f32", [0, 3])
        op1("%s/f32/0x3 axis=1" % op, "%s(%%a) {axis = [1]}" % op, [("f32", x, None)],
            [("f32", reduce_ref(op, x, "f32", [1], False))])
    for op in ["sum", "prod", "mean"]:
        for dt in ["f32", "f16", "i32"] if op != "mean" else ["f32", "bf16"]:
            x = rand(dt, [0, 3])
            op1("%s/%s/0x3 axis=0 (empty reduction)" % (op, dt), "%s(%%a) {axis = [0]}" % op,
                [(dt, x, None)], [(dt, reduce_ref(op, x, dt, [0], False))])
        x = rand("f32", [2, 0])
        op1("%s/f32/2x0 all keepdims (empty reduction)" % op, "%s(%%a) {keepdims = true}" % op,
            [("f32", x, None)], [("f32", reduce_ref(op, x, "f32", None, True))])
    # Integer wrap-around and truncating mean.
    x = arr([[100, 100, 100], [-100, -100, -100]], "i8")
    op1("sum/i8/wrap", "sum(%a) {axis = [1]}", [("i8", x, None)],
        [("i8", reduce_ref("sum", x, "i8", [1], False))])
    x = arr([[-7, 0, 0], [7, 1, 0], [-5, -5, 5]], "i32")
    op1("mean/i32/trunc", "mean(%a) {axis = [1]}", [("i32", x, None)],
        [("i32", reduce_ref("mean", x, "i32", [1], False))])
    x = arr([1000] * 8, "i32")
    op1("prod/i32/wrap", "prod(%a)", [("i32", x, None)],
        [("i32", reduce_ref("prod", x, "i32", None, False))])
    x = arr([2 ** 40 + 1, 2 ** 40 + 1, 1], "i64")
    op1("sum/i64/2^40", "sum(%a)", [("i64", x, None)],
        [("i64", reduce_ref("sum", x, "i64", None, False))])
    x = arr([2 ** 55 + 1, 2 ** 55 + 1, 1], "i64")
    op1("sum/i64/beyond-2^53", "sum(%a)", [("i64", x, None)],
        [("i64", reduce_ref("sum", x, "i64", None, False))])
    x = arr([2 ** 63 - 1, 5, -(2 ** 63)], "i64")
    op1("max/i64/extremes", "max(%a)", [("i64", x, None)], [("i64", arr(2 ** 63 - 1, "i64"))])
    op1("min/i64/extremes", "min(%a)", [("i64", x, None)], [("i64", arr(-(2 ** 63), "i64"))])
    x = arr([-128, 127, 0], "i8")
    op1("max/i8/extremes", "max(%a)", [("i8", x, None)], [("i8", arr(127, "i8"))])
    op1("min/i8/extremes", "min(%a)", [("i8", x, None)], [("i8", arr(-128, "i8"))])


def softmax_ref(x, axis, log):
    m = np.max(x, axis=axis, keepdims=True)
    with np.errstate(all="ignore"):
        e = np.exp(x - m)
        s = np.sum(e, axis=axis, keepdims=True)
        return (x - m - np.log(s)) if log else e / s


def norm_ref(x, params, axes, eps, rms):
    rank = x.ndim
    ax = [a % rank for a in axes]
    shape = [x.shape[d] if d in ax else 1 for d in range(rank)]
    order = np.argsort(ax)

    def expand(p):
        return np.transpose(p, order).reshape(shape)
    t = tuple(ax)
    if rms:
        ms = np.mean(x * x, axis=t, keepdims=True)
        return x / np.sqrt(ms + eps) * expand(params[0])
    mean = np.mean(x, axis=t, keepdims=True)
    var = np.mean((x - mean) ** 2, axis=t, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * expand(params[0]) + expand(params[1])


def gen_softmax_norms():
    for op in ["nn.softmax", "nn.log_softmax"]:
        for dt in FLOATS:
            for shape, axis in [([2, 3, 4], None), ([2, 3, 4], 0), ([2, 3, 4], -2), ([5], None),
                                ([2, 3, 4], [1]), ([3, 1], -1), ([0, 4], -1)]:
                x = rand(dt, shape, -4, 4)
                a = -1 if axis is None else (axis[0] if isinstance(axis, list) else axis)
                call = "%s(%%a)%s" % (op, attrs_text({"axis": axis}) if axis is not None else "")
                op1("%s/%s/%s axis=%s" % (op, dt, shp(shape), axis), call, [(dt, x, None)],
                    [(dt, round_to(softmax_ref(wide(x, dt), a, op == "nn.log_softmax"), dt))])
        # Stability (large values) and -inf entries.
        for dt in FLOATS:
            x = arr([[1000.0, 999.0, 998.0], [0.0, float("-inf"), 1.0], [-1000.0, -1000.0, -1000.0]], dt)
            op1("%s/%s/large and -inf" % (op, dt), "%s(%%a)" % op, [(dt, x, None)],
                [(dt, round_to(softmax_ref(wide(x, dt), -1, op == "nn.log_softmax"), dt))])
    for dt in FLOATS:
        for shape, axes, eps in [([2, 3, 8], [-1], None), ([2, 3, 4], [1, 2], 1e-3),
                                 ([2, 3, 4], [-2, -1], None), ([4, 6], [0], 0.5),
                                 ([2, 3, 4], [2, 1], None), ([3, 1], [-1], None)]:
            x = rand(dt, shape, -3, 3)
            pshape = [shape[a] for a in axes]
            g, b = rand(dt, pshape, 0.5, 1.5), rand(dt, pshape, -1, 1)
            attrs = {"axes": axes}
            if eps is not None:
                attrs["epsilon"] = eps
            ref = norm_ref(wide(x, dt), [wide(g, dt), wide(b, dt)], axes,
                           1e-5 if eps is None else eps, False)
            op1("nn.layer_norm/%s/%s%s" % (dt, shp(shape), attrs_text(attrs)),
                "nn.layer_norm(%%a, %%b, %%c)%s" % attrs_text(attrs),
                [(dt, x, None), (dt, g, None), (dt, b, None)], [(dt, round_to(ref, dt))])
            rattrs = dict(attrs)
            if axes == [-1] and eps is None:
                rattrs = {}
            ref = norm_ref(wide(x, dt), [wide(g, dt)], axes, 1e-5 if eps is None else eps, True)
            op1("nn.rms_norm/%s/%s%s" % (dt, shp(shape), attrs_text(rattrs)),
                "nn.rms_norm(%%a, %%b)%s" % attrs_text(rattrs),
                [(dt, x, None), (dt, g, None)], [(dt, round_to(ref, dt))])
    # epsilon matters: constant rows.
    x = np.full((2, 4), 3.0, np.float32)
    g, b = np.ones(4, np.float32), np.zeros(4, np.float32)
    op1("nn.layer_norm/f32/constant rows eps=0.25", "nn.layer_norm(%a, %b, %c) {axes = [-1], epsilon = 0.25}",
        [("f32", x, None), ("f32", g, None), ("f32", b, None)], [("f32", np.zeros((2, 4), np.float32))])
    x = np.zeros((2, 4), np.float32)
    op1("nn.rms_norm/f32/zeros default eps", "nn.rms_norm(%a, %b)", [("f32", x, None), ("f32", g, None)],
        [("f32", np.zeros((2, 4), np.float32))])


# --- complex ---------------------------------------------------------------

def gen_matmul():
    shapes = [([2, 3], [3, 4]), ([3], [3, 4]), ([2, 3], [3]), ([3], [3]), ([2, 2, 3], [2, 3, 4]),
              ([2, 1, 2, 3], [5, 3, 2]), ([2, 2, 3], [3, 4]), ([3], [2, 3, 4]), ([2, 3, 4], [4]),
              ([1, 3], [3, 1]), ([2, 0], [0, 3]), ([0, 3], [3, 2]), ([1, 2, 3], [4, 3, 2])]
    for dt in NUMERIC:
        for sa, sb in shapes:
            if dt not in ("f32",) and (sa, sb) not in shapes[:6]:
                continue
            lo, hi = (-3, 3) if dt in INTS else (-2, 2)
            a, b = rand(dt, sa, lo, hi), rand(dt, sb, lo, hi)
            ref = round_to(np.matmul(wide(a, dt), wide(b, dt)), dt)
            op1("matmul/%s/%s x %s" % (dt, shp(sa), shp(sb)), "matmul(%a, %b)",
                [(dt, a, None), (dt, b, None)], [(dt, ref)])
    for src, out in [("f16", "f32"), ("bf16", "f32"), ("i8", "i32"), ("f32", "f16"),
                     ("i32", "i64"), ("f32", "f32")]:
        lo, hi = (-9, 9) if src in INTS else (-2, 2)
        a, b = rand(src, [2, 5], lo, hi), rand(src, [5, 3], lo, hi)
        ref = round_to(np.matmul(wide(a, src), wide(b, src)), out)
        op1("matmul/%s->%s/out_dtype" % (src, out), 'matmul(%%a, %%b) {out_dtype = "%s"}' % out,
            [(src, a, None), (src, b, None)], [(out, ref)])
    a = arr([[100, 100, 100, 100]], "i8")
    b = arr([[100], [100], [100], [100]], "i8")
    op1("matmul/i8/wrap", "matmul(%a, %b)", [("i8", a, None), ("i8", b, None)],
        [("i8", round_to(np.matmul(wide(a, "i8"), wide(b, "i8")), "i8"))])
    op1("matmul/i8->i32/no wrap", 'matmul(%a, %b) {out_dtype = "i32"}', [("i8", a, None), ("i8", b, None)],
        [("i32", round_to(np.matmul(wide(a, "i8"), wide(b, "i8")), "i32"))])


def pad4(padding):
    if padding is None:
        return [0, 0, 0, 0]
    if isinstance(padding, int):
        return [padding] * 4
    if len(padding) == 1:
        return padding * 4
    if len(padding) == 2:
        return [padding[0], padding[1], padding[0], padding[1]]
    return list(padding)


def pair(v, default):
    if v is None:
        return [default, default]
    if isinstance(v, int):
        return [v, v]
    return list(v) * (2 if len(v) == 1 else 1)


def conv2d_ref(x, w, strides, padding, dilation, groups):
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    s, d, p = pair(strides, 1), pair(dilation, 1), pad4(padding)
    g = groups or 1
    xp = np.pad(x, ((0, 0), (0, 0), (p[0], p[2]), (p[1], p[3])))
    oh = (h + p[0] + p[2] - d[0] * (kh - 1) - 1) // s[0] + 1
    ow = (wd + p[1] + p[3] - d[1] * (kw - 1) - 1) // s[1] + 1
    out = np.zeros((n, o, oh, ow), x.dtype)
    per = o // g
    for oc in range(o):
        grp = oc // per
        xs = xp[:, grp * cg:(grp + 1) * cg]
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, :, i * d[0]: i * d[0] + s[0] * (oh - 1) + 1: s[0],
                           j * d[1]: j * d[1] + s[1] * (ow - 1) + 1: s[1]]
                out[:, oc] += np.einsum("nchw,c->nhw", patch, w[oc, :, i, j])
    return out


def gen_conv2d():
    configs = [
        ([1, 2, 5, 5], [3, 2, 3, 3], {}),
        ([2, 2, 6, 5], [3, 2, 3, 2], {"strides": [2, 1]}),
        ([1, 2, 5, 5], [2, 2, 3, 3], {"padding": [1, 1, 1, 1]}),
        ([1, 1, 4, 5], [2, 1, 2, 3], {"padding": [0, 1, 2, 0]}),
        ([1, 2, 5, 5], [2, 2, 3, 3], {"padding": 1, "strides": 2}),
        ([1, 2, 4, 4], [2, 2, 3, 3], {"padding": [2, 1]}),
        ([1, 2, 7, 7], [2, 2, 3, 3], {"dilation": 2}),
        ([1, 4, 4, 4], [6, 2, 3, 3], {"groups": 2, "padding": 1}),
        ([1, 3, 4, 4], [3, 1, 3, 3], {"groups": 3}),
        ([1, 2, 3, 3], [4, 2, 1, 1], {}),
        ([0, 2, 3, 3], [1, 2, 2, 2], {}),
        ([1, 2, 6, 6], [2, 2, 3, 3], {"strides": [2, 2], "padding": [1, 0, 1, 0], "dilation": [1, 2]}),
    ]
    for i, (xs, ws, attrs) in enumerate(configs):
        for dt in (NUMERIC if i < 2 else ["f32"] if i > 3 else ["f32", "f16", "bf16"]):
            if dt == "i8" or dt == "i64":
                continue
            lo, hi = (-3, 3) if dt in INTS else (-1, 1)
            x, w = rand(dt, xs, lo, hi), rand(dt, ws, lo, hi)
            ref = conv2d_ref(wide(x, dt), wide(w, dt), attrs.get("strides"), attrs.get("padding"),
                             attrs.get("dilation"), attrs.get("groups"))
            op1("nn.conv2d/%s/%s * %s%s" % (dt, shp(xs), shp(ws), attrs_text(attrs)),
                "nn.conv2d(%%a, %%b)%s" % attrs_text(attrs), [(dt, x, None), (dt, w, None)],
                [(dt, round_to(ref, dt))])


def pool_ref(x, kind, pool_size, strides, padding, dilation, ceil_mode, dt):
    n, c, h, w = x.shape
    k, s, d, p = pair(pool_size, 1), pair(strides, 1), pair(dilation, 1), pad4(padding)
    dims = []
    for ax, size in enumerate([h, w]):
        reach = d[ax] * (k[ax] - 1) + 1
        span = size + p[ax] + p[ax + 2] - reach
        dims.append((-(-span // s[ax]) if ceil_mode else span // s[ax]) + 1)
    out = np.zeros((n, c, dims[0], dims[1]), x.dtype)
    for oh in range(dims[0]):
        for ow in range(dims[1]):
            hs = [oh * s[0] + i * d[0] - p[0] for i in range(k[0])]
            ws = [ow * s[1] + j * d[1] - p[1] for j in range(k[1])]
            hs = [v for v in hs if 0 <= v < h]
            ws = [v for v in ws if 0 <= v < w]
            win = x[:, :, hs][:, :, :, ws].reshape(n, c, -1)
            if kind == "max":
                out[:, :, oh, ow] = np.max(win, axis=2)
            else:
                total = np.sum(win, axis=2)
                cnt = win.shape[2]
                out[:, :, oh, ow] = trunc_div(total, cnt) if dt in INTS else total / cnt
    return out


def gen_pools():
    configs = [
        ([1, 2, 4, 4], {"pool_size": 2, "strides": 2}),
        ([1, 1, 5, 5], {"pool_size": [3, 3], "padding": 1}),
        ([2, 1, 4, 4], {}),
        ([1, 1, 5, 6], {"pool_size": [2, 3], "strides": [2, 2], "ceil_mode": True}),
        ([1, 1, 5, 5], {"pool_size": 2, "strides": 2, "padding": [1, 1, 0, 0]}),
        ([1, 1, 7, 7], {"pool_size": 2, "dilation": 2, "strides": 2}),
        ([1, 1, 6, 6], {"pool_size": 3, "strides": 2, "padding": [1, 1], "ceil_mode": True}),
        ([1, 1, 4, 5], {"pool_size": [1, 2], "padding": [0, 1, 0, 1], "strides": [1, 2]}),
    ]
    for kind in ["max", "avg"]:
        op = "nn.%s_pool2d" % kind
        for i, (xs, attrs) in enumerate(configs):
            for dt in (NUMERIC if i < 2 else ["f32", "f16"] if i < 4 else ["f32"]):
                x = rand(dt, xs, -9, 9)
                ref = pool_ref(wide(x, dt), kind, attrs.get("pool_size"), attrs.get("strides"),
                               attrs.get("padding"), attrs.get("dilation"), attrs.get("ceil_mode", False), dt)
                op1("%s/%s/%s%s" % (op, dt, shp(xs), attrs_text(attrs)), "%s(%%a)%s" % (op, attrs_text(attrs)),
                    [(dt, x, None)], [(dt, round_to(ref, dt))])
    x = arr(np.array([1.0, float("nan"), 3.0, 2.0, 5.0, 6.0, 7.0, 8.0, 9.0]).reshape(1, 1, 3, 3), "f32")
    op1("nn.max_pool2d/f32/nan", "nn.max_pool2d(%a) {pool_size = 2}", [("f32", x, None)],
        [("f32", round_to(pool_ref(wide(x, "f32"), "max", 2, None, None, None, False, "f32"), "f32"))])
    # adaptive average pool
    for xs, size in [([1, 2, 4, 4], [1, 1]), ([1, 1, 5, 7], [2, 3]), ([2, 1, 6, 6], 3),
                     ([1, 1, 3, 3], [5, 4]), ([1, 2, 4, 5], None), ([1, 1, 4, 4], [4, 2])]:
        for dt in FLOATS:
            x = rand(dt, xs, -4, 4)
            w = wide(x, dt)
            oh, ow = (xs[2], xs[3]) if size is None else pair(size, 1)
            out = np.zeros((xs[0], xs[1], oh, ow))
            for i in range(oh):
                for j in range(ow):
                    h0, h1 = (i * xs[2]) // oh, -(-((i + 1) * xs[2]) // oh)
                    w0, w1 = (j * xs[3]) // ow, -(-((j + 1) * xs[3]) // ow)
                    out[:, :, i, j] = w[:, :, h0:h1, w0:w1].mean(axis=(2, 3))
            call = "nn.adaptive_avg_pool2d(%a)" + (attrs_text({"output_size": size}) if size is not None else "")
            op1("nn.adaptive_avg_pool2d/%s/%s %s" % (dt, shp(xs), size), call, [(dt, x, None)],
                [(dt, round_to(out, dt))])


# --- symbolic dims bound from the inputs -------------------------------------

def gen_symbolic():
    def f(shape, lo=-2, hi=2, dt="f32"):
        return rand(dt, shape, lo, hi)
    for n in [3, 1, 0]:
        x, y = f([n, 4]), f([4])
        binary_case("add/f32/symbolic n=%d [n,4]+[4]" % n, "add", "f32", x, y, ["n", 4], None,
                    ret_types=["f32[n,4]"])
        op1("sum/f32/symbolic n=%d axis0" % n, "sum(%a) {axis = [0]}", [("f32", x, ["n", 4])],
            [("f32", reduce_ref("sum", x, "f32", [0], False))])
        op1("exp/f16/symbolic n=%d" % n, "exp(%a)", [("f16", round_to(x, "f16"), ["n", "m"])],
            [("f16", unary_ref(np.exp, round_to(x, "f16"), "f16"))], ret_types=["f16[n,m]"])
    x, y = f([3, 1]), f([1, 5])
    binary_case("multiply/f32/symbolic [n,1]*[1,m]", "multiply", "f32", x, y, ["n", 1], [1, "m"],
                ret_types=["f32[n,m]"])
    x, y = f([2, 3], dt="bf16"), f([2, 3], dt="bf16")
    binary_case("subtract/bf16/symbolic [b,n]-[b,n]", "subtract", "bf16", x, y, ["b", "n"], ["b", "n"],
                ret_types=["bf16[b,n]"])
    x = f([4, 3])
    op1("mean/f32/symbolic axis over n", "mean(%a) {axis = [1], keepdims = true}", [("f32", x, [4, "n"])],
        [("f32", reduce_ref("mean", x, "f32", [1], True))])
    x = f([4, 3], dt="i32", lo=-9, hi=9)
    op1("mean/i32/symbolic axis over n", "mean(%a) {axis = [-1]}", [("i32", x, [4, "n"])],
        [("i32", reduce_ref("mean", x, "i32", [-1], False))])
    x = f([2, 5])
    op1("nn.softmax/f32/symbolic axis", "nn.softmax(%a)", [("f32", x, [2, "n"])],
        [("f32", round_to(softmax_ref(wide(x, "f32"), -1, False), "f32"))], ret_types=["f32[2,n]"])
    x = f([3, 4])
    op1("reshape/f32/symbolic [n,2,2]", "reshape(%a) {shape = [n, 2, 2]}", [("f32", x, ["n", 4])],
        [("f32", x.reshape(3, 2, 2))], ret_types=["f32[n,2,2]"], exact=True)
    x = f([3, 2, 2])
    op1("reshape/f32/symbolic [n,-1]", "reshape(%a) {shape = [n, -1]}", [("f32", x, ["n", 2, 2])],
        [("f32", x.reshape(3, 4))], ret_types=["f32[n,4]"], exact=True)
    x = f([3, 5])
    op1("permute_dims/f32/symbolic", "permute_dims(%a)", [("f32", x, ["n", "m"])],
        [("f32", contig(x.T))], ret_types=["f32[m,n]"], exact=True)
    x, idx = f([5, 3]), np.array([4, -1, 0, 2, -5, 1], np.int64)
    op1("take/f32/symbolic indices", "take(%a, %b) {axis = 0}", [("f32", x, None), ("i64", idx, ["k"])],
        [("f32", np.take(x, idx, 0))], ret_types=["f32[k,3]"], exact=True)
    for dt in ["f32", "f16"]:
        a, b = f([3, 4], dt=dt), f([4, 2], dt=dt)
        op1("matmul/%s/symbolic [n,k]x[k,m]" % dt, "matmul(%a, %b)", [(dt, a, ["n", "k"]), (dt, b, ["k", "m"])],
            [(dt, round_to(wide(a, dt) @ wide(b, dt), dt))], ret_types=["%s[n,m]" % dt])
    x, g, b = f([3, 8]), f([8], 0.5, 1.5), f([8])
    op1("nn.layer_norm/f32/symbolic rows", "nn.layer_norm(%a, %b, %c) {axes = [-1]}",
        [("f32", x, ["n", 8]), ("f32", g, None), ("f32", b, None)],
        [("f32", round_to(norm_ref(wide(x, "f32"), [g, b], [-1], 1e-5, False), "f32"))], ret_types=["f32[n,8]"])
    x, g = f([3, 6]), f([6], 0.5, 1.5)
    op1("nn.rms_norm/f32/symbolic norm axis", "nn.rms_norm(%a, %b)", [("f32", x, [3, "d"]), ("f32", g, ["d"])],
        [("f32", round_to(norm_ref(wide(x, "f32"), [g], [-1], 1e-5, True), "f32"))], ret_types=["f32[3,d]"])
    x, y = f([1, 4]), f([3])
    add_case(Case("broadcast_to/f32/symbolic [n,4]", [("f32", x, None), ("f32", y, ["n"])],
                  ["%r = broadcast_to(%a) {shape = [n, 4]}"], ["r"],
                  [("f32", contig(np.broadcast_to(x, (3, 4))))], ["f32[n,4]"], True))
    x = f([5])
    op1("expand_dims/f32/symbolic", "expand_dims(%a) {axis = [0, -1]}", [("f32", x, ["n"])],
        [("f32", x.reshape(1, 5, 1))], ret_types=["f32[1,n,1]"], exact=True)
    x = f([4, 1])
    op1("squeeze/f32/symbolic", "squeeze(%a)", [("f32", x, ["n", 1])], [("f32", x.reshape(4))],
        ret_types=["f32[n]"], exact=True)
    x, y = f([3, 2]), f([3, 3])
    op1("concat/f32/symbolic rows", "concat(%a, %b) {axis = 1}", [("f32", x, ["n", 2]), ("f32", y, ["n", 3])],
        [("f32", np.concatenate([x, y], 1))], ret_types=["f32[n,5]"], exact=True)
    x = f([3, 6])
    op1("split/f32/symbolic rows", "split(%a) {indices_or_sections = 3, axis = 1}", [("f32", x, ["n", 6])],
        [("f32", p) for p in np.split(x, 3, 1)], ret_types=["f32[n,2]"] * 3, exact=True)
    op1("strided_slice/f32/symbolic rows", "strided_slice(%a) {axes = [1], begin = [-1], end = [0], strides = [-2]}",
        [("f32", x, ["n", 6])], [("f32", contig(x[:, -1:0:-2]))], ret_types=["f32[n,3]"], exact=True)
    c, a, b = rand("bool", [3, 1]), f([3, 4]), f([4])
    op1("where/f32/symbolic", "where(%a, %b, %c)", [("bool", c, ["n", 1]), ("f32", a, ["n", 4]), ("f32", b, None)],
        [("f32", np.where(c, a, b))], ret_types=["f32[n,4]"], exact=True)
    x, w = f([2, 2, 5, 5]), f([3, 2, 3, 3])
    op1("nn.conv2d/f32/symbolic batch", "nn.conv2d(%a, %b) {padding = 1}", [("f32", x, ["n", 2, 5, 5]), ("f32", w, None)],
        [("f32", round_to(conv2d_ref(wide(x, "f32"), wide(w, "f32"), None, 1, None, None), "f32"))],
        ret_types=["f32[n,3,5,5]"])
    x = f([1, 2, 4, 6])
    op1("nn.conv2d/f32/symbolic spatial", "nn.conv2d(%a, %b) {padding = [1, 1, 1, 1]}",
        [("f32", x, [1, 2, "h", "w"]), ("f32", w, None)],
        [("f32", round_to(conv2d_ref(wide(x, "f32"), wide(w, "f32"), None, 1, None, None), "f32"))],
        ret_types=["f32[1,3,h,w]"])
    op1("nn.max_pool2d/f32/symbolic spatial", "nn.max_pool2d(%a) {pool_size = 3, padding = 1}",
        [("f32", x, [1, 2, "h", "w"])],
        [("f32", round_to(pool_ref(wide(x, "f32"), "max", 3, None, 1, None, False, "f32"), "f32"))],
        ret_types=["f32[1,2,h,w]"])
    op1("nn.avg_pool2d/f32/symbolic spatial", "nn.avg_pool2d(%a) {pool_size = 3, padding = 1}",
        [("f32", x, [1, 2, "h", "w"])],
        [("f32", round_to(pool_ref(wide(x, "f32"), "avg", 3, None, 1, None, False, "f32"), "f32"))],
        ret_types=["f32[1,2,h,w]"])


# --- the numerics rules of spec §4 -------------------------------------------

def gen_rounding_rules():
    # f16/bf16 ops round to their dtype after each operator: (x + 1) - x.
    for dt, big in [("f16", 2048.0), ("bf16", 256.0)]:
        x, one = arr([big, big, 1.0], dt), arr([1.0, 3.0, 1.0], dt)
        s = round_to(wide(x, dt) + wide(one, dt), dt)
        r = round_to(wide(s, dt) - wide(x, dt), dt)
        add_case(Case("rule/%s/round after each op: (x+y)-x" % dt, [(dt, x, None), (dt, one, None)],
                      ["%s = add(%a, %b)", "%r = subtract(%s, %a)"], ["r"], [(dt, r)], exact=True))
        # exp then log: the intermediate is rounded.
        x = arr([0.3, 1.7, -2.2], dt)
        e = round_to(np.exp(wide(x, dt)), dt)
        add_case(Case("rule/%s/round after each op: log(exp(x))" % dt, [(dt, x, None)],
                      ["%e = exp(%a)", "%r = log(%e)"], ["r"],
                      [(dt, round_to(np.log(wide(e, dt)), dt))], exact=True))
    # Reductions accumulate in f32: 4096 ones in f16 (f16 accumulation stalls at 2048),
    # 512 ones in bf16 (stalls at 256).
    for dt, n in [("f16", 4096), ("bf16", 512)]:
        x = np.ones([n], STORAGE[dt])
        op1("rule/%s/sum accumulates in f32" % dt, "sum(%a)", [(dt, x, None)],
            [(dt, arr(float(n), dt))], exact=True)
        op1("rule/%s/mean accumulates in f32" % dt, "mean(%a)", [(dt, x, None)],
            [(dt, arr(1.0, dt))], exact=True)
        a, b = np.ones([1, n], STORAGE[dt]), np.ones([n, 1], STORAGE[dt])
        op1("rule/%s/matmul accumulates in f32" % dt, "matmul(%a, %b)", [(dt, a, None), (dt, b, None)],
            [(dt, arr([[float(n)]], dt))], exact=True)
        x = np.ones([1, 1, 1, n], STORAGE[dt])
        w = np.ones([1, 1, 1, n], STORAGE[dt])
        op1("rule/%s/conv2d accumulates in f32" % dt, "nn.conv2d(%a, %b)", [(dt, x, None), (dt, w, None)],
            [(dt, arr([[[[float(n)]]]], dt))], exact=True)
    # f16 sum whose f16 partial sums overflow but whose mean does not.
    x = arr([60000.0, 60000.0, 60000.0], "f16")
    op1("rule/f16/mean of large values (f32 partial sums)", "mean(%a)", [("f16", x, None)],
        [("f16", arr(60000.0, "f16"))], exact=True)
    x = arr([[60000.0, 60000.0], [-60000.0, 60000.0]], "f16")
    op1("rule/f16/sum overflows only at the end", "sum(%a) {axis = [1]}", [("f16", x, None)],
        [("f16", arr([float("inf"), 0.0], "f16"))], exact=True)
    # Norms compute internally in f32: squares of 300 overflow f16.
    for dt in ["f16"]:
        x = arr([[300.0, -300.0, 200.0, -200.0], [250.0, 250.0, -250.0, 100.0]], dt)
        g, b = np.ones([4], STORAGE[dt]), np.zeros([4], STORAGE[dt])
        op1("rule/%s/layer_norm in f32 (x^2 overflows f16)" % dt, "nn.layer_norm(%a, %b, %c) {axes = [-1]}",
            [(dt, x, None), (dt, g, None), (dt, b, None)],
            [(dt, round_to(norm_ref(wide(x, dt), [wide(g, dt), wide(b, dt)], [-1], 1e-5, False), dt))])
        op1("rule/%s/rms_norm in f32 (x^2 overflows f16)" % dt, "nn.rms_norm(%a, %b)",
            [(dt, x, None), (dt, g, None)],
            [(dt, round_to(norm_ref(wide(x, dt), [wide(g, dt)], [-1], 1e-5, True), dt))])
        # softmax over 70000 equal elements: f16 sum of exps would overflow.
        x = np.zeros([70000], STORAGE[dt])
        op1("rule/%s/softmax sum in f32" % dt, "nn.softmax(%a)", [(dt, x, None)],
            [(dt, round_to(np.full([70000], 1.0 / 70000), dt))], exact=True)
    # softmax/log_softmax round once: values whose f16 result is exact.
    x = arr([[0.0, 0.0, 0.0, 0.0]], "f16")
    op1("rule/f16/softmax rounds once", "nn.softmax(%a)", [("f16", x, None)],
        [("f16", arr([[0.25] * 4], "f16"))], exact=True)
    x = arr([[0.1, 0.2, 0.3], [5.0, -3.0, 0.0]], "bf16")
    op1("rule/bf16/log_softmax rounds once", "nn.log_softmax(%a)", [("bf16", x, None)],
        [("bf16", round_to(softmax_ref(wide(x, "bf16"), -1, True), "bf16"))], exact=True)
    op1("rule/bf16/softmax rounds once", "nn.softmax(%a)", [("bf16", x, None)],
        [("bf16", round_to(softmax_ref(wide(x, "bf16"), -1, False), "bf16"))], exact=True)
    # Mixed chain in f16 through astype.
    x = arr([1.0 + 2 ** -9, 3.14159, -2.71828, 1e-4], "f32")
    h = round_to(wide(x, "f32"), "f16")
    m = round_to(wide(h, "f16") * 3.0, "f16")
    add_case(Case("rule/f16/astype then multiply", [("f32", x, None)],
                  ['%h = astype(%a) {dtype = "f16"}', "%m = multiply(%h, 3.0)",
                   '%r = astype(%m) {dtype = "f32"}'], ["r"], [("f32", round_to(wide(m, "f16"), "f32"))],
                  exact=True))
    # bf16 round-to-nearest-even on arithmetic results.
    a = arr([1.0, 1.0, -1.0, 3.0], "bf16")
    b = arr([2 ** -8, 3 * 2 ** -8, -(2 ** -8), 2 ** -7], "bf16")
    binary_case("rule/bf16/add ties to even", "add", "bf16", a, b, exact=True)
    a = arr([1.0, 1.0, 2048.0, 1.0], "f16")
    b = arr([2 ** -11, 3 * 2 ** -11, 1.0, 2 ** -12], "f16")
    binary_case("rule/f16/add ties to even", "add", "f16", a, b, exact=True)
    # f16 overflow to inf, underflow to subnormal.
    a = arr([60000.0, 2 ** -14, 300.0], "f16")
    b = arr([2.0, 2 ** -3, 300.0], "f16")
    binary_case("rule/f16/multiply overflow and subnormal", "multiply", "f16", a, b, exact=True)
    # Two results in a tuple.
    x = rand("f32", [2, 3])
    add_case(Case("rule/f32/tuple of two results", [("f32", x, None)],
                  ["%s = sum(%a) {axis = [1]}", "%m = max(%a) {axis = [0]}"], ["s", "m"],
                  [("f32", round_to(wide(x, "f32").sum(1), "f32")),
                   ("f32", x.max(0))]))


def gen_large():
    """Tensors longer than the interpreter's 256-element batches, so batch
    boundaries, strided batched loads and the batched reduction paths run."""
    for dt in ["f32", "f16", "i32"]:
        a, b = rand(dt, [3, 700], -9, 9), rand(dt, [700], -9, 9)
        binary_case("add/%s/large 3x700,700" % dt, "add", dt, a, b)
        a, b = rand(dt, [700, 1], -9, 9), rand(dt, [1, 3], -9, 9)
        binary_case("multiply/%s/large 700x1,1x3" % dt, "multiply", dt, a, b)
        x = rand(dt, [5, 600], -9, 9)
        for op, axis in [("sum", [0]), ("sum", [1]), ("max", [0]), ("mean", [-1]), ("min", None)]:
            attrs = attrs_text({"axis": axis}) if axis is not None else ""
            op1("%s/%s/large 5x600%s" % (op, dt, attrs), "%s(%%a)%s" % (op, attrs), [(dt, x, None)],
                [(dt, reduce_ref(op, x, dt, axis, False))])
        x = rand(dt, [1000], -9, 9)
        op1("sum/%s/large 1000" % dt, "sum(%a)", [(dt, x, None)], [(dt, reduce_ref("sum", x, dt, None, False))])
        op1("strided_slice/%s/large -1::-3" % dt,
            "strided_slice(%a) {axes = [0], begin = [-1], end = [-1001], strides = [-3]}",
            [(dt, x, None)], [(dt, contig(x[-1::-3]))], exact=True)
        idx = R.integers(-1000, 1000, [400]).astype(np.int32)
        op1("take/%s/large 400 of 1000" % dt, "take(%a, %b)", [(dt, x, None), ("i32", idx, None)],
            [(dt, np.take(x, idx))], exact=True)
        a, b = rand(dt, [2, 300], -9, 9), rand(dt, [2, 200], -9, 9)
        op1("concat/%s/large 2x300,2x200" % dt, "concat(%a, %b) {axis = -1}", [(dt, a, None), (dt, b, None)],
            [(dt, np.concatenate([a, b], -1))], exact=True)
        x = rand(dt, [300, 3], -9, 9)
        op1("permute_dims/%s/large 300x3" % dt, "permute_dims(%a)", [(dt, x, None)],
            [(dt, contig(x.T))], exact=True)
        op1("reshape/%s/large 300x3->[3,300]" % dt, "reshape(%a) {shape = [3, 300]}", [(dt, x, None)],
            [(dt, x.reshape(3, 300))], exact=True)
        c, a, b = rand("bool", [2, 600]), rand(dt, [2, 600], -9, 9), rand(dt, [600], -9, 9)
        op1("where/%s/large 2x600" % dt, "where(%a, %b, %c)", [("bool", c, None), (dt, a, None), (dt, b, None)],
            [(dt, np.where(c, a, b))], exact=True)
    for dt in FLOATS:
        a, b = rand(dt, [3, 300]), rand(dt, [300, 257])
        op1("matmul/%s/large 3x300 x 300x257" % dt, "matmul(%a, %b)", [(dt, a, None), (dt, b, None)],
            [(dt, round_to(wide(a, dt) @ wide(b, dt), dt))])
        x = rand(dt, [2, 513], -5, 5)
        op1("nn.softmax/%s/large 2x513" % dt, "nn.softmax(%a)", [(dt, x, None)],
            [(dt, round_to(softmax_ref(wide(x, dt), -1, False), dt))])
        x = rand(dt, [3, 300])
        g, b = rand(dt, [300], 0.5, 1.5), rand(dt, [300])
        op1("nn.layer_norm/%s/large 3x300" % dt, "nn.layer_norm(%a, %b, %c) {axes = [-1]}",
            [(dt, x, None), (dt, g, None), (dt, b, None)],
            [(dt, round_to(norm_ref(wide(x, dt), [wide(g, dt), wide(b, dt)], [-1], 1e-5, False), dt))])
        x = rand(dt, [1, 2, 20, 300])
        op1("nn.max_pool2d/%s/large 20x300" % dt, "nn.max_pool2d(%a) {pool_size = 3, strides = 2, padding = 1}",
            [(dt, x, None)], [(dt, round_to(pool_ref(wide(x, dt), "max", 3, 2, 1, None, False, dt), dt))])
    # A graph with dataflow blocks and an alias, run through several ops.
    x, y = rand("f32", [4, 3]), rand("f32", [3])
    t = round_to(np.exp(wide(x, "f32")), "f32")
    u = round_to(wide(t, "f32") * wide(y, "f32"), "f32")
    add_case(Case("graph/f32/dataflow blocks", [("f32", x, None), ("f32", y, None)],
                  ["dataflow {", "  %t = exp(%a)", "  output %t", "}", "dataflow {",
                   "  %u = multiply(%t, %b)", "  %s = sum(%u) {axis = [1]}", "  output %s", "}",
                   "%r = %s"], ["r"], [("f32", round_to(wide(u, "f32").sum(1), "f32"))]))


def generate():
    gen_unary()
    gen_large()
    gen_astype()
    gen_binary()
    gen_where()
    gen_injective()
    gen_reductions()
    gen_softmax_norms()
    gen_matmul()
    gen_conv2d()
    gen_pools()
    gen_symbolic()
    gen_rounding_rules()
    names = [c.name for c in CASES]
    dups = sorted({n for n in names if names.count(n) > 1})
    assert not dups, "duplicate case names: %s" % dups
    return CASES


# ---------------------------------------------------------------------------
# Running and comparing
# ---------------------------------------------------------------------------

def compare(got, want, dt, exact):
    """Returns None if equal enough, else a description with the max error."""
    if got.dtype != np.dtype(STORAGE[dt]):
        return "result dtype %s, expected %s" % (got.dtype, np.dtype(STORAGE[dt]))
    if got.shape != want.shape:
        return "shape %s, expected %s" % (list(got.shape), list(want.shape))
    if dt == "bf16":
        bits = got.view(np.uint32)
        bad = ((bits & 0xFFFF) != 0) & ~np.isnan(got)
        if bad.any():
            return "holds values that are not bf16 (e.g. %r)" % float(got[bad][0])
    if dt not in TOL:
        mism = got != want
        if mism.any():
            i = np.argwhere(mism)[0]
            return "%d of %d elements differ; first at %s: got %s, expected %s" % (
                mism.sum(), mism.size, list(i), got[tuple(i)], want[tuple(i)])
        return None
    g, w = got.astype(np.float64), want.astype(np.float64)
    both_nan = np.isnan(g) & np.isnan(w)
    with np.errstate(all="ignore"):
        same = (g == w) | both_nan
        err = np.abs(g - w)
        if exact:
            ok = same
        else:
            atol, rtol = TOL[dt]
            ok = same | (err <= atol + rtol * np.abs(w))
    if ok.all():
        return None
    bad = ~ok
    errs = np.where(bad & ~np.isnan(err), err, 0.0)
    i = tuple(np.argwhere(bad)[0])
    return "%d of %d elements differ, max error %.6g; first at %s: got %r, expected %r" % (
        bad.sum(), bad.size, errs.max(), list(i), float(g[i]), float(w[i]))


def run_case(index, case, fusec_run, tmp, lower=None, run_args=()):
    d = os.path.join(tmp, "%04d" % index)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "main.fir")
    with open(path, "w") as f:
        f.write("// %s\n" % case.name)
        f.write(case.fir())
    inputs = []
    for k, (dt, a, _) in enumerate(case.params):
        p = os.path.join(d, "in%d.npy" % k)
        np.save(p, contig(a.astype(STORAGE[dt])))
        inputs.append(p)
    if lower:
        # --lower: the op's -O0 pipeline (legalize, schedule, lower) first; the
        # interpreter then runs the loops the CUDA code is generated from.
        lowered = os.path.join(d, "lowered.fir")
        proc = subprocess.run([lower, path, "-O0", "-o", lowered], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, universal_newlines=True)
        if proc.returncode != 0:
            return "fusec -O0 exited %d: %s" % (proc.returncode,
                                                proc.stderr.strip().replace("\n", " | ")[:400])
        path = lowered
    out = os.path.join(d, "out")
    cmd = [fusec_run, path, "--inputs=" + ",".join(inputs), "--outputs=" + out] + list(run_args)
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, timeout=60)
    except subprocess.TimeoutExpired:
        return "timed out"
    except OSError as error:
        return "cannot run fusec-run: %s" % error
    if proc.returncode != 0:
        return "fusec-run exited %d: %s" % (proc.returncode,
                                            proc.stderr.strip().replace("\n", " | ")[:400])
    problems = []
    for k, (dt, want) in enumerate(case.expected):
        p = os.path.join(out, "out%d.npy" % k)
        if not os.path.exists(p):
            return "no out%d.npy" % k
        got = np.load(p)
        problem = compare(got, np.asarray(want, dtype=STORAGE[dt]), dt, case.exact)
        if problem:
            problems.append(("out%d: " % k if len(case.expected) > 1 else "") + problem)
    if os.path.exists(os.path.join(out, "out%d.npy" % len(case.expected))):
        problems.append("more results than expected")
    return "; ".join(problems) or None


def describe(case):
    dts = ",".join(dt for dt, _, _ in case.params)
    shapes = " ".join(shp(a.shape) for _, a, _ in case.params)
    return "%s (inputs %s: %s)" % (case.name, dts, shapes)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--fusec-run", required=True)
    parser.add_argument("--tmp", required=True)
    parser.add_argument("-k", dest="filter", default="", help="only cases whose name contains this")
    parser.add_argument("-j", type=int, default=max(2, os.cpu_count() or 2))
    parser.add_argument("-v", action="store_true", help="print every case")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    parser.add_argument("--lower", action="store_true",
                        help="run each case lowered (fusec -O0, from fusec-run's directory)")
    parser.add_argument("--keep", action="store_true", help="keep the temp dir of passing cases")
    parser.add_argument("--device", default="cpu", choices=["cpu", "emulator"],
                        help="with --lower: run the lowered CUDA C on fusec's emulator "
                             "(which also checks it against the interpreter)")
    parser.add_argument("--shard", default="0/1",
                        help="K/N: only the cases whose name's CRC-32 is K modulo N")
    args = parser.parse_args()
    shard, shards = (int(part) for part in args.shard.split("/"))

    cases = [c for c in generate() if args.filter in c.name
             and zlib.crc32(c.name.encode()) % shards == shard]
    if args.list:
        for c in cases:
            print(c.name)
        print("%d cases" % len(cases))
        return 0
    if not (os.path.isfile(args.fusec_run) and os.access(args.fusec_run, os.X_OK)):
        print("conformance.py: no fusec-run executable at '%s'" % args.fusec_run)
        return 2
    shutil.rmtree(args.tmp, ignore_errors=True)
    os.makedirs(args.tmp)
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.j) as pool:
        lower = os.path.join(os.path.dirname(args.fusec_run), "fusec") if args.lower else None
        run_args = ["--device=" + args.device] if args.device != "cpu" else []
        results = list(pool.map(lambda ic: run_case(ic[0], ic[1], args.fusec_run, args.tmp, lower,
                                                    run_args),
                                enumerate(cases)))
    failed = known = xpass = 0
    for i, (case, problem) in enumerate(zip(cases, results)):
        where = os.path.join(args.tmp, "%04d" % i)
        if case.name in KNOWN_FAILURES:
            if problem:
                known += 1
                print("KNOWN FAILURE: %s: %s [%s]" % (describe(case), problem, where))
            else:
                xpass += 1
                print("UNEXPECTED PASS: %s: remove it from KNOWN_FAILURES" % describe(case))
            continue
        if problem:
            failed += 1
            print("FAIL: %s: %s [%s]" % (describe(case), problem, where))
        else:
            if args.v:
                print("PASS: %s" % describe(case))
            if not args.keep:
                shutil.rmtree(where, ignore_errors=True)
    print("%d cases, %d failed (%d known failures, %d unexpected passes)" % (
        len(cases), failed + xpass, known, xpass))
    return 1 if failed or xpass else 0


if __name__ == "__main__":
    sys.exit(main())
