//===- KernelExec.cpp - Compiling and running kernel stages ---------------===//
//
// Each stage is compiled once per call into a tree of small node objects
// (symbolic dims already bound, buffer strides and global/internal roles
// resolved, affine indices reduced to coefficient lists), then run over its
// domain in row-major order with reduction variables innermost. Nothing is
// keyed on op names beyond the scalar operation itself: the interpreter
// checks the stages exactly as written.
//
// Counting is dynamic and exact: every executed operation node increments
// its counter (a not-taken `select` branch does not run), every load of an
// input or output buffer adds its dtype's bytes to bytes read, every store
// to an output adds to bytes written; a reduction's combine counts as one
// evaluation of its combiner.
//
//===----------------------------------------------------------------------===//
#include "ExecNodes.h"

#include "llvm/ADT/StringMap.h"

#include <algorithm>
#include <cmath>

using namespace fusec;
using namespace fusec::exec;

bool exec::roundsFloat32 = true;

double exec::roundTo(double value, DType dtype) {
  switch (dtype) {
  case DType::f32:
    return roundsFloat32 ? static_cast<float>(value) : value;
  case DType::f16:
  case DType::bf16:
    return roundToDType(value, dtype);
  case DType::boolean:
    return value != 0 ? 1 : 0;
  case DType::i8:
  case DType::i32:
  case DType::i64: // truncated, then modulo 2^64 and the dtype's width
    return intValueOf(wrapToInt64(value), dtype);
  }
  return value;
}

double exec::convertValue(double x, DType from, DType to) {
  if (from == to)
    return x;
  if (from == DType::i64)
    return intValueOf(asInt64(x), to);
  return roundTo(x, to);
}

void exec::roundBatch(double *values, int64_t n, DType dtype) {
  if (dtype == DType::f32) {
    if (!roundsFloat32)
      return;
    for (int64_t t = 0; t < n; ++t)
      values[t] = static_cast<float>(values[t]);
    return;
  }
  if (dtype == DType::i64 || dtype == DType::boolean || dtype == DType::i8 ||
      dtype == DType::i32 || dtype == DType::f16 || dtype == DType::bf16)
    for (int64_t t = 0; t < n; ++t)
      values[t] = roundTo(values[t], dtype);
}

namespace {

enum class Combiner { Add, Multiply, Max, Min };

/// Folds `value` (of `bodyDType`) into `acc` (of `accumulate`).
inline double combineOne(Combiner combiner, double acc, double value, DType bodyDType,
                         DType accumulate) {
  value = convertValue(value, bodyDType, accumulate);
  if (isIntDType(accumulate)) {
    int64_t x = intOf(acc, accumulate), y = intOf(value, accumulate);
    switch (combiner) {
    case Combiner::Add: return applyInteger(Op::Add, x, y, accumulate);
    case Combiner::Multiply: return applyInteger(Op::Multiply, x, y, accumulate);
    case Combiner::Max: return intValueOf(std::max(x, y), accumulate);
    case Combiner::Min: return intValueOf(std::min(x, y), accumulate);
    }
  }
  switch (combiner) {
  case Combiner::Add:
    acc = acc + value;
    break;
  case Combiner::Multiply:
    acc = acc * value;
    break;
  case Combiner::Max:
    acc = std::isnan(acc) || std::isnan(value) ? NAN : std::max(acc, value);
    break;
  case Combiner::Min:
    acc = std::isnan(acc) || std::isnan(value) ? NAN : std::min(acc, value);
    break;
  }
  return roundFast(acc, accumulate);
}

/// Folds `values` into `acc` in order, rounding after every step.
double combineAll(Combiner combiner, double acc, const double *values, int64_t n,
                  DType bodyDType, DType accumulate) {
  for (int64_t t = 0; t < n; ++t)
    acc = combineOne(combiner, acc, values[t], bodyDType, accumulate);
  return acc;
}

/// Visits, in row-major order, the points `from` to `to` - 1 of dims
/// [first, last) but `along`, and at each calls `inner(count, along)` per
/// batch of dim `along`, with vars[along] at the batch's start. Without dims
/// there is one point: `inner(1, -1)`.
template <typename Inner>
void sweep(const std::vector<int64_t> &extents, int64_t *vars, size_t first, size_t last,
           size_t along, int64_t from, int64_t to, Inner &&inner) {
  if (first == last) {
    if (from < to)
      inner(int64_t(1), -1);
    return;
  }
  for (int64_t point = from; point < to; ++point) {
    for (size_t d = last, rest = point; d-- > first;) {
      if (d == along)
        continue;
      vars[d] = int64_t(rest % extents[d]);
      rest /= extents[d];
    }
    for (int64_t start = 0; start < extents[along]; start += kBatch) {
      vars[along] = start;
      inner(std::min(kBatch, extents[along] - start), int(along));
    }
  }
}

/// The points `sweep` visits over dims [first, last) but `along`.
int64_t sweepPoints(const std::vector<int64_t> &extents, size_t first, size_t last, size_t along) {
  if (first == last)
    return 1;
  int64_t total = 1;
  for (size_t d = first; d < last; ++d)
    if (d != along)
      total *= extents[d];
  return extents[along] ? total : 0;
}

/// A stage over a range of its outer points (the spatial dims but the
/// batched one), with its own compiled body: a stage runs on one runner, or
/// on one per worker, each over consecutive points.
class StageRunner {
public:
  StageRunner(const KStage &stage, const Compiler &parent, KernelCounters &counters, Buffer &out,
              const std::vector<int64_t> &extents, size_t spatialCount, size_t batched)
      : compiler(parent, counters), stage(stage), out(out), extents(extents),
        spatialCount(spatialCount), batched(batched), body(compiler.compile(*stage.body)),
        bodyDType(stage.body->dtype), vars(extents.size() + 1, 0) {
    combiner = stage.combiner == "multiply" ? Combiner::Multiply
               : stage.combiner == "max"    ? Combiner::Max
               : stage.combiner == "min"    ? Combiner::Min
                                            : Combiner::Add;
    if (stage.isReduction()) {
      combineCount = &counters.evaluations[stage.combiner];
      reduceTotal = 1;
      for (size_t d = spatialCount; d < extents.size(); ++d)
        reduceTotal *= extents[d];
      init = isIntDType(stage.accumulate) ? intValueOf(stage.intInit, stage.accumulate)
                                          : roundTo(stage.init, stage.accumulate);
    }
    if (out.global)
      bytesWritten = &counters.bytesWritten;
    outStride = spatialCount ? out.strides[batched] : 1;
  }

  /// Runs outer points `from` to `to` - 1 in order.
  void run(int64_t from, int64_t to) {
    sweep(extents, vars.data(), 0, spatialCount, batched, from, to,
          [&](int64_t count, int slot) { element(count, slot); });
  }

private:
  void store(const double *values, int64_t count, DType from) {
    int64_t offset = 0;
    for (size_t d = 0; d < spatialCount; ++d)
      offset += vars[d] * out.strides[d];
    double *to = out.data.data() + offset;
    for (int64_t t = 0; t < count; ++t)
      to[t * outStride] = convertValue(values[t], from, out.dtype);
    if (bytesWritten)
      *bytesWritten += count * dtypeBytes(out.dtype);
  }

  /// The outputs vars[slot] .. + count - 1 (one output, slot -1, for a 0-d
  /// output).
  void element(int64_t count, int slot) {
    if (!stage.isReduction()) {
      if (slot < 0)
        batch[0] = body->eval(vars.data());
      else
        body->evalBatch(vars.data(), slot, count, batch);
      store(batch, count, bodyDType);
      return;
    }
    // Each output element folds its reduction points in order. With spatial
    // dims, a batch of neighbouring outputs is folded together (same order
    // per element); a 0-d output batches the reduction.
    if (slot < 0) {
      double acc = init;
      size_t last = extents.size();
      sweep(extents, vars.data(), spatialCount, last, last ? last - 1 : 0, 0,
            sweepPoints(extents, spatialCount, last, last ? last - 1 : 0),
            [&](int64_t n, int innerSlot) {
              if (innerSlot < 0)
                batch[0] = body->eval(vars.data());
              else
                body->evalBatch(vars.data(), innerSlot, n, batch);
              acc = combineAll(combiner, acc, batch, n, bodyDType, stage.accumulate);
              *combineCount += n;
            });
      store(&acc, 1, stage.accumulate);
      return;
    }
    std::fill(accs, accs + count, init);
    for (int64_t step = 0; step < reduceTotal; ++step) {
      for (size_t d = extents.size(), rest = step; d-- > spatialCount;) {
        vars[d] = int64_t(rest % extents[d]);
        rest /= extents[d];
      }
      body->evalBatch(vars.data(), slot, count, batch);
      if (combiner == Combiner::Add && stage.accumulate == DType::f32 && bodyDType != DType::i64 &&
          roundsFloat32) {
        for (int64_t t = 0; t < count; ++t) // the matmul/conv case
          accs[t] = static_cast<float>(accs[t] + static_cast<float>(batch[t]));
      } else {
        for (int64_t t = 0; t < count; ++t)
          accs[t] = combineOne(combiner, accs[t], batch[t], bodyDType, stage.accumulate);
      }
    }
    *combineCount += count * reduceTotal;
    store(accs, count, stage.accumulate);
  }

  Compiler compiler;
  const KStage &stage;
  Buffer &out;
  const std::vector<int64_t> &extents;
  size_t spatialCount, batched;
  NodePtr body;
  DType bodyDType;
  Combiner combiner = Combiner::Add;
  int64_t *combineCount = nullptr, *bytesWritten = nullptr;
  int64_t reduceTotal = 0, outStride = 1;
  double init = 0;
  std::vector<int64_t> vars;
  double batch[kBatch], accs[kBatch];
};

/// Stage points (outputs x reduction points) below which a stage runs on
/// the calling thread alone: compiling the body once more per worker costs
/// about as much.
constexpr int64_t kMinParallelStagePoints = 1 << 14;

/// Runs `stage` over its domain: row-major, reduction variables innermost,
/// the innermost variable evaluated in batches. Large stages run on worker
/// threads (runOnWorkers), each over consecutive outer points: the outputs
/// are computed exactly as one after another (each folds its own reduction
/// in order), and an error is the first failing point's, in order.
void runStage(const KStage &stage, Compiler &compiler, Buffer &out) {
  compiler.slots.clear();
  std::vector<int64_t> extents;
  for (size_t d = 0; d < stage.spatialVars.size(); ++d) {
    compiler.slots[stage.spatialVars[d]] = int(d);
    extents.push_back(out.shape[d]);
  }
  size_t spatialCount = extents.size();
  for (const auto &[var, extent] : stage.reduceVars) {
    compiler.slots[var] = int(extents.size());
    extents.push_back(resolveDim(extent, compiler.symbols));
  }
  // Like a lowered loop's trip count: a domain of 2^53 points or more (its
  // product may not even fit int64) is refused, never wrapped.
  int64_t points = 1;
  if (!llvm::is_contained(extents, 0)) {
    for (int64_t extent : extents)
      if (__builtin_mul_overflow(points, extent, &points) || points >= (int64_t(1) << 53))
        throw ExecError{"the stage of %" + stage.buffer +
                        " has 2^53 or more iterations, more than the interpreter runs"};
  }
  // Batches run along the innermost output dim, or along a longer one when
  // it is short (a convolution's 7 x 7 rows beside 512 channels): the cost
  // of a batch is mostly per call, so fewer, fuller batches run faster. The
  // elements and the order each one folds its reduction are the same.
  size_t batched = spatialCount ? spatialCount - 1 : 0;
  for (size_t d = 0; d + 1 < spatialCount; ++d)
    if (extents[batched] < kBatch && extents[d] > extents[batched])
      batched = d;
  int64_t outer = sweepPoints(extents, 0, spatialCount, batched);
  unsigned workers = points >= kMinParallelStagePoints ? getInterpreterWorkers() : 1;
  runOnWorkers(outer, workers, compiler.counters, [&](KernelCounters &counters) {
    return std::make_unique<StageRunner>(stage, compiler, counters, out, extents, spatialCount,
                                         batched);
  });
}

/// A GPU leaves an output element no thread stores holding whatever the
/// memory held; the interpreter refuses it, naming the first such element.
static void checkFullyWritten(const Buffer &output, const Kernel &kernel) {
  auto unwritten = std::find(output.written.begin(), output.written.end(), 0);
  if (unwritten == output.written.end())
    return;
  int64_t offset = unwritten - output.written.begin();
  int64_t missing = std::count(unwritten, output.written.end(), 0);
  std::string index;
  for (size_t d = 0; d < output.shape.size(); ++d)
    index += (d ? ", " : "") + std::to_string(offset / output.strides[d] % output.shape[d]);
  throw ExecError{"kernel @" + kernel.name + " leaves " + std::to_string(missing) + " of " +
                  std::to_string(output.data.size()) + " elements of %" + output.name +
                  " unwritten (the first is [" + index + "])"};
}

} // namespace

std::vector<std::shared_ptr<TensorData>>
exec::runKernel(const Kernel &kernel,
                const std::vector<std::shared_ptr<TensorData>> &inputs,
                KernelCounters &counters) {
  Compiler compiler(counters);
  std::vector<std::unique_ptr<Buffer>> storage;
  // Inputs bind the symbolic dims (the caller checked consistency).
  for (size_t i = 0; i < kernel.inputs.size(); ++i) {
    const KBuffer &declared = kernel.inputs[i];
    const TensorData &data = *inputs[i];
    for (size_t d = 0; d < declared.type.getShape().size(); ++d) {
      const Dim &dim = declared.type.getShape()[d];
      if (dim.isSymbolic())
        compiler.symbols[dim.symbol] = data.getShape()[d];
    }
    auto buffer = std::make_unique<Buffer>();
    buffer->name = declared.name;
    buffer->shape = data.getShape();
    buffer->strides = stridesOf(buffer->shape);
    buffer->dtype = data.getDType();
    buffer->global = true;
    buffer->data.resize(data.getNumElements());
    for (int64_t e = 0; e < data.getNumElements(); ++e)
      buffer->data[e] = buffer->dtype == DType::i64 ? fromInt64(data.getInt(e)) : data.get(e);
    compiler.buffers[declared.name] = buffer.get();
    storage.push_back(std::move(buffer));
  }
  for (const auto *list : {&kernel.outputs, &kernel.internals})
    for (const KBuffer &declared : *list) {
      auto buffer = std::make_unique<Buffer>();
      buffer->name = declared.name;
      for (const Dim &dim : declared.type.getShape())
        buffer->shape.push_back(resolveDim(dim, compiler.symbols));
      buffer->strides = stridesOf(buffer->shape);
      buffer->dtype = declared.type.getDType();
      // After `lower`, internal buffers are global scratch memory.
      bool output = declared.role == KBuffer::Output;
      buffer->global = output || kernel.isLowered();
      int64_t count = saturatingProduct(buffer->shape);
      checkAllocation(count, "%" + declared.name + " of kernel @" + kernel.name);
      // A lowered kernel's scratch holds NaN until stored, as the launcher's
      // device memory holds garbage (the emulator's 0xff bytes): a read
      // before the write shows in the result instead of reading 0. Its
      // outputs track their stores instead (checkFullyWritten).
      buffer->data.assign(count, kernel.isLowered() && !output ? NAN : 0.0);
      if (kernel.isLowered() && output)
        buffer->written.assign(count, 0);
      compiler.buffers[declared.name] = buffer.get();
      storage.push_back(std::move(buffer));
    }
  if (kernel.isLowered()) {
    runLaunches(kernel, compiler);
    for (const KBuffer &declared : kernel.outputs)
      checkFullyWritten(*compiler.buffers.lookup(declared.name), kernel);
  }
  for (const KStage &stage : kernel.stages)
    runStage(stage, compiler, *compiler.buffers.lookup(stage.buffer));
  std::vector<std::shared_ptr<TensorData>> outputs;
  for (const KBuffer &declared : kernel.outputs) {
    const Buffer &buffer = *compiler.buffers.lookup(declared.name);
    // A float64 run carries f32 values between kernels as doubles too.
    auto data = std::make_shared<TensorData>(buffer.dtype, buffer.shape,
                                             roundsFloat32 ? TensorData::Float32Storage::Float
                                                           : TensorData::Float32Storage::Double);
    for (int64_t e = 0; e < data->getNumElements(); ++e)
      if (buffer.dtype == DType::i64)
        data->setInt(e, asInt64(buffer.data[e]));
      else
        data->set(e, buffer.data[e]);
    outputs.push_back(std::move(data));
  }
  return outputs;
}
