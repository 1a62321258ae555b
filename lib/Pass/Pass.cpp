//===- Pass.cpp - Pass options and the pass registry ----------------------===//
//
// Options are declared by each pass in its constructor with a kind, default
// and description; pipeline text sets them by name. Values are validated
// here so that a bad option is a usage error before anything runs.
//
//===----------------------------------------------------------------------===//
#include "fusec/Pass/Pass.h"

#include "llvm/ADT/StringExtras.h"

using namespace fusec;

Pass::Option &Pass::declareOption(llvm::StringRef optionName, OptionKind kind,
                                  llvm::StringRef defaultValue,
                                  llvm::StringRef description) {
  Option option;
  option.name = optionName.str();
  option.kind = kind;
  option.defaultValue = defaultValue.str();
  option.description = description.str();
  option.value = defaultValue.str();
  options.push_back(std::move(option));
  return options.back();
}

const Pass::Option *Pass::findOption(llvm::StringRef optionName) const {
  for (const Option &option : options)
    if (option.name == optionName)
      return &option;
  return nullptr;
}

std::string Pass::setOption(llvm::StringRef key, llvm::StringRef value) {
  Option *option = const_cast<Option *>(findOption(key));
  if (!option) {
    std::string known;
    for (const Option &candidate : options)
      known += (known.empty() ? "" : ", ") + candidate.name;
    return "unknown option '" + key.str() + "' for pass '" + name + "'" +
           (known.empty() ? " (it has no options)" : "; its options are: " + known);
  }
  std::string what = "option '" + key.str() + "' of pass '" + name + "'";
  switch (option->kind) {
  case OptionKind::Int: {
    int64_t parsed;
    if (value.getAsInteger(10, parsed))
      return what + " expects an integer, got '" + value.str() + "'";
    if (parsed < option->minimum)
      return what + " must be at least " + std::to_string(option->minimum) + ", got " +
             std::to_string(parsed);
    if (parsed > option->maximum)
      return what + " must be at most " + std::to_string(option->maximum) + ", got " +
             std::to_string(parsed);
    option->value = std::to_string(parsed);
    return "";
  }
  case OptionKind::Bool:
    if (value != "true" && value != "false")
      return what + " expects 'true' or 'false', got '" + value.str() + "'";
    option->value = value.str();
    return "";
  case OptionKind::String:
    if (!option->choices.empty() && !llvm::is_contained(option->choices, value))
      return what + " expects " + llvm::join(option->choices, " or ") + ", got '" +
             value.str() + "'";
    if (option->check) {
      std::string problem = option->check(value);
      if (!problem.empty())
        return what + ": " + problem;
    }
    option->value = value.str();
    return "";
  }
  return "";
}

std::string fusec::quotePipelineValue(llvm::StringRef value) {
  // What ends an unquoted value, or would be read as the start of a quoted
  // one; braces too, since an unbalanced one ends the pass's options.
  bool plain = !value.startswith("\"") &&
               value.find_first_of(",{}\"\\ \t\n\r\v\f") == llvm::StringRef::npos;
  if (plain)
    return value.str();
  std::string quoted = "\"";
  for (char c : value) {
    if (c == '"' || c == '\\')
      quoted += '\\';
    quoted += c;
  }
  return quoted + "\"";
}

std::string Pass::getOptionsString() const {
  if (options.empty())
    return "";
  std::string text = "{";
  for (size_t i = 0; i < options.size(); ++i)
    text += (i ? "," : "") + options[i].name + "=" + quotePipelineValue(options[i].value);
  return text + "}";
}

int64_t Pass::getIntOption(llvm::StringRef optionName) const {
  int64_t value = 0;
  llvm::StringRef(findOption(optionName)->value).getAsInteger(10, value);
  return value;
}

bool Pass::getBoolOption(llvm::StringRef optionName) const {
  return findOption(optionName)->value == "true";
}

std::string Pass::getStringOption(llvm::StringRef optionName) const {
  return findOption(optionName)->value;
}

//===----------------------------------------------------------------------===//
// Registry
//===----------------------------------------------------------------------===//

static std::vector<PassInfo> &passRegistry() {
  static std::vector<PassInfo> registry;
  return registry;
}

void fusec::registerPass(PassInfo info) {
  if (lookupPassInfo(info.name))
    return;
  passRegistry().push_back(std::move(info));
}

llvm::ArrayRef<PassInfo> fusec::getRegisteredPasses() { return passRegistry(); }

const PassInfo *fusec::lookupPassInfo(llvm::StringRef name) {
  for (const PassInfo &info : passRegistry())
    if (info.name == name)
      return &info;
  return nullptr;
}

std::string fusec::getNamedPipeline(llvm::StringRef name, llvm::StringRef costModel,
                                    llvm::StringRef target, bool tensorCores) {
  // Spec §7. The order of -O1/-O2 is TVM's: patterns claim library
  // subgraphs first, then what remains is legalized, classified and fused.
  // A GPU without mma.sync m16n8k16 (before sm_80) gets SIMT tiles.
  std::string schedule = tensorCores ? "schedule" : "schedule{tensor-cores=false}";
  if (name == "O0")
    return "legalize," + schedule + ",lower";
  if (name == "O1")
    return "legalize,annotate-pattern,fuse-ops,fuse-tir," + schedule + ",lower";
  // -O2 first gives matmuls to cuBLASLt (every supported arch has it) with
  // the shipped patterns/cublaslt.pat, fuses the rest as -O1 does plus
  // cost-aware prologues, and schedules with the cost model of the target;
  // without a cost model it is TVM's decisions end to end. The target may be
  // a path with spaces or commas, hence the quoting.
  if (name == "O2") {
    std::string quotedTarget = quotePipelineValue(target);
    if (costModel == "none")
      return "fuse-by-pattern{patterns=@cublaslt,bind-constants=true,annotate-codegen=true},"
             "legalize,annotate-pattern,fuse-ops,fuse-tir," + schedule + ",lower";
    std::string options = "cost-model=" + costModel.str() + ",target=" + quotedTarget +
                          (tensorCores ? "" : ",tensor-cores=false");
    std::string fuseByPattern = "fuse-by-pattern{patterns=@cublaslt,bind-constants=true,"
                                "annotate-codegen=true,prologue-aware=true,target=" +
                                quotedTarget + "}";
    std::string fuseOps = "fuse-ops{prologue=true,recompute-veto=true,merge-reductions=true,"
                          "target=" +
                          quotedTarget + "}";
    return fuseByPattern + ",legalize,annotate-pattern," + fuseOps + ",fuse-tir,schedule{" +
           options + "},lower";
  }
  return "";
}
