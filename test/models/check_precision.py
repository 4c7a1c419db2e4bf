#!/usr/bin/env python3
"""Checks kilnc --precision fp16|bf16 on the exported architectures.

  check_precision.py --kilnc build/bin/kilnc --kiln-run build/bin/kiln-run
                     [--data test/models/data] [--only NAME] [--seed N]

For every model of test/models/data (model.onnx, inputs/*.npy, and
onnxruntime's fp32 outputs in expected/*.npy) and for fp16 and bf16: kilnc
compiles it with --precision, the .so runs on the host backend (the generated
kernels emulated on the CPU) with the committed inputs, and each output must
be within the 16-bit numerics contract of DESIGN.md: relative L2 error at most
1e-2 against the fp32 outputs, no non-finite value where they are finite, and
the same argmax on classification heads (outputs computed by a MatMul or Gemm,
such as language-model logits: argmax over the last dim at every position).
The report must show every matmul in the low type, so that a compile that
left the model in fp32 cannot pass. The reference interpreter also runs the IR
before and after the pipeline (kiln-run --compare-pipeline), rounding every
op to its type, within the same relative L2 bound.

Then a BERT layer with activations near 1e3 (a few outlier channels, as real
BERT checkpoints have, ahead of both LayerNorms; their variance is checked to
be above 65504, the largest f16 value), built here and run by onnxruntime in
fp32 for the reference:
- exported as TorchScript writes LayerNorm before opset 17 (recomposed into
  kiln.layer_norm, whose kernel keeps the statistics in fp32): fp16 and bf16
  pass, and fp16 passes even with the norm-statistics island off;
- with LayerNorm means that drop the reduced axis and are unsqueezed back (a
  form kiln-recompose leaves decomposed, so the variance is stored between
  kernels): fp16 passes with the fp32 island and must fail (overflow) with
  --disable-fp32-islands=norm-statistics.
Exit code 1 on any unexpected result.
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from oracle import model_folders, tools_parser

HERE = os.path.dirname(os.path.abspath(__file__))
REL_L2 = 1e-2
LOW_DTYPES = {"fp16": "float16", "bf16": "bfloat16"}


def run(cmd):
    """Runs `cmd`; returns (None, stdout) on success, else (why, stdout)."""
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if result.returncode != 0:
        lines = (result.stderr or result.stdout).strip().splitlines()
        return "; ".join(lines[:3]) or f"exit code {result.returncode}", ""
    return None, result.stdout


def rel_l2(got, want):
    got, want = got.astype(np.float64), want.astype(np.float64)
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30))


def classification_outputs(model_path):
    """Names of outputs computed by a MatMul or Gemm (through a reshape,
    identity or bias add): classification heads and language-model logits."""
    graph = onnx.load(model_path, load_external_data=False).graph
    producer = {out: node for node in graph.node for out in node.output}
    heads = set()
    for output in graph.output:
        node = producer.get(output.name)
        for _ in range(3):
            if node is None:
                break
            if node.op_type in ("MatMul", "Gemm"):
                heads.add(output.name)
                break
            if node.op_type not in ("Reshape", "Identity", "Add"):
                break
            node = producer.get(node.input[0])
    return heads


def compile_and_run(tools, model, precision, scratch, inputs, extra=()):
    """Compiles `model` with kilnc --precision and runs it on the host
    backend; returns (why it failed or None, outputs by name, report)."""
    so = os.path.join(scratch, "model.so")
    out_dir = os.path.join(scratch, "out")
    why, stdout = run([tools.kilnc, model, "-o", so, "--precision", precision,
                       "--report=json", *extra])
    if why:
        return f"kilnc: {why}", {}, {}
    report = json.loads(stdout)
    args = []
    for name, path in inputs.items():
        args += ["--input", f"{name}={path}"]
    why, _ = run([tools.kiln_run, so, "--backend", "host", "--output-dir",
                  out_dir, *args])
    if why:
        return f"kiln-run: {why}", {}, report
    outputs = {f[:-4]: np.load(os.path.join(out_dir, f))
               for f in os.listdir(out_dir) if f.endswith(".npy")}
    return None, outputs, report


def check_low_precision(report, precision):
    """None when the plan computes in the low type, else why not."""
    if report.get("precision") != precision:
        return f"report says precision {report.get('precision')}"
    dtypes = {launch["dtype"] for launch in report["launches"]
              if launch["kind"] == "matmul"}
    if dtypes and dtypes != {LOW_DTYPES[precision]}:
        return f"matmuls in {sorted(dtypes)}, expected {LOW_DTYPES[precision]}"
    return None


def compare(outputs, expected, heads):
    """(why the outputs leave the contract or None, a summary)."""
    notes = []
    for name, want in sorted(expected.items()):
        got = outputs.get(name)
        if got is None:
            return f"output {name} not written", ""
        if got.shape != want.shape:
            return f"{name}: shape {got.shape}, expected {want.shape}", ""
        if (np.isfinite(want) & ~np.isfinite(got)).any():
            return f"{name}: non-finite where the fp32 reference is finite", ""
        error = rel_l2(got, want)
        note = f"{name} rel_l2 {error:.3e}"
        if name in heads:
            agree = got.argmax(-1) == want.argmax(-1)
            note += f", argmax {int(agree.sum())}/{agree.size}"
            if not agree.all():
                return f"{name}: argmax differs at {int((~agree).sum())} of " \
                       f"{agree.size} positions ({note})", note
        if not error <= REL_L2:
            return f"{name}: relative L2 {error:.3e} above {REL_L2:g}", note
        notes.append(note)
    return None, "; ".join(notes)


def check_exported(tools, name, folder, scratch, precisions):
    model = os.path.join(folder, "model.onnx")
    inputs = {f[:-4]: os.path.join(folder, "inputs", f)
              for f in sorted(os.listdir(os.path.join(folder, "inputs")))}
    expected = {f[:-4]: np.load(os.path.join(folder, "expected", f))
                for f in sorted(os.listdir(os.path.join(folder, "expected")))}
    heads = classification_outputs(model)
    failures = 0
    for precision in precisions:
        work = os.path.join(scratch, name, precision)
        os.makedirs(work)
        why, outputs, report = compile_and_run(tools, model, precision, work,
                                               inputs)
        why = why or check_low_precision(report, precision)
        note = ""
        if not why:
            why, note = compare(outputs, expected, heads)
        if not why:
            # The IR's own semantics: the reference interpreter (which
            # rounds every op to its type) on the IR before and after the
            # pipeline, same inputs.
            args = [a for n, f in inputs.items()
                    for a in ("--input", f"{n}={f}")]
            failed, stdout = run([tools.kiln_run, model, "--compare-pipeline",
                                  "--precision", precision, "--rel-l2",
                                  str(REL_L2), *args])
            errors = [line.split("rel_l2 ")[1].split()[0]
                      for line in stdout.splitlines() if "rel_l2" in line]
            if failed:
                why = f"reference interpreter: {failed}"
            else:
                note += f"; interpreter rel_l2 {', '.join(errors)}"
        kept = len(report.get("fp32_kept", []))
        if why:
            failures += 1
            print(f"FAIL  {name:32} {precision}: {why}")
        else:
            print(f"pass  {name:32} {precision}: {note} "
                  f"({kept} tensors kept in fp32)")
    return failures


# --- A BERT layer with large activations -----------------------------------

BATCH, SEQ, HIDDEN, HEADS, FFN = 2, 16, 64, 4, 256
# Channels that the output projections push near 1e3 in every token, as the
# outlier channels of trained BERT checkpoints are.
OUTLIERS = [5, 23, 41]
OUTLIER_BIAS = np.array([2000.0, -1500.0, 1800.0], np.float32)


class Layer:
    """One post-LayerNorm BERT encoder layer as an ONNX graph."""

    def __init__(self, rng, unsqueezed_norm):
        self.rng, self.unsqueezed = rng, unsqueezed_norm
        self.nodes, self.inits, self.count = [], [], 0
        # Per LayerNorm, the tensors its variance passes through.
        self.variance_tensors = []

    def tmp(self, base):
        self.count += 1
        return f"{base}_{self.count}"

    def init(self, name, value):
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(self, op, inputs, **attrs):
        out = self.tmp(op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out],
                                           name=self.tmp(op), **attrs))
        return out

    def linear(self, x, rows, cols, prefix, std, outliers=False):
        w = self.init(f"{prefix}.weight", self.rng.normal(
            0.0, std, (rows, cols)).astype(np.float32))
        bias = self.rng.normal(0.0, 0.02, cols).astype(np.float32)
        if outliers:
            bias[OUTLIERS] = OUTLIER_BIAS
        b = self.init(f"{prefix}.bias", bias)
        return self.node("Add", [self.node("MatMul", [x, w]), b])

    def layer_norm(self, x, prefix):
        gamma = self.init(f"{prefix}.weight",
                          self.rng.uniform(0.5, 1.5, HIDDEN).astype(np.float32))
        beta = self.init(f"{prefix}.bias",
                         self.rng.normal(0.0, 0.1, HIDDEN).astype(np.float32))
        two = self.init(self.tmp("two"), np.array(2.0, np.float32))
        eps = self.init(self.tmp("eps"), np.array(1e-12, np.float32))

        def mean(v, tensors):
            if not self.unsqueezed:
                tensors.append(self.node("ReduceMean", [v], axes=[-1],
                                         keepdims=1))
                return tensors[-1]
            dropped = self.node("ReduceMean", [v], axes=[-1], keepdims=0)
            axes = self.init(self.tmp("axes"), np.array([-1], np.int64))
            tensors += [dropped, self.node("Unsqueeze", [dropped, axes])]
            return tensors[-1]

        centered = self.node("Sub", [x, mean(x, [])])
        statistics = []
        variance = mean(self.node("Pow", [centered, two]), statistics)
        shifted = self.node("Add", [variance, eps])
        std = self.node("Sqrt", [shifted])
        # The tensors that hold the variance, for check_per_layer.py.
        self.variance_tensors.append(statistics + [shifted, std])
        normalized = self.node("Div", [centered, std])
        return self.node("Add", [self.node("Mul", [normalized, gamma]), beta])

    def heads(self, x, perm):
        shape = self.init(self.tmp("shape"),
                          np.array([BATCH, SEQ, HEADS, HIDDEN // HEADS],
                                   np.int64))
        return self.node("Transpose", [self.node("Reshape", [x, shape])],
                         perm=perm)

    def build(self, expose_norm_inputs=False):
        x, mask = "hidden_states", "attention_mask"
        q = self.heads(self.linear(x, HIDDEN, HIDDEN, "query", 0.125),
                       [0, 2, 1, 3])
        k = self.heads(self.linear(x, HIDDEN, HIDDEN, "key", 0.125),
                       [0, 2, 3, 1])
        v = self.heads(self.linear(x, HIDDEN, HIDDEN, "value", 0.125),
                       [0, 2, 1, 3])
        scale = self.init("scale", np.array(4.0, np.float32))
        scores = self.node("Div", [self.node("MatMul", [q, k]), scale])
        # (1 - mask) * lowest, as TorchScript exports of BERT compute it.
        axes = self.init("mask_axes", np.array([1, 2], np.int64))
        keep = self.node("Cast", [self.node("Unsqueeze", [mask, axes])],
                         to=TensorProto.FLOAT)
        one = self.init("one", np.array(1.0, np.float32))
        lowest = self.init("lowest", np.array(np.finfo(np.float32).min,
                                              np.float32))
        additive = self.node("Mul", [self.node("Sub", [one, keep]), lowest])
        probs = self.node("Softmax", [self.node("Add", [scores, additive])],
                          axis=-1)
        context = self.node("Transpose", [self.node("MatMul", [probs, v])],
                            perm=[0, 2, 1, 3])
        merged = self.node("Reshape", [context, self.init(
            "merged_shape", np.array([BATCH, SEQ, HIDDEN], np.int64))])
        attention = self.linear(merged, HIDDEN, HIDDEN, "attention.output",
                                0.125, outliers=True)
        norm1_in = self.node("Add", [attention, x])
        h = self.layer_norm(norm1_in, "attention.norm")
        up = self.linear(h, HIDDEN, FFN, "intermediate", 0.125)
        half = self.init("half", np.array(0.5, np.float32))
        root2 = self.init("root2", np.array(np.sqrt(2.0), np.float32))
        erf = self.node("Erf", [self.node("Div", [up, root2])])
        gelu = self.node("Mul", [self.node("Mul", [up, self.node(
            "Add", [erf, one])]), half])
        down = self.linear(gelu, FFN, HIDDEN, "output", 0.0625, outliers=True)
        norm2_in = self.node("Add", [down, h])
        out = self.layer_norm(norm2_in, "output.norm")
        self.nodes.append(helper.make_node("Identity", [out], ["output"],
                                           name="output"))
        outputs = [helper.make_tensor_value_info(
            "output", TensorProto.FLOAT, [BATCH, SEQ, HIDDEN])]
        if expose_norm_inputs:
            for name in (norm1_in, norm2_in):
                outputs.append(helper.make_empty_tensor_value_info(name))
        graph = helper.make_graph(
            self.nodes, "bert_layer",
            [helper.make_tensor_value_info(x, TensorProto.FLOAT,
                                           [BATCH, SEQ, HIDDEN]),
             helper.make_tensor_value_info(mask, TensorProto.INT64,
                                           [BATCH, SEQ])],
            outputs, self.inits)
        return helper.make_model(graph, ir_version=8,
                                 opset_imports=[helper.make_opsetid("", 14)])


def check_large_activations(tools, scratch, seed):
    rng = np.random.default_rng(seed)
    hidden = rng.normal(0.0, 1.0, (BATCH, SEQ, HIDDEN)).astype(np.float32)
    mask = np.ones((BATCH, SEQ), np.int64)
    mask[1, SEQ - 5:] = 0
    work = os.path.join(scratch, "large")
    os.makedirs(work)
    inputs = {"hidden_states": os.path.join(work, "hidden_states.npy"),
              "attention_mask": os.path.join(work, "attention_mask.npy")}
    np.save(inputs["hidden_states"], hidden)
    np.save(inputs["attention_mask"], mask)
    feeds = {"hidden_states": hidden, "attention_mask": mask}
    failures = 0

    def report(ok, what, detail):
        nonlocal failures
        failures += not ok
        print(f"{'pass' if ok else 'FAIL'}  {what}: {detail}")

    # The premise: each LayerNorm input has a variance f16 cannot hold.
    probe = Layer(np.random.default_rng(seed + 1), False).build(True)
    session = ort.InferenceSession(probe.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    _, norm1_in, norm2_in = session.run(None, feeds)
    variance = min(float(norm1_in.var(-1).min()), float(norm2_in.var(-1).min()))
    report(variance > 65504.0, "bert-layer-large-activations premise",
           f"smallest LayerNorm input variance {variance:.3e} "
           f"(f16 holds at most 65504); largest activation "
           f"{float(np.abs(norm1_in).max()):.0f}")

    cases = [
        ("torchscript-layernorm", False, "fp16", (), True),
        ("torchscript-layernorm", False, "bf16", (), True),
        ("torchscript-layernorm", False, "fp16",
         ("--disable-fp32-islands=norm-statistics",), True),
        ("unsqueezed-layernorm", True, "fp16", (), True),
        ("unsqueezed-layernorm", True, "bf16", (), True),
        ("unsqueezed-layernorm", True, "fp16",
         ("--disable-fp32-islands=norm-statistics",), False),
    ]
    for i, (form, unsqueezed, precision, extra, should_pass) in \
            enumerate(cases):
        model = Layer(np.random.default_rng(seed + 1), unsqueezed).build()
        path = os.path.join(work, f"{form}.onnx")
        onnx.save(model, path)
        want = ort.InferenceSession(
            model.SerializeToString(),
            providers=["CPUExecutionProvider"]).run(None, feeds)[0]
        case_dir = os.path.join(work, str(i))
        os.makedirs(case_dir)
        why, outputs, kilnc_report = compile_and_run(tools, path, precision,
                                                     case_dir, inputs, extra)
        why = why or check_low_precision(kilnc_report, precision)
        if not why:
            why, note = compare(outputs, {"output": want}, set())
        else:
            note = ""
        what = f"bert-layer-large-activations {form} {precision}" + \
               (f" {' '.join(extra)}" if extra else "")
        if should_pass:
            report(why is None, what, why or note)
        else:
            got = outputs.get("output")
            overflowed = got is not None and (
                not np.isfinite(got).all() or rel_l2(got, want) > REL_L2)
            detail = (f"fails as expected without the island: {why}"
                      if overflowed else
                      f"expected an overflow, got {why or note}")
            report(overflowed, what, detail)
    return failures


def main():
    parser = tools_parser(__doc__)
    parser.add_argument("--data", default=os.path.join(HERE, "data"))
    parser.add_argument("--only", default="")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--precision", choices=["fp16", "bf16"], action="append")
    tools = parser.parse_args()
    precisions = tools.precision or ["fp16", "bf16"]
    models = model_folders(tools.data, tools.only)
    print(f"seed {tools.seed}")
    failures = 0
    with tempfile.TemporaryDirectory(prefix="kiln-precision-") as scratch:
        os.environ.setdefault("KILN_CACHE_DIR", os.path.join(scratch, "cache"))
        for name in models:
            failures += check_exported(tools, name,
                                       os.path.join(tools.data, name), scratch,
                                       precisions)
        if not tools.only or tools.only in "bert-layer-large-activations":
            failures += check_large_activations(tools, scratch, tools.seed)
    print(f"\n{failures} unexpected results")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
