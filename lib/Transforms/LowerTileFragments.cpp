//===- LowerTileFragments.cpp - One K step of a tensor-core tile ----------===//
//
// Contract: given a tiled contraction's operand tiles in shared memory (the
// step's copy of each, laid out as LowerTiles.cpp chose: [mn][k] or
// [k][mn], rows padded to a multiple of 8 elements) and its warp layout,
// emits the block-level statements that multiply-accumulate one K step into
// each warp's accumulators (C fragments, 4 floats per 16 x 8 piece).
//
// Algorithm, per 16-wide slice of the step's K (a block-level unrolled loop
// when block_k > 16):
//   1. A fragments: one `ldmatrix_x4` per 16-row piece mi of the warp's
//      rows. Lane 8j + r names row r of matrix j, the 8 x 8 block at rows
//      +8 (j % 2), k +8 (j / 2): the four blocks land in the fragment
//      elements 2j, 2j + 1 exactly as mma.sync's A layout wants them. A
//      [mn][k] tile is read as stored; a [k][mn] one (its rows are k) with
//      `_trans`, lane 8j + r then naming k row r of the block.
//   2. B fragments: the same for each pair of 8-column pieces (x4: k +8
//      (j % 2), n +8 (j / 2)), an odd last piece alone (x2); a [k][n] tile
//      with `_trans`.
//   3. one `mma_m16n8k16` per (mi, ni) piece, accumulating in place.
// The interpreter runs ldmatrix lane by lane with the PTX layout, so a
// wrong row address or transposition here fails on the CPU.
//
//===----------------------------------------------------------------------===//
#include "LowerKernel.h"

using namespace fusec;
using namespace fusec::lowering;

std::vector<LStmt> KernelLowering::emitMmaStep(const MmaStep &step) {
  const OperandTile &a = *step.a, &b = *step.b;
  int64_t mmaM = step.warpM / 16, mmaN = step.warpN / 8;
  KExprPtr tx = KExpr::var(launch->threadVar);
  KExprPtr warp = foldIndex(KExpr::FloorDiv, tx, cnst(32));
  KExprPtr lane = foldIndex(KExpr::Mod, tx, cnst(32));
  KExprPtr matrix = foldIndex(KExpr::FloorDiv, lane, cnst(8)); // j
  KExprPtr row = foldIndex(KExpr::Mod, lane, cnst(8));         // r
  KExprPtr low = foldIndex(KExpr::Mod, matrix, cnst(2)), high = foldIndex(KExpr::FloorDiv, matrix, cnst(2));
  KExprPtr warpRow = foldIndex(KExpr::FloorDiv, warp, cnst(step.warpsN));
  KExprPtr warpCol = foldIndex(KExpr::Mod, warp, cnst(step.warpsN));
  std::string fragA = addBuffer(step.contraction + "_fa", KBuffer::Local, a.dtype, mmaM * 8);
  std::string fragB = addBuffer(step.contraction + "_fb", KBuffer::Local, b.dtype, mmaN * 4);
  std::string slice = step.blockK > 16 ? freshVar("ks") : "";
  KExprPtr sliceK = step.blockK > 16 ? mul(KExpr::var(slice), cnst(16)) : cnst(0);

  // Lane 8j + r's row of the 8 x 8 block at (mn0 + 8 mnPick, k0 + 8 kPick).
  auto rowAddress = [&](const OperandTile &tile, KExprPtr mn0, KExprPtr mnPick, KExprPtr kPick,
                        KExprPtr offset) {
    KExprPtr mn = add(mn0, mul(mnPick, cnst(8))), k = add(sliceK, mul(kPick, cnst(8)));
    KExprPtr slot = tile.kFastest ? tile.slot(add(mn, row), k) : tile.slot(mn, add(k, row));
    return KExpr::load(tile.shared, {add(offset, slot)}, tile.dtype);
  };
  auto ldmatrix = [&](const std::string &fragment, int64_t at, int64_t matrices,
                      const OperandTile &tile, KExprPtr source) {
    LStmt stmt;
    stmt.kind = LStmt::LdMatrix;
    stmt.buffer = fragment;
    stmt.indices = {cnst(at)};
    stmt.value = std::move(source);
    stmt.count = matrices;
    stmt.transpose = !tile.kFastest;
    return stmt;
  };
  std::vector<LStmt> body;
  for (int64_t mi = 0; mi < mmaM; ++mi) {
    KExprPtr m0 = add(mul(warpRow, cnst(step.warpM)), cnst(mi * 16));
    body.push_back(ldmatrix(fragA, mi * 8, 4, a, rowAddress(a, m0, low, high, step.offsetA)));
  }
  for (int64_t ni = 0; ni < mmaN; ni += 2) {
    KExprPtr n0 = add(mul(warpCol, cnst(step.warpN)), cnst(ni * 8));
    bool pair = ni + 1 < mmaN;
    // x4: matrices (k 0-7, n), (k 8-15, n), (k 0-7, n + 8), (k 8-15, n + 8);
    // x2 reads lanes 0-15 only, so j % 2 keeps the others' rows in range.
    body.push_back(ldmatrix(fragB, ni * 4, pair ? 4 : 2, b,
                            rowAddress(b, n0, pair ? high : cnst(0), low, step.offsetB)));
  }
  for (int64_t mi = 0; mi < mmaM; ++mi)
    for (int64_t ni = 0; ni < mmaN; ++ni) {
      LStmt mma;
      mma.kind = LStmt::Mma;
      int64_t offset = (mi * mmaN + ni) * 4;
      mma.buffer = step.accumulators;
      mma.indices = {cnst(offset)};
      mma.operands = {KExpr::load(fragA, {cnst(mi * 8)}, a.dtype),
                      KExpr::load(fragB, {cnst(ni * 4)}, b.dtype),
                      KExpr::load(step.accumulators, {cnst(offset)}, step.accumulate)};
      body.push_back(std::move(mma));
    }
  if (step.blockK == 16)
    return body;
  std::vector<LStmt> sliced;
  sliced.push_back(loop(LStmt::Unroll, slice, cnst(step.blockK / 16), std::move(body)));
  return sliced;
}
