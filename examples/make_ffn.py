#!/usr/bin/env python3
"""Writes the bundled example models with random weights (seeded).

  make_ffn.py out.onnx          a Transformer feed-forward block:
                                MatMul+Add, GELU as Erf/Mul/Add, MatMul+Add,
                                residual Add, LayerNormalization
  make_ffn.py --mlp out.onnx    a two-layer MLP (Gemm, Relu, Gemm)
"""
import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def weight(rng, name, *shape):
    return numpy_helper.from_array(
        (rng.standard_normal(shape) * 0.2).astype(np.float32), name)


def ffn(rng, batch=2, seq=8, hidden=32, inner=64):
    inits = [
        weight(rng, "w1", hidden, inner), weight(rng, "b1", inner),
        weight(rng, "w2", inner, hidden), weight(rng, "b2", hidden),
        weight(rng, "gamma", hidden), weight(rng, "beta", hidden),
        numpy_helper.from_array(np.array(np.sqrt(0.5), np.float32), "inv_sqrt2"),
        numpy_helper.from_array(np.array(1.0, np.float32), "one"),
        numpy_helper.from_array(np.array(0.5, np.float32), "half"),
    ]
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h0"], name="ffn_in"),
        helper.make_node("Add", ["h0", "b1"], ["h1"], name="ffn_in_bias"),
        helper.make_node("Mul", ["h1", "inv_sqrt2"], ["g0"], name="gelu_scale"),
        helper.make_node("Erf", ["g0"], ["g1"], name="gelu_erf"),
        helper.make_node("Add", ["g1", "one"], ["g2"], name="gelu_add"),
        helper.make_node("Mul", ["h1", "g2"], ["g3"], name="gelu_mul"),
        helper.make_node("Mul", ["g3", "half"], ["g4"], name="gelu_half"),
        helper.make_node("MatMul", ["g4", "w2"], ["h2"], name="ffn_out"),
        helper.make_node("Add", ["h2", "b2"], ["h3"], name="ffn_out_bias"),
        helper.make_node("Add", ["h3", "x"], ["h4"], name="residual"),
        helper.make_node("LayerNormalization", ["h4", "gamma", "beta"], ["y"],
                         name="norm", axis=-1, epsilon=1e-5),
    ]
    graph = helper.make_graph(
        nodes, "ffn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, seq, hidden])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, seq, hidden])],
        inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def mlp(rng, batch=4, features=16, hidden=32, classes=10):
    inits = [weight(rng, "w1", hidden, features), weight(rng, "b1", hidden),
             weight(rng, "w2", hidden, classes), weight(rng, "b2", classes)]
    nodes = [
        helper.make_node("Gemm", ["x", "w1", "b1"], ["h0"], name="fc1", transB=1),
        helper.make_node("Relu", ["h0"], ["h1"], name="act"),
        helper.make_node("Gemm", ["h1", "w2", "b2"], ["y"], name="fc2", alpha=0.5),
    ]
    graph = helper.make_graph(
        nodes, "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, features])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, classes])],
        inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output")
    parser.add_argument("--mlp", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    model = mlp(rng) if args.mlp else ffn(rng)
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, args.output)


if __name__ == "__main__":
    main()
