# -*- Python -*-
# lit configuration for fusec: FileCheck tests of the IR, diagnostics, the
# driver's flags, the samples and the commands shown in the docs.
#
# Run through ctest (scripts/test.sh), or by hand:
#   python3 /usr/lib/llvm-14/build/utils/lit/lit.py -sv \
#       --param fusec_bin_dir=build/bin test samples
import os
import lit.formats

config.name = "fusec"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".fir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.excludes = ["Inputs", "expect-exit.py", "unit", "fuzz", "build", "build-asan",
                   "include", "lib", "tools", "scripts", "bench", "CMakeLists.txt"]

bin_dir = lit_config.params.get("fusec_bin_dir")
if not bin_dir:
    lit_config.fatal("pass --param fusec_bin_dir=<dir holding fusec>")
bin_dir = os.path.abspath(bin_dir)
config.test_exec_root = os.path.join(os.path.dirname(bin_dir), "lit-out")

llvm_bin = "/usr/lib/llvm-14/bin"
config.environment["PATH"] = os.pathsep.join(
    [bin_dir, llvm_bin, config.environment.get("PATH", os.environ["PATH"])])
config.environment["FILECHECK_OPTS"] = "-enable-var-scope --allow-unused-prefixes=false"
for name in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "HOME"):
    if name in os.environ:
        config.environment[name] = os.environ[name]
# The emulator's precompiled header (docs/emulator.md): one cache per build
# tree, built by the first emulated test and shared by the rest.
config.environment["FUSEC_CACHE_DIR"] = os.path.join(config.test_exec_root, "cache")

# The sanitizer run (ctest's lit-asan sets ASAN_OPTIONS): ASan reserves
# terabytes of address space, so tests under `ulimit -v` say UNSUPPORTED: asan.
if "ASAN_OPTIONS" in os.environ:
    config.available_features.add("asan")

# /dev/full (every write fails: No space left on device), for write errors.
if os.path.exists("/dev/full"):
    config.available_features.add("dev-full")

config.substitutions.append(("%fusec_bin_dir", bin_dir))
config.substitutions.append(("%repo", config.test_source_root))
config.substitutions.append(("%python", "/usr/bin/python3"
                             if os.path.exists("/usr/bin/python3") else "python3"))
config.substitutions.append(("%expect-exit", "%s %s" % (
    "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else "python3",
    os.path.join(config.test_source_root, "test", "expect-exit.py"))))

# The CUDA toolkit (NVRTC, headers, the driver-API stub): tests that compile
# PTX/cubin or launchers say `REQUIRES: cuda`. fusec itself finds CUDA at
# run time the same way (--cuda-path, $CUDA_HOME, $CUDA_PATH, /usr/local/cuda).
cuda_home = next((p for p in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"),
                              "/usr/local/cuda")
                  if p and os.path.exists(os.path.join(p, "include", "cuda_fp16.h"))), None)
for name in ("CUDA_HOME", "CUDA_PATH"):
    if name in os.environ:
        config.environment[name] = os.environ[name]
if cuda_home and any(f.startswith("libnvrtc.so")
                     for f in os.listdir(os.path.join(cuda_home, "lib64"))):
    config.available_features.add("cuda")
    config.substitutions.append(("%cuda", cuda_home))
else:
    lit_config.warning("no CUDA toolkit found: tests that need NVRTC are UNSUPPORTED")

# A GPU driver: tests that run kernels say `REQUIRES: cuda-driver`; the
# error path of machines without one says `UNSUPPORTED: cuda-driver`.
try:
    import ctypes
    ctypes.CDLL("libcuda.so.1")
    config.available_features.add("cuda-driver")
except OSError:
    pass

# ONNX Runtime (onnxruntime-node, installed into build/ort by
# test/Import/ort/install.sh, which scripts/test.sh runs): the second
# reference of the model tests. Where it could not be installed those tests
# are UNSUPPORTED (reported as such, never as passed).
import shutil
import subprocess
ort_dir = lit_config.params.get("ort_dir",
                                os.path.join(config.test_source_root, "build", "ort"))
if shutil.which("node") and os.path.exists(
        os.path.join(ort_dir, "node_modules", "onnxruntime-node", "package.json")):
    config.available_features.add("ort")
    config.substitutions.append(("%ort_dir", ort_dir))
else:
    lit_config.warning("onnxruntime-node not installed in %s: the ONNX Runtime checks "
                       "are UNSUPPORTED" % ort_dir)

# ONNX's backend node tests (Debian's libonnx-testdata) and python3-onnx to
# read their .pb files.
python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else "python3"
if os.path.isdir("/usr/share/libonnx-testdata/data/node") and subprocess.run(
        [python, "-c", "import onnx"], stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL).returncode == 0:
    config.available_features.add("onnx-testdata")
