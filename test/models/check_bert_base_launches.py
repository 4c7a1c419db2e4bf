#!/usr/bin/env python3
"""Counts the launches per encoder layer of a BERT-base-shaped model.

  check_bert_base_launches.py --kilnc build/bin/kilnc [--max-per-layer 8]
      [--precision fp16] [--gelu-in-gemm --norm-in-gemm]

Builds a 12-layer encoder with hidden size 768, 12 heads and FFN size 3072
(BERT-base) node for node as the PyTorch TorchScript exporter writes BERT
(see test/models/data/bert-torchscript-opset17, the same exporter at a small
config): projections as MatMul + Add(bias), heads split by Reshape and
Transpose (keys to [b, h, d, s]), scores scaled by Mul, an additive mask,
Softmax, heads merged by Transpose and Reshape, residual Adds,
LayerNormalization and the erf GELU. Weights are seeded random numbers, made
at test time (nothing downloaded or committed). Compiles it with
`kilnc --emit=plan --report=json`, groups the launches by the layer their
ONNX nodes belong to, prints the counts, and fails when a layer needs more
than --max-per-layer launches (kernels and cuBLASLt calls together).
With --gelu-in-gemm it also fails unless each layer's FFN-in projection is
one cuBLASLt call that covers its bias Add and every node of the GELU (the
epilogue), with no other launch covering any of them; with --norm-in-gemm,
unless each LayerNorm is in the matmul step of the projection before it.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

LAYERS, HIDDEN, HEADS, FFN = 12, 768, 12, 3072
BATCH, SEQ = 1, 128


def build(rng, layers=LAYERS, hidden=HIDDEN, heads=HEADS, ffn=FFN,
          batch=BATCH, seq=SEQ, scale_weights=0.03):
    """The encoder; `batch` and `seq` may be dim names (symbolic), and the
    heads are then split and merged by Reshapes whose 0 copies a dim."""
    head = hidden // heads
    nodes, inits = [], []

    def weight(name, shape, scale):
        inits.append(numpy_helper.from_array(
            (rng.standard_normal(shape) * scale).astype(np.float32), name))
        return name

    def const(name, value, dtype=np.float32):
        inits.append(numpy_helper.from_array(np.array(value, dtype), name))
        return name

    def op(kind, inputs, name, **attrs):
        nodes.append(helper.make_node(kind, inputs, [name + "_out"], name=name, **attrs))
        return name + "_out"

    static = isinstance(batch, int) and isinstance(seq, int)
    lead = [batch, seq] if static else [0, 0]
    split = const("split", lead + [heads, head], np.int64)
    merge = const("merge", lead + [hidden], np.int64)
    scale = const("scale", 1.0 / np.sqrt(head))
    sqrt2, one, half = const("sqrt2", np.sqrt(2.0)), const("one", 1.0), const("half", 0.5)
    x = "hidden"
    for layer in range(layers):
        p = f"/encoder/layer.{layer}/"
        projected = {}
        for name in ("query", "key", "value"):
            mm = op("MatMul", [x, weight(p + name + ".w", [hidden, hidden], scale_weights)],
                    p + f"attention/self/{name}/MatMul")
            biased = op("Add", [weight(p + name + ".b", [hidden], 0.02), mm],
                        p + f"attention/self/{name}/Add")
            projected[name] = op("Reshape", [biased, split], p + f"attention/self/{name}/Reshape")
        q = op("Transpose", [projected["query"]], p + "attention/self/Transpose", perm=[0, 2, 1, 3])
        v = op("Transpose", [projected["value"]], p + "attention/self/Transpose_1",
               perm=[0, 2, 1, 3])
        kt = op("Transpose", [projected["key"]], p + "attention/self/Transpose_2",
                perm=[0, 2, 3, 1])
        scores = op("MatMul", [q, kt], p + "attention/self/MatMul")
        scaled = op("Mul", [scores, scale], p + "attention/self/Mul")
        masked = op("Add", [scaled, "mask"], p + "attention/self/Add")
        probs = op("Softmax", [masked], p + "attention/self/Softmax", axis=-1)
        context = op("MatMul", [probs, v], p + "attention/self/MatMul_1")
        merged = op("Transpose", [context], p + "attention/self/Transpose_3", perm=[0, 2, 1, 3])
        merged = op("Reshape", [merged, merge], p + "attention/self/Reshape_3")
        dense = op("MatMul", [merged, weight(p + "ao.w", [hidden, hidden], scale_weights)],
                   p + "attention/output/dense/MatMul")
        dense = op("Add", [weight(p + "ao.b", [hidden], 0.02), dense],
                   p + "attention/output/dense/Add")
        residual = op("Add", [dense, x], p + "attention/output/Add")
        x = op("LayerNormalization", [residual, weight(p + "ln1.g", [hidden], 1.0),
                                      weight(p + "ln1.b", [hidden], 0.1)],
               p + "attention/output/LayerNorm", axis=-1, epsilon=1e-12)
        inner = op("MatMul", [x, weight(p + "i.w", [hidden, ffn], scale_weights)],
                   p + "intermediate/dense/MatMul")
        inner = op("Add", [weight(p + "i.b", [ffn], 0.02), inner], p + "intermediate/dense/Add")
        erf = op("Erf", [op("Div", [inner, sqrt2], p + "intermediate/act/Div")],
                 p + "intermediate/act/Erf")
        gelu = op("Mul", [op("Mul", [inner, op("Add", [erf, one], p + "intermediate/act/Add")],
                             p + "intermediate/act/Mul"), half], p + "intermediate/act/Mul_1")
        out = op("MatMul", [gelu, weight(p + "o.w", [ffn, hidden], scale_weights)],
                 p + "output/dense/MatMul")
        out = op("Add", [weight(p + "o.b", [hidden], 0.02), out], p + "output/dense/Add")
        residual = op("Add", [out, x], p + "output/Add")
        x = op("LayerNormalization", [residual, weight(p + "ln2.g", [hidden], 1.0),
                                      weight(p + "ln2.b", [hidden], 0.1)],
               p + "output/LayerNorm", axis=-1, epsilon=1e-12)
    nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="/output"))
    graph = helper.make_graph(
        nodes, "bert_base_encoder",
        [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, [batch, seq, hidden]),
         helper.make_tensor_value_info("mask", TensorProto.FLOAT, [batch, 1, 1, seq])],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT,
                                       [batch, seq, hidden])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def layer_of(names):
    layers = {int(n.split("/encoder/layer.")[1].split("/")[0])
              for n in names if "/encoder/layer." in n}
    return layers.pop() if len(layers) == 1 else None


def epilogue_problem(layer, launches):
    """Why the FFN-in bias and GELU of `layer` are not all in its GEMM's
    epilogue, or "" when they are."""
    p = f"/encoder/layer.{layer}/"
    epilogue = {p + "intermediate/dense/Add"} | {
        p + "intermediate/act/" + n for n in ("Div", "Erf", "Add", "Mul", "Mul_1")}
    gemm = [l for l in launches
            if p + "intermediate/dense/MatMul" in l["onnx_nodes"]]
    if len(gemm) != 1 or gemm[0]["kind"] != "matmul":
        return "the FFN-in projection is not one cuBLASLt call"
    missing = epilogue - set(gemm[0]["onnx_nodes"])
    if missing:
        return f"not in the GEMM's epilogue: {', '.join(sorted(missing))}"
    others = [l["name"] for l in launches
              if l is not gemm[0] and epilogue & set(l["onnx_nodes"])]
    if others:
        return f"bias or GELU also in {', '.join(others)}"
    return ""


def norm_problem(layer, launches):
    """Why the LayerNorms of `layer` are not each in the epilogue of the GEMM
    before it (a matmul step covering the projection, its bias, the residual
    Add and the norm), or "" when they are. Two are exempt. Layer 0's
    first: its residual is this model's input, cast to fp16 for that Add
    alone, which the norm's own kernel reads as its prologue (a real BERT's
    residual there is the embeddings' LayerNorm, which the GEMM reads). The
    last layer's second: its only reader is the cast to the fp32 output,
    which the norm's row kernel takes as its epilogue (kiln-fuse keeps
    such a norm apart)."""
    p = f"/encoder/layer.{layer}/"
    pairs = [(p + "attention/output/LayerNorm", p + "attention/output/dense/MatMul"),
             (p + "output/LayerNorm", p + "output/dense/MatMul")]
    if layer == 0:
        pairs = pairs[1:]
    if layer == LAYERS - 1:
        pairs = pairs[:1]
    for norm, projection in pairs:
        if not any(l["kind"] == "matmul" and norm in l["onnx_nodes"] and
                   projection in l["onnx_nodes"] for l in launches):
            return f"{norm} is not in the epilogue of {projection}"
    return ""


def edge_launches(layer, args):
    """Launches the first and last layer may take beyond --max-per-layer
    when the norms join their GEMMs: one norm of each keeps a row kernel
    of its own (norm_problem says why)."""
    return 1 if args.norm_in_gemm and layer in (0, LAYERS - 1) else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kilnc", required=True)
    parser.add_argument("--max-per-layer", type=int, default=8)
    parser.add_argument("--precision", default="fp32")
    parser.add_argument("--gelu-in-gemm", action="store_true")
    parser.add_argument("--norm-in-gemm", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kiln-bert-base-") as work:
        path = os.path.join(work, "bert_base.onnx")
        onnx.save(build(np.random.default_rng(0)), path)
        result = subprocess.run(
            [args.kilnc, path, "--emit=plan", "-o", os.path.join(work, "plan.txt"),
             "--report=json", "--precision", args.precision],
            capture_output=True, text=True, timeout=1200)
        if result.returncode != 0:
            print(result.stderr)
            return 1
    report = json.loads(result.stdout)
    per_layer, other = {}, []
    for launch in report["launches"]:
        layer = layer_of(launch["onnx_nodes"])
        if layer is None:
            other.append(launch)
        else:
            per_layer.setdefault(layer, []).append(launch)
    failures = 0
    for layer in range(LAYERS):
        launches = per_layer.get(layer, [])
        kinds = ", ".join(l["kind"] for l in launches)
        ok = 0 < len(launches) <= args.max_per_layer + edge_launches(layer, args)
        why = ""
        if args.gelu_in_gemm:
            why = epilogue_problem(layer, launches)
        if args.norm_in_gemm and not why:
            why = norm_problem(layer, launches)
        ok = ok and not why
        failures += not ok
        print(f"{'pass' if ok else 'FAIL'} layer {layer}: {len(launches)} launches ({kinds})"
              + (f": {why}" if why else ""))
    for launch in other:
        print(f"     outside the layers: {launch['kind']} {launch['name']} "
              f"<- {', '.join(launch['onnx_nodes'])}")
    print(f"\n{len(report['launches'])} launches for {LAYERS} layers "
          f"(at most {args.max_per_layer} per layer wanted), "
          f"peak arena {report['peak_arena_bytes']} bytes "
          f"(lower bound {report['live_lower_bound_bytes']}), "
          f"weights {report['weight_bytes']} bytes")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
