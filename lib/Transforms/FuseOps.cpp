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
//      warning, as TVM does.
//   3. Build the function (one dataflow block returning the outputs; several
//      outputs are a tuple, unpacked at the call site with `get`s that keep
//      the members' names); identical functions are shared.
//   4. Re-sort the block topologically (a group's call moved to its last
//      member may precede a non-member that used an earlier member).
// Options: max-fused-ops, max-function-args (inputs plus outputs of the
// fused kernel; 0 = no limit), max-merges (stop after N fusions; -1 = all).
//
//===----------------------------------------------------------------------===//
#include "fusec/Analysis/Analysis.h"
#include "fusec/Printer/Printer.h"
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
    declareOption("max-fused-ops", OptionKind::Int, "256",
                  "Largest number of ops in one group");
    declareOption("max-function-args", OptionKind::Int, "0",
                  "Largest number of kernel inputs plus outputs (0: no limit)");
    declareOption("max-merges", OptionKind::Int, "-1",
                  "Stop after this many fusions (-1: no limit), to bisect");
  }
  bool run(Module &module, PassContext &context) override;

private:
  void fuseBlock(Module &module, Function &function, DataflowBlock &block,
                 PassContext &context);
  std::string makeFunction(Module &module, const std::vector<Binding *> &members,
                           const std::vector<Value *> &params,
                           const std::vector<Value *> &outputs);
  llvm::StringMap<std::string> functionByText;
  PartitionOptions options;
};
} // namespace

static std::unique_ptr<Binding> cloneBinding(const Binding &binding,
                                             llvm::DenseMap<const Value *, Value *> &map) {
  auto copy = std::make_unique<Binding>();
  copy->kind = binding.kind;
  copy->callee = binding.callee;
  copy->attrs = binding.attrs;
  copy->tupleIndex = binding.tupleIndex;
  if (binding.constant)
    copy->constant = std::make_unique<ConstantData>(*binding.constant);
  for (const Operand &operand : binding.operands) {
    Operand mapped = operand;
    if (!operand.isLiteral())
      mapped.value = map.lookup(operand.value);
    copy->operands.push_back(mapped);
  }
  copy->result = std::make_unique<Value>();
  copy->result->name = binding.result->name;
  copy->result->type = binding.result->type;
  copy->result->definingBinding = copy.get();
  map[binding.getResult()] = copy->result.get();
  return copy;
}

static bool isScalarConstant(const Value *value) {
  const Binding *binding = value->definingBinding;
  return binding && binding->kind == ExprKind::Constant && value->type.isTensor() &&
         value->type.getRank() == 0;
}

std::string FuseOps::makeFunction(Module &module, const std::vector<Binding *> &members,
                                  const std::vector<Value *> &params,
                                  const std::vector<Value *> &outputs) {
  auto function = std::make_unique<Function>();
  llvm::DenseMap<const Value *, Value *> map;
  for (Value *param : params) {
    auto copy = std::make_unique<Value>();
    copy->name = param->name;
    copy->type = param->type;
    map[param] = copy.get();
    function->params.push_back(std::move(copy));
  }
  auto block = std::make_unique<DataflowBlock>();
  block->hasOutputClause = true;
  std::string name = "fused";
  for (Binding *member : members) {
    for (const Operand &operand : member->operands) // inline 0-d constants
      if (!operand.isLiteral() && !map.count(operand.value) &&
          isScalarConstant(operand.value))
        block->bindings.push_back(cloneBinding(*operand.value->definingBinding, map));
    block->bindings.push_back(cloneBinding(*member, map));
    if (member->kind == ExprKind::CallKernel || member->kind == ExprKind::Call ||
        member->kind == ExprKind::Op)
      name += "_" + member->callee;
  }
  std::vector<Type> outputTypes;
  for (Value *output : outputs) {
    block->outputs.push_back(map.lookup(output));
    function->returnValues.push_back(Operand::of(map.lookup(output)));
    outputTypes.push_back(output->type);
  }
  function->returnsTuple = outputs.size() > 1;
  function->returnType = outputs.size() > 1 ? Type::tuple(outputTypes) : outputTypes.front();
  function->attrs.set("primitive", Attr::makeBool(true));
  function->body.push_back({nullptr, std::move(block)});
  // Share identical functions; otherwise find a free name.
  // The sharing key: the function printed with placeholder names for it and
  // its values, so that groups equal up to renaming share one function.
  std::vector<std::pair<Value *, std::string>> names;
  for (auto &param : function->params)
    names.push_back({param.get(), param->name});
  function->forEachBinding([&](Binding &binding) {
    names.push_back({binding.getResult(), binding.getResult()->name});
  });
  for (size_t k = 0; k < names.size(); ++k)
    names[k].first->name = "v" + std::to_string(k);
  function->name = "_";
  std::string text;
  {
    Module single;
    single.functions.push_back(std::move(function));
    text = printModuleToString(single);
    function = std::move(single.functions.front());
  }
  for (auto &[value, original] : names)
    value->name = original;
  auto existing = functionByText.find(text);
  if (existing != functionByText.end())
    return existing->second;
  std::string unique = name;
  for (int suffix = 1; module.lookupFunction(unique) || module.lookupKernel(unique); ++suffix)
    unique = name + "_" + std::to_string(suffix);
  function->name = unique;
  functionByText[text] = unique;
  module.functions.push_back(std::move(function));
  return unique;
}

/// Re-sorts `block` so that every binding follows the bindings it uses,
/// keeping the original order where possible.
static void sortTopologically(DataflowBlock &block) {
  size_t count = block.bindings.size();
  llvm::DenseMap<const Value *, size_t> definedAt;
  for (size_t i = 0; i < count; ++i)
    definedAt[block.bindings[i]->getResult()] = i;
  std::vector<std::vector<size_t>> users(count);
  std::vector<size_t> pending(count, 0);
  for (size_t i = 0; i < count; ++i)
    for (const Operand &operand : block.bindings[i]->operands) {
      auto it = operand.isLiteral() ? definedAt.end() : definedAt.find(operand.value);
      if (it != definedAt.end()) {
        users[it->second].push_back(i);
        ++pending[i];
      }
    }
  std::set<size_t> ready;
  for (size_t i = 0; i < count; ++i)
    if (!pending[i])
      ready.insert(i);
  std::vector<std::unique_ptr<Binding>> sorted;
  while (!ready.empty()) {
    size_t next = *ready.begin();
    ready.erase(ready.begin());
    sorted.push_back(std::move(block.bindings[next]));
    for (size_t user : users[next])
      if (--pending[user] == 0)
        ready.insert(user);
  }
  block.bindings = std::move(sorted);
}

void FuseOps::fuseBlock(Module &module, Function &function, DataflowBlock &block,
                        PassContext &context) {
  FusionGraph graph = buildFusionGraph(module, block);
  Partition partition = partitionGraph(graph, options);
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
  // Uses of each value anywhere in the function, and by the return.
  llvm::DenseMap<const Value *, std::vector<const Binding *>> uses;
  function.forEachBinding([&](const Binding &binding) {
    for (const Operand &operand : binding.operands)
      if (!operand.isLiteral())
        uses[operand.value].push_back(&binding);
  });
  llvm::DenseSet<const Value *> returned, blockOutputs(block.outputs.begin(),
                                                       block.outputs.end());
  for (const Operand &operand : function.returnValues)
    returned.insert(operand.value);

  llvm::DenseSet<const Binding *> removed;
  std::vector<std::unique_ptr<Binding>> added;
  llvm::DenseMap<const Binding *, std::vector<std::unique_ptr<Binding>>> replacements;
  for (auto &[root, nodes] : groups) {
    if (nodes.size() < 2) {
      if (context.report)
        context.report->unfused.push_back("%" + graph.nodes[nodes.front()].value->name);
      continue;
    }
    std::vector<Binding *> members;
    llvm::DenseSet<const Binding *> memberSet;
    for (int node : nodes) {
      members.push_back(const_cast<Binding *>(graph.nodes[node].binding));
      memberSet.insert(graph.nodes[node].binding);
    }
    // A tuple from outside the group is passed field by field, as TVM does
    // for partially used tuple parameters: the `get`s that read it stay at
    // the call site and the function takes the fields it uses.
    llvm::erase_if(members, [&](Binding *member) {
      bool readsOutsideTuple =
          member->kind == ExprKind::Get &&
          !memberSet.count(member->operands.front().value->definingBinding);
      if (readsOutsideTuple)
        memberSet.erase(member);
      return readsOutsideTuple;
    });
    if (members.size() < 2) {
      if (context.report)
        for (int node : nodes)
          context.report->unfused.push_back("%" + graph.nodes[node].value->name);
      continue;
    }
    std::vector<Value *> params, outputs;
    llvm::DenseSet<const Value *> seen;
    for (Binding *member : members)
      for (const Operand &operand : member->operands)
        if (!operand.isLiteral() && !memberSet.count(operand.value->definingBinding) &&
            !isScalarConstant(operand.value) && seen.insert(operand.value).second)
          params.push_back(operand.value);
    for (Binding *member : members) {
      Value *value = member->getResult();
      bool usedOutside = blockOutputs.count(value) || returned.count(value);
      for (const Binding *user : uses.lookup(value))
        usedOutside |= !memberSet.count(user);
      if (usedOutside)
        outputs.push_back(value);
    }
    std::vector<std::string> memberNames;
    for (Binding *member : members)
      memberNames.push_back("%" + member->getResult()->name);
    if (outputs.empty()) {
      logWarning("fuse-ops: dropping the dead group {" + llvm::join(memberNames, ", ") +
                 "} in @" + function.name + "; run dce first");
      for (Binding *member : members)
        removed.insert(member);
      ++NumDeadGroups;
      if (context.report)
        context.report->dead.insert(context.report->dead.end(), memberNames.begin(),
                                    memberNames.end());
      continue;
    }
    std::string name = makeFunction(module, members, params, outputs);
    ++NumGroups;
    NumFusedBindings += members.size();
    if (context.report)
      context.report->groups.push_back(
          {name, "fused", patternKindName(partition.groupPattern[root]).str(), "",
           memberNames});
    FUSEC_DEBUG("group " + name + ": " + llvm::join(memberNames, ", "));
    // The call replaces the last member; outputs keep their Value objects so
    // that every later use stays valid.
    auto call = std::make_unique<Binding>();
    call->kind = ExprKind::Call;
    call->callee = name;
    for (Value *param : params)
      call->operands.push_back(Operand::of(param));
    std::vector<std::unique_ptr<Binding>> replacement;
    if (outputs.size() == 1) {
      call->result = std::move(outputs.front()->definingBinding->result);
    } else {
      call->result = std::make_unique<Value>();
      std::string tupleName = name + "_result";
      std::vector<Type> types;
      for (Value *output : outputs)
        types.push_back(output->type);
      call->result->name = tupleName;
      call->result->type = Type::tuple(types);
    }
    call->result->definingBinding = call.get();
    Value *callValue = call->getResult();
    replacement.push_back(std::move(call));
    if (outputs.size() > 1)
      for (size_t k = 0; k < outputs.size(); ++k) {
        auto get = std::make_unique<Binding>();
        get->kind = ExprKind::Get;
        get->operands.push_back(Operand::of(callValue));
        get->tupleIndex = int64_t(k);
        get->result = std::move(outputs[k]->definingBinding->result);
        get->result->definingBinding = get.get();
        replacement.push_back(std::move(get));
      }
    for (Binding *member : members)
      removed.insert(member);
    replacements[members.back()] = std::move(replacement);
  }
  std::vector<std::unique_ptr<Binding>> rewritten;
  for (auto &binding : block.bindings) {
    auto it = replacements.find(binding.get());
    if (it != replacements.end()) {
      for (auto &replacement : it->second)
        rewritten.push_back(std::move(replacement));
      continue;
    }
    if (!removed.count(binding.get()))
      rewritten.push_back(std::move(binding));
  }
  block.bindings = std::move(rewritten);
  llvm::erase_if(block.outputs, [&](Value *v) { return !v->definingBinding ||
                                                       !v->definingBinding->result; });
  sortTopologically(block);
}

bool FuseOps::run(Module &module, PassContext &context) {
  options.maxFusedOps = getIntOption("max-fused-ops");
  options.maxFunctionArgs = getIntOption("max-function-args");
  options.maxMerges = getIntOption("max-merges");
  functionByText.clear();
  size_t original = module.functions.size();
  for (size_t f = 0; f < original; ++f) {
    Function &function = *module.functions[f];
    if (function.isGroupedFunction())
      continue;
    for (BodyItem &item : function.body) {
      if (item.block)
        fuseBlock(module, function, *item.block, context);
      else if (context.report) // outside blocks nothing is ever fused
        context.report->unfused.push_back("%" + item.binding->getResult()->name);
    }
  }
  return true;
}

std::unique_ptr<Pass> fusec::createFuseOpsPass() { return std::make_unique<FuseOps>(); }
