//===- LowerTiles.cpp - Tiled contractions (matmul, conv) -----------------===//
//
// The `tiles` mapping: a contraction seen as a batched GEMM
// (analyzeContraction: batch, M, N, K) is computed one blockM x blockN tile
// of C per thread block:
//   1. each thread zeroes its threadM x threadN accumulators (locals);
//   2. a block-level loop steps through K, blockK at a time. The operand
//      tiles (blockM x blockK of X, blockK x blockN of Y) live in shared
//      memory, twice when two copies fit (double buffering): each step
//      fetches the *next* step's elements into registers, multiply-
//      accumulates the current tile (per thread, or per warp with mma),
//      then deposits the fetched elements into the other copy, and one
//      barrier ends the step (a single copy takes a second barrier before
//      the deposit). Each tile element is the operand *expression*, so an
//      inlined producer (a prologue) is applied as the tile is loaded;
//      out-of-range elements (ragged M, N, K) are 0, selected without
//      touching memory. The first step's tiles are staged before the loop;
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

#include <functional>

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
  if (!core || !analyzeContraction(kernel, *core, contraction))
    return error(entry.loc, "tiles need a contraction (a sum of products of two operands, "
                            "each read by some outputs only) at '%" + root.buffer + "'");
  if (core != &root) {
    std::vector<std::string> vars = root.spatialVars;
    if (!readsAtOwnIndex(*root.body, core->buffer, vars, true))
      return error(entry.loc, "the epilogue '%" + root.buffer + "' must read '%" + core->buffer +
                                  "' at its own index");
  }
  auto extentsAt = [&](const std::vector<size_t> &dims) {
    std::vector<KExprPtr> extents;
    for (size_t d : dims)
      extents.push_back(dimExpr(contraction.extents[d]));
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
  // Tensor cores: warps of warpM x warpN, each a grid of 16 x 8 mma tiles.
  bool mma = mapping.mma;
  int64_t wm = mapping.warpM, wn = mapping.warpN, warpsN = bn / wn;
  int64_t mmaM = wm / 16, mmaN = wn / 8;
  if (mma) {
    threads = 32 * (bm / wm) * warpsN;
    bool halves = contraction.xDType == contraction.yDType &&
                  (contraction.xDType == DType::f16 || contraction.xDType == DType::bf16);
    if (!halves || core->accumulate != DType::f32 || core->body->dtype != DType::f32)
      return error(entry.loc, "mma needs f16 or bf16 operands accumulated in f32");
  }
  KExprPtr tilesM = ceilDiv(totalM, bm), tilesN = ceilDiv(totalN, bn);
  // Static shared memory: both tiles must fit the 48 KiB a block declares.
  int64_t sharedBytes = bk * bm * dtypeBytes(contraction.xDType) +
                        bk * bn * dtypeBytes(contraction.yDType);
  // Double buffering when two copies of the tiles fit.
  bool doubleBuffer = 2 * sharedBytes <= 48 * 1024;
  if (sharedBytes > 48 * 1024)
    return error(entry.loc, "the tiles need " + std::to_string(sharedBytes) +
                                " bytes of shared memory, over the 49152 a block can declare; "
                                "use smaller block_m, block_n or block_k");
  launch->threads = threads;
  launch->gridSize = mul(batches, mul(tilesM, tilesN));
  // The tile shape stays visible after lowering (and in --stats).
  kernel.attrs.set("tile", Attr::makeList({Attr::makeInt(bm), Attr::makeInt(bn),
                                           Attr::makeInt(bk)}));
  kernel.attrs.set("tensor_cores", Attr::makeBool(mma));
  kernel.attrs.set("pipeline_stages", Attr::makeInt(doubleBuffer ? 2 : 1));
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

  // Two copies of each tile (when they fit): while the block computes on
  // one, the next K step's tile goes into the other (double buffering).
  int64_t sizeA = bk * bm, sizeB = bk * bn;
  int64_t copies = doubleBuffer ? 2 : 1;
  std::string tileA =
      addBuffer(core->buffer + "_a", KBuffer::Shared, contraction.xDType, copies * sizeA);
  std::string tileB =
      addBuffer(core->buffer + "_b", KBuffer::Shared, contraction.yDType, copies * sizeB);
  int64_t accumulators = mma ? mmaM * mmaN * 4 : tm * tn;
  std::string acc =
      addBuffer(core->buffer + "_acc", KBuffer::Local, core->accumulate, accumulators);
  // Element e of a tile: for A (m, k) with k fastest, for B (k, n) with n
  // fastest (coalesced reads of row-major operands), stored at
  // [k * width + (m or n)]; each thread moves `trips` of them, through
  // registers (`%<c>_ra`, `%<c>_rb`): fetched from global memory a step
  // ahead, deposited into shared memory after the step's compute.
  int64_t tripsA = (sizeA + threads - 1) / threads, tripsB = (sizeB + threads - 1) / threads;
  std::string regA = addBuffer(core->buffer + "_ra", KBuffer::Local, contraction.xDType, tripsA);
  std::string regB = addBuffer(core->buffer + "_rb", KBuffer::Local, contraction.yDType, tripsB);
  auto tileElement = [&](bool isA, KExprPtr trip, KExprPtr &e, KExprPtr &outer, KExprPtr &inner) {
    e = add(mul(trip, cnst(threads)), tx);
    int64_t fastExtent = isA ? bk : bn;
    outer = foldIndex(KExpr::FloorDiv, e, cnst(fastExtent));
    inner = foldIndex(KExpr::Mod, e, cnst(fastExtent));
  };
  // Statements moving every trip's element of one tile (`move(trip, e,
  // outer, inner)` gives the statement for one element).
  auto overTrips = [&](bool isA, const std::function<LStmt(KExprPtr, KExprPtr, KExprPtr,
                                                           KExprPtr)> &move) {
    int64_t elements = isA ? sizeA : sizeB, trips = isA ? tripsA : tripsB;
    std::string step = freshVar(isA ? "la" : "lb");
    KExprPtr trip = trips == 1 ? cnst(0) : KExpr::var(step);
    KExprPtr e, outer, inner;
    tileElement(isA, trip, e, outer, inner);
    std::vector<LStmt> body;
    body.push_back(move(trip, e, outer, inner));
    body = guarded(elements % threads == 0 ? nullptr : lt(e, cnst(elements)), std::move(body));
    if (trips > 1) {
      std::vector<LStmt> looped;
      looped.push_back(loop(LStmt::Serial, step, cnst(trips), std::move(body)));
      body = std::move(looped);
    }
    return body;
  };
  auto fetch = [&](bool isA, KExprPtr kTile) {
    return overTrips(isA, [&, kTile](KExprPtr trip, KExprPtr, KExprPtr outer, KExprPtr inner) {
      KExprPtr k = add(mul(kTile, cnst(bk)), isA ? inner : outer);
      KExprPtr mn = add(mul(isA ? tileM : tileN, cnst(isA ? bm : bn)), isA ? outer : inner);
      std::map<std::string, KExprPtr> bindings;
      bind(bindings, contraction.batch, batchExtents, batch, contraction.vars);
      bind(bindings, isA ? contraction.m : contraction.n, isA ? mExtents : nExtents, mn,
           contraction.vars);
      bind(bindings, kDims, kExtents, k, kNames);
      KExprPtr operand = substituteVars(isA ? contraction.x : contraction.y, bindings);
      KExprPtr inside = KExpr::binary(KExpr::And, lt(mn, isA ? totalM : totalN), lt(k, totalK));
      return store(isA ? regA : regB, {trip},
                   KExpr::select(inside, operand, KExpr::literal(0, operand->dtype)));
    });
  };
  auto deposit = [&](bool isA, KExprPtr buffer) {
    return overTrips(isA, [&, buffer](KExprPtr trip, KExprPtr, KExprPtr outer, KExprPtr inner) {
      KExprPtr slot = add(mul(isA ? inner : outer, cnst(isA ? bm : bn)), isA ? outer : inner);
      return store(isA ? tileA : tileB, {add(mul(buffer, cnst(isA ? sizeA : sizeB)), slot)},
                   KExpr::load(isA ? regA : regB, {trip}, isA ? contraction.xDType
                                                              : contraction.yDType));
    });
  };
  auto join = [](std::vector<LStmt> a, std::vector<LStmt> b) {
    for (LStmt &stmt : b)
      a.push_back(std::move(stmt));
    return a;
  };

  // 1. Zero the accumulators; stage the first K step into buffer 0.
  std::string zeroVar = freshVar("i");
  std::vector<LStmt> zero;
  zero.push_back(store(acc, {KExpr::var(zeroVar)}, KExpr::literal(core->init, core->accumulate)));
  std::vector<LStmt> init;
  init.push_back(loop(LStmt::Unroll, zeroVar, cnst(accumulators), std::move(zero)));
  init = join(std::move(init), join(fetch(true, cnst(0)), fetch(false, cnst(0))));
  init = join(std::move(init), join(deposit(true, cnst(0)), deposit(false, cnst(0))));
  launch->body.push_back(blockStmt(LStmt::Parallel, std::move(init)));
  launch->body.push_back(blockStmt(LStmt::Barrier));

  // 2. The K loop: fetch step kt + 1, compute step kt from buffer kt % 2,
  // deposit step kt + 1 into the other buffer, one barrier. (The other
  // buffer was last read in step kt - 1, which every thread finished before
  // the previous barrier.)
  std::string kStep = freshVar("kt");
  KExprPtr steps = ceilDiv(totalK, bk);
  KExprPtr next = add(KExpr::var(kStep), cnst(1));
  KExprPtr hasNext = lt(next, steps);
  KExprPtr current = doubleBuffer ? foldIndex(KExpr::Mod, KExpr::var(kStep), cnst(2)) : cnst(0);
  KExprPtr offsetA = mul(current, cnst(sizeA)), offsetB = mul(current, cnst(sizeB));
  std::vector<LStmt> kBody;
  kBody.push_back(blockStmt(LStmt::Parallel,
                            guarded(hasNext, join(fetch(true, next), fetch(false, next)))));
  // The lane's place in the mma layouts: lane = 4 g + q.
  KExprPtr warp = foldIndex(KExpr::FloorDiv, tx, cnst(32));
  KExprPtr lane = foldIndex(KExpr::Mod, tx, cnst(32));
  KExprPtr group = foldIndex(KExpr::FloorDiv, lane, cnst(4));
  KExprPtr quad = foldIndex(KExpr::Mod, lane, cnst(4));
  KExprPtr warpRow = foldIndex(KExpr::FloorDiv, warp, cnst(warpsN));
  KExprPtr warpCol = foldIndex(KExpr::Mod, warp, cnst(warpsN));
  if (mma) {
    // Fragments from the shared tiles, then one mma per 16 x 8 tile.
    std::string fragA = addBuffer(core->buffer + "_fa", KBuffer::Local, contraction.xDType, mmaM * 8);
    std::string fragB = addBuffer(core->buffer + "_fb", KBuffer::Local, contraction.yDType, mmaN * 4);
    std::string mi = freshVar("mi"), ni = freshVar("ni"), e = freshVar("e");
    KExprPtr ev = KExpr::var(e);
    KExprPtr evenOdd = foldIndex(KExpr::Mod, ev, cnst(2));
    // A element e: row g + 8 ((e / 2) % 2), k 2q + e % 2 + 8 (e / 4).
    KExprPtr aRow = add(mul(warpRow, cnst(wm)),
                        add(mul(KExpr::var(mi), cnst(16)),
                            add(group, mul(foldIndex(KExpr::Mod,
                                                     foldIndex(KExpr::FloorDiv, ev, cnst(2)),
                                                     cnst(2)),
                                           cnst(8)))));
    KExprPtr aK = add(mul(quad, cnst(2)),
                      add(evenOdd, mul(foldIndex(KExpr::FloorDiv, ev, cnst(4)), cnst(8))));
    std::vector<LStmt> loadA;
    loadA.push_back(store(fragA, {add(mul(KExpr::var(mi), cnst(8)), ev)},
                          KExpr::load(tileA, {add(offsetA, add(mul(aK, cnst(bm)), aRow))},
                                      contraction.xDType)));
    std::vector<LStmt> overE;
    overE.push_back(loop(LStmt::Unroll, e, cnst(8), std::move(loadA)));
    std::vector<LStmt> fragments;
    fragments.push_back(loop(LStmt::Unroll, mi, cnst(mmaM), std::move(overE)));
    // B element e: k 2q + e % 2 + 8 (e / 2), column g.
    std::string e2 = freshVar("e");
    KExprPtr ev2 = KExpr::var(e2);
    KExprPtr bK = add(mul(quad, cnst(2)),
                      add(foldIndex(KExpr::Mod, ev2, cnst(2)),
                          mul(foldIndex(KExpr::FloorDiv, ev2, cnst(2)), cnst(8))));
    KExprPtr bCol = add(mul(warpCol, cnst(wn)), add(mul(KExpr::var(ni), cnst(8)), group));
    std::vector<LStmt> loadB;
    loadB.push_back(store(fragB, {add(mul(KExpr::var(ni), cnst(4)), ev2)},
                          KExpr::load(tileB, {add(offsetB, add(mul(bK, cnst(bn)), bCol))},
                                      contraction.yDType)));
    std::vector<LStmt> overE2;
    overE2.push_back(loop(LStmt::Unroll, e2, cnst(4), std::move(loadB)));
    fragments.push_back(loop(LStmt::Unroll, ni, cnst(mmaN), std::move(overE2)));
    kBody.push_back(blockStmt(LStmt::Parallel, std::move(fragments)));
    for (int64_t a = 0; a < mmaM; ++a)
      for (int64_t b = 0; b < mmaN; ++b) {
        LStmt step;
        step.kind = LStmt::Mma;
        int64_t offset = (a * mmaN + b) * 4;
        step.buffer = acc;
        step.indices = {cnst(offset)};
        step.operands = {KExpr::load(fragA, {cnst(a * 8)}, contraction.xDType),
                         KExpr::load(fragB, {cnst(b * 4)}, contraction.yDType),
                         KExpr::load(acc, {cnst(offset)}, core->accumulate)};
        kBody.push_back(std::move(step));
      }
  } else {
    std::string kk = freshVar("kk"), i = freshVar("i"), j = freshVar("j");
    const KExpr &product = *core->body;
    KExprPtr a = KExpr::load(tileA,
                             {add(offsetA, add(mul(KExpr::var(kk), cnst(bm)),
                                               add(mul(threadRow, cnst(tm)), KExpr::var(i))))},
                             contraction.xDType);
    KExprPtr b = KExpr::load(tileB,
                             {add(offsetB, add(mul(KExpr::var(kk), cnst(bn)),
                                               add(mul(threadCol, cnst(tn)), KExpr::var(j))))},
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
  KExprPtr other = doubleBuffer ? foldIndex(KExpr::Mod, next, cnst(2)) : cnst(0);
  if (!doubleBuffer) // one copy: everyone must be done reading it
    kBody.push_back(blockStmt(LStmt::Barrier));
  kBody.push_back(blockStmt(LStmt::Parallel,
                            guarded(hasNext, join(deposit(true, other), deposit(false, other)))));
  kBody.push_back(blockStmt(LStmt::Barrier));
  launch->body.push_back(loop(LStmt::Serial, kStep, steps, std::move(kBody)));

  // 3. The epilogue, per accumulator: SIMT (i, j) of the thread's sub-tile;
  // mma (i = mma tile row, j = mma tile column, c = C element).
  std::string i = freshVar("i"), j = freshVar("j"), c = mma ? freshVar("c") : "";
  KExprPtr m, n, accValue;
  if (mma) {
    KExprPtr cv = KExpr::var(c);
    m = add(mul(tileM, cnst(bm)),
            add(mul(warpRow, cnst(wm)),
                add(mul(KExpr::var(i), cnst(16)),
                    add(group, mul(foldIndex(KExpr::FloorDiv, cv, cnst(2)), cnst(8))))));
    n = add(mul(tileN, cnst(bn)),
            add(mul(warpCol, cnst(wn)),
                add(mul(KExpr::var(j), cnst(8)),
                    add(mul(quad, cnst(2)), foldIndex(KExpr::Mod, cv, cnst(2))))));
    accValue = KExpr::load(
        acc, {add(mul(add(mul(KExpr::var(i), cnst(mmaN)), KExpr::var(j)), cnst(4)), cv)},
        core->accumulate);
  } else {
    m = add(mul(tileM, cnst(bm)), add(mul(threadRow, cnst(tm)), KExpr::var(i)));
    n = add(mul(tileN, cnst(bn)), add(mul(threadCol, cnst(tn)), KExpr::var(j)));
    accValue = KExpr::load(acc, {add(mul(KExpr::var(i), cnst(tn)), KExpr::var(j))},
                           core->accumulate);
  }
  DType coreDType = kernel.findBuffer(core->buffer)->type.getDType();
  std::map<std::string, KExprPtr> coreBindings;
  bind(coreBindings, contraction.batch, batchExtents, batch, contraction.vars);
  bind(coreBindings, contraction.m, mExtents, m, contraction.vars);
  bind(coreBindings, contraction.n, nExtents, n, contraction.vars);
  std::vector<KExprPtr> coords;
  std::map<std::string, KExprPtr> rootBindings;
  for (size_t d = 0; d < core->spatialVars.size(); ++d) {
    coords.push_back(substituteVars(contraction.spatialOf[d], coreBindings));
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
  std::vector<LStmt> body = guarded(inside, std::move(epilogue));
  if (mma) {
    std::vector<LStmt> overC;
    overC.push_back(loop(LStmt::Unroll, c, cnst(4), std::move(body)));
    body = std::move(overC);
  }
  std::vector<LStmt> overJ;
  overJ.push_back(loop(LStmt::Unroll, j, cnst(mma ? mmaN : tn), std::move(body)));
  std::vector<LStmt> overI;
  overI.push_back(loop(LStmt::Unroll, i, cnst(mma ? mmaM : tm), std::move(overJ)));
  launch->body.push_back(blockStmt(LStmt::Parallel, std::move(overI)));
  return ok;
}
