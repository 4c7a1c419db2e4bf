#!/usr/bin/env python3
"""Checks that today's exporters' attention forms fuse as well as older ones.

  check_export_fusion.py --kilnc build/bin/kilnc [--data test/models/fresh]
                         [--max-per-layer 8]

For each export in the folder (export_fresh.py's: TorchScript and dynamo
exports of BERT, GPT-2, LLaMA and ViT, with sdpa attention), compiles it with
`kilnc --emit=plan --report=json` and checks that:
  - every attention layer is one kernel: as many `attention` launches as the
    model has Softmax nodes, and no other launch covers a Softmax node;
  - BERT encoders need at most --max-per-layer launches per layer (kernels
    and cuBLASLt calls together). Dynamo exports name nodes without their
    layer, so launches are counted for the whole model: at most
    max-per-layer x layers, plus the two launches outside the layers (the
    embeddings' LayerNorm and the attention mask).
Prints the counts; exit code 1 when a check fails.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import onnx

from oracle import dims_args

HERE = os.path.dirname(os.path.abspath(__file__))
# Launches of a BERT encoder outside its layers.
BERT_OUTSIDE_LAYERS = 2


def report(kilnc, model, scratch):
    plan = os.path.join(scratch, "plan.txt")
    result = subprocess.run([kilnc, model, "--emit=plan", "-o", plan,
                             "--report=json"]
                            + dims_args(os.path.dirname(model)),
                            capture_output=True, text=True, timeout=900)
    if result.returncode != 0:
        raise RuntimeError(result.stderr.strip().splitlines()[0])
    return json.loads(result.stdout)


def softmax_nodes(model):
    m = onnx.load(model, load_external_data=False)
    return {n.name for n in m.graph.node if n.op_type == "Softmax"}


def check(tools, folder, scratch):
    """Returns a list of problems (empty when the export fuses as it must)."""
    model = os.path.join(folder, "model.onnx")
    softmaxes = softmax_nodes(model)
    launches = report(tools.kilnc, model, scratch)["launches"]
    attention = [l for l in launches if l["kind"] == "attention"]
    stray = [l["name"] for l in launches if l["kind"] != "attention"
             and softmaxes & set(l["onnx_nodes"])]
    layers = len(softmaxes)
    print(f"  {os.path.basename(folder)}: {len(launches)} launches, "
          f"{len(attention)} attention kernels, {layers} attention layers")
    problems = []
    if len(attention) != layers or stray:
        problems.append(f"{len(attention)} attention kernels for {layers} "
                        f"layers; softmax outside attention in {stray}")
    if os.path.basename(folder).startswith("bert"):
        budget = tools.max_per_layer * layers + BERT_OUTSIDE_LAYERS
        if len(launches) > budget:
            problems.append(f"{len(launches)} launches, more than "
                            f"{tools.max_per_layer} per layer ({budget})")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kilnc", required=True)
    parser.add_argument("--data", default=os.path.join(HERE, "fresh"))
    parser.add_argument("--max-per-layer", type=int, default=8)
    tools = parser.parse_args()
    folders = sorted(os.path.join(tools.data, d) for d in os.listdir(tools.data)
                     if os.path.isfile(os.path.join(tools.data, d, "model.onnx")))
    failures = 0
    with tempfile.TemporaryDirectory(prefix="kiln-fusion-") as scratch:
        for folder in folders:
            problems = check(tools, folder, scratch)
            for p in problems:
                print(f"FAIL   {os.path.basename(folder)}: {p}")
            failures += bool(problems)
    print(f"\n{len(folders)} exports, {failures} failing")
    return 1 if failures or not folders else 0


if __name__ == "__main__":
    sys.exit(main())
