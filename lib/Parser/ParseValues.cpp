//===- ParseValues.cpp - Types, attributes, literals and constants --------===//
//
// The leaves of the FIR grammar:
//
//   type     ::= dtype '[' (dim (',' dim)*)? ']' | '(' (type (',' type)*)? ')'
//   dim      ::= integer | name          (no whitespace between dtype and '[')
//   attrs    ::= '{' (key '=' value (',' key '=' value)*)? '}'
//   value    ::= literal | "string" | name | '[' (value (',' value)*)? ']'
//   const    ::= literal | 'dense' '<' value '>' | 'splat' '<' literal '>'
//              | 'random' '<' 'seed' '=' integer '>' | 'file' '<' "path" '>'
//
// Constant values are checked against their declared type here, where the
// tokens still have locations: nesting against the shape, every element
// against the dtype, `.npy` files against dtype and shape.
//
//===----------------------------------------------------------------------===//
#include "ParserImpl.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cmath>

using namespace fusec;
using fusec::detail::Parser;

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

bool Parser::enterNesting(unsigned limit) {
  if (nestingDepth < limit)
    return ++nestingDepth, true;
  return error("nesting is deeper than " + std::to_string(limit) + " levels");
}

bool Parser::parseCommaList(Token::Kind close, llvm::StringRef closeText,
                            llvm::StringRef what, llvm::StringRef where,
                            llvm::function_ref<bool()> element) {
  while (!token.is(close)) {
    if (!element())
      return false;
    if (token.is(Token::Comma)) {
      consume();
      if (token.is(close))
        return error("expected " + what + " after ',', found '" + closeText + "'");
    } else if (!token.is(close)) {
      return error("expected ',' or '" + closeText + "' in " + where + ", found " +
                   describeToken());
    }
  }
  consume();
  return true;
}

bool Parser::parseType(Type &type) {
  llvm::SMLoc typeLoc = token.getLoc();
  if (token.is(Token::LParen)) {
    if (!enterNesting())
      return false;
    consume();
    std::vector<Type> fields;
    if (!parseCommaList(Token::RParen, ")", "a type", "the tuple type", [&] {
          fields.emplace_back();
          return parseType(fields.back());
        }))
      return false;
    --nestingDepth;
    type = Type::tuple(std::move(fields));
    return true;
  }
  if (!token.is(Token::BareIdent))
    return error("expected a type like 'f32[4,4]', found " + describeToken());
  std::optional<DType> dtype = parseDType(token.spelling);
  if (!dtype)
    return error("unknown dtype '" + token.spelling +
                 "'; the dtypes are f32, f16, bf16, i8, i32, i64 and bool");
  std::string dtypeText = token.spelling.str();
  consume();
  if (!token.is(Token::LSquare))
    return error("expected '[' after dtype '" + dtypeText +
                 "', found " + describeToken() + "; a scalar type is written '" +
                 dtypeText + "[]'");
  if (token.spelling.data() != previousEnd)
    return error("no whitespace is allowed between a dtype and '['");
  consume();
  Shape shape;
  if (!parseCommaList(Token::RSquare, "]", "a dimension", "the shape", [&] {
        shape.emplace_back();
        return parseDim(shape.back());
      }))
    return false;
  // The element count must fit in int64 (spec §9).
  int64_t count = 1;
  bool overflow = false;
  for (const Dim &dim : shape)
    overflow |= dim.isStatic() && __builtin_mul_overflow(count, dim.size, &count);
  if (overflow)
    return errorAt(typeLoc, "tensor type has more elements than fit in i64");
  type = Type::tensor(*dtype, std::move(shape));
  return true;
}

bool Parser::parseDim(Dim &dim) {
  if (token.is(Token::Integer)) {
    if (token.intValue < 0)
      return error("dimension sizes must be non-negative");
    if (token.intValue > kMaxDimSize)
      return error("dimension " + token.spelling +
                   " exceeds the maximum size 2^40");
    dim = Dim::of(token.intValue);
    consume();
    return true;
  }
  if (token.is(Token::BareIdent)) {
    if (token.spelling.contains('.'))
      return error("invalid dimension name '" + token.spelling + "'");
    // Kernel expressions read a dtype name as a conversion, `f32(...)`.
    if (parseDType(token.spelling))
      return error("'" + token.spelling + "' is a dtype, not a dimension name");
    // A dim's name appears in kernel expressions (loop extents, guards),
    // where these read as literals: the lowered dump would not parse back.
    static const llvm::StringRef literals[] = {"true", "false", "inf", "nan"};
    if (llvm::is_contained(literals, token.spelling))
      return error("'" + token.spelling + "' is a literal, not a dimension name");
    dim = Dim::named(token.spelling.str());
    consume();
    return true;
  }
  return error("expected a dimension (a size or a name), found " +
               describeToken());
}

//===----------------------------------------------------------------------===//
// Attributes and literals
//===----------------------------------------------------------------------===//

bool Parser::parseAttrDict(Attrs &attrs) {
  consume(); // '{'
  if (token.is(Token::RBrace)) {
    consume();
    return true;
  }
  while (true) {
    if (!token.is(Token::BareIdent))
      return error("expected an attribute name, found " + describeToken());
    std::string name = token.spelling.str();
    llvm::SMLoc nameLoc = token.getLoc();
    if (attrs.get(name))
      return error("duplicate attribute '" + name + "'");
    consume();
    if (!expect(Token::Equal, "'=' after attribute name '" + name + "'"))
      return false;
    Attr value;
    if (!parseAttrValue(value))
      return false;
    attrs.set(name, std::move(value), nameLoc);
    if (token.is(Token::RBrace)) {
      consume();
      return true;
    }
    if (!expect(Token::Comma, "',' or '}' in the attributes"))
      return false;
  }
}

bool Parser::parseLiteral(Attr &value) {
  llvm::SMLoc loc = token.getLoc();
  if (token.is(Token::Integer)) {
    value = Attr::makeInt(token.intValue);
  } else if (token.is(Token::Float)) {
    value = Attr::makeFloat(token.floatValue);
  } else if (token.isKeyword("true") || token.isKeyword("false")) {
    value = Attr::makeBool(token.spelling == "true");
  } else if (token.isKeyword("inf")) {
    value = Attr::makeFloat(INFINITY);
  } else if (token.isKeyword("nan")) {
    value = Attr::makeFloat(NAN);
  } else {
    return false;
  }
  value.loc = loc;
  // Messages quote a number as it was written (`1e6`, not `1000000.0`).
  if (value.isNumber())
    value.text = token.spelling.str();
  consume();
  return true;
}

bool Parser::parseAttrValue(Attr &value) {
  llvm::SMLoc loc = token.getLoc();
  if (parseLiteral(value))
    return true;
  if (token.is(Token::String)) {
    value = Attr::makeString(token.stringValue);
  } else if (token.is(Token::BareIdent)) {
    value = Attr::makeIdent(token.spelling.str());
  } else if (token.is(Token::LSquare)) {
    if (!enterNesting())
      return false;
    consume();
    std::vector<Attr> items;
    if (!parseCommaList(Token::RSquare, "]", "a value", "the list", [&] {
          items.emplace_back();
          return parseAttrValue(items.back());
        }))
      return false;
    --nestingDepth;
    value = Attr::makeList(std::move(items));
    value.loc = loc;
    return true;
  } else {
    return error("expected an attribute value, found " + describeToken());
  }
  value.loc = loc;
  consume();
  return true;
}

//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

bool Parser::parseConstant(Binding &binding) {
  binding.kind = ExprKind::Constant;
  auto constant = std::make_unique<ConstantData>();
  Attr value;
  if (parseLiteral(value)) {
    constant->form = ConstantData::Scalar;
    constant->values.push_back(value);
    binding.constant = std::move(constant);
    return true;
  }
  if (!token.is(Token::BareIdent))
    return error("expected a literal, 'dense', 'splat', 'random' or 'file' "
                 "after 'constant', found " + describeToken());
  llvm::StringRef form = token.spelling;
  if (form != "dense" && form != "splat" && form != "random" && form != "file")
    return error("unknown constant form '" + form +
                 "'; expected a literal, 'dense', 'splat', 'random' or 'file'");
  consume();
  if (!expect(Token::Less, "'<' after '" + form.str() + "'"))
    return false;
  if (form == "dense") {
    constant->form = ConstantData::Dense;
    if (!parseAttrValue(value))
      return false;
    constant->values.push_back(value);
  } else if (form == "splat") {
    constant->form = ConstantData::Splat;
    if (!parseLiteral(value))
      return error("expected a scalar literal in 'splat<...>', found " +
                   describeToken());
    constant->values.push_back(value);
  } else if (form == "random") {
    constant->form = ConstantData::Random;
    if (!expectKeyword("seed") || !expect(Token::Equal, "'=' after 'seed'"))
      return false;
    if (!token.is(Token::Integer) || token.intValue < 0)
      return error("expected a non-negative integer seed, found " +
                   describeToken());
    constant->seed = static_cast<uint64_t>(token.intValue);
    consume();
  } else {
    constant->form = ConstantData::File;
    if (!token.is(Token::String))
      return error("expected a quoted .npy path in 'file<...>', found " +
                   describeToken());
    constant->path = token.stringValue;
    constant->values.push_back(Attr::makeString(token.stringValue));
    constant->values.back().loc = token.getLoc();
    consume();
  }
  binding.constant = std::move(constant);
  return expect(Token::Greater, "'>' to close the constant");
}

/// Checks a dense value's nesting against `shape` from dimension `depth`.
static std::string checkDenseNesting(const Attr &value, const Shape &shape,
                                     size_t depth, DType dtype,
                                     llvm::SMLoc &where) {
  where = value.loc;
  if (depth == shape.size()) {
    if (value.kind == Attr::List)
      return "dense value is nested deeper than the type's rank " +
             std::to_string(shape.size());
    return checkLiteralForDType(value, dtype);
  }
  if (value.kind != Attr::List)
    return "dense value needs " + std::to_string(shape.size() - depth) +
           " more level(s) of '[...]' nesting to match the type";
  if (int64_t(value.list.size()) != shape[depth].size)
    return "dense value has " + std::to_string(value.list.size()) +
           " elements in dimension " + std::to_string(depth) +
           ", but the type says " + std::to_string(shape[depth].size);
  for (const Attr &item : value.list) {
    std::string problem = checkDenseNesting(item, shape, depth + 1, dtype, where);
    if (!problem.empty())
      return problem;
  }
  return "";
}

bool Parser::checkConstantValue(Binding &binding) {
  if (!binding.writtenType)
    return error("a constant needs its type: write 'constant ... : f32[...]', "
                 "found " + describeToken());
  const Type &type = *binding.writtenType;
  if (!type.isTensor())
    return errorAt(binding.typeLoc, "a constant must have a tensor type");
  for (const Dim &dim : type.getShape())
    if (dim.isSymbolic())
      return errorAt(binding.typeLoc, "a constant must have a static shape; '" +
                                          dim.symbol + "' is symbolic");
  ConstantData &constant = *binding.constant;
  DType dtype = type.getDType();
  llvm::SMLoc where;
  std::string problem;
  switch (constant.form) {
  case ConstantData::Scalar:
    if (type.getRank() != 0)
      return errorAt(binding.typeLoc,
                     "a scalar constant has a 0-d type like '" +
                         dtypeName(dtype) + "[]'; use 'splat<...>' to fill " +
                         type.str());
    LLVM_FALLTHROUGH;
  case ConstantData::Splat:
    where = constant.values.front().loc;
    problem = checkLiteralForDType(constant.values.front(), dtype);
    break;
  case ConstantData::Dense:
    problem = checkDenseNesting(constant.values.front(), type.getShape(), 0,
                                dtype, where);
    break;
  case ConstantData::Random:
    return true;
  case ConstantData::File: {
    where = constant.values.front().loc;
    std::shared_ptr<TensorData> contents;
    if (auto known = knownFiles ? knownFiles->find(constant.path) : KnownFiles::const_iterator();
        knownFiles && known != knownFiles->end()) {
      contents = known->second;
    } else {
      llvm::SmallString<256> path(constant.path);
      if (!llvm::sys::path::is_absolute(path)) {
        path = sourceDirectory;
        llvm::sys::path::append(path, constant.path);
      }
      if (!llvm::sys::fs::is_regular_file(path))
        return errorAt(where, "cannot read '" + constant.path + "': " +
                                  (llvm::sys::fs::exists(path)
                                       ? "not a regular file"
                                       : "no such file '" + path.str().str() +
                                             "' (a relative path is read from the .fir "
                                             "file's directory; from standard input, "
                                             "the working directory)"));
      std::string readError;
      contents = readNpyFile(path, readError);
      if (!contents)
        return errorAt(where, readError);
    }
    std::vector<int64_t> shape;
    for (const Dim &dim : type.getShape())
      shape.push_back(dim.size);
    // bf16 travels as float32 .npy (spec §7); it must be exactly bf16.
    bool bf16FromF32 = dtype == DType::bf16 && contents->getDType() == DType::f32;
    if (contents->getDType() != dtype && !bf16FromF32)
      return errorAt(where, "'" + constant.path + "' holds " +
                                dtypeName(contents->getDType()) +
                                " values, but the constant is " +
                                dtypeName(dtype));
    if (contents->getShape() != shape) {
      std::string fileShape;
      for (int64_t dim : contents->getShape())
        fileShape += (fileShape.empty() ? "" : ",") + std::to_string(dim);
      return errorAt(where, "'" + constant.path + "' has shape [" + fileShape +
                                "], but the constant is " + type.str());
    }
    if (bf16FromF32) {
      for (int64_t i = 0; i < contents->getNumElements(); ++i)
        if (roundToDType(contents->get(i), DType::bf16) != contents->get(i) &&
            !std::isnan(contents->get(i)))
          return errorAt(where, "'" + constant.path + "' element " +
                                    std::to_string(i) +
                                    " is not exactly representable as bf16");
    }
    constant.fileContents = std::move(contents);
    return true;
  }
  }
  if (!problem.empty())
    return errorAt(where, problem);
  return true;
}
