#!/usr/bin/env python3
"""Writes the regression models of test/Import/regressions.test into this
directory: inputs that once crashed the importer or were accepted wrongly
(nodes without inputs or outputs, int64 overflow in folded shape arithmetic,
huge dims, corrupt sizes, invalid splits, ...). Rerun with
/usr/bin/python3 test/Import/errors/regressions/make-regressions.py"""
import os
os.chdir(os.path.dirname(os.path.abspath(__file__)))
import numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto as T
F=T.FLOAT
def vi(n,d,e=F): return helper.make_tensor_value_info(n,e,d)
def c(n,a): return numpy_helper.from_array(np.asarray(a),n)
def save(name,nodes,ins,outs,inits=(),opset=17):
    g=helper.make_graph(nodes,"g",ins,outs,initializer=list(inits))
    m=helper.make_model(g,opset_imports=[helper.make_opsetid("",opset)]); m.ir_version=8
    open(name+".onnx","wb").write(m.SerializeToString())
I64MIN=np.iinfo(np.int64).min; I64MAX=np.iinfo(np.int64).max
save("div_int64min",[helper.make_node("Div",["a","b"],["y"],name="div")],[],[vi("y",[1],T.INT64)],
     [c("a",np.array([I64MIN],np.int64)),c("b",np.array([-1],np.int64))])
save("split_no_outputs",[helper.make_node("Split",["x","s"],[],name="split",axis=0)],[vi("x",[4])],[vi("x",[4])],
     [c("s",np.zeros([0],np.int64))])
save("split_negative_last",[helper.make_node("Split",["x","s"],["a","b"],name="split",axis=0)],[vi("x",[6])],[vi("a",[6]),vi("b",[0])],
     [c("s",np.array([7,-1],np.int64))])
for op,extra_in,attrs in [("Conv",["w"],{}),("Gemm",["w2"],{}),("LeakyRelu",[],{}),("Gather",["i"],{}),("LayerNormalization",["sc"],{}),("BatchNormalization",["s1","s1","s1","s1"],{}),("Relu",[],{})]:
    save("no_outputs_"+op,[helper.make_node(op,["x"]+extra_in,[],name="n")],[vi("x",[1,1,2,2])],[vi("x",[1,1,2,2])],
         [c("w",np.ones([1,1,1,1],np.float32)),c("w2",np.ones([2,2],np.float32)),c("i",np.array([0],np.int64)),c("sc",np.ones([2],np.float32)),c("s1",np.ones([1],np.float32))])
save("identity_no_inputs",[helper.make_node("Identity",[],["y"],name="id")],[vi("x",[2])],[vi("y",[2])])
save("dropout_no_inputs",[helper.make_node("Dropout",[],["y"],name="d")],[vi("x",[2])],[vi("y",[2])])
save("constantofshape_huge",[helper.make_node("ConstantOfShape",["s"],["y"],name="cos")],[],[vi("y",[1<<20,1<<20])],
     [c("s",np.array([1<<20,1<<20],np.int64))])
save("constantofshape_overflow",[helper.make_node("ConstantOfShape",["s"],["y"],name="cos")],[],[vi("y",None)],
     [c("s",np.array([1<<40,1<<40],np.int64))])
save("layernorm_huge_nobias",[helper.make_node("LayerNormalization",["x","sc"],["y"],name="ln",axis=-1)],[vi("x",[1,1<<40])],[vi("y",[1,1<<40])],
     [c("sc",np.ones([1],np.float32))])
save("slice_shape_step_max",[helper.make_node("Shape",["x"],["s"],name="shape"),
    helper.make_node("Slice",["s","st","en","ax","sp"],["y"],name="slice")],[vi("x",[2,3,4])],[vi("y",[1],T.INT64)],
    [c("st",np.array([1],np.int64)),c("en",np.array([3],np.int64)),c("ax",np.array([0],np.int64)),c("sp",np.array([I64MAX],np.int64))])
save("dropout_empty_training",[helper.make_node("Dropout",["x","r","t"],["y"],name="d")],[vi("x",[2])],[vi("y",[2])],
     [c("r",np.float32(0.5)),c("t",np.zeros([0],bool))])
t=helper.make_tensor("w",F,[2,3],b"\0"*24,raw=True); t.raw_data=b"\0"*6
save("raw_6_bytes",[helper.make_node("Add",["x","w"],["y"],name="add")],[vi("x",[2,3])],[vi("y",[2,3])],[t])
t=helper.make_tensor("w",F,[1<<40],b"",raw=True) if False else None
t=onnx.TensorProto(); t.name="w"; t.data_type=F; t.dims.extend([1<<40]); t.raw_data=b"\0"*4
save("initializer_huge_dims",[helper.make_node("Add",["x","w"],["y"],name="add")],[vi("x",[1])],[vi("y",[1])],[t])
t=onnx.TensorProto(); t.name="w"; t.data_type=F; t.dims.extend([1<<34]); t.raw_data=b"\0"*4
save("initializer_64GiB_dims",[helper.make_node("Add",["x","w"],["y"],name="add")],[vi("x",[1])],[vi("y",[1])],[t])
save("softmax11_huge",[helper.make_node("Softmax",["x"],["y"],name="sm",axis=0)],[vi("x",[1<<40,1<<40])],[vi("y",[1<<40,1<<40])],opset=11)
save("flatten_huge",[helper.make_node("Flatten",["x"],["y"],name="fl",axis=0)],[vi("x",[1<<40,1<<40,1<<40])],[vi("y",None)])
save("mul_shape_overflow",[helper.make_node("Mul",["a","b"],["y"],name="mul")],[],[vi("y",[1],T.INT64)],
     [c("a",np.array([I64MAX],np.int64)),c("b",np.array([2],np.int64))])
save("reshape_overflow",[helper.make_node("Reshape",["x","s"],["y"],name="r")],[vi("x",[4])],[vi("y",None)],
     [c("s",np.array([1<<40,1<<40,-1],np.int64))])
save("expand_huge",[helper.make_node("Expand",["x","s"],["y"],name="e")],[vi("x",[1])],[vi("y",None)],
     [c("s",np.array([1<<40,1<<40],np.int64))])
save("relu_huge",[helper.make_node("Relu",["x"],["y"],name="r")],[vi("x",[1<<40,1<<40,1<<40])],[vi("y",None)])
save("conv_symbolic_w",[helper.make_node("Conv",["x","w"],["y"],name="conv")],[vi("x",[1,1,4,4]),vi("w",[1,1,"k","k"])],[vi("y",None)])
save("gather_float_idx",[helper.make_node("Gather",["x","i"],["y"],name="g")],[vi("x",[3])],[vi("y",None)],[c("i",np.array([1e30],np.float32))])
save("cast_nan_to_int",[helper.make_node("Cast",["a"],["y"],name="c",to=T.INT64)],[],[vi("y",None)],[c("a",np.array([np.nan,1e30],np.float32))])
save("pool_huge_kernel",[helper.make_node("MaxPool",["x"],["y"],name="p",kernel_shape=[I64MAX,I64MAX],pads=[I64MAX]*4)],[vi("x",[1,1,4,4])],[vi("y",None)])
save("conv_huge_pads",[helper.make_node("Conv",["x","w"],["y"],name="conv",pads=[I64MAX]*4,dilations=[I64MAX,I64MAX],strides=[I64MAX,I64MAX])],[vi("x",[1,1,4,4])],[vi("y",None)],[c("w",np.ones([1,1,2,2],np.float32))])
save("conv_autopad_huge",[helper.make_node("Conv",["x","w"],["y"],name="conv",auto_pad="SAME_UPPER",dilations=[I64MAX,I64MAX])],[vi("x",[1,1,4,4])],[vi("y",None)],[c("w",np.ones([1,1,2,2],np.float32))])
save("unsqueeze_huge_axis",[helper.make_node("Unsqueeze",["x","a"],["y"],name="u")],[vi("x",[2])],[vi("y",None)],[c("a",np.array([I64MIN],np.int64))])
save("squeeze_huge_axis",[helper.make_node("Squeeze",["x","a"],["y"],name="s")],[vi("x",[1,2])],[vi("y",None)],[c("a",np.array([I64MIN],np.int64))])
save("transpose_bad_perm",[helper.make_node("Transpose",["x"],["y"],name="t",perm=[I64MIN,5])],[vi("x",[1,2])],[vi("y",None)])
save("reduce_huge_axis",[helper.make_node("ReduceSum",["x","a"],["y"],name="r")],[vi("x",[1,2])],[vi("y",None)],[c("a",np.array([I64MIN],np.int64))])
save("concat_huge_axis",[helper.make_node("Concat",["x","x"],["y"],name="c",axis=I64MIN)],[vi("x",[1,2])],[vi("y",None)])
save("slice_huge",[helper.make_node("Slice",["x","st","en","ax","sp"],["y"],name="s")],[vi("x",[4,4])],[vi("y",None)],
    [c("st",np.array([I64MIN],np.int64)),c("en",np.array([I64MAX],np.int64)),c("ax",np.array([I64MIN],np.int64)),c("sp",np.array([I64MIN],np.int64))])
save("shape_gather_neg",[helper.make_node("Shape",["x"],["s"],name="shape"),helper.make_node("Gather",["s","i"],["y"],name="g")],[vi("x",[2,3])],[vi("y",None)],[c("i",np.array(I64MIN,np.int64))])
save("split_equal_uneven",[helper.make_node("Split",["x"],["a","b","c","d"],name="s",axis=0)],[vi("x",[2])],[vi("a",None)])
save("cast_bad_to",[helper.make_node("Cast",["x"],["y"],name="c",to=9999)],[vi("x",[2])],[vi("y",None)])
save("gemm_int",[helper.make_node("Gemm",["a","b"],["y"],name="g",alpha=0.5)],[vi("a",[2,2],T.INT64),vi("b",[2,2],T.INT64)],[vi("y",None)])
save("leakyrelu_int",[helper.make_node("LeakyRelu",["x"],["y"],name="l",alpha=0.5)],[vi("x",[2],T.INT64)],[vi("y",None)])
save("mean_bool",[helper.make_node("Mean",["x","x"],["y"],name="m")],[vi("x",[2],T.BOOL)],[vi("y",None)])
save("clip_empty_min",[helper.make_node("Clip",["x","mn"],["y"],name="c")],[vi("x",[2])],[vi("y",None)],[c("mn",np.zeros([0],np.float32))])
save("batchnorm_rank1_x",[helper.make_node("BatchNormalization",["x","s","s","s","s"],["y"],name="b")],[vi("x",[3,2,2])],[vi("y",None)],[c("s",np.ones([],np.float32))])
save("pow_int_exp",[helper.make_node("Pow",["x","e"],["y"],name="p")],[vi("x",[2]),vi("e",[2],T.INT64)],[vi("y",None)])
save("reshape_zero_allowzero",[helper.make_node("Reshape",["x","s"],["y"],name="r",allowzero=1)],[vi("x",[0,3])],[vi("y",None)],[c("s",np.array([-1,0],np.int64))])
save("reshape_two_minus1",[helper.make_node("Reshape",["x","s"],["y"],name="r")],[vi("x",[0,3])],[vi("y",None)],[c("s",np.array([-1,-1],np.int64))])
save("reshape_minus1_zero",[helper.make_node("Reshape",["x","s"],["y"],name="r",allowzero=1)],[vi("x",[4])],[vi("y",None)],[c("s",np.array([0,-1],np.int64))])
save("constant_sparse",[helper.make_node("Constant",[],["y"],name="k",value_string="hi")],[],[vi("y",None)])
save("constant_value_ints_empty",[helper.make_node("Constant",[],["y"],name="k",value_ints=[])],[],[vi("y",None)])
save("dup_output_names",[helper.make_node("Relu",["x"],["x"],name="r")],[vi("x",[2])],[vi("x",[2])])
save("graph_output_is_input",[],[vi("x",[2])],[vi("x",[2])])
save("output_undefined",[],[vi("x",[2])],[vi("zz",[2])])
save("const_inline_big",[helper.make_node("Constant",[],["y"],name="k",value=c("v",np.zeros([0,5],np.float32)))],[],[vi("y",None)])

# A Shape node without inputs.
g=helper.make_graph([helper.make_node("Shape",[],["y"],name="shape")],"g",[helper.make_tensor_value_info("x",T.FLOAT,[2])],[helper.make_tensor_value_info("y",T.INT64,[1])])
m=helper.make_model(g,opset_imports=[helper.make_opsetid("",17)]); m.ir_version=8
open("shape_no_inputs.onnx","wb").write(m.SerializeToString())
