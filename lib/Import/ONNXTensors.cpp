//===- ONNXTensors.cpp - ONNX tensors, dtypes and shape values ------------===//
//
// TensorProto contents become TensorData in one copy: raw_data (and
// external data) are little-endian in the same storage fusec uses (f16/bf16
// as 16-bit patterns, bool as one byte); typed fields are converted element
// by element. Writing imported weights beside a `.fir` lives here too.
//
//===----------------------------------------------------------------------===//
#include "ONNXImporter.h"

#include "fusec/Exec/Exec.h"
#include "fusec/Support/FileIO.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <cstring>

using namespace fusec;
using namespace fusec::onnximport;

std::optional<DType> onnximport::mapDType(int64_t onnxType) {
  switch (onnxType) {
  case onnx::TensorProto::FLOAT: return DType::f32;
  case onnx::TensorProto::FLOAT16: return DType::f16;
  case onnx::TensorProto::BFLOAT16: return DType::bf16;
  case onnx::TensorProto::INT8: return DType::i8;
  case onnx::TensorProto::INT32: return DType::i32;
  case onnx::TensorProto::INT64: return DType::i64;
  case onnx::TensorProto::BOOL: return DType::boolean;
  default: return std::nullopt;
  }
}

std::string onnximport::onnxTypeName(int64_t onnxType) {
  if (onnxType >= 0 && onnxType <= INT32_MAX &&
      onnx::TensorProto::DataType_IsValid(int(onnxType)))
    return onnx::TensorProto::DataType_Name(onnx::TensorProto::DataType(onnxType));
  return "code " + std::to_string(onnxType) + " (not an ONNX element type)";
}

SymbolicSize SymbolicSize::of(const Dim &dim) {
  return dim.isSymbolic() ? SymbolicSize{1, {dim.symbol}} : of(dim.size);
}

std::optional<Dim> SymbolicSize::asDim() const {
  if (isStatic())
    return Dim::of(size);
  if (symbols.size() == 1 && size == 1)
    return Dim::named(symbols[0]);
  return std::nullopt;
}

std::string SymbolicSize::str() const {
  std::string text;
  for (const std::string &symbol : symbols)
    text += (text.empty() ? "" : " * ") + symbol;
  if (size != 1 || isStatic())
    text += (text.empty() ? "" : " * ") + std::to_string(size);
  return text;
}

bool SymbolicSize::operator==(const SymbolicSize &other) const {
  if (size != other.size || symbols.size() != other.symbols.size())
    return false;
  std::vector<std::string> mine = symbols, theirs = other.symbols;
  llvm::sort(mine);
  llvm::sort(theirs);
  return mine == theirs;
}

std::optional<SymbolicSize> onnximport::productOf(const std::vector<SymbolicSize> &dims) {
  SymbolicSize product = SymbolicSize::of(1);
  for (const SymbolicSize &dim : dims) {
    if (__builtin_mul_overflow(product.size, dim.size, &product.size))
      return std::nullopt;
    product.symbols.insert(product.symbols.end(), dim.symbols.begin(), dim.symbols.end());
  }
  if (product.size == 0)
    product.symbols.clear();
  return product;
}

std::optional<SymbolicSize> onnximport::quotientOf(const SymbolicSize &x, const SymbolicSize &y) {
  if (y.size == 0 || x.size % y.size != 0)
    return std::nullopt;
  SymbolicSize quotient = SymbolicSize::of(x.size / y.size);
  quotient.symbols = x.symbols;
  for (const std::string &symbol : y.symbols) {
    auto it = llvm::find(quotient.symbols, symbol);
    if (it == quotient.symbols.end())
      return std::nullopt;
    quotient.symbols.erase(it);
  }
  return quotient;
}

std::string onnximport::dimOptions(const std::vector<SymbolicSize> &sizes) {
  std::vector<std::string> names;
  for (const SymbolicSize &size : sizes)
    for (const std::string &symbol : size.symbols)
      if (!llvm::is_contained(names, symbol))
        names.push_back(symbol);
  std::string options;
  for (const std::string &name : names)
    options += (options.empty() ? "--dim " : ",") + name + "=SIZE";
  return options;
}

const std::string *ShapeValue::firstSymbol() const {
  for (const SymbolicSize &dim : elements)
    if (dim.isSymbolic())
      return &dim.symbols[0];
  return nullptr;
}

bool ShapeValue::isStatic() const {
  return llvm::all_of(elements, [](const SymbolicSize &dim) { return dim.isStatic(); });
}

std::optional<ShapeValue> onnximport::shapeOfConstant(const TensorData &data) {
  if (!isIntDType(data.getDType()) || data.getShape().size() > 1 || data.getNumElements() > 64)
    return std::nullopt;
  ShapeValue shape;
  shape.scalar = data.getShape().empty();
  shape.dtype = data.getDType();
  for (int64_t i = 0; i < data.getNumElements(); ++i)
    shape.elements.push_back(SymbolicSize::of(data.getInt(i)));
  return shape;
}

TensorData onnximport::tensorOfShape(const ShapeValue &shape) {
  std::vector<int64_t> dims;
  if (!shape.scalar)
    dims.push_back(int64_t(shape.elements.size()));
  TensorData data(shape.dtype, dims);
  for (size_t i = 0; i < shape.elements.size(); ++i)
    data.setInt(int64_t(i), shape.elements[i].size);
  return data;
}

Attr onnximport::makeIntList(const std::vector<int64_t> &values) {
  std::vector<Attr> items;
  for (int64_t v : values)
    items.push_back(Attr::makeInt(v));
  return Attr::makeList(std::move(items));
}

std::optional<std::vector<Dim>> onnximport::firDims(const std::vector<SymbolicSize> &sizes) {
  std::vector<Dim> dims;
  for (const SymbolicSize &size : sizes) {
    std::optional<Dim> dim = size.asDim();
    if (!dim)
      return std::nullopt;
    dims.push_back(*dim);
  }
  return dims;
}

Attr onnximport::makeShapeList(const std::vector<Dim> &dims) {
  std::vector<Attr> items;
  for (const Dim &dim : dims)
    items.push_back(dim.isSymbolic() ? Attr::makeIdent(dim.symbol) : Attr::makeInt(dim.size));
  return Attr::makeList(std::move(items));
}

std::optional<int64_t> onnximport::normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

/// The bytes of external data (`location`, `offset`, `length` entries): a
/// view into `file`, which holds the mapped file.
static bool readExternal(const onnx::TensorProto &tensor, llvm::StringRef modelDirectory,
                         std::unique_ptr<llvm::MemoryBuffer> &file, llvm::StringRef &bytes,
                         std::string &error) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const onnx::StringStringEntryProto &entry : tensor.external_data()) {
    if (entry.key() == "location") {
      location = entry.value();
    } else if (entry.key() == "offset" || entry.key() == "length") {
      // A decimal count of bytes; anything else is malformed, not 0.
      int64_t &field = entry.key() == "offset" ? offset : length;
      if (llvm::StringRef(entry.value()).getAsInteger(10, field) || field < 0) {
        error = "the external data of tensor '" + tensor.name() + "' has " + entry.key() +
                " '" + entry.value() + "', not a count of bytes";
        return false;
      }
    }
  }
  // A model names files beside it: `../../etc/passwd` or an absolute path
  // would read whatever the user can (ONNX's checker and ONNX Runtime refuse
  // them too).
  bool escapes = llvm::sys::path::is_absolute(location) ||
                 llvm::sys::path::has_root_name(location) ||
                 llvm::any_of(llvm::make_range(llvm::sys::path::begin(location),
                                               llvm::sys::path::end(location)),
                              [](llvm::StringRef part) { return part == ".."; });
  if (escapes) {
    error = "the external data of tensor '" + tensor.name() + "' is at '" + location +
            "', outside the model's directory (a location must be a relative path "
            "without '..')";
    return false;
  }
  llvm::SmallString<256> path(modelDirectory);
  llvm::sys::path::append(path, location);
  std::string readError;
  std::unique_ptr<llvm::MemoryBuffer> buffer = location.empty() ? nullptr : readFile(path, readError);
  if (!buffer) {
    error = "cannot read the external data '" + location + "' of tensor '" + tensor.name() + "'" +
            (readError.empty() ? "" : ": " + readError);
    return false;
  }
  llvm::StringRef all = buffer->getBuffer();
  if (offset < 0 || size_t(offset) > all.size() ||
      (length >= 0 && size_t(length) > all.size() - size_t(offset))) {
    error = "the external data of tensor '" + tensor.name() + "' lies outside '" + location + "'";
    return false;
  }
  bytes = all.substr(offset, length < 0 ? llvm::StringRef::npos : size_t(length));
  file = std::move(buffer);
  return true;
}

std::shared_ptr<TensorData> onnximport::readTensor(const onnx::TensorProto &tensor,
                                                   llvm::StringRef modelDirectory,
                                                   std::string &error) {
  // uint8 (quantized data, ONNX's QDQ format) is read widened to i32; the
  // importer lets only DequantizeLinear and QuantizeLinear read it.
  bool widen = tensor.data_type() == onnx::TensorProto::UINT8;
  std::optional<DType> dtype = widen ? DType::i32 : mapDType(tensor.data_type());
  if (!dtype) {
    error = "tensor '" + tensor.name() + "' has element type " +
            onnxTypeName(tensor.data_type()) + ", which fusec does not support";
    return nullptr;
  }
  std::vector<int64_t> shape(tensor.dims().begin(), tensor.dims().end());
  int64_t count = 1;
  for (int64_t dim : shape) {
    if (dim < 0 || dim > kMaxDimSize || (dim && count > kMaxDimSize / dim)) {
      error = "tensor '" + tensor.name() + "' has an invalid shape";
      return nullptr;
    }
    count *= dim;
  }
  size_t bytes = size_t(count) * (widen ? 1 : dtypeBytes(*dtype));
  std::unique_ptr<llvm::MemoryBuffer> externalFile;
  std::optional<llvm::StringRef> raw;
  if (tensor.has_raw_data())
    raw = tensor.raw_data();
  if (tensor.data_location() == onnx::TensorProto::EXTERNAL) {
    llvm::StringRef external;
    if (!readExternal(tensor, modelDirectory, externalFile, external, error))
      return nullptr;
    raw = external;
  }
  // The sizes are checked before anything is allocated: a corrupt dim must
  // not ask for terabytes.
  int64_t typed = *dtype == DType::f32   ? tensor.float_data_size()
                  : *dtype == DType::i64 ? tensor.int64_data_size()
                                         : tensor.int32_data_size();
  if (raw ? raw->size() != bytes : typed != count) {
    error = "tensor '" + tensor.name() + "' holds " +
            (raw ? std::to_string(raw->size()) + " bytes of data"
                 : std::to_string(typed) + " values") +
            " where its shape [" + llvm::join(llvm::map_range(shape, [](int64_t d) {
              return std::to_string(d);
            }), ", ") + "] of " + (widen ? "uint8" : dtypeName(*dtype).str()) + " needs " +
            (raw ? std::to_string(bytes) + " bytes" : std::to_string(count) + " values");
    return nullptr;
  }
  auto data = std::make_shared<TensorData>(*dtype, shape);
  if (raw && widen) {
    for (int64_t i = 0; i < count; ++i)
      data->setInt(i, uint8_t((*raw)[size_t(i)]));
    return data;
  }
  if (raw) {
    if (bytes)
      std::memcpy(data->data(), raw->data(), bytes);
    return data;
  }
  switch (*dtype) {
  case DType::f32:
    if (bytes)
      std::memcpy(data->data(), tensor.float_data().data(), bytes);
    return data;
  case DType::i64:
    for (int64_t i = 0; i < count; ++i)
      data->setInt(i, tensor.int64_data(int(i)));
    return data;
  default:
    // int32_data holds i32, i8 and bool values and f16/bf16 bit patterns.
    for (int64_t i = 0; i < count; ++i) {
      int32_t value = tensor.int32_data(int(i));
      if (widen && (value < 0 || value > 255)) {
        error = "tensor '" + tensor.name() + "' holds " + std::to_string(value) +
                ", which is no uint8 value";
        return nullptr;
      }
      if (*dtype == DType::f16 || *dtype == DType::bf16) {
        uint16_t bits = uint16_t(value);
        std::memcpy(data->data() + 2 * i, &bits, 2);
      } else {
        data->setInt(i, value);
      }
    }
    return data;
  }
}

std::string fusec::writeImportedWeights(const Module &module, llvm::StringRef directory) {
  std::string problem;
  for (const auto &function : module.functions)
    function->forEachBinding([&](const Binding &binding) {
      if (!problem.empty() || binding.kind != ExprKind::Constant ||
          binding.constant->form != ConstantData::File || !binding.constant->fileContents)
        return;
      llvm::SmallString<256> path(directory);
      llvm::sys::path::append(path, binding.constant->path);
      if (std::error_code ec =
              llvm::sys::fs::create_directories(llvm::sys::path::parent_path(path)))
        problem = "cannot create the directory of '" + path.str().str() + "': " + ec.message();
      else
        problem = writeNpyFile(path, *binding.constant->fileContents);
    });
  return problem;
}
