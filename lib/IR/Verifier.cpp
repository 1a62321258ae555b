//===- Verifier.cpp - Type inference and the structural verifier ----------===//
//
// One checker serves two callers:
//   - `inferTypes` (after parsing): computes every binding's type, checks it
//     against a written `: TYPE`, and stores it;
//   - `verifyModule` (after parsing and after every pass): re-derives every
//     type and requires it to equal the stored one, and re-checks what the
//     parser guaranteed by construction but a pass could break: operands
//     defined before use and in scope, unique names, dataflow outputs
//     defined in their block.
// Both check calls (arity, argument types, symbolic dims bound
// consistently), return types, that every symbolic dim is bound by a
// parameter, the types of the function attributes passes read (`primitive`
// a bool; `composite`, `codegen`, `global_symbol` strings; `num_input` an
// integer >= 0), and that the call graph has no cycle.
//
//===----------------------------------------------------------------------===//
#include "fusec/IR/IR.h"
#include "fusec/IR/Kernel.h"
#include "fusec/IR/Ops.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <map>

using namespace fusec;

namespace {

class Checker {
public:
  enum Mode { Infer, Verify };
  Checker(const Module &module, DiagEngine &diag, Mode mode, llvm::StringRef context)
      : module(module), functionsByName(module.functionsByName()),
        kernelsByName(module.kernelsByName()), diag(diag), mode(mode), context(context.str()) {}

  bool checkFunction(Function &function);
  bool checkCallGraph();

private:
  bool error(llvm::SMLoc loc, const llvm::Twine &message);
  std::optional<Type> inferBinding(const Binding &binding);
  std::optional<Type> inferCall(const Binding &binding);
  bool checkStructure(const Function &function);
  bool checkAttrs(const Function &function);
  bool checkSymbols(const Function &function);
  bool checkReturn(const Function &function);

  const Function *lookupFunction(llvm::StringRef name) const {
    return functionsByName.lookup(name);
  }
  const Kernel *lookupKernel(llvm::StringRef name) const { return kernelsByName.lookup(name); }

  const Module &module;
  // Calls are resolved by name once per binding: an index, not a scan of
  // the module each time (a model of thousands of layers calls thousands
  // of functions).
  llvm::StringMap<Function *> functionsByName;
  llvm::StringMap<Kernel *> kernelsByName;
  DiagEngine &diag;
  Mode mode;
  std::string context;
  const Function *currentFunction = nullptr;
};

} // namespace

bool Checker::error(llvm::SMLoc loc, const llvm::Twine &message) {
  if (mode == Verify && !context.empty()) {
    std::string where = currentFunction ? " in '@" + currentFunction->name + "'" : "";
    diag.error(loc, "IR verification failed " + context + where + ": " + message);
  } else {
    diag.error(loc, message);
  }
  return false;
}

/// Why `type` breaks the size limits of spec §9, or "".
static std::string checkTypeSize(const Type &type) {
  if (type.isTuple()) {
    for (const Type &field : type.getFields()) {
      std::string problem = checkTypeSize(field);
      if (!problem.empty())
        return problem;
    }
    return "";
  }
  int64_t count = 1;
  for (const Dim &dim : type.getShape()) {
    if (dim.isSymbolic())
      continue;
    if (dim.size > kMaxDimSize)
      return "dimension " + std::to_string(dim.size) +
             " exceeds the maximum size 2^40";
    if (__builtin_mul_overflow(count, dim.size, &count))
      return "more elements than fit in i64";
  }
  return "";
}

/// Binds the symbolic dims of `param` to the dims of `arg`.
static bool bindSymbols(const Type &param, const Type &arg,
                        std::map<std::string, Dim> &symbols,
                        std::string &problem) {
  if (param.isTuple() != arg.isTuple() ||
      (param.isTuple() && param.getFields().size() != arg.getFields().size())) {
    problem = "expects " + param.str() + ", got " + arg.str();
    return false;
  }
  if (param.isTuple()) {
    for (size_t i = 0; i < param.getFields().size(); ++i)
      if (!bindSymbols(param.getFields()[i], arg.getFields()[i], symbols, problem))
        return false;
    return true;
  }
  if (param.getDType() != arg.getDType() || param.getRank() != arg.getRank()) {
    problem = "expects " + param.str() + ", got " + arg.str();
    return false;
  }
  for (int64_t i = 0; i < param.getRank(); ++i) {
    const Dim &want = param.getShape()[i], &have = arg.getShape()[i];
    if (want.isStatic()) {
      if (want != have) {
        problem = "expects " + param.str() + ", got " + arg.str();
        return false;
      }
      continue;
    }
    auto [it, inserted] = symbols.emplace(want.symbol, have);
    if (!inserted && it->second != have) {
      problem = "binds '" + want.symbol + "' to " + have.str() +
                ", but it is already bound to " + it->second.str();
      return false;
    }
  }
  return true;
}

std::optional<Type> Checker::inferCall(const Binding &binding) {
  // `call @f` binds a function's parameters, `call_kernel @k` a kernel's
  // input buffers; both substitute the bound symbolic dims in the result.
  std::vector<std::pair<std::string, Type>> params;
  Type resultType;
  bool isKernel = binding.kind == ExprKind::CallKernel;
  if (isKernel) {
    const Kernel *kernel = lookupKernel(binding.callee);
    if (!kernel)
      return error(binding.calleeLoc,
                   "call_kernel refers to unknown kernel '@" + binding.callee + "'" +
                       (lookupFunction(binding.callee)
                            ? " ('@" + binding.callee + "' is a function: use call)"
                            : "")),
             std::nullopt;
    for (const KBuffer &buffer : kernel->inputs)
      params.push_back({buffer.name, buffer.type});
    resultType = kernel->getResultType();
  } else {
    const Function *callee = lookupFunction(binding.callee);
    if (!callee)
      return error(binding.calleeLoc,
                   "call to undefined function '@" + binding.callee + "'" +
                       (lookupKernel(binding.callee)
                            ? " ('@" + binding.callee + "' is a kernel: use call_kernel)"
                            : "")),
             std::nullopt;
    for (const auto &param : callee->params)
      params.push_back({param->name, param->type});
    resultType = callee->returnType;
  }
  if (params.size() != binding.operands.size())
    return error(binding.calleeLoc,
                 "'@" + binding.callee + "' takes " +
                     std::to_string(params.size()) + " argument(s), but " +
                     std::to_string(binding.operands.size()) + " were given"),
           std::nullopt;
  std::map<std::string, Dim> symbols;
  for (size_t i = 0; i < binding.operands.size(); ++i) {
    std::string problem;
    if (!bindSymbols(params[i].second, binding.operands[i].value->type, symbols,
                     problem))
      return error(binding.operands[i].loc,
                   "argument " + std::to_string(i) + " of '" +
                       binding.headName() + "': " +
                       (isKernel ? "buffer '%" : "parameter '%") +
                       params[i].first + "' " + problem),
             std::nullopt;
  }
  return resultType.withDims(symbols);
}

std::optional<Type> Checker::inferBinding(const Binding &binding) {
  bool needsValues = binding.kind != ExprKind::Op &&
                     binding.kind != ExprKind::Constant;
  for (const Operand &operand : binding.operands)
    if (needsValues && operand.isLiteral())
      return error(operand.loc, "'" + binding.headName() +
                                    "' does not accept literal operands; bind "
                                    "a 'constant' instead"),
             std::nullopt;
  // Types the source (or, when verifying, the IR) states for forms that
  // nothing can infer.
  const std::optional<Type> &declared =
      mode == Infer ? binding.writtenType
                    : std::optional<Type>(binding.result->type);
  switch (binding.kind) {
  case ExprKind::Op:
    return inferOpType(binding, diag);
  case ExprKind::Constant:
  case ExprKind::CallExtern:
    if (!declared)
      return error(binding.loc, "'" + binding.headName() +
                                    "' needs its result type written as ': TYPE'"),
             std::nullopt;
    return declared;
  case ExprKind::Call:
  case ExprKind::CallKernel:
    return inferCall(binding);
  case ExprKind::Tuple: {
    std::vector<Type> fields;
    for (const Operand &operand : binding.operands)
      fields.push_back(operand.value->type);
    return Type::tuple(fields);
  }
  case ExprKind::Get: {
    const Type &tuple = binding.operands.front().value->type;
    if (!tuple.isTuple())
      return error(binding.operands.front().loc,
                   "'get' needs a tuple, got " + tuple.str()),
             std::nullopt;
    if (binding.tupleIndex >= int64_t(tuple.getFields().size()))
      return error(binding.tupleIndexLoc.isValid() ? binding.tupleIndexLoc
                                                   : binding.loc,
                   "tuple index " +
                                    std::to_string(binding.tupleIndex) +
                                    " is out of range for " + tuple.str()),
             std::nullopt;
    return tuple.getFields()[binding.tupleIndex];
  }
  case ExprKind::Alias:
    return binding.operands.front().value->type;
  }
  return std::nullopt;
}

/// Whether `name` reads back as a `%name` (spec §9): decimal digits only,
/// or an identifier start followed by letters, digits, `_`, `.`, `$`, `-`.
static bool isValueName(llvm::StringRef name) {
  if (name.empty())
    return false;
  if (llvm::all_of(name, [](char c) { return c >= '0' && c <= '9'; }))
    return true;
  auto start = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  return start(name.front()) && llvm::all_of(name, [&](char c) {
           return start(c) || (c >= '0' && c <= '9') || c == '.' || c == '$' || c == '-';
         });
}

/// Scoping and SSA, as the parser builds them; a pass may have broken them.
bool Checker::checkStructure(const Function &function) {
  llvm::DenseSet<const Value *> visible;
  llvm::StringSet<> names;
  for (const auto &param : function.params) {
    if (!isValueName(param->name))
      return error(param->loc, "'%" + param->name + "' is not a value name that parses back");
    if (!names.insert(param->name).second)
      return error(param->loc, "redefinition of value '%" + param->name + "'");
    visible.insert(param.get());
  }
  auto checkBinding = [&](const Binding &binding) {
    if (!binding.result || binding.result->definingBinding != &binding)
      return error(binding.loc, "binding has no result value");
    for (const Operand &operand : binding.operands)
      if (!operand.isLiteral() && !visible.count(operand.value))
        return error(operand.loc, "'%" + operand.value->name +
                                      "' is used before its definition or "
                                      "out of its scope by '%" +
                                      binding.result->name + "'");
    if (!isValueName(binding.result->name))
      return error(binding.result->loc, "'%" + binding.result->name +
                                            "' is not a value name that parses back");
    if (!names.insert(binding.result->name).second)
      return error(binding.result->loc,
                   "redefinition of value '%" + binding.result->name + "'");
    visible.insert(binding.result.get());
    return true;
  };
  for (const BodyItem &item : function.body) {
    if (item.binding) {
      if (!checkBinding(*item.binding))
        return false;
      continue;
    }
    llvm::DenseSet<const Value *> blockValues;
    for (const auto &binding : item.block->bindings) {
      if (!checkBinding(*binding))
        return false;
      blockValues.insert(binding->getResult());
    }
    for (const Value *output : item.block->outputs)
      if (!blockValues.count(output))
        return error(item.block->loc, "dataflow output '%" + output->name +
                                          "' is not defined in its block");
    llvm::DenseSet<const Value *> outputs(item.block->outputs.begin(),
                                          item.block->outputs.end());
    for (const Value *value : blockValues)
      if (!outputs.count(value))
        visible.erase(value);
  }
  if (function.returnValues.empty() && !function.returnsTuple)
    return error(function.loc, "function '@" + function.name + "' has no return");
  for (const Operand &operand : function.returnValues)
    if (operand.isLiteral() || !visible.count(operand.value))
      return error(operand.loc, "returned value is not defined in the "
                                "function's scope");
  return true;
}

static void collectSymbols(const Type &type, std::vector<std::string> &out) {
  if (type.isTuple()) {
    for (const Type &field : type.getFields())
      collectSymbols(field, out);
    return;
  }
  for (const Dim &dim : type.getShape())
    if (dim.isSymbolic())
      out.push_back(dim.symbol);
}

bool Checker::checkSymbols(const Function &function) {
  std::vector<std::string> bound;
  for (const auto &param : function.params)
    collectSymbols(param->type, bound);
  llvm::StringSet<> boundSet;
  for (const std::string &symbol : bound)
    boundSet.insert(symbol);
  auto checkType = [&](const Type &type, llvm::SMLoc loc) {
    std::vector<std::string> used;
    collectSymbols(type, used);
    for (const std::string &symbol : used)
      if (!boundSet.count(symbol))
        return error(loc, "symbolic dim '" + symbol +
                              "' is not bound by any parameter of '@" +
                              function.name + "'");
    return true;
  };
  if (!checkType(function.returnType, function.returnTypeLoc))
    return false;
  bool ok = true;
  function.forEachBinding([&](const Binding &binding) {
    if (ok)
      ok = checkType(binding.getType(),
                     binding.typeLoc.isValid() ? binding.typeLoc : binding.loc);
  });
  // A kernel takes its symbolic dims from tensors: a dim that an op
  // introduces (broadcast_to) reaches its kernel through a tensor parameter.
  function.forEachBinding([&](const Binding &binding) {
    if (!ok || binding.kind != ExprKind::Op)
      return;
    std::vector<std::string> unbound;
    dimCarriers(function, binding, &unbound);
    if (!unbound.empty())
      ok = error(binding.loc, "'" + binding.callee + "' introduces symbolic dim '" +
                                  unbound.front() + "', which only a tuple parameter of '@" +
                                  function.name +
                                  "' binds; a kernel takes its dims from tensors, so "
                                  "bind it with a tensor parameter");
  });
  return ok;
}

bool Checker::checkReturn(const Function &function) {
  Type returned;
  if (function.returnsTuple) {
    std::vector<Type> fields;
    for (const Operand &operand : function.returnValues)
      fields.push_back(operand.value->type);
    returned = Type::tuple(fields);
  } else {
    returned = function.returnValues.front().value->type;
  }
  if (returned != function.returnType)
    return error(function.returnLoc,
                 "'@" + function.name + "' declares return type " +
                     function.returnType.str() + " but returns " +
                     returned.str());
  return true;
}

bool Checker::checkAttrs(const Function &function) {
  // Passes test these attributes for presence (isGroupedFunction) and read
  // their text, so a wrongly typed one is not harmless: `primitive = 1`
  // would silently keep fuse-ops out of the function.
  for (const Attrs::Entry &entry : function.attrs.getEntries()) {
    llvm::SMLoc loc = entry.value.loc.isValid() ? entry.value.loc : entry.loc;
    bool isString = entry.name == "composite" || entry.name == "codegen" ||
                    entry.name == "global_symbol";
    if (entry.name == "primitive" && entry.value.kind != Attr::Bool)
      return error(loc, "attribute 'primitive' of '@" + function.name +
                            "' must be 'true' or 'false', got " + entry.value.str());
    if (entry.name == "num_input" && (entry.value.kind != Attr::Int || entry.value.intValue < 0))
      return error(loc, "attribute 'num_input' of '@" + function.name +
                            "' must be a non-negative integer, got " + entry.value.str());
    if (isString && entry.value.kind != Attr::String)
      return error(loc, "attribute '" + entry.name + "' of '@" + function.name +
                            "' must be a string, got " + entry.value.str());
  }
  return true;
}

bool Checker::checkFunction(Function &function) {
  currentFunction = &function;
  if (mode == Verify && !checkStructure(function))
    return false;
  if (!checkAttrs(function))
    return false;
  bool ok = true;
  function.forEachBinding([&](Binding &binding) {
    if (!ok)
      return;
    if (mode == Infer && binding.kind == ExprKind::Op)
      normalizeOpAttrs(binding);
    std::optional<Type> inferred = inferBinding(binding);
    if (!inferred) {
      ok = false;
      return;
    }
    std::string tooLarge = checkTypeSize(*inferred);
    if (!tooLarge.empty()) {
      ok = error(binding.calleeLoc.isValid() ? binding.calleeLoc : binding.loc,
                 "'" + binding.headName() + "' produces " + inferred->str() +
                     ": " + tooLarge);
      return;
    }
    if (mode == Infer) {
      if (binding.writtenType && *binding.writtenType != *inferred) {
        ok = error(binding.typeLoc, "type mismatch: '" + binding.headName() +
                                        "' produces " + inferred->str() +
                                        ", but the binding is written " +
                                        binding.writtenType->str());
        return;
      }
      binding.result->type = *inferred;
    } else if (binding.getType() != *inferred) {
      ok = error(binding.loc, "'%" + binding.result->name + "' has type " +
                                  binding.getType().str() + ", but '" +
                                  binding.headName() + "' produces " +
                                  inferred->str());
    }
  });
  return ok && checkReturn(function) && checkSymbols(function);
}

bool Checker::checkCallGraph() {
  // Depth-first search with an explicit path, reporting the first cycle.
  enum State { Unvisited, OnPath, Done };
  llvm::DenseMap<const Function *, State> state;
  std::vector<std::string> path;
  std::function<bool(const Function &)> visit = [&](const Function &function) {
    state[&function] = OnPath;
    path.push_back("@" + function.name);
    bool ok = true;
    function.forEachBinding([&](const Binding &binding) {
      if (!ok || binding.kind != ExprKind::Call)
        return;
      const Function *callee = lookupFunction(binding.callee);
      if (!callee)
        return;
      if (state[callee] == OnPath) {
        // Only the cycle: from the callee's place on the path to here.
        std::string cycle;
        auto start = std::find(path.begin(), path.end(), "@" + callee->name);
        for (auto it = start; it != path.end(); ++it)
          cycle += *it + " -> ";
        ok = error(binding.calleeLoc, "recursive call (" + cycle + "@" +
                                          callee->name +
                                          "); FIR has no control flow to end it");
        return;
      }
      if (state[callee] == Unvisited)
        ok = visit(*callee);
    });
    path.pop_back();
    state[&function] = Done;
    return ok;
  };
  for (const auto &function : module.functions)
    if (state[function.get()] == Unvisited && !visit(*function))
      return false;
  return true;
}

bool fusec::inferTypes(Module &module, DiagEngine &diag) {
  Checker checker(module, diag, Checker::Infer, {});
  for (auto &function : module.functions)
    if (!checker.checkFunction(*function))
      return false;
  return checker.checkCallGraph();
}

bool fusec::verifyModule(const Module &module, DiagEngine &diag,
                         llvm::StringRef context) {
  std::string kernelContext =
      context.empty() ? "" : context.str();
  for (const auto &kernel : module.kernels)
    if (!verifyKernel(*kernel, diag, kernelContext))
      return false;
  Checker checker(module, diag, Checker::Verify, context);
  for (const auto &function : module.functions)
    if (!checker.checkFunction(const_cast<Function &>(*function)))
      return false;
  return checker.checkCallGraph();
}
