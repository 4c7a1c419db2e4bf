#!/usr/bin/env python3
"""Decoders as the hub ships them, compiled once with ranges and decoded.

  check_hub_decoders.py --kilnc BIN --kiln-run BIN [--data test/models/hub]
                        [--only NAME] [--backend host|cuda]

For each model export_hub.py made (onnxruntime-genai's builder in fp32 and
fp16, Optimum's text-generation-with-past; LLaMA, Qwen2, Qwen3, Gemma,
Phi-3, GPT-2), as
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
  present share, the form onnxruntime-genai runs);
- so does the in-place form built to choose its own tokens (kilnc
  --next-token=8: the greedy choice in the model, one token id read a
  step), for NEXT_TOKEN_MODELS;
- the run-time length checks (negative_): a past longer than the range
  compiled for, and an attention mask longer than the past and new tokens
  (or, in the buffer form, than the cache, or shorter than the new tokens),
  each fail the run naming the input (or the node and what it checks). (A seqlens_k outside the cache is check_group_query_attention.py's.)

Exit code 1 on any mismatch.
"""
import json
import os
import subprocess
import sys

import numpy as np

from oracle import (compare_output, model_folders, run, run_checks,
                    run_with_inputs, tools_parser)

HERE = os.path.dirname(os.path.abspath(__file__))
# The rotary tables' rows (export_hub.py's CONTEXT): the genai buffer form's
# cache length.
CONTEXT = 64
# The decoders also built to choose their own tokens (kilnc --next-token):
# one of each producer and weight form the choice meets (genai's int4
# MatMulNBits with fp32 logits, genai's fp16 logits and a symbolic batch,
# Optimum's export), not all fourteen, to keep the check's time.
NEXT_TOKEN_MODELS = {"llama-genai-int4", "phi3-genai-fp16", "qwen2-optimum"}


def generated(tools, so, prompt, count, chooser="on the host"):
    """The tokens `kiln-run --generate` prints, or the reason it failed
    (also when the tokens were not chosen where `chooser` says)."""
    cmd = [tools.kiln_run, so, "--backend", tools.backend, "--generate",
           str(count), "--prompt", ",".join(map(str, prompt))]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        return None, out.stderr.strip()[-500:]
    said = [l for l in out.stdout.splitlines() if l.startswith("tokens chosen")]
    if not said or chooser not in said[0]:
        return None, f"tokens not chosen {chooser}: {said}"
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


def refused(tools, so, feeds, work, message):
    """None when running `so` on `feeds` fails with `message` in its error,
    else why not."""
    result = run_with_inputs([tools.kiln_run, so, "--backend", tools.backend],
                             feeds, work)
    if result.returncode == 0 or message not in result.stderr:
        return (f"expected a refusal with {message!r}, got "
                f"{result.stderr.strip()[-300:] or 'success'}")
    return None


def check_refusals(tools, folder, dims, so, in_place, work):
    """negative_ runs of the one-token-after-a-past point, reshaped."""
    point = os.path.join(folder, "points", "B1-P9-S4", "inputs")
    feeds = {name[:-4]: np.load(os.path.join(point, name))
             for name in sorted(os.listdir(point))}
    top = int(dict(p.split("=", 1) for p in dims.split(","))
              ["past_sequence_length"].split(":")[1])
    longer = dict(feeds)
    for name, value in feeds.items():
        if name.startswith("past_key_values"):
            shape = list(value.shape)
            shape[2] = top + 1
            longer[name] = np.zeros(shape, value.dtype)
    longer["attention_mask"] = np.ones((1, top + 5), np.int64)
    if "position_ids" in feeds:
        longer["position_ids"] = np.arange(top + 1, top + 5)[None]
    why = refused(tools, so, longer, os.path.join(work, "long-past"),
                  f"'past_sequence_length' is {top + 1} (from input")
    if why:
        return f"negative_past_past_its_range: {why}"
    mask = dict(feeds, attention_mask=np.ones((1, 14), np.int64))
    why = refused(tools, so, mask, os.path.join(work, "long-mask"),
                  "input 'past_key_values.")
    if why:
        return f"negative_mask_longer_than_past_and_new: {why}"
    if in_place is None:
        return None
    # The buffer form: a mask past the cache's length.
    step = {name: value for name, value in feeds.items()}
    for name, value in feeds.items():
        if name.startswith("past_key_values"):
            shape = list(value.shape)
            shape[2] = CONTEXT
            step[name] = np.zeros(shape, value.dtype)
    step["input_ids"] = feeds["input_ids"][:, :1]
    step["attention_mask"] = np.ones((1, CONTEXT + 1), np.int64)
    why = refused(tools, in_place, step, os.path.join(work, "long-buffer"),
                  f"'total_sequence_length' is {CONTEXT + 1} (from input "
                  "'attention_mask'")
    if why:
        return f"negative_mask_longer_than_the_cache: {why}"
    # The buffer form: more new tokens than the total.
    step["attention_mask"] = np.ones((1, 3), np.int64)
    step["input_ids"] = feeds["input_ids"]
    why = refused(tools, in_place, step, os.path.join(work, "long-new"),
                  "must be at most total_sequence_length")
    if why:
        return f"negative_more_new_tokens_than_the_total: {why}"
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
    if os.path.basename(folder) in NEXT_TOKEN_MODELS:
        chooses = os.path.join(work, "next-token.so")
        why = run([tools.kilnc, model, "-o", chooses, "--dim", place_dims,
                   "--next-token=8"] + flags)
        if why:
            return f"compile with --next-token: {why}"
        tokens, why = generated(tools, chooses, oracle["prompt"], len(want),
                                chooser="by the model")
        if why or tokens != want:
            return (f"--generate, the model choosing: {why or tokens} "
                    f"(onnxruntime: {want})")
    return check_refusals(tools, folder, dims, so,
                          None if flags else in_place, work)


def main():
    parser = tools_parser(__doc__)
    parser.add_argument("--data", default=os.path.join(HERE, "hub"))
    parser.add_argument("--only", default="")
    parser.add_argument("--backend", default="host",
                        choices=("host", "cuda"))
    tools = parser.parse_args()
    checks = [(m, lambda work, m=m: check_model(
        tools, os.path.join(tools.data, m), work))
        for m in model_folders(tools.data, tools.only)]
    return run_checks(checks, "kiln-hub-", "hub decoders",
                      passed=f"3 points on reference and {tools.backend}, "
                             "32 tokens fed back and in place, lengths "
                             "checked")


if __name__ == "__main__":
    sys.exit(main())
