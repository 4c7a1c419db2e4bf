"""Products of int4 weights (MatMulNBits, blocks of 32, packed zero points)
ending in a residual add and a row norm, as a quantized decoder's output
and down projections do, fp16.

  packed_norm_model.py OUT.onnx K [--n N] [--float32]

Three products to N columns (72 by default), each of its own [batch, seq,
K] input (one input would make kiln-layout pack them into one product),
each adding the [batch, seq, N] input `r`:
  ln    LayerNormalization of a1's product with a bias, plus r, with scale
        and shift; that sum `ln_sum` is an output too (read after the norm:
        the kernel's second result);
  rms   SimplifiedLayerNormalization (onnxruntime's RMSNorm) of a2's
        product plus r, the sum read by nothing else;
  skip  com.microsoft SkipSimplifiedLayerNormalization of a3's product and
        r, as onnxruntime-genai writes a pre-norm block, with its sum
        output `skip_sum`.
With --float32 the activations, scales and rows are fp32 (for kilnc
--precision fp16|bf16).
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

path, K = sys.argv[1], int(sys.argv[2])
N = int(sys.argv[sys.argv.index("--n") + 1]) if "--n" in sys.argv else 72
BLOCK = 32
rng = np.random.default_rng(5)
DTYPE = np.float32 if "--float32" in sys.argv else np.float16
ONNX_TYPE = TensorProto.FLOAT if DTYPE == np.float32 else TensorProto.FLOAT16
dims = ["batch", "seq"]
nodes, weights = [], []
inputs = [helper.make_tensor_value_info("r", ONNX_TYPE, dims + [N])]
outputs = []


def product(name, source, bias=False):
    """MatMulNBits of `source` to N columns; returns its output's name."""
    blocks = -(-K // BLOCK)
    inputs.append(helper.make_tensor_value_info(source, ONNX_TYPE, dims + [K]))
    weights.extend([
        numpy_helper.from_array(
            rng.integers(0, 256, (N, blocks, BLOCK // 2), dtype=np.uint8), name + "_q"),
        numpy_helper.from_array(
            (rng.random((N, blocks)) * 0.02 + 0.002).astype(DTYPE), name + "_s"),
        numpy_helper.from_array(
            rng.integers(0, 256, (N, -(-blocks // 2)), dtype=np.uint8), name + "_z")])
    operands = [source, name + "_q", name + "_s", name + "_z"]
    if bias:
        weights.append(numpy_helper.from_array(
            rng.standard_normal(N).astype(DTYPE), name + "_b"))
        operands += ["", name + "_b"]
    nodes.append(helper.make_node("MatMulNBits", operands, [name + "_p"],
                                  domain="com.microsoft", K=K, N=N, bits=4,
                                  block_size=BLOCK))
    return name + "_p"


def row(name):
    weights.append(numpy_helper.from_array(
        (rng.random(N) + 0.5).astype(DTYPE), name))
    return name


p = product("ln", "a1", bias=True)
nodes.append(helper.make_node("Add", [p, "r"], ["ln_sum"]))
nodes.append(helper.make_node("LayerNormalization", ["ln_sum", row("ln_g"), row("ln_h")],
                              ["ln"], axis=-1, epsilon=1e-5))
p = product("rms", "a2")
nodes.append(helper.make_node("Add", [p, "r"], ["rms_sum"]))
nodes.append(helper.make_node("SimplifiedLayerNormalization", ["rms_sum", row("rms_g")],
                              ["rms"], axis=-1, epsilon=1e-6))
p = product("skip", "a3")
nodes.append(helper.make_node("SkipSimplifiedLayerNormalization", [p, "r", row("skip_g")],
                              ["skip", "", "", "skip_sum"], domain="com.microsoft",
                              epsilon=1e-6))
for name in ("ln", "ln_sum", "rms", "skip", "skip_sum"):
    outputs.append(helper.make_tensor_value_info(name, ONNX_TYPE, dims + [N]))
graph = helper.make_graph(nodes, "g", inputs, outputs, weights)
onnx.save(helper.make_model(graph, ir_version=8, opset_imports=[
    helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]), path)
