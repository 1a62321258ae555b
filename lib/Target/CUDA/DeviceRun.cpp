//===- DeviceRun.cpp - Running a lowered module on the GPU ----------------===//
//
// fusec-run --device=cuda: the driver comes from dlopen("libcuda.so.1") (so
// fusec-run starts on machines without one), the code from NVRTC for the
// GPU's own architecture, the execution from the same engine the generated
// launchers embed (fusec_rt::Engine), on a stream of its own:
//   1. load the driver, take the first GPU's primary context;
//   2. generate and compile CUDA C for its compute capability;
//   3. plan the entry function (a library step loads cuBLASLt, see
//      CublasLtLoader.cpp), load the cubin, upload the inputs;
//   4. run once, copy the outputs back;
//   5. with --bench: warm up, then time each run with events, cycling through
//      several copies of the inputs so that no run finds them in L2.
//
//===----------------------------------------------------------------------===//
#include "CublasLtLoader.h"
#include "fusec/Target/CUDA.h"

#include <dlfcn.h>

using namespace fusec;
using namespace fusec::cuda;

namespace {

struct CudaDriver {
  void *handle = nullptr;
  int (*init)(unsigned) = nullptr;
  int (*deviceGet)(int *, int) = nullptr;
  int (*deviceGetAttribute)(int *, int, int) = nullptr;
  int (*deviceGetName)(char *, int, int) = nullptr;
  int (*primaryCtxRetain)(void **, int) = nullptr;
  int (*primaryCtxRelease)(int) = nullptr;
  int (*ctxSetCurrent)(void *) = nullptr;
  int (*memcpyDtoH)(void *, unsigned long long, size_t) = nullptr;
  int (*streamCreate)(void **, unsigned) = nullptr;
  int (*streamDestroy)(void *) = nullptr;
  int (*streamSynchronize)(void *) = nullptr;
  int (*eventCreate)(void **, unsigned) = nullptr;
  int (*eventRecord)(void *, void *) = nullptr;
  int (*eventSynchronize)(void *) = nullptr;
  int (*eventElapsedTime)(float *, void *, void *) = nullptr;
  int (*eventDestroy)(void *) = nullptr;
  fusec_rt::Driver engine{};
  std::string missing;

  template <class F> void bind(F &fn, std::initializer_list<const char *> names) {
    for (const char *name : names)
      if ((fn = reinterpret_cast<F>(dlsym(handle, name))))
        return;
    if (missing.empty())
      missing = *names.begin();
  }

  bool load(std::string &error) {
    handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      error = "no CUDA driver (libcuda.so.1) on this machine; --device=cuda needs an NVIDIA "
              "GPU and its driver";
      return false;
    }
    bind(init, {"cuInit"});
    bind(deviceGet, {"cuDeviceGet"});
    bind(deviceGetAttribute, {"cuDeviceGetAttribute"});
    bind(deviceGetName, {"cuDeviceGetName"});
    bind(primaryCtxRetain, {"cuDevicePrimaryCtxRetain"});
    bind(primaryCtxRelease, {"cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"});
    bind(ctxSetCurrent, {"cuCtxSetCurrent"});
    bind(memcpyDtoH, {"cuMemcpyDtoH_v2"});
    bind(streamCreate, {"cuStreamCreate"});
    bind(streamDestroy, {"cuStreamDestroy_v2"});
    bind(streamSynchronize, {"cuStreamSynchronize"});
    bind(eventCreate, {"cuEventCreate"});
    bind(eventRecord, {"cuEventRecord"});
    bind(eventSynchronize, {"cuEventSynchronize"});
    bind(eventElapsedTime, {"cuEventElapsedTime_v2", "cuEventElapsedTime"});
    bind(eventDestroy, {"cuEventDestroy_v2"});
    bind(engine.moduleLoadData, {"cuModuleLoadData"});
    bind(engine.moduleUnload, {"cuModuleUnload"});
    bind(engine.moduleGetFunction, {"cuModuleGetFunction"});
    bind(engine.memAlloc, {"cuMemAlloc_v2"});
    bind(engine.memFree, {"cuMemFree_v2"});
    bind(engine.memcpyHtoD, {"cuMemcpyHtoD_v2"});
    bind(engine.memcpyDtoDAsync, {"cuMemcpyDtoDAsync_v2"});
    bind(engine.launchKernel, {"cuLaunchKernel"});
    bind(engine.getErrorString, {"cuGetErrorString"});
    bind(engine.ctxSynchronize, {"cuCtxSynchronize"});
    if (!missing.empty()) {
      error = "the CUDA driver lacks " + missing;
      return false;
    }
    return true;
  }

  std::string describe(int status, const char *call) const {
    const char *text = nullptr;
    engine.getErrorString(status, &text);
    return std::string(call) + " failed: " + (text ? text : std::to_string(status));
  }
};

} // namespace

bool cuda::runOnDevice(const Module &module, const Function &entry,
                       const std::vector<TensorData> &inputs, const DeviceRunOptions &options,
                       DeviceRunResult &result, std::string &error) {
  // What the module asks for is checked before the GPU is looked for.
  std::string source;
  LaunchPlan plan;
  if (!generateCUDA(module, source, error) || !buildLaunchPlan(module, entry, plan, error))
    return false;
  static CudaDriver driver; // loaded once; the process keeps it
  if (!driver.handle && !driver.load(error))
    return false;
  auto check = [&](int status, const char *call) {
    if (status != 0)
      error = driver.describe(status, call);
    return status == 0;
  };
  int device = 0, major = 0, minor = 0;
  void *context = nullptr;
  char name[256] = {0};
  if (!check(driver.init(0), "cuInit") || !check(driver.deviceGet(&device, 0), "cuDeviceGet") ||
      !check(driver.deviceGetAttribute(&major, 75, device), "cuDeviceGetAttribute") ||
      !check(driver.deviceGetAttribute(&minor, 76, device), "cuDeviceGetAttribute") ||
      !check(driver.deviceGetName(name, sizeof name - 1, device), "cuDeviceGetName") ||
      !check(driver.primaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain") ||
      !check(driver.ctxSetCurrent(context), "cuCtxSetCurrent"))
    return false;
  result.deviceName = name;
  result.arch = "sm_" + std::to_string(major) + std::to_string(minor);

  CompileOptions compile;
  compile.arch = result.arch;
  compile.cudaPath = options.cudaPath;
  CompileResult compiled;
  bool codegenBug = false;
  if (!compileModule(module, "module", compile, compiled, error, codegenBug))
    return false;
  ModelTables tables(plan);
  const fusec_rt::Library *library = nullptr;
  bool usesLibrary = llvm::any_of(plan.steps, [](const LaunchPlan::Step &step) {
    return step.kind == fusec_rt::StepDesc::Library;
  });
  if (usesLibrary) {
    std::string tried;
    std::string cudaPath = findCudaPath(options.cudaPath, tried);
    if (!(library = loadCublasLt(driver.engine, cudaPath, error)))
      return false;
  }
  fusec_rt::Engine engine(tables.getDesc(), driver.engine, library);
  if (engine.load(compiled.cubin.data()) != fusec_rt::Ok)
    return error = engine.lastError(), false;

  // Inputs: `rotations` copies when timing, one otherwise.
  int sets = options.bench ? std::max(1, options.rotations) : 1;
  std::vector<std::vector<fusec_rt::TensorRef>> inputSets(static_cast<size_t>(sets));
  std::vector<unsigned long long> allocations;
  auto release = [&] {
    for (unsigned long long pointer : allocations)
      driver.engine.memFree(pointer);
  };
  for (auto &set : inputSets)
    for (const TensorData &data : inputs) {
      fusec_rt::TensorRef ref;
      ref.dtype = toRuntimeDType(data.getDType());
      ref.shape = data.getShape();
      size_t bytes = size_t(data.getNumElements() * dtypeBytes(data.getDType()));
      if (!check(driver.engine.memAlloc(&ref.data, std::max<size_t>(bytes, 1)), "cuMemAlloc"))
        return release(), false;
      allocations.push_back(ref.data);
      if (bytes && !check(driver.engine.memcpyHtoD(ref.data, data.data(), bytes), "cuMemcpyHtoD"))
        return release(), false;
      set.push_back(ref);
    }
  std::vector<std::vector<int64_t>> shapes;
  if (engine.outputShapes(inputSets[0], shapes) != fusec_rt::Ok)
    return release(), error = engine.lastError(), false;
  std::vector<fusec_rt::TensorRef> outputRefs;
  for (size_t o = 0; o < shapes.size(); ++o) {
    const LaunchPlan::Slot &slot = plan.slots[size_t(plan.outputSlots[o])];
    fusec_rt::TensorRef ref;
    ref.dtype = toRuntimeDType(slot.dtype);
    ref.shape = shapes[o];
    int64_t bytes = dtypeBytes(slot.dtype);
    for (int64_t dim : shapes[o])
      bytes *= dim;
    if (!check(driver.engine.memAlloc(&ref.data, size_t(std::max<int64_t>(bytes, 1))),
               "cuMemAlloc"))
      return release(), false;
    allocations.push_back(ref.data);
    outputRefs.push_back(ref);
  }
  void *stream = nullptr;
  if (!check(driver.streamCreate(&stream, 0), "cuStreamCreate"))
    return release(), false;
  bool ok = engine.run(inputSets[0], outputRefs, stream) == fusec_rt::Ok;
  if (!ok)
    error = engine.lastError();
  ok = ok && check(driver.streamSynchronize(stream), "cuStreamSynchronize (the kernels)");
  for (size_t o = 0; ok && o < outputRefs.size(); ++o) {
    const LaunchPlan::Slot &slot = plan.slots[size_t(plan.outputSlots[o])];
    TensorData data(slot.dtype, shapes[o]);
    size_t bytes = size_t(data.getNumElements() * dtypeBytes(slot.dtype));
    ok = !bytes || check(driver.memcpyDtoH(data.data(), outputRefs[o].data, bytes), "cuMemcpyDtoH");
    result.outputs.push_back(std::move(data));
  }
  if (ok && options.bench) {
    void *start = nullptr, *stop = nullptr;
    ok = check(driver.eventCreate(&start, 0), "cuEventCreate") &&
         check(driver.eventCreate(&stop, 0), "cuEventCreate");
    for (int i = 0; ok && i < options.warmup; ++i)
      ok = engine.run(inputSets[size_t(i % sets)], outputRefs, stream) == fusec_rt::Ok;
    for (int i = 0; ok && i < options.runs; ++i) {
      float ms = 0;
      ok = check(driver.eventRecord(start, stream), "cuEventRecord") &&
           engine.run(inputSets[size_t(i % sets)], outputRefs, stream) == fusec_rt::Ok &&
           check(driver.eventRecord(stop, stream), "cuEventRecord") &&
           check(driver.eventSynchronize(stop), "cuEventSynchronize") &&
           check(driver.eventElapsedTime(&ms, start, stop), "cuEventElapsedTime");
      result.timesMs.push_back(ms);
    }
    if (!ok && error.empty())
      error = engine.lastError();
    if (start)
      driver.eventDestroy(start);
    if (stop)
      driver.eventDestroy(stop);
  }
  driver.streamDestroy(stream);
  release();
  return ok;
}
