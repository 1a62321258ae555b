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
        "legalize,annotate-pattern,fuse-ops{prologue=true,recompute-veto=true,merge-reductions="
        "true,target=sm_90},"
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

TEST_CASE("quoted option values round-trip", "[pass][pipeline]") {
  PipelineError error;
  auto manager = parse(R"(fuse-by-pattern{patterns="a b,{c}\"d\\.pat" bind-constants=false})", error);
  REQUIRE(manager);
  std::string text = manager->str();
  CHECK(text == R"(fuse-by-pattern{patterns="a b,{c}\"d\\.pat",bind-constants=false,)"
                R"(annotate-codegen=false,prologue-aware=false,target=sm_90})");
  PipelineError again;
  auto reparsed = parse(text.c_str(), again);
  REQUIRE(reparsed);
  CHECK(reparsed->str() == text);
}

TEST_CASE("values are quoted only when they need it", "[pass][pipeline]") {
  CHECK(quotePipelineValue("sm_90") == "sm_90");
  CHECK(quotePipelineValue("") == "");
  CHECK(quotePipelineValue("dir/x.json") == "dir/x.json");
  CHECK(quotePipelineValue("a b") == "\"a b\"");
  CHECK(quotePipelineValue("a,b") == "\"a,b\"");
  CHECK(quotePipelineValue("a}") == "\"a}\"");
  CHECK(quotePipelineValue("\"a") == R"("\"a")");
  CHECK(quotePipelineValue(R"(a\b)") == R"("a\\b")");
}

TEST_CASE("named pipelines quote a target path", "[pass][pipeline]") {
  std::string text = getNamedPipeline("O2", "roofline", "my dir/t,1.json");
  CHECK(text.find(R"(target="my dir/t,1.json")") != std::string::npos);
  PipelineError error;
  auto manager = parse(text.c_str(), error);
  INFO(error.message);
  REQUIRE(manager);
  CHECK(manager->size() == 7);
}

TEST_CASE("bad option values are caught at parse time, at the value", "[pass][pipeline]") {
  PipelineError error;
  SECTION("an enumerated value") {
    CHECK_FALSE(parse("schedule{cost-model=bogus}", error));
    CHECK(error.column == 20);
    CHECK(error.message ==
          "option 'cost-model' of pass 'schedule' expects none or roofline, got 'bogus'");
  }
  SECTION("an integer below its range") {
    CHECK_FALSE(parse("fuse-ops{max-merges=-2}", error));
    CHECK(error.column == 20);
    CHECK(error.message == "option 'max-merges' of pass 'fuse-ops' must be at least -1, got -2");
  }
  SECTION("an unknown option still points at its name") {
    CHECK_FALSE(parse("fuse-ops{max-merge=-2}", error));
    CHECK(error.column == 9);
  }
  SECTION("an unterminated quoted value points at its quote") {
    CHECK_FALSE(parse("schedule{target=\"a b}", error));
    CHECK(error.column == 16);
    CHECK(error.message == "unterminated quoted value");
  }
}
