//===- Printer.cpp - FIR text output --------------------------------------===//
//
// The inverse of the parser: one function after another, separated by a
// blank line; two-space indentation per nesting level; every binding with
// its type. Literals print in the shortest form that reads back exactly.
//
//===----------------------------------------------------------------------===//
#include "fusec/Printer/Printer.h"
#include "fusec/IR/Kernel.h"
#include "fusec/Support/FileIO.h"

using namespace fusec;

static std::string printOperand(const Operand &operand) {
  return operand.isLiteral() ? operand.literal.str() : "%" + operand.value->name;
}

static std::string printOperandList(const std::vector<Operand> &operands) {
  std::string text = "(";
  for (size_t i = 0; i < operands.size(); ++i)
    text += (i ? ", " : "") + printOperand(operands[i]);
  return text + ")";
}

static std::string printConstant(const ConstantData &constant, const FilePathBase &paths) {
  switch (constant.form) {
  case ConstantData::Scalar:
    return constant.values.front().str();
  case ConstantData::Dense:
    return "dense<" + constant.values.front().str() + ">";
  case ConstantData::Splat:
    return "splat<" + constant.values.front().str() + ">";
  case ConstantData::Random:
    return "random<seed = " + std::to_string(constant.seed) + ">";
  case ConstantData::File:
    return "file<" +
           Attr::makeString(paths.to.empty() ? constant.path
                                             : rebasePath(constant.path, paths.from, paths.to))
               .str() +
           ">";
  }
  return "";
}

std::string fusec::printBinding(const Binding &binding, const FilePathBase &paths) {
  std::string text = "%" + binding.result->name + " = ";
  switch (binding.kind) {
  case ExprKind::Op:
    text += binding.callee + printOperandList(binding.operands);
    break;
  case ExprKind::Constant:
    text += "constant " + printConstant(*binding.constant, paths);
    break;
  case ExprKind::Call:
  case ExprKind::CallKernel:
    text += (binding.kind == ExprKind::Call ? "call @" : "call_kernel @") +
            binding.callee + printOperandList(binding.operands);
    break;
  case ExprKind::CallExtern:
    text += "call_extern " + Attr::makeString(binding.callee).str() +
            printOperandList(binding.operands);
    break;
  case ExprKind::Tuple:
    text += "tuple" + printOperandList(binding.operands);
    break;
  case ExprKind::Get:
    text += "get(" + printOperand(binding.operands.front()) + ", " +
            std::to_string(binding.tupleIndex) + ")";
    break;
  case ExprKind::Alias:
    text += printOperand(binding.operands.front());
    break;
  }
  if (!binding.attrs.empty())
    text += " " + binding.attrs.str();
  return text + " : " + binding.getType().str();
}

static void printFunction(const Function &function, llvm::raw_ostream &os,
                          const FilePathBase &paths) {
  os << "func @" << function.name << "(";
  for (size_t i = 0; i < function.params.size(); ++i)
    os << (i ? ", " : "") << "%" << function.params[i]->name << ": "
       << function.params[i]->type.str();
  os << ") -> " << function.returnType.str();
  if (!function.attrs.empty())
    os << " attributes " << function.attrs.str();
  os << " {\n";
  for (const BodyItem &item : function.body) {
    if (item.binding) {
      os << "  " << printBinding(*item.binding, paths) << "\n";
      continue;
    }
    os << "  dataflow {\n";
    for (const auto &binding : item.block->bindings)
      os << "    " << printBinding(*binding, paths) << "\n";
    if (!item.block->outputs.empty()) {
      os << "    output ";
      for (size_t i = 0; i < item.block->outputs.size(); ++i)
        os << (i ? ", " : "") << "%" << item.block->outputs[i]->name;
      os << "\n";
    }
    os << "  }\n";
  }
  os << "  return ";
  if (function.returnsTuple)
    os << printOperandList(function.returnValues);
  else
    os << printOperand(function.returnValues.front());
  os << "\n}\n";
}

void fusec::printModule(const Module &module, llvm::raw_ostream &os,
                        llvm::StringRef fileDirectory) {
  FilePathBase paths{module.sourceDirectory, fileDirectory};
  bool first = true;
  if (!module.name.empty()) {
    os << "module @" << module.name << "\n";
    first = false;
  }
  for (const auto &function : module.functions) {
    if (!first)
      os << "\n";
    printFunction(*function, os, paths);
    first = false;
  }
  for (const auto &kernel : module.kernels) {
    if (!first)
      os << "\n";
    os << printKernel(*kernel);
    first = false;
  }
}

std::string fusec::printModuleToString(const Module &module, llvm::StringRef fileDirectory) {
  std::string text;
  llvm::raw_string_ostream os(text);
  printModule(module, os, fileDirectory);
  return os.str();
}
