//===- ScheduleBroadcast.cpp - Place broadcast producers by cost ----------===//
//
// Contract: in an elementwise kernel with one output of rank >= 2,
// a spatial internal stage S that the output reads through a broadcast,
// directly or through stages inlined at the output's own index,
// (each index a variable of the output or 0 on a dim of size 1, leading
// dims possibly absent; e.g. seed 003's [rows, 1] chain added to
// [rows, cols]) is placed where the cost model (lib/Analysis/CostModel.cpp)
// estimates it cheapest:
//   - inline (TVM's choice): S is recomputed at every output element;
//   - compute_at(output, block), for a row broadcast S[i0, .., ik-1, 0, ..]
//     or S[i0, .., ik-1] (any i may be 0 on a dim of size 1) over rows of at
//     least a warp's 32 elements: one block per row (`rows`, inner = r - k)
//     evaluates S once for its row, into shared memory (under a columns
//     mapping, for the rows it walks);
//   - compute_at(output, thread), for a column broadcast S[0, .., 0, ik,
//     .., ir-1] or S[ik, .., ir-1] over at least a warp's 32 columns: the
//     output is mapped `columns` (inner = r - k), each thread owning
//     `vector` columns and walking kColumnWalk rows of them, and each
//     thread evaluates S once for its columns, into registers;
//   - materialize: S gets its own launch and a global buffer.
// Symbolic dims count as kSymbolicDimEstimate in the estimates (the
// remark says so).
// Algorithm:
//   1. Find the candidates in the output's body and in the bodies of the
//      stages it reads at its own index (an epilogue after the broadcast
//      add).
//   2. For each, estimate the three placements (S's work counts the stages
//      inlined into it) under the mapping its compute_at needs, and a row
//      broadcast's compute_at also in the blocks of a columns mapping (each
//      block computes it for the rows it walks) when a column broadcast
//      wants one.
//   3. One mapping serves the output: try each that a candidate needs, and
//      none; under each, every candidate takes its cheapest placement that
//      the mapping allows; keep the mapping with the least total (a row and
//      a column chain into one output: columns, both computed at it).
//   4. Rewrite the schedule entries; report each decision with its costs
//      (--remarks, the fusion report's `decisions`).
//
//===----------------------------------------------------------------------===//
#include "ScheduleRules.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <map>
#include <optional>
#include <set>

using namespace fusec;

namespace {
/// The mapping compute_at needs: a rows mapping for a row broadcast, a
/// columns mapping for a column broadcast, over the output's last `inner`
/// dims (a row's elements, or the columns).
struct ComputeAtMapping {
  StageMapping::Kind kind = StageMapping::Flat; // Flat: none
  int64_t inner = 0;
  bool operator==(const ComputeAtMapping &other) const {
    return kind == other.kind && inner == other.inner;
  }
};

struct Candidate {
  const KStage *stage = nullptr;
  ComputeAtMapping computeAt; // Flat: neither a row nor a column broadcast
};

/// A candidate's placement estimates.
struct Estimate {
  const Candidate *candidate = nullptr;
  PlacementCost own; // under the mapping its compute_at needs
  std::optional<PlacementCost> underColumns; // a row broadcast's, in columns' blocks
  std::string noComputeAt = "not a row or column broadcast";

  /// The estimate when the output has `mapping`: compute_at only where that
  /// mapping serves it, else the cheaper of inlining and materializing.
  PlacementCost under(const ComputeAtMapping &mapping) const {
    bool inColumns = underColumns && mapping.kind == StageMapping::Columns &&
                     mapping.inner == candidate->computeAt.inner;
    PlacementCost cost = inColumns ? *underColumns : own;
    if (!inColumns && !(mapping == candidate->computeAt) && cost.choice == "compute_at")
      cost.choice = cost.materializeUs < cost.inlineUs ? "materialize" : "inline";
    return cost;
  }
};

/// Rows each thread of a columns mapping walks: a chain broadcast over the
/// rows is evaluated once per this many rows, and the walk, unrolled, keeps
/// as many loads in flight per thread.
constexpr int64_t kColumnWalk = 16;
} // namespace

/// The loads of internal spatial stages in `expr` that broadcast: each index
/// is a distinct variable of the output or 0 on a dim of size 1, and at
/// least one is 0 or the load has fewer indices than the output has dims.
/// `leading` is k when the variables are exactly the output's first k at
/// their own positions (a row broadcast), `trailing` m when they are
/// exactly its last m, as the load's last m indices (a column broadcast);
/// compute_at can serve these two.
/// A stage the expression reads at the output's own index (an epilogue's
/// operand, `relu(add(chain, b))`) is inlined there, so its body is searched
/// too; `rootVar` maps the variables of `expr` to the output's.
static void findBroadcastLoads(const Kernel &kernel, const KExpr &expr, const KStage &root,
                               const std::map<std::string, std::string> &rootVar,
                               std::vector<Candidate> &found, std::set<const KStage *> &searched) {
  auto asRootVar = [&](const KExpr &index) -> std::string {
    if (index.kind != KExpr::Var)
      return "";
    auto it = rootVar.find(index.name);
    return it == rootVar.end() ? "" : it->second;
  };
  if (expr.kind == KExpr::Load) {
    const KBuffer *buffer = kernel.findBuffer(expr.name);
    const KStage *stage = kernel.findStage(expr.name);
    size_t rank = root.spatialVars.size();
    bool internal = buffer && buffer->role == KBuffer::Internal && stage && !stage->isReduction() &&
                    !expr.args.empty() && expr.args.size() <= rank;
    const Shape &shape = internal ? buffer->type.getShape() : Shape();
    std::set<std::string> vars;
    size_t zeros = 0;
    bool broadcast = internal;
    for (size_t d = 0; broadcast && d < expr.args.size(); ++d) {
      const KExpr &index = *expr.args[d];
      std::string var = asRootVar(index);
      if (index.kind == KExpr::IntConst && index.intValue == 0 && shape[d].isOne())
        ++zeros;
      else
        broadcast = !var.empty() && vars.insert(var).second;
    }
    bool identity = internal && zeros == 0 && expr.args.size() == rank;
    for (size_t d = 0; identity && d < expr.args.size(); ++d)
      identity = asRootVar(*expr.args[d]) == root.spatialVars[d];
    if (identity && stage->spatialVars.size() == root.spatialVars.size() &&
        searched.insert(stage).second) {
      std::map<std::string, std::string> inner;
      for (size_t d = 0; d < stage->spatialVars.size(); ++d)
        inner[stage->spatialVars[d]] = root.spatialVars[d];
      findBroadcastLoads(kernel, *stage->body, root, inner, found, searched);
      return;
    }
    broadcast &= !vars.empty() && (zeros > 0 || expr.args.size() < rank);
    // Rows: every variable at its own position, so each row of the output's
    // first k dims reads one row of S (k: past the last variable); the dims
    // before k may still be broadcast (`%s[0, c, 0, 0]`), and S may lack the
    // output's last dims (`%s[i0]` in `[i0, i1]`, an expand_dims inlined).
    size_t k = 0;
    bool positional = broadcast;
    for (size_t d = 0; positional && d < expr.args.size(); ++d) {
      std::string var = asRootVar(*expr.args[d]);
      if (var.empty())
        continue;
      positional = var == root.spatialVars[d];
      k = d + 1;
    }
    bool rows = positional && k < rank;
    // Columns: the load's last m indices are the output's last m variables
    // in order, every index before them a 0.
    size_t m = vars.size(), offset = rank - expr.args.size();
    bool columns = broadcast && !rows;
    for (size_t d = 0; columns && d < expr.args.size(); ++d) {
      std::string var = asRootVar(*expr.args[d]);
      columns = d < expr.args.size() - m ? var.empty() : var == root.spatialVars[offset + d];
    }
    ComputeAtMapping computeAt;
    if (rows)
      computeAt = {StageMapping::Rows, int64_t(rank - k)};
    else if (columns)
      computeAt = {StageMapping::Columns, int64_t(m)};
    if (broadcast && llvm::none_of(found, [&](const Candidate &c) { return c.stage == stage; }))
      found.push_back({stage, computeAt});
    return;
  }
  for (const KExprPtr &arg : expr.args)
    if (arg)
      findBroadcastLoads(kernel, *arg, root, rootVar, found, searched);
}

namespace {
/// A columns mapping for the output: blocks of up to 128 threads over its
/// last `trailing` dims, each thread walking up to kColumnWalk rows; the
/// vector as wide as the columns allow while the blocks still fill the
/// SMs (a narrower access beats idle SMs).
struct ColumnsPlan {
  int64_t threads = 32, vector = 1, rows = 1, blocks = 0;
};
} // namespace

static ColumnsPlan planColumns(const Kernel &kernel, const KStage &root, int64_t trailing,
                               const TargetDesc &target) {
  llvm::ArrayRef<Dim> shape = kernel.findBuffer(root.buffer)->type.getShape();
  int64_t columns = estimatedProduct(shape.take_back(trailing));
  llvm::ArrayRef<Dim> rowDims = shape.drop_back(trailing);
  int64_t rows = estimatedProduct(rowDims);
  ColumnsPlan plan;
  plan.rows = hasSymbolicDims(rowDims) ? kColumnWalk : std::min(kColumnWalk, rows);
  int64_t rowBlocks = (rows + plan.rows - 1) / plan.rows;
  for (int64_t vector = chooseVectorWidth(kernel, root); vector >= 1; vector /= 2) {
    plan.vector = vector;
    plan.threads = std::clamp<int64_t>((columns / vector + 31) / 32 * 32, 32, 128);
    plan.blocks = (columns + plan.threads * vector - 1) / (plan.threads * vector) * rowBlocks;
    if (plan.blocks >= target.smCount)
      break;
  }
  return plan;
}

void fusec::placeBroadcastProducers(const Kernel &kernel, KSchedule &schedule,
                                    const ScheduleCostContext &cost) {
  if (kernel.outputs.size() != 1)
    return;
  const KStage *root = kernel.findStage(kernel.outputs.front().name);
  const Type &rootType = kernel.outputs.front().type;
  int64_t rootElements = estimatedNumElements(rootType);
  if (!root || rootType.getRank() < 2 || rootElements <= 0)
    return;
  std::vector<Candidate> candidates;
  std::map<std::string, std::string> rootVars;
  for (const std::string &var : root->spatialVars)
    rootVars[var] = var;
  std::set<const KStage *> searched;
  findBroadcastLoads(kernel, *root->body, *root, rootVars, candidates, searched);
  if (candidates.empty())
    return;
  // Every other spatial internal stage is inlined where it is read, so a
  // candidate's work includes the chain feeding it.
  std::map<std::string, const KStage *> inlined;
  for (const KStage &stage : kernel.stages)
    if (isInternal(kernel, stage) && !stage.isReduction() &&
        llvm::none_of(candidates, [&](const Candidate &c) { return c.stage == &stage; }))
      inlined[stage.buffer] = &stage;
  int64_t rootBytes = rootElements * dtypeBytes(rootType.getDType());
  bool symbolic = hasSymbolicDims(rootType);
  for (const KBuffer &input : kernel.inputs) {
    rootBytes += estimatedNumElements(input.type) * dtypeBytes(input.type.getDType());
    symbolic |= hasSymbolicDims(input.type);
  }
  StageSchedule *rootEntry = schedule.find(root->buffer);
  llvm::ArrayRef<Dim> rootShape = rootType.getShape();
  // 2. Each candidate's estimates: under its own mapping, and, for a row
  // broadcast, under a columns mapping over the same inner dims (its block
  // computes the chain for the rows it walks), which a column broadcast
  // into the same output may want.
  std::vector<Estimate> estimates;
  for (const Candidate &candidate : candidates) {
    const KBuffer *buffer = kernel.findBuffer(candidate.stage->buffer);
    Estimate estimate;
    estimate.candidate = &candidate;
    int64_t producerElements = estimatedNumElements(buffer->type);
    if (producerElements <= 0)
      continue;
    auto estimateWith = [&](ComputeAtBlocks blocks) {
      return estimatePlacement(*candidate.stage, producerElements,
                               producerElements * dtypeBytes(buffer->type.getDType()), rootElements,
                               rootBytes, blocks, *cost.target, inlined);
    };
    // The blocks compute_at would use; none for a broadcast neither row nor
    // column, or rows or columns under a warp (most threads would idle).
    ComputeAtBlocks blocks;
    const ComputeAtMapping &mapping = candidate.computeAt;
    llvm::ArrayRef<Dim> innerDims = rootShape.take_back(mapping.inner);
    int64_t innerElements = estimatedProduct(innerDims);
    int64_t rows = estimatedProduct(rootShape.drop_back(mapping.inner));
    if (mapping.kind != StageMapping::Flat && !hasSymbolicDims(innerDims) && innerElements < 32) {
      estimate.noComputeAt = (mapping.kind == StageMapping::Rows ? "rows of " : "columns of ") +
                             std::to_string(innerElements) + " elements, under a warp";
    } else if (mapping.kind == StageMapping::Rows) {
      blocks = {rows, std::max<int64_t>(1, producerElements / rows)};
      if (llvm::any_of(candidates, [&](const Candidate &other) {
            return other.computeAt == ComputeAtMapping{StageMapping::Columns, mapping.inner};
          })) {
        ColumnsPlan plan = planColumns(kernel, *root, mapping.inner, *cost.target);
        estimate.underColumns =
            estimateWith({plan.blocks, plan.rows * std::max<int64_t>(1, producerElements / rows)});
      }
    } else if (mapping.kind == StageMapping::Columns) {
      ColumnsPlan plan = planColumns(kernel, *root, mapping.inner, *cost.target);
      blocks = {plan.blocks, plan.threads * plan.vector};
    }
    estimate.own = estimateWith(blocks);
    estimates.push_back(std::move(estimate));
  }
  // 3. The output's mapping: the one whose compute_at stages and the
  // others' best placements add up cheapest (none: inline or materialize
  // every candidate). The first candidates' mappings win ties.
  std::vector<ComputeAtMapping> options;
  for (const Estimate &estimate : estimates)
    if (estimate.own.computeAtPossible &&
        llvm::find(options, estimate.candidate->computeAt) == options.end())
      options.push_back(estimate.candidate->computeAt);
  options.push_back(ComputeAtMapping());
  ComputeAtMapping chosen = options.back();
  double cheapest = 0;
  for (size_t o = 0; o < options.size(); ++o) {
    double total = 0;
    for (const Estimate &estimate : estimates)
      total += estimate.under(options[o]).chosenUs();
    if (o == 0 || total < cheapest)
      cheapest = total, chosen = options[o];
  }
  // 4. Rewrite the entries; explain each decision with its alternatives.
  // The candidate the chosen mapping is for: the first whose compute_at
  // needs it, else the first computed at it.
  std::string chosenFor;
  for (bool own : {true, false})
    for (const Estimate &estimate : estimates)
      if (chosenFor.empty() && (!own || estimate.candidate->computeAt == chosen) &&
          estimate.under(chosen).choice == "compute_at")
        chosenFor = "%" + estimate.candidate->stage->buffer;
  for (const Estimate &candidateEstimate : estimates) {
    const Candidate &candidate = *candidateEstimate.candidate;
    const ComputeAtMapping &mapping = candidate.computeAt;
    bool blockOfColumns = candidateEstimate.underColumns && chosen.kind == StageMapping::Columns &&
                          chosen.inner == mapping.inner;
    PlacementCost estimate = candidateEstimate.under(chosen);
    std::string conflict;
    if (candidateEstimate.own.choice == "compute_at" && estimate.choice != "compute_at" &&
        !blockOfColumns && !(chosen == mapping))
      conflict = "; compute_at needs a " + mappingKindName(mapping.kind).str() +
                 " mapping with inner = " + std::to_string(mapping.inner) +
                 ", and the output's is " + mappingKindName(chosen.kind).str() +
                 " with inner = " + std::to_string(chosen.inner) + ", for " + chosenFor;
    if (blockOfColumns)
      conflict = "; compute_at in the blocks of the output's columns mapping (for " + chosenFor +
                 "), each for the rows it walks";
    StageSchedule *entry = schedule.find(candidate.stage->buffer);
    if (estimate.choice == "compute_at") {
      entry->placement = StageSchedule::ComputeAt;
      entry->consumer = root->buffer;
      entry->level =
          mapping.kind == StageMapping::Rows ? StageSchedule::Block : StageSchedule::Thread;
    } else if (estimate.choice == "materialize") {
      entry->placement = StageSchedule::Root; // an internal root is materialized
      entry->mapping.kind = StageMapping::Flat;
      entry->mapping.threads = kFlatThreads;
      entry->mapping.vector = chooseVectorWidth(kernel, *candidate.stage);
    }
    std::string producer = "%" + candidate.stage->buffer, consumer = "%" + root->buffer;
    std::string reason;
    llvm::raw_string_ostream os(reason);
    os << "broadcast reuse " << estimate.recompute << "x; inlining would recompute "
       << llvm::format("%.0f", estimate.workPerElement) << " FMA slots per output element";
    if (symbolic)
      os << " (symbolic dims counted as " << kSymbolicDimEstimate << ")";
    os << conflict;
    os.flush();
    double chosenUs = estimate.chosenUs();
    if (PassContext *pass = cost.pass) {
      if (pass->remarks)
        *pass->remarks << "remark: schedule: @" << kernel.name << ": " << producer << " -> "
                       << consumer << ": " << estimate.choice << " (" << reason
                       << "; estimated us: inline " << llvm::format("%.3f", estimate.inlineUs)
                       << ", compute_at "
                       << (estimate.computeAtPossible
                               ? std::string(llvm::formatv("{0:f3}", estimate.computeAtUs))
                               : "n/a (" + candidateEstimate.noComputeAt + ")")
                       << ", materialize " << llvm::format("%.3f", estimate.materializeUs)
                       << ", plus " << llvm::format("%.3f", estimate.rootUs)
                       << " of the output's own traffic on " << cost.target->name << ")\n";
      if (pass->report) {
        std::vector<std::pair<std::string, double>> costs = {{"inline_us", estimate.inlineUs}};
        if (estimate.computeAtPossible)
          costs.push_back({"compute_at_us", estimate.computeAtUs});
        costs.push_back({"materialize_us", estimate.materializeUs});
        costs.push_back({"chosen_us", chosenUs});
        pass->report->decisions.push_back({"schedule", kernel.name, estimate.choice, reason,
                                           {{"producer", producer}, {"consumer", consumer}},
                                           costs});
      }
    }
  }
  if (!rootEntry || chosen.kind == StageMapping::Flat)
    return;
  schedule.rule = "elementwise";
  if (chosen.kind == StageMapping::Columns) {
    ColumnsPlan columnsPlan = planColumns(kernel, *root, chosen.inner, *cost.target);
    rootEntry->mapping.kind = StageMapping::Columns;
    rootEntry->mapping.threads = columnsPlan.threads;
    rootEntry->mapping.vector = columnsPlan.vector;
    rootEntry->mapping.inner = chosen.inner;
    rootEntry->mapping.rows = columnsPlan.rows;
    return;
  }
  // One block per row; the threads stride over the row's elements (a
  // full block when their number is symbolic).
  int64_t rowElements = 1;
  bool symbolicRow = false;
  for (size_t d = rootShape.size() - size_t(chosen.inner); d < rootShape.size(); ++d) {
    symbolicRow |= rootShape[d].isSymbolic();
    rowElements *= rootShape[d].isSymbolic() ? 1 : rootShape[d].size;
  }
  int64_t vector = chooseVectorWidth(kernel, *root);
  int64_t threads = symbolicRow ? kFlatThreads : (rowElements / vector + 31) / 32 * 32;
  rootEntry->mapping.kind = StageMapping::Rows;
  rootEntry->mapping.threads = std::clamp<int64_t>(threads, 32, kFlatThreads);
  rootEntry->mapping.vector = vector;
  rootEntry->mapping.inner = chosen.inner;
}
