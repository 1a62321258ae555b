//===- GroupOrder.cpp - The block after outlining: order and cycles -------===//
//
// GroupOutliner::finish, once every group of a block is outlined (see
// GroupOutliner.h for the contract):
//   1. the bindings re-ordered as TVM's TopoSortByGroupDep orders them:
//      groups (a lone binding is its own) by their first binding, each after
//      the groups it reads from, depth first, a group's call and `get`s
//      together;
//   2. constants copied into the functions and no longer read here dropped;
//   3. a topological check that finds a cycle between groups (fewer
//      bindings after the sort), named by a binding of the input.
//
//===----------------------------------------------------------------------===//
#include "GroupOutliner.h"

#include <functional>
#include <set>

using namespace fusec;

/// Re-sorts `block` so that every binding follows the bindings it uses,
/// keeping the original order where possible. Returns false on a cycle.
static bool sortTopologically(DataflowBlock &block, std::string &cycle) {
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
  if (sorted.size() != count) {
    // Name a binding of the input: a group's tuple-valued call has a made-up
    // name, the `get`s after it keep the members' names.
    for (size_t i = 0; i < count; ++i)
      if (block.bindings[i] && cycle.empty() && !block.bindings[i]->getType().isTuple())
        cycle = "%" + block.bindings[i]->getResult()->name;
    for (size_t i = 0; i < count; ++i)
      if (block.bindings[i]) {
        if (cycle.empty())
          cycle = "%" + block.bindings[i]->getResult()->name;
        sorted.push_back(std::move(block.bindings[i]));
      }
    block.bindings = std::move(sorted); // every binding kept, for the report
    return false;
  }
  block.bindings = std::move(sorted);
  return true;
}

bool GroupOutliner::finish(std::string &cycle) {
  // TVM's TopoSortByGroupDep: groups (a lone binding is its own) in the
  // order of their first binding, each after the groups it reads from,
  // depth first; a group's call and gets stand together.
  auto groupKey = [&](const Binding *binding) {
    auto it = groupOf.find(binding);
    return it == groupOf.end() ? binding : it->second;
  };
  llvm::DenseMap<const Binding *, std::unique_ptr<Binding> *> owned;
  llvm::DenseMap<const Binding *, std::vector<const Binding *>> dependencies;
  std::vector<const Binding *> groupOrder; // taken before bindings move
  for (auto &binding : block.bindings) {
    owned[binding.get()] = &binding;
    groupOrder.push_back(groupKey(binding.get()));
    const Binding *group = groupKey(binding.get());
    for (const Operand &operand : binding->operands) {
      const Binding *producer = operand.isLiteral() ? nullptr : operand.value->definingBinding;
      if (!producer || !producer->result || groupKey(producer) == group)
        continue;
      // TVM's CollectFuncBoundary: a read of a group that already reads this
      // one is the cycle, named by the value read.
      auto producerDeps = dependencies.find(groupKey(producer));
      if (cycle.empty() && producerDeps != dependencies.end() &&
          llvm::is_contained(producerDeps->second, group))
        cycle = "%" + operand.value->name;
      dependencies[group].push_back(groupKey(producer));
    }
  }
  std::vector<std::unique_ptr<Binding>> rewritten;
  llvm::DenseSet<const Binding *> visited;
  std::function<void(const Binding *)> visit = [&](const Binding *group) {
    if (!visited.insert(group).second)
      return;
    for (const Binding *dependency : dependencies[group])
      if (owned.count(dependency))
        visit(dependency);
    if (auto it = replacements.find(group); it != replacements.end()) {
      for (auto &replacement : it->second)
        rewritten.push_back(std::move(replacement));
    } else if (!removed.count(group)) {
      rewritten.push_back(std::move(*owned[group]));
    }
  };
  for (const Binding *group : groupOrder)
    visit(group);
  block.bindings = std::move(rewritten);
  llvm::erase_if(block.outputs,
                 [&](Value *v) { return !v->definingBinding || !v->definingBinding->result; });
  // Constants copied into functions and no longer read here.
  if (!copiedConstants.empty()) {
    llvm::DenseSet<const Value *> stillUsed(usedByReturnOrOutput.begin(),
                                            usedByReturnOrOutput.end());
    function.forEachBinding([&](const Binding &binding) {
      for (const Operand &operand : binding.operands)
        if (!operand.isLiteral())
          stillUsed.insert(operand.value);
    });
    llvm::erase_if(block.bindings, [&](const std::unique_ptr<Binding> &binding) {
      return copiedConstants.count(binding.get()) && !stillUsed.count(binding->getResult());
    });
  }
  std::string unsorted;
  bool sorted = sortTopologically(block, unsorted);
  if (cycle.empty())
    cycle = unsorted;
  return sorted && cycle.empty();
}
