#!/usr/bin/env python3
"""Writes the models of external-data.test into a folder.

  external_data_models.py DIR

DIR/good/: y = (x @ A + b) @ B with A and B external: A at an 8-aligned
offset of weights.bin, b right after it at an odd offset (read by copying),
B alone in sub/second.bin (a location with a folder). DIR/good/expected.npy
holds numpy's result for DIR/good/x.npy.

DIR/<case>/model.onnx for each hostile case: the same graph with one
tensor's external data entries changed (see CASES); the files they point at
exist where the case needs them to.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

rng = np.random.default_rng(7)
A = rng.standard_normal((4, 24)).astype(np.float32)
BIAS = rng.standard_normal((24,)).astype(np.float32)
B = rng.standard_normal((24, 3)).astype(np.float32)
X = rng.standard_normal((2, 4)).astype(np.float32)


def external(name, array, location, offset, length=None):
    t = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=array.shape)
    t.data_location = TensorProto.EXTERNAL
    entries = [("location", location), ("offset", str(offset)),
               ("length", str(array.nbytes if length is None else length))]
    for key, value in entries:
        if value is not None:
            t.external_data.add(key=key, value=value)
    return t


def model(a_entries=None):
    """The graph; `a_entries` replaces A's external data entries."""
    a = external("A", A, "weights.bin", 8)
    if a_entries is not None:
        del a.external_data[:]
        for key, value in a_entries:
            a.external_data.add(key=key, value=value)
    inits = [a, external("bias", BIAS, "weights.bin", 8 + A.nbytes + 1),
             external("B", B, "sub/second.bin", 0)]
    nodes = [helper.make_node("MatMul", ["x", "A"], ["xa"], name="mm1"),
             helper.make_node("Add", ["xa", "bias"], ["h"], name="add"),
             helper.make_node("MatMul", ["h", "B"], ["y"], name="mm2")]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def write_data(folder):
    os.makedirs(os.path.join(folder, "sub"), exist_ok=True)
    with open(os.path.join(folder, "weights.bin"), "wb") as f:
        f.write(b"\0" * 8 + A.tobytes() + b"\0" + BIAS.tobytes())
    with open(os.path.join(folder, "sub", "second.bin"), "wb") as f:
        f.write(B.tobytes())


def a_size():
    return str(A.nbytes)


# Hostile cases: the entries of tensor A.
CASES = {
    "parent": [("location", "../outside.bin"), ("offset", "0"), ("length", a_size())],
    "nested-parent": [("location", "sub/../../outside.bin")],
    "absolute": [("location", "/etc/passwd")],
    "symlink": [("location", "link.bin"), ("offset", "0"), ("length", a_size())],
    "symlink-dir": [("location", "linkdir/outside.bin")],
    "offset-past-end": [("location", "weights.bin"), ("offset", "100000"), ("length", a_size())],
    "length-past-end": [("location", "weights.bin"), ("offset", "8"), ("length", "1000000")],
    "length-mismatch": [("location", "weights.bin"), ("offset", "8"), ("length", "12")],
    "offset-overflow": [("location", "weights.bin"), ("offset", "18446744073709551615"), ("length", a_size())],
    "bad-offset": [("location", "weights.bin"), ("offset", "-8")],
    "no-location": [("offset", "8"), ("length", a_size())],
    "missing-file": [("location", "nope.bin")],
    "directory": [("location", "sub")],
}


def main():
    root = sys.argv[1]
    good = os.path.join(root, "good")
    os.makedirs(good, exist_ok=True)
    write_data(good)
    onnx.save(model(), os.path.join(good, "model.onnx"))
    np.save(os.path.join(good, "x.npy"), X)
    np.save(os.path.join(good, "expected.npy"), (X @ A + BIAS) @ B)
    with open(os.path.join(root, "outside.bin"), "wb") as f:
        f.write(A.tobytes())
    for case, entries in CASES.items():
        folder = os.path.join(root, case)
        os.makedirs(folder, exist_ok=True)
        write_data(folder)
        if case == "symlink":
            os.symlink(os.path.join(root, "outside.bin"), os.path.join(folder, "link.bin"))
        if case == "symlink-dir":
            os.symlink(root, os.path.join(folder, "linkdir"))
        onnx.save(model(entries), os.path.join(folder, "model.onnx"))


if __name__ == "__main__":
    main()
