"""QLinearConv, com.microsoft QGemm and QLinearConcat as onnxruntime's
QOperator format writes them (constant weights, scales and zero points),
in the forms its CPU kernels take.

  qoperator_ops_model.py OUT.onnx

Outputs:
  conv_u8: uint8 x by int8 filters with a scale a filter, an int32 bias,
      pads 1 and strides 2;
  conv_s8: int8 x by int8 filters in 2 groups, per-tensor scales, no bias,
      dilations 2;
  gemm_u8: uint8 A by int8 B stored [N, K] (transB), int32 C a column,
      alpha 0.5, requantized to uint8;
  gemm_float: int8 A stored [K, M] (transA) by int8 B with a scale and a
      zero point a column, no C, no y_scale: the float result;
  gemm_u8_k48: A four times side by side (K = 48, whole 16-byte rows: the
      integer GEMM's) by int8 B stored [N, K] with a scale a column, int32
      C a column (up to 10^6), requantized to uint8;
  concat_u8: uint8 A three times, each read with another scale and zero
      point, along axis 0;
  concat_s8: int8 A twice along the last axis, once quantized as Y.

  qoperator_ops_model.py OUT.onnx INPUTS_DIR

writes the model and inputs over the whole 8-bit range (x, sx, a, sa).
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(11)
inits = []


def const(name, value):
    inits.append(numpy_helper.from_array(np.asarray(value), name))
    return name


def ints(name, low, high, shape, dtype):
    return const(name, rng.integers(low, high, shape, dtype=dtype))


def f32(value):
    return np.array(value, np.float32)


nodes = [
    helper.make_node(
        "QLinearConv",
        ["x", const("x_s", f32(0.05)), const("x_z", np.uint8(120)),
         ints("w1", -127, 128, (4, 3, 3, 3), np.int8),
         const("w1_s", rng.uniform(0.01, 0.03, 4).astype(np.float32)),
         const("w1_z", np.zeros(4, np.int8)),
         const("y1_s", f32(0.6)), const("y1_z", np.uint8(100)),
         ints("b1", -2000, 2000, (4,), np.int32)],
        ["conv_u8"], pads=[1, 1, 1, 1], strides=[2, 2]),
    helper.make_node(
        "QLinearConv",
        ["sx", const("sx_s", f32(0.04)), const("sx_z", np.int8(-5)),
         ints("w2", -127, 128, (4, 2, 2, 2), np.int8),
         const("w2_s", f32(0.02)), const("w2_z", np.int8(0)),
         const("y2_s", f32(0.5)), const("y2_z", np.int8(3))],
        ["conv_s8"], group=2, dilations=[2, 2]),
    helper.make_node(
        "QGemm",
        ["a", const("a_s", f32(0.05)), const("a_z", np.uint8(128)),
         ints("gb", -127, 128, (6, 12), np.int8),
         const("gb_s", f32(0.02)), const("gb_z", np.int8(0)),
         ints("gc", -3000, 3000, (6,), np.int32),
         const("gy_s", f32(0.6)), const("gy_z", np.uint8(130))],
        ["gemm_u8"], domain="com.microsoft", transB=1, alpha=0.5),
    helper.make_node(
        "QGemm",
        ["sa", const("sa_s", f32(0.03)), const("sa_z", np.int8(2)),
         ints("gb2", -127, 128, (5, 6), np.int8),
         const("gb2_s", rng.uniform(0.01, 0.03, 6).astype(np.float32)),
         const("gb2_z", np.zeros(6, np.int8))],
        ["gemm_float"], domain="com.microsoft", transA=1),
    helper.make_node(
        "QLinearConcat",
        [const("a4_s", f32(0.05)), const("a4_z", np.uint8(128)),
         "a", "a4_s", "a4_z", "a", "a4_s", "a4_z",
         "a", "a4_s", "a4_z", "a", "a4_s", "a4_z"],
        ["a4"], domain="com.microsoft", axis=1),
    helper.make_node(
        "QGemm",
        ["a4", "a4_s", "a4_z",
         ints("gb3", -127, 128, (16, 48), np.int8),
         const("gb3_s", rng.uniform(0.01, 0.03, 16).astype(np.float32)),
         const("gb3_z", np.zeros(16, np.int8)),
         ints("gc3", -10**6, 10**6, (16,), np.int32),
         const("gy3_s", f32(40.0)), const("gy3_z", np.uint8(120))],
        ["gemm_u8_k48"], domain="com.microsoft", transB=1),
    helper.make_node(
        "QLinearConcat",
        [const("cy_s", f32(0.06)), const("cy_z", np.uint8(125)),
         "a", const("c1_s", f32(0.02)), const("c1_z", np.uint8(128)),
         "a", const("c2_s", f32(0.1)), const("c2_z", np.uint8(90)),
         "a", const("c3_s", f32(0.06)), const("c3_z", np.uint8(140))],
        ["concat_u8"], domain="com.microsoft", axis=0),
    helper.make_node(
        "QLinearConcat",
        [const("dy_s", f32(0.05)), const("dy_z", np.int8(-3)),
         "sa", const("d1_s", f32(0.05)), const("d1_z", np.int8(-3)),
         "sa", const("d2_s", f32(0.2)), const("d2_z", np.int8(10))],
        ["concat_s8"], domain="com.microsoft", axis=-1),
]


def value(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


U8, S8, F32 = TensorProto.UINT8, TensorProto.INT8, TensorProto.FLOAT
graph = helper.make_graph(
    nodes, "qoperator_ops",
    [value("x", U8, [2, 3, 7, 7]), value("sx", S8, [2, 4, 7, 7]),
     value("a", U8, [5, 12]), value("sa", S8, [5, 5])],
    [value("conv_u8", U8, [2, 4, 4, 4]), value("conv_s8", S8, [2, 4, 5, 5]),
     value("gemm_u8", U8, [5, 6]), value("gemm_float", F32, [5, 6]),
     value("gemm_u8_k48", U8, [5, 16]),
     value("concat_u8", U8, [15, 12]), value("concat_s8", S8, [5, 10])],
    inits)
model = helper.make_model(graph, ir_version=10, opset_imports=[
    helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
onnx.save(model, sys.argv[1])
for info in graph.input:
    shape = [d.dim_value for d in info.type.tensor_type.shape.dim]
    dtype = np.uint8 if info.type.tensor_type.elem_type == U8 else np.int8
    info_range = np.iinfo(dtype)
    np.save(f"{sys.argv[2]}/{info.name}.npy",
            rng.integers(info_range.min, info_range.max + 1, shape, dtype=dtype))
