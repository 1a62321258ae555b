//===- LowerKernel.h - Lowering one kernel (private) ------------*- C++ -*-===//
//
// The lowering of one scheduled kernel, shared by LowerKernel.cpp (inlining,
// flat and rows mappings, the driver) and LowerTiles.cpp (tiled
// contractions): index-building helpers and the KernelLowering class.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_LIB_TRANSFORMS_LOWERKERNEL_H
#define FUSEC_LIB_TRANSFORMS_LOWERKERNEL_H

#include "fusec/IR/Kernel.h"

#include "llvm/Support/raw_ostream.h"

#include <functional>
#include <set>

namespace fusec {

struct Contraction;

/// Replaces `kernel`'s stages and schedule by launches (LowerKernel.cpp).
/// Returns false after a diagnostic when the schedule cannot be applied.
bool lowerKernel(Kernel &kernel, DiagEngine &diag, llvm::raw_ostream *remarks = nullptr);

namespace lowering {

inline KExprPtr dimExpr(const Dim &dim) {
  return dim.isSymbolic() ? KExpr::var(dim.symbol) : KExpr::intConst(dim.size);
}
inline KExprPtr add(KExprPtr a, KExprPtr b) { return foldIndex(KExpr::Add, a, b); }
inline KExprPtr mul(KExprPtr a, KExprPtr b) { return foldIndex(KExpr::Mul, a, b); }
inline KExprPtr cnst(int64_t v) { return KExpr::intConst(v); }
inline KExprPtr ceilDiv(KExprPtr a, int64_t b) {
  return foldIndex(KExpr::FloorDiv, add(a, cnst(b - 1)), cnst(b));
}
inline KExprPtr product(const std::vector<KExprPtr> &extents) {
  KExprPtr total = cnst(1);
  for (const KExprPtr &extent : extents)
    total = mul(total, extent);
  return total;
}

/// Row-major coordinates of `flat` in `extents`.
inline std::vector<KExprPtr> coordinatesOf(const KExprPtr &flat, const std::vector<KExprPtr> &extents) {
  std::vector<KExprPtr> coords(extents.size());
  KExprPtr stride = cnst(1);
  for (size_t d = extents.size(); d-- > 0;) {
    KExprPtr scaled = foldIndex(KExpr::FloorDiv, flat, stride);
    coords[d] = d == 0 ? scaled : foldIndex(KExpr::Mod, scaled, extents[d]);
    stride = mul(stride, extents[d]);
  }
  return coords;
}

inline LStmt store(const std::string &buffer, std::vector<KExprPtr> indices, KExprPtr value) {
  LStmt stmt;
  stmt.kind = LStmt::Store;
  stmt.buffer = buffer;
  stmt.indices = std::move(indices);
  stmt.value = std::move(value);
  return stmt;
}
inline LStmt loop(LStmt::LoopKind kind, const std::string &var, KExprPtr extent,
           std::vector<LStmt> body) {
  LStmt stmt;
  stmt.kind = LStmt::For;
  stmt.loopKind = kind;
  stmt.var = var;
  stmt.extent = std::move(extent);
  stmt.body = std::move(body);
  return stmt;
}
inline std::vector<LStmt> guarded(KExprPtr cond, std::vector<LStmt> body) {
  if (!cond)
    return body;
  LStmt stmt;
  stmt.kind = LStmt::If;
  stmt.cond = std::move(cond);
  stmt.body = std::move(body);
  std::vector<LStmt> out;
  out.push_back(std::move(stmt));
  return out;
}
inline std::vector<LStmt> join(std::vector<LStmt> a, std::vector<LStmt> b) {
  for (LStmt &stmt : b)
    a.push_back(std::move(stmt));
  return a;
}
inline LStmt blockStmt(LStmt::Kind kind, std::vector<LStmt> body = {}) {
  LStmt stmt;
  stmt.kind = kind;
  stmt.body = std::move(body);
  return stmt;
}
inline KExprPtr lt(KExprPtr a, KExprPtr b) { return KExpr::binary(KExpr::Lt, a, b); }
inline KExprPtr castTo(KExprPtr value, DType dtype) {
  return value->dtype == dtype ? value : KExpr::cast(value, dtype);
}

/// How one operand's tile of a tiled contraction is laid out in shared
/// memory and filled (LowerTiles.cpp).
struct OperandTile {
  bool isA = true;
  bool copied = false;   // async_copy chunks, else staged through registers
  bool kFastest = false; // shared layout [mn][k] (else [k][mn])
  int64_t mnExtent = 0, kExtent = 0; // blockM or blockN, blockK
  int64_t pad = 0;                   // elements appended to each row
  int64_t chunk = 1;                 // elements per async_copy
  DType dtype = DType::f32;
  std::string shared, registers;

  int64_t rowLength() const { return (kFastest ? kExtent : mnExtent) + pad; }
  int64_t rows() const { return kFastest ? mnExtent : kExtent; }
  int64_t size() const { return rows() * rowLength(); } // one copy
  KExprPtr slot(KExprPtr mn, KExprPtr k) const {
    return kFastest ? add(mul(mn, cnst(rowLength())), k) : add(mul(k, cnst(rowLength())), mn);
  }
};

class KernelLowering;

/// How a tiled contraction's operands reach their shared-memory tiles, and
/// the statements that move them (LowerTileOperands.cpp).
class TileOperands {
public:
  TileOperands(KernelLowering &lowering, const Contraction &contraction, const KStage &core,
               const StageMapping &mapping, int64_t threads);
  /// Chooses each tile's layout and filling and the number of stages;
  /// false when even one copy of the tiles exceeds kMaxStaticSharedBytes.
  bool plan(bool mma);
  int64_t stageBytes() const; // one copy of both tiles
  bool copies() const { return tiles[0].copied || tiles[1].copied; }
  bool staged() const { return !tiles[0].copied || !tiles[1].copied; }
  /// Binds the contraction's variables for batch `batch` (set below) and
  /// the flat m, n, k given (null: left unbound).
  void bind(std::map<std::string, KExprPtr> &bindings, KExprPtr m, KExprPtr n,
            KExprPtr k) const;
  /// The first element of copy `copy` (taken modulo the stages) of `tile`.
  KExprPtr copyOffset(const OperandTile &tile, KExprPtr copy) const;
  /// K step `kTile`'s copied tiles into copy `copy` (async_copy).
  std::vector<LStmt> copyIn(KExprPtr kTile, KExprPtr copy);
  /// K step `kTile`'s staged elements into the registers.
  std::vector<LStmt> fetch(KExprPtr kTile);
  /// The registers into copy `copy` of the staged tiles.
  std::vector<LStmt> deposit(KExprPtr copy);

  OperandTile tiles[2];
  int64_t stages = 1;
  KExprPtr totalM, totalN, totalK, batches;
  KExprPtr tileM, tileN, batch; // the block's place, set by the caller

private:
  KExprPtr operandAt(const OperandTile &tile, KExprPtr kTile, KExprPtr mn, KExprPtr k,
                     KExprPtr &inside) const;
  /// `move(tile, trip, mn, k)` for each staged tile's elements of this
  /// thread: element e is (m, k) with k fastest for A, (k, n) with n
  /// fastest for B (coalesced reads of row-major operands).
  std::vector<LStmt>
  overStaged(const std::function<LStmt(const OperandTile &, KExprPtr, KExprPtr, KExprPtr)> &move);
  std::vector<LStmt> overItems(const std::string &base, int64_t count,
                               const std::function<LStmt(KExprPtr, KExprPtr)> &move);

  KernelLowering &lowering;
  const Contraction &contraction;
  int64_t blockK, threads;
  std::vector<KExprPtr> batchExtents, mExtents, nExtents, kExtents;
  std::vector<size_t> kDims;
  std::vector<std::string> kNames;
  std::vector<Dim> kDimsOf;
};

/// What the tensor-core compute of one K step reads and writes
/// (LowerTileFragments.cpp).
struct MmaStep {
  const OperandTile *a, *b;
  KExprPtr offsetA, offsetB; // the step's copy of each tile
  int64_t blockK, warpM, warpN, warpsN;
  std::string contraction, accumulators; // fragments are named after the first
  DType accumulate;
};

class KernelLowering {
public:
  KernelLowering(Kernel &kernel, DiagEngine &diag, llvm::raw_ostream *remarks)
      : kernel(kernel), diag(diag), remarks(remarks) {}
  bool run();

public: // the mappings live in several files
  bool error(llvm::SMLoc loc, const llvm::Twine &message) {
    diag.error(loc.isValid() ? loc : kernel.loc,
               "cannot lower kernel '@" + kernel.name + "': " + message);
    return false;
  }
  const StageSchedule &scheduleOf(const std::string &stage) {
    return *kernel.schedule.find(stage);
  }
  const KStage *stageOf(llvm::StringRef buffer) {
    for (const KStage &stage : stages)
      if (stage.buffer == buffer)
        return &stage;
    return nullptr;
  }
  std::vector<KExprPtr> extentsOf(const std::string &buffer) {
    std::vector<KExprPtr> extents;
    for (const Dim &dim : kernel.findBuffer(buffer)->type.getShape())
      extents.push_back(dimExpr(dim));
    return extents;
  }
  /// The root stage a block-level stage is computed in (following chains).
  const std::string &rootOf(const std::string &stage) {
    const StageSchedule *entry = &scheduleOf(stage);
    while (entry->placement == StageSchedule::ComputeAt)
      entry = &scheduleOf(entry->consumer);
    return entry->stage;
  }

  // Names, fresh within the kernel (buffers) and the launch (variables).
  std::string freshVar(const std::string &base);
  std::string freshBuffer(const std::string &base);
  std::string addBuffer(const std::string &base, KBuffer::Role role, DType dtype,
                        int64_t size);

  bool lowerRoot(const KStage &root);
  /// Whether `stage` (a root with a vector mapping) can take `vector`
  /// lanes along its last dim: a spatial stage whose last dim is a static
  /// multiple of it. Reports the error at its schedule entry otherwise.
  bool checkVectorWidth(const KStage &stage, int64_t vector);
  /// The error for a vector loop asked to hold the per-element statements
  /// of `stage`'s thread-level stages.
  bool errorThreadStagesInVector(const KStage &stage) {
    return error(scheduleOf(stage.buffer).loc, "a vector loop cannot hold the thread-level "
                                               "stages '%" +
                                                   stage.buffer +
                                                   "' computes per element; use vector = 1");
  }
  /// The schedule entry of `buffer` when it is computed at thread level.
  const StageSchedule *threadLevelEntry(llvm::StringRef buffer) const {
    const StageSchedule *entry = kernel.schedule.find(buffer);
    return entry && entry->placement == StageSchedule::ComputeAt &&
                   entry->level == StageSchedule::Thread
               ? entry
               : nullptr;
  }
  bool emitFlat(const KStage &stage, const StageMapping &mapping);
  bool emitRows(const KStage &stage, const StageMapping &mapping);
  /// A spatial stage whose threads each walk rows of their columns
  /// (LowerColumns.cpp).
  bool emitColumns(const KStage &root, const StageMapping &mapping);
  /// The columns mapping's block-level stages (one element per row of the
  /// block's walk), each into shared memory before a barrier.
  bool emitColumnsBlockStages(const KStage &root, const std::vector<KExprPtr> &rowExtents,
                              const KExprPtr &rowBlock, int64_t walk, const std::string &rowVar);
  /// A contraction tiled through shared memory (LowerTiles.cpp).
  bool emitTiles(const KStage &root, const StageMapping &mapping);
  /// The block-level statements of one K step on tensor cores: fragments
  /// loaded with ldmatrix, one mma per 16 x 8 piece (LowerTileFragments.cpp).
  std::vector<LStmt> emitMmaStep(const MmaStep &step);
  /// A reduction computed by the whole block for the row at `rowCoords`.
  bool emitBlockReduction(const KStage &stage, const std::vector<KExprPtr> &rowCoords,
                          const std::string &target, std::vector<KExprPtr> targetIndices);
  /// A spatial stage whose threads stride over the inner extents of a row.
  bool emitStrided(const KStage &stage, const std::vector<KExprPtr> &rowCoords,
                   int64_t vector, bool toShared);
  /// A reduction folded serially by one thread into a fresh local; the
  /// statements go to `out`; returns the local's name.
  std::string emitSerialReduction(const KStage &stage, std::map<std::string, KExprPtr> bindings,
                                  std::vector<LStmt> &out, bool &ok);
  /// `stage`'s body (in its variables) with block-level producers read from
  /// shared memory, `bindings` substituted and thread-level reductions
  /// expanded into `pre`.
  /// With `hoist`, a global element the value reads unconditionally more than
  /// once is loaded once into a local first (a register, as CUDA would keep
  /// it), which the counters then count once.
  KExprPtr lowerValue(const KStage &stage, const std::map<std::string, KExprPtr> &bindings,
                      std::vector<LStmt> &pre, bool &ok, bool hoist = true);
  KExprPtr hoistRepeatedLoads(KExprPtr value, std::vector<LStmt> &pre);
  /// A thread-level stage's element at `indices`, computed into a fresh
  /// local by statements appended to `pre`; returns the local.
  std::string computeThreadStage(const KStage &producer, const std::vector<KExprPtr> &indices,
                                 std::vector<LStmt> &pre, bool &ok);
  /// What identifies one element of a thread-level stage within a value.
  std::string threadStageKey(const std::string &buffer, const std::vector<KExprPtr> &indices);
  /// The dtype a thread-level stage's local holds (a reduction's
  /// accumulation dtype).
  DType threadStageDType(const std::string &buffer);
  KExprPtr combine(const KStage &stage, const std::string &acc, KExprPtr value) {
    return KExpr::call(stage.combiner, {KExpr::load(acc, {cnst(0)}, stage.accumulate),
                                        castTo(value, stage.accumulate)},
                       stage.accumulate);
  }

  Kernel &kernel;
  DiagEngine &diag;
  llvm::raw_ostream *remarks; // --remarks
  std::vector<KStage> stages; // bodies with inline stages substituted
  std::set<std::string> usedVars, usedBuffers;
  std::map<std::string, std::string> sharedOf; // block-level stage -> shared buffer
  std::map<std::string, int64_t> rowRankOf;    // block-level stage -> rows it shares
  /// A columns mapping's block-level stage -> the walk's row within the
  /// block, whose element of the shared copy a load reads (a rows mapping's
  /// block has one row: none).
  std::map<std::string, KExprPtr> sharedRowOf;
  /// Thread-level elements a columns mapping computed before its walk
  /// (threadStageKey -> the load of their local), which lowerValue reads.
  std::map<std::string, KExprPtr> hoistedThreadValues;
  LLaunch *launch = nullptr;
};


} // namespace lowering
} // namespace fusec

#endif
