"""QLinearMatMul and QLinearConv at full width, as the QOperator format
writes them.

  qlinear_products_model.py matmul|conv OUT.onnx

matmul: x [1, 8, 768] fp32, QuantizeLinear to int8, a QLinearMatMul by
int8 weights [768, 64] with a scale a column (their scales of 1 after
import are a blob, not a splat), DequantizeLinear.
conv: x [1, 3, 32, 32] the same way into a QLinearConv by int8 filters
[64, 3, 16, 16] (K = 768, the ViT-B/16 patch) with a scale a filter and an
int32 bias, DequantizeLinear.

The sums of 8-bit products reach hundreds of thousands, past what a 16-bit
float holds (65504); QLinearConv adds its int32 bias before requantizing.
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

kind, out = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(0)
if kind == "matmul":
    x_shape, y_shape = [1, 8, 768], [1, 8, 64]
    weights = rng.integers(-127, 128, (768, 64), dtype=np.int8)
    op, extra, attrs = "QLinearMatMul", [], {}
else:
    x_shape, y_shape = [1, 3, 32, 32], [1, 64, 2, 2]
    weights = rng.integers(-127, 128, (64, 3, 16, 16), dtype=np.int8)
    op, extra, attrs = "QLinearConv", ["bias"], {"strides": [16, 16]}
inits = [
    numpy_helper.from_array(np.array(0.02, np.float32), "x_scale"),
    numpy_helper.from_array(np.array(3, np.int8), "x_zero"),
    numpy_helper.from_array(weights, "w"),
    numpy_helper.from_array(
        rng.uniform(0.005, 0.015, 64).astype(np.float32), "w_scale"),
    numpy_helper.from_array(np.zeros(64, np.int8), "w_zero"),
    numpy_helper.from_array(np.array(0.8, np.float32), "y_scale"),
    numpy_helper.from_array(np.array(-2, np.int8), "y_zero"),
    numpy_helper.from_array(
        rng.integers(-100000, 100000, 64, dtype=np.int32), "bias"),
]
nodes = [
    helper.make_node("QuantizeLinear", ["x", "x_scale", "x_zero"], ["q"]),
    helper.make_node(op, ["q", "x_scale", "x_zero", "w", "w_scale", "w_zero",
                          "y_scale", "y_zero"] + extra, ["p"], **attrs),
    helper.make_node("DequantizeLinear", ["p", "y_scale", "y_zero"], ["y"]),
]
graph = helper.make_graph(
    nodes, "qlinear_" + kind,
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)],
    [i for i in inits if i.name != "bias" or extra])
onnx.save(helper.make_model(graph, ir_version=10, opset_imports=[helper.make_opsetid("", 20)]),
          out)
