// A program using a launcher with cuBLASLt steps (launcher-cublaslt.test):
// it must compile and link against cuBLASLt and the driver-API stub. On a
// GPU it runs the model once with n = 256 and reports any failure.
#include "mlp_launcher.h"

#include <cstdio>

int main() {
  if (cuInit(0) != CUDA_SUCCESS)
    return 1;
  CUdevice device;
  CUcontext context;
  cuDeviceGet(&device, 0);
  cuDevicePrimaryCtxRetain(&context, device);
  cuCtxSetCurrent(context);
  int status = 0;
  {
    fusec_mlp::Model model;
    if (model.load() != fusec_rt::Ok) {
      std::fprintf(stderr, "%s\n", model.lastError().c_str());
      return 1;
    }
    const int64_t n = 256;
    CUdeviceptr x, w1, b1, w2, out;
    cuMemAlloc(&x, n * 64 * 2);
    cuMemAlloc(&w1, 128 * 64 * 2);
    cuMemAlloc(&b1, 128 * 2);
    cuMemAlloc(&w2, 128 * 32 * 2);
    cuMemAlloc(&out, n * 32 * 2);
    cuMemsetD16(x, 0x3c00, n * 64); // 1.0
    cuMemsetD16(w1, 0x2000, 128 * 64);
    cuMemsetD16(b1, 0, 128);
    cuMemsetD16(w2, 0x2000, 128 * 32);
    std::vector<fusec_mlp::TensorRef> inputs = {{x, fusec_mlp::DType::f16, {n, 64}},
                                                {w1, fusec_mlp::DType::f16, {128, 64}},
                                                {b1, fusec_mlp::DType::f16, {128}},
                                                {w2, fusec_mlp::DType::f16, {128, 32}}};
    std::vector<fusec_mlp::TensorRef> outputs = {{out, fusec_mlp::DType::f16, {n, 32}}};
    status = model.run(inputs, outputs, nullptr);
    if (status == fusec_rt::Ok)
      status = cuCtxSynchronize() == CUDA_SUCCESS ? 0 : fusec_rt::ErrorCuda;
    if (status != fusec_rt::Ok)
      std::fprintf(stderr, "run failed: %s\n", model.lastError().c_str());
    for (CUdeviceptr p : {x, w1, b1, w2, out})
      cuMemFree(p);
  }
  cuDevicePrimaryCtxRelease(device);
  return status;
}
