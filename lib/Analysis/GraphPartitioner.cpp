//===- GraphPartitioner.cpp - Post-dominators and TVM's fusion phases -----===//
//
// TVM's GraphPartitioner (tvm-fusion-rules.md §4-§5), exactly:
//   1. The post-dominator tree, in reverse topological order: an extern_ref
//      node (block output, outside value) is a root; otherwise the parent is
//      the least common ancestor of the tree nodes of all consumers, and the
//      pattern the max of the out-edges' kinds and of the tree nodes passed
//      while climbing.
//   2. Union-find groups, one per node; merging a child that holds an
//      out_ewise_fusable anchor moves the anchor to the parent (at most one
//      anchor per group).
//   3. Phases 0, 1, 2 over the nodes in topological order, each node trying
//      to fuse into its immediate post-dominator under the rules of §5.3,
//      with CheckPath on every path between them and CommitFuse merging
//      every node on those paths (groups stay convex).
// Limits: max-fused-ops (CountFusedNodesWithNewChild), max-function-args (a
// group whose kernel would take more inputs plus outputs is not formed) and
// max-merges (stop after N fusions, to bisect a regression).
//
//===----------------------------------------------------------------------===//
#include "fusec/Analysis/Analysis.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

using namespace fusec;

FusionGraph fusec::buildFusionGraph(const Module &module, const Function &function,
                                    const DataflowBlock &block) {
  FusionGraph graph;
  // TVM's packed parameters: fetching one from its tuple is opaque, so the
  // fetches at a function's start do not reorder what fuses.
  llvm::DenseSet<const Value *> packedParams;
  if (const Attr *numInput = function.attrs.get("num_input"); numInput && numInput->kind == Attr::Int)
    for (size_t k = size_t(std::max<int64_t>(numInput->intValue, 0)); k < function.params.size(); ++k)
      packedParams.insert(function.params[k].get());
  llvm::DenseMap<const Value *, int> nodeOf;
  llvm::DenseSet<const Value *> outputs(block.outputs.begin(), block.outputs.end());
  auto nodeFor = [&](const Value *value) {
    auto it = nodeOf.find(value);
    if (it != nodeOf.end())
      return it->second;
    // A value from outside the block: an opaque root.
    FusionGraph::Node node;
    node.value = value;
    node.externRef = true;
    graph.nodes.push_back(node);
    return nodeOf[value] = int(graph.nodes.size() - 1);
  };
  for (const auto &binding : block.bindings) {
    std::vector<int> producers;
    for (const Operand &operand : binding->operands)
      if (!operand.isLiteral())
        producers.push_back(nodeFor(operand.value));
    FusionGraph::Node node;
    node.value = binding->getResult();
    node.binding = binding.get();
    node.externRef = outputs.count(node.value);
    if (binding->kind == ExprKind::CallKernel) {
      const Kernel *kernel = module.lookupKernel(binding->callee);
      const Attr *kind = kernel ? kernel->attrs.get("op_pattern") : nullptr;
      if (kind && kind->kind == Attr::String)
        node.pattern = parsePatternKind(kind->text).value_or(OpPatternKind::Opaque);
    } else if (binding->kind == ExprKind::Get) {
      node.pattern = packedParams.count(binding->operands.front().value) ? OpPatternKind::Opaque
                                                                         : OpPatternKind::Injective;
    }
    graph.nodes.push_back(node);
    int index = int(graph.nodes.size() - 1);
    nodeOf[node.value] = index;
    for (int producer : producers)
      graph.nodes[producer].outputs.push_back({index, node.pattern});
  }
  return graph;
}

namespace {

struct TreeNode {
  int parent = -1;
  int depth = 1;
  OpPatternKind pattern = OpPatternKind::Opaque;
};

struct Group {
  int parent = -1;
  OpPatternKind pattern;
  bool hasAnchor = false;
  int64_t numNodes = 1;
  std::vector<int> members; // at a root, with max-function-args: its nodes
};

class Partitioner {
public:
  Partitioner(const FusionGraph &graph, const PartitionOptions &options)
      : graph(graph), options(options) {}
  Partition run();

private:
  int leastCommonAncestor(int lhs, int rhs, OpPatternKind &pattern) const;
  void buildPostDominatorTree();
  int findRoot(int node);
  void mergeFromTo(int child, int parent);
  bool checkPath(int src, int sink,
                 const std::function<bool(OpPatternKind, bool)> &condition);
  bool checkPathVisit(int node, int sink,
                      const std::function<bool(OpPatternKind, bool)> &condition,
                      llvm::DenseSet<int> &visited);
  void commitFuse(int src, int sink);
  int64_t countFusedNodesWithNewChild(int child, int dominator);
  int64_t countArgsAfterFusing(int src, int sink);
  void collectPath(int node, int sink, llvm::DenseSet<int> &visited);
  void runFuse(int phase);
  void tryFuse(int node, int phase);

  const FusionGraph &graph;
  const PartitionOptions &options;
  std::vector<TreeNode> tree;
  std::vector<Group> groups;
  std::vector<std::string> reasons;
  std::vector<std::vector<int>> producers; // with max-function-args
  int64_t merges = 0;
};

} // namespace

int Partitioner::leastCommonAncestor(int lhs, int rhs, OpPatternKind &pattern) const {
  while (lhs != rhs) {
    if (lhs < 0 || rhs < 0)
      return -1;
    if (tree[lhs].depth < tree[rhs].depth) {
      pattern = combinePatternKinds(pattern, tree[rhs].pattern);
      rhs = tree[rhs].parent;
    } else if (tree[rhs].depth < tree[lhs].depth) {
      pattern = combinePatternKinds(pattern, tree[lhs].pattern);
      lhs = tree[lhs].parent;
    } else {
      pattern = combinePatternKinds(
          pattern, combinePatternKinds(tree[lhs].pattern, tree[rhs].pattern));
      lhs = tree[lhs].parent;
      rhs = tree[rhs].parent;
    }
  }
  return lhs;
}

void Partitioner::buildPostDominatorTree() {
  tree.assign(graph.nodes.size(), TreeNode());
  for (int i = int(graph.nodes.size()) - 1; i >= 0; --i) {
    const FusionGraph::Node &node = graph.nodes[i];
    TreeNode &entry = tree[i];
    if (node.externRef || node.outputs.empty()) {
      entry = TreeNode(); // a root
      continue;
    }
    OpPatternKind pattern = OpPatternKind::ElemWise;
    int parent = -1;
    bool first = true;
    for (const FusionGraph::Edge &edge : node.outputs) {
      parent = first ? edge.consumer : leastCommonAncestor(parent, edge.consumer, pattern);
      pattern = combinePatternKinds(pattern, edge.pattern);
      first = false;
    }
    entry.parent = parent;
    entry.pattern = pattern;
    entry.depth = parent >= 0 ? tree[parent].depth + 1 : 1;
  }
}

int Partitioner::findRoot(int node) {
  int root = node;
  while (groups[root].parent >= 0)
    root = groups[root].parent;
  while (groups[node].parent >= 0) { // path compression
    int next = groups[node].parent;
    groups[node].parent = root;
    node = next;
  }
  return root;
}

void Partitioner::mergeFromTo(int child, int parent) {
  child = findRoot(child);
  parent = findRoot(parent);
  if (child == parent)
    return;
  groups[parent].numNodes += groups[child].numNodes;
  groups[child].parent = parent;
  std::vector<int> &members = groups[parent].members;
  members.insert(members.end(), groups[child].members.begin(), groups[child].members.end());
  groups[child].members = {};
  if (groups[child].hasAnchor) {
    // The rules guarantee the parent holds no anchor yet.
    groups[parent].hasAnchor = true;
    groups[parent].pattern =
        combinePatternKinds(groups[child].pattern, groups[parent].pattern);
  }
}

bool Partitioner::checkPathVisit(int node, int sink,
                                 const std::function<bool(OpPatternKind, bool)> &condition,
                                 llvm::DenseSet<int> &visited) {
  if (!visited.insert(node).second)
    return true;
  if (!condition(groups[findRoot(node)].pattern, node == sink))
    return false;
  if (node == sink)
    return true;
  for (const FusionGraph::Edge &edge : graph.nodes[node].outputs)
    if (!checkPathVisit(edge.consumer, sink, condition, visited))
      return false;
  return true;
}

bool Partitioner::checkPath(int src, int sink,
                            const std::function<bool(OpPatternKind, bool)> &condition) {
  llvm::DenseSet<int> visited;
  for (const FusionGraph::Edge &edge : graph.nodes[src].outputs)
    if (!checkPathVisit(edge.consumer, sink, condition, visited))
      return false;
  return true;
}

void Partitioner::collectPath(int node, int sink, llvm::DenseSet<int> &visited) {
  if (node == sink || !visited.insert(node).second)
    return;
  for (const FusionGraph::Edge &edge : graph.nodes[node].outputs)
    collectPath(edge.consumer, sink, visited);
}

void Partitioner::commitFuse(int src, int sink) {
  llvm::DenseSet<int> path;
  collectPath(src, sink, path);
  for (int node : path)
    mergeFromTo(node, sink);
  ++merges;
}

int64_t Partitioner::countFusedNodesWithNewChild(int child, int dominator) {
  llvm::DenseSet<int> path;
  collectPath(child, dominator, path);
  int64_t count = groups[findRoot(dominator)].numNodes;
  for (int node : path)
    count += groups[node].numNodes; // own records, as TVM (approximate)
  return count;
}

/// Inputs plus outputs of the kernel the group of `sink` would become after
/// absorbing every node on the paths from `src`.
int64_t Partitioner::countArgsAfterFusing(int src, int sink) {
  llvm::DenseSet<int> path;
  collectPath(src, sink, path);
  // commitFuse merges the group of every node on the path into the sink's,
  // so members fused earlier into a path node's group count as inside.
  llvm::DenseSet<int> mergedRoots = {findRoot(sink)};
  for (int node : path)
    mergedRoots.insert(findRoot(node));
  llvm::DenseSet<int> merged;
  for (int root : mergedRoots)
    merged.insert(groups[root].members.begin(), groups[root].members.end());
  llvm::DenseSet<int> inputs;
  int64_t outputs = 0;
  for (int node : merged) {
    bool usedOutside = graph.nodes[node].externRef;
    for (const FusionGraph::Edge &edge : graph.nodes[node].outputs)
      usedOutside |= !merged.count(edge.consumer);
    outputs += usedOutside;
    for (int producer : producers[node]) {
      // A 0-d constant, in the block or before it, is copied into the
      // group, not passed.
      const Value *value = graph.nodes[producer].value;
      if (!merged.count(producer) && !(value && value->isScalarConstant()))
        inputs.insert(producer);
    }
  }
  return int64_t(inputs.size()) + outputs;
}

static bool atMostBroadcast(OpPatternKind kind, bool) {
  return int(kind) <= int(OpPatternKind::Broadcast);
}
static bool atMostInjective(OpPatternKind kind, bool) {
  return int(kind) <= int(OpPatternKind::Injective);
}

void Partitioner::tryFuse(int node, int phase) {
  const Group &own = groups[node];
  std::string name = patternKindName(own.pattern).str();
  if (own.pattern == OpPatternKind::Opaque)
    return void(reasons[node] = "opaque ops never fuse");
  int dominator = tree[node].parent;
  if (dominator < 0)
    return void(reasons[node] = graph.nodes[node].externRef
                                    ? "a dataflow block output ends a group"
                                    : "its consumers have no common post-dominator");
  if (options.maxMerges >= 0 && merges >= options.maxMerges)
    return void(reasons[node] = "max-merges=" + std::to_string(options.maxMerges) +
                                " reached");
  if (countFusedNodesWithNewChild(node, dominator) > options.maxFusedOps)
    return void(reasons[node] = "would exceed max-fused-ops=" +
                                std::to_string(options.maxFusedOps));
  if (options.maxFunctionArgs > 0 && phase < 2 &&
      countArgsAfterFusing(node, dominator) > options.maxFunctionArgs)
    return void(reasons[node] = "would exceed max-function-args=" +
                                std::to_string(options.maxFunctionArgs));
  OpPatternKind dominatorPattern = tree[node].pattern;
  if (phase == 2) {
    if (int(own.pattern) > int(OpPatternKind::Injective))
      return;
    if (groups[findRoot(dominator)].pattern == OpPatternKind::Tuple)
      return;
    if (groups[dominator].pattern == OpPatternKind::Tuple &&
        int(groups[findRoot(dominator)].pattern) <= int(OpPatternKind::Injective) &&
        checkPath(node, dominator, atMostInjective))
      commitFuse(node, dominator);
    return;
  }
  if (findRoot(node) == findRoot(dominator))
    return void(reasons[node].clear());
  if (groups[dominator].pattern == OpPatternKind::Tuple)
    return void(reasons[node] = "nothing fuses into a tuple in phases 0 and 1");
  if (own.pattern == OpPatternKind::OutEWiseFusable) {
    if (phase != 0)
      return;
    if (dominatorPattern != OpPatternKind::ElemWise)
      return void(reasons[node] = "an out_ewise_fusable op only takes an elementwise "
                                  "epilogue; the path to its post-dominator is " +
                                  patternKindName(dominatorPattern).str());
    if (!checkPath(node, dominator, atMostBroadcast))
      return void(reasons[node] = "cannot chain two complex ops: a path from it "
                                  "reaches an op beyond broadcast");
    commitFuse(node, dominator);
    return void(reasons[node].clear());
  }
  if (int(own.pattern) <= int(OpPatternKind::Broadcast)) {
    if (!(int(dominatorPattern) <= int(OpPatternKind::Injective) ||
          dominatorPattern == OpPatternKind::CommReduce)) {
      // The kind is the most complex on the way: the post-dominator's own,
      // or that of an op a path passes (an opaque call beside it).
      std::string kind = patternKindName(dominatorPattern).str();
      return void(reasons[node] =
                      graph.nodes[dominator].pattern == dominatorPattern
                          ? "the consumer is " + kind +
                                ": elementwise producers do not fuse into it "
                                "(no prologue fusion, as in TVM)"
                          : "its post-dominator %" + graph.nodes[dominator].value->name +
                                " is reached through an op that is " + kind +
                                ": elementwise producers fuse only through injective ops");
    }
    auto condition = [](OpPatternKind kind, bool isSink) {
      if (!isSink)
        return int(kind) <= int(OpPatternKind::Injective);
      return int(kind) <= int(OpPatternKind::Broadcast) ||
             kind == OpPatternKind::Injective || kind == OpPatternKind::CommReduce ||
             kind == OpPatternKind::OutEWiseFusable;
    };
    if (!checkPath(node, dominator, condition))
      return void(reasons[node] = "a path to its post-dominator passes an op beyond "
                                  "injective");
    commitFuse(node, dominator);
    return void(reasons[node].clear());
  }
  if (own.pattern == OpPatternKind::Injective || own.pattern == OpPatternKind::Tuple) {
    if (phase != 1)
      return;
    if (!checkPath(node, dominator, atMostInjective))
      return void(reasons[node] = "injective ops only fuse into injective groups; the "
                                  "path reaches an anchored group or a reduction");
    commitFuse(node, dominator);
    return void(reasons[node].clear());
  }
  reasons[node] = "a reduction never starts a fusion";
}

void Partitioner::runFuse(int phase) {
  for (int node = 0; node < int(graph.nodes.size()); ++node)
    tryFuse(node, phase);
}

Partition Partitioner::run() {
  buildPostDominatorTree();
  groups.clear();
  bool countArgs = options.maxFunctionArgs > 0;
  for (int index = 0; index < int(graph.nodes.size()); ++index) {
    Group group;
    group.pattern = graph.nodes[index].pattern;
    group.hasAnchor = group.pattern == OpPatternKind::OutEWiseFusable;
    if (countArgs)
      group.members = {index};
    groups.push_back(std::move(group));
  }
  if (countArgs) {
    producers.assign(graph.nodes.size(), {});
    for (int index = 0; index < int(graph.nodes.size()); ++index)
      for (const FusionGraph::Edge &edge : graph.nodes[index].outputs)
        producers[edge.consumer].push_back(index);
  }
  reasons.assign(graph.nodes.size(), "");
  for (int phase = 0; phase < 3; ++phase)
    runFuse(phase);
  Partition partition;
  for (int node = 0; node < int(graph.nodes.size()); ++node)
    partition.group.push_back(findRoot(node));
  for (int node = 0; node < int(graph.nodes.size()); ++node)
    partition.groupPattern.push_back(groups[findRoot(node)].pattern);
  partition.reason = reasons;
  partition.merges = merges;
  return partition;
}

Partition fusec::partitionGraph(const FusionGraph &graph, const PartitionOptions &options) {
  return Partitioner(graph, options).run();
}
