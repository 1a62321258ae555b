//===- KernelVerifier.cpp - Well-formedness of kernels --------------------===//
//
// A kernel is well formed when:
//   0. the attributes fusec reads have their types: op_pattern a kind of
//      spec §5, tuple_result a bool;
//   1. buffer names are unique and every buffer has a tensor type whose
//      symbolic dims are bound by the input types;
//   2. each stage writes an output or internal buffer, once, naming one
//      fresh spatial variable per buffer dimension; reduction variables are
//      fresh and their extents static or bound symbolic dims;
//   3. every expression is well typed: variables in scope, loads of buffers
//      already written (or inputs) with one index per dimension, index
//      positions integer-valued, operations known with matching operand
//      dtypes, select conditions bool, the body in the stage's dtype;
//   4. every output is written, and no load reads outside its buffer at
//      every point where it runs, certainly (KernelBounds.cpp);
//   5. a schedule, when present, agrees with the stages (Schedule.cpp);
//   6. a lowered kernel (no stages, launches instead): shared and local
//      buffers have static shapes, block-level statements (parallel,
//      barrier, shuffle) only in a launch body, loops/ifs/stores only in a
//      parallel body (block-level loops, whose extent no thread variable
//      may change, hold block-level statements), every variable bound by
//      the launch, an enclosing loop
//      or a symbolic dim, shuffles between locals of one dtype with constant
//      indices, vector loops of a constant power-of-two width holding stores
//      only.
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
  bool checkAttrs();
  bool checkBuffers();
  bool checkStage(const KStage &stage);
  bool checkLowered();
  bool checkLaunch(const LLaunch &launch);
  bool checkBlockStmts(const std::vector<LStmt> &body, const LLaunch &launch);
  /// The launch scope, rank and indices of the buffer a store or copy writes.
  bool checkStoreTarget(const LStmt &stmt, const KBuffer &buffer);
  bool checkThreadStmt(const LStmt &stmt, bool inVector);
  bool declareVar(const std::string &name, llvm::SMLoc loc);
  bool checkIndex(const KExpr &e, llvm::SMLoc loc);
  bool checkValue(const KExpr &e, llvm::SMLoc loc);
  /// A cast operand or select condition may be an index or a value.
  bool checkAny(const KExpr &e, llvm::SMLoc loc) {
    return isIndexDomain(e) ? checkIndex(e, loc) : checkValue(e, loc);
  }

  /// A shared or local buffer must be declared by the launch using it.
  bool checkLaunchScope(const KBuffer &buffer, llvm::SMLoc loc) {
    if (buffer.role != KBuffer::Shared && buffer.role != KBuffer::Local)
      return true;
    if (currentLaunch)
      for (const KBuffer &own : currentLaunch->buffers)
        if (own.name == buffer.name)
          return true;
    return error(loc, "'%" + buffer.name + "' is declared by another launch");
  }

  const Kernel &kernel;
  DiagEngine &diag;
  std::string context;
  llvm::StringSet<> symbols, written, scope;
  const LLaunch *currentLaunch = nullptr;
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
  if (e.loc.isValid()) // a parsed expression: the caret at it
    loc = e.loc;
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
  case KExpr::Literal:
  case KExpr::Call:
  case KExpr::Cast:
    // An integer value computed from loads (a gather's index that a fused
    // producer computes, inlined by `lower`; a constant index stage) is an
    // index too.
    if (!isIntDType(e.dtype))
      return error(loc, "an index must be an integer, but '" + printExpr(e) + "' is " +
                            dtypeName(e.dtype).str());
    return checkValue(e, loc);
  case KExpr::Select:
    // An integer select is an index or a value (after inlining, a value
    // select can land in a cast); its condition any bool.
    if (e.args[0]->dtype != DType::boolean)
      return error(loc, "select needs a bool condition");
    return checkAny(*e.args[0], loc) && checkAny(*e.args[1], loc) && checkAny(*e.args[2], loc);
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
  if (e.loc.isValid())
    loc = e.loc;
  switch (e.kind) {
  case KExpr::Literal:
    return true;
  case KExpr::Load: {
    const KBuffer *buffer = kernel.findBuffer(e.name);
    if (!buffer)
      return error(loc, "unknown buffer '%" + e.name + "'");
    if (!kernel.isLowered() && buffer->role != KBuffer::Input && !written.count(e.name))
      return error(loc, "'%" + e.name + "' is read before a stage writes it");
    if (int64_t(e.args.size()) != buffer->type.getRank())
      return error(loc, "'%" + e.name + "' has rank " +
                            std::to_string(buffer->type.getRank()) + " but is indexed with " +
                            std::to_string(e.args.size()) + " indices");
    if (e.dtype != buffer->type.getDType())
      return error(loc, "load of '%" + e.name + "' has the wrong dtype");
    if (!checkLaunchScope(*buffer, loc))
      return false;
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
  llvm::SMLoc where;
  std::string outOfBounds = findLoadOutOfBounds(kernel, stage, where);
  if (!outOfBounds.empty())
    return error(where, outOfBounds);
  written.insert(stage.buffer);
  return true;
}

bool KernelVerifier::declareVar(const std::string &name, llvm::SMLoc loc) {
  if (symbols.count(name) || !scope.insert(name).second)
    return error(loc, "loop variable '" + name + "' is not fresh");
  return true;
}

bool KernelVerifier::checkStoreTarget(const LStmt &stmt, const KBuffer &buffer) {
  if (!checkLaunchScope(buffer, stmt.loc))
    return false;
  if (int64_t(stmt.indices.size()) != buffer.type.getRank())
    return error(stmt.loc, "'%" + stmt.buffer + "' has rank " +
                               std::to_string(buffer.type.getRank()) + " but is indexed with " +
                               std::to_string(stmt.indices.size()) + " indices");
  for (const KExprPtr &index : stmt.indices)
    if (!checkIndex(*index, stmt.loc))
      return false;
  return true;
}

bool KernelVerifier::checkThreadStmt(const LStmt &stmt, bool inVector) {
  switch (stmt.kind) {
  case LStmt::Parallel:
  case LStmt::Barrier:
  case LStmt::Shuffle:
  case LStmt::Mma:
  case LStmt::LdMatrix:
  case LStmt::AsyncCommit:
  case LStmt::AsyncWait:
    return error(stmt.loc, "'parallel', 'barrier', shuffles, mma, ldmatrix, 'async_commit' "
                           "and 'async_wait' belong to the launch body, not inside a "
                           "parallel region");
  case LStmt::AsyncCopy: {
    if (inVector)
      return error(stmt.loc, "a vector loop holds stores only");
    const KBuffer *dst = kernel.findBuffer(stmt.buffer);
    const KBuffer *src =
        stmt.value && stmt.value->kind == KExpr::Load ? kernel.findBuffer(stmt.value->name)
                                                      : nullptr;
    if (!dst || dst->role != KBuffer::Shared || !src || src->role == KBuffer::Shared ||
        src->role == KBuffer::Local)
      return error(stmt.loc, "an async_copy copies from a global buffer into a shared one");
    if (!checkStoreTarget(stmt, *dst))
      return false;
    if (!checkValue(*stmt.value, stmt.loc) || !checkIndex(*stmt.extent, stmt.loc))
      return false;
    if (src->type.getDType() != dst->type.getDType())
      return error(stmt.loc, "an async_copy's buffers have different dtypes");
    int64_t bytes = stmt.count * dtypeBytes(dst->type.getDType());
    if (stmt.count < 1 || (bytes != 4 && bytes != 8 && bytes != 16))
      return error(stmt.loc, "an async_copy moves 4, 8 or 16 bytes; " +
                                 std::to_string(stmt.count) + " " +
                                 dtypeName(dst->type.getDType()) + " elements are " +
                                 std::to_string(bytes));
    return true;
  }
  case LStmt::For: {
    if (inVector)
      return error(stmt.loc, "a vector loop holds stores only");
    if (!checkIndex(*stmt.extent, stmt.loc))
      return false;
    if (stmt.loopKind == LStmt::Vector) {
      int64_t width = stmt.extent->kind == KExpr::IntConst ? stmt.extent->intValue : 0;
      if (width < 1 || width > 16 || (width & (width - 1)) != 0)
        return error(stmt.loc, "a vector loop's extent must be a constant power of two "
                               "up to 16");
    }
    if (!declareVar(stmt.var, stmt.loc))
      return false;
    for (const LStmt &inner : stmt.body)
      if (!checkThreadStmt(inner, stmt.loopKind == LStmt::Vector))
        return false;
    scope.erase(stmt.var);
    return true;
  }
  case LStmt::If:
    if (inVector)
      return error(stmt.loc, "a vector loop holds stores only");
    if (stmt.cond->dtype != DType::boolean)
      return error(stmt.loc, "an 'if' needs a bool condition");
    if (!checkAny(*stmt.cond, stmt.loc))
      return false;
    for (const auto *list : {&stmt.body, &stmt.elseBody})
      for (const LStmt &inner : *list)
        if (!checkThreadStmt(inner, false))
          return false;
    return true;
  case LStmt::Store: {
    const KBuffer *buffer = kernel.findBuffer(stmt.buffer);
    if (!buffer)
      return error(stmt.loc, "store to unknown buffer '%" + stmt.buffer + "'");
    if (buffer->role == KBuffer::Input)
      return error(stmt.loc, "store to the input '%" + stmt.buffer + "'");
    if (!checkStoreTarget(stmt, *buffer))
      return false;
    if (!checkValue(*stmt.value, stmt.loc))
      return false;
    if (stmt.value->dtype != buffer->type.getDType())
      return error(stmt.loc, "the store computes " + dtypeName(stmt.value->dtype) +
                                 " but '%" + stmt.buffer + "' holds " +
                                 dtypeName(buffer->type.getDType()));
    return true;
  }
  }
  return true;
}

bool KernelVerifier::checkLaunch(const LLaunch &launch) {
  if (launch.threads < 1 || launch.threads > 1024)
    return error(launch.loc, "a block has 1 to 1024 threads");
  scope.clear();
  currentLaunch = &launch;
  if (!checkIndex(*launch.gridSize, launch.loc))
    return false;
  if (!declareVar(launch.blockVar, launch.loc) || !declareVar(launch.threadVar, launch.loc))
    return false;
  return checkBlockStmts(launch.body, launch);
}

bool KernelVerifier::checkBlockStmts(const std::vector<LStmt> &body, const LLaunch &launch) {
  for (const LStmt &stmt : body) {
    switch (stmt.kind) {
    case LStmt::For:
      // Every thread runs a block-level loop in step (barriers inside).
      if (!checkIndex(*stmt.extent, stmt.loc))
        return false;
      if (usesVar(*stmt.extent, launch.threadVar))
        return error(stmt.loc, "a block-level loop's extent must be the same for every "
                               "thread; it uses '" + launch.threadVar + "'");
      if (stmt.loopKind == LStmt::Vector)
        return error(stmt.loc, "a vector loop belongs inside a parallel region");
      if (!declareVar(stmt.var, stmt.loc) || !checkBlockStmts(stmt.body, launch))
        return false;
      scope.erase(stmt.var);
      break;
    case LStmt::Parallel:
      for (const LStmt &inner : stmt.body)
        if (!checkThreadStmt(inner, false))
          return false;
      break;
    case LStmt::Barrier:
    case LStmt::AsyncCommit:
      break;
    case LStmt::LdMatrix: {
      if (launch.threads % 32 != 0)
        return error(stmt.loc, "an ldmatrix needs whole warps (threads a multiple of 32)");
      const KBuffer *dst = kernel.findBuffer(stmt.buffer);
      const KBuffer *src =
          stmt.value && stmt.value->kind == KExpr::Load ? kernel.findBuffer(stmt.value->name)
                                                        : nullptr;
      if (!dst || dst->role != KBuffer::Local || dst->type.getRank() != 1 || !src ||
          src->role != KBuffer::Shared)
        return error(stmt.loc, "an ldmatrix loads from a shared buffer into a 1-d local one");
      if (!checkLaunchScope(*dst, stmt.loc) || !checkValue(*stmt.value, stmt.loc))
        return false;
      if (dtypeBytes(dst->type.getDType()) != 2 || src->type.getDType() != dst->type.getDType())
        return error(stmt.loc, "an ldmatrix moves 16-bit elements (f16 or bf16) between "
                               "buffers of one dtype");
      if (stmt.indices.size() != 1 || stmt.indices[0]->kind != KExpr::IntConst ||
          stmt.indices[0]->intValue < 0 ||
          stmt.indices[0]->intValue > dst->type.getShape()[0].size - 2 * stmt.count)
        return error(stmt.loc, "an ldmatrix fragment starts at a constant offset with room for " +
                                   std::to_string(2 * stmt.count) + " elements");
      break;
    }
    case LStmt::AsyncWait:
      if (stmt.count < 0 || stmt.count > 7)
        return error(stmt.loc, "async_wait leaves 0 to 7 groups pending");
      break;
    case LStmt::Mma: {
      if (launch.threads % 32 != 0)
        return error(stmt.loc, "an mma needs whole warps (threads a multiple of 32)");
      // Fragments: A 8 f16/bf16, B 4, C and D 4 f32, in locals, at constant
      // offsets with room for the whole fragment.
      auto fragment = [&](const std::string &name, const std::vector<KExprPtr> &indices,
                          int64_t count, bool f32) -> bool {
        const KBuffer *buffer = kernel.findBuffer(name);
        if (!buffer || buffer->role != KBuffer::Local || buffer->type.getRank() != 1)
          return error(stmt.loc, "an mma's fragments are 1-d local buffers");
        if (!checkLaunchScope(*buffer, stmt.loc))
          return false;
        DType dtype = buffer->type.getDType();
        if (f32 ? dtype != DType::f32 : (dtype != DType::f16 && dtype != DType::bf16))
          return error(stmt.loc, std::string("an mma's ") +
                                     (f32 ? "C and D fragments hold f32"
                                          : "A and B fragments hold f16 or bf16"));
        if (indices.size() != 1 || indices[0]->kind != KExpr::IntConst ||
            indices[0]->intValue < 0 ||
            indices[0]->intValue > buffer->type.getShape()[0].size - count)
          return error(stmt.loc, "an mma fragment starts at a constant offset with room for " +
                                     std::to_string(count) + " elements");
        return true;
      };
      if (stmt.operands.size() != 3 || !fragment(stmt.buffer, stmt.indices, 4, true))
        return false;
      for (size_t i = 0; i < 3; ++i)
        if (stmt.operands[i]->kind != KExpr::Load)
          return error(stmt.loc, "an mma's operands are fragments");
      if (!fragment(stmt.operands[0]->name, stmt.operands[0]->args, 8, false) ||
          !fragment(stmt.operands[1]->name, stmt.operands[1]->args, 4, false) ||
          !fragment(stmt.operands[2]->name, stmt.operands[2]->args, 4, true))
        return false;
      if (stmt.operands[0]->dtype != stmt.operands[1]->dtype)
        return error(stmt.loc, "an mma's A and B fragments have one dtype");
      break;
    }
    case LStmt::Shuffle: {
      const KBuffer *dst = kernel.findBuffer(stmt.buffer);
      const KBuffer *src =
          stmt.value && stmt.value->kind == KExpr::Load ? kernel.findBuffer(stmt.value->name)
                                                        : nullptr;
      if (!dst || !src || dst->role != KBuffer::Local || src->role != KBuffer::Local)
        return error(stmt.loc, "a shuffle moves a value between local buffers");
      if (!checkLaunchScope(*dst, stmt.loc) || !checkLaunchScope(*src, stmt.loc))
        return false;
      if (dst->type.getDType() != src->type.getDType())
        return error(stmt.loc, "a shuffle's buffers have different dtypes");
      if (launch.threads % 32 != 0)
        return error(stmt.loc, "a shuffle needs whole warps (threads a multiple of 32)");
      if (stmt.shuffleMode != "xor" && stmt.shuffleMode != "down")
        return error(stmt.loc, "unknown shuffle '" + stmt.shuffleMode + "'");
      if (stmt.shuffleOffset < 1 || stmt.shuffleOffset > 31)
        return error(stmt.loc, "a shuffle offset is in [1, 31]");
      auto constantIndices = [&](const std::vector<KExprPtr> &indices, const KBuffer &buffer) {
        if (int64_t(indices.size()) != buffer.type.getRank())
          return false;
        for (size_t d = 0; d < indices.size(); ++d)
          if (indices[d]->kind != KExpr::IntConst || indices[d]->intValue < 0 ||
              indices[d]->intValue >= buffer.type.getShape()[d].size)
            return false;
        return true;
      };
      if (!constantIndices(stmt.indices, *dst) || !constantIndices(stmt.value->args, *src))
        return error(stmt.loc, "a shuffle indexes its locals with in-range constants");
      break;
    }
    default:
      return error(stmt.loc, "a launch body holds 'parallel', 'barrier', shuffles and "
                             "block-level loops");
    }
  }
  return true;
}

bool KernelVerifier::checkLowered() {
  if (!kernel.stages.empty())
    return error(kernel.loc, "a lowered kernel has launches, not stages");
  llvm::StringSet<> names;
  for (const auto *list : {&kernel.inputs, &kernel.outputs, &kernel.internals})
    for (const KBuffer &buffer : *list)
      names.insert(buffer.name);
  for (const LLaunch &launch : kernel.launches) {
    int64_t sharedBytes = 0;
    for (const KBuffer &buffer : launch.buffers) {
      if (!names.insert(buffer.name).second)
        return error(buffer.loc, "buffer '%" + buffer.name + "' is declared twice");
      if (buffer.role != KBuffer::Shared && buffer.role != KBuffer::Local)
        return error(buffer.loc, "a launch declares shared and local buffers only");
      if (!buffer.type.isTensor())
        return error(buffer.loc, "buffer '%" + buffer.name + "' must have a tensor type");
      for (const Dim &dim : buffer.type.getShape())
        if (dim.isSymbolic())
          return error(buffer.loc, "shared and local buffers have static shapes");
      // Each dim is at most 2^40, so the byte count is checked as it grows.
      int64_t bytes = dtypeBytes(buffer.type.getDType());
      int64_t limit = buffer.role == KBuffer::Shared ? kMaxStaticSharedBytes - sharedBytes
                                                     : kMaxLocalBytesPerThread;
      for (const Dim &dim : buffer.type.getShape())
        bytes = bytes > limit ? bytes : bytes * dim.size;
      if (bytes > limit)
        return error(buffer.loc,
                     buffer.role == KBuffer::Shared
                         ? "shared buffers of a launch hold at most " +
                               std::to_string(kMaxStaticSharedBytes) +
                               " bytes (CUDA's static shared memory per block); '%" +
                               buffer.name + "' goes past it"
                         : "local buffer '%" + buffer.name + "' is larger than " +
                               std::to_string(kMaxLocalBytesPerThread) +
                               " bytes (CUDA's local memory per thread)");
      if (buffer.role == KBuffer::Shared)
        sharedBytes += bytes;
    }
  }
  for (const LLaunch &launch : kernel.launches)
    if (!checkLaunch(launch))
      return false;
  return true;
}

bool KernelVerifier::checkAttrs() {
  // fuse-ops reads op_pattern without checking it (a kind it cannot read
  // counts as opaque), so a misspelt kind would silently stop fusion.
  for (const Attrs::Entry &entry : kernel.attrs.getEntries()) {
    llvm::SMLoc loc = entry.value.loc.isValid() ? entry.value.loc : entry.loc;
    if (entry.name == "op_pattern" &&
        (entry.value.kind != Attr::String || !parsePatternKind(entry.value.text)))
      return error(loc, "attribute 'op_pattern' must be \"elemwise\", \"broadcast\", "
                        "\"injective\", \"comm_reduce\", \"out_ewise_fusable\", "
                        "\"tuple\" or \"opaque\", got " + entry.value.str());
    if (entry.name == "tuple_result" && entry.value.kind != Attr::Bool)
      return error(loc, "attribute 'tuple_result' must be 'true' or 'false', got " +
                            entry.value.str());
  }
  return true;
}

bool KernelVerifier::verify() {
  if (!checkAttrs() || !checkBuffers())
    return false;
  if (kernel.isLowered())
    return checkLowered();
  for (const KStage &stage : kernel.stages)
    if (!checkStage(stage))
      return false;
  for (const KBuffer &buffer : kernel.outputs)
    if (!written.count(buffer.name))
      return error(buffer.loc, "output '%" + buffer.name + "' is never written");
  if (!kernel.schedule.empty())
    return verifySchedule(kernel, diag, context);
  return true;
}

bool fusec::verifyKernel(const Kernel &kernel, DiagEngine &diag,
                         llvm::StringRef context) {
  return KernelVerifier(kernel, diag, context).verify();
}
