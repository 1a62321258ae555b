//===- Kernel.h - The FIR kernel-level IR ------------------------*- C++ -*-===//
//
// A kernel is a list of stages in index notation (spec §5):
//
//   kernel @mean(%x: f16[n,64]) -> (%out: f16[n]) attributes {...} {
//     internal %sum: f32[n]
//     %sum[i0] = reduce add(%x[i0, r0]) over (r0: 64) init 0.0 in f32
//     %out[i0] = divide(%sum[i0], 64.0)
//   }
//
// Each stage writes one buffer (a kernel result or an `internal` buffer)
// over the spatial iteration variables named on its left-hand side, one per
// buffer dimension; a reduction stage adds reduction variables with their
// extents, a combiner (add, multiply, max, min), an init value and the
// accumulation dtype (f32 for f16/bf16 inputs). Index expressions are
// integer arithmetic over iteration variables and symbolic dims (`+ - *`,
// `floordiv`, `mod`, `min`, `max`), predicates (`< <= > >= == != && || !`)
// and `select`, so that passes can analyse them. Symbolic dims of the
// parameter types are the kernel's scalar parameters.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_IR_KERNEL_H
#define FUSEC_IR_KERNEL_H

#include "fusec/IR/IR.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <map>
#include <memory>

namespace fusec {

struct KExpr;
using KExprPtr = std::shared_ptr<const KExpr>;

/// A node of a stage's expression. Index nodes have dtype i64, predicates
/// bool; value nodes carry the dtype they compute in.
struct KExpr {
  enum Kind {
    IntConst, // 3
    Var,      // an iteration variable or a symbolic dim
    Add, Sub, Mul, FloorDiv, Mod, Min, Max,
    Lt, Le, Gt, Ge, Eq, Ne, And, Or, Not,
    Literal, // a value constant in `dtype`
    Load,    // %buf[indices...]
    Call,    // a value operation: add, exp, ... (`name`)
    Cast,    // f32(x): conversion to `dtype`
    Select,  // select(cond, a, b)
  };
  Kind kind = IntConst;
  DType dtype = DType::i64;
  std::string name; // Var, Load (buffer), Call (operation)
  std::vector<KExprPtr> args;
  /// IntConst; a Literal of an integer dtype holds its exact value here
  /// (and the nearest double in floatValue).
  int64_t intValue = 0;
  double floatValue = 0; // Literal
  /// Where the parser read it (its first token), for the verifier's caret;
  /// none for the expressions passes build.
  llvm::SMLoc loc;

  bool isIndexArith() const { return kind >= Add && kind <= Max; }
  bool isPredicate() const { return kind >= Lt && kind <= Not; }
  static KExprPtr intConst(int64_t value);
  static KExprPtr var(std::string name);
  static KExprPtr binary(Kind kind, KExprPtr lhs, KExprPtr rhs);
  static KExprPtr literal(double value, DType dtype);
  /// An integer literal, exact beyond 2^53.
  static KExprPtr intLiteral(int64_t value, DType dtype);
  static KExprPtr load(std::string buffer, std::vector<KExprPtr> indices,
                       DType dtype);
  static KExprPtr call(std::string op, std::vector<KExprPtr> args, DType dtype);
  static KExprPtr cast(KExprPtr value, DType dtype);
  static KExprPtr select(KExprPtr cond, KExprPtr a, KExprPtr b);
};

/// Structural equality (the analysis compares index expressions this way).
bool equalExprs(const KExpr &a, const KExpr &b);
std::string printExpr(const KExpr &expr);
/// Prints a value expression whose bare literals read back as `context`.
std::string printValueExpr(const KExpr &expr, DType context);

/// The value operations a stage may call, with their arity and whether they
/// return bool. Their names are the keys of the interpreter's counters.
struct KernelOpInfo {
  const char *name;
  int arity;
  bool returnsBool;
};
const KernelOpInfo *lookupKernelOp(llvm::StringRef name);

/// CUDA's limits on the memory a launch declares: static `__shared__`
/// arrays per block, and local arrays per thread.
constexpr int64_t kMaxStaticSharedBytes = 48 * 1024;
constexpr int64_t kMaxLocalBytesPerThread = 512 * 1024;

struct KBuffer {
  /// Input/Output/Internal are the kernel's tensors (after `lower`, an
  /// internal buffer is global scratch memory the launcher allocates);
  /// Shared and Local are declared by a lowered launch: one copy per thread
  /// block, and one per thread.
  enum Role { Input, Output, Internal, Shared, Local };
  std::string name;
  Type type;
  Role role = Input;
  llvm::SMLoc loc;
};

/// The value reduction combiner `combiner` (add, multiply, max, min) leaves
/// unchanged in `dtype`, a reduction's usual init (INT64_MAX as the double
/// 2^63, which KStage::setInit and KExpr::literal read back exactly).
double combinerIdentity(llvm::StringRef combiner, DType dtype);

struct KStage {
  std::string buffer; // the buffer written
  std::vector<std::string> spatialVars;
  KExprPtr body;
  // Reduction stages only.
  std::string combiner; // add, multiply, max, min; empty for a spatial stage
  std::vector<std::pair<std::string, Dim>> reduceVars;
  double init = 0;
  /// The init of an integer accumulator, exact (`init` is its nearest
  /// double: INT64_MAX, min's init, is not one).
  int64_t intInit = 0;
  DType accumulate = DType::f32;
  llvm::SMLoc loc;

  bool isReduction() const { return !combiner.empty(); }
  void setInit(double value) {
    init = value;
    intInit = saturatingInt64(value);
  }
  /// The init as a literal of the accumulation dtype.
  KExprPtr initLiteral() const {
    return isIntDType(accumulate) ? KExpr::intLiteral(intInit, accumulate)
                                  : KExpr::literal(init, accumulate);
  }
  /// The combiner's identity as a literal of the accumulation dtype.
  KExprPtr identityLiteral() const;
};

//===----------------------------------------------------------------------===//
// Schedules (printed with the kernel; chosen by `schedule`, applied by `lower`)
//===----------------------------------------------------------------------===//

/// How a root stage's domain maps onto the GPU.
struct StageMapping {
  enum Kind {
    /// The spatial domain flattened and split into blocks of `threads`
    /// threads, each thread computing `vector` consecutive elements (one
    /// vector access per contiguous operand); a reduction's loops run
    /// serially inside the thread.
    Flat,
    /// One thread block per row: all spatial dims but the last `inner` ones.
    /// A reduction (inner = 0) is reduced by the block's threads together
    /// (strided loads, warp shuffles, shared memory across warps); a
    /// spatial stage's threads stride over the row's inner elements.
    Rows,
    /// A contraction (matmul, batched matmul, convolution as implicit GEMM)
    /// tiled: each block computes a blockM x blockN tile of the output,
    /// stepping through the reduction blockK at a time with both operand
    /// tiles staged in shared memory; each thread accumulates a threadM x
    /// threadN sub-tile in registers, then applies the elementwise epilogue
    /// to it before the store.
    Tiles,
    /// Columns: the last `inner` dims (flattened) are columns, the others
    /// rows. Each thread owns `vector` consecutive columns and walks `rows`
    /// consecutive rows of them; blocks of `threads` threads tile the
    /// columns, then the rows. A stage computed at thread level whose
    /// indices do not move with the row (a column broadcast, `%s[0, j]`
    /// or `%s[j]` in `[i, j]`) is computed once per thread, before the
    /// walk, into registers.
    Columns,
  };
  Kind kind = Flat;
  int64_t threads = 256;
  int64_t vector = 1;
  int64_t inner = 0; // Rows and Columns
  int64_t rows = 16; // Columns only
  // Tiles only. SIMT: threads = (blockM / threadM) * (blockN / threadN).
  // With `mma` (tensor cores, f16/bf16 operands, f32 accumulation): each
  // warp computes a warpM x warpN sub-tile with mma.sync m16n8k16, blockK
  // is 16, and threads = 32 * (blockM / warpM) * (blockN / warpN).
  int64_t blockM = 64, blockN = 64, blockK = 16, threadM = 4, threadN = 4;
  bool mma = false;
  int64_t warpM = 32, warpN = 32;
};

/// Where one stage is computed.
struct StageSchedule {
  enum Placement {
    Root,      // its own loop nest (an internal root stage is materialized to
               // global memory)
    Inline,    // substituted into every load of it (recomputed per use)
    ComputeAt, // computed inside `consumer`'s loops at `level`
  };
  enum Level {
    Block,  // once per thread block, for that block's row, in shared memory
    Thread, // in the thread's registers, once per index tuple the thread
            // reads (per element, or once per walk of a columns mapping)
  };
  std::string stage; // the buffer the stage writes
  Placement placement = Root;
  StageMapping mapping; // Root
  std::string consumer; // ComputeAt
  Level level = Block;  // ComputeAt
  llvm::SMLoc loc;
};

struct KSchedule {
  std::string rule; // the rule that chose it, e.g. "elementwise"
  std::vector<StageSchedule> stages; // one per stage, in stage order
  bool empty() const { return rule.empty() && stages.empty(); }
  const StageSchedule *find(llvm::StringRef stage) const;
  StageSchedule *find(llvm::StringRef stage);
};

//===----------------------------------------------------------------------===//
// The lowered, loop-level form (produced by `lower`)
//===----------------------------------------------------------------------===//

/// One statement of a launch. Block-level statements (the launch body) are
/// Parallel, Barrier, Shuffle and For (a loop every thread of the block runs
/// in step, its extent the same for all threads); a Parallel body holds
/// For, If and Store.
struct LStmt {
  enum Kind {
    Parallel, // every thread of the block runs the body (`parallel { }`)
    Barrier,  // __syncthreads()
    Shuffle,  // %dst[i] = shfl_xor|shfl_down(%src[j], offset): all threads
    Mma,      // %d[i] = mma_m16n8k16(%a[j], %b[k], %c[l]): each warp, on the
              // fragments its lanes hold (docs/ir.md#mma), all threads
    LdMatrix,    // %d[i] = ldmatrix_xN[_trans](%t[j]): each warp loads N 8 x 8
                 // matrices of 16-bit elements from shared memory into
                 // fragments, lane 8m + r giving row r of matrix m
                 // (docs/ir.md#ldmatrix), all threads
    AsyncCopy,   // %dst[i] = async_copy(%src[j], width, valid): one thread starts
                 // copying `width` elements (the first `valid` from global
                 // memory, the rest zeros) into shared memory (cp.async)
    AsyncCommit, // async_commit: every thread closes its group of started copies
    AsyncWait,   // async_wait(n): every thread waits until at most n of its
                 // committed groups are pending (docs/ir.md#asynchronous-copies)
    For,      // for var in serial|unroll|vector(extent) { body }
    If,       // if cond { body } else { elseBody }
    Store,    // %buffer[indices] = value
  };
  enum LoopKind { Serial, Unroll, Vector };
  Kind kind = Store;
  // For
  LoopKind loopKind = Serial;
  std::string var;
  KExprPtr extent;
  // If
  KExprPtr cond;
  // Store and Shuffle (the shuffled value is `value`, a load of a local)
  std::string buffer;
  std::vector<KExprPtr> indices;
  KExprPtr value;
  std::string shuffleMode; // "xor" or "down"
  int64_t shuffleOffset = 0;
  std::vector<KExprPtr> operands; // Mma: loads of the A, B and C fragments
  // AsyncCopy: the elements copied (`value` is the load of the first, `extent`
  // how many come from memory); AsyncWait: the groups left pending;
  // LdMatrix: the matrices loaded (1, 2 or 4; `value` is the load of the
  // lane's row), `transpose` for the .trans form.
  int64_t count = 0;
  bool transpose = false;
  std::vector<LStmt> body, elseBody;
  llvm::SMLoc loc;
};

/// One kernel launch: a 1-D grid of `gridSize` blocks of `threads` threads.
struct LLaunch {
  std::string blockVar = "bx", threadVar = "tx";
  KExprPtr gridSize;
  int64_t threads = 256;
  std::vector<KBuffer> buffers; // Shared and Local
  std::vector<LStmt> body;
  llvm::SMLoc loc;
};

/// TVM's OpPatternKind lattice, same order and values; combining along a
/// path takes the max.
enum class OpPatternKind {
  ElemWise = 0,
  Broadcast = 1,
  Injective = 2,
  CommReduce = 3,
  OutEWiseFusable = 4,
  Tuple = 7,
  Opaque = 8,
};

/// The kind of a path through `a` and `b`: the larger of the two.
inline OpPatternKind combinePatternKinds(OpPatternKind a, OpPatternKind b) {
  return static_cast<int>(a) >= static_cast<int>(b) ? a : b;
}

/// The spelling of a kind in `op_pattern = "..."` (spec §5). Here rather
/// than beside the analysis because the verifier checks a hand-written
/// `op_pattern` on every input.
llvm::StringRef patternKindName(OpPatternKind kind);
std::optional<OpPatternKind> parsePatternKind(llvm::StringRef name);

struct Kernel {
  std::string name;
  llvm::SMLoc loc;
  std::vector<KBuffer> inputs, outputs, internals;
  std::vector<KStage> stages;
  Attrs attrs;
  KSchedule schedule;            // empty until `schedule`
  std::vector<LLaunch> launches; // after `lower` (then `stages` is empty)

  bool isLowered() const { return !launches.empty(); }

  const KBuffer *findBuffer(llvm::StringRef name) const;
  /// The stage that writes `buffer`, or null.
  const KStage *findStage(llvm::StringRef buffer) const;
  /// The result type of `call_kernel`: one output is a tensor, several a
  /// tuple; `attributes {tuple_result = true}` makes one output a 1-tuple
  /// (`split` into one section).
  Type getResultType() const;
  /// Symbolic dims bound by the input types, in first-appearance order.
  std::vector<std::string> getSymbolicDims() const;
};

//===----------------------------------------------------------------------===//
// Rewriting stage expressions (KernelRewrite.cpp)
//===----------------------------------------------------------------------===//

/// Index arithmetic is int64 arithmetic that wraps, as the generated code's
/// does; in C++ a signed overflow would be undefined, so folding and the
/// interpreter compute through these.
inline int64_t wrappingAdd(int64_t a, int64_t b) { return int64_t(uint64_t(a) + uint64_t(b)); }
inline int64_t wrappingSub(int64_t a, int64_t b) { return int64_t(uint64_t(a) - uint64_t(b)); }
inline int64_t wrappingMul(int64_t a, int64_t b) { return int64_t(uint64_t(a) * uint64_t(b)); }

/// Index arithmetic with constants folded and the identities of the
/// lowering simplified (x + 0, x * 1, floordiv(x, 1), mod(x, 1),
/// floordiv(c * x, c), mod(c * x, c)).
KExprPtr foldIndex(KExpr::Kind kind, KExprPtr lhs, KExprPtr rhs);
/// An index expression with every index-arithmetic node refolded, constant
/// subtrees included (`128 * 32` becomes 4096); other nodes are kept.
KExprPtr foldIndexTree(const KExprPtr &e);
/// `e` with variables replaced by `bindings` (and index arithmetic refolded).
KExprPtr substituteVars(const KExprPtr &e,
                        const std::map<std::string, KExprPtr> &bindings);
/// `e` with each load (innermost first) replaced by `rewrite(load, indices)`
/// when that returns non-null; `indices` are the load's rewritten indices.
KExprPtr rewriteLoads(
    const KExprPtr &e,
    llvm::function_ref<KExprPtr(const KExpr &load, const std::vector<KExprPtr> &indices)>
        rewrite);
/// `e` with every load of spatial `stage`'s buffer replaced by its body, the
/// stage's variables bound to the load's indices.
KExprPtr inlineStage(const KExprPtr &e, const KStage &stage);
/// The most expression nodes, counted as a tree (a shared subexpression
/// once per use, as printing and code generation see it), that a stage may
/// have and still be inlined: inlining copies a producer's expression into
/// every load of it, so a chain whose stages read their producer twice
/// (x * sigmoid(x)) or through an index used twice (a reshape's floordiv and
/// mod of one flat index) doubles at every stage. `schedule` does not look
/// through such a stage and `lower` materializes it.
constexpr int64_t kMaxInlinedNodes = int64_t(1) << 11;
/// Whether `e`, as a tree, has more than kMaxInlinedNodes nodes (a walk
/// linear in the shared form).
bool exceedsInliningLimit(const KExpr &e);
bool usesVar(const KExpr &e, llvm::StringRef var);
/// Whether `e` loads `buffer` anywhere.
bool loadsBuffer(const KExpr &e, llvm::StringRef buffer);
/// How many loads of `buffer` `e` holds.
int64_t countLoads(const KExpr &e, llvm::StringRef buffer);
/// Whether `e` loads any buffer.
bool hasLoad(const KExpr &e);
/// The largest constant known to divide `e` (1 when nothing is known).
int64_t knownMultipleOf(const KExpr &e);

/// How a load or store inside a vector loop over `lane` (of `width` lanes)
/// touches memory: one element for all lanes, one aligned vector of
/// consecutive elements (the last index is `base + lane` with `base` a known
/// multiple of `width`, and the buffer's static last dim a multiple of
/// `width`), or one element per lane.
enum class LaneAccess { Uniform, Contiguous, Gather };
LaneAccess classifyLaneAccess(const std::vector<KExprPtr> &indices, const Type &bufferType,
                              llvm::StringRef lane, int64_t width);

/// A load of `stage` that reads outside its buffer at some point of the
/// stage's domain, certainly (an affine index over static extents, not in a
/// select arm; KernelBounds.cpp): a message naming it, with `where` set to
/// its location, or "" when none is found.
std::string findLoadOutOfBounds(const Kernel &kernel, const KStage &stage, llvm::SMLoc &where);

/// Checks a kernel: buffers unique, each stage writes an output or internal
/// buffer with one variable per dimension, every load names a buffer with
/// the right rank, variables are in scope, dtypes agree, every output is
/// written; a schedule agrees with the stages; a lowered kernel's launches
/// are well formed. Emits located diagnostics.
bool verifyKernel(const Kernel &kernel, DiagEngine &diag,
                  llvm::StringRef context = {});
std::string printKernel(const Kernel &kernel);
/// Checks a schedule against the stages: one entry per stage in order,
/// outputs are roots, compute-at consumers exist and come later, mappings
/// are sane (threads in [1, 1024], a power-of-two vector width).
bool verifySchedule(const Kernel &kernel, DiagEngine &diag,
                    llvm::StringRef context = {});
std::string printSchedule(const Kernel &kernel);
/// A mapping kind's spelling in a schedule: flat, rows, tiles, columns.
llvm::StringRef mappingKindName(StageMapping::Kind kind);
std::string printLaunch(const LLaunch &launch);

} // namespace fusec

#endif // FUSEC_IR_KERNEL_H
