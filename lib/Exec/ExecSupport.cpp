//===- ExecSupport.cpp - Inputs, outputs and comparisons for the interpreter ===//
//
// Deterministic random inputs, `.npy` writing, result comparison with
// per-dtype tolerances, the counters' JSON form, and the choice of entry.
//
//===----------------------------------------------------------------------===//
#include "KernelExec.h"
#include "fusec/Exec/Exec.h"
#include "fusec/Parser/Parser.h"
#include "fusec/Support/FileIO.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <functional>
#include <set>

#include <unistd.h>

using namespace fusec;

std::string Counters::toJSON() const {
  auto fill = [](nlohmann::ordered_json &object, int64_t launches, int64_t read,
                 int64_t written, const std::map<std::string, int64_t> &evaluations) {
    object["kernel_launches"] = launches;
    object["global_bytes_read"] = read;
    object["global_bytes_written"] = written;
    object["evaluations"] = nlohmann::ordered_json::object();
    for (const auto &[op, count] : evaluations)
      object["evaluations"][op] = count;
  };
  nlohmann::ordered_json root;
  fill(root, launches, bytesRead, bytesWritten, evaluations);
  if (libraryCalls)
    root["library_calls"] = libraryCalls;
  root["kernels"] = nlohmann::ordered_json::array();
  for (const KernelCounters &kernel : kernels) {
    nlohmann::ordered_json entry, counts;
    entry["name"] = kernel.name;
    if (!kernel.library.empty())
      entry["library"] = kernel.library;
    entry["launches"] = kernel.launches;
    fill(counts, kernel.launches, kernel.bytesRead, kernel.bytesWritten,
         kernel.evaluations);
    counts.erase("kernel_launches");
    entry.update(counts);
    root["kernels"].push_back(entry);
  }
  return root.dump(2) + "\n";
}

std::vector<std::pair<std::string, Type>> fusec::flatInputs(const Function &function) {
  std::vector<std::pair<std::string, Type>> flat;
  std::function<void(const std::string &, const Type &)> add = [&](const std::string &name,
                                                                    const Type &type) {
    if (!type.isTuple())
      return flat.push_back({name, type});
    for (size_t i = 0; i < type.getFields().size(); ++i)
      add(name + "[" + std::to_string(i) + "]", type.getFields()[i]);
  };
  for (const auto &param : function.params)
    add("%" + param->name, param->type);
  return flat;
}

std::string fusec::allocationProblem(int64_t elements, const std::string &what) {
  static const int64_t physicalBytes = [] {
    long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGE_SIZE);
    return pages > 0 && pageSize > 0 ? int64_t(pages) * pageSize : int64_t(1) << 34;
  }();
  constexpr int64_t bytesPerElement = sizeof(double);
  if (elements <= physicalBytes / bytesPerElement)
    return "";
  auto gib = [](double bytes) {
    char text[32];
    snprintf(text, sizeof text, "%.1f", bytes / double(1 << 30));
    return std::string(text);
  };
  return "cannot allocate " + what + ": " + std::to_string(elements) + " elements need " +
         gib(double(elements) * bytesPerElement) + " GiB in the interpreter, more than this "
         "machine's " + gib(double(physicalBytes)) + " GiB of memory";
}

std::vector<TensorData> fusec::makeRandomInputs(
    const Function &function, uint64_t seed,
    const std::map<std::string, int64_t> &dims, std::string &error) {
  std::vector<TensorData> inputs;
  std::vector<std::pair<std::string, Type>> flat = flatInputs(function);
  for (size_t k = 0; k < flat.size(); ++k) {
    const Type &type = flat[k].second;
    std::vector<int64_t> shape;
    for (const Dim &dim : type.getShape()) {
      auto it = dim.isSymbolic() ? dims.find(dim.symbol) : dims.end();
      shape.push_back(dim.isStatic() ? dim.size : it != dims.end() ? it->second : 8);
    }
    error = allocationProblem(exec::saturatingProduct(shape), "input " + flat[k].first);
    if (!error.empty())
      return {};
    TensorData data(type.getDType(), shape);
    for (int64_t i = 0; i < data.getNumElements(); ++i) {
      double u = randomConstantElement(seed + k, i, DType::i32); // in [-128, 128)
      double value = randomConstantElement(seed + k, i, type.getDType());
      if (isIntDType(type.getDType()))
        value = double((int64_t(u) + 128) % 5 - 2);
      else if (type.getDType() == DType::boolean)
        value = (int64_t(u) + 128) % 2;
      data.set(i, value);
    }
    inputs.push_back(std::move(data));
  }
  return inputs;
}

bool fusec::readInputFiles(const Function &function, const std::vector<std::string> &files,
                           std::vector<TensorData> &inputs, std::string &error) {
  std::vector<std::pair<std::string, Type>> flat = flatInputs(function);
  if (files.size() != flat.size()) {
    error = "@" + function.name + " takes " + std::to_string(flat.size()) + " inputs, but " +
            std::to_string(files.size()) + " .npy files were given";
    return false;
  }
  for (size_t i = 0; i < files.size(); ++i) {
    auto data = readNpyFile(files[i], error);
    if (!data)
      return false;
    const auto &[name, type] = flat[i];
    DType want = type.getDType();
    if (data->getDType() != want && !(want == DType::bf16 && data->getDType() == DType::f32)) {
      error = "'" + files[i] + "' holds " + dtypeName(data->getDType()).str() + " values, but " +
              name + " is " + type.str();
      return false;
    }
    TensorData converted(want, data->getShape());
    for (int64_t e = 0; e < data->getNumElements(); ++e)
      want == DType::i64 ? converted.setInt(e, data->getInt(e)) : converted.set(e, data->get(e));
    inputs.push_back(std::move(converted));
  }
  return true;
}

std::string fusec::writeNpyFile(llvm::StringRef path, const TensorData &data) {
  const char *descr = "<f4";
  bool asFloat = false;
  switch (data.getDType()) {
  case DType::f32: descr = "<f4"; break;
  case DType::f16: descr = "<f2"; break;
  case DType::bf16: descr = "<f4"; asFloat = true; break;
  case DType::i8: descr = "|i1"; break;
  case DType::i32: descr = "<i4"; break;
  case DType::i64: descr = "<i8"; break;
  case DType::boolean: descr = "|b1"; break;
  }
  std::string shape = "(";
  for (int64_t dim : data.getShape())
    shape += std::to_string(dim) + ", ";
  if (data.getShape().size() > 1)
    shape.resize(shape.size() - 2);
  else if (data.getShape().size() == 1)
    shape.resize(shape.size() - 1);
  shape += ")";
  std::string header = "{'descr': '" + std::string(descr) +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad so that the data starts at a multiple of 64 bytes, ending in '\n'.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string bytes;
  llvm::raw_string_ostream os(bytes);
  os << "\x93NUMPY" << char(1) << char(0) << char(header.size() & 0xff)
     << char(header.size() >> 8) << header;
  if (asFloat) {
    for (int64_t i = 0; i < data.getNumElements(); ++i) {
      float value = static_cast<float>(data.get(i));
      os.write(reinterpret_cast<const char *>(&value), 4);
    }
  } else {
    os.write(reinterpret_cast<const char *>(data.data()),
             data.getNumElements() * dtypeBytes(data.getDType()));
  }
  return writeFile(path, os.str(), /*binary=*/true);
}

/// Per-dtype tolerances: |a - e| <= atol + rtol * |e|.
static std::pair<double, double> tolerance(DType dtype) {
  switch (dtype) {
  case DType::f32: return {1e-5, 1e-5};
  case DType::f16: return {1e-3, 1e-2};
  case DType::bf16: return {1e-2, 2e-2};
  default: return {0, 0};
  }
}

std::string fusec::compareResults(const std::vector<TensorData> &expected,
                                  const std::vector<TensorData> &actual,
                                  const CompareOptions &options) {
  if (expected.size() != actual.size())
    return std::to_string(actual.size()) + " results instead of " +
           std::to_string(expected.size());
  for (size_t r = 0; r < expected.size(); ++r) {
    const TensorData &e = expected[r], &a = actual[r];
    if (e.getDType() != a.getDType() || e.getShape() != a.getShape())
      return "result " + std::to_string(r) + " changed its type";
    auto [atol, rtol] = tolerance(e.getDType());
    if (options.precision && isFloatDType(e.getDType())) {
      auto [coarseAtol, coarseRtol] = tolerance(*options.precision);
      atol = std::max(atol, coarseAtol), rtol = std::max(rtol, coarseRtol);
    }
    double largest = 0;
    if (options.relativeToOutput)
      for (int64_t i = 0; i < e.getNumElements(); ++i)
        if (std::isfinite(e.get(i)))
          largest = std::max(largest, std::fabs(e.get(i)));
    for (int64_t i = 0; i < e.getNumElements(); ++i) {
      if (e.getDType() == DType::i64) { // exactly, beyond 2^53 too
        if (e.getInt(i) != a.getInt(i))
          return "result " + std::to_string(r) + " element " + std::to_string(i) + " was " +
                 std::to_string(e.getInt(i)) + " and is now " + std::to_string(a.getInt(i));
        continue;
      }
      double x = e.get(i), y = a.get(i);
      if (std::isnan(x) && std::isnan(y))
        continue;
      if (x == y || std::fabs(x - y) <= atol + rtol * std::max(std::fabs(x), largest))
        continue;
      return "result " + std::to_string(r) + " element " + std::to_string(i) +
             " was " + formatFloat(x, false) + " and is now " + formatFloat(y, false);
    }
  }
  return "";
}

EquivalenceCheck::EquivalenceCheck() = default;
EquivalenceCheck::~EquivalenceCheck() = default;

bool EquivalenceCheck::setReference(const Module &module, llvm::StringRef entryName,
                                    std::vector<TensorData> givenInputs, std::string &error) {
  entry = entryName.str();
  inputs = std::move(givenInputs);
  if (!Interpreter(module).run(entry, inputs, reference, error))
    return false;
  // The float64 run waits for the first disagreement (most pipelines have
  // none); passes change the module in place, so it runs on a copy.
  original = std::make_unique<ModuleSnapshot>(module);
  float64Tried = false;
  return true;
}

bool EquivalenceCheck::check(const Module &module, std::string &difference,
                             std::string &error) const {
  std::vector<TensorData> results;
  if (!Interpreter(module).run(entry, inputs, results, error))
    return false;
  difference = compareResults(reference, results);
  if (difference.empty())
    return true;
  // A float64 run that fails (the copy does not parse, an index computed
  // from a float now on the other side of a bound) only leaves the f32
  // comparison.
  std::string float64Error;
  if (!float64Tried) {
    float64Tried = true;
    llvm::SourceMgr sourceMgr;
    DiagEngine quiet(sourceMgr);
    quiet.setHandler([](const llvm::SMDiagnostic &) {});
    std::unique_ptr<Module> copy = original->restore(sourceMgr, quiet, "<check-each input>");
    hasFloat64Reference = copy && Interpreter(*copy, Float32Evaluation::Float64)
                                      .run(entry, inputs, float64Reference, float64Error);
  }
  if (!hasFloat64Reference ||
      !Interpreter(module, Float32Evaluation::Float64).run(entry, inputs, results, float64Error))
    return true;
  std::string float64Difference = compareResults(float64Reference, results);
  if (float64Difference.empty())
    difference.clear();
  else
    difference += "; with f32 evaluated in float64, " + float64Difference;
  return true;
}

const Function *fusec::findEntryFunction(const Module &module, llvm::StringRef name) {
  if (!name.empty())
    return module.lookupFunction(name);
  if (const Function *main = module.lookupFunction("main"))
    return main;
  std::set<std::string> called;
  for (const auto &function : module.functions)
    function->forEachBinding([&](const Binding &binding) {
      if (binding.kind == ExprKind::Call)
        called.insert(binding.callee);
    });
  for (const auto &function : module.functions)
    if (!called.count(function->name))
      return function.get();
  return nullptr;
}
