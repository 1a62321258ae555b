//===- ExecBatch.cpp - Index and load evaluation over a batch -------------===//
//
// The batch forms of IndexCalc and Load (ExecNodes.h): the values of an
// index for a run of consecutive values of one variable (a stage's batched
// output dim, a lowered region's threads), and the element offsets a load
// or store of such a batch touches, range-checked as elementOffset checks
// one element.
//
//===----------------------------------------------------------------------===//
#include "ExecNodes.h"

#include "llvm/ADT/STLExtras.h"

using namespace fusec;
using namespace fusec::exec;

void IndexCalc::evalBatch(int64_t *vars, int slot, int64_t count, int64_t *out) const {
  if (general) {
    int64_t start = vars[slot];
    for (int64_t t = 0; t < count; ++t) {
      vars[slot] = start + t;
      out[t] = general->evalInt(vars);
    }
    vars[slot] = start;
    return;
  }
  int64_t value = constant, step = 0;
  for (const auto &[termSlot, coefficient] : terms) {
    value = wrappingAdd(value, wrappingMul(coefficient, vars[termSlot]));
    if (termSlot == slot)
      step = wrappingAdd(step, coefficient);
  }
  for (int64_t t = 0; t < count; ++t)
    out[t] = wrappingAdd(value, wrappingMul(step, t));
  for (const Derived &term : derived) {
    int64_t base = term.baseAt(vars), baseStep = 0;
    for (const auto &[termSlot, coefficient] : term.baseTerms)
      if (termSlot == slot)
        baseStep = wrappingAdd(baseStep, coefficient);
    if (baseStep == 0) {
      int64_t added = wrappingMul(term.coefficient, term.divided(base));
      for (int64_t t = 0; t < count; ++t)
        out[t] = wrappingAdd(out[t], added);
      continue;
    }
    std::vector<int64_t> &divided = term.lastBatch;
    if (base != term.lastBatchBase || baseStep != term.lastBatchStep ||
        int64_t(divided.size()) < count) {
      divided.resize(count);
      for (int64_t t = 0; t < count; ++t)
        divided[t] = term.divided(wrappingAdd(base, wrappingMul(baseStep, t)));
      term.lastBatchBase = base;
      term.lastBatchStep = baseStep;
    }
    for (int64_t t = 0; t < count; ++t)
      out[t] = wrappingAdd(out[t], wrappingMul(term.coefficient, divided[t]));
  }
}

bool Load::linearOffsets(const Buffer &buffer, const std::vector<IndexCalc> &indices,
                          const int64_t *vars, int slot, int64_t count, int64_t &offset,
                          int64_t &step) {
  offset = step = 0;
  for (size_t d = 0; d < indices.size(); ++d) {
    const IndexCalc &calc = indices[d];
    if (calc.general || calc.divisionReads(slot))
      return false;
    int64_t first = calc.eval(vars), delta = calc.stepAlong(slot);
    int64_t last;
    if (__builtin_mul_overflow(delta, count - 1, &last) ||
        __builtin_add_overflow(first, last, &last) || std::min(first, last) < 0 ||
        std::max(first, last) >= buffer.shape[d])
      return false;
    offset += first * buffer.strides[d];
    // In range: |delta| (count - 1) < the dim, and a single element's step
    // is never used.
    step = wrappingAdd(step, wrappingMul(delta, buffer.strides[d]));
  }
  if (buffer.threadSlot >= 0) {
    offset += vars[buffer.threadSlot] * buffer.threadStride;
    if (buffer.threadSlot == slot)
      step += buffer.threadStride;
  }
  return true;
}

void Load::batchOffsets(const Buffer &buffer, const std::vector<IndexCalc> &indices,
                         int64_t *vars, int slot, int64_t count, int64_t *offsets) {
  std::fill(offsets, offsets + count, 0);
  int64_t values[kBatch];
  bool inRange = true;
  for (size_t d = 0; d < indices.size(); ++d) {
    indices[d].evalBatch(vars, slot, count, values);
    for (int64_t t = 0; t < count; ++t) {
      inRange &= values[t] >= 0 && values[t] < buffer.shape[d];
      // Wraps only when out of range, which throws below.
      offsets[t] = wrappingAdd(offsets[t], wrappingMul(values[t], buffer.strides[d]));
    }
  }
  if (!inRange) {
    int64_t start = vars[slot];
    for (int64_t t = 0; t < count; ++t) { // throws at the first bad element
      vars[slot] = start + t;
      elementOffset(buffer, indices, vars);
    }
    vars[slot] = start;
  }
  if (buffer.threadSlot >= 0)
    for (int64_t t = 0; t < count; ++t)
      offsets[t] += (vars[buffer.threadSlot] + (buffer.threadSlot == slot ? t : 0)) *
                    buffer.threadStride;
}

int64_t IndexCalc::evalWithout(const int64_t *vars, int slot) const {
  int64_t value = constant;
  for (const auto &[termSlot, coefficient] : terms)
    if (termSlot != slot)
      value = wrappingAdd(value, wrappingMul(coefficient, vars[termSlot]));
  for (const Derived &term : derived)
    if (llvm::none_of(term.baseTerms, [&](const auto &baseTerm) { return baseTerm.first == slot; }))
      value = wrappingAdd(value, wrappingMul(term.coefficient, term.divided(term.baseAt(vars))));
  return value;
}

// A uniform part beyond this magnitude might wrap when added: such batches
// take the general path, which computes each index as eval does.
static constexpr int64_t kSplitLimit = int64_t(1) << 60;

const int64_t *SplitOffsets::get(const Buffer &buffer, const std::vector<IndexCalc> &indices,
                                 int64_t *vars, int slot, int64_t count, int64_t &base) {
  if (slot != this->slot || vars[slot] != start || count != this->count)
    rebuild(buffer, indices, vars, slot, count);
  if (!splits)
    return nullptr;
  base = 0;
  for (size_t d = 0; d < indices.size(); ++d) {
    int64_t uniform = indices[d].evalWithout(vars, slot);
    if (uniform < -kSplitLimit || uniform > kSplitLimit || uniform + low[d] < 0 ||
        uniform + high[d] >= buffer.shape[d])
      return nullptr;
    base += uniform * buffer.strides[d];
  }
  if (buffer.threadSlot >= 0 && buffer.threadSlot != slot)
    base += vars[buffer.threadSlot] * buffer.threadStride;
  return perElement.data();
}

void SplitOffsets::rebuild(const Buffer &buffer, const std::vector<IndexCalc> &indices,
                           int64_t *vars, int slot, int64_t count) {
  this->slot = slot;
  start = vars[slot];
  this->count = count;
  splits = false;
  for (const IndexCalc &calc : indices) {
    if (calc.general)
      return;
    for (const IndexCalc::Derived &term : calc.derived) {
      size_t reading = llvm::count_if(term.baseTerms, [&](const auto &baseTerm) {
        return baseTerm.first == slot;
      });
      if (reading != 0 && reading != term.baseTerms.size())
        return; // reads the slot and another variable
    }
  }
  // The slot's part of each index: the whole, less the part without it
  // (which does not change along the batch).
  perElement.assign(count, 0);
  low.assign(indices.size(), 0);
  high.assign(indices.size(), 0);
  int64_t values[kBatch];
  for (size_t d = 0; d < indices.size(); ++d) {
    indices[d].evalBatch(vars, slot, count, values);
    int64_t uniform = indices[d].evalWithout(vars, slot);
    for (int64_t t = 0; t < count; ++t) {
      int64_t part = wrappingSub(values[t], uniform);
      if (part < -buffer.shape[d] || part > buffer.shape[d])
        return; // out of range, or in range only with a large uniform part
      low[d] = t ? std::min(low[d], part) : part;
      high[d] = t ? std::max(high[d], part) : part;
      perElement[t] += part * buffer.strides[d];
    }
  }
  if (buffer.threadSlot == slot)
    for (int64_t t = 0; t < count; ++t)
      perElement[t] += (start + t) * buffer.threadStride;
  splits = true;
}

BatchAddresses exec::addressBatch(const Buffer &buffer, const std::vector<IndexCalc> &indices,
                                  SplitOffsets &split, int64_t *vars, int slot, int64_t count,
                                  int64_t *scratch) {
  BatchAddresses addresses;
  if (Load::linearOffsets(buffer, indices, vars, slot, count, addresses.offset, addresses.step))
    return addresses;
  if ((addresses.perElement = split.get(buffer, indices, vars, slot, count, addresses.offset)))
    return addresses;
  Load::batchOffsets(buffer, indices, vars, slot, count, scratch);
  addresses.offset = 0;
  addresses.perElement = scratch;
  return addresses;
}

void exec::checkVectorStarts(const BatchAddresses &addresses, int64_t count, int64_t width,
                             const Buffer &buffer, const char *access) {
  for (int64_t t = 0; t < count; ++t)
    if (addresses.at(t) % width != 0)
      throw Load::misaligned(buffer, access, addresses.at(t));
}
