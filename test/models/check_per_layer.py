#!/usr/bin/env python3
"""Checks kiln-run --compare-reference --per-layer.

  check_per_layer.py --kiln-run build/bin/kiln-run [--data test/models/data]
                     [--only NAME] [--seed N]

--per-layer compiles a model in a debugging build that keeps every tensor the
kernels write, runs it on the host backend (the generated kernels emulated on
the CPU) beside the fp32 reference interpreter, and names the first tensor
whose error leaves the tolerance, with its ONNX node. Checked here:
- every exported architecture of test/models/data in fp32: every tensor the
  kernels write matches the reference's tensor of the same name within the
  fp32 contract (rtol 1e-4, atol 1e-5), so the extra outputs are the model's
  own tensors (and some are compared at all);
- the same in fp16 and bf16 within relative L2 1e-2 (the 16-bit contract);
- the BERT layer of check_precision.py whose LayerNorm input variance exceeds
  the f16 range, with --disable-fp32-islands=norm-statistics: the first
  tensor named must be one that holds the first LayerNorm's variance (where
  the overflow happens), and with the island on every tensor is within.
Exit code 1 on any unexpected result.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx

from check_precision import BATCH, HIDDEN, SEQ, Layer
from oracle import model_folders

HERE = os.path.dirname(os.path.abspath(__file__))
FIRST = re.compile(r"^per-layer: first tensor beyond [^:]*: '(.*)' from ONNX "
                   r"node '(.*)'$", re.M)
LAYER = re.compile(r"^layer (\S+) \(node ", re.M)


def per_layer(kiln_run, model, inputs, extra):
    """Runs kiln-run --per-layer; returns (exit code, stdout + stderr)."""
    cmd = [kiln_run, model, "--backend", "host", "--per-layer", *extra]
    for name, path in inputs.items():
        cmd += ["--input", f"{name}={path}"]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    return result.returncode, result.stdout + result.stderr


def check_exported(tools, name, folder, report):
    inputs_dir = os.path.join(folder, "inputs")
    inputs = {f[:-4]: os.path.join(inputs_dir, f)
              for f in sorted(os.listdir(inputs_dir)) if f.endswith(".npy")}
    for precision, tolerance in (("fp32", []), ("fp16", ["--rel-l2", "1e-2"]),
                                 ("bf16", ["--rel-l2", "1e-2"])):
        code, text = per_layer(tools.kiln_run,
                               os.path.join(folder, "model.onnx"), inputs,
                               ["--precision", precision, *tolerance])
        compared = len(LAYER.findall(text))
        first = FIRST.search(text)
        ok = code == 0 and "per-layer: every tensor is within" in text and \
            compared > 0
        detail = f"{compared} tensors compared"
        if first:
            detail += f"; first beyond: {first.group(1)} ({first.group(2)})"
        elif code != 0 or compared == 0:
            detail += "; " + " | ".join(text.strip().splitlines()[-3:])
        report(ok, f"{name} {precision}", detail)


def check_overflow(tools, scratch, seed, report):
    """The LayerNorm whose variance f16 cannot hold is named first."""
    rng = np.random.default_rng(seed)
    work = os.path.join(scratch, "overflow")
    os.makedirs(work)
    inputs = {"hidden_states": os.path.join(work, "hidden_states.npy"),
              "attention_mask": os.path.join(work, "attention_mask.npy")}
    np.save(inputs["hidden_states"],
            rng.normal(0.0, 1.0, (BATCH, SEQ, HIDDEN)).astype(np.float32))
    mask = np.ones((BATCH, SEQ), np.int64)
    mask[1, SEQ - 5:] = 0
    np.save(inputs["attention_mask"], mask)
    # The same weights as check_precision.py's overflow case.
    layer = Layer(np.random.default_rng(seed + 1), True)
    path = os.path.join(work, "unsqueezed-layernorm.onnx")
    onnx.save(layer.build(), path)
    first_variance = layer.variance_tensors[0]

    flags = ["--precision", "fp16", "--rel-l2", "1e-2"]
    _, text = per_layer(tools.kiln_run, path, inputs,
                        flags + ["--disable-fp32-islands=norm-statistics"])
    first = FIRST.search(text)
    named = first.group(1) if first else None
    report(named in first_variance,
           "bert-layer-large-activations fp16 without the norm-statistics "
           "island",
           f"first tensor beyond: {named} ({first.group(2)})" if first else
           "no tensor named: " + " | ".join(text.strip().splitlines()[-3:]))
    code, text = per_layer(tools.kiln_run, path, inputs, flags)
    report(code == 0 and "per-layer: every tensor is within" in text,
           "bert-layer-large-activations fp16 with the island",
           f"{len(LAYER.findall(text))} tensors compared, all within"
           if code == 0 else " | ".join(text.strip().splitlines()[-3:]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kiln-run", required=True)
    parser.add_argument("--data", default=os.path.join(HERE, "data"))
    parser.add_argument("--only", default="")
    parser.add_argument("--seed", type=int, default=7)
    tools = parser.parse_args()
    models = model_folders(tools.data, tools.only)
    print(f"seed {tools.seed}")
    failures = 0

    def report(ok, what, detail):
        nonlocal failures
        failures += not ok
        print(f"{'pass' if ok else 'FAIL'}  {what}: {detail}", flush=True)

    with tempfile.TemporaryDirectory(prefix="kiln-per-layer-") as scratch:
        os.environ.setdefault("KILN_CACHE_DIR", os.path.join(scratch, "cache"))
        for name in models:
            check_exported(tools, name, os.path.join(tools.data, name), report)
        if not tools.only or tools.only in "bert-layer-large-activations":
            check_overflow(tools, scratch, tools.seed, report)
    print(f"{failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
