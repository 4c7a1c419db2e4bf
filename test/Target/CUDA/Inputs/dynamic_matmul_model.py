"""Products quantized by onnxruntime's quantize_dynamic, as users make them.

  dynamic_matmul_model.py OUT.onnx K [--n N] [--weights int8|uint8]

A float model of two products of a [batch, seq, K] fp32 input `a` by N
(default 72) columns, each with a bias (y_bias) and the second then a ReLU
(y_relu), quantized by onnxruntime.quantization.quantize_dynamic: one
DynamicQuantizeLinear of `a` (uint8, its scale and zero point computed
from the run's values), and per product a MatMulInteger of the bytes by the
weights, its Cast to float and a Mul by the two scales. --weights int8
(the default) gives symmetric int8 weights with a scale a column
(per_channel), what the integer GEMM takes; uint8 gives weights with a
zero point, one scale each, which stay a float product.
"""
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnxruntime import quantization as q

path, K = sys.argv[1], int(sys.argv[2])
N = int(sys.argv[sys.argv.index("--n") + 1]) if "--n" in sys.argv else 72
form = sys.argv[sys.argv.index("--weights") + 1] if "--weights" in sys.argv else "int8"
rng = np.random.default_rng(13)
dims = ["batch", "seq"]
inits, nodes = [], []
for name in ("y_bias", "y_relu"):
    inits.append(numpy_helper.from_array(
        (rng.standard_normal((K, N)) / np.sqrt(K)).astype(np.float32), name + "_w"))
    inits.append(numpy_helper.from_array(
        rng.standard_normal(N).astype(np.float32), name + "_b"))
    nodes.append(helper.make_node("MatMul", ["a", name + "_w"], [name + "_p"]))
    sum_name = name if name == "y_bias" else name + "_s"
    nodes.append(helper.make_node("Add", [name + "_p", name + "_b"], [sum_name]))
nodes.append(helper.make_node("Relu", ["y_relu_s"], ["y_relu"]))
graph = helper.make_graph(
    nodes, "dynamic_products",
    [helper.make_tensor_value_info("a", TensorProto.FLOAT, dims + [K])],
    [helper.make_tensor_value_info(n, TensorProto.FLOAT, dims + [N])
     for n in ("y_bias", "y_relu")], inits)
model = helper.make_model(graph, ir_version=10, opset_imports=[helper.make_opsetid("", 17)])
with tempfile.TemporaryDirectory() as work:
    plain = os.path.join(work, "float.onnx")
    onnx.save(model, plain)
    if form == "int8":
        q.quantize_dynamic(plain, path, per_channel=True,
                           weight_type=q.QuantType.QInt8)
    else:
        q.quantize_dynamic(plain, path, weight_type=q.QuantType.QUInt8)
