//===- LowerMappings.cpp - The flat and rows mappings of `lower` ----------===//
//
// Step 3 of LowerKernel.cpp's mechanics: one launch's statements for a root
// stage laid out by its mapping (the tiled contractions are LowerTiles.cpp's):
//   - flat: the flat output index is split into block, thread and vector
//     lane, coordinates come back by floordiv/mod, and a guard is emitted
//     unless the total is a static multiple of a block's elements;
//   - rows: one block per row; the stages computed at the block come first
//     (into shared memory, a barrier after each); a reduction is a strided
//     partial per thread, a shuffle butterfly per warp, and shared partials
//     across warps combined by thread 0 (emitBlockReduction); a spatial
//     stage's threads stride over the row's inner elements (emitStrided).
// Every condition a user-written mapping needs is checked here and reported
// at its schedule entry.
//
//===----------------------------------------------------------------------===//
#include "LowerKernel.h"
#include "fusec/Analysis/Analysis.h"

using namespace fusec;
using namespace fusec::lowering;

bool KernelLowering::checkVectorWidth(const KStage &stage, int64_t vector) {
  if (vector == 1)
    return true;
  const Type &type = kernel.findBuffer(stage.buffer)->type;
  if (!stage.isReduction() && type.getRank() > 0 && !type.getShape().back().isSymbolic() &&
      type.getShape().back().size % vector == 0)
    return true;
  return error(scheduleOf(stage.buffer).loc, "vector = " + std::to_string(vector) +
                                                 " needs a spatial stage whose last dim is a "
                                                 "static multiple of it");
}

bool KernelLowering::emitFlat(const KStage &stage, const StageMapping &mapping) {
  std::vector<KExprPtr> extents = extentsOf(stage.buffer);
  int64_t threads = mapping.threads, vector = mapping.vector;
  if (!checkVectorWidth(stage, vector))
    return false;
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
      return errorThreadStagesInVector(stage);
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

bool KernelLowering::emitBlockReduction(const KStage &stage, const std::vector<KExprPtr> &rowCoords,
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
    step.push_back(
        store(acc, {cnst(0)}, combine(stage, acc, KExpr::load(peer, {cnst(0)}, stage.accumulate))));
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
    launch->body.push_back(
        blockStmt(LStmt::Parallel,
                  guarded(KExpr::binary(KExpr::Eq, foldIndex(KExpr::Mod, tx, cnst(32)), cnst(0)),
                          std::move(publish))));
    launch->body.push_back(blockStmt(LStmt::Barrier));
    finish.push_back(store(acc, {cnst(0)}, KExpr::load(partials, {cnst(0)}, stage.accumulate)));
    if (warps == 2) {
      finish.push_back(store(
          acc, {cnst(0)}, combine(stage, acc, KExpr::load(partials, {cnst(1)}, stage.accumulate))));
    } else {
      std::string w = freshVar("w");
      std::vector<LStmt> more;
      more.push_back(
          store(acc, {cnst(0)},
                combine(stage, acc,
                        KExpr::load(partials, {add(KExpr::var(w), cnst(1))}, stage.accumulate))));
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
    return error(scheduleOf(stage.buffer).loc, "vector = " + std::to_string(vector) +
                                                   " runs along the inner dims of '%" +
                                                   stage.buffer + "', and it has none (inner = 0)");
  KExprPtr innerTotal = product(innerExtents);
  std::string target = stage.buffer;
  if (toShared) {
    if (innerTotal->kind != KExpr::IntConst || innerTotal->intValue > kMaxRowBufferElements)
      return error(scheduleOf(stage.buffer).loc, "'%" + stage.buffer +
                                                     "' needs a static row of at most " +
                                                     std::to_string(kMaxRowBufferElements) +
                                                     " elements to be computed at block level");
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
    KExprPtr rowStart =
        innerCoords.size() == 1 ? element : foldIndex(KExpr::Mod, element, innerExtents.back());
    innerCoords.back() = add(rowStart, KExpr::var(lane));
    flatIndex = add(element, KExpr::var(lane));
  }
  // One element per row (a row value: `%s[i0, 0]`): thread 0 computes it,
  // at coordinate 0, not at `tx` under `tx < 1`.
  if (innerTotal->kind == KExpr::IntConst && innerTotal->intValue == 1 && vector == 1) {
    for (KExprPtr &coord : innerCoords)
      coord = cnst(0);
    flatIndex = cnst(0);
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
      return errorThreadStagesInVector(stage);
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
  std::vector<KExprPtr> rowCoords = coordinatesOf(KExpr::var(launch->blockVar), rowExtents);
  for (const KStage &stage : stages) {
    const StageSchedule &entry = scheduleOf(stage.buffer);
    if (entry.placement != StageSchedule::ComputeAt || entry.level != StageSchedule::Block ||
        rootOf(stage.buffer) != root.buffer)
      continue;
    const Type &type = kernel.findBuffer(stage.buffer)->type;
    // A spatial stage may be broadcast on a leading dim too (size 1 there,
    // `%s[0, c, 0, 0]` in an `[n, c, h, w]` output): each block computes
    // its element at coordinate 0 of that dim.
    bool sameRows = type.getRank() >= rows;
    std::vector<KExprPtr> stageRowCoords = rowCoords;
    for (int64_t d = 0; sameRows && d < rows; ++d) {
      const Dim &dim = type.getShape()[d];
      if (!stage.isReduction() && dim.isOne())
        stageRowCoords[d] = cnst(0);
      else
        sameRows = dim == rowDims[d];
    }
    // A reduction computed at the block has the rows and then only 1s: its
    // reduced axes kept (`mean(x) {keepdims}`), at coordinate 0.
    for (int64_t d = rows; sameRows && stage.isReduction() && d < type.getRank(); ++d) {
      sameRows = type.getShape()[d].isOne();
      stageRowCoords.push_back(cnst(0));
    }
    if (!sameRows)
      return error(entry.loc, "'%" + stage.buffer + "' does not have the rows of '%" + root.buffer +
                                  "' (" + std::to_string(rows) +
                                  " leading dims), so it cannot be computed at its block");
    if (stage.isReduction()) {
      std::string shared = addBuffer(stage.buffer + "_shared", KBuffer::Shared, type.getDType(), 1);
      if (!emitBlockReduction(stage, stageRowCoords, shared, {cnst(0)}))
        return false;
      sharedOf[stage.buffer] = shared;
      rowRankOf[stage.buffer] = rows;
    } else if (!emitStrided(stage, stageRowCoords, 1, /*toShared=*/true)) {
      return false;
    }
    launch->body.push_back(blockStmt(LStmt::Barrier));
  }
  if (root.isReduction()) {
    // Its inner dims are kept axes of size 1 (the schedule verifier).
    rowCoords.resize(size_t(rootType.getRank()), cnst(0));
    return emitBlockReduction(root, rowCoords, root.buffer, rowCoords);
  }
  return emitStrided(root, rowCoords, mapping.vector, /*toShared=*/false);
}
