//===- ONNXFold.cpp - Folding elementwise operators on constants ----------===//
//
// Exporters compute masks and shapes from constants (ViT's Expand target is
// Where(Equal(c, Mul(ConstantOfShape, -1)), ...); Swin pads with Mod), and
// FIR types need those values at import time. An elementwise operator whose
// inputs are all constants of at most kFoldElements elements is evaluated
// here, as TVM's FoldConstant would: NumPy broadcasting, integers exact in
// int64 (ONNX's truncating Div, Mod with the divisor's sign unless fmod),
// floats in double and rounded to the dtype.
//
// Any other node whose inputs are all small constants (the Reshape, Slice,
// Transpose and Cast that PyTorch's F.pad exports around its pads) is
// converted as usual and then folded by running its bindings on the
// reference interpreter: they move into a scratch function whose
// parameters are the constants they read, and the node's outputs become
// constants. A node that cannot run there keeps its bindings.
//
//===----------------------------------------------------------------------===//
#include "ONNXImporter.h"

#include "fusec/Exec/Exec.h"

#include <cmath>

using namespace fusec;
using namespace fusec::onnximport;

static constexpr int64_t kFoldElements = 4096;

/// The broadcast shape of `shapes`, or nullopt.
static std::optional<std::vector<int64_t>>
broadcastShape(const std::vector<const TensorData *> &inputs) {
  size_t rank = 0;
  for (const TensorData *t : inputs)
    rank = std::max(rank, t->getShape().size());
  std::vector<int64_t> shape(rank, 1);
  for (const TensorData *t : inputs) {
    const std::vector<int64_t> &dims = t->getShape();
    for (size_t k = 0; k < dims.size(); ++k) {
      int64_t &out = shape[rank - dims.size() + k];
      if (dims[k] != 1 && out != 1 && dims[k] != out)
        return std::nullopt;
      if (dims[k] != 1)
        out = dims[k];
    }
  }
  return shape;
}

/// The flat index into `t` of output element `flat` of `shape`.
static int64_t sourceIndex(const TensorData &t, const std::vector<int64_t> &shape, int64_t flat) {
  const std::vector<int64_t> &dims = t.getShape();
  int64_t index = 0, stride = 1;
  for (size_t k = shape.size(); k-- > 0;) {
    int64_t coordinate = flat % shape[k];
    flat /= shape[k];
    size_t d = k + dims.size() - shape.size();
    if (k + dims.size() < shape.size())
      continue;
    if (dims[d] != 1)
      index += coordinate * stride;
    stride *= dims[d];
  }
  return index;
}

bool onnximport::foldElementwise(NodeContext &c) {
  llvm::StringRef op = c.node.op_type();
  std::vector<const TensorData *> inputs;
  for (size_t i = 0; i < c.numInputs(); ++i) {
    const TensorData *t = c.hasInput(i) ? c.constant(i) : nullptr;
    if (!t || t->getNumElements() > kFoldElements)
      return false;
    inputs.push_back(t);
  }
  size_t arity = op == "Where" ? 3 : op == "Not" ? 1 : 2;
  if (inputs.size() != arity)
    return false;
  // The value operands (Where's are 1 and 2) share one dtype.
  const TensorData &first = *inputs[op == "Where" ? 1 : 0];
  DType dtype = first.getDType();
  for (size_t i = op == "Where" ? 1 : 0; i < inputs.size(); ++i)
    if (inputs[i]->getDType() != dtype)
      return false;
  std::optional<std::vector<int64_t>> shape = broadcastShape(inputs);
  if (!shape)
    return false;
  bool comparison = op == "Equal" || op == "Less" || op == "Greater" || op == "LessOrEqual" ||
                    op == "GreaterOrEqual" || op == "And" || op == "Or" || op == "Xor" ||
                    op == "Not";
  DType resultDType = comparison ? DType::boolean : dtype;
  TensorData result(resultDType, *shape);
  bool integer = !isFloatDType(dtype);
  bool fmod = op == "Mod" && c.attrInt("fmod", 0) != 0;
  for (int64_t flat = 0; flat < result.getNumElements(); ++flat) {
    auto intAt = [&](size_t i) { return inputs[i]->getInt(sourceIndex(*inputs[i], *shape, flat)); };
    auto floatAt = [&](size_t i) { return inputs[i]->get(sourceIndex(*inputs[i], *shape, flat)); };
    if (op == "Where") {
      bool take = intAt(0) != 0;
      integer ? result.setInt(flat, intAt(take ? 1 : 2)) : result.set(flat, floatAt(take ? 1 : 2));
      continue;
    }
    if (op == "Not") {
      result.setInt(flat, intAt(0) == 0);
      continue;
    }
    if (comparison) {
      bool value;
      if (integer) {
        int64_t a = intAt(0), b = intAt(1);
        value = op == "Equal" ? a == b : op == "Less" ? a < b : op == "Greater" ? a > b
              : op == "LessOrEqual" ? a <= b : op == "GreaterOrEqual" ? a >= b
              : op == "And" ? (a && b) : op == "Xor" ? (!a != !b) : (a || b);
      } else {
        double a = floatAt(0), b = floatAt(1);
        value = op == "Equal" ? a == b : op == "Less" ? a < b : op == "Greater" ? a > b
              : op == "LessOrEqual" ? a <= b : a >= b;
      }
      result.setInt(flat, value);
      continue;
    }
    if (integer) {
      int64_t a = intAt(0), b = intAt(1), value = 0;
      bool overflow = false;
      if (op == "Add")
        overflow = __builtin_add_overflow(a, b, &value);
      else if (op == "Sub")
        overflow = __builtin_sub_overflow(a, b, &value);
      else if (op == "Mul")
        overflow = __builtin_mul_overflow(a, b, &value);
      else if (op == "Max" || op == "Min")
        value = op == "Max" ? std::max(a, b) : std::min(a, b);
      else if (op != "Div" && op != "Mod")
        return false;
      else if (b == 0)
        return c.fail("integer division by zero in a constant computation");
      else if (a == INT64_MIN && b == -1)
        overflow = true;
      else if (op == "Div")
        value = a / b; // truncates, as ONNX's integer Div
      else if (op == "Mod") {
        value = a % b; // fmod: the dividend's sign
        if (!fmod && value != 0 && ((value < 0) != (b < 0)))
          value += b; // Python's %: the divisor's sign
      } else
        return false;
      if (overflow)
        return c.fail("int64 overflow in a constant computation");
      result.setInt(flat, value);
    } else {
      double a = floatAt(0), b = floatAt(1), value;
      if (op == "Add")
        value = a + b;
      else if (op == "Sub")
        value = a - b;
      else if (op == "Mul")
        value = a * b;
      else if (op == "Div")
        value = a / b;
      else if (op == "Max" || op == "Min")
        value = op == "Max" ? std::max(a, b) : std::min(a, b);
      else if (op == "Mod" && fmod)
        value = std::fmod(a, b);
      else
        return false;
      result.set(flat, value);
    }
  }
  c.defineConstant(0, std::move(result));
  return true;
}

void onnximport::foldNodeOnConstants(Importer &importer, NodeContext &c, size_t firstNew) {
  static constexpr int64_t kFoldResultElements = 1 << 16;
  std::vector<std::unique_ptr<Binding>> &bindings = importer.block->bindings;
  if (firstNew >= bindings.size() || !importer.error.empty())
    return;
  int64_t inputElements = 0;
  for (size_t i = 0; i < c.numInputs(); ++i) {
    if (!c.hasInput(i))
      continue;
    const TensorData *data = c.constant(i);
    if (!data)
      return;
    inputElements += data->getNumElements();
  }
  if (inputElements > kFoldElements)
    return;
  std::vector<Value *> results;
  for (size_t i = 0; i < c.numOutputs(); ++i) {
    if (!c.hasOutput(i))
      continue;
    auto found = importer.values.find(c.node.output(int(i)));
    if (found == importer.values.end())
      continue; // already a constant or a shape value
    std::optional<int64_t> elements = found->second->type.isTensor()
                                          ? found->second->type.getStaticNumElements()
                                          : std::nullopt;
    if (!elements || *elements > kFoldResultElements || !found->second->definingBinding)
      return;
    results.push_back(found->second);
  }
  if (results.empty())
    return;
  std::set<const Binding *> fresh;
  for (size_t k = firstNew; k < bindings.size(); ++k)
    fresh.insert(bindings[k].get());
  for (Value *result : results)
    if (!fresh.count(result->definingBinding))
      return;

  // The scratch function: earlier constants it reads become parameters.
  Module scratch;
  auto function = std::make_unique<Function>();
  function->name = "fold";
  std::map<Value *, Value *> parameterOf;
  std::vector<TensorData> arguments;
  std::vector<std::pair<Operand *, Value *>> rewired;
  for (size_t k = firstNew; k < bindings.size(); ++k)
    for (Operand &operand : bindings[k]->operands) {
      Value *value = operand.value;
      if (!value || (value->definingBinding && fresh.count(value->definingBinding)))
        continue;
      const Binding *source = value->definingBinding;
      if (!source || source->kind != ExprKind::Constant ||
          !value->type.getStaticNumElements()) {
        for (auto &[slot, original] : rewired)
          slot->value = original;
        return;
      }
      auto &parameter = parameterOf[value];
      if (!parameter) {
        auto owned = std::make_unique<Value>();
        owned->name = "p" + std::to_string(function->params.size());
        owned->type = value->type;
        parameter = owned.get();
        function->params.push_back(std::move(owned));
        arguments.push_back(source->constant->materialize(value->type));
      }
      rewired.push_back({&operand, value});
      operand.value = parameter;
    }
  std::vector<std::unique_ptr<Binding>> moved;
  for (size_t k = firstNew; k < bindings.size(); ++k)
    moved.push_back(std::move(bindings[k]));
  bindings.resize(firstNew);
  for (std::unique_ptr<Binding> &binding : moved) {
    BodyItem item;
    item.binding = std::move(binding);
    function->body.push_back(std::move(item));
  }
  std::vector<Type> types;
  for (Value *result : results) {
    function->returnValues.push_back(Operand::of(result));
    types.push_back(result->type);
  }
  function->returnsTuple = types.size() > 1;
  function->returnType = function->returnsTuple ? Type::tuple(types) : types[0];
  scratch.functions.push_back(std::move(function));

  std::vector<TensorData> outputs;
  std::string error;
  Interpreter interpreter(scratch);
  if (interpreter.run("fold", arguments, outputs, error) && outputs.size() == results.size()) {
    // Which outputs the results are, before their entries go.
    std::vector<std::pair<size_t, size_t>> outputResults; // (output, result)
    for (size_t i = 0; i < c.numOutputs(); ++i) {
      if (!c.hasOutput(i))
        continue;
      auto found = importer.values.find(c.node.output(int(i)));
      if (found == importer.values.end())
        continue;
      auto result = llvm::find(results, found->second);
      if (result != results.end())
        outputResults.push_back({i, size_t(result - results.begin())});
    }
    // Every value bound here goes with the scratch function, including a
    // constant input the converter bound and returned as the output (an
    // Expand that changes nothing): a later reader binds it again, its data
    // stays in `constants`.
    for (auto it = importer.values.begin(); it != importer.values.end();)
      if (it->second->definingBinding && fresh.count(it->second->definingBinding))
        it = importer.values.erase(it);
      else
        ++it;
    for (auto [output, result] : outputResults)
      c.defineConstant(output, outputs[result]);
    return;
  }
  // It does not run here: the bindings go back, reading the constants again.
  for (auto &[slot, original] : rewired)
    slot->value = original;
  for (BodyItem &item : scratch.functions[0]->body)
    bindings.push_back(std::move(item.binding));
}
