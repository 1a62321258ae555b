//===- ONNXSchemaCheck.cpp - Nodes against ONNX's operator schemas --------===//
//
// Contract: before its converter reads it, a node of the default domain is
// checked against the version of its operator in force at the model's
// opset (the newest one at or below it), as onnx.checker does. The schemas
// are ONNX 1.12's own (ONNXSchemas.def, written by
// scripts/gen-onnx-schemas.py), so an attribute of a later opset (MaxPool's
// `dilations` at opset 8) or one that an opset removed (`consumed_inputs`
// at 13) is caught, where a converter reading the newest form would take it.
//
// Steps, each reported against the node:
//   1. The operator exists at the opset (LayerNormalization only from 17)
//      and is not deprecated there (Upsample from 10, Scatter from 11).
//      Operators ONNX 1.12 does not define (ImageScaler, experimental
//      before opset 10) are left to their converters.
//   2. Input and output counts are in the version's range; no input or
//      output that is neither optional nor variadic is left empty ("").
//   3. Every attribute is one the version defines, with its type (an
//      attribute without a type, as IR version 1 and 2 wrote them, is
//      typed by its converter). Names starting with `__` are ONNX's
//      reserved internal ones, allowed on any operator (as onnx.checker
//      does; the converters ignore them).
//   4. Every attribute the version requires is present.
//
//===----------------------------------------------------------------------===//
#include "ONNXImporter.h"

#include "llvm/ADT/StringMap.h"

#include <climits>

using namespace fusec;
using namespace fusec::onnximport;

namespace {

struct AttributeSchema {
  const char *name;
  onnx::AttributeProto::AttributeType type;
  bool required;
};

struct OpSchema {
  const char *op;
  int64_t since;
  int minInputs, maxInputs;
  const char *inputOptions; // S(ingle), O(ptional), V(ariadic) per formal input
  int minOutputs, maxOutputs;
  const char *outputOptions;
  bool deprecated;
  std::vector<AttributeSchema> attributes;

  std::string version() const { return std::string(op) + "-" + std::to_string(since); }
  const AttributeSchema *findAttribute(llvm::StringRef name) const {
    for (const AttributeSchema &attribute : attributes)
      if (name == attribute.name)
        return &attribute;
    return nullptr;
  }
};

/// Every version of every operator, oldest first per operator.
const llvm::StringMap<std::vector<OpSchema>> &schemaTable() {
  static const llvm::StringMap<std::vector<OpSchema>> table = [] {
    std::vector<OpSchema> all;
#define ONNX_SCHEMA(op, since, minInputs, maxInputs, inputOptions, minOutputs, maxOutputs,     \
                    outputOptions, deprecated)                                                 \
  all.push_back({#op, since, minInputs, maxInputs, inputOptions, minOutputs, maxOutputs,        \
                 outputOptions, deprecated != 0, {}});
#define ONNX_ATTRIBUTE(op, since, name, type, required)                                         \
  all.back().attributes.push_back({#name, onnx::AttributeProto::type, required != 0});
#include "ONNXSchemas.def"
#undef ONNX_SCHEMA
#undef ONNX_ATTRIBUTE
    llvm::StringMap<std::vector<OpSchema>> byName;
    for (OpSchema &schema : all)
      byName[schema.op].push_back(std::move(schema));
    return byName;
  }();
  return table;
}

std::string typeName(onnx::AttributeProto::AttributeType type) {
  return onnx::AttributeProto::AttributeType_Name(type);
}

/// "2 inputs", "1 to 3 inputs", "at least 1 input".
std::string countRange(int min, int max, const char *noun) {
  std::string plural = std::string(noun) + "s";
  if (max == INT_MAX)
    return "at least " + std::to_string(min) + " " + (min == 1 ? noun : plural);
  if (min == max)
    return std::to_string(min) + " " + (min == 1 ? noun : plural);
  return std::to_string(min) + " to " + std::to_string(max) + " " + plural;
}

/// The `index`th empty name of `names` whose formal parameter (by
/// `options`, the last one repeating when variadic) is required, or -1.
template <class Names> int emptyRequired(const Names &names, llvm::StringRef options) {
  for (int i = 0; i < names.size(); ++i) {
    char option = options.empty() ? 'O' : options[std::min<size_t>(i, options.size() - 1)];
    if (names.Get(i).empty() && option == 'S')
      return i;
  }
  return -1;
}

/// Why `name` is not an attribute of `schema`: it belongs to a later or
/// an earlier version, or to none.
std::string undefinedAttribute(const std::vector<OpSchema> &versions, const OpSchema &schema,
                               const std::string &name) {
  std::string message = "attribute '" + name + "' is not defined by " + schema.version();
  const OpSchema *later = nullptr, *lastWith = nullptr;
  for (const OpSchema &version : versions)
    if (version.findAttribute(name)) {
      if (version.since > schema.since && !later)
        later = &version;
      if (version.since < schema.since)
        lastWith = &version;
    }
  if (later)
    return message + " (" + later->version() + " added it)";
  if (lastWith) {
    for (const OpSchema &version : versions)
      if (version.since > lastWith->since)
        return message + " (" + version.version() + " removed it)";
  }
  return message;
}

} // namespace

bool onnximport::hasSchema(llvm::StringRef opType) {
  return schemaTable().count(opType) != 0;
}

bool onnximport::checkAgainstSchema(NodeContext &context, const onnx::NodeProto &node,
                                    int64_t opset) {
  auto found = schemaTable().find(node.op_type());
  if (found == schemaTable().end())
    return true;
  const std::vector<OpSchema> &versions = found->second;
  const OpSchema *schema = nullptr;
  for (const OpSchema &version : versions)
    if (version.since <= opset)
      schema = &version;
  if (!schema)
    return context.fail("ONNX defines " + node.op_type() + " from opset " +
                        std::to_string(versions.front().since) + " on");
  if (schema->deprecated)
    return context.fail("ONNX deprecated " + node.op_type() + " in opset " +
                        std::to_string(schema->since) +
                        " (onnx.checker and ONNX Runtime reject it there)");
  // The count of inputs (outputs) and their empty names.
  auto checkNames = [&](const auto &names, int min, int max, llvm::StringRef options,
                        const char *noun, const char *verb) {
    if (names.size() < min || names.size() > max)
      return context.fail(schema->version() + " " + verb + " " + countRange(min, max, noun) +
                          ", not " + std::to_string(names.size()));
    if (int i = emptyRequired(names, options); i >= 0)
      return context.fail(std::string(noun) + " " + std::to_string(i) + " of " +
                          schema->version() + " is required, but its name is empty");
    return true;
  };
  if (!checkNames(node.input(), schema->minInputs, schema->maxInputs, schema->inputOptions,
                  "input", "takes") ||
      !checkNames(node.output(), schema->minOutputs, schema->maxOutputs, schema->outputOptions,
                  "output", "has"))
    return false;
  for (const onnx::AttributeProto &attribute : node.attribute()) {
    if (llvm::StringRef(attribute.name()).startswith("__"))
      continue;
    const AttributeSchema *defined = schema->findAttribute(attribute.name());
    if (!defined)
      return context.fail(undefinedAttribute(versions, *schema, attribute.name()));
    if (attribute.type() != onnx::AttributeProto::UNDEFINED && attribute.type() != defined->type)
      return context.fail("attribute '" + attribute.name() + "' of " + schema->version() +
                          " must be " + typeName(defined->type) + ", not " +
                          typeName(attribute.type()));
  }
  for (const AttributeSchema &attribute : schema->attributes)
    if (attribute.required &&
        llvm::none_of(node.attribute(), [&](const onnx::AttributeProto &given) {
          return given.name() == attribute.name;
        }))
      return context.fail(schema->version() + " requires attribute '" + attribute.name + "'");
  return true;
}
