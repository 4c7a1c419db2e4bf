#!/usr/bin/env python3
"""One .so of a BERT-style encoder for every batch and sequence length.

  check_symbolic_artifact.py --kilnc BIN --kiln-run BIN

Builds a BERT-style encoder node for node as the TorchScript exporter writes
BERT (check_bert_base_launches.py's graph, at hidden 64, 2 heads, FFN 256,
2 layers), with batch and sequence symbolic: the heads are split and merged
by Reshapes whose 0 copies a dim, the additive mask is [batch, 1, 1,
sequence]. Compiles it once with --dim batch=1:8,sequence=1:512 and runs the
one .so on the host backend (the generated kernels, taking the dims as
arguments) at (batch, sequence) = (1, 1), (1, 7), (3, 128) and (8, 512),
each against onnxruntime (fp32 contract: rtol 1e-4, atol 1e-5). Through the
same .so, inputs that disagree on sequence and a batch past its range are
refused by name.

Then the memory report: `kilnc --report=json` of the symbolic build states
the bytes live at the plan's peak as a formula of the dims; at three shapes
its value must equal the live lower bound of the same model compiled with
the dims pinned to them (the largest set of buffers live at one time, as
kiln-plan-memory computes it on static shapes).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

LAYERS, HIDDEN, HEADS, FFN = 2, 64, 2, 256
DIMS = "batch=1:8,sequence=1:512"
SHAPES = [(1, 1), (1, 7), (3, 128), (8, 512)]
PEAK_SHAPES = [(1, 7), (3, 128), (8, 512)]
SEED = 29


def build(rng):
    head = HIDDEN // HEADS
    nodes, inits = [], []

    def weight(name, shape, scale):
        inits.append(numpy_helper.from_array(
            (rng.standard_normal(shape) * scale).astype(np.float32), name))
        return name

    def const(name, value, dtype=np.float32):
        inits.append(numpy_helper.from_array(np.array(value, dtype), name))
        return name

    def op(kind, inputs, name, **attrs):
        nodes.append(helper.make_node(kind, inputs, [name + "_out"],
                                      name=name, **attrs))
        return name + "_out"

    split = const("split", [0, 0, HEADS, head], np.int64)
    merge = const("merge", [0, 0, HIDDEN], np.int64)
    scale = const("scale", 1.0 / np.sqrt(head))
    sqrt2, one, half = (const("sqrt2", np.sqrt(2.0)), const("one", 1.0),
                        const("half", 0.5))
    x = "hidden"
    for layer in range(LAYERS):
        p = f"/encoder/layer.{layer}/"
        projected = {}
        for name in ("query", "key", "value"):
            mm = op("MatMul", [x, weight(p + name + ".w", [HIDDEN, HIDDEN], 0.1)],
                    p + f"attention/self/{name}/MatMul")
            biased = op("Add", [weight(p + name + ".b", [HIDDEN], 0.02), mm],
                        p + f"attention/self/{name}/Add")
            projected[name] = op("Reshape", [biased, split],
                                 p + f"attention/self/{name}/Reshape")
        q = op("Transpose", [projected["query"]], p + "attention/self/Transpose",
               perm=[0, 2, 1, 3])
        v = op("Transpose", [projected["value"]],
               p + "attention/self/Transpose_1", perm=[0, 2, 1, 3])
        kt = op("Transpose", [projected["key"]],
                p + "attention/self/Transpose_2", perm=[0, 2, 3, 1])
        scores = op("MatMul", [q, kt], p + "attention/self/MatMul")
        scaled = op("Mul", [scores, scale], p + "attention/self/Mul")
        masked = op("Add", [scaled, "mask"], p + "attention/self/Add")
        probs = op("Softmax", [masked], p + "attention/self/Softmax", axis=-1)
        context = op("MatMul", [probs, v], p + "attention/self/MatMul_1")
        merged = op("Transpose", [context], p + "attention/self/Transpose_3",
                    perm=[0, 2, 1, 3])
        merged = op("Reshape", [merged, merge], p + "attention/self/Reshape_3")
        dense = op("MatMul", [merged, weight(p + "ao.w", [HIDDEN, HIDDEN], 0.1)],
                   p + "attention/output/dense/MatMul")
        dense = op("Add", [weight(p + "ao.b", [HIDDEN], 0.02), dense],
                   p + "attention/output/dense/Add")
        residual = op("Add", [dense, x], p + "attention/output/Add")
        x = op("LayerNormalization",
               [residual, weight(p + "ln1.g", [HIDDEN], 1.0),
                weight(p + "ln1.b", [HIDDEN], 0.1)],
               p + "attention/output/LayerNorm", axis=-1, epsilon=1e-12)
        inner = op("MatMul", [x, weight(p + "i.w", [HIDDEN, FFN], 0.1)],
                   p + "intermediate/dense/MatMul")
        inner = op("Add", [weight(p + "i.b", [FFN], 0.02), inner],
                   p + "intermediate/dense/Add")
        erf = op("Erf", [op("Div", [inner, sqrt2], p + "intermediate/act/Div")],
                 p + "intermediate/act/Erf")
        gelu = op("Mul", [op("Mul", [inner, op("Add", [erf, one],
                                                 p + "intermediate/act/Add")],
                             p + "intermediate/act/Mul"), half],
                  p + "intermediate/act/Mul_1")
        out = op("MatMul", [gelu, weight(p + "o.w", [FFN, HIDDEN], 0.05)],
                 p + "output/dense/MatMul")
        out = op("Add", [weight(p + "o.b", [HIDDEN], 0.02), out],
                 p + "output/dense/Add")
        residual = op("Add", [out, x], p + "output/Add")
        x = op("LayerNormalization",
               [residual, weight(p + "ln2.g", [HIDDEN], 1.0),
                weight(p + "ln2.b", [HIDDEN], 0.1)],
               p + "output/LayerNorm", axis=-1, epsilon=1e-12)
    nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"],
                                  name="/output"))
    graph = helper.make_graph(
        nodes, "bert_style_encoder",
        [helper.make_tensor_value_info("hidden", TensorProto.FLOAT,
                                       ["batch", "sequence", HIDDEN]),
         helper.make_tensor_value_info("mask", TensorProto.FLOAT,
                                       ["batch", 1, 1, "sequence"])],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT,
                                       ["batch", "sequence", HIDDEN])],
        inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                             ir_version=8)


def inputs_for(batch, sequence, rng):
    hidden = rng.standard_normal((batch, sequence, HIDDEN)).astype(np.float32)
    # Every row but the first pads its end, as a batch of texts does.
    mask = np.zeros((batch, 1, 1, sequence), np.float32)
    for row in range(1, batch):
        mask[row, ..., rng.integers(1, sequence + 1):] = -10000.0
    return {"hidden": hidden, "mask": mask}


def run_so(kiln_run, so, feeds, folder):
    os.makedirs(folder, exist_ok=True)
    args = [kiln_run, so, "--backend=host", "--output-dir", folder]
    for name, value in feeds.items():
        path = os.path.join(folder, f"given-{name}.npy")
        np.save(path, value)
        args += ["--input", f"{name}={path}"]
    return subprocess.run(args, capture_output=True, text=True)


def report_of(kilnc, model, dims, work):
    result = subprocess.run(
        [kilnc, model, "--dim", dims, "--emit=plan", "-o",
         os.path.join(work, "plan.txt"), "--report=json"],
        capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"kilnc --dim {dims} failed:\n{result.stderr}")
    return json.loads(result.stdout)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kilnc", required=True)
    parser.add_argument("--kiln-run", required=True)
    args = parser.parse_args()
    rng = np.random.default_rng(SEED)
    print(f"seed {SEED}")
    ok = True
    with tempfile.TemporaryDirectory() as work:
        model = os.path.join(work, "encoder.onnx")
        onnx.save(build(rng), model)
        so = os.path.join(work, "encoder.so")
        result = subprocess.run([args.kilnc, model, "--dim", DIMS, "-o", so],
                                capture_output=True, text=True)
        if result.returncode != 0:
            raise SystemExit(f"kilnc failed:\n{result.stderr}")
        print(result.stdout.strip())
        session = ort.InferenceSession(model,
                                       providers=["CPUExecutionProvider"])
        for batch, sequence in SHAPES:
            feeds = inputs_for(batch, sequence, rng)
            out = os.path.join(work, f"{batch}x{sequence}")
            result = run_so(args.kiln_run, so, feeds, out)
            if result.returncode != 0:
                print(f"FAIL ({batch}, {sequence}): kiln-run failed\n"
                      f"{result.stderr}")
                ok = False
                continue
            want = session.run(None, feeds)[0]
            got = np.load(os.path.join(out, "last_hidden_state.npy"))
            close = (got.shape == want.shape and
                     np.allclose(got, want, rtol=1e-4, atol=1e-5))
            worst = (float(np.abs(got.astype(np.float64) - want).max())
                     if got.shape == want.shape else float("inf"))
            print(f"{'ok  ' if close else 'FAIL'} ({batch}, {sequence}) "
                  f"{list(got.shape)} max_abs {worst:.3e}")
            ok &= close

        refusals = [
            ({"hidden": inputs_for(2, 5, rng)["hidden"],
              "mask": inputs_for(2, 6, rng)["mask"]},
             "dim sizes: input 'mask' dim 3 is 6, but its size 'sequence' is "
             "5 with sequence = 5 (from input 'hidden' dim 1)"),
            (inputs_for(9, 4, rng),
             "dim sizes: 'batch' is 9 (from input 'hidden' dim 0), outside "
             "its range 1..8"),
        ]
        for feeds, message in refusals:
            result = run_so(args.kiln_run, so, feeds,
                            os.path.join(work, "refused"))
            refused = result.returncode != 0 and message in result.stderr
            print(f"{'ok  ' if refused else 'FAIL'} refuses: {message}")
            if not refused:
                print(result.stderr)
            ok &= refused

        report = report_of(args.kilnc, model, DIMS, work)
        formula = report.get("live_peak_formula", "")
        print(f"dims {report.get('dims')}; arena {report['peak_arena_bytes']} "
              f"bytes; live bytes at the peak: {formula}")
        if not formula:
            print("FAIL the report of the symbolic build has no formula")
            ok = False
        for batch, sequence in PEAK_SHAPES if formula else []:
            value = eval(formula, {"__builtins__": {}},
                         {"batch": batch, "sequence": sequence})
            pinned = report_of(args.kilnc, model,
                               f"batch={batch},sequence={sequence}", work)
            bound = pinned["live_lower_bound_bytes"]
            same = value == bound
            print(f"{'ok  ' if same else 'FAIL'} ({batch}, {sequence}) "
                  f"formula {value} bytes, pinned build's live peak {bound} "
                  f"bytes (its arena {pinned['peak_arena_bytes']})")
            ok &= same
    print("all ok" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
