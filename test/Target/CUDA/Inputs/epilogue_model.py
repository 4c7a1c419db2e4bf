"""Every epilogue of a GEMM kernel over each of Kiln's own quantized paths.

  epilogue_model.py OUT.onnx --weights nbits|int8|fp8

Five products, each of its own [batch, seq, K] input `a_<output>` (K =
256; kiln-layout would pack products of one input, their epilogues then
left to kernels on slices) by N = 72 columns, each followed by one form of
the GEMM kernel's epilogue:

  y_bias: + bias;
  y_res: + bias + the residual input `r` ([batch, seq, N]);
  y_relu: + bias, then ReLU;
  y_gelu: + bias, then GELU (the tanh form in fp32, which the epilogue
          takes there; the erf form in fp16, which it takes at 16 bits);
  y_all: + bias + `r`, then GELU.

The weights: nbits, MatMulNBits int4 in blocks of 32 over fp16
activations (the packed GEMV, GEMM and unpacked paths); int8, a Q/DQ
graph of int8 activations (zero point 3) and symmetric int8 weights (the
integer GEMM); fp8, float8 E4M3FN activations and weights (the FP8 GEMM).
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

path = sys.argv[1]
kind = sys.argv[sys.argv.index("--weights") + 1]
K, N = 256, 72
half = kind == "nbits"
dtype = np.float16 if half else np.float32
onnx_type = TensorProto.FLOAT16 if half else TensorProto.FLOAT
rng = np.random.default_rng(23)
dims = ["batch", "seq"]
inputs = [helper.make_tensor_value_info("r", onnx_type, dims + [N])]
nodes, weights, outputs = [], [], []


def constant(name, values):
    weights.append(numpy_helper.from_array(values, name))
    return name


def float8(name, values):
    # make_tensor rounds the floats to float8 (saturating).
    weights.append(helper.make_tensor(name, TensorProto.FLOAT8E4M3FN,
                                      list(values.shape), values.flatten().tolist()))
    return name


def product(name):
    """The product of a_<name> and this output's own weights, by kind."""
    a = "a_" + name
    inputs.append(helper.make_tensor_value_info(a, onnx_type, dims + [K]))
    if kind == "nbits":
        blocks = K // 32
        packed = constant(name + "_q", rng.integers(0, 256, (N, blocks, 16), dtype=np.uint8))
        scales = constant(name + "_s", (rng.random((N, blocks)) * 0.02 + 0.005).astype(dtype))
        nodes.append(helper.make_node("MatMulNBits", [a, packed, scales], [name + "_p"],
                                      domain="com.microsoft", K=K, N=N, bits=4,
                                      block_size=32))
        return name + "_p"
    if kind == "int8":
        qdq = [constant(name + "_as", np.array(4.0 / 127, np.float32)),
               constant(name + "_az", np.array(3, np.int8))]
        w = constant(name + "_w", rng.integers(-127, 128, (K, N), dtype=np.int8))
    else:
        qdq = [constant(name + "_as", np.array(4.0 / 448, np.float32)),
               float8(name + "_az", np.zeros(()))]
        w = float8(name + "_w", rng.standard_normal((K, N)) * 100)
    ws = constant(name + "_ws", (rng.random(N) * 0.002 + 0.0005).astype(np.float32))
    nodes.append(helper.make_node("QuantizeLinear", [a] + qdq, [name + "_aq"]))
    nodes.append(helper.make_node("DequantizeLinear", [name + "_aq"] + qdq, [name + "_ad"]))
    nodes.append(helper.make_node("DequantizeLinear", [w, ws], [name + "_wd"], axis=1))
    nodes.append(helper.make_node("MatMul", [name + "_ad", name + "_wd"], [name + "_p"]))
    return name + "_p"


def output(name, residual, activation):
    value = product(name)
    bias = constant(name + "_b", rng.standard_normal(N).astype(dtype))
    nodes.append(helper.make_node("Add", [value, bias], [name + "_pb"]))
    value = name + "_pb"
    if residual:
        nodes.append(helper.make_node("Add", [value, "r"], [name + "_pr"]))
        value = name + "_pr"
    if activation == "relu":
        nodes.append(helper.make_node("Relu", [value], [name]))
    elif activation == "gelu":
        nodes.append(helper.make_node("Gelu", [value], [name],
                                      approximate="none" if half else "tanh"))
    else:
        nodes.append(helper.make_node("Identity", [value], [name]))
    outputs.append(helper.make_tensor_value_info(name, onnx_type, dims + [N]))


output("y_bias", False, None)
output("y_res", True, None)
output("y_relu", False, "relu")
output("y_gelu", False, "gelu")
output("y_all", True, "gelu")
graph = helper.make_graph(nodes, "epilogues", inputs, outputs, weights)
model = helper.make_model(graph, opset_imports=[
    helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)])
model.ir_version = 10
onnx.checker.check_model(model)
onnx.save(model, path)
