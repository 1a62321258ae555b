// A program using a generated launcher (test/Target/CUDA/launcher-samples.test):
// it must compile and link against the driver-API stub; it is not run here
// (no GPU in CI). The API used is the one docs/launcher.md documents.
#include "exp_launcher.h"

#include <cstdio>

int main() {
  if (cuInit(0) != CUDA_SUCCESS)
    return 1;
  CUdevice device;
  CUcontext context;
  cuDeviceGet(&device, 0);
  cuDevicePrimaryCtxRetain(&context, device); // the runtime API's context
  cuCtxSetCurrent(context);
  fusec_exp_chain::Model model;
  if (model.load() != fusec_rt::Ok) {
    std::fprintf(stderr, "%s\n", model.lastError().c_str());
    return 1;
  }
  CUdeviceptr x, b, y;
  cuMemAlloc(&x, 1024 * 2);
  cuMemAlloc(&b, 1024 * 1024 * 2);
  cuMemAlloc(&y, 1024 * 1024 * 2);
  std::vector<fusec_exp_chain::TensorRef> inputs = {{x, fusec_exp_chain::DType::f16, {1024, 1}},
                                                    {b, fusec_exp_chain::DType::f16, {1024, 1024}}};
  std::vector<fusec_exp_chain::TensorRef> outputs = {{y, fusec_exp_chain::DType::f16, {1024, 1024}}};
  int status = model.run(inputs, outputs, nullptr);
  cuCtxSynchronize();
  cuMemFree(x);
  cuMemFree(b);
  cuMemFree(y);
  cuDevicePrimaryCtxRelease(device);
  return status;
}
