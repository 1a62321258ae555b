//===- PatternTest.cpp - The pattern C++ API and library steps -----------===//
//
// Patterns built in C++ with a check callback (TVM's PatternCheckContext),
// text patterns matched directly, and a cuBLASLt library step run by the
// launcher engine against a fake library table.
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"
#include "fusec/Analysis/Analysis.h"
#include "fusec/Runtime/Runtime.h"
#include "fusec/Target/CUDA.h"
#include "fusec/Transforms/Passes.h"

#include <catch2/catch.hpp>

using namespace fusec;

namespace {

const char *kTwoChains = R"FIR(
func @main(%x: f32[4,8], %w: f32[8,6], %b: f32[6]) -> (f32[4,6], f32[4,6], f32[4,6]) {
  dataflow {
    %m1 = matmul(%x, %w)
    %keep = add(%m1, %b)
    %m2 = matmul(%x, %w)
    %veto = add(%b, %m2)
    %other = exp(%m2)
    output %keep, %veto, %other
  }
  return (%keep, %veto, %other)
}
)FIR";

/// The pattern `%m = matmul(%a, %w); %y = add(%m, %bias)`, built in C++.
DataflowPattern matmulAdd() {
  DataflowPattern pattern;
  pattern.name = "api.matmul_add";
  int a = pattern.addWildcard("a");
  int w = pattern.addWildcard("w");
  int m = pattern.addOp("m", {"matmul"}, {a, w});
  int bias = pattern.addWildcard("bias");
  pattern.addOp("y", {"add"}, {m, bias});
  return pattern;
}

std::vector<std::string> callees(const Function &function) {
  std::vector<std::string> names;
  function.forEachBinding([&](const Binding &binding) {
    if (binding.kind == ExprKind::Call)
      names.push_back(binding.callee);
  });
  return names;
}

} // namespace

TEST_CASE("pattern API: the check callback sees the match and can veto it", "[pattern]") {
  test::Parsed parsed(kTwoChains);
  REQUIRE(parsed.module);
  DataflowPattern pattern = matmulAdd();
  std::vector<std::string> seenRoots, seenMembers;
  size_t usesOfM2 = 0;
  pattern.check = [&](const PatternCheckContext &context) {
    std::string root = context.root->getResult()->name;
    seenRoots.push_back(root);
    for (const Binding *binding : context.matchedBindings)
      seenMembers.push_back(root + ":" + binding->getResult()->name);
    CHECK(context.annotated.size() == 5); // a, w, m, bias, y
    CHECK(context.annotated.at("y") == context.root->getResult());
    const Value *m = context.annotated.at("m");
    CHECK(context.bindingOf(m) != nullptr);
    if (root == "veto")
      usesOfM2 = context.uses->lookup(m).size();
    return root != "veto";
  };
  std::vector<DataflowPattern> patterns;
  patterns.push_back(std::move(pattern));
  auto pass = createFuseByPatternPass(std::move(patterns), true, true);
  PassContext context{parsed.diag};
  REQUIRE(pass->run(*parsed.module, context));
  CHECK(seenRoots == std::vector<std::string>{"keep", "veto"});
  CHECK(seenMembers == std::vector<std::string>{"keep:m1", "keep:keep", "veto:m2", "veto:veto"});
  CHECK(usesOfM2 == 2); // %veto and %other
  // %keep became a composite called through @<name>_api; %veto stayed.
  const Function *main = parsed.module->lookupFunction("main");
  CHECK(callees(*main) == std::vector<std::string>{"fused_matmul_add_api"});
  const Function *outer = parsed.module->lookupFunction("fused_matmul_add_api");
  REQUIRE(outer);
  CHECK(outer->attrs.get("codegen")->text == "api");
  CHECK(outer->attrs.get("global_symbol")->text == "fused_matmul_add_api");
  const Function *inner = parsed.module->lookupFunction("fused_matmul_add");
  REQUIRE(inner);
  CHECK(inner->attrs.get("composite")->text == "api.matmul_add");
  CHECK(inner->attrs.get("primitive")->boolValue);
}

TEST_CASE("pattern API: text patterns match and report failing constraints", "[pattern]") {
  test::Parsed parsed(kTwoChains);
  REQUIRE(parsed.module);
  std::vector<DataflowPattern> patterns;
  llvm::SourceMgr sourceMgr;
  DiagEngine diag(sourceMgr);
  REQUIRE(parsePatternsString(R"PAT(
pattern @t.bias_add {
  %m = matmul(%a, %w)
  %y = add(%m, %bias)
  where single_use(%m), shape(%bias)[0] == shape(%w)[1], dtype(%a) == f32
}
)PAT",
                              sourceMgr, diag, patterns));
  REQUIRE(patterns.size() == 1);
  CHECK(patterns[0].codegenPrefix() == "t");
  const Function &main = *parsed.module->lookupFunction("main");
  const DataflowBlock &block = *main.body.front().block;
  UseMap uses = collectUses(main);
  std::vector<std::string> results;
  for (const auto &binding : block.bindings) {
    std::optional<PatternMatch> match = matchPattern(patterns[0], *binding, block);
    if (!match)
      continue;
    std::string failure = checkPatternConstraints(patterns[0], *match, uses);
    results.push_back(binding->getResult()->name + ": " + (failure.empty() ? "ok" : failure));
  }
  // %veto = add(%b, %m2) matches with its operands swapped.
  CHECK(results == std::vector<std::string>{
                       "keep: ok",
                       "veto: single_use(%m) failed: %m2 is also used by %other"});
}

namespace {
struct FakeLibrary {
  static std::vector<fusec_rt::MatmulCall> &calls() {
    static std::vector<fusec_rt::MatmulCall> recorded;
    return recorded;
  }
  static int &created() {
    static int count = 0;
    return count;
  }
  static fusec_rt::Library get() {
    fusec_rt::Library library{};
    library.create = []() -> void * {
      ++created();
      return reinterpret_cast<void *>(0x77);
    };
    library.destroy = [](void *) { --created(); };
    library.matmul = [](void *state, const fusec_rt::MatmulCall &call, void *) {
      CHECK(state == reinterpret_cast<void *>(0x77));
      calls().push_back(call);
      return 0;
    };
    library.error = [](void *) { return "fake"; };
    return library;
  }
};
} // namespace

TEST_CASE("launcher engine: a cuBLASLt composite is one library step", "[pattern][launcher]") {
  test::Parsed parsed(R"FIR(
func @main(%x: f16[n,64], %w: f16[32,64], %b: f16[32]) -> f16[n,32] {
  dataflow {
    %wt = permute_dims(%w) {axes = [1, 0]}
    %m = matmul(%x, %wt)
    %y = add(%m, %b)
    %r = nn.relu(%y)
    %e = exp(%r)
    output %e
  }
  return %e
}
)FIR");
  REQUIRE(parsed.module);
  registerAllPasses();
  PipelineError pipelineError;
  auto manager = parsePassPipeline(getNamedPipeline("O2"), pipelineError);
  REQUIRE(manager);
  Instrumentation inst;
  REQUIRE(manager->run(*parsed.module, parsed.diag, inst, nullptr) == RunResult::Success);
  cuda::LaunchPlan plan;
  std::string error;
  REQUIRE(cuda::buildLaunchPlan(*parsed.module, *parsed.module->lookupFunction("main"), plan,
                                error));
  REQUIRE(plan.steps.size() == 2);
  CHECK(plan.steps[0].kind == fusec_rt::StepDesc::Library);
  CHECK(plan.steps[0].kernel == "cublaslt.matmul_transposed_bias_relu");
  CHECK(plan.steps[1].kind == fusec_rt::StepDesc::Launch);
  cuda::ModelTables tables(plan);

  fusec_rt::Driver driver{};
  driver.moduleLoadData = [](void **module, const void *) {
    *module = reinterpret_cast<void *>(0x1);
    return 0;
  };
  driver.moduleUnload = [](void *) { return 0; };
  driver.moduleGetFunction = [](void **function, void *, const char *) {
    *function = reinterpret_cast<void *>(0x2);
    return 0;
  };
  driver.memAlloc = [](unsigned long long *pointer, size_t) {
    *pointer = 0x100000;
    return 0;
  };
  driver.memFree = [](unsigned long long) { return 0; };
  driver.memcpyHtoD = [](unsigned long long, const void *, size_t) { return 0; };
  driver.launchKernel = [](void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                           unsigned, void *, void **, void **) { return 0; };
  driver.ctxSynchronize = [] { return 0; };
  auto ref = [](unsigned long long data, std::vector<int64_t> shape) {
    fusec_rt::TensorRef tensor;
    tensor.data = data;
    tensor.dtype = fusec_rt::DType::f16;
    tensor.shape = std::move(shape);
    return tensor;
  };
  std::vector<fusec_rt::TensorRef> inputs = {ref(0x10, {100, 64}), ref(0x20, {32, 64}),
                                             ref(0x30, {32})};
  std::vector<fusec_rt::TensorRef> outputs = {ref(0x40, {100, 32})};

  SECTION("without a library table the engine says what is missing") {
    fusec_rt::Engine engine(tables.getDesc(), driver);
    REQUIRE(engine.load("image") == fusec_rt::Ok);
    CHECK(engine.run(inputs, outputs, nullptr) == fusec_rt::ErrorState);
    CHECK(llvm::StringRef(engine.lastError()).contains("cuBLASLt"));
  }

  SECTION("the call carries the shape, the epilogue and the pointers") {
    FakeLibrary::calls().clear();
    fusec_rt::Library library = FakeLibrary::get();
    {
      fusec_rt::Engine engine(tables.getDesc(), driver, &library);
      REQUIRE(engine.load("image") == fusec_rt::Ok);
      REQUIRE(engine.run(inputs, outputs, nullptr) == fusec_rt::Ok);
      CHECK(FakeLibrary::created() == 1);
    }
    CHECK(FakeLibrary::created() == 0); // destroyed with the engine
    REQUIRE(FakeLibrary::calls().size() == 1);
    const fusec_rt::MatmulCall &call = FakeLibrary::calls()[0];
    CHECK(call.epilogue == fusec_rt::MatmulCall::ReluBias);
    CHECK(call.transposeB == 1);
    CHECK(call.dtype == fusec_rt::DType::f16);
    CHECK(call.m == 100);
    CHECK(call.n == 32);
    CHECK(call.k == 64);
    CHECK(call.a == 0x10);
    CHECK(call.b == 0x20); // the weight itself, not a transposed copy
    CHECK(call.bias == 0x30);
    CHECK(call.d != 0x40); // %r is an intermediate: exp reads it
  }
}
