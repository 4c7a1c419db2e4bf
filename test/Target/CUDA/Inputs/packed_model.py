"""MatMulNBits over random packed weights, as onnxruntime-genai writes them.

  packed_model.py OUT.onnx K [--block4 B] [--float32] [--static]
                  [--packed-input] [--n N] [--relu] [--second-input]

Four products of a [batch, seq, K] input by 72 (or N) columns: int4 in blocks of
32 (or B) with packed zero points and a bias, int8 in blocks of 16 with the
default zero point, int2 in blocks of 64, int4 in blocks of 64 with float
zero points; fp16 activations unless --float32; one row with --static;
the int8 weights' packed bytes a graph input with --packed-input; a ReLU
after the first product's bias with --relu (the GEMM kernel's epilogue);
with --second-input, a fifth product of the first one's form (other
weights) over a second input of the first one's shape, so that one kernel
runs twice a run.
"""
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

path, K = sys.argv[1], int(sys.argv[2])
block4 = int(sys.argv[sys.argv.index("--block4") + 1]) if "--block4" in sys.argv else 32
dtype = np.float32 if "--float32" in sys.argv else np.float16
# --static: one row (a decoding step at batch 1), no dims to give.
dims = [1, 1] if "--static" in sys.argv else ["batch", "seq"]
onnx_type = TensorProto.FLOAT if dtype == np.float32 else TensorProto.FLOAT16
rng = np.random.default_rng(7)
N = int(sys.argv[sys.argv.index("--n") + 1]) if "--n" in sys.argv else 72
nodes, weights, outputs = [], [], []
graph_inputs = [helper.make_tensor_value_info("a", onnx_type, dims + [K])]


def add(name, bits, block, zero_points=None, bias=False, source="a"):
    blocks = -(-K // block)
    inputs = [source, name + "_q", name + "_s"]
    packed = rng.integers(0, 256, (N, blocks, block * bits // 8), dtype=np.uint8)
    if bits == 8 and "--packed-input" in sys.argv:
        graph_inputs.append(helper.make_tensor_value_info(
            name + "_q", TensorProto.UINT8, list(packed.shape)))
    else:
        weights.append(numpy_helper.from_array(packed, name + "_q"))
    weights.append(numpy_helper.from_array(
        (rng.random((N, blocks)) * 0.1 + 0.01).astype(dtype), name + "_s"))
    if zero_points == "packed":
        weights.append(numpy_helper.from_array(
            rng.integers(0, 256, (N, -(-blocks * bits // 8)), dtype=np.uint8), name + "_z"))
        inputs.append(name + "_z")
    elif zero_points == "float":
        weights.append(numpy_helper.from_array(
            rng.integers(0, 1 << bits, (N, blocks)).astype(dtype), name + "_z"))
        inputs.append(name + "_z")
    if bias:
        inputs += [""] * (5 - len(inputs)) + [name + "_b"]
        weights.append(numpy_helper.from_array(rng.standard_normal(N).astype(dtype), name + "_b"))
    relu = bias and "--relu" in sys.argv
    nodes.append(helper.make_node("MatMulNBits", inputs, [name + "_p" if relu else name],
                                  domain="com.microsoft", K=K, N=N, bits=bits,
                                  block_size=block))
    if relu:
        nodes.append(helper.make_node("Relu", [name + "_p"], [name]))
    outputs.append(helper.make_tensor_value_info(name, onnx_type, dims + [N]))


add("y4", 4, block4, "packed", bias=True)
add("y8", 8, 16)
add("y2", 2, 64)
add("yf", 4, 64, "float")
if "--second-input" in sys.argv:
    graph_inputs.append(helper.make_tensor_value_info("a2", onnx_type, dims + [K]))
    add("y4b", 4, block4, "packed", bias=True, source="a2")
graph = helper.make_graph(
    nodes, "g", graph_inputs, outputs, weights)
onnx.save(helper.make_model(graph, ir_version=8, opset_imports=[
    helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]), path)
