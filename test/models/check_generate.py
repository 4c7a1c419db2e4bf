#!/usr/bin/env python3
"""Checks `kiln-run --generate` against onnxruntime's decoding loop.

  check_generate.py --kilnc build/bin/kilnc --kiln-run build/bin/kiln-run
                    [--data test/models/fresh] [--tokens 28] [--window 32]

For each causal language model among the exports with symbolic dims
(export_fresh.py's GPT-2 and LLaMA -dynamic folders, both exporters), kilnc
compiles one window (--dim batch=1,sequence=WINDOW) and the host backend
decodes from a prompt, every step running the window with the text's tail
masked out. onnxruntime decodes the same export without padding, the
sequence growing by a token per step. The checks:
  - greedy: the same tokens, one for one;
  - sampled (temperature, top-k, top-p, a seed): the same seed gives the same
    tokens, and each one is among the top-k and inside the top-p nucleus of
    onnxruntime's distribution for its prefix;
  - top-k 1 samples what greedy picks.
Exit code 1 on any difference.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnxruntime as ort

HERE = os.path.dirname(os.path.abspath(__file__))
PROMPT = [5, 17, 42, 8]
SAMPLING = dict(temperature=0.8, top_k=8, top_p=0.9, seed=7)


def kiln_generate(tools, so, tokens, extra=()):
    """The tokens `kiln-run --generate` prints after the prompt."""
    cmd = [tools.kiln_run, so, "--backend", "host", "--generate",
           str(tokens), "--prompt", ",".join(map(str, PROMPT))] + list(extra)
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip())
    line = [l for l in out.stdout.splitlines() if l.startswith("generated")][0]
    return [int(t) for t in line.split(":", 1)[1].split()]


def ort_logits(session, tokens):
    """onnxruntime's next-token logits after `tokens` (no padding)."""
    ids = np.array([tokens], np.int64)
    feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
    return session.run(None, feeds)[0][0, -1].astype(np.float64)


def ort_greedy(session, tokens):
    seq = list(PROMPT)
    for _ in range(tokens):
        seq.append(int(np.argmax(ort_logits(session, seq))))
    return seq[len(PROMPT):]


def allowed(logits, temperature, top_k, top_p):
    """The tokens a top-k, top-p sampler may draw from `logits`."""
    order = sorted(range(len(logits)), key=lambda t: (-logits[t], t))[:top_k]
    probs = np.exp((logits[order] - logits[order[0]]) / temperature)
    probs /= probs.sum()
    keep = int(np.searchsorted(np.cumsum(probs), top_p) + 1)
    return set(order[:keep])


def check(tools, folder, scratch):
    """Returns a list of problems."""
    model = os.path.join(folder, "model.onnx")
    so = os.path.join(scratch, os.path.basename(folder) + ".so")
    subprocess.run([tools.kilnc, model, "-o", so, "--dim",
                    f"batch=1,sequence={tools.window}"], check=True,
                   capture_output=True)
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    problems = []

    greedy = kiln_generate(tools, so, tools.tokens)
    want = ort_greedy(session, tools.tokens)
    if greedy != want:
        first = next(i for i, (a, b) in enumerate(zip(greedy, want)) if a != b)
        problems.append(f"greedy token {first} differs: kiln {greedy}, "
                        f"onnxruntime {want}")

    s = SAMPLING
    flags = ["--temperature", str(s["temperature"]), "--top-k",
             str(s["top_k"]), "--top-p", str(s["top_p"]), "--sample-seed",
             str(s["seed"])]
    sampled = kiln_generate(tools, so, tools.tokens, flags)
    if kiln_generate(tools, so, tools.tokens, flags) != sampled:
        problems.append("the same seed gave other tokens")
    seq = list(PROMPT)
    for i, token in enumerate(sampled):
        if token not in allowed(ort_logits(session, seq), s["temperature"],
                                s["top_k"], s["top_p"]):
            problems.append(f"sampled token {i} ({token}) is outside top-k "
                            f"{s['top_k']} / top-p {s['top_p']}")
            break
        seq.append(token)
    one = kiln_generate(tools, so, tools.tokens,
                        ["--temperature", "1", "--top-k", "1"])
    if one != greedy:
        problems.append("top-k 1 sampled other tokens than greedy")
    print(f"  {os.path.basename(folder)}: greedy {greedy[:8]}..., sampled "
          f"{sampled[:8]}... (distinct from greedy: "
          f"{sum(a != b for a, b in zip(sampled, greedy))} of {len(greedy)})")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kilnc", required=True)
    parser.add_argument("--kiln-run", required=True)
    parser.add_argument("--data", default=os.path.join(HERE, "fresh"))
    parser.add_argument("--tokens", type=int, default=28)
    parser.add_argument("--window", type=int, default=32)
    tools = parser.parse_args()
    folders = sorted(os.path.join(tools.data, d) for d in os.listdir(tools.data)
                     if d.endswith("-dynamic") and d.split("-")[0] in
                     ("gpt2", "llama"))
    failures = 0
    with tempfile.TemporaryDirectory(prefix="kiln-generate-") as scratch:
        os.environ.setdefault("KILN_CACHE_DIR", os.path.join(scratch, "cache"))
        for folder in folders:
            for p in check(tools, folder, scratch):
                failures += 1
                print(f"FAIL   {os.path.basename(folder)}: {p}")
    print(f"\n{len(folders)} decoders, {failures} problems")
    return 1 if failures or not folders else 0


if __name__ == "__main__":
    sys.exit(main())
