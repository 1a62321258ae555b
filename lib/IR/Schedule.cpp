//===- Schedule.cpp - Printing and checking kernel schedules --------------===//
//
// A schedule is printed after the stages of its kernel:
//
//   schedule "reduction" {
//     %m: compute_at(%out, block)
//     %e: inline
//     %out: rows(threads = 256, vector = 1, inner = 1)
//   }
//
// One line per stage, in stage order. An output is always a root with a
// mapping; an internal root is written `materialize <mapping>` (it gets a
// global buffer and its own launch).
//
//===----------------------------------------------------------------------===//
#include "fusec/IR/Kernel.h"

#include "llvm/ADT/StringSet.h"

using namespace fusec;

const StageSchedule *KSchedule::find(llvm::StringRef stage) const {
  for (const StageSchedule &entry : stages)
    if (entry.stage == stage)
      return &entry;
  return nullptr;
}

StageSchedule *KSchedule::find(llvm::StringRef stage) {
  return const_cast<StageSchedule *>(static_cast<const KSchedule *>(this)->find(stage));
}

llvm::StringRef fusec::mappingKindName(StageMapping::Kind kind) {
  switch (kind) {
  case StageMapping::Flat:
    return "flat";
  case StageMapping::Rows:
    return "rows";
  case StageMapping::Tiles:
    return "tiles";
  case StageMapping::Columns:
    return "columns";
  }
  return "flat";
}

static std::string printMapping(const StageMapping &mapping) {
  if (mapping.kind == StageMapping::Tiles && mapping.mma)
    return "tiles(block_m = " + std::to_string(mapping.blockM) +
           ", block_n = " + std::to_string(mapping.blockN) +
           ", block_k = " + std::to_string(mapping.blockK) +
           ", warp_m = " + std::to_string(mapping.warpM) +
           ", warp_n = " + std::to_string(mapping.warpN) + ", mma = 1)";
  if (mapping.kind == StageMapping::Tiles)
    return "tiles(block_m = " + std::to_string(mapping.blockM) +
           ", block_n = " + std::to_string(mapping.blockN) +
           ", block_k = " + std::to_string(mapping.blockK) +
           ", thread_m = " + std::to_string(mapping.threadM) +
           ", thread_n = " + std::to_string(mapping.threadN) + ")";
  std::string text = mappingKindName(mapping.kind).str();
  text += "(threads = " + std::to_string(mapping.threads) +
          ", vector = " + std::to_string(mapping.vector);
  if (mapping.kind == StageMapping::Rows || mapping.kind == StageMapping::Columns)
    text += ", inner = " + std::to_string(mapping.inner);
  if (mapping.kind == StageMapping::Columns)
    text += ", rows = " + std::to_string(mapping.rows);
  return text + ")";
}

std::string fusec::printSchedule(const Kernel &kernel) {
  const KSchedule &schedule = kernel.schedule;
  std::string text = "  schedule \"" + schedule.rule + "\" {\n";
  for (const StageSchedule &entry : schedule.stages) {
    text += "    %" + entry.stage + ": ";
    switch (entry.placement) {
    case StageSchedule::Inline:
      text += "inline";
      break;
    case StageSchedule::ComputeAt:
      text += "compute_at(%" + entry.consumer + ", " +
              (entry.level == StageSchedule::Block ? "block" : "thread") + ")";
      break;
    case StageSchedule::Root:
      if (const KBuffer *buffer = kernel.findBuffer(entry.stage))
        if (buffer->role == KBuffer::Internal)
          text += "materialize ";
      text += printMapping(entry.mapping);
      break;
    }
    text += "\n";
  }
  return text + "  }\n";
}

namespace {
class ScheduleVerifier {
public:
  ScheduleVerifier(const Kernel &kernel, DiagEngine &diag, llvm::StringRef context)
      : kernel(kernel), diag(diag), context(context.str()) {}

  bool error(llvm::SMLoc loc, const llvm::Twine &message) {
    std::string prefix = context.empty() ? "" : "IR verification failed " + context + ": ";
    diag.error(loc.isValid() ? loc : kernel.loc,
               prefix + "in the schedule of kernel '@" + kernel.name + "': " + message);
    return false;
  }

  bool verify() {
    const KSchedule &schedule = kernel.schedule;
    if (schedule.stages.size() != kernel.stages.size())
      return error(kernel.loc,
                   "the schedule has " + std::to_string(schedule.stages.size()) +
                       (schedule.stages.size() == 1 ? " entry" : " entries") +
                       " but the kernel has " + std::to_string(kernel.stages.size()) +
                       (kernel.stages.size() == 1 ? " stage" : " stages") +
                       "; give one entry per stage, in order");
    for (size_t i = 0; i < kernel.stages.size(); ++i) {
      const StageSchedule &entry = schedule.stages[i];
      const KStage &stage = kernel.stages[i];
      if (entry.stage != stage.buffer)
        return error(entry.loc, "entry " + std::to_string(i + 1) + " names '%" + entry.stage +
                                    "' but stage " + std::to_string(i + 1) + " writes '%" +
                                    stage.buffer + "'; list the stages in order");
      const KBuffer *buffer = kernel.findBuffer(stage.buffer);
      bool output = buffer && buffer->role == KBuffer::Output;
      switch (entry.placement) {
      case StageSchedule::Inline:
        if (output)
          return error(entry.loc, "output '%" + entry.stage + "' cannot be inlined");
        if (stage.isReduction())
          return error(entry.loc, "reduction '%" + entry.stage +
                                      "' cannot be inlined; compute it at a consumer "
                                      "or materialize it");
        break;
      case StageSchedule::ComputeAt: {
        if (output)
          return error(entry.loc, "output '%" + entry.stage + "' must be a root stage");
        bool later = false;
        for (size_t j = i + 1; j < kernel.stages.size(); ++j)
          later |= kernel.stages[j].buffer == entry.consumer;
        if (!later)
          return error(entry.loc, "compute_at target '%" + entry.consumer +
                                      "' is not a later stage of the kernel");
        break;
      }
      case StageSchedule::Root: {
        const StageMapping &mapping = entry.mapping;
        if (mapping.kind == StageMapping::Tiles) {
          auto positive = [](int64_t v) { return v >= 1 && v <= 1024; };
          if (!positive(mapping.blockM) || !positive(mapping.blockN) ||
              !positive(mapping.blockK) || !positive(mapping.threadM) ||
              !positive(mapping.threadN))
            return error(entry.loc, "tile sizes must be in [1, 1024]");
          if (mapping.mma) {
            if (mapping.warpM < 16 || mapping.warpN < 8 || mapping.warpM % 16 != 0 ||
                mapping.warpN % 8 != 0 || mapping.blockM % mapping.warpM != 0 ||
                mapping.blockN % mapping.warpN != 0)
              return error(entry.loc, "with mma, warp_m is a multiple of 16 dividing block_m "
                                      "and warp_n a multiple of 8 dividing block_n");
            if (mapping.blockK % 16 != 0)
              return error(entry.loc, "with mma, block_k is a multiple of 16 (m16n8k16 "
                                      "steps)");
          } else if (mapping.blockM % mapping.threadM != 0 ||
                     mapping.blockN % mapping.threadN != 0) {
            return error(entry.loc, "thread_m must divide block_m and thread_n block_n");
          }
          if (mapping.threads < 1 || mapping.threads > 1024)
            return error(entry.loc, "a tile needs (block_m / thread_m) * (block_n / thread_n) "
                                    "threads, at most 1024");
          if (!stage.isReduction() && stage.reduceVars.empty()) {
            bool readsThreadLevel = false;
            for (size_t j = 0; j < i; ++j)
              readsThreadLevel |= schedule.stages[j].placement == StageSchedule::ComputeAt &&
                                  schedule.stages[j].consumer == stage.buffer;
            if (!readsThreadLevel)
              return error(entry.loc, "tiles apply to a contraction: the stage itself, or "
                                      "one computed at it");
          }
          break;
        }
        if (mapping.threads < 1 || mapping.threads > 1024)
          return error(entry.loc, "threads must be in [1, 1024]");
        if (mapping.vector < 1 || mapping.vector > 16 ||
            (mapping.vector & (mapping.vector - 1)) != 0)
          return error(entry.loc, "vector must be a power of two up to 16");
        if (mapping.kind == StageMapping::Rows) {
          int64_t rank = buffer ? buffer->type.getRank() : 0;
          if (mapping.inner < 0 || mapping.inner > rank)
            return error(entry.loc, "inner must be in [0, " + std::to_string(rank) + "]");
          // A block reduces one row; dims inside it are kept axes of size 1.
          for (int64_t d = rank - mapping.inner; stage.isReduction() && d < rank; ++d)
            if (!buffer->type.getShape()[d].isOne())
              return error(entry.loc, "a reduction's rows mapping has inner dims of size 1 only");
          // A reduction computed at this stage's block is a block reduction
          // too, with the threads of this mapping.
          bool blockReduction = stage.isReduction();
          for (size_t j = 0; j < schedule.stages.size(); ++j)
            blockReduction |= schedule.stages[j].placement == StageSchedule::ComputeAt &&
                              schedule.stages[j].level == StageSchedule::Block &&
                              schedule.stages[j].consumer == stage.buffer &&
                              kernel.stages[j].isReduction();
          if (blockReduction && mapping.threads % 32 != 0)
            return error(entry.loc, "a block reduction needs whole warps (threads a "
                                    "multiple of 32)");
        }
        if (mapping.kind == StageMapping::Columns) {
          int64_t rank = buffer ? buffer->type.getRank() : 0;
          if (stage.isReduction())
            return error(entry.loc, "a columns mapping serves a spatial stage; a reduction's "
                                    "mapping is flat or rows");
          if (mapping.inner < 1 || mapping.inner > rank)
            return error(entry.loc,
                         "inner (the column dims) must be in [1, " + std::to_string(rank) + "]");
          if (mapping.rows < 1 || mapping.rows > 1024)
            return error(entry.loc, "rows (the rows each thread walks) must be in [1, 1024]");
        }
        break;
      }
      }
    }
    return true;
  }

private:
  const Kernel &kernel;
  DiagEngine &diag;
  std::string context;
};
} // namespace

bool fusec::verifySchedule(const Kernel &kernel, DiagEngine &diag,
                           llvm::StringRef context) {
  return ScheduleVerifier(kernel, diag, context).verify();
}
