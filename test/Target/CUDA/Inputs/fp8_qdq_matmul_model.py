"""FP8 Q/DQ products, as NVIDIA ModelOpt writes them for Hopper.

  fp8_qdq_matmul_model.py OUT.onnx K [--n N] [--weights per-column|blocked]
                          [--activations e4m3|e5m2] [--quantized-input]

Two products of a [batch, seq, K] fp32 input `a` by N (default 72) columns:
the input quantized per tensor to float8 E4M3FN and dequantized again
(QuantizeLinear, DequantizeLinear), times the DequantizeLinear of float8
E4M3FN weights B [K, N], then a bias:

  y_z: the activations' zero point given, float8 0 (ModelOpt's form),
       weights with a scale a column (axis 1);
  y_t: no zero point (output_dtype), weights with one scale, then a
       residual (the input `r`, [batch, seq, N]) and a ReLU.

Forms the FP8 GEMM does not take: --weights blocked scales y_z's weights
in blocks of 16 along K; --activations e5m2 quantizes both products'
activations to E5M2 instead; --quantized-input makes y_t's float8
activations the model's input (`y_t_aq`).
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

path, K = sys.argv[1], int(sys.argv[2])
N = int(sys.argv[sys.argv.index("--n") + 1]) if "--n" in sys.argv else 72
form = sys.argv[sys.argv.index("--weights") + 1] if "--weights" in sys.argv else "per-column"
kind = {"e4m3": TensorProto.FLOAT8E4M3FN, "e5m2": TensorProto.FLOAT8E5M2}[
    sys.argv[sys.argv.index("--activations") + 1] if "--activations" in sys.argv else "e4m3"]
rng = np.random.default_rng(13)
nodes, weights, outputs = [], [], []
dims = ["batch", "seq"]
graph_inputs = [helper.make_tensor_value_info("a", TensorProto.FLOAT, dims + [K]),
                helper.make_tensor_value_info("r", TensorProto.FLOAT, dims + [N])]


def float8(name, values, element):
    # make_tensor rounds the floats to float8 (saturating).
    return helper.make_tensor(name, element, list(values.shape),
                              values.flatten().tolist())


def add(name, zero_point, weight_scales):
    # Activations of about unit size over E4M3FN's range (its largest
    # value is 448), as a calibration's amax / 448 gives.
    weights.append(numpy_helper.from_array(np.array(4.0 / 448, np.float32), name + "_as"))
    qdq = [name + "_as"]
    q_attrs = {"output_dtype": kind}
    if zero_point:
        weights.append(float8(name + "_az", np.zeros(()), kind))
        qdq.append(name + "_az")
        q_attrs = {}
    if name == "y_t" and "--quantized-input" in sys.argv:
        graph_inputs.append(helper.make_tensor_value_info(name + "_aq", kind, dims + [K]))
    else:
        nodes.append(helper.make_node("QuantizeLinear", ["a"] + qdq, [name + "_aq"], **q_attrs))
    nodes.append(helper.make_node("DequantizeLinear", [name + "_aq"] + qdq, [name + "_ad"]))
    # Weights over the float8 range, subnormals and saturation included.
    w = rng.standard_normal((K, N)) * 100
    weights.append(float8(name + "_w", w, TensorProto.FLOAT8E4M3FN))
    attrs = {}
    if weight_scales == "blocked":
        s = (rng.random((K // 16, N)) * 0.001 + 0.0002).astype(np.float32)
        attrs = {"axis": 0, "block_size": 16}
    elif weight_scales == "per-column":
        s = (rng.random(N) * 0.001 + 0.0002).astype(np.float32)
        attrs = {"axis": 1}
    else:
        s = np.array(0.0007, np.float32)
    weights.append(numpy_helper.from_array(s, name + "_ws"))
    nodes.append(helper.make_node("DequantizeLinear", [name + "_w", name + "_ws"],
                                  [name + "_wd"], **attrs))
    nodes.append(helper.make_node("MatMul", [name + "_ad", name + "_wd"], [name + "_p"]))
    weights.append(numpy_helper.from_array(
        rng.standard_normal(N).astype(np.float32), name + "_b"))
    if name == "y_t":
        nodes.append(helper.make_node("Add", [name + "_p", name + "_b"], [name + "_pb"]))
        nodes.append(helper.make_node("Add", [name + "_pb", "r"], [name + "_pr"]))
        nodes.append(helper.make_node("Relu", [name + "_pr"], [name]))
    else:
        nodes.append(helper.make_node("Add", [name + "_p", name + "_b"], [name]))
    outputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, dims + [N]))


add("y_z", True, form)
add("y_t", False, "per-tensor")
graph = helper.make_graph(nodes, "fp8_qdq_matmul", graph_inputs, outputs, weights)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
model.ir_version = 10
onnx.checker.check_model(model)
onnx.save(model, path)
