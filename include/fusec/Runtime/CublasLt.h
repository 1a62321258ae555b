//===- CublasLt.h - The engine's library table, on cuBLASLt ------*- C++ -*-===//
//
// Runs the engine's library steps (Runtime.h, MatmulCall) with
// cublasLtMatmul. The matmul logic is a template over the cuBLASLt API
// (`Api`) so that one implementation serves two users:
//   - a launcher: this file is copied into its source (after Runtime.h, with
//     <cuda.h> included) and `CublasLtDirect` calls the linked library
//     (build with -lcublasLt); `cublasLtTable()` is the engine's table;
//   - fusec-run --device=cuda, which defines FUSEC_RT_NO_CUBLASLT_HEADER and
//     supplies a dlopen'ed API (lib/Target/CUDA/CublasLtLoader.cpp).
//
// cuBLASLt is column-major; a row-major d[m,n] = a[m,k] · b[k,n] is the
// column-major d^T[n,m] = b^T[n,k] · a^T[k,m], so the call passes b first.
// A bias over n is then a bias over the rows of d^T, which is what the
// BIAS epilogues add. Descriptors and the heuristic's algorithm are cached
// per shape and per operand alignment: cuBLASLt assumes 256-byte aligned
// operands unless the preference says less, and an algorithm chosen for
// aligned pointers may fail on others, so the plan states each pointer's
// alignment (and the bias pointer is set before the heuristic, which reads
// its alignment). One handle and one 32 MiB workspace per engine.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_RT_CUBLASLT_H
#define FUSEC_RT_CUBLASLT_H

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>

namespace fusec_rt {

/// cuBLASLt's enum values that the matmuls use (cublasLt.h, cublas_api.h,
/// library_types.h; test/Target/CUDA/cublaslt-abi.test checks them against
/// the headers).
struct CublasLtValues {
  static constexpr int32_t kComputeF32 = 68;                     // CUBLAS_COMPUTE_32F
  static constexpr int32_t kF32 = 0, kF16 = 2, kBF16 = 14;       // CUDA_R_32F, _16F, _16BF
  static constexpr int32_t kOpN = 0, kOpT = 1;                   // CUBLAS_OP_N, _T
  static constexpr int32_t kTransA = 3, kTransB = 4;             // CUBLASLT_MATMUL_DESC_TRANSA, _B
  static constexpr int32_t kEpilogue = 7, kBiasPointer = 8;      // _EPILOGUE, _BIAS_POINTER
  static constexpr int32_t kBiasDataType = 26;                   // _BIAS_DATA_TYPE
  static constexpr int32_t kMaxWorkspaceBytes = 1;               // CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES
  /// CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_{A,B,C,D}_BYTES.
  static constexpr int32_t kMinAlignmentA = 5, kMinAlignmentB = 6, kMinAlignmentC = 7,
                           kMinAlignmentD = 8;
  /// CUBLASLT_EPILOGUE_{DEFAULT, RELU, GELU, BIAS, RELU_BIAS, GELU_BIAS},
  /// indexed by MatmulCall::Epilogue.
  static constexpr uint32_t kEpilogues[6] = {1, 2, 32, 4, 6, 36};
};

template <class Api> class CublasLtMatmuls {
public:
  static constexpr size_t kWorkspaceBytes = size_t(32) << 20;

  ~CublasLtMatmuls() {
    for (auto &entry : plans)
      destroy(entry.second);
    if (workspace)
      Api::memFree(workspace);
    if (handle)
      Api::destroy(handle);
  }

  int matmul(const MatmulCall &call, void *stream) {
    if (!handle) {
      if (Api::create(&handle) != 0)
        return fail("cublasLtCreate failed");
      if (Api::memAlloc(&workspace, kWorkspaceBytes) != 0)
        return fail("cannot allocate the cuBLASLt workspace");
    }
    // cuBLASLt's A is fusec's b (see the file comment); C and D are d.
    Alignments alignments = {alignmentOf(call.b), alignmentOf(call.a), alignmentOf(call.d),
                             call.bias ? alignmentOf(call.bias) : 256u};
    auto key = std::make_tuple(call.m, call.n, call.k, int(call.dtype), call.epilogue,
                               call.transposeB, alignments);
    auto found = plans.find(key);
    if (found == plans.end()) {
      Plan plan;
      if (int status = makePlan(call, alignments, plan)) {
        destroy(plan);
        return status;
      }
      found = plans.emplace(key, plan).first;
    }
    Plan &plan = found->second;
    if (call.bias) {
      const void *bias = reinterpret_cast<const void *>(call.bias);
      if (Api::descSet(plan.op, CublasLtValues::kBiasPointer, &bias, sizeof(bias)) != 0)
        return fail("cannot set the bias pointer");
    }
    float alpha = 1.0f, beta = 0.0f;
    void *d = reinterpret_cast<void *>(call.d);
    int status = Api::matmul(handle, plan.op, &alpha, reinterpret_cast<const void *>(call.b),
                             plan.layoutB, reinterpret_cast<const void *>(call.a), plan.layoutA,
                             &beta, d, plan.layoutD, d, plan.layoutD, &plan.algo,
                             reinterpret_cast<void *>(workspace), kWorkspaceBytes, stream);
    if (status != 0)
      return fail("cublasLtMatmul returned status " + std::to_string(status));
    return 0;
  }

  const char *lastError() const { return error.c_str(); }

  /// The engine's table over one instance per engine.
  static const Library &table() {
    static const Library library = {
        []() -> void * { return new CublasLtMatmuls(); },
        [](void *state) { delete static_cast<CublasLtMatmuls *>(state); },
        [](void *state, const MatmulCall &call, void *stream) {
          return static_cast<CublasLtMatmuls *>(state)->matmul(call, stream);
        },
        [](void *state) { return static_cast<CublasLtMatmuls *>(state)->lastError(); }};
    return library;
  }

private:
  /// For cuBLASLt's A, B, C = D and the bias pointer, in that order: the
  /// largest power of two up to 256 that divides each address.
  using Alignments = std::array<uint32_t, 4>;

  static uint32_t alignmentOf(unsigned long long address) {
    uint32_t alignment = 256;
    while (alignment > 1 && address % alignment != 0)
      alignment /= 2;
    return alignment;
  }

  struct Plan {
    typename Api::MatmulDesc op{};
    typename Api::Layout layoutB{}, layoutA{}, layoutD{};
    typename Api::Algo algo{};
  };

  static void destroy(Plan &plan) {
    if (plan.layoutB)
      Api::layoutDestroy(plan.layoutB);
    if (plan.layoutA)
      Api::layoutDestroy(plan.layoutA);
    if (plan.layoutD)
      Api::layoutDestroy(plan.layoutD);
    if (plan.op)
      Api::descDestroy(plan.op);
  }

  int makePlan(const MatmulCall &call, const Alignments &alignments, Plan &plan) {
    using V = CublasLtValues;
    if (call.epilogue < 0 || call.epilogue > MatmulCall::GeluBias)
      return fail("unknown epilogue " + std::to_string(call.epilogue));
    int32_t type = call.dtype == DType::f16 ? V::kF16 : call.dtype == DType::bf16 ? V::kBF16 : V::kF32;
    if (Api::descCreate(&plan.op, V::kComputeF32, V::kF32) != 0)
      return fail("cublasLtMatmulDescCreate failed");
    int32_t transFirst = call.transposeB ? V::kOpT : V::kOpN, transSecond = V::kOpN;
    uint32_t epilogue = V::kEpilogues[call.epilogue];
    bool ok = Api::descSet(plan.op, V::kTransA, &transFirst, sizeof(transFirst)) == 0 &&
              Api::descSet(plan.op, V::kTransB, &transSecond, sizeof(transSecond)) == 0 &&
              Api::descSet(plan.op, V::kEpilogue, &epilogue, sizeof(epilogue)) == 0;
    const void *bias = reinterpret_cast<const void *>(call.bias);
    if (ok && call.bias)
      ok = Api::descSet(plan.op, V::kBiasDataType, &type, sizeof(type)) == 0 &&
           Api::descSet(plan.op, V::kBiasPointer, &bias, sizeof(bias)) == 0;
    if (!ok)
      return fail("cublasLtMatmulDescSetAttribute failed");
    // Column-major views of the row-major operands (see the file comment).
    uint64_t n = uint64_t(call.n), m = uint64_t(call.m), k = uint64_t(call.k);
    ok = (call.transposeB ? Api::layoutCreate(&plan.layoutB, type, k, n, int64_t(k))
                          : Api::layoutCreate(&plan.layoutB, type, n, k, int64_t(n))) == 0 &&
         Api::layoutCreate(&plan.layoutA, type, k, m, int64_t(k)) == 0 &&
         Api::layoutCreate(&plan.layoutD, type, n, m, int64_t(n)) == 0;
    if (!ok)
      return fail("cublasLtMatrixLayoutCreate failed");
    typename Api::Preference preference{};
    if (Api::prefCreate(&preference) != 0)
      return fail("cublasLtMatmulPreferenceCreate failed");
    uint64_t bytes = kWorkspaceBytes;
    Api::prefSet(preference, V::kMaxWorkspaceBytes, &bytes, sizeof(bytes));
    // C is D (the call passes d for both).
    Api::prefSet(preference, V::kMinAlignmentA, &alignments[0], sizeof(uint32_t));
    Api::prefSet(preference, V::kMinAlignmentB, &alignments[1], sizeof(uint32_t));
    Api::prefSet(preference, V::kMinAlignmentC, &alignments[2], sizeof(uint32_t));
    Api::prefSet(preference, V::kMinAlignmentD, &alignments[2], sizeof(uint32_t));
    typename Api::Heuristic result{};
    int count = 0;
    int status = Api::heuristic(handle, plan.op, plan.layoutB, plan.layoutA, plan.layoutD,
                                plan.layoutD, preference, 1, &result, &count);
    Api::prefDestroy(preference);
    if (status != 0 || count == 0)
      return fail("cuBLASLt has no algorithm for a " + std::to_string(call.m) + "x" +
                  std::to_string(call.n) + "x" + std::to_string(call.k) + " matmul");
    plan.algo = result.algo;
    return 0;
  }

  int fail(const std::string &message) {
    error = message;
    return 1;
  }

  typename Api::Handle handle{};
  unsigned long long workspace = 0;
  std::map<std::tuple<int64_t, int64_t, int64_t, int, int, int, Alignments>, Plan> plans;
  std::string error;
};

} // namespace fusec_rt

#ifndef FUSEC_RT_NO_CUBLASLT_HEADER
#include <cublasLt.h>

namespace fusec_rt {

/// The linked cuBLASLt (and the driver API for the workspace).
struct CublasLtDirect {
  using Handle = cublasLtHandle_t;
  using MatmulDesc = cublasLtMatmulDesc_t;
  using Layout = cublasLtMatrixLayout_t;
  using Preference = cublasLtMatmulPreference_t;
  using Algo = cublasLtMatmulAlgo_t;
  using Heuristic = cublasLtMatmulHeuristicResult_t;
  static int create(Handle *handle) { return int(cublasLtCreate(handle)); }
  static int destroy(Handle handle) { return int(cublasLtDestroy(handle)); }
  static int descCreate(MatmulDesc *desc, int32_t compute, int32_t scale) {
    return int(cublasLtMatmulDescCreate(desc, cublasComputeType_t(compute), cudaDataType_t(scale)));
  }
  static int descDestroy(MatmulDesc desc) { return int(cublasLtMatmulDescDestroy(desc)); }
  static int descSet(MatmulDesc desc, int32_t attribute, const void *value, size_t bytes) {
    return int(cublasLtMatmulDescSetAttribute(desc, cublasLtMatmulDescAttributes_t(attribute),
                                              value, bytes));
  }
  static int layoutCreate(Layout *layout, int32_t type, uint64_t rows, uint64_t cols, int64_t ld) {
    return int(cublasLtMatrixLayoutCreate(layout, cudaDataType_t(type), rows, cols, ld));
  }
  static int layoutDestroy(Layout layout) { return int(cublasLtMatrixLayoutDestroy(layout)); }
  static int prefCreate(Preference *preference) {
    return int(cublasLtMatmulPreferenceCreate(preference));
  }
  static int prefDestroy(Preference preference) {
    return int(cublasLtMatmulPreferenceDestroy(preference));
  }
  static int prefSet(Preference preference, int32_t attribute, const void *value, size_t bytes) {
    return int(cublasLtMatmulPreferenceSetAttribute(
        preference, cublasLtMatmulPreferenceAttributes_t(attribute), value, bytes));
  }
  static int heuristic(Handle handle, MatmulDesc desc, Layout a, Layout b, Layout c, Layout d,
                       Preference preference, int requested, Heuristic *results, int *count) {
    return int(cublasLtMatmulAlgoGetHeuristic(handle, desc, a, b, c, d, preference, requested,
                                              results, count));
  }
  static int matmul(Handle handle, MatmulDesc desc, const void *alpha, const void *a, Layout la,
                    const void *b, Layout lb, const void *beta, const void *c, Layout lc, void *d,
                    Layout ld, const Algo *algo, void *workspace, size_t bytes, void *stream) {
    return int(cublasLtMatmul(handle, desc, alpha, a, la, b, lb, beta, c, lc, d, ld, algo,
                              workspace, bytes, static_cast<cudaStream_t>(stream)));
  }
  static int memAlloc(unsigned long long *pointer, size_t bytes) {
    CUdeviceptr device = 0;
    int status = int(cuMemAlloc(&device, bytes));
    *pointer = device;
    return status;
  }
  static int memFree(unsigned long long pointer) { return int(cuMemFree(CUdeviceptr(pointer))); }
};

/// The engine's library table of a launcher.
inline const Library &cublasLtTable() { return CublasLtMatmuls<CublasLtDirect>::table(); }

} // namespace fusec_rt
#endif // FUSEC_RT_NO_CUBLASLT_HEADER

#endif // FUSEC_RT_CUBLASLT_H
