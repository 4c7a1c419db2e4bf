"""A decoder's MLP down projection over int4 weights, as onnxruntime-genai
writes it: SwiGLU (x * sigmoid(x) times the up half) over the halves of a
[batch, seq, 2K] input (the packed gate and up projection), then
MatMulNBits (int4 in blocks of 32 with packed zero points) to 72 columns.

  swiglu_packed_model.py OUT.onnx K [--also-output] [--float32] [--residual]

With --also-output the SwiGLU is a graph output too (read past the
product, so it stays a kernel of its own); with --float32 the activations
and scales are fp32 (for kilnc --precision fp16|bf16); with --residual
the product adds a [batch, seq, 72] input `r` (the GEMM's residual).
"""
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

path, K = sys.argv[1], int(sys.argv[2])
N, BLOCK = 72, 32
rng = np.random.default_rng(11)
dtype = np.float32 if "--float32" in sys.argv else np.float16
onnx_type = TensorProto.FLOAT if dtype == np.float32 else TensorProto.FLOAT16
blocks = -(-K // BLOCK)
weights = [
    numpy_helper.from_array(rng.integers(0, 256, (N, blocks, BLOCK // 2), dtype=np.uint8), "q"),
    numpy_helper.from_array((rng.random((N, blocks)) * 0.1 + 0.01).astype(dtype), "s"),
    numpy_helper.from_array(rng.integers(0, 256, (N, -(-blocks // 2)), dtype=np.uint8), "z"),
    numpy_helper.from_array(np.array([0], np.int64), "zero"),
    numpy_helper.from_array(np.array([K], np.int64), "half"),
    numpy_helper.from_array(np.array([2 * K], np.int64), "end"),
    numpy_helper.from_array(np.array([-1], np.int64), "last"),
]
nodes = [
    helper.make_node("Slice", ["gu", "zero", "half", "last"], ["gate"]),
    helper.make_node("Slice", ["gu", "half", "end", "last"], ["up"]),
    helper.make_node("Sigmoid", ["gate"], ["sig"]),
    helper.make_node("Mul", ["gate", "sig"], ["silu"]),
    helper.make_node("Mul", ["silu", "up"], ["act"]),
    helper.make_node("MatMulNBits", ["act", "q", "s", "z"],
                     ["p" if "--residual" in sys.argv else "y"], domain="com.microsoft",
                     K=K, N=N, bits=4, block_size=BLOCK),
]
dims = ["batch", "seq"]
inputs = [helper.make_tensor_value_info("gu", onnx_type, dims + [2 * K])]
if "--residual" in sys.argv:
    nodes.append(helper.make_node("Add", ["p", "r"], ["y"]))
    inputs.append(helper.make_tensor_value_info("r", onnx_type, dims + [N]))
outputs = [helper.make_tensor_value_info("y", onnx_type, dims + [N])]
if "--also-output" in sys.argv:
    outputs.append(helper.make_tensor_value_info("act", onnx_type, dims + [K]))
graph = helper.make_graph(
    nodes, "g", inputs,
    outputs, weights)
onnx.save(helper.make_model(graph, ir_version=8, opset_imports=[
    helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]), path)
