//===- LowerTiles.cpp - Tiled contractions (matmul, conv) -----------------===//
//
// The `tiles` mapping: a contraction seen as a batched GEMM
// (analyzeContraction: batch, M, N, K) is computed one blockM x blockN tile
// of C per thread block:
//   1. each thread zeroes its threadM x threadN accumulators (locals);
//   2. a block-level loop steps through K, blockK at a time. The operand
//      tiles (blockM x blockK of X, blockK x blockN of Y) live in shared
//      memory, in S copies (pipeline stages) that rotate: step kt computes
//      on copy kt % S while later steps' tiles arrive in the others. An
//      operand reaches its tile one of two ways:
//      a. copied (`async_copy`, cp.async on sm_80+): for tensor cores, when
//         the operand is an input read as it is stored, its last dims being
//         exactly K's (or M's, N's) variables with a static size that is a
//         multiple of 16 bytes. Each thread starts 16-byte copies S - 1
//         steps ahead, one group per step (`async_commit`), and a step
//         begins by waiting for its own (`async_wait(S - 2)`); the tile row
//         follows the contiguous dim, padded by 16 bytes against bank
//         conflicts. Chunks past M, N or K copy nothing and land as zeros;
//      b. staged through registers otherwise: each thread fetches the next
//         step's elements (the operand *expression*, so an inlined producer
//         — a prologue — is applied as the tile is loaded; out-of-range
//         elements are 0, selected without touching memory), the block
//         multiply-accumulates the current copy, then the thread deposits
//         what it fetched into the next copy (S = 2, or 1 with a barrier
//         first when two copies do not fit).
//      Each step starts with one barrier: its tiles are complete and every
//      thread has finished with the copy the step then refills. The first
//      steps' tiles are staged before the loop. The multiply-accumulate is
//      per thread (SIMT: threadM x threadN) or per warp (mma m16n8k16 on
//      fragments read from the tiles);
//   3. the epilogue: each accumulator, rounded to the contraction's dtype,
//      goes through the output stage's expression (bias, relu, cast, ...)
//      and is stored where its (batch, m, n) lands in the output, if inside.
// Stages: as many copies (up to 4) as fit the 48 KiB of static shared
// memory when some operand is copied, else 2 (1 if two do not fit).
//
//===----------------------------------------------------------------------===//
#include "LowerKernel.h"
#include "ScheduleRules.h"

#include <functional>

using namespace fusec;
using namespace fusec::lowering;

namespace {

/// Whether `operand` is an input read as stored with its last dims exactly
/// `fastVars` (static extents `fastExtents`, a multiple of `chunk` in all):
/// then `chunk` consecutive fast elements are contiguous and aligned.
bool isContiguousLoad(const Kernel &kernel, const KExpr &operand,
                      const std::vector<std::string> &fastVars,
                      const std::vector<Dim> &fastExtents, int64_t chunk) {
  if (operand.kind != KExpr::Load || fastVars.empty())
    return false;
  const KBuffer *buffer = kernel.findBuffer(operand.name);
  if (!buffer || buffer->role != KBuffer::Input || buffer->type.getDType() != operand.dtype)
    return false;
  const Shape &shape = buffer->type.getShape();
  size_t rank = operand.args.size(), fast = fastVars.size();
  if (rank < fast)
    return false;
  int64_t length = 1;
  for (size_t i = 0; i < fast; ++i) {
    const KExpr &index = *operand.args[rank - fast + i];
    const Dim &dim = shape[rank - fast + i];
    if (index.kind != KExpr::Var || index.name != fastVars[i] || dim.isSymbolic() ||
        fastExtents[i].isSymbolic() || dim.size != fastExtents[i].size)
      return false;
    length *= dim.size;
  }
  for (size_t d = 0; d + fast < rank; ++d)
    for (const std::string &var : fastVars)
      if (usesVar(*operand.args[d], var))
        return false;
  return length % chunk == 0;
}

std::vector<LStmt> join(std::vector<LStmt> a, std::vector<LStmt> b) {
  for (LStmt &stmt : b)
    a.push_back(std::move(stmt));
  return a;
}

} // namespace

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
  std::vector<size_t> kDims;
  std::vector<std::string> kNames;
  std::vector<Dim> kDimsOf;
  for (size_t r = 0; r < core->reduceVars.size(); ++r) {
    kDims.push_back(r);
    kNames.push_back(core->reduceVars[r].first);
    kDimsOf.push_back(core->reduceVars[r].second);
    kExtents.push_back(dimExpr(core->reduceVars[r].second));
  }
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

  // The operand tiles: copied when the operand allows (tensor cores only),
  // K fastest when K is contiguous, else M (N); padded rows for mma.
  OperandTile tiles[2];
  for (int o = 0; o < 2; ++o) {
    OperandTile &tile = tiles[o];
    tile.isA = o == 0;
    tile.dtype = o == 0 ? contraction.xDType : contraction.yDType;
    tile.mnExtent = o == 0 ? bm : bn;
    tile.kExtent = bk;
    if (!mma)
      continue;
    tile.pad = tile.chunk = 16 / dtypeBytes(tile.dtype);
    const std::vector<size_t> &mnDims = o == 0 ? contraction.m : contraction.n;
    std::vector<std::string> mnNames;
    std::vector<Dim> mnDimsOf;
    for (size_t d : mnDims) {
      mnNames.push_back(contraction.vars[d]);
      mnDimsOf.push_back(contraction.extents[d]);
    }
    const KExpr &operand = o == 0 ? *contraction.x : *contraction.y;
    if (bk % tile.chunk == 0 && isContiguousLoad(kernel, operand, kNames, kDimsOf, tile.chunk))
      tile.copied = tile.kFastest = true;
    else if (tile.mnExtent % tile.chunk == 0 &&
             isContiguousLoad(kernel, operand, mnNames, mnDimsOf, tile.chunk))
      tile.copied = true;
  }
  constexpr int64_t kSharedLimit = 48 * 1024; // static shared memory per block
  auto stageBytes = [&] {
    return tiles[0].size() * dtypeBytes(tiles[0].dtype) +
           tiles[1].size() * dtypeBytes(tiles[1].dtype);
  };
  if (stageBytes() > kSharedLimit)
    return error(entry.loc, "the tiles need " + std::to_string(stageBytes()) +
                                " bytes of shared memory, over the 49152 a block can declare; "
                                "use smaller block_m, block_n or block_k");
  bool copies = tiles[0].copied || tiles[1].copied;
  int64_t stages = copies ? std::min<int64_t>(4, kSharedLimit / stageBytes()) : 0;
  if (stages < 2) { // copies need two stages at least: all through registers
    for (OperandTile &tile : tiles)
      tile.copied = tile.kFastest = false;
    copies = false;
    stages = 2 * stageBytes() <= kSharedLimit ? 2 : 1;
  }
  bool staged = !tiles[0].copied || !tiles[1].copied; // some tile via registers
  KExprPtr tilesM = ceilDiv(totalM, bm), tilesN = ceilDiv(totalN, bn);
  launch->threads = threads;
  launch->gridSize = mul(batches, mul(tilesM, tilesN));
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
  // The operand at tile position (mn, k) of K step `kTile`, and whether
  // that point lies inside the GEMM.
  auto operandAt = [&](const OperandTile &tile, KExprPtr kTile, KExprPtr mn, KExprPtr k,
                       KExprPtr &inside) {
    KExprPtr kGlobal = add(mul(kTile, cnst(bk)), k);
    KExprPtr mnGlobal = add(mul(tile.isA ? tileM : tileN, cnst(tile.mnExtent)), mn);
    std::map<std::string, KExprPtr> bindings;
    bind(bindings, contraction.batch, batchExtents, batch, contraction.vars);
    bind(bindings, tile.isA ? contraction.m : contraction.n, tile.isA ? mExtents : nExtents,
         mnGlobal, contraction.vars);
    bind(bindings, kDims, kExtents, kGlobal, kNames);
    inside = KExpr::binary(KExpr::And, lt(mnGlobal, tile.isA ? totalM : totalN),
                           lt(kGlobal, totalK));
    return substituteVars(tile.isA ? contraction.x : contraction.y, bindings);
  };
  auto copyOffset = [&](const OperandTile &tile, KExprPtr copy) {
    return stages == 1 ? cnst(0) : mul(foldIndex(KExpr::Mod, copy, cnst(stages)), cnst(tile.size()));
  };
  // `count` items spread over the threads, `trips` per thread: the
  // statements `move(item)` for each of this thread's items.
  auto overItems = [&](const std::string &base, int64_t count,
                       const std::function<LStmt(KExprPtr, KExprPtr)> &move) {
    int64_t trips = (count + threads - 1) / threads;
    std::string step = freshVar(base);
    KExprPtr trip = trips == 1 ? cnst(0) : KExpr::var(step);
    KExprPtr item = add(mul(trip, cnst(threads)), tx);
    std::vector<LStmt> body;
    body.push_back(move(trip, item));
    body = guarded(count % threads == 0 ? nullptr : lt(item, cnst(count)), std::move(body));
    if (trips > 1) {
      std::vector<LStmt> looped;
      looped.push_back(loop(LStmt::Serial, step, cnst(trips), std::move(body)));
      body = std::move(looped);
    }
    return body;
  };

  // a. Copied tiles: chunk c is row c / (chunks per row), at column
  // (c % chunks per row) * chunk; a chunk outside the GEMM reads nothing.
  auto copyIn = [&](KExprPtr kTile, KExprPtr copy) {
    std::vector<LStmt> out;
    for (const OperandTile &tile : tiles) {
      if (!tile.copied)
        continue;
      int64_t fastExtent = tile.kFastest ? tile.kExtent : tile.mnExtent;
      int64_t perRow = fastExtent / tile.chunk;
      out = join(std::move(out),
                 overItems(tile.isA ? "ca" : "cb", tile.rows() * perRow, [&](KExprPtr, KExprPtr c) {
                   KExprPtr row = foldIndex(KExpr::FloorDiv, c, cnst(perRow));
                   KExprPtr column = mul(foldIndex(KExpr::Mod, c, cnst(perRow)), cnst(tile.chunk));
                   KExprPtr mn = tile.kFastest ? row : column, k = tile.kFastest ? column : row;
                   KExprPtr inside;
                   KExprPtr source = operandAt(tile, kTile, mn, k, inside);
                   LStmt stmt;
                   stmt.kind = LStmt::AsyncCopy;
                   stmt.buffer = tile.shared;
                   stmt.indices = {add(copyOffset(tile, copy), tile.slot(mn, k))};
                   stmt.value = source;
                   stmt.count = tile.chunk;
                   stmt.extent = KExpr::select(inside, cnst(tile.chunk), cnst(0));
                   return stmt;
                 }));
    }
    return out;
  };
  // b. Tiles staged through registers: element e of a tile is (m, k) with
  // k fastest for A, (k, n) with n fastest for B (coalesced reads of
  // row-major operands); each thread holds its elements in `registers`.
  auto elementOf = [&](const OperandTile &tile, KExprPtr e, KExprPtr &mn, KExprPtr &k) {
    int64_t fastExtent = tile.isA ? bk : tile.mnExtent;
    KExprPtr outer = foldIndex(KExpr::FloorDiv, e, cnst(fastExtent));
    KExprPtr inner = foldIndex(KExpr::Mod, e, cnst(fastExtent));
    mn = tile.isA ? outer : inner;
    k = tile.isA ? inner : outer;
  };
  auto fetch = [&](KExprPtr kTile) {
    std::vector<LStmt> out;
    for (const OperandTile &tile : tiles)
      if (!tile.copied)
        out = join(std::move(out), overItems(tile.isA ? "la" : "lb", tile.mnExtent * bk,
                                             [&](KExprPtr trip, KExprPtr e) {
                                               KExprPtr mn, k, inside;
                                               elementOf(tile, e, mn, k);
                                               KExprPtr operand =
                                                   operandAt(tile, kTile, mn, k, inside);
                                               return store(tile.registers, {trip},
                                                            KExpr::select(inside, operand,
                                                                          KExpr::literal(0, operand->dtype)));
                                             }));
    return out;
  };
  auto deposit = [&](KExprPtr copy) {
    std::vector<LStmt> out;
    for (const OperandTile &tile : tiles)
      if (!tile.copied)
        out = join(std::move(out), overItems(tile.isA ? "la" : "lb", tile.mnExtent * bk,
                                             [&](KExprPtr trip, KExprPtr e) {
                                               KExprPtr mn, k;
                                               elementOf(tile, e, mn, k);
                                               return store(tile.shared,
                                                            {add(copyOffset(tile, copy),
                                                                 tile.slot(mn, k))},
                                                            KExpr::load(tile.registers, {trip},
                                                                        tile.dtype));
                                             }));
    return out;
  };

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
  KExprPtr steps = ceilDiv(totalK, bk);
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
      launch->body.push_back(blockStmt(LStmt::Parallel, ifStep(cnst(s), copyIn(cnst(s), cnst(s)))));
      launch->body.push_back(blockStmt(LStmt::AsyncCommit));
    }
  std::string zeroVar = freshVar("i");
  std::vector<LStmt> zero;
  zero.push_back(store(acc, {KExpr::var(zeroVar)}, KExpr::literal(core->init, core->accumulate)));
  std::vector<LStmt> init;
  init.push_back(loop(LStmt::Unroll, zeroVar, cnst(accumulators), std::move(zero)));
  if (staged) {
    init = join(std::move(init), fetch(cnst(0)));
    init = join(std::move(init), deposit(cnst(0)));
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
    ahead = ifStep(far, copyIn(far, far));
  }
  if (staged)
    ahead = join(std::move(ahead), ifStep(next, fetch(next)));
  kBody.push_back(blockStmt(LStmt::Parallel, std::move(ahead)));
  if (copies)
    kBody.push_back(blockStmt(LStmt::AsyncCommit));
  const OperandTile &tileA = tiles[0], &tileB = tiles[1];
  KExprPtr offsetA = copyOffset(tileA, kt), offsetB = copyOffset(tileB, kt);
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
    kBody.push_back(blockStmt(LStmt::Parallel, ifStep(next, deposit(next))));
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
