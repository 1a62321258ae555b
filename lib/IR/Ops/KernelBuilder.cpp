//===- KernelBuilder.cpp - Helpers for writing op legalizations -----------===//
//
// What every legalization needs: input buffers named by operand position,
// NumPy-broadcast operand reads, fresh iteration variables, stages and
// internal buffers. `legalizeOp` runs an op's legalization and verifies the
// kernel it wrote, so a legalization bug is an internal error, not a silently
// wrong kernel.
//
//===----------------------------------------------------------------------===//
#include "fusec/IR/Ops.h"

#include <cmath>
#include <set>
#include <limits>

using namespace fusec;

DType fusec::computeDType(DType dtype) {
  if (dtype == DType::f16 || dtype == DType::bf16)
    return DType::f32;
  if (isIntDType(dtype))
    return DType::i64;
  return dtype;
}

double fusec::lowestValue(DType dtype) {
  switch (dtype) {
  case DType::i8: return -128;
  case DType::i32: return -2147483648.0;
  case DType::i64: return -9223372036854775808.0;
  case DType::boolean: return 0;
  default: return -INFINITY;
  }
}

double fusec::lowestFiniteValue(DType dtype) {
  switch (dtype) {
  case DType::f16: return -65504.0;
  case DType::bf16: return -3.3895313892515355e38; // (2 - 2^-7) * 2^127
  case DType::f32: return -3.4028234663852886e38;  // (2 - 2^-23) * 2^127
  default: return lowestValue(dtype);
  }
}

double fusec::highestValue(DType dtype) {
  switch (dtype) {
  case DType::i8: return 127;
  case DType::i32: return 2147483647.0;
  case DType::i64: return 9223372036854775808.0; // INT64_MAX, rounded up to 2^63
  case DType::boolean: return 1;
  default: return INFINITY;
  }
}

KExprPtr fusec::castTo(KExprPtr e, DType dtype) {
  if (e->dtype == dtype)
    return e;
  if (e->kind == KExpr::Literal && isIntDType(e->dtype) && isIntDType(dtype))
    return KExpr::intLiteral(wrapToIntDType(e->intValue, dtype), dtype);
  if (e->kind == KExpr::Literal)
    return KExpr::literal(roundToDType(e->floatValue, dtype), dtype);
  return KExpr::cast(std::move(e), dtype);
}

KExprPtr fusec::literalFrom(const Attr &value, DType dtype) {
  if (isIntDType(dtype)) {
    if (value.kind == Attr::Int)
      return KExpr::intLiteral(wrapToIntDType(value.intValue, dtype), dtype);
    double number = value.kind == Attr::Bool ? value.boolValue : value.asDouble();
    int64_t saturated = std::clamp(saturatingInt64(number), saturatingInt64(lowestValue(dtype)),
                                   saturatingInt64(highestValue(dtype)));
    return KExpr::intLiteral(saturated, dtype);
  }
  double number = value.kind == Attr::Bool ? value.boolValue : value.asDouble();
  return KExpr::literal(roundToDType(number, dtype), dtype);
}

/// Symbolic dims of the kernel under construction (legalizations run one at
/// a time), which iteration variable names must avoid.
static std::set<std::string> &reservedNames() {
  static std::set<std::string> names;
  return names;
}

static void reserveSymbols(const Type &type) {
  if (type.isTuple()) {
    for (const Type &field : type.getFields())
      reserveSymbols(field);
    return;
  }
  for (const Dim &dim : type.getShape())
    if (dim.isSymbolic())
      reservedNames().insert(dim.symbol);
}

KernelBuilder::KernelBuilder(const Binding &binding, const Type &resultType,
                             llvm::ArrayRef<const Value *> dimCarriers)
    : binding(binding), resultType(resultType),
      kernel(std::make_unique<Kernel>()) {
  reservedNames().clear();
  reserveSymbols(resultType);
  for (const Operand &operand : binding.operands)
    if (!operand.isLiteral())
      reserveSymbols(operand.value->type);
  for (const Value *carrier : dimCarriers)
    reserveSymbols(carrier->type);
  for (size_t i = 0; i < binding.operands.size(); ++i) {
    const Operand &operand = binding.operands[i];
    if (operand.isLiteral()) {
      operandTypes.push_back(Type());
      continue;
    }
    operandTypes.push_back(operand.value->type);
    kernel->inputs.push_back({inputName(i), operand.value->type, KBuffer::Input, {}});
  }
  for (size_t j = 0; j < dimCarriers.size(); ++j)
    kernel->inputs.push_back({inputName(binding.operands.size() + j),
                              dimCarriers[j]->type, KBuffer::Input, {}});
  // Literal operands take the dtype of the tensor operands (spec §3).
  for (size_t i = 0; i < binding.operands.size(); ++i) {
    if (!binding.operands[i].isLiteral())
      continue;
    DType dtype = DType::boolean;
    bool isCondition = binding.callee == "where" && i == 0;
    for (size_t j = isCondition ? 0 : (binding.callee == "where" ? 1 : 0);
         j < binding.operands.size() && !isCondition; ++j)
      if (!binding.operands[j].isLiteral()) {
        dtype = binding.operands[j].value->type.getDType();
        break;
      }
    operandTypes[i] = Type::tensor(dtype, {});
  }
  if (resultType.isTuple()) {
    if (resultType.getFields().size() == 1)
      kernel->attrs.set("tuple_result", Attr::makeBool(true));
    for (size_t i = 0; i < resultType.getFields().size(); ++i)
      kernel->outputs.push_back(
          {outputName(i), resultType.getFields()[i], KBuffer::Output, {}});
  } else {
    kernel->outputs.push_back({outputName(0), resultType, KBuffer::Output, {}});
  }
}

std::string KernelBuilder::inputName(size_t i) {
  return i < 26 ? std::string(1, char('a' + i)) : "x" + std::to_string(i);
}

std::string KernelBuilder::outputName(size_t i) const {
  return resultType.isTuple() ? "out" + std::to_string(i) : "out";
}

std::vector<int64_t> KernelBuilder::axes(llvm::StringRef name, int64_t rank,
                                         std::vector<int64_t> defaults) const {
  std::vector<int64_t> raw = intListAttr(attr(name), 1, std::move(defaults));
  for (int64_t &axis : raw)
    if (axis < 0)
      axis += rank;
  return raw;
}

std::vector<int64_t> KernelBuilder::intList(llvm::StringRef name, size_t size,
                                            std::vector<int64_t> defaults) const {
  return intListAttr(attr(name), size, std::move(defaults));
}

KExprPtr KernelBuilder::broadcastOperand(size_t i,
                                         const std::vector<KExprPtr> &indices,
                                         const Shape &shape) const {
  const Operand &operand = binding.operands[i];
  DType dtype = operandTypes[i].getDType();
  if (operand.isLiteral()) {
    return literalFrom(operand.literal, dtype);
  }
  const Shape &operandShape = operandTypes[i].getShape();
  size_t offset = shape.size() - operandShape.size();
  std::vector<KExprPtr> operandIndices;
  for (size_t d = 0; d < operandShape.size(); ++d) {
    bool broadcast = operandShape[d] == Dim::of(1) && shape[d + offset] != Dim::of(1);
    operandIndices.push_back(broadcast ? KExpr::intConst(0) : indices[d + offset]);
  }
  return load(i, std::move(operandIndices));
}

KExprPtr KernelBuilder::load(size_t i, std::vector<KExprPtr> indices) const {
  return KExpr::load(inputName(i), std::move(indices), operandTypes[i].getDType());
}

KExprPtr KernelBuilder::loadBuffer(const std::string &buffer,
                                   std::vector<KExprPtr> indices) const {
  const KBuffer *found = kernel->findBuffer(buffer);
  return KExpr::load(buffer, std::move(indices), found->type.getDType());
}

std::string KernelBuilder::freshName(std::string base) {
  while (reservedNames().count(base))
    base += "_";
  return base;
}

std::vector<std::string> KernelBuilder::varNames(const char *prefix,
                                                 size_t count) {
  std::vector<std::string> names;
  for (size_t i = 0; i < count; ++i) {
    std::string name = prefix + std::to_string(i);
    while (reservedNames().count(name))
      name += "_";
    names.push_back(name);
  }
  return names;
}

std::vector<KExprPtr> KernelBuilder::vars(const std::vector<std::string> &names) {
  std::vector<KExprPtr> result;
  for (const std::string &name : names)
    result.push_back(KExpr::var(name));
  return result;
}

void KernelBuilder::addInternal(const std::string &name, const Type &type) {
  kernel->internals.push_back({name, type, KBuffer::Internal, {}});
}

void KernelBuilder::addStage(const std::string &buffer,
                             std::vector<std::string> spatialVars, KExprPtr body) {
  KStage stage;
  stage.buffer = buffer;
  stage.spatialVars = std::move(spatialVars);
  stage.body = std::move(body);
  kernel->stages.push_back(std::move(stage));
}

void KernelBuilder::addReduction(const std::string &buffer,
                                 std::vector<std::string> spatialVars,
                                 const std::string &combiner,
                                 std::vector<std::pair<std::string, Dim>> reduceVars,
                                 double init, DType accumulate, KExprPtr body) {
  KStage stage;
  stage.buffer = buffer;
  stage.spatialVars = std::move(spatialVars);
  stage.combiner = combiner;
  stage.reduceVars = std::move(reduceVars);
  stage.setInit(init);
  stage.accumulate = accumulate;
  stage.body = std::move(body);
  kernel->stages.push_back(std::move(stage));
}

std::unique_ptr<Kernel> KernelBuilder::finish(const std::string &name) {
  kernel->name = name;
  return std::move(kernel);
}

std::unique_ptr<Kernel> fusec::legalizeOp(const Binding &binding, const std::string &name,
                                          llvm::ArrayRef<const Value *> dimCarriers) {
  const OpInfo *info = lookupOp(binding.callee);
  if (!info || !info->legalize)
    return nullptr;
  KernelBuilder builder(binding, binding.getType(), dimCarriers);
  info->legalize(builder);
  return builder.finish(name);
}

static bool hasSymbol(const Type &type, const std::string &symbol) {
  if (type.isTuple())
    return llvm::any_of(type.getFields(),
                        [&](const Type &field) { return hasSymbol(field, symbol); });
  return llvm::any_of(type.getShape(), [&](const Dim &dim) {
    return dim.isSymbolic() && dim.symbol == symbol;
  });
}

std::vector<std::string> fusec::introducedSymbols(const Binding &binding) {
  std::vector<std::string> introduced;
  if (!binding.getType().isTensor())
    return introduced;
  for (const Dim &dim : binding.getType().getShape()) {
    if (!dim.isSymbolic() || llvm::is_contained(introduced, dim.symbol))
      continue;
    bool fromOperand = llvm::any_of(binding.operands, [&](const Operand &operand) {
      return !operand.isLiteral() && hasSymbol(operand.value->type, dim.symbol);
    });
    if (!fromOperand)
      introduced.push_back(dim.symbol);
  }
  return introduced;
}

std::vector<Value *> fusec::dimCarriers(const Function &function, const Binding &binding,
                                        std::vector<std::string> *unbound) {
  return dimCarriers(function, introducedSymbols(binding), unbound);
}

std::vector<Value *> fusec::dimCarriers(const Function &function,
                                        llvm::ArrayRef<std::string> symbols,
                                        std::vector<std::string> *unbound) {
  std::vector<Value *> carriers;
  for (const std::string &symbol : symbols) {
    if (llvm::any_of(carriers,
                     [&](const Value *carrier) { return hasSymbol(carrier->type, symbol); }))
      continue;
    auto param = llvm::find_if(function.params, [&](const auto &param) {
      return param->type.isTensor() && hasSymbol(param->type, symbol);
    });
    if (param != function.params.end())
      carriers.push_back(param->get());
    else if (unbound)
      unbound->push_back(symbol);
  }
  return carriers;
}
