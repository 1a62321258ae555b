//===- ONNXImporter.cpp - ONNX models to fusec modules --------------------===//
//
// Contract: a ModelProto (opsets 13-17 of the default domain, the target;
// older ones where the converters know the operators' older forms) becomes a
// module with one function @main; every node is converted by its entry in
// the operator table, or the import stops with a message naming the
// operator type, the node and the opset. Nothing the file holds reaches an
// assertion: sizes, indices and types are checked here or by the op
// registry's inference, whose message is reported against the node.
//
// Algorithm:
//   1. parse the file (protobuf-lite), inline the model's local functions
//      (ONNXFunctions.cpp) and pick the default domain's opset;
//   2. initializers become constants (TensorData, not yet bindings);
//   3. the other graph inputs become parameters; a dim with a name becomes
//      a symbolic dim of that (sanitized) name;
//   4. each node, in file order: its converter reads inputs and attributes
//      and emits bindings into the function's dataflow block; an attribute
//      that no converter read is an error (never silently ignored);
//   5. the graph outputs are returned (constants materialized), and the
//      module is type-checked and verified as a whole.
//
//===----------------------------------------------------------------------===//
#include "ONNXImporter.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/xxhash.h"

#include "fusec/Support/FileIO.h"
#include "fusec/Support/Support.h"
#include "fusec/Transforms/Passes.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"

#include <google/protobuf/io/coded_stream.h>

#include <functional>
#include <set>

using namespace fusec;
using namespace fusec::onnximport;

//===----------------------------------------------------------------------===//
// Importer
//===----------------------------------------------------------------------===//

/// `name` with every character a FIR name cannot hold replaced by '_'.
static std::string sanitize(llvm::StringRef name, bool dimName) {
  std::string text;
  for (char c : name) {
    bool ok = llvm::isAlnum(c) || c == '_' || (!dimName && (c == '.' || c == '-'));
    text += ok ? c : '_';
  }
  size_t start = text.find_first_not_of('_');
  text = start == std::string::npos ? "" : text.substr(start);
  if (text.empty())
    text = "v";
  bool allDigits = llvm::all_of(text, llvm::isDigit);
  if (!llvm::isAlpha(text[0]) && (dimName || !allDigits))
    text = "v" + text;
  // A dim may not be named like a dtype: `f32[f32]` would not parse.
  if (dimName && parseDType(text))
    text += "_dim";
  return text;
}

std::string Importer::valueName(llvm::StringRef name) {
  std::string result = uniqueValueName(sanitize(name, false), [&](llvm::StringRef candidate) {
    return takenNames.count(candidate.str()) != 0;
  });
  takenNames.insert(result);
  return result;
}

Value *Importer::addBinding(std::unique_ptr<Binding> binding, llvm::StringRef nameHint,
                            std::string &problem) {
  if (binding->kind == ExprKind::Op) {
    normalizeOpAttrs(*binding);
    llvm::SourceMgr sourceMgr;
    DiagEngine diag(sourceMgr);
    diag.setHandler([&](const llvm::SMDiagnostic &d) {
      if (problem.empty())
        problem = d.getMessage().str();
    });
    std::optional<Type> type = inferOpType(*binding, diag);
    if (!type) {
      if (problem.empty())
        problem = "cannot type " + binding->callee;
      return nullptr;
    }
    binding->result = std::make_unique<Value>();
    binding->result->type = *type;
  }
  Value *value = binding->result.get();
  value->name = valueName(nameHint);
  value->definingBinding = binding.get();
  block->bindings.push_back(std::move(binding));
  return value;
}

/// Nested lists of `data`'s elements from dimension `dim` at `offset`.
static Attr denseValue(const TensorData &data, size_t dim, int64_t &index) {
  const std::vector<int64_t> &shape = data.getShape();
  if (dim == shape.size()) {
    int64_t i = index++;
    switch (data.getDType()) {
    case DType::boolean: return Attr::makeBool(data.getInt(i) != 0);
    case DType::i8:
    case DType::i32:
    case DType::i64: return Attr::makeInt(data.getInt(i));
    default: return Attr::makeFloat(data.get(i));
    }
  }
  std::vector<Attr> items;
  for (int64_t k = 0; k < shape[dim]; ++k)
    items.push_back(denseValue(data, dim + 1, index));
  return Attr::makeList(std::move(items));
}

Value *Importer::materialize(const std::string &name) {
  auto found = values.find(name);
  if (found != values.end())
    return found->second;
  std::shared_ptr<TensorData> data = constants.at(name);
  auto binding = std::make_unique<Binding>();
  binding->kind = ExprKind::Constant;
  binding->constant = std::make_unique<ConstantData>();
  ConstantData &constant = *binding->constant;
  int64_t index = 0;
  Shape shape;
  for (int64_t dim : data->getShape())
    shape.push_back(Dim::of(dim));
  if (data->getShape().empty()) {
    constant.form = ConstantData::Scalar;
    constant.values.push_back(denseValue(*data, 0, index));
  } else if (data->getNumElements() == 0) {
    constant.form = ConstantData::Splat; // no elements: any value
    constant.values.push_back(isFloatDType(data->getDType()) ? Attr::makeFloat(0)
                              : data->getDType() == DType::boolean ? Attr::makeBool(false)
                                                                   : Attr::makeInt(0));
  } else if (data->getNumElements() > 0 && data->getNumElements() <= options.inlineElements) {
    constant.form = ConstantData::Dense;
    constant.values.push_back(denseValue(*data, 0, index));
  } else {
    constant.form = ConstantData::File;
    constant.fileContents = data;
  }
  binding->result = std::make_unique<Value>();
  binding->result->type = Type::tensor(data->getDType(), shape);
  binding->writtenType = binding->result->type;
  std::string problem;
  Value *value = addBinding(std::move(binding), name, problem);
  ConstantData &placed = *value->definingBinding->constant;
  if (placed.form == ConstantData::File) {
    // File names end at 255 bytes; a longer value name (an exporter's path
    // of module names) keeps its start and a hash of the whole.
    std::string file = value->name;
    if (file.size() > 160)
      file = file.substr(0, 140) + "_" + llvm::utohexstr(llvm::xxHash64(file), true);
    placed.path = options.weightsDirectory + "/" + file + ".npy";
  }
  values[name] = value;
  return value;
}

/// The FIR type of a graph input's ValueInfo, or an error.
/// A named dim whose size `dimSizes` gives becomes that size; the names used
/// are added to `bound`.
///
/// Named dims get FIR names through `dimNames` (ONNX name -> FIR name):
/// two ONNX names that sanitize alike (`a-b`, `a_b`) stay two dims.
static std::optional<Type> typeOfInput(const onnx::ValueInfoProto &info,
                                       const std::map<std::string, int64_t> &dimSizes,
                                       std::set<std::string> &bound,
                                       std::map<std::string, std::string> &dimNames,
                                       std::string &error) {
  const onnx::TypeProto &type = info.type();
  if (!type.has_tensor_type()) {
    error = "graph input '" + info.name() + "' is not a tensor (sequences and maps are not supported)";
    return std::nullopt;
  }
  std::optional<DType> dtype = mapDType(type.tensor_type().elem_type());
  if (!dtype) {
    error = "graph input '" + info.name() + "' has element type " +
            onnxTypeName(type.tensor_type().elem_type()) +
            ", which fusec does not support";
    return std::nullopt;
  }
  if (!type.tensor_type().has_shape()) {
    error = "graph input '" + info.name() + "' has no shape";
    return std::nullopt;
  }
  Shape shape;
  int64_t elements = 1;
  for (const onnx::TensorShapeProto::Dimension &dim : type.tensor_type().shape().dim()) {
    std::optional<int64_t> size;
    if (dim.has_dim_value())
      size = dim.dim_value();
    else if (dim.has_dim_param() && !dim.dim_param().empty())
      for (const std::string &name : {dim.dim_param(), sanitize(dim.dim_param(), true)})
        if (!size && dimSizes.count(name)) {
          size = dimSizes.at(name);
          bound.insert(name);
        }
    if (size && *size >= 0 && __builtin_mul_overflow(elements, *size, &elements)) {
      error = "graph input '" + info.name() + "' has more elements than fit in i64";
      return std::nullopt;
    }
    if (size && *size >= 0 && *size <= kMaxDimSize)
      shape.push_back(Dim::of(*size));
    else if (dim.has_dim_param() && !dim.dim_param().empty()) {
      std::string &name = dimNames[dim.dim_param()];
      if (name.empty()) {
        std::string base = sanitize(dim.dim_param(), true), candidate = base;
        auto taken = [&](const std::string &n) {
          return llvm::any_of(dimNames, [&](const auto &entry) { return entry.second == n; });
        };
        for (int k = 1; taken(candidate); ++k)
          candidate = base + "_" + std::to_string(k);
        name = candidate;
      }
      shape.push_back(Dim::named(name));
    } else if (size) {
      error = "graph input '" + info.name() + "' has dim " + std::to_string(shape.size()) +
              " of size " + std::to_string(*size) + ", outside [0, 2^40]";
      return std::nullopt;
    } else {
      error = "graph input '" + info.name() + "' has dim " + std::to_string(shape.size()) +
              " with neither a size nor a name";
      return std::nullopt;
    }
  }
  return Type::tensor(*dtype, shape);
}

static const std::vector<OpConverter> &converterTable() {
  static const std::vector<OpConverter> table = [] {
    std::vector<OpConverter> all;
    registerMathOps(all);
    registerActivationOps(all);
    registerNNOps(all);
    registerWindowOps(all);
    registerReduceOps(all);
    registerSpatialOps(all);
    registerConvTransposeOps(all);
    registerQuantizeOps(all);
    registerRecurrentOps(all);
    registerTensorOps(all);
    registerScanOps(all);
    registerEinsumOps(all);
    registerGatherOps(all);
    registerShapeOps(all);
    registerFillOps(all);
    registerResizeOps(all);
    registerControlOps(all);
    registerScatterOps(all);
    return all;
  }();
  return table;
}

static const std::map<std::string, ConvertFn> &convertersByType() {
  static const std::map<std::string, ConvertFn> byType = [] {
    std::map<std::string, ConvertFn> table;
    for (const OpConverter &entry : converterTable())
      table[entry.opType] = entry.convert;
    return table;
  }();
  return byType;
}

bool Importer::checkDomain(const onnx::NodeProto &node) {
  if (node.domain().empty() || node.domain() == "ai.onnx")
    return true;
  error = "node '" + node.name() + "' (" + node.domain() + "." + node.op_type() +
          "): operators of domain '" + node.domain() + "' are not supported";
  return false;
}

bool Importer::checkUnusedNode(const onnx::NodeProto &node) {
  NodeContext context(*this, node, opset);
  if (!checkDomain(node))
    return false;
  if (!convertersByType().count(node.op_type()) && !hasSchema(node.op_type()))
    return context.fail("unsupported ONNX operator '" + node.op_type() + "'");
  return checkAgainstSchema(context, node, opset);
}

void Importer::collectNeededNames(const onnx::GraphProto &graph) {
  // A needed node's inputs, and all that its subgraphs read or return.
  std::function<void(const onnx::NodeProto &)> addNodeNames = [&](const onnx::NodeProto &node) {
    neededNames.insert(node.input().begin(), node.input().end());
    for (const onnx::AttributeProto &attr : node.attribute()) {
      std::vector<const onnx::GraphProto *> subgraphs;
      if (attr.has_g())
        subgraphs.push_back(&attr.g());
      for (const onnx::GraphProto &nested : attr.graphs())
        subgraphs.push_back(&nested);
      for (const onnx::GraphProto *subgraph : subgraphs) {
        for (const onnx::ValueInfoProto &output : subgraph->output())
          neededNames.insert(output.name());
        for (const onnx::NodeProto &inner : subgraph->node())
          addNodeNames(inner);
      }
    }
  };
  for (const onnx::ValueInfoProto &output : graph.output())
    neededNames.insert(output.name());
  for (int i = graph.node_size(); i-- > 0;)
    if (llvm::any_of(graph.node(i).output(),
                     [&](const std::string &name) { return neededNames.count(name); }))
      addNodeNames(graph.node(i));
}

bool Importer::importNode(const onnx::NodeProto &node) {
  const std::map<std::string, ConvertFn> &byType = convertersByType();
  NodeContext context(*this, node, opset);
  if (!checkDomain(node))
    return false;
  // Every ONNX operator has an output; converters may name bindings by it.
  // The recurrent layers' Y is optional (Y_h alone is common): they name
  // by their first output given.
  bool optionalFirst =
      node.op_type() == "RNN" || node.op_type() == "GRU" || node.op_type() == "LSTM";
  if (node.output_size() == 0 ||
      (node.output(0).empty() &&
       !(optionalFirst && llvm::any_of(node.output(), [](const std::string &output) {
           return !output.empty();
         }))))
    return context.fail("the node has no (first) output");
  auto converter = byType.find(node.op_type());
  if (converter == byType.end())
    return context.fail("unsupported ONNX operator '" + node.op_type() + "'");
  std::set<std::string> attributeNames;
  for (const onnx::AttributeProto &attr : node.attribute())
    if (!attributeNames.insert(attr.name()).second)
      return context.fail("attribute '" + attr.name() + "' is given twice");
  if (!checkAgainstSchema(context, node, opset))
    return false;
  // uint8 constants (read widened to i32) are the QDQ operators' data and
  // zero points. Elsewhere they may move (an old GPT-2's causal mask buffer,
  // sliced), be compared or cast: on the widened values these give uint8's
  // results, where arithmetic would not wrap as uint8 does. Quantized
  // tensors exist for DequantizeLinear alone.
  static const std::set<std::string> movesBytes = {
      "Identity", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Slice",
      "Gather", "Concat", "Expand", "Tile", "Split"};
  static const std::set<std::string> readsBytes = {
      "Cast", "Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"};
  bool movesInput = movesBytes.count(node.op_type()) != 0;
  bool bytesMoved = false;
  for (int i = 0; i < node.input_size(); ++i) {
    const std::string &name = node.input(i);
    bool dequantize = node.op_type() == "DequantizeLinear";
    bool zeroPoint = i == 2 && (dequantize || node.op_type() == "QuantizeLinear");
    bool allowed = zeroPoint || (dequantize && i == 0) || movesInput ||
                   readsBytes.count(node.op_type());
    bytesMoved |= movesInput && unsignedBytes.count(name);
    if (unsignedBytes.count(name) && !allowed)
      return context.fail("input " + std::to_string(i) + " ('" + name +
                          "') is uint8, which fusec reads only as QDQ data or zero points, "
                          "moved (Reshape, Slice, ...), compared or cast");
    if (quantized.count(name) && !(dequantize && i == 0))
      return context.fail("input " + std::to_string(i) + " ('" + name +
                          "') is QuantizeLinear's output, which fusec keeps only for "
                          "DequantizeLinear (a QDQ pair)");
  }
  for (const std::string &output : node.output())
    if (!output.empty() && (values.count(output) || constants.count(output) ||
                            shapes.count(output)))
      return context.fail("its output '" + output +
                          "' is already defined (ONNX names are assigned once)");
  // Hints of the first opsets that change nothing in inference:
  // consumed_inputs (in-place reuse, opsets 1-5) and is_test
  // (BatchNormalization and Dropout before opset 7, ignored as TVM does).
  if (opset < 6)
    context.attrInts("consumed_inputs");
  if (opset < 7 && (node.op_type() == "BatchNormalization" || node.op_type() == "Dropout"))
    context.attrInt("is_test", 0);
  size_t firstNew = block->bindings.size();
  bool groupedInput = llvm::any_of(node.input(), [&](const std::string &name) {
    return groupedRuns.count(name) != 0;
  });
  bool converted = groupedInput ? convertGroupedNode(context, converter->second)
                                : converter->second(context);
  if (!converted || !error.empty())
    return context.fail("cannot be converted");
  foldNodeOnConstants(*this, context, firstNew);
  for (const onnx::AttributeProto &attr : node.attribute())
    if (!context.usedAttrs().count(attr.name()) &&
        !llvm::StringRef(attr.name()).startswith("__")) // ONNX's internal names
      return context.fail("attribute '" + attr.name() + "' is not supported");
  // Like attributes, an input the conversion never looked at (a third
  // input of Add) is not silently dropped.
  for (int i = 0; i < node.input_size(); ++i)
    if (!node.input(i).empty() && !context.wasRead(size_t(i)))
      return context.fail("input " + std::to_string(i) + " ('" + node.input(i) +
                          "') is not supported: " + node.op_type() + " takes " +
                          (i == 0 ? "no inputs" : "at most " + std::to_string(i)) +
                          " here");
  if (bytesMoved) // still uint8 values
    for (const std::string &output : node.output())
      if (!output.empty())
        unsignedBytes.insert(output);
  // An output no converter produced stops the import only when something
  // reads it (BatchNormalization's running statistics usually go unread).
  for (size_t i = 0; i < context.numOutputs(); ++i)
    if (context.hasOutput(i) && neededNames.count(node.output(int(i))) &&
        !values.count(node.output(int(i))) &&
        !constants.count(node.output(int(i))) && !shapes.count(node.output(int(i))))
      return context.fail("output " + std::to_string(i) + " ('" + node.output(int(i)) +
                          "') is not supported");
  return true;
}

bool Importer::run(const onnx::ModelProto &model) {
  irVersion = model.ir_version();
  for (const onnx::OperatorSetIdProto &entry : model.opset_import())
    if (entry.domain().empty() || entry.domain() == "ai.onnx") {
      if (opset >= 0)
        return error = "the model imports the default ONNX domain twice (opsets " +
                       std::to_string(opset) + " and " + std::to_string(entry.version()) + ")",
               false;
      opset = entry.version();
    }
  // IR versions 1 and 2 predate opset_import: their operators are opset 1's.
  if (opset < 0 && model.opset_import_size() == 0 && model.ir_version() < 3)
    opset = 1;
  // Older opsets are read too: an operator whose older form has other
  // attributes is rejected by the attribute check; the converters know the
  // older forms that differ otherwise (axes and split as attributes before
  // 13, Clip's limits before 11, Slice before 10, Softmax before 13).
  if (opset < 1 || opset > 17) {
    error = opset < 0 ? "the model imports no opset of the default ONNX domain"
                      : "opset " + std::to_string(opset) +
                            " is not supported: fusec imports opsets 1 to 17";
    return false;
  }
  const onnx::GraphProto &graph = model.graph();
  auto owned = std::make_unique<Function>();
  function = owned.get();
  function->name = "main";
  module.functions.push_back(std::move(owned));
  BodyItem item;
  item.block = std::make_unique<DataflowBlock>();
  item.block->hasOutputClause = true;
  block = item.block.get();

  // Values that no graph output needs are not imported: ONNX Runtime runs a
  // model whose unused node has no kernel, or whose unused weight is a
  // DOUBLE. Their nodes must still be valid ONNX (checkUnusedNode).
  collectNeededNames(graph);
  std::set<std::string> initializerNames;
  for (const onnx::TensorProto &tensor : graph.initializer()) {
    // A graph is single assignment: which of two would a reader mean?
    if (!initializerNames.insert(tensor.name()).second)
      return error = "initializer '" + tensor.name() + "' is defined twice", false;
    if (!neededNames.count(tensor.name()))
      continue;
    std::shared_ptr<TensorData> data = readTensor(tensor, modelDirectory, error);
    if (!data)
      return false;
    constants[tensor.name()] = data;
    if (tensor.data_type() == onnx::TensorProto::UINT8)
      unsignedBytes.insert(tensor.name());
    else if (std::optional<ShapeValue> shape = shapeOfConstant(*data))
      shapes[tensor.name()] = *shape;
  }
  if (graph.sparse_initializer_size())
    return error = "sparse initializers are not supported", false;
  std::set<std::string> boundDims;
  std::map<std::string, std::string> dimNames;
  // An alias's target may itself be an alias of an earlier round.
  std::map<std::string, Dim> aliasedDims;
  for (const auto &entry : dimAliases) {
    std::string target = entry.second;
    while (dimAliases.count(target))
      target = dimAliases.at(target);
    aliasedDims[entry.first] = Dim::named(target);
  }
  for (const onnx::ValueInfoProto &input : graph.input()) {
    if (initializerNames.count(input.name()))
      continue; // an initializer listed as an input: a constant
    if (values.count(input.name()))
      return error = "graph input '" + input.name() + "' is declared twice", false;
    std::optional<Type> type = typeOfInput(input, options.dimSizes, boundDims, dimNames, error);
    if (!type)
      return false;
    auto param = std::make_unique<Value>();
    param->name = valueName(input.name());
    param->type = type->withDims(aliasedDims);
    for (const Dim &dim : param->type.getShape())
      if (dim.isSymbolic() && !llvm::is_contained(inputDims, dim.symbol))
        inputDims.push_back(dim.symbol);
    values[input.name()] = param.get();
    function->params.push_back(std::move(param));
  }

  for (const auto &[name, size] : options.dimSizes)
    if (!boundDims.count(name))
      return error = "--dim " + name + "=" + std::to_string(size) +
                     ": no graph input has a dim named '" + name + "'",
             false;

  for (const onnx::NodeProto &node : graph.node()) {
    bool needed = llvm::any_of(node.output(), [&](const std::string &name) {
      return neededNames.count(name);
    });
    if (!(needed ? importNode(node) : checkUnusedNode(node)))
      return false;
  }

  std::vector<Type> resultTypes;
  for (const onnx::ValueInfoProto &output : graph.output()) {
    if (quantized.count(output.name()))
      return error = "graph output '" + output.name() +
                     "' is a quantized (uint8 or int8) tensor, which fusec does not return; "
                     "a DequantizeLinear of it can be",
             false;
    if (unsignedBytes.count(output.name()))
      return error = "graph output '" + output.name() +
                     "' is a uint8 tensor, which fusec does not return (it has no unsigned "
                     "type); a Cast of it to a wider type can be",
             false;
    if (auto runs = groupedRuns.find(output.name()); runs != groupedRuns.end()) {
      std::string dims;
      std::vector<SymbolicSize> products;
      for (const SymbolicSize &dim :
           onnxDimsOf(values[output.name()]->type.getShape(), &runs->second)) {
        dims += (dims.empty() ? "" : ", ") + dim.str();
        if (!dim.asDim())
          products.push_back(dim);
      }
      return error = "graph output '" + output.name() + "' has the shape [" + dims +
                     "], whose products involving symbolic dims no FIR type holds (" +
                     dimOptions(products) + " fixes their sizes)",
             false;
    }
    Value *value = nullptr;
    if (values.count(output.name()))
      value = values[output.name()];
    else if (constants.count(output.name()))
      value = materialize(output.name());
    if (!value)
      return error = "graph output '" + output.name() +
                     "' is not computed by the graph (or is a shape with a symbolic dim)",
             false;
    // A graph input returned as it is (Identity) is no output of the block.
    if (value->definingBinding &&
        llvm::find(block->outputs, value) == block->outputs.end())
      block->outputs.push_back(value);
    function->returnValues.push_back(Operand::of(value));
    resultTypes.push_back(value->type);
  }
  if (resultTypes.empty())
    return error = "the graph has no outputs", false;
  function->returnsTuple = resultTypes.size() > 1;
  function->returnType = function->returnsTuple ? Type::tuple(resultTypes) : resultTypes[0];
  if (!block->bindings.empty())
    function->body.push_back(std::move(item));

  llvm::SourceMgr sourceMgr;
  DiagEngine diag(sourceMgr);
  std::string problem;
  diag.setHandler([&](const llvm::SMDiagnostic &d) {
    if (problem.empty())
      problem = d.getMessage().str();
  });
  if (!inferTypes(module, diag) || !verifyModule(module, diag, "after the ONNX import"))
    return error = "the imported module does not verify: " + problem, false;
  // Converters materialize some constants that they then replace (weights
  // rearranged at import), and a graph may compute what no output reads;
  // neither is imported.
  PassContext context{diag};
  if (!createDCEPass()->run(module, context))
    return error = "dead-code elimination failed: " + problem, false;
  checkDeclaredOutputShapes(graph);
  return true;
}

/// A graph output whose declared shape disagrees with the computed one is
/// a warning, not an error: exporters' shape inference can be stale (ONNX
/// 1.12 keeps the last ceil_mode window that PyTorch and ONNX Runtime drop),
/// and the computed shape is the one the operators define. Dims that either
/// side leaves open are not compared.
void Importer::checkDeclaredOutputShapes(const onnx::GraphProto &graph) {
  for (int i = 0; i < graph.output_size(); ++i) {
    const onnx::ValueInfoProto &output = graph.output(i);
    const Type &computed = function->returnValues[size_t(i)].value->type;
    if (!output.type().has_tensor_type() || !computed.isTensor())
      continue;
    std::optional<DType> declaredType = mapDType(output.type().tensor_type().elem_type());
    if (declaredType && *declaredType != computed.getDType())
      warnings.push_back("graph output '" + output.name() + "' is declared " +
                         onnxTypeName(output.type().tensor_type().elem_type()) +
                         " but the graph computes " + computed.str() +
                         " (the computed type is used)");
    if (!output.type().tensor_type().has_shape())
      continue;
    const auto &declared = output.type().tensor_type().shape().dim();
    bool agrees = declared.size() == computed.getRank();
    for (int d = 0; agrees && d < declared.size(); ++d) {
      const Dim &dim = computed.getShape()[size_t(d)];
      agrees = !declared[d].has_dim_value() || declared[d].dim_value() < 0 || dim.isSymbolic() ||
               declared[d].dim_value() == dim.size;
    }
    if (agrees)
      continue;
    std::string shape;
    for (int d = 0; d < declared.size(); ++d)
      shape += (d ? "," : "") + (declared[d].has_dim_value()
                                     ? std::to_string(declared[d].dim_value())
                                     : declared[d].dim_param().empty() ? std::string("?")
                                                                       : declared[d].dim_param());
    warnings.push_back("graph output '" + output.name() + "' is declared [" + shape +
                       "] but the graph computes " + computed.str() +
                       " (the computed shape is used)");
  }
}

std::unique_ptr<Module> fusec::importONNX(llvm::StringRef path, const ONNXImportOptions &options,
                                          std::string &error,
                                          std::vector<std::string> *warnings) {
  std::string readError;
  std::unique_ptr<llvm::MemoryBuffer> buffer = readFile(path, readError);
  if (!buffer) {
    error = "cannot read '" + path.str() + "': " + readError;
    return nullptr;
  }
  llvm::StringRef bytes = buffer->getBuffer();
  onnx::ModelProto model;
  google::protobuf::io::CodedInputStream stream(
      reinterpret_cast<const uint8_t *>(bytes.data()), int(std::min<size_t>(bytes.size(), INT32_MAX)));
  stream.SetTotalBytesLimit(INT32_MAX);
  if (bytes.empty() || bytes.size() > size_t(INT32_MAX) || !model.ParseFromCodedStream(&stream) ||
      !stream.ConsumedEntireMessage() || !model.has_graph()) {
    error = path.str() + ": " +
            (bytes.empty() ? "the file is empty, not an ONNX model"
                           : "not an ONNX model (a protobuf ModelProto with a graph), or truncated");
    return nullptr;
  }
  std::string directory = llvm::sys::path::parent_path(path).str();
  auto freshModule = [&] {
    auto module = std::make_unique<Module>();
    module->sourceDirectory = directory.empty() ? "." : directory;
    return module;
  };
  std::unique_ptr<Module> module = freshModule();
  // Names come from the file: escape what would break the message's line.
  auto printable = [&](const std::string &message) {
    std::string text = path.str() + ": ";
    for (unsigned char c : message)
      text += c >= 0x20 && c < 0x7f ? std::string(1, char(c))
                                    : "\\x" + llvm::utohexstr(c, true, 2);
    return text;
  };
  if (!inlineLocalFunctions(model, error)) {
    error = printable(error);
    return nullptr;
  }
  // Each round that fails only because an op equates two input dims merges
  // them and imports again (ONNXDimUnification.cpp).
  std::map<std::string, std::string> dimAliases;
  std::vector<std::string> merged;
  for (;;) {
    Importer importer(*module, options, module->sourceDirectory);
    importer.dimAliases = dimAliases;
    if (importer.run(model)) {
      if (warnings) {
        for (const std::string &warning : merged)
          warnings->push_back(printable(warning));
        for (const std::string &warning : importer.warnings)
          warnings->push_back(printable(warning));
      }
      return module;
    }
    if (!importer.equatedDims) {
      error = printable(importer.error);
      return nullptr;
    }
    std::string dims;
    for (const auto &[kept, dropped] : importer.equatedDims->pairs) {
      dimAliases[dropped] = kept;
      dims += (dims.empty() ? "'" : ", '") + dropped + "' as '" + kept + "'";
    }
    merged.push_back("the graph inputs' dims are merged (" + dims + "): " +
                     importer.equatedDims->node +
                     " types only if they are equal; inputs that give them different sizes "
                     "are rejected when the program runs");
    module = freshModule();
  }
}

std::vector<std::string> fusec::supportedONNXOps() {
  std::vector<std::string> names;
  for (const OpConverter &entry : converterTable())
    names.push_back(entry.opType);
  llvm::sort(names);
  return names;
}
