//===- ScheduleMatmul.cpp - Contractions: matmul, batched matmul, conv ----===//
//
// Contract: applies to a kernel whose one output either is a contraction
// (a sum of products of loads, one shared by several outputs) or reads one
// at its own index (an elementwise epilogue: bias, relu, gelu, residual
// add, cast), every other internal stage being spatial (inlined: into the
// operands as prologues, into the epilogue). The contraction is seen as a
// batched GEMM (analyzeContraction): matmul's M and N, a convolution's
// (batch, height, width) x (output channels), K its reduction domain; a
// grouped convolution's groups are a batch dimension and its channels per
// group N (a depthwise one, N = 1 per group, is left to the fallback).
//
// Schedule:
//   1. spatial internals: inline;
//   2. the contraction: compute_at(output, thread) when it is internal (its
//      accumulators are the epilogue's input);
//   3. the output: tiles(...) with sizes from this table (symbolic dims
//      count as large; boundary tiles are guarded, so any M, N, K works):
//        f16/bf16 operands, f32 accumulation (tensor cores, mma.sync m16n8k16):
//          M >= 128 and N >= 128: 128 x 128 x 16, warps of 64 x 32 (256 threads),
//            unless, with a target (cost-model=roofline), those tiles would
//            be fewer than the GPU's SMs: then the next row;
//          M >= 32 and N >= 32:    64 x  64 x 16, warps of 32 x 32 (128 threads)
//          otherwise:              32 x  32 x 16, one warp (32 threads), or
//            16 x 32 x 16 when M <= 16; rows and columns past M and N
//            guarded (a matrix-vector product with M = 1 included; not per
//            group: a depthwise convolution's N = 1)
//        otherwise, or with tensor-cores=false (before sm_80), SIMT (every dtype),
//        M >= 16 and N >= 16 (else the fallback):
//          M >= 64 and N >= 64:    64 x  64 x 16, 4 x 4 per thread (256 threads)
//          otherwise:              32 x  32 x 16, 2 x 2 per thread (256 threads)
//
//===----------------------------------------------------------------------===//
#include "ScheduleRules.h"

using namespace fusec;

static void collectVarsOfLoads(const KExpr &e, std::set<std::string> &vars) {
  if (e.kind == KExpr::Var)
    vars.insert(e.name);
  for (const KExprPtr &arg : e.args)
    if (arg)
      collectVarsOfLoads(*arg, vars);
}

/// Whether every use of `var` in `e` is `floordiv(var, f)` for one constant
/// f > 0 (a grouped convolution's input channel base); sets `factor`.
static bool onlyAsGroup(const KExpr &e, const std::string &var, int64_t &factor) {
  if (e.kind == KExpr::Var)
    return e.name != var;
  if (e.kind == KExpr::FloorDiv && e.args[0]->kind == KExpr::Var && e.args[0]->name == var &&
      e.args[1]->kind == KExpr::IntConst && e.args[1]->intValue > 0) {
    if (factor && factor != e.args[1]->intValue)
      return false;
    factor = e.args[1]->intValue;
    return true;
  }
  for (const KExprPtr &arg : e.args)
    if (arg && !onlyAsGroup(*arg, var, factor))
      return false;
  return true;
}

/// `e` with `floordiv(var, factor)` replaced by `group`.
static KExprPtr replaceGroup(const KExprPtr &e, const std::string &var, const KExprPtr &group) {
  if (e->kind == KExpr::FloorDiv && e->args[0]->kind == KExpr::Var && e->args[0]->name == var)
    return group;
  if (e->args.empty())
    return e;
  auto copy = std::make_shared<KExpr>(*e);
  for (KExprPtr &arg : copy->args)
    if (arg)
      arg = replaceGroup(arg, var, group);
  return copy;
}

int64_t Contraction::extent(const std::vector<size_t> &dims, int64_t symbolic) const {
  int64_t total = 1;
  for (size_t d : dims)
    total *= extents[d].isSymbolic() ? symbolic : extents[d].size;
  return total;
}

std::string Contraction::describeExtent(const std::vector<size_t> &dims) const {
  int64_t known = 1;
  std::string names;
  for (size_t d : dims) {
    if (extents[d].isSymbolic())
      names += (names.empty() ? "" : " x ") + extents[d].symbol;
    else
      known *= extents[d].size;
  }
  if (names.empty())
    return std::to_string(known);
  return (known == 1 ? "" : std::to_string(known) + " x ") + names + " (counted as " +
         std::to_string(extent(dims, kSymbolicDimEstimate)) + ")";
}

bool fusec::analyzeContraction(const Kernel &kernel, const KStage &stage,
                               Contraction &contraction) {
  if (stage.combiner != "add" || stage.reduceVars.empty())
    return false;
  const KExpr *body = stage.body.get();
  if (body->kind != KExpr::Call || body->name != "multiply")
    return false;
  KExprPtr x = body->args[0], y = body->args[1];
  if (!hasLoad(*x) || !hasLoad(*y))
    return false;
  const KBuffer *buffer = kernel.findBuffer(stage.buffer);
  if (!buffer || buffer->type.getShape().size() != stage.spatialVars.size())
    return false;
  const Shape &shape = buffer->type.getShape();
  std::set<std::string> xVars, yVars, taken;
  collectVarsOfLoads(*x, xVars);
  collectVarsOfLoads(*y, yVars);
  taken.insert(xVars.begin(), xVars.end());
  taken.insert(yVars.begin(), yVars.end());
  taken.insert(stage.spatialVars.begin(), stage.spatialVars.end());
  auto fresh = [&](std::string name) {
    while (taken.count(name))
      name += "_";
    taken.insert(name);
    return name;
  };
  contraction = Contraction();
  contraction.stage = &stage;
  for (size_t d = 0; d < stage.spatialVars.size(); ++d) {
    const std::string &var = stage.spatialVars[d];
    bool inX = xVars.count(var), inY = yVars.count(var);
    int64_t factor = 0;
    if (inX && inY && shape[d].isStatic() && onlyAsGroup(*x, var, factor) && factor >= 1 &&
        shape[d].size % factor == 0) {
      // A grouped convolution's channel: c = g * f + j, g batch, j N.
      std::string group = fresh(var + "g"), within = fresh(var + "j");
      KExprPtr g = KExpr::var(group), j = KExpr::var(within);
      KExprPtr whole = foldIndex(KExpr::Add, foldIndex(KExpr::Mul, g, KExpr::intConst(factor)), j);
      x = replaceGroup(x, var, g);
      y = substituteVars(y, {{var, whole}});
      contraction.batch.push_back(contraction.vars.size());
      contraction.vars.push_back(group);
      contraction.extents.push_back(Dim::of(shape[d].size / factor));
      contraction.n.push_back(contraction.vars.size());
      contraction.vars.push_back(within);
      contraction.extents.push_back(Dim::of(factor));
      contraction.spatialOf.push_back(whole);
      contraction.groups *= shape[d].size / factor;
      continue;
    }
    (inX && !inY ? contraction.m : !inX && inY ? contraction.n : contraction.batch)
        .push_back(contraction.vars.size());
    contraction.vars.push_back(var);
    contraction.extents.push_back(shape[d]);
    contraction.spatialOf.push_back(KExpr::var(var));
  }
  if (contraction.m.empty() || contraction.n.empty())
    return false;
  // Tiles hold the operands before their conversion to the accumulator.
  auto narrow = [](DType dtype) {
    return dtype == DType::f16 || dtype == DType::bf16 || dtype == DType::i8;
  };
  auto strip = [&](KExprPtr e, DType &dtype) {
    if (e->kind == KExpr::Cast && e->args[0]->kind != KExpr::Literal && narrow(e->args[0]->dtype)) {
      e = e->args[0];
    } else if (e->kind == KExpr::Select && e->args[1]->kind == KExpr::Cast &&
               narrow(e->args[1]->args[0]->dtype) && e->args[2]->kind == KExpr::Literal &&
               e->args[2]->floatValue == 0) {
      // A convolution's padding: select(inside, f32(x[...]), 0.0) holds the
      // same values as f32(select(inside, x[...], 0.0)); the tile keeps x's
      // dtype (f16 tiles, tensor cores).
      DType inner = e->args[1]->args[0]->dtype;
      e = KExpr::select(e->args[0], e->args[1]->args[0], KExpr::literal(0, inner));
    }
    dtype = e->dtype;
    return e;
  };
  contraction.x = strip(x, contraction.xDType);
  contraction.y = strip(y, contraction.yDType);
  return true;
}

bool fusec::scheduleMatmul(const Kernel &kernel, KSchedule &schedule, std::string &why,
                           const ScheduleCostContext &cost) {
  if (kernel.outputs.size() != 1)
    return why = "more than one output", false;
  std::vector<KStage> stages = inlineSpatialInternals(kernel);
  const KStage *output = nullptr, *core = nullptr;
  for (const KStage &stage : stages) {
    if (!isInternal(kernel, stage))
      output = &stage;
    else if (stage.isReduction()) {
      if (core)
        return why = "two reductions", false;
      core = &stage;
    }
  }
  if (!output)
    return why = "no output stage", false;
  if (output->isReduction()) {
    if (core)
      return why = "two reductions", false;
    core = output;
  } else if (!core) {
    return why = "no reduction", false;
  } else if (!isTiledEpilogue(kernel, *output, *core)) {
    return why = "the output reads '%" + core->buffer +
                 "' other than at its own index over its shape",
           false;
  }
  Contraction contraction;
  if (!analyzeContraction(kernel, *core, contraction))
    return why = "'%" + core->buffer + "' is not a contraction", false;
  // Static M and N below 16 (a matrix-vector product, a depthwise
  // convolution) leave SIMT tiles idle; f16/bf16 ones still get a tensor-core
  // warp tile (guarded rows), except per group (a depthwise convolution's
  // N = 1 would waste 31 of 32 columns).
  auto extent = [&](const std::vector<size_t> &dims) {
    return contraction.extent(dims, kSymbolicDimEstimate);
  };
  int64_t m = extent(contraction.m), n = extent(contraction.n);
  bool halves = contraction.xDType == contraction.yDType &&
                (contraction.xDType == DType::f16 || contraction.xDType == DType::bf16) &&
                core->accumulate == DType::f32 && core->body->dtype == DType::f32;
  bool smallMMA = halves && cost.tensorCores && contraction.groups == 1;
  if ((m < 16 || n < 16) && !smallMMA)
    return why = "M = " + contraction.describeExtent(contraction.m) +
                 ", N = " + contraction.describeExtent(contraction.n) +
                 (contraction.groups > 1 ? " per group" : "") + ": below 16",
           false;
  schedule.rule = "matmul";
  for (const KStage &stage : kernel.stages) {
    StageSchedule entry;
    entry.stage = stage.buffer;
    if (stage.buffer == output->buffer) {
      StageMapping &tiles = entry.mapping;
      tiles.kind = StageMapping::Tiles;
      tiles.blockK = 16;
      why = "a contraction, M = " + contraction.describeExtent(contraction.m) +
            ", N = " + contraction.describeExtent(contraction.n);
      if (contraction.groups > 1)
        why += " per group, " + std::to_string(contraction.groups) + " groups";
      if (halves && !cost.tensorCores) {
        why += ", f16/bf16 operands but tensor-cores=false (no mma.sync m16n8k16): SIMT";
        halves = false;
      }
      if (halves && (m < 32 || n < 32)) {
        // Small operands still get tensor cores: one warp computes a
        // 32 x 32 tile (2 x 4 mma tiles), guarded where M or N ends early.
        // With at most 16 rows (a matrix-vector product), a 16 x 32 tile:
        // half the mma work and A-tile loads of the 32-row one, none of it
        // on rows past M.
        bool fewRows = m <= 16;
        why += fewRows ? ", f16/bf16 operands: tensor cores (one warp a 16 x 32 tile)"
                       : ", f16/bf16 operands: tensor cores (one warp a 32 x 32 tile)";
        tiles.mma = true;
        tiles.blockM = tiles.warpM = fewRows ? 16 : 32;
        tiles.blockN = tiles.warpN = 32;
        tiles.threads = 32;
      } else if (halves && m >= 32 && n >= 32) {
        why += ", f16/bf16 operands: tensor cores";
        // Tensor cores: mma.sync m16n8k16 per warp.
        // With a target: 128 x 128 tiles that would leave SMs idle (fewer
        // blocks than SMs) give way to 64 x 64 tiles, four times as many
        // (matmulBlockTile, which the prologue estimates share).
        int64_t batch = extent(contraction.batch);
        bool large = matmulBlockTile(m, n, batch, true, cost.target) == 128;
        if (!large && m >= 128 && n >= 128)
          why += " (" + std::to_string(batch * ((m + 127) / 128) * ((n + 127) / 128)) +
                 " tiles of 128 x 128 for " + std::to_string(cost.target->smCount) +
                 " SMs on " + cost.target->name + ": 64 x 64 tiles)";
        tiles.mma = true;
        tiles.blockM = tiles.blockN = large ? 128 : 64;
        tiles.warpM = large ? 64 : 32;
        tiles.warpN = 32;
        tiles.threads = 32 * (tiles.blockM / tiles.warpM) * (tiles.blockN / tiles.warpN);
      } else {
        bool large = matmulBlockTile(m, n, extent(contraction.batch), false, cost.target) == 64;
        tiles.blockM = tiles.blockN = large ? 64 : 32;
        tiles.threadM = tiles.threadN = large ? 4 : 2;
        tiles.threads = (tiles.blockM / tiles.threadM) * (tiles.blockN / tiles.threadN);
      }
    } else if (stage.buffer == core->buffer) {
      entry.placement = StageSchedule::ComputeAt;
      entry.consumer = output->buffer;
      entry.level = StageSchedule::Thread;
    } else {
      entry.placement = StageSchedule::Inline;
    }
    schedule.stages.push_back(std::move(entry));
  }
  return true;
}
