//===- FuseTIR.cpp - Merge each primitive function into one kernel --------===//
//
// Contract: every `primitive` function (without `codegen`, and not run by
// a library: fusec/IR/Pattern.h, libraryBoundFunctions) made of
// call_kernels, `get`s and inlined scalar constants becomes one kernel of
// the same name holding the stages of all its members; each call site
// becomes `call_kernel`. The function's results are the kernel's outputs
// (several results: a multi-output kernel), every other member result is an
// internal stage, not in device memory unless a schedule decides so.
// A tensor constant inside the function (a composite's bound constant)
// becomes a parameter that each call site defines and passes, and a tuple
// parameter read by `get`s one parameter per field that each call site
// takes with `get`s (FunctionSignatures.cpp). Parameters
// no stage reads are dropped, here and at the call sites, and
// kernels nothing calls any more are removed (TVM's FuseTIR runs DCE too).
//
// Algorithm, per primitive function:
//   1. Input buffers are the function's tensor parameters, named after them.
//   2. For each member call_kernel, in order: bind the callee's symbolic
//      dims to the argument types, map its input buffers to the arguments'
//      buffers (a scalar constant becomes a literal), rename its outputs
//      after the member's value (`%v`, or `%v_0`, `%v_1` for several) and
//      its internal buffers `%v_<name>`, and append its stages rewritten
//      with those names and dims.
//   3. The buffers of the returned values become outputs; the kernel is
//      verified; the function is replaced.
//
//===----------------------------------------------------------------------===//
#include "FunctionSignatures.h"
#include "GroupOutliner.h"
#include "fusec/IR/Kernel.h"
#include "fusec/IR/Pattern.h"
#include "fusec/Transforms/Passes.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <cctype>

#include <map>
#include <set>

#define DEBUG_TYPE "fuse-tir"

using namespace fusec;

FUSEC_STATISTIC(NumFusedKernels, "num-fused-kernels", "Number of primitive functions merged into kernels");

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
        return KExpr::intConst(int64_t(value->floatValue));
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

class FuseTIR final : public Pass {
public:
  FuseTIR() : Pass("fuse-tir") {}
  bool run(Module &module, PassContext &context) override;

private:
  std::unique_ptr<Kernel> buildKernel(const Module &module, const Function &function,
                                      std::string &problem);
};

} // namespace

std::unique_ptr<Kernel> FuseTIR::buildKernel(const Module &module, const Function &function,
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
    if (binding.kind == ExprKind::Constant && result->type.isTensor() &&
        result->type.getRank() == 0) {
      TensorData data = binding.constant->materialize(result->type);
      scalarOf[result] = KExpr::literal(data.get(0), result->type.getDType());
      return;
    }
    if (binding.kind == ExprKind::Get) {
      const auto &buffers = tupleBuffers.lookup(binding.operands.front().value);
      if (binding.tupleIndex < int64_t(buffers.size())) {
        bufferOf[result] = buffers[binding.tupleIndex];
        return;
      }
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
  std::vector<std::string> returned;
  for (const Operand &operand : function.returnValues) {
    if (tupleBuffers.count(operand.value)) {
      if (function.returnsTuple) {
        problem = "it returns a tuple inside a tuple";
        return nullptr;
      }
      for (const std::string &name : tupleBuffers.lookup(operand.value))
        returned.push_back(name);
      continue;
    }
    returned.push_back(bufferOf.lookup(operand.value));
  }
  if (returned.empty()) {
    problem = "it returns nothing (a kernel needs an output)";
    return nullptr;
  }
  for (const std::string &name : returned) {
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
    copy.name = fresh(name + "_copy");
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

/// Names of the buffers some stage reads.
static void collectReads(const KExprPtr &e, llvm::StringSet<> &reads) {
  if (e->kind == KExpr::Load)
    reads.insert(e->name);
  for (const KExprPtr &arg : e->args)
    collectReads(arg, reads);
}

bool FuseTIR::run(Module &module, PassContext &context) {
  std::set<std::string> calledBefore = module.calledKernels();
  std::vector<std::unique_ptr<Kernel>> created;
  llvm::StringMap<std::vector<size_t>> keptParams; // fused name -> params kept
  llvm::StringSet<> fused;
  std::vector<const Value *> fieldGets; // call-site gets of expanded tuples
  std::vector<std::string> libraryBound = libraryBoundFunctions(module);
  for (const auto &function : module.functions) {
    const Attr *primitive = function->attrs.get("primitive");
    if (!primitive || primitive->kind != Attr::Bool || !primitive->boolValue ||
        function->attrs.get("codegen") || llvm::is_contained(libraryBound, function->name))
      continue;
    liftTensorConstants(module, *function);
    expandTupleParams(module, *function, fieldGets);
    std::string problem;
    std::unique_ptr<Kernel> kernel = buildKernel(module, *function, problem);
    if (!kernel) {
      FUSEC_DEBUG("@" + function->name + " stays a function: " + problem);
      continue;
    }
    llvm::StringSet<> reads;
    for (const KStage &stage : kernel->stages)
      collectReads(stage.body, reads);
    // Symbolic dims bound by the inputs that are read; an unread input stays
    // when it is the only one binding a dim the kernel uses.
    llvm::StringSet<> bound;
    for (const KBuffer &input : kernel->inputs)
      if (reads.count(input.name))
        for (const Dim &dim : input.type.getShape())
          if (dim.isSymbolic())
            bound.insert(dim.symbol);
    std::vector<size_t> kept;
    std::vector<KBuffer> inputs;
    for (size_t i = 0; i < kernel->inputs.size(); ++i) {
      bool bindsNeeded = false;
      for (const Dim &dim : kernel->inputs[i].type.getShape())
        if (dim.isSymbolic() && !bound.count(dim.symbol)) {
          bindsNeeded = true;
          bound.insert(dim.symbol);
        }
      if (reads.count(kernel->inputs[i].name) || bindsNeeded) {
        kept.push_back(i);
        inputs.push_back(kernel->inputs[i]);
      }
    }
    kernel->inputs = std::move(inputs);
    if (!verifyKernel(*kernel, context.diag, "in fuse-tir (merging @" + function->name + ")")) {
      context.internalError = true; // a bug of this pass, not of the input
      return false;
    }
    keptParams[function->name] = kept;
    fused.insert(function->name);
    created.push_back(std::move(kernel));
    ++NumFusedKernels;
  }
  llvm::erase_if(module.functions, [&](const std::unique_ptr<Function> &f) {
    return fused.count(f->name);
  });
  for (auto &kernel : created)
    module.kernels.push_back(std::move(kernel));
  for (auto &function : module.functions)
    function->forEachBinding([&](Binding &binding) {
      if (binding.kind != ExprKind::Call || !fused.count(binding.callee))
        return;
      std::vector<Operand> operands;
      for (size_t index : keptParams[binding.callee])
        operands.push_back(binding.operands[index]);
      binding.kind = ExprKind::CallKernel;
      binding.operands = std::move(operands);
    });
  // The call-site gets of tuple fields that no merged kernel reads.
  if (!fieldGets.empty())
    for (auto &function : module.functions) {
      llvm::DenseSet<const Value *> read;
      function->forEachBinding([&](const Binding &binding) {
        for (const Operand &operand : binding.operands)
          if (!operand.isLiteral())
            read.insert(operand.value);
      });
      auto unread = [&](const Binding *binding) {
        return binding && llvm::is_contained(fieldGets, binding->getResult()) &&
               !read.count(binding->getResult());
      };
      for (BodyItem &item : function->body)
        if (item.block)
          llvm::erase_if(item.block->bindings,
                         [&](const std::unique_ptr<Binding> &b) { return unread(b.get()); });
      llvm::erase_if(function->body,
                     [&](const BodyItem &item) { return unread(item.binding.get()); });
    }
  // The members the merged kernels replace; kernels no function called
  // before this pass (hand-written, say) are not this pass's to remove.
  module.removeUncalledKernels(&calledBefore);
  return true;
}

std::unique_ptr<Pass> fusec::createFuseTIRPass() { return std::make_unique<FuseTIR>(); }
