//===- LowerColumns.cpp - The columns mapping of `lower` ------------------===//
//
// Step 3 of LowerKernel.cpp's mechanics for a root stage with a columns
// mapping: the last `inner` dims of the stage are its columns, the others
// its rows (both flattened). Each thread owns `vector` consecutive columns
// and walks `rows` consecutive rows of them; blocks tile the columns first
// (block bx covers column block bx mod C and row block bx floordiv C).
//   1. Coordinates: the column index (b * threads + tx) * vector (+ lane),
//      the row index rowBlock * rows + r, both split back into the stage's
//      dims.
//   2. A block-level stage (a row broadcast: one element per row, `%s[i, 0]`
//      or `%s[i]` in `[i, j]`) is computed for the block's `rows` rows into
//      shared memory, a thread per row, before a barrier; the walk reads
//      its row's element (sharedRowOf). A row chain is so evaluated once
//      per block of columns, beside a column chain at thread level.
//   3. Before the walk: every element of a thread-level stage that the
//      stage reads at indices the walk does not move (a column broadcast,
//      `%s[0, j]` or `%s[j]`) is computed once into a register, one per
//      lane (hoistedThreadValues, which lowerValue then reads). This is
//      what makes the mapping worth having: a chain broadcast over the rows
//      is evaluated once per `rows` rows instead of at every element.
//   4. The walk: an unrolled loop over the rows (a guard when the rows are
//      not a static multiple of `rows`), the stage's value per lane inside.
//   5. A guard on the column index unless the columns are a static
//      multiple of a block's.
//
//===----------------------------------------------------------------------===//
#include "LowerKernel.h"

using namespace fusec;
using namespace fusec::lowering;

/// `stmts` (stores only) with each local in `locals` indexed by `lane`
/// instead of 0, and so `value`: one register per vector lane.
static void indexLocalsByLane(std::vector<LStmt> &stmts, KExprPtr &value,
                              const std::set<std::string> &locals, const std::string &lane) {
  auto rewrite = [&](const KExprPtr &e) {
    return rewriteLoads(e, [&](const KExpr &load, const std::vector<KExprPtr> &) {
      return locals.count(load.name) ? KExpr::load(load.name, {KExpr::var(lane)}, load.dtype)
                                     : KExprPtr();
    });
  };
  for (LStmt &stmt : stmts) {
    stmt.value = rewrite(stmt.value);
    for (KExprPtr &index : stmt.indices)
      index = rewrite(index);
    if (locals.count(stmt.buffer))
      stmt.indices = {KExpr::var(lane)};
  }
  if (value)
    value = rewrite(value);
}

bool KernelLowering::emitColumnsBlockStages(const KStage &root,
                                            const std::vector<KExprPtr> &rowExtents,
                                            const KExprPtr &rowBlock, int64_t walk,
                                            const std::string &rowVar) {
  size_t rowRank = rowExtents.size();
  KExprPtr rowTotal = product(rowExtents);
  const Shape &rootShape = kernel.findBuffer(root.buffer)->type.getShape();
  for (const KStage &stage : stages) {
    const StageSchedule &entry = scheduleOf(stage.buffer);
    if (entry.placement != StageSchedule::ComputeAt || entry.level != StageSchedule::Block ||
        rootOf(stage.buffer) != root.buffer)
      continue;
    if (stage.isReduction())
      return error(entry.loc, "'%" + stage.buffer +
                                  "' is a reduction: under a columns mapping "
                                  "only a spatial stage is computed at the "
                                  "block (a rows mapping reduces rows)");
    // One element per row of the block's walk: the stage spans the root's
    // row dims (or is 1 on them) and is 1 on the rest.
    const Shape &shape = kernel.findBuffer(stage.buffer)->type.getShape();
    bool rowsOnly = shape.size() >= rowRank;
    for (size_t d = 0; rowsOnly && d < shape.size(); ++d)
      rowsOnly = shape[d].isOne() || (d < rowRank && shape[d] == rootShape[d]);
    if (!rowsOnly)
      return error(entry.loc, "'%" + stage.buffer + "' does not have the rows of '%" + root.buffer +
                                  "' (" + std::to_string(rowRank) +
                                  " leading dims) and size 1 on its other dims, so its columns "
                                  "mapping cannot compute it at the block");
    std::string shared = addBuffer(stage.buffer + "_shared", KBuffer::Shared,
                                   kernel.findBuffer(stage.buffer)->type.getDType(), walk);
    // Threads stride over the walk's rows; row e of the block is row
    // rowBlock * walk + e of the root.
    int64_t threads = launch->threads;
    std::string step = freshVar("it");
    int64_t steps = (walk + threads - 1) / threads;
    KExprPtr element = KExpr::var(launch->threadVar);
    if (steps > 1)
      element = add(mul(KExpr::var(step), cnst(threads)), element);
    KExprPtr row = add(mul(rowBlock, cnst(walk)), element);
    std::vector<KExprPtr> rowCoords = coordinatesOf(row, rowExtents);
    std::map<std::string, KExprPtr> bindings;
    for (size_t d = 0; d < shape.size(); ++d)
      bindings[stage.spatialVars[d]] = d < rowRank && !shape[d].isOne() ? rowCoords[d] : cnst(0);
    bool ok = true;
    std::vector<LStmt> body;
    KExprPtr value = lowerValue(stage, bindings, body, ok);
    if (!ok)
      return false;
    body.push_back(store(shared, {element}, value));
    bool rowsExact = rowTotal->kind == KExpr::IntConst && rowTotal->intValue % walk == 0;
    KExprPtr guard = walk % threads == 0 ? nullptr : lt(element, cnst(walk));
    if (!rowsExact)
      guard = guard ? KExpr::binary(KExpr::And, guard, lt(row, rowTotal)) : lt(row, rowTotal);
    body = guarded(guard, std::move(body));
    if (steps > 1) {
      std::vector<LStmt> looped;
      looped.push_back(loop(LStmt::Serial, step, cnst(steps), std::move(body)));
      body = std::move(looped);
    }
    launch->body.push_back(blockStmt(LStmt::Parallel, std::move(body)));
    launch->body.push_back(blockStmt(LStmt::Barrier));
    sharedOf[stage.buffer] = shared;
    rowRankOf[stage.buffer] = int64_t(rowRank);
    sharedRowOf[stage.buffer] = walk > 1 ? KExpr::var(rowVar) : cnst(0);
  }
  return true;
}

bool KernelLowering::emitColumns(const KStage &root, const StageMapping &mapping) {
  int64_t threads = mapping.threads, vector = mapping.vector;
  if (!checkVectorWidth(root, vector))
    return false;
  // 1. Coordinates.
  std::vector<KExprPtr> extents = extentsOf(root.buffer);
  size_t rowRank = extents.size() - size_t(mapping.inner);
  std::vector<KExprPtr> rowExtents(extents.begin(), extents.begin() + rowRank);
  std::vector<KExprPtr> columnExtents(extents.begin() + rowRank, extents.end());
  KExprPtr rowTotal = product(rowExtents), columnTotal = product(columnExtents);
  int64_t walk = rowRank == 0 ? 1 : mapping.rows;
  KExprPtr columnBlocks = ceilDiv(columnTotal, threads * vector);
  launch->gridSize = mul(columnBlocks, ceilDiv(rowTotal, walk));
  launch->threads = threads;
  KExprPtr bx = KExpr::var(launch->blockVar), tx = KExpr::var(launch->threadVar);
  KExprPtr column =
      mul(add(mul(foldIndex(KExpr::Mod, bx, columnBlocks), cnst(threads)), tx), cnst(vector));
  KExprPtr rowBlock = foldIndex(KExpr::FloorDiv, bx, columnBlocks);
  std::string rowVar = walk > 1 ? freshVar("r") : "";
  KExprPtr row = walk > 1 ? add(mul(rowBlock, cnst(walk)), KExpr::var(rowVar)) : rowBlock;
  std::vector<KExprPtr> columnCoords = coordinatesOf(column, columnExtents);
  std::string lane;
  if (vector > 1) {
    // Within a vector only the last coordinate moves (the last dim is a
    // multiple of the width).
    lane = freshVar("v");
    KExprPtr start =
        columnCoords.size() == 1 ? column : foldIndex(KExpr::Mod, column, columnExtents.back());
    columnCoords.back() = add(start, KExpr::var(lane));
  }
  std::vector<KExprPtr> coords = coordinatesOf(row, rowExtents);
  coords.insert(coords.end(), columnCoords.begin(), columnCoords.end());
  std::map<std::string, KExprPtr> bindings;
  for (size_t d = 0; d < coords.size(); ++d)
    bindings[root.spatialVars[d]] = coords[d];
  bool ok = true;
  // 2. Block-level stages.
  if (!emitColumnsBlockStages(root, rowExtents, rowBlock, walk, rowVar))
    return false;
  // 3. Thread-level elements the walk does not move, computed once. The
  // loads are found as lowerValue will see them: bindings substituted.
  std::vector<LStmt> hoisted;
  hoistedThreadValues.clear();
  if (walk > 1) {
    rewriteLoads(substituteVars(root.body, bindings), [&](const KExpr &load,
                                                          const std::vector<KExprPtr> &indices) {
      const StageSchedule *producerEntry = threadLevelEntry(load.name);
      if (!ok || !producerEntry ||
          llvm::any_of(indices, [&](const KExprPtr &i) { return usesVar(*i, rowVar); }))
        return KExprPtr();
      std::string key = threadStageKey(load.name, indices);
      if (hoistedThreadValues.count(key))
        return KExprPtr();
      size_t firstNew = launch->buffers.size();
      std::vector<LStmt> pre;
      std::string local = computeThreadStage(*stageOf(load.name), indices, pre, ok);
      KExprPtr value = KExpr::load(local, {cnst(0)}, threadStageDType(load.name));
      if (vector > 1) {
        if (llvm::any_of(pre, [](const LStmt &s) { return s.kind != LStmt::Store; })) {
          ok = error(producerEntry->loc, "a vector loop cannot hold the loops that '%" + load.name +
                                             "' needs; use vector = 1");
          return KExprPtr();
        }
        std::set<std::string> locals;
        for (size_t b = firstNew; b < launch->buffers.size(); ++b) {
          KBuffer &buffer = launch->buffers[b];
          if (buffer.role == KBuffer::Local) {
            buffer.type = Type::tensor(buffer.type.getDType(), {Dim::of(vector)});
            locals.insert(buffer.name);
          }
        }
        indexLocalsByLane(pre, value, locals, lane);
        std::vector<LStmt> lanes = std::move(pre);
        pre.clear();
        pre.push_back(loop(LStmt::Vector, lane, cnst(vector), std::move(lanes)));
      }
      hoisted = join(std::move(hoisted), std::move(pre));
      hoistedThreadValues[key] = value;
      return KExprPtr();
    });
  }
  // 4. The walk.
  std::vector<LStmt> body;
  KExprPtr value = lowerValue(root, bindings, body, ok, /*hoist=*/vector == 1);
  hoistedThreadValues.clear();
  if (!ok)
    return false;
  if (vector > 1 && !body.empty())
    return errorThreadStagesInVector(root);
  body.push_back(store(root.buffer, coords, value));
  if (vector > 1) {
    std::vector<LStmt> lanes = std::move(body);
    body.clear();
    body.push_back(loop(LStmt::Vector, lane, cnst(vector), std::move(lanes)));
  }
  bool rowsExact = rowTotal->kind == KExpr::IntConst && rowTotal->intValue % walk == 0;
  body = guarded(rowsExact ? nullptr : lt(row, rowTotal), std::move(body));
  if (walk > 1) {
    std::vector<LStmt> rows;
    rows.push_back(loop(LStmt::Unroll, rowVar, cnst(walk), std::move(body)));
    body = std::move(rows);
  }
  // 5. The column guard.
  bool columnsExact =
      columnTotal->kind == KExpr::IntConst && columnTotal->intValue % (threads * vector) == 0;
  launch->body.push_back(
      blockStmt(LStmt::Parallel, guarded(columnsExact ? nullptr : lt(column, columnTotal),
                                         join(std::move(hoisted), std::move(body)))));
  return true;
}
