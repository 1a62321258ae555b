//===- CUDA.h - CUDA C generation and NVRTC compilation ---------*- C++ -*-===//
//
// The CUDA backend: lowered kernels to one CUDA C translation unit (one
// `extern "C" __global__` function per launch), compiled in-process by
// NVRTC, which fusec loads with dlopen when it is first needed, so that
// fusec runs, and emits FIR and CUDA C, on machines without CUDA.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_TARGET_CUDA_H
#define FUSEC_TARGET_CUDA_H

#include "fusec/IR/Kernel.h"
#include "fusec/Runtime/Runtime.h"

#include <map>

namespace fusec {
namespace cuda {

/// The device functions every generated file starts with.
const char *getPrelude();

/// The entry-point name of `kernel`'s launch `index`: the kernel name
/// (characters other than letters, digits and `_` spelled `_xNN_`) followed
/// by `_kernel`, and by the launch index when the kernel has several.
std::string getEntryName(const Kernel &kernel, size_t index);

/// The parameters of every entry point of `kernel`, in order: its inputs,
/// outputs and internal (scratch) buffers as device pointers, then its
/// symbolic dims as 64-bit integers.
struct EntryParam {
  enum Kind { Input, Output, Scratch, Dim };
  Kind kind;
  std::string name; // the FIR buffer or dim name
  Type type;        // buffers only
};
std::vector<EntryParam> getEntryParams(const Kernel &kernel);

/// Static shared memory of a launch, in bytes.
int64_t getSharedBytes(const LLaunch &launch);

/// Whether `arch` (sm_NN) has the tensor-core instruction the tiles use,
/// mma.sync m16n8k16 with f16/bf16 operands: sm_80 and later.
bool hasTensorCoreMma(llvm::StringRef arch);
/// The first kernel of `module` whose launches use mma (nullptr if none).
const Kernel *findMmaKernel(const Module &module);

/// CUDA C for every lowered kernel of `module`. Returns false and sets
/// `error` when a kernel is not lowered.
/// `kernelLines`, when given, receives the first source line of each
/// kernel's code, so that compiler messages can name the kernel.
bool generateCUDA(const Module &module, std::string &source, std::string &error,
                  std::vector<std::pair<int, std::string>> *kernelLines = nullptr);
/// The same for some of a module's kernels.
bool generateCUDA(const std::vector<const Kernel *> &kernels, std::string &source,
                  std::string &error,
                  std::vector<std::pair<int, std::string>> *kernelLines = nullptr);
/// The kernel whose code holds line `line` of the generated source.
std::string kernelAtLine(const std::vector<std::pair<int, std::string>> &kernelLines, int line);

/// What ptxas reported for one entry point.
struct ResourceUsage {
  int64_t registers = 0, spillStoreBytes = 0, spillLoadBytes = 0, sharedBytes = 0,
          stackBytes = 0;
};

struct CompileOptions {
  std::string arch = "sm_90";
  std::string cudaPath; // --cuda-path; else $CUDA_HOME, $CUDA_PATH, /usr/local/cuda
  bool cubin = true;    // also produce a cubin (else PTX only)
  bool relocatable = false; // -rdc=true, for linking with nvJitLink
};

struct CompileResult {
  std::string ptx;
  std::string cubin;
  std::string log;
  std::map<std::string, ResourceUsage> usage; // by entry name
  bool invalidOption = false; // NVRTC refused an option (an unsupported --arch)
};

/// The CUDA installation to use (headers, libnvrtc), or "" when none is
/// found; `tried` lists the places looked at.
std::string findCudaPath(const std::string &flag, std::string &tried);

/// Compiles `source` with NVRTC. Returns false and sets `error` (the
/// compile log, or why NVRTC could not be loaded).
bool compileWithNVRTC(const std::string &source, const std::string &name,
                      const CompileOptions &options, CompileResult &result,
                      std::string &error);

/// Compiles every kernel of a lowered module for `options.arch`: one NVRTC
/// program, or, for a module with many kernels, several compiled in
/// parallel (llvm::ThreadPool) and linked into one cubin by nvJitLink
/// (PTX output always comes from one program). On failure `error` says
/// why; `codegenBug` tells a compile error in generated code (a bug of
/// fusec, naming the kernel) from a missing CUDA installation.
bool compileModule(const Module &module, const std::string &name, const CompileOptions &options,
                   CompileResult &result, std::string &error, bool &codegenBug);

/// Parses `ptxas info` lines of an NVRTC log (-Xptxas -v) by function.
std::map<std::string, ResourceUsage> parsePtxasLog(llvm::StringRef log);

//===----------------------------------------------------------------------===//
// Launch plans and host launchers (LaunchPlan.cpp, Launcher.cpp)
//===----------------------------------------------------------------------===//

/// What the host does to run a lowered module's entry function: the tables
/// of fusec_rt::ModelDesc (include/fusec/Runtime/Runtime.h), owned. A slot's
/// dims are >= 0 static sizes or -1 - k for the entry's symbolic dim k.
struct LaunchPlan {
  struct Slot {
    int kind = 0; // fusec_rt::SlotDesc::Kind
    int index = 0;
    DType dtype = DType::f32;
    std::vector<int64_t> dims;
    int firstStep = -1, lastStep = -1;
    std::string name; // the FIR value (or kernel buffer) it holds
  };
  struct Step {
    int kind = 0; // fusec_rt::StepDesc::Kind
    int entry = 0;
    int threads = 0;
    int64_t sharedBytes = 0;
    std::vector<int64_t> grid; // postfix pairs
    std::string gridText;      // the grid size as FIR prints it
    std::vector<int> args;
    std::vector<int64_t> dims;
    int from = 0, to = 0;
    std::string kernel; // Launch: the FIR kernel
  };
  std::string name;
  std::vector<std::string> dimNames;
  std::vector<Slot> slots;
  std::vector<Step> steps;
  std::vector<int> inputSlots, outputSlots;
  std::vector<std::string> inputNames;
  std::vector<std::string> entryNames;
  std::vector<TensorData> constants;
};

/// The launcher runtime's name for `dtype`.
fusec_rt::DType toRuntimeDType(DType dtype);

/// Builds the plan of `entry` (calls of graph functions are inlined).
/// Returns false and sets `error` when the module is not fully lowered.
bool buildLaunchPlan(const Module &module, const Function &entry, LaunchPlan &plan,
                     std::string &error);

/// A fusec_rt::ModelDesc over a plan, to run it in-process (fusec-run
/// --device=cuda, tests). The plan must outlive it, unchanged.
class ModelTables {
public:
  explicit ModelTables(const LaunchPlan &plan);
  const fusec_rt::ModelDesc &getDesc() const { return desc; }

private:
  fusec_rt::ModelDesc desc{};
  std::vector<int64_t> slotDims;
  std::vector<fusec_rt::SlotDesc> slots;
  std::vector<fusec_rt::StepDesc> steps;
  std::vector<const char *> dimNames, inputNames, entryNames;
  std::vector<const unsigned char *> constantData;
  std::vector<int64_t> constantBytes;
};

/// The manifest (nlohmann/json text): kernels with launch dimensions,
/// buffers with dtypes, shapes and sizes, inputs, outputs, steps.
std::string writeManifest(const LaunchPlan &plan, const std::string &arch);

/// The launcher's header and source; `image` (a cubin) is embedded.
struct LauncherFiles {
  std::string header, source;
};
LauncherFiles writeLauncher(const LaunchPlan &plan, const std::string &headerName,
                            const std::string &image);

//===----------------------------------------------------------------------===//
// Running on a GPU in-process (DeviceRun.cpp; fusec-run --device=cuda)
//===----------------------------------------------------------------------===//

struct DeviceRunOptions {
  std::string cudaPath;
  bool bench = false;
  int warmup = 10, runs = 100;
  int rotations = 4; // input sets cycled through while timing (cold caches)
};

struct DeviceRunResult {
  std::string deviceName, arch;
  std::vector<TensorData> outputs;
  std::vector<double> timesMs; // --bench: one per timed run
};

/// Compiles the lowered `module` for the first GPU, runs `entry` on
/// `inputs` through the launcher engine and copies the outputs back. The
/// driver (libcuda.so.1) is loaded with dlopen, so that fusec-run starts on
/// machines without one. Returns false and sets `error` on any failure.
bool runOnDevice(const Module &module, const Function &entry,
                 const std::vector<TensorData> &inputs, const DeviceRunOptions &options,
                 DeviceRunResult &result, std::string &error);

/// fusec-run --device=emulator: the module's CUDA C compiled by the host
/// C++ compiler ($CXX, else c++) with fusec's emulator header
/// (include/fusec/Runtime/Emulator.h) and run on the CPU through the
/// launcher engine, in a child process (a crash of a kernel is an error).
/// How one emulated run schedules (fc_emu::Flags in Emulator.h, which the
/// host compiler sees instead of this header).
enum EmulatorFlags : int { EmulateReverseOrder = 1, EmulateEarlyCopies = 2 };

/// "threads in order, cp.async landing at its wait" and the like.
std::string describeEmulatorVariant(int flags);

/// The directory of the emulator's precompiled-header cache
/// (docs/emulator.md): $FUSEC_CACHE_DIR, else $XDG_CACHE_HOME/fusec, else
/// $HOME/.cache/fusec; "" when FUSEC_CACHE_DIR is set empty (the cache is
/// off) or none of them is set.
std::string getEmulatorCacheDirectory();

struct EmulatorOptions {
  std::string cudaPath; // the CUDA headers (cuda_fp16.h) the build needs
  /// One run per entry, each with these EmulatorFlags.
  std::vector<int> variants = {0, EmulateReverseOrder | EmulateEarlyCopies};
};

struct EmulatorResult {
  std::vector<std::vector<TensorData>> outputs; // one set per variant
  int64_t launches = 0, libraryCalls = 0;       // the steps of one run
};

/// Builds and runs `entry` of the lowered `module` on `inputs` as
/// EmulatorOptions says. Returns false and sets `error` on any failure
/// (the host compiler's messages, a kernel's deadlock or crash).
bool runOnEmulator(const Module &module, const Function &entry,
                   const std::vector<TensorData> &inputs, const EmulatorOptions &options,
                   EmulatorResult &result, std::string &error);

} // namespace cuda
} // namespace fusec

#endif
