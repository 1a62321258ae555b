//===- ONNXImportTest.cpp - The ONNX importer's API -----------------------===//
//
// Models built with the generated message classes, written to a temporary
// file and imported: the function's signature (symbolic batch), the
// bindings in one dataflow block, weights held in memory as file<>
// constants and written as .npy, the shape chain folded into a reshape with
// a dim name, the interpreter's results, and the messages for an operator
// or an attribute the importer does not know.
//
//===----------------------------------------------------------------------===//
#include "fusec/Exec/Exec.h"
#include "fusec/Import/Import.h"
#include "fusec/Printer/Printer.h"

#include "onnx.pb.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <catch2/catch.hpp>

#include <fstream>

using namespace fusec;

namespace {

onnx::ValueInfoProto *addTensorInfo(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> *list,
                                    const std::string &name,
                                    const std::vector<std::string> &dims) {
  onnx::ValueInfoProto *info = list->Add();
  info->set_name(name);
  onnx::TypeProto_Tensor *tensor = info->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(onnx::TensorProto::FLOAT);
  for (const std::string &dim : dims) {
    onnx::TensorShapeProto_Dimension *d = tensor->mutable_shape()->add_dim();
    if (std::isdigit(static_cast<unsigned char>(dim[0])))
      d->set_dim_value(std::stoll(dim));
    else
      d->set_dim_param(dim);
  }
  return info;
}

void addFloatInitializer(onnx::GraphProto *graph, const std::string &name,
                         const std::vector<int64_t> &dims, const std::vector<float> &values) {
  onnx::TensorProto *tensor = graph->add_initializer();
  tensor->set_name(name);
  tensor->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t dim : dims)
    tensor->add_dims(dim);
  tensor->set_raw_data(std::string(reinterpret_cast<const char *>(values.data()),
                                   values.size() * sizeof(float)));
}

onnx::NodeProto *addNode(onnx::GraphProto *graph, const std::string &type,
                         const std::vector<std::string> &inputs,
                         const std::vector<std::string> &outputs) {
  onnx::NodeProto *node = graph->add_node();
  node->set_op_type(type);
  node->set_name(type + "_0");
  for (const std::string &input : inputs)
    node->add_input(input);
  for (const std::string &output : outputs)
    node->add_output(output);
  return node;
}

/// Writes `model` to a fresh temporary file and returns its path.
std::string writeModel(const onnx::ModelProto &model) {
  llvm::SmallString<128> path;
  REQUIRE(!llvm::sys::fs::createTemporaryFile("fusec-onnx", "onnx", path));
  std::ofstream out(path.str().str(), std::ios::binary);
  REQUIRE(model.SerializeToOstream(&out));
  return path.str().str();
}

onnx::ModelProto makeModel() {
  onnx::ModelProto model;
  model.set_ir_version(8);
  onnx::OperatorSetIdProto *opset = model.add_opset_import();
  opset->set_version(17);
  return model;
}

} // namespace

TEST_CASE("onnx import: Gemm + Relu with a symbolic batch runs as PyTorch would",
          "[onnx]") {
  onnx::ModelProto model = makeModel();
  onnx::GraphProto *graph = model.mutable_graph();
  addTensorInfo(graph->mutable_input(), "input.1", {"batch", "3"});
  addTensorInfo(graph->mutable_output(), "out", {"batch", "20"});
  std::vector<float> weights(20 * 3), bias(20);
  for (size_t i = 0; i < weights.size(); ++i)
    weights[i] = float(i % 7) - 3.0f;
  for (size_t i = 0; i < bias.size(); ++i)
    bias[i] = 0.5f * float(i) - 4.0f;
  addFloatInitializer(graph, "fc/weight", {20, 3}, weights);
  addFloatInitializer(graph, "fc/bias", {20}, bias);
  onnx::NodeProto *gemm = addNode(graph, "Gemm", {"input.1", "fc/weight", "fc/bias"}, {"h"});
  onnx::AttributeProto *transB = gemm->add_attribute();
  transB->set_name("transB");
  transB->set_type(onnx::AttributeProto::INT);
  transB->set_i(1);
  addNode(graph, "Relu", {"h"}, {"out"});
  std::string path = writeModel(model);

  ONNXImportOptions options;
  options.weightsDirectory = "net.weights";
  std::string error;
  std::unique_ptr<Module> module = importONNX(path, options, error);
  REQUIRE(module);
  CHECK(error.empty());
  const Function *main = module->lookupFunction("main");
  REQUIRE(main);
  REQUIRE(main->params.size() == 1);
  CHECK(main->params[0]->name == "input.1");
  CHECK(main->params[0]->type.str() == "f32[batch,3]");
  CHECK(main->returnType.str() == "f32[batch,20]");
  REQUIRE(main->body.size() == 1);
  REQUIRE(main->body[0].block);
  std::vector<std::string> heads;
  for (const auto &binding : main->body[0].block->bindings)
    heads.push_back(binding->headName());
  CHECK(heads == std::vector<std::string>{"constant", "permute_dims", "matmul", "constant",
                                          "add", "nn.relu"});
  // The 60 weights: a file<> constant holding its contents; the 20 biases too.
  const Binding &weightBinding = *main->body[0].block->bindings[0];
  REQUIRE(weightBinding.constant->form == ConstantData::File);
  CHECK(weightBinding.constant->path == "net.weights/fc_weight.npy");
  REQUIRE(weightBinding.constant->fileContents);
  CHECK(weightBinding.constant->fileContents->get(8) == Approx(weights[8]));

  // x = [[1, 2, 3], [-1, 0, 1]]: relu(x W^T + b), as PyTorch computes it.
  TensorData x(DType::f32, {2, 3});
  const float xs[] = {1, 2, 3, -1, 0, 1};
  for (int i = 0; i < 6; ++i)
    x.set(i, xs[i]);
  Interpreter interpreter(*module);
  std::vector<TensorData> results;
  REQUIRE(interpreter.run("main", {x}, results, error));
  REQUIRE(results.size() == 1);
  for (int row = 0; row < 2; ++row)
    for (int j = 0; j < 20; ++j) {
      double expected = bias[j];
      for (int k = 0; k < 3; ++k)
        expected += xs[row * 3 + k] * weights[j * 3 + k];
      CHECK(results[0].get(row * 20 + j) == Approx(std::max(expected, 0.0)));
    }

  // The weights written beside a .fir read back equal.
  llvm::SmallString<128> directory;
  REQUIRE(!llvm::sys::fs::createUniqueDirectory("fusec-onnx-weights", directory));
  CHECK(writeImportedWeights(*module, directory).empty());
  llvm::SmallString<128> npy(directory);
  llvm::sys::path::append(npy, "net.weights", "fc_weight.npy");
  std::shared_ptr<TensorData> back = readNpyFile(npy, error);
  REQUIRE(back);
  CHECK(*back == *weightBinding.constant->fileContents);
  llvm::sys::fs::remove_directories(directory);
  llvm::sys::fs::remove(path);
}

TEST_CASE("onnx import: the exporters' shape chain folds into reshape [batch, -1]",
          "[onnx]") {
  onnx::ModelProto model = makeModel();
  onnx::GraphProto *graph = model.mutable_graph();
  addTensorInfo(graph->mutable_input(), "x", {"N", "2", "3"});
  addTensorInfo(graph->mutable_output(), "y", {"N", "6"});
  onnx::TensorProto *zero = graph->add_initializer();
  zero->set_name("zero");
  zero->set_data_type(onnx::TensorProto::INT64);
  zero->add_int64_data(0);
  onnx::TensorProto *minusOne = graph->add_initializer();
  minusOne->set_name("minus_one");
  minusOne->set_data_type(onnx::TensorProto::INT64);
  minusOne->add_dims(1);
  minusOne->add_int64_data(-1);
  addNode(graph, "Shape", {"x"}, {"shape"});
  addNode(graph, "Gather", {"shape", "zero"}, {"batch"});
  onnx::TensorProto *axes = graph->add_initializer();
  axes->set_name("axes");
  axes->set_data_type(onnx::TensorProto::INT64);
  axes->add_dims(1);
  axes->add_int64_data(0);
  addNode(graph, "Unsqueeze", {"batch", "axes"}, {"batch1"});
  onnx::NodeProto *concat = addNode(graph, "Concat", {"batch1", "minus_one"}, {"target"});
  onnx::AttributeProto *axis = concat->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(0);
  addNode(graph, "Reshape", {"x", "target"}, {"y"});
  std::string path = writeModel(model);
  std::string error;
  std::unique_ptr<Module> module = importONNX(path, {}, error);
  REQUIRE(module);
  std::string text = printModuleToString(*module);
  CHECK(text.find("%y = reshape(%x) {shape = [N, -1]} : f32[N,6]") != std::string::npos);
  // Nothing of the shape computation is left in the program.
  CHECK(text.find("Shape") == std::string::npos);
  CHECK(module->functions[0]->body[0].block->bindings.size() == 1);
  llvm::sys::fs::remove(path);
}

TEST_CASE("onnx import: an unknown operator or attribute names the node and opset",
          "[onnx]") {
  onnx::ModelProto model = makeModel();
  onnx::GraphProto *graph = model.mutable_graph();
  addTensorInfo(graph->mutable_input(), "x", {"4"});
  addTensorInfo(graph->mutable_output(), "y", {"4"});
  onnx::NodeProto *node = addNode(graph, "Relu", {"x"}, {"y"});
  onnx::AttributeProto *extra = node->add_attribute();
  extra->set_name("slope");
  extra->set_type(onnx::AttributeProto::FLOAT);
  extra->set_f(0.5f);
  std::string path = writeModel(model);
  std::string error;
  CHECK(!importONNX(path, {}, error));
  CHECK(error == path + ": node 'Relu_0' (Relu, opset 17): attribute 'slope' is not defined by Relu-14");

  node->set_op_type("HardSwishPlus");
  node->clear_attribute();
  path = writeModel(model);
  CHECK(!importONNX(path, {}, error));
  CHECK(error == path + ": node 'Relu_0' (HardSwishPlus, opset 17): unsupported ONNX "
                        "operator 'HardSwishPlus'");
  llvm::sys::fs::remove(path);

  std::vector<std::string> ops = supportedONNXOps();
  CHECK(std::is_sorted(ops.begin(), ops.end()));
  for (const char *op : {"Conv", "Gemm", "LayerNormalization", "Shape", "Softmax"})
    CHECK(std::find(ops.begin(), ops.end(), op) != ops.end());
}

TEST_CASE("onnx import: dimSizes gives named dims sizes; declared shapes only warn", "[onnx]") {
  onnx::ModelProto model = makeModel();
  onnx::GraphProto *graph = model.mutable_graph();
  addTensorInfo(graph->mutable_input(), "x", {"batch", "4"});
  // Declared wrongly on purpose: the computed [batch, 4] wins, with a warning.
  addTensorInfo(graph->mutable_output(), "y", {"batch", "5"});
  addNode(graph, "Relu", {"x"}, {"y"});
  std::string path = writeModel(model);

  ONNXImportOptions options;
  options.dimSizes["batch"] = 3;
  std::string error;
  std::vector<std::string> warnings;
  std::unique_ptr<Module> module = importONNX(path, options, error, &warnings);
  REQUIRE(module);
  CHECK(module->lookupFunction("main")->params[0]->type.str() == "f32[3,4]");
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0] == path + ": graph output 'y' is declared [batch,5] but the graph computes "
                              "f32[3,4] (the computed shape is used)");

  options.dimSizes = {{"seq", 2}};
  CHECK(!importONNX(path, options, error));
  CHECK(error == path + ": --dim seq=2: no graph input has a dim named 'seq'");
  llvm::sys::fs::remove(path);
}
