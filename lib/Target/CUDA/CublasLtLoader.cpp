//===- CublasLtLoader.cpp - cuBLASLt through dlopen -----------------------===//
//
// fusec-run --device=cuda runs library steps with the same matmul code as a
// launcher (CublasLtMatmuls in include/fusec/Runtime/CublasLt.h), over an
// API whose entry points come from dlopen: libcublasLt.so.13, .so.12, .so,
// then <cuda>/lib64/libcublasLt.so.
//
//===----------------------------------------------------------------------===//
#include "CublasLtLoader.h"

#include <dlfcn.h>

using namespace fusec;

namespace {

struct Entries {
  int (*create)(void **) = nullptr;
  int (*destroy)(void *) = nullptr;
  int (*descCreate)(void **, int32_t, int32_t) = nullptr;
  int (*descDestroy)(void *) = nullptr;
  int (*descSet)(void *, int32_t, const void *, size_t) = nullptr;
  int (*layoutCreate)(void **, int32_t, uint64_t, uint64_t, int64_t) = nullptr;
  int (*layoutDestroy)(void *) = nullptr;
  int (*prefCreate)(void **) = nullptr;
  int (*prefDestroy)(void *) = nullptr;
  int (*prefSet)(void *, int32_t, const void *, size_t) = nullptr;
  int (*heuristic)(void *, void *, void *, void *, void *, void *, void *, int,
                   cuda::CublasLtHeuristic *, int *) = nullptr;
  int (*matmul)(void *, void *, const void *, const void *, void *, const void *, void *,
                const void *, const void *, void *, void *, void *, const cuda::CublasLtAlgo *,
                void *, size_t, void *) = nullptr;
  fusec_rt::Driver driver{};
};

Entries &entries() {
  static Entries loaded;
  return loaded;
}

struct CublasLtDlopen {
  using Handle = void *;
  using MatmulDesc = void *;
  using Layout = void *;
  using Preference = void *;
  using Algo = cuda::CublasLtAlgo;
  using Heuristic = cuda::CublasLtHeuristic;
  static int create(Handle *handle) { return entries().create(handle); }
  static int destroy(Handle handle) { return entries().destroy(handle); }
  static int descCreate(MatmulDesc *desc, int32_t compute, int32_t scale) {
    return entries().descCreate(desc, compute, scale);
  }
  static int descDestroy(MatmulDesc desc) { return entries().descDestroy(desc); }
  static int descSet(MatmulDesc desc, int32_t attribute, const void *value, size_t bytes) {
    return entries().descSet(desc, attribute, value, bytes);
  }
  static int layoutCreate(Layout *layout, int32_t type, uint64_t rows, uint64_t cols, int64_t ld) {
    return entries().layoutCreate(layout, type, rows, cols, ld);
  }
  static int layoutDestroy(Layout layout) { return entries().layoutDestroy(layout); }
  static int prefCreate(Preference *preference) { return entries().prefCreate(preference); }
  static int prefDestroy(Preference preference) { return entries().prefDestroy(preference); }
  static int prefSet(Preference preference, int32_t attribute, const void *value, size_t bytes) {
    return entries().prefSet(preference, attribute, value, bytes);
  }
  static int heuristic(Handle handle, MatmulDesc desc, Layout a, Layout b, Layout c, Layout d,
                       Preference preference, int requested, Heuristic *results, int *count) {
    return entries().heuristic(handle, desc, a, b, c, d, preference, requested, results, count);
  }
  static int matmul(Handle handle, MatmulDesc desc, const void *alpha, const void *a, Layout la,
                    const void *b, Layout lb, const void *beta, const void *c, Layout lc, void *d,
                    Layout ld, const Algo *algo, void *workspace, size_t bytes, void *stream) {
    return entries().matmul(handle, desc, alpha, a, la, b, lb, beta, c, lc, d, ld, algo,
                            workspace, bytes, stream);
  }
  static int memAlloc(unsigned long long *pointer, size_t bytes) {
    return entries().driver.memAlloc(pointer, bytes);
  }
  static int memFree(unsigned long long pointer) { return entries().driver.memFree(pointer); }
};

} // namespace

const fusec_rt::Library *cuda::loadCublasLt(const fusec_rt::Driver &driver,
                                            const std::string &cudaPath, std::string &error) {
  static void *handle = nullptr;
  static std::string missing;
  if (!handle) {
    std::vector<std::string> candidates = {"libcublasLt.so.13", "libcublasLt.so.12",
                                           "libcublasLt.so"};
    if (!cudaPath.empty())
      candidates.push_back(cudaPath + "/lib64/libcublasLt.so");
    for (const std::string &candidate : candidates)
      if ((handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL)))
        break;
    if (!handle) {
      error = "the module calls cuBLASLt, but no libcublasLt.so was found (tried the loader's "
              "path and " + (cudaPath.empty() ? std::string("no CUDA directory") : cudaPath + "/lib64") + ")";
      return nullptr;
    }
    Entries &e = entries();
    auto bind = [&](auto &fn, const char *name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(handle, name));
      if (!fn && missing.empty())
        missing = name;
    };
    bind(e.create, "cublasLtCreate");
    bind(e.destroy, "cublasLtDestroy");
    bind(e.descCreate, "cublasLtMatmulDescCreate");
    bind(e.descDestroy, "cublasLtMatmulDescDestroy");
    bind(e.descSet, "cublasLtMatmulDescSetAttribute");
    bind(e.layoutCreate, "cublasLtMatrixLayoutCreate");
    bind(e.layoutDestroy, "cublasLtMatrixLayoutDestroy");
    bind(e.prefCreate, "cublasLtMatmulPreferenceCreate");
    bind(e.prefDestroy, "cublasLtMatmulPreferenceDestroy");
    bind(e.prefSet, "cublasLtMatmulPreferenceSetAttribute");
    bind(e.heuristic, "cublasLtMatmulAlgoGetHeuristic");
    bind(e.matmul, "cublasLtMatmul");
  }
  if (!missing.empty()) {
    error = "libcublasLt lacks " + missing;
    return nullptr;
  }
  entries().driver = driver;
  return &fusec_rt::CublasLtMatmuls<CublasLtDlopen>::table();
}
