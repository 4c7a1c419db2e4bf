#!/usr/bin/env python3
"""Encoder-decoder models as Optimum exports them, compiled once and decoded.

  check_hub_seq2seq.py --kilnc BIN --kiln-run BIN
                       [--data test/models/hub-seq2seq] [--only NAME]
                       [--backend host|cuda]

For each model export_hub_seq2seq.py made (T5, Whisper), as a user would
take it: kilnc compiles each of its three files (encoder, decoder,
decoder_with_past) once with the ranges of its `dims` file; at each of
three points the .so on the host backend (or the GPU with --backend cuda)
and the file on the reference interpreter match onnxruntime's outputs
(check_hub_decoders.py's check_points); and the greedy loop over the three
.so files, one kiln-run a step (the encoder once, the decoder on the start
token, then decoder_with_past with the caches fed back), gives the 32
tokens of onnxruntime's loop over the same files, each step's logits within
the fp32 contract of onnxruntime's.

Exit code 1 on any mismatch.
"""
import json
import os
import sys

import numpy as np

from check_hub_decoders import check_points
from oracle import (ATOL, RTOL, model_folders, run, run_checks,
                    run_with_inputs, tools_parser)

HERE = os.path.dirname(os.path.abspath(__file__))
# Optimum's file for each part.
FILES = {"encoder": "encoder_model.onnx", "decoder": "decoder_model.onnx",
         "decoder_with_past": "decoder_with_past_model.onnx"}


def greedy(run_file, source, start, count):
    """The greedy loop over the three files: `run_file(name, feeds)` runs
    one (fed what it takes of `feeds`) and returns its outputs by name;
    `source` is the encoder's input. Returns `count` tokens and the logits
    each was picked from ([count, vocabulary])."""
    hidden = run_file("encoder", source)["last_hidden_state"]
    shared = {"encoder_hidden_states": hidden}
    if "attention_mask" in source:
        shared["encoder_attention_mask"] = source["attention_mask"]
    ids = np.array([[start]], np.int64)
    out = run_file("decoder", dict(shared, input_ids=ids))
    # The first step's cross-attention cache serves every later step.
    cross = {k.replace("present", "past_key_values"): v
             for k, v in out.items() if ".encoder." in k}
    tokens, logits = [], []
    while True:
        logits.append(out["logits"][0, -1])
        tokens.append(int(np.argmax(logits[-1])))
        if len(tokens) == count:
            return tokens, np.stack(logits)
        own = {k.replace("present", "past_key_values"): v
               for k, v in out.items() if ".decoder." in k}
        ids = np.array([[tokens[-1]]], np.int64)
        out = run_file("decoder_with_past",
                       dict(shared, **cross, **own, input_ids=ids))


class KilnFiles:
    """The three compiled files, each run by kiln-run on `backend`."""

    def __init__(self, tools, folder, work):
        self.tools, self.folder, self.work = tools, folder, work
        self.steps = 0

    def so(self, name):
        return os.path.join(self.work, name + ".so")

    def inputs(self, name):
        """The input names of file `name` (those of its first point)."""
        points = os.path.join(self.folder, name, "points")
        first = os.path.join(points, sorted(os.listdir(points))[0], "inputs")
        return {f[:-4] for f in os.listdir(first)}

    def run(self, name, feeds):
        self.steps += 1
        step = os.path.join(self.work, "loop", str(self.steps))
        out = os.path.join(step, "out")
        taken = {k: v for k, v in feeds.items() if k in self.inputs(name)}
        result = run_with_inputs(
            [self.tools.kiln_run, self.so(name), "--backend",
             self.tools.backend, "--output-dir", out], taken, step)
        if result.returncode != 0:
            raise RuntimeError(f"{name}: {result.stderr.strip()[-300:]}")
        return {f[:-4]: np.load(os.path.join(out, f))
                for f in os.listdir(out) if f.endswith(".npy")}


def check_model(tools, folder, work):
    files = KilnFiles(tools, folder, work)
    for name in FILES:
        part = os.path.join(folder, name)
        with open(os.path.join(part, "dims")) as f:
            dims = f.read().strip()
        why = run([tools.kilnc, os.path.join(part, "model.onnx"), "-o",
                   files.so(name), "--dim", dims])
        if why:
            return f"{name}: compile: {why}"
        why = check_points(tools, part, dims, files.so(name),
                           os.path.join(work, name))
        if why:
            return f"{name}: {why}"
    with open(os.path.join(folder, "generate.json")) as f:
        oracle = json.load(f)
    source_dir = os.path.join(folder, "generate")
    source = {f[:-4]: np.load(os.path.join(source_dir, f))
              for f in sorted(os.listdir(source_dir))}
    try:
        tokens, logits = greedy(files.run, source, oracle["start"],
                                len(oracle["tokens"]))
    except RuntimeError as e:
        return f"greedy loop: {e}"
    if tokens != oracle["tokens"]:
        return f"greedy loop: {tokens} (onnxruntime: {oracle['tokens']})"
    # A random model repeats tokens, so the logits of every step are held
    # to the contract too: a cache fed back wrong shows there.
    want = np.load(os.path.join(folder, "generate_logits.npy"))
    if not np.allclose(logits, want, rtol=RTOL, atol=ATOL):
        return (f"greedy loop: logits differ from onnxruntime's by up to "
                f"{np.abs(logits - want).max():.3g}")
    return None


def main():
    parser = tools_parser(__doc__)
    parser.add_argument("--data", default=os.path.join(HERE, "hub-seq2seq"))
    parser.add_argument("--only", default="")
    parser.add_argument("--backend", default="host",
                        choices=("host", "cuda"))
    tools = parser.parse_args()
    checks = [(m, lambda work, m=m: check_model(
        tools, os.path.join(tools.data, m), work))
        for m in model_folders(tools.data, tools.only)]
    return run_checks(checks, "kiln-hub-seq2seq-", "encoder-decoder models",
                      passed=f"3 files, 3 points each on reference and "
                             f"{tools.backend}, 32 greedy tokens")


if __name__ == "__main__":
    sys.exit(main())
