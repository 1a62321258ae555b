//===- RecomputeVeto.cpp - fuse-ops: refuse fusions that recompute --------===//
//
// Contract (fuse-ops{recompute-veto=true}, not TVM; -O2): after TVM's
// partition, no group makes its kernel re-evaluate an expensive producer
// for every element of a broadcast when a kernel of its own is cheaper.
// Elementwise and broadcast groups are not touched: their schedule places
// such producers itself (compute_at or materialize, ScheduleBroadcast.cpp).
// Groups rooted at a reduction or a contraction are: their rules inline
// every spatial producer into the reduction's loop (seed issue 003 with a
// row sum after the broadcast add).
//
// Algorithm, per such group:
//   1. for each member p that is a kernel call of at most injective
//      pattern, the recompute factor: the largest element count of a
//      non-reduction consumer in the group over p's own (1 when nothing
//      broadcasts p);
//   2. p's chain: p and, transitively, the group's producers whose every
//      consumer is in the chain (what leaves with p); its work per element
//      is the sum of the chain kernels' expression work;
//   3. estimateRecompute: the chain re-evaluated `factor` times per element
//      (for a row value of the group's row reductions, which the reduction
//      rule can compute once per row at the block, the cheaper of that and
//      estimateComputeAtUs) against one launch plus a write and a read of
//      p; when separate is cheaper, the chain becomes a group of its own
//      (representative p), unless a member that stays feeds the chain (a
//      cycle: the remark says so).
// Every factor > 1 decision is a remark (with both estimates) and a report
// decision; a refusal's remark is fuse-ops' own for the cut edge. Symbolic
// dims count as kSymbolicDimEstimate (the reason says so); the factor of a
// dim that p and its consumer share does not depend on it.
//
//===----------------------------------------------------------------------===//
#include "FusePrologues.h"
#include "ScheduleRules.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <map>

using namespace fusec;

/// The element count of node `n`'s value (symbolic dims counted as
/// kSymbolicDimEstimate), or nullopt for no tensor.
static std::optional<int64_t> elementsOf(const FusionGraph &graph, int n) {
  const Value *value = graph.nodes[n].value;
  if (!value || !value->type.isTensor())
    return std::nullopt;
  return estimatedNumElements(value->type);
}

static bool isSymbolicNode(const FusionGraph &graph, int n) {
  return graph.nodes[n].value && hasSymbolicDims(graph.nodes[n].value->type);
}

std::vector<Dim> fusec::withoutTrailingOnes(const Shape &shape) {
  std::vector<Dim> dims(shape.begin(), shape.end());
  while (!dims.empty() && dims.back().isOne())
    dims.pop_back();
  return dims;
}

bool fusec::hasRowsBeyond(const Type &output, llvm::ArrayRef<Dim> rows) {
  return output.isTensor() && withoutTrailingOnes(output.getShape()).size() > rows.size();
}

std::optional<std::vector<Dim>> fusec::rowReductionRows(const Module &module,
                                                        const FusionGraph &graph,
                                                        const std::vector<int> &members,
                                                        bool hasContraction) {
  if (hasContraction)
    return std::nullopt;
  std::optional<std::vector<Dim>> rows;
  for (int q : members) {
    const Kernel *kernel =
        graph.nodes[q].binding ? module.lookupKernel(graph.nodes[q].binding->callee) : nullptr;
    if (!kernel)
      continue;
    for (const KStage &stage : inlineSpatialInternals(*kernel)) {
      if (!stage.isReduction())
        continue;
      std::vector<Dim> own = withoutTrailingOnes(kernel->findBuffer(stage.buffer)->type.getShape());
      if ((rows && own != *rows) || !reducesInnermost(*kernel, stage))
        return std::nullopt;
      rows = own;
    }
  }
  return rows;
}

std::set<int> fusec::vetoRecomputation(const Module &module, const Function &function,
                                       const FusionGraph &graph, Partition &partition,
                                       const TargetDesc &target, PassContext &context) {
  std::set<int> moved;
  std::map<int, std::vector<int>> groups;
  for (int node = 0; node < int(graph.nodes.size()); ++node)
    if (graph.nodes[node].binding)
      groups[partition.group[node]].push_back(node);
  for (auto &[group, members] : groups) {
    OpPatternKind kind = partition.groupPattern[group];
    if (members.size() < 2 ||
        (kind != OpPatternKind::CommReduce && kind != OpPatternKind::OutEWiseFusable))
      continue;
    bool hasContraction = findContraction(module, graph, members) >= 0;
    std::optional<std::vector<Dim>> reductionRows =
        rowReductionRows(module, graph, members, hasContraction);
    // Later members first: a chain that leaves takes its producers along.
    for (auto it = members.rbegin(); it != members.rend(); ++it) {
      int p = *it;
      const FusionGraph::Node &node = graph.nodes[p];
      if (partition.group[p] != group || moved.count(p) || !node.binding ||
          node.binding->kind != ExprKind::CallKernel || node.pattern > OpPatternKind::Injective)
        continue;
      std::optional<int64_t> elements = elementsOf(graph, p);
      if (!elements || *elements == 0)
        continue;
      // Step 1: the recompute factor.
      int64_t factor = 1;
      int widest = -1;
      for (const FusionGraph::Edge &edge : node.outputs) {
        if (partition.group[edge.consumer] != group ||
            graph.nodes[edge.consumer].pattern > OpPatternKind::Injective)
          continue;
        std::optional<int64_t> consumerElements = elementsOf(graph, edge.consumer);
        if (consumerElements && *consumerElements / *elements > factor) {
          factor = *consumerElements / *elements;
          widest = edge.consumer;
        }
      }
      if (factor <= 1)
        continue;
      // Step 2: the chain that would leave with p.
      std::set<int> chain{p};
      for (bool grew = true; grew;) {
        grew = false;
        for (int q : members) {
          if (chain.count(q) || partition.group[q] != group || !graph.nodes[q].binding ||
              graph.nodes[q].externRef || graph.nodes[q].pattern > OpPatternKind::Injective)
            continue;
          bool feedsOnlyChain = !graph.nodes[q].outputs.empty();
          for (const FusionGraph::Edge &edge : graph.nodes[q].outputs)
            feedsOnlyChain &= chain.count(edge.consumer) != 0;
          if (feedsOnlyChain) {
            chain.insert(q);
            grew = true;
          }
        }
      }
      double work = 0;
      for (int q : chain)
        if (const Kernel *kernel = module.lookupKernel(graph.nodes[q].binding->callee))
          work += kernelWork(*kernel, target);
      // Step 3: the estimates.
      int64_t bytes = *elements * dtypeBytes(node.value->type.getDType());
      PrologueCost cost =
          estimateRecompute(work, work * double(*elements), *elements, bytes, factor, target);
      // A row value of the group's row reductions: the schedule computes it
      // once per row at the block when that beats inlining.
      bool rowValue =
          reductionRows && withoutTrailingOnes(node.value->type.getShape()) == *reductionRows;
      if (rowValue)
        cost.fusedUs = std::min(cost.fusedUs, estimateComputeAtUs(work, {*elements, 1}, 0, target));
      // The group is convex (TVM's fusion keeps every path between members
      // inside), so the chain can leave only if no member that stays feeds
      // it: one that does would be computed before and after the chain's
      // kernel (a norm's sqrt between its mean and its divide).
      std::string stayingProducer;
      for (int q : members)
        if (!cost.fuse() && stayingProducer.empty() && partition.group[q] == group &&
            !chain.count(q))
          for (const FusionGraph::Edge &edge : graph.nodes[q].outputs)
            if (chain.count(edge.consumer) && graph.nodes[q].value)
              stayingProducer = "%" + graph.nodes[q].value->name;
      bool separate = !cost.fuse() && stayingProducer.empty();
      std::string reason;
      llvm::raw_string_ostream os(reason);
      os << (hasContraction ? "the contraction's loop" : "the reduction's loop")
         << " would evaluate it " << factor << " times per element (" << llvm::format("%.0f", work)
         << " FMA slots each)"
         << (rowValue ? ", or once per row at the block (a row value of the group's reductions)"
                      : "")
         << ", which " << (cost.fuse() ? "costs less than" : "costs more than")
         << " its own kernel (a launch and a " << llvm::format("%.1f", double(bytes) / 1024)
         << " KiB round trip)";
      if (isSymbolicNode(graph, p) || isSymbolicNode(graph, widest))
        os << " (symbolic dims counted as " << kSymbolicDimEstimate << ")";
      if (!cost.fuse() && !separate)
        os << ", but it reads " << stayingProducer
           << ", which stays in the group, so a kernel of its own would both follow and "
              "precede the group's (a cycle)";
      os.flush();
      const std::string producer = "%" + node.value->name,
                        consumer = "%" + graph.nodes[widest].value->name;
      std::string estimates;
      llvm::raw_string_ostream(estimates)
          << "estimated us: fused " << llvm::format("%.3f", cost.fusedUs) << ", separate "
          << llvm::format("%.3f", cost.separateUs);
      // A refusal is remarked with the group's other cut edges (FuseOps.cpp),
      // from partition.reason; only an accepted recomputation needs its own.
      if (context.remarks && !separate)
        *context.remarks << "remark: fuse-ops: @" << function.name << ": " << producer << " -> "
                         << consumer << ": fused (" << reason << "; " << estimates << ")\n";
      if (context.report)
        context.report->decisions.push_back(
            {"fuse-ops", function.name, separate ? "separate" : "fused", reason,
             {{"producer", producer}, {"consumer", consumer}},
             {{"fused_us", cost.fusedUs}, {"separate_us", cost.separateUs},
              {"chosen_us", separate ? cost.separateUs : cost.fusedUs}}});
      if (!separate)
        continue;
      for (int q : chain) {
        partition.group[q] = p;
        moved.insert(q);
      }
      partition.groupPattern[p] = node.pattern;
      partition.reason[p] = "vetoed: " + reason + "; " + estimates;
    }
  }
  return moved;
}
