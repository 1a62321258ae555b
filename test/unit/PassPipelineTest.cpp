//===- PassPipelineTest.cpp - Pipeline text parsing and printing ----------===//
#include "fusec/Pass/Pass.h"

#include <catch2/catch.hpp>

using namespace fusec;

static std::unique_ptr<PassManager> parse(const char *text, PipelineError &error) {
  registerAllPasses();
  return parsePassPipeline(text, error);
}

TEST_CASE("pipeline text round-trips", "[pass][pipeline]") {
  PipelineError error;
  auto manager = parse("dce, dce", error);
  REQUIRE(manager);
  CHECK(manager->size() == 2);
  CHECK(manager->str() == "dce,dce");
  PipelineError again;
  auto reparsed = parse(manager->str().c_str(), again);
  REQUIRE(reparsed);
  CHECK(reparsed->str() == manager->str());
}

TEST_CASE("an empty pipeline runs no pass", "[pass][pipeline]") {
  PipelineError error;
  auto manager = parse("", error);
  REQUIRE(manager);
  CHECK(manager->size() == 0);
  CHECK(manager->str().empty());
}

TEST_CASE("pipeline errors point at the offending column", "[pass][pipeline]") {
  PipelineError error;
  SECTION("unknown pass with a suggestion") {
    CHECK_FALSE(parse("dce,dcee", error));
    CHECK(error.column == 4);
    CHECK(error.message == "unknown pass 'dcee'; did you mean 'dce'?");
  }
  SECTION("options on a pass without options") {
    CHECK_FALSE(parse("dce{x=1}", error));
    CHECK(error.column == 4);
    CHECK(error.message == "unknown option 'x' for pass 'dce' (it has no options)");
  }
  SECTION("unbalanced braces") {
    CHECK_FALSE(parse("dce{", error));
    CHECK(error.column == 3);
  }
  SECTION("missing separator") {
    CHECK_FALSE(parse("dce dce", error));
    CHECK(error.column == 4);
  }
  SECTION("trailing comma") {
    CHECK_FALSE(parse("dce,", error));
    CHECK(error.message == "expected a pass name at the end of the pipeline");
  }
}

TEST_CASE("named pipelines follow spec section 7", "[pass][pipeline]") {
  CHECK(getNamedPipeline("O0") == "legalize,schedule,lower");
  CHECK(getNamedPipeline("O1") ==
        "legalize,annotate-pattern,fuse-ops,fuse-tir,schedule,lower");
  // -O2 gives matmuls to cuBLASLt first, with the shipped patterns, and
  // schedules with the cost model; --cost-model=none gives TVM's schedules.
  CHECK(getNamedPipeline("O2") ==
        "fuse-by-pattern{patterns=@cublaslt,bind-constants=true,annotate-codegen=true,"
        "prologue-aware=true,target=sm_90},"
        "legalize,annotate-pattern,fuse-ops{prologue=true,recompute-veto=true,target=sm_90},"
        "fuse-tir,"
        "schedule{cost-model=roofline,target=sm_90},lower");
  CHECK(getNamedPipeline("O2", "none") ==
        "fuse-by-pattern{patterns=@cublaslt,bind-constants=true,annotate-codegen=true},"
        "legalize,annotate-pattern,fuse-ops,fuse-tir,schedule,lower");
  CHECK(getNamedPipeline("O2", "roofline", "h200").find("target=h200") != std::string::npos);
  CHECK(getNamedPipeline("O3").empty());
  // A GPU without mma.sync m16n8k16 (before sm_80): every schedule SIMT.
  CHECK(getNamedPipeline("O0", "roofline", "sm_75", false) ==
        "legalize,schedule{tensor-cores=false},lower");
  CHECK(getNamedPipeline("O1", "roofline", "sm_75", false) ==
        "legalize,annotate-pattern,fuse-ops,fuse-tir,schedule{tensor-cores=false},lower");
  CHECK(getNamedPipeline("O2", "roofline", "sm_75", false)
            .find("schedule{cost-model=roofline,target=sm_75,tensor-cores=false}") !=
        std::string::npos);
  CHECK(getNamedPipeline("O2", "none", "sm_75", false)
            .find(",schedule{tensor-cores=false},lower") != std::string::npos);
}
