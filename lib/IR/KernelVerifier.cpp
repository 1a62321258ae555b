//===- KernelVerifier.cpp - Well-formedness of kernels --------------------===//
//
// A kernel is well formed when:
//   1. buffer names are unique and every buffer has a tensor type whose
//      symbolic dims are bound by the input types;
//   2. each stage writes an output or internal buffer, once, naming one
//      fresh spatial variable per buffer dimension; reduction variables are
//      fresh and their extents static or bound symbolic dims;
//   3. every expression is well typed: variables in scope, loads of buffers
//      already written (or inputs) with one index per dimension, index
//      positions integer-valued, operations known with matching operand
//      dtypes, select conditions bool, the body in the stage's dtype;
//   4. every output is written.
//
//===----------------------------------------------------------------------===//
#include "fusec/IR/Kernel.h"

#include "llvm/ADT/StringSet.h"

using namespace fusec;

/// Whether `e` is index arithmetic or a predicate over indices.
static bool isIndexDomain(const KExpr &e) {
  return e.kind == KExpr::IntConst || e.kind == KExpr::Var ||
         e.isIndexArith() || e.isPredicate() ||
         (e.kind == KExpr::Select && e.dtype == DType::i64);
}

namespace {
class KernelVerifier {
public:
  KernelVerifier(const Kernel &kernel, DiagEngine &diag, llvm::StringRef context)
      : kernel(kernel), diag(diag), context(context.str()) {}
  bool verify();

private:
  bool error(llvm::SMLoc loc, const llvm::Twine &message) {
    std::string prefix = context.empty() ? "" : "IR verification failed " + context + ": ";
    diag.error(loc, prefix + "in kernel '@" + kernel.name + "': " + message);
    return false;
  }
  bool checkBuffers();
  bool checkStage(const KStage &stage);
  bool checkIndex(const KExpr &e, llvm::SMLoc loc);
  bool checkValue(const KExpr &e, llvm::SMLoc loc);
  /// A cast operand or select condition may be an index or a value.
  bool checkAny(const KExpr &e, llvm::SMLoc loc) {
    return isIndexDomain(e) ? checkIndex(e, loc) : checkValue(e, loc);
  }

  const Kernel &kernel;
  DiagEngine &diag;
  std::string context;
  llvm::StringSet<> symbols, written, scope;
};
} // namespace

bool KernelVerifier::checkBuffers() {
  llvm::StringSet<> names;
  for (const KBuffer &buffer : kernel.inputs)
    for (const Dim &dim : buffer.type.getShape())
      if (dim.isSymbolic())
        symbols.insert(dim.symbol);
  for (const auto *list : {&kernel.inputs, &kernel.outputs, &kernel.internals})
    for (const KBuffer &buffer : *list) {
      if (!names.insert(buffer.name).second)
        return error(buffer.loc, "buffer '%" + buffer.name + "' is declared twice");
      if (!buffer.type.isTensor())
        return error(buffer.loc, "buffer '%" + buffer.name + "' must have a tensor type");
      for (const Dim &dim : buffer.type.getShape())
        if (dim.isSymbolic() && !symbols.count(dim.symbol))
          return error(buffer.loc, "symbolic dim '" + dim.symbol +
                                       "' is not bound by an input buffer");
    }
  if (kernel.outputs.empty())
    return error(kernel.loc, "a kernel needs at least one output");
  return true;
}

bool KernelVerifier::checkIndex(const KExpr &e, llvm::SMLoc loc) {
  switch (e.kind) {
  case KExpr::IntConst:
    return true;
  case KExpr::Var:
    if (!scope.count(e.name) && !symbols.count(e.name))
      return error(loc, "unknown variable '" + e.name + "'");
    return true;
  case KExpr::Load:
    if (!isIntDType(e.dtype))
      return error(loc, "an index must be an integer, but %" + e.name +
                            " holds " + dtypeName(e.dtype));
    return checkValue(e, loc);
  case KExpr::Select:
    if (e.args[0]->dtype != DType::boolean)
      return error(loc, "select needs a bool condition");
    return checkIndex(*e.args[0], loc) && checkIndex(*e.args[1], loc) &&
           checkIndex(*e.args[2], loc);
  default:
    if (e.isIndexArith() || e.isPredicate()) {
      for (const KExprPtr &arg : e.args) {
        if (e.kind == KExpr::And || e.kind == KExpr::Or || e.kind == KExpr::Not) {
          if (arg->dtype != DType::boolean)
            return error(loc, "'&&', '||' and '!' need bool operands");
        } else if (arg->dtype == DType::boolean) {
          return error(loc, "arithmetic and comparisons need integer operands");
        }
        if (!checkIndex(*arg, loc))
          return false;
      }
      return true;
    }
    return error(loc, "'" + printExpr(e) + "' is a value, not an index");
  }
}

bool KernelVerifier::checkValue(const KExpr &e, llvm::SMLoc loc) {
  switch (e.kind) {
  case KExpr::Literal:
    return true;
  case KExpr::Load: {
    const KBuffer *buffer = kernel.findBuffer(e.name);
    if (!buffer)
      return error(loc, "unknown buffer '%" + e.name + "'");
    if (buffer->role != KBuffer::Input && !written.count(e.name))
      return error(loc, "'%" + e.name + "' is read before a stage writes it");
    if (int64_t(e.args.size()) != buffer->type.getRank())
      return error(loc, "'%" + e.name + "' has rank " +
                            std::to_string(buffer->type.getRank()) + " but is indexed with " +
                            std::to_string(e.args.size()) + " indices");
    if (e.dtype != buffer->type.getDType())
      return error(loc, "load of '%" + e.name + "' has the wrong dtype");
    for (const KExprPtr &index : e.args)
      if (!checkIndex(*index, loc))
        return false;
    return true;
  }
  case KExpr::Cast:
    return checkAny(*e.args[0], loc);
  case KExpr::Select:
    if (e.args[0]->dtype != DType::boolean)
      return error(loc, "select needs a bool condition");
    if (e.args[1]->dtype != e.args[2]->dtype)
      return error(loc, "select branches have different dtypes " +
                            dtypeName(e.args[1]->dtype) + " and " +
                            dtypeName(e.args[2]->dtype));
    return checkAny(*e.args[0], loc) && checkValue(*e.args[1], loc) &&
           checkValue(*e.args[2], loc);
  case KExpr::Call: {
    const KernelOpInfo *op = lookupKernelOp(e.name);
    if (!op)
      return error(loc, "unknown kernel operation '" + e.name + "'");
    if (int(e.args.size()) != op->arity)
      return error(loc, "'" + e.name + "' takes " + std::to_string(op->arity) +
                            " operand(s)");
    if (op->arity == 2 && e.args[0]->dtype != e.args[1]->dtype)
      return error(loc, "'" + e.name + "' operands have different dtypes " +
                            dtypeName(e.args[0]->dtype) + " and " +
                            dtypeName(e.args[1]->dtype));
    if (e.dtype != (op->returnsBool ? DType::boolean : e.args[0]->dtype))
      return error(loc, "'" + e.name + "' has the wrong result dtype");
    for (const KExprPtr &arg : e.args)
      if (!checkValue(*arg, loc))
        return false;
    return true;
  }
  default:
    return error(loc, "'" + printExpr(e) +
                          "' is an index expression in a value position; "
                          "convert it with a cast such as f32(...)");
  }
}

bool KernelVerifier::checkStage(const KStage &stage) {
  const KBuffer *buffer = kernel.findBuffer(stage.buffer);
  if (!buffer)
    return error(stage.loc, "stage writes unknown buffer '%" + stage.buffer + "'");
  if (buffer->role == KBuffer::Input)
    return error(stage.loc, "stage writes the input '%" + stage.buffer + "'");
  if (written.count(stage.buffer))
    return error(stage.loc, "'%" + stage.buffer + "' is written by two stages");
  if (int64_t(stage.spatialVars.size()) != buffer->type.getRank())
    return error(stage.loc, "'%" + stage.buffer + "' has rank " +
                                std::to_string(buffer->type.getRank()) + " but the stage names " +
                                std::to_string(stage.spatialVars.size()) + " variables");
  scope.clear();
  auto declare = [&](const std::string &name) {
    // Buffers are written with '%', so only symbolic dims and the stage's
    // other variables can be confused with an iteration variable.
    if (symbols.count(name) || !scope.insert(name).second)
      return error(stage.loc, "iteration variable '" + name + "' is not fresh");
    return true;
  };
  for (const std::string &var : stage.spatialVars)
    if (!declare(var))
      return false;
  DType bodyDType = buffer->type.getDType();
  if (stage.isReduction()) {
    if (stage.combiner != "add" && stage.combiner != "multiply" &&
        stage.combiner != "max" && stage.combiner != "min")
      return error(stage.loc, "unknown combiner '" + stage.combiner +
                                  "'; expected add, multiply, max or min");
    for (const auto &[var, extent] : stage.reduceVars) {
      if (!declare(var))
        return false;
      if (extent.isSymbolic() && !symbols.count(extent.symbol))
        return error(stage.loc, "reduction extent '" + extent.symbol + "' is not bound");
    }
    bodyDType = stage.accumulate;
  }
  if (!checkValue(*stage.body, stage.loc))
    return false;
  // A reduction converts each body value to its accumulation dtype.
  if (!stage.isReduction() && stage.body->dtype != bodyDType)
    return error(stage.loc, "the stage computes " + dtypeName(stage.body->dtype) +
                                " but '%" + stage.buffer + "' " +
                                (stage.isReduction() ? "accumulates in " : "holds ") +
                                dtypeName(bodyDType));
  written.insert(stage.buffer);
  return true;
}

bool KernelVerifier::verify() {
  if (!checkBuffers())
    return false;
  for (const KStage &stage : kernel.stages)
    if (!checkStage(stage))
      return false;
  for (const KBuffer &buffer : kernel.outputs)
    if (!written.count(buffer.name))
      return error(buffer.loc, "output '%" + buffer.name + "' is never written");
  return true;
}

bool fusec::verifyKernel(const Kernel &kernel, DiagEngine &diag,
                         llvm::StringRef context) {
  return KernelVerifier(kernel, diag, context).verify();
}
