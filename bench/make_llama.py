#!/usr/bin/env python3
"""Writes a LLaMA-shaped decoder with random weights as today's exporter does.

  bench/make_llama.py --out DIR [--shape 1b|8b] [--seq 128] [--meta]

Builds transformers' LlamaForCausalLM at real widths with seeded random
weights (nothing downloaded) and exports it with torch.onnx.export (the
dynamo exporter, default sdpa attention), the weights as ONNX external data:
DIR/model.onnx + DIR/model.onnx.data. Batch 1, a static sequence of --seq
tokens, input_ids only (no padding mask), logits out.

With --meta the model is built on PyTorch's meta device (no memory for
weights) and exported without the exporter's graph optimizer, which cannot
fold meta tensors; this script then writes random weights (normal, std 0.02;
the rotary inverse frequencies computed for real) straight into the data
file, tensor by tensor. That is how a model larger than this machine's
memory is made.

  1b: hidden 2048, 16 layers, 32 query heads, 8 key/value heads (GQA),
      FFN 8192, vocabulary 32000 (TinyLlama-1.1B's widths): 1.1 B parameters,
      4.4 GB of fp32 weights.
  8b: hidden 4096, 32 layers, 32/8 heads, FFN 14336, vocabulary 128256
      (Llama-3-8B's widths): 32 GB of fp32 weights, and as much memory to
      build it in PyTorch.

Used by docs/performance.md to measure kilnc's wall time and peak memory on
a large model. Needs torch, transformers, onnxscript and onnx (PyPI).
"""
import argparse
import os
import sys
import time

import torch
import transformers

SHAPES = {
    "1b": dict(hidden_size=2048, num_hidden_layers=16, num_attention_heads=32,
               num_key_value_heads=8, intermediate_size=8192,
               vocab_size=32000),
    "8b": dict(hidden_size=4096, num_hidden_layers=32, num_attention_heads=32,
               num_key_value_heads=8, intermediate_size=14336,
               vocab_size=128256),
}


class Logits(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        return self.model(input_ids=input_ids, return_dict=True).logits


def export_meta(config, seq, out):
    """The --meta path: export from the meta device, then write the weights."""
    import numpy as np
    import onnx
    import onnx_ir as ir
    with torch.device("meta"):
        model = transformers.LlamaForCausalLM(config).eval()
    rotary = transformers.models.llama.modeling_llama.LlamaRotaryEmbedding(config)
    ids = torch.zeros((1, seq), dtype=torch.int64, device="meta")
    program = torch.onnx.export(Logits(model).eval(), (ids,), dynamo=True,
                                optimize=False)
    graph = program.model.graph
    rng = np.random.default_rng(0)
    offset = 0
    with open(os.path.join(out, "model.onnx.data"), "wb") as f:
        for value in graph.initializers.values():
            dtype = value.dtype.numpy()
            count = int(np.prod(tuple(value.shape)))
            start = offset
            if "inv_freq" in value.name:
                data = [rotary.inv_freq.numpy().astype(dtype).tobytes()]
            elif np.issubdtype(dtype, np.floating):
                data = ((rng.standard_normal(min(1 << 24, count - done),
                                             dtype=np.float32) * 0.02)
                        .astype(dtype).tobytes()
                        for done in range(0, count, 1 << 24))
            else:
                data = [np.zeros(count, dtype).tobytes()]
            for chunk in data:
                f.write(chunk)
                offset += len(chunk)
            size = offset - start
            pad = -offset % 64
            f.write(b"\0" * pad)
            offset += pad
            value.const_value = ir.ExternalTensor(
                "model.onnx.data", start, size, value.dtype, shape=value.shape,
                name=value.name, base_dir=out)
    onnx.save(ir.serde.serialize_model(program.model),
              os.path.join(out, "model.onnx"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--shape", choices=sorted(SHAPES), default="1b")
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--meta", action="store_true",
                        help="build on the meta device; write the weights here")
    args = parser.parse_args()
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        **SHAPES[args.shape], max_position_embeddings=2048, rms_norm_eps=1e-5,
        use_cache=False, tie_word_embeddings=False)
    start = time.time()
    os.makedirs(args.out, exist_ok=True)
    if args.meta:
        export_meta(config, args.seq, args.out)
        print(f"wrote {args.out} in {time.time() - start:.0f} s")
        return 0
    with torch.no_grad():
        model = transformers.LlamaForCausalLM(config).eval()
        params = sum(p.numel() for p in model.parameters())
        print(f"{args.shape}: {params / 1e9:.2f} B parameters, "
              f"{4 * params / 1e9:.1f} GB fp32 (built in {time.time() - start:.0f} s)")
        ids = torch.randint(0, config.vocab_size, (1, args.seq))
        os.makedirs(args.out, exist_ok=True)
        path = os.path.join(args.out, "model.onnx")
        torch.onnx.export(Logits(model).eval(), (ids,), path, input_names=["input_ids"],
                          output_names=["logits"], dynamo=True,
                          external_data=True)
    print(f"wrote {path} and its external data in {time.time() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
