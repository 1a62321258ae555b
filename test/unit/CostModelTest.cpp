//===- CostModelTest.cpp - Target descriptions and cost estimates ---------===//
//
// The shipped target descriptions load; a malformed one names the field;
// expression work counts special functions at the FMA/SFU ratio; the
// placement and prologue estimates rank the alternatives the way issue 8's
// cases need; views (a reshape, not a transpose) are recognized from the
// legalized kernels.
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"
#include "fusec/Analysis/Analysis.h"
#include "fusec/IR/Ops.h"

#include <catch2/catch.hpp>

using namespace fusec;

TEST_CASE("cost model: shipped targets load, malformed ones name the field", "[cost]") {
  for (const char *name : {"sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "h200"}) {
    TargetDesc target;
    std::string error;
    CHECK(loadTargetDesc(name, target, error));
    CHECK(error.empty());
    CHECK(target.smCount > 0);
  }
  TargetDesc h100, h200;
  std::string error;
  REQUIRE(loadTargetDesc("sm_90", h100, error));
  REQUIRE(loadTargetDesc("h200", h200, error));
  CHECK(h100.arch == "sm_90");
  CHECK(h200.arch == "sm_90");
  CHECK(h200.memoryBandwidthGBps > h100.memoryBandwidthGBps);
  // 132 SMs x 128 FMA x 1.98 GHz: about 33.5 million FMA issue slots per us.
  CHECK(h100.flopsPerUs() == Approx(132 * 128 * 1.98e3));

  TargetDesc target;
  CHECK_FALSE(parseTargetDesc("[1, 2]", target, error));
  CHECK(error == "not a JSON object");
  error.clear();
  CHECK_FALSE(parseTargetDesc("{\"name\": \"x\", ", target, error));
  CHECK(error == "invalid JSON: parse error at line 1, column 15: syntax error while parsing "
                 "object key - unexpected end of input; expected string literal");
  error.clear();
  CHECK_FALSE(parseTargetDesc(R"({"name": "x", "arch": "sm_90", "sm_count": 0})", target, error));
  CHECK(error == "'sm_count' must be a positive number");
  error.clear();
  CHECK_FALSE(parseTargetDesc(R"({"arch": "sm_90"})", target, error));
  CHECK(error == "'name' must be a string");
  error.clear();
  CHECK_FALSE(loadTargetDesc("/nonexistent/target.json", target, error));
  CHECK(llvm::StringRef(error).contains("neither a shipped target"));
}

TEST_CASE("cost model: work, placements and prologues", "[cost]") {
  TargetDesc target;
  std::string error;
  REQUIRE(loadTargetDesc("sm_90", target, error));
  // exp(x - 0.5 * x): one special function (128 / 16 = 8 slots), two
  // arithmetic ops.
  KExprPtr x = KExpr::load("x", {KExpr::var("i")}, DType::f32);
  KExprPtr body = KExpr::call(
      "exp", {KExpr::call("subtract", {x, KExpr::call("multiply", {x, KExpr::literal(0.5, DType::f32)}, DType::f32)}, DType::f32)},
      DType::f32);
  CHECK(expressionWork(*body, target, {}) == Approx(10));
  // A load of an inlined stage counts that stage's work.
  KStage chain;
  chain.buffer = "z";
  chain.body = body;
  std::map<std::string, const KStage *> inlined = {{"z", &chain}};
  KExprPtr reader = KExpr::call("exp", {KExpr::load("z", {KExpr::var("i")}, DType::f32)}, DType::f32);
  CHECK(expressionWork(*reader, target, inlined) == Approx(18));

  // The seed shape at [1024,1] -> [1024,1024] f16: a cheap chain hides under
  // the memory time; a depth-16 one (160 slots) is computed once per row.
  KStage deep = chain;
  for (int i = 1; i < 16; ++i)
    deep.body = KExpr::call("add", {deep.body, body}, DType::f32);
  int64_t rootBytes = 2 * 1024 * 1024 * 2 + 1024 * 2;
  PlacementCost cheap =
      estimatePlacement(chain, 1024, 2048, 1 << 20, rootBytes, {1024, 1}, target, {});
  CHECK(cheap.choice == "inline");
  CHECK(cheap.recompute == 1024);
  PlacementCost costly =
      estimatePlacement(deep, 1024, 2048, 1 << 20, rootBytes, {1024, 1}, target, {});
  CHECK(costly.workPerElement == Approx(16 * 10 + 15));
  CHECK(costly.choice == "compute_at");
  CHECK(costly.computeAtUs < costly.materializeUs);
  CHECK(costly.materializeUs < costly.inlineUs);
  // Without blocks (neither a row nor a column broadcast) compute_at is
  // not offered.
  PlacementCost neither = estimatePlacement(deep, 1024, 2048, 1 << 20, rootBytes, {}, target, {});
  CHECK_FALSE(neither.computeAtPossible);
  CHECK(neither.choice == "materialize");
  // A column broadcast [1, 1024] under a columns mapping: 256 blocks of 128
  // threads, each thread evaluating 2 columns once per 16 rows (the chain
  // 64 times per column in all) beats its own launch.
  PlacementCost column =
      estimatePlacement(deep, 1024, 2048, 1 << 20, rootBytes, {256, 256}, target, {});
  CHECK(column.computeAtPossible);
  CHECK(column.choice == "compute_at");
  CHECK(column.computeAtUs < column.materializeUs);
  // estimateComputeAtUs is compute_at's estimate alone: the same figure,
  // and a longer chain per block costs more.
  CHECK(estimateComputeAtUs(costly.workPerElement, {1024, 1},
                            double(rootBytes) / target.bytesPerUs(),
                            target) == Approx(costly.computeAtUs));
  CHECK(estimateComputeAtUs(costly.workPerElement, {1024, 1}, 0, target) <
        estimateComputeAtUs(2 * costly.workPerElement, {1024, 1}, 0, target));

  // Prologues: relu (1 slot) on a 512x512 f16 operand fuses; a 160-slot
  // chain on 512x1024 with N = 4096 does not. The re-reads follow the
  // schedule's tile: 64 x 64 at 512 x 512 on an H100 (16 tiles of 128 x 128
  // would leave SMs idle), 8 re-reads; 64 again at 512 x 4096 (128 tiles
  // of 128 x 128 for 132 SMs), 64 re-reads.
  int64_t tile = matmulBlockTile(512, 512, 1, true, &target);
  CHECK(tile == 64);
  PrologueCost relu = estimatePrologue(1, 512 * 512, 512 * 512, 512 * 512 * 2, 512, tile, target);
  CHECK(relu.rereads == 8);
  CHECK(relu.fuse());
  int64_t wide = matmulBlockTile(512, 4096, 1, true, &target);
  CHECK(wide == 64);
  PrologueCost chainPrologue =
      estimatePrologue(160, 160.0 * 512 * 1024, 512 * 1024, 512 * 1024 * 2, 4096, wide, target);
  CHECK(chainPrologue.rereads == 64);
  CHECK_FALSE(chainPrologue.fuse());
  // Without the SM check, and without tensor cores: the shape's own tiles.
  CHECK(matmulBlockTile(512, 512, 1, true, nullptr) == 128);
  CHECK(matmulBlockTile(4096, 4096, 1, true, &target) == 128);
  CHECK(matmulBlockTile(24, 512, 1, true, &target) == 32);
  CHECK(matmulBlockTile(512, 512, 1, false, &target) == 64);
  CHECK(matmulBlockTile(48, 512, 1, false, &target) == 32);
  CHECK(targetHasTensorCores(target));
}

/// Whether the kernel legalize makes for the one binding of `text`'s @main
/// is a view.
static bool legalizesToView(const char *text) {
  test::Parsed parsed(text);
  REQUIRE(parsed.firstError() == "");
  const Binding *binding = parsed.binding("y");
  REQUIRE(binding);
  return isLayoutPreservingView(*legalizeOp(*binding, "k"));
}

TEST_CASE("cost model: views are reshapes, squeezes and expand_dims", "[cost]") {
  CHECK(legalizesToView("func @main(%x: f16[4,32,128]) -> f16[128,128] {\n"
                        "  %y = reshape(%x) {shape = [128, 128]}\n  return %y\n}\n"));
  CHECK(legalizesToView("func @main(%x: f32[n,4,64]) -> f32[n,256] {\n"
                        "  %y = reshape(%x) {shape = [n, 256]}\n  return %y\n}\n"));
  CHECK(legalizesToView("func @main(%x: f32[n,1,8]) -> f32[n,8] {\n"
                        "  %y = squeeze(%x) {axis = [1]}\n  return %y\n}\n"));
  CHECK(legalizesToView("func @main(%x: f32[8,m]) -> f32[8,1,m] {\n"
                        "  %y = expand_dims(%x) {axis = 1}\n  return %y\n}\n"));
  // A transpose moves elements, symbolic or not; a slice and a broadcast
  // change the element count.
  CHECK_FALSE(legalizesToView("func @main(%x: f32[4,8]) -> f32[8,4] {\n"
                              "  %y = permute_dims(%x) {axes = [1, 0]}\n  return %y\n}\n"));
  CHECK_FALSE(legalizesToView("func @main(%x: f32[n,m]) -> f32[m,n] {\n"
                              "  %y = permute_dims(%x) {axes = [1, 0]}\n  return %y\n}\n"));
  CHECK_FALSE(legalizesToView("func @main(%x: f32[64,128]) -> f32[64,64] {\n"
                              "  %y = strided_slice(%x) {axes = [1], begin = [0], end = [64]}\n"
                              "  return %y\n}\n"));
  CHECK_FALSE(legalizesToView("func @main(%x: f32[1,64]) -> f32[4,64] {\n"
                              "  %y = broadcast_to(%x) {shape = [4, 64]}\n  return %y\n}\n"));
  // Large outputs are probed: a transpose of [128, 8192] is still found out.
  CHECK_FALSE(legalizesToView("func @main(%x: f32[128,8192]) -> f32[8192,128] {\n"
                              "  %y = permute_dims(%x) {axes = [1, 0]}\n  return %y\n}\n"));
  CHECK(legalizesToView("func @main(%x: f32[128,8192]) -> f32[1024,1024] {\n"
                        "  %y = reshape(%x) {shape = [1024, 1024]}\n  return %y\n}\n"));
  // An elementwise kernel is no view (its body is not a plain load).
  CHECK_FALSE(legalizesToView("func @main(%x: f32[8]) -> f32[8] {\n"
                              "  %y = exp(%x)\n  return %y\n}\n"));
}

TEST_CASE("cost model: row buffers", "[cost]") {
  TargetDesc target;
  std::string error;
  REQUIRE(loadTargetDesc("sm_90", target, error));
  std::vector<Dim> rows = {Dim::of(64)};
  // A row of static inner dims that fits the block's shared memory (48 KiB
  // less the reserve) is a row buffer; one value per row, a symbolic row,
  // other leading dims and rows too long are not.
  CHECK(rowBufferElements(Type::tensor(DType::f32, {Dim::of(64), Dim::of(768)}), rows, target) ==
        768);
  CHECK(rowBufferElements(Type::tensor(DType::f16, {Dim::of(64), Dim::of(4), Dim::of(1024)}), rows,
                          target) == 4096);
  CHECK(rowBufferElements(Type::tensor(DType::f32, {Dim::of(64), Dim::of(1)}), rows, target) == 0);
  CHECK(rowBufferElements(Type::tensor(DType::f32, {Dim::of(64), Dim::named("n")}), rows, target) ==
        0);
  CHECK(rowBufferElements(Type::tensor(DType::f32, {Dim::of(32), Dim::of(768)}), rows, target) ==
        0);
  CHECK(rowBufferElements(Type::tensor(DType::f32, {Dim::of(64), Dim::of(11264)}), rows, target) ==
        11264);
  CHECK(rowBufferElements(Type::tensor(DType::f32, {Dim::of(64), Dim::of(11265)}), rows,
                          target) == 0); // 45060 bytes: more than 48 KiB - 4 KiB
  CHECK(rowBufferElements(Type::tensor(DType::f16, {Dim::of(64), Dim::of(12289)}), rows,
                          target) == 0); // more than lower's 12288

  // The kernel's time beyond its memory traffic: compute that the traffic
  // hides costs nothing, re-reads cost at 2.5x DRAM bandwidth, a buffer a
  // barrier (100 cycles) per wave of 8 blocks per SM.
  double barrierUs = 100.0 / (target.clockGHz * 1e3);
  CHECK(estimateRowKernelUs(1000, 1.0, 0, 0, 64, target) == Approx(0));
  CHECK(estimateRowKernelUs(2 * target.flopsPerUs(), 1.0, 0, 0, 64, target) == Approx(1.0));
  CHECK(estimateRowKernelUs(0, 1.0, 2.5 * target.bytesPerUs(), 0, 64, target) == Approx(1.0));
  CHECK(estimateRowKernelUs(0, 1.0, 0, 2, 64, target) == Approx(2 * barrierUs));
  CHECK(estimateRowKernelUs(0, 1.0, 0, 1, 132 * 8 + 1, target) == Approx(2 * barrierUs));

  // Input bytes per evaluation: an input's loads, through inlined stages.
  test::Parsed parsed("kernel @k(%x: f32[64,768], %g: f16[768]) -> (%out: f32[64,768]) {\n"
                      "  internal %t: f32[64,768]\n"
                      "  %t[i, j] = multiply(%x[i, j], %x[i, j])\n"
                      "  %out[i, j] = add(%t[i, j], f32(%g[j]))\n"
                      "}\n");
  REQUIRE(parsed.firstError() == "");
  const Kernel &kernel = *parsed.module->kernels.front();
  const KStage &t = kernel.stages[0], &out = kernel.stages[1];
  CHECK(expressionInputBytes(*t.body, kernel, {}) == Approx(8));
  CHECK(expressionInputBytes(*out.body, kernel, {}) == Approx(2));
  CHECK(expressionInputBytes(*out.body, kernel, {{"t", &t}}) == Approx(10));
}

TEST_CASE("cost model: launches of few blocks and split reductions", "[cost]") {
  TargetDesc target;
  std::string error;
  REQUIRE(loadTargetDesc("sm_90", target, error));
  // A block of 256 threads keeps 4 KiB in flight per 800 cycles.
  double latencyUs = kDramLatencyCycles / (target.clockGHz * 1e3);
  double perBlock = 256 * kBytesInFlightPerThread / latencyUs;
  CHECK(estimateBlocksUs(0, 1e6, 1, 256, target) == Approx(1e6 / perBlock));
  CHECK(estimateBlocksUs(0, 1e6, 10, 256, target) == Approx(1e6 / (10 * perBlock)));
  // Enough blocks draw the full bandwidth, however many more there are.
  CHECK(estimateBlocksUs(0, 1e6, 1000, 256, target) == Approx(1e6 / target.bytesPerUs()));
  CHECK(estimateBlocksUs(0, 1e6, 100000, 256, target) == Approx(1e6 / target.bytesPerUs()));
  // Compute: a block has one SM's FMA rate.
  double smFlops = target.flopsPerUs() / double(target.smCount);
  CHECK(estimateBlocksUs(smFlops, 0, 1, 256, target) == Approx(1));
  CHECK(estimateBlocksUs(target.flopsPerUs(), 0, 132 * 4, 256, target) == Approx(1));

  // Partials: about 330 blocks in all on sm_90 (3.35 TB/s over 10 KB/us a
  // block), at least 1024 elements each, at most 1024 per row.
  int64_t wanted = int64_t(std::ceil(target.bytesPerUs() / perBlock));
  CHECK(chooseReductionPartials(1, int64_t(1) << 22, target) == wanted);
  CHECK(chooseReductionPartials(8, int64_t(1) << 22, target) == (wanted + 7) / 8);
  CHECK(chooseReductionPartials(1, 8192, target) == 8);
  CHECK(chooseReductionPartials(1, 1000, target) == 1);
  CHECK(chooseReductionPartials(wanted, int64_t(1) << 22, target) == 1);
  TargetDesc wide = target;
  wide.memoryBandwidthGBps *= 100;
  CHECK(chooseReductionPartials(1, int64_t(1) << 30, wide) == 1024);

  // A 16 MiB sum: split; 1 MiB over 64 rows: the second launch decides.
  SplitReductionStep sum;
  sum.work = 4194304;
  sum.inputBytes = 16777216;
  sum.partials = 256;
  sum.foldThreads = 256;
  SplitReductionCost big = estimateSplitReduction({sum}, 0, 0, 4, 1, 256, 0, target);
  CHECK(big.rowsUs == Approx(16777220 / perBlock));
  CHECK(big.split());
  SplitReductionStep mean;
  mean.work = 262144;
  mean.inputBytes = 1048576;
  mean.partials = 4;
  SplitReductionCost small = estimateSplitReduction({mean}, 0, 0, 256, 64, 256, 0, target);
  CHECK_FALSE(small.split());
  CHECK(small.splitUs > target.launchOverheadUs);
  // A softmax over one row of 50257: two reductions, two folds and a flat
  // output are 4 launches more, and still faster than one block's passes.
  SplitReductionStep max, exps;
  max.inputBytes = exps.inputBytes = 201028;
  exps.work = 50257 * 10;
  max.partials = exps.partials = 29;
  SplitReductionCost softmax =
      estimateSplitReduction({max, exps}, 50257 * 18, 201028, 201028, 1, 256, 50, target);
  CHECK(softmax.rowsUs == Approx(4 * 201028 / perBlock).epsilon(0.01)); // 3 reads, a write
  CHECK(softmax.splitUs > 4 * target.launchOverheadUs);
  CHECK(softmax.split());
}
