//===- CostModel.cpp - Target descriptions and placement costs ------------===//
//
// A roofline estimate of where to compute a producer stage (issue 8; the
// broadcast recomputation of seed 003, tvm-fusion-rules.md §12):
//   1. the work of one producer element: its expression, with the stages
//      it inlines, in FP32-FMA issue slots (a special function costs the
//      target's FMA/SFU throughput ratio);
//   2. inline: that work at every root element (producer elements x the
//      broadcast factor);
//   3. compute_at (block): that work once per producer element per block
//      that needs it, and the wait of the block's other threads at the
//      barrier: the first wave's chain latency, and the waves' chains
//      as a third roof (later waves' chains hide under memory traffic);
//   4. materialize: that work once, one more launch, the producer written
//      and read back through global memory;
// each a max of compute time and memory time (the root's own traffic is
// common to all three and reported separately), from targets/*.json.
// A prologue of a matmul operand (estimatePrologue) is recomputed at every
// re-read of the operand's tiles, against its own launch and round trip.
//
//===----------------------------------------------------------------------===//
#include "fusec/Analysis/Analysis.h"
#include "fusec/Support/FileIO.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MemoryBuffer.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

using namespace fusec;

namespace fusec {
const char *getTargetSm75();
const char *getTargetSm80();
const char *getTargetSm86();
const char *getTargetSm89();
const char *getTargetSm90();
const char *getTargetH200();
} // namespace fusec

bool fusec::parseTargetDesc(llvm::StringRef json, TargetDesc &target, std::string &error) {
  nlohmann::json root;
  try {
    root = nlohmann::json::parse(json.begin(), json.end());
  } catch (const nlohmann::json::parse_error &parseError) {
    // what() is "[json.exception.parse_error.101] parse error at line L,
    // column C: ..."; the bracketed id means nothing to a user.
    llvm::StringRef message = parseError.what();
    error = "invalid JSON: " + message.substr(message.find("] ") + 2).str();
    return false;
  }
  if (!root.is_object()) {
    error = "not a JSON object";
    return false;
  }
  auto number = [&](const char *key, double &out) {
    auto it = root.find(key);
    if (it == root.end() || !it->is_number() || it->get<double>() <= 0) {
      if (error.empty())
        error = std::string("'") + key + "' must be a positive number";
      return false;
    }
    out = it->get<double>();
    return true;
  };
  auto text = [&](const char *key, std::string &out) {
    auto it = root.find(key);
    if (it == root.end() || !it->is_string()) {
      if (error.empty())
        error = std::string("'") + key + "' must be a string";
      return false;
    }
    out = it->get<std::string>();
    return true;
  };
  double sms = 0, shared = 0;
  bool ok = text("name", target.name) & text("arch", target.arch) & number("sm_count", sms) &
            number("clock_ghz", target.clockGHz) &
            number("memory_bandwidth_gbps", target.memoryBandwidthGBps) &
            number("fp32_fma_per_clock_per_sm", target.fp32FmaPerClockPerSM) &
            number("special_function_per_clock_per_sm", target.specialFunctionPerClockPerSM) &
            number("shared_memory_per_block_bytes", shared) &
            number("launch_overhead_us", target.launchOverheadUs);
  target.smCount = int64_t(sms);
  target.sharedMemoryPerBlock = int64_t(shared);
  return ok;
}

bool fusec::loadTargetDesc(llvm::StringRef spec, TargetDesc &target, std::string &error) {
  static const std::pair<const char *, const char *(*)()> shipped[] = {
      {"sm_75", getTargetSm75}, {"sm_80", getTargetSm80}, {"sm_86", getTargetSm86},
      {"sm_89", getTargetSm89},
      {"sm_90", getTargetSm90}, {"h200", getTargetH200}};
  for (const auto &[name, text] : shipped)
    if (spec == name) {
      bool ok = parseTargetDesc(text(), target, error);
      if (!ok)
        error = "shipped target '" + spec.str() + "': " + error;
      return ok;
    }
  std::string readError;
  std::unique_ptr<llvm::MemoryBuffer> file = readFile(spec, readError);
  if (!file) {
    error = "target '" + spec.str() + "' is neither a shipped target (sm_75, sm_80, sm_86, sm_89, "
            "sm_90, h200) nor a readable file: " + readError;
    return false;
  }
  if (!parseTargetDesc(file->getBuffer(), target, error)) {
    error = "target file '" + spec.str() + "': " + error;
    return false;
  }
  return true;
}

std::string fusec::checkTargetSpec(llvm::StringRef spec) {
  return spec.empty() ? "expects a shipped target (sm_75, sm_80, sm_86, sm_89, sm_90, h200) "
                        "or a JSON file, got ''"
                      : "";
}

bool fusec::loadTargetDesc(llvm::StringRef spec, TargetDesc &target, DiagEngine &diag,
                           llvm::StringRef who) {
  std::string error;
  if (loadTargetDesc(spec, target, error))
    return true;
  diag.error({}, who + ": " + error);
  return false;
}

/// The sum over an expression of `own(node)`, a load of an `inlined` stage
/// counting that stage's body instead, each stage's sum computed once
/// (`memo`): stages read by several later ones (a diamond) would otherwise
/// be expanded as a tree. Index expressions (a load's arguments) count
/// nothing.
static double sumThroughInlined(const KExpr &expr,
                                const std::map<std::string, const KStage *> &inlined,
                                llvm::function_ref<double(const KExpr &)> own,
                                std::map<std::string, double> &memo) {
  if (expr.kind == KExpr::Load) {
    auto found = inlined.find(expr.name);
    if (found == inlined.end())
      return own(expr);
    auto known = memo.find(expr.name);
    if (known == memo.end())
      known = memo.emplace(expr.name, sumThroughInlined(*found->second->body, inlined, own, memo))
                  .first;
    return known->second;
  }
  double sum = own(expr);
  for (const KExprPtr &arg : expr.args)
    if (arg)
      sum += sumThroughInlined(*arg, inlined, own, memo);
  return sum;
}

int64_t fusec::estimatedProduct(llvm::ArrayRef<Dim> dims) {
  constexpr int64_t kLimit = int64_t(1) << 48;
  int64_t count = 1;
  for (const Dim &dim : dims) {
    int64_t size = dim.isSymbolic() ? kSymbolicDimEstimate : dim.size;
    if (size == 0)
      return 0;
    count = count > kLimit / size ? kLimit : count * size;
  }
  return count;
}

int64_t fusec::estimatedNumElements(const Type &type) {
  return type.isTuple() ? -1 : estimatedProduct(type.getShape());
}

bool fusec::hasSymbolicDims(llvm::ArrayRef<Dim> dims) {
  return llvm::any_of(dims, [](const Dim &dim) { return dim.isSymbolic(); });
}

bool fusec::hasSymbolicDims(const Type &type) {
  return type.isTensor() && hasSymbolicDims(type.getShape());
}

bool fusec::isLayoutPreservingView(const Kernel &kernel) {
  if (kernel.inputs.size() != 1 || kernel.outputs.size() != 1 || kernel.stages.size() != 1)
    return false;
  const KStage &stage = kernel.stages.front();
  const KBuffer &in = kernel.inputs.front(), &out = kernel.outputs.front();
  const KExpr &body = *stage.body;
  if (stage.isReduction() || stage.buffer != out.name || body.kind != KExpr::Load ||
      body.name != in.name || in.type.getDType() != out.type.getDType() ||
      body.args.size() != size_t(in.type.getRank()) ||
      stage.spatialVars.size() != size_t(out.type.getRank()))
    return false;
  // Symbolic dims: distinct sizes, none 1 (a unit dim would hide a swap).
  // The load's indices, folded once, are evaluated by substituting
  // constants, which foldIndex folds.
  std::map<std::string, KExprPtr> vars;
  int64_t nextSize = 3;
  auto sizeOf = [&](const Dim &dim) {
    if (dim.isStatic())
      return dim.size;
    auto [it, inserted] = vars.try_emplace(dim.symbol, KExpr::intConst(nextSize));
    if (inserted)
      nextSize += 2;
    return it->second->intValue;
  };
  std::vector<int64_t> outSizes, inSizes;
  int64_t outCount = 1, inCount = 1;
  for (const Dim &dim : out.type.getShape())
    outCount *= outSizes.emplace_back(sizeOf(dim));
  for (const Dim &dim : in.type.getShape())
    inCount *= inSizes.emplace_back(sizeOf(dim));
  if (outCount != inCount)
    return false;
  std::vector<KExprPtr> indices;
  for (const KExprPtr &index : body.args)
    indices.push_back(foldIndexTree(index));
  constexpr int64_t kAllPoints = 4096, kProbes = 1024;
  auto viewsAt = [&](int64_t flat) {
    for (size_t d = outSizes.size(), rest = flat; d-- > 0;) {
      vars[stage.spatialVars[d]] = KExpr::intConst(int64_t(rest % outSizes[d]));
      rest /= outSizes[d];
    }
    int64_t offset = 0;
    for (size_t d = 0; d < inSizes.size(); ++d) {
      KExprPtr index = substituteVars(indices[d], vars);
      if (index->kind != KExpr::IntConst || index->intValue < 0 || index->intValue >= inSizes[d])
        return false;
      offset = offset * inSizes[d] + index->intValue;
    }
    return offset == flat;
  };
  if (outCount <= kAllPoints) {
    for (int64_t flat = 0; flat < outCount; ++flat)
      if (!viewsAt(flat))
        return false;
    return true;
  }
  for (int64_t i = 0; i < kProbes; ++i)
    if (!viewsAt(i) || !viewsAt(outCount - 1 - i) || !viewsAt(i * (outCount / kProbes) + i % 7))
      return false;
  return true;
}

double fusec::expressionWork(const KExpr &expr, const TargetDesc &target,
                             const std::map<std::string, const KStage *> &inlined) {
  double special = target.fp32FmaPerClockPerSM / target.specialFunctionPerClockPerSM;
  auto own = [&](const KExpr &node) -> double {
    static const char *const specials[] = {"exp",  "log",     "sqrt", "rsqrt", "sin",       "cos",
                                           "tanh", "sigmoid", "erf",  "gelu",  "gelu_tanh", "silu"};
    switch (node.kind) {
    case KExpr::Call:
      if (node.name == "divide" || node.name == "power")
        return 2 * special; // a reciprocal (or log and exp) and a multiply
      return llvm::is_contained(specials, node.name) ? special : 1;
    case KExpr::Select:
    case KExpr::Lt:
    case KExpr::Le:
    case KExpr::Gt:
    case KExpr::Ge:
    case KExpr::Eq:
    case KExpr::Ne:
      return 1;
    default: // loads, index arithmetic, casts and literals: free next to the rest
      return 0;
    }
  };
  std::map<std::string, double> memo;
  return sumThroughInlined(expr, inlined, own, memo);
}

double fusec::expressionInputBytes(const KExpr &expr, const Kernel &kernel,
                                   const std::map<std::string, const KStage *> &inlined) {
  auto own = [&](const KExpr &node) -> double {
    if (node.kind != KExpr::Load)
      return 0;
    const KBuffer *buffer = kernel.findBuffer(node.name);
    return buffer && buffer->role == KBuffer::Input ? double(dtypeBytes(buffer->type.getDType()))
                                                    : 0.0;
  };
  std::map<std::string, double> memo;
  return sumThroughInlined(expr, inlined, own, memo);
}

double fusec::estimateComputeAtUs(double workPerElement, ComputeAtBlocks computeAt, double memoryUs,
                                  const TargetDesc &target) {
  int64_t blocks = std::max<int64_t>(1, computeAt.blocks);
  int64_t perBlock = std::max<int64_t>(1, computeAt.perBlock);
  double chainUs =
      (workPerElement * 4.0 * double((perBlock + 127) / 128) + 100.0) / (target.clockGHz * 1e3);
  double waves = std::ceil(double(blocks) / (double(target.smCount) * 8.0));
  double work = workPerElement * double(perBlock * blocks) / target.flopsPerUs();
  return std::max({work, memoryUs, waves * chainUs}) - memoryUs + chainUs;
}

double fusec::estimateRowKernelUs(double work, double memoryUs, double rereadBytes, int64_t buffers,
                                  int64_t rows, const TargetDesc &target) {
  constexpr double kL2Speedup = 2.5;
  double computeUs = work / target.flopsPerUs();
  double trafficUs = memoryUs + std::max(0.0, rereadBytes) / (kL2Speedup * target.bytesPerUs());
  double waves = std::ceil(double(std::max<int64_t>(1, rows)) / (double(target.smCount) * 8.0));
  return std::max(computeUs, trafficUs) - memoryUs +
         double(buffers) * waves * 100.0 / (target.clockGHz * 1e3);
}

double fusec::estimateBlocksUs(double work, double bytes, int64_t blocks, int64_t threads,
                               const TargetDesc &target) {
  blocks = std::max<int64_t>(1, blocks);
  threads = std::max<int64_t>(1, threads);
  int64_t resident = target.smCount * std::clamp<int64_t>(2048 / threads, 1, 16);
  double concurrentThreads = double(std::min(blocks, resident) * threads);
  double latencyUs = kDramLatencyCycles / (target.clockGHz * 1e3);
  double bytesPerUs =
      std::min(target.bytesPerUs(), concurrentThreads * kBytesInFlightPerThread / latencyUs);
  double flopsPerUs = target.flopsPerUs() * std::min(1.0, double(blocks) / double(target.smCount));
  return std::max(work / flopsPerUs, bytes / bytesPerUs);
}

int64_t fusec::chooseReductionPartials(int64_t rows, int64_t reduced, const TargetDesc &target) {
  constexpr int64_t kThreads = 256;
  double latencyUs = kDramLatencyCycles / (target.clockGHz * 1e3);
  double perBlock = double(kThreads) * kBytesInFlightPerThread / latencyUs;
  int64_t blocks =
      std::max<int64_t>(target.smCount, int64_t(std::ceil(target.bytesPerUs() / perBlock)));
  rows = std::max<int64_t>(1, rows);
  if (rows >= blocks)
    return 1;
  int64_t partials = (blocks + rows - 1) / rows;
  return std::max<int64_t>(1, std::min({partials, reduced / kMinSplitChunk, int64_t(1024)}));
}

SplitReductionCost fusec::estimateSplitReduction(llvm::ArrayRef<SplitReductionStep> steps,
                                                 double outputWork, double outputReads,
                                                 double outputBytes, int64_t rows,
                                                 int64_t rowThreads, int64_t outputBlocks,
                                                 const TargetDesc &target) {
  SplitReductionCost cost;
  double work = outputWork, reads = outputReads;
  for (const SplitReductionStep &step : steps) {
    work += step.work;
    reads += step.inputBytes;
  }
  cost.rowsUs = estimateBlocksUs(work, reads + outputBytes, rows, rowThreads, target);
  double folded = 0; // bytes of the folded reductions the flat output reads
  for (size_t k = 0; k < steps.size(); ++k) {
    const SplitReductionStep &step = steps[k];
    double partialBytes = double(rows * step.partials * step.accumulateBytes);
    cost.splitUs += (k ? target.launchOverheadUs : 0.0) +
                    estimateBlocksUs(step.work, step.inputBytes + partialBytes,
                                     rows * step.partials, step.chunkThreads, target);
    double foldWork = double(rows * step.partials) + (outputBlocks ? 0.0 : outputWork);
    double foldBytes = partialBytes + (outputBlocks ? double(rows * step.accumulateBytes)
                                                    : outputReads + outputBytes);
    cost.splitUs += target.launchOverheadUs +
                    estimateBlocksUs(foldWork, foldBytes, rows, step.foldThreads, target);
    folded += double(rows * step.accumulateBytes);
  }
  if (outputBlocks)
    cost.splitUs += target.launchOverheadUs +
                    estimateBlocksUs(outputWork, outputReads + folded + outputBytes, outputBlocks,
                                     256, target); // a flat launch's threads
  return cost;
}

int64_t fusec::rowKernelSharedBytes(const TargetDesc &target) {
  return std::min(target.sharedMemoryPerBlock, kMaxStaticSharedBytes);
}

int64_t fusec::rowBufferElements(const Type &type, llvm::ArrayRef<Dim> rows,
                                 const TargetDesc &target) {
  if (!type.isTensor() || type.getRank() <= int64_t(rows.size()))
    return 0;
  const Shape &shape = type.getShape();
  int64_t elements = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (d < rows.size() ? !(shape[d] == rows[d]) : shape[d].isSymbolic())
      return 0;
    if (d >= rows.size())
      elements *= shape[d].size;
    if (elements > kMaxRowBufferElements)
      return 0;
  }
  if (elements < 2 || elements * dtypeBytes(type.getDType()) >
                          rowKernelSharedBytes(target) - kRowKernelSharedReserve)
    return 0;
  return elements;
}

PlacementCost fusec::estimatePlacement(const KStage &producer, int64_t producerElements,
                                       int64_t producerBytes, int64_t rootElements,
                                       int64_t rootBytes, ComputeAtBlocks computeAt,
                                       const TargetDesc &target,
                                       const std::map<std::string, const KStage *> &inlined) {
  PlacementCost cost;
  cost.producerElements = producerElements;
  cost.rootElements = rootElements;
  cost.recompute = std::max<int64_t>(1, rootElements / std::max<int64_t>(1, producerElements));
  cost.workPerElement = expressionWork(*producer.body, target, inlined);
  double memoryUs = double(rootBytes) / target.bytesPerUs();
  cost.rootUs = memoryUs;
  auto roofline = [&](double work, double extraBytes) {
    return std::max(work / target.flopsPerUs(), memoryUs + extraBytes / target.bytesPerUs()) -
           memoryUs;
  };
  cost.inlineUs = roofline(cost.workPerElement * double(rootElements), 0);
  // Each block evaluates its producer elements before it stores (its other
  // threads wait at a barrier, or each thread before its walk): a
  // dependent chain of about 4 cycles per FMA slot (those elements spread
  // over the SM's lanes). A wave of resident blocks (about 8 per SM) waits
  // together; later waves' chains overlap the earlier waves' memory
  // traffic, so only the first wave's chain is exposed, and the waves'
  // chains together are a third roof beside compute and memory. No
  // blocks: not possible.
  cost.computeAtPossible = computeAt.blocks > 0;
  if (cost.computeAtPossible)
    cost.computeAtUs = estimateComputeAtUs(cost.workPerElement, computeAt, memoryUs, target);
  cost.materializeUs = roofline(cost.workPerElement * double(producerElements),
                                2.0 * double(producerBytes)) +
                       target.launchOverheadUs;
  cost.choice = "inline";
  double best = cost.inlineUs;
  if (cost.computeAtPossible && cost.computeAtUs < best) {
    best = cost.computeAtUs;
    cost.choice = "compute_at";
  }
  if (cost.materializeUs < best)
    cost.choice = "materialize";
  return cost;
}

PrologueCost fusec::estimatePrologue(double workPerElement, double ownWork, int64_t elements,
                                     int64_t bytes, int64_t otherExtent, int64_t tile,
                                     const TargetDesc &target) {
  return estimateRecompute(workPerElement, ownWork, elements, bytes,
                           std::max<int64_t>(1, (otherExtent + tile - 1) / tile), target);
}

int64_t fusec::matmulBlockTile(int64_t m, int64_t n, int64_t batch, bool tensorCores,
                               const TargetDesc *target) {
  if (!tensorCores)
    return m >= 64 && n >= 64 ? 64 : 32;
  if (m < 32 || n < 32)
    return 32;
  bool large = m >= 128 && n >= 128;
  int64_t bigTiles = batch * ((m + 127) / 128) * ((n + 127) / 128);
  if (large && target && bigTiles < target->smCount)
    large = false;
  return large ? 128 : 64;
}

bool fusec::targetHasTensorCores(const TargetDesc &target) {
  int version = 0;
  llvm::StringRef arch(target.arch);
  return arch.consume_front("sm_") && !arch.getAsInteger(10, version) && version >= 80;
}

PrologueCost fusec::estimateRecompute(double workPerElement, double ownWork, int64_t elements,
                                      int64_t bytes, int64_t factor, const TargetDesc &target) {
  PrologueCost cost;
  cost.rereads = std::max<int64_t>(1, factor);
  cost.fusedUs = workPerElement * double(elements) * double(cost.rereads) / target.flopsPerUs();
  cost.separateUs = target.launchOverheadUs + 2.0 * double(bytes) / target.bytesPerUs() +
                    ownWork / target.flopsPerUs();
  return cost;
}
