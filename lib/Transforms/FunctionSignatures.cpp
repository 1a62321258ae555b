//===- FunctionSignatures.cpp - Rewrite a function and its call sites ----===//
//
// Contract: see FunctionSignatures.h. Both rewrites change a primitive
// function's parameter list and, in the same step, every call of it, so
// that the module stays well-typed between them.
//
// Algorithm (shared): forEachCallSite visits each call of the function, in
// a dataflow block or outside one; the rewrite may insert bindings before
// the call (outside a block each becomes its own body item).
//   liftTensorConstants: 1. each tensor constant binding of the function
//   becomes a trailing parameter; 2. each call site defines a copy of it
//   just before the call and passes it.
//   expandTupleParams, one nesting level at a time: 1. each tuple parameter
//   is replaced, in place, by one parameter per field; its gets read the
//   field (one that is an output becomes an alias of it), a use of the
//   whole tuple reads a `tuple` of the fields bound at the start; 2. each
//   call site takes the fields with `get`s just before the call and passes
//   them.
//
//===----------------------------------------------------------------------===//
#include "FunctionSignatures.h"
#include "GroupOutliner.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <map>
#include <set>

using namespace fusec;

using BindingList = std::vector<std::unique_ptr<Binding>>;

/// Calls `rewrite(caller, bindings, index)` for every call of `callee`;
/// `rewrite` may insert bindings before `index`, advancing it past them.
static void
forEachCallSite(Module &module, llvm::StringRef callee,
                llvm::function_ref<void(Function &, BindingList &, size_t &)> rewrite) {
  for (auto &caller : module.functions) {
    for (BodyItem &item : caller->body) {
      if (!item.block)
        continue;
      BindingList &bindings = item.block->bindings;
      for (size_t i = 0; i < bindings.size(); ++i)
        if (bindings[i]->kind == ExprKind::Call && bindings[i]->callee == callee)
          rewrite(*caller, bindings, i);
    }
    // A call outside a dataflow block: each new binding is its own body item.
    for (size_t i = 0; i < caller->body.size(); ++i) {
      BodyItem &item = caller->body[i];
      if (item.block || item.binding->kind != ExprKind::Call || item.binding->callee != callee)
        continue;
      BindingList single;
      single.push_back(std::move(item.binding));
      size_t index = 0;
      rewrite(*caller, single, index);
      caller->body.erase(caller->body.begin() + long(i));
      for (size_t k = 0; k < single.size(); ++k)
        caller->body.insert(caller->body.begin() + long(i + k),
                            BodyItem{std::move(single[k]), nullptr});
      i += single.size() - 1;
    }
  }
}

/// Every value name of `function`, for fresh names.
static std::set<std::string> valueNames(const Function &function) {
  std::set<std::string> names;
  for (const auto &param : function.params)
    names.insert(param->name);
  function.forEachBinding([&](const Binding &b) { names.insert(b.getResult()->name); });
  return names;
}

static std::string freshName(const std::string &base, std::set<std::string> &names) {
  std::string name =
      uniqueValueName(base, [&](llvm::StringRef candidate) { return names.count(candidate.str()); });
  names.insert(name);
  return name;
}

/// A binding inserted at a call site: `%name = <binding>`, defined before it.
static Binding &insertBefore(BindingList &bindings, size_t &index, std::unique_ptr<Binding> binding,
                             const std::string &name, const Type &type) {
  binding->result = std::make_unique<Value>();
  binding->result->name = name;
  binding->result->type = type;
  binding->result->definingBinding = binding.get();
  binding->loc = bindings[index]->loc;
  Binding &inserted = *binding;
  bindings.insert(bindings.begin() + long(index), std::move(binding));
  ++index;
  return inserted;
}

bool fusec::liftTensorConstants(Module &module, Function &function) {
  BindingList lifted;
  for (BodyItem &item : function.body) {
    if (!item.block)
      continue;
    auto &bindings = item.block->bindings;
    for (auto it = bindings.begin(); it != bindings.end();) {
      const Binding &binding = **it;
      bool tensor = binding.kind == ExprKind::Constant && binding.getType().isTensor() &&
                    binding.getType().getRank() > 0;
      if (!tensor) {
        ++it;
        continue;
      }
      auto param = std::make_unique<Value>();
      param->name = binding.getResult()->name;
      param->type = binding.getType();
      function.forEachBinding([&](Binding &user) {
        for (Operand &operand : user.operands)
          if (operand.value == binding.getResult())
            operand.value = param.get();
      });
      function.params.push_back(std::move(param));
      lifted.push_back(std::move(*it));
      it = bindings.erase(it);
    }
  }
  if (lifted.empty())
    return false;
  std::map<const Function *, std::set<std::string>> names;
  forEachCallSite(module, function.name, [&](Function &caller, BindingList &bindings, size_t &index) {
    auto known = names.try_emplace(&caller, valueNames(caller)).first;
    for (const auto &constant : lifted) {
      auto copy = std::make_unique<Binding>();
      copy->kind = ExprKind::Constant;
      copy->constant = std::make_unique<ConstantData>(*constant->constant);
      Binding &defined = insertBefore(bindings, index, std::move(copy),
                                      freshName(constant->getResult()->name, known->second),
                                      constant->getType());
      bindings[index]->operands.push_back(Operand::of(defined.getResult()));
    }
  });
  return true;
}

/// One level of expandTupleParams: every tuple parameter becomes its
/// fields (a field that is a tuple is expanded by the next level).
static bool expandTupleParamsOnce(Module &module, Function &function,
                                  std::vector<const Value *> &fieldGets) {
  if (llvm::none_of(function.params, [](const auto &param) { return param->type.isTuple(); }))
    return false;
  llvm::DenseSet<const Value *> escaping; // returned or a block output
  for (const Operand &operand : function.returnValues)
    if (!operand.isLiteral())
      escaping.insert(operand.value);
  for (const BodyItem &item : function.body)
    if (item.block)
      escaping.insert(item.block->outputs.begin(), item.block->outputs.end());

  // 1. The function: fields in place of each tuple parameter.
  std::set<std::string> names = valueNames(function);
  std::vector<int> fieldCounts; // per original parameter; -1: not a tuple
  llvm::DenseMap<const Value *, std::vector<Value *>> fieldsOf;
  std::vector<std::unique_ptr<Value>> params;
  std::vector<std::unique_ptr<Value>> expanded; // kept alive until rewired
  for (auto &param : function.params) {
    if (!param->type.isTuple()) {
      fieldCounts.push_back(-1);
      params.push_back(std::move(param));
      continue;
    }
    const std::vector<Type> &fields = param->type.getFields();
    fieldCounts.push_back(int(fields.size()));
    for (size_t k = 0; k < fields.size(); ++k) {
      auto field = std::make_unique<Value>();
      field->name = freshName(tupleFieldName(param->name, int64_t(k)), names);
      field->type = fields[k];
      fieldsOf[param.get()].push_back(field.get());
      params.push_back(std::move(field));
    }
    expanded.push_back(std::move(param));
  }
  // A `get` of such a tuple reads its field instead; one whose value is an
  // output stays, as an alias of the field (its value object is listed).
  llvm::DenseMap<const Value *, Value *> replacement; // get result -> field
  function.forEachBinding([&](Binding &binding) {
    if (binding.kind != ExprKind::Get || binding.operands.front().isLiteral() ||
        !fieldsOf.count(binding.operands.front().value))
      return;
    Value *field = fieldsOf[binding.operands.front().value][size_t(binding.tupleIndex)];
    if (!escaping.count(binding.getResult())) {
      replacement[binding.getResult()] = field;
      return;
    }
    binding.kind = ExprKind::Alias;
    binding.operands = {Operand::of(field)};
    binding.tupleIndex = 0;
  });
  auto isRemoved = [&](const std::unique_ptr<Binding> &binding) {
    return binding && replacement.count(binding->getResult());
  };
  for (BodyItem &item : function.body)
    if (item.block)
      llvm::erase_if(item.block->bindings, isRemoved);
  llvm::erase_if(function.body, [&](const BodyItem &item) { return isRemoved(item.binding); });
  // A tuple used whole (passed on, returned) is rebuilt from its fields by
  // a `tuple` binding at the start, as TVM's ExpandTupleArguments binds it.
  llvm::DenseMap<const Value *, Value *> rebuilt;
  auto rebuild = [&](const Value *tuple) {
    auto [it, inserted] = rebuilt.try_emplace(tuple, nullptr);
    if (!inserted)
      return it->second;
    auto binding = std::make_unique<Binding>();
    binding->kind = ExprKind::Tuple;
    binding->loc = function.loc;
    for (Value *field : fieldsOf[tuple])
      binding->operands.push_back(Operand::of(field));
    binding->result = std::make_unique<Value>();
    binding->result->name = tuple->name;
    binding->result->type = tuple->type;
    binding->result->definingBinding = binding.get();
    it->second = binding->getResult();
    if (!function.body.empty() && function.body.front().block)
      function.body.front().block->bindings.insert(
          function.body.front().block->bindings.begin(), std::move(binding));
    else
      function.body.insert(function.body.begin(), BodyItem{std::move(binding), nullptr});
    return it->second;
  };
  auto rewire = [&](Operand &operand) {
    if (operand.isLiteral())
      return;
    if (auto it = replacement.find(operand.value); it != replacement.end())
      operand.value = it->second;
    else if (fieldsOf.count(operand.value))
      operand.value = rebuild(operand.value);
  };
  std::vector<Binding *> bindings;
  function.forEachBinding([&](Binding &binding) { bindings.push_back(&binding); });
  for (Binding *binding : bindings)
    if (binding->kind != ExprKind::Tuple || !rebuilt.count(binding->getResult()))
      for (Operand &operand : binding->operands)
        rewire(operand);
  for (Operand &operand : function.returnValues)
    rewire(operand);
  function.params = std::move(params);

  // 2. The call sites: the fields taken by gets just before the call.
  std::map<const Function *, std::set<std::string>> callerNames;
  forEachCallSite(module, function.name, [&](Function &caller, BindingList &bindings, size_t &index) {
    auto known = callerNames.try_emplace(&caller, valueNames(caller)).first;
    std::vector<Operand> operands;
    std::vector<Operand> original = bindings[index]->operands;
    for (size_t i = 0; i < original.size(); ++i) {
      if (fieldCounts[i] < 0 || original[i].isLiteral()) {
        operands.push_back(original[i]);
        continue;
      }
      Value *tuple = original[i].value;
      for (int k = 0; k < fieldCounts[i]; ++k) {
        auto get = std::make_unique<Binding>();
        get->kind = ExprKind::Get;
        get->operands.push_back(Operand::of(tuple));
        get->tupleIndex = k;
        Binding &field = insertBefore(bindings, index, std::move(get),
                                      freshName(tupleFieldName(tuple->name, k), known->second),
                                      tuple->type.getFields()[size_t(k)]);
        operands.push_back(Operand::of(field.getResult()));
        fieldGets.push_back(field.getResult());
      }
    }
    bindings[index]->operands = std::move(operands);
  });
  return true;
}

bool fusec::expandTupleParams(Module &module, Function &function,
                              std::vector<const Value *> &fieldGets) {
  bool changed = false;
  while (expandTupleParamsOnce(module, function, fieldGets))
    changed = true;
  return changed;
}
