"""Q/DQ products of 8-bit activations and weights, as quantize_static writes them.

  qdq_matmul_model.py OUT.onnx K [--n N]
                      [--weights symmetric|zero-point|varying-zero-points|uint8|uint8-plain|blocked]
                      [--quantized-input] [--plain-uint8]

Three products of a [batch, seq, K] fp32 input `a` by N (default 72) columns,
each the QDQ format of onnxruntime's quantize_static: the input quantized
per tensor and dequantized (QuantizeLinear, DequantizeLinear), times the
DequantizeLinear of int8 weights B [K, N] with a scale per column (axis 1),
then a bias:

  y_s8: int8 activations with zero point 7;
  y_u8: uint8 activations with zero point 131;
  y_sym: int8 activations without a zero point (symmetric).

--plain-uint8 adds a fourth product, y_u8_plain: uint8 activations without a
zero point (QuantizeLinear's default type; the zero point is 0).

--weights zero-point gives the weights an explicit zero point of 3 a column
(which the integer GEMM takes), varying-zero-points one from -5 to 5 a
column, uint8 makes them uint8 with one from 120 to 136 a column, and
uint8-plain uint8 without zero points (0); --weights blocked scales them in
blocks of 16 along K (which it does not); --quantized-input makes the model's input
the int8 tensor itself (`a_q`, which y_sym dequantizes; the others read
`a`).
"""
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

path, K = sys.argv[1], int(sys.argv[2])
N = int(sys.argv[sys.argv.index("--n") + 1]) if "--n" in sys.argv else 72
form = sys.argv[sys.argv.index("--weights") + 1] if "--weights" in sys.argv else "symmetric"
rng = np.random.default_rng(11)
nodes, weights, outputs = [], [], []
dims = ["batch", "seq"]
graph_inputs = [helper.make_tensor_value_info("a", TensorProto.FLOAT, dims + [K])]


def add(name, activation_type, zero_point, output_type=TensorProto.INT8):
    # Activations of about unit size over the 8-bit range.
    scale = np.array(4.0 / 127, np.float32)
    weights.append(numpy_helper.from_array(scale, name + "_as"))
    qdq = [name + "_as"]
    if zero_point is not None:
        weights.append(numpy_helper.from_array(
            np.array(zero_point, activation_type), name + "_az"))
        qdq.append(name + "_az")
    else:
        # Without a zero point QuantizeLinear makes uint8: int8 needs one
        # for its type, so the symmetric form says 0 through the attribute
        # of its output type (opset 21).
        pass
    q_attrs = {} if zero_point is not None else {"output_dtype": output_type}
    if name == "y_sym" and "--quantized-input" in sys.argv:
        graph_inputs.append(helper.make_tensor_value_info(
            name + "_aq", TensorProto.INT8, dims + [K]))
    else:
        nodes.append(helper.make_node("QuantizeLinear", ["a"] + qdq, [name + "_aq"], **q_attrs))
    nodes.append(helper.make_node("DequantizeLinear", [name + "_aq"] + qdq, [name + "_ad"]))
    unsigned = form in ("uint8", "uint8-plain")
    w = (rng.integers(0, 256, (K, N), dtype=np.uint8) if unsigned
         else rng.integers(-127, 128, (K, N), dtype=np.int8))
    weights.append(numpy_helper.from_array(w, name + "_w"))
    if form == "blocked":
        s = (rng.random((K // 16, N)) * 0.01 + 0.002).astype(np.float32)
        attrs = {"axis": 0, "block_size": 16}
    else:
        s = (rng.random(N) * 0.01 + 0.002).astype(np.float32)
        attrs = {"axis": 1}
    weights.append(numpy_helper.from_array(s, name + "_ws"))
    w_inputs = [name + "_w", name + "_ws"]
    if form in ("zero-point", "varying-zero-points", "uint8"):
        zp = (np.full(s.shape, 3, np.int8) if form == "zero-point"
              else rng.integers(-5, 6, s.shape, dtype=np.int8) if form == "varying-zero-points"
              else rng.integers(120, 137, s.shape, dtype=np.uint8))
        weights.append(numpy_helper.from_array(zp, name + "_wz"))
        w_inputs.append(name + "_wz")
    nodes.append(helper.make_node("DequantizeLinear", w_inputs, [name + "_wd"], **attrs))
    nodes.append(helper.make_node("MatMul", [name + "_ad", name + "_wd"], [name + "_p"]))
    weights.append(numpy_helper.from_array(
        rng.standard_normal(N).astype(np.float32), name + "_b"))
    nodes.append(helper.make_node("Add", [name + "_p", name + "_b"], [name]))
    outputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, dims + [N]))


add("y_s8", np.int8, 7)
add("y_u8", np.uint8, 131)
add("y_sym", np.int8, None)
if "--plain-uint8" in sys.argv:
    add("y_u8_plain", np.uint8, None, TensorProto.UINT8)
graph = helper.make_graph(
    nodes, "qdq_matmul", graph_inputs, outputs, weights)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
model.ir_version = 10
onnx.checker.check_model(model)
onnx.save(model, path)
