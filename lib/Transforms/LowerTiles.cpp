//===- LowerTiles.cpp - Tiled contractions (matmul, conv) -----------------===//
//
// The `tiles` mapping: a contraction seen as a batched GEMM
// (analyzeContraction: batch, M, N, K) is computed one blockM x blockN tile
// of C per thread block:
//   1. each thread zeroes its threadM x threadN accumulators (locals);
//   2. a block-level loop steps through K, blockK at a time. The operand
//      tiles (blockM x blockK of X, blockK x blockN of Y) live in shared
//      memory, in S copies (pipeline stages) that rotate: step kt computes
//      on copy kt % S while later steps' tiles arrive in the others. Each
//      operand is either copied (async_copy, S - 1 steps ahead, one
//      async_commit group per step, each step first waiting for its own
//      with async_wait(S - 2)) or staged through registers (fetched one
//      step ahead before the compute, deposited into the next copy after
//      it; with one copy, after a second barrier) — the choice, layouts and
//      statements are LowerTileOperands.cpp's. Each step starts with one
//      barrier: its tiles are complete and every thread has finished with
//      the copy the step then refills. The multiply-accumulate is per
//      thread (SIMT: threadM x threadN, serial over the step's k) or per
//      warp (tensor cores: LowerTileFragments.cpp);
//   3. the epilogue: each accumulator, rounded to the contraction's dtype,
//      goes through the output stage's expression (bias, relu, cast, ...)
//      and is stored where its (batch, m, n) lands in the output, if inside.
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
  if (!core || !analyzeContraction(kernel, *core, contraction))
    return error(entry.loc, "tiles need a contraction (a sum of products of two operands, "
                            "each read by some outputs only) at '%" + root.buffer + "'");
  if (core != &root && !isTiledEpilogue(kernel, root, *core))
    return error(entry.loc, "the epilogue '%" + root.buffer + "' must read '%" + core->buffer +
                                "' at its own index, over its shape (the tiles cover the "
                                "contraction)");
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
  TileOperands operands(*this, contraction, *core, mapping, threads);
  if (!operands.plan(mma))
    return error(entry.loc, "the tiles need " + std::to_string(operands.stageBytes()) +
                                " bytes of shared memory, over the " +
                                std::to_string(kMaxStaticSharedBytes) +
                                " a block can declare; use smaller block_m, block_n or block_k");
  OperandTile (&tiles)[2] = operands.tiles;
  int64_t stages = operands.stages;
  bool copies = operands.copies(), staged = operands.staged();
  KExprPtr totalM = operands.totalM, totalN = operands.totalN;
  KExprPtr tilesM = ceilDiv(totalM, bm), tilesN = ceilDiv(totalN, bn);
  launch->threads = threads;
  launch->gridSize = mul(operands.batches, mul(tilesM, tilesN));
  // The tile shape stays visible after lowering (and in --stats).
  kernel.attrs.set("tile", Attr::makeList({Attr::makeInt(bm), Attr::makeInt(bn),
                                           Attr::makeInt(bk)}));
  kernel.attrs.set("tensor_cores", Attr::makeBool(mma));
  kernel.attrs.set("pipeline_stages", Attr::makeInt(stages));
  if (mma) // which operand tiles are copied (only tensor-core tiles may be)
    kernel.attrs.set("async_copy", Attr::makeList({Attr::makeBool(tiles[0].copied),
                                                   Attr::makeBool(tiles[1].copied)}));
  KExprPtr bx = KExpr::var(launch->blockVar), tx = KExpr::var(launch->threadVar);
  KExprPtr tileN = foldIndex(KExpr::Mod, bx, tilesN);
  KExprPtr tileM = foldIndex(KExpr::Mod, foldIndex(KExpr::FloorDiv, bx, tilesN), tilesM);
  operands.tileM = tileM;
  operands.tileN = tileN;
  operands.batch = foldIndex(KExpr::FloorDiv, bx, mul(tilesN, tilesM));
  KExprPtr threadRow = foldIndex(KExpr::FloorDiv, tx, cnst(threadsN));
  KExprPtr threadCol = foldIndex(KExpr::Mod, tx, cnst(threadsN));

  for (OperandTile &tile : tiles)
    tile.shared = addBuffer(core->buffer + (tile.isA ? "_a" : "_b"), KBuffer::Shared,
                            tile.dtype, stages * tile.size());
  int64_t accumulators = mma ? mmaM * mmaN * 4 : tm * tn;
  std::string acc =
      addBuffer(core->buffer + "_acc", KBuffer::Local, core->accumulate, accumulators);
  for (OperandTile &tile : tiles)
    if (!tile.copied)
      tile.registers = addBuffer(core->buffer + (tile.isA ? "_ra" : "_rb"), KBuffer::Local,
                                 tile.dtype, (tile.mnExtent * bk + threads - 1) / threads);
  KExprPtr steps = ceilDiv(operands.totalK, bk);
  // A guard for K step `step`, unless it surely exists.
  auto ifStep = [&](KExprPtr step, std::vector<LStmt> body) {
    bool sure = step->kind == KExpr::IntConst && steps->kind == KExpr::IntConst &&
                step->intValue < steps->intValue;
    return guarded(sure ? nullptr : lt(step, steps), std::move(body));
  };

  // 1. Start copying the first S - 1 steps' copied tiles (one group each);
  // zero the accumulators; stage the first step's other tiles into copy 0.
  if (copies)
    for (int64_t s = 0; s + 1 < stages; ++s) {
      launch->body.push_back(blockStmt(LStmt::Parallel, ifStep(cnst(s), operands.copyIn(cnst(s), cnst(s)))));
      launch->body.push_back(blockStmt(LStmt::AsyncCommit));
    }
  std::string zeroVar = freshVar("i");
  std::vector<LStmt> zero;
  zero.push_back(store(acc, {KExpr::var(zeroVar)}, core->initLiteral()));
  std::vector<LStmt> init;
  init.push_back(loop(LStmt::Unroll, zeroVar, cnst(accumulators), std::move(zero)));
  if (staged) {
    init = join(std::move(init), operands.fetch(cnst(0)));
    init = join(std::move(init), operands.deposit(cnst(0)));
  }
  launch->body.push_back(blockStmt(LStmt::Parallel, std::move(init)));

  // 2. The K loop: step kt's copied tiles have landed (async_wait) and
  // everyone is past step kt - 1 (barrier); start copying step kt + S - 1
  // into the copy step kt - 1 used, fetch step kt + 1's staged elements,
  // compute on copy kt % S, deposit the fetched elements into copy
  // (kt + 1) % S (a single copy: after a second barrier).
  std::string kStep = freshVar("kt");
  KExprPtr kt = KExpr::var(kStep);
  KExprPtr next = add(kt, cnst(1));
  std::vector<LStmt> kBody;
  if (copies) {
    LStmt wait = blockStmt(LStmt::AsyncWait);
    wait.count = stages - 2;
    kBody.push_back(std::move(wait));
  }
  kBody.push_back(blockStmt(LStmt::Barrier));
  std::vector<LStmt> ahead;
  if (copies) {
    KExprPtr far = add(kt, cnst(stages - 1));
    ahead = ifStep(far, operands.copyIn(far, far));
  }
  if (staged)
    ahead = join(std::move(ahead), ifStep(next, operands.fetch(next)));
  kBody.push_back(blockStmt(LStmt::Parallel, std::move(ahead)));
  if (copies)
    kBody.push_back(blockStmt(LStmt::AsyncCommit));
  const OperandTile &tileA = tiles[0], &tileB = tiles[1];
  KExprPtr offsetA = operands.copyOffset(tileA, kt), offsetB = operands.copyOffset(tileB, kt);
  // The lane's place in the mma layouts: lane = 4 g + q.
  KExprPtr warp = foldIndex(KExpr::FloorDiv, tx, cnst(32));
  KExprPtr lane = foldIndex(KExpr::Mod, tx, cnst(32));
  KExprPtr group = foldIndex(KExpr::FloorDiv, lane, cnst(4));
  KExprPtr quad = foldIndex(KExpr::Mod, lane, cnst(4));
  KExprPtr warpRow = foldIndex(KExpr::FloorDiv, warp, cnst(warpsN));
  KExprPtr warpCol = foldIndex(KExpr::Mod, warp, cnst(warpsN));
  if (mma) {
    MmaStep step{&tileA,   &tileB, offsetA,      offsetB, bk, wm, wn, warpsN, core->buffer,
                 acc, core->accumulate};
    kBody = join(std::move(kBody), emitMmaStep(step));
  } else {
    std::string kk = freshVar("kk"), i = freshVar("i"), j = freshVar("j");
    const KExpr &product = *core->body;
    KExprPtr a = KExpr::load(
        tileA.shared,
        {add(offsetA, tileA.slot(add(mul(threadRow, cnst(tm)), KExpr::var(i)), KExpr::var(kk)))},
        contraction.xDType);
    KExprPtr b = KExpr::load(
        tileB.shared,
        {add(offsetB, tileB.slot(add(mul(threadCol, cnst(tn)), KExpr::var(j)), KExpr::var(kk)))},
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
  if (staged) {
    if (stages == 1) // one copy: everyone must be done reading it
      kBody.push_back(blockStmt(LStmt::Barrier));
    kBody.push_back(blockStmt(LStmt::Parallel, ifStep(next, operands.deposit(next))));
  }
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
  operands.bind(coreBindings, m, n, nullptr);
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
