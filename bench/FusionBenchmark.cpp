//===- FusionBenchmark.cpp - Partitioner speed on generated graphs --------===//
//
// Runs `annotate-pattern,fuse-ops,fuse-tir` on legalized graphs of 1k to 1M
// bindings in three shapes: chains (elementwise runs broken by reductions),
// diamonds (fan-out reconverging two ops later) and wide fan-out (one
// value feeding many consumers that are each an output), and fuse-by-pattern
// on an unrolled recurrence of matmul + bias + tanh, and the whole -O2
// pipeline on a stack of transformer MLP layers. Reports time per binding; docs/performance.md
// records the figures. Wall-clock numbers belong here, never in tests.
//
//===----------------------------------------------------------------------===//
#include "fusec/Parser/Parser.h"
#include "fusec/Pass/Pass.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <sstream>

using namespace fusec;

namespace {

enum class Shape { Chain, Diamond, FanOut, Recurrence, Layers };

/// A recurrence unrolled to `count` bindings at the graph level, before
/// fuse-by-pattern: steps of h = tanh(matmul(h, w) + bias), each step's
/// matmul and bias add a cuBLASLt match (an unrolled RNN from ONNX).
std::string makeRecurrence(int64_t count) {
  std::ostringstream os;
  os << "func @main(%x: f32[8,16], %w: f32[16,16], %bias: f32[16]) -> f32[8,16] {\n"
     << "  dataflow {\n";
  std::string last = "x";
  for (int64_t i = 0; i + 3 <= count; i += 3) {
    std::string step = std::to_string(i / 3);
    os << "    %m" << step << " = matmul(%" << last << ", %w)\n"
       << "    %a" << step << " = add(%m" << step << ", %bias)\n"
       << "    %h" << step << " = tanh(%a" << step << ")\n";
    last = "h" + step;
  }
  os << "    output %" << last << "\n  }\n  return %" << last << "\n}\n";
  return os.str();
}

/// About `count` bindings of pre-norm MLP layers (layer norm, matmul, bias,
/// gelu, matmul, residual add), each with weights of its own, as a deep
/// model exports: every layer's matmuls become cuBLASLt composites of their
/// own and its norm a kernel of its own, so each needs a fresh name.
std::string makeLayers(int64_t count) {
  std::ostringstream os;
  os << "func @main(%x0: f16[n,64]) -> f16[n,64] {\n  dataflow {\n";
  int64_t layers = std::max<int64_t>(1, count / 11);
  for (int64_t i = 0; i < layers; ++i) {
    std::string l = std::to_string(i), x = "%x" + l;
    os << "    %g" << l << " = constant random<seed = " << 3 * i + 1 << "> : f16[64]\n"
       << "    %be" << l << " = constant splat<0.0> : f16[64]\n"
       << "    %w" << l << " = constant random<seed = " << 3 * i + 2 << "> : f16[64,128]\n"
       << "    %b" << l << " = constant splat<0.5> : f16[128]\n"
       << "    %v" << l << " = constant random<seed = " << 3 * i + 3 << "> : f16[128,64]\n"
       << "    %ln" << l << " = nn.layer_norm(" << x << ", %g" << l << ", %be" << l
       << ") {axes = -1, epsilon = 1e-5}\n"
       << "    %h" << l << " = matmul(%ln" << l << ", %w" << l << ")\n"
       << "    %hb" << l << " = add(%h" << l << ", %b" << l << ")\n"
       << "    %a" << l << " = nn.gelu(%hb" << l << ")\n"
       << "    %o" << l << " = matmul(%a" << l << ", %v" << l << ")\n"
       << "    %x" << i + 1 << " = add(" << x << ", %o" << l << ")\n";
  }
  os << "    output %x" << layers << "\n  }\n  return %x" << layers << "\n}\n";
  return os.str();
}

/// A legalized module with `count` bindings in one dataflow block, reusing
/// a few kernels so that the graph, not kernel printing, dominates.
std::string makeModule(int64_t count, Shape shape) {
  std::ostringstream os;
  os << "func @main(%x: f32[8,8]) -> f32[8,8] {\n  dataflow {\n";
  std::string last = "x";
  std::vector<std::string> outputs;
  for (int64_t i = 0; i < count; ++i) {
    std::string name = "v" + std::to_string(i);
    switch (shape) {
    case Shape::Chain:
      os << "    %" << name << " = call_kernel @" << (i % 16 == 15 ? "rowsum" : "exp")
         << "(%" << last << ")\n";
      break;
    case Shape::Diamond:
      if (i % 3 == 2)
        os << "    %" << name << " = call_kernel @add(%v" << i - 1 << ", %v" << i - 2 << ")\n";
      else
        os << "    %" << name << " = call_kernel @exp(%" << last << ")\n";
      break;
    case Shape::FanOut:
      os << "    %" << name << " = call_kernel @exp(%x)\n";
      outputs.push_back("%" + name);
      break;
    case Shape::Recurrence: // makeRecurrence's
    case Shape::Layers:     // makeLayers'
      break;
    }
    if (shape != Shape::Diamond || i % 3 == 2)
      last = name;
  }
  if (shape != Shape::FanOut)
    outputs = {"%" + last};
  os << "    output " << outputs.front();
  for (size_t i = 1; i < outputs.size(); ++i)
    os << ", " << outputs[i];
  os << "\n  }\n  return " << outputs.front() << "\n}\n";
  os << "kernel @exp(%a: f32[8,8]) -> (%out: f32[8,8]) {\n  %out[i, j] = exp(%a[i, j])\n}\n"
     << "kernel @add(%a: f32[8,8], %b: f32[8,8]) -> (%out: f32[8,8]) {\n"
     << "  %out[i, j] = add(%a[i, j], %b[i, j])\n}\n"
     << "kernel @rowsum(%a: f32[8,8]) -> (%out: f32[8,8]) {\n"
     << "  internal %s: f32[8]\n"
     << "  %s[i] = reduce add(%a[i, r]) over (r: 8) init 0.0 in f32\n"
     << "  %out[i, j] = divide(%a[i, j], %s[i])\n}\n";
  return os.str();
}

void runFusion(benchmark::State &state, Shape shape) {
  registerAllPasses();
  std::string text, pipelineText = "annotate-pattern,fuse-ops,fuse-tir";
  if (shape == Shape::Recurrence) {
    text = makeRecurrence(state.range(0));
    pipelineText = "fuse-by-pattern{patterns=@cublaslt}";
  } else if (shape == Shape::Layers) {
    text = makeLayers(state.range(0));
    pipelineText = getNamedPipeline("O2");
  } else {
    text = makeModule(state.range(0), shape);
  }
  PipelineError error;
  auto pipeline = parsePassPipeline(pipelineText, error);
  Instrumentation quiet;
  quiet.verifyEach = false;
  for (auto _ : state) {
    state.PauseTiming();
    llvm::SourceMgr sourceMgr;
    DiagEngine diag(sourceMgr);
    auto module = parseModuleString(text, sourceMgr, diag, "bench.fir");
    state.ResumeTiming();
    if (!module || pipeline->run(*module, diag, quiet) != RunResult::Success)
      state.SkipWithError("the pipeline failed");
    state.PauseTiming();
    module.reset(); // destruction is not the partitioner's cost
    state.ResumeTiming();
  }
  state.counters["per_binding"] = benchmark::Counter(
      double(state.range(0)) * double(state.iterations()),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_Chain(benchmark::State &state) { runFusion(state, Shape::Chain); }
void BM_Diamond(benchmark::State &state) { runFusion(state, Shape::Diamond); }
void BM_FanOut(benchmark::State &state) { runFusion(state, Shape::FanOut); }
void BM_Recurrence(benchmark::State &state) { runFusion(state, Shape::Recurrence); }
void BM_Layers(benchmark::State &state) { runFusion(state, Shape::Layers); }

} // namespace

BENCHMARK(BM_Chain)->RangeMultiplier(10)->Range(1000, 1000000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Diamond)->RangeMultiplier(10)->Range(1000, 1000000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FanOut)->RangeMultiplier(10)->Range(1000, 1000000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Recurrence)->RangeMultiplier(10)->Range(1000, 100000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Layers)->RangeMultiplier(10)->Range(1000, 100000)->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
