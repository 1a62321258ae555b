//===- Types.cpp - DTypes, dims, types and attributes ---------------------===//
//
// Value semantics for the small IR objects: dtype properties and rounding,
// dims, tensor/tuple types and attribute values, each with its textual form
// (the printer composes these strings).
//
//===----------------------------------------------------------------------===//
#include "fusec/IR/IR.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <cstdlib>
#include <limits>

using namespace fusec;

//===----------------------------------------------------------------------===//
// DType
//===----------------------------------------------------------------------===//

static const struct {
  DType dtype;
  const char *name;
  unsigned bytes;
} kDTypes[] = {{DType::f32, "f32", 4}, {DType::f16, "f16", 2},
               {DType::bf16, "bf16", 2}, {DType::i8, "i8", 1},
               {DType::i32, "i32", 4}, {DType::i64, "i64", 8},
               {DType::boolean, "bool", 1}};

std::optional<DType> fusec::parseDType(llvm::StringRef name) {
  for (const auto &entry : kDTypes)
    if (name == entry.name)
      return entry.dtype;
  return std::nullopt;
}

llvm::StringRef fusec::dtypeName(DType dtype) {
  return kDTypes[static_cast<unsigned>(dtype)].name;
}

unsigned fusec::dtypeBytes(DType dtype) {
  return kDTypes[static_cast<unsigned>(dtype)].bytes;
}

bool fusec::isFloatDType(DType dtype) {
  return dtype == DType::f32 || dtype == DType::f16 || dtype == DType::bf16;
}

bool fusec::isIntDType(DType dtype) {
  return dtype == DType::i8 || dtype == DType::i32 || dtype == DType::i64;
}

int64_t fusec::saturatingInt64(double value) {
  if (std::isnan(value))
    return 0;
  if (value >= 9223372036854775808.0)
    return INT64_MAX;
  if (value <= -9223372036854775808.0)
    return INT64_MIN;
  return static_cast<int64_t>(value);
}

int64_t fusec::wrapToIntDType(int64_t value, DType dtype) {
  switch (dtype) {
  case DType::i8: return int8_t(uint8_t(uint64_t(value)));
  case DType::i32: return int32_t(uint32_t(uint64_t(value)));
  case DType::boolean: return value != 0;
  default: return value;
  }
}

/// Rounds a double to a binary float format with `precision` significant
/// bits, smallest normal exponent `minExponent` and largest finite value
/// `maxFinite`, to nearest even, in one step (rounding through f32 first
/// would round twice).
static double roundToFormat(double value, int precision, int minExponent,
                            double maxFinite) {
  // Fast path (the interpreter rounds every f16/bf16 operation's result):
  // the same rounding on the double's bits, when the quantum lies within
  // its stored mantissa.
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  int biased = int((bits >> 52) & 0x7ff);
  if (biased != 0 && biased != 0x7ff) {
    int exponent = biased - 1022; // frexp's: value = m * 2^exponent, 0.5 <= |m| < 1
    // Bits below the quantum: at least 53 - precision (> 0 for f16/bf16).
    int drop = std::max(exponent, minExponent + 1) - precision - (exponent - 53);
    if (drop <= 52) {
      uint64_t sign = bits & (uint64_t(1) << 63), magnitude = bits & ~sign;
      uint64_t mask = (uint64_t(1) << drop) - 1, rest = magnitude & mask,
               half = uint64_t(1) << (drop - 1);
      magnitude &= ~mask;
      // The quantum's bit is the implicit leading 1 when drop is 52.
      bool odd = drop == 52 || ((magnitude >> drop) & 1);
      if (rest > half || (rest == half && odd))
        magnitude += uint64_t(1) << drop; // may carry into the exponent
      uint64_t roundedBits = sign | magnitude;
      double rounded;
      std::memcpy(&rounded, &roundedBits, sizeof rounded);
      if (std::fabs(rounded) > maxFinite)
        return value < 0 ? -INFINITY : INFINITY;
      return rounded;
    }
  }
  if (std::isnan(value) || std::isinf(value) || value == 0)
    return value;
  int exponent;
  std::frexp(value, &exponent); // value = m * 2^exponent, 0.5 <= |m| < 1
  int quantumExponent = std::max(exponent, minExponent + 1) - precision;
  double rounded = std::ldexp(
      std::nearbyint(std::ldexp(value, -quantumExponent)), quantumExponent);
  if (std::fabs(rounded) > maxFinite)
    return value < 0 ? -INFINITY : INFINITY;
  return rounded;
}

double fusec::roundToDType(double value, DType dtype) {
  switch (dtype) {
  case DType::f32:
    return static_cast<float>(value);
  case DType::f16:
    return roundToFormat(value, 11, -14, 65504.0);
  case DType::bf16:
    return roundToFormat(value, 8, -126, std::ldexp(255.0, 120));
  case DType::boolean:
    return value != 0 ? 1 : 0;
  default:
    return std::trunc(value);
  }
}

bool fusec::fitsDType(double value, DType dtype) {
  if (std::isnan(value) || std::isinf(value))
    return isFloatDType(dtype);
  switch (dtype) {
  case DType::f32:
  case DType::f16:
  case DType::bf16:
    return !std::isinf(roundToDType(value, dtype));
  case DType::i8:
    return value >= -128 && value <= 127 && value == std::trunc(value);
  case DType::i32:
    return value >= -2147483648.0 && value <= 2147483647.0 &&
           value == std::trunc(value);
  case DType::i64:
    return value >= -9223372036854775808.0 && value < 9223372036854775808.0 &&
           value == std::trunc(value);
  case DType::boolean:
    return value == 0 || value == 1;
  }
  return false;
}

std::string fusec::formatScalar(double value, DType dtype) {
  if (dtype == DType::boolean)
    return value != 0 ? "true" : "false";
  if (isIntDType(dtype))
    return std::to_string(saturatingInt64(value));
  if (dtype == DType::f32 && float(value) == value && !std::isnan(value) &&
      !std::isinf(value)) {
    // The shortest text that reads back to the same f32.
    char buffer[64];
    auto result = std::to_chars(buffer, buffer + sizeof(buffer), float(value));
    std::string text(buffer, result.ptr);
    if (text.find_first_of(".e") == std::string::npos)
      text += ".0";
    return text;
  }
  if (std::isnan(value) || std::isinf(value) || dtype == DType::f32 ||
      roundToDType(value, dtype) != value)
    return formatFloat(value, /*forceFloatSyntax=*/true);
  // f16/bf16: the fewest digits that round back to the same value.
  for (int digits = 1; digits <= 17; ++digits) {
    char buffer[48];
    std::snprintf(buffer, sizeof(buffer), "%.*g", digits, value);
    if (roundToDType(std::strtod(buffer, nullptr), dtype) == value)
      return formatFloat(std::strtod(buffer, nullptr), true);
  }
  return formatFloat(value, true);
}

//===----------------------------------------------------------------------===//
// Dim and Type
//===----------------------------------------------------------------------===//

std::string Dim::str() const {
  return isSymbolic() ? symbol : std::to_string(size);
}

Type Type::tensor(DType dtype, Shape shape) {
  Type type;
  type.dtype = dtype;
  type.shape = std::move(shape);
  return type;
}

Type Type::tuple(std::vector<Type> fields) {
  Type type;
  type.isTupleType = true;
  type.fields = std::move(fields);
  return type;
}

std::optional<int64_t> Type::getStaticNumElements() const {
  if (isTupleType)
    return std::nullopt;
  int64_t count = 1;
  for (const Dim &dim : shape) {
    if (dim.isSymbolic())
      return std::nullopt;
    if (dim.size != 0 && count > std::numeric_limits<int64_t>::max() / dim.size)
      return std::nullopt;
    count *= dim.size;
  }
  return count;
}

bool Type::operator==(const Type &other) const {
  if (isTupleType != other.isTupleType)
    return false;
  if (isTupleType)
    return fields == other.fields;
  return dtype == other.dtype && shape == other.shape;
}

Type Type::withDims(const std::map<std::string, Dim> &dims) const {
  if (isTuple()) {
    std::vector<Type> renamed;
    for (const Type &field : fields)
      renamed.push_back(field.withDims(dims));
    return Type::tuple(renamed);
  }
  Shape renamed = shape;
  for (Dim &dim : renamed) {
    auto it = dim.isSymbolic() ? dims.find(dim.symbol) : dims.end();
    if (it != dims.end())
      dim = it->second;
  }
  return Type::tensor(dtype, renamed);
}

std::string Type::str() const {
  std::string text;
  if (isTupleType) {
    text = "(";
    for (size_t i = 0; i < fields.size(); ++i)
      text += (i ? ", " : "") + fields[i].str();
    return text + ")";
  }
  text = dtypeName(dtype).str() + "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? "," : "") + shape[i].str();
  return text + "]";
}

//===----------------------------------------------------------------------===//
// Attr and Attrs
//===----------------------------------------------------------------------===//

bool Attr::operator==(const Attr &other) const {
  if (kind != other.kind)
    return false;
  switch (kind) {
  case Int:
    return intValue == other.intValue;
  case Float:
    return floatValue == other.floatValue ||
           (std::isnan(floatValue) && std::isnan(other.floatValue));
  case Bool:
    return boolValue == other.boolValue;
  case String:
  case Ident:
    return text == other.text;
  case List:
    return list == other.list;
  }
  return false;
}

static std::string quoteString(const std::string &text) {
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\')
      quoted += '\\';
    quoted += c;
  }
  return quoted + "\"";
}

std::string Attr::str() const {
  switch (kind) {
  case Int:
    return std::to_string(intValue);
  case Float:
    return formatFloat(floatValue, /*forceFloatSyntax=*/true);
  case Bool:
    return boolValue ? "true" : "false";
  case String:
    return quoteString(text);
  case Ident:
    return text;
  case List: {
    std::string out = "[";
    for (size_t i = 0; i < list.size(); ++i)
      out += (i ? ", " : "") + list[i].str();
    return out + "]";
  }
  }
  return "";
}

std::string fusec::checkLiteralForDType(const Attr &literal, DType dtype) {
  std::string name = dtypeName(dtype).str();
  // As the user wrote it, when the parser kept that and it still reads
  // back to the value (a pass may have changed a copy's value since).
  std::string written = literal.str();
  if (literal.isNumber() && !literal.text.empty() &&
      std::strtod(literal.text.c_str(), nullptr) == literal.asDouble())
    written = literal.text;
  std::string article = name == "i8" || name == "i32" || name == "i64" ? "an " : "a ";
  switch (literal.kind) {
  case Attr::Bool:
    if (dtype != DType::boolean)
      return "boolean literal '" + literal.str() + "' cannot be " + article + name;
    return "";
  case Attr::Float:
    if (!isFloatDType(dtype))
      return "float literal '" + written + "' cannot be " + article + name;
    if (!fitsDType(literal.floatValue, dtype))
      return "float literal '" + written + "' overflows " + name;
    return "";
  case Attr::Int:
    if (dtype == DType::boolean && literal.intValue != 0 && literal.intValue != 1)
      return "integer literal '" + written + "' cannot be a bool";
    if (dtype != DType::i64 &&
        !fitsDType(static_cast<double>(literal.intValue), dtype))
      return "integer literal '" + written + "' overflows " + name;
    return "";
  default:
    return "'" + literal.str() + "' is not a scalar literal";
  }
}

const Attr *Attrs::get(llvm::StringRef name) const {
  for (const Entry &entry : entries)
    if (entry.name == name)
      return &entry.value;
  return nullptr;
}

Attr *Attrs::get(llvm::StringRef name) {
  for (Entry &entry : entries)
    if (entry.name == name)
      return &entry.value;
  return nullptr;
}

void Attrs::set(llvm::StringRef name, Attr value, llvm::SMLoc loc) {
  if (Attr *existing = get(name)) {
    *existing = std::move(value);
    return;
  }
  entries.push_back({name.str(), std::move(value), loc});
}

bool Attrs::erase(llvm::StringRef name) {
  for (auto it = entries.begin(); it != entries.end(); ++it) {
    if (it->name == name) {
      entries.erase(it);
      return true;
    }
  }
  return false;
}

bool Attrs::operator==(const Attrs &other) const {
  if (entries.size() != other.entries.size())
    return false;
  for (const Entry &entry : entries) {
    const Attr *match = other.get(entry.name);
    if (!match || *match != entry.value)
      return false;
  }
  return true;
}

std::string Attrs::str() const {
  if (entries.empty())
    return "";
  std::string out = "{";
  for (size_t i = 0; i < entries.size(); ++i)
    out += (i ? ", " : "") + entries[i].name + " = " + entries[i].value.str();
  return out + "}";
}
