"""com.microsoft QAttention and QEmbedLayerNormalization, the fused forms
onnxruntime's quantize_dynamic writes over a BERT its transformer optimizer
fused, with constant weights, scales and zero points.

  qattention_model.py OUT.onnx INPUTS_DIR

Outputs:
  attn_column: uint8 x [2, 5, 16] by int8 weights [16, 48], weight_scale a
      column, a key-length mask_index [batch], 2 heads;
  attn_tensor: the same x by uint8 weights with a zero point, one
      weight_scale, input_zero_point, no mask;
  embed, embed_mask: uint8 word, position and segment tables, gamma and
      beta, each with its scale and zero point, and the mask's counts.

Inputs (written over their whole range): x (uint8), ids and segments
(int32 rows of the tables), lengths (int32 key lengths 1 .. 5).
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(5)
inits = []


def const(name, value):
    inits.append(numpy_helper.from_array(np.asarray(value), name))
    return name


def f32(value):
    return np.array(value, np.float32)


HIDDEN, HEADS, VOCAB, POSITIONS = 16, 2, 30, 8
nodes = [
    helper.make_node(
        "QAttention",
        ["x", const("w1", rng.integers(-127, 128, (HIDDEN, 3 * HIDDEN), dtype=np.int8)),
         const("b1", rng.uniform(-1, 1, 3 * HIDDEN).astype(np.float32)),
         const("xs", f32([0.02])),
         const("w1s", rng.uniform(0.002, 0.006, 3 * HIDDEN).astype(np.float32)),
         "lengths"],
        ["attn_column"], domain="com.microsoft", num_heads=HEADS),
    helper.make_node(
        "QAttention",
        ["x", const("w2", rng.integers(0, 256, (HIDDEN, 3 * HIDDEN), dtype=np.uint8)),
         const("b2", rng.uniform(-1, 1, 3 * HIDDEN).astype(np.float32)),
         const("xs2", f32(0.03)), const("w2s", f32(0.004)), "",
         const("xz", np.uint8(120)), const("wz", np.uint8(128))],
        ["attn_tensor"], domain="com.microsoft", num_heads=HEADS),
    helper.make_node(
        "QEmbedLayerNormalization",
        ["ids", "segments",
         const("we", rng.integers(0, 256, (VOCAB, HIDDEN), dtype=np.uint8)),
         const("pe", rng.integers(0, 256, (POSITIONS, HIDDEN), dtype=np.uint8)),
         const("se", rng.integers(0, 256, (2, HIDDEN), dtype=np.uint8)),
         const("gamma", rng.integers(0, 256, HIDDEN, dtype=np.uint8)),
         const("beta", rng.integers(0, 256, HIDDEN, dtype=np.uint8)),
         "mask",
         const("we_s", f32(0.01)), const("pe_s", f32(0.02)), const("se_s", f32(0.03)),
         const("g_s", f32(0.008)), const("b_s", f32(0.004)),
         const("we_z", np.uint8(128)), const("pe_z", np.uint8(100)),
         const("se_z", np.uint8(140)), const("g_z", np.uint8(0)),
         const("b_z", np.uint8(128))],
        ["embed", "embed_mask"], domain="com.microsoft", epsilon=1e-12),
]


def value(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


U8, I32, F32 = TensorProto.UINT8, TensorProto.INT32, TensorProto.FLOAT
graph = helper.make_graph(
    nodes, "qattention",
    [value("x", U8, [2, 5, HIDDEN]), value("lengths", I32, [2]),
     value("ids", I32, [2, 5]), value("segments", I32, [2, 5]),
     value("mask", I32, [2, 5])],
    [value("attn_column", F32, [2, 5, HIDDEN]), value("attn_tensor", F32, [2, 5, HIDDEN]),
     value("embed", F32, [2, 5, HIDDEN]), value("embed_mask", I32, [2])],
    inits)
model = helper.make_model(graph, ir_version=10, opset_imports=[
    helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
onnx.save(model, sys.argv[1])
out = sys.argv[2]
np.save(f"{out}/x.npy", rng.integers(0, 256, (2, 5, HIDDEN), dtype=np.uint8))
np.save(f"{out}/lengths.npy", np.array([3, 5], np.int32))
np.save(f"{out}/ids.npy", rng.integers(0, VOCAB, (2, 5), dtype=np.int32))
np.save(f"{out}/segments.npy", rng.integers(0, 2, (2, 5), dtype=np.int32))
np.save(f"{out}/mask.npy", np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], np.int32))
