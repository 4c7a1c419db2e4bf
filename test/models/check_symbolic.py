#!/usr/bin/env python3
"""One symbolic import of each fresh export, run at several shapes.

  check_symbolic.py --kiln-run BIN [--kilnc BIN] [--data test/models/fresh]
      [--only NAME,...]

The -dynamic exports of export_fresh.py keep batch and sequence symbolic
(TorchScript and dynamo exporters; BERT, GPT-2, LLaMA). Each is imported
with --dim batch=1:8,sequence=1:32 (32 is the exports' longest position
table) and run on the reference interpreter at (batch, sequence) = (1, 1),
(1, 7), (3, 16) and (8, 32), with fresh token ids and an attention mask
that pads the end of every row but the first, and compared with
onnxruntime on the same inputs (fp32 contract: rtol 1e-4, atol 1e-5).
With --kilnc, each export is also compiled once to a .so with the same
ranges, and that one artifact runs on the host backend at every shape,
against the same onnxruntime outputs. Then the error cases, on both: inputs
that disagree on a dim, and a dim outside its range, must each fail with
the named error.

The -kv exports (one decoding step with past keys and values) are imported
with past_sequence=0:16 as well, and with the name each exporter gives the
total length (TorchScript's total_sequence, dynamo's s53) stated as
past_sequence+sequence; they run at (batch, sequence, past) = (1, 1, 0),
(1, 1, 7), (2, 3, 5) and (4, 8, 16), every output (logits and the present
keys and values) against onnxruntime.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnxruntime as ort

from oracle import expect_close, expect_refusal, kv_dims, run_with_inputs

SHAPES = [(1, 1), (1, 7), (3, 16), (8, 32)]
DIMS = "batch=1:8,sequence=1:32"
KV_SHAPES = [(1, 1, 0), (1, 1, 7), (2, 3, 5), (4, 8, 16)]
KV_DIMS = "batch=1:4,sequence=1:8,past_sequence=0:16"
VOCAB = 96  # export_fresh.py's vocabulary
SEED = 13


def inputs_for(session, batch, sequence, rng, past=0):
    feeds = {}
    for info in session.get_inputs():
        if info.name == "input_ids":
            feeds[info.name] = rng.integers(0, VOCAB, (batch, sequence))
        elif info.name == "attention_mask":
            total = past + sequence
            mask = np.ones((batch, total), np.int64)
            for row in range(1, batch):
                mask[row, rng.integers(1, total + 1):] = 0
            feeds[info.name] = mask
        elif info.name.startswith("past_key_values."):
            heads, size = info.shape[1], info.shape[3]
            feeds[info.name] = rng.standard_normal(
                (batch, heads, past, size)).astype(np.float32)
        else:
            raise SystemExit(f"unexpected input {info.name}")
    return feeds


def run_kiln(kiln_run, model, feeds, folder, dims=DIMS):
    """Runs the import on the reference interpreter, or a .so (dims None) on
    the host backend."""
    args = [kiln_run, model, "--output-dir", folder]
    args += (["--backend=reference", "--dim", dims] if dims
             else ["--backend=host"])
    return run_with_inputs(args, feeds, folder)


def check_model(kiln_run, kilnc, folder, work, rng):
    model = os.path.join(folder, "model.onnx")
    name = os.path.basename(folder)
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    ok = True
    kv = name.endswith("-kv")
    dims = kv_dims(folder, KV_DIMS) if kv else DIMS
    shapes = KV_SHAPES if kv else [(b, s, 0) for b, s in SHAPES]
    # The import on the reference interpreter, then (with --kilnc) one .so
    # on the host backend, at every shape.
    targets = [("reference", model, dims)]
    if kilnc:
        so = os.path.join(work, f"{name}.so")
        result = subprocess.run([kilnc, model, "--dim", dims, "-o", so],
                                capture_output=True, text=True)
        if result.returncode != 0:
            print(f"FAIL {name}: kilnc failed\n{result.stderr}")
            return False
        targets.append(("so", so, None))
    for batch, sequence, past in shapes:
        feeds = inputs_for(session, batch, sequence, rng, past)
        expected = session.run(None, feeds)
        shape = f"{batch}x{sequence}" + (f"+{past}" if kv else "")
        for target, path, target_dims in targets:
            out = os.path.join(work, f"{name}-{shape}-{target}")
            result = run_kiln(kiln_run, path, feeds, out, target_dims)
            if result.returncode != 0:
                print(f"FAIL {name} {shape} {target}: kiln-run failed\n"
                      f"{result.stderr}")
                ok = False
                continue
            for info, want in zip(session.get_outputs(), expected):
                got = np.load(os.path.join(out, info.name + ".npy"))
                ok &= expect_close(got, want,
                                   f"{name} {shape} {target} {info.name}")
    if kv:
        return ok
    # Inputs that disagree on `sequence`, and a batch past its range.
    ids = rng.integers(0, VOCAB, (2, 5))
    cases = [
        ({"input_ids": ids, "attention_mask": np.ones((2, 6), np.int64)},
         DIMS, "but its size 'sequence' is 5"),
        ({"input_ids": rng.integers(0, VOCAB, (9, 5)),
          "attention_mask": np.ones((9, 5), np.int64)},
         DIMS, "'batch' is 9 (from input 'input_ids' dim 0), outside its "
               "range 1..8"),
    ]
    for feeds, dims, message in cases:
        for target, path, target_dims in targets:
            result = run_kiln(kiln_run, path, feeds,
                              os.path.join(work, f"{name}-bad"), target_dims)
            ok &= expect_refusal(result, message, f"{name} {target} ")
    return ok


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kiln-run", required=True)
    parser.add_argument("--kilnc", help="also compile each export to one "
                        ".so and run it on the host backend at every shape")
    parser.add_argument("--data", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "fresh"))
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    folders = sorted(
        os.path.join(args.data, d) for d in os.listdir(args.data)
        if (d.endswith("-dynamic") or d.endswith("-kv")) and
        (not args.only or d in args.only.split(",")))
    if not folders:
        raise SystemExit(f"no -dynamic or -kv exports under {args.data}")
    rng = np.random.default_rng(SEED)
    print(f"seed {SEED}")
    ok = True
    with tempfile.TemporaryDirectory() as work:
        for folder in folders:
            ok &= check_model(args.kiln_run, args.kilnc, folder, work, rng)
    print("all ok" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
