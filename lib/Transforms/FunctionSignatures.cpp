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
//   expandTupleParams: 1. a tuple parameter read only by `get`s (none of
//   them an output) is replaced, in place, by one parameter per field and
//   the gets are removed; 2. each call site takes the fields with `get`s
//   just before the call and passes them.
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

bool fusec::expandTupleParams(Module &module, Function &function,
                              std::vector<const Value *> &fieldGets) {
  // The tuple parameters read only by gets that are not outputs.
  llvm::DenseSet<const Value *> escaping;
  for (const Operand &operand : function.returnValues)
    if (!operand.isLiteral())
      escaping.insert(operand.value);
  for (const BodyItem &item : function.body)
    if (item.block)
      escaping.insert(item.block->outputs.begin(), item.block->outputs.end());
  llvm::DenseSet<const Value *> expandable;
  for (const auto &param : function.params)
    if (param->type.isTuple() && llvm::all_of(param->type.getFields(), [](const Type &field) {
          return field.isTensor();
        }))
      expandable.insert(param.get());
  function.forEachBinding([&](const Binding &binding) {
    for (const Operand &operand : binding.operands)
      if (!operand.isLiteral() && expandable.count(operand.value) &&
          (binding.kind != ExprKind::Get || escaping.count(binding.getResult())))
        expandable.erase(operand.value);
  });
  for (const Value *value : escaping)
    expandable.erase(value);
  if (expandable.empty())
    return false;

  // 1. The function: fields in place of each such tuple, its gets removed.
  std::set<std::string> names = valueNames(function);
  std::vector<int> fieldCounts; // per original parameter; -1: kept whole
  llvm::DenseMap<const Value *, std::vector<Value *>> fieldsOf;
  std::vector<std::unique_ptr<Value>> params;
  for (auto &param : function.params) {
    if (!expandable.count(param.get())) {
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
  }
  llvm::DenseMap<const Value *, Value *> replacement; // get result -> field
  function.forEachBinding([&](const Binding &binding) {
    if (binding.kind == ExprKind::Get && fieldsOf.count(binding.operands.front().value))
      replacement[binding.getResult()] =
          fieldsOf[binding.operands.front().value][size_t(binding.tupleIndex)];
  });
  function.forEachBinding([&](Binding &binding) {
    for (Operand &operand : binding.operands)
      if (!operand.isLiteral())
        if (auto it = replacement.find(operand.value); it != replacement.end())
          operand.value = it->second;
  });
  auto isRemoved = [&](const std::unique_ptr<Binding> &binding) {
    return binding && replacement.count(binding->getResult());
  };
  for (BodyItem &item : function.body)
    if (item.block)
      llvm::erase_if(item.block->bindings, isRemoved);
  llvm::erase_if(function.body, [&](const BodyItem &item) { return isRemoved(item.binding); });
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
