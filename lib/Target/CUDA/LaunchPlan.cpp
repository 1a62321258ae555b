//===- LaunchPlan.cpp - What the host does to run a lowered module --------===//
//
// Walks the entry function in program order (calls of graph functions
// inlined, tuples flattened) and records:
//   1. slots: one per tensor — inputs (tuple parameters field by field),
//      constants (materialized; scalar literal operands become 0-d
//      constants), kernel results and scratch buffers (intermediates), and
//      outputs;
//   2. steps: one launch per `launch` of each called kernel (a call of a
//      `codegen = "cublaslt"` function is one library step instead), its pointer
//      arguments (inputs, outputs, scratch) and 64-bit dims (the entry's
//      dims, or constants where the call site's types are static), its
//      grid size as a postfix expression over the entry's dims;
//   3. outputs: a returned kernel result is written straight into the
//      caller's output buffer; a returned input, constant or repeated value
//      is copied there by a final copy step;
//   4. lifetimes: each intermediate lives from the first step of the call
//      that writes it to the last step that reads it.
//
//===----------------------------------------------------------------------===//
#include "fusec/Runtime/Runtime.h"
#include "fusec/IR/Pattern.h"
#include "fusec/Target/CUDA.h"

#include <map>
#include <set>

using namespace fusec;
using namespace fusec::cuda;

fusec_rt::DType cuda::toRuntimeDType(DType dtype) {
  switch (dtype) {
  case DType::f32: return fusec_rt::DType::f32;
  case DType::f16: return fusec_rt::DType::f16;
  case DType::bf16: return fusec_rt::DType::bf16;
  case DType::i8: return fusec_rt::DType::i8;
  case DType::i32: return fusec_rt::DType::i32;
  case DType::i64: return fusec_rt::DType::i64;
  case DType::boolean: return fusec_rt::DType::boolean;
  }
  return fusec_rt::DType::f32;
}

namespace {

class PlanBuilder {
public:
  PlanBuilder(const Module &module, LaunchPlan &plan) : module(module), plan(plan) {}

  bool run(const Function &entry, std::string &errorOut) {
    // The entry's symbolic dims, in first-appearance order, are the model's.
    std::map<std::string, int64_t> symbols;
    std::map<const Value *, std::vector<int>> slots;
    for (const auto &param : entry.params) {
      // A tuple parameter takes one input per field: `t[0]`, `t[1]`, ...
      std::vector<Type> fields = flatten(param->type);
      for (size_t k = 0; k < fields.size(); ++k) {
        const Type &field = fields[k];
        std::string name =
            param->type.isTuple() ? param->name + "[" + std::to_string(k) + "]" : param->name;
        for (const Dim &dim : field.getShape())
          if (dim.isSymbolic() && !symbols.count(dim.symbol)) {
            symbols[dim.symbol] = -1 - int64_t(plan.dimNames.size());
            plan.dimNames.push_back(dim.symbol);
          }
        int slot = addSlot(fusec_rt::SlotDesc::Input, field, symbols, name);
        plan.slots[slot].index = int(plan.inputSlots.size());
        plan.inputSlots.push_back(slot);
        plan.inputNames.push_back(name);
        slots[param.get()].push_back(slot);
      }
    }
    std::vector<int> results;
    if (!walk(entry, symbols, slots, results))
      return errorOut = error, false;
    for (size_t k = 0; k < results.size(); ++k) {
      LaunchPlan::Slot &source = plan.slots[results[k]];
      bool claimable = source.kind == fusec_rt::SlotDesc::Intermediate && !claimed.count(results[k]);
      if (claimable) {
        source.kind = fusec_rt::SlotDesc::Output;
        source.index = int(k);
        claimed.insert(results[k]);
        plan.outputSlots.push_back(results[k]);
        continue;
      }
      LaunchPlan::Slot output = source;
      output.kind = fusec_rt::SlotDesc::Output;
      output.index = int(k);
      output.firstStep = output.lastStep = -1;
      plan.slots.push_back(output);
      int outputSlot = int(plan.slots.size()) - 1;
      LaunchPlan::Step copy;
      copy.kind = fusec_rt::StepDesc::Copy;
      copy.from = results[k];
      copy.to = outputSlot;
      plan.steps.push_back(copy);
      noteRead(results[k]);
      plan.outputSlots.push_back(outputSlot);
    }
    return true;
  }

private:
  static std::vector<Type> flatten(const Type &type) {
    if (!type.isTuple())
      return {type};
    std::vector<Type> fields;
    for (const Type &field : type.getFields())
      for (const Type &inner : flatten(field))
        fields.push_back(inner);
    return fields;
  }

  int addSlot(int kind, const Type &type, const std::map<std::string, int64_t> &symbols,
              const std::string &name) {
    LaunchPlan::Slot slot;
    slot.kind = kind;
    slot.dtype = type.getDType();
    slot.name = name;
    for (const Dim &dim : type.getShape())
      slot.dims.push_back(dim.isSymbolic() ? symbols.at(dim.symbol) : dim.size);
    plan.slots.push_back(slot);
    return int(plan.slots.size()) - 1;
  }

  int addConstant(TensorData data, const std::string &name) {
    LaunchPlan::Slot slot;
    slot.kind = fusec_rt::SlotDesc::Constant;
    slot.index = int(plan.constants.size());
    slot.dtype = data.getDType();
    slot.name = name;
    slot.dims = data.getShape();
    plan.constants.push_back(std::move(data));
    plan.slots.push_back(slot);
    return int(plan.slots.size()) - 1;
  }

  void noteRead(int slot) {
    LaunchPlan::Slot &entry = plan.slots[slot];
    entry.lastStep = std::max(entry.lastStep, int(plan.steps.size()) - 1);
  }

  bool fail(const std::string &message) {
    error = message;
    return false;
  }

  /// Postfix form of an index expression over kernel dims.
  bool postfix(const KExpr &e, const std::map<std::string, int64_t> &kernelDims,
               std::vector<int64_t> &code) {
    switch (e.kind) {
    case KExpr::IntConst:
      code.insert(code.end(), {fusec_rt::PushConst, e.intValue});
      return true;
    case KExpr::Var: {
      auto it = kernelDims.find(e.name);
      if (it == kernelDims.end())
        return fail("grid size uses unknown dim '" + e.name + "'");
      if (it->second >= 0)
        code.insert(code.end(), {fusec_rt::PushConst, it->second});
      else
        code.insert(code.end(), {fusec_rt::PushDim, -1 - it->second});
      return true;
    }
    default:
      break;
    }
    static const std::map<KExpr::Kind, int64_t> ops = {
        {KExpr::Add, fusec_rt::Add},           {KExpr::Sub, fusec_rt::Sub},
        {KExpr::Mul, fusec_rt::Mul},           {KExpr::FloorDiv, fusec_rt::FloorDiv},
        {KExpr::Mod, fusec_rt::Mod},           {KExpr::Min, fusec_rt::Min},
        {KExpr::Max, fusec_rt::Max}};
    auto op = ops.find(e.kind);
    if (op == ops.end())
      return fail("a grid size must be index arithmetic, not '" + printExpr(e) + "'");
    if (!postfix(*e.args[0], kernelDims, code) || !postfix(*e.args[1], kernelDims, code))
      return false;
    code.insert(code.end(), {op->second, 0});
    return true;
  }

  bool callKernel(const Binding &binding, const std::map<std::string, int64_t> &symbols,
                  std::map<const Value *, std::vector<int>> &slots, std::vector<int> &results) {
    const Kernel *kernel = module.lookupKernel(binding.callee);
    if (!kernel)
      return fail("unknown kernel '@" + binding.callee + "'");
    if (!kernel->isLowered())
      return fail("kernel '@" + kernel->name + "' is not lowered; the launcher runs the "
                                              "output of 'lower'");
    std::vector<int> args;
    for (size_t i = 0; i < binding.operands.size(); ++i) {
      const Operand &operand = binding.operands[i];
      if (operand.isLiteral()) {
        DType dtype = i < kernel->inputs.size() ? kernel->inputs[i].type.getDType() : DType::f32;
        TensorData scalar(dtype, {});
        scalar.set(0, operand.literal.asDouble());
        args.push_back(addConstant(std::move(scalar), "literal"));
        continue;
      }
      for (int slot : slots.at(operand.value))
        args.push_back(slot);
    }
    if (args.size() != kernel->inputs.size())
      return fail("call of '@" + kernel->name + "' passes " + std::to_string(args.size()) +
                  " tensors for " + std::to_string(kernel->inputs.size()) + " inputs");
    // The kernel's dims, from the arguments' shapes (static or model dims).
    std::map<std::string, int64_t> kernelDims;
    for (size_t i = 0; i < args.size(); ++i) {
      const Shape &shape = kernel->inputs[i].type.getShape();
      for (size_t d = 0; d < shape.size(); ++d)
        if (shape[d].isSymbolic())
          kernelDims.emplace(shape[d].symbol, plan.slots[args[i]].dims[d]);
    }
    auto slotFor = [&](const KBuffer &buffer, int kind) {
      LaunchPlan::Slot slot;
      slot.kind = kind;
      slot.dtype = buffer.type.getDType();
      bool single = kind == fusec_rt::SlotDesc::Intermediate && kernel->outputs.size() == 1 &&
                    &buffer == &kernel->outputs.front();
      slot.name = single ? binding.getResult()->name
                         : binding.getResult()->name + "." + buffer.name;
      for (const Dim &dim : buffer.type.getShape())
        slot.dims.push_back(dim.isSymbolic() ? kernelDims.at(dim.symbol) : dim.size);
      plan.slots.push_back(slot);
      return int(plan.slots.size()) - 1;
    };
    int firstStep = int(plan.steps.size());
    std::vector<int> outputs, scratch;
    for (const KBuffer &buffer : kernel->outputs)
      outputs.push_back(slotFor(buffer, fusec_rt::SlotDesc::Intermediate));
    for (const KBuffer &buffer : kernel->internals)
      scratch.push_back(slotFor(buffer, fusec_rt::SlotDesc::Intermediate));
    std::vector<int64_t> dimArgs;
    // A model dim -1 - k passes as k; a static size v as the constant -1 - v.
    for (const std::string &dim : kernel->getSymbolicDims())
      dimArgs.push_back(-1 - kernelDims.at(dim));
    for (size_t i = 0; i < kernel->launches.size(); ++i) {
      const LLaunch &launch = kernel->launches[i];
      LaunchPlan::Step step;
      step.kind = fusec_rt::StepDesc::Launch;
      step.kernel = kernel->name;
      std::string entryName = getEntryName(*kernel, i);
      auto found = std::find(plan.entryNames.begin(), plan.entryNames.end(), entryName);
      step.entry = int(found - plan.entryNames.begin());
      if (found == plan.entryNames.end())
        plan.entryNames.push_back(entryName);
      step.threads = int(launch.threads);
      step.sharedBytes = getSharedBytes(launch);
      step.gridText = printExpr(*launch.gridSize);
      if (!postfix(*launch.gridSize, kernelDims, step.grid))
        return false;
      step.args = args;
      step.args.insert(step.args.end(), outputs.begin(), outputs.end());
      step.args.insert(step.args.end(), scratch.begin(), scratch.end());
      step.dims = dimArgs;
      plan.steps.push_back(step);
      for (int slot : args)
        noteRead(slot);
    }
    int lastStep = int(plan.steps.size()) - 1;
    for (const auto *list : {&outputs, &scratch})
      for (int slot : *list) {
        plan.slots[slot].firstStep = firstStep;
        plan.slots[slot].lastStep = std::max(plan.slots[slot].lastStep, lastStep);
      }
    results = outputs;
    return true;
  }

  /// A call of a `codegen = "cublaslt"` function: one Library step. The
  /// composite it calls must be a matmul of two 2-D operands (the second
  /// possibly `permute_dims {axes = [1, 0]}`), then optionally `add` of a
  /// bias, then optionally `nn.relu` or `nn.gelu_tanh`.
  bool libraryCall(const Binding &binding, const Function &outer,
                   std::map<const Value *, std::vector<int>> &slots, std::vector<int> &results) {
    std::string where = "@" + outer.name + " (codegen \"cublaslt\")";
    const Binding *inner = nullptr;
    outer.forEachBinding([&](const Binding &b) {
      if (b.kind == ExprKind::Call)
        inner = &b;
    });
    const Function *composite = inner ? module.lookupFunction(inner->callee) : nullptr;
    if (!composite || composite->params.size() != outer.params.size())
      return fail(where + " must call one composite function with its own parameters");
    for (size_t i = 0; i < outer.params.size(); ++i)
      if (inner->operands[i].isLiteral() || inner->operands[i].value != outer.params[i].get())
        return fail(where + " must pass its parameters to the composite in order");
    // The chain matmul -> [add bias] -> [relu | gelu_tanh], read from the root.
    const Value *root = composite->returnValues.size() == 1 && !composite->returnsTuple
                            ? composite->returnValues.front().value
                            : nullptr;
    auto defining = [](const Value *v) { return v ? v->definingBinding : nullptr; };
    const Binding *node = defining(root);
    int activation = 0; // 0 none, 1 relu, 2 gelu
    if (node && node->kind == ExprKind::Op &&
        (node->callee == "nn.relu" || node->callee == "nn.gelu_tanh")) {
      activation = node->callee == "nn.relu" ? 1 : 2;
      node = defining(node->operands[0].value);
    }
    const Value *bias = nullptr;
    if (node && node->kind == ExprKind::Op && node->callee == "add") {
      const Binding *left = defining(node->operands[0].value);
      int matmulSide = left && left->kind == ExprKind::Op && left->callee == "matmul" ? 0 : 1;
      bias = node->operands[1 - matmulSide].value;
      node = defining(node->operands[matmulSide].value);
    }
    if (!node || node->kind != ExprKind::Op || node->callee != "matmul")
      return fail(where + ": the composite '" + composite->name +
                  "' is not a matmul with a bias/relu/gelu_tanh epilogue that cuBLASLt runs");
    const Value *a = node->operands[0].value, *b = node->operands[1].value;
    bool transposeB = false;
    if (const Binding *permute = defining(b); permute && permute->kind != ExprKind::Constant) {
      const Attr *axes = permute->attrs.get("axes");
      // No axes: the reverse, a transpose for a matrix.
      bool transposes = permute->kind == ExprKind::Op && permute->callee == "permute_dims" &&
                        (!axes ? permute->getType().getRank() == 2
                               : axes->list.size() == 2 && axes->list[0].intValue == 1 &&
                                     axes->list[1].intValue == 0);
      if (!transposes)
        return fail(where + ": the matmul's second operand must be a parameter or its transpose");
      transposeB = true;
      b = permute->operands[0].value;
    }
    auto paramSlot = [&](const Value *v) -> int {
      // A constant bound into the composite (bind-constants) is a plan
      // constant.
      if (const Binding *constant = defining(v);
          constant && constant->kind == ExprKind::Constant) {
        if (!constant->getType().getStaticNumElements())
          return -1;
        return addConstant(constant->constant->materialize(constant->getType()),
                           constant->getResult()->name);
      }
      for (size_t i = 0; i < composite->params.size(); ++i)
        if (composite->params[i].get() == v) {
          const Operand &operand = binding.operands[i];
          if (operand.isLiteral() || slots.at(operand.value).size() != 1)
            return -1;
          return slots.at(operand.value).front();
        }
      return -1;
    };
    int aSlot = paramSlot(a), bSlot = paramSlot(b), biasSlot = bias ? paramSlot(bias) : -2;
    if (aSlot < 0 || bSlot < 0 || biasSlot == -1)
      return fail(where + ": cuBLASLt's operands must be parameters of the composite");
    const LaunchPlan::Slot &aInfo = plan.slots[aSlot], &bInfo = plan.slots[bSlot];
    if (aInfo.dims.size() != 2 || bInfo.dims.size() != 2 || (bias && plan.slots[biasSlot].dims.size() != 1))
      return fail(where + ": cuBLASLt runs 2-D matmuls with a 1-D bias");
    // A user's pattern may name any chain `cublaslt.*`: what the library
    // call computes must be what the composite's body computes, or the GPU
    // result would differ from the interpreter's silently.
    DType dtype = aInfo.dtype;
    if (dtype != DType::f16 && dtype != DType::bf16 && dtype != DType::f32)
      return fail(where + ": cuBLASLt runs f16, bf16 and f32 matmuls, not " + dtypeName(dtype).str());
    if (bInfo.dtype != dtype || (bias && plan.slots[biasSlot].dtype != dtype) ||
        node->getType().getDType() != dtype || root->type.getDType() != dtype)
      return fail(where + ": cuBLASLt's operands, bias and result must all be " +
                  dtypeName(dtype).str() + " (no out_dtype, no mixed dtypes)");
    int64_t n = transposeB ? bInfo.dims[0] : bInfo.dims[1];
    if (bias && plan.slots[biasSlot].dims[0] != n)
      return fail(where + ": the bias must have one element per output column");
    if (!(node->getType() == root->type))
      return fail(where + ": the epilogue must keep the matmul's shape (a bias that broadcasts "
                          "the result is not cuBLASLt's)");
    LaunchPlan::Step step;
    step.kind = fusec_rt::StepDesc::Library;
    step.entry = bias ? fusec_rt::MatmulCall::Bias + activation : activation;
    step.threads = transposeB ? 1 : 0;
    step.kernel = composite->attrs.get("composite") ? composite->attrs.get("composite")->text
                                                    : composite->name;
    int64_t m = aInfo.dims[0], k = aInfo.dims[1];
    // Slot dims (>= 0 static, -1 - d model dim d) to step dims (the reverse).
    for (int64_t dim : {m, n, k})
      step.dims.push_back(-1 - dim);
    LaunchPlan::Slot out;
    out.kind = fusec_rt::SlotDesc::Intermediate;
    out.dtype = root->type.getDType();
    out.name = binding.getResult()->name;
    out.dims = {m, n};
    plan.slots.push_back(out);
    int outSlot = int(plan.slots.size()) - 1;
    step.args = {aSlot, bSlot};
    if (bias)
      step.args.push_back(biasSlot);
    step.args.push_back(outSlot);
    plan.steps.push_back(step);
    for (size_t i = 0; i + 1 < step.args.size(); ++i)
      noteRead(step.args[i]);
    plan.slots[outSlot].firstStep = plan.slots[outSlot].lastStep = int(plan.steps.size()) - 1;
    results = {outSlot};
    return true;
  }

  bool walk(const Function &function, const std::map<std::string, int64_t> &symbols,
            std::map<const Value *, std::vector<int>> &slots, std::vector<int> &results) {
    bool ok = true;
    function.forEachBinding([&](const Binding &binding) {
      if (!ok)
        return;
      std::vector<int> produced;
      switch (binding.kind) {
      case ExprKind::Constant:
        if (!binding.getType().isTensor() || !binding.getType().getStaticNumElements()) {
          ok = fail("constant %" + binding.getResult()->name + " needs a static tensor type");
          return;
        }
        produced.push_back(addConstant(binding.constant->materialize(binding.getType()),
                                       binding.getResult()->name));
        break;
      case ExprKind::CallKernel:
        ok = callKernel(binding, symbols, slots, produced);
        break;
      case ExprKind::Tuple:
      case ExprKind::Alias:
        for (const Operand &operand : binding.operands) {
          if (operand.isLiteral()) {
            ok = fail("a literal in a tuple has no tensor to run");
            return;
          }
          const std::vector<int> &fields = slots.at(operand.value);
          produced.insert(produced.end(), fields.begin(), fields.end());
        }
        break;
      case ExprKind::Get: {
        // The field's slots: count the flattened slots of earlier fields.
        const Value *tuple = binding.operands[0].value;
        const std::vector<int> &all = slots.at(tuple);
        size_t start = 0;
        for (int64_t f = 0; f < binding.tupleIndex; ++f)
          start += flatten(tuple->type.getFields()[f]).size();
        size_t count = flatten(binding.getType()).size();
        produced.assign(all.begin() + start, all.begin() + start + count);
        break;
      }
      case ExprKind::Call: {
        const Function *callee = module.lookupFunction(binding.callee);
        if (!callee) {
          ok = fail("unknown function '@" + binding.callee + "'");
          return;
        }
        const Attr *codegen = callee->attrs.get("codegen");
        if (codegen && codegen->kind == Attr::String && isLibraryCodegen(codegen->text)) {
          ok = libraryCall(binding, *callee, slots, produced);
          break;
        }
        std::map<std::string, int64_t> calleeSymbols;
        std::map<const Value *, std::vector<int>> calleeSlots;
        for (size_t i = 0; i < callee->params.size(); ++i) {
          const Operand &operand = binding.operands[i];
          if (operand.isLiteral()) {
            TensorData scalar(callee->params[i]->type.getDType(), {});
            scalar.set(0, operand.literal.asDouble());
            calleeSlots[callee->params[i].get()] = {addConstant(std::move(scalar), "literal")};
            continue;
          }
          const std::vector<int> &argSlots = slots.at(operand.value);
          calleeSlots[callee->params[i].get()] = argSlots;
          std::vector<Type> fields = flatten(callee->params[i]->type);
          for (size_t f = 0; f < fields.size() && f < argSlots.size(); ++f)
            for (size_t d = 0; d < fields[f].getShape().size(); ++d)
              if (fields[f].getShape()[d].isSymbolic())
                calleeSymbols.emplace(fields[f].getShape()[d].symbol,
                                      plan.slots[argSlots[f]].dims[d]);
        }
        ok = walk(*callee, calleeSymbols, calleeSlots, produced);
        break;
      }
      case ExprKind::CallExtern:
        // The launcher calls a library through the outlined function of a
        // composite (codegen = "cublaslt"), whose body says what to compute.
        ok = fail("'" + binding.headName() + "' (%" + binding.getResult()->name +
                  ") cannot run on the GPU: a call_extern names no routine the launcher "
                  "has (library calls are fuse-by-pattern's composites with a codegen "
                  "attribute, as -O2 makes them)");
        return;
      default:
        ok = fail("'" + binding.headName() + "' (%" + binding.getResult()->name +
                  ") cannot run on the GPU: the launcher runs lowered modules, where every "
                  "op is a call_kernel (run -O0, -O1 or -O2)");
        return;
      }
      slots[binding.getResult()] = produced;
    });
    if (!ok)
      return false;
    for (const Operand &operand : function.returnValues) {
      if (operand.isLiteral())
        return fail("a returned literal has no tensor to run");
      const std::vector<int> &fields = slots.at(operand.value);
      results.insert(results.end(), fields.begin(), fields.end());
    }
    return true;
  }

  const Module &module;
  LaunchPlan &plan;
  std::string error;
  std::set<int> claimed;
};

} // namespace

bool cuda::buildLaunchPlan(const Module &module, const Function &entry, LaunchPlan &plan,
                           std::string &error) {
  plan = LaunchPlan();
  plan.name = module.name.empty() ? entry.name : module.name;
  return PlanBuilder(module, plan).run(entry, error);
}

cuda::ModelTables::ModelTables(const LaunchPlan &plan) {
  for (const LaunchPlan::Slot &slot : plan.slots)
    slotDims.insert(slotDims.end(), slot.dims.begin(), slot.dims.end());
  size_t start = 0;
  for (const LaunchPlan::Slot &slot : plan.slots) {
    slots.push_back({fusec_rt::SlotDesc::Kind(slot.kind), slot.index, toRuntimeDType(slot.dtype),
                     int(slot.dims.size()), slotDims.data() + start, slot.firstStep,
                     slot.lastStep});
    start += slot.dims.size();
  }
  for (const LaunchPlan::Step &step : plan.steps)
    steps.push_back({fusec_rt::StepDesc::Kind(step.kind), step.entry, step.threads,
                     int(step.grid.size() / 2), step.grid.data(), int(step.args.size()),
                     step.args.data(), int(step.dims.size()), step.dims.data(), step.from,
                     step.to});
  for (const std::string &name : plan.dimNames)
    dimNames.push_back(name.c_str());
  for (const std::string &name : plan.inputNames)
    inputNames.push_back(name.c_str());
  for (const std::string &name : plan.entryNames)
    entryNames.push_back(name.c_str());
  for (const TensorData &data : plan.constants) {
    constantData.push_back(data.data());
    constantBytes.push_back(data.getNumElements() * dtypeBytes(data.getDType()));
  }
  desc = {plan.name.c_str(), int(dimNames.size()), dimNames.data(), int(plan.inputSlots.size()),
          plan.inputSlots.data(), inputNames.data(), int(plan.outputSlots.size()),
          plan.outputSlots.data(), int(slots.size()), slots.data(), int(steps.size()),
          steps.data(), int(entryNames.size()), entryNames.data(), int(constantData.size()),
          constantData.data(), constantBytes.data()};
}
