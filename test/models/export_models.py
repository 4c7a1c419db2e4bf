#!/usr/bin/env python3
"""Exports small Hugging Face architectures to ONNX for Kiln's model tests.

  export_models.py --out test/models/data [--only bert,gpt2] [--max-bytes N]

Builds BERT, GPT-2, DistilBERT, ViT and a LLaMA-style decoder (RMSNorm, RoPE,
grouped-query attention) from tiny configs with seeded random weights (nothing
is downloaded), and exports each with torch.onnx.export: the TorchScript
exporter at opsets 14 and 17 and the dynamo exporter at opset 18, where they
work. For each export it writes DIR/<arch>-<exporter>-opset<N>/ with
model.onnx, inputs/NAME.npy and expected/NAME.npy (onnxruntime's outputs on
those inputs), so that check_models.py can test Kiln without PyTorch. An
export larger than --max-bytes is not written (the data is committed to git),
and an exporter that fails is reported and skipped.

Needs torch, transformers, onnx and onnxruntime (PyPI).
"""
import argparse
import os
import shutil
import sys
import tempfile
import traceback

import numpy as np
import onnx
import onnxruntime as ort
import torch
import transformers

SEED = 1234
BATCH, SEQ = 2, 8
VOCAB = 96


class Head(torch.nn.Module):
    """Returns one tensor from a Hugging Face model: its main output."""

    def __init__(self, model, key):
        super().__init__()
        self.model = model
        self.key = key

    def forward(self, *args):
        out = self.model(*args, return_dict=True)
        return out[self.key]


def text_inputs(with_mask):
    rng = np.random.default_rng(SEED)
    ids = rng.integers(0, VOCAB, size=(BATCH, SEQ), dtype=np.int64)
    inputs = {"input_ids": ids}
    if with_mask:
        mask = np.ones((BATCH, SEQ), dtype=np.int64)
        mask[1, SEQ - 3:] = 0  # one padded sequence
        inputs["attention_mask"] = mask
    return inputs


def tiny_bert():
    """The tiny BERT both export scripts build, its weights seeded."""
    torch.manual_seed(SEED)
    return transformers.BertModel(transformers.BertConfig(
        vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
        num_attention_heads=4, intermediate_size=64,
        max_position_embeddings=32, type_vocab_size=2))


def tiny_gpt2(positions):
    """The tiny GPT-2 both export scripts build, with `positions` positions,
    its weights seeded."""
    torch.manual_seed(SEED + 2)
    return transformers.GPT2LMHeadModel(transformers.GPT2Config(
        vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4,
        n_positions=positions, use_cache=False))


def tiny_llama(positions):
    """The tiny LLaMA-style decoder (grouped-query attention) both export
    scripts build, with `positions` positions, its weights seeded."""
    torch.manual_seed(SEED + 4)
    return transformers.LlamaForCausalLM(transformers.LlamaConfig(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=64,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        max_position_embeddings=positions, rms_norm_eps=1e-6, use_cache=False,
        tie_word_embeddings=False))


def tiny_vit():
    """The tiny ViT both export scripts build, its weights seeded, and its
    seeded pixel_values input."""
    torch.manual_seed(SEED + 3)
    vit = transformers.ViTModel(transformers.ViTConfig(
        image_size=16, patch_size=4, num_channels=3, hidden_size=32,
        num_hidden_layers=2, num_attention_heads=4, intermediate_size=64),
        add_pooling_layer=False)
    rng = np.random.default_rng(SEED)
    pixels = rng.standard_normal((BATCH, 3, 16, 16)).astype(np.float32)
    return vit, {"pixel_values": pixels}


def architectures():
    """(name, model, inputs, output key) for each architecture."""
    yield "bert", tiny_bert(), text_inputs(True), "last_hidden_state"

    torch.manual_seed(SEED + 1)
    distil = transformers.DistilBertModel(transformers.DistilBertConfig(
        vocab_size=VOCAB, dim=32, n_layers=2, n_heads=4, hidden_dim=64,
        max_position_embeddings=32))
    yield "distilbert", distil, text_inputs(True), "last_hidden_state"

    yield "gpt2", tiny_gpt2(32), text_inputs(False), "logits"

    vit, pixels = tiny_vit()
    yield "vit", vit, pixels, "last_hidden_state"

    yield "llama", tiny_llama(32), text_inputs(False), "logits"


def strip_provenance(m):
    """Drops the dynamo exporter's per-node metadata (stack traces with this
    machine's absolute paths, FX node dumps): it is not part of the model."""
    for n in m.graph.node:
        del n.metadata_props[:]
        n.doc_string = ""
    del m.metadata_props[:]


def export(name, model, inputs, key, exporter, opset, folder):
    # Eager attention exports as plain MatMul/Softmax, as older exports do.
    model.config._attn_implementation = "eager"
    model.eval()
    wrapped = Head(model, key).eval()
    args = tuple(torch.from_numpy(v) for v in inputs.values())
    path = os.path.join(folder, "model.onnx")
    with torch.no_grad():
        torch.onnx.export(wrapped, args, path, input_names=list(inputs),
                          output_names=["output"], opset_version=opset,
                          dynamo=(exporter == "dynamo"))
    # One self-contained file: the dynamo exporter may write external data.
    m = onnx.load(path, load_external_data=True)
    for f in os.listdir(folder):
        if f != "model.onnx":
            os.remove(os.path.join(folder, f))
    strip_provenance(m)
    onnx.save(m, path, save_as_external_data=False)
    write_oracle(path, folder, inputs, wrapped, args)


def write_oracle(path, folder, inputs, wrapped, args):
    """Writes folder/inputs/NAME.npy and folder/expected/NAME.npy
    (onnxruntime's outputs of the export at `path`), and checks that PyTorch
    itself, `wrapped(*args)`, agrees: the export must keep the model."""
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    expected = session.run(None, inputs)
    os.makedirs(os.path.join(folder, "inputs"))
    os.makedirs(os.path.join(folder, "expected"))
    for n, v in inputs.items():
        np.save(os.path.join(folder, "inputs", n + ".npy"), v)
    for info, v in zip(session.get_outputs(), expected):
        np.save(os.path.join(folder, "expected", info.name + ".npy"), v)
    with torch.no_grad():
        torch_out = wrapped(*args).numpy()
    if not np.allclose(torch_out, expected[0], rtol=1e-4, atol=1e-5):
        raise RuntimeError("onnxruntime disagrees with PyTorch on the export")


def folder_bytes(folder):
    return sum(os.path.getsize(os.path.join(d, f))
               for d, _, files in os.walk(folder) for f in files)


def write_export(out, tag, max_bytes, export_into):
    """Has `export_into(staging)` write an export into a new staging folder
    and moves it to out/tag, replacing what was there. An export that raises
    or is larger than `max_bytes` is reported and not written. Returns the
    folder and its size in bytes, or None."""
    folder = os.path.join(out, tag)
    shutil.rmtree(folder, ignore_errors=True)
    staging = tempfile.mkdtemp(prefix="kiln-export-")
    try:
        export_into(staging)
    except Exception as e:  # noqa: BLE001 - report and go on
        last = traceback.format_exception_only(type(e), e)[-1].strip()
        print(f"skip   {tag}: {last[:300]}")
        shutil.rmtree(staging, ignore_errors=True)
        return None
    size = folder_bytes(staging)
    if size > max_bytes:
        print(f"skip   {tag}: {size} bytes is over --max-bytes")
        shutil.rmtree(staging, ignore_errors=True)
        return None
    shutil.move(staging, folder)
    return folder, size


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--only", default="")
    parser.add_argument("--max-bytes", type=int, default=900_000)
    args = parser.parse_args()
    only = set(filter(None, args.only.split(",")))
    variants = [("torchscript", 14), ("torchscript", 17), ("dynamo", 18)]
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, "
          f"onnx {onnx.__version__}, onnxruntime {ort.__version__}")
    for name, model, inputs, key in architectures():
        if only and name not in only:
            continue
        for exporter, opset in variants:
            tag = f"{name}-{exporter}-opset{opset}"
            written = write_export(
                args.out, tag, args.max_bytes,
                lambda staging: export(name, model, inputs, key, exporter,
                                       opset, staging))
            if not written:
                continue
            folder, size = written
            ops = sorted({n.op_type for n in onnx.load(
                os.path.join(folder, "model.onnx")).graph.node})
            print(f"wrote  {tag}: {size} bytes; ops: {' '.join(ops)}")
    # An exporter that cannot handle an architecture is reported above, not
    # fatal: the committed exports are what the tests check.
    return 0


if __name__ == "__main__":
    sys.exit(main())
