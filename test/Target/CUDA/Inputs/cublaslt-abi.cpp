// Compiled by cublaslt-abi.test: fusec's dlopen'ed view of cuBLASLt
// (lib/Target/CUDA/CublasLtLoader.h, include/fusec/Runtime/CublasLt.h) must
// agree with the toolkit's headers, value for value and byte for byte.
#include <cublasLt.h>

#include "CublasLtLoader.h"

#include <cstddef>

using V = fusec_rt::CublasLtValues;
static_assert(V::kComputeF32 == CUBLAS_COMPUTE_32F, "compute type");
static_assert(V::kF32 == CUDA_R_32F && V::kF16 == CUDA_R_16F && V::kBF16 == CUDA_R_16BF,
              "data types");
static_assert(V::kOpN == CUBLAS_OP_N && V::kOpT == CUBLAS_OP_T, "operations");
static_assert(V::kTransA == CUBLASLT_MATMUL_DESC_TRANSA &&
                  V::kTransB == CUBLASLT_MATMUL_DESC_TRANSB &&
                  V::kEpilogue == CUBLASLT_MATMUL_DESC_EPILOGUE &&
                  V::kBiasPointer == CUBLASLT_MATMUL_DESC_BIAS_POINTER &&
                  V::kBiasDataType == CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
              "matmul descriptor attributes");
static_assert(V::kMaxWorkspaceBytes == CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES &&
                  V::kMinAlignmentA == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES &&
                  V::kMinAlignmentB == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES &&
                  V::kMinAlignmentC == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES &&
                  V::kMinAlignmentD == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
              "preferences");
static_assert(V::kEpilogues[fusec_rt::MatmulCall::None] == CUBLASLT_EPILOGUE_DEFAULT &&
                  V::kEpilogues[fusec_rt::MatmulCall::Relu] == CUBLASLT_EPILOGUE_RELU &&
                  V::kEpilogues[fusec_rt::MatmulCall::Gelu] == CUBLASLT_EPILOGUE_GELU &&
                  V::kEpilogues[fusec_rt::MatmulCall::Bias] == CUBLASLT_EPILOGUE_BIAS &&
                  V::kEpilogues[fusec_rt::MatmulCall::ReluBias] == CUBLASLT_EPILOGUE_RELU_BIAS &&
                  V::kEpilogues[fusec_rt::MatmulCall::GeluBias] == CUBLASLT_EPILOGUE_GELU_BIAS,
              "epilogues");
// Enum attribute values are set from 4-byte integers.
static_assert(sizeof(cublasOperation_t) == 4 && sizeof(cublasLtEpilogue_t) == 4 &&
                  sizeof(cudaDataType_t) == 4 && sizeof(cublasComputeType_t) == 4,
              "enum sizes");
using fusec::cuda::CublasLtAlgo;
using fusec::cuda::CublasLtHeuristic;
static_assert(sizeof(CublasLtAlgo) == sizeof(cublasLtMatmulAlgo_t), "algo size");
static_assert(sizeof(CublasLtHeuristic) == sizeof(cublasLtMatmulHeuristicResult_t),
              "heuristic size");
static_assert(offsetof(CublasLtHeuristic, algo) == offsetof(cublasLtMatmulHeuristicResult_t, algo) &&
                  offsetof(CublasLtHeuristic, workspaceSize) ==
                      offsetof(cublasLtMatmulHeuristicResult_t, workspaceSize) &&
                  offsetof(CublasLtHeuristic, state) ==
                      offsetof(cublasLtMatmulHeuristicResult_t, state) &&
                  offsetof(CublasLtHeuristic, wavesCount) ==
                      offsetof(cublasLtMatmulHeuristicResult_t, wavesCount),
              "heuristic layout");
// The handle types are pointers, as the loader declares them.
static_assert(sizeof(cublasLtHandle_t) == sizeof(void *) &&
                  sizeof(cublasLtMatmulDesc_t) == sizeof(void *) &&
                  sizeof(cublasLtMatrixLayout_t) == sizeof(void *) &&
                  sizeof(cublasLtMatmulPreference_t) == sizeof(void *),
              "handles");

int main() { return 0; }
