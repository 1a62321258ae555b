//===- Interpreter.cpp - Running graph functions --------------------------===//
//
// Walks a graph function binding by binding. An op binding runs through the
// kernel its legalization produces (compiled once per binding), so graph
// ops and kernels share one set of semantics; `call_kernel` runs the
// module's kernel; `call` recurses. Arguments are checked against parameter
// types: dtypes and static dims must match and each symbolic dim must bind
// to one size throughout a call.
//
//===----------------------------------------------------------------------===//
#include "KernelExec.h"

#include "fusec/IR/Ops.h"
#include "fusec/IR/Pattern.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

#include <functional>

using namespace fusec;
using namespace fusec::exec;

struct Interpreter::Impl {
  const Module &module;
  Counters &counters;
  /// Kernels legalized on the fly for graph-level op bindings.
  /// An op binding's kernel and the parameters that bind the dims it
  /// introduces (dimCarriers), made on its first evaluation.
  struct OpKernel {
    std::unique_ptr<Kernel> kernel;
    std::vector<Value *> carriers;
  };
  llvm::DenseMap<const Binding *, OpKernel> opKernels;
  llvm::DenseMap<const Binding *, RtValue> constants;

  Impl(const Module &module, Counters &counters) : module(module), counters(counters) {}

  KernelCounters &countersFor(const std::string &name) {
    for (KernelCounters &entry : counters.kernels)
      if (entry.name == name)
        return entry;
    counters.kernels.push_back({name, 0, 0, 0, {}, {}});
    return counters.kernels.back();
  }

  RtValue runKernelCall(const Kernel &kernel, const std::vector<RtValue> &args) {
    std::vector<std::shared_ptr<TensorData>> inputs;
    for (const RtValue &arg : args)
      inputs.push_back(arg.tensor);
    checkArguments(kernel, inputs);
    // A kernel of stages is one launch; a lowered kernel counts its own.
    KernelCounters launch{kernel.name, kernel.isLowered() ? 0 : 1, 0, 0, {}, {}};
    std::vector<std::shared_ptr<TensorData>> outputs = runKernel(kernel, inputs, launch);
    KernelCounters &total = countersFor(kernel.name);
    total.launches += launch.launches;
    total.bytesRead += launch.bytesRead;
    total.bytesWritten += launch.bytesWritten;
    counters.launches += launch.launches;
    counters.bytesRead += launch.bytesRead;
    counters.bytesWritten += launch.bytesWritten;
    for (const auto &[op, count] : launch.evaluations) {
      if (!count)
        continue;
      total.evaluations[op] += count;
      counters.evaluations[op] += count;
    }
    if (!kernel.getResultType().isTuple())
      return RtValue{outputs.front(), {}};
    RtValue tuple;
    for (auto &output : outputs)
      tuple.fields.push_back(RtValue{output, {}});
    return tuple;
  }

  static void bindShape(const Type &declared, const TensorData &data,
                        llvm::StringMap<int64_t> &symbols, const std::string &what) {
    if (declared.getDType() != data.getDType() ||
        declared.getRank() != int64_t(data.getShape().size()))
      throw ExecError{what + " expects " + declared.str() + ", got " +
                      dtypeName(data.getDType()).str() + " of rank " +
                      std::to_string(data.getShape().size())};
    for (size_t d = 0; d < data.getShape().size(); ++d) {
      const Dim &dim = declared.getShape()[d];
      int64_t size = data.getShape()[d];
      if (dim.isStatic() && dim.size != size)
        throw ExecError{what + " expects " + declared.str() + ", got size " +
                        std::to_string(size) + " in dimension " + std::to_string(d)};
      if (dim.isSymbolic()) {
        auto [it, inserted] = symbols.try_emplace(dim.symbol, size);
        if (!inserted && it->second != size)
          throw ExecError{what + " binds '" + dim.symbol + "' to " +
                          std::to_string(size) + ", but it is already " +
                          std::to_string(it->second)};
      }
    }
  }

  /// `bindShape` through tuples: every field of a tuple argument is checked
  /// against its declared type (`%p[0]`, nested `%p[0][1]`).
  static void bindValue(const Type &declared, const RtValue &value,
                        llvm::StringMap<int64_t> &symbols, const std::string &what) {
    if (declared.isTensor()) {
      if (value.isTuple())
        throw ExecError{what + " expects " + declared.str() + ", got a tuple"};
      return bindShape(declared, *value.tensor, symbols, what);
    }
    if (!value.isTuple() || value.fields.size() != declared.getFields().size())
      throw ExecError{what + " expects " + declared.str() + ", got " +
                      (value.isTuple() ? "a tuple of " + std::to_string(value.fields.size()) +
                                             " fields"
                                       : std::string("a tensor"))};
    for (size_t k = 0; k < value.fields.size(); ++k)
      bindValue(declared.getFields()[k], value.fields[k], symbols,
                what + "[" + std::to_string(k) + "]");
  }

  void checkArguments(const Kernel &kernel,
                      const std::vector<std::shared_ptr<TensorData>> &inputs) {
    llvm::StringMap<int64_t> symbols;
    for (size_t i = 0; i < kernel.inputs.size(); ++i)
      bindShape(kernel.inputs[i].type, *inputs[i], symbols,
                "kernel @" + kernel.name + " buffer %" + kernel.inputs[i].name);
  }

  RtValue operandValue(const Operand &operand,
                       const llvm::DenseMap<const Value *, RtValue> &env) {
    return env.lookup(operand.value);
  }

  /// A take's index as the user gave it: the legalized kernel sees it
  /// after a negative one is wrapped (-5 of 4 reads -1).
  static void checkTakeIndices(const Binding &binding, const std::vector<RtValue> &args) {
    const TensorData &data = *args[0].tensor, &indices = *args[1].tensor;
    const Attr *axisAttr = binding.attrs.get("axis");
    int64_t extent = data.getNumElements(), axis = -1;
    if (axisAttr) {
      axis = axisAttr->kind == Attr::List ? axisAttr->list.front().intValue : axisAttr->intValue;
      if (axis < 0)
        axis += int64_t(data.getShape().size());
      extent = data.getShape()[size_t(axis)];
    }
    for (int64_t k = 0; k < indices.getNumElements(); ++k) {
      int64_t index = indices.getInt(k);
      if (index < -extent || index >= extent)
        throw ExecError{"take index " + std::to_string(index) + " (element " +
                        std::to_string(k) + " of %" + binding.operands[1].value->name +
                        ") is out of range [-" + std::to_string(extent) + ", " +
                        std::to_string(extent) + ")" +
                        (axis < 0 ? " of the flattened %" : " for axis " + std::to_string(axis) +
                                                                " of %") +
                        binding.operands[0].value->name};
    }
  }

  RtValue evalBinding(const Function &function, const Binding &binding,
                      const llvm::DenseMap<const Value *, RtValue> &env) {
    std::vector<RtValue> args;
    for (const Operand &operand : binding.operands)
      if (!operand.isLiteral())
        args.push_back(operandValue(operand, env));
    switch (binding.kind) {
    case ExprKind::Op: {
      OpKernel &op = opKernels[&binding];
      if (!op.kernel) {
        op.carriers = dimCarriers(function, binding);
        op.kernel = legalizeOp(binding, binding.callee, op.carriers);
      }
      if (binding.callee == "take")
        checkTakeIndices(binding, args);
      for (const Value *carrier : op.carriers)
        args.push_back(env.lookup(carrier));
      return runKernelCall(*op.kernel, args);
    }
    case ExprKind::Constant: {
      RtValue &cached = constants[&binding];
      if (!cached.tensor) {
        std::vector<int64_t> shape;
        for (const Dim &dim : binding.getType().getShape())
          shape.push_back(dim.size); // constants have static types
        checkAllocation(saturatingProduct(shape), "constant %" + binding.getResult()->name);
        cached.tensor = std::make_shared<TensorData>(
            binding.constant->materialize(binding.getType()));
      }
      return cached;
    }
    case ExprKind::Call: {
      const Function &callee = *module.lookupFunction(binding.callee);
      const Attr *codegen = callee.attrs.get("codegen");
      if (codegen && codegen->kind == Attr::String && isLibraryCodegen(codegen->text))
        return callLibrary(callee, *codegen, args);
      return callFunction(callee, args);
    }
    case ExprKind::CallKernel:
      return runKernelCall(*module.lookupKernel(binding.callee), args);
    case ExprKind::CallExtern:
      throw ExecError{"the interpreter cannot run call_extern \"" + binding.callee +
                          "\" (%" + binding.getResult()->name + ")",
                      /*located=*/true};
    case ExprKind::Tuple: {
      RtValue tuple;
      tuple.fields = args;
      return tuple;
    }
    case ExprKind::Get:
      if (!args.front().isTuple() ||
          binding.tupleIndex >= int64_t(args.front().fields.size()))
        throw ExecError{"internal error: get(%" + binding.operands.front().value->name +
                        ", " + std::to_string(binding.tupleIndex) + ") of a non-tuple"};
      return args.front().fields[binding.tupleIndex];
    case ExprKind::Alias:
      return args.front();
    }
    return RtValue();
  }

  /// A library call runs the composite's body, counted as one call of the
  /// library that reads each operand once and writes its result once.
  RtValue callLibrary(const Function &function, const Attr &codegen,
                      const std::vector<RtValue> &args) {
    Counters inner;
    std::swap(inner, counters);
    RtValue result;
    try {
      result = callFunction(function, args);
    } catch (...) {
      std::swap(inner, counters);
      throw;
    }
    std::swap(inner, counters);
    std::string name = function.name;
    function.forEachBinding([&](const Binding &binding) {
      if (binding.kind == ExprKind::Call)
        if (const Function *composite = module.lookupFunction(binding.callee))
          if (const Attr *attr = composite->attrs.get("composite"))
            name = attr->text;
    });
    KernelCounters call{name, 1, 0, 0, inner.evaluations, codegen.text};
    std::function<void(const RtValue &, int64_t &)> bytes = [&](const RtValue &value,
                                                                 int64_t &total) {
      if (value.tensor)
        total += value.tensor->getNumElements() * dtypeBytes(value.tensor->getDType());
      for (const RtValue &field : value.fields)
        bytes(field, total);
    };
    for (const RtValue &arg : args)
      bytes(arg, call.bytesRead);
    bytes(result, call.bytesWritten);
    KernelCounters &total = countersFor(name);
    total.library = call.library;
    total.launches += 1;
    total.bytesRead += call.bytesRead;
    total.bytesWritten += call.bytesWritten;
    counters.launches += 1;
    counters.libraryCalls += 1;
    counters.bytesRead += call.bytesRead;
    counters.bytesWritten += call.bytesWritten;
    for (const auto &[op, count] : call.evaluations) {
      total.evaluations[op] += count;
      counters.evaluations[op] += count;
    }
    return result;
  }

  RtValue callFunction(const Function &function, const std::vector<RtValue> &args) {
    llvm::DenseMap<const Value *, RtValue> env;
    llvm::StringMap<int64_t> symbols;
    for (size_t i = 0; i < function.params.size(); ++i) {
      bindValue(function.params[i]->type, args[i], symbols,
                "@" + function.name + " parameter %" + function.params[i]->name);
      env[function.params[i].get()] = args[i];
    }
    function.forEachBinding([&](const Binding &binding) {
      try {
        env[binding.getResult()] = evalBinding(function, binding, env);
      } catch (ExecError &failure) {
        // Name the innermost binding that failed, as the user wrote it.
        if (!failure.located)
          failure.message = "@" + function.name + " %" + binding.getResult()->name + " (" +
                            binding.headName() + "): " + failure.message;
        failure.located = true;
        throw;
      }
    });
    if (!function.returnsTuple)
      return env.lookup(function.returnValues.front().value);
    RtValue tuple;
    for (const Operand &operand : function.returnValues)
      tuple.fields.push_back(env.lookup(operand.value));
    return tuple;
  }
};

Interpreter::Interpreter(const Module &module, Float32Evaluation float32)
    : impl(std::make_unique<Impl>(module, counters)), float32(float32) {}
Interpreter::~Interpreter() = default;

static void flatten(const RtValue &value, std::vector<TensorData> &out) {
  if (!value.isTuple()) {
    out.push_back(*value.tensor);
    return;
  }
  for (const RtValue &field : value.fields)
    flatten(field, out);
}

bool Interpreter::run(llvm::StringRef entry, const std::vector<TensorData> &inputs,
                      std::vector<TensorData> &outputs, std::string &error) {
  const Function *function = impl->module.lookupFunction(entry);
  if (!function) {
    error = "no function '@" + entry.str() + "' in the module";
    return false;
  }
  size_t expected = flatInputs(*function).size();
  if (inputs.size() != expected) {
    error = "@" + entry.str() + " takes " + std::to_string(expected) + " inputs, but " +
            std::to_string(inputs.size()) + " were given";
    return false;
  }
  // Tuple parameters gather their fields from consecutive inputs.
  size_t next = 0;
  std::function<RtValue(const Type &)> argument = [&](const Type &type) {
    if (!type.isTuple())
      return RtValue{std::make_shared<TensorData>(inputs[next++]), {}};
    RtValue tuple;
    for (const Type &field : type.getFields())
      tuple.fields.push_back(argument(field));
    return tuple;
  };
  std::vector<RtValue> args;
  for (const auto &param : function->params)
    args.push_back(argument(param->type));
  struct Float32Scope { // restored on every exit, a thrown ExecError's too
    bool saved = exec::roundsFloat32;
    explicit Float32Scope(Float32Evaluation mode) {
      exec::roundsFloat32 = mode == Float32Evaluation::Rounded;
    }
    ~Float32Scope() { exec::roundsFloat32 = saved; }
  } scope(float32);
  try {
    RtValue result = impl->callFunction(*function, args);
    outputs.clear();
    flatten(result, outputs);
  } catch (const ExecError &failure) {
    error = failure.message;
    return false;
  }
  return true;
}
