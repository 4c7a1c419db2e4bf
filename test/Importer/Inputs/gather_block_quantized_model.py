"""com.microsoft GatherBlockQuantized: quantized embedding tables.

  gather_block_quantized_model.py OUT.onnx [--float16]
  gather_block_quantized_model.py OUT.onnx --negative KIND

Token ids [batch, seq] pick rows of three tables of 50 rows (the tied one
has 2100, past the importer's folding of small integer constants, so that
its Reshape stays a view of the LM head's bytes as in a real model):

  e4   uint8 [2100, 32] (64 int4 values a row, blocks of 32, packed zero
       points), a Reshape of the [2100, 2, 16] bytes that a MatMulNBits
       (`logits`, the tied LM head over `h`) reads too, as
       onnxruntime-genai's builder writes tied int4 embeddings;
  e8   uint8 [50, 64] of 8-bit values in blocks of 16, the default zero
       point (128);
  ei4  int4 [50, 80] in blocks of 32 (the last holding 16), int4 zero
       points.

--float16 makes the scales, `h` and the outputs fp16. --negative writes a
malformed model: the table gathered along K (axis), packed rows that are
not whole blocks (blocks), zero points of another type (zero), bits 3
(bits), a block size that is not a power of two (block), scales of the
wrong shape (scales), a float table (dtype), an int4 table's scales given
at run time (scales-input).
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

path = sys.argv[1]
dtype = np.float16 if "--float16" in sys.argv else np.float32
onnx_type = TensorProto.FLOAT16 if dtype == np.float16 else TensorProto.FLOAT
rng = np.random.default_rng(13)
ROWS, TIED = 50, 2100


def scales(shape):
    return (rng.random(shape) * 0.05 + 0.01).astype(dtype)


def packed(shape):
    return rng.integers(0, 256, shape, dtype=np.uint8)


def int4(name, values):
    return helper.make_tensor(name, TensorProto.INT4, list(values.shape),
                              values.flatten().tolist())


def gbq(inputs, output, width, gather_axis=0, **attrs):
    nodes.append(helper.make_node("GatherBlockQuantized", inputs, [output],
                                  domain="com.microsoft",
                                  gather_axis=gather_axis, quantize_axis=1,
                                  **attrs))
    outputs.append(helper.make_tensor_value_info(output, onnx_type,
                                                 ["batch", "seq", width]))


nodes, outputs = [], []
weights = [
    numpy_helper.from_array(packed((TIED, 2, 16)), "lm_q"),
    numpy_helper.from_array(scales((TIED, 2)), "lm_s"),
    numpy_helper.from_array(packed((TIED, 1)), "lm_z"),
    numpy_helper.from_array(np.array([TIED, 32], dtype=np.int64), "flat"),
    numpy_helper.from_array(packed((ROWS, 64)), "e8_q"),
    numpy_helper.from_array(scales((ROWS, 4)), "e8_s"),
    int4("ei4_q", rng.integers(-8, 8, (ROWS, 80))),
    numpy_helper.from_array(scales((ROWS, 3)), "ei4_s"),
    int4("ei4_z", rng.integers(-8, 8, (ROWS, 3))),
]
inputs = [helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", "seq"]),
          helper.make_tensor_value_info("h", onnx_type, ["batch", "seq", 64])]

if "--negative" in sys.argv:
    kind = sys.argv[sys.argv.index("--negative") + 1]
    if kind == "axis":
        gbq(["e8_q", "ids", "e8_s"], "y", 64, gather_axis=1, bits=8,
            block_size=16)
    elif kind == "blocks":
        weights.append(numpy_helper.from_array(packed((ROWS, 24)), "odd_q"))
        weights.append(numpy_helper.from_array(scales((ROWS, 2)), "odd_s"))
        gbq(["odd_q", "ids", "odd_s"], "y", 48, bits=4, block_size=32)
    elif kind == "bits":
        gbq(["e8_q", "ids", "e8_s"], "y", 64, bits=3, block_size=16)
    elif kind == "block":
        gbq(["e8_q", "ids", "e8_s"], "y", 64, bits=8, block_size=24)
    elif kind == "scales":
        gbq(["e8_q", "ids", "ei4_s"], "y", 64, bits=8, block_size=16)
    elif kind == "dtype":
        gbq(["ei4_s", "ids", "e8_s"], "y", 3, bits=8, block_size=16)
    elif kind == "scales-input":
        inputs.append(helper.make_tensor_value_info("s_in", onnx_type, [ROWS, 3]))
        gbq(["ei4_q", "ids", "s_in"], "y", 80, bits=4, block_size=32)
    else:
        weights.append(numpy_helper.from_array(packed((ROWS, 2)), "u8_z"))
        gbq(["ei4_q", "ids", "ei4_s", "u8_z"], "y", 80, bits=4, block_size=32)
    graph = helper.make_graph(nodes, "negative",
                              [i for i in inputs if i.name != "h"], outputs,
                              initializer=weights)
    model = helper.make_model(graph, opset_imports=[
        helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)])
    onnx.save(model, path)
    sys.exit(0)

nodes.append(helper.make_node("Reshape", ["lm_q", "flat"], ["lm_flat"]))
gbq(["lm_flat", "ids", "lm_s", "lm_z"], "e4", 64, bits=4, block_size=32)
nodes.append(helper.make_node("MatMulNBits", ["h", "lm_q", "lm_s", "lm_z"],
                              ["logits"], domain="com.microsoft", K=64, N=TIED,
                              bits=4, block_size=32))
outputs.append(helper.make_tensor_value_info("logits", onnx_type,
                                             ["batch", "seq", TIED]))
gbq(["e8_q", "ids", "e8_s"], "e8", 64, bits=8, block_size=16)
gbq(["ei4_q", "ids", "ei4_s", "ei4_z"], "ei4", 80, bits=4, block_size=32)

graph = helper.make_graph(nodes, "gather_block_quantized", inputs, outputs,
                          initializer=weights)
model = helper.make_model(graph, opset_imports=[
    helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)])
model.ir_version = 10
onnx.save(model, path)
