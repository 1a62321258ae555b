//===- LowerKernel.cpp - One scheduled kernel to launches -----------------===//
//
// The mechanics of `lower` (Lower.cpp drives it over a module):
//   1. Inline: each stage's body gets the bodies of the inline stages it
//      reads substituted in (earlier stages first, so chains collapse).
//   2. Each root stage becomes one launch, in stage order; the stages
//      computed at it at block level are emitted first in the same launch
//      (into shared memory, a barrier after each); thread-level stages are
//      expanded where they are read, into locals (a reduction's
//      accumulator, a spatial stage's value), once per index tuple.
//   3. The launch's statements, by the root's mapping: flat and rows in
//      LowerMappings.cpp, columns in LowerColumns.cpp, tiles in
//      LowerTiles.cpp (with LowerTileOperands.cpp and LowerTileFragments.cpp).
//   4. The kernel keeps its buffers; internal buffers that are not roots
//      disappear (they now live in shared memory, locals or expressions).
//
// Schedules are user-writable, so every condition a mapping needs is
// checked here and reported at the schedule entry.
//
//===----------------------------------------------------------------------===//
#include "LowerKernel.h"

#include <cctype>
#include <set>

using namespace fusec;

using namespace fusec::lowering;

std::string KernelLowering::freshVar(const std::string &base) {
  std::string name = base;
  for (int suffix = 1; usedVars.count(name); ++suffix)
    name = base + "_" + std::to_string(suffix);
  usedVars.insert(name);
  return name;
}

std::string KernelLowering::freshBuffer(const std::string &base) {
  // `%06` is a numeric name: `%06_acc` would not lex as one name.
  std::string name = std::isdigit(static_cast<unsigned char>(base[0])) ? "v" + base : base;
  std::string stem = name;
  for (int suffix = 1; usedBuffers.count(name); ++suffix)
    name = stem + "_" + std::to_string(suffix);
  usedBuffers.insert(name);
  return name;
}

std::string KernelLowering::addBuffer(const std::string &base, KBuffer::Role role,
                                      DType dtype, int64_t size) {
  KBuffer buffer;
  buffer.name = freshBuffer(base);
  buffer.role = role;
  buffer.type = Type::tensor(dtype, {Dim::of(size)});
  launch->buffers.push_back(buffer);
  return buffer.name;
}

/// Counts the loads of global memory (inputs, outputs, materialized
/// internal buffers) that run whatever the data (not in a select branch, not
/// right of && or ||), by printed form.
static void countUnconditionalLoads(const KExpr &e, const Kernel &kernel,
                                    std::map<std::string, int> &counts) {
  if (e.kind == KExpr::Load) {
    const KBuffer *buffer = kernel.findBuffer(e.name);
    const StageSchedule *entry = kernel.schedule.find(e.name);
    bool global = buffer && (buffer->role == KBuffer::Input || buffer->role == KBuffer::Output ||
                             (buffer->role == KBuffer::Internal && entry &&
                              entry->placement == StageSchedule::Root));
    if (global)
      ++counts[printExpr(e)];
  }
  size_t unconditional = e.kind == KExpr::Select || e.kind == KExpr::And || e.kind == KExpr::Or
                             ? 1
                             : e.args.size();
  for (size_t i = 0; i < unconditional; ++i)
    countUnconditionalLoads(*e.args[i], kernel, counts);
}

KExprPtr KernelLowering::hoistRepeatedLoads(KExprPtr value, std::vector<LStmt> &pre) {
  std::map<std::string, int> counts;
  countUnconditionalLoads(*value, kernel, counts);
  std::map<std::string, std::string> registers;
  return rewriteLoads(value, [&](const KExpr &load, const std::vector<KExprPtr> &indices) {
    auto copy = std::make_shared<KExpr>(load);
    copy->args = indices;
    std::string key = printExpr(*copy);
    auto count = counts.find(key);
    if (count == counts.end() || count->second < 2)
      return KExprPtr();
    std::string &local = registers[key];
    if (local.empty()) {
      local = addBuffer(load.name + "_reg", KBuffer::Local, load.dtype, 1);
      pre.push_back(store(local, {cnst(0)}, copy));
    }
    return KExpr::load(local, {cnst(0)}, load.dtype);
  });
}

KExprPtr KernelLowering::lowerValue(const KStage &stage,
                                    const std::map<std::string, KExprPtr> &bindings,
                                    std::vector<LStmt> &pre, bool &ok, bool hoist) {
  // Block-level producers: the consumer reads its own row of them.
  KExprPtr body = rewriteLoads(stage.body, [&](const KExpr &load,
                                               const std::vector<KExprPtr> &indices) {
    auto shared = sharedOf.find(load.name);
    if (shared == sharedOf.end())
      return KExprPtr();
    int64_t rows = rowRankOf[load.name];
    const Shape &shape = kernel.findBuffer(load.name)->type.getShape();
    for (int64_t d = 0; d < rows; ++d) {
      // Coordinate 0 of a dim of size 1 is every row's own (a broadcast).
      bool broadcast =
          indices[d]->kind == KExpr::IntConst && indices[d]->intValue == 0 && shape[d].isOne();
      if (!broadcast && (indices[d]->kind != KExpr::Var || d >= int64_t(stage.spatialVars.size()) ||
                         indices[d]->name != stage.spatialVars[d])) {
        ok = error(scheduleOf(load.name).loc,
                   "'%" + stage.buffer + "' reads '%" + load.name +
                       "' outside its own row, so it cannot be computed at block level");
        return KExprPtr();
      }
    }
    std::vector<KExprPtr> extents = extentsOf(load.name);
    auto walkRow = sharedRowOf.find(load.name);
    KExprPtr linear = walkRow == sharedRowOf.end() ? cnst(0) : walkRow->second;
    for (size_t d = rows; d < indices.size(); ++d)
      linear = add(mul(linear, extents[d]), indices[d]);
    return KExpr::load(shared->second, {linear}, load.dtype);
  });
  body = substituteVars(body, bindings);
  if (hoist)
    body = hoistRepeatedLoads(body, pre);
  // Thread-level stages, once per distinct index tuple of this value: a
  // reduction into an accumulator, a spatial stage (read several times per
  // element) into a register; a columns mapping computed some before its
  // walk (hoistedThreadValues).
  std::map<std::string, std::string> computed;
  return rewriteLoads(body, [&](const KExpr &load, const std::vector<KExprPtr> &indices) {
    if (!threadLevelEntry(load.name))
      return KExprPtr();
    std::string key = threadStageKey(load.name, indices);
    auto hoisted = hoistedThreadValues.find(key);
    if (hoisted != hoistedThreadValues.end())
      return castTo(hoisted->second, load.dtype);
    std::string &local = computed[key];
    if (local.empty())
      local = computeThreadStage(*stageOf(load.name), indices, pre, ok);
    return castTo(KExpr::load(local, {cnst(0)}, threadStageDType(load.name)), load.dtype);
  });
}

std::string KernelLowering::threadStageKey(const std::string &buffer,
                                           const std::vector<KExprPtr> &indices) {
  std::string key = buffer + "[";
  for (const KExprPtr &index : indices)
    key += printExpr(*index) + ",";
  return key;
}

DType KernelLowering::threadStageDType(const std::string &buffer) {
  const KStage *producer = stageOf(buffer);
  return producer->isReduction() ? producer->accumulate
                                 : kernel.findBuffer(buffer)->type.getDType();
}

std::string KernelLowering::computeThreadStage(const KStage &producer,
                                               const std::vector<KExprPtr> &indices,
                                               std::vector<LStmt> &pre, bool &ok) {
  std::map<std::string, KExprPtr> producerBindings;
  for (size_t d = 0; d < producer.spatialVars.size(); ++d)
    producerBindings[producer.spatialVars[d]] = indices[d];
  if (producer.isReduction())
    return emitSerialReduction(producer, producerBindings, pre, ok);
  DType dtype = threadStageDType(producer.buffer);
  KExprPtr value = lowerValue(producer, producerBindings, pre, ok);
  std::string local = addBuffer(producer.buffer + "_val", KBuffer::Local, dtype, 1);
  pre.push_back(store(local, {cnst(0)}, castTo(value, dtype)));
  return local;
}

std::string KernelLowering::emitSerialReduction(const KStage &stage,
                                                std::map<std::string, KExprPtr> bindings,
                                                std::vector<LStmt> &out, bool &ok) {
  std::string acc = addBuffer(stage.buffer + "_acc", KBuffer::Local, stage.accumulate, 1);
  out.push_back(store(acc, {cnst(0)}, stage.initLiteral()));
  std::vector<std::pair<std::string, KExprPtr>> loops;
  for (const auto &[var, extent] : stage.reduceVars) {
    std::string name = freshVar(var);
    bindings[var] = KExpr::var(name);
    loops.push_back({name, dimExpr(extent)});
  }
  std::vector<LStmt> inner;
  KExprPtr value = lowerValue(stage, bindings, inner, ok);
  inner.push_back(store(acc, {cnst(0)}, combine(stage, acc, value)));
  for (size_t i = loops.size(); i-- > 0;) {
    std::vector<LStmt> wrapped;
    wrapped.push_back(loop(LStmt::Serial, loops[i].first, loops[i].second, std::move(inner)));
    inner = std::move(wrapped);
  }
  for (LStmt &stmt : inner)
    out.push_back(std::move(stmt));
  return acc;
}

bool KernelLowering::lowerRoot(const KStage &root) {
  kernel.launches.emplace_back();
  launch = &kernel.launches.back();
  usedVars.clear();
  for (const std::string &symbol : kernel.getSymbolicDims())
    usedVars.insert(symbol);
  launch->blockVar = freshVar("bx");
  launch->threadVar = freshVar("tx");
  sharedOf.clear();
  rowRankOf.clear();
  sharedRowOf.clear();
  const StageMapping &mapping = scheduleOf(root.buffer).mapping;
  switch (mapping.kind) {
  case StageMapping::Flat: return emitFlat(root, mapping);
  case StageMapping::Rows: return emitRows(root, mapping);
  case StageMapping::Tiles: return emitTiles(root, mapping);
  case StageMapping::Columns:
    return emitColumns(root, mapping);
  }
  return false;
}

bool KernelLowering::run() {
  if (kernel.schedule.empty())
    return error(kernel.loc, "it has no schedule; run 'schedule' before 'lower'");
  for (const auto *list : {&kernel.inputs, &kernel.outputs, &kernel.internals})
    for (const KBuffer &buffer : *list)
      usedBuffers.insert(buffer.name);
  // 1. Inline, earlier stages first: an inline stage's body already has the
  // inline stages it reads substituted when a later stage takes it. Each
  // inlining copies the producer's expression into every load of it, so a
  // chain whose stages read their producer twice (x + x), or through an
  // index used twice (a reshape's floordiv and mod of one flat index),
  // doubles at every stage; an inline stage whose expression would pass
  // kMaxInlinedNodes is materialized instead (a root with a flat mapping),
  // and said so.
  stages = kernel.stages;
  for (size_t i = 0; i < stages.size(); ++i) {
    for (size_t j = 0; j < i; ++j)
      if (scheduleOf(stages[j].buffer).placement == StageSchedule::Inline)
        stages[i].body = inlineStage(stages[i].body, stages[j]);
    StageSchedule *entry = kernel.schedule.find(stages[i].buffer);
    if (entry->placement == StageSchedule::Inline && exceedsInliningLimit(*stages[i].body)) {
      // A decision like schedule's, not a problem of the input: a remark.
      if (remarks)
        *remarks << "remark: lower: @" << kernel.name << ": inlining '%" << stages[i].buffer
                 << "' would copy an expression of more than " << kMaxInlinedNodes
                 << " nodes into its readers; it is materialized instead\n";
      entry->placement = StageSchedule::Root;
      entry->mapping = StageMapping();
    }
  }
  // 2. A block-level stage has a shared copy only in its root's launch.
  for (const KStage &stage : stages) {
    const StageSchedule &entry = scheduleOf(stage.buffer);
    if (entry.placement != StageSchedule::ComputeAt || entry.level != StageSchedule::Block)
      continue;
    for (const KStage &reader : stages) {
      const StageSchedule &readerEntry = scheduleOf(reader.buffer);
      if (readerEntry.placement == StageSchedule::Inline ||
          !loadsBuffer(*reader.body, stage.buffer))
        continue;
      bool threadLevel = readerEntry.placement == StageSchedule::ComputeAt &&
                         readerEntry.level == StageSchedule::Thread;
      if (threadLevel || rootOf(reader.buffer) != rootOf(stage.buffer))
        return error(entry.loc, "'%" + stage.buffer + "' is computed in the blocks of '%" +
                                    rootOf(stage.buffer) + "' but '%" + reader.buffer +
                                    "' reads it elsewhere; materialize it");
    }
  }
  // A block-level stage needs its root's blocks to own rows.
  for (const KStage &stage : stages) {
    const StageSchedule &entry = scheduleOf(stage.buffer);
    StageMapping::Kind rootKind = scheduleOf(rootOf(stage.buffer)).mapping.kind;
    if (entry.placement == StageSchedule::ComputeAt && entry.level == StageSchedule::Block &&
        rootKind != StageMapping::Rows && rootKind != StageMapping::Columns)
      return error(entry.loc, "compute_at(%" + entry.consumer + ", block) needs '%" +
                                  rootOf(stage.buffer) +
                                  "' to have a rows or columns mapping, whose blocks own rows; "
                                  "the blocks of its " +
                                  mappingKindName(rootKind) + " mapping do not");
  }
  // 3. One launch per root stage.
  for (const KStage &stage : stages)
    if (scheduleOf(stage.buffer).placement == StageSchedule::Root && !lowerRoot(stage))
      return false;
  // 4. Only materialized internal buffers remain (one that no stage writes
  // has no schedule entry and goes too).
  llvm::erase_if(kernel.internals, [&](const KBuffer &buffer) {
    const StageSchedule *entry = kernel.schedule.find(buffer.name);
    return !entry || entry->placement != StageSchedule::Root;
  });
  kernel.stages.clear();
  kernel.schedule = KSchedule();
  return true;
}

bool fusec::lowerKernel(Kernel &kernel, DiagEngine &diag, llvm::raw_ostream *remarks) {
  return KernelLowering(kernel, diag, remarks).run();
}
