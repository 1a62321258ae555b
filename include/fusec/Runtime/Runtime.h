//===- Runtime.h - The engine behind every generated launcher ---*- C++ -*-===//
//
// Plain C++17 and the CUDA driver API, nothing else: this file is copied
// verbatim into every launcher header fusec writes (--launcher), and
// fusec-run --device=cuda uses it directly. A model is described by tables
// (ModelDesc): tensor slots, the steps that launch kernels or copy tensors,
// index expressions for sizes and grids in postfix form. The engine checks
// inputs and binds symbolic dims, plans a workspace in which intermediates
// whose lifetimes do not overlap share memory, and launches the steps in
// order on the caller's stream. Driver entry points come through a table of
// function pointers (Driver), so that the same code links against libcuda
// (a launcher) or against a dlopen'ed one (fusec-run). Library steps (a
// composite that fuse-by-pattern gave to cuBLASLt) go through a second
// table (Library), which a launcher fills from CublasLt.h.
//
// Every failure returns a Status and sets lastError(); nothing throws or
// aborts.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_RT_RUNTIME_H
#define FUSEC_RT_RUNTIME_H

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace fusec_rt {

enum class DType : int { f32 = 0, f16, bf16, i8, i32, i64, boolean };

inline int64_t dtypeBytes(DType dtype) {
  switch (dtype) {
  case DType::f32: case DType::i32: return 4;
  case DType::f16: case DType::bf16: return 2;
  case DType::i64: return 8;
  default: return 1;
  }
}

inline const char *dtypeName(DType dtype) {
  static const char *const names[] = {"f32", "f16", "bf16", "i8", "i32", "i64", "bool"};
  return names[static_cast<int>(dtype)];
}

enum Status : int {
  Ok = 0,
  ErrorArity = 1,  // wrong number of inputs or outputs
  ErrorDType = 2,  // an input or output of the wrong dtype
  ErrorShape = 3,  // a shape that does not match (or binds a dim two ways)
  ErrorCuda = 4,   // a driver call failed
  ErrorState = 5,  // run() before load(), or an unreadable cubin file
  ErrorAlignment = 6, // a tensor not 16-byte aligned (kernels use vector access)
};

/// A tensor in device memory, row-major.
struct TensorRef {
  unsigned long long data = 0; // CUdeviceptr
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
};

/// Postfix index expressions: pairs (opcode, operand).
enum ExprOp : int64_t { PushConst = 0, PushDim, Add, Sub, Mul, FloorDiv, Mod, Min, Max };

/// A dim of a slot's shape: >= 0 a static size, -1 - k the model's dim k.
struct SlotDesc {
  enum Kind : int { Input = 0, Output, Constant, Intermediate };
  Kind kind;
  int index; // Input/Output: position; Constant: constant number
  DType dtype;
  int rank;
  const int64_t *dims;
  int firstStep, lastStep; // Intermediate: the steps that write and last read it
};

/// A matmul run by a library: d[m,n] = epilogue(a[m,k] · b + bias), where
/// b is [k,n], or [n,k] when `transposeB`; bias is [n]; all row-major, of
/// one dtype, accumulated in f32. The epilogues are cuBLASLt's.
struct MatmulCall {
  enum Epilogue : int { None = 0, Relu, Gelu, Bias, ReluBias, GeluBias };
  int epilogue;
  int transposeB;
  DType dtype;
  int64_t m, n, k;
  unsigned long long a, b, bias, d; // bias is 0 without a bias epilogue
};

/// The library entry points the engine uses for Library steps. `create`
/// runs at the first library step (a handle, a workspace), `destroy` when
/// the engine is released; `error` explains a non-zero result.
struct Library {
  void *(*create)();
  void (*destroy)(void *state);
  int (*matmul)(void *state, const MatmulCall &call, void *stream);
  const char *(*error)(void *state);
};

struct StepDesc {
  enum Kind : int { Launch = 0, Copy, Library };
  Kind kind;
  int entry;       // Launch: index into entryNames; Library: MatmulCall::Epilogue
  int threads;     // Launch; Library: 1 if b is transposed
  int gridLength;  // Launch: postfix pairs of the grid size
  const int64_t *grid;
  int numArgs;     // Launch: slots passed as pointers, in parameter order;
  const int *args; // Library: a, b, [bias,] d
  int numDims;     // Launch: 64-bit integer parameters, in order: >= 0 the
  const int64_t *dims; // model's dim k, < 0 the constant -1 - value; Library: m, n, k
  int from, to;    // Copy: slots
};

struct ModelDesc {
  const char *name;
  int numDims;
  const char *const *dimNames;
  int numInputs;
  const int *inputSlots;
  const char *const *inputNames;
  int numOutputs;
  const int *outputSlots;
  int numSlots;
  const SlotDesc *slots;
  int numSteps;
  const StepDesc *steps;
  int numEntries;
  const char *const *entryNames;
  int numConstants;
  const unsigned char *const *constantData;
  const int64_t *constantBytes;
};

/// The driver entry points the engine uses (cuda.h signatures, with the
/// handle types as void pointers).
struct Driver {
  int (*moduleLoadData)(void **module, const void *image);
  int (*moduleUnload)(void *module);
  int (*moduleGetFunction)(void **function, void *module, const char *name);
  int (*memAlloc)(unsigned long long *pointer, size_t bytes);
  int (*memFree)(unsigned long long pointer);
  int (*memcpyHtoD)(unsigned long long dst, const void *src, size_t bytes);
  int (*memcpyDtoDAsync)(unsigned long long dst, unsigned long long src, size_t bytes,
                         void *stream);
  int (*launchKernel)(void *function, unsigned gridX, unsigned gridY, unsigned gridZ,
                      unsigned blockX, unsigned blockY, unsigned blockZ, unsigned sharedBytes,
                      void *stream, void **params, void **extra);
  int (*getErrorString)(int error, const char **text);
  int (*ctxSynchronize)();
};

/// Evaluates a postfix expression over the bound dims.
inline int64_t evaluate(const int64_t *code, int length, const std::vector<int64_t> &dims) {
  int64_t stack[64];
  int top = 0;
  for (int i = 0; i < length; ++i) {
    int64_t op = code[2 * i], operand = code[2 * i + 1];
    if (op == PushConst || op == PushDim) {
      if (top == 64)
        return 0;
      stack[top++] = op == PushConst ? operand : dims[static_cast<size_t>(operand)];
      continue;
    }
    if (top < 2)
      return 0;
    int64_t b = stack[--top], a = stack[top - 1], r = 0;
    switch (op) {
    case Add: r = a + b; break;
    case Sub: r = a - b; break;
    case Mul: r = a * b; break;
    case FloorDiv:
    case Mod: {
      if (b == 0)
        return 0;
      int64_t q = a / b;
      if (a % b != 0 && ((a < 0) != (b < 0)))
        --q;
      r = op == FloorDiv ? q : a - q * b;
      break;
    }
    case Min: r = a < b ? a : b; break;
    case Max: r = a > b ? a : b; break;
    default: return 0;
    }
    stack[top - 1] = r;
  }
  return top == 1 ? stack[0] : 0;
}

class Engine {
public:
  Engine(const ModelDesc &desc, const Driver &driver, const Library *library = nullptr)
      : desc(desc), driver(driver), library(library) {}
  ~Engine() { release(); }
  Engine(const Engine &) = delete;
  Engine &operator=(const Engine &) = delete;

  const std::string &lastError() const { return error; }

  /// Loads a cubin (or PTX) image, finds every entry point and uploads the
  /// constants. Needs a current CUDA context.
  int load(const void *image) {
    release();
    if (int status = check(driver.moduleLoadData(&module, image), "cuModuleLoadData"))
      return status;
    functions.assign(static_cast<size_t>(desc.numEntries), nullptr);
    for (int e = 0; e < desc.numEntries; ++e)
      if (int status = check(driver.moduleGetFunction(&functions[e], module, desc.entryNames[e]),
                             std::string("cuModuleGetFunction(") + desc.entryNames[e] + ")"))
        return status;
    constants.assign(static_cast<size_t>(desc.numConstants), 0);
    for (int c = 0; c < desc.numConstants; ++c) {
      size_t bytes = static_cast<size_t>(std::max<int64_t>(desc.constantBytes[c], 1));
      if (int status = check(driver.memAlloc(&constants[c], bytes), "cuMemAlloc"))
        return status;
      if (desc.constantBytes[c] > 0)
        if (int status = check(driver.memcpyHtoD(constants[c], desc.constantData[c],
                                                 static_cast<size_t>(desc.constantBytes[c])),
                               "cuMemcpyHtoD"))
          return status;
    }
    // A copy from pageable memory may return before its DMA ends, and a
    // kernel on a non-blocking stream is not ordered after it.
    if (desc.numConstants > 0)
      if (int status = check(driver.ctxSynchronize(), "cuCtxSynchronize"))
        return status;
    return Ok;
  }

  /// Checks the inputs and binds the model's symbolic dims from them.
  int bind(const std::vector<TensorRef> &inputs, std::vector<int64_t> &dims) {
    if (static_cast<int>(inputs.size()) != desc.numInputs)
      return fail(ErrorArity, "expected " + std::to_string(desc.numInputs) + " inputs, got " +
                                  std::to_string(inputs.size()));
    dims.assign(static_cast<size_t>(desc.numDims), -1);
    for (int i = 0; i < desc.numInputs; ++i) {
      const SlotDesc &slot = desc.slots[desc.inputSlots[i]];
      const TensorRef &input = inputs[static_cast<size_t>(i)];
      std::string what = std::string("input ") + std::to_string(i) + " (%" +
                         desc.inputNames[i] + ")";
      if (input.dtype != slot.dtype)
        return fail(ErrorDType, what + " must be " + dtypeName(slot.dtype) + ", not " +
                                    dtypeName(input.dtype));
      if (input.data % 16 != 0)
        return fail(ErrorAlignment, what + " must be 16-byte aligned (cuMemAlloc's are)");
      if (static_cast<int>(input.shape.size()) != slot.rank)
        return fail(ErrorShape, what + " must have rank " + std::to_string(slot.rank) +
                                    ", not " + std::to_string(input.shape.size()));
      for (int d = 0; d < slot.rank; ++d) {
        int64_t size = input.shape[static_cast<size_t>(d)], want = slot.dims[d];
        if (size < 0)
          return fail(ErrorShape, what + " has a negative dim");
        if (want >= 0 && size != want)
          return fail(ErrorShape, what + " dim " + std::to_string(d) + " must be " +
                                      std::to_string(want) + ", not " + std::to_string(size));
        if (want < 0) {
          int64_t &bound = dims[static_cast<size_t>(-1 - want)];
          if (bound >= 0 && bound != size)
            return fail(ErrorShape, what + " dim " + std::to_string(d) + " binds '" +
                                        desc.dimNames[-1 - want] + "' to " +
                                        std::to_string(size) + " but it is already " +
                                        std::to_string(bound));
          bound = size;
        }
      }
    }
    for (int k = 0; k < desc.numDims; ++k)
      if (dims[static_cast<size_t>(k)] < 0)
        return fail(ErrorShape, std::string("no input binds the dim '") + desc.dimNames[k] + "'");
    return Ok;
  }

  std::vector<int64_t> shapeOf(int slotIndex, const std::vector<int64_t> &dims) const {
    const SlotDesc &slot = desc.slots[slotIndex];
    std::vector<int64_t> shape;
    for (int d = 0; d < slot.rank; ++d)
      shape.push_back(slot.dims[d] >= 0 ? slot.dims[d] : dims[static_cast<size_t>(-1 - slot.dims[d])]);
    return shape;
  }

  /// -1 past 2^63 - 1 bytes (a static shape may describe more than any
  /// machine holds; its byte count must not wrap around to a small one).
  int64_t bytesOf(int slotIndex, const std::vector<int64_t> &dims) const {
    int64_t bytes = dtypeBytes(desc.slots[slotIndex].dtype);
    for (int64_t size : shapeOf(slotIndex, dims))
      if (__builtin_mul_overflow(bytes, size, &bytes))
        return -1;
    return bytes;
  }

  /// The output shapes for these inputs (so that callers can allocate).
  int outputShapes(const std::vector<TensorRef> &inputs,
                   std::vector<std::vector<int64_t>> &shapes) {
    std::vector<int64_t> dims;
    if (int status = bind(inputs, dims))
      return status;
    shapes.clear();
    for (int o = 0; o < desc.numOutputs; ++o)
      shapes.push_back(shapeOf(desc.outputSlots[o], dims));
    return Ok;
  }

  /// Workspace offsets of the intermediates (-1 for other slots): largest
  /// first, each at the lowest 256-byte aligned offset that overlaps no
  /// placed intermediate whose lifetime [firstStep, lastStep] overlaps its
  /// own. Pure computation: testable without a GPU. `total` is -1 when
  /// the intermediates together pass 2^61 bytes.
  std::vector<int64_t> planWorkspace(const std::vector<int64_t> &dims, int64_t &total) const {
    std::vector<int64_t> offsets(static_cast<size_t>(desc.numSlots), -1), bytes(offsets.size(), 0);
    std::vector<int> order;
    // Every offset is at most the sum of the sizes, which stays far from
    // int64's end: no sum below can wrap.
    constexpr int64_t kMaxBytes = int64_t(1) << 61;
    int64_t sum = 0;
    for (int s = 0; s < desc.numSlots; ++s)
      if (desc.slots[s].kind == SlotDesc::Intermediate) {
        int64_t slotBytes = bytesOf(s, dims);
        sum += slotBytes < 0 || slotBytes > kMaxBytes ? kMaxBytes + 1 : slotBytes;
        if (sum > kMaxBytes) {
          total = -1;
          return offsets;
        }
        bytes[static_cast<size_t>(s)] = (slotBytes + 255) / 256 * 256;
        order.push_back(s);
      }
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      return bytes[static_cast<size_t>(a)] > bytes[static_cast<size_t>(b)];
    });
    std::vector<int> placed;
    total = 0;
    for (int s : order) {
      const SlotDesc &slot = desc.slots[s];
      int64_t offset = 0;
      for (bool moved = true; moved;) {
        moved = false;
        for (int other : placed) {
          const SlotDesc &o = desc.slots[other];
          bool livesTogether = slot.firstStep <= o.lastStep && o.firstStep <= slot.lastStep;
          int64_t start = offsets[static_cast<size_t>(other)],
                  end = start + bytes[static_cast<size_t>(other)];
          if (livesTogether && offset < end && start < offset + bytes[static_cast<size_t>(s)]) {
            offset = end;
            moved = true;
          }
        }
      }
      offsets[static_cast<size_t>(s)] = offset;
      total = std::max(total, offset + bytes[static_cast<size_t>(s)]);
      placed.push_back(s);
    }
    return offsets;
  }

  /// Runs the model: checks inputs and outputs, grows the workspace if
  /// needed, and launches every step on `stream` (asynchronously).
  int run(const std::vector<TensorRef> &inputs, const std::vector<TensorRef> &outputs,
          void *stream) {
    if (!module)
      return fail(ErrorState, "run() before a successful load()");
    std::vector<int64_t> dims;
    if (int status = bind(inputs, dims))
      return status;
    if (static_cast<int>(outputs.size()) != desc.numOutputs)
      return fail(ErrorArity, "expected " + std::to_string(desc.numOutputs) + " outputs, got " +
                                  std::to_string(outputs.size()));
    for (int o = 0; o < desc.numOutputs; ++o) {
      const TensorRef &output = outputs[static_cast<size_t>(o)];
      int slot = desc.outputSlots[o];
      if (output.dtype != desc.slots[slot].dtype)
        return fail(ErrorDType, "output " + std::to_string(o) + " must be " +
                                    dtypeName(desc.slots[slot].dtype));
      if (output.shape != shapeOf(slot, dims))
        return fail(ErrorShape, "output " + std::to_string(o) + " has the wrong shape");
      if (output.data % 16 != 0)
        return fail(ErrorAlignment, "output " + std::to_string(o) +
                                        " must be 16-byte aligned (cuMemAlloc's are)");
    }
    int64_t total = 0;
    std::vector<int64_t> offsets = planWorkspace(dims, total);
    if (total < 0)
      return fail(ErrorShape, "the intermediates need more than 2^61 bytes");
    if (total > workspaceBytes) {
      // Earlier runs may still be using the old workspace on some stream.
      if (workspace) {
        if (int status = check(driver.ctxSynchronize(), "cuCtxSynchronize"))
          return status;
        driver.memFree(workspace);
      }
      workspace = 0;
      workspaceBytes = 0;
      if (int status = check(driver.memAlloc(&workspace, static_cast<size_t>(total)), "cuMemAlloc"))
        return status;
      workspaceBytes = total;
    }
    auto address = [&](int s) -> unsigned long long {
      const SlotDesc &slot = desc.slots[s];
      switch (slot.kind) {
      case SlotDesc::Input: return inputs[static_cast<size_t>(slot.index)].data;
      case SlotDesc::Output: return outputs[static_cast<size_t>(slot.index)].data;
      case SlotDesc::Constant: return constants[static_cast<size_t>(slot.index)];
      default: return workspace + static_cast<unsigned long long>(offsets[static_cast<size_t>(s)]);
      }
    };
    for (int i = 0; i < desc.numSteps; ++i) {
      const StepDesc &step = desc.steps[i];
      if (step.kind == StepDesc::Copy) {
        int64_t bytes = bytesOf(step.to, dims);
        if (bytes > 0)
          if (int status = check(driver.memcpyDtoDAsync(address(step.to), address(step.from),
                                                        static_cast<size_t>(bytes), stream),
                                 "cuMemcpyDtoDAsync"))
            return status;
        continue;
      }
      if (step.kind == StepDesc::Library) {
        if (int status = runLibraryStep(step, dims, address, stream))
          return status;
        continue;
      }
      int64_t grid = evaluate(step.grid, step.gridLength, dims);
      if (grid <= 0)
        continue; // nothing to compute (a zero-size tensor)
      if (grid > 2147483647)
        return fail(ErrorShape, std::string("grid too large for ") + desc.entryNames[step.entry]);
      std::vector<unsigned long long> pointers;
      std::vector<int64_t> values;
      std::vector<void *> params;
      pointers.reserve(static_cast<size_t>(step.numArgs));
      values.reserve(static_cast<size_t>(step.numDims));
      for (int a = 0; a < step.numArgs; ++a) {
        pointers.push_back(address(step.args[a]));
        params.push_back(&pointers.back());
      }
      for (int d = 0; d < step.numDims; ++d) {
        int64_t code = step.dims[d];
        values.push_back(code >= 0 ? dims[static_cast<size_t>(code)] : -1 - code);
        params.push_back(&values.back());
      }
      if (int status = check(driver.launchKernel(functions[static_cast<size_t>(step.entry)],
                                                 static_cast<unsigned>(grid), 1, 1,
                                                 static_cast<unsigned>(step.threads), 1, 1, 0,
                                                 stream, params.data(), nullptr),
                             std::string("cuLaunchKernel(") + desc.entryNames[step.entry] + ")"))
        return status;
    }
    return Ok;
  }

private:
  template <class Address>
  int runLibraryStep(const StepDesc &step, const std::vector<int64_t> &dims, Address &address,
                     void *stream) {
    if (!library || !library->matmul)
      return fail(ErrorState, "the model runs a matmul through cuBLASLt, but this engine has no "
                              "library table (use the generated launcher, linked with -lcublasLt)");
    if (!libraryState && library->create)
      libraryState = library->create();
    auto value = [&](int64_t code) { return code >= 0 ? dims[static_cast<size_t>(code)] : -1 - code; };
    MatmulCall call;
    call.epilogue = step.entry;
    call.transposeB = step.threads;
    call.dtype = desc.slots[step.args[0]].dtype;
    call.m = value(step.dims[0]);
    call.n = value(step.dims[1]);
    call.k = value(step.dims[2]);
    call.a = address(step.args[0]);
    call.b = address(step.args[1]);
    call.bias = step.numArgs == 4 ? address(step.args[2]) : 0;
    call.d = address(step.args[step.numArgs - 1]);
    if (call.m == 0 || call.n == 0)
      return Ok;
    // An empty contraction leaves d = epilogue(bias), which cuBLASLt is not
    // documented to compute (its layouts need a leading dimension of at
    // least one row): refused rather than trusted.
    if (call.k == 0)
      return fail(ErrorShape, "a cuBLASLt matmul over an empty contraction (k = 0) is not "
                              "supported; compile without the library patterns (-O1) for it");
    if (library->matmul(libraryState, call, stream) != 0)
      return fail(ErrorCuda, std::string("cuBLASLt matmul failed: ") +
                                 (library->error ? library->error(libraryState) : "unknown error"));
    return Ok;
  }

  int fail(int status, const std::string &message) {
    error = message;
    return status;
  }
  int check(int result, const std::string &call) {
    if (result == 0)
      return Ok;
    const char *text = nullptr;
    if (driver.getErrorString)
      driver.getErrorString(result, &text);
    return fail(ErrorCuda, call + " failed: " + (text ? text : "error " + std::to_string(result)));
  }
  void release() {
    for (unsigned long long pointer : constants)
      if (pointer)
        driver.memFree(pointer);
    constants.clear();
    if (workspace)
      driver.memFree(workspace);
    workspace = 0;
    workspaceBytes = 0;
    if (module)
      driver.moduleUnload(module);
    module = nullptr;
    if (libraryState && library && library->destroy)
      library->destroy(libraryState);
    libraryState = nullptr;
    functions.clear();
  }

  const ModelDesc &desc;
  Driver driver;
  const Library *library;
  void *libraryState = nullptr;
  void *module = nullptr;
  std::vector<void *> functions;
  std::vector<unsigned long long> constants;
  unsigned long long workspace = 0;
  int64_t workspaceBytes = 0;
  std::string error;
};

} // namespace fusec_rt

#endif // FUSEC_RT_RUNTIME_H
