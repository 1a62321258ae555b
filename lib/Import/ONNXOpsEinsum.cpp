//===- ONNXOpsEinsum.cpp - Einsum as products and sums --------------------===//
//
// Einsum(equation, inputs...) (ONNX = NumPy's einsum):
//   1. Parse the equation: a term per input, each a list of labels (letters,
//      `...` for the leading broadcast dims), and the output term; without
//      `->` the output is the `...` dims, then the labels that occur once,
//      in ASCII order (NumPy's implicit mode).
//   2. Give `...` dims labels of their own, right-aligned across inputs, as
//      NumPy broadcasts them.
//   3. Take diagonals: a label repeated in one term (`ii`) keeps the
//      elements where the two indices agree, where(eye, x, 0), and sums one
//      of the two axes away.
//   4. Line every input up on one label order: the output's labels, then
//      the summed ones. Each is permuted to that order and given unit dims
//      for the labels it lacks.
//   5. Multiply them (broadcasting) and sum over the summed labels. f16 and
//      bf16 inputs are computed in f32 and rounded once, as matmul does.
// Fusion makes step 5 one reduction kernel over an elementwise body; no
// intermediate of the product's size reaches memory. Two inputs that share
// a summed label (a contraction: batched matmul, attention scores) are one
// `matmul` instead (contractAsMatmul), so that f16 reaches tensor cores.
//
//===----------------------------------------------------------------------===//
#include "ONNXImporter.h"

#include "llvm/ADT/StringExtras.h"

#include <map>

using namespace fusec;
using namespace fusec::onnximport;

namespace {
/// One term: labels in order; an ellipsis dim is a label >= kFirstEllipsis.
using Term = std::vector<int>;
constexpr int kFirstEllipsis = 256;
constexpr int kEllipsisMarker = -1;
} // namespace

static Attrs attrsOf(llvm::StringRef name, Attr value) {
  Attrs attrs;
  attrs.set(name, std::move(value));
  return attrs;
}

/// Parses "ab...c" into labels (the ellipsis as kEllipsisMarker); false on
/// a character that is no letter.
static bool parseTerm(llvm::StringRef text, Term &term, std::string &error) {
  for (size_t k = 0; k < text.size(); ++k) {
    char ch = text[k];
    if (ch == ' ')
      continue;
    if (text.substr(k).startswith("...")) {
      if (llvm::is_contained(term, kEllipsisMarker))
        return error = "a term has two ellipses", false;
      term.push_back(kEllipsisMarker);
      k += 2;
    } else if (llvm::isAlpha(ch)) {
      term.push_back(ch);
    } else {
      return error = std::string("'") + ch + "' is no label (letters and '...' are)", false;
    }
  }
  return true;
}

/// Replaces the ellipsis of `term` by `count` labels, the last of
/// `ellipsisRank` ellipsis labels (right-aligned).
static Term expandEllipsis(const Term &term, int64_t count, int64_t ellipsisRank) {
  Term result;
  for (int label : term) {
    if (label != kEllipsisMarker) {
      result.push_back(label);
      continue;
    }
    for (int64_t k = ellipsisRank - count; k < ellipsisRank; ++k)
      result.push_back(kFirstEllipsis + int(k));
  }
  return result;
}

/// `x` with its axes permuted by `perm` (itself for the identity).
static Value *permuted(NodeContext &c, Value *x, const std::vector<int64_t> &perm,
                       const std::string &hint) {
  bool identity = true;
  for (size_t d = 0; d < perm.size(); ++d)
    identity &= perm[d] == int64_t(d);
  if (!x || identity)
    return x;
  return c.emit("permute_dims", {Operand::of(x)}, attrsOf("axes", makeIntList(perm)), hint);
}

/// `x` reshaped to `dims` (itself when it has that shape already).
static Value *reshaped(NodeContext &c, Value *x, const std::vector<Dim> &dims,
                       const std::string &hint) {
  if (!x || x->type.getShape() == Shape(dims.begin(), dims.end()))
    return x;
  return c.emit("reshape", {Operand::of(x)}, attrsOf("shape", makeShapeList(dims)), hint);
}

/// Two inputs whose shared labels are summed (a contraction) as one matmul,
/// so that f16/bf16 reach the tensor-core schedules:
///   batch labels (both inputs, output), m (first input, output), n
///   (second input, output), k (both inputs, summed). A label of one input
///   that the output lacks is summed first. Each input is permuted to
///   [batch, m, k] / [batch, k, n], m, n and k merged into one dim each
///   (their sizes must be static when there are several), and the result
///   [batch, M, N] split and permuted to the output's order.
/// Sets `applies` to false when there is nothing to contract (no k) or a
/// merged group has a symbolic size; the caller then multiplies and sums.
static Value *contractAsMatmul(NodeContext &c, Value *a, Term ta, Value *b, Term tb,
                               const Term &output, const std::string &name, bool &applies) {
  auto in = [](const Term &t, int label) { return llvm::is_contained(t, label); };
  Term batch, m, n, k;
  for (int label : output) {
    if (in(ta, label) && in(tb, label))
      batch.push_back(label);
    else if (in(ta, label))
      m.push_back(label);
    else
      n.push_back(label);
  }
  for (int label : ta)
    if (in(tb, label) && !in(output, label))
      k.push_back(label);
  auto dimOf = [](Value *x, const Term &t, int label) {
    return x->type.getShape()[size_t(std::find(t.begin(), t.end(), label) - t.begin())];
  };
  // The size of a merged group, or nullopt when one of several is symbolic.
  auto merged = [&](Value *x, const Term &t, const Term &group) -> std::optional<Dim> {
    if (group.size() == 1)
      return dimOf(x, t, group.front());
    int64_t size = 1;
    for (int label : group) {
      const Dim &dim = dimOf(x, t, label);
      if (dim.isSymbolic())
        return std::nullopt;
      size *= dim.size;
    }
    return Dim::of(size);
  };
  std::optional<Dim> mSize = merged(a, ta, m), nSize = merged(b, tb, n),
                     kSize = merged(a, ta, k), kSizeB = merged(b, tb, k);
  applies = !k.empty() && mSize && nSize && kSize && kSizeB && *kSize == *kSizeB;
  if (!applies)
    return nullptr;
  // Labels of one input that the output lacks: summed first.
  auto sumAlone = [&](Value *x, Term &t, const Term &other, const std::string &hint) {
    std::vector<int64_t> axes;
    Term kept;
    for (size_t d = 0; d < t.size(); ++d)
      (in(other, t[d]) || in(output, t[d]) ? kept.push_back(t[d])
                                           : axes.push_back(int64_t(d)));
    if (axes.empty() || !x)
      return x;
    t = kept;
    return c.emit("sum", {Operand::of(x)}, attrsOf("axis", makeIntList(axes)), hint);
  };
  a = sumAlone(a, ta, tb, name + "_lhs_sum");
  b = sumAlone(b, tb, ta, name + "_rhs_sum");
  if (!a || !b)
    return nullptr;
  auto arrange = [&](Value *x, const Term &t, const Term &first, const Term &second,
                     const Dim &firstSize, const Dim &secondSize, const std::string &hint) {
    std::vector<int64_t> perm;
    std::vector<Dim> dims;
    for (const Term *group : {static_cast<const Term *>(&batch), &first, &second})
      for (int label : *group)
        perm.push_back(int64_t(std::find(t.begin(), t.end(), label) - t.begin()));
    for (int label : batch)
      dims.push_back(dimOf(x, t, label));
    dims.push_back(firstSize);
    dims.push_back(secondSize);
    return reshaped(c, permuted(c, x, perm, hint), dims, hint);
  };
  Dim one = Dim::of(1);
  Value *lhs = arrange(a, ta, m, k, m.empty() ? one : *mSize, *kSize, name + "_lhs");
  Value *rhs = arrange(b, tb, k, n, *kSize, n.empty() ? one : *nSize, name + "_rhs");
  if (!lhs || !rhs)
    return nullptr;
  // [batch, M, N] -> [batch, m..., n...] -> the output's order; the last op
  // emitted takes the node's output name.
  std::vector<Dim> dims;
  Term order = batch;
  for (int label : batch)
    dims.push_back(in(ta, label) && dimOf(a, ta, label) != Dim::of(1) ? dimOf(a, ta, label)
                                                                      : dimOf(b, tb, label));
  for (int label : m)
    dims.push_back(dimOf(a, ta, label)), order.push_back(label);
  for (int label : n)
    dims.push_back(dimOf(b, tb, label)), order.push_back(label);
  std::vector<int64_t> perm;
  bool permutes = false;
  for (int label : output) {
    perm.push_back(int64_t(std::find(order.begin(), order.end(), label) - order.begin()));
    permutes |= perm.back() != int64_t(perm.size()) - 1;
  }
  bool splits = m.size() != 1 || n.size() != 1; // M and N are not the dims themselves
  Value *product = c.emit("matmul", {Operand::of(lhs), Operand::of(rhs)}, {},
                          splits || permutes ? name + "_matmul" : name);
  Value *split = reshaped(c, product, dims, permutes ? name + "_split" : name);
  return permuted(c, split, perm, name);
}

static bool convertEinsum(NodeContext &c) {
  if (!c.hasAttr("equation"))
    return c.fail("the 'equation' attribute is missing");
  std::string equation = c.attrString("equation", "");
  llvm::StringRef text(equation);
  auto [lhs, rhs] = text.split("->");
  bool explicitOutput = text.contains("->");
  llvm::SmallVector<llvm::StringRef, 4> terms;
  lhs.split(terms, ',');
  if (terms.size() != c.numInputs())
    return c.fail("the equation '" + equation + "' has " + std::to_string(terms.size()) +
                  " input terms for " + std::to_string(c.numInputs()) + " inputs");
  std::vector<Value *> inputs;
  std::vector<Term> parsed;
  int64_t ellipsisRank = 0;
  std::string error;
  for (size_t i = 0; i < terms.size(); ++i) {
    Value *x = c.input(i);
    if (!x)
      return false;
    if (!inputs.empty() && x->type.getDType() != inputs.front()->type.getDType())
      return c.fail("the inputs must share one dtype, not " +
                    dtypeName(inputs.front()->type.getDType()).str() + " and " +
                    dtypeName(x->type.getDType()).str());
    Term term;
    if (!parseTerm(terms[i], term, error))
      return c.fail("equation '" + equation + "': " + error);
    int64_t letters = int64_t(llvm::count_if(term, [](int l) { return l != kEllipsisMarker; }));
    bool hasEllipsis = llvm::is_contained(term, kEllipsisMarker);
    int64_t rank = x->type.getRank();
    if (rank < letters || (!hasEllipsis && rank != letters))
      return c.fail("term '" + terms[i].trim().str() + "' does not fit input " +
                    std::to_string(i) + ", " + x->type.str());
    ellipsisRank = std::max(ellipsisRank, rank - letters);
    inputs.push_back(x);
    parsed.push_back(term);
  }
  for (size_t i = 0; i < parsed.size(); ++i) {
    int64_t letters = int64_t(llvm::count_if(parsed[i], [](int l) { return l != kEllipsisMarker; }));
    parsed[i] = expandEllipsis(parsed[i], inputs[i]->type.getRank() - letters, ellipsisRank);
  }
  // Step 1/2: the output term.
  Term output;
  if (explicitOutput) {
    Term written;
    if (!parseTerm(rhs, written, error))
      return c.fail("equation '" + equation + "': " + error);
    output = expandEllipsis(written, ellipsisRank, ellipsisRank);
    for (size_t k = 0; k < output.size(); ++k) {
      bool known = llvm::any_of(parsed, [&](const Term &t) { return llvm::is_contained(t, output[k]); });
      if (!known || llvm::count(output, output[k]) > 1)
        return c.fail("equation '" + equation + "': output label '" +
                      std::string(1, char(output[k])) +
                      (known ? "' appears twice" : "' is in no input term"));
    }
  } else {
    std::map<int, int> occurrences;
    for (const Term &t : parsed)
      for (int label : t)
        ++occurrences[label];
    for (int64_t k = 0; k < ellipsisRank; ++k)
      output.push_back(kFirstEllipsis + int(k));
    for (auto [label, count] : occurrences)
      if (label < kFirstEllipsis && count == 1)
        output.push_back(label);
  }
  std::string name = c.node.output(0);
  DType dtype = inputs.front()->type.getDType();
  bool widen = dtype == DType::f16 || dtype == DType::bf16;
  // Step 3: diagonals, then the size of each label.
  std::map<int, Dim> sizes;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Value *x = inputs[i];
    Term &term = parsed[i];
    for (size_t p = 0; p < term.size() && x; ++p)
      for (size_t q = term.size(); q-- > p + 1 && x;) {
        if (term[q] != term[p])
          continue;
        const Dim &n = x->type.getShape()[p];
        if (n != x->type.getShape()[q] || n.isSymbolic())
          return c.fail("the diagonal of label '" + std::string(1, char(term[p])) +
                        "' needs two equal static dims, not " + x->type.str());
        std::vector<int64_t> eyeShape(term.size() - p, 1);
        eyeShape[0] = eyeShape[q - p] = n.size;
        TensorData eye(DType::boolean, eyeShape);
        int64_t stride = 1;
        for (size_t d = q - p + 1; d < eyeShape.size(); ++d)
          stride *= eyeShape[d];
        for (int64_t k = 0; k < n.size; ++k)
          eye.setInt(k * (n.size * stride) + k * stride, 1);
        Value *mask = c.emitConstant(std::move(eye), name + "_eye");
        Value *kept = c.emit("where", {Operand::of(mask), Operand::of(x),
                                       NodeContext::literal(0, x->type.getDType())},
                             {}, name + "_diagonal");
        Attrs drop;
        drop.set("axis", makeIntList({int64_t(q)}));
        x = c.emit("sum", {Operand::of(kept)}, drop, name + "_diagonal");
        term.erase(term.begin() + q);
      }
    if (!x)
      return false;
    for (size_t d = 0; d < term.size(); ++d) {
      const Dim &dim = x->type.getShape()[d];
      auto [it, inserted] = sizes.try_emplace(term[d], dim);
      if (!inserted && it->second != dim) {
        bool oneIsUnit = dim.isOne() || it->second.isOne();
        if (!oneIsUnit) // size 1 broadcasts, lettered or not, as in NumPy
          return c.fail("label '" + (term[d] < kFirstEllipsis ? std::string(1, char(term[d]))
                                                               : std::string("...")) +
                        "' has sizes " + it->second.str() + " and " + dim.str());
        if (it->second.isOne())
          it->second = dim;
      }
    }
    inputs[i] = x;
  }
  if (inputs.size() == 2) {
    bool applies = false;
    Value *result = contractAsMatmul(c, inputs[0], parsed[0], inputs[1], parsed[1], output,
                                     name, applies);
    if (applies)
      return result ? (c.define(0, result), true) : false;
  }
  // Step 4: one label order, output labels first.
  Term order = output;
  for (const Term &t : parsed)
    for (int label : t)
      if (!llvm::is_contained(order, label))
        order.push_back(label);
  // The last op emitted takes the node's output name.
  bool productIsResult = order.size() == output.size() && !widen;
  Value *product = nullptr;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Term &term = parsed[i];
    std::vector<int64_t> perm;
    for (int label : order)
      for (size_t d = 0; d < term.size(); ++d)
        if (term[d] == label)
          perm.push_back(int64_t(d));
    Value *x = inputs[i];
    if (widen)
      x = c.emit("astype", {Operand::of(x)}, attrsOf("dtype", Attr::makeString("f32")),
                 name + "_in" + std::to_string(i));
    x = permuted(c, x, perm,
                 productIsResult && inputs.size() == 1 ? name : name + "_in" + std::to_string(i));
    std::vector<int64_t> missing;
    for (size_t k = 0; k < order.size(); ++k)
      if (!llvm::is_contained(term, order[k]))
        missing.push_back(int64_t(k));
    if (!missing.empty() && x)
      x = c.emit("expand_dims", {Operand::of(x)}, attrsOf("axis", makeIntList(missing)),
                 name + "_in" + std::to_string(i));
    if (!x)
      return false;
    // Step 5.
    bool last = i + 1 == inputs.size();
    product = product ? c.emit("multiply", {Operand::of(product), Operand::of(x)}, {},
                               productIsResult && last ? name : name + "_product")
                      : x;
    if (!product)
      return false;
  }
  Value *result = product;
  if (order.size() > output.size()) {
    std::vector<int64_t> summed;
    for (size_t k = output.size(); k < order.size(); ++k)
      summed.push_back(int64_t(k));
    result = c.emit("sum", {Operand::of(product)}, attrsOf("axis", makeIntList(summed)),
                    widen ? name + "_sum" : name);
  }
  if (widen && result)
    result = c.emit("astype", {Operand::of(result)},
                    attrsOf("dtype", Attr::makeString(dtypeName(dtype).str())), name);
  c.define(0, result);
  return true;
}

void onnximport::registerEinsumOps(std::vector<OpConverter> &table) {
  table.push_back({"Einsum", convertEinsum});
}
