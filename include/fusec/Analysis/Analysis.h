//===- Analysis.h - Analyses over kernels and graphs -------------*- C++ -*-===//
//
// The pattern-kind analysis of `annotate-pattern` (TVM's
// AnnotateTIROpPattern, transcribed in ../shared/reference/
// tvm-fusion-rules.md §2), with the per-operand access information TVM
// throws away: which input is read elementwise, which through a broadcast
// and by what factor. Later analyses (dominators, cost model) join here.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_ANALYSIS_ANALYSIS_H
#define FUSEC_ANALYSIS_ANALYSIS_H

#include "fusec/IR/Kernel.h"
#include "fusec/IR/Pattern.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseMap.h"

#include <map>
#include <optional>

namespace fusec {

/// How one stage reads one buffer.
enum class AccessKind { ElemWise, Broadcast, Injective, Opaque };

struct OperandAccess {
  std::string buffer;
  AccessKind kind;
  /// For a broadcast read with static shapes: output elements per element
  /// read (4096 for [4096,1] read by a [4096,4096] stage); else 0.
  int64_t reuseFactor = 0;
};

struct KernelPatternInfo {
  OpPatternKind kind = OpPatternKind::ElemWise;
  /// One entry per (stage, load) of an input buffer, in stage order.
  std::vector<OperandAccess> inputAccesses;
};

/// Classifies `kernel` from the index expressions of its stages.
KernelPatternInfo analyzePatternKind(const Kernel &kernel);

//===----------------------------------------------------------------------===//
// Graph partitioning (TVM's GraphPartitioner, tvm-fusion-rules.md §3-§5)
//===----------------------------------------------------------------------===//

/// The indexed forward graph of one dataflow block: a node per value the
/// block uses from outside (opaque roots), then one per binding, in
/// topological order; an edge per use, carrying the consumer's kind.
struct FusionGraph {
  struct Edge {
    int consumer;
    OpPatternKind pattern;
  };
  struct Node {
    const Value *value = nullptr;     // the value the node defines
    const Binding *binding = nullptr; // null for values from outside
    OpPatternKind pattern = OpPatternKind::Opaque;
    bool externRef = false; // block outputs and outside values
    std::vector<Edge> outputs;
  };
  std::vector<Node> nodes;
};

/// Builds the graph of `block` of `function`; kernel calls take their
/// kernel's `op_pattern`, `get` is injective, everything else opaque. A
/// `get` of a packed-parameter tuple (a parameter at or after the
/// function's `num_input` attribute, as in TVM) is opaque too.
FusionGraph buildFusionGraph(const Module &module, const Function &function,
                             const DataflowBlock &block);

struct PartitionOptions {
  int64_t maxFusedOps = 256;
  int64_t maxFunctionArgs = 0; // 0 = no limit
  int64_t maxMerges = -1;      // bisect knob: stop after this many fusions
};

struct Partition {
  /// group[i]: the representative node of node i's group.
  std::vector<int> group;
  /// The root pattern of each group representative.
  std::vector<OpPatternKind> groupPattern;
  /// Why node i was not fused into its post-dominator (empty if it was, or
  /// if it is not a fusion source at all).
  std::vector<std::string> reason;
  int64_t merges = 0;
};

/// Runs the three fusion phases on `graph`.
Partition partitionGraph(const FusionGraph &graph, const PartitionOptions &options);

//===----------------------------------------------------------------------===//
// Dataflow pattern matching (spec §6, tvm-fusion-rules.md §9)
//===----------------------------------------------------------------------===//

/// The bindings that read each value of a function; a block `output` or
/// the function's `return` counts as a use by a null binding.
using UseMap = llvm::DenseMap<const Value *, std::vector<const Binding *>>;
UseMap collectUses(const Function &function);

/// A structural match of a pattern rooted at one binding.
struct PatternMatch {
  /// The value each pattern node matched (null for literal nodes, and for a
  /// wildcard that matched a literal operand: then `literals` is set).
  std::vector<const Value *> values;
  std::vector<bool> literals;
  /// The bindings matched by op and `get` nodes (the group), in block order.
  std::vector<const Binding *> members;
};

/// Matches `pattern` with its root at `root`, looking through the earlier
/// bindings of `block` (op and `get` nodes match only bindings of the
/// block; wildcards match any value). `add` and `multiply` also match with
/// their operands swapped, as TVM's matcher does.
std::optional<PatternMatch> matchPattern(const DataflowPattern &pattern, const Binding &root,
                                         const DataflowBlock &block);
/// A block's bindings by position, made once for matching at every root of
/// the block (the overload above makes one per call: linear in the block).
struct BlockIndex {
  explicit BlockIndex(const DataflowBlock &block);
  llvm::DenseMap<const Binding *, size_t> position;
};
std::optional<PatternMatch> matchPattern(const DataflowPattern &pattern, const Binding &root,
                                         const BlockIndex &block);

/// Evaluates the pattern's `where` constraints on a match. Returns "" when
/// all hold, else why the first failing one fails
/// (`single_use(%m): %m is also used by %z`).
std::string checkPatternConstraints(const DataflowPattern &pattern, const PatternMatch &match,
                                    const UseMap &uses);

//===----------------------------------------------------------------------===//
// Target descriptions and the cost model (lib/Analysis/CostModel.cpp)
//===----------------------------------------------------------------------===//

/// What the cost model knows of a GPU (targets/*.json, cited there).
struct TargetDesc {
  std::string name, arch;
  int64_t smCount = 0;
  double clockGHz = 0, memoryBandwidthGBps = 0;
  double fp32FmaPerClockPerSM = 0, specialFunctionPerClockPerSM = 0;
  int64_t sharedMemoryPerBlock = 0;
  double launchOverheadUs = 0;
  /// Seconds-free throughputs derived from the above.
  double flopsPerUs() const { return double(smCount) * fp32FmaPerClockPerSM * clockGHz * 1e3; }
  double bytesPerUs() const { return memoryBandwidthGBps * 1e3; }
};

/// Parses a target description; on failure returns false and sets `error`
/// (a missing or mistyped field is named).
bool parseTargetDesc(llvm::StringRef json, TargetDesc &target, std::string &error);
/// The description of `spec`: a shipped target (`sm_75`, `sm_80`, `sm_86`,
/// `sm_89`, `sm_90`, `h200`) or a JSON file path.
bool loadTargetDesc(llvm::StringRef spec, TargetDesc &target, std::string &error);
/// Why `spec` can be no target, or "": the check of a `target` pass option
/// when the pipeline is parsed. A path is only read when the pass runs, so
/// an unreadable file is an input error, not a usage error.
std::string checkTargetSpec(llvm::StringRef spec);
/// The same for a pass option: a failure is reported on `diag` as
/// "<who>: <why>".
bool loadTargetDesc(llvm::StringRef spec, TargetDesc &target, DiagEngine &diag,
                    llvm::StringRef who);

/// The size the cost model gives a symbolic dim (a dynamic batch or
/// sequence) when it needs a figure: large enough that launch overheads do
/// not decide, as in the matmul rule's tile choice. Ratios between two
/// tensors that share the dim (a [n, 1] producer read by an [n, 4096]
/// output recomputes 4096x) do not depend on it.
constexpr int64_t kSymbolicDimEstimate = 1024;
/// The product of `dims` with each symbolic dim counted as
/// kSymbolicDimEstimate, saturating at 2^48 (so that byte counts and their
/// sums over a kernel's buffers stay far from overflowing).
int64_t estimatedProduct(llvm::ArrayRef<Dim> dims);
/// estimatedProduct of `type`'s shape; -1 for a tuple.
int64_t estimatedNumElements(const Type &type);
/// Whether `dims` (`type`'s shape) has a symbolic dim (an estimate then
/// assumed its size).
bool hasSymbolicDims(llvm::ArrayRef<Dim> dims);
bool hasSymbolicDims(const Type &type);

/// Whether `kernel` only re-views its one input (a reshape, squeeze or
/// expand_dims): one spatial stage whose body is a load of the input, the
/// same dtype and element count, and every output element read from the
/// input element at the same row-major offset. Checked by evaluating the
/// load's indices at probe points (every point of a small output; else the
/// first, last and spread-out ones), symbolic dims given distinct small
/// sizes, so a transpose or a slice is never one. A producer that is a view
/// costs nothing to apply as a matmul operand's prologue.
bool isLayoutPreservingView(const Kernel &kernel);

/// Scalar work of one evaluation of an expression, in FP32-FMA issue slots
/// of the target: arithmetic, comparisons and selects cost 1, special
/// functions (exp, log, tanh, erf, sqrt, ...) the FMA-to-SFU throughput
/// ratio, division and power a few of those. Loads of `inlined` stages
/// count their bodies too (what inlining substitutes).
double expressionWork(const KExpr &expr, const TargetDesc &target,
                      const std::map<std::string, const KStage *> &inlined);
/// Bytes one evaluation of an expression loads from the kernel's inputs
/// (global memory), loads of `inlined` stages counting their bodies' loads.
double expressionInputBytes(const KExpr &expr, const Kernel &kernel,
                            const std::map<std::string, const KStage *> &inlined);

/// Where to compute a spatial producer stage read by a root through a
/// broadcast (the seed 003 shape: a [rows, 1] chain added to [rows, cols]).
/// `computeAt` describes the blocks compute_at would use: under a rows
/// mapping (a row broadcast) one block per row, each evaluating its row's
/// producer elements; under a columns mapping (a column broadcast, `[1,
/// cols]` or `[cols]`) blocks of threads that each evaluate their columns'
/// elements once per walk of `rows` rows. No blocks: no compute_at.
struct ComputeAtBlocks {
  int64_t blocks = 0;
  int64_t perBlock = 0; // producer elements each block evaluates (at least 1)
};
struct PlacementCost {
  int64_t producerElements = 0, rootElements = 0;
  int64_t recompute = 1;        // root elements per producer element
  double workPerElement = 0;    // FMA slots per producer element
  double inlineUs = 0;          // recomputed at every root element
  bool computeAtPossible = false; // a row or column broadcast, blocks > 0
  double computeAtUs = 0;         // once per block (rows) or per thread's walk (columns)
  double materializeUs = 0;     // its own launch and a round trip through memory
  double rootUs = 0;            // the root's own memory traffic, common to all
  std::string choice;           // "inline", "compute_at" or "materialize"
  /// The estimate of `choice`.
  double chosenUs() const {
    return choice == "inline" ? inlineUs : choice == "compute_at" ? computeAtUs : materializeUs;
  }
};
/// compute_at's estimate alone: `computeAt.blocks` blocks each evaluating
/// `perBlock` producer elements of `workPerElement` FMA slots before they
/// store, the chain of the first wave exposed, beside `memoryUs` of the
/// root's own traffic (what it hides).
double estimateComputeAtUs(double workPerElement, ComputeAtBlocks computeAt, double memoryUs,
                           const TargetDesc &target);
/// The time beyond its memory traffic (`memoryUs`, each input read and the
/// output written once) of a row kernel of `rows` blocks that does `work`
/// FMA slots in all, re-reads `rereadBytes` of its inputs (from L2, 2.5
/// times faster than DRAM, XLA's kL2CacheSpeedup) and holds `buffers` row
/// buffers: the roofline's excess over `memoryUs`, and a barrier (about
/// 100 cycles) per buffer and wave of resident blocks (8 per SM). A row
/// buffer's loads are those the kernel makes anyway, so no latency chain is
/// exposed before the reduction starts (unlike estimateComputeAtUs's
/// producers of a broadcast).
double estimateRowKernelUs(double work, double memoryUs, double rereadBytes, int64_t buffers,
                           int64_t rows, const TargetDesc &target);
/// The time of a launch of `blocks` blocks of `threads` threads that does
/// `work` FMA slots and moves `bytes` through DRAM, when the blocks are too
/// few to fill the GPU: they use only their SMs' arithmetic, and each block
/// draws only the bytes its loads keep in flight (Little's law:
/// kBytesInFlightPerThread per thread over kDramLatencyCycles), up to the
/// memory bandwidth. A launch that fills the GPU gets its roofline.
double estimateBlocksUs(double work, double bytes, int64_t blocks, int64_t threads,
                        const TargetDesc &target);
/// A load's latency from DRAM under load, in cycles: not a datasheet figure
/// (microbenchmarks of Volta to Hopper give about 500 to 800), to be
/// replaced by a measurement, like the launch overhead.
constexpr double kDramLatencyCycles = 800;
/// What a thread of a folding loop keeps in flight: four 4-byte loads of a
/// loop the compiler unrolls four times.
constexpr double kBytesInFlightPerThread = 16;
/// Partial reductions per row for `rows` rows of `reduced` elements: enough
/// blocks in all (of 256 threads) to draw the full memory bandwidth and to
/// give every SM one, each folding at least kMinSplitChunk elements, at
/// most 1024; 1 when the rows alone are enough.
int64_t chooseReductionPartials(int64_t rows, int64_t reduced, const TargetDesc &target);
constexpr int64_t kMinSplitChunk = 1024;
/// One block per row (every stage's work and reads in one launch of `rows`
/// blocks of `rowThreads` threads) against split reductions: each
/// reduction a launch of `rows * partials` blocks that reads its
/// `inputBytes` and writes its partials (`accumulateBytes` each), then, with
/// `outputBlocks` = 0, the output's launch of `rows` blocks folding the one
/// reduction's partials; else a launch per reduction folding them and the
/// output (`outputWork`, reading `outputReads` bytes of inputs and the
/// folded values) in a flat launch of `outputBlocks` blocks. The first
/// launch's overhead is common to both.
struct SplitReductionStep {
  double work = 0, inputBytes = 0;
  int64_t partials = 1, accumulateBytes = 4, chunkThreads = 256, foldThreads = 32;
};
struct SplitReductionCost {
  double rowsUs = 0, splitUs = 0;
  bool split() const { return splitUs < rowsUs; }
};
SplitReductionCost estimateSplitReduction(llvm::ArrayRef<SplitReductionStep> steps,
                                          double outputWork, double outputReads, double outputBytes,
                                          int64_t rows, int64_t rowThreads, int64_t outputBlocks,
                                          const TargetDesc &target);
/// The longest row `lower` computes at a block into shared memory.
constexpr int64_t kMaxRowBufferElements = 12288;
/// The shared memory a row kernel's block may take: the target's per block,
/// at most the kMaxStaticSharedBytes of static shared memory `lower` allows
/// (a target's opt-in size does not count).
int64_t rowKernelSharedBytes(const TargetDesc &target);
/// Shared memory a row is weighed alone without (fuse-ops' estimates): what
/// a row kernel's reductions (72 bytes each: a value and 8 warps' partials)
/// and row values take, 4 KiB for 56 reductions; placeRowBuffers counts the
/// kernel's own.
constexpr int64_t kRowKernelSharedReserve = 4096;
/// The elements of one row of `type` that the reduction rule can hold in a
/// block's shared memory (a row buffer, not TVM): `rows` its leading dims,
/// static inner dims of 2 to kMaxRowBufferElements elements that fit
/// rowKernelSharedBytes less kRowKernelSharedReserve; 0 otherwise.
int64_t rowBufferElements(const Type &type, llvm::ArrayRef<Dim> rows, const TargetDesc &target);

PlacementCost estimatePlacement(const KStage &producer, int64_t producerElements,
                                int64_t producerBytes, int64_t rootElements, int64_t rootBytes,
                                ComputeAtBlocks computeAt, const TargetDesc &target,
                                const std::map<std::string, const KStage *> &inlined);

/// Whether to apply an elementwise producer of a matmul/convolution operand
/// as the operand's tiles load (a prologue) or run it as its own kernel.
/// A tile of the operand is re-read once per block tile along the other
/// side (`otherExtent`: N for the first operand, M for the second; `tile`:
/// the schedule's block tile, matmulBlockTile). `workPerElement` is the
/// producer's work per operand element, every stage inlined (what a read
/// recomputes); `ownWork` its total in a kernel of its own, where each stage
/// runs once per element of its own (a broadcast chain once per row).
struct PrologueCost {
  int64_t rereads = 1;
  double fusedUs = 0;    // the producer recomputed at every re-read
  double separateUs = 0; // one launch, the operand written and read back
  bool fuse() const { return fusedUs < separateUs; }
};
PrologueCost estimatePrologue(double workPerElement, double ownWork, int64_t elements,
                              int64_t bytes, int64_t otherExtent, int64_t tile,
                              const TargetDesc &target);
/// The square block tile the matmul schedule rule gives an M x N contraction
/// (`batch` of them; ScheduleMatmul.cpp uses this choice): with tensor cores
/// (`tensorCores`: f16/bf16 operands on an arch that has mma.sync) 32 when
/// M or N is below 32, else 128 when both reach 128 and the 128 x 128 tiles
/// keep every SM of `target` busy, else 64; SIMT 64 from 64 x 64 up, else 32.
int64_t matmulBlockTile(int64_t m, int64_t n, int64_t batch, bool tensorCores,
                        const TargetDesc *target);
/// Whether `target`'s arch has the tensor-core mma.sync fusec emits (sm_80+).
bool targetHasTensorCores(const TargetDesc &target);
/// The same comparison for a producer re-evaluated `factor` times per
/// element (a broadcast read inside a reduction's loop) against its own
/// kernel; `rereads` is `factor`.
PrologueCost estimateRecompute(double workPerElement, double ownWork, int64_t elements,
                               int64_t bytes, int64_t factor, const TargetDesc &target);

} // namespace fusec

#endif // FUSEC_ANALYSIS_ANALYSIS_H
