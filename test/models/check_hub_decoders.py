#!/usr/bin/env python3
"""Decoders as the hub ships them, compiled once with ranges and decoded.

  check_hub_decoders.py --kilnc BIN --kiln-run BIN [--data test/models/hub]
                        [--only NAME] [--backend host|cuda]

For each model export_hub.py made (onnxruntime-genai's builder in fp32 and
fp16, Optimum's text-generation-with-past; LLaMA, Qwen2, Phi-3, GPT-2), as
a user would take it:

- kilnc compiles it once with the ranges of its `dims` file (batch, new
  tokens and past symbolic; the total length stated as past + new where the
  model names it apart); at each of three (batch, past, new tokens) points
  the one .so on the host backend (or the GPU with --backend cuda) and the
  model on the reference interpreter match onnxruntime's outputs, every
  output, within DESIGN.md's contract (fp32, or the 16-bit one);
- `kiln-run --generate` on that .so gives the 32 greedy tokens of
  onnxruntime's loop over the same model (the presents fed back as the
  pasts);
- so does the in-place form: Optimum's export compiled with
  --kv-cache-in-place (one buffer per cache, the new rows appended), and
  the genai model with its past pinned to the cache's length (its
  GroupQueryAttention then writes the new rows into a buffer that past and
  present share, the form onnxruntime-genai runs).

Exit code 1 on any mismatch.
"""
import json
import os
import subprocess
import sys

import numpy as np

from oracle import compare_output, run, run_checks, tools_parser

HERE = os.path.dirname(os.path.abspath(__file__))
# The rotary tables' rows (export_hub.py's CONTEXT): the genai buffer form's
# cache length.
CONTEXT = 64


def generated(tools, so, prompt, count):
    """The tokens `kiln-run --generate` prints, or the reason it failed."""
    cmd = [tools.kiln_run, so, "--backend", tools.backend, "--generate",
           str(count), "--prompt", ",".join(map(str, prompt))]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        return None, out.stderr.strip()[-500:]
    line = [l for l in out.stdout.splitlines() if l.startswith("generated")]
    return [int(t) for t in line[0].split(":", 1)[1].split()], None


def in_place_dims(dims):
    """The --dim of the in-place build: the genai past pinned to the cache's
    length, the total a range up to it (its buffer form); Optimum's dims as
    they are (kilnc's --kv-cache-in-place rewrites its concat)."""
    parts = dict(part.split("=", 1) for part in dims.split(","))
    if "kv_cache_dim" not in parts:
        return dims, ["--kv-cache-in-place"]
    parts["past_sequence_length"] = str(CONTEXT)
    parts["total_sequence_length"] = f"1:{CONTEXT}"
    return ",".join(f"{k}={v}" for k, v in parts.items()), []


def check_points(tools, folder, dims, so, work):
    """Each point on the reference interpreter and the compiled .so."""
    points = os.path.join(folder, "points")
    for point in sorted(os.listdir(points)):
        inputs = os.path.join(points, point, "inputs")
        expected = os.path.join(points, point, "expected")
        args = []
        for name in sorted(os.listdir(inputs)):
            args += ["--input", f"{name[:-4]}={os.path.join(inputs, name)}"]
        ref, host = (os.path.join(work, point, d) for d in ("reference", "so"))
        why = (run([tools.kiln_run, os.path.join(folder, "model.onnx"),
                    "--backend", "reference", "--dim", dims, "--output-dir",
                    ref] + args)
               or run([tools.kiln_run, so, "--backend", tools.backend,
                       "--output-dir", host] + args))
        if why:
            return f"{point}: {why}"

        for name in sorted(os.listdir(expected)):
            want = np.load(os.path.join(expected, name))
            for out_dir, path in ((ref, "reference"), (host, tools.backend)):
                why = compare_output(out_dir, name[:-4], want)
                if why:
                    return f"{point} ({path}): {why}"
    return None


def check_model(tools, folder, work):
    with open(os.path.join(folder, "dims")) as f:
        dims = f.read().strip()
    with open(os.path.join(folder, "generate.json")) as f:
        oracle = json.load(f)
    model = os.path.join(folder, "model.onnx")
    so = os.path.join(work, "model.so")
    why = run([tools.kilnc, model, "-o", so, "--dim", dims])
    if why:
        return f"compile: {why}"
    why = check_points(tools, folder, dims, so, work)
    if why:
        return why
    want = oracle["tokens"]
    tokens, why = generated(tools, so, oracle["prompt"], len(want))
    if why or tokens != want:
        return f"--generate: {why or tokens} (onnxruntime: {want})"
    place_dims, flags = in_place_dims(dims)
    in_place = os.path.join(work, "in-place.so")
    why = run([tools.kilnc, model, "-o", in_place, "--dim", place_dims]
              + flags)
    if why:
        return f"compile in place: {why}"
    tokens, why = generated(tools, in_place, oracle["prompt"], len(want))
    if why or tokens != want:
        return f"--generate in place: {why or tokens} (onnxruntime: {want})"
    return None


def main():
    parser = tools_parser(__doc__)
    parser.add_argument("--data", default=os.path.join(HERE, "hub"))
    parser.add_argument("--only", default="")
    parser.add_argument("--backend", default="host",
                        choices=("host", "cuda"))
    tools = parser.parse_args()
    models = sorted(d for d in os.listdir(tools.data)
                    if tools.only in d and
                    os.path.isdir(os.path.join(tools.data, d)))
    checks = [(m, lambda work, m=m: check_model(
        tools, os.path.join(tools.data, m), work)) for m in models]
    return run_checks(checks, "kiln-hub-", "hub decoders",
                      passed=f"3 points on reference and {tools.backend}, "
                             "32 tokens fed back and in place")


if __name__ == "__main__":
    sys.exit(main())
