//===- ONNXFunctions.cpp - Model-local functions, inlined before import ---===//
//
// Contract: every node of the graph, and of its subgraphs, that calls one of
// the model's local functions (ModelProto.functions, IR version 8: a node
// whose domain and op_type name a function) is replaced by the function's
// body before import, so that the converters see operators only. This is
// what ONNX Runtime does with them, and the form PyTorch's exporter writes
// with `export_modules_as_functions`. A call that cannot be expanded (more
// inputs or outputs than the function declares, an attribute it does not
// declare, a recursive call, another opset of the default domain) is an
// error naming the call.
//
// Algorithm:
//   1. index the functions by (domain, name); one defined twice is an error;
//   2. walk the nodes in order, copying the ones that call nothing; a call is
//      expanded into a list of body nodes in which
//      a. a formal input names the call's actual input ("" where the call
//         omits a trailing one: an absent optional input), a formal output
//         its actual output, and every other name, in nested subgraphs too,
//         becomes "<call's name>/<name>", made unique in the model;
//      b. an attribute with ref_attr_name takes the call's attribute of that
//         name, or the function's default (attribute_proto, IR 9, read from
//         the unknown fields of ONNX 1.12's classes); else it is dropped
//         (the operator's default);
//   3. the expanded list is walked again (functions call functions), with the
//      chain of calls kept to reject recursion and a bound on the nodes made;
//   4. a node's subgraph attributes (If, Loop, Scan bodies) are walked the
//      same way.
//
//===----------------------------------------------------------------------===//
#include "ONNXImporter.h"

#include "llvm/ADT/STLExtras.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include <map>
#include <set>

using namespace fusec;
using namespace fusec::onnximport;

/// FunctionProto.attribute_proto (field 11, IR 9: the attributes that have
/// a default value), which the ONNX 1.12 classes fusec is built with keep
/// as unknown fields; false when they do not parse.
static bool readAttributeDefaults(const onnx::FunctionProto &function,
                                  std::vector<onnx::AttributeProto> &defaults) {
  using google::protobuf::internal::WireFormatLite;
  const std::string &raw = function.unknown_fields();
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t *>(raw.data()),
                                            int(raw.size()));
  constexpr uint32_t kAttributeProtoTag = (11 << 3) | WireFormatLite::WIRETYPE_LENGTH_DELIMITED;
  while (uint32_t tag = in.ReadTag()) {
    if (tag != kAttributeProtoTag) {
      if (!WireFormatLite::SkipField(&in, tag))
        return false;
      continue;
    }
    uint32_t length = 0;
    std::string bytes;
    if (!in.ReadVarint32(&length) || !in.ReadString(&bytes, int(length)) ||
        !defaults.emplace_back().ParseFromString(bytes) || defaults.back().name().empty())
      return false;
  }
  return in.ConsumedEntireMessage();
}

namespace {
using FunctionKey = std::pair<std::string, std::string>; // domain, name

/// Nodes past this many, made by expanding calls, stop the import: nested
/// functions that call each other twice per level double the body each time.
constexpr size_t kMaxExpandedNodes = 1 << 18;

class FunctionInliner {
public:
  FunctionInliner(onnx::ModelProto &model, std::string &error) : model(model), error(error) {}

  bool run() {
    for (const onnx::FunctionProto &function : model.functions()) {
      if (!functions.emplace(FunctionKey{function.domain(), function.name()}, &function).second)
        return fail("local function '" + describe(function) + "' is defined twice");
      if (!readAttributeDefaults(function, defaults[&function]))
        return fail("local function '" + describe(function) +
                    "': its attribute defaults (attribute_proto) do not parse");
    }
    if (functions.empty())
      return true;
    for (const onnx::OperatorSetIdProto &entry : model.opset_import())
      if (isDefaultDomain(entry.domain()) && modelOpset < 0)
        modelOpset = entry.version();
    collectNames(model.graph());
    return expandGraph(*model.mutable_graph(), {});
  }

private:
  static bool isDefaultDomain(const std::string &domain) {
    return domain.empty() || domain == "ai.onnx";
  }
  static std::string describe(const onnx::FunctionProto &function) {
    return (function.domain().empty() ? "" : function.domain() + ".") + function.name();
  }
  static std::string describe(const onnx::NodeProto &node) {
    return "node '" + node.name() + "' (" + node.domain() + "." + node.op_type() + ")";
  }
  bool fail(std::string message) { return error = std::move(message), false; }

  void collectNames(const onnx::GraphProto &graph) {
    auto add = [&](const std::string &name) { usedNames.insert(name); };
    for (const onnx::ValueInfoProto &info : graph.input())
      add(info.name());
    for (const onnx::TensorProto &tensor : graph.initializer())
      add(tensor.name());
    for (const onnx::NodeProto &node : graph.node()) {
      llvm::for_each(node.output(), add);
      for (const onnx::AttributeProto &attr : node.attribute()) {
        if (attr.has_g())
          collectNames(attr.g());
        for (const onnx::GraphProto &nested : attr.graphs())
          collectNames(nested);
      }
    }
  }

  bool expandGraph(onnx::GraphProto &graph, const std::vector<FunctionKey> &callers) {
    google::protobuf::RepeatedPtrField<onnx::NodeProto> expanded;
    if (!expandNodes(graph.node(), expanded, callers))
      return false;
    graph.mutable_node()->Swap(&expanded);
    return true;
  }

  bool expandNodes(const google::protobuf::RepeatedPtrField<onnx::NodeProto> &nodes,
                   google::protobuf::RepeatedPtrField<onnx::NodeProto> &out,
                   const std::vector<FunctionKey> &callers) {
    for (const onnx::NodeProto &node : nodes) {
      auto function = functions.find({node.domain(), node.op_type()});
      if (function == functions.end()) {
        onnx::NodeProto *copy = out.Add();
        *copy = node;
        for (onnx::AttributeProto &attr : *copy->mutable_attribute()) {
          if (attr.has_g() && !expandGraph(*attr.mutable_g(), callers))
            return false;
          for (onnx::GraphProto &nested : *attr.mutable_graphs())
            if (!expandGraph(nested, callers))
              return false;
        }
        continue;
      }
      if (llvm::is_contained(callers, function->first)) {
        std::string chain;
        for (const FunctionKey &caller : callers)
          chain += functions.at(caller)->name() + " -> ";
        return fail(describe(node) + " calls the local function '" +
                    describe(*function->second) + "' recursively (" + chain +
                    function->second->name() + ")");
      }
      google::protobuf::RepeatedPtrField<onnx::NodeProto> body;
      if (!instantiate(node, *function->second, body))
        return false;
      std::vector<FunctionKey> chain = callers;
      chain.push_back(function->first);
      if (!expandNodes(body, out, chain))
        return false;
    }
    return true;
  }

  /// The body of `function` for the call `call`, its names and attributes
  /// those of the call (steps 2a and 2b).
  bool instantiate(const onnx::NodeProto &call, const onnx::FunctionProto &function,
                   google::protobuf::RepeatedPtrField<onnx::NodeProto> &body) {
    std::string what = describe(call) + " calls the local function '" + describe(function) + "'";
    if (call.input_size() > function.input_size())
      return fail(what + " with " + std::to_string(call.input_size()) +
                  " inputs; it declares " + std::to_string(function.input_size()));
    if (call.output_size() > function.output_size())
      return fail(what + " for " + std::to_string(call.output_size()) +
                  " outputs; it declares " + std::to_string(function.output_size()));
    const std::vector<onnx::AttributeProto> &defaultValues = defaults.at(&function);
    auto defaultOf = [&](const std::string &name) -> const onnx::AttributeProto * {
      auto found = llvm::find_if(defaultValues, [&](const onnx::AttributeProto &attr) {
        return attr.name() == name;
      });
      return found == defaultValues.end() ? nullptr : &*found;
    };
    for (const onnx::AttributeProto &attr : call.attribute())
      if (!llvm::is_contained(function.attribute(), attr.name()) && !defaultOf(attr.name()))
        return fail(what + " with the attribute '" + attr.name() +
                    "', which the function does not declare");
    for (const onnx::OperatorSetIdProto &entry : function.opset_import())
      if (isDefaultDomain(entry.domain()) && modelOpset >= 0 && entry.version() != modelOpset)
        return fail(what + ", which imports opset " + std::to_string(entry.version()) +
                    " of the default domain; the model imports opset " +
                    std::to_string(modelOpset) + " (fusec reads one opset per model)");
    expandedNodes += size_t(function.node_size());
    if (expandedNodes > kMaxExpandedNodes)
      return fail(what + ": expanding the model's function calls makes more than " +
                  std::to_string(kMaxExpandedNodes) + " nodes");

    // Two calls of one name (two unnamed calls in one body) get two prefixes.
    std::string prefix = uniqueName(call.name().empty() ? call.op_type() : call.name()) + "/";
    std::map<std::string, std::string> renamed;
    for (int i = 0; i < function.input_size(); ++i)
      renamed[function.input(i)] = i < call.input_size() ? call.input(i) : "";
    auto isFormalInput = [&](const std::string &name) {
      return llvm::is_contained(function.input(), name);
    };
    for (int i = 0; i < call.output_size(); ++i)
      if (!call.output(i).empty() && !isFormalInput(function.output(i)))
        renamed[function.output(i)] = call.output(i);
    auto rename = [&](std::string &name) {
      if (name.empty())
        return;
      auto [entry, added] = renamed.try_emplace(name);
      if (added)
        entry->second = uniqueName(prefix + name);
      name = entry->second;
    };

    for (const onnx::NodeProto &node : function.node()) {
      onnx::NodeProto *copy = body.Add();
      *copy = node;
      copy->set_name(prefix + (node.name().empty() ? node.op_type() : node.name()));
      // The call's attributes take the places that refer to them.
      google::protobuf::RepeatedPtrField<onnx::AttributeProto> attributes;
      for (const onnx::AttributeProto &attr : node.attribute()) {
        if (attr.ref_attr_name().empty()) {
          *attributes.Add() = attr;
          continue;
        }
        auto found = llvm::find_if(call.attribute(), [&](const onnx::AttributeProto &a) {
          return a.name() == attr.ref_attr_name();
        });
        const onnx::AttributeProto *given =
            found != call.attribute().end() ? &*found : defaultOf(attr.ref_attr_name());
        if (!given)
          continue;
        if (attr.type() != onnx::AttributeProto::UNDEFINED && given->type() != attr.type())
          return fail(what + ": its attribute '" + given->name() + "' has another type than " +
                      "the body's node '" + node.name() + "' reads");
        onnx::AttributeProto *bound = attributes.Add();
        *bound = *given;
        bound->set_name(attr.name());
      }
      copy->mutable_attribute()->Swap(&attributes);
      renameNode(*copy, rename);
    }
    // A formal output that is a formal input: the call's output is a copy.
    for (int i = 0; i < call.output_size(); ++i)
      if (!call.output(i).empty() && isFormalInput(function.output(i))) {
        onnx::NodeProto *copy = body.Add();
        copy->set_op_type("Identity");
        copy->set_name(prefix + "output" + std::to_string(i));
        copy->add_input(renamed.at(function.output(i)));
        copy->add_output(call.output(i));
      }
    return true;
  }

  template <typename Rename> static void renameNode(onnx::NodeProto &node, Rename &rename) {
    for (std::string &name : *node.mutable_input())
      rename(name);
    for (std::string &name : *node.mutable_output())
      rename(name);
    for (onnx::AttributeProto &attr : *node.mutable_attribute()) {
      if (attr.has_g())
        renameGraph(*attr.mutable_g(), rename);
      for (onnx::GraphProto &nested : *attr.mutable_graphs())
        renameGraph(nested, rename);
    }
  }

  template <typename Rename> static void renameGraph(onnx::GraphProto &graph, Rename &rename) {
    for (onnx::ValueInfoProto &info : *graph.mutable_input())
      rename(*info.mutable_name());
    for (onnx::ValueInfoProto &info : *graph.mutable_output())
      rename(*info.mutable_name());
    for (onnx::ValueInfoProto &info : *graph.mutable_value_info())
      rename(*info.mutable_name());
    for (onnx::TensorProto &tensor : *graph.mutable_initializer())
      rename(*tensor.mutable_name());
    for (onnx::NodeProto &node : *graph.mutable_node())
      renameNode(node, rename);
  }

  std::string uniqueName(const std::string &base) {
    std::string name = base;
    for (unsigned &suffix = nextSuffix[base]; !usedNames.insert(name).second;)
      name = base + "_" + std::to_string(++suffix);
    return name;
  }

  onnx::ModelProto &model;
  std::string &error;
  std::map<FunctionKey, const onnx::FunctionProto *> functions;
  std::map<const onnx::FunctionProto *, std::vector<onnx::AttributeProto>> defaults;
  std::set<std::string> usedNames;            // value names, and call prefixes
  std::map<std::string, unsigned> nextSuffix; // the last suffix tried per base
  int64_t modelOpset = -1;
  size_t expandedNodes = 0;
};
} // namespace

bool fusec::onnximport::inlineLocalFunctions(onnx::ModelProto &model, std::string &error) {
  return FunctionInliner(model, error).run();
}
