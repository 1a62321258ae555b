//===- LoweredExec.cpp - Running the loop-level form ----------------------===//
//
// A lowered kernel runs launch by launch, block by block. Within a block the
// launch body's statements run in order: a `parallel` region runs its body
// for every thread before the next statement, so a barrier needs no action
// — every thread has finished the previous phase when the next begins. The
// threads run in lockstep batches of up to kBatch: each statement for the
// batch (values, then stores), an `if` for each run of neighbouring threads
// taking the same branch, a loop whose extent reads the thread variable
// thread by thread. Without races (a thread writing what another thread of
// the same region reads, which a GPU does not order either) the results
// are those of running the threads one after another. A shuffle reads
// every thread's source local first, then writes every destination, with
// CUDA's lane rules (xor: lane ^ offset; down:
// lane + offset, or the thread's own value past the warp's end). Shared
// buffers and locals start each block as NaN, so a read before a write
// shows up in the results instead of passing by accident.
//
// An mma runs per warp on the fragments its lanes hold, with the PTX
// m16n8k16 layout (lane = 4 * g + t): A element i of a lane is row
// g + 8 * ((i / 2) % 2), column 2t + i % 2 + 8 * (i / 4); B element i is
// row (k) 2t + i % 2 + 8 * (i / 2), column g; C/D element i is row
// g + 8 * (i / 2), column 2t + i % 2. D = C + A B, each product exact, the
// sum taken in k order in f32 (rounded after every add), and counted as
// 16 * 8 * 16 multiplies and adds per warp.
//
// An ldmatrix runs per warp: lane 8m + r names (by its own index
// expression) the start of row r of matrix m, 8 consecutive elements at a
// multiple of 8; lane 4g + q receives, per matrix m, elements (g, 2q) and
// (g, 2q + 1) into fragment elements 2m and 2m + 1 (with _trans, (2q, g)
// and (2q + 1, g)). Lanes past the matrices' rows name nothing.
//
// An async_copy runs as cp.async may: the thread reads its source when it
// starts the copy, but the elements land in shared memory only when an
// async_wait retires the copy's committed group; until then they hold NaN.
// So a tile read before its wait, or a copy started into a tile another
// thread still reads, poisons the results instead of passing by accident
// (the CPU runs threads one after another, where a GPU would race).
//
// A launch with enough blocks runs them on a pool of worker threads
// (setInterpreterThreads), each worker with its own compiled copy of the
// body, shared memory and locals, and counters that are summed afterwards.
// Blocks share only global memory, whose elements they write disjointly, so
// the results, the counters and the first error (in block order) are those
// of running the blocks one after another.
//
// Counting follows the emitted code: global loads and stores count their
// bytes, except that a load which does not depend on a vector loop's lane
// is made once for the vector (counted at lane 0); a contiguous vector
// access must be aligned to its width (checked at lane 0).
//
//===----------------------------------------------------------------------===//
#include "ExecNodes.h"

#include <deque>

using namespace fusec;
using namespace fusec::exec;

namespace {

struct Stmt {
  virtual ~Stmt() = default;
  virtual void exec(int64_t *vars) = 0;
  /// Runs the statement for the threads vars[slot] = start .. start +
  /// count - 1 (vars[slot] holds start; count <= kBatch). The default runs
  /// them one after another; statements that batch run them in lockstep.
  virtual void execBatch(int64_t *vars, int slot, int64_t count) {
    int64_t start = vars[slot];
    for (int64_t t = 0; t < count; ++t) {
      vars[slot] = start + t;
      exec(vars);
    }
    vars[slot] = start;
  }
};
using StmtPtr = std::unique_ptr<Stmt>;

struct Sequence final : Stmt {
  std::vector<StmtPtr> stmts;
  void exec(int64_t *vars) override {
    for (StmtPtr &stmt : stmts)
      stmt->exec(vars);
  }
  void execBatch(int64_t *vars, int slot, int64_t count) override {
    for (StmtPtr &stmt : stmts)
      stmt->execBatch(vars, slot, count);
  }
};

/// An extent as a count of iterations. One at or past 2^53 is refused: no
/// interpreter finishes that many anyway.
static int64_t tripCount(int64_t count, const char *what) {
  if (count >= (int64_t(1) << 53))
    throw ExecError{std::string(what) + " of " + std::to_string(count) +
                    " iterations is more than the interpreter runs (2^53)"};
  return count;
}

/// The iterations of a loop nest: blocks x threads x the trip counts of the
/// loops around a statement. Each loop checks the product with its own trip
/// count, as the stage interpreter checks a domain's, so a nest of
/// 2^40 x 2^24 iterations is refused when entered instead of running for
/// ever (each extent on its own passes tripCount).
class NestedTrips {
public:
  void reset(int64_t blocks, int64_t threads) {
    product = blocks * threads; // below 2^63: blocks < 2^53, threads <= 1024
    if (product >= (int64_t(1) << 53))
      throw ExecError{"a grid of " + std::to_string(blocks) + " blocks of " +
                      std::to_string(threads) +
                      " threads is more than the interpreter runs (2^53 iterations)"};
  }
  /// Multiplies the product by `trips` for the scope's lifetime.
  class Scope {
  public:
    Scope(NestedTrips &nest, int64_t trips) : nest(nest), saved(nest.product) {
      int64_t product;
      if (__builtin_mul_overflow(saved, std::max<int64_t>(trips, 0), &product) ||
          product >= (int64_t(1) << 53))
        throw ExecError{"a loop of " + std::to_string(trips) + " iterations nested in " +
                        std::to_string(saved) +
                        " others (blocks x threads x enclosing loops) is more than the "
                        "interpreter runs (2^53)"};
      nest.product = product;
    }
    ~Scope() { nest.product = saved; }

  private:
    NestedTrips &nest;
    int64_t saved;
  };

private:
  int64_t product = 1;
};

struct ForLoop final : Stmt {
  int slot;
  NodePtr extent;
  StmtPtr body;
  NestedTrips *nest;
  bool uniformExtent = false; // the same for every thread of a batch
  void exec(int64_t *vars) override {
    int64_t trips = tripCount(extent->evalInt(vars), "a loop");
    NestedTrips::Scope scope(*nest, trips);
    for (int64_t i = 0; i < trips; ++i) {
      vars[slot] = i;
      body->exec(vars);
    }
  }
  void execBatch(int64_t *vars, int threadSlot, int64_t count) override {
    if (!uniformExtent)
      return Stmt::execBatch(vars, threadSlot, count);
    int64_t trips = tripCount(extent->evalInt(vars), "a loop");
    NestedTrips::Scope scope(*nest, trips);
    for (int64_t i = 0; i < trips; ++i) {
      vars[slot] = i;
      body->execBatch(vars, threadSlot, count);
    }
  }
};

struct IfThen final : Stmt {
  NodePtr cond;
  StmtPtr then, otherwise;
  void exec(int64_t *vars) override {
    if (cond->eval(vars) != 0)
      then->exec(vars);
    else
      otherwise->exec(vars);
  }
  /// Each run of neighbouring threads that take the same branch runs it
  /// as one batch.
  void execBatch(int64_t *vars, int slot, int64_t count) override {
    double taken[kBatch];
    cond->evalBatch(vars, slot, count, taken);
    int64_t start = vars[slot];
    forEachRun(taken, count, [&](int64_t from, int64_t to, bool branch) {
      vars[slot] = start + from;
      (branch ? then : otherwise)->execBatch(vars, slot, to - from);
    });
    vars[slot] = start;
  }
};

struct StoreTo final : Stmt {
  Buffer *buffer;
  std::vector<IndexCalc> indices;
  NodePtr value;
  int64_t *bytesWritten;
  int64_t elementBytes;
  int laneSlot = -1;
  bool uniformInLane = false;
  int64_t vectorWidth = 0;
  SplitOffsets split;
  void exec(int64_t *vars) override {
    double result = value->eval(vars);
    int64_t offset = Load::elementOffset(*buffer, indices, vars);
    if (vectorWidth && vars[laneSlot] == 0 && offset % vectorWidth != 0)
      throw Load::misaligned(*buffer, "store to", offset);
    buffer->data[offset] = convertValue(result, value->dtype, buffer->dtype);
    if (!buffer->written.empty())
      buffer->written[offset] = 1;
    if (buffer->global && !(uniformInLane && vars[laneSlot] != 0))
      *bytesWritten += elementBytes;
  }
  /// Every thread of the batch computes its value, then every thread
  /// stores (threads that store where another thread of the same region
  /// reads race on a GPU too). In a vector loop the batch is one lane.
  void execBatch(int64_t *vars, int slot, int64_t count) override {
    if (laneSlot >= 0 && laneSlot == slot)
      return Stmt::execBatch(vars, slot, count);
    double values[kBatch];
    value->evalBatch(vars, slot, count, values);
    int64_t scratch[kBatch];
    BatchAddresses addresses = addressBatch(*buffer, indices, split, vars, slot, count, scratch);
    if (vectorWidth && vars[laneSlot] == 0)
      checkVectorStarts(addresses, count, vectorWidth, *buffer, "store to");
    for (int64_t t = 0; t < count; ++t)
      buffer->data[addresses.at(t)] = convertValue(values[t], value->dtype, buffer->dtype);
    if (!buffer->written.empty())
      for (int64_t t = 0; t < count; ++t)
        buffer->written[addresses.at(t)] = 1;
    if (buffer->global && !(uniformInLane && vars[laneSlot] != 0))
      *bytesWritten += elementBytes * count;
  }
};

struct ParallelRegion final : Stmt {
  int threadSlot;
  int64_t threads;
  StmtPtr body;
  void exec(int64_t *vars) override {
    for (int64_t start = 0; start < threads; start += kBatch) {
      vars[threadSlot] = start;
      body->execBatch(vars, threadSlot, std::min(kBatch, threads - start));
    }
  }
};

struct Shuffle final : Stmt {
  Buffer *dst, *src;
  int64_t dstOffset, srcOffset, offset, threads;
  bool isXor;
  std::vector<double> values;
  void exec(int64_t *) override {
    values.resize(threads);
    for (int64_t t = 0; t < threads; ++t) {
      int64_t lane = t % 32, warp = t - lane;
      int64_t source = isXor ? (lane ^ offset) : (lane + offset < 32 ? lane + offset : lane);
      values[t] = src->data[(warp + source) * src->threadStride + srcOffset];
    }
    for (int64_t t = 0; t < threads; ++t)
      dst->data[t * dst->threadStride + dstOffset] = values[t];
  }
};

struct Mma final : Stmt {
  Buffer *d, *a, *b, *c;
  int64_t dOffset, aOffset, bOffset, cOffset, threads;
  int64_t *multiplies, *adds;
  void exec(int64_t *) override {
    double A[16][16], B[16][8], C[16][8];
    for (int64_t warp = 0; warp + 32 <= threads; warp += 32) {
      for (int64_t lane = 0; lane < 32; ++lane) {
        int64_t t = warp + lane, g = lane / 4, q = lane % 4;
        for (int64_t i = 0; i < 8; ++i)
          A[g + 8 * ((i / 2) % 2)][2 * q + i % 2 + 8 * (i / 4)] =
              a->data[t * a->threadStride + aOffset + i];
        for (int64_t i = 0; i < 4; ++i) {
          B[2 * q + i % 2 + 8 * (i / 2)][g] = b->data[t * b->threadStride + bOffset + i];
          C[g + 8 * (i / 2)][2 * q + i % 2] = c->data[t * c->threadStride + cOffset + i];
        }
      }
      for (int64_t lane = 0; lane < 32; ++lane) {
        int64_t t = warp + lane, g = lane / 4, q = lane % 4;
        for (int64_t i = 0; i < 4; ++i) {
          int64_t row = g + 8 * (i / 2), col = 2 * q + i % 2;
          double sum = C[row][col];
          for (int64_t k = 0; k < 16; ++k)
            sum = roundFast(sum + A[row][k] * B[k][col], DType::f32); // the product is exact
          d->data[t * d->threadStride + dOffset + i] = sum;
        }
      }
      *multiplies += 16 * 8 * 16;
      *adds += 16 * 8 * 16;
    }
  }
};

struct LdMatrix final : Stmt {
  Buffer *dst, *src;
  std::vector<IndexCalc> rowIndices;
  int64_t dstOffset, matrices, threads;
  int threadSlot;
  bool transpose;
  void exec(int64_t *vars) override {
    int64_t rows[32];
    for (int64_t warp = 0; warp + 32 <= threads; warp += 32) {
      for (int64_t lane = 0; lane < 8 * matrices; ++lane) {
        vars[threadSlot] = warp + lane;
        int64_t row = Load::elementOffset(*src, rowIndices, vars);
        if (row % 8 != 0 || row + 8 > int64_t(src->data.size()))
          throw ExecError{"ldmatrix row of lane " + std::to_string(lane) + " at element " +
                          std::to_string(row) + " of %" + src->name +
                          " is not 8 aligned elements inside it"};
        rows[lane] = row;
      }
      for (int64_t lane = 0; lane < 32; ++lane) {
        int64_t g = lane / 4, q = lane % 4;
        double *out = &dst->data[(warp + lane) * dst->threadStride + dstOffset];
        for (int64_t m = 0; m < matrices; ++m)
          for (int64_t half = 0; half < 2; ++half)
            out[2 * m + half] = transpose ? src->data[rows[8 * m + 2 * q + half] + g]
                                          : src->data[rows[8 * m + g] + 2 * q + half];
      }
    }
  }
};

/// The copies each thread has started and not yet seen land.
struct AsyncState {
  struct Copy {
    Buffer *dst;
    int64_t offset;
    std::vector<double> values; // then zeros up to `width`
    int64_t width;
  };
  std::vector<std::vector<Copy>> open;              // per thread, uncommitted
  std::vector<std::deque<std::vector<Copy>>> groups; // per thread, committed
  void reset(int64_t threads) {
    open.assign(threads, {});
    groups.assign(threads, {});
  }
  static void land(const std::vector<Copy> &group) {
    for (const Copy &copy : group)
      for (int64_t i = 0; i < copy.width; ++i)
        copy.dst->data[copy.offset + i] =
            i < int64_t(copy.values.size()) ? copy.values[i] : 0.0;
  }
};

struct AsyncCopy final : Stmt {
  Buffer *dst, *src;
  std::vector<IndexCalc> dstIndices, srcIndices;
  NodePtr valid;
  int64_t width, elementBytes;
  int threadSlot;
  int64_t *bytesRead;
  AsyncState *state;
  void exec(int64_t *vars) override {
    int64_t count = valid->evalInt(vars);
    if (count < 0 || count > width)
      throw ExecError{"async_copy into %" + dst->name + " reads " + std::to_string(count) +
                      " elements; it copies " + std::to_string(width)};
    int64_t to = Load::elementOffset(*dst, dstIndices, vars);
    if (to % width != 0 || to + width > int64_t(dst->data.size()))
      throw ExecError{"async_copy into %" + dst->name + " at element " + std::to_string(to) +
                      " is not aligned to its " + std::to_string(width) +
                      " elements or runs past the end"};
    AsyncState::Copy copy{dst, to, {}, width};
    if (count > 0) {
      int64_t from = Load::elementOffset(*src, srcIndices, vars);
      if (from % width != 0 || from + count > int64_t(src->data.size()))
        throw ExecError{"async_copy from %" + src->name + " at element " +
                        std::to_string(from) + " is not aligned to its " +
                        std::to_string(width) + " elements or runs past the end"};
      copy.values.assign(src->data.begin() + from, src->data.begin() + from + count);
      *bytesRead += count * elementBytes;
    }
    std::fill(dst->data.begin() + to, dst->data.begin() + to + width, NAN);
    state->open[vars[threadSlot]].push_back(std::move(copy));
  }
};

struct AsyncCommit final : Stmt {
  AsyncState *state;
  void exec(int64_t *) override {
    for (size_t t = 0; t < state->open.size(); ++t)
      state->groups[t].push_back(std::move(state->open[t])), state->open[t].clear();
  }
};

struct AsyncWait final : Stmt {
  AsyncState *state;
  size_t pending;
  void exec(int64_t *) override {
    for (auto &groups : state->groups)
      while (groups.size() > pending) {
        AsyncState::land(groups.front());
        groups.pop_front();
      }
  }
};

struct Nothing final : Stmt {
  void exec(int64_t *) override {}
};

class LaunchCompiler {
public:
  LaunchCompiler(const Kernel &kernel, Compiler &compiler) : kernel(kernel), compiler(compiler) {}

  int newSlot(const std::string &var) {
    int slot = slotCount++;
    compiler.slots[var] = slot;
    return slot;
  }

  StmtPtr compileList(const std::vector<LStmt> &stmts) {
    auto sequence = std::make_unique<Sequence>();
    for (const LStmt &stmt : stmts)
      sequence->stmts.push_back(compileStmt(stmt));
    return sequence;
  }

  StmtPtr compileStmt(const LStmt &stmt) {
    switch (stmt.kind) {
    case LStmt::Parallel: {
      auto region = std::make_unique<ParallelRegion>();
      region->threadSlot = threadSlot;
      region->threads = threads;
      region->body = compileList(stmt.body);
      return region;
    }
    case LStmt::Barrier:
      return std::make_unique<Nothing>();
    case LStmt::Shuffle: {
      auto shuffle = std::make_unique<Shuffle>();
      shuffle->dst = compiler.buffers.lookup(stmt.buffer);
      shuffle->src = compiler.buffers.lookup(stmt.value->name);
      shuffle->dstOffset = constantOffset(*shuffle->dst, stmt.indices);
      shuffle->srcOffset = constantOffset(*shuffle->src, stmt.value->args);
      shuffle->offset = stmt.shuffleOffset;
      shuffle->threads = threads;
      shuffle->isXor = stmt.shuffleMode == "xor";
      return shuffle;
    }
    case LStmt::Mma: {
      auto mma = std::make_unique<Mma>();
      mma->d = compiler.buffers.lookup(stmt.buffer);
      mma->a = compiler.buffers.lookup(stmt.operands[0]->name);
      mma->b = compiler.buffers.lookup(stmt.operands[1]->name);
      mma->c = compiler.buffers.lookup(stmt.operands[2]->name);
      mma->dOffset = stmt.indices[0]->intValue;
      mma->aOffset = stmt.operands[0]->args[0]->intValue;
      mma->bOffset = stmt.operands[1]->args[0]->intValue;
      mma->cOffset = stmt.operands[2]->args[0]->intValue;
      mma->threads = threads;
      mma->multiplies = &compiler.counters.evaluations["multiply"];
      mma->adds = &compiler.counters.evaluations["add"];
      return mma;
    }
    case LStmt::LdMatrix: {
      auto load = std::make_unique<LdMatrix>();
      load->dst = compiler.buffers.lookup(stmt.buffer);
      load->src = compiler.buffers.lookup(stmt.value->name);
      load->rowIndices = compiler.compileIndices(stmt.value->args);
      load->dstOffset = stmt.indices[0]->intValue;
      load->matrices = stmt.count;
      load->threads = threads;
      load->threadSlot = threadSlot;
      load->transpose = stmt.transpose;
      return load;
    }
    case LStmt::AsyncCopy: {
      auto copy = std::make_unique<AsyncCopy>();
      copy->dst = compiler.buffers.lookup(stmt.buffer);
      copy->src = compiler.buffers.lookup(stmt.value->name);
      copy->dstIndices = compiler.compileIndices(stmt.indices);
      copy->srcIndices = compiler.compileIndices(stmt.value->args);
      copy->valid = compiler.compile(*stmt.extent);
      copy->width = stmt.count;
      copy->elementBytes = dtypeBytes(copy->src->dtype);
      copy->threadSlot = threadSlot;
      copy->bytesRead = &compiler.counters.bytesRead;
      copy->state = &async;
      return copy;
    }
    case LStmt::AsyncCommit: {
      auto commit = std::make_unique<AsyncCommit>();
      commit->state = &async;
      return commit;
    }
    case LStmt::AsyncWait: {
      auto wait = std::make_unique<AsyncWait>();
      wait->state = &async;
      wait->pending = size_t(stmt.count);
      return wait;
    }
    case LStmt::For: {
      auto loop = std::make_unique<ForLoop>();
      loop->extent = compiler.compile(*stmt.extent);
      loop->nest = &nest;
      loop->uniformExtent = !usesVar(*stmt.extent, threadVar) && !readsBuffer(*stmt.extent);
      loop->slot = newSlot(stmt.var);
      bool vector = stmt.loopKind == LStmt::Vector;
      if (vector) {
        compiler.laneSlot = loop->slot;
        compiler.laneVar = stmt.var;
        compiler.laneWidth = stmt.extent->intValue;
      }
      loop->body = compileList(stmt.body);
      if (vector)
        compiler.laneSlot = -1;
      return loop;
    }
    case LStmt::If: {
      auto branch = std::make_unique<IfThen>();
      branch->cond = compiler.compile(*stmt.cond);
      branch->then = compileList(stmt.body);
      branch->otherwise = compileList(stmt.elseBody);
      return branch;
    }
    case LStmt::Store: {
      auto store = std::make_unique<StoreTo>();
      store->buffer = compiler.buffers.lookup(stmt.buffer);
      store->indices = compiler.compileIndices(stmt.indices);
      store->value = compiler.compile(*stmt.value);
      store->bytesWritten = &compiler.counters.bytesWritten;
      store->elementBytes = dtypeBytes(store->buffer->dtype);
      if (compiler.laneSlot >= 0) {
        LaneAccess access = classifyLaneAccess(
            stmt.indices, kernel.findBuffer(stmt.buffer)->type, compiler.laneVar,
            compiler.laneWidth);
        store->laneSlot = compiler.laneSlot;
        store->uniformInLane = access == LaneAccess::Uniform;
        store->vectorWidth = access == LaneAccess::Contiguous ? compiler.laneWidth : 0;
      }
      return store;
    }
    }
    return std::make_unique<Nothing>();
  }

  static int64_t constantOffset(const Buffer &buffer, const std::vector<KExprPtr> &indices) {
    int64_t offset = 0;
    for (size_t d = 0; d < indices.size(); ++d)
      offset += indices[d]->intValue * buffer.strides[d];
    return offset;
  }

  const Kernel &kernel;
  Compiler &compiler;
  int slotCount = 0, threadSlot = 0;
  std::string threadVar;
  int64_t threads = 1;
  AsyncState async;
  NestedTrips nest;
};

/// One copy of a launch: its body compiled against a compiler of its own,
/// the launch's shared and local buffers, and the counters it adds to. The
/// kernel's global buffers are shared between copies: blocks write
/// disjoint elements of them, as they must on a GPU.
class LaunchInstance {
public:
  LaunchInstance(const Kernel &kernel, const Compiler &parent, const LLaunch &launch,
                 int64_t blocks, KernelCounters &counters)
      : compiler(parent, counters), launchCompiler(kernel, compiler), threads(launch.threads) {
    blockSlot = launchCompiler.newSlot(launch.blockVar);
    launchCompiler.threadSlot = launchCompiler.newSlot(launch.threadVar);
    launchCompiler.threadVar = launch.threadVar;
    launchCompiler.threads = launch.threads;
    for (const KBuffer &declared : launch.buffers) {
      auto buffer = std::make_unique<Buffer>();
      buffer->name = declared.name;
      for (const Dim &dim : declared.type.getShape())
        buffer->shape.push_back(dim.size);
      buffer->strides = stridesOf(buffer->shape);
      buffer->dtype = declared.type.getDType();
      int64_t size = 1;
      for (int64_t dim : buffer->shape)
        size *= dim;
      if (declared.role == KBuffer::Local) {
        buffer->threadSlot = launchCompiler.threadSlot;
        buffer->threadStride = size;
        size *= launch.threads;
      }
      buffer->data.assign(size, NAN);
      compiler.buffers[declared.name] = buffer.get();
      scratch.push_back(std::move(buffer));
    }
    body = launchCompiler.compileList(launch.body);
    vars.assign(launchCompiler.slotCount + 1, 0);
    launchCompiler.nest.reset(blocks, launch.threads);
  }

  /// Runs blocks `from` to `to` - 1, in order.
  void run(int64_t from, int64_t to) {
    for (int64_t block = from; block < to; ++block) {
      vars[blockSlot] = block;
      for (auto &buffer : scratch)
        std::fill(buffer->data.begin(), buffer->data.end(), NAN);
      launchCompiler.async.reset(threads);
      body->exec(vars.data());
    }
  }

private:
  Compiler compiler;
  LaunchCompiler launchCompiler;
  int64_t threads;
  int blockSlot = 0;
  std::vector<std::unique_ptr<Buffer>> scratch;
  StmtPtr body;
  std::vector<int64_t> vars;
};

/// Threads (blocks x threads per block) below which a launch runs on the
/// calling thread alone: compiling the body once more per worker and waking
/// the workers cost about as much as running a statement for this many
/// threads. (A block of a tiled matmul loops over K: 16 blocks of 256
/// threads are seconds of work.)
constexpr int64_t kMinParallelThreadIterations = 2048;

} // namespace

void exec::runLaunches(const Kernel &kernel, Compiler &compiler) {
  compiler.kernel = &kernel;
  for (const LLaunch &launch : kernel.launches) {
    compiler.slots.clear();
    // The grid size reads only symbolic dims.
    NodePtr gridSize = compiler.compile(*launch.gridSize);
    std::vector<int64_t> noVars(1, 0);
    int64_t blocks = tripCount(gridSize->evalInt(noVars.data()), "a grid");
    if (blocks <= 0)
      continue;
    ++compiler.counters.launches;
    unsigned workers =
        blocks * launch.threads >= kMinParallelThreadIterations ? getInterpreterWorkers() : 1;
    runOnWorkers(blocks, workers, compiler.counters, [&](KernelCounters &counters) {
      return std::make_unique<LaunchInstance>(kernel, compiler, launch, blocks, counters);
    });
  }
}
