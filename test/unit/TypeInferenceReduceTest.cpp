//===- TypeInferenceReduceTest.cpp - Reductions, matmul, conv, pools ------===//
//
// Expected shapes: NumPy reductions and np.matmul; conv/pool output sizes
// floor((in + pad_begin + pad_end - dilation * (k - 1) - 1) / stride) + 1 (TVM
// Relax, NCHW/OIHW, padding [top, left, bottom, right]).
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"

#include <catch2/catch.hpp>

using fusec::test::at;
using fusec::test::inferError;

TEST_CASE("sum, mean, max, min and prod", "[infer][reduction]") {
  for (const char *op : {"sum", "mean", "max", "min", "prod"}) {
    INFO(op);
    std::string name = op;
    CHECK_INFERS("%x: f32[2,3,4]", name + "(%x)", "f32[]");
    CHECK_INFERS("%x: f32[2,3,4]", name + "(%x) {keepdims = true}", "f32[1,1,1]");
    CHECK_INFERS("%x: f32[2,3,4]", name + "(%x) {axis = 1}", "f32[2,4]");
    CHECK_INFERS("%x: f32[2,3,4]", name + "(%x) {axis = [1], keepdims = true}", "f32[2,1,4]");
    CHECK_INFERS("%x: f16[2,3,4]", name + "(%x) {axis = [0, -1]}", "f16[3]");
    CHECK_INFERS("%x: f16[2,3,4]", name + "(%x) {axis = [-1, 0], keepdims = true}", "f16[1,3,1]");
    CHECK_INFERS("%x: i32[n,8]", name + "(%x) {axis = [1]}", "i32[n]");
    CHECK_INFERS("%x: f32[n,8]", name + "(%x) {axis = [0], keepdims = false}", "f32[8]");
    CHECK_INFERS("%x: f32[2,3]", name + "(%x) {axis = []}", "f32[2,3]");
  }
  const char *range = "sum(%x) {axis = [2]}";
  CHECK(inferError("%x: f32[2,3]", range) ==
        at(range, "2]", "axis 2 is out of range for rank 2 (valid: [-2, 2))"));
  const char *repeated = "max(%x) {axis = [1, -1]}";
  CHECK(inferError("%x: f32[2,3]", repeated) == at(repeated, "-1]", "axis 1 is repeated"));
  const char *keep = "mean(%x) {keepdims = 1}";
  CHECK(inferError("%x: f32[2,3]", keep) ==
        at(keep, "1}", "attribute 'keepdims' of 'mean' must be 'true' or 'false', got 1"));
}

TEST_CASE("softmax and log_softmax keep the shape", "[infer][reduction]") {
  for (const char *op : {"nn.softmax", "nn.log_softmax"}) {
    INFO(op);
    std::string name = op;
    CHECK_INFERS("%x: f32[2,n,8]", name + "(%x)", "f32[2,n,8]");
    CHECK_INFERS("%x: f16[2,n,8]", name + "(%x) {axis = 1}", "f16[2,n,8]");
    CHECK_INFERS("%x: bf16[4]", name + "(%x) {axis = -1}", "bf16[4]");
  }
  const char *range = "nn.softmax(%x) {axis = 2}";
  CHECK(inferError("%x: f32[2,8]", range) ==
        at(range, "2}", "axis 2 is out of range for rank 2 (valid: [-2, 2))"));
  CHECK(inferError("%x: i32[2,8]", "nn.softmax(%x)") ==
        at("nn.softmax(%x)", "%x", "'nn.softmax' requires a floating-point operand, got i32[2,8]"));
}

TEST_CASE("layer_norm and rms_norm", "[infer][reduction]") {
  CHECK_INFERS("%x: f32[2,3,4], %g: f32[4], %b: f32[4]",
               "nn.layer_norm(%x, %g, %b) {axes = [-1], epsilon = 1e-5}", "f32[2,3,4]");
  CHECK_INFERS("%x: f16[2,3,4], %g: f16[3,4], %b: f16[3,4]",
               "nn.layer_norm(%x, %g, %b) {axes = [1, 2]}", "f16[2,3,4]");
  CHECK_INFERS("%x: f32[n,768], %g: f32[768], %b: f32[768]",
               "nn.layer_norm(%x, %g, %b) {axes = 1}", "f32[n,768]");
  CHECK_INFERS("%x: f32[n,768], %w: f32[768]", "nn.rms_norm(%x, %w)", "f32[n,768]");
  CHECK_INFERS("%x: bf16[2,3,4], %w: bf16[3,4]", "nn.rms_norm(%x, %w) {axes = [-2, -1]}",
               "bf16[2,3,4]");
  const char *wrong = "nn.layer_norm(%x, %g, %b) {axes = [-1]}";
  CHECK(inferError("%x: f32[2,3,4], %g: f32[3], %b: f32[4]", wrong) ==
        at(wrong, "%g", "operand 1 of 'nn.layer_norm' must be f32[4], got f32[3]"));
  CHECK(inferError("%x: f32[2,4], %g: f32[4], %b: f32[4]", "nn.layer_norm(%x, %g, %b)") ==
        at("nn.layer_norm(%x, %g, %b)", "nn.", "'nn.layer_norm' requires attribute 'axes'"));
}

TEST_CASE("matmul follows np.matmul", "[infer][complex]") {
  CHECK_INFERS("%a: f32[2,3], %b: f32[3,4]", "matmul(%a, %b)", "f32[2,4]");
  CHECK_INFERS("%a: f32[3], %b: f32[3]", "matmul(%a, %b)", "f32[]");
  CHECK_INFERS("%a: f32[3], %b: f32[3,4]", "matmul(%a, %b)", "f32[4]");
  CHECK_INFERS("%a: f32[2,3], %b: f32[3]", "matmul(%a, %b)", "f32[2]");
  CHECK_INFERS("%a: f32[4], %b: f32[2,4,5]", "matmul(%a, %b)", "f32[2,5]");
  CHECK_INFERS("%a: f32[2,3,4], %b: f32[4]", "matmul(%a, %b)", "f32[2,3]");
  CHECK_INFERS("%a: f32[8,3,4], %b: f32[8,4,5]", "matmul(%a, %b)", "f32[8,3,5]");
  CHECK_INFERS("%a: f32[2,1,3,4], %b: f32[5,4,6]", "matmul(%a, %b)", "f32[2,5,3,6]");
  CHECK_INFERS("%a: f32[3,4], %b: f32[7,4,6]", "matmul(%a, %b)", "f32[7,3,6]");
  CHECK_INFERS("%a: f16[n,768], %b: f16[768,3072]", "matmul(%a, %b)", "f16[n,3072]");
  CHECK_INFERS("%a: f16[b,s,k], %b: f16[k,m]", "matmul(%a, %b)", "f16[b,s,m]");
  CHECK_INFERS("%a: f16[4,8], %b: f16[8,2]", "matmul(%a, %b) {out_dtype = \"f32\"}", "f32[4,2]");
  CHECK_INFERS("%a: i8[4,8], %b: i8[8,2]", "matmul(%a, %b) {out_dtype = \"i32\"}", "i32[4,2]");
  // TVM's test_matmul_infer_struct_info: two dtypes with an out_dtype.
  CHECK_INFERS("%a: f16[2,1,4,5], %b: f32[6,1,3,5,7]", "matmul(%a, %b) {out_dtype = \"f16\"}",
               "f16[6,2,3,4,7]");
  SECTION("errors") {
    const char *expr = "matmul(%a, %b)";
    CHECK(inferError("%a: f32[2,3], %b: f32[4,5]", expr) ==
          at(expr, "matmul", "matmul reduction dimensions differ: f32[2,3] x f32[4,5] (3 vs 4)"));
    CHECK(inferError("%a: f32[2,3,4], %b: f32[5,4,6]", expr) ==
          at(expr, "matmul", "matmul batch dimensions do not broadcast: f32[2,3,4] x f32[5,4,6]: "
                             "dimension 0 is 2 vs 5"));
    CHECK(inferError("%a: f32[2,3], %b: f16[3,4]", expr) ==
          at(expr, "%b", "matmul operands have different dtypes f32 and f16; give an out_dtype"));
    CHECK(inferError("%a: f32[], %b: f32[3]", expr) ==
          at(expr, "matmul", "matmul operands must have rank >= 1, got f32[] and f32[3]"));
  }
}

TEST_CASE("conv2d output sizes", "[infer][complex]") {
  const char *x = "%x: f32[1,3,32,32], %w: f32[16,3,3,3]";
  CHECK_INFERS(x, "nn.conv2d(%x, %w)", "f32[1,16,30,30]");
  CHECK_INFERS(x, "nn.conv2d(%x, %w) {padding = [1, 1, 1, 1]}", "f32[1,16,32,32]");
  CHECK_INFERS(x, "nn.conv2d(%x, %w) {strides = [2, 2], padding = [1, 1, 1, 1]}", "f32[1,16,16,16]");
  CHECK_INFERS(x, "nn.conv2d(%x, %w) {strides = 2}", "f32[1,16,15,15]");
  CHECK_INFERS(x, "nn.conv2d(%x, %w) {dilation = [2, 2]}", "f32[1,16,28,28]");
  CHECK_INFERS(x, "nn.conv2d(%x, %w) {strides = [1, 3], dilation = [1, 2]}", "f32[1,16,30,10]");
  // padding is [top, left, bottom, right]: H gets 1 + 0, W gets 0 + 2.
  CHECK_INFERS("%x: f32[1,1,5,5], %w: f32[1,1,3,3]", "nn.conv2d(%x, %w) {padding = [1, 0, 0, 2]}",
               "f32[1,1,4,5]");
  CHECK_INFERS("%x: f32[1,1,5,5], %w: f32[1,1,3,3]", "nn.conv2d(%x, %w) {padding = [2, 0]}",
               "f32[1,1,7,3]");
  CHECK_INFERS("%x: f32[1,4,8,8], %w: f32[6,2,3,3]", "nn.conv2d(%x, %w) {groups = 2}", "f32[1,6,6,6]");
  // depthwise: one input channel per group
  CHECK_INFERS("%x: f16[2,8,10,10], %w: f16[8,1,3,3]",
               "nn.conv2d(%x, %w) {groups = 8, padding = [1, 1, 1, 1]}", "f16[2,8,10,10]");
  CHECK_INFERS("%x: f32[n,3,32,32], %w: f32[16,3,5,5]", "nn.conv2d(%x, %w) {strides = [3, 3]}",
               "f32[n,16,10,10]");
  SECTION("errors") {
    const char *channels = "nn.conv2d(%x, %w)";
    CHECK(inferError("%x: f32[1,4,8,8], %w: f32[6,3,3,3]", channels) ==
          at(channels, "nn.", "nn.conv2d input channels 4 != 3 (weight channels) x 1 (groups)"));
    const char *groups = "nn.conv2d(%x, %w) {groups = 2}";
    CHECK(inferError("%x: f32[1,4,8,8], %w: f32[5,2,3,3]", groups) ==
          at(groups, "nn.", "nn.conv2d output channels 5 are not divisible by groups 2"));
    CHECK(inferError("%x: f32[1,1,2,2], %w: f32[1,1,3,3]", channels) ==
          at(channels, "nn.", "the window (3) is larger than the padded height (2)"));
  }
}

TEST_CASE("max_pool2d, avg_pool2d and adaptive_avg_pool2d", "[infer][complex]") {
  for (const char *op : {"nn.max_pool2d", "nn.avg_pool2d"}) {
    INFO(op);
    std::string name = op;
    CHECK_INFERS("%x: f32[1,3,32,32]", name + "(%x)", "f32[1,3,32,32]");
    CHECK_INFERS("%x: f32[1,3,32,32]", name + "(%x) {pool_size = [2, 2], strides = [2, 2]}",
                 "f32[1,3,16,16]");
    CHECK_INFERS("%x: f16[n,3,32,32]", name + "(%x) {pool_size = 3, strides = 2, padding = 1}",
                 "f16[n,3,16,16]");
    CHECK_INFERS("%x: f32[1,3,32,32]", name + "(%x) {pool_size = [3, 3], dilation = [2, 2]}",
                 "f32[1,3,28,28]");
    CHECK_INFERS("%x: f32[1,3,32,24]", name + "(%x) {pool_size = [2, 3], strides = [2, 3]}",
                 "f32[1,3,16,8]");
    // floor((5 - 2) / 2) + 1 = 2; ceil((5 - 2) / 2) + 1 = 3
    CHECK_INFERS("%x: f32[1,1,5,5]", name + "(%x) {pool_size = [2, 2], strides = [2, 2]}",
                 "f32[1,1,2,2]");
    CHECK_INFERS("%x: f32[1,1,5,5]",
                 name + "(%x) {pool_size = [2, 2], strides = [2, 2], ceil_mode = true}",
                 "f32[1,1,3,3]");
    CHECK_INFERS("%x: f32[1,1,6,6]",
                 name + "(%x) {pool_size = [3, 3], strides = [2, 2], ceil_mode = true}",
                 "f32[1,1,3,3]");
  }
  CHECK_INFERS("%x: f32[2,64,7,7]", "nn.adaptive_avg_pool2d(%x) {output_size = [1, 1]}", "f32[2,64,1,1]");
  CHECK_INFERS("%x: f32[2,64,7,9]", "nn.adaptive_avg_pool2d(%x) {output_size = 3}", "f32[2,64,3,3]");
  CHECK_INFERS("%x: f32[n,64,7,9]", "nn.adaptive_avg_pool2d(%x)", "f32[n,64,7,9]");
  const char *rank = "nn.max_pool2d(%x)";
  CHECK(inferError("%x: f32[3,32,32]", rank) ==
        at(rank, "%x", "'nn.max_pool2d' takes numeric NCHW data, got f32[3,32,32]"));
  const char *big = "nn.avg_pool2d(%x) {pool_size = [4, 4]}";
  CHECK(inferError("%x: f32[1,1,3,3]", big) ==
        at(big, "nn.", "the window (4) is larger than the padded height (3)"));
}

// TVM Relax (InferStructInfoPool2D) computes a ceil_mode size as
// floor((in + pads - dilation * (k - 1) - 1 + stride - 1) / stride) + 1 with
// no further adjustment: in = 5, k = 1, stride = 2, padding 1 + 1 gives 4.
// fusec drops the last window when it starts in the padding (PyTorch's rule)
// and gives 3.
TEST_CASE("pool ceil_mode sizes match TVM Relax", "[infer][complex]") {
  CHECK_INFERS("%x: f32[1,1,5,5]",
               "nn.max_pool2d(%x) {pool_size = [1, 1], strides = [2, 2], padding = [1, 1, 1, 1], ceil_mode = true}",
               "f32[1,1,4,4]");
}
