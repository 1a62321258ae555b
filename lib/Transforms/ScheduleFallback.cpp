//===- ScheduleFallback.cpp - The rule for everything else ----------------===//
//
// Contract: schedules any kernel (matmul and convolution included, until
// they get rules of their own), as TVM's DLight Fallback does:
//   1. spatial internal stages: inline;
//   2. an internal reduction read by exactly one stage, element by element
//      (at that stage's own indices), is computed in that stage's threads:
//      compute_at(reader, thread), e.g. a matmul feeding its epilogue;
//   3. any other internal reduction is materialized in its own launch;
//   4. outputs: flat, 256 threads, a thread per element; a reduction output
//      loops over its reduction serially (coalesced across threads for a
//      column reduction); spatial outputs that read no thread-level
//      reduction get vector accesses.
//
//===----------------------------------------------------------------------===//
#include "ScheduleRules.h"

using namespace fusec;

const KStage *fusec::findSoleOwnIndexReader(const Kernel &kernel, const std::vector<KStage> &stages,
                                            size_t producer) {
  const KStage *onlyReader = nullptr;
  int readers = 0;
  for (size_t j = producer + 1; j < stages.size(); ++j) {
    const KStage &reader = stages[j];
    if ((isInternal(kernel, reader) && !reader.isReduction()) ||
        !loadsBuffer(*reader.body, stages[producer].buffer))
      continue;
    ++readers;
    onlyReader = &reader;
  }
  if (readers == 1 &&
      readsAtOwnIndex(*onlyReader->body, stages[producer].buffer, onlyReader->spatialVars, true))
    return onlyReader;
  return nullptr;
}

void fusec::scheduleFallback(const Kernel &kernel, KSchedule &schedule) {
  std::vector<KStage> stages = inlineSpatialInternals(kernel);
  schedule.rule = "fallback";
  std::vector<std::string> threadLevel;
  for (size_t i = 0; i < stages.size(); ++i) {
    const KStage &stage = stages[i];
    StageSchedule entry;
    entry.stage = stage.buffer;
    entry.mapping.threads = kFlatThreads;
    if (isInternal(kernel, stage) && !stage.isReduction()) {
      entry.placement = StageSchedule::Inline;
    } else if (isInternal(kernel, stage)) {
      if (const KStage *reader = findSoleOwnIndexReader(kernel, stages, i)) {
        entry.placement = StageSchedule::ComputeAt;
        entry.consumer = reader->buffer;
        entry.level = StageSchedule::Thread;
        threadLevel.push_back(stage.buffer);
      }
    } else {
      bool readsThreadLevel = false;
      for (const std::string &producer : threadLevel)
        readsThreadLevel |= loadsBuffer(*stage.body, producer);
      entry.mapping.vector = readsThreadLevel ? 1 : chooseVectorWidth(kernel, stage);
    }
    schedule.stages.push_back(std::move(entry));
  }
}
