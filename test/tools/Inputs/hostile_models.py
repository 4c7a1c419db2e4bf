#!/usr/bin/env python3
"""Writes the hostile models of hostile-input.test into a folder.

  hostile_models.py DIR

One small ONNX file per row of docs/reliability.md's table that needs a
binary model (the ONNX text format cannot say these things).
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

vi = h.make_tensor_value_info


def model(nodes, inputs, outputs, inits=(), opset=17, sparse=()):
    g = h.make_graph(nodes, "g", inputs, outputs, list(inits))
    g.sparse_initializer.extend(sparse)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def relu(shape_in, shape_out=None, opset=17):
    return model([h.make_node("Relu", ["x"], ["y"])], [vi("x", T.FLOAT, shape_in)],
                 [vi("y", T.FLOAT, shape_out or shape_in)], opset=opset)


def nested_loops(depth, trips):
    """Loops nested `depth` deep, each of `trips` iterations around a Relu:
    trips ** depth unrolled bodies."""
    def body(inner, name):
        return h.make_graph(
            [h.make_node("Identity", ["cin"], ["cout"])] + inner, name,
            [vi("i", T.INT64, []), vi("cin", T.BOOL, []), vi("v", T.FLOAT, [4])],
            [vi("cout", T.BOOL, []), vi("vout", T.FLOAT, [4])])
    graph = body([h.make_node("Relu", ["v"], ["vout"])], "leaf")
    for d in range(depth - 1, -1, -1):
        loop = h.make_node("Loop", ["n", "", "v"], [f"l{d}"], body=graph)
        graph = body([loop, h.make_node("Identity", [f"l{d}"], ["vout"])], f"b{d}")
    return model([graph.node[1]], [vi("v", T.FLOAT, [4])], [vi("l0", T.FLOAT, [4])],
                 [nh.from_array(np.array(trips, np.int64), "n")])


def cases():
    yield "duplicate-outputs", model(
        [h.make_node("Relu", ["x"], ["y"])], [vi("x", T.FLOAT, [4])],
        [vi("y", T.FLOAT, [4]), vi("y", T.FLOAT, [4])])
    yield "produced-twice", model(
        [h.make_node("Relu", ["x"], ["y"]), h.make_node("Neg", ["x"], ["y"])],
        [vi("x", T.FLOAT, [4])], [vi("y", T.FLOAT, [4])])
    yield "opset-too-new", relu([4], opset=999)
    yield "opset-zero", relu([4], opset=0)
    yield "dims-overflow", relu([1 << 40, 1 << 40])
    yield "dims-negative", relu([-3, 4])
    yield "arena-too-large", relu([1 << 20, 1 << 20])  # 4 TiB in and out
    yield "expand-too-large", model(
        [h.make_node("Expand", ["x", "s"], ["y"]), h.make_node("Relu", ["y"], ["z"])],
        [vi("x", T.FLOAT, [1])], [vi("z", T.FLOAT, None)],
        [nh.from_array(np.array([1 << 16, 1 << 16, 1 << 8], np.int64), "s")])
    short = T(name="w", data_type=T.FLOAT, dims=[4], raw_data=b"\0" * 8)
    yield "initializer-short", model(
        [h.make_node("Add", ["x", "w"], ["y"])], [vi("x", T.FLOAT, [4])],
        [vi("y", T.FLOAT, [4])], [short])
    # 8 GiB by its dims, 8 bytes in the file: refused before anything that
    # size is allocated (a fuzz finding).
    claims = T(name="w", data_type=T.FLOAT, dims=[1 << 21, 1 << 10],
               raw_data=b"\0" * 8)
    yield "initializer-claims-huge", model(
        [h.make_node("Add", ["x", "w"], ["y"])], [vi("x", T.FLOAT, [1])],
        [vi("y", T.FLOAT, [1 << 21, 1 << 10])], [claims])
    yield "squeeze-scalar", model(
        [h.make_node("Squeeze", ["x", "axes"], ["y"])], [vi("x", T.FLOAT, [])],
        [vi("y", T.FLOAT, [])], [nh.from_array(np.array([0], np.int64), "axes")])
    yield "string-initializer", model(
        [h.make_node("Identity", ["s"], ["y"])], [], [vi("y", T.STRING, [1])],
        [h.make_tensor("s", T.STRING, [1], [b"a"])])
    sparse = h.make_sparse_tensor(nh.from_array(np.array([1.0], np.float32), "w"),
                                  nh.from_array(np.array([0], np.int64), "i"), [4])
    yield "sparse-initializer", model(
        [h.make_node("Add", ["x", "w"], ["y"])], [vi("x", T.FLOAT, [4])],
        [vi("y", T.FLOAT, [4])], sparse=[sparse])
    yield "nested-loops", nested_loops(12, 4)  # 4^12 = 16 M bodies
    yield "weights-too-large", model(
        [h.make_node("Add", ["x", "w"], ["y"])], [vi("x", T.FLOAT, [1024])],
        [vi("y", T.FLOAT, [1024])], [nh.from_array(np.ones(1024, np.float32), "w")])
    yield "relu", relu([2, 3])
    # ConstantOfShape feeding a cumsum: a splat weight of `n` floats.
    for name, n in (("splat-weight", 70001), ("splat-weight-huge", 1 << 30)):
        yield name, model(
            [h.make_node("ConstantOfShape", ["s"], ["c"],
                         value=nh.from_array(np.array([0.5], np.float32))),
             h.make_node("CumSum", ["c", "a"], ["d"]),
             h.make_node("Add", ["d", "x"], ["y"])],
            [vi("x", T.FLOAT, [1])], [vi("y", T.FLOAT, [n])],
            [nh.from_array(np.array([n], np.int64), "s"),
             nh.from_array(np.array(0, np.int64), "a")])


def main():
    root = sys.argv[1]
    os.makedirs(root, exist_ok=True)
    for name, m in cases():
        with open(os.path.join(root, name + ".onnx"), "wb") as f:
            f.write(m.SerializeToString())
    # Run-time inputs: the wrong dtype, the wrong shape, NaN and infinities.
    np.save(os.path.join(root, "x-int.npy"), np.zeros((2, 3), np.int32))
    with open(os.path.join(root, "x-claims-huge.pb"), "wb") as f:
        f.write(T(name="x", data_type=T.FLOAT, dims=[1 << 30, 3],
                  raw_data=b"\0" * 24).SerializeToString())
    np.save(os.path.join(root, "x-shape.npy"), np.zeros((3, 2), np.float32))
    np.save(os.path.join(root, "x-nonfinite.npy"),
            np.array([[np.nan, np.inf, -np.inf], [1, -1, 0]], np.float32))


if __name__ == "__main__":
    main()
