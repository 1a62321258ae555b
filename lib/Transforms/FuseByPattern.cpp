//===- FuseByPattern.cpp - Composite functions from dataflow patterns -----===//
//
// Contract (spec §6; TVM's FuseOpsByPattern, tvm-fusion-rules.md §9): in
// every graph function without `primitive`, `composite` or `codegen`, each
// match of a pattern inside a dataflow block becomes
// `func @fused_<ops> attributes {composite = "<pattern>", primitive = true}`
// called where the match was; with `annotate-codegen`, the call goes through
// `func @<inner>_<prefix> attributes {codegen = "<prefix>",
// global_symbol = "<inner>_<prefix>"}`. Runs on graph ops, before legalize.
//
// Algorithm, for each pattern in order (a complete pass each, so earlier
// patterns have priority: their calls no longer match ops):
//   1. For each op binding of a block, in order, match the pattern rooted
//      there (lib/Analysis/PatternMatcher.cpp); check the `where`
//      constraints, then the C++ check callback.
//   2. Overlap: if a matched binding other than the root already belongs to
//      a group of several bindings, the match is kept only if it contains
//      that whole group (subsumption); the groups are then merged, which
//      yields maximal matches. Otherwise the match is dropped.
//   3. Each group becomes a function (GroupOutliner, shared with fuse-ops):
//      wildcard inputs are parameters, an intermediate used outside is an
//      extra output, constants are copied in when `bind-constants`. Groups
//      that depend on each other in a cycle are an error, as in TVM.
// Remarks and the fusion report give each match and each rejected
// candidate with its reason. With prologue-aware (not TVM; -O2), a library
// match is rejected when an operand's elementwise producer would rather
// fuse into fusec's own matmul as a prologue (FusePrologues.cpp's estimate).
//
//===----------------------------------------------------------------------===//
#include "FusePrologues.h"
#include "GroupOutliner.h"
#include "fusec/Analysis/Analysis.h"
#include "fusec/Parser/Parser.h"
#include "fusec/Support/FileIO.h"
#include "fusec/Transforms/Passes.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MemoryBuffer.h"

#include <map>

#define DEBUG_TYPE "fuse-by-pattern"

using namespace fusec;

FUSEC_STATISTIC(NumComposites, "num-composites", "Number of pattern matches turned into composites");
FUSEC_STATISTIC(NumRejected, "num-rejected", "Number of matches rejected by a constraint, check or overlap");

namespace fusec {
const char *getCublasLtPatterns(); // generated from patterns/cublaslt.pat
}

namespace {
class FuseByPattern final : public Pass {
public:
  explicit FuseByPattern(std::vector<DataflowPattern> given = {})
      : Pass("fuse-by-pattern"), given(std::move(given)) {
    declareOption("patterns", OptionKind::String, "",
                  "Pattern file (.pat); @cublaslt names the shipped patterns/cublaslt.pat")
        .check = [](llvm::StringRef value) -> std::string {
      // A path is read when the pass runs (unreadable: an input error), but
      // the shipped names are known now.
      if (value.startswith("@") && value != "@cublaslt")
        return "no shipped pattern file '" + value.str() + "' (shipped: @cublaslt)";
      return "";
    };
    declareOption("bind-constants", OptionKind::Bool, "true",
                  "Copy constants into the composite instead of passing them");
    declareOption("annotate-codegen", OptionKind::Bool, "false",
                  "Call each composite through a function with codegen = \"<prefix>\"");
    declareOption("prologue-aware", OptionKind::Bool, "false",
                  "Leave a library matmul to fusec when an elementwise producer of an "
                  "operand fuses into it as a prologue (cost model; not TVM)");
    declareOption("target", OptionKind::String, "sm_90",
                  "The prologue-aware cost model's GPU: sm_75, sm_80, sm_86, sm_89, sm_90, h200 or a file")
        .check = checkTargetSpec;
  }
  bool run(Module &module, PassContext &context) override;

private:
  bool loadPatterns(PassContext &context, std::vector<DataflowPattern> &patterns);
  bool applyToBlock(const DataflowPattern &pattern, Module &module, Function &function,
                    DataflowBlock &block, PassContext &context);
  void annotateCodegen(Module &module, const std::vector<Function *> &entries);

  std::vector<DataflowPattern> given;
  std::optional<TargetDesc> prologueTarget;
  OutlinedFunctionTable functionTable;
};
} // namespace

bool FuseByPattern::loadPatterns(PassContext &context, std::vector<DataflowPattern> &patterns) {
  std::string path = getStringOption("patterns");
  if (path.empty())
    return true;
  llvm::SourceMgr &sourceMgr = context.diag.getSourceMgr();
  std::unique_ptr<llvm::MemoryBuffer> buffer;
  if (path == "@cublaslt") {
    buffer = llvm::MemoryBuffer::getMemBufferCopy(getCublasLtPatterns(), "patterns/cublaslt.pat");
  } else if (llvm::StringRef(path).startswith("@")) {
    context.diag.error({}, "no shipped pattern file '" + path + "' (shipped: @cublaslt)");
    return false;
  } else {
    std::string error;
    buffer = readFile(path, error);
    if (!buffer) {
      context.diag.error({}, "cannot read pattern file '" + path + "': " + error);
      return false;
    }
  }
  unsigned id = sourceMgr.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
  return parsePatterns(sourceMgr, id, context.diag, patterns);
}

/// Why a library match is left to fusec's own kernel: a matmul whose
/// contraction is statically empty (K = 0), a case cuBLASLt does not
/// document and the launcher refuses (docs/launcher.md); fusec's kernel
/// writes the zeros (and the bias, the activation of zeros). "" otherwise.
static std::string libraryEmptyContractionVeto(const PatternMatch &match) {
  for (const Binding *member : match.members) {
    if (member->kind != ExprKind::Op || member->callee != "matmul" || member->operands.empty() ||
        !member->operands[0].value)
      continue;
    const Type &lhs = member->operands[0].value->type;
    if (!lhs.isTensor() || lhs.getRank() == 0)
      continue;
    const Dim &k = lhs.getShape().back();
    if (k.isStatic() && k.size == 0)
      return "an empty contraction (K = 0), which cuBLASLt does not document; fusec's own "
             "kernel computes it";
  }
  return "";
}

bool FuseByPattern::applyToBlock(const DataflowPattern &pattern, Module &module,
                                 Function &function, DataflowBlock &block,
                                 PassContext &context) {
  // The function's uses, gathered at the first match: most patterns match
  // nowhere in most blocks.
  std::optional<UseMap> usesOnce;
  auto getUses = [&]() -> const UseMap & {
    if (!usesOnce)
      usesOnce = collectUses(function);
    return *usesOnce;
  };
  // Groups as sets of bindings; groupOf maps a binding to its group.
  std::vector<std::vector<const Binding *>> groups;
  llvm::DenseMap<const Binding *, int> groupOf;
  auto decide = [&](const std::string &root, llvm::StringRef action, const std::string &reason,
                    std::vector<std::pair<std::string, double>> costs = {}) {
    if (context.remarks)
      *context.remarks << "remark: fuse-by-pattern: @" << function.name << ": " << root << " "
                       << (action == "extra_output"        ? "keeps an extra output in"
                           : action == "separate_prologue" ? "considered a prologue for"
                                                           : action)
                       << " "
                       << pattern.name << (reason.empty() ? "" : ": " + reason) << "\n";
    if (context.report)
      context.report->decisions.push_back({"fuse-by-pattern", function.name, action.str(), reason,
                                           {{"pattern", pattern.name}, {"root", root}},
                                           costs});
  };
  auto names = [](const std::vector<const Binding *> &bindings) {
    std::vector<std::string> list;
    for (const Binding *binding : bindings)
      list.push_back("%" + binding->getResult()->name);
    return list;
  };
  BlockIndex blockIndex(block);
  for (const auto &binding : block.bindings) {
    if (binding->kind != ExprKind::Op)
      continue;
    std::optional<PatternMatch> match = matchPattern(pattern, *binding, blockIndex);
    if (!match)
      continue;
    const UseMap &uses = getUses();
    std::string failure = checkPatternConstraints(pattern, *match, uses);
    std::string separate;
    PrologueCost prologue;
    prologue.rereads = 0;
    if (failure.empty() && isLibraryCodegen(pattern.codegenPrefix()))
      failure = libraryEmptyContractionVeto(*match);
    if (failure.empty() && prologueTarget && isLibraryCodegen(pattern.codegenPrefix()))
      failure = libraryPrologueVeto(*match, blockIndex, uses, *prologueTarget, separate, prologue);
    // The prologue estimate behind a decision, in the report's `cost`.
    auto prologueCosts = [&](bool fused) -> std::vector<std::pair<std::string, double>> {
      if (!prologue.rereads)
        return {};
      return {{"fused_us", prologue.fusedUs},
              {"separate_us", prologue.separateUs},
              {"chosen_us", fused ? prologue.fusedUs : prologue.separateUs}};
    };
    if (!separate.empty())
      decide("%" + binding->getResult()->name, "separate_prologue", separate,
             prologueCosts(false));
    if (failure.empty() && pattern.check) {
      PatternCheckContext check;
      check.root = binding.get();
      for (size_t n = 0; n < pattern.nodes.size(); ++n)
        if (match->values[n])
          check.annotated[pattern.nodes[n].name] = match->values[n];
      check.matchedBindings = match->members;
      check.uses = &uses;
      if (!pattern.check(check))
        failure = "the pattern's check rejected it";
    }
    llvm::DenseSet<const Binding *> matched(match->members.begin(), match->members.end());
    std::vector<int> absorbed;
    for (const Binding *member : match->members) {
      auto found = groupOf.find(member);
      if (!failure.empty() || member == binding.get() || found == groupOf.end())
        continue;
      const std::vector<const Binding *> &earlier = groups[found->second];
      bool subsumed = llvm::all_of(earlier, [&](const Binding *b) { return matched.count(b); });
      if (earlier.size() > 1 && !subsumed)
        failure = "it overlaps the earlier match {" + llvm::join(names(earlier), ", ") +
                  "} without containing it";
      else if (!llvm::is_contained(absorbed, found->second))
        absorbed.push_back(found->second);
    }
    if (!failure.empty()) {
      ++NumRejected;
      decide("%" + binding->getResult()->name, "rejected", failure,
             prologue.rereads && prologue.fuse() ? prologueCosts(true)
                                                 : std::vector<std::pair<std::string, double>>());
      continue;
    }
    // Every absorbed group lies inside the match (subsumed, or the one
    // binding it shares), so the merged group is the match, in block order.
    int id = int(groups.size());
    for (int old : absorbed)
      groups[old].clear();
    for (const Binding *member : match->members)
      groupOf[member] = id;
    groups.push_back(match->members);
    decide("%" + binding->getResult()->name, "matched",
           "{" + llvm::join(names(groups[id]), ", ") + "}");
  }

  // No match: the block stays as it is (the outliner's walks of the
  // function, once per pattern and block, are most of a deep model's time).
  if (llvm::all_of(groups, [](const auto &group) { return group.empty(); }))
    return true;
  GroupOutliner outliner(module, function, block, functionTable);
  Attrs attrs;
  attrs.set("composite", Attr::makeString(pattern.name));
  for (const std::vector<const Binding *> &group : groups) {
    if (group.empty())
      continue;
    std::vector<Binding *> members;
    for (const Binding *member : group)
      members.push_back(const_cast<Binding *>(member));
    std::vector<std::string> memberNames = names(group);
    const Value *rootValue = group.back()->getResult(); // outlining moves it to the call
    OutsideFieldReads fields = separateOutsideFieldReads(members);
    if (members.empty())
      continue;
    GroupOutliner::Result outlined =
        outliner.outline(members, attrs, getBoolOption("bind-constants"), fields);
    if (outlined.function.empty()) {
      logWarning("fuse-by-pattern: dropping the dead match {" + llvm::join(memberNames, ", ") +
                 "} of " + pattern.name + " in @" + function.name + "; run dce first");
      if (context.report)
        for (const std::string &name : memberNames)
          context.report->dead.push_back({function.name, name});
      continue;
    }
    ++NumComposites;
    // TVM keeps a match whose intermediate is used outside; say so.
    for (const Value *output : outlined.outputs)
      if (output != rootValue)
        decide(memberNames.back(), "extra_output",
               "%" + output->name + " is also used outside the match, so @" +
                   outlined.function + " returns it too (single_use(%" + output->name +
                   ") would reject the match)");
    if (context.report)
      context.report->groups.push_back(
          {outlined.function, "composite", "", pattern.name, memberNames, {}, {}, function.name, {}});
    FUSEC_DEBUG("composite " + outlined.function + " (" + pattern.name +
                "): " + llvm::join(memberNames, ", "));
  }
  std::string cycle;
  if (!outliner.finish(cycle)) {
    const Binding *at = nullptr;
    for (const auto &b : block.bindings)
      if ("%" + b->getResult()->name == cycle)
        at = b.get();
    context.diag.error(at ? at->loc : function.loc,
                       "A cyclic dependency detected: the matches of pattern '" + pattern.name +
                           "' in @" + function.name + " and " + cycle +
                           " depend on each other; add a constraint (e.g. single_use) or "
                           "a dataflow block boundary");
    return false;
  }
  return true;
}

/// Wraps each composite an entry calls in `func @<name>_<prefix>` with the
/// codegen attributes (TVM's CompositeFunctionAnnotator) and calls that
/// instead.
void FuseByPattern::annotateCodegen(Module &module, const std::vector<Function *> &entries) {
  // Every composite an entry calls, whichever run made it (TVM's
  // CompositeFunctionAnnotator looks at the calls, not at the patterns).
  llvm::StringSet<> called;
  for (Function *entry : entries)
    entry->forEachBinding([&](Binding &binding) {
      if (binding.kind == ExprKind::Call)
        called.insert(binding.callee);
    });
  std::map<std::string, std::string> outerOf;
  std::vector<std::unique_ptr<Function>> added;
  llvm::StringSet<> taken; // a lookup per candidate name, not a scan of the module
  for (const auto &function : module.functions)
    taken.insert(function->name);
  for (const auto &function : module.functions) {
    const Attr *composite = function->attrs.get("composite");
    if (!called.count(function->name) || !composite || composite->kind != Attr::String ||
        function->attrs.get("codegen"))
      continue;
    std::string prefix = llvm::StringRef(composite->text).split('.').first.str();
    auto outer = std::make_unique<Function>();
    outer->name = function->name + "_" + prefix;
    for (int suffix = 1; taken.count(outer->name); ++suffix)
      outer->name = function->name + "_" + prefix + "_" + std::to_string(suffix);
    taken.insert(outer->name);
    outer->attrs.set("codegen", Attr::makeString(prefix));
    outer->attrs.set("global_symbol", Attr::makeString(outer->name));
    outer->returnType = function->returnType;
    auto call = std::make_unique<Binding>();
    call->kind = ExprKind::Call;
    call->callee = function->name;
    for (const auto &param : function->params) {
      auto copy = std::make_unique<Value>(*param);
      call->operands.push_back(Operand::of(copy.get()));
      outer->params.push_back(std::move(copy));
    }
    call->result = std::make_unique<Value>();
    call->result->name = "result";
    call->result->type = function->returnType;
    call->result->definingBinding = call.get();
    auto body = std::make_unique<DataflowBlock>();
    body->hasOutputClause = true;
    body->outputs.push_back(call->getResult());
    outer->returnValues.push_back(Operand::of(call->getResult()));
    body->bindings.push_back(std::move(call));
    outer->body.push_back({nullptr, std::move(body)});
    outerOf[function->name] = outer->name;
    added.push_back(std::move(outer));
  }
  for (auto &outer : added)
    module.functions.push_back(std::move(outer));
  for (Function *entry : entries)
    entry->forEachBinding([&](Binding &binding) {
      auto found = outerOf.find(binding.callee);
      if (binding.kind == ExprKind::Call && found != outerOf.end())
        binding.callee = found->second;
    });
}

bool FuseByPattern::run(Module &module, PassContext &context) {
  std::vector<DataflowPattern> patterns = given;
  if (!loadPatterns(context, patterns))
    return false;
  prologueTarget.reset();
  if (getBoolOption("prologue-aware")) {
    TargetDesc target;
    if (!loadTargetDesc(getStringOption("target"), target, context.diag, getName()))
      return false;
    prologueTarget = target;
  }
  functionTable.clear();
  std::vector<Function *> entries;
  for (const auto &function : module.functions)
    if (!function->isGroupedFunction())
      entries.push_back(function.get());
  for (const DataflowPattern &pattern : patterns)
    for (Function *function : entries)
      for (BodyItem &item : function->body)
        if (item.block && !applyToBlock(pattern, module, *function, *item.block, context))
          return false;
  if (getBoolOption("annotate-codegen"))
    annotateCodegen(module, entries);
  return true;
}

std::unique_ptr<Pass> fusec::createFuseByPatternPass() { return std::make_unique<FuseByPattern>(); }

std::unique_ptr<Pass> fusec::createFuseByPatternPass(std::vector<DataflowPattern> patterns,
                                                     bool bindConstants, bool annotateCodegen) {
  auto pass = std::make_unique<FuseByPattern>(std::move(patterns));
  pass->setOption("bind-constants", bindConstants ? "true" : "false");
  pass->setOption("annotate-codegen", annotateCodegen ? "true" : "false");
  return pass;
}

#undef DEBUG_TYPE
