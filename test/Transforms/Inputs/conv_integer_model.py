"""A ViT-like patch embedding as quantize_dynamic writes it, at full width.

  conv_integer_model.py OUT.onnx

x [1, 3, 32, 32] fp32 quantized by DynamicQuantizeLinear, a ConvInteger by
int8 filters [64, 3, 16, 16] (K = 768, the ViT-B/16 patch), its Cast to
float and the Mul by the scales. The int32 sums reach hundreds of
thousands, past what a 16-bit float holds (65504).
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(0)
inits = [
    numpy_helper.from_array(
        rng.integers(-127, 128, (64, 3, 16, 16), dtype=np.int8), "w"),
    numpy_helper.from_array(np.array(0, np.int8), "w_zero"),
    numpy_helper.from_array(np.array(0.01, np.float32), "w_scale"),
]
nodes = [
    helper.make_node("DynamicQuantizeLinear", ["x"], ["q", "x_scale", "x_zero"]),
    helper.make_node("ConvInteger", ["q", "w", "x_zero", "w_zero"], ["c"],
                     strides=[16, 16]),
    helper.make_node("Cast", ["c"], ["c_float"], to=TensorProto.FLOAT),
    helper.make_node("Mul", ["x_scale", "w_scale"], ["scale"]),
    helper.make_node("Mul", ["c_float", "scale"], ["y"]),
]
graph = helper.make_graph(
    nodes, "patch_embedding",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 32, 32])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64, 2, 2])],
    inits)
onnx.save(helper.make_model(graph, ir_version=10, opset_imports=[helper.make_opsetid("", 20)]),
          sys.argv[1])
