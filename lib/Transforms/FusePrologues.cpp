//===- FusePrologues.cpp - Cost-aware prologue fusion for fuse-ops --------===//
//
// TVM never fuses an elementwise producer into a matmul or convolution
// (OutEWiseFusable takes only epilogues); neither does Inductor (seed 004).
// The tiled schedule applies an operand's expression as each tile is
// loaded, so a producer can be a prologue — recomputed at every re-read of
// the operand. It pays when that recomputation costs less than the
// producer's own kernel.
//
// TVM fuses elementwise producers into a plain reduction (comm_reduce) but
// not into one with a stage after it (a mean's divide, softmax, a norm: the
// kernel is out_ewise_fusable): RMSNorm's `x * x` gets a launch and a round
// trip of its own before its mean. The row-reduction schedule inlines such
// a producer into every loop that reads it, so it is recomputed once per
// read of the operand (once for a mean, three times in a softmax).
//
// Algorithm, for each group containing an anchor C: a contraction, or an
// out_ewise_fusable kernel whose reduction is not one:
//   1. For each operand of C defined in the block by a node P whose group
//      is elementwise or broadcast, or injective through views only
//      (isLayoutPreservingView: reshape, squeeze, expand_dims), is made of
//      kernel calls and is read by nothing but C, take the work of P's group
//      per element.
//   2. Estimate both ways (estimatePrologue, estimateRecompute in
//      lib/Analysis/CostModel.cpp): fused = that work at every re-read of
//      the operand's tiles (a contraction) or at every read of the operand
//      by C's loops, spatial stages inlined (a reduction); separate = one
//      launch + the operand written and read back + each member's work
//      once per element of its own (a broadcast chain once per row).
//   3. fused < separate: P's group joins C's. Either way, a remark and a
//      report decision give both times.
// Symbolic dims count as kSymbolicDimEstimate in the element counts and in
// M and N (the re-reads), as in the matmul rule's tile choice.
//
//===----------------------------------------------------------------------===//
#include "FusePrologues.h"
#include "ScheduleRules.h"

#include "fusec/IR/Ops.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/Format.h"

#include <cmath>
#include <map>

using namespace fusec;

/// The contraction stage of a kernel, if it is one (a matmul or a
/// convolution legalized: one output stage that is a contraction).
static bool contractionOf(const Kernel &kernel, Contraction &contraction) {
  for (const KStage &stage : kernel.stages)
    if (analyzeContraction(kernel, stage, contraction))
      return true;
  return false;
}

bool fusec::hasReduction(const Kernel &kernel) {
  return llvm::any_of(kernel.stages, [](const KStage &stage) { return stage.isReduction(); });
}

double fusec::kernelWork(const Kernel &kernel, const TargetDesc &target) {
  double work = 0;
  for (const KStage &stage : kernel.stages)
    work += expressionWork(*stage.body, target, {});
  return work;
}

double fusec::countInlinedReads(const Kernel &kernel, llvm::StringRef buffer) {
  return countReads(
      kernel, inlineSpatialInternals(kernel),
      [&](const KStage &stage) { return isInternal(kernel, stage) && !stage.isReduction(); },
      buffer);
}

/// Whether `kernel` is a reduction anchor: out_ewise_fusable (a stage after
/// its reduction) without a contraction.
static bool isReductionAnchor(const Kernel &kernel) {
  Contraction contraction;
  return analyzePatternKind(kernel).kind == OpPatternKind::OutEWiseFusable &&
         hasReduction(kernel) && !contractionOf(kernel, contraction);
}

/// How many times the loops of `kernel`, spatial internals inlined (as the
/// reduction and fallback rules do), read `input` per element of it.
static int64_t readsPerElement(const Kernel &kernel, const KBuffer &input) {
  double elements = double(estimatedNumElements(input.type));
  double reads = countInlinedReads(kernel, input.name);
  return elements > 0 ? saturatingInt64(std::max(1.0, std::ceil(reads / elements))) : 1;
}

/// The element count of a prologue member's value (symbolic dims counted
/// as kSymbolicDimEstimate); `operandElements` for a tuple or no value.
static int64_t ownElements(const Value *value, int64_t operandElements) {
  int64_t elements = value && value->type.isTensor() ? estimatedNumElements(value->type) : -1;
  return elements < 0 ? operandElements : elements;
}

/// The first of `members` (nodes, in order) that calls a kernel `isAnchor`
/// accepts, or -1.
static int findMemberKernel(const Module &module, const FusionGraph &graph,
                            llvm::ArrayRef<int> members,
                            llvm::function_ref<bool(const Kernel &)> isAnchor) {
  for (int node : members) {
    const Binding *binding = graph.nodes[node].binding;
    if (!binding || binding->kind != ExprKind::CallKernel)
      continue;
    const Kernel *kernel = module.lookupKernel(binding->callee);
    if (kernel && isAnchor(*kernel))
      return node;
  }
  return -1;
}

bool fusec::hasContraction(const Kernel &kernel) {
  Contraction contraction;
  return contractionOf(kernel, contraction);
}

int fusec::findContraction(const Module &module, const FusionGraph &graph,
                           llvm::ArrayRef<int> members) {
  return findMemberKernel(module, graph, members, hasContraction);
}

std::set<int> fusec::mergePrologues(const Module &module, const Function &function,
                                    const FusionGraph &graph, Partition &partition,
                                    const TargetDesc &target, PassContext &context) {
  std::set<int> merged;
  // Each group's nodes in order, and each binding's node, kept as groups
  // merge: scans of the whole graph per group made a model of thousands of
  // layers quadratic.
  std::map<int, std::vector<int>> membersOf;
  llvm::DenseMap<const Binding *, int> nodeOf;
  for (int node = 0; node < int(graph.nodes.size()); ++node)
    if (graph.nodes[node].binding) {
      membersOf[partition.group[node]].push_back(node);
      nodeOf[graph.nodes[node].binding] = node;
    }
  std::vector<int> anchorGroups;
  for (const auto &entry : membersOf)
    anchorGroups.push_back(entry.first);
  for (int group : anchorGroups) {
    int c = findContraction(module, graph, membersOf[group]);
    if (c < 0)
      c = findMemberKernel(module, graph, membersOf[group], isReductionAnchor);
    if (c < 0)
      continue;
    const Binding &call = *graph.nodes[c].binding;
    const Kernel &kernel = *module.lookupKernel(call.callee);
    Contraction contraction;
    bool isContraction = contractionOf(kernel, contraction);
    std::optional<std::vector<Dim>> anchorRows;
    if (!isContraction)
      anchorRows = rowReductionRows(module, graph, membersOf[group], false);
    int64_t m = isContraction ? contraction.extent(contraction.m, kSymbolicDimEstimate) : 0,
            n = isContraction ? contraction.extent(contraction.n, kSymbolicDimEstimate) : 0;
    for (size_t i = 0; i < call.operands.size() && i < kernel.inputs.size(); ++i) {
      const Value *operand = call.operands[i].value;
      if (!operand || !operand->definingBinding)
        continue;
      auto found = nodeOf.find(operand->definingBinding);
      int p = found == nodeOf.end() ? -1 : found->second;
      if (p < 0 || partition.group[p] == group)
        continue;
      int producerGroup = partition.group[p];
      OpPatternKind kind = partition.groupPattern[producerGroup];
      // The producer's group: kernel calls only, read only by C's group;
      // an elementwise or broadcast group (whatever it took in, such as a
      // transpose before its root), or an injective one whose injective
      // members are views (a reshape of the activation before the matmul).
      const std::vector<int> members = membersOf[producerGroup];
      bool eligible = kind <= OpPatternKind::Injective;
      for (int node : members) {
        const Binding &member = *graph.nodes[node].binding;
        const Kernel *memberKernel =
            member.kind == ExprKind::CallKernel ? module.lookupKernel(member.callee) : nullptr;
        eligible &= memberKernel && !graph.nodes[node].externRef &&
                    (kind <= OpPatternKind::Broadcast ||
                     graph.nodes[node].pattern <= OpPatternKind::Broadcast ||
                     isLayoutPreservingView(*memberKernel));
        for (const FusionGraph::Edge &edge : graph.nodes[node].outputs)
          eligible &= partition.group[edge.consumer] == producerGroup ||
                      edge.consumer == c;
      }
      int64_t elements = estimatedNumElements(operand->type); // -1: a tuple
      if (!eligible || elements < 0)
        continue;
      // Fused, every member is inlined at each read of the operand; on its
      // own, a member runs once per element of its own (a broadcast chain
      // once per row, as the broadcast rule can place it).
      // In a reduction anchor's group, a member of shape R then 1s (R the
      // group's reduction rows) is a row value, which the reduction rule
      // can compute once per row at the block instead of at every read.
      double work = 0, ownWork = 0, rowWork = 0;
      int64_t rowElements = 0;
      for (int node : members)
        if (const Kernel *k = module.lookupKernel(graph.nodes[node].binding->callee)) {
          double memberWork = kernelWork(*k, target);
          work += memberWork;
          ownWork += memberWork * double(ownElements(graph.nodes[node].value, elements));
          const Value *value = graph.nodes[node].value;
          if (anchorRows && value->type.isTensor() &&
              withoutTrailingOnes(value->type.getShape()) == *anchorRows) {
            rowWork += memberWork;
            rowElements = estimatedNumElements(value->type);
          }
        }
      int64_t bytes = elements * dtypeBytes(operand->type.getDType());
      PrologueCost estimate;
      bool rowValuesOnce = false, rowBuffer = false;
      if (isContraction) {
        bool isA = loadsBuffer(*contraction.x, kernel.inputs[i].name);
        bool halves = contraction.xDType == contraction.yDType &&
                      (contraction.xDType == DType::f16 || contraction.xDType == DType::bf16);
        int64_t tile =
            matmulBlockTile(m, n, contraction.extent(contraction.batch, kSymbolicDimEstimate),
                            halves && targetHasTensorCores(target), &target);
        estimate = estimatePrologue(work, ownWork, elements, bytes, isA ? n : m, tile, target);
      } else {
        estimate = estimateRecompute(work - rowWork, ownWork, elements, bytes,
                                     readsPerElement(kernel, kernel.inputs[i]), target);
        // Read by several passes, the operand's rows can be a row buffer of
        // the reduction rule (ScheduleRowStages.cpp): evaluated once into
        // shared memory, at the cost of a barrier.
        int64_t perRow = anchorRows && hasRowsBeyond(kernel.outputs.front().type, *anchorRows)
                             ? rowBufferElements(operand->type, *anchorRows, target)
                             : 0;
        if (estimate.rereads > 1 && perRow) {
          double bufferedUs = estimateRowKernelUs((work - rowWork) * double(elements), 0, 0, 1,
                                                  elements / perRow, target);
          rowBuffer = bufferedUs < estimate.fusedUs;
          estimate.fusedUs = std::min(estimate.fusedUs, bufferedUs);
        }
        if (rowWork > 0) {
          double inlinedUs = rowWork * double(elements) * double(rowBuffer ? 1 : estimate.rereads) /
                             target.flopsPerUs();
          double onceUs = estimateComputeAtUs(rowWork, {rowElements, 1}, 0, target);
          rowValuesOnce = onceUs < inlinedUs;
          estimate.fusedUs += std::min(inlinedUs, onceUs);
        }
      }
      int64_t rereads = estimate.rereads;
      double fusedUs = estimate.fusedUs, separateUs = estimate.separateUs;
      bool fuse = fusedUs < separateUs;
      std::string producer = "%" + operand->name, consumer = "%" + call.getResult()->name;
      std::string reason;
      llvm::raw_string_ostream os(reason);
      os << llvm::format("%.0f", work) << " FMA slots per element ";
      if (isContraction)
        os << "recomputed at each of " << rereads << " re-reads of the operand tiles";
      else if (rowBuffer)
        os << "evaluated once into a row buffer (its rows in shared memory), not " << rereads
           << " times by the reduction's loops";
      else if (rereads == 1)
        os << "evaluated once by the reduction's loops";
      else
        os << "evaluated " << rereads << " times by the reduction's loops";
      if (rowValuesOnce)
        os << ", its row values (" << llvm::format("%.0f", rowWork)
           << " FMA slots) once per row at the block,";
      os << (fuse ? " costs less than" : " costs more than") << " its own kernel (a launch and a "
         << llvm::format("%.0f", double(bytes) / 1024) << " KiB round trip)";
      if (hasSymbolicDims(operand->type) || hasSymbolicDims(call.getResult()->type))
        os << " (symbolic dims counted as " << kSymbolicDimEstimate << ")";
      os.flush();
      if (context.remarks)
        *context.remarks << "remark: fuse-ops: @" << function.name << ": " << producer
                         << " -> " << consumer
                         << (fuse ? ": fused as a prologue" : ": not fused as a prologue")
                         << " (" << reason << "; estimated us: fused "
                         << llvm::format("%.3f", fusedUs) << ", separate "
                         << llvm::format("%.3f", separateUs) << ")\n";
      if (context.report)
        context.report->decisions.push_back(
            {"fuse-ops", function.name, fuse ? "prologue" : "separate", reason,
             {{"producer", producer}, {"consumer", consumer}},
             {{"fused_us", fusedUs}, {"separate_us", separateUs},
              {"chosen_us", fuse ? fusedUs : separateUs}}});
      if (!fuse)
        continue;
      std::vector<int> &into = membersOf[group];
      for (int node : members) {
        partition.group[node] = group;
        merged.insert(node);
        into.push_back(node);
      }
      llvm::sort(into);
      membersOf[producerGroup].clear();
    }
  }
  return merged;
}

/// Why a library match should be left to fusec's own kernel: an operand of
/// its matmul comes from a chain of single-use elementwise ops that the cost
/// model would fuse into fusec's matmul as a prologue (what fuse-ops does
/// with prologue=true), which a library call cannot apply. "" otherwise;
/// then `separate` says why a candidate prologue stays its own kernel.
std::string fusec::libraryPrologueVeto(const PatternMatch &match, const BlockIndex &block,
                                       const UseMap &uses, const TargetDesc &target,
                                       std::string &separate, PrologueCost &estimate) {
  estimate = PrologueCost();
  estimate.rereads = 0;
  for (const Binding *member : match.members) {
    if (member->kind != ExprKind::Op || member->callee != "matmul")
      continue;
    const Shape &out = member->getType().getShape();
    if (out.size() < 2)
      continue;
    auto extent = [](const Dim &dim) { return dim.isStatic() ? dim.size : kSymbolicDimEstimate; };
    for (size_t i = 0; i < 2 && i < member->operands.size(); ++i) {
      const Value *operand = member->operands[i].value;
      // The single-use elementwise ops ending at the operand, whatever their
      // shapes: fuse-ops would group them (a broadcast chain included) and
      // fuse the whole group as the prologue, so all of them count.
      double work = 0, ownWork = 0;
      std::string head;
      // The anchors (out_ewise_fusable: a matmul, convolution, pool,
      // softmax, norm or mean) whose results the chain reads, and the
      // chain's ops: an anchor that only the chain reads has an elementwise
      // post-dominator in it, so TVM's partition makes the chain its
      // epilogue (conv -> relu -> reshape -> matmul, layer_norm -> gelu ->
      // matmul), and there is no prologue for fuse-ops to apply.
      std::vector<const Value *> anchors;
      llvm::DenseSet<const Binding *> chain;
      std::vector<const Value *> pending = {operand};
      llvm::DenseSet<const Value *> seen;
      while (!pending.empty()) {
        const Value *value = pending.back();
        pending.pop_back();
        if (!seen.insert(value).second || !value->definingBinding ||
            !block.position.count(value->definingBinding) ||
            llvm::is_contained(match.members, value->definingBinding))
          continue;
        const Binding *producer = value->definingBinding;
        const OpInfo *info = producer->kind == ExprKind::Op ? lookupOp(producer->callee) : nullptr;
        auto found = uses.find(value);
        bool singleUse = found != uses.end() && found->second.size() == 1 &&
                         found->second.front() != nullptr;
        bool elementwise = info && (info->opClass == OpClass::Unary ||
                                    info->opClass == OpClass::Binary ||
                                    info->opClass == OpClass::Ternary);
        // The kinds fuse-ops will see: its legalized kernel's.
        std::unique_ptr<Kernel> kernel = info ? legalizeOp(*producer, "probe") : nullptr;
        if (value != operand && kernel &&
            analyzePatternKind(*kernel).kind == OpPatternKind::OutEWiseFusable)
          anchors.push_back(value);
        // A view passes the chain on (fuse-ops groups it with what it
        // reads); it costs nothing and is no prologue on its own.
        if (singleUse && kernel && isLayoutPreservingView(*kernel)) {
          chain.insert(producer);
          pending.push_back(producer->operands.front().value);
          continue;
        }
        // The operand itself must be computed at the operand's shape.
        if (!singleUse || !elementwise || (value == operand && !(producer->getType() == operand->type)))
          continue;
        double opWork = kernelWork(*kernel, target);
        work += opWork;
        ownWork += opWork * double(ownElements(value, estimatedNumElements(operand->type)));
        head = "%" + value->name;
        chain.insert(producer);
        for (const Operand &next : producer->operands)
          if (!next.isLiteral())
            pending.push_back(next.value);
      }
      int64_t elements = estimatedNumElements(operand->type); // -1: a tuple
      bool anchored = llvm::any_of(anchors, [&](const Value *anchor) {
        auto found = uses.find(anchor);
        return found != uses.end() && llvm::all_of(found->second, [&](const Binding *user) {
                 return user && chain.count(user);
               });
      });
      if (head.empty() || anchored || elements < 0)
        continue;
      int64_t m = extent(out[out.size() - 2]), n = extent(out.back()), batch = 1;
      for (size_t d = 0; d + 2 < out.size(); ++d)
        batch *= extent(out[d]);
      DType dtype = member->operands[0].value->type.getDType();
      bool halves = (dtype == DType::f16 || dtype == DType::bf16) &&
                    member->operands[1].value->type.getDType() == dtype;
      PrologueCost cost = estimatePrologue(
          work, ownWork, elements, elements * dtypeBytes(operand->type.getDType()), i == 0 ? n : m,
          matmulBlockTile(m, n, batch, halves && targetHasTensorCores(target), &target), target);
      estimate = cost;
      if (!cost.fuse()) {
        llvm::raw_string_ostream note(separate);
        note << "the prologue %" << operand->name << " stays its own kernel: "
             << llvm::format("%.0f", work) << " FMA slots per element recomputed at each of "
             << cost.rereads << " re-reads of the operand tiles would cost more (estimated us: "
             << "fused " << llvm::format("%.3f", cost.fusedUs) << ", separate "
             << llvm::format("%.3f", cost.separateUs) << ")";
        continue;
      }
      std::string text;
      llvm::raw_string_ostream os(text);
      os << "%" << operand->name
         << (head == "%" + operand->name ? std::string() : " (from " + head + ")")
         << " fuses into fusec's own matmul kernel as a prologue, which a library call "
            "cannot apply (estimated us: fused "
         << llvm::format("%.3f", cost.fusedUs) << ", separate "
         << llvm::format("%.3f", cost.separateUs) << ")";
      return os.str();
    }
  }
  return "";
}
