#!/usr/bin/env python3
"""Checks `kiln-run --generate` against onnxruntime's decoding loop.

  check_generate.py --kilnc build/bin/kilnc --kiln-run build/bin/kiln-run
                    [--data test/models/fresh] [--tokens 32] [--window 36]
                    [--backend cuda]

For each causal language model among the exports with symbolic dims
(export_fresh.py's GPT-2 and LLaMA -dynamic folders, both exporters), kilnc
compiles one window (--dim batch=1,sequence=WINDOW), where every step runs
the window with the text's tail masked out, and one build with the sequence
symbolic (--dim batch=1:1,sequence=1:WINDOW), where every step runs the
text at its length; the host backend (or the GPU) decodes from a prompt.
onnxruntime decodes the same export without padding, the sequence growing
by a token per step. The checks, for both builds:
  - greedy: the same tokens, one for one;
  - sampled (temperature, top-k, top-p, a seed): the same seed gives the same
    tokens, and each one is among the top-k and inside the top-p nucleus of
    onnxruntime's distribution for its prefix;
  - top-k 1 samples what greedy picks.
The -kv exports (past_key_values in, present out) are compiled with the
cache length symbolic too; --generate runs the prompt once and then a token
a step with the cache, and its greedy tokens must equal onnxruntime's own
loop over the same export, fed the same way. Each is built four ways: the
presents fed back or the caches kept in place, each with the host choosing
the tokens from the logits and with the model choosing them itself
(kilnc --next-token=8: one token id read a step); the model's sampled
tokens must equal the host sampler's from the same seed. The symbolic
build without a cache is also built with --next-token. Where the model
chooses, the loop queues each step before it reads the last one's token,
so an end-of-text token (--eos-token) is checked to end the text there.
Exit code 1 on any difference.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnxruntime as ort

from oracle import decoding_dims, tools_parser

HERE = os.path.dirname(os.path.abspath(__file__))
PROMPT = [5, 17, 42, 8]
SAMPLING = dict(temperature=0.8, top_k=8, top_p=0.9, seed=7)
# The models' own choice of the next token among their 8 most likely
# (kilnc --next-token): what SAMPLING's top-k fits.
NEXT_TOKEN = "--next-token=8"


def kiln_generate(tools, so, tokens, extra=(), chooser=None):
    """The tokens `kiln-run --generate` prints after the prompt; with
    `chooser` ("model" or "host"), the run must say it chose them there."""
    cmd = [tools.kiln_run, so, "--backend", tools.backend, "--generate",
           str(tokens), "--prompt", ",".join(map(str, PROMPT))] + list(extra)
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip())
    if chooser:
        said = {"by the model": "model", "on the host": "host"}
        line = [l for l in out.stdout.splitlines() if l.startswith("tokens chosen")][0]
        got = next(v for k, v in said.items() if k in line)
        if got != chooser:
            raise RuntimeError(f"{' '.join(cmd)}: tokens chosen on the {got}, "
                               f"not the {chooser}: {line}")
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


def ort_greedy_kv(session, tokens):
    """onnxruntime's greedy loop over a KV-cache export: the prompt with an
    empty cache, then one token a step with the presents as the pasts."""
    pasts = {}
    for info in session.get_inputs():
        if info.name.startswith("past_key_values."):
            pasts[info.name] = np.zeros((1, info.shape[1], 0, info.shape[3]),
                                        np.float32)
    names = [o.name for o in session.get_outputs()]
    seq, new = list(PROMPT), list(PROMPT)
    for _ in range(tokens):
        feeds = {"input_ids": np.array([new], np.int64),
                 "attention_mask": np.ones((1, len(seq)), np.int64), **pasts}
        outputs = dict(zip(names, session.run(None, feeds)))
        token = int(np.argmax(outputs["logits"][0, -1]))
        pasts = {name: outputs["present" + name[len("past_key_values"):]]
                 for name in pasts}
        seq.append(token)
        new = [token]
    return seq[len(PROMPT):]


def check_kv(tools, folder, scratch):
    """--generate over a KV-cache export compiled with symbolic dims: the
    prompt once, then a token a step with the cache; greedy tokens equal
    onnxruntime's own KV loop over the same export. Twice: the presents fed
    back as the next pasts, and the caches kept in place
    (--kv-cache-in-place: one buffer each, a step writing its new rows)."""
    model = os.path.join(folder, "model.onnx")
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    want = ort_greedy_kv(session, tools.tokens)
    problems = []
    sampled = {}
    s = SAMPLING
    sampling = ["--temperature", str(s["temperature"]), "--top-k", str(s["top_k"]),
                "--top-p", str(s["top_p"]), "--sample-seed", str(s["seed"])]
    for label, flags in [("fed back", []),
                         ("in place", ["--kv-cache-in-place"]),
                         ("fed back, chosen by the model", [NEXT_TOKEN]),
                         ("in place, chosen by the model",
                          ["--kv-cache-in-place", NEXT_TOKEN])]:
        so = os.path.join(scratch, os.path.basename(folder) + "-" +
                          label.replace(" ", "-").replace(",", "") + ".so")
        subprocess.run([tools.kilnc, model, "-o", so, "--dim",
                        decoding_dims(folder, tools.window), *flags], check=True,
                       capture_output=True)
        chooser = "model" if NEXT_TOKEN in flags else "host"
        greedy = kiln_generate(tools, so, tools.tokens, chooser=chooser)
        if greedy != want:
            first = next((i for i, (a, b) in enumerate(zip(greedy, want))
                          if a != b), min(len(greedy), len(want)))
            problems.append(f"KV cache {label}: greedy token {first} "
                            f"differs: kiln {greedy}, onnxruntime {want}")
        sampled[label] = kiln_generate(tools, so, tools.tokens, sampling,
                                       chooser=chooser)
        problems += check_eos(tools, so, want, chooser, f"KV cache {label}")
        print(f"  {os.path.basename(folder)}: KV cache {label}, greedy "
              f"{greedy[:8]}..., sampled {sampled[label][:8]}... "
              f"({len(greedy)} tokens)")
    # The model's sampler takes the host sampler's draws: the same tokens,
    # unless a draw lands within fp32 rounding (the model's) of a boundary
    # between two tokens' double-precision (the host's) cumulative sums.
    for label in ["fed back", "in place"]:
        chosen = sampled[label + ", chosen by the model"]
        if chosen != sampled[label]:
            problems.append(f"KV cache {label}: the model's sampler chose "
                            f"{chosen}, the host's {sampled[label]}")
    return problems


def check_eos(tools, so, want, chooser, label):
    """--eos-token: the text stops after the first end-of-text token. A model
    that chooses its own tokens has the next step queued before the host
    reads the end: that step's token must not reach the text."""
    eos = want[5]
    stop = want.index(eos) + 1
    got = kiln_generate(tools, so, tools.tokens, ["--eos-token", str(eos)],
                        chooser=chooser)
    if got != want[:stop]:
        return [f"{label}: with end-of-text token {eos}, kiln gave {got}, "
                f"not {want[:stop]}"]
    return []


def allowed(logits, temperature, top_k, top_p):
    """The tokens a top-k, top-p sampler may draw from `logits`."""
    order = sorted(range(len(logits)), key=lambda t: (-logits[t], t))[:top_k]
    probs = np.exp((logits[order] - logits[order[0]]) / temperature)
    probs /= probs.sum()
    keep = int(np.searchsorted(np.cumsum(probs), top_p) + 1)
    return set(order[:keep])


def check(tools, folder, scratch, dims):
    """Returns a list of problems of the build with `dims`."""
    model = os.path.join(folder, "model.onnx")
    so = os.path.join(scratch, os.path.basename(folder) + ".so")
    subprocess.run([tools.kilnc, model, "-o", so, "--dim", dims], check=True,
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
    if ":" in dims:
        # The model choosing its tokens without a cache: each step's
        # input_ids grow by the token the last step wrote on the device.
        chosen_so = so[:-3] + "-next-token.so"
        subprocess.run([tools.kilnc, model, "-o", chosen_so, "--dim", dims,
                        NEXT_TOKEN], check=True, capture_output=True)
        chosen = kiln_generate(tools, chosen_so, tools.tokens, chooser="model")
        if chosen != want:
            problems.append(f"chosen by the model: greedy {chosen}, "
                            f"onnxruntime {want}")
        problems += check_eos(tools, chosen_so, want, "model",
                              "chosen by the model")
    print(f"  {os.path.basename(folder)} --dim {dims}: greedy {greedy[:8]}..., sampled "
          f"{sampled[:8]}... (distinct from greedy: "
          f"{sum(a != b for a, b in zip(sampled, greedy))} of {len(greedy)})")
    return problems


def main():
    parser = tools_parser(__doc__)
    parser.add_argument("--backend", default="host", choices=["host", "cuda"],
                        help="where kiln-run decodes (cuda on a GPU machine: "
                             "scripts/gpu_check.sh)")
    parser.add_argument("--data", default=os.path.join(HERE, "fresh"))
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--window", type=int, default=36)
    tools = parser.parse_args()
    folders = sorted(os.path.join(tools.data, d) for d in os.listdir(tools.data)
                     if (d.endswith("-dynamic") or d.endswith("-kv")) and
                     d.split("-")[0] in ("gpt2", "llama"))
    failures = 0
    with tempfile.TemporaryDirectory(prefix="kiln-generate-") as scratch:
        os.environ.setdefault("KILN_CACHE_DIR", os.path.join(scratch, "cache"))
        for folder in folders:
            if folder.endswith("-kv"):
                problems = check_kv(tools, folder, scratch)
            else:
                # One window, padded; and symbolic, each step at its length.
                problems = (
                    check(tools, folder, scratch,
                          f"batch=1,sequence={tools.window}") +
                    check(tools, folder, scratch,
                          f"batch=1:1,sequence=1:{tools.window}"))
            for p in problems:
                failures += 1
                print(f"FAIL   {os.path.basename(folder)}: {p}")
    print(f"\n{len(folders)} decoders, {failures} problems")
    return 1 if failures or not folders else 0


if __name__ == "__main__":
    sys.exit(main())
