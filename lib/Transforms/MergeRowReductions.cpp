//===- MergeRowReductions.cpp - fuse-ops: one kernel per row pass chain ---===//
//
// Contract (fuse-ops{merge-reductions=true}, not TVM; -O2): after TVM's
// partition (and the veto and prologues), a group P of row reductions whose
// every result is read by one other group C of row reductions over the same
// rows joins C when the cost model says that is cheaper than P's own
// kernel. TVM cannot fuse a reduction into a later reduction (a path through
// a reduction is not fusable), so a layer norm written out — every ONNX
// export before opset 17, `x - x.mean(-1, keepdim=True)` in PyTorch — is two
// kernels: the mean and the centred `x - mean`, written to memory, then the
// variance and the divide reading it back twice. XLA and Inductor fuse
// them; the reduction rule (ScheduleReduction.cpp) runs both passes in one
// block per row.
//
// Algorithm, repeated until nothing moves:
//   1. P and C qualify when each is made of kernel calls only, has no
//      contraction and reduces rows R along their innermost axis
//      (rowReductionRows, the same rows for both); no result of P leaves
//      the block or is read outside C; C reads P's results in elementwise
//      or broadcast stages, or in reductions over the same rows; and the
//      merged group stays within max-fused-ops and max-function-args.
//   2. Estimate both ways: merged = the work of P's spatial stages times the
//      times the merged kernel evaluates them (inlined at every read,
//      readsInGroup); separate = a launch, P's results written and read
//      back, and that work as P's own kernel evaluates it.
//   3. merged < separate: P's nodes join C. Either way, a remark and a
//      report decision give both times.
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

bool hasReduction(const Kernel &kernel) {
  return llvm::any_of(kernel.stages, [](const KStage &stage) { return stage.isReduction(); });
}

/// The rows of `members` if it is a group of kernel calls without a
/// contraction whose reductions all reduce the same rows innermost.
std::optional<std::vector<Dim>> rowsOfGroup(const Module &module, const FusionGraph &graph,
                                            const Partition &partition, int group,
                                            const std::vector<int> &members) {
  for (int node : members)
    if (!kernelOf(module, graph, node))
      return std::nullopt;
  if (findContraction(module, graph, partition, group) >= 0)
    return std::nullopt;
  return rowReductionRows(module, graph, members, false);
}

/// How many times `reader`'s kernel, run once over all its elements with its
/// spatial internals inlined, reads `value` in all (0: it does not).
double readsOfValue(const Module &module, const FusionGraph &graph, int reader,
                    const Value *value) {
  const Kernel *kernel = kernelOf(module, graph, reader);
  const Binding &binding = *graph.nodes[reader].binding;
  double reads = 0;
  if (!kernel)
    return reads;
  std::vector<KStage> stages = inlineSpatialInternals(*kernel);
  auto inlined = [&](const KStage &stage) {
    return isInternal(*kernel, stage) && !stage.isReduction();
  };
  for (size_t i = 0; i < binding.operands.size() && i < kernel->inputs.size(); ++i)
    if (binding.operands[i].value == value)
      reads += countReads(*kernel, stages, inlined, kernel->inputs[i].name);
  return reads;
}

/// How many times the kernel of `members` (block order), as the reduction
/// rule runs it, evaluates each member's result per element of it: a member
/// with a reduction, or read outside `members` (or by the block's output),
/// is computed once; any other is inlined at every read, so it runs as
/// often as its readers read it.
std::map<int, double> evaluationsInGroup(const Module &module, const FusionGraph &graph,
                                         const std::vector<int> &members) {
  std::map<int, double> runs;
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
  }
  return runs;
}

/// The work of `producer`'s spatial members as the kernel of `members`
/// evaluates them, in FMA slots.
double spatialWork(const Module &module, const FusionGraph &graph, const std::vector<int> &producer,
                   const std::vector<int> &members, const TargetDesc &target) {
  std::map<int, double> runs = evaluationsInGroup(module, graph, members);
  double work = 0;
  for (int q : producer) {
    const Kernel *kernel = kernelOf(module, graph, q);
    if (!kernel || hasReduction(*kernel) || !graph.nodes[q].value->type.isTensor())
      continue;
    double perElement = 0;
    for (const KStage &stage : kernel->stages)
      perElement += expressionWork(*stage.body, target, {});
    work += perElement * double(estimatedNumElements(graph.nodes[q].value->type)) * runs[q];
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

std::set<int> fusec::mergeRowReductions(const Module &module, const Function &function,
                                        const FusionGraph &graph, Partition &partition,
                                        const PartitionOptions &options, const TargetDesc &target,
                                        PassContext &context) {
  std::set<int> moved, refused;
  for (bool changed = true; changed;) {
    changed = false;
    Groups groups;
    for (int node = 0; node < int(graph.nodes.size()); ++node)
      if (graph.nodes[node].binding)
        groups[partition.group[node]].push_back(node);
    for (auto &[producer, members] : groups) {
      if (refused.count(producer))
        continue;
      // Step 1: the one group that reads P, and both groups' rows.
      int consumer = -1;
      bool single = true;
      for (int q : members) {
        single &= !graph.nodes[q].externRef;
        for (const FusionGraph::Edge &edge : graph.nodes[q].outputs) {
          int group = partition.group[edge.consumer];
          if (group == producer)
            continue;
          single &= consumer < 0 || consumer == group;
          consumer = group;
        }
      }
      if (!single || consumer < 0)
        continue;
      std::optional<std::vector<Dim>> rows =
          rowsOfGroup(module, graph, partition, producer, members);
      const std::vector<int> &readers = groups.find(consumer)->second;
      if (!rows || rowsOfGroup(module, graph, partition, consumer, readers) != rows)
        continue;
      // C reads P's results where a row's block has them: in elementwise or
      // broadcast stages, or in reductions over the same rows.
      std::string value, reader;
      bool inRow = true;
      for (int q : members)
        for (const FusionGraph::Edge &edge : graph.nodes[q].outputs) {
          if (partition.group[edge.consumer] != consumer)
            continue;
          const Kernel &kernel = *kernelOf(module, graph, edge.consumer);
          inRow &= hasReduction(kernel)
                       ? rowReductionRows(module, graph, {edge.consumer}, false) == rows
                       : analyzePatternKind(kernel).kind <= OpPatternKind::Broadcast;
          if (value.empty()) {
            value = "%" + graph.nodes[q].value->name;
            reader = "%" + graph.nodes[edge.consumer].value->name;
          }
        }
      std::vector<int> merged = members;
      merged.insert(merged.end(), readers.begin(), readers.end());
      llvm::sort(merged);
      if (!inRow || int64_t(merged.size()) > options.maxFusedOps ||
          (options.maxFunctionArgs > 0 &&
           functionArgs(graph, partition, merged, consumer) > options.maxFunctionArgs))
        continue;
      // Step 2: the estimates.
      int64_t bytes = 0;
      for (int q : members) {
        const Value *result = graph.nodes[q].value;
        bool readByConsumer =
            llvm::any_of(graph.nodes[q].outputs, [&](const FusionGraph::Edge &edge) {
              return partition.group[edge.consumer] == consumer;
            });
        if (result->type.isTensor() && readByConsumer)
          bytes += estimatedNumElements(result->type) * dtypeBytes(result->type.getDType());
      }
      double mergedWork = spatialWork(module, graph, members, merged, target);
      double ownWork = spatialWork(module, graph, members, members, target);
      PrologueCost cost = estimateRecompute(mergedWork, ownWork, 1, bytes, 1, target);
      bool merge = cost.fuse();
      std::string reason;
      llvm::raw_string_ostream os(reason);
      os << "both reduce rows [";
      for (size_t d = 0; d < rows->size(); ++d)
        os << (d ? ", " : "") << (*rows)[d].str();
      os << "]; its spatial stages take " << llvm::format("%.0f", mergedWork)
         << " FMA slots in the consumer's passes (" << llvm::format("%.0f", ownWork)
         << " in a kernel of its own), which " << (merge ? "costs less than" : "costs more than")
         << " a launch and a " << llvm::format("%.0f", double(bytes) / 1024) << " KiB round trip";
      if (llvm::any_of(merged, [&](int q) { return hasSymbolicDims(graph.nodes[q].value->type); }))
        os << " (symbolic dims counted as " << kSymbolicDimEstimate << ")";
      os.flush();
      if (context.remarks)
        *context.remarks << "remark: fuse-ops: @" << function.name << ": " << value << " -> "
                         << reader
                         << (merge ? ": merged into the consumer's row reductions"
                                   : ": not merged into the consumer's row reductions")
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
      // Step 3: P joins C; the groups change, so the search starts over.
      for (int q : members) {
        partition.group[q] = consumer;
        moved.insert(q);
      }
      changed = true;
      break;
    }
  }
  return moved;
}
