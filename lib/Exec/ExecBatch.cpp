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
    int64_t base = term.base, baseStep = 0;
    for (const auto &[termSlot, coefficient] : term.baseTerms) {
      base = wrappingAdd(base, wrappingMul(coefficient, vars[termSlot]));
      if (termSlot == slot)
        baseStep = wrappingAdd(baseStep, coefficient);
    }
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
    int64_t last = first + delta * (count - 1);
    if (std::min(first, last) < 0 || std::max(first, last) >= buffer.shape[d])
      return false;
    offset += first * buffer.strides[d];
    step += delta * buffer.strides[d];
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
      offsets[t] += values[t] * buffer.strides[d];
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
