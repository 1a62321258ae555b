//===- PatternMatcher.cpp - Match dataflow patterns against bindings ------===//
//
// Structural matching of a DataflowPattern (spec §6) rooted at a binding,
// then evaluation of its `where` constraints.
//
// Algorithm (TVM's DFPatternMatcher, restricted to what .pat can say):
//   1. Match the root node against the root binding's value, recursively:
//      a wildcard binds any value (a name bound twice must see the same
//      value); an op node needs a binding of the block with one of its op
//      names, the listed attributes (compared in canonical form: absent
//      ones take the op's default, negative axes count from the end) and
//      matching operands (`...` lets more follow; a wildcard matches a literal
//      operand too, with no value); `add` and `multiply`
//      also try their operands swapped; a `get` node needs a `get` with the
//      same index of a matching tuple; a literal node needs an equal
//      literal operand. A failed branch restores the bindings it made.
//   2. The members are the bindings of op and `get` nodes, in block order.
//   3. Constraints are checked in order, in three-valued logic: a check
//      that cannot be decided (a symbolic dim compared with a number) is
//      unknown, `not` of unknown is unknown, and only a check that holds
//      passes.
//
//===----------------------------------------------------------------------===//
#include "fusec/Analysis/Analysis.h"
#include "fusec/IR/Ops.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"

using namespace fusec;

UseMap fusec::collectUses(const Function &function) {
  UseMap uses;
  function.forEachBinding([&](const Binding &binding) {
    for (const Operand &operand : binding.operands)
      if (!operand.isLiteral())
        uses[operand.value].push_back(&binding);
  });
  for (const BodyItem &item : function.body)
    if (item.block)
      for (const Value *output : item.block->outputs)
        uses[output].push_back(nullptr);
  for (const Operand &operand : function.returnValues)
    if (!operand.isLiteral())
      uses[operand.value].push_back(nullptr);
  return uses;
}

/// Attribute equality up to spelling: `2` and `[2, 2]` stay distinct, but
/// an int and a float of the same value are equal.
static bool sameAttr(const Attr &a, const Attr &b) {
  if (a.isNumber() && b.isNumber())
    return a.asDouble() == b.asDouble();
  if (a.kind != b.kind)
    return false;
  if (a.kind != Attr::List)
    return a == b;
  if (a.list.size() != b.list.size())
    return false;
  for (size_t i = 0; i < a.list.size(); ++i)
    if (!sameAttr(a.list[i], b.list[i]))
      return false;
  return true;
}

namespace {
class Matcher {
public:
  Matcher(const DataflowPattern &pattern, const BlockIndex &block)
      : pattern(pattern), block(block) {
    values.assign(pattern.nodes.size(), nullptr);
    literals.assign(pattern.nodes.size(), false);
  }

  bool matchValue(int nodeIndex, const Value *value) {
    const PatternNode &node = pattern.nodes[nodeIndex];
    if (values[nodeIndex])
      return values[nodeIndex] == value;
    if (node.kind == PatternNode::Literal)
      return false;
    if (node.kind == PatternNode::Wildcard) {
      values[nodeIndex] = value;
      return true;
    }
    const Binding *binding = value->definingBinding;
    if (!binding || !block.position.count(binding))
      return false;
    if (node.kind == PatternNode::Get) {
      if (binding->kind != ExprKind::Get || binding->tupleIndex != node.tupleIndex)
        return false;
      std::vector<const Value *> saved = values;
    std::vector<bool> savedLiterals = literals;
      values[nodeIndex] = value;
      if (matchOperand(node.operands.front(), binding->operands.front()))
        return true;
      values = saved;
      literals = savedLiterals;
      return false;
    }
    if (binding->kind != ExprKind::Op || !llvm::is_contained(node.opNames, binding->callee))
      return false;
    for (const Attrs::Entry &entry : node.attrs.getEntries()) {
      // Both sides in the op's canonical form for this binding (defaults,
      // negative axes, window attributes written in full).
      std::optional<Attr> actual =
          canonicalOpAttr(*binding, entry.name, binding->attrs.get(entry.name));
      std::optional<Attr> wanted = canonicalOpAttr(*binding, entry.name, &entry.value);
      if (!actual || !wanted || !sameAttr(*actual, *wanted))
        return false;
    }
    size_t fixed = node.operands.size(), actual = binding->operands.size();
    if (node.variadic ? actual < fixed : actual != fixed)
      return false;
    std::vector<const Value *> saved = values;
    std::vector<bool> savedLiterals = literals;
    values[nodeIndex] = value;
    if (matchOperands(node.operands, *binding, false))
      return true;
    values = saved;
      literals = savedLiterals;
    bool commutative = binding->callee == "add" || binding->callee == "multiply";
    if (commutative && fixed == 2 && actual == 2) {
      values[nodeIndex] = value;
      if (matchOperands(node.operands, *binding, true))
        return true;
      values = saved;
      literals = savedLiterals;
    }
    return false;
  }

  std::vector<const Value *> values;
  std::vector<bool> literals;

private:
  bool matchOperands(const std::vector<int> &operands, const Binding &binding, bool swapped) {
    for (size_t i = 0; i < operands.size(); ++i) {
      size_t actual = swapped ? operands.size() - 1 - i : i;
      if (!matchOperand(operands[i], binding.operands[actual]))
        return false;
    }
    return true;
  }

  bool matchOperand(int nodeIndex, const Operand &operand) {
    const PatternNode &node = pattern.nodes[nodeIndex];
    if (operand.isLiteral()) {
      // A wildcard matches a literal operand too (TVM's wildcard matches a
      // constant); it then has no value, only `is_constant` holds for it.
      if (node.kind == PatternNode::Wildcard && !values[nodeIndex]) {
        literals[nodeIndex] = true;
        return true;
      }
      return node.kind == PatternNode::Literal && operand.literal.isNumber() &&
             node.literal.asDouble() == operand.literal.asDouble();
    }
    if (node.kind == PatternNode::Literal)
      return false;
    return matchValue(nodeIndex, operand.value);
  }

  const DataflowPattern &pattern;
  const BlockIndex &block;
};
} // namespace

BlockIndex::BlockIndex(const DataflowBlock &block) {
  for (size_t i = 0; i < block.bindings.size(); ++i)
    position[block.bindings[i].get()] = i;
}

std::optional<PatternMatch> fusec::matchPattern(const DataflowPattern &pattern,
                                                const Binding &root,
                                                const DataflowBlock &block) {
  return matchPattern(pattern, root, BlockIndex(block));
}

std::optional<PatternMatch> fusec::matchPattern(const DataflowPattern &pattern, const Binding &root,
                                                const BlockIndex &block) {
  if (pattern.root < 0 || !root.getResult())
    return std::nullopt;
  Matcher matcher(pattern, block);
  if (!matcher.matchValue(pattern.root, root.getResult()))
    return std::nullopt;
  PatternMatch match;
  match.values = matcher.values;
  match.literals = matcher.literals;
  for (size_t n = 0; n < pattern.nodes.size(); ++n)
    if ((pattern.nodes[n].kind == PatternNode::Op || pattern.nodes[n].kind == PatternNode::Get) &&
        match.values[n] && !llvm::is_contained(match.members, match.values[n]->definingBinding))
      match.members.push_back(match.values[n]->definingBinding);
  llvm::sort(match.members, [&](const Binding *a, const Binding *b) {
    return block.position.lookup(a) < block.position.lookup(b);
  });
  return match;
}

//===----------------------------------------------------------------------===//
// Constraints
//===----------------------------------------------------------------------===//

namespace {
/// A term's value: a dtype, or a dim (an integer or a symbolic size).
struct TermValue {
  bool known = false;
  bool isDType = false;
  DType dtype = DType::f32;
  Dim dim;
};
} // namespace

static TermValue evaluateTerm(const PatternTerm &term, const PatternMatch &match) {
  TermValue result;
  if (term.kind == PatternTerm::Int) {
    result.known = true;
    result.dim = Dim::of(term.value);
    return result;
  }
  if (term.kind == PatternTerm::DTypeName) {
    result.known = result.isDType = true;
    result.dtype = term.dtype;
    return result;
  }
  const Value *value = match.values[term.node];
  if (!value || !value->type.isTensor())
    return result;
  const Type &type = value->type;
  switch (term.kind) {
  case PatternTerm::DTypeOf:
    result.known = result.isDType = true;
    result.dtype = type.getDType();
    break;
  case PatternTerm::RankOf:
    result.known = true;
    result.dim = Dim::of(type.getRank());
    break;
  case PatternTerm::ShapeOf: {
    int64_t index = term.value < 0 ? term.value + type.getRank() : term.value;
    if (index >= 0 && index < type.getRank()) {
      result.known = true;
      result.dim = type.getShape()[size_t(index)];
    }
    break;
  }
  default:
    break;
  }
  return result;
}

namespace {
/// A check's outcome. A comparison involving a symbolic dim can be
/// undecidable; `not` of an undecidable check is undecidable too, so that
/// `not(shape(%x)[0] == 1)` does not accept a dim that may be 1 at run time.
enum class Truth { False, True, Unknown };
} // namespace

static Truth truthOf(bool value) { return value ? Truth::True : Truth::False; }

static Truth compareTerms(const TermValue &a, const TermValue &b,
                          PatternConstraint::Comparison comparison) {
  if (!a.known || !b.known)
    return Truth::Unknown;
  if (a.isDType) {
    bool equal = a.dtype == b.dtype;
    return truthOf(comparison == PatternConstraint::Eq ? equal : !equal);
  }
  if (a.dim.isSymbolic() || b.dim.isSymbolic()) {
    // Two symbolic dims are equal only by name; nothing else is decidable.
    if (!(a.dim == b.dim))
      return Truth::Unknown;
    return truthOf(comparison == PatternConstraint::Eq || comparison == PatternConstraint::Le ||
                   comparison == PatternConstraint::Ge);
  }
  int64_t x = a.dim.size, y = b.dim.size;
  switch (comparison) {
  case PatternConstraint::Eq: return truthOf(x == y);
  case PatternConstraint::Ne: return truthOf(x != y);
  case PatternConstraint::Lt: return truthOf(x < y);
  case PatternConstraint::Le: return truthOf(x <= y);
  case PatternConstraint::Gt: return truthOf(x > y);
  case PatternConstraint::Ge: return truthOf(x >= y);
  }
  return Truth::Unknown;
}

/// Whether `constraint` holds; `why` explains an outcome other than True.
static Truth holds(const DataflowPattern &pattern, const PatternConstraint &constraint,
                   const PatternMatch &match, const UseMap &uses, std::string &why) {
  switch (constraint.kind) {
  case PatternConstraint::Not: {
    const PatternConstraint &negated = constraint.negated.front();
    switch (holds(pattern, negated, match, uses, why)) {
    case Truth::True:
      why = negated.text + " holds";
      return Truth::False;
    case Truth::False:
      return Truth::True;
    case Truth::Unknown:
      return Truth::Unknown; // `why` already says what cannot be decided
    }
    return Truth::Unknown;
  }
  case PatternConstraint::IsConstant: {
    const Value *value = match.values[constraint.node];
    bool constant = (value && value->definingBinding &&
                     value->definingBinding->kind == ExprKind::Constant) ||
                    (!value && match.literals[constraint.node]);
    if (!constant)
      why = (value ? "%" + value->name : std::string("the value")) + " is not a constant";
    return truthOf(constant);
  }
  case PatternConstraint::SingleUse: {
    const Value *value = match.values[constraint.node];
    auto found = value ? uses.find(value) : uses.end();
    if (found == uses.end())
      return Truth::True;
    for (const Binding *user : found->second) {
      if (user && llvm::is_contained(match.members, user))
        continue;
      why = "%" + value->name + (user ? " is also used by %" + user->getResult()->name
                                      : std::string(" is also an output of its block or function"));
      return Truth::False;
    }
    return Truth::True;
  }
  case PatternConstraint::Compare:
  case PatternConstraint::In: {
    TermValue lhs = evaluateTerm(constraint.lhs, match);
    Truth result = Truth::False;
    for (const PatternTerm &term : constraint.rhs) {
      Truth one = compareTerms(lhs, evaluateTerm(term, match),
                               constraint.kind == PatternConstraint::In ? PatternConstraint::Eq
                                                                        : constraint.comparison);
      if (one == Truth::True)
        return Truth::True;
      if (one == Truth::Unknown)
        result = Truth::Unknown;
    }
    auto describe = [](const TermValue &v) -> std::string {
      if (!v.known)
        return "undefined";
      return v.isDType ? dtypeName(v.dtype).str() : v.dim.str();
    };
    why = "it is " + describe(lhs);
    if (result == Truth::Unknown)
      why += ", which cannot be decided";
    return result;
  }
  }
  return Truth::Unknown;
}

std::string fusec::checkPatternConstraints(const DataflowPattern &pattern,
                                           const PatternMatch &match, const UseMap &uses) {
  for (const PatternConstraint &constraint : pattern.constraints) {
    std::string why;
    if (holds(pattern, constraint, match, uses, why) != Truth::True)
      return constraint.text + " failed: " + why;
  }
  return "";
}
