//===- Constants.cpp - Tensor contents, random constants, .npy files ------===//
//
// TensorData stores contents in the dtype's own bit layout. ConstantData
// keeps the form a constant was written in (so that it prints back the same)
// and materializes it on demand. `random<seed = N>` follows spec §9 exactly:
// element i is u = splitmix64(seed * 2^32 + i), value (u >> 11) * 2^-52 - 1.
//
//===----------------------------------------------------------------------===//
#include "fusec/IR/IR.h"
#include "fusec/Support/FileIO.h"

#include "llvm/Support/MemoryBuffer.h"

#include <cmath>
#include <cstring>
#include <set>

using namespace fusec;

std::vector<int64_t> fusec::rowMajorStrides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;)
    strides[d - 1] = strides[d] * shape[d];
  return strides;
}

TensorData::TensorData(DType dtype, std::vector<int64_t> shape, Float32Storage float32)
    : dtype(dtype), shape(std::move(shape)) {
  numElements = 1;
  for (int64_t dim : this->shape)
    numElements *= dim;
  elementBytes = dtype == DType::f32 && float32 == Float32Storage::Double ? 8 : dtypeBytes(dtype);
  bytes.assign(static_cast<size_t>(numElements * elementBytes), 0);
}

double TensorData::get(int64_t index) const {
  const uint8_t *p = bytes.data() + index * elementBytes;
  switch (dtype) {
  case DType::f32: {
    if (holdsDoubles()) {
      double v;
      std::memcpy(&v, p, 8);
      return v;
    }
    float v;
    std::memcpy(&v, p, 4);
    return v;
  }
  case DType::f16:
  case DType::bf16: {
    uint16_t bits;
    std::memcpy(&bits, p, 2);
    return dtype == DType::f16 ? halfBitsToFloat(bits)
                               : bfloat16BitsToFloat(bits);
  }
  case DType::i8:
    return static_cast<int8_t>(*p);
  case DType::i32: {
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  case DType::i64: {
    int64_t v;
    std::memcpy(&v, p, 8);
    return static_cast<double>(v);
  }
  case DType::boolean:
    return *p ? 1 : 0;
  }
  return 0;
}

void TensorData::set(int64_t index, double value) {
  uint8_t *p = bytes.data() + index * elementBytes;
  switch (dtype) {
  case DType::f32: {
    if (holdsDoubles()) {
      std::memcpy(p, &value, 8);
      return;
    }
    float v = static_cast<float>(value);
    std::memcpy(p, &v, 4);
    return;
  }
  case DType::f16:
  case DType::bf16: {
    // Round once from double; the rounded value converts to bits exactly.
    float v = static_cast<float>(roundToDType(value, dtype));
    uint16_t bits = dtype == DType::f16 ? floatToHalfBits(v)
                                        : floatToBFloat16Bits(v);
    std::memcpy(p, &bits, 2);
    return;
  }
  case DType::i8:
  case DType::i32: {
    // Narrowing an int64 is defined; converting an out-of-range double is not.
    int64_t wide = std::isfinite(value) && std::fabs(value) < 9.2e18
                       ? static_cast<int64_t>(value)
                       : 0;
    if (dtype == DType::i8) {
      *p = static_cast<uint8_t>(static_cast<int8_t>(wide));
    } else {
      int32_t v = static_cast<int32_t>(wide);
      std::memcpy(p, &v, 4);
    }
    return;
  }
  case DType::i64: {
    // Saturate: converting an out-of-range double to int64 is undefined.
    int64_t v = std::isnan(value)                   ? 0
                : value >= 9223372036854775807.0    ? INT64_MAX
                : value <= -9223372036854775808.0 ? INT64_MIN
                                                  : static_cast<int64_t>(value);
    std::memcpy(p, &v, 8);
    return;
  }
  case DType::boolean:
    *p = value != 0;
    return;
  }
}

void TensorData::setInt(int64_t index, int64_t value) {
  if (dtype != DType::i64)
    return set(index, static_cast<double>(value));
  std::memcpy(bytes.data() + index * 8, &value, 8);
}

int64_t TensorData::getInt(int64_t index) const {
  if (dtype != DType::i64)
    return static_cast<int64_t>(get(index));
  int64_t v;
  std::memcpy(&v, bytes.data() + index * 8, 8);
  return v;
}

bool TensorData::operator==(const TensorData &other) const {
  return dtype == other.dtype && shape == other.shape && elementBytes == other.elementBytes &&
         bytes == other.bytes;
}

//===----------------------------------------------------------------------===//
// ConstantData
//===----------------------------------------------------------------------===//

static uint64_t splitmix64(uint64_t state) {
  uint64_t z = state + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double fusec::randomConstantElement(uint64_t seed, int64_t index,
                                    DType dtype) {
  uint64_t u = splitmix64((seed << 32) + static_cast<uint64_t>(index));
  if (isFloatDType(dtype))
    return static_cast<double>(u >> 11) * std::ldexp(1.0, -52) - 1.0;
  return static_cast<double>(static_cast<int64_t>(u % 256) - 128);
}

static void flattenDense(const Attr &value, std::vector<const Attr *> &out) {
  if (value.kind == Attr::List) {
    for (const Attr &item : value.list)
      flattenDense(item, out);
    return;
  }
  out.push_back(&value);
}

/// Stores a literal exactly: integers as integers (i64 keeps all bits).
static void setFromLiteral(TensorData &data, int64_t index, const Attr &value) {
  if (value.kind == Attr::Int)
    data.setInt(index, value.intValue);
  else if (value.kind == Attr::Bool)
    data.set(index, value.boolValue ? 1 : 0);
  else
    data.set(index, value.floatValue);
}

TensorData ConstantData::materialize(const Type &type) const {
  std::vector<int64_t> shape;
  for (const Dim &dim : type.getShape())
    shape.push_back(dim.size);
  TensorData data(type.getDType(), shape);
  int64_t count = data.getNumElements();
  switch (form) {
  case Scalar:
  case Splat:
    for (int64_t i = 0; i < count; ++i)
      setFromLiteral(data, i, values.front());
    break;
  case Dense: {
    std::vector<const Attr *> flat;
    for (const Attr &value : values)
      flattenDense(value, flat);
    for (int64_t i = 0; i < count && i < int64_t(flat.size()); ++i)
      setFromLiteral(data, i, *flat[i]);
    break;
  }
  case Random:
    for (int64_t i = 0; i < count; ++i)
      data.set(i, randomConstantElement(seed, i, type.getDType()));
    break;
  case File:
    if (fileContents && fileContents->getNumElements() == count)
      for (int64_t i = 0; i < count; ++i)
        data.getDType() == DType::i64 ? data.setInt(i, fileContents->getInt(i))
                                   : data.set(i, fileContents->get(i));
    break;
  }
  return data;
}

//===----------------------------------------------------------------------===//
// NumPy .npy reader
//===----------------------------------------------------------------------===//

/// The header of an .npy file: the Python dict literal NumPy writes,
/// `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }` padded with
/// spaces and a newline. Parsed as strictly as NumPy's own reader: exactly
/// these three keys, each once; a string, a bool and a tuple of integers
/// (`(3,)`: `(3)` is not a tuple); nothing after the closing brace.
struct NpyHeader {
  std::string descr, shapeText;
  bool fortranOrder = false;
  std::vector<int64_t> shape;
};

static std::optional<NpyHeader> parseNpyHeader(llvm::StringRef text) {
  NpyHeader header;
  auto skipSpace = [&] { text = text.ltrim(" \t\n\r"); };
  auto parseString = [&]() -> std::optional<std::string> {
    if (text.empty() || (text[0] != '\'' && text[0] != '"'))
      return std::nullopt;
    size_t close = text.find(text[0], 1);
    if (close == llvm::StringRef::npos)
      return std::nullopt;
    std::string value = text.substr(1, close - 1).str();
    text = text.drop_front(close + 1);
    return value;
  };
  auto parseShape = [&]() -> bool {
    llvm::StringRef start = text;
    if (!text.consume_front("("))
      return false;
    bool lastHadComma = true;
    for (skipSpace(); !text.consume_front(")"); skipSpace()) {
      if (!lastHadComma)
        return false;
      size_t digits = text.find_first_not_of("0123456789");
      int64_t dim;
      if (digits == 0 || text.substr(0, digits).getAsInteger(10, dim) || dim > kMaxDimSize)
        return false;
      header.shape.push_back(dim);
      text = text.drop_front(digits).ltrim(" ");
      lastHadComma = text.consume_front(",");
    }
    if (header.shape.size() == 1 && !lastHadComma)
      return false;
    header.shapeText = start.substr(0, start.size() - text.size()).str();
    return true;
  };
  std::set<std::string> seen;
  skipSpace();
  if (!text.consume_front("{"))
    return std::nullopt;
  for (skipSpace(); !text.consume_front("}"); skipSpace()) {
    std::optional<std::string> key = parseString();
    skipSpace();
    if (!key || !seen.insert(*key).second || !text.consume_front(":"))
      return std::nullopt;
    skipSpace();
    if (*key == "descr") {
      std::optional<std::string> descr = parseString();
      if (!descr)
        return std::nullopt;
      header.descr = *descr;
    } else if (*key == "fortran_order") {
      header.fortranOrder = text.startswith("True");
      if (!text.consume_front("True") && !text.consume_front("False"))
        return std::nullopt;
    } else if (*key != "shape" || !parseShape()) {
      return std::nullopt;
    }
    skipSpace();
    if (!text.consume_front(",") && !text.ltrim().startswith("}"))
      return std::nullopt;
  }
  skipSpace();
  if (!text.empty() || seen.size() != 3)
    return std::nullopt;
  return header;
}

std::shared_ptr<TensorData> fusec::readNpyFile(llvm::StringRef path,
                                               std::string &error) {
  std::string readError;
  std::unique_ptr<llvm::MemoryBuffer> buffer = readFile(path, readError);
  if (!buffer) {
    error = "cannot read '" + path.str() + "': " + readError;
    return nullptr;
  }
  llvm::StringRef bytes = buffer->getBuffer();
  if (bytes.size() < 10 || !bytes.startswith("\x93NUMPY")) {
    error = "'" + path.str() + "' is not a NumPy .npy file (bad magic)";
    return nullptr;
  }
  unsigned major = static_cast<uint8_t>(bytes[6]);
  size_t headerLength, headerStart;
  if (major == 1) {
    headerLength = uint8_t(bytes[8]) | (uint8_t(bytes[9]) << 8);
    headerStart = 10;
  } else if ((major == 2 || major == 3) && bytes.size() >= 12) {
    headerLength = uint8_t(bytes[8]) | (uint8_t(bytes[9]) << 8) |
                   (size_t(uint8_t(bytes[10])) << 16) |
                   (size_t(uint8_t(bytes[11])) << 24);
    headerStart = 12;
  } else {
    error = "'" + path.str() + "' has an unsupported .npy version";
    return nullptr;
  }
  if (headerStart + headerLength > bytes.size()) {
    error = "'" + path.str() + "' has a truncated .npy header";
    return nullptr;
  }
  std::optional<NpyHeader> header = parseNpyHeader(bytes.substr(headerStart, headerLength));
  if (!header) {
    error = "'" + path.str() + "' has a malformed .npy header";
    return nullptr;
  }
  if (header->fortranOrder) {
    error = "'" + path.str() + "' is in Fortran order; only C order is read";
    return nullptr;
  }
  static const std::pair<const char *, DType> descrs[] = {
      {"<f4", DType::f32}, {"<f2", DType::f16}, {"|i1", DType::i8},
      {"<i1", DType::i8},  {"<i4", DType::i32}, {"<i8", DType::i64},
      {"|b1", DType::boolean}};
  std::optional<DType> dtype;
  for (const auto &[text, value] : descrs)
    if (header->descr == text)
      dtype = value;
  if (!dtype) {
    error = "'" + path.str() + "' has unsupported element type '" + header->descr + "'";
    return nullptr;
  }
  const std::vector<int64_t> &shape = header->shape;
  const std::string &shapeText = header->shapeText;
  size_t dataStart = headerStart + headerLength;
  uint64_t count = 1;
  for (int64_t dim : shape) {
    if (dim != 0 && count > (bytes.size() + 1) / uint64_t(dim)) {
      error = "'" + path.str() + "' is shorter than its shape " + shapeText;
      return nullptr;
    }
    count *= uint64_t(dim);
  }
  size_t payload = count * dtypeBytes(*dtype);
  if (bytes.size() - dataStart != payload) {
    error = "'" + path.str() + "' holds " +
            std::to_string(bytes.size() - dataStart) + " data bytes, expected " +
            std::to_string(payload);
    return nullptr;
  }
  auto data = std::make_shared<TensorData>(*dtype, shape);
  if (payload)
    std::memcpy(data->data(), bytes.data() + dataStart, payload);
  return data;
}
