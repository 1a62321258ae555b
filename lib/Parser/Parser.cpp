//===- Parser.cpp - Recursive-descent parser for .fir files ---------------===//
//
// Grammar (spec §3), one token of lookahead:
//
//   module   ::= ('module' @name)? function*
//   function ::= 'func' @name '(' (%p ':' type),* ')' '->' type
//                ('attributes' attr-dict)? '{' item* 'return' ret '}'
//   item     ::= binding | 'dataflow' '{' binding* ('output' %v,+)? '}'
//   binding  ::= %name '=' expr attr-dict? (':' type)?
//   expr     ::= op '(' operand,* ')' | 'constant' const | %alias
//              | 'call' @f '(' ... ')' | 'call_kernel' @k '(' ... ')'
//              | 'call_extern' "name" '(' ... ')' | 'tuple' '(' ... ')'
//              | 'get' '(' %t ',' int ')'
//
// Names are resolved while parsing (use before definition, redefinition and
// dataflow scoping are reported at the offending token); types are inferred
// and checked by `inferTypes` once the whole module is read, since a call
// may name a function defined later.
//
//===----------------------------------------------------------------------===//
#include "ParserImpl.h"
#include "fusec/IR/Ops.h"
#include "fusec/Printer/Printer.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"

#include "llvm/Support/Path.h"

#include <cmath>

using namespace fusec;

using fusec::detail::Parser;


//===----------------------------------------------------------------------===//
// Token handling
//===----------------------------------------------------------------------===//

std::string Parser::describeToken() const {
  if (token.is(Token::Eof))
    return "end of file";
  return "'" + token.spelling.str() + "'";
}

bool Parser::errorAt(llvm::SMLoc loc, const llvm::Twine &message) {
  if (hasErrored)
    return false;
  hasErrored = true;
  diag.error(loc, message);
  return false;
}

bool Parser::error(const llvm::Twine &message) {
  if (hasErrored)
    return false;
  hasErrored = true;
  // A lexical error explains the failure better than what the parser wanted.
  if (token.is(Token::Error)) {
    diag.error(token.getLoc(), token.stringValue, {token.getRange()});
    return false;
  }
  if (token.is(Token::Eof)) {
    diag.error(token.getLoc(), message);
    return false;
  }
  diag.error(token.getLoc(), message, {token.getRange()});
  return false;
}

bool Parser::expect(Token::Kind kind, llvm::StringRef what) {
  if (token.is(kind)) {
    consume();
    return true;
  }
  return error("expected " + what + ", found " + describeToken());
}

bool Parser::expectKeyword(llvm::StringRef word) {
  if (token.isKeyword(word)) {
    consume();
    return true;
  }
  return error("expected '" + word + "', found " + describeToken());
}

//===----------------------------------------------------------------------===//
// Module and functions
//===----------------------------------------------------------------------===//

std::unique_ptr<Module> Parser::parseModule() {
  auto module = std::make_unique<Module>();
  module->sourceDirectory = sourceDirectory;
  // The module's first token (the end of a module of only comments): where
  // an error about the whole module points.
  module->loc = token.getLoc();
  if (token.isKeyword("module")) {
    consume();
    if (!token.is(Token::GlobalName)) {
      error("expected a module name like '@model' after 'module', found " +
            describeToken());
      return nullptr;
    }
    module->name = token.stringValue;
    consume();
  }
  // Functions and kernels share one namespace.
  llvm::StringMap<llvm::SMLoc> globalNames;
  while (!token.is(Token::Eof)) {
    bool isKernel = token.isKeyword("kernel");
    if (!isKernel && !token.isKeyword("func")) {
      error(token.isKeyword("module")
                ? llvm::Twine("'module' must come first and only once")
                : "expected 'func' or 'kernel', found " + describeToken());
      return nullptr;
    }
    if (isKernel ? !parseKernel(*module) : !parseFunction(*module))
      return nullptr;
    std::string name = isKernel ? module->kernels.back()->name
                                : module->functions.back()->name;
    llvm::SMLoc loc = isKernel ? module->kernels.back()->loc
                               : module->functions.back()->loc;
    auto [it, inserted] = globalNames.try_emplace(name, loc);
    if (!inserted) {
      errorAt(loc, "redefinition of '@" + name + "'");
      diag.note(it->second, "previous definition is here");
      return nullptr;
    }
  }
  if (!inferTypes(*module, diag) || !verifyModule(*module, diag))
    return nullptr;
  return module;
}

bool Parser::parseFunction(Module &module) {
  consume(); // 'func'
  auto function = std::make_unique<Function>();
  if (!token.is(Token::GlobalName))
    return error("expected a function name like '@main', found " +
                 describeToken());
  function->name = token.stringValue;
  function->loc = token.getLoc();
  consume();
  definedNames.clear();
  visibleValues.clear();
  hiddenValues.clear();
  if (!expect(Token::LParen, "'('") || !parseParams(*function) ||
      !expect(Token::Arrow, "'->' and the return type"))
    return false;
  function->returnTypeLoc = token.getLoc();
  if (!parseType(function->returnType))
    return false;
  if (token.isKeyword("attributes")) {
    consume();
    if (!token.is(Token::LBrace))
      return error("expected '{' after 'attributes', found " + describeToken());
    if (!parseAttrDict(function->attrs))
      return false;
  }
  if (!expect(Token::LBrace, "'{' to begin the function body") ||
      !parseBody(*function))
    return false;
  module.functions.push_back(std::move(function));
  return true;
}

bool Parser::parseParams(Function &function) {
  if (token.is(Token::RParen)) {
    consume();
    return true;
  }
  while (true) {
    if (!token.is(Token::LocalName))
      return error("expected a parameter like '%x: f32[4]', found " +
                   describeToken());
    auto param = std::make_unique<Value>();
    param->name = token.stringValue;
    param->loc = token.getLoc();
    consume();
    if (!expect(Token::Colon, "':' and the parameter type") ||
        !parseType(param->type) || !defineValue(*param))
      return false;
    function.params.push_back(std::move(param));
    if (token.is(Token::RParen)) {
      consume();
      return true;
    }
    if (!expect(Token::Comma, "',' or ')' in the parameter list"))
      return false;
  }
}

bool Parser::parseBody(Function &function) {
  while (true) {
    if (token.isKeyword("return"))
      return parseReturn(function);
    if (token.isKeyword("dataflow")) {
      if (!parseDataflowBlock(function))
        return false;
      continue;
    }
    if (token.is(Token::LocalName)) {
      auto binding = parseBinding();
      if (!binding)
        return false;
      function.body.push_back({std::move(binding), nullptr});
      continue;
    }
    if (token.isKeyword("output"))
      return error("'output' is only allowed at the end of a dataflow block");
    return error("expected a binding, 'dataflow' or 'return', found " +
                 describeToken());
  }
}

bool Parser::parseDataflowBlock(Function &function) {
  auto block = std::make_unique<DataflowBlock>();
  block->loc = token.getLoc();
  consume(); // 'dataflow'
  if (!expect(Token::LBrace, "'{' after 'dataflow'"))
    return false;
  while (token.is(Token::LocalName)) {
    auto binding = parseBinding();
    if (!binding)
      return false;
    block->bindings.push_back(std::move(binding));
  }
  if (token.isKeyword("output")) {
    block->hasOutputClause = true;
    consume();
    llvm::StringMap<Value *> blockValues;
    for (auto &binding : block->bindings)
      blockValues[binding->result->name] = binding->getResult();
    llvm::StringSet<> listed;
    while (true) {
      if (!token.is(Token::LocalName))
        return error("expected a value name in 'output', found " +
                     describeToken());
      if (!listed.insert(token.stringValue).second)
        return error("'%" + token.stringValue + "' is listed twice in 'output'");
      Value *value = blockValues.lookup(token.stringValue);
      if (!value)
        return error("'output' may only list values defined in this dataflow "
                     "block; '%" + token.stringValue + "' is not");
      block->outputs.push_back(value);
      block->outputLocs.push_back(token.getLoc());
      consume();
      if (!token.is(Token::Comma))
        break;
      consume();
    }
  }
  if (!token.is(Token::RBrace))
    return error(block->hasOutputClause
                     ? "expected '}' after the 'output' list, found " +
                           describeToken()
                     : "expected a binding, 'output' or '}' in the dataflow "
                       "block, found " + describeToken());
  consume();
  // Values of the block that are not outputs go out of scope.
  llvm::DenseSet<const Value *> outputs(block->outputs.begin(), block->outputs.end());
  for (auto &binding : block->bindings) {
    Value *value = binding->getResult();
    if (outputs.count(value))
      continue;
    visibleValues.erase(value->name);
    hiddenValues[value->name] = value->loc;
  }
  function.body.push_back({nullptr, std::move(block)});
  return true;
}

bool Parser::parseReturn(Function &function) {
  function.returnLoc = token.getLoc();
  consume(); // 'return'
  if (token.is(Token::LParen)) {
    function.returnsTuple = true;
    consume();
    while (!token.is(Token::RParen)) {
      Operand operand;
      if (!token.is(Token::LocalName))
        return error("expected a value name in the returned tuple, found " +
                     describeToken());
      if (!parseOperand(operand))
        return false;
      function.returnValues.push_back(operand);
      if (token.is(Token::Comma)) {
        consume();
        if (token.is(Token::RParen))
          return error("expected a value name after ',', found ')'");
      } else if (!token.is(Token::RParen)) {
        return error("expected ',' or ')' in the returned tuple, found " +
                     describeToken());
      }
    }
    consume();
  } else {
    if (!token.is(Token::LocalName))
      return error("expected a value name or a tuple '(...)' after 'return', "
                   "found " + describeToken());
    Operand operand;
    if (!parseOperand(operand))
      return false;
    function.returnValues.push_back(operand);
  }
  return expect(Token::RBrace, "'}' after the return value");
}

//===----------------------------------------------------------------------===//
// Scoping
//===----------------------------------------------------------------------===//

Value *Parser::lookupValue(const Token &nameToken) {
  auto visible = visibleValues.find(nameToken.stringValue);
  if (visible != visibleValues.end())
    return visible->second;
  if (hiddenValues.count(nameToken.stringValue)) {
    error("'%" + nameToken.stringValue +
          "' is defined inside a dataflow block and not listed in its "
          "'output'");
    diag.note(hiddenValues[nameToken.stringValue], "defined here");
    return nullptr;
  }
  error("use of undefined value '%" + nameToken.stringValue + "'");
  return nullptr;
}

bool Parser::defineValue(Value &value) {
  auto [it, inserted] = definedNames.try_emplace(value.name, value.loc);
  if (!inserted) {
    errorAt(value.loc, "redefinition of value '%" + value.name + "'");
    diag.note(it->second, "previous definition is here");
    return false;
  }
  visibleValues[value.name] = &value;
  return true;
}

//===----------------------------------------------------------------------===//
// Bindings
//===----------------------------------------------------------------------===//

std::unique_ptr<Binding> Parser::parseBinding() {
  auto binding = std::make_unique<Binding>();
  binding->result = std::make_unique<Value>();
  binding->result->name = token.stringValue;
  binding->result->loc = token.getLoc();
  binding->result->definingBinding = binding.get();
  consume();
  if (!expect(Token::Equal, "'=' after the value name"))
    return nullptr;
  binding->loc = token.getLoc();
  if (!parseExpression(*binding))
    return nullptr;
  if (token.is(Token::LBrace)) {
    if (binding->kind != ExprKind::Op && binding->kind != ExprKind::Call &&
        binding->kind != ExprKind::CallKernel &&
        binding->kind != ExprKind::CallExtern)
      return error("'" + binding->headName() + "' takes no attributes"), nullptr;
    if (!parseAttrDict(binding->attrs))
      return nullptr;
  }
  if (token.is(Token::Colon)) {
    consume();
    binding->typeLoc = token.getLoc();
    Type type;
    if (!parseType(type))
      return nullptr;
    binding->writtenType = type;
  }
  if (binding->kind == ExprKind::Constant && !checkConstantValue(*binding))
    return nullptr;
  // Defined after the expression: `%x = add(%x, %x)` uses an undefined %x.
  if (!defineValue(*binding->result))
    return nullptr;
  return binding;
}

bool Parser::parseExpression(Binding &binding) {
  binding.calleeLoc = token.getLoc();
  if (token.is(Token::LocalName)) {
    binding.kind = ExprKind::Alias;
    Operand operand;
    if (!parseOperand(operand))
      return false;
    binding.operands.push_back(operand);
    return true;
  }
  if (!token.is(Token::BareIdent))
    return error("expected an operator, 'constant', 'call', 'tuple', 'get' or "
                 "a value after '=', found " + describeToken());
  llvm::StringRef head = token.spelling;
  if (head == "constant") {
    consume();
    return parseConstant(binding);
  }
  if (head == "call" || head == "call_kernel") {
    binding.kind = head == "call" ? ExprKind::Call : ExprKind::CallKernel;
    consume();
    if (!token.is(Token::GlobalName))
      return error("expected a function name like '@f' after '" + head +
                   "', found " + describeToken());
    binding.callee = token.stringValue;
    binding.calleeLoc = token.getLoc();
    consume();
    return parseOperandList(binding);
  }
  if (head == "call_extern") {
    binding.kind = ExprKind::CallExtern;
    consume();
    if (!token.is(Token::String))
      return error("expected the routine name as a string after "
                   "'call_extern', found " + describeToken());
    binding.callee = token.stringValue;
    binding.calleeLoc = token.getLoc();
    consume();
    return parseOperandList(binding);
  }
  if (head == "tuple") {
    binding.kind = ExprKind::Tuple;
    consume();
    return parseOperandList(binding);
  }
  if (head == "get") {
    binding.kind = ExprKind::Get;
    consume();
    Operand operand;
    if (!expect(Token::LParen, "'(' after 'get'"))
      return false;
    if (!token.is(Token::LocalName))
      return error("expected a tuple value after 'get(', found " +
                   describeToken());
    if (!parseOperand(operand) || !expect(Token::Comma, "',' and an index"))
      return false;
    binding.operands.push_back(operand);
    if (!token.is(Token::Integer) || token.intValue < 0)
      return error("expected a non-negative tuple index, found " +
                   describeToken());
    binding.tupleIndex = token.intValue;
    binding.tupleIndexLoc = token.getLoc();
    consume();
    return expect(Token::RParen, "')' after the tuple index");
  }
  binding.kind = ExprKind::Op;
  binding.callee = head.str();
  static const char *keywords[] = {"return", "dataflow", "output", "func",
                                   "kernel", "module"};
  for (const char *keyword : keywords)
    if (head == keyword)
      return error("expected an operator, 'constant', 'call', 'tuple', 'get' "
                   "or a value after '=', found '" + head + "'");
  if (!lookupOp(head)) {
    std::string suggestion = suggestOpName(head);
    return error("unknown operator '" + head + "'" +
                 (suggestion.empty() ? "" : "; did you mean '" + suggestion + "'?"));
  }
  consume();
  return parseOperandList(binding);
}

bool Parser::parseOperandList(Binding &binding) {
  if (!expect(Token::LParen, "'(' to begin the operand list"))
    return false;
  if (token.is(Token::RParen)) {
    consume();
    return true;
  }
  while (true) {
    Operand operand;
    if (!parseOperand(operand))
      return false;
    binding.operands.push_back(operand);
    if (token.is(Token::RParen)) {
      consume();
      return true;
    }
    if (!expect(Token::Comma, "',' or ')' in the operand list"))
      return false;
  }
}

bool Parser::parseOperand(Operand &operand) {
  operand.loc = token.getLoc();
  if (token.is(Token::LocalName)) {
    operand.value = lookupValue(token);
    if (!operand.value)
      return false;
    consume();
    return true;
  }
  if (!parseLiteral(operand.literal))
    return error("expected a value name or a literal operand, found " +
                 describeToken());
  operand.literal.loc = operand.loc;
  return true;
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

std::unique_ptr<Module> fusec::parseModule(llvm::SourceMgr &sourceMgr,
                                           unsigned bufferId, DiagEngine &diag,
                                           llvm::StringRef sourceDirectory,
                                           const KnownFiles *knownFiles) {
  Parser parser(sourceMgr, bufferId, diag, sourceDirectory, knownFiles);
  return parser.parseModule();
}

std::unique_ptr<Module> fusec::parseModuleString(llvm::StringRef text,
                                                 llvm::SourceMgr &sourceMgr,
                                                 DiagEngine &diag,
                                                 llvm::StringRef bufferName) {
  unsigned bufferId = sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(text, bufferName), llvm::SMLoc());
  return parseModule(sourceMgr, bufferId, diag, ".");
}

ModuleSnapshot::ModuleSnapshot(const Module &module)
    : text(printModuleToString(module)), sourceDirectory(module.sourceDirectory) {
  for (const auto &function : module.functions)
    std::as_const(*function).forEachBinding([&](const Binding &binding) {
      if (binding.constant && binding.constant->form == ConstantData::File)
        knownFiles[binding.constant->path] = binding.constant->fileContents;
    });
}

std::unique_ptr<Module> ModuleSnapshot::restore(llvm::SourceMgr &sourceMgr, DiagEngine &diag,
                                                llvm::StringRef name) const {
  unsigned bufferId =
      sourceMgr.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, name), llvm::SMLoc());
  return parseModule(sourceMgr, bufferId, diag, sourceDirectory, &knownFiles);
}
