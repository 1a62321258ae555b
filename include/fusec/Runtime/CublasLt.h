//===- CublasLt.h - The engine's library table, on cuBLASLt ------*- C++ -*-===//
//
// Copied into a launcher's source when the model has library steps (after
// Runtime.h, with <cuda.h> included). Build with -lcublasLt.
//
// cuBLASLt is column-major; a row-major d[m,n] = a[m,k] · b[k,n] is the
// column-major d^T[n,m] = b^T[n,k] · a^T[k,m], so the call passes b first.
// A bias over n is then a bias over the rows of d^T, which is what the
// BIAS epilogues add. Descriptors and the heuristic's algorithm are cached
// per shape; one handle and one 32 MiB workspace per engine.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_RT_CUBLASLT_H
#define FUSEC_RT_CUBLASLT_H

#include <cublasLt.h>

#include <map>
#include <string>
#include <tuple>

namespace fusec_rt {

class CublasLtLibrary {
public:
  static constexpr size_t kWorkspaceBytes = size_t(32) << 20;

  ~CublasLtLibrary() {
    for (auto &entry : plans) {
      cublasLtMatrixLayoutDestroy(entry.second.layoutB);
      cublasLtMatrixLayoutDestroy(entry.second.layoutA);
      cublasLtMatrixLayoutDestroy(entry.second.layoutD);
      cublasLtMatmulDescDestroy(entry.second.op);
    }
    if (workspace)
      cuMemFree(CUdeviceptr(workspace));
    if (handle)
      cublasLtDestroy(handle);
  }

  int matmul(const MatmulCall &call, void *stream) {
    if (!handle) {
      if (cublasLtCreate(&handle) != CUBLAS_STATUS_SUCCESS)
        return fail("cublasLtCreate failed");
      CUdeviceptr pointer = 0;
      if (cuMemAlloc(&pointer, kWorkspaceBytes) != CUDA_SUCCESS)
        return fail("cannot allocate the cuBLASLt workspace");
      workspace = pointer;
    }
    cudaDataType_t type = call.dtype == DType::f16    ? CUDA_R_16F
                          : call.dtype == DType::bf16 ? CUDA_R_16BF
                                                      : CUDA_R_32F;
    auto key = std::make_tuple(call.m, call.n, call.k, int(call.dtype), call.epilogue,
                               call.transposeB);
    auto found = plans.find(key);
    if (found == plans.end()) {
      Plan plan;
      if (int status = makePlan(call, type, plan))
        return status;
      found = plans.emplace(key, plan).first;
    }
    Plan &plan = found->second;
    if (call.bias) {
      const void *bias = reinterpret_cast<const void *>(call.bias);
      if (cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                         sizeof(bias)) != CUBLAS_STATUS_SUCCESS)
        return fail("cannot set the bias pointer");
    }
    float alpha = 1.0f, beta = 0.0f;
    cublasStatus_t status = cublasLtMatmul(
        handle, plan.op, &alpha, reinterpret_cast<const void *>(call.b), plan.layoutB,
        reinterpret_cast<const void *>(call.a), plan.layoutA, &beta,
        reinterpret_cast<void *>(call.d), plan.layoutD, reinterpret_cast<void *>(call.d),
        plan.layoutD, &plan.algo, reinterpret_cast<void *>(workspace), kWorkspaceBytes,
        static_cast<cudaStream_t>(stream));
    if (status != CUBLAS_STATUS_SUCCESS)
      return fail("cublasLtMatmul returned status " + std::to_string(int(status)));
    return 0;
  }

  const char *lastError() const { return error.c_str(); }

  /// The engine's table over one CublasLtLibrary per engine.
  static const Library &table() {
    static const Library library = {
        []() -> void * { return new CublasLtLibrary(); },
        [](void *state) { delete static_cast<CublasLtLibrary *>(state); },
        [](void *state, const MatmulCall &call, void *stream) {
          return static_cast<CublasLtLibrary *>(state)->matmul(call, stream);
        },
        [](void *state) { return static_cast<CublasLtLibrary *>(state)->lastError(); }};
    return library;
  }

private:
  struct Plan {
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t layoutB = nullptr, layoutA = nullptr, layoutD = nullptr;
    cublasLtMatmulAlgo_t algo;
  };

  int makePlan(const MatmulCall &call, cudaDataType_t type, Plan &plan) {
    if (cublasLtMatmulDescCreate(&plan.op, CUBLAS_COMPUTE_32F, CUDA_R_32F) != CUBLAS_STATUS_SUCCESS)
      return fail("cublasLtMatmulDescCreate failed");
    cublasOperation_t transB = call.transposeB ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t transA = CUBLAS_OP_N;
    cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_TRANSA, &transB, sizeof(transB));
    cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_TRANSB, &transA, sizeof(transA));
    static const cublasLtEpilogue_t epilogues[] = {
        CUBLASLT_EPILOGUE_DEFAULT, CUBLASLT_EPILOGUE_RELU,      CUBLASLT_EPILOGUE_GELU,
        CUBLASLT_EPILOGUE_BIAS,    CUBLASLT_EPILOGUE_RELU_BIAS, CUBLASLT_EPILOGUE_GELU_BIAS};
    if (call.epilogue < 0 || call.epilogue > MatmulCall::GeluBias)
      return fail("unknown epilogue " + std::to_string(call.epilogue));
    cublasLtEpilogue_t epilogue = epilogues[call.epilogue];
    cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                   sizeof(epilogue));
    if (call.bias)
      cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &type,
                                     sizeof(type));
    // Column-major views of the row-major operands (see the file comment).
    uint64_t n = uint64_t(call.n), m = uint64_t(call.m), k = uint64_t(call.k);
    bool ok = call.transposeB
                  ? cublasLtMatrixLayoutCreate(&plan.layoutB, type, k, n, int64_t(k)) ==
                        CUBLAS_STATUS_SUCCESS
                  : cublasLtMatrixLayoutCreate(&plan.layoutB, type, n, k, int64_t(n)) ==
                        CUBLAS_STATUS_SUCCESS;
    ok = ok && cublasLtMatrixLayoutCreate(&plan.layoutA, type, k, m, int64_t(k)) ==
                   CUBLAS_STATUS_SUCCESS;
    ok = ok && cublasLtMatrixLayoutCreate(&plan.layoutD, type, n, m, int64_t(n)) ==
                   CUBLAS_STATUS_SUCCESS;
    if (!ok)
      return fail("cublasLtMatrixLayoutCreate failed");
    cublasLtMatmulPreference_t preference = nullptr;
    cublasLtMatmulPreferenceCreate(&preference);
    size_t bytes = kWorkspaceBytes;
    cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                         &bytes, sizeof(bytes));
    cublasLtMatmulHeuristicResult_t result = {};
    int count = 0;
    cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
        handle, plan.op, plan.layoutB, plan.layoutA, plan.layoutD, plan.layoutD, preference, 1,
        &result, &count);
    cublasLtMatmulPreferenceDestroy(preference);
    if (status != CUBLAS_STATUS_SUCCESS || count == 0)
      return fail("cuBLASLt has no algorithm for a " + std::to_string(call.m) + "x" +
                  std::to_string(call.n) + "x" + std::to_string(call.k) + " matmul");
    plan.algo = result.algo;
    return 0;
  }

  int fail(const std::string &message) {
    error = message;
    return 1;
  }

  cublasLtHandle_t handle = nullptr;
  unsigned long long workspace = 0;
  std::map<std::tuple<int64_t, int64_t, int64_t, int, int, int>, Plan> plans;
  std::string error;
};

} // namespace fusec_rt

#endif // FUSEC_RT_CUBLASLT_H
