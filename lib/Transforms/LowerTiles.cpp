//===- LowerTiles.cpp - Tiled contractions (matmul, conv) -----------------===//
//
// The `tiles` mapping: a contraction seen as a batched GEMM
// (analyzeContraction: batch, M, N, K) is computed one blockM x blockN tile
// of C per thread block:
//   1. each thread zeroes its threadM x threadN accumulators (locals);
//   2. a block-level loop steps through K, blockK at a time: the block's
//      threads load the A tile (blockM x blockK of the X operand) and the B
//      tile (blockK x blockN of Y) into shared memory — each element is the
//      operand *expression*, so an inlined producer (a prologue) is applied
//      as the tile is loaded; out-of-range elements (ragged M, N, K) are 0,
//      selected without touching memory — then, after a barrier, each thread
//      multiply-accumulates its sub-tile from shared memory, and a second
//      barrier guards the tiles for the next step;
//   3. the epilogue: each accumulator, rounded to the contraction's dtype,
//      goes through the output stage's expression (bias, relu, cast, ...)
//      and is stored where its (batch, m, n) lands in the output, if inside.
// Threads are laid out (blockM / threadM) x (blockN / threadN); loads of a
// tile walk K fastest for A and N fastest for B (row-major operands are read
// coalesced).
//
//===----------------------------------------------------------------------===//
#include "LowerKernel.h"
#include "ScheduleRules.h"

using namespace fusec;
using namespace fusec::lowering;

bool KernelLowering::emitTiles(const KStage &root, const StageMapping &mapping) {
  const StageSchedule &entry = scheduleOf(root.buffer);
  // The contraction: the root itself, or the reduction computed at it.
  const KStage *core = root.isReduction() ? &root : nullptr;
  for (const KStage &stage : stages) {
    const StageSchedule &producer = scheduleOf(stage.buffer);
    if (!core && stage.isReduction() && producer.placement == StageSchedule::ComputeAt &&
        producer.consumer == root.buffer)
      core = &stage;
  }
  Contraction contraction;
  if (!core || !analyzeContraction(*core, contraction))
    return error(entry.loc, "tiles need a contraction (a sum of products of two operands, "
                            "each read by some outputs only) at '%" + root.buffer + "'");
  if (core != &root) {
    std::vector<std::string> vars = root.spatialVars;
    if (!readsAtOwnIndex(*root.body, core->buffer, vars, true))
      return error(entry.loc, "the epilogue '%" + root.buffer + "' must read '%" + core->buffer +
                                  "' at its own index");
  }
  const Shape &shape = kernel.findBuffer(core->buffer)->type.getShape();
  auto extentsAt = [&](const std::vector<size_t> &dims) {
    std::vector<KExprPtr> extents;
    for (size_t d : dims)
      extents.push_back(dimExpr(shape[d]));
    return extents;
  };
  std::vector<KExprPtr> batchExtents = extentsAt(contraction.batch),
                        mExtents = extentsAt(contraction.m), nExtents = extentsAt(contraction.n),
                        kExtents;
  for (const auto &[var, extent] : core->reduceVars)
    kExtents.push_back(dimExpr(extent));
  KExprPtr totalM = product(mExtents), totalN = product(nExtents),
           totalK = product(kExtents), batches = product(batchExtents);
  int64_t bm = mapping.blockM, bn = mapping.blockN, bk = mapping.blockK, tm = mapping.threadM,
          tn = mapping.threadN;
  int64_t threadsN = bn / tn, threads = (bm / tm) * threadsN;
  KExprPtr tilesM = ceilDiv(totalM, bm), tilesN = ceilDiv(totalN, bn);
  launch->threads = threads;
  launch->gridSize = mul(batches, mul(tilesM, tilesN));
  KExprPtr bx = KExpr::var(launch->blockVar), tx = KExpr::var(launch->threadVar);
  KExprPtr tileN = foldIndex(KExpr::Mod, bx, tilesN);
  KExprPtr tileM = foldIndex(KExpr::Mod, foldIndex(KExpr::FloorDiv, bx, tilesN), tilesM);
  KExprPtr batch = foldIndex(KExpr::FloorDiv, bx, mul(tilesN, tilesM));
  KExprPtr threadRow = foldIndex(KExpr::FloorDiv, tx, cnst(threadsN));
  KExprPtr threadCol = foldIndex(KExpr::Mod, tx, cnst(threadsN));

  // Variable bindings of the contraction for a (batch, m, n, k) point.
  auto bind = [&](std::map<std::string, KExprPtr> &bindings, const std::vector<size_t> &dims,
                  const std::vector<KExprPtr> &extents, KExprPtr flat,
                  const std::vector<std::string> &names) {
    std::vector<KExprPtr> coords = coordinatesOf(flat, extents);
    for (size_t i = 0; i < dims.size(); ++i)
      bindings[names[dims[i]]] = coords[i];
  };
  std::vector<size_t> kDims;
  std::vector<std::string> kNames;
  for (size_t r = 0; r < core->reduceVars.size(); ++r) {
    kDims.push_back(r);
    kNames.push_back(core->reduceVars[r].first);
  }

  std::string tileA = addBuffer(core->buffer + "_a", KBuffer::Shared, contraction.xDType, bk * bm);
  std::string tileB = addBuffer(core->buffer + "_b", KBuffer::Shared, contraction.yDType, bk * bn);
  std::string acc = addBuffer(core->buffer + "_acc", KBuffer::Local, core->accumulate, tm * tn);
  // 1. Zero the accumulators.
  std::string zeroVar = freshVar("i");
  std::vector<LStmt> zero;
  zero.push_back(store(acc, {KExpr::var(zeroVar)}, KExpr::literal(core->init, core->accumulate)));
  std::vector<LStmt> init;
  init.push_back(loop(LStmt::Unroll, zeroVar, cnst(tm * tn), std::move(zero)));
  launch->body.push_back(blockStmt(LStmt::Parallel, std::move(init)));

  // 2. The K loop: stage both tiles, then multiply-accumulate.
  std::string kStep = freshVar("kt");
  KExprPtr kBase = mul(KExpr::var(kStep), cnst(bk));
  auto stageTile = [&](const std::string &tile, int64_t rowsOuter, bool isA) {
    // Element e of the tile: for A (m, k) with k fastest; for B (k, n) with
    // n fastest, each stored at [k * width + (m or n)].
    int64_t elements = bm * bk;
    if (!isA)
      elements = bk * bn;
    std::string step = freshVar(isA ? "la" : "lb");
    int64_t trips = (elements + threads - 1) / threads;
    KExprPtr e = add(mul(trips == 1 ? cnst(0) : KExpr::var(step), cnst(threads)), tx);
    int64_t fastExtent = isA ? bk : bn;
    KExprPtr outer = foldIndex(KExpr::FloorDiv, e, cnst(fastExtent));
    KExprPtr inner = foldIndex(KExpr::Mod, e, cnst(fastExtent));
    KExprPtr k = add(kBase, isA ? inner : outer);
    KExprPtr mn = add(mul(isA ? tileM : tileN, cnst(isA ? bm : bn)), isA ? outer : inner);
    std::map<std::string, KExprPtr> bindings;
    bind(bindings, contraction.batch, batchExtents, batch, core->spatialVars);
    bind(bindings, isA ? contraction.m : contraction.n, isA ? mExtents : nExtents, mn,
         core->spatialVars);
    bind(bindings, kDims, kExtents, k, kNames);
    KExprPtr operand = substituteVars(isA ? contraction.x : contraction.y, bindings);
    KExprPtr inside = KExpr::binary(KExpr::And, lt(mn, isA ? totalM : totalN), lt(k, totalK));
    KExprPtr value = KExpr::select(inside, operand, KExpr::literal(0, operand->dtype));
    KExprPtr slot = add(mul(isA ? inner : outer, cnst(isA ? bm : bn)), isA ? outer : inner);
    std::vector<LStmt> body;
    body.push_back(store(tile, {slot}, value));
    body = guarded(elements % threads == 0 ? nullptr : lt(e, cnst(elements)), std::move(body));
    if (trips > 1) {
      std::vector<LStmt> looped;
      looped.push_back(loop(LStmt::Serial, step, cnst(trips), std::move(body)));
      body = std::move(looped);
    }
    (void)rowsOuter;
    return blockStmt(LStmt::Parallel, std::move(body));
  };
  std::vector<LStmt> kBody;
  kBody.push_back(stageTile(tileA, bm, true));
  kBody.push_back(stageTile(tileB, bk, false));
  kBody.push_back(blockStmt(LStmt::Barrier));
  {
    std::string kk = freshVar("kk"), i = freshVar("i"), j = freshVar("j");
    const KExpr &product = *core->body;
    KExprPtr a = KExpr::load(tileA,
                             {add(mul(KExpr::var(kk), cnst(bm)),
                                  add(mul(threadRow, cnst(tm)), KExpr::var(i)))},
                             contraction.xDType);
    KExprPtr b = KExpr::load(tileB,
                             {add(mul(KExpr::var(kk), cnst(bn)),
                                  add(mul(threadCol, cnst(tn)), KExpr::var(j)))},
                             contraction.yDType);
    KExprPtr term = KExpr::call("multiply",
                                {castTo(a, product.args[0]->dtype), castTo(b, product.args[1]->dtype)},
                                product.dtype);
    KExprPtr slot = add(mul(KExpr::var(i), cnst(tn)), KExpr::var(j));
    KExprPtr sum = KExpr::call(core->combiner,
                               {KExpr::load(acc, {slot}, core->accumulate),
                                castTo(term, core->accumulate)},
                               core->accumulate);
    std::vector<LStmt> fma;
    fma.push_back(store(acc, {slot}, sum));
    std::vector<LStmt> overJ;
    overJ.push_back(loop(LStmt::Unroll, j, cnst(tn), std::move(fma)));
    std::vector<LStmt> overI;
    overI.push_back(loop(LStmt::Unroll, i, cnst(tm), std::move(overJ)));
    std::vector<LStmt> overK;
    overK.push_back(loop(LStmt::Serial, kk, cnst(bk), std::move(overI)));
    kBody.push_back(blockStmt(LStmt::Parallel, std::move(overK)));
  }
  kBody.push_back(blockStmt(LStmt::Barrier));
  launch->body.push_back(loop(LStmt::Serial, kStep, ceilDiv(totalK, bk), std::move(kBody)));

  // 3. The epilogue, per accumulator.
  std::string i = freshVar("i"), j = freshVar("j");
  KExprPtr m = add(mul(tileM, cnst(bm)), add(mul(threadRow, cnst(tm)), KExpr::var(i)));
  KExprPtr n = add(mul(tileN, cnst(bn)), add(mul(threadCol, cnst(tn)), KExpr::var(j)));
  KExprPtr accValue = KExpr::load(acc, {add(mul(KExpr::var(i), cnst(tn)), KExpr::var(j))},
                                  core->accumulate);
  DType coreDType = kernel.findBuffer(core->buffer)->type.getDType();
  std::map<std::string, KExprPtr> coreBindings;
  bind(coreBindings, contraction.batch, batchExtents, batch, core->spatialVars);
  bind(coreBindings, contraction.m, mExtents, m, core->spatialVars);
  bind(coreBindings, contraction.n, nExtents, n, core->spatialVars);
  std::vector<KExprPtr> coords;
  std::map<std::string, KExprPtr> rootBindings;
  for (size_t d = 0; d < core->spatialVars.size(); ++d) {
    coords.push_back(coreBindings.at(core->spatialVars[d]));
    rootBindings[root.spatialVars[d]] = coords.back();
  }
  bool ok = true;
  std::vector<LStmt> epilogue;
  KExprPtr value;
  if (core == &root) {
    value = castTo(accValue, coreDType);
  } else {
    KStage applied = root;
    applied.body = rewriteLoads(root.body, [&](const KExpr &load, const std::vector<KExprPtr> &) {
      return load.name == core->buffer ? castTo(accValue, coreDType) : KExprPtr();
    });
    value = lowerValue(applied, rootBindings, epilogue, ok);
  }
  epilogue.push_back(store(root.buffer, coords, value));
  KExprPtr inside = KExpr::binary(KExpr::And, lt(m, totalM), lt(n, totalN));
  std::vector<LStmt> overJ;
  overJ.push_back(loop(LStmt::Unroll, j, cnst(tn), guarded(inside, std::move(epilogue))));
  std::vector<LStmt> overI;
  overI.push_back(loop(LStmt::Unroll, i, cnst(tm), std::move(overJ)));
  launch->body.push_back(blockStmt(LStmt::Parallel, std::move(overI)));
  return ok;
}
