#!/usr/bin/env python3
"""One .so of a BERT-style encoder for every batch and sequence length.

  check_symbolic_artifact.py --kilnc BIN --kiln-run BIN [--backend cuda]

Builds a BERT-style encoder node for node as the TorchScript exporter writes
BERT (check_bert_base_launches.py's graph, at hidden 64, 2 heads, FFN 256,
2 layers), with batch and sequence symbolic: the heads are split and merged
by Reshapes whose 0 copies a dim, the additive mask is [batch, 1, 1,
sequence]. Compiles it once with --dim batch=1:8,sequence=1:512 and runs the
one .so on the host backend (or the GPU; the generated kernels, taking the
dims as arguments) at (batch, sequence) = (1, 1), (1, 7), (3, 128) and (8, 512),
each against onnxruntime (fp32 contract: rtol 1e-4, atol 1e-5). Through the
same .so, inputs that disagree on sequence and a batch past its range are
refused by name.

Then the memory report: `kilnc --report=json` of the symbolic build states
the bytes live at the plan's peak as a formula of the dims; at three shapes
its value must equal the live lower bound of the same model compiled with
the dims pinned to them (the largest set of buffers live at one time, as
kiln-plan-memory computes it on static shapes).
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_bert_base_launches as bert  # noqa: E402
from oracle import (expect_close, expect_refusal, run_with_inputs,  # noqa: E402
                    tools_parser)

LAYERS, HIDDEN, HEADS, FFN = 2, 64, 2, 256
DIMS = "batch=1:8,sequence=1:512"
SHAPES = [(1, 1), (1, 7), (3, 128), (8, 512)]
PEAK_SHAPES = [(1, 7), (3, 128), (8, 512)]
SEED = 29


def build(rng):
    return bert.build(rng, layers=LAYERS, hidden=HIDDEN, heads=HEADS, ffn=FFN,
                      batch="batch", seq="sequence", scale_weights=0.1)


def inputs_for(batch, sequence, rng):
    hidden = rng.standard_normal((batch, sequence, HIDDEN)).astype(np.float32)
    # Every row but the first pads its end, as a batch of texts does.
    mask = np.zeros((batch, 1, 1, sequence), np.float32)
    for row in range(1, batch):
        mask[row, ..., rng.integers(1, sequence + 1):] = -10000.0
    return {"hidden": hidden, "mask": mask}


def run_so(kiln_run, so, feeds, folder, backend="host"):
    return run_with_inputs(
        [kiln_run, so, f"--backend={backend}", "--output-dir", folder], feeds,
        folder)


def report_of(kilnc, model, dims, work):
    result = subprocess.run(
        [kilnc, model, "--dim", dims, "--emit=plan", "-o",
         os.path.join(work, "plan.txt"), "--report=json"],
        capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"kilnc --dim {dims} failed:\n{result.stderr}")
    return json.loads(result.stdout)


def main():
    parser = tools_parser(__doc__)
    parser.add_argument("--backend", default="host", choices=["host", "cuda"],
                        help="where the artifact runs (cuda on a GPU machine: "
                             "scripts/gpu_check.sh)")
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
            result = run_so(args.kiln_run, so, feeds, out, args.backend)
            if result.returncode != 0:
                print(f"FAIL ({batch}, {sequence}): kiln-run failed\n"
                      f"{result.stderr}")
                ok = False
                continue
            want = session.run(None, feeds)[0]
            got = np.load(os.path.join(out, "last_hidden_state.npy"))
            ok &= expect_close(got, want, f"({batch}, {sequence})")

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
                            os.path.join(work, "refused"), args.backend)
            ok &= expect_refusal(result, message, "")

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
