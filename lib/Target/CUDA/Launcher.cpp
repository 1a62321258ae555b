//===- Launcher.cpp - The host launcher and the manifest ------------------===//
//
// A launcher is the runtime engine (include/fusec/Runtime/Runtime.h, copied
// verbatim into the header so the files stand alone) plus the model's
// tables and its cubin, embedded in the source. The C++ API is one class,
// `fusec_<module>::Model` (docs/launcher.md). The manifest describes the
// same tables for people and tools.
//
//===----------------------------------------------------------------------===//
#include "fusec/Runtime/Runtime.h"
#include "fusec/Target/CUDA.h"

#include "llvm/Support/MathExtras.h"

#include <nlohmann/json.hpp>

using namespace fusec;
using namespace fusec::cuda;

namespace fusec {
namespace cuda {
const char *getRuntimeText(); // RuntimeText.cpp, generated from Runtime.h
const char *getCublasLtText(); // CublasLtText.cpp, generated from CublasLt.h
} // namespace cuda
} // namespace fusec

namespace {

std::string identifier(llvm::StringRef name) {
  std::string out;
  for (char c : name)
    out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0])))
    out = "m_" + out;
  return out;
}

template <class T> std::string list(const std::vector<T> &values) {
  if (values.empty())
    return "{0}"; // C++ has no empty arrays; the count says 0
  std::string text = "{";
  for (size_t i = 0; i < values.size(); ++i)
    text += (i ? ", " : "") + std::to_string(values[i]);
  return text + "}";
}

/// An array initializer holding `data`: a string literal (compilers read
/// megabytes of those far faster than lists of integers), printable bytes as
/// themselves and the others as 3-digit octal escapes, which cannot run into
/// a following digit.
std::string bytes(const uint8_t *data, size_t size) {
  if (size == 0)
    return "{0}";
  std::string text;
  text.reserve(size * 4 + size / 16);
  for (size_t i = 0; i < size; ++i) {
    if (i % 64 == 0)
      text += i ? "\"\n  \"" : "\n  \"";
    unsigned char c = data[i];
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\' && c != '?') {
      text += char(c);
    } else {
      // Written digit by digit: models embed megabytes of these.
      const char escape[4] = {'\\', char('0' + (c >> 6)), char('0' + ((c >> 3) & 7)),
                              char('0' + (c & 7))};
      text.append(escape, 4);
    }
  }
  return text + "\"";
}

std::string quoted(const std::string &text) {
  std::string out = "\"";
  for (char c : text)
    out += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
  return out + "\"";
}

const char *dtypeEnum(DType dtype) {
  switch (dtype) {
  case DType::f32: return "fusec_rt::DType::f32";
  case DType::f16: return "fusec_rt::DType::f16";
  case DType::bf16: return "fusec_rt::DType::bf16";
  case DType::i8: return "fusec_rt::DType::i8";
  case DType::i32: return "fusec_rt::DType::i32";
  case DType::i64: return "fusec_rt::DType::i64";
  case DType::boolean: return "fusec_rt::DType::boolean";
  }
  return "fusec_rt::DType::f32";
}

nlohmann::ordered_json shapeJSON(const LaunchPlan &plan, const std::vector<int64_t> &dims) {
  nlohmann::ordered_json shape = nlohmann::ordered_json::array();
  for (int64_t dim : dims) {
    if (dim >= 0)
      shape.push_back(dim);
    else
      shape.push_back(plan.dimNames[size_t(-1 - dim)]);
  }
  return shape;
}

} // namespace

std::string cuda::writeManifest(const LaunchPlan &plan, const std::string &arch) {
  static const char *const slotKinds[] = {"input", "output", "constant", "intermediate"};
  nlohmann::ordered_json root;
  root["module"] = plan.name;
  root["arch"] = arch;
  root["dims"] = plan.dimNames;
  auto tensor = [&](int slot, const std::string &name) {
    nlohmann::ordered_json entry;
    entry["name"] = name;
    entry["dtype"] = dtypeName(plan.slots[slot].dtype).str();
    entry["shape"] = shapeJSON(plan, plan.slots[slot].dims);
    return entry;
  };
  root["inputs"] = nlohmann::ordered_json::array();
  for (size_t i = 0; i < plan.inputSlots.size(); ++i)
    root["inputs"].push_back(tensor(plan.inputSlots[i], plan.inputNames[i]));
  root["outputs"] = nlohmann::ordered_json::array();
  for (int slot : plan.outputSlots)
    root["outputs"].push_back(tensor(slot, plan.slots[slot].name));
  root["kernels"] = nlohmann::ordered_json::array();
  for (const LaunchPlan::Step &step : plan.steps) {
    if (step.kind != fusec_rt::StepDesc::Launch)
      continue;
    nlohmann::ordered_json entry;
    entry["entry"] = plan.entryNames[size_t(step.entry)];
    entry["kernel"] = step.kernel;
    entry["grid"] = step.gridText;
    entry["block"] = step.threads;
    entry["shared_bytes"] = step.sharedBytes;
    root["kernels"].push_back(entry);
  }
  root["buffers"] = nlohmann::ordered_json::array();
  for (size_t s = 0; s < plan.slots.size(); ++s) {
    const LaunchPlan::Slot &slot = plan.slots[s];
    nlohmann::ordered_json entry;
    entry["slot"] = s;
    entry["name"] = slot.name;
    entry["kind"] = slotKinds[slot.kind];
    entry["dtype"] = dtypeName(slot.dtype).str();
    entry["shape"] = shapeJSON(plan, slot.dims);
    // Bytes: a number when static, else the product written out; static
    // factors past int64 (a type bounds the element count, not the bytes)
    // are written out one by one.
    int64_t staticBytes = dtypeBytes(slot.dtype);
    std::string staticFactors = std::to_string(staticBytes), symbolic;
    bool overflow = false;
    for (int64_t dim : slot.dims) {
      if (dim >= 0) {
        staticFactors += " * " + std::to_string(dim);
        overflow |= llvm::MulOverflow(staticBytes, dim, staticBytes);
      } else {
        symbolic += " * " + plan.dimNames[size_t(-1 - dim)];
      }
    }
    if (symbolic.empty() && !overflow)
      entry["bytes"] = staticBytes;
    else
      entry["bytes"] = (overflow ? staticFactors : std::to_string(staticBytes)) + symbolic;
    if (slot.kind == fusec_rt::SlotDesc::Intermediate) {
      entry["first_step"] = slot.firstStep;
      entry["last_step"] = slot.lastStep;
    }
    root["buffers"].push_back(entry);
  }
  root["steps"] = nlohmann::ordered_json::array();
  for (const LaunchPlan::Step &step : plan.steps) {
    nlohmann::ordered_json entry;
    if (step.kind == fusec_rt::StepDesc::Copy) {
      entry["copy"] = {{"from", step.from}, {"to", step.to}};
    } else if (step.kind == fusec_rt::StepDesc::Library) {
      static const char *const epilogues[] = {"none", "relu", "gelu", "bias", "relu_bias", "gelu_bias"};
      entry["library"] = "cublaslt";
      entry["composite"] = step.kernel;
      entry["epilogue"] = epilogues[step.entry];
      entry["transpose_b"] = step.threads != 0;
      entry["args"] = step.args;
    } else {
      entry["launch"] = plan.entryNames[size_t(step.entry)];
      entry["args"] = step.args;
    }
    root["steps"].push_back(entry);
  }
  return root.dump(2) + "\n";
}

LauncherFiles cuda::writeLauncher(const LaunchPlan &plan, const std::string &headerName,
                                  const std::string &image) {
  std::string space = "fusec_" + identifier(plan.name);
  std::string guard = "FUSEC_LAUNCHER_" + identifier(plan.name) + "_H";
  for (char &c : guard)
    c = char(std::toupper(static_cast<unsigned char>(c)));
  LauncherFiles files;
  bool usesLibrary = llvm::any_of(plan.steps, [](const LaunchPlan::Step &step) {
    return step.kind == fusec_rt::StepDesc::Library;
  });
  std::string io;
  for (size_t i = 0; i < plan.inputSlots.size(); ++i) {
    const LaunchPlan::Slot &slot = plan.slots[plan.inputSlots[i]];
    std::string shape;
    for (int64_t dim : slot.dims)
      shape += (shape.empty() ? "" : ",") +
               (dim >= 0 ? std::to_string(dim) : plan.dimNames[size_t(-1 - dim)]);
    io += "///   input " + std::to_string(i) + ": %" + plan.inputNames[i] + " " +
          dtypeName(slot.dtype).str() + "[" + shape + "]\n";
  }
  for (size_t o = 0; o < plan.outputSlots.size(); ++o) {
    const LaunchPlan::Slot &slot = plan.slots[plan.outputSlots[o]];
    std::string shape;
    for (int64_t dim : slot.dims)
      shape += (shape.empty() ? "" : ",") +
               (dim >= 0 ? std::to_string(dim) : plan.dimNames[size_t(-1 - dim)]);
    io += "///   output " + std::to_string(o) + ": " + dtypeName(slot.dtype).str() + "[" +
          shape + "]\n";
  }
  files.header =
      "// Generated by fusec: the host launcher of module '" + plan.name +
      "' (docs/launcher.md).\n"
      "// Build: c++ -std=c++17 -I<cuda>/include " + headerName.substr(0, headerName.size() - 2) +
      ".cpp your_program.cpp -lcuda" + (usesLibrary ? " -L<cuda>/lib64 -lcublasLt" : "") +
      " (libcuda.so comes with the NVIDIA driver;\n"
      "// where no driver is installed, link against <cuda>/lib64/stubs/libcuda.so)\n#ifndef " + guard + "\n#define " + guard +
      "\n\n#include <cuda.h>\n\n" + getRuntimeText() +
      "\nnamespace " + space + " {\n\n"
      "using fusec_rt::DType;\nusing fusec_rt::Status;\nusing fusec_rt::TensorRef;\n\n"
      "/// The compiled model. Needs a current CUDA context for load() and run().\n" + io +
      "class Model {\npublic:\n"
      "  static constexpr int kNumInputs = " + std::to_string(plan.inputSlots.size()) + ";\n"
      "  static constexpr int kNumOutputs = " + std::to_string(plan.outputSlots.size()) + ";\n"
      "  Model();\n"
      "  /// Loads the kernels from a cubin file, or the embedded cubin when\n"
      "  /// `cubinPath` is null, and uploads the constants.\n"
      "  int load(const char *cubinPath = nullptr);\n"
      "  /// The output shapes for these inputs (checks them, binds the dims).\n"
      "  int outputShapes(const std::vector<TensorRef> &inputs,\n"
      "                   std::vector<std::vector<int64_t>> &shapes);\n"
      "  /// Launches every kernel on `stream`, asynchronously. Outputs are\n"
      "  /// caller-allocated device buffers of the shapes outputShapes gives.\n"
      "  int run(const std::vector<TensorRef> &inputs, const std::vector<TensorRef> &outputs,\n"
      "          CUstream stream);\n"
      "  /// Why the last call that returned non-zero failed.\n"
      "  const std::string &lastError() const;\n\n"
      "private:\n  fusec_rt::Engine engine;\n  std::string error;\n};\n\n} // namespace " +
      space + "\n\n#endif // " + guard + "\n";

  std::string &src = files.source;
  src = "// Generated by fusec: the host launcher of module '" + plan.name + "'.\n#include \"" +
        headerName + "\"\n\n#include <fstream>\n#include <iterator>\n\n" +
        (usesLibrary ? std::string(getCublasLtText()) + "\n" : std::string()) + "namespace " +
        space + " {\nnamespace {\n\n";
  std::vector<int64_t> slotDims;
  std::vector<size_t> slotDimStart;
  for (const LaunchPlan::Slot &slot : plan.slots) {
    slotDimStart.push_back(slotDims.size());
    slotDims.insert(slotDims.end(), slot.dims.begin(), slot.dims.end());
  }
  src += "const int64_t kSlotDims[] = " + list(slotDims) + ";\n";
  src += "const fusec_rt::SlotDesc kSlots[] = {\n";
  for (size_t s = 0; s < plan.slots.size(); ++s) {
    const LaunchPlan::Slot &slot = plan.slots[s];
    src += "  {fusec_rt::SlotDesc::Kind(" + std::to_string(slot.kind) + "), " +
           std::to_string(slot.index) + ", " + dtypeEnum(slot.dtype) + ", " +
           std::to_string(slot.dims.size()) + ", kSlotDims + " +
           std::to_string(slotDimStart[s]) + ", " + std::to_string(slot.firstStep) + ", " +
           std::to_string(slot.lastStep) + "}, // " + slot.name + "\n";
  }
  src += "};\n";
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const LaunchPlan::Step &step = plan.steps[i];
    src += "const int64_t kGrid" + std::to_string(i) + "[] = " + list(step.grid) + ";\n";
    src += "const int kArgs" + std::to_string(i) + "[] = " + list(step.args) + ";\n";
    src += "const int64_t kDims" + std::to_string(i) + "[] = " + list(step.dims) + ";\n";
  }
  src += "const fusec_rt::StepDesc kSteps[] = {\n";
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const LaunchPlan::Step &step = plan.steps[i];
    std::string n = std::to_string(i);
    src += "  {fusec_rt::StepDesc::Kind(" + std::to_string(step.kind) + "), " +
           std::to_string(step.entry) + ", " + std::to_string(step.threads) + ", " +
           std::to_string(step.grid.size() / 2) + ", kGrid" + n + ", " +
           std::to_string(step.args.size()) + ", kArgs" + n + ", " +
           std::to_string(step.dims.size()) + ", kDims" + n + ", " + std::to_string(step.from) +
           ", " + std::to_string(step.to) + "},\n";
  }
  if (plan.steps.empty())
    src += "  {fusec_rt::StepDesc::Copy, 0, 0, 0, nullptr, 0, nullptr, 0, nullptr, 0, 0},\n";
  src += "};\n";
  auto names = [&](const std::string &name, const std::vector<std::string> &values) {
    src += "const char *const " + name + "[] = {";
    for (size_t i = 0; i < values.size(); ++i)
      src += (i ? ", " : "") + quoted(values[i]);
    src += std::string(values.empty() ? "nullptr" : "") + "};\n";
  };
  names("kEntryNames", plan.entryNames);
  names("kDimNames", plan.dimNames);
  names("kInputNames", plan.inputNames);
  src += "const int kInputSlots[] = " + list(plan.inputSlots) + ";\n";
  src += "const int kOutputSlots[] = " + list(plan.outputSlots) + ";\n";
  std::vector<int64_t> constantBytes;
  for (size_t c = 0; c < plan.constants.size(); ++c) {
    const TensorData &data = plan.constants[c];
    size_t size = size_t(data.getNumElements() * dtypeBytes(data.getDType()));
    constantBytes.push_back(int64_t(size));
    src += "alignas(16) const unsigned char kConstant" + std::to_string(c) + "[] = " +
           bytes(data.data(), size) + ";\n";
  }
  src += "const unsigned char *const kConstantData[] = {";
  for (size_t c = 0; c < plan.constants.size(); ++c)
    src += (c ? ", " : "") + std::string("kConstant") + std::to_string(c);
  src += std::string(plan.constants.empty() ? "nullptr" : "") + "};\n";
  src += "const int64_t kConstantBytes[] = " + list(constantBytes) + ";\n";
  src += "alignas(64) const unsigned char kImage[] = " +
         bytes(reinterpret_cast<const uint8_t *>(image.data()), image.size()) + ";\n\n";
  src += "const fusec_rt::ModelDesc kModel = {" + quoted(plan.name) + ", " +
         std::to_string(plan.dimNames.size()) + ", kDimNames, " +
         std::to_string(plan.inputSlots.size()) + ", kInputSlots, kInputNames, " +
         std::to_string(plan.outputSlots.size()) + ", kOutputSlots, " +
         std::to_string(plan.slots.size()) + ", kSlots, " + std::to_string(plan.steps.size()) +
         ", kSteps, " + std::to_string(plan.entryNames.size()) + ", kEntryNames, " +
         std::to_string(plan.constants.size()) + ", kConstantData, kConstantBytes};\n\n";
  src += R"CPP(// The driver API, through the engine's table of entry points.
int moduleLoadData(void **module, const void *image) {
  return cuModuleLoadData(reinterpret_cast<CUmodule *>(module), image);
}
int moduleUnload(void *module) { return cuModuleUnload(static_cast<CUmodule>(module)); }
int moduleGetFunction(void **function, void *module, const char *name) {
  return cuModuleGetFunction(reinterpret_cast<CUfunction *>(function),
                             static_cast<CUmodule>(module), name);
}
int memAlloc(unsigned long long *pointer, size_t bytes) {
  return cuMemAlloc(reinterpret_cast<CUdeviceptr *>(pointer), bytes);
}
int memFree(unsigned long long pointer) { return cuMemFree(CUdeviceptr(pointer)); }
int memcpyHtoD(unsigned long long dst, const void *src, size_t bytes) {
  return cuMemcpyHtoD(CUdeviceptr(dst), src, bytes);
}
int memcpyDtoDAsync(unsigned long long dst, unsigned long long src, size_t bytes, void *stream) {
  return cuMemcpyDtoDAsync(CUdeviceptr(dst), CUdeviceptr(src), bytes, static_cast<CUstream>(stream));
}
int launchKernel(void *function, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                 unsigned bz, unsigned shared, void *stream, void **params, void **extra) {
  return cuLaunchKernel(static_cast<CUfunction>(function), gx, gy, gz, bx, by, bz, shared,
                        static_cast<CUstream>(stream), params, extra);
}
int getErrorString(int error, const char **text) {
  return cuGetErrorString(CUresult(error), text);
}
int ctxSynchronize() { return cuCtxSynchronize(); }
const fusec_rt::Driver kDriver = {moduleLoadData, moduleUnload, moduleGetFunction, memAlloc,
                                  memFree, memcpyHtoD, memcpyDtoDAsync, launchKernel,
                                  getErrorString, ctxSynchronize};

} // namespace

Model::Model() : engine(kModel, kDriver LIBRARY) {}

int Model::load(const char *cubinPath) {
  error.clear();
  if (!cubinPath)
    return engine.load(kImage);
  std::ifstream file(cubinPath, std::ios::binary);
  if (!file) {
    error = std::string("cannot read '") + cubinPath + "'";
    return fusec_rt::ErrorState;
  }
  std::vector<char> image((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  image.push_back('\0'); // a PTX image must end with NUL
  return engine.load(image.data());
}

int Model::outputShapes(const std::vector<TensorRef> &inputs,
                        std::vector<std::vector<int64_t>> &shapes) {
  error.clear();
  return engine.outputShapes(inputs, shapes);
}

int Model::run(const std::vector<TensorRef> &inputs, const std::vector<TensorRef> &outputs,
               CUstream stream) {
  error.clear();
  return engine.run(inputs, outputs, stream);
}

const std::string &Model::lastError() const { return error.empty() ? engine.lastError() : error; }

)CPP";
  size_t at = src.find(" LIBRARY)");
  src.replace(at, 9, usesLibrary ? ", &fusec_rt::cublasLtTable())" : ")");
  src += "} // namespace " + space + "\n";
  return files;
}
