"""Two linear layers as an exporter writes them, for kilnc --weights.

  linear_model.py OUT.onnx [--exact] [--float16]

x [rows, 256] -> MatMul by a 256 x 96 weight -> Gemm (transB) by a
48 x 96 weight and a bias -> y [rows, 48]. The weights are normal random
values, or with --exact multiples of 1/8 whose every block of 32 along K
holds a magnitude of 7/8 (so int4 round-to-nearest gives them back
exactly). fp32 unless --float16.
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

path = sys.argv[1]
exact = "--exact" in sys.argv
dtype = np.float16 if "--float16" in sys.argv else np.float32
onnx_type = TensorProto.FLOAT16 if dtype == np.float16 else TensorProto.FLOAT
rng = np.random.default_rng(11)


def weight(k, n):
    if not exact:
        return (rng.standard_normal((k, n)) * 0.1).astype(dtype)
    w = rng.integers(-7, 8, (k, n)).astype(np.float64) / 8
    w[::32, :] = 0.875
    return w.astype(dtype)


w1 = weight(256, 96)
w2 = weight(96, 48).T.copy()
bias = (rng.standard_normal(48) * 0.1).astype(dtype)
graph = helper.make_graph(
    [helper.make_node("MatMul", ["x", "w1"], ["h"], name="first"),
     helper.make_node("Gemm", ["h", "w2", "b"], ["y"], name="second",
                      transB=1)],
    "linear",
    [helper.make_tensor_value_info("x", onnx_type, ["rows", 256])],
    [helper.make_tensor_value_info("y", onnx_type, ["rows", 48])],
    [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2"),
     numpy_helper.from_array(bias, "b")])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                            ir_version=8), path)
