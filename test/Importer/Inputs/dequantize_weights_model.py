"""Products by weights that a DequantizeLinear dequantizes (opset 21).

  dequantize_weights_model.py OUT.onnx [--float16] [--k K]
  dequantize_weights_model.py OUT.onnx --negative-short

A [batch, seq, K] input (K = 80 by default) times 24 columns of weights,
each stored as an exporter writes it:

  y_i4   int4 [K, 24], blocks of 32 down K (axis 0), int4 zero points
         (ModelOpt's INT4-AWQ, Olive's QDQ encoding);
  y_u4   uint4 [K, 24], blocks of 32 down K, no zero points (0);
  y_u4t  uint4 [24, K], blocks of 32 along K (axis 1) with zero points,
         read through a Transpose (a Linear layer's [out, in] weight);
  y_i8c  int8 [K, 24], one scale and zero point per column (axis 1), as
         quantize_static writes per-channel weights;
  y_u8t  uint8 [K, 24], one scale and zero point for the whole tensor;
  y_f8t  float8 E4M3FN [K, 24], one scale for the whole tensor and a zero
         point of 0 (ModelOpt's FP8 weights);
  y_f8c  float8 E4M3FN [K, 24], one scale per column (axis 1);
  y_f8b  float8 E4M3FN [K, 24], blocks of 32 down K.

Float8 weights are every value but NaN (0x7f, 0xff) in their first 254
places, subnormals and both zeros included, then random non-NaN bytes.

The last block of each blocked weight holds K - 64 values (16 at K = 80).
--float16 makes the input, scales and outputs fp16.

--negative-short writes a malformed model instead: an int4 initializer
whose packed bytes are short of its dims. --float8-nan writes y_f8t alone
with one weight NaN (0x7f).
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

path = sys.argv[1]
K = int(sys.argv[sys.argv.index("--k") + 1]) if "--k" in sys.argv else 80
N, BLOCK = 24, 32
dtype = np.float16 if "--float16" in sys.argv else np.float32
onnx_type = TensorProto.FLOAT16 if dtype == np.float16 else TensorProto.FLOAT
rng = np.random.default_rng(11)
nodes, weights, outputs = [], [], []


def scales(shape):
    return (rng.random(shape) * 0.05 + 0.01).astype(dtype)


def int4(name, values, signed):
    """A 4-bit initializer (make_tensor packs two values a byte)."""
    kind = TensorProto.INT4 if signed else TensorProto.UINT4
    return helper.make_tensor(name, kind, list(values.shape),
                              values.flatten().tolist())


def product(name, dq_inputs, dq_attrs, transpose=False):
    w = name + "_w"
    nodes.append(helper.make_node("DequantizeLinear", dq_inputs, [w], **dq_attrs))
    if transpose:
        nodes.append(helper.make_node("Transpose", [w], [w + "_t"], perm=[1, 0]))
        w += "_t"
    nodes.append(helper.make_node("MatMul", ["a", w], [name]))
    outputs.append(helper.make_tensor_value_info(name, onnx_type, ["batch", "seq", N]))


blocks = -(-K // BLOCK)


def float8(name, shape, nan=False):
    """An E4M3FN initializer of random bytes, NaN only where asked."""
    b = rng.integers(0, 256, int(np.prod(shape)), dtype=np.uint8)
    b[(b & 0x7f) == 0x7f] = 0x38
    # Every value once, in the first 254 weights (rows 0 to 10 of [K, 24]).
    b[:254] = [v for v in range(256) if v & 0x7f != 0x7f]
    if nan:
        b[5] = 0x7f
    return helper.make_tensor(name, TensorProto.FLOAT8E4M3FN, list(shape),
                              b.tobytes(), raw=True)


def float8_per_tensor(nan=False):
    global weights
    weights += [float8("f8t_q", (K, N), nan),
                numpy_helper.from_array(scales(()), "f8t_s"),
                helper.make_tensor("f8t_z", TensorProto.FLOAT8E4M3FN, [],
                                   b"\x00", raw=True)]
    product("y_f8t", ["f8t_q", "f8t_s", "f8t_z"], {})


def negative_short():
    q = int4("q", rng.integers(-8, 8, (K, N)), True)
    q.ClearField("int32_data")
    q.raw_data = bytes(K * N // 2 - 3)
    s = numpy_helper.from_array(scales((blocks, N)), "s")
    graph = helper.make_graph(
        [helper.make_node("DequantizeLinear", ["q", "s"], ["y"], axis=0,
                          block_size=BLOCK)],
        "negative", [], [helper.make_tensor_value_info("y", onnx_type, [K, N])],
        initializer=[q, s])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    onnx.save(model, path)


if "--negative-short" in sys.argv:
    negative_short()
    sys.exit(0)

def every_product():
    global weights
    weights += [int4("i4_q", rng.integers(-8, 8, (K, N)), True),
                numpy_helper.from_array(scales((blocks, N)), "i4_s"),
                int4("i4_z", rng.integers(-8, 8, (blocks, N)), True)]
    product("y_i4", ["i4_q", "i4_s", "i4_z"], {"axis": 0, "block_size": BLOCK})

    weights += [int4("u4_q", rng.integers(0, 16, (K, N)), False),
                numpy_helper.from_array(scales((blocks, N)), "u4_s")]
    product("y_u4", ["u4_q", "u4_s"], {"axis": 0, "block_size": BLOCK})

    weights += [int4("u4t_q", rng.integers(0, 16, (N, K)), False),
                numpy_helper.from_array(scales((N, blocks)), "u4t_s"),
                int4("u4t_z", rng.integers(0, 16, (N, blocks)), False)]
    product("y_u4t", ["u4t_q", "u4t_s", "u4t_z"], {"axis": 1, "block_size": BLOCK},
            transpose=True)

    weights += [numpy_helper.from_array(rng.integers(-128, 128, (K, N), dtype=np.int8), "i8c_q"),
                numpy_helper.from_array(scales(N), "i8c_s"),
                numpy_helper.from_array(rng.integers(-20, 20, N, dtype=np.int8), "i8c_z")]
    product("y_i8c", ["i8c_q", "i8c_s", "i8c_z"], {"axis": 1})

    weights += [numpy_helper.from_array(rng.integers(0, 256, (K, N), dtype=np.uint8), "u8t_q"),
                numpy_helper.from_array(scales(()), "u8t_s"),
                numpy_helper.from_array(np.array(131, dtype=np.uint8), "u8t_z")]
    product("y_u8t", ["u8t_q", "u8t_s", "u8t_z"], {})

    float8_per_tensor()

    weights += [float8("f8c_q", (K, N)), numpy_helper.from_array(scales(N), "f8c_s")]
    product("y_f8c", ["f8c_q", "f8c_s"], {"axis": 1})

    weights += [float8("f8b_q", (K, N)),
                numpy_helper.from_array(scales((blocks, N)), "f8b_s")]
    product("y_f8b", ["f8b_q", "f8b_s"], {"axis": 0, "block_size": BLOCK})


if "--float8-nan" in sys.argv:
    float8_per_tensor(nan=True)
else:
    every_product()

graph = helper.make_graph(
    nodes, "dequantize_weights",
    [helper.make_tensor_value_info("a", onnx_type, ["batch", "seq", K])],
    outputs, initializer=weights)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
model.ir_version = 10
onnx.checker.check_model(model)
onnx.save(model, path)
