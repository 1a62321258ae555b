//===- Module.cpp - Bindings, functions and modules -----------------------===//
//
// Small structural helpers over the graph-level IR.
//
//===----------------------------------------------------------------------===//
#include "fusec/IR/IR.h"
#include "fusec/IR/Kernel.h"

#include <set>

using namespace fusec;

std::string fusec::uniqueValueName(llvm::StringRef base,
                                   llvm::function_ref<bool(llvm::StringRef)> taken) {
  auto isDigit = [](char c) { return c >= '0' && c <= '9'; };
  bool digitsOnly = !base.empty() && llvm::all_of(base, isDigit);
  std::string name = base.str();
  if (!base.empty() && isDigit(base.front()) && !digitsOnly)
    name = "v" + name;
  if (!taken(name))
    return name;
  std::string stem = digitsOnly ? "v" + name : name;
  if (digitsOnly && !taken(stem))
    return stem;
  for (int k = 1;; ++k) {
    std::string candidate = stem + "_" + std::to_string(k);
    if (!taken(candidate))
      return candidate;
  }
}

std::string Binding::headName() const {
  switch (kind) {
  case ExprKind::Op:
    return callee;
  case ExprKind::Constant:
    return "constant";
  case ExprKind::Call:
    return "call @" + callee;
  case ExprKind::CallKernel:
    return "call_kernel @" + callee;
  case ExprKind::CallExtern:
    return "call_extern \"" + callee + "\"";
  case ExprKind::Tuple:
    return "tuple";
  case ExprKind::Get:
    return "get";
  case ExprKind::Alias:
    return "alias";
  }
  return "";
}

bool Value::isConstant() const {
  return definingBinding && definingBinding->kind == ExprKind::Constant && type.isTensor();
}

bool Function::isGroupedFunction() const {
  auto isSet = [&](llvm::StringRef name) {
    const Attr *attr = attrs.get(name);
    return attr && !(attr->kind == Attr::Bool && !attr->boolValue);
  };
  return isSet("primitive") || isSet("composite") || isSet("codegen");
}

void Function::forEachBinding(const std::function<void(Binding &)> &fn) {
  for (BodyItem &item : body) {
    if (item.binding) {
      fn(*item.binding);
      continue;
    }
    for (auto &binding : item.block->bindings)
      fn(*binding);
  }
}

void Function::forEachBinding(
    const std::function<void(const Binding &)> &fn) const {
  for (const BodyItem &item : body) {
    if (item.binding) {
      fn(*item.binding);
      continue;
    }
    for (const auto &binding : item.block->bindings)
      fn(*binding);
  }
}

Function *Module::lookupFunction(llvm::StringRef name) const {
  for (const auto &function : functions)
    if (function->name == name)
      return function.get();
  return nullptr;
}

Module::Module() = default;
Module::~Module() = default;

std::set<std::string> Module::calledKernels() const {
  std::set<std::string> called;
  for (const auto &function : functions)
    function->forEachBinding([&](const Binding &binding) {
      if (binding.kind == ExprKind::CallKernel)
        called.insert(binding.callee);
    });
  return called;
}

std::vector<std::string> Module::removeUncalledKernels(const std::set<std::string> *among) {
  std::set<std::string> called = calledKernels();
  std::vector<std::string> removed;
  for (auto it = kernels.begin(); it != kernels.end();) {
    if (called.count((*it)->name) || (among && !among->count((*it)->name))) {
      ++it;
      continue;
    }
    removed.push_back((*it)->name);
    it = kernels.erase(it);
  }
  return removed;
}

llvm::StringMap<Function *> Module::functionsByName() const {
  llvm::StringMap<Function *> index;
  for (const auto &function : functions)
    index.try_emplace(function->name, function.get());
  return index;
}

llvm::StringMap<Kernel *> Module::kernelsByName() const {
  llvm::StringMap<Kernel *> index;
  for (const auto &kernel : kernels)
    index.try_emplace(kernel->name, kernel.get());
  return index;
}

Kernel *Module::lookupKernel(llvm::StringRef name) const {
  for (const auto &kernel : kernels)
    if (kernel->name == name)
      return kernel.get();
  return nullptr;
}
