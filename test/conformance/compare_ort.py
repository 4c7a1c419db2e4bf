#!/usr/bin/env python3
"""Checks Kiln's outputs against onnxruntime (CPU) on the same inputs.

  compare_ort.py MODEL.onnx|MODEL.onnxtxt DIR [--exact-quantized]
                 [--rel-l2 BOUND] [--float64-reference REF]

DIR is a `kiln-run --output-dir`: it holds inputs/NAME.npy (the inputs Kiln
ran on) and NAME.npy per output. Passes within the fp32 numerics contract
(rtol 1e-4, atol 1e-5; no NaN where the reference is finite); with
--rel-l2, within the 16-bit contract's relative L2 error instead (a model
built at --precision fp16|bf16 against the fp32 model).
--exact-quantized keeps onnxruntime from fusing Q/DQ pairs and dequantized
weights into its integer kernels (session.disable_quant_qdq, accuracy level
1), which are less exact than the definitions, and runs the graph as
written (its graph rewrites off).
--float64-reference REF: REF is the reference interpreter's `kiln-run
--backend=reference --output-dir` on the same inputs (its matmuls summed in
double). Where onnxruntime itself is beyond rtol 1e-4 / atol 1e-5 of it, an
output outside the fp32 contract is judged by DESIGN.md's float64 rule
instead: Kiln at most twice as far from REF as onnxruntime is, plus 1e-6
(max-abs). A Q/DQ model's GEMM is such a case: onnxruntime sums the
dequantized products in fp32, Kiln exactly. The line says when the rule
judged.
"""
import os
import sys

import ml_dtypes
import numpy as np
import onnx
import onnxruntime as ort

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "models"))
import oracle  # noqa: E402

FLOAT8 = {"tensor(float8e4m3fn)": ml_dtypes.float8_e4m3fn,
          "tensor(float8e5m2)": ml_dtypes.float8_e5m2}


def float64_rule(got, want, exact):
    """(whether `got` passes DESIGN.md's float64 rule against `exact`, what
    the line adds), used only where onnxruntime's `want` is itself beyond
    the fp32 contract of `exact`."""
    ours, theirs, applies = oracle.float64_distances(got, want, exact)
    if not applies:
        return False, " (onnxruntime within rtol 1e-4 of the reference: " \
                      "no float64 rule)"
    return ours <= (oracle.FLOAT64_RULE_FACTOR * theirs +
                    oracle.FLOAT64_RULE_ATOL), (
        f" float64 rule: kiln {ours:.3e}, onnxruntime {theirs:.3e} from the "
        "reference interpreter")


def main():
    model, folder = sys.argv[1], sys.argv[2]
    if model.endswith(".onnxtxt"):
        # ONNX's text format, as lit tests write models inline.
        with open(model) as f:
            model = onnx.parser.parse_model(f.read()).SerializeToString()
    options = ort.SessionOptions()
    if "--exact-quantized" in sys.argv[3:]:
        options.add_session_config_entry("session.disable_quant_qdq", "1")
        options.add_session_config_entry(
            "session.qdq_matmulnbits_accuracy_level", "1")
        # The graph as written: onnxruntime's rewrites, even its basic
        # level's, can move a quantized value (export_quantized.py's
        # exact_session says where they did).
        options.graph_optimization_level = (
            ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    session = ort.InferenceSession(model, options,
                                   providers=["CPUExecutionProvider"])
    feeds = {i.name: np.load(os.path.join(folder, "inputs", i.name + ".npy"))
             for i in session.get_inputs()}
    expected = session.run(None, feeds)
    rel_l2_bound = (float(sys.argv[sys.argv.index("--rel-l2") + 1])
                    if "--rel-l2" in sys.argv else None)
    exact_folder = (sys.argv[sys.argv.index("--float64-reference") + 1]
                    if "--float64-reference" in sys.argv else None)
    ok = True
    for info, want in zip(session.get_outputs(), expected):
        got = np.load(os.path.join(folder, info.name + ".npy"))
        if info.type in FLOAT8:
            # onnxruntime returns float8 as its bits; kiln-run writes the
            # values as float32.
            want = want.view(FLOAT8[info.type]).astype(np.float32)
        diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
        worst = float(diff.max()) if diff.size else 0.0
        finite = not np.any(np.isfinite(want) & ~np.isfinite(got))
        if rel_l2_bound is None:
            close = np.allclose(got, want, rtol=1e-4, atol=1e-5,
                                equal_nan=True)
            measured = ""
        else:
            want64 = want.astype(np.float64)
            norm = float(np.linalg.norm(want64))
            rel_l2 = float(np.linalg.norm(got.astype(np.float64) - want64)) / (
                norm if norm > 0 else 1.0)
            close = rel_l2 <= rel_l2_bound
            measured = f" rel_l2 {rel_l2:.3e}"
        if not close and rel_l2_bound is None and exact_folder:
            close, measured = float64_rule(
                got, want, np.load(os.path.join(exact_folder,
                                                info.name + ".npy")))
        print(f"onnxruntime vs kiln: {info.name} max_abs {worst:.3e}"
              f"{measured} {'ok' if close and finite else 'MISMATCH'}")
        if not (close and finite) and diff.size and got.shape == want.shape:
            # Where: the largest difference's element, for a replay whose
            # folders are gone by the time its log is read. A NaN on one
            # side only is the largest; NaN on both is no difference.
            both = np.isnan(got) & np.isnan(want)
            at = np.unravel_index(int(np.argmax(np.where(
                both, 0.0, np.where(np.isnan(diff), np.inf, diff)))),
                diff.shape)
            print(f"  largest at {tuple(int(i) for i in at)}: kiln "
                  f"{got[at].item()!r}, onnxruntime {want[at].item()!r}")
        ok &= close and finite
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
