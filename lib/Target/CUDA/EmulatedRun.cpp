//===- EmulatedRun.cpp - The generated CUDA C, run on the CPU -------------===//
//
// fusec-run --device=emulator: what --device=cuda does (DeviceRun.cpp),
// with the GPU replaced by fusec's emulator, so that the CUDA C, the launch
// plan and the launcher engine run on machines without a GPU:
//   1. generate the module's CUDA C and the entry's launch plan, exactly as
//      for a GPU;
//   2. write it with the emulator header (include/fusec/Runtime/Emulator.h)
//      and a table of its kernels into a scratch directory, and build a
//      shared object with the host C++ compiler ($CXX, else c++), the
//      header precompiled once and cached (EmulatorHeaderCache.cpp);
//   3. fork: the child loads it and runs the entry through fusec_rt::Engine
//      once per variant, with a driver table whose memory is host memory
//      (each buffer filled with 0xff bytes, which read as NaN or -1, and
//      followed by an unmapped page) and whose launches call the emulator;
//      library steps (cuBLASLt) compute the same matmul and epilogue on the
//      host, in f32 and rounded once;
//   4. the parent reads the outputs back, or reports the child's error, or
//      the kernel that was running when it crashed.
//
//===----------------------------------------------------------------------===//
#include "EmulatorHeaderCache.h"

#include "fusec/Support/FileIO.h"
#include "fusec/Support/Support.h"
#include "fusec/Target/CUDA.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

#include <cmath>
#include <csignal>
#include <cstring>
#include <deque>
#include <dlfcn.h>
#include <map>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace fusec;
using namespace fusec::cuda;

namespace fusec::cuda {
const char *getEmulatorText(); // EmulatorText.cpp, generated from Emulator.h
}

namespace {

using LaunchFunction = int (*)(const char *, const unsigned *, const unsigned *, void **, int,
                               char *, int);

/// What the child's driver table works on (one per child process).
struct EmulatedDevice {
  LaunchFunction launch = nullptr;
  int flags = 0;
  std::string error;
  std::deque<std::string> functionNames;
  std::map<unsigned long long, std::pair<void *, size_t>> mappings;
  char *runningKernel = nullptr; // shared with the parent: for a crash report
};
EmulatedDevice *device = nullptr;

int emuModuleLoad(void **module, const void *) { return *module = device, 0; }
int emuModuleUnload(void *) { return 0; }
int emuGetFunction(void **function, void *, const char *name) {
  device->functionNames.emplace_back(name);
  *function = const_cast<char *>(device->functionNames.back().c_str());
  return 0;
}

/// Host memory standing in for device memory: 16-byte aligned, ending at
/// an unmapped page (an access past the end faults), filled with 0xff.
int emuMemAlloc(unsigned long long *pointer, size_t bytes) {
  size_t page = size_t(sysconf(_SC_PAGESIZE)), used = (bytes + 15) / 16 * 16;
  size_t dataBytes = (used + page - 1) / page * page, total = dataBytes + 2 * page;
  void *base = mmap(nullptr, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED)
    return device->error = "out of memory", 2;
  char *data = static_cast<char *>(base) + page;
  if (mprotect(data, dataBytes, PROT_READ | PROT_WRITE) != 0)
    return munmap(base, total), device->error = "out of memory", 2;
  char *start = data + dataBytes - used;
  std::memset(start, 0xff, used);
  *pointer = reinterpret_cast<unsigned long long>(start);
  device->mappings[*pointer] = {base, total};
  return 0;
}
int emuMemFree(unsigned long long pointer) {
  auto found = device->mappings.find(pointer);
  if (found == device->mappings.end())
    return device->error = "cuMemFree of an address no cuMemAlloc returned", 1;
  munmap(found->second.first, found->second.second);
  device->mappings.erase(found);
  return 0;
}
int emuCopyIn(unsigned long long to, const void *from, size_t bytes) {
  if (bytes)
    std::memcpy(reinterpret_cast<void *>(to), from, bytes);
  return 0;
}
int emuCopy(unsigned long long to, unsigned long long from, size_t bytes, void *) {
  std::memmove(reinterpret_cast<void *>(to), reinterpret_cast<const void *>(from), bytes);
  return 0;
}
int emuLaunch(void *function, unsigned gridX, unsigned gridY, unsigned gridZ, unsigned blockX,
              unsigned blockY, unsigned blockZ, unsigned, void *, void **params, void **) {
  const char *name = static_cast<const char *>(function);
  snprintf(device->runningKernel, 256, "%s", name);
  unsigned grid[3] = {gridX, gridY, gridZ}, block[3] = {blockX, blockY, blockZ};
  char problem[1024] = {0};
  if (device->launch(name, grid, block, params, device->flags, problem, sizeof problem) != 0)
    return device->error = std::string("kernel '") + name + "': " + problem, 1;
  return 0;
}
int emuErrorString(int, const char **text) { return *text = device->error.c_str(), 0; }
int emuSynchronize() { return 0; }

size_t byteSize(const TensorData &tensor) {
  return size_t(tensor.getNumElements() * dtypeBytes(tensor.getDType()));
}

/// `count` elements of device memory as floats (TensorData reads the dtype).
std::vector<float> readFloats(unsigned long long address, int64_t count, DType dtype) {
  TensorData data(dtype, {count});
  if (count > 0)
    std::memcpy(data.data(), reinterpret_cast<const void *>(address),
                size_t(count * dtypeBytes(dtype)));
  std::vector<float> values(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    values[size_t(i)] = float(data.get(i));
  return values;
}

/// cuBLASLt's matmul (Runtime.h, MatmulCall) on the host: f32 accumulation,
/// the epilogue in f32 (GELU is cuBLASLt's tanh form), rounded once.
int emuMatmul(void *, const fusec_rt::MatmulCall &call, void *) {
  using E = fusec_rt::MatmulCall::Epilogue;
  bool bias = call.epilogue == E::Bias || call.epilogue == E::ReluBias ||
              call.epilogue == E::GeluBias;
  bool relu = call.epilogue == E::Relu || call.epilogue == E::ReluBias;
  bool gelu = call.epilogue == E::Gelu || call.epilogue == E::GeluBias;
  DType dtype = call.dtype == fusec_rt::DType::f16    ? DType::f16
                : call.dtype == fusec_rt::DType::bf16 ? DType::bf16
                                                      : DType::f32;
  std::vector<float> a = readFloats(call.a, call.m * call.k, dtype),
                     b = readFloats(call.b, call.k * call.n, dtype),
                     biases = bias ? readFloats(call.bias, call.n, dtype) : std::vector<float>();
  TensorData d(dtype, {call.m * call.n});
  for (int64_t i = 0; i < call.m; ++i)
    for (int64_t j = 0; j < call.n; ++j) {
      float sum = 0;
      for (int64_t k = 0; k < call.k; ++k)
        sum += a[size_t(i * call.k + k)] *
               b[size_t(call.transposeB ? j * call.k + k : k * call.n + j)];
      if (bias)
        sum += biases[size_t(j)];
      if (relu)
        sum = sum > 0 ? sum : 0;
      if (gelu)
        sum = 0.5f * sum *
              (1.0f + std::tanh(0.79788456080286536f * (sum + 0.044715f * sum * sum * sum)));
      d.set(i * call.n + j, sum); // the one rounding to the dtype
    }
  std::memcpy(reinterpret_cast<void *>(call.d), d.data(),
              size_t(d.getNumElements() * dtypeBytes(dtype)));
  return 0;
}
void *emuLibraryCreate() { return device; }
void emuLibraryDestroy(void *) {}
const char *emuLibraryError(void *) { return device->error.c_str(); }

std::string inDirectory(const std::string &directory, const llvm::Twine &name) {
  llvm::SmallString<256> path(directory);
  llvm::sys::path::append(path, name);
  return std::string(path);
}

std::string outputPath(const std::string &directory, size_t variant, size_t output) {
  return inDirectory(directory, "v" + llvm::Twine(variant) + "_out" + llvm::Twine(output) +
                                    ".bin");
}

/// The child's work: every variant, its outputs into `directory`. Returns
/// "" or what went wrong.
std::string runVariants(const std::string &sharedObject, const ModelTables &tables, const std::vector<TensorData> &inputs,
                        const std::vector<TensorData> &outputs, const EmulatorOptions &options,
                        const std::string &directory, EmulatedDevice &emulated) {
  void *handle = dlopen(sharedObject.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    return std::string("cannot load the emulated module: ") + dlerror();
  emulated.launch = reinterpret_cast<LaunchFunction>(dlsym(handle, "fc_emu_launch"));
  if (!emulated.launch)
    return "the emulated module has no fc_emu_launch";
  fusec_rt::Driver driver{emuModuleLoad, emuModuleUnload, emuGetFunction, emuMemAlloc,
                          emuMemFree,    emuCopyIn,       emuCopy,        emuLaunch,
                          emuErrorString, emuSynchronize};
  fusec_rt::Library library{emuLibraryCreate, emuLibraryDestroy, emuMatmul, emuLibraryError};
  for (size_t v = 0; v < options.variants.size(); ++v) {
    emulated.flags = options.variants[v];
    // A fresh engine, workspace and outputs: nothing a variant wrote can
    // stand in for what another failed to write.
    fusec_rt::Engine engine(tables.getDesc(), driver, &library);
    if (engine.load(nullptr) != fusec_rt::Ok)
      return engine.lastError();
    std::vector<fusec_rt::TensorRef> inputRefs, outputRefs;
    auto allocate = [&](const TensorData &tensor, bool upload,
                        std::vector<fusec_rt::TensorRef> &refs) {
      fusec_rt::TensorRef ref{0, toRuntimeDType(tensor.getDType()), tensor.getShape()};
      if (emuMemAlloc(&ref.data, byteSize(tensor)) != 0)
        return false;
      // An empty tensor has no storage to copy from (memcpy's null source).
      if (upload && byteSize(tensor))
        std::memcpy(reinterpret_cast<void *>(ref.data), tensor.data(), byteSize(tensor));
      refs.push_back(ref);
      return true;
    };
    for (const TensorData &tensor : inputs)
      if (!allocate(tensor, /*upload=*/true, inputRefs))
        return emulated.error;
    for (const TensorData &tensor : outputs)
      if (!allocate(tensor, /*upload=*/false, outputRefs))
        return emulated.error;
    if (engine.run(inputRefs, outputRefs, nullptr) != fusec_rt::Ok)
      return engine.lastError();
    for (size_t o = 0; o < outputRefs.size(); ++o) {
      std::string problem = writeFile(
          outputPath(directory, v, o),
          llvm::StringRef(reinterpret_cast<const char *>(outputRefs[o].data),
                          byteSize(outputs[o])));
      if (!problem.empty())
        return problem;
    }
  }
  return "";
}

/// Builds the shared object; "" or the compiler's complaint.
std::string buildLibrary(const Module &module, const LaunchPlan &plan,
                         const std::string &cudaPath, const std::string &directory,
                         std::string &library) {
  std::string source, error;
  if (!generateCUDA(module, source, error))
    return error;
  auto path = [&](const char *name) { return inDirectory(directory, name); };
  std::string table = "#include \"fusec_emulator.h\"\n#include \"module.cu\"\n\nFC_EMU_KERNELS(";
  for (size_t e = 0; e < plan.entryNames.size(); ++e)
    table += std::string(e ? ",\n" : "\n") + "  {\"" + plan.entryNames[e] +
             "\", &fc_emu::invoke<&" + plan.entryNames[e] + ">}";
  table += std::string(plan.entryNames.empty() ? "\n" : ",\n") + "  {nullptr, nullptr})\n";
  for (auto [name, text] : {std::pair<const char *, std::string>{"fusec_emulator.h",
                                                                 getEmulatorText()},
                            {"module.cu", source},
                            {"module_emu.cpp", table}})
    if (std::string problem = writeFile(path(name), text); !problem.empty())
      return problem;
  const char *fromEnvironment = getenv("CXX");
  llvm::ErrorOr<std::string> compiler =
      llvm::sys::findProgramByName(fromEnvironment && *fromEnvironment ? fromEnvironment : "c++");
  if (!compiler)
    return "no host C++ compiler (c++, or $CXX) to build the emulated module";
  library = path("module_emu.so");
  std::string input = path("module_emu.cpp"), log = path("compile.log");
  std::vector<std::string> flags = {"-std=c++17", "-O1", "-fPIC", "-fno-strict-aliasing", "-w",
                                    // _longjmp between fibers' stacks is what a fortified
                                    // longjmp forbids.
                                    "-U_FORTIFY_SOURCE", "-I" + cudaPath + "/include"};
  // The precompiled header is a shortcut (EmulatorHeaderCache.cpp): a build
  // with it that fails is retried from the text, whose messages count.
  std::string cached = getCachedEmulatorHeader(*compiler, flags, cudaPath, getEmulatorText()),
              message;
  int status = 1;
  if (!cached.empty())
    status = runHostCompiler(*compiler, flags,
                             {"-include", cached, "-shared", input, "-o", library}, log, &message);
  if (status != 0)
    status = runHostCompiler(*compiler, flags, {"-shared", input, "-o", library}, log, &message);
  if (status == 0)
    return "";
  if (status < 0)
    return "cannot run the host compiler (" + *compiler + "): " + message;
  std::string readError;
  std::unique_ptr<llvm::MemoryBuffer> output = readFile(log, readError);
  std::string text = output ? output->getBuffer().take_front(4000).rtrim().str() : "";
  return "the host compiler (" + *compiler + ") rejected the generated CUDA C (exit status " +
         std::to_string(status) + ")" + (text.empty() ? "" : ":\n" + text);
}

} // namespace

std::string cuda::describeEmulatorVariant(int flags) {
  return std::string(flags & EmulateReverseOrder ? "threads in reverse order"
                                                 : "threads in order") +
         (flags & EmulateEarlyCopies ? ", cp.async landing when issued"
                                     : ", cp.async landing at its wait");
}

bool cuda::runOnEmulator(const Module &module, const Function &entry,
                         const std::vector<TensorData> &inputs, const EmulatorOptions &options,
                         EmulatorResult &result, std::string &error) {
  LaunchPlan plan;
  if (!buildLaunchPlan(module, entry, plan, error))
    return false;
  std::string tried, cudaPath = findCudaPath(options.cudaPath, tried);
  if (cudaPath.empty())
    return error = "no CUDA toolkit for the emulated build's headers (tried " + tried + ")",
           false;
  llvm::SmallString<256> scratch;
  if (std::error_code ec = llvm::sys::fs::createUniqueDirectory("fusec-emulator", scratch))
    return error = "cannot create a scratch directory: " + ec.message(), false;
  std::string directory(scratch), library;
  auto finish = [&](bool ok) {
    llvm::sys::fs::remove_directories(directory);
    return ok;
  };
  if (std::string problem = buildLibrary(module, plan, cudaPath, directory, library);
      !problem.empty())
    return error = problem, finish(false);

  // The outputs, shaped as the engine binds the inputs' dims (the child
  // fills them in; each variant's arrive as files).
  ModelTables tables(plan);
  std::vector<fusec_rt::TensorRef> inputShapes;
  for (const TensorData &data : inputs)
    inputShapes.push_back({16, toRuntimeDType(data.getDType()), data.getShape()});
  std::vector<std::vector<int64_t>> outputShapes;
  fusec_rt::Engine binder(tables.getDesc(), fusec_rt::Driver{});
  if (binder.outputShapes(inputShapes, outputShapes) != fusec_rt::Ok)
    return error = binder.lastError(), finish(false);
  std::vector<TensorData> outputs;
  for (size_t o = 0; o < outputShapes.size(); ++o)
    outputs.emplace_back(plan.slots[size_t(plan.outputSlots[o])].dtype, outputShapes[o]);

  // The running kernel's name, where the parent can read it after a crash.
  void *shared = mmap(nullptr, 256, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED)
    return error = "out of memory", finish(false);
  char *runningKernel = static_cast<char *>(shared);
  runningKernel[0] = 0;
  llvm::outs().flush();
  llvm::errs().flush();
  pid_t child = fork();
  if (child == 0) {
    EmulatedDevice emulated;
    emulated.runningKernel = runningKernel;
    device = &emulated;
    std::string problem =
        runVariants(library, tables, inputs, outputs, options, directory, emulated);
    if (!problem.empty())
      writeFile(inDirectory(directory, "error.txt"), problem);
    _exit(problem.empty() ? 0 : 1);
  }
  int status = 0;
  if (child < 0 || waitpid(child, &status, 0) != child) {
    munmap(shared, 256);
    return error = std::string("cannot run the emulator: ") + strerror(errno), finish(false);
  }
  std::string kernel(runningKernel);
  munmap(shared, 256);
  if (WIFSIGNALED(status))
    return error = "kernel '" + kernel + "' crashed on the emulator (" +
                   strsignal(WTERMSIG(status)) +
                   "): an access outside its buffers (each is followed by an unmapped page)",
           finish(false);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string readError;
    std::unique_ptr<llvm::MemoryBuffer> text =
        readFile(inDirectory(directory, "error.txt"), readError);
    return error = text ? text->getBuffer().str() : "the emulator failed", finish(false);
  }

  for (size_t v = 0; v < options.variants.size(); ++v) {
    result.outputs.push_back(outputs);
    for (size_t o = 0; o < outputs.size(); ++o) {
      TensorData &data = result.outputs.back()[o];
      std::string readError;
      std::unique_ptr<llvm::MemoryBuffer> bytes = readFile(outputPath(directory, v, o), readError);
      if (!bytes || bytes->getBufferSize() != byteSize(data))
        return error = "the emulator's output " + std::to_string(o) + " is missing", finish(false);
      if (byteSize(data))
        std::memcpy(data.data(), bytes->getBufferStart(), byteSize(data));
    }
  }
  for (const LaunchPlan::Step &step : plan.steps) {
    result.launches += step.kind == fusec_rt::StepDesc::Launch;
    result.libraryCalls += step.kind == fusec_rt::StepDesc::Library;
  }
  return finish(true);
}
