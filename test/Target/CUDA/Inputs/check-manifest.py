"""Summarizes a launcher manifest and checks that every kernel entry it
names is a symbol of the cubin (an ELF file): prints one line per kernel."""
import json
import sys

manifest = json.load(open(sys.argv[1]))
image = open(sys.argv[2], "rb").read()
assert image[:4] == b"\x7fELF", "the cubin is not an ELF file"
print("module %s: %d kernel(s), %d input(s), %d output(s)" % (
    manifest["module"], len(manifest["kernels"]), len(manifest["inputs"]),
    len(manifest["outputs"])))
for kernel in manifest["kernels"]:
    print("%s grid %s block %d" % (kernel["entry"], kernel["grid"], kernel["block"]))
found = all(kernel["entry"].encode() + b"\0" in image for kernel in manifest["kernels"])
print("entries found in the cubin: %s" % ("yes" if found else "no"))
