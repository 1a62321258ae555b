//===- ParseLowered.cpp - Kernel schedules and the loop-level form --------===//
//
//   schedule ::= 'schedule' string '{' entry* '}'
//   entry    ::= %stage ':' ( 'inline'
//                           | 'compute_at' '(' %consumer ',' ('block'|'thread') ')'
//                           | 'materialize'? mapping )
//   mapping  ::= ('flat'|'rows'|'tiles') '(' (key '=' int),* ')'
//                keys: threads, vector, inner (rows); block_m, block_n,
//                block_k, thread_m, thread_n (tiles)
//   launch   ::= 'launch' 'grid' '(' var ':' index ')' 'block' '(' var ':' int ')'
//                '{' (('shared'|'local') %name ':' type)* block-stmt* '}'
//   block-stmt ::= 'parallel' '{' thread-stmt* '}' | 'barrier'
//                | 'async_commit' | 'async_wait' '(' int ')'
//                | %dst '[' index,* ']' '=' ('shfl_xor'|'shfl_down') '(' load ',' int ')'
//                | %d '[' int ']' '=' 'mma_m16n8k16' '(' %a '[' int ']' ',' %b '[' int ']' ','
//                                                       %c '[' int ']' ')'
//                | %d '[' int ']' '=' ('ldmatrix_x1'|'ldmatrix_x2'|'ldmatrix_x4') '_trans'?
//                                     '(' %shared '[' index,* ']' ')'
//                | 'for' var 'in' ('serial'|'unroll') '(' index ')' '{' block-stmt* '}'
//   thread-stmt ::= 'for' var 'in' ('serial'|'unroll'|'vector') '(' index ')' '{' thread-stmt* '}'
//                 | 'if' index '{' thread-stmt* '}' ('else' '{' thread-stmt* '}')?
//                 | %buf '[' index,* ']' '=' expr
//                 | %shared '[' index,* ']' '=' 'async_copy' '(' load ',' int ',' index ')'
//
// The structure (what may appear where) is checked here; names, dtypes and
// scopes by the kernel verifier afterwards.
//
//===----------------------------------------------------------------------===//
#include "ParserImpl.h"

#include <set>

using namespace fusec;
using fusec::detail::Parser;

bool Parser::parseInt(int64_t &value, llvm::StringRef what) {
  if (!token.is(Token::Integer))
    return error("expected " + what + ", found " + describeToken());
  value = token.intValue;
  consume();
  return true;
}

Parser::MutableExpr Parser::parseBufferElement(llvm::StringRef what) {
  if (!token.is(Token::LocalName)) {
    error("expected " + what + ", found " + describeToken());
    return nullptr;
  }
  return parseKPrimary(ExprContext::Value);
}

bool Parser::parseLoopVar(std::string &name) {
  if (!token.is(Token::BareIdent) || token.spelling.contains('.'))
    return error("expected a loop variable name, found " + describeToken());
  name = token.spelling.str();
  consume();
  return true;
}

bool Parser::parseLoopHead(LStmt &stmt, bool blockLevel) {
  stmt.kind = LStmt::For;
  if (!parseLoopVar(stmt.var) || !expectKeyword("in"))
    return false;
  if (token.isKeyword("serial"))
    stmt.loopKind = LStmt::Serial;
  else if (token.isKeyword("unroll"))
    stmt.loopKind = LStmt::Unroll;
  else if (token.isKeyword("vector") && !blockLevel)
    stmt.loopKind = LStmt::Vector;
  else if (blockLevel)
    return error("expected 'serial' or 'unroll' for a block-level loop, found " + describeToken());
  else
    return error("expected 'serial', 'unroll' or 'vector', found " + describeToken());
  consume();
  return expect(Token::LParen, "'(' and the loop extent") && (stmt.extent = parseIndexExpr()) &&
         expect(Token::RParen, "')'");
}

Parser::MutableExpr Parser::parseIndexExpr() {
  untypedLiterals.clear();
  llvm::SMLoc loc = token.getLoc();
  MutableExpr e = parseKExpr(ExprContext::Index);
  if (!e || !resolveDTypes(*e, std::nullopt, loc))
    return nullptr;
  return e;
}

/// The mapping kind `token` spells, if it spells one.
static std::optional<StageMapping::Kind> mappingKindOf(const Token &token) {
  for (StageMapping::Kind kind :
       {StageMapping::Flat, StageMapping::Rows, StageMapping::Columns, StageMapping::Tiles})
    if (token.isKeyword(mappingKindName(kind)))
      return kind;
  return std::nullopt;
}

bool Parser::parseMapping(StageMapping &mapping) {
  if (std::optional<StageMapping::Kind> kind = mappingKindOf(token))
    mapping.kind = *kind;
  else
    return error("expected a mapping ('flat(...)', 'rows(...)', 'columns(...)' or "
                 "'tiles(...)'), found " +
                 describeToken());
  consume();
  if (!expect(Token::LParen, "'(' and the mapping's parameters"))
    return false;
  std::set<std::string> given;
  bool parsed = parseCommaList(Token::RParen, ")", "a parameter", "the mapping", [&] {
    if (!token.is(Token::BareIdent))
      return error("expected a mapping parameter, found " + describeToken());
    std::string key = token.spelling.str();
    llvm::SMLoc keyLoc = token.getLoc();
    if (!given.insert(key).second)
      return error("mapping parameter '" + key + "' is given twice");
    consume();
    int64_t value = 0;
    if (!expect(Token::Equal, "'='") || !parseInt(value, "an integer"))
      return false;
    // Which mapping kinds take each parameter, and where it goes.
    struct Parameter {
      const char *key;
      bool flat, rows, tiles, columns;
      int64_t StageMapping::*field;
    };
    static const Parameter parameters[] = {
        {"threads", true, true, false, true, &StageMapping::threads},
        {"vector", true, true, false, true, &StageMapping::vector},
        {"inner", false, true, false, true, &StageMapping::inner},
        {"rows", false, false, false, true, &StageMapping::rows},
        {"block_m", false, false, true, false, &StageMapping::blockM},
        {"block_n", false, false, true, false, &StageMapping::blockN},
        {"block_k", false, false, true, false, &StageMapping::blockK},
        {"thread_m", false, false, true, false, &StageMapping::threadM},
        {"thread_n", false, false, true, false, &StageMapping::threadN},
        {"warp_m", false, false, true, false, &StageMapping::warpM},
        {"warp_n", false, false, true, false, &StageMapping::warpN}};
    for (const Parameter &parameter : parameters) {
      bool allowed = mapping.kind == StageMapping::Flat      ? parameter.flat
                     : mapping.kind == StageMapping::Rows    ? parameter.rows
                     : mapping.kind == StageMapping::Columns ? parameter.columns
                                                             : parameter.tiles;
      if (key == parameter.key && allowed) {
        mapping.*parameter.field = value;
        return true;
      }
    }
    if (key == "mma" && mapping.kind == StageMapping::Tiles && (value == 0 || value == 1))
      mapping.mma = value == 1;
    else
      return errorAt(keyLoc, "unknown parameter '" + key + "' of a " +
                                 mappingKindName(mapping.kind) + " mapping");
    return true;
  });
  if (parsed && mapping.kind == StageMapping::Tiles && mapping.mma && mapping.warpM > 0 &&
      mapping.warpN > 0)
    mapping.threads = 32 * (mapping.blockM / mapping.warpM) * (mapping.blockN / mapping.warpN);
  else if (parsed && mapping.kind == StageMapping::Tiles && mapping.threadM > 0 &&
           mapping.threadN > 0)
    mapping.threads = (mapping.blockM / mapping.threadM) * (mapping.blockN / mapping.threadN);
  return parsed;
}

bool Parser::parseScheduleEntry(Kernel &kernel) {
  StageSchedule entry;
  entry.loc = token.getLoc();
  entry.stage = token.stringValue;
  const KBuffer *buffer = kernel.findBuffer(entry.stage);
  if (!buffer || buffer->role == KBuffer::Input)
    return error("'%" + entry.stage + "' is not a buffer a stage writes");
  consume();
  if (!expect(Token::Colon, "':' and the stage's placement"))
    return false;
  if (token.isKeyword("inline")) {
    consume();
    entry.placement = StageSchedule::Inline;
  } else if (token.isKeyword("compute_at")) {
    consume();
    entry.placement = StageSchedule::ComputeAt;
    if (!expect(Token::LParen, "'(' after 'compute_at'"))
      return false;
    if (!token.is(Token::LocalName))
      return error("expected the consumer stage, e.g. '%out', found " + describeToken());
    entry.consumer = token.stringValue;
    consume();
    if (!expect(Token::Comma, "',' and the level (block or thread)"))
      return false;
    if (token.isKeyword("block"))
      entry.level = StageSchedule::Block;
    else if (token.isKeyword("thread"))
      entry.level = StageSchedule::Thread;
    else
      return error("expected 'block' or 'thread', found " + describeToken());
    consume();
    if (!expect(Token::RParen, "')'"))
      return false;
  } else {
    bool materialize = token.isKeyword("materialize");
    if (materialize) {
      if (buffer->role == KBuffer::Output)
        return error("an output is always in global memory; write its mapping "
                     "without 'materialize'");
      consume();
    } else if (buffer->role == KBuffer::Internal && mappingKindOf(token)) {
      return error("an internal root stage is written 'materialize " +
                   token.spelling.str() + "(...)'");
    }
    entry.placement = StageSchedule::Root;
    if (!parseMapping(entry.mapping))
      return false;
  }
  kernel.schedule.stages.push_back(std::move(entry));
  return true;
}

bool Parser::parseSchedule(Kernel &kernel) {
  consume(); // 'schedule'
  if (!token.is(Token::String))
    return error("expected the schedule's rule name as a string, found " + describeToken());
  kernel.schedule.rule = token.stringValue;
  consume();
  if (!expect(Token::LBrace, "'{' to begin the schedule"))
    return false;
  while (token.is(Token::LocalName))
    if (!parseScheduleEntry(kernel))
      return false;
  return expect(Token::RBrace, "a stage entry or '}' to end the schedule");
}

bool Parser::parseStore(LStmt &stmt, bool blockLevel) {
  stmt.loc = token.getLoc();
  stmt.buffer = token.stringValue;
  const KBuffer *buffer = currentKernel->findBuffer(stmt.buffer);
  if (!buffer)
    return error("store to unknown buffer '%" + stmt.buffer + "'");
  consume();
  if (!expect(Token::LSquare, "'[' and the indices"))
    return false;
  while (!token.is(Token::RSquare)) {
    MutableExpr index = parseIndexExpr();
    if (!index)
      return false;
    stmt.indices.push_back(index);
    if (token.is(Token::Comma))
      consume();
    else if (!token.is(Token::RSquare))
      return error("expected ',' or ']' in the indices, found " + describeToken());
  }
  consume();
  if (!expect(Token::Equal, "'='"))
    return false;
  if (blockLevel && token.isKeyword("mma_m16n8k16")) {
    stmt.kind = LStmt::Mma;
    consume();
    if (!expect(Token::LParen, "'(' and the A, B and C fragments"))
      return false;
    for (int i = 0; i < 3; ++i) {
      if (i && !expect(Token::Comma, "','"))
        return false;
      MutableExpr fragment = parseBufferElement("a fragment (a local buffer element)");
      if (!fragment)
        return false;
      stmt.operands.push_back(fragment);
    }
    return expect(Token::RParen, "')'");
  }
  if (token.is(Token::BareIdent) && token.spelling.startswith("ldmatrix")) {
    llvm::StringRef form = token.spelling;
    stmt.transpose = form.consume_back("_trans");
    stmt.count = form == "ldmatrix_x1" ? 1 : form == "ldmatrix_x2" ? 2 : form == "ldmatrix_x4" ? 4 : 0;
    if (!stmt.count)
      return error("unknown '" + token.spelling.str() + "'; the lowered form has ldmatrix_x1, "
                   "ldmatrix_x2 and ldmatrix_x4, each optionally with _trans");
    if (!blockLevel)
      return error("an ldmatrix is run by whole warps: it belongs to the launch body, outside "
                   "'parallel'");
    stmt.kind = LStmt::LdMatrix;
    consume();
    if (!expect(Token::LParen, "'(' and the lane's row in shared memory"))
      return false;
    MutableExpr source = parseBufferElement("a shared buffer element");
    if (!source)
      return false;
    stmt.value = source;
    return expect(Token::RParen, "')'");
  }
  if (token.isKeyword("async_copy")) {
    if (blockLevel)
      return error("an async_copy is started by each thread: put it in a 'parallel' region");
    stmt.kind = LStmt::AsyncCopy;
    consume();
    if (!expect(Token::LParen, "'(' and the source element"))
      return false;
    MutableExpr source = parseBufferElement("the source (a buffer element)");
    if (!source || !expect(Token::Comma, "',' and the number of elements copied") ||
        !parseInt(stmt.count, "the number of elements copied") ||
        !expect(Token::Comma, "',' and the number read from the source") ||
        !(stmt.extent = parseIndexExpr()) || !expect(Token::RParen, "')'"))
      return false;
    stmt.value = source;
    return true;
  }
  bool shuffle = token.isKeyword("shfl_xor") || token.isKeyword("shfl_down");
  if (!shuffle && token.is(Token::BareIdent) && token.spelling.startswith("shfl_"))
    return error("unknown shuffle '" + token.spelling.str() +
                 "'; the lowered form has shfl_xor and shfl_down");
  if (shuffle != blockLevel)
    return error(blockLevel ? "a launch body holds 'parallel', 'barrier', shuffles, mma and "
                              "block-level loops; "
                              "put stores in a 'parallel' region"
                            : "shuffles belong to the launch body, outside 'parallel'");
  untypedLiterals.clear();
  llvm::SMLoc valueLoc = token.getLoc();
  if (shuffle) {
    stmt.kind = LStmt::Shuffle;
    stmt.shuffleMode = token.spelling.drop_front(5).str();
    consume();
    if (!expect(Token::LParen, "'('"))
      return false;
    MutableExpr source = parseBufferElement("the shuffled local buffer");
    if (!source || !expect(Token::Comma, "',' and the lane offset") ||
        !parseInt(stmt.shuffleOffset, "the lane offset") || !expect(Token::RParen, "')'"))
      return false;
    stmt.value = source;
    return true;
  }
  stmt.kind = LStmt::Store;
  MutableExpr value = parseKExpr(ExprContext::Value);
  if (!value || !resolveDTypes(*value, buffer->type.getDType(), valueLoc))
    return false;
  stmt.value = value;
  return true;
}

bool Parser::parseStmtBlock(std::vector<LStmt> &out, bool blockLevel, LLaunch *launch) {
  if (!expect(Token::LBrace, "'{'"))
    return false;
  if (!enterNesting())
    return false;
  while (!token.is(Token::RBrace) && !token.is(Token::Eof)) {
    if (blockLevel ? !parseBlockStmt(*launch, out) : !parseThreadStmt(out))
      return false;
  }
  --nestingDepth;
  return expect(Token::RBrace, "'}'");
}

bool Parser::parseThreadStmt(std::vector<LStmt> &out) {
  LStmt stmt;
  stmt.loc = token.getLoc();
  if (token.isKeyword("for")) {
    consume();
    if (!parseLoopHead(stmt, /*blockLevel=*/false) || !parseStmtBlock(stmt.body, false, nullptr))
      return false;
  } else if (token.isKeyword("if")) {
    consume();
    stmt.kind = LStmt::If;
    if (!(stmt.cond = parseIndexExpr()) || !parseStmtBlock(stmt.body, false, nullptr))
      return false;
    if (token.isKeyword("else")) {
      consume();
      if (!parseStmtBlock(stmt.elseBody, false, nullptr))
        return false;
    }
  } else if (token.is(Token::LocalName)) {
    if (!parseStore(stmt, false))
      return false;
  } else if (token.isKeyword("parallel") || token.isKeyword("barrier") ||
             token.isKeyword("async_commit") || token.isKeyword("async_wait")) {
    return error("'" + token.spelling.str() + "' belongs to the launch body, not inside "
                 "a parallel region");
  } else {
    return error("expected 'for', 'if' or a store, found " + describeToken());
  }
  out.push_back(std::move(stmt));
  return true;
}

bool Parser::parseBlockStmt(LLaunch &launch, std::vector<LStmt> &out) {
  LStmt stmt;
  stmt.loc = token.getLoc();
  if (token.isKeyword("parallel")) {
    consume();
    stmt.kind = LStmt::Parallel;
    if (!parseStmtBlock(stmt.body, false, nullptr))
      return false;
  } else if (token.isKeyword("barrier")) {
    consume();
    stmt.kind = LStmt::Barrier;
  } else if (token.isKeyword("async_commit")) {
    consume();
    stmt.kind = LStmt::AsyncCommit;
  } else if (token.isKeyword("async_wait")) {
    consume();
    stmt.kind = LStmt::AsyncWait;
    if (!expect(Token::LParen, "'(' and the number of groups left pending") ||
        !parseInt(stmt.count, "the number of groups left pending") ||
        !expect(Token::RParen, "')'"))
      return false;
  } else if (token.isKeyword("for")) {
    // A block-level loop: its body is block-level statements.
    consume();
    if (!parseLoopHead(stmt, /*blockLevel=*/true) || !parseStmtBlock(stmt.body, true, &launch))
      return false;
  } else if (token.is(Token::LocalName)) {
    if (!parseStore(stmt, true))
      return false;
  } else if (token.isKeyword("shared") || token.isKeyword("local")) {
    return error("declare shared and local buffers at the top of the launch");
  } else {
    return error("expected 'parallel', 'barrier', 'for', a shuffle, an mma, 'async_commit' or "
                 "'async_wait', found " +
                 describeToken());
  }
  (void)launch;
  out.push_back(std::move(stmt));
  return true;
}

bool Parser::parseLaunch(Kernel &kernel) {
  kernel.launches.emplace_back();
  LLaunch &launch = kernel.launches.back();
  launch.loc = token.getLoc();
  consume(); // 'launch'
  if (!expectKeyword("grid") || !expect(Token::LParen, "'('") ||
      !parseLoopVar(launch.blockVar) || !expect(Token::Colon, "':' and the number of blocks") ||
      !(launch.gridSize = parseIndexExpr()) || !expect(Token::RParen, "')'"))
    return false;
  if (!expectKeyword("block") || !expect(Token::LParen, "'('") ||
      !parseLoopVar(launch.threadVar) ||
      !expect(Token::Colon, "':' and the number of threads per block") ||
      !parseInt(launch.threads, "the number of threads per block (an integer)") ||
      !expect(Token::RParen, "')'") || !expect(Token::LBrace, "'{' to begin the launch"))
    return false;
  while (token.isKeyword("shared") || token.isKeyword("local")) {
    KBuffer buffer;
    buffer.role = token.isKeyword("shared") ? KBuffer::Shared : KBuffer::Local;
    consume();
    if (!token.is(Token::LocalName))
      return error("expected a buffer name, found " + describeToken());
    buffer.name = token.stringValue;
    buffer.loc = token.getLoc();
    consume();
    if (!expect(Token::Colon, "':' and the buffer type") || !parseType(buffer.type))
      return false;
    launch.buffers.push_back(std::move(buffer));
  }
  while (!token.is(Token::RBrace) && !token.is(Token::Eof))
    if (!parseBlockStmt(launch, launch.body))
      return false;
  return expect(Token::RBrace, "'}' to end the launch");
}
