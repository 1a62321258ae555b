//===- LowerKernel.cpp - One scheduled kernel to launches -----------------===//
//
// The mechanics of `lower` (Lower.cpp drives it over a module):
//   1. Inline: each stage's body gets the bodies of the inline stages it
//      reads substituted in (earlier stages first, so chains collapse).
//   2. Each root stage becomes one launch, in stage order; the stages
//      computed at it at block level are emitted first in the same launch
//      (into shared memory, a barrier after each); thread-level stages are
//      expanded where they are read, into locals (a reduction's
//      accumulator, a spatial stage's value), once per index tuple.
//   3. Flat mapping: the flat output index is split into block, thread and
//      vector lane; coordinates come back by floordiv/mod; a guard is
//      emitted unless the total is a static multiple of a block's elements.
//      Rows mapping: one block per row; a reduction is a strided partial
//      per thread, a shuffle butterfly per warp, shared partials across
//      warps combined by thread 0; a spatial stage's threads stride over
//      the row's inner elements.
//   4. The kernel keeps its buffers; internal buffers that are not roots
//      disappear (they now live in shared memory, locals or expressions).
//
// Schedules are user-writable, so every condition a mapping needs is
// checked here and reported at the schedule entry.
//
//===----------------------------------------------------------------------===//
#include "LowerKernel.h"

#include <cctype>
#include <set>

using namespace fusec;

using namespace fusec::lowering;

std::string KernelLowering::freshVar(const std::string &base) {
  std::string name = base;
  for (int suffix = 1; usedVars.count(name); ++suffix)
    name = base + "_" + std::to_string(suffix);
  usedVars.insert(name);
  return name;
}

std::string KernelLowering::freshBuffer(const std::string &base) {
  // `%06` is a numeric name: `%06_acc` would not lex as one name.
  std::string name = std::isdigit(static_cast<unsigned char>(base[0])) ? "v" + base : base;
  std::string stem = name;
  for (int suffix = 1; usedBuffers.count(name); ++suffix)
    name = stem + "_" + std::to_string(suffix);
  usedBuffers.insert(name);
  return name;
}

std::string KernelLowering::addBuffer(const std::string &base, KBuffer::Role role,
                                      DType dtype, int64_t size) {
  KBuffer buffer;
  buffer.name = freshBuffer(base);
  buffer.role = role;
  buffer.type = Type::tensor(dtype, {Dim::of(size)});
  launch->buffers.push_back(buffer);
  return buffer.name;
}

/// Counts the loads of global memory (inputs, outputs, materialized
/// internal buffers) that run whatever the data (not in a select branch, not
/// right of && or ||), by printed form.
static void countUnconditionalLoads(const KExpr &e, const Kernel &kernel,
                                    std::map<std::string, int> &counts) {
  if (e.kind == KExpr::Load) {
    const KBuffer *buffer = kernel.findBuffer(e.name);
    const StageSchedule *entry = kernel.schedule.find(e.name);
    bool global = buffer && (buffer->role == KBuffer::Input || buffer->role == KBuffer::Output ||
                             (buffer->role == KBuffer::Internal && entry &&
                              entry->placement == StageSchedule::Root));
    if (global)
      ++counts[printExpr(e)];
  }
  size_t unconditional = e.kind == KExpr::Select || e.kind == KExpr::And || e.kind == KExpr::Or
                             ? 1
                             : e.args.size();
  for (size_t i = 0; i < unconditional; ++i)
    countUnconditionalLoads(*e.args[i], kernel, counts);
}

KExprPtr KernelLowering::hoistRepeatedLoads(KExprPtr value, std::vector<LStmt> &pre) {
  std::map<std::string, int> counts;
  countUnconditionalLoads(*value, kernel, counts);
  std::map<std::string, std::string> registers;
  return rewriteLoads(value, [&](const KExpr &load, const std::vector<KExprPtr> &indices) {
    auto copy = std::make_shared<KExpr>(load);
    copy->args = indices;
    std::string key = printExpr(*copy);
    auto count = counts.find(key);
    if (count == counts.end() || count->second < 2)
      return KExprPtr();
    std::string &local = registers[key];
    if (local.empty()) {
      local = addBuffer(load.name + "_reg", KBuffer::Local, load.dtype, 1);
      pre.push_back(store(local, {cnst(0)}, copy));
    }
    return KExpr::load(local, {cnst(0)}, load.dtype);
  });
}

KExprPtr KernelLowering::lowerValue(const KStage &stage,
                                    const std::map<std::string, KExprPtr> &bindings,
                                    std::vector<LStmt> &pre, bool &ok, bool hoist) {
  // Block-level producers: the consumer reads its own row of them.
  KExprPtr body = rewriteLoads(stage.body, [&](const KExpr &load,
                                               const std::vector<KExprPtr> &indices) {
    auto shared = sharedOf.find(load.name);
    if (shared == sharedOf.end())
      return KExprPtr();
    int64_t rows = rowRankOf[load.name];
    for (int64_t d = 0; d < rows; ++d)
      if (indices[d]->kind != KExpr::Var || d >= int64_t(stage.spatialVars.size()) ||
          indices[d]->name != stage.spatialVars[d]) {
        ok = error(scheduleOf(load.name).loc,
                   "'%" + stage.buffer + "' reads '%" + load.name +
                       "' outside its own row, so it cannot be computed at block level");
        return KExprPtr();
      }
    std::vector<KExprPtr> extents = extentsOf(load.name);
    KExprPtr linear = cnst(0);
    for (size_t d = rows; d < indices.size(); ++d)
      linear = add(mul(linear, extents[d]), indices[d]);
    return KExpr::load(shared->second, {linear}, load.dtype);
  });
  body = substituteVars(body, bindings);
  if (hoist)
    body = hoistRepeatedLoads(body, pre);
  // Thread-level stages, once per distinct index tuple of this value: a
  // reduction into an accumulator, a spatial stage (read several times per
  // element) into a register.
  std::map<std::string, std::string> computed;
  return rewriteLoads(body, [&](const KExpr &load, const std::vector<KExprPtr> &indices) {
    const StageSchedule *entry = kernel.schedule.find(load.name);
    if (!entry || entry->placement != StageSchedule::ComputeAt ||
        entry->level != StageSchedule::Thread)
      return KExprPtr();
    const KStage *producer = stageOf(load.name);
    std::string key = load.name + "[";
    for (const KExprPtr &index : indices)
      key += printExpr(*index) + ",";
    std::string &acc = computed[key];
    DType dtype = producer->isReduction() ? producer->accumulate
                                          : kernel.findBuffer(load.name)->type.getDType();
    if (acc.empty()) {
      std::map<std::string, KExprPtr> producerBindings;
      for (size_t d = 0; d < producer->spatialVars.size(); ++d)
        producerBindings[producer->spatialVars[d]] = indices[d];
      if (producer->isReduction()) {
        acc = emitSerialReduction(*producer, producerBindings, pre, ok);
      } else {
        KExprPtr value = lowerValue(*producer, producerBindings, pre, ok);
        acc = addBuffer(load.name + "_val", KBuffer::Local, dtype, 1);
        pre.push_back(store(acc, {cnst(0)}, castTo(value, dtype)));
      }
    }
    return castTo(KExpr::load(acc, {cnst(0)}, dtype), load.dtype);
  });
}

std::string KernelLowering::emitSerialReduction(const KStage &stage,
                                                std::map<std::string, KExprPtr> bindings,
                                                std::vector<LStmt> &out, bool &ok) {
  std::string acc = addBuffer(stage.buffer + "_acc", KBuffer::Local, stage.accumulate, 1);
  out.push_back(store(acc, {cnst(0)}, stage.initLiteral()));
  std::vector<std::pair<std::string, KExprPtr>> loops;
  for (const auto &[var, extent] : stage.reduceVars) {
    std::string name = freshVar(var);
    bindings[var] = KExpr::var(name);
    loops.push_back({name, dimExpr(extent)});
  }
  std::vector<LStmt> inner;
  KExprPtr value = lowerValue(stage, bindings, inner, ok);
  inner.push_back(store(acc, {cnst(0)}, combine(stage, acc, value)));
  for (size_t i = loops.size(); i-- > 0;) {
    std::vector<LStmt> wrapped;
    wrapped.push_back(loop(LStmt::Serial, loops[i].first, loops[i].second, std::move(inner)));
    inner = std::move(wrapped);
  }
  for (LStmt &stmt : inner)
    out.push_back(std::move(stmt));
  return acc;
}

bool KernelLowering::emitFlat(const KStage &stage, const StageMapping &mapping) {
  const StageSchedule &entry = scheduleOf(stage.buffer);
  std::vector<KExprPtr> extents = extentsOf(stage.buffer);
  int64_t threads = mapping.threads, vector = mapping.vector;
  if (vector > 1) {
    const Type &type = kernel.findBuffer(stage.buffer)->type;
    if (stage.isReduction() || type.getRank() == 0 || type.getShape().back().isSymbolic() ||
        type.getShape().back().size % vector != 0)
      return error(entry.loc, "vector = " + std::to_string(vector) +
                                  " needs a spatial stage whose last dim is a static "
                                  "multiple of it");
  }
  KExprPtr total = product(extents);
  launch->gridSize = ceilDiv(total, threads * vector);
  launch->threads = threads;
  KExprPtr bx = KExpr::var(launch->blockVar), tx = KExpr::var(launch->threadVar);
  KExprPtr base = mul(add(mul(bx, cnst(threads)), tx), cnst(vector));
  KExprPtr guard;
  if (total->kind != KExpr::IntConst || total->intValue % (threads * vector) != 0)
    guard = lt(base, total);
  std::vector<KExprPtr> coords = coordinatesOf(base, extents);
  std::vector<LStmt> body;
  bool ok = true;
  std::map<std::string, KExprPtr> bindings;
  if (vector > 1) {
    std::string lane = freshVar("v");
    // Within a vector only the last coordinate moves (the last dim is a
    // multiple of the width); a 1-d stage's coordinate is the flat index.
    KExprPtr rowStart = coords.size() == 1 ? base : foldIndex(KExpr::Mod, base, extents.back());
    coords.back() = add(rowStart, KExpr::var(lane));
    for (size_t d = 0; d < coords.size(); ++d)
      bindings[stage.spatialVars[d]] = coords[d];
    std::vector<LStmt> pre;
    KExprPtr value = lowerValue(stage, bindings, pre, ok, /*hoist=*/false);
    if (!pre.empty())
      return error(entry.loc, "a vector loop cannot hold the thread-level stages '%" +
                                  stage.buffer + "' computes per element; use vector = 1");
    std::vector<LStmt> lanes;
    lanes.push_back(store(stage.buffer, coords, value));
    body.push_back(loop(LStmt::Vector, lane, cnst(vector), std::move(lanes)));
  } else {
    for (size_t d = 0; d < coords.size(); ++d)
      bindings[stage.spatialVars[d]] = coords[d];
    if (stage.isReduction()) {
      std::string acc = emitSerialReduction(stage, bindings, body, ok);
      body.push_back(store(stage.buffer, coords,
                           castTo(KExpr::load(acc, {cnst(0)}, stage.accumulate),
                                  kernel.findBuffer(stage.buffer)->type.getDType())));
    } else {
      KExprPtr value = lowerValue(stage, bindings, body, ok);
      body.push_back(store(stage.buffer, coords, value));
    }
  }
  launch->body.push_back(blockStmt(LStmt::Parallel, guarded(guard, std::move(body))));
  return ok;
}

bool KernelLowering::emitBlockReduction(const KStage &stage,
                                        const std::vector<KExprPtr> &rowCoords,
                                        const std::string &target,
                                        std::vector<KExprPtr> targetIndices) {
  int64_t threads = launch->threads;
  KExprPtr tx = KExpr::var(launch->threadVar);
  std::vector<KExprPtr> reduceExtents;
  for (const auto &[var, extent] : stage.reduceVars)
    reduceExtents.push_back(dimExpr(extent));
  KExprPtr total = product(reduceExtents);
  std::string acc = addBuffer(stage.buffer + "_acc", KBuffer::Local, stage.accumulate, 1);
  std::string peer = addBuffer(stage.buffer + "_peer", KBuffer::Local, stage.accumulate, 1);
  // 1. Each thread folds every `threads`-th point of the row.
  KExprPtr trips = ceilDiv(total, threads);
  bool single = trips->kind == KExpr::IntConst && trips->intValue == 1;
  std::string step = single ? "" : freshVar("k");
  KExprPtr point = add(mul(single ? cnst(0) : KExpr::var(step), cnst(threads)), tx);
  std::map<std::string, KExprPtr> bindings;
  for (size_t d = 0; d < stage.spatialVars.size(); ++d)
    bindings[stage.spatialVars[d]] = rowCoords[d];
  std::vector<KExprPtr> reduceCoords = coordinatesOf(point, reduceExtents);
  for (size_t d = 0; d < stage.reduceVars.size(); ++d)
    bindings[stage.reduceVars[d].first] = reduceCoords[d];
  bool ok = true;
  std::vector<LStmt> fold;
  KExprPtr value = lowerValue(stage, bindings, fold, ok);
  fold.push_back(store(acc, {cnst(0)}, combine(stage, acc, value)));
  bool exact = total->kind == KExpr::IntConst && total->intValue % threads == 0;
  std::vector<LStmt> partial;
  // Thread 0 starts from the init, the others from the combiner's identity,
  // so the init counts once (`init 5.0` is not added by each of 32 lanes).
  KExprPtr init = stage.initLiteral(), identity = stage.identityLiteral();
  if (!equalExprs(*init, *identity))
    init = KExpr::select(KExpr::binary(KExpr::Eq, tx, cnst(0)), init, identity);
  partial.push_back(store(acc, {cnst(0)}, init));
  std::vector<LStmt> folds = guarded(exact ? nullptr : lt(point, total), std::move(fold));
  if (single)
    partial.insert(partial.end(), std::make_move_iterator(folds.begin()),
                   std::make_move_iterator(folds.end()));
  else
    partial.push_back(loop(LStmt::Serial, step, trips, std::move(folds)));
  launch->body.push_back(blockStmt(LStmt::Parallel, std::move(partial)));
  // 2. A butterfly of shuffles leaves each warp's total in all its lanes.
  for (int64_t offset = 16; offset >= 1; offset /= 2) {
    LStmt shuffle;
    shuffle.kind = LStmt::Shuffle;
    shuffle.buffer = peer;
    shuffle.indices = {cnst(0)};
    shuffle.value = KExpr::load(acc, {cnst(0)}, stage.accumulate);
    shuffle.shuffleMode = "xor";
    shuffle.shuffleOffset = offset;
    launch->body.push_back(std::move(shuffle));
    std::vector<LStmt> step;
    step.push_back(store(acc, {cnst(0)},
                         combine(stage, acc, KExpr::load(peer, {cnst(0)}, stage.accumulate))));
    launch->body.push_back(blockStmt(LStmt::Parallel, std::move(step)));
  }
  // 3. Across warps: lane 0 of each publishes, thread 0 folds and stores.
  DType resultDType = kernel.findBuffer(stage.buffer)->type.getDType();
  std::vector<LStmt> finish;
  if (threads > 32) {
    int64_t warps = threads / 32;
    std::string partials =
        addBuffer(stage.buffer + "_partial", KBuffer::Shared, stage.accumulate, warps);
    std::vector<LStmt> publish;
    publish.push_back(store(partials, {foldIndex(KExpr::FloorDiv, tx, cnst(32))},
                            KExpr::load(acc, {cnst(0)}, stage.accumulate)));
    launch->body.push_back(blockStmt(
        LStmt::Parallel,
        guarded(KExpr::binary(KExpr::Eq, foldIndex(KExpr::Mod, tx, cnst(32)), cnst(0)),
                std::move(publish))));
    launch->body.push_back(blockStmt(LStmt::Barrier));
    finish.push_back(store(acc, {cnst(0)}, KExpr::load(partials, {cnst(0)}, stage.accumulate)));
    if (warps == 2) {
      finish.push_back(store(
          acc, {cnst(0)},
          combine(stage, acc, KExpr::load(partials, {cnst(1)}, stage.accumulate))));
    } else {
      std::string w = freshVar("w");
      std::vector<LStmt> more;
      more.push_back(store(acc, {cnst(0)},
                           combine(stage, acc,
                                   KExpr::load(partials, {add(KExpr::var(w), cnst(1))},
                                               stage.accumulate))));
      finish.push_back(loop(LStmt::Serial, w, cnst(warps - 1), std::move(more)));
    }
  }
  finish.push_back(store(target, std::move(targetIndices),
                         castTo(KExpr::load(acc, {cnst(0)}, stage.accumulate), resultDType)));
  launch->body.push_back(blockStmt(
      LStmt::Parallel, guarded(KExpr::binary(KExpr::Eq, tx, cnst(0)), std::move(finish))));
  return ok;
}

bool KernelLowering::emitStrided(const KStage &stage, const std::vector<KExprPtr> &rowCoords,
                                 int64_t vector, bool toShared) {
  int64_t threads = launch->threads;
  std::vector<KExprPtr> extents = extentsOf(stage.buffer);
  std::vector<KExprPtr> innerExtents(extents.begin() + rowCoords.size(), extents.end());
  if (vector > 1 && innerExtents.empty())
    return error(scheduleOf(stage.buffer).loc,
                 "vector = " + std::to_string(vector) + " runs along the inner dims of '%" +
                     stage.buffer + "', and it has none (inner = 0)");
  KExprPtr innerTotal = product(innerExtents);
  std::string target = stage.buffer;
  if (toShared) {
    if (innerTotal->kind != KExpr::IntConst || innerTotal->intValue > 12288)
      return error(scheduleOf(stage.buffer).loc,
                   "'%" + stage.buffer + "' needs a static row of at most 12288 elements "
                   "to be computed at block level");
    target = addBuffer(stage.buffer + "_shared", KBuffer::Shared,
                       kernel.findBuffer(stage.buffer)->type.getDType(),
                       std::max<int64_t>(innerTotal->intValue, 1));
    sharedOf[stage.buffer] = target;
    rowRankOf[stage.buffer] = int64_t(rowCoords.size());
  }
  int64_t perStep = threads * vector;
  std::string step = freshVar("it");
  KExprPtr stepTrips = ceilDiv(innerTotal, perStep);
  bool single = stepTrips->kind == KExpr::IntConst && stepTrips->intValue == 1;
  KExprPtr stepVar = single ? cnst(0) : KExpr::var(step);
  KExprPtr element =
      mul(add(mul(stepVar, cnst(threads)), KExpr::var(launch->threadVar)), cnst(vector));
  bool exact = innerTotal->kind == KExpr::IntConst && innerTotal->intValue % perStep == 0;
  std::vector<KExprPtr> innerCoords = coordinatesOf(element, innerExtents);
  std::string lane;
  KExprPtr flatIndex = element;
  if (vector > 1) {
    lane = freshVar("v");
    KExprPtr rowStart = innerCoords.size() == 1
                            ? element
                            : foldIndex(KExpr::Mod, element, innerExtents.back());
    innerCoords.back() = add(rowStart, KExpr::var(lane));
    flatIndex = add(element, KExpr::var(lane));
  }
  std::map<std::string, KExprPtr> bindings;
  std::vector<KExprPtr> coords = rowCoords;
  coords.insert(coords.end(), innerCoords.begin(), innerCoords.end());
  for (size_t d = 0; d < coords.size(); ++d)
    bindings[stage.spatialVars[d]] = coords[d];
  bool ok = true;
  std::vector<LStmt> body;
  KExprPtr value = lowerValue(stage, bindings, body, ok, /*hoist=*/vector == 1);
  body.push_back(toShared ? store(target, {flatIndex}, value) : store(target, coords, value));
  if (vector > 1) {
    if (body.size() != 1)
      return error(scheduleOf(stage.buffer).loc,
                   "a vector loop cannot hold the thread-level stages '%" + stage.buffer +
                       "' computes per element; use vector = 1");
    std::vector<LStmt> lanes = std::move(body);
    body.clear();
    body.push_back(loop(LStmt::Vector, lane, cnst(vector), std::move(lanes)));
  }
  body = guarded(exact ? nullptr : lt(element, innerTotal), std::move(body));
  if (!single) {
    std::vector<LStmt> looped;
    looped.push_back(loop(LStmt::Serial, step, stepTrips, std::move(body)));
    body = std::move(looped);
  }
  launch->body.push_back(blockStmt(LStmt::Parallel, std::move(body)));
  return ok;
}

bool KernelLowering::emitRows(const KStage &root, const StageMapping &mapping) {
  const Type &rootType = kernel.findBuffer(root.buffer)->type;
  int64_t rows = rootType.getRank() - mapping.inner;
  std::vector<Dim> rowDims(rootType.getShape().begin(), rootType.getShape().begin() + rows);
  std::vector<KExprPtr> rowExtents;
  for (const Dim &dim : rowDims)
    rowExtents.push_back(dimExpr(dim));
  launch->gridSize = product(rowExtents);
  launch->threads = mapping.threads;
  std::vector<KExprPtr> rowCoords =
      coordinatesOf(KExpr::var(launch->blockVar), rowExtents);
  for (const KStage &stage : stages) {
    const StageSchedule &entry = scheduleOf(stage.buffer);
    if (entry.placement != StageSchedule::ComputeAt || entry.level != StageSchedule::Block ||
        rootOf(stage.buffer) != root.buffer)
      continue;
    const Type &type = kernel.findBuffer(stage.buffer)->type;
    bool sameRows = type.getRank() >= rows;
    for (int64_t d = 0; sameRows && d < rows; ++d)
      sameRows = type.getShape()[d] == rowDims[d];
    if (!sameRows || (stage.isReduction() && type.getRank() != rows))
      return error(entry.loc, "'%" + stage.buffer + "' does not have the rows of '%" +
                                  root.buffer + "' (" + std::to_string(rows) +
                                  " leading dims), so it cannot be computed at its block");
    if (stage.isReduction()) {
      std::string shared = addBuffer(stage.buffer + "_shared", KBuffer::Shared,
                                     type.getDType(), 1);
      if (!emitBlockReduction(stage, rowCoords, shared, {cnst(0)}))
        return false;
      sharedOf[stage.buffer] = shared;
      rowRankOf[stage.buffer] = rows;
    } else if (!emitStrided(stage, rowCoords, 1, /*toShared=*/true)) {
      return false;
    }
    launch->body.push_back(blockStmt(LStmt::Barrier));
  }
  if (root.isReduction())
    return emitBlockReduction(root, rowCoords, root.buffer, rowCoords);
  return emitStrided(root, rowCoords, mapping.vector, /*toShared=*/false);
}

bool KernelLowering::lowerRoot(const KStage &root) {
  kernel.launches.emplace_back();
  launch = &kernel.launches.back();
  usedVars.clear();
  for (const std::string &symbol : kernel.getSymbolicDims())
    usedVars.insert(symbol);
  launch->blockVar = freshVar("bx");
  launch->threadVar = freshVar("tx");
  sharedOf.clear();
  rowRankOf.clear();
  const StageMapping &mapping = scheduleOf(root.buffer).mapping;
  switch (mapping.kind) {
  case StageMapping::Flat: return emitFlat(root, mapping);
  case StageMapping::Rows: return emitRows(root, mapping);
  case StageMapping::Tiles: return emitTiles(root, mapping);
  }
  return false;
}

bool KernelLowering::run() {
  if (kernel.schedule.empty())
    return error(kernel.loc, "it has no schedule; run 'schedule' before 'lower'");
  for (const auto *list : {&kernel.inputs, &kernel.outputs, &kernel.internals})
    for (const KBuffer &buffer : *list)
      usedBuffers.insert(buffer.name);
  // 1. Inline, earlier stages first: an inline stage's body already has the
  // inline stages it reads substituted when a later stage takes it. Each
  // inlining copies the producer's expression into every load of it, so a
  // chain whose stages read their producer twice (x + x), or through an
  // index used twice (a reshape's floordiv and mod of one flat index),
  // doubles at every stage; an inline stage whose expression would pass
  // kMaxInlinedNodes is materialized instead (a root with a flat mapping),
  // and said so.
  stages = kernel.stages;
  for (size_t i = 0; i < stages.size(); ++i) {
    for (size_t j = 0; j < i; ++j)
      if (scheduleOf(stages[j].buffer).placement == StageSchedule::Inline)
        stages[i].body = inlineStage(stages[i].body, stages[j]);
    StageSchedule *entry = kernel.schedule.find(stages[i].buffer);
    if (entry->placement == StageSchedule::Inline && exceedsInliningLimit(*stages[i].body)) {
      // A decision like schedule's, not a problem of the input: a remark.
      if (remarks)
        *remarks << "remark: lower: @" << kernel.name << ": inlining '%" << stages[i].buffer
                 << "' would copy an expression of more than " << kMaxInlinedNodes
                 << " nodes into its readers; it is materialized instead\n";
      entry->placement = StageSchedule::Root;
      entry->mapping = StageMapping();
    }
  }
  // 2. A block-level stage has a shared copy only in its root's launch.
  for (const KStage &stage : stages) {
    const StageSchedule &entry = scheduleOf(stage.buffer);
    if (entry.placement != StageSchedule::ComputeAt || entry.level != StageSchedule::Block)
      continue;
    for (const KStage &reader : stages) {
      const StageSchedule &readerEntry = scheduleOf(reader.buffer);
      if (readerEntry.placement == StageSchedule::Inline ||
          !loadsBuffer(*reader.body, stage.buffer))
        continue;
      bool threadLevel = readerEntry.placement == StageSchedule::ComputeAt &&
                         readerEntry.level == StageSchedule::Thread;
      if (threadLevel || rootOf(reader.buffer) != rootOf(stage.buffer))
        return error(entry.loc, "'%" + stage.buffer + "' is computed in the blocks of '%" +
                                    rootOf(stage.buffer) + "' but '%" + reader.buffer +
                                    "' reads it elsewhere; materialize it");
    }
  }
  // A block-level stage needs its root's blocks to own rows.
  for (const KStage &stage : stages) {
    const StageSchedule &entry = scheduleOf(stage.buffer);
    if (entry.placement == StageSchedule::ComputeAt && entry.level == StageSchedule::Block &&
        scheduleOf(rootOf(stage.buffer)).mapping.kind != StageMapping::Rows)
      return error(entry.loc, "compute_at(%" + entry.consumer + ", block) needs '%" +
                                  rootOf(stage.buffer) +
                                  "' to have a rows mapping, whose blocks own rows; the blocks "
                                  "of its " +
                                  (scheduleOf(rootOf(stage.buffer)).mapping.kind ==
                                           StageMapping::Flat
                                       ? "flat"
                                       : "tiles") +
                                  " mapping do not");
  }
  // 3. One launch per root stage.
  for (const KStage &stage : stages)
    if (scheduleOf(stage.buffer).placement == StageSchedule::Root && !lowerRoot(stage))
      return false;
  // 4. Only materialized internal buffers remain (one that no stage writes
  // has no schedule entry and goes too).
  llvm::erase_if(kernel.internals, [&](const KBuffer &buffer) {
    const StageSchedule *entry = kernel.schedule.find(buffer.name);
    return !entry || entry->placement != StageSchedule::Root;
  });
  kernel.stages.clear();
  kernel.schedule = KSchedule();
  return true;
}

bool fusec::lowerKernel(Kernel &kernel, DiagEngine &diag, llvm::raw_ostream *remarks) {
  return KernelLowering(kernel, diag, remarks).run();
}
