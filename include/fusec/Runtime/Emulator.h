//===- Emulator.h - fusec's CUDA C on a CPU ---------------------*- C++ -*-===//
//
// Included (with -include) before the CUDA C that fusec generates, when a
// host C++ compiler builds it into a shared object for fusec-run
// --device=emulator (lib/Target/CUDA/EmulatedRun.cpp). Plain C++17, glibc's
// ucontext and CUDA's host-side f16/bf16 headers: written into the build
// directory from fusec's own copy, never compiled into fusec.
//
// The CUDA semantics it supplies, each as the CUDA C programming guide and
// the PTX ISA define them, independently of how fusec's lowering or
// interpreter model them (so that a disagreement is found here, on a CPU):
//   1. every thread of a block is a fiber (ucontext) with its own stack;
//      `__shared__` arrays are function statics, shared by the block's
//      fibers (blocks run one after another);
//   2. __syncthreads() waits until every thread of the block that has not
//      exited arrives; warp collectives (shuffles, mma.sync, ldmatrix) wait
//      for the 32 lanes of their warp; threads that wait at different kinds
//      of barrier, or a warp collective with a lane that exited, are
//      reported (the kernel is wrong) instead of hanging;
//   3. mma.sync.m16n8k16 and ldmatrix exchange fragments between lanes with
//      the PTX ISA's layouts ("Matrix Fragments for mma.m16n8k16",
//      "ldmatrix");
//   4. cp.async copies land when cp.async.wait_group says they must (late),
//      or when issued (early): a kernel that reads a stage before waiting,
//      or overwrites one other threads still read, gives a wrong result in
//      one of the two modes;
//   5. each warp runs as far as it can before the next starts (a missing
//      __syncthreads() shows as a read of what another warp has not yet
//      written), warps and lanes in order or in reverse order (another
//      interleaving between barriers).
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_EMULATOR_H
#define FUSEC_EMULATOR_H

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <vector_types.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <math.h>
#include <setjmp.h>
#include <string>
#include <tuple>
#include <type_traits>
#include <ucontext.h>
#include <utility>
#include <vector>

// CUDA's qualifiers on a host compiler: shared arrays are statics (one per
// kernel, shared by the fibers of the block that runs).
#undef __device__
#define __device__
#undef __global__
#define __global__
#undef __forceinline__
#define __forceinline__ inline
#undef __launch_bounds__
#define __launch_bounds__(...)
#undef __shared__
#define __shared__ static

inline float __int_as_float(int bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

namespace fc_emu {

/// What a thread is doing between two scheduler passes.
enum class Wait { Runnable, Block, Warp, Exited };

/// A cp.async of 4, 8 or 16 bytes in flight (no heap: copies are many).
struct PendingCopy {
  void *destination;
  int size;
  unsigned char bytes[16]; // read at issue, zero-filled past `valid`
};

struct Thread {
  ucontext_t context;  // to enter the fiber the first time
  jmp_buf resumeAt;    // where it suspended (_setjmp: no signal-mask syscall)
  bool started = false;
  std::unique_ptr<char[]> stack; // kStackBytes, allocated (not touched) once
  Wait wait = Wait::Runnable;
  std::vector<PendingCopy> openGroup;             // cp.async not yet committed
  std::deque<std::vector<PendingCopy>> committed; // oldest first
  unsigned char exchange[64];                     // this lane's part of a warp collective
  uint64_t mmaCalls = 0;                          // mma.sync calls in this block
};

/// As fusec's EmulatorFlags (include/fusec/Target/CUDA.h).
enum Flags : int { ReverseOrder = 1, EarlyCopies = 2 };

constexpr size_t kStackBytes = size_t(256) << 10;

/// A warp's mma.sync result, computed by the first of its lanes to run
/// after the exchange (the others take their part of it).
struct WarpMma {
  uint64_t sequence = ~uint64_t(0);
  float d[16][8];
};

struct State {
  ucontext_t scheduler; // swapcontext's save slot when a fiber first starts
  jmp_buf schedulerAt;  // where every fiber switches back to the scheduler
  std::vector<Thread> threads;
  int current = 0, count = 0, flags = 0;
  uint3 thread{0, 0, 0}, block{0, 0, 0};
  dim3 blockSize, gridSize;
  void (*body)(void **) = nullptr;
  void **params = nullptr;
  std::string error;
  std::vector<WarpMma> warpMma;
};

inline State &state() {
  static State instance;
  return instance;
}

inline Thread &self() { return state().threads[size_t(state().current)]; }

/// Back to the scheduler until the wait is over.
inline void suspend(Wait wait) {
  Thread &thread = self();
  thread.wait = wait;
  if (!_setjmp(thread.resumeAt))
    _longjmp(state().schedulerAt, 1);
}

/// Makes the threads of the current warp wait for each other: after it,
/// every lane's `exchange` holds what the lane put there before it.
inline void warpSync() { suspend(Wait::Warp); }

inline int laneOf(int thread) { return thread % 32; }

/// The exchange area of lane `lane` in the current thread's warp, or null
/// (and an error) when the block has no such thread.
inline unsigned char *exchangeOf(int lane) {
  int thread = state().current / 32 * 32 + lane;
  if (thread >= state().count) {
    if (state().error.empty())
      state().error = "a warp collective reads lane " + std::to_string(lane) + " of warp " +
                      std::to_string(state().current / 32) + ", past the block's " +
                      std::to_string(state().count) + " threads";
    return nullptr;
  }
  return state().threads[size_t(thread)].exchange;
}

/// A fiber runs the kernel body once per block it is given: after a body
/// returns it parks, and the next block resumes it at the top of the loop
/// (a context is made once per fiber, not once per thread of every block).
inline void threadEntry() {
  for (;;) {
    State &s = state();
    s.body(s.params);
    Thread &thread = s.threads[size_t(s.current)];
    thread.wait = Wait::Exited;
    if (!_setjmp(thread.resumeAt))
      _longjmp(s.schedulerAt, 1);
  }
}

/// Runs thread `t` until it suspends or exits.
inline void resume(int t) {
  State &s = state();
  Thread &thread = s.threads[size_t(t)];
  if (_setjmp(s.schedulerAt))
    return;
  if (!thread.started) {
    thread.started = true;
    swapcontext(&s.scheduler, &thread.context);
  }
  _longjmp(thread.resumeAt, 1);
}

/// Runs one block; false with `state().error` set when its threads cannot
/// all finish (mismatched barriers, a collective with exited lanes).
inline bool runBlock() {
  State &s = state();
  for (WarpMma &product : s.warpMma)
    product.sequence = ~uint64_t(0);
  for (int t = 0; t < s.count; ++t) {
    Thread &thread = s.threads[size_t(t)];
    thread.wait = Wait::Runnable;
    thread.mmaCalls = 0;
    thread.openGroup.clear();
    thread.committed.clear();
    if (thread.started)
      continue; // parked after its last block's body
    if (!thread.stack)
      thread.stack.reset(new char[kStackBytes]);
    getcontext(&thread.context);
    thread.context.uc_stack.ss_sp = thread.stack.get();
    thread.context.uc_stack.ss_size = kStackBytes;
    thread.context.uc_link = nullptr;
    makecontext(&thread.context, threadEntry, 0);
  }
  unsigned dimX = s.blockSize.x, dimY = s.blockSize.y;
  int warps = (s.count + 31) / 32;
  bool reverse = s.flags & ReverseOrder;
  for (;;) {
    // Each warp runs as far as it can (its lanes meeting at its own
    // collectives) before the next one starts: a missing __syncthreads()
    // lets a warp read what other warps have not written yet.
    for (int i = 0; i < warps; ++i) {
      int warp = reverse ? warps - 1 - i : i, first = warp * 32,
          last = std::min(s.count, first + 32);
      for (bool progressed = true; progressed;) {
        progressed = false;
        for (int j = first; j < last; ++j) {
          int t = reverse ? last - 1 - (j - first) : j;
          if (s.threads[size_t(t)].wait != Wait::Runnable)
            continue;
          s.current = t;
          s.thread = uint3{unsigned(t) % dimX, unsigned(t) / dimX % dimY,
                           unsigned(t) / (dimX * dimY)};
          resume(t);
          progressed = true;
          if (!s.error.empty())
            return false;
        }
        int waiting = 0, gone = 0;
        for (int t = first; t < last; ++t) {
          waiting += s.threads[size_t(t)].wait == Wait::Warp;
          gone += s.threads[size_t(t)].wait == Wait::Exited;
        }
        if (waiting && gone) {
          s.error = "warp " + std::to_string(warp) + " runs a warp collective (shuffle, mma, " +
                    "ldmatrix) after " + std::to_string(gone) + " of its lanes exited";
          return false;
        }
        if (waiting == last - first) {
          for (int t = first; t < last; ++t)
            s.threads[size_t(t)].wait = Wait::Runnable;
          progressed = true;
        }
      }
    }
    int exited = 0, atBlock = 0, atWarp = 0;
    for (int t = 0; t < s.count; ++t) {
      exited += s.threads[size_t(t)].wait == Wait::Exited;
      atBlock += s.threads[size_t(t)].wait == Wait::Block;
      atWarp += s.threads[size_t(t)].wait == Wait::Warp;
    }
    if (exited == s.count)
      return true;
    if (atBlock == s.count - exited) {
      for (int t = 0; t < s.count; ++t)
        if (s.threads[size_t(t)].wait == Wait::Block)
          s.threads[size_t(t)].wait = Wait::Runnable;
      continue;
    }
    s.error = std::to_string(atBlock) + " thread(s) wait at __syncthreads() while " +
              std::to_string(atWarp) + " wait at a warp collective that part of their warp " +
              "never reaches (" + std::to_string(exited) + " exited): the block cannot go on";
    return false;
  }
}

/// Runs a whole grid of `body` (a kernel with its parameters unpacked).
inline bool runGrid(void (*body)(void **), void **params, dim3 grid, dim3 block, int flags,
                    std::string &error) {
  State &s = state();
  s.error.clear();
  s.body = body;
  s.params = params;
  s.flags = flags;
  s.gridSize = grid;
  s.blockSize = block;
  s.count = int(block.x * block.y * block.z);
  if (s.count < 1 || s.count > 1024)
    return error = "a block of " + std::to_string(s.count) + " threads", false;
  if (s.threads.size() < size_t(s.count))
    s.threads.resize(size_t(s.count));
  s.warpMma.assign((s.threads.size() + 31) / 32, WarpMma{});
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x) {
        s.block = uint3{x, y, z};
        if (!runBlock()) {
          for (Thread &thread : s.threads)
            thread.started = false; // abandoned mid-body: made afresh if run again
          error = "block (" + std::to_string(x) + ", " + std::to_string(y) + ", " +
                  std::to_string(z) + "), thread " + std::to_string(s.current) + ": " + s.error;
          return false;
        }
      }
  return true;
}

/// A kernel's parameters from cuLaunchKernel's array of pointers.
template <class... Params, size_t... I>
void invokeWith(void (*kernel)(Params...), void **params, std::index_sequence<I...>) {
  kernel(*static_cast<std::remove_reference_t<Params> *>(params[I])...);
}
template <class... Params> void invokeKernel(void (*kernel)(Params...), void **params) {
  invokeWith(kernel, params, std::index_sequence_for<Params...>{});
}
template <auto Kernel> void invoke(void **params) { invokeKernel(Kernel, params); }

/// Element `i` of a 16-bit pair register (the low half first).
inline uint16_t half16(unsigned word, int i) { return uint16_t(i ? word >> 16 : word & 0xffffu); }

template <class T> inline float toFloat(uint16_t bits);
template <> inline float toFloat<__half>(uint16_t bits) { return __half2float(__ushort_as_half(bits)); }
template <> inline float toFloat<__nv_bfloat16>(uint16_t bits) {
  return __bfloat162float(__ushort_as_bfloat16(bits));
}

/// mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32, with the
/// PTX ISA's fragment layouts (groupID = lane / 4, t = lane % 4):
///   A a_i (i = 0..7, register i / 2, half i % 2): row groupID + 8 * (i / 2 % 2),
///     column 2t + i % 2 + 8 * (i / 4);
///   B b_i (i = 0..3): row (k) 2t + i % 2 + 8 * (i / 2), column groupID;
///   C/D c_i (i = 0..3): row groupID + 8 * (i / 2), column 2t + i % 2.
template <class T>
inline void mma(float &d0, float &d1, float &d2, float &d3, const unsigned a[4],
                const unsigned b[2], const float c[4]) {
  unsigned *mine = reinterpret_cast<unsigned *>(self().exchange);
  std::memcpy(mine, a, 16);
  std::memcpy(mine + 4, b, 8);
  warpSync();
  State &s = state();
  int lane = laneOf(s.current), group = lane / 4, t = lane % 4;
  WarpMma &product = s.warpMma[size_t(s.current / 32)];
  uint64_t sequence = self().mmaCalls++;
  if (product.sequence != sequence) {
    // The first lane of the warp to get here computes A * B for all.
    float a16[16][16], b16[16][8];
    for (int from = 0; from < 32; ++from) {
      const unsigned char *registers = exchangeOf(from);
      if (!registers)
        return;
      int g = from / 4, u = from % 4;
      for (int i = 0; i < 8; ++i) {
        unsigned word;
        std::memcpy(&word, registers + 4 * (i / 2), 4);
        a16[g + 8 * (i / 2 % 2)][2 * u + i % 2 + 8 * (i / 4)] = toFloat<T>(half16(word, i % 2));
      }
      for (int i = 0; i < 4; ++i) {
        unsigned word;
        std::memcpy(&word, registers + 16 + 4 * (i / 2), 4);
        b16[2 * u + i % 2 + 8 * (i / 2)][g] = toFloat<T>(half16(word, i % 2));
      }
    }
    for (int row = 0; row < 16; ++row)
      for (int column = 0; column < 8; ++column) {
        float sum = 0;
        for (int k = 0; k < 16; ++k)
          sum += a16[row][k] * b16[k][column];
        product.d[row][column] = sum;
      }
    product.sequence = sequence;
  }
  float result[4];
  for (int i = 0; i < 4; ++i)
    result[i] = c[i] + product.d[group + 8 * (i / 2)][2 * t + i % 2];
  warpSync(); // every lane has read the others' fragments
  d0 = result[0], d1 = result[1], d2 = result[2], d3 = result[3];
}

/// ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].shared.b16: lane 8m + r
/// gives the address of row r of matrix m (16-byte aligned); lane l
/// receives, in register m, elements (l / 4, 2 (l % 4)) and (l / 4,
/// 2 (l % 4) + 1) of matrix m, or of its transpose.
template <int Count, bool Trans> inline void ldmatrix(unsigned *registers, const void *row) {
  std::memcpy(self().exchange, &row, sizeof row);
  if (reinterpret_cast<uintptr_t>(row) % 16 != 0 && laneOf(state().current) < 8 * Count &&
      state().error.empty())
    state().error = "ldmatrix: lane " + std::to_string(laneOf(state().current)) +
                    " gives a row address that is not 16-byte aligned";
  warpSync();
  int lane = laneOf(state().current);
  unsigned result[Count];
  for (int m = 0; m < Count; ++m) {
    uint16_t pair[2];
    for (int j = 0; j < 2; ++j) {
      int r = lane / 4, c = 2 * (lane % 4) + j;
      if (Trans)
        std::swap(r, c);
      const unsigned char *from = exchangeOf(8 * m + r);
      const void *address = nullptr;
      if (from)
        std::memcpy(&address, from, sizeof address);
      pair[j] = 0;
      if (address)
        std::memcpy(&pair[j], static_cast<const unsigned char *>(address) + 2 * c, 2);
    }
    result[m] = unsigned(pair[0]) | (unsigned(pair[1]) << 16);
  }
  warpSync();
  for (int m = 0; m < Count; ++m)
    registers[m] = result[m];
}

/// A shuffle of any 1-8 byte value: lane `source` of the warp (own value
/// when `source` is out of [0, 32), as __shfl_down_sync defines it).
template <class T> inline T shuffle(T value, int source) {
  static_assert(sizeof(T) <= 8, "a shuffle moves at most 8 bytes");
  std::memcpy(self().exchange, &value, sizeof value);
  warpSync();
  T result = value;
  if (source >= 0 && source < 32)
    if (const unsigned char *from = exchangeOf(source))
      std::memcpy(&result, from, sizeof result);
  warpSync();
  return result;
}

} // namespace fc_emu

#define threadIdx (::fc_emu::state().thread)
#define blockIdx (::fc_emu::state().block)
#define blockDim (::fc_emu::state().blockSize)
#define gridDim (::fc_emu::state().gridSize)

inline void __syncthreads() { ::fc_emu::suspend(::fc_emu::Wait::Block); }

template <class T> inline T __shfl_xor_sync(unsigned, T value, int laneMask, int = 32) {
  return ::fc_emu::shuffle(value, ::fc_emu::laneOf(::fc_emu::state().current) ^ laneMask);
}
template <class T> inline T __shfl_down_sync(unsigned, T value, unsigned delta, int = 32) {
  return ::fc_emu::shuffle(value, ::fc_emu::laneOf(::fc_emu::state().current) + int(delta));
}

// The prelude's device-only functions (its `#ifdef __CUDACC__` part).
template <int Bytes> inline void fc_cp_async(void *dst, const void *src, int valid) {
  static_assert(Bytes == 4 || Bytes == 8 || Bytes == 16, "cp.async copies 4, 8 or 16 bytes");
  ::fc_emu::PendingCopy copy{dst, Bytes, {}};
  if ((reinterpret_cast<uintptr_t>(dst) % Bytes != 0 ||
       (valid > 0 && reinterpret_cast<uintptr_t>(src) % Bytes != 0) || valid < 0 ||
       valid > Bytes) &&
      ::fc_emu::state().error.empty())
    ::fc_emu::state().error = "cp.async of " + std::to_string(Bytes) + " bytes (" +
                              std::to_string(valid) + " valid) at a misaligned address";
  if (valid > 0)
    std::memcpy(copy.bytes, src, size_t(std::min(valid, Bytes)));
  if (::fc_emu::state().flags & ::fc_emu::EarlyCopies)
    std::memcpy(dst, copy.bytes, size_t(Bytes));
  else
    ::fc_emu::self().openGroup.push_back(copy);
}
inline void fc_cp_async_commit() {
  ::fc_emu::Thread &thread = ::fc_emu::self();
  thread.committed.push_back(std::move(thread.openGroup));
  thread.openGroup.clear();
}
template <int Pending> inline void fc_cp_async_wait() {
  ::fc_emu::Thread &thread = ::fc_emu::self();
  while (thread.committed.size() > size_t(Pending)) {
    for (const ::fc_emu::PendingCopy &copy : thread.committed.front())
      std::memcpy(copy.destination, copy.bytes, size_t(copy.size));
    thread.committed.pop_front();
  }
}

#define FC_EMU_MMA(NAME, TYPE)                                                              \
  inline void NAME(float &d0, float &d1, float &d2, float &d3, unsigned a0, unsigned a1,   \
                   unsigned a2, unsigned a3, unsigned b0, unsigned b1, float c0, float c1, \
                   float c2, float c3) {                                                   \
    const unsigned a[4] = {a0, a1, a2, a3}, b[2] = {b0, b1};                               \
    const float c[4] = {c0, c1, c2, c3};                                                   \
    ::fc_emu::mma<TYPE>(d0, d1, d2, d3, a, b, c);                                          \
  }
FC_EMU_MMA(fc_mma_f16, __half)
FC_EMU_MMA(fc_mma_bf16, __nv_bfloat16)
#undef FC_EMU_MMA

template <bool Trans> inline void fc_ldmatrix_x1(unsigned &r0, const void *row) {
  ::fc_emu::ldmatrix<1, Trans>(&r0, row);
}
template <bool Trans> inline void fc_ldmatrix_x2(unsigned &r0, unsigned &r1, const void *row) {
  unsigned r[2];
  ::fc_emu::ldmatrix<2, Trans>(r, row);
  r0 = r[0], r1 = r[1];
}
template <bool Trans>
inline void fc_ldmatrix_x4(unsigned &r0, unsigned &r1, unsigned &r2, unsigned &r3,
                           const void *row) {
  unsigned r[4];
  ::fc_emu::ldmatrix<4, Trans>(r, row);
  r0 = r[0], r1 = r[1], r2 = r[2], r3 = r[3];
}

/// The table of a module's kernels, which the build appends after the
/// generated source, and the entry point fusec-run calls:
///   FC_EMU_KERNELS({"relu_kernel", &fc_emu::invoke<&relu_kernel>}, ...,
///                  {nullptr, nullptr})
/// (the last entry keeps the table non-empty for a module without kernels).
struct fc_emu_kernel {
  const char *name;
  void (*body)(void **);
};
#define FC_EMU_KERNELS(...)                                                                 \
  static const fc_emu_kernel fc_emu_kernel_table[] = {__VA_ARGS__};                       \
  extern "C" int fc_emu_launch(const char *name, const unsigned grid[3],                  \
                               const unsigned block[3], void **params, int flags,         \
                               char *error, int errorSize) {                              \
    for (const fc_emu_kernel &kernel : fc_emu_kernel_table)                               \
      if (kernel.name && std::strcmp(kernel.name, name) == 0) {                           \
        std::string problem;                                                              \
        if (::fc_emu::runGrid(kernel.body, params, dim3(grid[0], grid[1], grid[2]),        \
                              dim3(block[0], block[1], block[2]), flags, problem))         \
          return 0;                                                                       \
        std::snprintf(error, size_t(errorSize), "%s", problem.c_str());                   \
        return 1;                                                                         \
      }                                                                                   \
    std::snprintf(error, size_t(errorSize), "no kernel '%s' in the module", name);        \
    return 1;                                                                             \
  }

#endif // FUSEC_EMULATOR_H
