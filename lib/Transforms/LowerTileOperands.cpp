//===- LowerTileOperands.cpp - Filling a tiled contraction's operand tiles -===//
//
// Contract: for a contraction tiled as a batched GEMM (block tiles of
// blockM x blockN, K steps of blockK), decides how each operand reaches its
// shared-memory tile and builds the statements that move one K step's
// elements. The block's position (batch, tile row, tile column) is given by
// the caller; every element read is the operand *expression* at the
// (batch, m, n, k) point, so an inlined producer (a prologue) is applied as
// the tile is loaded.
//
// Algorithm:
//   1. plan: an operand is *copied* (async_copy, tensor cores only) when it
//      is an input read as stored whose last dims are exactly K's variables
//      (the tile's rows then follow K: [mn][k]) or else M's / N's ([k][mn]),
//      with a static size that is a multiple of 16 bytes; otherwise it is
//      *staged* through registers into a [k][mn] tile. Tensor-core tiles pad
//      each row by 16 bytes (bank conflicts; ldmatrix rows stay aligned).
//      Stages: as many copies as fit 48 KiB, at most 4, when something is
//      copied (at least 2, else nothing is); else 2, or 1 when two do not fit;
//   2. copyIn: chunk c of a copied tile is row c / (chunks per row), column
//      (c % chunks per row) * chunk; a chunk outside the GEMM reads nothing;
//   3. fetch / deposit: element e of a staged tile is (m, k) with k fastest
//      for A, (k, n) with n fastest for B (coalesced reads of row-major
//      operands), `select`ed to 0 outside the GEMM; each thread fetches its
//      elements into registers and later deposits them into a tile copy.
// Items are spread over the block's threads, `trips` each (guarded when the
// count is not a multiple of the threads).
//
//===----------------------------------------------------------------------===//
#include "LowerKernel.h"
#include "ScheduleRules.h"

#include <functional>

using namespace fusec;
using namespace fusec::lowering;

/// Whether `operand` is an input read as stored with its last dims exactly
/// `fastVars` (static extents `fastExtents`, a multiple of `chunk` in all):
/// then `chunk` consecutive fast elements are contiguous and aligned.
static bool isContiguousLoad(const Kernel &kernel, const KExpr &operand,
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

TileOperands::TileOperands(KernelLowering &lowering, const Contraction &contraction,
                           const KStage &core, const StageMapping &mapping, int64_t threads)
    : lowering(lowering), contraction(contraction), blockK(mapping.blockK), threads(threads) {
  auto extentsAt = [&](const std::vector<size_t> &dims) {
    std::vector<KExprPtr> extents;
    for (size_t d : dims)
      extents.push_back(dimExpr(contraction.extents[d]));
    return extents;
  };
  batchExtents = extentsAt(contraction.batch);
  mExtents = extentsAt(contraction.m);
  nExtents = extentsAt(contraction.n);
  for (size_t r = 0; r < core.reduceVars.size(); ++r) {
    kDims.push_back(r);
    kNames.push_back(core.reduceVars[r].first);
    kDimsOf.push_back(core.reduceVars[r].second);
    kExtents.push_back(dimExpr(core.reduceVars[r].second));
  }
  totalM = product(mExtents);
  totalN = product(nExtents);
  totalK = product(kExtents);
  batches = product(batchExtents);
  for (int o = 0; o < 2; ++o) {
    OperandTile &tile = tiles[o];
    tile.isA = o == 0;
    tile.dtype = o == 0 ? contraction.xDType : contraction.yDType;
    tile.mnExtent = o == 0 ? mapping.blockM : mapping.blockN;
    tile.kExtent = blockK;
  }
}

int64_t TileOperands::stageBytes() const {
  return tiles[0].size() * dtypeBytes(tiles[0].dtype) +
         tiles[1].size() * dtypeBytes(tiles[1].dtype);
}

bool TileOperands::plan(bool mma) {
  for (OperandTile &tile : tiles) {
    if (!mma)
      continue;
    tile.pad = tile.chunk = 16 / dtypeBytes(tile.dtype);
    std::vector<std::string> mnNames;
    std::vector<Dim> mnDimsOf;
    for (size_t d : tile.isA ? contraction.m : contraction.n) {
      mnNames.push_back(contraction.vars[d]);
      mnDimsOf.push_back(contraction.extents[d]);
    }
    const Kernel &kernel = lowering.kernel;
    const KExpr &operand = tile.isA ? *contraction.x : *contraction.y;
    if (blockK % tile.chunk == 0 && isContiguousLoad(kernel, operand, kNames, kDimsOf, tile.chunk))
      tile.copied = tile.kFastest = true;
    else if (tile.mnExtent % tile.chunk == 0 &&
             isContiguousLoad(kernel, operand, mnNames, mnDimsOf, tile.chunk))
      tile.copied = true;
  }
  if (stageBytes() > kMaxStaticSharedBytes)
    return false;
  bool copies = tiles[0].copied || tiles[1].copied;
  stages = copies ? std::min<int64_t>(4, kMaxStaticSharedBytes / stageBytes()) : 0;
  if (stages < 2) { // copies need two stages at least: all through registers
    for (OperandTile &tile : tiles)
      tile.copied = tile.kFastest = false;
    stages = 2 * stageBytes() <= kMaxStaticSharedBytes ? 2 : 1;
  }
  return true;
}

void TileOperands::bind(std::map<std::string, KExprPtr> &bindings, KExprPtr m, KExprPtr n,
                        KExprPtr k) const {
  auto at = [&](const std::vector<size_t> &dims, const std::vector<KExprPtr> &extents,
                KExprPtr flat, const std::vector<std::string> &names) {
    std::vector<KExprPtr> coords = coordinatesOf(flat, extents);
    for (size_t i = 0; i < dims.size(); ++i)
      bindings[names[dims[i]]] = coords[i];
  };
  at(contraction.batch, batchExtents, batch, contraction.vars);
  if (m)
    at(contraction.m, mExtents, m, contraction.vars);
  if (n)
    at(contraction.n, nExtents, n, contraction.vars);
  if (k)
    at(kDims, kExtents, k, kNames);
}

KExprPtr TileOperands::operandAt(const OperandTile &tile, KExprPtr kTile, KExprPtr mn,
                                 KExprPtr k, KExprPtr &inside) const {
  KExprPtr kGlobal = add(mul(kTile, cnst(blockK)), k);
  KExprPtr mnGlobal = add(mul(tile.isA ? tileM : tileN, cnst(tile.mnExtent)), mn);
  std::map<std::string, KExprPtr> bindings;
  bind(bindings, tile.isA ? mnGlobal : nullptr, tile.isA ? nullptr : mnGlobal, kGlobal);
  inside = KExpr::binary(KExpr::And, lt(mnGlobal, tile.isA ? totalM : totalN),
                         lt(kGlobal, totalK));
  return substituteVars(tile.isA ? contraction.x : contraction.y, bindings);
}

KExprPtr TileOperands::copyOffset(const OperandTile &tile, KExprPtr copy) const {
  return stages == 1 ? cnst(0)
                     : mul(foldIndex(KExpr::Mod, copy, cnst(stages)), cnst(tile.size()));
}

std::vector<LStmt>
TileOperands::overItems(const std::string &base, int64_t count,
                        const std::function<LStmt(KExprPtr, KExprPtr)> &move) {
  int64_t trips = (count + threads - 1) / threads;
  std::string step = lowering.freshVar(base);
  KExprPtr trip = trips == 1 ? cnst(0) : KExpr::var(step);
  KExprPtr item = add(mul(trip, cnst(threads)), KExpr::var(lowering.launch->threadVar));
  std::vector<LStmt> body;
  body.push_back(move(trip, item));
  body = guarded(count % threads == 0 ? nullptr : lt(item, cnst(count)), std::move(body));
  if (trips > 1) {
    std::vector<LStmt> looped;
    looped.push_back(loop(LStmt::Serial, step, cnst(trips), std::move(body)));
    body = std::move(looped);
  }
  return body;
}

std::vector<LStmt> TileOperands::copyIn(KExprPtr kTile, KExprPtr copy) {
  std::vector<LStmt> out;
  for (const OperandTile &tile : tiles) {
    if (!tile.copied)
      continue;
    int64_t perRow = (tile.kFastest ? tile.kExtent : tile.mnExtent) / tile.chunk;
    out = join(std::move(out), overItems(tile.isA ? "ca" : "cb", tile.rows() * perRow,
                                         [&](KExprPtr, KExprPtr c) {
      KExprPtr row = foldIndex(KExpr::FloorDiv, c, cnst(perRow));
      KExprPtr column = mul(foldIndex(KExpr::Mod, c, cnst(perRow)), cnst(tile.chunk));
      KExprPtr mn = tile.kFastest ? row : column, k = tile.kFastest ? column : row;
      KExprPtr inside;
      LStmt stmt;
      stmt.kind = LStmt::AsyncCopy;
      stmt.buffer = tile.shared;
      stmt.indices = {add(copyOffset(tile, copy), tile.slot(mn, k))};
      stmt.value = operandAt(tile, kTile, mn, k, inside);
      stmt.count = tile.chunk;
      stmt.extent = KExpr::select(inside, cnst(tile.chunk), cnst(0));
      return stmt;
    }));
  }
  return out;
}

std::vector<LStmt> TileOperands::overStaged(
    const std::function<LStmt(const OperandTile &, KExprPtr, KExprPtr, KExprPtr)> &move) {
  std::vector<LStmt> out;
  for (const OperandTile &tile : tiles) {
    if (tile.copied)
      continue;
    int64_t fastExtent = tile.isA ? blockK : tile.mnExtent;
    out = join(std::move(out), overItems(tile.isA ? "la" : "lb", tile.mnExtent * blockK,
                                         [&](KExprPtr trip, KExprPtr e) {
      KExprPtr outer = foldIndex(KExpr::FloorDiv, e, cnst(fastExtent));
      KExprPtr inner = foldIndex(KExpr::Mod, e, cnst(fastExtent));
      return tile.isA ? move(tile, trip, outer, inner) : move(tile, trip, inner, outer);
    }));
  }
  return out;
}

std::vector<LStmt> TileOperands::fetch(KExprPtr kTile) {
  return overStaged([&](const OperandTile &tile, KExprPtr trip, KExprPtr mn, KExprPtr k) {
    KExprPtr inside;
    KExprPtr operand = operandAt(tile, kTile, mn, k, inside);
    return store(tile.registers, {trip},
                 KExpr::select(inside, operand, KExpr::literal(0, operand->dtype)));
  });
}

std::vector<LStmt> TileOperands::deposit(KExprPtr copy) {
  return overStaged([&](const OperandTile &tile, KExprPtr trip, KExprPtr mn, KExprPtr k) {
    return store(tile.shared, {add(copyOffset(tile, copy), tile.slot(mn, k))},
                 KExpr::load(tile.registers, {trip}, tile.dtype));
  });
}
