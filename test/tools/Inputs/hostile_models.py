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
    # A fuzz finding: six splats of 16 GiB each from 1 KB of model.
    splats = [f"c{i}" for i in range(6)]
    yield "splats-huge", model(
        [h.make_node("ConstantOfShape", ["s"], [c],
                     value=nh.from_array(np.array([i], np.int64)))
         for i, c in enumerate(splats)],
        [], [vi(c, T.INT64, [1 << 31]) for c in splats],
        [nh.from_array(np.array([1 << 31], np.int64), "s")])
    yield "splat-dtypes", splat_dtypes()


def splat_dtypes():
    """Splat constants of each element width, read by kernels, through a
    view, and copied to outputs; two of one value share storage."""
    def splat(out, dtype, value, shape):
        return h.make_node("ConstantOfShape", [f"shape{len(shape)}"], [out],
                           value=nh.from_array(np.array([value], dtype)))
    nodes = [
        splat("f16", np.float16, -1.5, [3, 4]),
        splat("f32", np.float32, 0.25, [12]),
        splat("f32b", np.float32, 0.25, [3, 4]),
        splat("f64", np.float64, 2.25, [3, 4]),
        splat("i8", np.int8, -3, [3, 4]),
        splat("i64", np.int64, 0x0102030405060708, [3, 4]),
        splat("b", np.bool_, True, [3, 4]),
        h.make_node("Reshape", ["f32", "shape2"], ["f32v"]),
        h.make_node("Add", ["f32v", "x"], ["sum"]),
        h.make_node("Mul", ["f32b", "sum"], ["y_f32"]),
        h.make_node("Cast", ["f16"], ["f16f"], to=T.FLOAT),
        h.make_node("Add", ["f16f", "x"], ["y_f16"]),
        h.make_node("Not", ["b"], ["y_b"]),
        h.make_node("Identity", ["f64"], ["y_f64"]),
        h.make_node("Identity", ["i8"], ["y_i8"]),
        h.make_node("Identity", ["i64"], ["y_i64"]),
    ]
    outs = [("y_f32", T.FLOAT), ("y_f16", T.FLOAT), ("y_b", T.BOOL),
            ("y_f64", T.DOUBLE), ("y_i8", T.INT8), ("y_i64", T.INT64)]
    return model(nodes, [vi("x", T.FLOAT, [3, 4])],
                 [vi(n, t, [3, 4]) for n, t in outs],
                 [nh.from_array(np.array([12], np.int64), "shape1"),
                  nh.from_array(np.array([3, 4], np.int64), "shape2")])


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
