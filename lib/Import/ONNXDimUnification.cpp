//===- ONNXDimUnification.cpp - Dims that an operator says are equal ------===//
//
// Two graph inputs may name one size differently: PyTorch's list-form
// `dynamic_axes` names each input's axes after the input
// (`input_ids_dynamic_axes_1`, `attention_mask_dynamic_axes_1`), and
// tf2onnx writes `unk__476` and `unk__478` for the batch of BERT-Squad's
// inputs. A FIR dim is one name, so `add` of `[a, 4]` and `[b, 4]` does not
// type. ONNX Runtime's symbolic shape inference merges such dims; so does
// the importer:
//   1. When an op the importer emits fails to type, each pair of distinct
//      symbolic dims of the graph inputs that its operands (or its `shape`
//      attribute) name is tried: the later input's name replaced by the
//      earlier one's. The first pair with which the op types is the pair
//      the op equates (`equatedDims`); the import still fails.
//   2. importONNX then imports the model again with the later name taken
//      to be the earlier one in the graph inputs' types (`dimAliases`), and
//      warns. Each round merges two dims, so the rounds are bounded by the
//      number of named input dims.
// A run whose inputs give the merged dims different sizes is rejected by
// the interpreter and by the launcher (a dim bound two ways); the one valid
// ONNX case it loses is a size-1 input broadcast against the other.
//
//===----------------------------------------------------------------------===//

#include "ONNXImporter.h"

#include "fusec/Support/Support.h"

#include "llvm/Support/SourceMgr.h"

using namespace fusec;
using namespace fusec::onnximport;

/// `attr` with the identifier `from` (a symbolic dim of a `shape` list)
/// replaced by `to`.
static Attr renameIdents(const Attr &attr, const std::string &from, const std::string &to) {
  if (attr.kind == Attr::Ident && attr.text == from)
    return Attr::makeIdent(to);
  if (attr.kind != Attr::List)
    return attr;
  Attr renamed = attr;
  for (Attr &item : renamed.list)
    item = renameIdents(item, from, to);
  return renamed;
}

/// The dims `op` needs equal, by position: a matmul's contracted dims and
/// its batch dims aligned from the right; a concat's dims other than its
/// axis; any other op's operand dims aligned from the right (broadcasting).
static std::vector<std::pair<Dim, Dim>> alignedDims(llvm::StringRef op,
                                                    const std::vector<Operand> &operands,
                                                    const Attrs &attrs) {
  std::vector<Shape> shapes;
  for (const Operand &operand : operands)
    if (!operand.isLiteral() && operand.value->type.isTensor())
      shapes.push_back(operand.value->type.getShape());
  std::vector<std::pair<Dim, Dim>> pairs;
  auto alignRight = [&](const Shape &a, const Shape &b, size_t skip) {
    for (size_t i = skip; i < std::min(a.size(), b.size()); ++i)
      pairs.emplace_back(a[a.size() - 1 - i], b[b.size() - 1 - i]);
  };
  if (op == "matmul" && shapes.size() == 2 && !shapes[0].empty() && !shapes[1].empty()) {
    const Shape &a = shapes[0], &b = shapes[1];
    pairs.emplace_back(a.back(), b.size() == 1 ? b[0] : b[b.size() - 2]);
    if (a.size() > 2 && b.size() > 2)
      alignRight(a, b, 2);
    return pairs;
  }
  int64_t axis = -1; // none
  if (op == "concat" && !shapes.empty()) {
    const Attr *given = attrs.get("axis");
    if (given && given->kind == Attr::List && given->list.size() == 1)
      given = &given->list[0];
    axis = given && given->kind == Attr::Int ? given->intValue : 0;
    if (axis < 0)
      axis += int64_t(shapes[0].size());
  }
  for (size_t i = 0; i < shapes.size(); ++i)
    for (size_t j = i + 1; j < shapes.size(); ++j) {
      if (axis < 0) {
        alignRight(shapes[i], shapes[j], 0);
        continue;
      }
      for (size_t d = 0; d < std::min(shapes[i].size(), shapes[j].size()); ++d)
        if (int64_t(d) != axis)
          pairs.emplace_back(shapes[i][d], shapes[j][d]);
    }
  return pairs;
}

void Importer::noteEquatedDims(const std::string &node, llvm::StringRef op,
                               const std::vector<Operand> &operands, const Attrs &attrs,
                               const std::vector<std::string> &named) {
  auto order = [&](const std::string &dim) {
    return llvm::find(inputDims, dim) - inputDims.begin();
  };
  auto isInputDim = [&](const Dim &dim) {
    return dim.isSymbolic() && llvm::is_contained(inputDims, dim.symbol);
  };
  llvm::SourceMgr sourceMgr;
  DiagEngine silent(sourceMgr);
  silent.setHandler([](const llvm::SMDiagnostic &) {});
  // Whether the op types with the later dim of each pair renamed to the
  // earlier one.
  auto typesWith = [&](const std::map<std::string, Dim> &renaming) {
    std::vector<std::unique_ptr<Value>> standIns;
    Binding trial;
    trial.kind = ExprKind::Op;
    trial.callee = op.str();
    for (const Operand &operand : operands) {
      if (operand.isLiteral()) {
        trial.operands.push_back(operand);
        continue;
      }
      standIns.push_back(std::make_unique<Value>());
      standIns.back()->type = operand.value->type.withDims(renaming);
      trial.operands.push_back(Operand::of(standIns.back().get()));
    }
    for (const Attrs::Entry &entry : attrs.getEntries()) {
      Attr value = entry.value;
      for (const auto &[from, to] : renaming)
        value = renameIdents(value, from, to.symbol);
      trial.attrs.set(entry.name, value);
    }
    normalizeOpAttrs(trial);
    return inferOpType(trial, silent).has_value();
  };
  auto record = [&](const std::map<std::string, Dim> &renaming) {
    EquatedDims equated{{}, node};
    for (const auto &[dropped, kept] : renaming)
      equated.pairs.emplace_back(kept.symbol, dropped);
    equatedDims = equated;
  };

  // 1. Every pair the op's semantics align, merged at once (an attention
  //    mask's batch and sequence against the scores').
  std::map<std::string, Dim> renaming;
  auto resolve = [&](std::string dim) {
    while (renaming.count(dim))
      dim = renaming.at(dim).symbol;
    return dim;
  };
  for (const auto &[a, b] : alignedDims(op, operands, attrs)) {
    if (!isInputDim(a) || !isInputDim(b))
      continue;
    std::string x = resolve(a.symbol), y = resolve(b.symbol);
    if (x == y)
      continue;
    if (order(y) < order(x))
      std::swap(x, y);
    renaming[y] = Dim::named(x);
  }
  for (auto &entry : renaming) // flatten the chains
    entry.second = Dim::named(resolve(entry.first));
  if (!renaming.empty() && typesWith(renaming))
    return record(renaming);

  // 2. Each pair of input dims the op names (a reshape's target naming
  //    another input's dim).
  std::vector<std::string> candidates;
  for (const std::string &dim : inputDims)
    if (llvm::is_contained(named, dim))
      candidates.push_back(dim);
  for (size_t i = 0; i < candidates.size(); ++i)
    for (size_t j = i + 1; j < candidates.size(); ++j) {
      std::map<std::string, Dim> pair{{candidates[j], Dim::named(candidates[i])}};
      if (typesWith(pair))
        return record(pair);
    }
}
