//===- CompileModule.cpp - A lowered module to one cubin ------------------===//
//
// Small modules are one NVRTC program. A module with many kernels (and a
// cubin to produce) is cut into chunks compiled in parallel on an
// llvm::ThreadPool as relocatable device code, then linked into one cubin
// by nvJitLink (loaded with dlopen, like NVRTC). The prelude's functions
// have internal linkage, so every chunk carries its own copy; the entry
// points are extern "C" and unique. When nvJitLink cannot be loaded the
// module is compiled as one program, serially.
//
// A compile error in generated code is a bug of fusec: the message names
// the kernel whose lines the compiler rejected.
//
//===----------------------------------------------------------------------===//
#include "fusec/Target/CUDA.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/ThreadPool.h"

#include <dlfcn.h>
#include <mutex>

#define DEBUG_TYPE "cuda"

using namespace fusec;
using namespace fusec::cuda;

namespace {

/// Kernels per chunk below which a module is compiled as one program.
constexpr size_t kKernelsPerChunk = 4;

struct NvJitLink {
  void *handle = nullptr;
  int (*create)(void **, uint32_t, const char **) = nullptr;
  int (*destroy)(void **) = nullptr;
  int (*addData)(void *, int, const void *, size_t, const char *) = nullptr;
  int (*complete)(void *) = nullptr;
  int (*cubinSize)(void *, size_t *) = nullptr;
  int (*cubin)(void *, void *) = nullptr;
  int (*errorLogSize)(void *, size_t *) = nullptr;
  int (*errorLog)(void *, char *) = nullptr;

  bool load(const std::string &cudaPath) {
    for (const char *name : {"libnvJitLink.so", "libnvJitLink.so.13", "libnvJitLink.so.12"}) {
      llvm::SmallString<256> path(cudaPath);
      llvm::sys::path::append(path, "lib64", name);
      if ((handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) ||
          (handle = dlopen(name, RTLD_NOW | RTLD_LOCAL)))
        break;
    }
    if (!handle)
      return false;
    auto bind = [&](auto &fn, const char *symbol) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(handle, symbol));
      return fn != nullptr;
    };
    return bind(create, "nvJitLinkCreate") && bind(destroy, "nvJitLinkDestroy") &&
           bind(addData, "nvJitLinkAddData") && bind(complete, "nvJitLinkComplete") &&
           bind(cubinSize, "nvJitLinkGetLinkedCubinSize") &&
           bind(cubin, "nvJitLinkGetLinkedCubin") &&
           bind(errorLogSize, "nvJitLinkGetErrorLogSize") &&
           bind(errorLog, "nvJitLinkGetErrorLog");
  }
};

NvJitLink *getNvJitLink(const std::string &cudaPath) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<NvJitLink>> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  auto &linker = loaded[cudaPath];
  if (!linker) {
    linker = std::make_unique<NvJitLink>();
    if (!linker->load(cudaPath))
      linker->handle = nullptr;
  }
  return linker->handle ? linker.get() : nullptr;
}

/// One program's source and the kernels it holds.
struct Chunk {
  std::vector<const Kernel *> kernels;
  std::string source;
  std::vector<std::pair<int, std::string>> kernelLines;
  CompileResult result;
  std::string error;
  bool ok = false;
};

/// The error for a failed program: the kernel at the first error line.
std::string describeFailure(const Chunk &chunk, const std::string &arch) {
  if (chunk.result.log.empty() || chunk.result.invalidOption)
    return chunk.error; // NVRTC could not run, or refused the options
  llvm::Regex lineRef("\\.cu\\(([0-9]+)\\): error");
  llvm::SmallVector<llvm::StringRef, 2> match;
  std::string kernel;
  int line = 0;
  if (lineRef.match(chunk.result.log, &match) && !match[1].getAsInteger(10, line))
    kernel = kernelAtLine(chunk.kernelLines, line);
  return "internal error: NVRTC rejected the CUDA code generated for " +
         (kernel.empty() ? std::string("the module") : "kernel '@" + kernel + "'") + " (" +
         arch + "); this is a bug in fusec's code generator:\n" + chunk.result.log;
}

} // namespace

bool cuda::compileModule(const Module &module, const std::string &name,
                         const CompileOptions &options, CompileResult &result,
                         std::string &error, bool &codegenBug) {
  codegenBug = false;
  std::vector<const Kernel *> kernels;
  for (const auto &kernel : module.kernels)
    kernels.push_back(kernel.get());
  std::string tried;
  std::string cudaPath = findCudaPath(options.cudaPath, tried);
  unsigned threads = llvm::hardware_concurrency().compute_thread_count();
  size_t chunkCount = std::min<size_t>(threads, kernels.size() / kKernelsPerChunk);
  NvJitLink *linker = nullptr;
  if (options.cubin && chunkCount > 1 && !cudaPath.empty())
    linker = getNvJitLink(cudaPath);
  if (!linker)
    chunkCount = 1;

  FUSEC_DEBUG("compiling " + std::to_string(kernels.size()) + " kernel(s) as " +
              std::to_string(chunkCount) + " NVRTC program(s)" +
              (chunkCount > 1 ? " in parallel, linked by nvJitLink" : ""));
  std::vector<Chunk> chunks(chunkCount);
  for (size_t i = 0; i < kernels.size(); ++i) // round robin: big and small kernels mix
    chunks[i % chunkCount].kernels.push_back(kernels[i]);
  for (Chunk &chunk : chunks)
    if (!generateCUDA(chunk.kernels, chunk.source, error, &chunk.kernelLines))
      return false;
  CompileOptions chunkOptions = options;
  chunkOptions.relocatable = chunkCount > 1;
  auto compileChunk = [&](Chunk &chunk, size_t index) {
    std::string program = chunkCount > 1 ? name + "." + std::to_string(index) : name;
    chunk.ok = compileWithNVRTC(chunk.source, program + ".cu", chunkOptions, chunk.result,
                                chunk.error);
  };
  if (chunkCount == 1) {
    compileChunk(chunks[0], 0);
  } else {
    llvm::ThreadPool pool(llvm::hardware_concurrency(unsigned(chunkCount)));
    for (size_t i = 0; i < chunks.size(); ++i)
      pool.async([&, i] { compileChunk(chunks[i], i); });
    pool.wait();
  }
  for (const Chunk &chunk : chunks)
    if (!chunk.ok) {
      codegenBug = !chunk.result.log.empty() && !chunk.result.invalidOption;
      error = describeFailure(chunk, options.arch);
      return false;
    }
  if (chunkCount == 1) {
    result = std::move(chunks[0].result);
    return true;
  }
  // Link the relocatable cubins into one.
  std::string archFlag = "-arch=" + options.arch;
  const char *linkOptions[] = {archFlag.c_str()};
  void *link = nullptr;
  if (linker->create(&link, 1, linkOptions) != 0) {
    error = "nvJitLinkCreate failed";
    return false;
  }
  bool linked = true;
  for (size_t i = 0; linked && i < chunks.size(); ++i) {
    const std::string &cubin = chunks[i].result.cubin;
    std::string part = name + "." + std::to_string(i) + ".cubin";
    linked = linker->addData(link, /*NVJITLINK_INPUT_CUBIN=*/1, cubin.data(), cubin.size(),
                             part.c_str()) == 0;
  }
  linked = linked && linker->complete(link) == 0;
  size_t size = 0;
  if (linked && linker->cubinSize(link, &size) == 0) {
    result.cubin.assign(size, '\0');
    linked = linker->cubin(link, result.cubin.data()) == 0;
  }
  if (!linked) {
    size_t logSize = 0;
    linker->errorLogSize(link, &logSize);
    std::string log(logSize, '\0');
    if (logSize)
      linker->errorLog(link, log.data());
    error = "internal error: nvJitLink could not link the kernels' cubins: " + log;
    codegenBug = true;
  }
  linker->destroy(&link);
  for (Chunk &chunk : chunks) {
    result.log += chunk.result.log;
    for (auto &[entry, usage] : chunk.result.usage)
      result.usage[entry] = usage;
  }
  return linked;
}

#undef DEBUG_TYPE
