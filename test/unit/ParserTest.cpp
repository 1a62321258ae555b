//===- ParserTest.cpp - Parsing API: module structure and names -----------===//
#include "TestUtil.h"

#include <catch2/catch.hpp>

using namespace fusec;
using fusec::test::Parsed;

static std::vector<std::string> operandNames(const Binding &binding) {
  std::vector<std::string> names;
  for (const Operand &operand : binding.operands)
    names.push_back(operand.isLiteral() ? "literal " + operand.literal.str()
                                        : operand.value->name);
  return names;
}

TEST_CASE("module header, functions, parameters and return types", "[parser]") {
  Parsed parsed(R"fir(
module @exp_chain   // optional header

func @main(%x: f16[4096,1], %b: f16[4096,4096], %s: i64[]) -> f16[4096,4096] {
  %y = add(%b, %x)
  return %y
}

func @pair(%a: f32[n,128], %c: bool[n]) -> (f32[n,128], bool[n]) {
  return (%a, %c)
}
)fir");
  REQUIRE(parsed.module);
  CHECK(parsed.diags.empty());
  const Module &module = *parsed.module;
  CHECK(module.name == "exp_chain");
  REQUIRE(module.functions.size() == 2);
  CHECK(module.lookupFunction("pair") == module.functions[1].get());
  CHECK(module.lookupFunction("nope") == nullptr);

  const Function &main = *module.functions[0];
  CHECK(main.name == "main");
  REQUIRE(main.params.size() == 3);
  CHECK(main.params[0]->name == "x");
  CHECK(main.params[0]->type.str() == "f16[4096,1]");
  CHECK(main.params[1]->type.str() == "f16[4096,4096]");
  CHECK(main.params[2]->type.str() == "i64[]");
  CHECK(main.params[2]->type.getRank() == 0);
  CHECK(main.params[0]->definingBinding == nullptr);
  CHECK(main.returnType.str() == "f16[4096,4096]");
  CHECK_FALSE(main.returnsTuple);
  REQUIRE(main.returnValues.size() == 1);
  CHECK(main.returnValues[0].value->name == "y");

  const Function &pair = *module.functions[1];
  CHECK(pair.params[0]->type.getShape()[0].isSymbolic());
  CHECK(pair.params[0]->type.getShape()[0].symbol == "n");
  CHECK(pair.params[0]->type.getShape()[1] == Dim::of(128));
  CHECK(pair.returnType.isTuple());
  CHECK(pair.returnType.str() == "(f32[n,128], bool[n])");
  CHECK(pair.returnsTuple);
  CHECK(pair.returnValues.size() == 2);
  CHECK(pair.body.empty());

  SECTION("the module header is optional") {
    Parsed bare("func @f(%x: f32[]) -> f32[] {\n  return %x\n}\n");
    REQUIRE(bare.module);
    CHECK(bare.module->name.empty());
  }
}

TEST_CASE("function attributes", "[parser]") {
  Parsed parsed(R"fir(
func @fused(%x: f32[4]) -> f32[4] attributes {primitive = true, composite = "cublaslt.matmul_bias_relu", codegen = "cublaslt", n = 3, eps = 1e-5, l = [1, 2]} {
  return %x
}
func @plain(%x: f32[4]) -> f32[4] attributes {primitive = false} {
  return %x
}
)fir");
  REQUIRE(parsed.module);
  const Function &fused = parsed.function(0);
  const auto &entries = fused.attrs.getEntries();
  REQUIRE(entries.size() == 6);
  CHECK(entries[0].name == "primitive"); // order is kept
  CHECK(entries[5].name == "l");
  CHECK(fused.attrs.get("primitive")->kind == Attr::Bool);
  CHECK(fused.attrs.get("primitive")->boolValue);
  CHECK(fused.attrs.get("composite")->kind == Attr::String);
  CHECK(fused.attrs.get("composite")->text == "cublaslt.matmul_bias_relu");
  CHECK(fused.attrs.get("n")->intValue == 3);
  CHECK(fused.attrs.get("eps")->floatValue == 1e-5);
  CHECK(fused.attrs.get("l")->str() == "[1, 2]");
  CHECK(fused.isGroupedFunction());
  CHECK_FALSE(parsed.function(1).isGroupedFunction());
}

TEST_CASE("dataflow blocks, outputs and bindings keep their names", "[parser]") {
  Parsed parsed(R"fir(
func @main(%x: f16[4096,1], %b: f16[4096,4096]) -> f16[4096,4096] {
  dataflow {
    %0 = multiply(%x, 0.5) : f16[4096,1]
    %007 = subtract(%x, %0)
    %7 = exp(%007)
    %gelu_out = add(%b, %7)
    %a.b$c-d = nn.relu(%gelu_out)
    output %gelu_out, %a.b$c-d
  }
  dataflow {
  }
  %z = add(%gelu_out, %a.b$c-d)
  return %z
}
)fir");
  REQUIRE(parsed.module);
  const Function &main = parsed.function();
  REQUIRE(main.body.size() == 3);
  REQUIRE(main.body[0].block);
  CHECK_FALSE(main.body[0].binding);
  const DataflowBlock &block = *main.body[0].block;
  REQUIRE(block.bindings.size() == 5);
  std::vector<std::string> names;
  for (const auto &binding : block.bindings)
    names.push_back(binding->getResult()->name);
  CHECK(names == std::vector<std::string>{"0", "007", "7", "gelu_out", "a.b$c-d"});
  CHECK(block.hasOutputClause);
  REQUIRE(block.outputs.size() == 2);
  CHECK(block.outputs[0]->name == "gelu_out");
  CHECK(block.outputs[1] == block.bindings[4]->getResult());

  SECTION("an empty block is allowed") {
    REQUIRE(main.body[1].block);
    CHECK(main.body[1].block->bindings.empty());
    CHECK_FALSE(main.body[1].block->hasOutputClause);
  }
  SECTION("bindings record op, operands, literal and types") {
    const Binding &mul = *block.bindings[0];
    CHECK(mul.kind == ExprKind::Op);
    CHECK(mul.callee == "multiply");
    CHECK(operandNames(mul) == std::vector<std::string>{"x", "literal 0.5"});
    CHECK(mul.operands[1].isLiteral());
    CHECK(mul.operands[1].literal.kind == Attr::Float);
    REQUIRE(mul.writtenType);
    CHECK(mul.writtenType->str() == "f16[4096,1]");
    CHECK(mul.getType().str() == "f16[4096,1]");
    CHECK(mul.getResult()->definingBinding == &mul);
    // %007 and %7 are different values.
    CHECK(operandNames(*block.bindings[2]) == std::vector<std::string>{"007"});
    CHECK(block.bindings[1]->getResult() != block.bindings[2]->getResult());
    CHECK_FALSE(block.bindings[1]->writtenType);
    CHECK(block.bindings[3]->getType().str() == "f16[4096,4096]");
  }
  SECTION("a binding outside any block") {
    REQUIRE(main.body[2].binding);
    CHECK(operandNames(*main.body[2].binding) ==
          std::vector<std::string>{"gelu_out", "a.b$c-d"});
    CHECK(main.returnValues[0].value == main.body[2].binding->getResult());
  }
  SECTION("forEachBinding visits blocks and loose bindings in order") {
    std::vector<std::string> visited;
    main.forEachBinding([&](const Binding &b) { visited.push_back(b.getResult()->name); });
    CHECK(visited == std::vector<std::string>{"0", "007", "7", "gelu_out", "a.b$c-d", "z"});
  }
}

TEST_CASE("op attributes: every value kind, axis normalized to a list", "[parser]") {
  Parsed parsed(R"fir(
func @f(%x: f32[n,8,4], %h: f16[2,3]) -> f32[n,32] {
  %s = sum(%x) {axis = 1, keepdims = true}
  %c = astype(%h) {dtype = "f32"}
  %k = clip(%x) {min = -inf, max = 6.5}
  %r = reshape(%x) {shape = [n, -1]}
  return %r
}
)fir");
  REQUIRE(parsed.module);
  const Attr *axis = parsed.binding("s")->attrs.get("axis");
  REQUIRE(axis);
  CHECK(axis->kind == Attr::List);
  CHECK(axis->str() == "[1]");
  CHECK(parsed.binding("s")->attrs.get("keepdims")->boolValue);
  CHECK(parsed.binding("s")->getType().str() == "f32[n,1,4]");
  CHECK(parsed.binding("c")->attrs.get("dtype")->text == "f32");
  CHECK(parsed.binding("c")->getType().str() == "f32[2,3]");
  const Attr *min = parsed.binding("k")->attrs.get("min");
  CHECK(min->kind == Attr::Float);
  CHECK(std::isinf(min->floatValue));
  const Attr *shape = parsed.binding("r")->attrs.get("shape");
  REQUIRE(shape->list.size() == 2);
  CHECK(shape->list[0].kind == Attr::Ident);
  CHECK(shape->list[0].text == "n");
  CHECK(shape->list[1].kind == Attr::Int);
  CHECK(shape->list[1].intValue == -1);
  CHECK(printBinding(*parsed.binding("r")) ==
        "%r = reshape(%x) {shape = [n, -1]} : f32[n,32]");
  CHECK(printBinding(*parsed.binding("s")) ==
        "%s = sum(%x) {axis = [1], keepdims = true} : f32[n,1,4]");
}

TEST_CASE("tuples, get, alias, call and call_extern", "[parser]") {
  Parsed parsed(R"fir(
func @main(%a: f32[8], %b: f16[2,2]) -> (f32[8], f16[2,2]) {
  %t = tuple(%a, %b)
  %one = tuple(%a)
  %none = tuple()
  %g = get(%t, 1)
  %gv = %a
  %c = call @helper(%a)
  %e = call_extern "cublaslt.matmul_bias_relu"(%b, %b) {alpha = 1.0, tag = "x\"y"} : f16[2,2]
  return (%c, %e)
}
func @helper(%v: f32[n]) -> f32[n] {
  return %v
}
)fir");
  REQUIRE(parsed.module);
  const Binding &t = *parsed.binding("t");
  CHECK(t.kind == ExprKind::Tuple);
  CHECK(t.getType().str() == "(f32[8], f16[2,2])");
  CHECK(parsed.binding("one")->getType().str() == "(f32[8])");
  CHECK(parsed.binding("one")->getType().getFields().size() == 1);
  CHECK(parsed.binding("none")->getType().str() == "()");
  const Binding &g = *parsed.binding("g");
  CHECK(g.kind == ExprKind::Get);
  CHECK(g.tupleIndex == 1);
  CHECK(g.operands[0].value == t.getResult());
  CHECK(g.getType().str() == "f16[2,2]");
  const Binding &gv = *parsed.binding("gv");
  CHECK(gv.kind == ExprKind::Alias);
  CHECK(gv.operands[0].value->name == "a");
  CHECK(gv.getType().str() == "f32[8]");
  const Binding &c = *parsed.binding("c");
  CHECK(c.kind == ExprKind::Call);
  CHECK(c.callee == "helper"); // defined later in the module
  CHECK(c.getType().str() == "f32[8]"); // n bound to 8 at the call
  const Binding &e = *parsed.binding("e");
  CHECK(e.kind == ExprKind::CallExtern);
  CHECK(e.callee == "cublaslt.matmul_bias_relu");
  CHECK(e.attrs.get("tag")->text == "x\"y");
  CHECK(e.getType().str() == "f16[2,2]");
  CHECK(e.headName() == "call_extern \"cublaslt.matmul_bias_relu\"");
  CHECK(printBinding(e) == "%e = call_extern \"cublaslt.matmul_bias_relu\"(%b, %b) "
                           "{alpha = 1.0, tag = \"x\\\"y\"} : f16[2,2]");
  CHECK(printBinding(g) == "%g = get(%t, 1) : f16[2,2]");
  CHECK(printBinding(gv) == "%gv = %a : f32[8]");
}

TEST_CASE("literal operands take the dtype of the other operands", "[parser]") {
  Parsed parsed(R"fir(
func @f(%x: f16[4], %i: i32[4], %c: bool[4]) -> f16[4] {
  %a = add(1.0, %x)
  %b = multiply(%i, 3)
  %w = where(%c, %x, 0.0)
  %v = where(true, %x, nan)
  %m = maximum(%x, -inf)
  return %w
}
)fir");
  REQUIRE(parsed.module);
  CHECK(parsed.binding("a")->getType().str() == "f16[4]");
  CHECK(parsed.binding("b")->getType().str() == "i32[4]");
  CHECK(parsed.binding("w")->getType().str() == "f16[4]");
  CHECK(parsed.binding("v")->getType().str() == "f16[4]");
  CHECK(std::isnan(parsed.binding("v")->operands[2].literal.floatValue));
  CHECK(parsed.binding("v")->operands[0].literal.kind == Attr::Bool);
  CHECK(std::isinf(parsed.binding("m")->operands[1].literal.floatValue));
}

TEST_CASE("the verifier rejects a value name that would not parse back", "[parser]") {
  test::Parsed parsed(R"FIR(
func @main(%x: f32[4]) -> f32[4] {
  dataflow {
    %7 = exp(%x)
    output %7
  }
  return %7
}
)FIR");
  REQUIRE(parsed.module);
  llvm::SourceMgr sourceMgr;
  DiagEngine diag(sourceMgr);
  std::vector<std::string> messages;
  diag.setHandler([&](const llvm::SMDiagnostic &d) { messages.push_back(d.getMessage().str()); });
  CHECK(verifyModule(*parsed.module, diag));
  // What a pass that appends a suffix to a numeric name would write.
  parsed.module->functions.front()->forEachBinding(
      [](Binding &binding) { binding.getResult()->name = "7_1"; });
  CHECK_FALSE(verifyModule(*parsed.module, diag));
  REQUIRE(!messages.empty());
  CHECK(llvm::StringRef(messages.back()).contains("'%7_1' is not a value name that parses back"));
}
