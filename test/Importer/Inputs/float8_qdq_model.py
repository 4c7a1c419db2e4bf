"""FP8 Q/DQ around a MatMul, as NVIDIA ModelOpt writes them for Hopper.

  float8_qdq_model.py OUT.onnx
  float8_qdq_model.py OUT.onnx --negative-add float8e4m3fn|int4

x [batch, 40] is quantized to float8 E4M3FN with a per-tensor scale and
dequantized again (`xq` is the float8 tensor, also a graph output); the
weights are float8 initializers with per-tensor scales, E4M3FN [40, 24]
(`y`) and E5M2 [40, 24] (`y5`). Values reach past the largest E4M3FN
value (448) so that saturation shows. --negative-add writes an Add of two
graph inputs of that type instead (an op that computes, which Kiln refuses
for float8 and 4-bit values).
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

path = sys.argv[1]
rng = np.random.default_rng(17)

if "--negative-add" in sys.argv:
    kind = {"float8e4m3fn": TensorProto.FLOAT8E4M3FN, "int4": TensorProto.INT4}[
        sys.argv[sys.argv.index("--negative-add") + 1]]
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "x"], ["y"])], "negative",
        [helper.make_tensor_value_info("x", kind, [4])],
        [helper.make_tensor_value_info("y", kind, [4])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)]),
              path)
    sys.exit(0)


def float8(name, values, kind):
    # make_tensor rounds the floats to float8 (saturating).
    return helper.make_tensor(name, kind, list(values.shape),
                              values.flatten().tolist())


weights = [
    numpy_helper.from_array(np.array(0.05, np.float32), "sx"),
    float8("zx", np.zeros(1), TensorProto.FLOAT8E4M3FN),
    float8("w", rng.standard_normal((40, 24)) * 60, TensorProto.FLOAT8E4M3FN),
    numpy_helper.from_array(np.array(0.004, np.float32), "sw"),
    float8("w5", rng.standard_normal((40, 24)) * 1000, TensorProto.FLOAT8E5M2),
    numpy_helper.from_array(np.array(0.0002, np.float32), "sw5"),
]
# zx has shape [1]; the node tests use that form for float8 zero points.
nodes = [
    helper.make_node("QuantizeLinear", ["x", "sx", "zx"], ["xq"]),
    helper.make_node("DequantizeLinear", ["xq", "sx", "zx"], ["xd"]),
    helper.make_node("DequantizeLinear", ["w", "sw"], ["wd"]),
    helper.make_node("MatMul", ["xd", "wd"], ["y"]),
    helper.make_node("DequantizeLinear", ["w5", "sw5"], ["wd5"]),
    helper.make_node("MatMul", ["xd", "wd5"], ["y5"]),
]
graph = helper.make_graph(
    nodes, "float8_qdq",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 40])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 24]),
     helper.make_tensor_value_info("y5", TensorProto.FLOAT, ["batch", 24]),
     helper.make_tensor_value_info("xq", TensorProto.FLOAT8E4M3FN, ["batch", 40])],
    initializer=weights)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
model.ir_version = 10
onnx.checker.check_model(model)
onnx.save(model, path)
