//===- FuseOps.cpp - Group bindings into fused primitive functions --------===//
//
// Contract: in every graph function without `primitive`, `composite` or
// `codegen`, each dataflow block is partitioned as TVM's FuseOps does
// (tvm-fusion-rules.md §3-§6; the graph and partitioner are in
// lib/Analysis/GraphPartitioner.cpp), reading each kernel's `op_pattern`.
// A group of two or more bindings becomes
// `func @fused_<callees> attributes {primitive = true}` and is called where
// its last binding was. Groups never cross dataflow blocks.
//
// Algorithm, per block:
//   1. Build the forward graph and partition it (phases 0, 1, 2).
//   2. For each group: its parameters are the values it uses from outside,
//      in order of first use (a 0-d constant is copied in instead); its
//      outputs are the members used outside the group or listed in the
//      block's `output`. A group without outputs is dropped (dead) with a
//      warning, as TVM does, with the kernels only it called.
//   3. Build the function (one dataflow block returning the outputs; several
//      outputs are a tuple, unpacked at the call site with `get`s that keep
//      the members' names); identical functions are shared.
//   4. Re-sort the block topologically (a group's call moved to its last
//      member may precede a non-member that used an earlier member).
// Steps 2-4 are GroupOutliner.cpp, shared with fuse-by-pattern. With
// prologue=true (not TVM; -O2), elementwise producers of a matmul,
// convolution or reduction with an epilogue (a mean, softmax) join its
// group where the cost model says so, between steps 1 and 2
// (FusePrologues.cpp); with recompute-veto=true (not TVM; -O2), before
// that, a producer a reduction's or contraction's loop would recompute per
// broadcast element leaves the group where its own kernel is cheaper
// (RecomputeVeto.cpp); with merge-reductions=true (not TVM; -O2), after
// the prologues, a group of row reductions and the groups of row
// reductions or row-wise elementwise work that read it become one where the
// cost model says so (MergeRowReductions.cpp: a written-out layer norm or
// softmax becomes one kernel).
// Options: max-fused-ops, max-function-args (inputs plus outputs of the
// fused kernel; 0 = no limit), max-merges (stop after N fusions; -1 = all).
//
//===----------------------------------------------------------------------===//
#include "FusePrologues.h"
#include "GroupOutliner.h"
#include "fusec/Analysis/Analysis.h"
#include "fusec/Transforms/Passes.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <map>
#include <set>

#define DEBUG_TYPE "fuse-ops"

using namespace fusec;

FUSEC_STATISTIC(NumGroups, "num-groups", "Number of fused groups formed");
FUSEC_STATISTIC(NumFusedBindings, "num-fused-bindings", "Number of bindings placed in groups");
FUSEC_STATISTIC(NumDeadGroups, "num-dead-groups", "Number of groups dropped as dead");

namespace {
class FuseOps final : public Pass {
public:
  FuseOps() : Pass("fuse-ops") {
    // Below these minimums a value has no meaning of its own, and would
    // silently turn fusion off. A group of more than 1000 ops could lower
    // to an expression nested deeper than the parser reads back (1024).
    Option &maxFusedOps = declareOption("max-fused-ops", OptionKind::Int, "256",
                                        "Largest number of ops in one group (1 to 1000)");
    maxFusedOps.minimum = 1;
    maxFusedOps.maximum = 1000;
    declareOption("max-function-args", OptionKind::Int, "0",
                  "Largest number of kernel inputs plus outputs (0: no limit)")
        .minimum = 0;
    declareOption("max-merges", OptionKind::Int, "-1",
                  "Stop after this many fusions (-1: no limit), to bisect")
        .minimum = -1;
    declareOption("prologue", OptionKind::Bool, "false",
                  "Fuse elementwise producers into matmuls, convolutions and reductions "
                  "with an epilogue (mean, softmax, norms) when the cost model says so (not TVM)");
    declareOption("recompute-veto", OptionKind::Bool, "false",
                  "Keep a producer out of a reduction's or matmul's group when the loop "
                  "would recompute it per broadcast element at a cost above its own kernel "
                  "(XLA-style; not TVM)");
    declareOption("merge-reductions", OptionKind::Bool, "false",
                  "Merge a group of row reductions with the groups that read it on the same "
                  "rows (a written-out layer norm or softmax) when the cost model says so "
                  "(not TVM)");
    declareOption("target", OptionKind::String, "sm_90",
                  "The cost model's GPU: sm_75, sm_80, sm_86, sm_89, sm_90, h200 or a file")
        .check = checkTargetSpec;
  }
  bool run(Module &module, PassContext &context) override;

private:
  void fuseBlock(Module &module, Function &function, DataflowBlock &block,
                 PassContext &context);
  OutlinedFunctionTable functionTable;
  PartitionOptions options;
  /// The cost model's GPU, loaded when a cost-aware option is on.
  std::optional<TargetDesc> costTarget;
};
} // namespace

void FuseOps::fuseBlock(Module &module, Function &function, DataflowBlock &block,
                        PassContext &context) {
  FusionGraph graph = buildFusionGraph(module, function, block);
  Partition partition = partitionGraph(graph, options);
  std::set<int> prologues, mergedReductions;
  if (getBoolOption("recompute-veto"))
    vetoRecomputation(module, function, graph, partition, *costTarget, context);
  if (getBoolOption("prologue"))
    prologues = mergePrologues(module, function, graph, partition, *costTarget, context);
  if (getBoolOption("merge-reductions"))
    mergedReductions =
        mergeRowReductions(module, function, graph, partition, options, *costTarget, context);
  // Members of each group, in binding order.
  std::map<int, std::vector<int>> groups;
  for (int node = 0; node < int(graph.nodes.size()); ++node)
    if (graph.nodes[node].binding)
      groups[partition.group[node]].push_back(node);
  if (context.remarks)
    for (int node = 0; node < int(graph.nodes.size()); ++node)
      for (const FusionGraph::Edge &edge : graph.nodes[node].outputs)
        if (graph.nodes[node].binding &&
            partition.group[node] != partition.group[edge.consumer])
          *context.remarks << "remark: fuse-ops: @" << function.name << ": %"
                           << graph.nodes[node].value->name << " -> %"
                           << graph.nodes[edge.consumer].value->name << " not fused: "
                           << (partition.reason[node].empty()
                                   ? "the consumer joined another group"
                                   : partition.reason[node])
                           << "\n";
  GroupOutliner outliner(module, function, block, functionTable);
  for (auto &[root, nodes] : groups) {
    if (nodes.size() < 2)
      continue;
    std::vector<Binding *> members;
    for (int node : nodes)
      members.push_back(const_cast<Binding *>(graph.nodes[node].binding));
    // The report lists a group's gets of outside tuples among its members:
    // TVM's group holds them (the call's arguments read the fields).
    std::vector<std::string> memberNames;
    for (Binding *member : members)
      memberNames.push_back("%" + member->getResult()->name);
    OutsideFieldReads fields = separateOutsideFieldReads(members);
    // TVM counts the `get`s among the group's nodes (num_nodes > 1), so a
    // group of one op and the gets it reads still becomes a function.
    if (members.empty())
      continue;
    GroupOutliner::Result outlined =
        outliner.outline(members, Attrs(), false, fields);
    if (outlined.function.empty()) {
      logWarning("fuse-ops: dropping the dead group {" + llvm::join(memberNames, ", ") +
                 "} in @" + function.name + "; run dce first");
      ++NumDeadGroups;
      if (context.report)
        for (const std::string &name : memberNames)
          context.report->dead.push_back({function.name, name});
      continue;
    }
    ++NumGroups;
    NumFusedBindings += members.size();
    if (context.report) {
      FusionReport::Group entry{outlined.function, "fused",
                                patternKindName(partition.groupPattern[root]).str(), "",
                                memberNames, {}, {}, function.name, {}};
      int contraction = findContraction(module, graph, nodes);
      for (int node : nodes) {
        std::string name = "%" + graph.nodes[node].value->name;
        if (mergedReductions.count(node))
          entry.merged.push_back(name);
        if (prologues.count(node))
          entry.prologue.push_back(name);
        else if (contraction >= 0 && node > contraction)
          entry.epilogue.push_back(name);
      }
      context.report->groups.push_back(entry);
    }
    FUSEC_DEBUG("group " + outlined.function + ": " + llvm::join(memberNames, ", "));
  }
  std::string cycle;
  outliner.finish(cycle); // post-dominator groups never form a cycle
}

bool FuseOps::run(Module &module, PassContext &context) {
  costTarget.reset();
  if (getBoolOption("prologue") || getBoolOption("recompute-veto") ||
      getBoolOption("merge-reductions")) {
    costTarget.emplace();
    if (!loadTargetDesc(getStringOption("target"), *costTarget, context.diag, getName()))
      return false;
  }
  options.maxFusedOps = getIntOption("max-fused-ops");
  options.maxFunctionArgs = getIntOption("max-function-args");
  options.maxMerges = getIntOption("max-merges");
  functionTable.clear();
  std::set<std::string> calledBefore = module.calledKernels();
  size_t original = module.functions.size();
  for (size_t f = 0; f < original; ++f) {
    Function &function = *module.functions[f];
    if (function.isGroupedFunction())
      continue;
    for (BodyItem &item : function.body)
      if (item.block) // outside blocks nothing is ever fused
        fuseBlock(module, function, *item.block, context);
  }
  // A dropped dead group takes the kernels only it called along: TVM leaves
  // them to FuseTIR's closing DCE, and here nothing else would remove them
  // (uncalled hand-written kernels are kept), so they would be compiled.
  module.removeUncalledKernels(&calledBefore);
  return true;
}

std::unique_ptr<Pass> fusec::createFuseOpsPass() { return std::make_unique<FuseOps>(); }

#undef DEBUG_TYPE
