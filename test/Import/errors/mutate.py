#!/usr/bin/python3
"""Byte-level mutants of ONNX models, imported by fusec: none may crash.

Each mutant is one of the given models with a few bytes changed, a range
deleted or repeated, or the file truncated; positions are drawn mostly from
the model's structure (everything but the tensor payloads: raw_data and the
typed data fields of initializers and Constant values, found by walking the
protobuf wire format), so that the mutants reach the importer's checks
rather than only changing weights. fusec runs on each with a timeout and a
memory limit; a mutant fails when fusec

  - exits with a code other than 0 (imported) or 1 (bad input, one message),
  - is killed by a signal or runs out of memory (an abort),
  - runs past the timeout,
  - prints 'Assertion', 'internal', 'LLVM ERROR', 'Stack dump' or a
    sanitizer's report ('Sanitizer', 'runtime error').

Failing mutants are written to --save (with their stderr beside as .txt).
Standard library only; deterministic for a given --seed and set of models.

  /usr/bin/python3 test/Import/errors/mutate.py --fusec build/bin/fusec \\
      --models test/Import/models --count 300 --seed 1 --save /tmp/onnx-crashes

Prints one line per failure and a summary `N mutants: K failures`; exits 1
when some mutant failed. test/Import/fuzz-mutants.test runs a fixed seed.
"""

import argparse
import os
import random
import resource
import subprocess
import sys
import tempfile

BAD_WORDS = ("Assertion", "internal", "LLVM ERROR", "Stack dump", "Sanitizer",
             "runtime error")

# Wire-format paths to TensorProto messages and their payload fields.
TENSOR_DATA_FIELDS = {4, 5, 7, 9, 10, 11}  # float, int32, int64, raw, double, uint64


def varint(data, pos):
    value = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ValueError("bad varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def fields(data, begin, end):
    """(field number, wire type, value begin, value end) of a message."""
    pos = begin
    while pos < end:
        key, pos = varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            start = pos
            _, pos = varint(data, pos)
        elif wire == 1:
            start, pos = pos, pos + 8
        elif wire == 5:
            start, pos = pos, pos + 4
        elif wire == 2:
            length, start = varint(data, pos)
            pos = start + length
        else:
            raise ValueError("unsupported wire type")
        if pos > end:
            raise ValueError("field past the end")
        yield number, wire, start, pos


def payload_spans(data):
    """The byte ranges of tensor payloads (initializers, Constant values)."""
    spans = []

    def tensor(begin, end):
        for number, wire, start, stop in fields(data, begin, end):
            if number in TENSOR_DATA_FIELDS and wire == 2:
                spans.append((start, stop))

    def graph(begin, end):
        for number, wire, start, stop in fields(data, begin, end):
            if number == 5 and wire == 2:  # initializer
                tensor(start, stop)
            elif number == 1 and wire == 2:  # node
                for n, w, s, e in fields(data, start, stop):
                    if n == 5 and w == 2:  # attribute
                        for an, aw, as_, ae in fields(data, s, e):
                            if an == 5 and aw == 2:  # t
                                tensor(as_, ae)

    try:
        for number, wire, start, stop in fields(data, 0, len(data)):
            if number == 7 and wire == 2:
                graph(start, stop)
    except ValueError:
        pass
    return spans


def is_sanitized(binary):
    """Whether `binary` is built with AddressSanitizer (no address-space limit then)."""
    with open(binary, "rb") as f:
        tail = b""
        while True:
            chunk = f.read(1 << 22)
            if not chunk:
                return False
            if b"__asan_init" in tail + chunk:
                return True
            tail = chunk[-16:]


def structural_positions(data):
    """Positions outside the tensor payloads (all positions if none)."""
    inside = bytearray(len(data))
    for start, stop in payload_spans(data):
        inside[start:stop] = b"\1" * (stop - start)
    positions = [i for i in range(len(data)) if not inside[i]]
    return positions or list(range(len(data)))


INTERESTING = (0x00, 0x01, 0x7F, 0x80, 0xFF, 0x08, 0x10, 0x12, 0x1A, 0x22, 0x3A, 0x42)


def mutate(rng, data, positions):
    """A mutant of `data` and a short description of the mutation."""
    data = bytearray(data)

    def position():
        return rng.choice(positions) if rng.random() < 0.85 else rng.randrange(len(data))

    kind = rng.choice(("flip", "flip", "set", "set", "truncate", "delete", "repeat"))
    if kind == "flip":
        changes = []
        for _ in range(rng.randint(1, 4)):
            at = position()
            data[at] ^= rng.randint(1, 255)
            changes.append(at)
        return bytes(data), "flip@" + ",".join(map(str, changes))
    if kind == "set":
        changes = []
        for _ in range(rng.randint(1, 3)):
            at = position()
            data[at] = rng.choice(INTERESTING)
            changes.append(at)
        return bytes(data), "set@" + ",".join(map(str, changes))
    if kind == "truncate":
        at = position()
        return bytes(data[:at]), "truncate@%d" % at
    at = position()
    length = rng.randint(1, 16)
    if kind == "delete":
        del data[at:at + length]
        return bytes(data), "delete@%d+%d" % (at, length)
    chunk = data[at:at + length]
    data[at:at] = chunk
    return bytes(data), "repeat@%d+%d" % (at, length)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--fusec", required=True)
    parser.add_argument("--models", required=True, nargs="+",
                        help="directories holding *.onnx, or .onnx files")
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=20)
    parser.add_argument("--memory-gb", type=float, default=8,
                        help="address-space limit of each fusec run (0: none; none "
                        "for an AddressSanitizer build either)")
    parser.add_argument("--work", help="a scratch directory (default: a temporary one)")
    parser.add_argument("--save", help="where to write failing mutants")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()

    models = []
    for entry in args.models:
        if os.path.isdir(entry):
            models += sorted(os.path.join(entry, f) for f in os.listdir(entry)
                             if f.endswith(".onnx"))
        else:
            models.append(entry)
    sources = []
    for path in models:
        with open(path, "rb") as f:
            data = f.read()
        sources.append((os.path.splitext(os.path.basename(path))[0], data,
                        structural_positions(data)))

    work = args.work or tempfile.mkdtemp(prefix="fusec-mutants-")
    os.makedirs(work, exist_ok=True)
    if args.save:
        os.makedirs(args.save, exist_ok=True)
    limit = 0 if is_sanitized(args.fusec) else int(args.memory_gb * (1 << 30))

    def limits():
        if limit:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    rng = random.Random(args.seed)
    failures = 0
    outcomes = {0: 0, 1: 0}
    for index in range(args.count):
        name, data, positions = sources[index % len(sources)]
        mutant, how = mutate(rng, data, positions)
        stem = "%s.%04d" % (name, index)
        path = os.path.join(work, stem + ".onnx")
        with open(path, "wb") as f:
            f.write(mutant)
        command = [args.fusec, path, "-o", os.path.join(work, "out.fir")]
        try:
            run = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 timeout=args.timeout, preexec_fn=limits)
            code, text = run.returncode, (run.stdout + run.stderr).decode("utf-8", "replace")
        except subprocess.TimeoutExpired:
            code, text = "timeout", ""
        bad = [w for w in BAD_WORDS if w in text]
        if code in outcomes:
            outcomes[code] += 1
        if code not in (0, 1) or bad:
            failures += 1
            first = text.strip().splitlines()[0] if text.strip() else ""
            why = ("signal %d" % -code if isinstance(code, int) and code < 0
                   else "exit %s" % code)
            print("FAIL %s (%s): %s; %s" % (stem, how, why, first[:200]))
            if args.save:
                with open(os.path.join(args.save, stem + ".onnx"), "wb") as f:
                    f.write(mutant)
                with open(os.path.join(args.save, stem + ".txt"), "w") as f:
                    f.write("mutation: %s\ncommand: fusec %s.onnx -o out.fir\nexit: %s\n\n%s"
                            % (how, stem, code, text))
        elif args.verbose:
            print("ok %s (%s): exit %d" % (stem, how, code))
        os.remove(path)
    print("%d mutants: %d failures (%d imported, %d rejected)"
          % (args.count, failures, outcomes[0], outcomes[1]))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
