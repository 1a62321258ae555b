//===- NVRTC.cpp - In-process compilation with a dlopen'ed NVRTC ----------===//
//
// fusec links no CUDA library: NVRTC is loaded with dlopen the first time a
// PTX or cubin is asked for, from the CUDA installation found at run time
// (--cuda-path, $CUDA_HOME, $CUDA_PATH, /usr/local/cuda), falling back to
// the loader's search path. The same installation's include directory
// gives NVRTC cuda_fp16.h and cuda_bf16.h. The handful of entry points are
// declared here by their documented C ABI (nvrtc.h), so building fusec
// needs no CUDA headers either.
//
// Resource usage comes from ptxas's verbose report (-Xptxas -v) in the
// program log:
//   ptxas info    : Compiling entry function 'k' for 'sm_90'
//   ptxas info    : Function properties for k
//       0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
//   ptxas info    : Used 12 registers, used 0 barriers, 4 bytes smem
//
//===----------------------------------------------------------------------===//
#include "fusec/Target/CUDA.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Regex.h"

#include <cstdlib>
#include <dlfcn.h>
#include <mutex>

using namespace fusec;
using namespace fusec::cuda;

namespace {

using nvrtcProgram = struct _nvrtcProgram *;
using nvrtcResult = int; // NVRTC_SUCCESS = 0

struct NVRTCLibrary {
  void *handle = nullptr;
  std::string error;
  nvrtcResult (*createProgram)(nvrtcProgram *, const char *, const char *, int,
                               const char *const *, const char *const *) = nullptr;
  nvrtcResult (*destroyProgram)(nvrtcProgram *) = nullptr;
  nvrtcResult (*compileProgram)(nvrtcProgram, int, const char *const *) = nullptr;
  nvrtcResult (*getPTXSize)(nvrtcProgram, size_t *) = nullptr;
  nvrtcResult (*getPTX)(nvrtcProgram, char *) = nullptr;
  nvrtcResult (*getCUBINSize)(nvrtcProgram, size_t *) = nullptr;
  nvrtcResult (*getCUBIN)(nvrtcProgram, char *) = nullptr;
  nvrtcResult (*getProgramLogSize)(nvrtcProgram, size_t *) = nullptr;
  nvrtcResult (*getProgramLog)(nvrtcProgram, char *) = nullptr;
  const char *(*getErrorString)(nvrtcResult) = nullptr;

  bool load(const std::string &cudaPath) {
    std::vector<std::string> candidates;
    for (const char *name : {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"})
      if (!cudaPath.empty()) {
        llvm::SmallString<256> path(cudaPath);
        llvm::sys::path::append(path, "lib64", name);
        candidates.push_back(std::string(path));
      }
    for (const char *name : {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"})
      candidates.push_back(name);
    for (const std::string &candidate : candidates) {
      handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle)
        break;
    }
    if (!handle) {
      error = "cannot load NVRTC (libnvrtc.so) from " +
              (cudaPath.empty() ? std::string("the library path") : cudaPath + "/lib64") +
              "; install the CUDA toolkit or pass --cuda-path";
      return false;
    }
    auto bind = [&](auto &fn, const char *symbol) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(handle, symbol));
      if (!fn && error.empty())
        error = std::string("NVRTC lacks ") + symbol;
    };
    bind(createProgram, "nvrtcCreateProgram");
    bind(destroyProgram, "nvrtcDestroyProgram");
    bind(compileProgram, "nvrtcCompileProgram");
    bind(getPTXSize, "nvrtcGetPTXSize");
    bind(getPTX, "nvrtcGetPTX");
    bind(getCUBINSize, "nvrtcGetCUBINSize");
    bind(getCUBIN, "nvrtcGetCUBIN");
    bind(getProgramLogSize, "nvrtcGetProgramLogSize");
    bind(getProgramLog, "nvrtcGetProgramLog");
    bind(getErrorString, "nvrtcGetErrorString");
    return error.empty();
  }
};

/// One NVRTC per process and CUDA path (loading is not thread-safe).
NVRTCLibrary *getNVRTC(const std::string &cudaPath, std::string &error) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<NVRTCLibrary>> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  auto &library = loaded[cudaPath];
  if (!library) {
    library = std::make_unique<NVRTCLibrary>();
    library->load(cudaPath);
  }
  if (!library->error.empty()) {
    error = library->error;
    return nullptr;
  }
  return library.get();
}

} // namespace

std::string cuda::findCudaPath(const std::string &flag, std::string &tried) {
  std::vector<std::pair<std::string, std::string>> candidates;
  if (!flag.empty())
    candidates.push_back({"--cuda-path", flag});
  for (const char *variable : {"CUDA_HOME", "CUDA_PATH"})
    if (const char *value = std::getenv(variable))
      if (*value)
        candidates.push_back({std::string("$") + variable, value});
  candidates.push_back({"the default", "/usr/local/cuda"});
  for (const auto &[source, path] : candidates) {
    llvm::SmallString<256> fp16(path), bf16(path);
    llvm::sys::path::append(fp16, "include", "cuda_fp16.h");
    llvm::sys::path::append(bf16, "include", "cuda_bf16.h");
    tried += (tried.empty() ? "" : ", ") + path + " (" + source + ")";
    if (llvm::sys::fs::exists(fp16) && llvm::sys::fs::exists(bf16))
      return path;
    if (source == "--cuda-path")
      return ""; // an explicit path that does not hold CUDA is an error
  }
  return "";
}

std::map<std::string, ResourceUsage> cuda::parsePtxasLog(llvm::StringRef log) {
  std::map<std::string, ResourceUsage> usage;
  llvm::Regex properties("Function properties for ([A-Za-z0-9_$.]+)");
  llvm::Regex compiling("Compiling entry function '([A-Za-z0-9_$.]+)'");
  llvm::Regex frame("([0-9]+) bytes stack frame, ([0-9]+) bytes spill stores, ([0-9]+) bytes "
                    "spill loads");
  llvm::Regex used("Used ([0-9]+) registers");
  llvm::Regex smem("([0-9]+) bytes smem");
  std::string current;
  llvm::SmallVector<llvm::StringRef, 4> match;
  llvm::SmallVector<llvm::StringRef, 64> lines;
  log.split(lines, '\n');
  for (llvm::StringRef text : lines) {
    if (compiling.match(text, &match) || properties.match(text, &match)) {
      current = match[1].str();
      continue;
    }
    if (current.empty())
      continue;
    ResourceUsage &entry = usage[current];
    if (frame.match(text, &match)) {
      match[1].getAsInteger(10, entry.stackBytes);
      match[2].getAsInteger(10, entry.spillStoreBytes);
      match[3].getAsInteger(10, entry.spillLoadBytes);
    }
    if (used.match(text, &match))
      match[1].getAsInteger(10, entry.registers);
    if (smem.match(text, &match))
      match[1].getAsInteger(10, entry.sharedBytes);
  }
  return usage;
}

bool cuda::compileWithNVRTC(const std::string &source, const std::string &name,
                            const CompileOptions &options, CompileResult &result,
                            std::string &error) {
  std::string tried;
  std::string cudaPath = findCudaPath(options.cudaPath, tried);
  if (cudaPath.empty()) {
    error = "cannot find the CUDA headers (cuda_fp16.h, cuda_bf16.h) NVRTC needs; looked in " +
            tried +
            "; pass --cuda-path or set CUDA_HOME";
    return false;
  }
  NVRTCLibrary *nvrtc = getNVRTC(cudaPath, error);
  if (!nvrtc)
    return false;
  nvrtcProgram program = nullptr;
  if (int status = nvrtc->createProgram(&program, source.c_str(), name.c_str(), 0, nullptr,
                                        nullptr)) {
    error = std::string("nvrtcCreateProgram failed: ") + nvrtc->getErrorString(status);
    return false;
  }
  std::string include = "--include-path=" + cudaPath + "/include";
  // A real architecture: NVRTC then runs ptxas too (cubin and the resource
  // report); the PTX it keeps targets the matching virtual architecture.
  std::string arch = "--gpu-architecture=" + options.arch;
  std::vector<const char *> flags = {arch.c_str(),   include.c_str(), "--std=c++17",
                                     "-default-device", "--ptxas-options=-v",
                                     "-DNDEBUG"};
  if (options.relocatable)
    flags.push_back("--relocatable-device-code=true");
  int status = nvrtc->compileProgram(program, int(flags.size()), flags.data());
  size_t logSize = 0;
  nvrtc->getProgramLogSize(program, &logSize);
  result.log.assign(logSize, '\0');
  if (logSize)
    nvrtc->getProgramLog(program, result.log.data());
  while (!result.log.empty() && result.log.back() == '\0')
    result.log.pop_back();
  if (status != 0) {
    // NVRTC_ERROR_INVALID_OPTION: the request (e.g. an --arch this NVRTC
    // does not know), not the generated code.
    result.invalidOption = status == 5;
    error = result.invalidOption
                ? "NVRTC does not accept --arch=" + options.arch + ": " + result.log
                : std::string(nvrtc->getErrorString(status)) + ":\n" + result.log;
    nvrtc->destroyProgram(&program);
    return false;
  }
  size_t size = 0;
  nvrtc->getPTXSize(program, &size);
  result.ptx.assign(size, '\0');
  nvrtc->getPTX(program, result.ptx.data());
  while (!result.ptx.empty() && result.ptx.back() == '\0')
    result.ptx.pop_back();
  if (options.cubin) {
    nvrtc->getCUBINSize(program, &size);
    result.cubin.assign(size, '\0');
    nvrtc->getCUBIN(program, result.cubin.data());
  }
  nvrtc->destroyProgram(&program);
  result.usage = parsePtxasLog(result.log);
  return true;
}
