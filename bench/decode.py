#!/usr/bin/env python3
"""Times a greedy decoding loop with and without CUDA graphs.

For each KV-cache export (default: the committed GPT-2 and LLaMA dynamo
exports), kilnc compiles one artifact with the sequence and cache lengths
symbolic and the cache kept in place (--kv-cache-in-place), and
`kiln-run --generate` decodes --tokens tokens from a 4-token prompt. Its
`timing:` line gives the median time between consecutive tokens: one
decoding step as the user's loop sees it (the step's kernels and matmuls,
the copies of the logits, the host's argmax). Each runs three ways:
KILN_CUDA_GRAPHS=0 (every step issued kernel by kernel); graphs with
KILN_CUDA_GRAPH_UPDATES=0 (each new length captured again and the whole
graph updated, how every step ran until 2026-12-04); and the default
(the second step captured, every later one that graph with its
length-dependent launches updated in place). The table gives the median
over --repeats processes.

With --next-token K each model is also compiled with kilnc --next-token K
(the greedy choice of the next token in the graph: its TopK over the
vocabulary, whose kernel splits a long row over blocks since 2026-12-04),
and timed updated in place: the loop reads one token id a step instead of
the logits and its host's argmax.

The exports are small (two layers, width 64): the step is launch-bound,
which is where graphs matter. Correctness is not checked here:
test/models/check_generate.py compares the same loop with onnxruntime.

  bench/decode.py --tools build-gpu/bin [--backend cuda] [--next-token K]
                  [--out table.md]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "test", "models", "fresh")
PROMPT = "5,17,42,8"

sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "test", "models"))
import peers  # noqa: E402
from oracle import decoding_dims  # noqa: E402


def step_ms(tools, so, backend, tokens, graphs, updates):
    """The median milliseconds between consecutive tokens of one run."""
    env = dict(os.environ, KILN_CUDA_GRAPHS=graphs,
               KILN_CUDA_GRAPH_UPDATES=updates)
    cmd = [os.path.join(tools, "kiln-run"), so, "--backend", backend,
           "--generate", str(tokens), "--prompt", PROMPT]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{out.stdout}{out.stderr}")
    m = re.search(r"then a median ([0-9.]+) ms a token over ([0-9]+) steps",
                  out.stdout)
    if not m or int(m.group(2)) != tokens - 1:
        sys.exit(f"no timing of {tokens - 1} steps in:\n{out.stdout}")
    return float(m.group(1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", default=os.path.join("build-gpu", "bin"))
    parser.add_argument("--work", default=os.path.join("build-gpu", "decode"))
    parser.add_argument("--backend", default="cuda")
    parser.add_argument("--models", default="gpt2-dynamo-kv,llama-dynamo-kv")
    parser.add_argument("--tokens", type=int, default=56)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--next-token", type=int, default=0,
                        help="also time the model choosing its next token "
                             "(kilnc --next-token K)")
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    window = 4 + args.tokens
    rows = ["| model | CUDA graphs | ms a step (median of %d runs) | each "
            "run's median (ms) |" % args.repeats, "|---|---|---|---|"]
    # (label, KILN_CUDA_GRAPHS, KILN_CUDA_GRAPH_UPDATES)
    modes = [("off", "0", "1"), ("captured each step", "1", "0"),
             ("updated in place", "1", "1")]
    # (artifact suffix, kilnc flags, the modes it is timed in)
    builds = [("", [], modes)]
    if args.next_token:
        builds.append((f"-next{args.next_token}",
                       ["--next-token", str(args.next_token)],
                       [(f"updated in place, next token chosen on the GPU "
                         f"(--next-token {args.next_token})", "1", "1")]))
    for name in args.models.split(","):
        folder = os.path.join(DATA, name)
        for suffix, flags, timed in builds:
            so = os.path.join(args.work, name + suffix + ".so")
            subprocess.run([os.path.join(args.tools, "kilnc"),
                            os.path.join(folder, "model.onnx"), "-o", so,
                            "--dim", decoding_dims(folder, window),
                            "--kv-cache-in-place"] + flags, check=True)
            for label, graphs, updates in timed:
                steps = [step_ms(args.tools, so, args.backend, args.tokens,
                                 graphs, updates)
                         for _ in range(args.repeats)]
                peers.add_row(rows, name, label,
                              f"{statistics.median(steps):.3f}",
                              ", ".join(f"{s:.3f}" for s in steps))
    peers.publish("\n".join(rows) + "\n", args.out)


if __name__ == "__main__":
    main()
