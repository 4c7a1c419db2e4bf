#!/usr/bin/env python3
"""Checks that today's exporters' attention forms fuse as well as older ones.

  check_export_fusion.py --kilnc build/bin/kilnc [--data test/models/fresh]
                         [--max-per-layer 8]

For each export in the folder (export_fresh.py's: TorchScript and dynamo
exports of BERT, GPT-2, LLaMA and ViT, with sdpa attention), compiles it with
`kilnc --emit=plan --report=json` and checks that:
  - every attention layer is one kernel: as many `attention` launches as the
    model has Softmax nodes and fused attention nodes (onnxruntime's
    optimizer output), no other launch covers a Softmax node, and each fused
    node's softmax is in exactly one attention kernel;
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
# Launches of a BERT encoder outside its layers: the embeddings' LayerNorm
# and the attention mask; onnxruntime's EmbedLayerNormalization adds one,
# its mask_index (each row's key length, a reduction over the mask).
BERT_OUTSIDE_LAYERS = 2
MASK_INDEX_LAUNCHES = 1
# Attention written as one node (onnxruntime's transformer optimizer).
FUSED_ATTENTION = {"Attention", "MultiHeadAttention", "GroupQueryAttention"}


def report(kilnc, model, scratch):
    plan = os.path.join(scratch, "plan.txt")
    result = subprocess.run([kilnc, model, "--emit=plan", "-o", plan,
                             "--report=json"]
                            + dims_args(os.path.dirname(model)),
                            capture_output=True, text=True, timeout=900)
    if result.returncode != 0:
        raise RuntimeError(result.stderr.strip().splitlines()[0])
    return json.loads(result.stdout)


def attention_nodes(model):
    """The Softmax nodes, the fused attention nodes, and whether an
    EmbedLayerNormalization computes a mask_index."""
    m = onnx.load(model, load_external_data=False)
    softmaxes = {n.name for n in m.graph.node if n.op_type == "Softmax"}
    fused = {n.name for n in m.graph.node
             if n.domain == "com.microsoft" and n.op_type in FUSED_ATTENTION}
    mask_index = any(n.op_type == "EmbedLayerNormalization" and
                     len(n.output) > 1 and n.output[1] for n in m.graph.node)
    return softmaxes, fused, mask_index


def check(tools, folder, scratch):
    """Returns a list of problems (empty when the export fuses as it must)."""
    model = os.path.join(folder, "model.onnx")
    softmaxes, fused, mask_index = attention_nodes(model)
    launches = report(tools.kilnc, model, scratch)["launches"]
    attention = [l for l in launches if l["kind"] == "attention"]
    stray = [l["name"] for l in launches if l["kind"] != "attention"
             and softmaxes & set(l["onnx_nodes"])]
    # A fused node's projection and mask are launches of their own; its
    # softmax must be in exactly one attention kernel.
    stray += [n for n in fused
              if sum(n in l["onnx_nodes"] for l in attention) != 1]
    layers = len(softmaxes) + len(fused)
    print(f"  {os.path.basename(folder)}: {len(launches)} launches, "
          f"{len(attention)} attention kernels, {layers} attention layers")
    problems = []
    if len(attention) != layers or stray:
        problems.append(f"{len(attention)} attention kernels for {layers} "
                        f"layers; softmax outside one attention kernel in "
                        f"{stray}")
    if os.path.basename(folder).startswith("bert"):
        budget = (tools.max_per_layer * layers + BERT_OUTSIDE_LAYERS
                  + (MASK_INDEX_LAUNCHES if mask_index else 0))
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
