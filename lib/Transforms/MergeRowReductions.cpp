//===- MergeRowReductions.cpp - fuse-ops: one kernel per row pass chain ---===//
//
// Contract (fuse-ops{merge-reductions=true}, not TVM; -O2): after TVM's
// partition (and the veto and prologues), a group P of row reductions and
// the groups that read its results become one group, when each of those is
// a group of row reductions over the same rows or elementwise work on those
// rows, and the cost model says one kernel is cheaper. TVM cannot fuse a
// reduction into a later one (the path passes a reduction) and never
// starts a fusion at a plain reduction, so a layer norm written out — every
// ONNX export before opset 17, `x - x.mean(-1, keepdim=True)` — is two
// kernels (the mean and the centred `x - mean`, written to memory; then the
// variance and the divide, reading it back twice), and a softmax written
// out is four. XLA and Inductor fuse them; the reduction rule
// (ScheduleReduction.cpp) runs the reductions in one block per row.
//
// Algorithm, repeated until nothing moves:
//   1. P qualifies when it is made of kernel calls, has no contraction and
//      reduces rows R along their innermost axis (rowReductionRows), and no
//      result of P leaves the block. The kernels that read P are
//      elementwise, broadcast or reductions over R (a transpose would turn
//      rows into columns). Each group that reads P is such a group over
//      the same rows R, or elementwise/broadcast kernel calls whose results
//      are one value per row (R then 1s) or a whole row (a shape P's
//      reductions read). P and those groups are convex (no path leaves
//      them and comes back) and within max-fused-ops and max-function-args.
//   2. Estimate both ways: merged = the spatial stages' work as the merged
//      kernel evaluates them (inlined at every read, through inlined
//      readers, unless kept as a row buffer: evaluationsInGroup); separate = a launch per reader
//      group, the values that cross between the groups written and read back, and the spatial work
//      as each group's own kernel evaluates it.
//   3. merged < separate: the groups become one, named by the last; either
//      way, a remark and a report decision give both times.
//
//===----------------------------------------------------------------------===//
#include "FusePrologues.h"
#include "ScheduleRules.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <map>

using namespace fusec;

namespace {
/// A group of the partition: its nodes in block order.
using Groups = std::map<int, std::vector<int>>;

const Kernel *kernelOf(const Module &module, const FusionGraph &graph, int node) {
  const Binding *binding = graph.nodes[node].binding;
  return binding && binding->kind == ExprKind::CallKernel ? module.lookupKernel(binding->callee)
                                                          : nullptr;
}

/// The rows of `members` if it is a group of kernel calls without a
/// contraction whose reductions all reduce the same rows innermost.
std::optional<std::vector<Dim>> rowsOfGroup(const Module &module, const FusionGraph &graph,
                                            const std::vector<int> &members) {
  for (int node : members) {
    const Kernel *kernel = kernelOf(module, graph, node);
    if (!kernel || hasContraction(*kernel))
      return std::nullopt;
  }
  return rowReductionRows(module, graph, members, false);
}

/// How many times `reader`'s kernel, run once over all its elements with its
/// spatial internals inlined, reads `value` in all (0: it does not).
double readsOfValue(const Module &module, const FusionGraph &graph, int reader,
                    const Value *value) {
  const Kernel *kernel = kernelOf(module, graph, reader);
  const Binding &binding = *graph.nodes[reader].binding;
  double reads = 0;
  for (size_t i = 0; kernel && i < binding.operands.size() && i < kernel->inputs.size(); ++i)
    if (binding.operands[i].value == value)
      reads += countInlinedReads(*kernel, kernel->inputs[i].name);
  return reads;
}

/// How many times the kernel of `members` (block order), as the reduction
/// rule runs it, evaluates each member's result per element of it: a member
/// with a reduction, or read outside `members` (or by the block's output),
/// is computed once; any other is inlined at every read, so it runs as
/// often as its readers read it, unless the rule can keep it as a row
/// buffer (a whole row of `rows` in shared memory, while the block's shared
/// memory lasts, later members first as the rule's search starts).
std::map<int, double> evaluationsInGroup(const Module &module, const FusionGraph &graph,
                                         const std::vector<int> &members,
                                         const std::optional<std::vector<Dim>> &rows,
                                         const TargetDesc &target) {
  std::map<int, double> runs;
  int64_t sharedLeft = rowKernelSharedBytes(target) - kRowKernelSharedReserve;
  for (auto it = members.rbegin(); it != members.rend(); ++it) {
    int q = *it;
    const FusionGraph::Node &node = graph.nodes[q];
    const Kernel *kernel = kernelOf(module, graph, q);
    bool once = !kernel || node.externRef || hasReduction(*kernel);
    double reads = 0;
    std::set<int> readers;
    for (const FusionGraph::Edge &edge : node.outputs) {
      if (!runs.count(edge.consumer))
        once = true;
      else
        readers.insert(edge.consumer);
    }
    for (int reader : readers)
      reads += readsOfValue(module, graph, reader, node.value) * runs[reader];
    double elements = node.value && node.value->type.isTensor()
                          ? double(estimatedNumElements(node.value->type))
                          : 0;
    runs[q] = once || elements <= 0 ? 1.0 : reads / elements;
    if (runs[q] > 1.0 && rows) {
      int64_t perRow = rowBufferElements(node.value->type, *rows, target);
      int64_t bytes = perRow * dtypeBytes(node.value->type.getDType());
      if (perRow && bytes <= sharedLeft) {
        runs[q] = 1.0;
        sharedLeft -= bytes;
      }
    }
  }
  return runs;
}

/// The work of `producer`'s spatial members as the kernel of `members`
/// (of rows `rows`, if a row kernel) evaluates them, in FMA slots.
double spatialWork(const Module &module, const FusionGraph &graph, const std::vector<int> &producer,
                   const std::vector<int> &members, const std::optional<std::vector<Dim>> &rows,
                   const TargetDesc &target) {
  std::map<int, double> runs = evaluationsInGroup(module, graph, members, rows, target);
  double work = 0;
  for (int q : producer) {
    const Kernel *kernel = kernelOf(module, graph, q);
    if (!kernel || hasReduction(*kernel) || !graph.nodes[q].value->type.isTensor())
      continue;
    work += kernelWork(*kernel, target) * double(estimatedNumElements(graph.nodes[q].value->type)) *
            runs[q];
  }
  return work;
}

/// The kernel's inputs plus outputs if `members` became one group.
int64_t functionArgs(const FusionGraph &graph, const Partition &partition,
                     const std::vector<int> &members, int group) {
  std::set<const Value *> inputs;
  int64_t outputs = 0;
  for (int q : members) {
    const FusionGraph::Node &node = graph.nodes[q];
    for (const Operand &operand : node.binding->operands)
      if (!operand.isLiteral() && operand.value && operand.value->definingBinding) {
        bool inside = llvm::any_of(members, [&](int m) {
          return graph.nodes[m].binding == operand.value->definingBinding;
        });
        if (!inside)
          inputs.insert(operand.value);
      } else if (!operand.isLiteral() && operand.value) {
        inputs.insert(operand.value);
      }
    bool leaves = node.externRef || llvm::any_of(node.outputs, [&](const FusionGraph::Edge &e) {
                    return partition.group[e.consumer] != group;
                  });
    outputs += leaves;
  }
  return int64_t(inputs.size()) + outputs;
}
} // namespace

/// Whether `members`, a group without reductions, works on rows R: kernel
/// calls only, each result either one value per row (R then 1s) or a whole
/// row (one of `rowShapes`, the shapes the reductions read).
static bool isRowElementwise(const Module &module, const FusionGraph &graph,
                             const std::vector<int> &members, const std::vector<Dim> &rows,
                             const std::vector<Shape> &rowShapes) {
  for (int q : members) {
    const Kernel *kernel = kernelOf(module, graph, q);
    const Value *value = graph.nodes[q].value;
    if (!kernel || hasReduction(*kernel) || !value->type.isTensor() ||
        analyzePatternKind(*kernel).kind > OpPatternKind::Broadcast)
      return false;
    const Shape &shape = value->type.getShape();
    if (withoutTrailingOnes(shape) != rows && !llvm::is_contained(rowShapes, shape))
      return false;
  }
  return true;
}

/// Whether no path leaves `members` (block order) and comes back.
static bool isConvex(const FusionGraph &graph, const std::vector<int> &members) {
  std::set<int> inside(members.begin(), members.end()), reached;
  std::vector<int> pending;
  for (int q : members)
    for (const FusionGraph::Edge &edge : graph.nodes[q].outputs)
      if (!inside.count(edge.consumer))
        pending.push_back(edge.consumer);
  while (!pending.empty()) {
    int node = pending.back();
    pending.pop_back();
    if (node > members.back() || !reached.insert(node).second)
      continue;
    for (const FusionGraph::Edge &edge : graph.nodes[node].outputs) {
      if (inside.count(edge.consumer))
        return false;
      pending.push_back(edge.consumer);
    }
  }
  return true;
}

std::set<int> fusec::mergeRowReductions(const Module &module, const Function &function,
                                        const FusionGraph &graph, Partition &partition,
                                        const PartitionOptions &options, const TargetDesc &target,
                                        PassContext &context) {
  // Groups are visited in order, as if every merge restarted the scan:
  // after one, the merged group and the groups that feed it are visited
  // again (nothing else can have changed), so merging stays linear.
  std::set<int> moved, refused;
  Groups groups;
  std::vector<std::vector<int>> producersOf(graph.nodes.size());
  for (int node = 0; node < int(graph.nodes.size()); ++node) {
    if (graph.nodes[node].binding)
      groups[partition.group[node]].push_back(node);
    for (const FusionGraph::Edge &edge : graph.nodes[node].outputs)
      producersOf[edge.consumer].push_back(node);
  }
  std::map<int, std::optional<std::vector<Dim>>> rowsCache;
  auto rowsOf = [&](int group) -> const std::optional<std::vector<Dim>> & {
    auto found = rowsCache.find(group);
    if (found == rowsCache.end())
      found = rowsCache.emplace(group, rowsOfGroup(module, graph, groups[group])).first;
    return found->second;
  };
  std::set<int> pendingGroups;
  for (auto &entry : groups)
    pendingGroups.insert(entry.first);
  while (!pendingGroups.empty()) {
    int producer = *pendingGroups.begin();
    pendingGroups.erase(pendingGroups.begin());
    auto found = groups.find(producer);
    if (found == groups.end() || refused.count(producer))
      continue;
    const std::vector<int> &members = found->second;
    // Step 1: P's rows, the groups that read P, and the shapes of a whole
    // row (what P's reductions read).
    std::optional<std::vector<Dim>> rows = rowsOf(producer);
    if (!rows)
      continue;
    std::set<int> consumers;
    bool kept = true;   // nothing outside the block reads P
    bool inRows = true; // and its readers read it row by row
    std::vector<Shape> rowShapes;
    for (int q : members) {
      kept &= !graph.nodes[q].externRef;
      for (const FusionGraph::Edge &edge : graph.nodes[q].outputs) {
        if (partition.group[edge.consumer] == producer)
          continue;
        consumers.insert(partition.group[edge.consumer]);
        // An elementwise or broadcast reader, or a reduction over the same
        // rows (not a transpose, which would turn rows into columns).
        const Kernel *reader = kernelOf(module, graph, edge.consumer);
        inRows &= reader && (hasReduction(*reader)
                                 ? rowReductionRows(module, graph, {edge.consumer}, false) == rows
                                 : analyzePatternKind(*reader).kind <= OpPatternKind::Broadcast);
      }
      if (hasReduction(*kernelOf(module, graph, q)))
        for (const Operand &operand : graph.nodes[q].binding->operands)
          if (!operand.isLiteral() && operand.value && operand.value->type.isTensor() &&
              operand.value->type.getShape().size() > rows->size())
            rowShapes.push_back(operand.value->type.getShape());
    }
    if (!kept || consumers.empty())
      continue;
    // Each reader is a group of row reductions over the same rows, or
    // elementwise work on those rows; together with P they are convex.
    std::vector<int> merged = members;
    int representative = producer;
    for (int consumer : consumers) {
      const std::vector<int> &readers = groups.find(consumer)->second;
      const std::optional<std::vector<Dim>> &readerRows = rowsOf(consumer);
      inRows &= readerRows ? readerRows == rows
                           : isRowElementwise(module, graph, readers, *rows, rowShapes);
      merged.insert(merged.end(), readers.begin(), readers.end());
      representative = std::max(representative, consumer);
    }
    llvm::sort(merged);
    if (!inRows || !isConvex(graph, merged) || int64_t(merged.size()) > options.maxFusedOps ||
        (options.maxFunctionArgs > 0 &&
         functionArgs(graph, partition, merged, producer) > options.maxFunctionArgs))
      continue;
    // Step 2: the estimates. What crosses between the groups is written
    // and read back; merged, each spatial stage is evaluated as the
    // merged kernel reads it.
    int64_t bytes = 0;
    std::string value, reader;
    for (int q : merged) {
      const Value *result = graph.nodes[q].value;
      bool crosses = false;
      for (const FusionGraph::Edge &edge : graph.nodes[q].outputs)
        if (partition.group[edge.consumer] != partition.group[q] &&
            std::binary_search(merged.begin(), merged.end(), edge.consumer)) {
          crosses = true;
          if (value.empty()) {
            value = "%" + result->name;
            reader = "%" + graph.nodes[edge.consumer].value->name;
          }
        }
      if (crosses && result->type.isTensor())
        bytes += estimatedNumElements(result->type) * dtypeBytes(result->type.getDType());
    }
    // Row buffers are counted where the kernel's output (its last member)
    // can hold them.
    auto bufferRows =
        [&](const std::vector<int> &nodes,
            const std::optional<std::vector<Dim>> &of) -> std::optional<std::vector<Dim>> {
      const Value *last = graph.nodes[nodes.back()].value;
      return of && last && hasRowsBeyond(last->type, *of) ? of : std::nullopt;
    };
    double mergedWork =
        spatialWork(module, graph, merged, merged, bufferRows(merged, rows), target);
    double ownWork =
        spatialWork(module, graph, members, members, bufferRows(members, rows), target);
    for (int consumer : consumers) {
      const std::vector<int> &readers = groups.find(consumer)->second;
      ownWork += spatialWork(module, graph, readers, readers, bufferRows(readers, rowsOf(consumer)),
                             target);
    }
    PrologueCost cost = estimateRecompute(mergedWork, ownWork, 1, bytes, 1, target);
    cost.separateUs += double(consumers.size() - 1) * target.launchOverheadUs;
    bool merge = cost.fuse();
    std::string reason;
    llvm::raw_string_ostream os(reason);
    os << consumers.size() + 1 << " groups on rows [";
    for (size_t d = 0; d < rows->size(); ++d)
      os << (d ? ", " : "") << (*rows)[d].str();
    os << "]: the merged kernel's spatial stages take " << llvm::format("%.0f", mergedWork)
       << " FMA slots (" << llvm::format("%.0f", ownWork) << " in kernels of their own), which "
       << (merge ? "costs less than" : "costs more than") << " " << consumers.size()
       << (consumers.size() == 1 ? " launch" : " launches") << " and a "
       << llvm::format("%.1f", double(bytes) / 1024) << " KiB round trip";
    if (llvm::any_of(merged, [&](int q) { return hasSymbolicDims(graph.nodes[q].value->type); }))
      os << " (symbolic dims counted as " << kSymbolicDimEstimate << ")";
    os.flush();
    if (context.remarks)
      *context.remarks << "remark: fuse-ops: @" << function.name << ": " << value << " -> "
                       << reader
                       << (merge ? ": merged with its readers' row reductions"
                                 : ": not merged with its readers' row reductions")
                       << " (" << reason << "; estimated us: merged "
                       << llvm::format("%.3f", cost.fusedUs) << ", separate "
                       << llvm::format("%.3f", cost.separateUs) << ")\n";
    if (context.report)
      context.report->decisions.push_back(
          {"fuse-ops",
           function.name,
           merge ? "merge" : "separate",
           reason,
           {{"producer", value}, {"consumer", reader}},
           {{"merged_us", cost.fusedUs},
            {"separate_us", cost.separateUs},
            {"chosen_us", merge ? cost.fusedUs : cost.separateUs}}});
    if (!merge) {
      refused.insert(producer);
      continue;
    }
    // Step 3: one group, named by its last member's group (where the
    // call goes); it and the groups that feed it are visited again.
    OpPatternKind pattern = partition.groupPattern[representative];
    for (int q : merged) {
      pattern = std::max(pattern, partition.groupPattern[partition.group[q]]);
      if (partition.group[q] != representative)
        moved.insert(q);
    }
    for (int group : consumers)
      if (group != representative) {
        groups.erase(group);
        rowsCache.erase(group);
      }
    if (producer != representative) {
      groups.erase(producer);
      rowsCache.erase(producer);
    }
    for (int q : merged)
      partition.group[q] = representative;
    partition.groupPattern[representative] = pattern;
    groups[representative] = merged;
    rowsCache.erase(representative);
    pendingGroups.insert(representative);
    for (int q : merged)
      for (int feeder : producersOf[q])
        if (graph.nodes[feeder].binding && partition.group[feeder] != representative)
          pendingGroups.insert(partition.group[feeder]);
  }
  return moved;
}
