//===- OpRegistry.cpp - Operator lookup and generic inference checks ------===//
//
// The registry is filled once from the per-class files. `inferOpType` does
// the checks every op shares, in this order, so that messages are uniform:
//   1. operand count;
//   2. literal operands only where allowed, each given the dtype of the
//      op's tensor operands and checked to fit it;
//   3. attributes: unknown names, schema (int / list / dtype ...), required;
// and then calls the op's own `infer` for dtype and shape rules.
//
//===----------------------------------------------------------------------===//
#include "fusec/IR/Ops.h"

#include "llvm/ADT/StringMap.h"

using namespace fusec;

namespace {
struct Registry {
  std::vector<const OpInfo *> ops;
  llvm::StringMap<const OpInfo *> byName;
  Registry() {
    registerElementwiseOps(ops);
    registerInjectiveOps(ops);
    registerReductionOps(ops);
    registerComplexOps(ops);
    for (const OpInfo *op : ops)
      byName[op->name] = op;
  }
};
} // namespace

static const Registry &registry() {
  static Registry instance;
  return instance;
}

const OpInfo *fusec::lookupOp(llvm::StringRef name) {
  auto it = registry().byName.find(name);
  return it == registry().byName.end() ? nullptr : it->second;
}

llvm::ArrayRef<const OpInfo *> fusec::allOps() { return registry().ops; }

std::string fusec::suggestOpName(llvm::StringRef name) {
  std::string best;
  unsigned bestDistance = 3; // suggest only close names
  for (const OpInfo *op : registry().ops) {
    llvm::StringRef candidate = op->name;
    unsigned distance = name.edit_distance(candidate, true, bestDistance);
    // `relu` should find `nn.relu`.
    if (candidate.startswith("nn.") && candidate.drop_front(3) == name)
      distance = 1;
    if (distance < bestDistance) {
      bestDistance = distance;
      best = candidate.str();
    }
  }
  return best;
}

//===----------------------------------------------------------------------===//
// InferContext
//===----------------------------------------------------------------------===//

std::nullopt_t InferContext::error(const llvm::Twine &message) const {
  diag.error(binding.calleeLoc, message);
  return std::nullopt;
}

std::nullopt_t InferContext::errorAtOperand(size_t i,
                                            const llvm::Twine &message) const {
  llvm::SMLoc loc = i < binding.operands.size() ? binding.operands[i].loc
                                                : llvm::SMLoc();
  diag.error(loc.isValid() ? loc : binding.calleeLoc, message);
  return std::nullopt;
}

std::nullopt_t InferContext::errorAt(llvm::SMLoc loc,
                                     const llvm::Twine &message) const {
  diag.error(loc.isValid() ? loc : binding.calleeLoc, message);
  return std::nullopt;
}

std::nullopt_t InferContext::errorAtAttr(llvm::StringRef name,
                                         const llvm::Twine &message) const {
  const Attr *value = binding.attrs.get(name);
  llvm::SMLoc loc = value && value->loc.isValid() ? value->loc : binding.calleeLoc;
  diag.error(loc, message);
  return std::nullopt;
}

std::optional<std::vector<int64_t>>
InferContext::axes(llvm::StringRef name, int64_t rank,
                   std::vector<int64_t> defaults) const {
  // Each axis with the location of the element that wrote it, so that an
  // error points at the offending element of the list.
  std::vector<std::pair<int64_t, llvm::SMLoc>> raw;
  for (int64_t axis : defaults)
    raw.push_back({axis, binding.calleeLoc});
  if (const Attr *value = attr(name)) {
    raw.clear();
    if (value->kind == Attr::Int)
      raw.push_back({value->intValue, value->loc});
    for (const Attr &item : value->list)
      raw.push_back({item.intValue, item.loc.isValid() ? item.loc : value->loc});
  }
  std::vector<int64_t> result;
  for (auto [axis, loc] : raw) {
    if (!loc.isValid())
      loc = binding.calleeLoc;
    if (axis < -rank || axis >= rank) {
      diag.error(loc, "axis " + std::to_string(axis) + " is out of range for "
                      "rank " + std::to_string(rank) + " (valid: [" +
                      std::to_string(-rank) + ", " + std::to_string(rank) + "))");
      return std::nullopt;
    }
    int64_t normalized = axis < 0 ? axis + rank : axis;
    if (std::find(result.begin(), result.end(), normalized) != result.end()) {
      diag.error(loc, "axis " + std::to_string(normalized) + " is repeated");
      return std::nullopt;
    }
    result.push_back(normalized);
  }
  return result;
}

std::optional<int64_t> InferContext::intAttr(llvm::StringRef name,
                                             int64_t defaultValue) const {
  const Attr *value = attr(name);
  return value ? value->intValue : defaultValue;
}

std::vector<int64_t> fusec::intListAttr(const Attr *value, size_t size,
                                       std::vector<int64_t> defaults) {
  if (!value)
    return defaults;
  if (value->kind == Attr::Int)
    return std::vector<int64_t>(size, value->intValue);
  std::vector<int64_t> result;
  for (const Attr &item : value->list)
    result.push_back(item.intValue);
  return result;
}

std::vector<int64_t> InferContext::intList(llvm::StringRef name,
                                           size_t expectedSize,
                                           std::vector<int64_t> defaults) const {
  return intListAttr(attr(name), expectedSize, std::move(defaults));
}

//===----------------------------------------------------------------------===//
// Generic checks
//===----------------------------------------------------------------------===//

static bool isIntList(const Attr &value) {
  if (value.kind != Attr::List)
    return false;
  for (const Attr &item : value.list)
    if (item.kind != Attr::Int)
      return false;
  return true;
}

/// Describes what `schema` accepts, for messages; empty if `value` fits.
static std::string checkSchema(const Attr &value, AttrSchema schema) {
  switch (schema) {
  case AttrSchema::Int:
    return value.kind == Attr::Int ? "" : "an integer";
  case AttrSchema::Float:
    return value.isNumber() ? "" : "a number";
  case AttrSchema::Bool:
    return value.kind == Attr::Bool ? "" : "'true' or 'false'";
  case AttrSchema::DTypeName:
    return value.kind == Attr::String && parseDType(value.text)
               ? ""
               : "a dtype string such as \"f16\"";
  case AttrSchema::Axes:
  case AttrSchema::IntOrList:
    return value.kind == Attr::Int || isIntList(value)
               ? ""
               : "an integer or a list of integers";
  case AttrSchema::IntList:
    return isIntList(value) ? "" : "a list of integers";
  case AttrSchema::ShapeList:
    if (value.kind == Attr::List) {
      bool ok = true;
      for (const Attr &item : value.list)
        ok &= item.kind == Attr::Int || item.kind == Attr::Ident;
      if (ok)
        return "";
    }
    return "a list of sizes and dim names such as [n, -1, 4]";
  }
  return "";
}

std::string fusec::attrFormProblem(const OpInfo &info, llvm::StringRef name,
                                   const Attr &value) {
  for (const AttrSpec &spec : info.attrs)
    if (name == spec.name) {
      std::string expected = checkSchema(value, spec.schema);
      return expected.empty() ? "" : "attribute '" + name.str() + "' of '" + info.name +
                                         "' must be " + expected + ", not " + value.str();
    }
  return "op '" + std::string(info.name) + "' has no attribute '" + name.str() + "'";
}

void fusec::normalizeOpAttrs(Binding &binding) {
  const OpInfo *info = lookupOp(binding.callee);
  if (binding.kind != ExprKind::Op || !info)
    return;
  for (const AttrSpec &spec : info->attrs) {
    Attr *value = binding.attrs.get(spec.name);
    if (!value || spec.schema != AttrSchema::Axes || value->kind != Attr::Int)
      continue;
    Attr list = Attr::makeList({*value});
    list.loc = value->loc;
    *value = list;
  }
}

static Attr intListOf(const std::vector<int64_t> &values) {
  std::vector<Attr> items;
  for (int64_t v : values)
    items.push_back(Attr::makeInt(v));
  return Attr::makeList(std::move(items));
}

std::optional<Attr> fusec::canonicalOpAttr(const Binding &binding, llvm::StringRef name,
                                           const Attr *value, AttrForm form) {
  auto asWritten = [&]() -> std::optional<Attr> {
    return value ? std::optional<Attr>(*value) : std::nullopt;
  };
  const OpInfo *info = binding.kind == ExprKind::Op ? lookupOp(binding.callee) : nullptr;
  const AttrSpec *spec = nullptr;
  if (info)
    for (const AttrSpec &candidate : info->attrs)
      if (name == candidate.name)
        spec = &candidate;
  if (!spec || (value && !checkSchema(*value, spec->schema).empty()))
    return asWritten();
  llvm::StringRef op = binding.callee;
  auto rankOf = [](const Value *v) -> int64_t {
    return v && v->type.isTensor() ? v->type.getRank() : 0;
  };
  const Value *operand =
      binding.operands.empty() || binding.operands[0].isLiteral() ? nullptr : binding.operands[0].value;
  bool window = op == "nn.conv2d" || op == "nn.max_pool2d" || op == "nn.avg_pool2d";
  switch (spec->schema) {
  case AttrSchema::Axes: {
    int64_t rank = op == "expand_dims" ? (binding.result ? rankOf(binding.getResult()) : 0)
                                       : rankOf(operand);
    std::vector<int64_t> axes;
    if (form == AttrForm::AsTVMHolds) {
      // As written (a negative axis stays negative), an absent one as
      // TVM's Python API defaults it: None (no value) for a reduction's
      // axes and permute_dims', -1 for softmax, 0 for concat and split.
      if (value)
        axes = intListAttr(value, 1, {});
      else if (op == "nn.softmax" || op == "nn.log_softmax" || op == "nn.rms_norm")
        axes.push_back(-1);
      else if (op == "concat" || op == "split")
        axes.push_back(0);
      else
        return std::nullopt;
      return intListOf(axes);
    }
    if (value) {
      axes = intListAttr(value, 1, {});
    } else if (op == "permute_dims") {
      for (int64_t axis = rank - 1; axis >= 0; --axis)
        axes.push_back(axis);
    } else if (op == "sum" || op == "mean" || op == "max" || op == "min" || op == "prod") {
      for (int64_t axis = 0; axis < rank; ++axis)
        axes.push_back(axis);
    } else if (op == "nn.softmax" || op == "nn.log_softmax" || op == "nn.rms_norm") {
      axes.push_back(rank - 1);
    } else if (op == "concat" || op == "split") {
      axes.push_back(0);
    } else {
      return std::nullopt;
    }
    for (int64_t &axis : axes)
      if (axis < 0 && axis >= -rank)
        axis += rank;
    return intListOf(axes);
  }
  case AttrSchema::IntOrList:
    if (window && name == "padding")
      return intListOf(windowPaddingAttr(value));
    if (window)
      return intListOf(windowPairAttr(value, 1));
    if (op == "strided_slice" && value)
      return intListOf(intListAttr(value, 1, {}));
    return asWritten();
  case AttrSchema::Bool:
    return value ? *value : Attr::makeBool(false);
  case AttrSchema::Int:
    return value ? *value : name == "groups" ? std::optional<Attr>(Attr::makeInt(1)) : std::nullopt;
  case AttrSchema::Float:
    return value ? *value : name == "epsilon" ? std::optional<Attr>(Attr::makeFloat(1e-5)) : std::nullopt;
  case AttrSchema::DTypeName:
    if (!value && name == "out_dtype" && binding.result && binding.getType().isTensor())
      return Attr::makeString(dtypeName(binding.getType().getDType()).str());
    return asWritten();
  default:
    return asWritten();
  }
}

Attrs fusec::canonicalOpAttrs(const Binding &binding, AttrForm form) {
  Attrs canonical;
  const OpInfo *info = binding.kind == ExprKind::Op ? lookupOp(binding.callee) : nullptr;
  // In the op's attribute order, so that spelling order does not matter.
  if (info)
    for (const AttrSpec &spec : info->attrs)
      if (std::optional<Attr> value =
              canonicalOpAttr(binding, spec.name, binding.attrs.get(spec.name), form))
        canonical.set(spec.name, *value);
  for (const Attrs::Entry &entry : binding.attrs.getEntries())
    if (!canonical.get(entry.name))
      canonical.set(entry.name, entry.value);
  return canonical;
}

std::optional<Type> fusec::inferOpType(const Binding &binding,
                                       DiagEngine &diag) {
  const OpInfo *info = lookupOp(binding.callee);
  if (!info) {
    diag.error(binding.calleeLoc, "unknown operator '" + binding.callee + "'");
    return std::nullopt;
  }
  int count = static_cast<int>(binding.operands.size());
  if (count < info->minOperands ||
      (info->maxOperands >= 0 && count > info->maxOperands)) {
    std::string expected =
        info->maxOperands < 0
            ? "at least " + std::to_string(info->minOperands)
            : info->minOperands == info->maxOperands
                  ? std::to_string(info->minOperands)
                  : std::to_string(info->minOperands) + " to " +
                        std::to_string(info->maxOperands);
    diag.error(binding.calleeLoc, "'" + binding.callee + "' takes " + expected +
                                      " operand(s), but " +
                                      std::to_string(count) + " were given");
    return std::nullopt;
  }

  // Tensor operands first; literals then take their dtype.
  std::vector<Type> types(binding.operands.size());
  std::optional<DType> valueDType;
  for (size_t i = 0; i < binding.operands.size(); ++i) {
    const Operand &operand = binding.operands[i];
    if (operand.isLiteral()) {
      if (!info->allowsLiterals) {
        diag.error(operand.loc, "'" + binding.callee +
                                    "' does not accept literal operands; bind "
                                    "a 'constant' instead");
        return std::nullopt;
      }
      continue;
    }
    types[i] = operand.value->type;
    if (!types[i].isTensor()) {
      diag.error(operand.loc, "operand " + std::to_string(i) + " of '" +
                                  binding.callee + "' is the tuple " +
                                  types[i].str() + "; extract a field with 'get'");
      return std::nullopt;
    }
    // `where`'s condition does not decide the dtype of its branches.
    bool isCondition = info->opClass == OpClass::Ternary && i == 0;
    if (!isCondition && !valueDType)
      valueDType = types[i].getDType();
  }
  for (size_t i = 0; i < binding.operands.size(); ++i) {
    const Operand &operand = binding.operands[i];
    if (!operand.isLiteral())
      continue;
    bool isCondition = info->opClass == OpClass::Ternary && i == 0;
    std::optional<DType> dtype = isCondition ? DType::boolean : valueDType;
    if (!dtype) {
      diag.error(operand.loc,
                 "cannot infer the dtype of this literal: " +
                     std::string(info->opClass == OpClass::Ternary
                                     ? "'where' needs a tensor as one of its "
                                       "value operands (the second or third)"
                                     : "'" + binding.callee +
                                           "' needs at least one tensor operand"));
      return std::nullopt;
    }
    std::string problem = checkLiteralForDType(operand.literal, *dtype);
    if (!problem.empty()) {
      diag.error(operand.loc, problem);
      return std::nullopt;
    }
    types[i] = Type::tensor(*dtype, {});
  }

  for (const Attrs::Entry &entry : binding.attrs.getEntries()) {
    const AttrSpec *spec = nullptr;
    for (const AttrSpec &candidate : info->attrs)
      if (entry.name == candidate.name)
        spec = &candidate;
    llvm::SMLoc loc = entry.loc.isValid() ? entry.loc : binding.calleeLoc;
    if (!spec) {
      std::string known;
      for (const AttrSpec &candidate : info->attrs)
        known += (known.empty() ? "" : ", ") + std::string(candidate.name);
      diag.error(loc, "unknown attribute '" + entry.name + "' for '" +
                          binding.callee + "'" +
                          (known.empty() ? "; it takes none"
                                         : "; it takes: " + known));
      return std::nullopt;
    }
    std::string expected = checkSchema(entry.value, spec->schema);
    if (!expected.empty()) {
      diag.error(entry.value.loc.isValid() ? entry.value.loc : loc,
                 "attribute '" + entry.name + "' of '" + binding.callee +
                     "' must be " + expected + ", got " + entry.value.str());
      return std::nullopt;
    }
  }
  for (const AttrSpec &spec : info->attrs) {
    if (spec.required && !binding.attrs.get(spec.name)) {
      diag.error(binding.calleeLoc, "'" + binding.callee +
                                        "' requires attribute '" + spec.name +
                                        "'");
      return std::nullopt;
    }
  }
  InferContext context(binding, std::move(types), diag);
  return info->infer(context);
}

//===----------------------------------------------------------------------===//
// Broadcasting
//===----------------------------------------------------------------------===//

std::optional<Shape> fusec::broadcastShapes(const Shape &a, const Shape &b,
                                            std::string &error) {
  size_t rank = std::max(a.size(), b.size());
  Shape result(rank);
  for (size_t i = 0; i < rank; ++i) {
    // Align from the right, as NumPy does.
    const Dim *x = i < rank - a.size() ? nullptr : &a[i - (rank - a.size())];
    const Dim *y = i < rank - b.size() ? nullptr : &b[i - (rank - b.size())];
    if (!x || !y) {
      result[i] = x ? *x : *y;
      continue;
    }
    if (*x == *y || y->isOne()) {
      result[i] = *x;
    } else if (x->isOne()) {
      result[i] = *y;
    } else {
      error = "dimension " + std::to_string(i) + " is " + x->str() + " vs " +
              y->str();
      if (x->isSymbolic() || y->isSymbolic())
        error += " (symbolic dims must be provably equal; a symbolic dim is "
                 "never assumed to be 1)";
      return std::nullopt;
    }
  }
  return result;
}
