#!/usr/bin/env python3
"""Checks Conv and the global pools against onnxruntime on the reference
interpreter and the host backend.

  check_conv.py --kilnc build/bin/kilnc --kiln-run build/bin/kiln-run

The conformance corpus holds no Conv or pooling tests, so this builds Conv
nodes of the forms models use (ViT's patch embedding with kernel = stride,
padded 3x3, strided and dilated kernels, groups and depthwise, auto_pad, 1-D
and 3-D, with and without bias) and GlobalAveragePool and GlobalMaxPool (a
CNN's head, over 1-D, 2-D and 3-D spatial dims, and after a Conv), runs
onnxruntime (CPU) as the oracle and Kiln on the reference interpreter and,
compiled, on the host backend. Outputs must match within the fp32 numerics
contract. Exit code 1 on any mismatch.
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))
from oracle import (both_paths_failure, check_both_paths, run_checks,  # noqa: E402
                    tools_parser)

# (name, input shape, weight shape, bias, attributes)
CASES = [
    ("vit_patches", (2, 3, 16, 16), (8, 3, 4, 4), True, dict(strides=[4, 4])),
    ("padded_3x3", (1, 4, 9, 7), (5, 4, 3, 3), True, dict(pads=[1, 1, 1, 1])),
    ("strided_asym_pads", (2, 3, 11, 10), (4, 3, 3, 2), False,
     dict(strides=[2, 3], pads=[0, 1, 2, 0])),
    ("dilated", (1, 2, 12, 12), (3, 2, 3, 3), True, dict(dilations=[2, 3])),
    ("groups", (2, 6, 8, 8), (4, 3, 3, 3), True, dict(group=2, pads=[1, 1, 1, 1])),
    ("depthwise", (1, 4, 7, 7), (4, 1, 3, 3), False, dict(group=4)),
    ("same_upper", (1, 3, 10, 9), (2, 3, 4, 3), True, dict(auto_pad="SAME_UPPER", strides=[3, 2])),
    ("same_lower", (1, 3, 10, 9), (2, 3, 4, 3), False, dict(auto_pad="SAME_LOWER", strides=[2, 2])),
    ("valid", (1, 3, 8, 8), (2, 3, 3, 3), True, dict(auto_pad="VALID")),
    ("conv1d", (2, 5, 33), (7, 5, 3), True, dict(pads=[1, 1])),
    ("conv3d", (1, 2, 5, 6, 4), (3, 2, 2, 3, 2), True, dict(strides=[1, 2, 1])),
]


# (pool, input shape, whether a 3x3 Conv of 4 channels comes first)
POOL_CASES = [
    ("GlobalAveragePool", (2, 3, 5, 7), False),
    ("GlobalMaxPool", (1, 4, 9), False),
    ("GlobalAveragePool", (2, 3, 4, 5, 6), False),
    ("GlobalMaxPool", (2, 2, 3, 1, 4), False),
    ("GlobalAveragePool", (2, 3, 9, 9), True),
]


def build_pool(op, x_shape, conv_first, rng):
    nodes, inits, source = [], [], "x"
    if conv_first:
        w = rng.uniform(-1, 1, (4, x_shape[1], 3, 3)).astype(np.float32)
        inits.append(numpy_helper.from_array(w, "w"))
        nodes.append(helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]))
        source = "c"
    nodes.append(helper.make_node(op, [source], ["y"]))
    graph = helper.make_graph(
        nodes, "pool", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    return onnx.shape_inference.infer_shapes(model)


def build(x_shape, w_shape, bias, attrs, rng):
    w = rng.uniform(-1, 1, w_shape).astype(np.float32)
    inits = [numpy_helper.from_array(w, "w")]
    ins = ["x", "w"]
    if bias:
        inits.append(numpy_helper.from_array(
            rng.uniform(-1, 1, w_shape[0]).astype(np.float32), "b"))
        ins.append("b")
    node = helper.make_node("Conv", ins, ["y"], **attrs)
    graph = helper.make_graph(
        [node], "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    return onnx.shape_inference.infer_shapes(model)


def check(tools, model, x_shape, rng, work):
    """Returns None or why a path failed."""
    path = os.path.join(work, "model.onnx")
    onnx.save(model, path)
    x = rng.uniform(-1, 1, x_shape).astype(np.float32)
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(
        None, {"x": x})[0]
    return both_paths_failure(*check_both_paths(tools, path, {"x": x}, {"y": want}, work))


def main():
    tools = tools_parser(__doc__).parse_args()
    rng = np.random.default_rng(11)
    checks = [(f"{name} x{list(x)} w{list(w)} {attrs}",
               lambda work, c=(x, w, bias, attrs): check(
                   tools, build(*c, rng), c[0], rng, work))
              for name, x, w, bias, attrs in CASES]
    checks += [(f"{op} x{list(x)}" + (" after a Conv" if conv else ""),
                lambda work, c=(op, x, conv): check(
                    tools, build_pool(*c, rng), c[1], rng, work))
               for op, x, conv in POOL_CASES]
    return run_checks(checks, "kiln-conv-", "Conv and pooling cases", passed="")


if __name__ == "__main__":
    sys.exit(main())
