//===- GroupOutliner.cpp - Turn groups of bindings into functions ---------===//
//
// Algorithm, per group (see GroupOutliner.h for the contract):
//   1. Parameters: values the members use from outside, in first-use order,
//      except constants copied into the function. Outputs: the members in
//      the block's `output` (or the return), in binding order, then those a
//      non-member reads, in the order the block reads them (TVM's
//      CollectFuncBindings, then CollectFuncBoundary).
//   2. The function: one dataflow block of the copied members returning the
//      outputs (a tuple for several; the block's `output` lists them in
//      binding order, as TVM prints it). Its text with v0, v1, ... for names is the
//      sharing key, so that groups equal up to renaming share one function.
//   3. The call stands for the group, its `get`s in the members' binding
//      order; outputs keep their Value objects, so every later use stays
//      valid.
// Then, per block, GroupOrder.cpp re-orders the bindings (finish).
//
//===----------------------------------------------------------------------===//
#include "GroupOutliner.h"
#include "fusec/IR/Ops.h"
#include "fusec/Printer/Printer.h"

#include <cctype>
#include <set>

using namespace fusec;

std::string fusec::tupleFieldName(llvm::StringRef tuple, int64_t index) {
  std::string base = tuple.str();
  if (!base.empty() && std::isdigit(static_cast<unsigned char>(base[0])))
    base = "v" + base;
  return base + "_" + std::to_string(index);
}

/// The parameter order TVM's FunctionCreator gives a group (block order of
/// its bindings, `get`s included): a value from outside joins at its first
/// use, and a tuple from outside joins at its first `get`, expanded into
/// the fields its `get`s read, in the order of those gets.
static std::vector<const Value *>
tvmParamOrder(const std::vector<Binding *> &members,
              const llvm::DenseSet<const Binding *> &memberSet) {
  std::vector<std::vector<const Value *>> slots;
  llvm::DenseMap<const Value *, size_t> tupleSlot;
  llvm::DenseSet<const Value *> seen;
  for (const Binding *member : members) {
    if (member->kind == ExprKind::Get &&
        !memberSet.count(member->operands.front().value->definingBinding)) {
      const Value *tuple = member->operands.front().value;
      auto [it, inserted] = tupleSlot.try_emplace(tuple, slots.size());
      if (inserted)
        slots.emplace_back();
      slots[it->second].push_back(member->getResult());
      seen.insert(member->getResult());
      continue;
    }
    for (const Operand &operand : member->operands)
      if (!operand.isLiteral() && !memberSet.count(operand.value->definingBinding) &&
          seen.insert(operand.value).second)
        slots.push_back({operand.value});
  }
  std::vector<const Value *> order;
  for (const auto &slot : slots)
    order.insert(order.end(), slot.begin(), slot.end());
  return order;
}

OutsideFieldReads fusec::separateOutsideFieldReads(std::vector<Binding *> &members) {
  OutsideFieldReads fields;
  llvm::DenseSet<const Binding *> memberSet(members.begin(), members.end());
  fields.paramOrder = tvmParamOrder(members, memberSet);
  llvm::erase_if(members, [&](Binding *member) {
    bool readsOutsideTuple = member->kind == ExprKind::Get &&
                             !memberSet.count(member->operands.front().value->definingBinding);
    if (readsOutsideTuple) {
      fields.paramNames[member->getResult()] =
          tupleFieldName(member->operands.front().value->name, member->tupleIndex);
      fields.gets.push_back(member);
    }
    return readsOutsideTuple;
  });
  return fields;
}

std::string fusec::fusedNamePart(const Binding &binding) {
  if (binding.kind != ExprKind::Op && binding.kind != ExprKind::Call &&
      binding.kind != ExprKind::CallKernel)
    return "";
  llvm::StringRef callee = binding.callee;
  if (binding.kind == ExprKind::Op && callee.startswith("nn."))
    callee = callee.drop_front(3);
  std::string part = callee.str();
  if (binding.kind == ExprKind::Op)
    std::replace(part.begin(), part.end(), '.', '_');
  return part;
}

GroupOutliner::GroupOutliner(Module &module, Function &function, DataflowBlock &block,
                             OutlinedFunctionTable &table)
    : module(module), function(function), block(block), table(table) {
  function.forEachBinding([&](const Binding &binding) {
    for (const Operand &operand : binding.operands)
      if (!operand.isLiteral())
        uses[operand.value].push_back(&binding);
  });
  for (const Operand &operand : function.returnValues)
    usedByReturnOrOutput.insert(operand.value);
  for (const auto &param : function.params)
    usedNames.insert(param->name);
  function.forEachBinding([&](const Binding &binding) {
    usedNames.insert(binding.getResult()->name);
  });
  usedByReturnOrOutput.insert(block.outputs.begin(), block.outputs.end());
  for (size_t i = 0; i < block.bindings.size(); ++i)
    blockPosition[block.bindings[i].get()] = i;
}

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

/// Whether `value` is a constant that the function gets a copy of.
static bool isCopiedConstant(const Value *value, bool bindConstants) {
  return bindConstants ? value->isConstant() : value->isScalarConstant();
}

std::string GroupOutliner::makeFunction(const std::vector<Binding *> &members,
                                        const std::vector<Value *> &params,
                                        const std::vector<Value *> &outputs, const Attrs &attrs,
                                        bool bindConstants,
                                        const llvm::DenseMap<const Value *, std::string> &paramNames) {
  auto outlined = std::make_unique<Function>();
  llvm::DenseMap<const Value *, Value *> map;
  // A hinted name must not take a name another parameter or a member has.
  std::set<std::string> taken;
  for (Value *param : params)
    if (!paramNames.count(param))
      taken.insert(param->name);
  for (Binding *member : members)
    taken.insert(member->getResult()->name);
  for (Value *param : params) {
    auto copy = std::make_unique<Value>();
    copy->name = param->name;
    if (auto hint = paramNames.find(param); hint != paramNames.end()) {
      copy->name = hint->second;
      for (int suffix = 1; taken.count(copy->name); ++suffix)
        copy->name = hint->second + "_" + std::to_string(suffix);
      taken.insert(copy->name);
    }
    copy->type = param->type;
    map[param] = copy.get();
    outlined->params.push_back(std::move(copy));
  }
  auto body = std::make_unique<DataflowBlock>();
  body->hasOutputClause = true;
  std::string name = "fused";
  for (Binding *member : members) {
    for (const Operand &operand : member->operands)
      if (!operand.isLiteral() && !map.count(operand.value) &&
          isCopiedConstant(operand.value, bindConstants)) {
        copiedConstants.insert(operand.value->definingBinding);
        body->bindings.push_back(cloneBinding(*operand.value->definingBinding, map));
      }
    body->bindings.push_back(cloneBinding(*member, map));
    std::string part = fusedNamePart(*member);
    if (!part.empty())
      name += "_" + part;
  }
  // The block lists its outputs in binding order, as TVM's BlockBuilder
  // emits them (`R.output(conv, relu)`); the function returns them in the
  // group's output order (`(relu, conv)` in test_branch_tuple_output).
  for (Binding *member : members)
    if (llvm::is_contained(outputs, member->getResult()))
      body->outputs.push_back(map.lookup(member->getResult()));
  std::vector<Type> outputTypes;
  for (Value *output : outputs) {
    outlined->returnValues.push_back(Operand::of(map.lookup(output)));
    outputTypes.push_back(output->type);
  }
  outlined->returnsTuple = outputs.size() > 1;
  outlined->returnType = outputs.size() > 1 ? Type::tuple(outputTypes) : outputTypes.front();
  for (const Attrs::Entry &entry : attrs.getEntries())
    outlined->attrs.set(entry.name, entry.value);
  outlined->attrs.set("primitive", Attr::makeBool(true));
  outlined->body.push_back({nullptr, std::move(body)});
  // The sharing key: the function printed with v0, v1, ... for its names.
  std::vector<std::pair<Value *, std::string>> names;
  for (auto &param : outlined->params)
    names.push_back({param.get(), param->name});
  outlined->forEachBinding([&](Binding &binding) {
    names.push_back({binding.getResult(), binding.getResult()->name});
  });
  for (size_t k = 0; k < names.size(); ++k)
    names[k].first->name = "v" + std::to_string(k);
  // Attributes in the form TVM's attributes hold them: `sum {axis = 1}` and
  // `sum {axis = [1], keepdims = false}` are one function (they hold every
  // field), `sum {axis = [-1]}` another (axes stay as written).
  std::vector<std::pair<Binding *, Attrs>> writtenAttrs;
  outlined->forEachBinding([&](Binding &binding) {
    if (binding.kind != ExprKind::Op)
      return;
    writtenAttrs.push_back({&binding, binding.attrs});
    binding.attrs = canonicalOpAttrs(binding, AttrForm::AsTVMHolds);
  });
  outlined->name = "_";
  std::string text;
  {
    Module single;
    single.functions.push_back(std::move(outlined));
    text = printModuleToString(single);
    outlined = std::move(single.functions.front());
  }
  for (auto &[value, original] : names)
    value->name = original;
  for (auto &[binding, attrs] : writtenAttrs)
    binding->attrs = std::move(attrs);
  auto existing = table.byText.find(text);
  if (existing != table.byText.end())
    return existing->second;
  if (!table.takenKnown) {
    for (const auto &other : module.functions)
      table.taken.insert(other->name);
    for (const auto &kernel : module.kernels)
      table.taken.insert(kernel->name);
    table.takenKnown = true;
  }
  std::string unique = name;
  int &suffix = table.nextSuffix[name];
  if (suffix == 0)
    suffix = 1;
  else
    unique = name + "_" + std::to_string(suffix++);
  while (table.taken.count(unique))
    unique = name + "_" + std::to_string(suffix++);
  table.taken.insert(unique);
  outlined->name = unique;
  table.byText[text] = unique;
  module.functions.push_back(std::move(outlined));
  return unique;
}

GroupOutliner::Result GroupOutliner::outline(
    const std::vector<Binding *> &members, const Attrs &attrs, bool bindConstants,
    const OutsideFieldReads &fields) {
  Result result;
  llvm::DenseSet<const Binding *> memberSet(members.begin(), members.end());
  llvm::DenseSet<const Value *> seen;
  for (Binding *member : members)
    for (const Operand &operand : member->operands)
      if (!operand.isLiteral() && !memberSet.count(operand.value->definingBinding) &&
          !isCopiedConstant(operand.value, bindConstants) && seen.insert(operand.value).second)
        result.params.push_back(operand.value);
  // A dim that an op introduces (broadcast_to) is bound by a tensor
  // parameter of the function; the group takes that parameter too, as TVM's
  // FunctionCreator adds a group's undefined symbolic vars as parameters.
  for (Binding *member : members)
    if (member->kind == ExprKind::Op)
      for (Value *carrier : dimCarriers(function, *member))
        if (seen.insert(carrier).second)
          result.params.push_back(carrier);
  llvm::DenseMap<const Value *, size_t> rank;
  for (size_t i = 0; i < fields.paramOrder.size(); ++i)
    rank.try_emplace(fields.paramOrder[i], i);
  auto rankOf = [&](const Value *v) {
    auto it = rank.find(v);
    return it == rank.end() ? fields.paramOrder.size() : it->second;
  };
  std::stable_sort(result.params.begin(), result.params.end(),
                   [&](const Value *a, const Value *b) { return rankOf(a) < rankOf(b); });
  // Outputs in TVM's order: first the members that are block outputs, in
  // binding order (CollectFuncBindings appends them), then the members read
  // by a non-member, in the order the block reads them (CollectFuncBoundary).
  auto addOutput = [&](Value *value) {
    if (!llvm::is_contained(result.outputs, value))
      result.outputs.push_back(value);
  };
  // Both come from the members and their readers, sorted by block
  // position: a walk of the whole block per group made a long unrolled
  // recurrence quadratic.
  auto byPosition = [&](const Binding *a, const Binding *b) {
    return blockPosition.lookup(a) < blockPosition.lookup(b);
  };
  std::vector<Binding *> ordered = members;
  llvm::sort(ordered, byPosition);
  for (Binding *member : ordered)
    if (usedByReturnOrOutput.count(member->getResult()))
      addOutput(member->getResult());
  std::vector<const Binding *> readers;
  llvm::DenseSet<const Binding *> seenReaders;
  for (Binding *member : members)
    for (const Binding *user : uses.lookup(member->getResult()))
      if (!memberSet.count(user) && blockPosition.count(user) && seenReaders.insert(user).second)
        readers.push_back(user);
  llvm::sort(readers, byPosition);
  for (const Binding *reader : readers)
    for (const Operand &operand : reader->operands)
      if (!operand.isLiteral() && memberSet.count(operand.value->definingBinding))
        addOutput(operand.value);
  // Readers outside the block (they read block outputs, found above).
  for (Binding *member : members)
    for (const Binding *user : uses.lookup(member->getResult()))
      if (!memberSet.count(user))
        addOutput(member->getResult());
  for (Binding *member : members) {
    removed.insert(member);
    groupOf[member] = members.back();
  }
  if (result.outputs.empty()) {
    // TVM drops every binding of a dead group, its gets of outside tuples
    // too (here they stand outside the function); a get that a binding
    // outside the group also reads stays.
    for (Binding *get : fields.gets)
      if (llvm::all_of(uses.lookup(get->getResult()),
                       [&](const Binding *user) { return memberSet.count(user); }))
        removed.insert(get);
    return result;
  }
  result.function =
      makeFunction(members, result.params, result.outputs, attrs, bindConstants, fields.paramNames);
  auto call = std::make_unique<Binding>();
  call->kind = ExprKind::Call;
  call->callee = result.function;
  // Diagnostics about the call (a cycle, a later pass) point at the group's
  // last member, where the call stands.
  call->loc = members.back()->loc;
  for (Value *param : result.params)
    call->operands.push_back(Operand::of(param));
  std::vector<std::unique_ptr<Binding>> replacement;
  const std::vector<Value *> &outputs = result.outputs;
  if (outputs.size() == 1) {
    call->result = std::move(outputs.front()->definingBinding->result);
  } else {
    call->result = std::make_unique<Value>();
    std::vector<Type> types;
    for (Value *output : outputs)
      types.push_back(output->type);
    // Unique in the function: a shared function may be called twice.
    std::string name = uniqueValueName(result.function + "_result", [&](llvm::StringRef n) {
      return usedNames.count(n.str());
    });
    usedNames.insert(name);
    call->result->name = name;
    call->result->type = Type::tuple(types);
  }
  call->result->definingBinding = call.get();
  Value *callValue = call->getResult();
  replacement.push_back(std::move(call));
  // The `get`s follow the members' binding order, not the tuple's (TVM
  // emits them from pending_tuple_get, filled as the bindings are visited).
  if (outputs.size() > 1)
    for (const auto &binding : block.bindings) {
      auto found = llvm::find(outputs, binding->getResult());
      if (!memberSet.count(binding.get()) || found == outputs.end())
        continue;
      auto get = std::make_unique<Binding>();
      get->kind = ExprKind::Get;
      get->operands.push_back(Operand::of(callValue));
      get->tupleIndex = int64_t(found - outputs.begin());
      get->loc = binding->loc;
      get->result = std::move(binding->result);
      get->result->definingBinding = get.get();
      replacement.push_back(std::move(get));
    }
  // The members' values now belong to the call and its gets: a later
  // group's reads of them must still find this group (finish's order).
  for (const auto &binding : replacement)
    groupOf[binding.get()] = members.back();
  replacements[members.back()] = std::move(replacement);
  return result;
}
