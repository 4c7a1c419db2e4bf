#!/usr/bin/env python3
"""Checks Kiln's outputs against onnxruntime (CPU) on the same inputs.

  compare_ort.py MODEL.onnx|MODEL.onnxtxt DIR [--exact-quantized]
                 [--rel-l2 BOUND]

DIR is a `kiln-run --output-dir`: it holds inputs/NAME.npy (the inputs Kiln
ran on) and NAME.npy per output. Passes within the fp32 numerics contract
(rtol 1e-4, atol 1e-5; no NaN where the reference is finite); with
--rel-l2, within the 16-bit contract's relative L2 error instead (a model
built at --precision fp16|bf16 against the fp32 model).
--exact-quantized keeps onnxruntime from fusing Q/DQ pairs and dequantized
weights into its integer kernels (session.disable_quant_qdq, accuracy level
1), which are less exact than the definitions, and runs the graph as
written (its graph rewrites off).
"""
import os
import sys

import ml_dtypes
import numpy as np
import onnx
import onnxruntime as ort

FLOAT8 = {"tensor(float8e4m3fn)": ml_dtypes.float8_e4m3fn,
          "tensor(float8e5m2)": ml_dtypes.float8_e5m2}


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
        print(f"onnxruntime vs kiln: {info.name} max_abs {worst:.3e}"
              f"{measured} {'ok' if close and finite else 'MISMATCH'}")
        ok &= close and finite
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
