//===- ONNXNodeContext.cpp - What a converter sees of one node ------------===//
//
// NodeContext (ONNXImporter.h): a node's inputs (values, constants, shape
// values; every accessor marks the input read, so that the importer can
// reject a given input no converter looked at), its attributes (typed: a
// value of another type, or in another type's field, is an error; every
// read marks the attribute understood), and the emission of bindings and
// outputs into the importer's function.
//
//===----------------------------------------------------------------------===//
#include "ONNXImporter.h"

using namespace fusec;
using namespace fusec::onnximport;

bool NodeContext::hasInput(size_t i) const {
  if (i >= size_t(node.input_size()))
    return false;
  // Every accessor of input i asks this first: it marks the input read.
  inputsRead.resize(size_t(node.input_size()));
  inputsRead[i] = true;
  return !node.input(int(i)).empty();
}

bool NodeContext::wasRead(size_t i) const { return i < inputsRead.size() && inputsRead[i]; }

bool NodeContext::hasOutput(size_t i) const {
  return i < size_t(node.output_size()) && !node.output(int(i)).empty();
}

std::string NodeContext::describe() const {
  // A node without a name is named by its first output.
  std::string which = !node.name().empty() ? "node '" + node.name() + "'"
                      : node.output_size()  ? "the node computing '" + node.output(0) + "'"
                                            : std::string("a node without name or outputs");
  return which + " (" + node.op_type() + ", opset " + std::to_string(opset) + ")";
}

bool NodeContext::fail(const llvm::Twine &message) {
  if (importer.error.empty())
    importer.error = describe() + ": " + message.str();
  return false;
}

Value *NodeContext::input(size_t i) {
  if (!hasInput(i)) {
    fail("input " + llvm::Twine(i) + " is missing");
    return nullptr;
  }
  if (auto substitute = substitutes.find(i); substitute != substitutes.end())
    return substitute->second;
  const std::string &name = node.input(int(i));
  auto found = importer.values.find(name);
  if (found != importer.values.end())
    return found->second;
  if (importer.constants.count(name))
    return importer.materialize(name);
  // A shape value read as data (x / x.shape[1], a flattened index): a
  // tensor computed from the symbolic dims, made once.
  auto shape = importer.shapes.find(name);
  if (shape != importer.shapes.end() && shape->second.firstSymbol()) {
    Value *value = emitShapeValue(*this, shape->second, name);
    if (value)
      importer.values[name] = value;
    return value;
  }
  fail("input '" + name + "' is not defined by an earlier node, an initializer or a graph input");
  return nullptr;
}

const TensorData *NodeContext::constant(size_t i) const {
  if (!hasInput(i) || substitutes.count(i))
    return nullptr;
  auto found = importer.constants.find(node.input(int(i)));
  return found == importer.constants.end() ? nullptr : found->second.get();
}

std::optional<ShapeValue> NodeContext::shapeValue(size_t i) const {
  if (!hasInput(i) || substitutes.count(i))
    return std::nullopt;
  auto found = importer.shapes.find(node.input(int(i)));
  if (found != importer.shapes.end())
    return found->second;
  if (const TensorData *data = constant(i))
    return shapeOfConstant(*data);
  return std::nullopt;
}

std::optional<std::vector<int64_t>> NodeContext::ints(size_t i, const char *what) {
  std::optional<ShapeValue> shape = shapeValue(i);
  if (const std::string *symbol = shape ? shape->firstSymbol() : nullptr) {
    fail(llvm::Twine(what) + " (input " + llvm::Twine(i) + ") involves the symbolic dim '" +
         *symbol + "', but must be constant here (" + dimOptions(shape->elements) +
         " fixes its size)");
    return std::nullopt;
  }
  if (!shape) {
    fail(llvm::Twine(what) + " (input " + llvm::Twine(i) +
         ") must be a constant integer tensor; computed values are not supported");
    return std::nullopt;
  }
  std::vector<int64_t> values;
  for (const SymbolicSize &dim : shape->elements)
    values.push_back(dim.size);
  return values;
}

const Type *NodeContext::typeOf(size_t i) const {
  if (!hasInput(i))
    return nullptr;
  if (auto substitute = substitutes.find(i); substitute != substitutes.end())
    return &substitute->second->type;
  auto found = importer.values.find(node.input(int(i)));
  return found == importer.values.end() ? nullptr : &found->second->type;
}

std::optional<Shape> NodeContext::inputShape(size_t i) const {
  if (const Type *type = typeOf(i))
    return type->getShape();
  const TensorData *data = constant(i);
  if (!data)
    return std::nullopt;
  Shape shape;
  for (int64_t size : data->getShape())
    shape.push_back(Dim::of(size));
  return shape;
}

const AxisRuns *NodeContext::runsOf(size_t i) const {
  if (!hasInput(i) || substitutes.count(i))
    return nullptr;
  auto found = importer.groupedRuns.find(node.input(int(i)));
  return found == importer.groupedRuns.end() ? nullptr : &found->second;
}

std::vector<SymbolicSize> onnximport::onnxDimsOf(const Shape &fir, const AxisRuns *runs) {
  std::vector<SymbolicSize> dims;
  size_t axis = 0;
  for (size_t d = 0; d < (runs ? runs->size() : fir.size()); ++d) {
    std::vector<SymbolicSize> factors;
    for (int64_t k = 0; k < (runs ? (*runs)[d] : 1); ++k)
      factors.push_back(SymbolicSize::of(fir[axis++]));
    dims.push_back(*productOf(factors)); // a FIR type's element count fits int64
  }
  return dims;
}

std::optional<std::vector<SymbolicSize>> NodeContext::onnxDims(size_t i) const {
  std::optional<Shape> shape = inputShape(i);
  if (!shape)
    return std::nullopt;
  return onnxDimsOf(*shape, runsOf(i));
}

const onnx::AttributeProto *NodeContext::findAttr(llvm::StringRef name) const {
  for (const onnx::AttributeProto &attr : node.attribute())
    if (attr.name() == name)
      return &attr;
  return nullptr;
}

/// Attribute `name` when it holds a `kind` value. An attribute of another
/// type is an error (a float `axis` would otherwise read as 0); one with
/// no declared type (writers before IR version 2) is taken as it is.
const onnx::AttributeProto *
NodeContext::typedAttr(llvm::StringRef name, onnx::AttributeProto::AttributeType kind) {
  used.insert(name.str());
  const onnx::AttributeProto *attr = findAttr(name);
  if (!attr)
    return nullptr;
  using AP = onnx::AttributeProto;
  // A reference to an attribute of an enclosing function: the main graph
  // has none, so the value would read as 0 (onnx.checker's rule too).
  if (attr->has_ref_attr_name()) {
    fail("attribute '" + name + "' refers to a function attribute '" + attr->ref_attr_name() +
         "' (ref_attr_name), which only a function body may do");
    return nullptr;
  }
  if (attr->type() == AP::UNDEFINED && importer.irVersion >= 3) {
    fail("attribute '" + name + "' has no type (only models of IR version 1 and 2 may leave "
         "it out; this one is version " + std::to_string(importer.irVersion) + ")");
    return nullptr;
  }
  if (attr->type() != kind && attr->type() != AP::UNDEFINED) {
    fail("attribute '" + name + "' must be " + AP::AttributeType_Name(kind) + ", not " +
         AP::AttributeType_Name(attr->type()));
    return nullptr;
  }
  // No field but the type's may hold the value (an INT-tagged value stored
  // in `f` would read as 0). The type's own field may be absent: writers
  // of proto3 semantics leave out a 0.
  bool fields[] = {attr->has_f(),        attr->has_i(),          attr->has_s(),
                   attr->has_t(),        attr->has_g(),          attr->floats_size() > 0,
                   attr->ints_size() > 0, attr->strings_size() > 0, attr->tensors_size() > 0,
                   attr->graphs_size() > 0};
  AP::AttributeType kinds[] = {AP::FLOAT, AP::INT,  AP::STRING,  AP::TENSOR,  AP::GRAPH,
                               AP::FLOATS, AP::INTS, AP::STRINGS, AP::TENSORS, AP::GRAPHS};
  bool holds = true;
  for (size_t k = 0; k < std::size(fields); ++k)
    holds &= !fields[k] || kinds[k] == kind;
  if (!holds) {
    fail("attribute '" + name + "' holds a value of another type than its " +
         AP::AttributeType_Name(kind));
    return nullptr;
  }
  // Untyped (IR versions 1 and 2) and empty: nothing says it is a 0.
  if (attr->type() == AP::UNDEFINED && llvm::none_of(fields, [](bool set) { return set; })) {
    fail("attribute '" + name + "' has neither a type nor a value");
    return nullptr;
  }
  return attr;
}

bool NodeContext::hasAttr(llvm::StringRef name) const { return findAttr(name) != nullptr; }

int64_t NodeContext::attrInt(llvm::StringRef name, int64_t defaultValue) {
  const onnx::AttributeProto *attr = typedAttr(name, onnx::AttributeProto::INT);
  return attr ? attr->i() : defaultValue;
}

double NodeContext::attrFloat(llvm::StringRef name, double defaultValue) {
  const onnx::AttributeProto *attr = typedAttr(name, onnx::AttributeProto::FLOAT);
  return attr ? attr->f() : defaultValue;
}

std::string NodeContext::attrString(llvm::StringRef name, std::string defaultValue) {
  const onnx::AttributeProto *attr = typedAttr(name, onnx::AttributeProto::STRING);
  return attr ? attr->s() : defaultValue;
}

std::optional<std::vector<int64_t>> NodeContext::attrInts(llvm::StringRef name) {
  const onnx::AttributeProto *attr = typedAttr(name, onnx::AttributeProto::INTS);
  if (!attr)
    return std::nullopt;
  return std::vector<int64_t>(attr->ints().begin(), attr->ints().end());
}

std::vector<double> NodeContext::attrFloats(llvm::StringRef name) {
  const onnx::AttributeProto *attr = typedAttr(name, onnx::AttributeProto::FLOATS);
  if (!attr)
    return {};
  return std::vector<double>(attr->floats().begin(), attr->floats().end());
}

std::vector<std::string> NodeContext::attrStrings(llvm::StringRef name) {
  const onnx::AttributeProto *attr = typedAttr(name, onnx::AttributeProto::STRINGS);
  if (!attr)
    return {};
  return std::vector<std::string>(attr->strings().begin(), attr->strings().end());
}

const onnx::TensorProto *NodeContext::attrTensor(llvm::StringRef name) {
  const onnx::AttributeProto *attr = typedAttr(name, onnx::AttributeProto::TENSOR);
  return attr && attr->has_t() ? &attr->t() : nullptr;
}

const onnx::GraphProto *NodeContext::attrGraph(llvm::StringRef name) {
  const onnx::AttributeProto *attr = typedAttr(name, onnx::AttributeProto::GRAPH);
  return attr && attr->has_g() ? &attr->g() : nullptr;
}

bool NodeContext::forward(size_t i, const std::string &source) {
  // A name may be a shape value and a constant at once; both carry over.
  auto shape = importer.shapes.find(source);
  auto constant = importer.constants.find(source);
  if (shape != importer.shapes.end())
    defineShape(i, shape->second);
  if (constant != importer.constants.end())
    importer.constants[node.output(int(i))] = constant->second;
  if (shape != importer.shapes.end() || constant != importer.constants.end())
    return true;
  auto value = importer.values.find(source);
  if (value == importer.values.end())
    return fail("'" + source + "' is not defined by an earlier node, an initializer or a graph "
                "input");
  define(i, value->second);
  if (auto runs = importer.groupedRuns.find(source); runs != importer.groupedRuns.end())
    importer.groupedRuns[node.output(int(i))] = runs->second;
  return true;
}

std::optional<DType> NodeContext::dtypeOf(int64_t onnxType, const char *what) {
  std::optional<DType> dtype = mapDType(onnxType);
  if (!dtype)
    fail(llvm::Twine(what) + " has element type " + onnxTypeName(onnxType) +
         ", which fusec does not support");
  return dtype;
}

Operand NodeContext::literal(double value, DType dtype) {
  Operand operand;
  operand.literal = isFloatDType(dtype) ? Attr::makeFloat(value)
                    : dtype == DType::boolean ? Attr::makeBool(value != 0)
                                              : Attr::makeInt(saturatingInt64(value));
  return operand;
}

Value *NodeContext::emit(llvm::StringRef op, std::vector<Operand> operands, Attrs attrs,
                         llvm::StringRef nameHint) {
  if (!importer.error.empty())
    return nullptr;
  for (const Operand &operand : operands)
    if (!operand.isLiteral() && !operand.value)
      return nullptr;
  // A 0 in FIR's reshape copies the operand's dim (as TVM's): a converter's
  // reshape to a zero-size dim is an empty tensor, a splat of that shape.
  // (ONNX's Reshape with allowzero = 1 reaches this too.)
  const Attr *reshapeTo = op == "reshape" ? attrs.get("shape") : nullptr;
  if (reshapeTo && llvm::any_of(reshapeTo->list, [](const Attr &entry) {
        return entry.kind == Attr::Int && entry.intValue == 0;
      })) {
    const Type &input = operands[0].value->type;
    Shape target;
    for (const Attr &entry : reshapeTo->list) {
      if (entry.kind != Attr::Int || entry.intValue < 0 ||
          input.getStaticNumElements() != std::optional<int64_t>(0))
        return fail("cannot reshape " + input.str() + " to " + reshapeTo->str() +
                    ": a zero-size dim needs an empty operand and static sizes"),
               nullptr;
      target.push_back(Dim::of(entry.intValue));
    }
    return emitSplat(0, input.getDType(), target, nameHint.empty() ? node.output(0) : nameHint);
  }
  // An error about symbolic dims names the option that sizes them: the
  // operands' dims the message names, else all of them.
  std::vector<std::string> symbols;
  for (const Operand &operand : operands)
    if (!operand.isLiteral() && operand.value->type.isTensor())
      for (const Dim &dim : operand.value->type.getShape())
        if (dim.isSymbolic() && !llvm::is_contained(symbols, dim.symbol))
          symbols.push_back(dim.symbol);
  if (const Attr *shape = attrs.get("shape"); shape && shape->kind == Attr::List)
    for (const Attr &entry : shape->list) // a reshape's or broadcast's target dims
      if (entry.kind == Attr::Ident && !llvm::is_contained(symbols, entry.text))
        symbols.push_back(entry.text);
  auto binding = std::make_unique<Binding>();
  binding->kind = ExprKind::Op;
  binding->callee = op.str();
  // Kept for noteEquatedDims, which only a symbolic dim can concern.
  std::vector<Operand> symbolicOperands;
  Attrs symbolicAttrs;
  if (!symbols.empty()) {
    symbolicOperands = operands;
    symbolicAttrs = attrs;
  }
  binding->operands = std::move(operands);
  binding->attrs = std::move(attrs);
  std::string problem;
  std::string hint = nameHint.empty() && node.output_size() ? node.output(0) : nameHint.str();
  Value *value = importer.addBinding(std::move(binding), hint, problem);
  if (!value) {
    if (!importer.equatedDims && !symbols.empty())
      importer.noteEquatedDims(describe(), op, symbolicOperands, symbolicAttrs, symbols);
    llvm::StringRef text(problem);
    auto isNameChar = [](char ch) {
      return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_';
    };
    auto named = [&](const std::string &symbol) {
      for (size_t at = text.find(symbol); at != llvm::StringRef::npos;
           at = text.find(symbol, at + 1))
        if ((at == 0 || !isNameChar(text[at - 1])) &&
            (at + symbol.size() == text.size() || !isNameChar(text[at + symbol.size()])))
          return true;
      return false;
    };
    // The dims the message names (a reshape that no symbolic size divides,
    // as when two inputs name one dim differently), else all of them where
    // it speaks of symbolic dims.
    std::vector<SymbolicSize> sizes;
    for (const std::string &symbol : symbols)
      if (named(symbol))
        sizes.push_back(SymbolicSize{1, {symbol}});
    bool aboutSymbols = !sizes.empty() || text.contains("symbolic") || text.contains("a product");
    if (sizes.empty())
      for (const std::string &symbol : symbols)
        sizes.push_back(SymbolicSize{1, {symbol}});
    if (!sizes.empty() && aboutSymbols && !text.contains("--dim"))
      problem += " (" + dimOptions(sizes) +
                 (sizes.size() == 1 ? " fixes a dim's size)" : " fixes the dims' sizes)");
    fail(problem);
  }
  return value;
}

Value *NodeContext::emitConstant(TensorData data, llvm::StringRef nameHint) {
  std::string name = nameHint.str();
  while (importer.constants.count(name) || importer.values.count(name))
    name += "_";
  importer.constants[name] = std::make_shared<TensorData>(std::move(data));
  return importer.materialize(name);
}

Value *NodeContext::emitSplat(double value, DType dtype, const Shape &shape,
                             llvm::StringRef nameHint) {
  if (!importer.error.empty())
    return nullptr;
  // A constant's shape is static: a splat over a symbolic dim (padding
  // beside a dynamic batch) is a 0-d splat broadcast to it.
  if (llvm::any_of(shape, [](const Dim &dim) { return dim.isSymbolic(); })) {
    Value *scalar = emitSplat(value, dtype, {}, nameHint.str() + "_scalar");
    Attrs attrs;
    attrs.set("shape", makeShapeList(shape));
    return scalar ? emit("broadcast_to", {Operand::of(scalar)}, attrs, nameHint) : nullptr;
  }
  auto binding = std::make_unique<Binding>();
  binding->kind = ExprKind::Constant;
  binding->constant = std::make_unique<ConstantData>();
  binding->constant->form = ConstantData::Splat;
  binding->constant->values.push_back(literal(value, dtype).literal);
  binding->result = std::make_unique<Value>();
  binding->result->type = Type::tensor(dtype, shape);
  binding->writtenType = binding->result->type;
  std::string problem;
  return importer.addBinding(std::move(binding), nameHint, problem);
}

void NodeContext::define(size_t i, Value *value) {
  if (hasOutput(i) && value)
    importer.values[node.output(int(i))] = value;
}

void NodeContext::defineConstant(size_t i, TensorData data) {
  if (!hasOutput(i))
    return;
  if (std::optional<ShapeValue> shape = shapeOfConstant(data))
    importer.shapes[node.output(int(i))] = *shape;
  importer.constants[node.output(int(i))] = std::make_shared<TensorData>(std::move(data));
}

void NodeContext::defineGrouped(size_t i, Value *value, AxisRuns runs) {
  if (!hasOutput(i) || !value)
    return;
  // A group of static factors (the unit axes a reduction keeps of a
  // grouped dim) is a plain dim again.
  Shape shape, collapsed;
  bool changed = false;
  size_t axis = 0;
  for (int64_t &run : runs) {
    Shape factors(value->type.getShape().begin() + axis,
                  value->type.getShape().begin() + axis + run);
    axis += run;
    bool isStatic = llvm::all_of(factors, [](const Dim &dim) { return dim.isStatic(); });
    if (run > 1 && isStatic) {
      int64_t size = 1;
      for (const Dim &dim : factors)
        size *= dim.size; // a FIR type's element count fits int64
      collapsed.push_back(Dim::of(size));
      run = 1;
      changed = true;
    } else {
      collapsed.insert(collapsed.end(), factors.begin(), factors.end());
    }
  }
  if (changed)
    value = reshapeTo(*this, value, collapsed, node.output(int(i)));
  define(i, value);
  if (value && llvm::any_of(runs, [](int64_t run) { return run != 1; }))
    importer.groupedRuns[node.output(int(i))] = std::move(runs);
}

void NodeContext::defineShape(size_t i, ShapeValue shape) {
  if (!hasOutput(i))
    return;
  if (shape.isStatic())
    return defineConstant(i, tensorOfShape(shape));
  importer.shapes[node.output(int(i))] = std::move(shape);
}
