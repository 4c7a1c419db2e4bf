"""A convolutional head as onnxruntime's quantize_static writes it in the
QOperator format: com.microsoft QLinearWhere, QLinearAveragePool (a window
over the whole image) and QLinearGlobalAveragePool between QLinearConvs.

  qlinear_pools_model.py OUT_DIR

writes OUT_DIR/float.onnx (the float model), OUT_DIR/model.onnx (its
quantization, uint8 activations and int8 weights, calibrated on four random
batches) and OUT_DIR/inputs/{x,cond}.npy. quantize_static quantizes a Where
only with ForceQuantizeNoInputCheck (without it, it leaves the Where float
and reading tensors it has replaced).
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnxruntime import quantization as q

out = sys.argv[1]
os.makedirs(os.path.join(out, "inputs"), exist_ok=True)
rng = np.random.default_rng(17)
X_SHAPE, COND_SHAPE = (2, 3, 6, 7), (1, 8, 6, 1)


def weight(name, *shape):
    return numpy_helper.from_array(
        rng.normal(0, 0.3, shape).astype(np.float32), name)


nodes = [
    helper.make_node("Conv", ["x", "w", "bias"], ["conv"], pads=[1, 1, 1, 1]),
    helper.make_node("Relu", ["conv"], ["relu"]),
    helper.make_node("Conv", ["x", "w"], ["conv2"], pads=[1, 1, 1, 1]),
    helper.make_node("Where", ["cond", "relu", "conv2"], ["chosen"]),
    helper.make_node("GlobalAveragePool", ["chosen"], ["pooled"]),
    helper.make_node("AveragePool", ["relu"], ["window"], kernel_shape=[6, 7]),
    helper.make_node("Conv", ["pooled", "w2"], ["mixed"]),
    helper.make_node("Add", ["mixed", "window"], ["y"]),
]
graph = helper.make_graph(
    nodes, "pools",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, X_SHAPE),
     helper.make_tensor_value_info("cond", TensorProto.BOOL, COND_SHAPE)],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8, 1, 1])],
    [weight("w", 8, 3, 3, 3), weight("bias", 8), weight("w2", 8, 8, 1, 1)])
model = helper.make_model(graph, ir_version=10, opset_imports=[helper.make_opsetid("", 17)])
onnx.save(model, os.path.join(out, "float.onnx"))


def batch():
    return {"x": rng.normal(0, 1, X_SHAPE).astype(np.float32),
            "cond": rng.random(COND_SHAPE) < 0.5}


class Calibration(q.CalibrationDataReader):
    def __init__(self):
        self.batches = iter([batch() for _ in range(4)])

    def get_next(self):
        return next(self.batches, None)


q.quantize_static(os.path.join(out, "float.onnx"),
                  os.path.join(out, "model.onnx"), Calibration(),
                  quant_format=q.QuantFormat.QOperator,
                  activation_type=q.QuantType.QUInt8,
                  weight_type=q.QuantType.QInt8,
                  extra_options={"ForceQuantizeNoInputCheck": True})
for name, value in batch().items():
    np.save(os.path.join(out, "inputs", name + ".npy"), value)
