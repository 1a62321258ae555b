//===- LauncherRuntimeTest.cpp - The launcher engine, on a fake driver ----===//
//
// The engine every launcher embeds (include/fusec/Runtime/Runtime.h) runs
// here against a driver that records calls instead of touching a GPU: input
// checks and dim binding, grid sizes, argument order, workspace reuse
// between intermediates whose lifetimes do not overlap, copies of returned
// inputs, and errors returned (never thrown) for bad inputs.
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"
#include "fusec/Pass/Pass.h"
#include "fusec/Target/CUDA.h"

#include <catch2/catch.hpp>

using namespace fusec;

namespace {

struct Recorded {
  std::string function;
  unsigned grid = 0, block = 0;
  std::vector<unsigned long long> pointers;
  std::vector<int64_t> dims;
};

struct FakeDriver {
  static std::vector<Recorded> &launches() {
    static std::vector<Recorded> calls;
    return calls;
  }
  static std::vector<std::pair<unsigned long long, size_t>> &allocations() {
    static std::vector<std::pair<unsigned long long, size_t>> calls;
    return calls;
  }
  static std::vector<std::string> &names() {
    static std::vector<std::string> loaded;
    return loaded;
  }
  static fusec_rt::Driver get() {
    fusec_rt::Driver driver{};
    driver.moduleLoadData = [](void **module, const void *) {
      *module = reinterpret_cast<void *>(0x1);
      return 0;
    };
    driver.moduleUnload = [](void *) { return 0; };
    driver.moduleGetFunction = [](void **function, void *, const char *name) {
      names().push_back(name);
      *function = reinterpret_cast<void *>(names().size());
      return 0;
    };
    driver.memAlloc = [](unsigned long long *pointer, size_t bytes) {
      static unsigned long long next = 0x100000;
      *pointer = next;
      next += (bytes + 0xfffff) / 0x100000 * 0x100000 + 0x100000;
      allocations().push_back({*pointer, bytes});
      return 0;
    };
    driver.memFree = [](unsigned long long) { return 0; };
    driver.memcpyHtoD = [](unsigned long long, const void *, size_t) { return 0; };
    driver.memcpyDtoDAsync = [](unsigned long long, unsigned long long, size_t, void *) {
      launches().push_back({"copy", 0, 0, {}, {}});
      return 0;
    };
    driver.launchKernel = [](void *function, unsigned gx, unsigned, unsigned, unsigned bx,
                             unsigned, unsigned, unsigned, void *, void **params, void **) {
      Recorded call;
      call.function = names()[reinterpret_cast<size_t>(function) - 1];
      call.grid = gx;
      call.block = bx;
      call.pointers.push_back(*static_cast<unsigned long long *>(params[0]));
      launches().push_back(call);
      return 0;
    };
    driver.getErrorString = nullptr;
    driver.ctxSynchronize = [] { return 0; };
    return driver;
  }
};

/// Parses, lowers with `pipeline` and plans `text`'s @main.
struct Planned {
  explicit Planned(const char *text, const char *pipeline) : parsed(text) {
    REQUIRE(parsed.module);
    registerAllPasses();
    PipelineError pipelineError;
    auto manager = parsePassPipeline(pipeline, pipelineError);
    REQUIRE(manager);
    Instrumentation inst;
    REQUIRE(manager->run(*parsed.module, parsed.diag, inst, nullptr) == RunResult::Success);
    std::string error;
    REQUIRE(cuda::buildLaunchPlan(*parsed.module, *parsed.module->lookupFunction("main"), plan,
                                  error));
    tables = std::make_unique<cuda::ModelTables>(plan);
  }
  test::Parsed parsed;
  cuda::LaunchPlan plan;
  std::unique_ptr<cuda::ModelTables> tables;
};

fusec_rt::TensorRef tensor(unsigned long long data, fusec_rt::DType dtype,
                           std::vector<int64_t> shape) {
  fusec_rt::TensorRef ref;
  ref.data = data;
  ref.dtype = dtype;
  ref.shape = std::move(shape);
  return ref;
}

} // namespace

TEST_CASE("launcher engine: binds dims, sizes grids, reuses the workspace") {
  // Unfused (-O0): a chain of four kernels; each intermediate dies at the
  // step after the one that writes it, so the workspace holds two.
  Planned model(R"FIR(
func @main(%x: f32[n,64]) -> f32[n,64] {
  %e = exp(%x)
  %f = negative(%e)
  %g = sqrt(%f)
  %h = abs(%g)
  return %h
}
)FIR",
                "legalize,schedule,lower");
  const cuda::LaunchPlan &plan = model.plan;
  REQUIRE(plan.dimNames == std::vector<std::string>{"n"});
  REQUIRE(plan.steps.size() == 4);
  fusec_rt::Engine engine(model.tables->getDesc(), FakeDriver::get());
  FakeDriver::launches().clear();

  SECTION("a wrong dtype, rank or dim is an error code with a message") {
    std::vector<fusec_rt::TensorRef> inputs = {tensor(0x10, fusec_rt::DType::f16, {8, 64})};
    std::vector<int64_t> dims;
    CHECK(engine.bind(inputs, dims) == fusec_rt::ErrorDType);
    CHECK(engine.lastError() == "input 0 (%x) must be f32, not f16");
    inputs = {tensor(0x10, fusec_rt::DType::f32, {8, 63})};
    CHECK(engine.bind(inputs, dims) == fusec_rt::ErrorShape);
    CHECK(engine.lastError() == "input 0 (%x) dim 1 must be 64, not 63");
    inputs = {tensor(0x10, fusec_rt::DType::f32, {8})};
    CHECK(engine.bind(inputs, dims) == fusec_rt::ErrorShape);
    CHECK(engine.bind({}, dims) == fusec_rt::ErrorArity);
  }

  SECTION("run before load is refused") {
    std::vector<fusec_rt::TensorRef> inputs = {tensor(0x10, fusec_rt::DType::f32, {8, 64})};
    std::vector<fusec_rt::TensorRef> outputs = {tensor(0x20, fusec_rt::DType::f32, {8, 64})};
    CHECK(engine.run(inputs, outputs, nullptr) == fusec_rt::ErrorState);
  }

  SECTION("launches in order with the grid of the bound dims; intermediates share memory") {
    REQUIRE(engine.load("image") == fusec_rt::Ok);
    std::vector<fusec_rt::TensorRef> inputs = {tensor(0x10, fusec_rt::DType::f32, {10, 64})};
    std::vector<std::vector<int64_t>> shapes;
    REQUIRE(engine.outputShapes(inputs, shapes) == fusec_rt::Ok);
    CHECK(shapes == std::vector<std::vector<int64_t>>{{10, 64}});
    std::vector<fusec_rt::TensorRef> outputs = {tensor(0x20, fusec_rt::DType::f32, {10, 64})};
    REQUIRE(engine.run(inputs, outputs, nullptr) == fusec_rt::Ok);
    REQUIRE(FakeDriver::launches().size() == 4);
    // 640 floats, 256 threads x 4 lanes per block: 1 block.
    CHECK(FakeDriver::launches()[0].function == "exp_kernel");
    CHECK(FakeDriver::launches()[0].grid == 1);
    CHECK(FakeDriver::launches()[0].block == 256);
    CHECK(FakeDriver::launches()[0].pointers[0] == 0x10); // the input
    // Three intermediates of 2560 bytes, each dead after the next step:
    // %e and %g can share an offset (lifetimes [0,1] and [2,3]).
    std::vector<int64_t> dims = {10};
    int64_t total = 0;
    std::vector<int64_t> offsets = engine.planWorkspace(dims, total);
    CHECK(total == 2 * 2560);
    // A larger batch needs a larger workspace.
    inputs = {tensor(0x10, fusec_rt::DType::f32, {100, 64})};
    outputs = {tensor(0x20, fusec_rt::DType::f32, {100, 64})};
    REQUIRE(engine.run(inputs, outputs, nullptr) == fusec_rt::Ok);
    CHECK(FakeDriver::launches()[4].grid == 7); // ceil(6400 / 1024)
    // Intermediates past 2^61 bytes are refused, not wrapped around to a
    // small workspace that the kernels would overrun.
    dims = {int64_t(1) << 56};
    engine.planWorkspace(dims, total);
    CHECK(total == -1);
    inputs = {tensor(0x10, fusec_rt::DType::f32, {int64_t(1) << 56, 64})};
    outputs = {tensor(0x20, fusec_rt::DType::f32, {int64_t(1) << 56, 64})};
    CHECK(engine.run(inputs, outputs, nullptr) == fusec_rt::ErrorShape);
    CHECK(FakeDriver::launches().size() == 8);
  }

  SECTION("a wrong output shape is refused") {
    REQUIRE(engine.load("image") == fusec_rt::Ok);
    std::vector<fusec_rt::TensorRef> inputs = {tensor(0x10, fusec_rt::DType::f32, {10, 64})};
    std::vector<fusec_rt::TensorRef> outputs = {tensor(0x20, fusec_rt::DType::f32, {11, 64})};
    CHECK(engine.run(inputs, outputs, nullptr) == fusec_rt::ErrorShape);
  }
}

TEST_CASE("launcher engine: a returned input is copied, a symbolic dim binds once") {
  Planned model(R"FIR(
func @main(%x: f32[n], %y: f32[n]) -> (f32[n], f32[n]) {
  %s = add(%x, %y)
  return (%s, %x)
}
)FIR",
                "legalize,schedule,lower");
  fusec_rt::Engine engine(model.tables->getDesc(), FakeDriver::get());
  REQUIRE(engine.load("image") == fusec_rt::Ok);
  FakeDriver::launches().clear();
  std::vector<fusec_rt::TensorRef> inputs = {tensor(0x10, fusec_rt::DType::f32, {5}),
                                             tensor(0x18, fusec_rt::DType::f32, {5})};
  std::vector<int64_t> unaligned;
  CHECK(engine.bind(inputs, unaligned) == fusec_rt::ErrorAlignment);
  CHECK(engine.lastError() == "input 1 (%y) must be 16-byte aligned (cuMemAlloc's are)");
  inputs[1] = tensor(0x30, fusec_rt::DType::f32, {6});
  std::vector<int64_t> dims;
  CHECK(engine.bind(inputs, dims) == fusec_rt::ErrorShape);
  CHECK(engine.lastError() == "input 1 (%y) dim 0 binds 'n' to 6 but it is already 5");
  inputs[1].shape = {5};
  std::vector<fusec_rt::TensorRef> outputs = {tensor(0x20, fusec_rt::DType::f32, {5}),
                                              tensor(0x40, fusec_rt::DType::f32, {5})};
  REQUIRE(engine.run(inputs, outputs, nullptr) == fusec_rt::Ok);
  REQUIRE(FakeDriver::launches().size() == 2);
  CHECK(FakeDriver::launches()[0].function == "add_kernel");
  CHECK(FakeDriver::launches()[1].function == "copy");
}
