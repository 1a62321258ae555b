//===- Pattern.cpp - Dataflow pattern helpers ------------------------------===//
//
// Builders of the pattern C++ API and the library-dispatch predicates that
// several passes share.
//
//===----------------------------------------------------------------------===//
#include "fusec/IR/Pattern.h"

#include "llvm/ADT/StringSet.h"

using namespace fusec;

std::string DataflowPattern::codegenPrefix() const {
  return llvm::StringRef(name).split('.').first.str();
}

int DataflowPattern::lookup(llvm::StringRef nodeName) const {
  for (size_t n = 0; n < nodes.size(); ++n)
    if (nodes[n].kind != PatternNode::Literal && nodes[n].name == nodeName)
      return int(n);
  return -1;
}

int DataflowPattern::addWildcard(llvm::StringRef nodeName) {
  PatternNode node;
  node.kind = PatternNode::Wildcard;
  node.name = nodeName.str();
  nodes.push_back(std::move(node));
  return int(nodes.size()) - 1;
}

int DataflowPattern::addOp(llvm::StringRef nodeName, std::vector<std::string> alternatives,
                           std::vector<int> operands, Attrs attrs, bool variadic) {
  PatternNode node;
  node.kind = PatternNode::Op;
  node.name = nodeName.str();
  node.opNames = std::move(alternatives);
  node.operands = std::move(operands);
  node.attrs = std::move(attrs);
  node.variadic = variadic;
  nodes.push_back(std::move(node));
  root = int(nodes.size()) - 1;
  return root;
}

int DataflowPattern::addGet(llvm::StringRef nodeName, int tuple, int64_t index) {
  PatternNode node;
  node.kind = PatternNode::Get;
  node.name = nodeName.str();
  node.operands = {tuple};
  node.tupleIndex = index;
  nodes.push_back(std::move(node));
  return int(nodes.size()) - 1;
}

bool fusec::isLibraryCodegen(llvm::StringRef codegen) { return codegen == "cublaslt"; }

llvm::StringSet<> fusec::libraryBoundFunctions(const Module &module) {
  llvm::StringSet<> bound;
  llvm::StringMap<Function *> byName = module.functionsByName();
  std::vector<const Function *> work;
  for (const auto &function : module.functions) {
    const Attr *codegen = function->attrs.get("codegen");
    if (codegen && codegen->kind == Attr::String && isLibraryCodegen(codegen->text))
      work.push_back(function.get());
  }
  while (!work.empty()) {
    const Function *function = work.back();
    work.pop_back();
    if (!bound.insert(function->name).second)
      continue;
    function->forEachBinding([&](const Binding &binding) {
      if (binding.kind == ExprKind::Call)
        if (const Function *callee = byName.lookup(binding.callee))
          work.push_back(callee);
    });
  }
  return bound;
}
