//===- ParseKernel.cpp - Kernel functions and stage expressions -----------===//
//
//   kernel  ::= 'kernel' @name '(' buffers ')' '->' '(' buffers ')'
//               ('attributes' attr-dict)? '{' internal* stage* '}'
//               (schedule and launches: see ParseLowered.cpp)
//   internal::= 'internal' %name ':' type
//   stage   ::= %buf '[' var,* ']' '=' (expr | reduce)
//   reduce  ::= 'reduce' combiner '(' expr ')' 'over' '(' (var ':' dim),* ')'
//               'init' literal 'in' dtype
//   expr    ::= precedence climbing over || && (< <= > >= == !=) (+ -) *
//   primary ::= literal | var | %buf '[' expr,* ']' | '(' expr ')' | '!' primary
//             | op '(' expr,* ')' | dtype '(' expr ')' | select(c, a, b)
//             | floordiv(a, b) | mod(a, b) | min(a, b) | max(a, b)
//
// Inside `[...]` and around infix operators an integer is an index constant;
// as an operand of a value operation it is a literal. A literal without a
// dtype takes the dtype of its sibling operands, else the stage's dtype
// (resolved once the stage is read); `f16(0.5)` gives it one explicitly.
//
//===----------------------------------------------------------------------===//
#include "ParserImpl.h"

#include "llvm/ADT/ScopeExit.h"

using namespace fusec;
using fusec::detail::Parser;

bool Parser::parseKernelBuffers(std::vector<KBuffer> &buffers,
                                KBuffer::Role role) {
  if (!expect(Token::LParen, "'('"))
    return false;
  return parseCommaList(Token::RParen, ")", "a buffer", "the buffer list", [&] {
    if (!token.is(Token::LocalName))
      return error("expected a buffer like '%x: f32[4]', found " + describeToken());
    KBuffer buffer;
    buffer.name = token.stringValue;
    buffer.loc = token.getLoc();
    buffer.role = role;
    consume();
    if (!expect(Token::Colon, "':' and the buffer type") || !parseType(buffer.type))
      return false;
    buffers.push_back(std::move(buffer));
    return true;
  });
}

bool Parser::parseKernel(Module &module) {
  consume(); // 'kernel'
  auto kernel = std::make_unique<Kernel>();
  if (!token.is(Token::GlobalName))
    return error("expected a kernel name like '@add', found " + describeToken());
  kernel->name = token.stringValue;
  kernel->loc = token.getLoc();
  consume();
  if (!parseKernelBuffers(kernel->inputs, KBuffer::Input) ||
      !expect(Token::Arrow, "'->' and the kernel results") ||
      !parseKernelBuffers(kernel->outputs, KBuffer::Output))
    return false;
  if (token.isKeyword("attributes")) {
    consume();
    if (!token.is(Token::LBrace))
      return error("expected '{' after 'attributes', found " + describeToken());
    if (!parseAttrDict(kernel->attrs))
      return false;
  }
  if (!expect(Token::LBrace, "'{' to begin the kernel body"))
    return false;
  currentKernel = kernel.get();
  while (token.isKeyword("internal")) {
    consume();
    KBuffer buffer;
    buffer.role = KBuffer::Internal;
    if (!token.is(Token::LocalName))
      return error("expected a buffer name after 'internal', found " + describeToken());
    buffer.name = token.stringValue;
    buffer.loc = token.getLoc();
    consume();
    if (!expect(Token::Colon, "':' and the buffer type") || !parseType(buffer.type))
      return false;
    kernel->internals.push_back(std::move(buffer));
  }
  while (token.is(Token::LocalName))
    if (!parseStage(*kernel))
      return false;
  if (token.isKeyword("schedule") && !parseSchedule(*kernel))
    return false;
  while (token.isKeyword("launch"))
    if (!parseLaunch(*kernel))
      return false;
  if (!expect(Token::RBrace, !kernel->launches.empty() ? "'launch' or '}' to end the kernel"
                             : !kernel->schedule.empty()
                                 ? "'launch' or '}' to end the kernel after its schedule"
                                 : "a stage, 'schedule', 'launch' or '}' to end the kernel"))
    return false;
  currentKernel = nullptr;
  if (!verifyKernel(*kernel, diag)) {
    hasErrored = true;
    return false;
  }
  module.kernels.push_back(std::move(kernel));
  return true;
}

bool Parser::parseStage(Kernel &kernel) {
  KStage stage;
  stage.loc = token.getLoc();
  stage.buffer = token.stringValue;
  const KBuffer *buffer = kernel.findBuffer(stage.buffer);
  if (!buffer)
    return error("stage writes unknown buffer '%" + stage.buffer +
                 "'; declare it as a result or with 'internal'");
  consume();
  if (!expect(Token::LSquare, "'[' and the stage's iteration variables"))
    return false;
  while (!token.is(Token::RSquare)) {
    if (!token.is(Token::BareIdent) || token.spelling.contains('.'))
      return error("expected an iteration variable name, found " + describeToken());
    stage.spatialVars.push_back(token.spelling.str());
    consume();
    if (token.is(Token::Comma))
      consume();
    else if (!token.is(Token::RSquare))
      return error("expected ',' or ']', found " + describeToken());
  }
  consume();
  if (!expect(Token::Equal, "'='"))
    return false;
  untypedLiterals.clear();
  DType expected = buffer->type.getDType();
  llvm::SMLoc bodyLoc = token.getLoc();
  if (token.isKeyword("reduce")) {
    consume();
    if (!token.is(Token::BareIdent))
      return error("expected a combiner (add, multiply, max, min), found " +
                   describeToken());
    stage.combiner = token.spelling.str();
    consume();
    if (!expect(Token::LParen, "'(' before the reduced expression"))
      return false;
    bodyLoc = token.getLoc();
    MutableExpr body = parseKExpr(ExprContext::Value);
    if (!body || !expect(Token::RParen, "')' after the reduced expression") ||
        !expectKeyword("over") || !expect(Token::LParen, "'(' before the reduction variables"))
      return false;
    while (!token.is(Token::RParen)) {
      if (!token.is(Token::BareIdent) || token.spelling.contains('.'))
        return error("expected a reduction variable, found " + describeToken());
      std::string var = token.spelling.str();
      consume();
      Dim extent;
      if (!expect(Token::Colon, "':' and the extent") || !parseDim(extent))
        return false;
      stage.reduceVars.push_back({var, extent});
      if (token.is(Token::Comma))
        consume();
      else if (!token.is(Token::RParen))
        return error("expected ',' or ')', found " + describeToken());
    }
    consume();
    Attr init;
    if (!expectKeyword("init"))
      return false;
    if (!parseLiteral(init))
      return error("expected the init value, found " + describeToken());
    if (!expectKeyword("in"))
      return false;
    std::optional<DType> accumulate =
        token.is(Token::BareIdent) ? parseDType(token.spelling) : std::nullopt;
    if (!accumulate)
      return error("expected the accumulation dtype, found " + describeToken());
    consume();
    stage.accumulate = *accumulate;
    std::string problem = checkLiteralForDType(init, *accumulate);
    if (!problem.empty())
      return errorAt(init.loc, problem);
    stage.setInit(init.kind == Attr::Bool ? init.boolValue : init.asDouble());
    if (init.kind == Attr::Int)
      stage.intInit = init.intValue; // exact beyond 2^53
    // Bare literals in the body take the dtype of the values they meet; a
    // body of literals only is computed in the accumulation dtype.
    expected = *accumulate;
    stage.body = body;
    if (!resolveDTypes(*body, expected, bodyLoc))
      return false;
  } else {
    MutableExpr body = parseKExpr(ExprContext::Value);
    if (!body || !resolveDTypes(*body, expected, bodyLoc))
      return false;
    stage.body = body;
  }
  kernel.stages.push_back(std::move(stage));
  return true;
}

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

static int binaryPrecedence(Token::Kind kind, KExpr::Kind &op) {
  switch (kind) {
  case Token::OrOr: op = KExpr::Or; return 1;
  case Token::AndAnd: op = KExpr::And; return 2;
  case Token::Less: op = KExpr::Lt; return 3;
  case Token::LessEq: op = KExpr::Le; return 3;
  case Token::Greater: op = KExpr::Gt; return 3;
  case Token::GreaterEq: op = KExpr::Ge; return 3;
  case Token::EqEq: op = KExpr::Eq; return 3;
  case Token::NotEq: op = KExpr::Ne; return 3;
  case Token::Plus: op = KExpr::Add; return 4;
  case Token::Minus: op = KExpr::Sub; return 4;
  case Token::Star: op = KExpr::Mul; return 5;
  default: return 0;
  }
}

Parser::MutableExpr Parser::parseKExpr(ExprContext context) {
  if (!enterNesting(kMaxExprNestingDepth))
    return nullptr;
  MutableExpr result = parseKBinary(context, 1);
  --nestingDepth;
  return result;
}

Parser::MutableExpr Parser::parseKBinary(ExprContext context, int minPrecedence) {
  MutableExpr lhs = parseKUnary(context);
  // Each link of a left-associative chain (`i0 + 1 + 1 ...`) deepens the
  // tree by one level: it counts as nesting, so that the passes' recursive
  // walks cannot overflow the stack.
  unsigned links = 0;
  auto leave = llvm::make_scope_exit([&] { nestingDepth -= links; });
  while (lhs) {
    KExpr::Kind op;
    int precedence = binaryPrecedence(token.kind, op);
    // `i0 -1` lexes the `-1` as a number; read it as a subtraction.
    bool negativeLiteral = token.is(Token::Integer) && token.spelling.startswith("-");
    if (negativeLiteral) {
      op = KExpr::Sub;
      precedence = 4;
    }
    if (precedence == 0 || precedence < minPrecedence)
      return lhs;
    if (context == ExprContext::Value)
      return error("infix operators work on indices; use a value operation "
                   "such as add(...) or convert with a cast such as f32(...)"),
             nullptr;
    if (!enterNesting(kMaxExprNestingDepth))
      return nullptr;
    ++links;
    MutableExpr rhs;
    if (negativeLiteral) {
      if (token.intValue == INT64_MIN) // i - 2^63: no int64 holds 2^63
        return error("the index constant " + token.spelling.drop_front().str() +
                     " does not fit int64"),
               nullptr;
      rhs = std::make_shared<KExpr>(*KExpr::intConst(-token.intValue));
      consume();
    } else {
      consume();
      // Comparisons do not chain; the other operators are left-associative.
      rhs = parseKBinary(ExprContext::Index, precedence + 1);
    }
    if (!rhs)
      return nullptr;
    llvm::SMLoc start = lhs->loc;
    lhs = std::const_pointer_cast<KExpr>(KExpr::binary(op, lhs, rhs));
    lhs->loc = start;
  }
  return lhs;
}

Parser::MutableExpr Parser::parseKUnary(ExprContext context) {
  llvm::SMLoc start = token.getLoc();
  MutableExpr e;
  if (token.is(Token::Bang)) {
    consume();
    if (!enterNesting(kMaxExprNestingDepth))
      return nullptr;
    MutableExpr operand = parseKUnary(ExprContext::Index);
    --nestingDepth;
    if (!operand)
      return nullptr;
    e = std::const_pointer_cast<KExpr>(KExpr::binary(KExpr::Not, operand, nullptr));
  } else {
    e = parseKPrimary(context);
  }
  if (e && !e->loc.isValid()) // a parenthesized expression keeps its own
    e->loc = start;
  return e;
}

Parser::MutableExpr Parser::parseKPrimary(ExprContext context) {
  Attr literal;
  if (token.is(Token::Integer) && context != ExprContext::Value) {
    auto e = std::const_pointer_cast<KExpr>(KExpr::intConst(token.intValue));
    consume();
    return e;
  }
  if (parseLiteral(literal)) {
    auto e = std::const_pointer_cast<KExpr>(KExpr::literal(
        literal.kind == Attr::Bool ? literal.boolValue : literal.asDouble(),
        literal.kind == Attr::Bool ? DType::boolean : DType::f32));
    if (literal.kind != Attr::Bool)
      untypedLiterals.push_back(e.get());
    literalKinds[e.get()] = literal;
    return e;
  }
  if (token.is(Token::LParen)) {
    consume();
    MutableExpr inner = parseKExpr(context == ExprContext::Value ? ExprContext::Any : context);
    if (!inner || !expect(Token::RParen, "')'"))
      return nullptr;
    return inner;
  }
  if (token.is(Token::LocalName)) {
    std::string name = token.stringValue;
    const KBuffer *buffer = currentKernel->findBuffer(name);
    if (!buffer)
      return error("unknown buffer '%" + name + "'"), nullptr;
    consume();
    if (!expect(Token::LSquare, "'[' and the indices of '%" + name + "'"))
      return nullptr;
    std::vector<KExprPtr> indices;
    while (!token.is(Token::RSquare)) {
      MutableExpr index = parseKExpr(ExprContext::Index);
      if (!index)
        return nullptr;
      indices.push_back(index);
      if (token.is(Token::Comma))
        consume();
      else if (!token.is(Token::RSquare))
        return error("expected ',' or ']' in the indices, found " + describeToken()),
               nullptr;
    }
    consume();
    return std::const_pointer_cast<KExpr>(
        KExpr::load(name, std::move(indices), buffer->type.getDType()));
  }
  if (!token.is(Token::BareIdent))
    return error("expected an expression, found " + describeToken()), nullptr;
  std::string head = token.spelling.str();
  llvm::SMLoc headLoc = token.getLoc();
  consume();
  if (!token.is(Token::LParen)) {
    if (context == ExprContext::Value)
      return errorAt(headLoc, "'" + head + "' is an index in a value position; "
                                           "convert it with a cast such as f32(" +
                                           head + ")"),
             nullptr;
    return std::const_pointer_cast<KExpr>(KExpr::var(head));
  }
  consume(); // '('
  std::vector<MutableExpr> args;
  auto parseArgs = [&](ExprContext argContext, size_t count) {
    for (size_t i = 0; i < count; ++i) {
      if (i && !expect(Token::Comma, "',' between operands"))
        return false;
      MutableExpr arg = parseKExpr(i == 0 && head == "select" ? ExprContext::Any : argContext);
      if (!arg)
        return false;
      args.push_back(arg);
    }
    return expect(Token::RParen, "')' after the operands of '" + head + "'");
  };
  if (std::optional<DType> dtype = parseDType(head)) {
    if (!parseArgs(ExprContext::Any, 1))
      return nullptr;
    auto it = std::find(untypedLiterals.begin(), untypedLiterals.end(), args[0].get());
    if (it != untypedLiterals.end()) { // `f16(0.5)`: a typed literal
      untypedLiterals.erase(it);
      std::string problem = checkLiteralForDType(literalKinds[args[0].get()], *dtype);
      if (!problem.empty())
        return errorAt(headLoc, problem), nullptr;
      typeLiteral(*args[0], *dtype);
      return args[0];
    }
    return std::const_pointer_cast<KExpr>(KExpr::cast(args[0], *dtype));
  }
  static const std::pair<const char *, KExpr::Kind> indexFunctions[] = {
      {"floordiv", KExpr::FloorDiv}, {"mod", KExpr::Mod},
      {"min", KExpr::Min}, {"max", KExpr::Max}};
  // `max`/`min` in a value position are the combiners' value operations
  // (as the lowered form writes a reduction step); elsewhere index functions.
  bool valueCombiner = context == ExprContext::Value && (head == "max" || head == "min");
  for (const auto &[name, kind] : indexFunctions)
    if (head == name && !valueCombiner) {
      if (!parseArgs(ExprContext::Index, 2))
        return nullptr;
      return std::const_pointer_cast<KExpr>(KExpr::binary(kind, args[0], args[1]));
    }
  if (head == "select") {
    // A select in a condition (Any) may choose between indices or values.
    ExprContext branch = context == ExprContext::Value ? ExprContext::Value : context;
    if (!parseArgs(branch, 3))
      return nullptr;
    // In Any context (under a cast), an integer branch was read as an index
    // constant; beside a value branch it is a value literal, typed like it.
    auto isValue = [](const KExpr &e) {
      return e.kind == KExpr::Load || e.kind == KExpr::Call || e.kind == KExpr::Cast ||
             e.kind == KExpr::Literal || e.kind == KExpr::Select;
    };
    for (int i : {1, 2})
      if (args[i]->kind == KExpr::IntConst && isValue(*args[3 - i])) {
        Attr literal = Attr::makeInt(args[i]->intValue);
        auto value = std::const_pointer_cast<KExpr>(
            KExpr::literal(double(args[i]->intValue), DType::f32));
        untypedLiterals.push_back(value.get());
        literalKinds[value.get()] = literal;
        args[i] = value;
      }
    auto e = std::const_pointer_cast<KExpr>(KExpr::select(args[0], args[1], args[2]));
    return e;
  }
  const KernelOpInfo *op = lookupKernelOp(head);
  if (!op)
    return errorAt(headLoc, "unknown kernel operation '" + head + "'"), nullptr;
  if (!parseArgs(ExprContext::Value, op->arity))
    return nullptr;
  std::vector<KExprPtr> operands(args.begin(), args.end());
  return std::const_pointer_cast<KExpr>(KExpr::call(head, operands, args[0]->dtype));
}

void Parser::typeLiteral(KExpr &e, DType dtype) {
  const Attr &written = literalKinds[&e];
  e.dtype = dtype;
  e.floatValue = roundToDType(e.floatValue, dtype);
  if (isIntDType(dtype) || dtype == DType::boolean)
    e.intValue = written.kind == Attr::Int ? written.intValue : saturatingInt64(e.floatValue);
}

/// The dtype `e` has regardless of context, if any.
static std::optional<DType> intrinsicDType(const KExpr &e,
                                           const std::vector<KExpr *> &untyped) {
  switch (e.kind) {
  case KExpr::Literal:
    if (std::find(untyped.begin(), untyped.end(), &e) != untyped.end())
      return std::nullopt;
    return e.dtype;
  case KExpr::Call: {
    const KernelOpInfo *op = lookupKernelOp(e.name);
    if (op && op->returnsBool)
      return DType::boolean;
    for (const KExprPtr &arg : e.args)
      if (auto dtype = intrinsicDType(*arg, untyped))
        return dtype;
    return std::nullopt;
  }
  case KExpr::Select:
    if (auto dtype = intrinsicDType(*e.args[1], untyped))
      return dtype;
    return intrinsicDType(*e.args[2], untyped);
  default:
    return e.dtype;
  }
}

bool Parser::resolveDTypes(KExpr &e, std::optional<DType> expected,
                           llvm::SMLoc loc) {
  auto resolveArg = [&](size_t i, std::optional<DType> want) {
    return resolveDTypes(const_cast<KExpr &>(*e.args[i]), want, loc);
  };
  switch (e.kind) {
  case KExpr::Literal: {
    auto it = std::find(untypedLiterals.begin(), untypedLiterals.end(), &e);
    if (it == untypedLiterals.end())
      return true;
    if (!expected)
      return errorAt(loc, "cannot infer the dtype of literal '" +
                              literalKinds[&e].str() +
                              "'; write it with a dtype, e.g. f32(" +
                              literalKinds[&e].str() + ")");
    std::string problem = checkLiteralForDType(literalKinds[&e], *expected);
    if (!problem.empty())
      return errorAt(loc, problem);
    untypedLiterals.erase(it);
    typeLiteral(e, *expected);
    return true;
  }
  case KExpr::Call: {
    const KernelOpInfo *op = lookupKernelOp(e.name);
    std::optional<DType> operandDType;
    for (const KExprPtr &arg : e.args)
      if (!operandDType)
        operandDType = intrinsicDType(*arg, untypedLiterals);
    if (!operandDType && !op->returnsBool)
      operandDType = expected;
    if (e.name == "logical_and" || e.name == "logical_or" || e.name == "logical_not")
      operandDType = DType::boolean;
    for (size_t i = 0; i < e.args.size(); ++i)
      if (!resolveArg(i, operandDType))
        return false;
    e.dtype = op->returnsBool ? DType::boolean : e.args[0]->dtype;
    return true;
  }
  case KExpr::Select: {
    std::optional<DType> branch = intrinsicDType(e, untypedLiterals);
    if (!branch)
      branch = expected;
    if (!resolveArg(0, DType::boolean) || !resolveArg(1, branch) || !resolveArg(2, branch))
      return false;
    e.dtype = e.args[1]->dtype;
    return true;
  }
  default:
    for (size_t i = 0; i < e.args.size(); ++i)
      if (!resolveArg(i, intrinsicDType(*e.args[i], untypedLiterals)))
        return false;
    return true;
  }
}
