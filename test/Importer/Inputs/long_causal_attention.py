#!/usr/bin/env python3
"""Writes long-causal.onnx (causal Attention over N = 2^20 + 5 keys, more
than Kiln stores as one index constant), its inputs and numpy's output.

  long_causal_attention.py DIR

Top-left aligned causality (no past): query 0 sees key 0 and query 1 sees
keys 0 and 1, so any wrong key index among the million others shows as
another key attended.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h

N = (1 << 20) + 5


def main():
    root = sys.argv[1]
    os.makedirs(root, exist_ok=True)
    vi = h.make_tensor_value_info
    graph = h.make_graph(
        [h.make_node("Attention", ["q", "k", "v"], ["y"], is_causal=1)], "g",
        [vi("q", T.FLOAT, [1, 1, 2, 1]), vi("k", T.FLOAT, [1, 1, N, 1]),
         vi("v", T.FLOAT, [1, 1, N, 1])],
        [vi("y", T.FLOAT, [1, 1, 2, 1])])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 23)])
    model.ir_version = 10
    onnx.save(model, os.path.join(root, "long-causal.onnx"))
    rng = np.random.default_rng(0)
    q = rng.standard_normal((1, 1, 2, 1)).astype(np.float32)
    k = rng.standard_normal((1, 1, N, 1)).astype(np.float32)
    v = rng.standard_normal((1, 1, N, 1)).astype(np.float32)
    for name, value in (("q", q), ("k", k), ("v", v)):
        np.save(os.path.join(root, name + ".npy"), value)
    y = np.zeros((1, 1, 2, 1), np.float64)
    for i in range(2):
        scores = q[0, 0, i, 0].astype(np.float64) * k[0, 0, :i + 1, 0]
        p = np.exp(scores - scores.max())
        y[0, 0, i, 0] = (p / p.sum()) @ v[0, 0, :i + 1, 0]
    np.save(os.path.join(root, "expected.npy"), y.astype(np.float32))


if __name__ == "__main__":
    main()
