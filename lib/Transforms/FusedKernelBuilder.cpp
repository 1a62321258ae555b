//===- FusedKernelBuilder.cpp - One kernel from a primitive function -----===//
//
// Contract: see FusedKernelBuilder.h (fuse-tir's kernel construction, TVM's
// FusedTIRConstructor).
//
// Algorithm:
//   1. Input buffers are the function's tensor parameters, named after them.
//   2. For each binding, in order: a 0-d constant becomes a literal; a
//      `tuple`, `get` or alias only passes buffer lists on (a tuple's list
//      is its fields', flattened); a member call_kernel binds the callee's
//      symbolic dims to the argument types, maps its input buffers to the
//      arguments' buffers (a scalar constant becomes a literal), renames
//      its outputs after the member's value (`%v`, or `%v_0`, `%v_1` for
//      several) and its internal buffers `%v_<name>`, and appends its
//      stages rewritten with those names and dims.
//   3. The buffers of the returned values become outputs (a returned input,
//      or a value returned twice, gets an output of its own filled by a
//      copying stage).
//
//===----------------------------------------------------------------------===//
#include "FusedKernelBuilder.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <map>

using namespace fusec;

namespace {

/// How a member kernel's names map into the fused kernel.
struct Renaming {
  llvm::StringMap<std::string> buffers;  // callee buffer -> fused buffer
  llvm::StringMap<KExprPtr> literals;    // callee buffer -> scalar constant
  std::map<std::string, Dim> symbols;    // callee symbol -> caller dim
  llvm::StringMap<std::string> vars;     // stage variable -> fresh name
};

KExprPtr dimExpr(const Dim &dim) {
  return dim.isSymbolic() ? KExpr::var(dim.symbol) : KExpr::intConst(dim.size);
}

Dim renameDim(const Dim &dim, const Renaming &renaming) {
  if (!dim.isSymbolic())
    return dim;
  auto it = renaming.symbols.find(dim.symbol);
  return it == renaming.symbols.end() ? dim : it->second;
}

Type renameType(const Type &type, const Renaming &renaming) {
  Shape shape;
  for (const Dim &dim : type.getShape())
    shape.push_back(renameDim(dim, renaming));
  return Type::tensor(type.getDType(), shape);
}

/// `e` with buffers, symbolic dims and scalar constants substituted.
/// Stage variables shadow symbols of the same name.
KExprPtr rewrite(const KExprPtr &e, const Renaming &renaming,
                 const llvm::StringSet<> &stageVars, bool inIndex) {
  if (e->kind == KExpr::Var) {
    if (stageVars.count(e->name)) {
      auto renamed = renaming.vars.find(e->name);
      return renamed == renaming.vars.end() ? e : KExpr::var(renamed->second);
    }
    auto it = renaming.symbols.find(e->name);
    return it == renaming.symbols.end() ? e : dimExpr(it->second);
  }
  if (e->kind == KExpr::Load) {
    auto literal = renaming.literals.find(e->name);
    if (literal != renaming.literals.end()) {
      // In an index (a gather's index), an integer constant is an index
      // constant, not a value.
      const KExprPtr &value = literal->second;
      if (inIndex && isIntDType(value->dtype))
        return KExpr::intConst(value->intValue);
      return value;
    }
  }
  bool argsInIndex = e->kind == KExpr::Load || e->isIndexArith() || e->isPredicate() ||
                     (e->kind == KExpr::Select && inIndex);
  if (e->kind == KExpr::Call || e->kind == KExpr::Cast)
    argsInIndex = false;
  auto copy = std::make_shared<KExpr>(*e);
  for (KExprPtr &arg : copy->args)
    arg = rewrite(arg, renaming, stageVars, argsInIndex);
  if (e->kind == KExpr::Load)
    copy->name = renaming.buffers.lookup(e->name);
  return copy;
}

} // namespace

/// The number of tensors in `type`, tuples flattened.
static size_t flatFieldCount(const Type &type) {
  if (!type.isTuple())
    return 1;
  size_t count = 0;
  for (const Type &field : type.getFields())
    count += flatFieldCount(field);
  return count;
}
std::unique_ptr<Kernel> fusec::buildFusedKernel(const Module &module, const Function &function,
                                                std::string &problem) {
  auto kernel = std::make_unique<Kernel>();
  kernel->name = function.name;
  llvm::DenseMap<const Value *, std::string> bufferOf;
  llvm::DenseMap<const Value *, KExprPtr> scalarOf;
  llvm::StringSet<> used;
  auto fresh = [&](const std::string &name) {
    std::string unique =
        uniqueValueName(name, [&](llvm::StringRef candidate) { return used.count(candidate); });
    used.insert(unique);
    return unique;
  };
  // Value names are reserved first, so that a member's internal buffer
  // never takes a name the user wrote (names survive).
  used.insert("_");
  for (const auto &param : function.params)
    used.insert(param->name);
  function.forEachBinding([&](const Binding &binding) { used.insert(binding.getResult()->name); });
  llvm::StringSet<> callerSymbols;
  for (const auto &param : function.params)
    if (param->type.isTensor())
      for (const Dim &dim : param->type.getShape())
        if (dim.isSymbolic())
          callerSymbols.insert(dim.symbol);
  for (const auto &param : function.params) {
    used.erase(param->name);
    if (!param->type.isTensor()) {
      problem = "parameter %" + param->name + " is a tuple";
      return nullptr;
    }
    std::string name = fresh(param->name);
    kernel->inputs.push_back({name, param->type, KBuffer::Input, {}});
    bufferOf[param.get()] = name;
  }
  // Results of member kernels that hold several outputs, by value.
  llvm::DenseMap<const Value *, std::vector<std::string>> tupleBuffers;
  bool ok = true;
  function.forEachBinding([&](const Binding &binding) {
    if (!ok)
      return;
    const Value *result = binding.getResult();
    if (result->isScalarConstant()) {
      TensorData data = binding.constant->materialize(result->type);
      DType dtype = result->type.getDType();
      scalarOf[result] = isIntDType(dtype) ? KExpr::intLiteral(data.getInt(0), dtype)
                                           : KExpr::literal(data.get(0), dtype);
      return;
    }
    // Tuples, gets and aliases only re-slice lists of buffers (TVM's
    // FuseTIR does the same); a tuple's list is its fields' flattened.
    if (binding.kind == ExprKind::Get && tupleBuffers.count(binding.operands.front().value)) {
      const Type &tupleType = binding.operands.front().value->type;
      const auto &buffers = tupleBuffers.lookup(binding.operands.front().value);
      size_t offset = 0;
      for (int64_t k = 0; k < binding.tupleIndex; ++k)
        offset += flatFieldCount(tupleType.getFields()[size_t(k)]);
      size_t count = flatFieldCount(result->type);
      if (result->type.isTuple())
        tupleBuffers[result] = std::vector<std::string>(buffers.begin() + long(offset),
                                                        buffers.begin() + long(offset + count));
      else
        bufferOf[result] = buffers[offset];
      return;
    }
    if (binding.kind == ExprKind::Alias || binding.kind == ExprKind::Tuple) {
      std::vector<std::string> buffers;
      for (const Operand &operand : binding.operands) {
        if (!operand.isLiteral() && tupleBuffers.count(operand.value)) {
          const auto &fields = tupleBuffers.lookup(operand.value);
          buffers.insert(buffers.end(), fields.begin(), fields.end());
        } else if (!operand.isLiteral() && bufferOf.count(operand.value)) {
          buffers.push_back(bufferOf.lookup(operand.value));
        } else if (!operand.isLiteral() && scalarOf.count(operand.value) &&
                   binding.kind == ExprKind::Alias) {
          scalarOf[result] = scalarOf.lookup(operand.value);
          return;
        } else {
          problem = "%" + result->name + " is a " + binding.headName() +
                    " of a value that is not a tensor buffer";
          ok = false;
          return;
        }
      }
      if (result->type.isTuple())
        tupleBuffers[result] = std::move(buffers);
      else
        bufferOf[result] = buffers.front();
      return;
    }
    if (binding.kind != ExprKind::CallKernel) {
      problem = "%" + result->name + " is a " + binding.headName() + ", not a kernel call";
      ok = false;
      return;
    }
    const Kernel *callee = module.lookupKernel(binding.callee);
    Renaming renaming;
    for (size_t i = 0; i < callee->inputs.size(); ++i) {
      const Value *argument = binding.operands[i].value;
      const KBuffer &input = callee->inputs[i];
      for (size_t d = 0; d < input.type.getShape().size(); ++d)
        if (input.type.getShape()[d].isSymbolic())
          renaming.symbols[input.type.getShape()[d].symbol] =
              argument->type.getShape()[d];
      if (scalarOf.count(argument))
        renaming.literals[input.name] = scalarOf.lookup(argument);
      else
        renaming.buffers[input.name] = bufferOf.lookup(argument);
    }
    std::vector<std::string> outputs;
    bool tupleResult = callee->getResultType().isTuple();
    if (!tupleResult)
      used.erase(result->name); // the reserved name is this value's own
    for (size_t k = 0; k < callee->outputs.size(); ++k) {
      std::string name = fresh(!tupleResult ? result->name
                                            : result->name + "_" + std::to_string(k));
      renaming.buffers[callee->outputs[k].name] = name;
      outputs.push_back(name);
      kernel->internals.push_back(
          {name, renameType(callee->outputs[k].type, renaming), KBuffer::Internal, {}});
    }
    for (const KBuffer &internal : callee->internals) {
      std::string name = fresh(result->name + "_" + internal.name);
      renaming.buffers[internal.name] = name;
      kernel->internals.push_back(
          {name, renameType(internal.type, renaming), KBuffer::Internal, {}});
    }
    for (const KStage &stage : callee->stages) {
      KStage copy = stage;
      copy.buffer = renaming.buffers.lookup(stage.buffer);
      // A stage variable named like one of the fused kernel's symbolic dims
      // is renamed, so that the dims substituted below are not captured.
      // A new name avoids every variable of the stage, not only those
      // renamed so far (`i0` becoming `i0_` while the stage has `i0_` too).
      llvm::StringSet<> stageVars, assigned;
      for (const auto &[var, extent] : stage.reduceVars)
        stageVars.insert(var);
      for (const std::string &var : stage.spatialVars)
        stageVars.insert(var);
      renaming.vars.clear();
      auto freshVar = [&](std::string &var) {
        std::string name = var;
        while (callerSymbols.count(name) || assigned.count(name) ||
               (name != var && stageVars.count(name)))
          name += "_";
        assigned.insert(name);
        if (name != var)
          renaming.vars[var] = name;
        var = name;
      };
      for (std::string &var : copy.spatialVars)
        freshVar(var);
      for (auto &[var, extent] : copy.reduceVars) {
        freshVar(var);
        extent = renameDim(extent, renaming);
      }
      copy.body = rewrite(stage.body, renaming, stageVars, /*inIndex=*/false);
      kernel->stages.push_back(std::move(copy));
    }
    if (!tupleResult)
      bufferOf[result] = outputs.front();
    else
      tupleBuffers[result] = outputs;
  });
  if (!ok)
    return nullptr;
  // The returned values become outputs, in order; a returned tuple value
  // (a split) contributes each of its fields.
  if (function.returnType.isTuple() &&
      llvm::any_of(function.returnType.getFields(), [](const Type &t) { return t.isTuple(); })) {
    problem = "it returns a tuple inside a tuple";
    return nullptr;
  }
  std::vector<std::pair<std::string, std::string>> returned; // buffer, value name
  for (const Operand &operand : function.returnValues) {
    if (tupleBuffers.count(operand.value)) {
      if (function.returnsTuple) {
        problem = "it returns a tuple inside a tuple";
        return nullptr;
      }
      for (const std::string &name : tupleBuffers.lookup(operand.value))
        returned.push_back({name, name});
      continue;
    }
    returned.push_back({bufferOf.lookup(operand.value), operand.value->name});
  }
  if (returned.empty()) {
    problem = "it returns nothing (a kernel needs an output)";
    return nullptr;
  }
  for (const auto &entry : returned) {
    const std::string &name = entry.first, &valueName = entry.second;
    auto it = std::find_if(kernel->internals.begin(), kernel->internals.end(),
                           [&](const KBuffer &b) { return b.name == name; });
    if (it != kernel->internals.end()) {
      KBuffer output = *it;
      output.role = KBuffer::Output;
      kernel->internals.erase(it);
      kernel->outputs.push_back(output);
      continue;
    }
    // A parameter returned, or a value returned twice: an output of its own
    // that a copying stage fills (TVM's FuseTIR returns an input in place;
    // a kernel's outputs here are distinct buffers).
    const KBuffer *source = nullptr;
    for (const auto *list : {&kernel->inputs, &kernel->outputs})
      for (const KBuffer &buffer : *list)
        if (buffer.name == name)
          source = &buffer;
    if (!source) {
      problem = "it returns a value it does not compute";
      return nullptr;
    }
    KBuffer copy = *source;
    copy.name = fresh(valueName + "_copy");
    copy.role = KBuffer::Output;
    KStage stage;
    stage.buffer = copy.name;
    std::vector<KExprPtr> indices;
    for (size_t d = 0; d < copy.type.getShape().size(); ++d) {
      stage.spatialVars.push_back("i" + std::to_string(d));
      indices.push_back(KExpr::var(stage.spatialVars.back()));
    }
    stage.body = KExpr::load(source->name, indices, copy.type.getDType());
    kernel->stages.push_back(std::move(stage));
    kernel->outputs.push_back(std::move(copy));
  }
  if (function.returnType.isTuple() && kernel->outputs.size() == 1)
    kernel->attrs.set("tuple_result", Attr::makeBool(true));
  return kernel;
}
