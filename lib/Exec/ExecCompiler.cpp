//===- ExecCompiler.cpp - Kernel expressions to interpreter nodes ---------===//
//
// Compiler (ExecNodes.h) turns a kernel's expressions into the nodes the
// interpreter evaluates: loads with their index calculations in affine
// form where they have one, i64 index arithmetic of that form as one node,
// and the slots a buffer-free index operation reads, so that a batch along
// another slot evaluates it once.
//
//===----------------------------------------------------------------------===//
#include "ExecNodes.h"

using namespace fusec;
using namespace fusec::exec;

std::vector<IndexCalc> Compiler::compileIndices(const std::vector<KExprPtr> &indices) {
  std::vector<IndexCalc> calcs;
  for (const KExprPtr &index : indices) {
    IndexCalc calc;
    if (!affine(*index, calc, 1)) {
      calc = IndexCalc();
      calc.general = compile(*index);
    }
    calcs.push_back(std::move(calc));
  }
  return calcs;
}

bool Compiler::affine(const KExpr &e, IndexCalc &out, int64_t scale) {
  switch (e.kind) {
  case KExpr::IntConst:
    out.constant = wrappingAdd(out.constant, wrappingMul(scale, e.intValue));
    return true;
  case KExpr::Var: {
    auto slot = slots.find(e.name);
    if (slot != slots.end()) {
      out.terms.push_back({slot->second, scale});
      return true;
    }
    out.constant = wrappingAdd(out.constant, wrappingMul(scale, symbols.lookup(e.name)));
    return true;
  }
  case KExpr::Add:
    return affine(*e.args[0], out, scale) && affine(*e.args[1], out, scale);
  case KExpr::Sub:
    return affine(*e.args[0], out, scale) && affine(*e.args[1], out, wrappingSub(0, scale));
  case KExpr::Mul: {
    IndexCalc constant;
    if (affine(*e.args[1], constant, 1) && constant.terms.empty() &&
        constant.derived.empty())
      return affine(*e.args[0], out, wrappingMul(scale, constant.constant));
    constant = IndexCalc();
    if (affine(*e.args[0], constant, 1) && constant.terms.empty() &&
        constant.derived.empty())
      return affine(*e.args[1], out, wrappingMul(scale, constant.constant));
    return false;
  }
  case KExpr::FloorDiv:
  case KExpr::Mod: {
    // A chain of floordiv / mod by positive constants of an affine
    // expression of the loop variables.
    IndexCalc::Derived term;
    term.coefficient = scale;
    const KExpr *at = &e;
    while (at->kind == KExpr::FloorDiv || at->kind == KExpr::Mod) {
      const KExpr &by = *at->args[1];
      if (by.kind != KExpr::IntConst || by.intValue <= 0)
        return false;
      term.steps.insert(term.steps.begin(), {at->kind == KExpr::Mod, by.intValue});
      at = at->args[0].get();
    }
    IndexCalc base;
    if (!affine(*at, base, 1) || !base.derived.empty())
      return false;
    term.base = base.constant;
    term.baseTerms = std::move(base.terms);
    out.derived.push_back(std::move(term));
    return true;
  }
  default:
    return false;
  }
}

bool Compiler::isI64Arithmetic(const KExpr &e) {
  if (e.dtype != DType::i64)
    return false;
  switch (e.kind) {
  case KExpr::IntConst:
  case KExpr::Var:
    return true;
  case KExpr::Add:
  case KExpr::Sub:
  case KExpr::Mul:
  case KExpr::FloorDiv:
  case KExpr::Mod:
    return llvm::all_of(e.args, [](const KExprPtr &arg) { return isI64Arithmetic(*arg); });
  default:
    return false;
  }
}

std::optional<uint64_t> Compiler::slotsRead(const KExpr &e) const {
  if (e.kind == KExpr::Load || e.kind == KExpr::Call)
    return std::nullopt;
  uint64_t mask = 0;
  if (e.kind == KExpr::Var)
    if (auto slot = slots.find(e.name); slot != slots.end())
      mask = slot->second < 64 ? uint64_t(1) << slot->second : ~uint64_t(0);
  for (const KExprPtr &arg : e.args) {
    std::optional<uint64_t> inner = slotsRead(*arg);
    if (!inner)
      return std::nullopt;
    mask |= *inner;
  }
  return mask;
}

NodePtr Compiler::compileAs(const KExpr &e, DType dtype) {
  if (e.dtype == dtype)
    return compile(e);
  auto cast = std::make_unique<Cast>();
  cast->a = compile(e);
  cast->dtype = dtype;
  return cast;
}

NodePtr Compiler::compile(const KExpr &e) {
  NodePtr node = compileNode(e);
  node->dtype = e.dtype;
  return node;
}

NodePtr Compiler::compileNode(const KExpr &e) {
  switch (e.kind) {
  case KExpr::IntConst:
    return std::make_unique<Const>(intValueOf(e.intValue, e.dtype));
  case KExpr::Literal:
    if (isIntDType(e.dtype) || e.dtype == DType::boolean)
      return std::make_unique<Const>(intValueOf(e.intValue, e.dtype));
    return std::make_unique<Const>(e.floatValue);
  case KExpr::Var: {
    auto slot = slots.find(e.name);
    if (slot != slots.end())
      return std::make_unique<VarRef>(slot->second);
    return std::make_unique<Const>(fromInt64(symbols.lookup(e.name)));
  }
  case KExpr::Load: {
    auto load = std::make_unique<Load>();
    load->buffer = buffers.lookup(e.name);
    load->bytesRead = &counters.bytesRead;
    load->elementBytes = dtypeBytes(e.dtype);
    load->indices = compileIndices(e.args);
    if (laneSlot >= 0) {
      LaneAccess access = classifyLaneAccess(e.args, kernel->findBuffer(e.name)->type,
                                             laneVar, laneWidth);
      load->laneSlot = laneSlot;
      load->uniformInLane = access == LaneAccess::Uniform;
      load->vectorWidth = access == LaneAccess::Contiguous ? laneWidth : 0;
    }
    return load;
  }
  case KExpr::Call: {
    auto call = std::make_unique<Call>();
    call->op = opTable().lookup(e.name);
    call->integer = isIntDType(e.args[0]->dtype);
    call->a = compile(*e.args[0]);
    if (e.args.size() > 1)
      call->b = compile(*e.args[1]);
    call->count = &counters.evaluations[e.name];
    return call;
  }
  case KExpr::Cast: {
    auto cast = std::make_unique<Cast>();
    cast->a = compile(*e.args[0]);
    return cast;
  }
  case KExpr::Select: {
    auto select = std::make_unique<Select>();
    select->cond = compile(*e.args[0]);
    select->a = compileAs(*e.args[1], e.dtype);
    select->b = compileAs(*e.args[2], e.dtype);
    return select;
  }
  default: {
    if (IndexCalc calc; isI64Arithmetic(e) && affine(e, calc, 1)) {
      auto value = std::make_unique<AffineValue>();
      value->calc = std::move(calc);
      return value;
    }
    auto op = std::make_unique<IndexOp>();
    op->kind = e.kind;
    op->a = compile(*e.args[0]);
    if (e.args.size() > 1)
      op->b = compile(*e.args[1]);
    op->allI64 = op->b && op->a->dtype == DType::i64 && op->b->dtype == DType::i64 &&
                 e.kind != KExpr::And && e.kind != KExpr::Or &&
                 (e.dtype == DType::i64 || e.isPredicate());
    op->shortCircuit =
        (e.kind == KExpr::And || e.kind == KExpr::Or) && readsBuffer(*e.args[1]);
    op->pureSlots = slotsRead(e);
    return op;
  }
  }
}
