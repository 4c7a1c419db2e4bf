#!/usr/bin/env python3
"""Exports small Hugging Face architectures as a new user would today.

  export_fresh.py [--out test/models/fresh] [--only bert,llama] [--max-bytes N]

export_models.py forces eager attention and folds the weights into one file,
so its exports look like older ones. This script does neither: each model
keeps transformers' default attention implementation ("sdpa"), so the
exporters write their scaled_dot_product_attention forms (boolean masks, the
scale applied to both Q and K, IsNaN/Where guards after the softmax), and the
weights stay ONNX external data (model.onnx + model.onnx.data), which is what
torch.onnx.export writes by default. BERT, RoBERTa (position ids computed
from the token ids; the padded row holds padding tokens), GPT-2, LLaMA
(grouped-query attention), Qwen3 (per-head Q/K norms) and Gemma 2 (score
and logit caps, a sliding window) take input_ids and an attention_mask with
one padded row; ViT takes pixel_values. Tiny configs, seeded random weights, nothing downloaded.

Each architecture is exported with the TorchScript exporter (opset 17) and the
dynamo exporter (its default opset), and BERT once more with the TorchScript
exporter at opset 12 with keep_initializers_as_inputs=True (the older form
where every initializer is also a graph input; one self-contained file; eager
attention, since that exporter has no sdpa before opset 14), and the text
architectures once more per exporter with batch and sequence left symbolic
(-dynamic: named dims, an oracle at another shape, a `dims` file), and
the decoders as one decoding step with a KV cache (-kv: past and present
keys and values, every length symbolic, the oracle at batch 2, 3 new
tokens, 5 past ones). For
each export it writes DIR/<arch>-<exporter>[-VARIANT]/ with model.onnx,
model.onnx.data, inputs/NAME.npy and expected/NAME.npy (onnxruntime's outputs
on those inputs), the layout check_models.py reads:

  check_models.py --data test/models/fresh --kilnc ... --kiln-run ...

An exporter that fails is reported and skipped; so is an export larger than
--max-bytes.

  export_fresh.py --bert-base --out DIR

exports a BERT-base-shaped encoder instead (hidden 768, 12 layers, 12 heads,
FFN 3072, batch 1, sequence 128; about 440 MB of weights, not for git), for
check_export_fusion.py's launch count at full size.

Needs torch, transformers, onnxscript, onnx and onnxruntime (PyPI).
"""
import argparse
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
import torch
import transformers

from export_models import (strip_provenance, tiny_bert, tiny_gpt2, tiny_llama,
                           tiny_vit, write_export, write_oracle)

SEED = 1234
BATCH, SEQ = 2, 8
VOCAB = 96
DATA_FILE = "model.onnx.data"
# The dynamo exporter (onnx_ir.save) keeps tensors of at most 256 bytes inline;
# the TorchScript exports get the same threshold so that scalars and shape
# constants stay inline there too. onnx.save compares sys.getsizeof(raw_data),
# about 33 bytes over the data, so there a 256-byte tensor goes external.
INLINE_BYTES = 256

# (folder suffix, exporter, opset or None for the exporter's default,
#  keep_initializers_as_inputs, attention implementation or None for the
#  default, architectures it applies to or None for all, whether
#  onnxruntime's transformer optimizer then fuses it). The TorchScript
# exporter has no scaled_dot_product_attention before opset 14, so the opset
# 12 form takes eager attention, as exports from before sdpa did.
# The -dynamic variants keep batch and sequence symbolic, named "batch" and
# "sequence" as users name them, and their oracle runs at DYNAMIC_SHAPE, not
# at the traced shape: kilnc gets the values with --dim, from the folder's
# `dims` file, which check_models.py reads. The -ortopt-dynamic BERT is
# what many BERT files on the hub are: onnxruntime.transformers' optimizer
# run over an eager-attention export (EmbedLayerNormalization, com.microsoft
# Attention, BiasGelu, SkipLayerNormalization), batch and sequence symbolic.
TEXT = {"bert", "gpt2", "llama"}
DYNAMIC_SHAPE = (3, 5)
# The -kv variants are one decoding step with a KV cache, in the form
# transformers' own export tooling gives it: input_ids and attention_mask
# (past and new positions), past_key_values.L.key/value in; logits and
# present.L.key/value out; every length symbolic. The oracle is a step of
# KV_STEP = (batch, new tokens, past length).
# Not Gemma 2: its sliding layers' cache keeps the last window - 1 past
# keys (a Slice from -3), a length of min(past, 3) that symbolic dims
# cannot state; kilnc refuses it by name.
DECODERS = {"gpt2", "llama", "qwen3"}
KV_STEP = (2, 3, 5)

VARIANTS = [
    ("torchscript", "torchscript", 17, False, None, None, False),
    ("dynamo", "dynamo", None, False, None, None, False),
    ("torchscript-initializers-as-inputs", "torchscript", 12, True, "eager",
     {"bert"}, False),
    ("torchscript-dynamic", "torchscript", 17, False, None, TEXT, False),
    ("dynamo-dynamic", "dynamo", None, False, None, TEXT, False),
    ("torchscript-kv", "torchscript", 17, False, None, DECODERS, False),
    ("dynamo-kv", "dynamo", None, False, None, DECODERS, False),
    ("torchscript-ortopt-dynamic", "torchscript", 17, False, "eager",
     {"bert"}, True),
]


class Head(torch.nn.Module):
    """Returns one tensor from a Hugging Face model: its main output. The
    inputs are passed by name: positional order differs between models (GPT-2
    takes past_key_values second)."""

    def __init__(self, model, names, key):
        super().__init__()
        self.model = model
        self.names = list(names)
        self.key = key

    def forward(self, *args):
        out = self.model(**dict(zip(self.names, args)), return_dict=True)
        return out[self.key]


def text_inputs(batch=None, seq=None, pad_id=None):
    """Token ids and a mask with one padded sequence; with `pad_id`, the
    padded positions hold that token (RoBERTa numbers its positions by it)."""
    batch, seq = batch or BATCH, seq or SEQ
    rng = np.random.default_rng(SEED)
    ids = rng.integers(0, VOCAB, size=(batch, seq), dtype=np.int64)
    mask = np.ones((batch, seq), dtype=np.int64)
    mask[-1, seq - 3:] = 0  # one padded sequence
    if pad_id is not None:
        ids[ids == pad_id] = pad_id + 1
        ids[-1, seq - 3:] = pad_id
    return {"input_ids": ids, "attention_mask": mask}


def perturb(model, seed):
    """Adds seeded noise to every parameter. Hugging Face's init zeroes the
    biases and sets the norms' scales to one: a dropped bias or a misplaced
    norm would go unnoticed, and the TorchScript exporter folds the identical
    tensors into one initializer behind Identity nodes, which no trained
    checkpoint gives."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn(p.shape, generator=gen) * 0.05)
    return model


def tiny_decoder(arch):
    """A tiny Qwen3 or Gemma 2 decoder of 64 positions, its weights
    seeded (a window of 4 keys for Gemma 2's sliding layers, shorter than
    SEQ, so that the window masks)."""
    torch.manual_seed(SEED + {"qwen3": 6, "gemma2": 7}[arch])
    common = dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=64,
                  num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, head_dim=8,
                  max_position_embeddings=64, rms_norm_eps=1e-6,
                  use_cache=False, tie_word_embeddings=False)
    if arch == "qwen3":
        return transformers.Qwen3ForCausalLM(transformers.Qwen3Config(
            **common))
    return transformers.Gemma2ForCausalLM(transformers.Gemma2Config(
        sliding_window=4, query_pre_attn_scalar=8, **common))


def architectures():
    """(name, model, inputs, output key) for each architecture. No
    _attn_implementation is set: the default is the point."""
    yield "bert", perturb(tiny_bert(), SEED), text_inputs(), "last_hidden_state"

    # RoBERTa (and XLM-R, CamemBERT) compute their position ids from the
    # token ids: a scan of the non-padding mask, times that mask, plus the
    # padding id. The row kernel that fuses it read the ids where the mask
    # was needed (issue 35).
    torch.manual_seed(SEED + 5)
    roberta = transformers.RobertaModel(transformers.RobertaConfig(
        vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
        num_attention_heads=4, intermediate_size=64, pad_token_id=1,
        max_position_embeddings=40, type_vocab_size=1),
        add_pooling_layer=False)
    yield ("roberta", perturb(roberta, SEED + 5), text_inputs(pad_id=1),
           "last_hidden_state")

    # The decoders take 64 positions: check_generate.py decodes 32 tokens
    # after a 4-token prompt.
    yield "gpt2", perturb(tiny_gpt2(64), SEED + 2), text_inputs(), "logits"
    yield "llama", perturb(tiny_llama(64), SEED + 4), text_inputs(), "logits"
    # Qwen3 normalizes each head's queries and keys (an RMSNorm of its
    # head_dim features, before the rotary embedding); Gemma 2 caps its
    # attention scores and logits (c * tanh(s / c)), alternates a sliding
    # window with full attention, normalizes before and after each block
    # and scales the embedding.
    yield "qwen3", perturb(tiny_decoder("qwen3"), SEED + 6), text_inputs(), \
        "logits"
    yield "gemma2", perturb(tiny_decoder("gemma2"), SEED + 7), \
        text_inputs(), "logits"

    vit, pixels = tiny_vit()
    yield "vit", perturb(vit, SEED + 3), pixels, "last_hidden_state"


def bert_base():
    """A BERT-base-shaped encoder (random weights), batch 1, sequence 128."""
    global BATCH, SEQ, VOCAB
    BATCH, SEQ, VOCAB = 1, 128, 30522
    torch.manual_seed(SEED)
    bert = transformers.BertModel(transformers.BertConfig())
    yield "bert-base", perturb(bert, SEED), text_inputs(), "last_hidden_state"


def settle(path, exporter, self_contained):
    """Rewrites the exported file without provenance, weights external."""
    if exporter == "dynamo":
        # The exporter already wrote model.onnx.data; loading without it and
        # saving keeps its external_data entries (offsets, alignment) as is.
        m = onnx.load(path, load_external_data=False)
        strip_provenance(m)
        onnx.save(m, path)
        return
    # The TorchScript exporter ignores external_data and writes one file.
    m = onnx.load(path)
    strip_provenance(m)
    if self_contained:
        onnx.save(m, path, save_as_external_data=False)
    else:
        onnx.save(m, path, save_as_external_data=True,
                  all_tensors_to_one_file=True, location=DATA_FILE,
                  size_threshold=INLINE_BYTES)


def ort_optimize(path, config):
    """Rewrites the export at `path` as onnxruntime's transformer optimizer
    fuses it (its default level, for the CPU), weights external again."""
    from onnxruntime.transformers import optimizer
    fused = optimizer.optimize_model(
        path, model_type="bert", num_heads=config.num_attention_heads,
        hidden_size=config.hidden_size)
    m = fused.model
    strip_provenance(m)
    onnx.save(m, path, save_as_external_data=True,
              all_tensors_to_one_file=True, location=DATA_FILE,
              size_threshold=INLINE_BYTES)


def export(model, inputs, key, exporter, opset, keep_inputs, attention,
           folder, form, optimized=False):
    default = model.config._attn_implementation
    if attention:
        model.set_attn_implementation(attention)
    try:
        if form == "kv":
            _export_decoder_step(model, exporter, opset, folder)
        else:
            _export(model, inputs, key, exporter, opset, keep_inputs, folder,
                    form == "dynamic", optimized)
    finally:
        model.set_attn_implementation(default)


def _export(model, inputs, key, exporter, opset, keep_inputs, folder,
            dynamic, optimized=False):
    model.eval()
    wrapped = Head(model, inputs, key).eval()
    args = tuple(torch.from_numpy(v) for v in inputs.values())
    path = os.path.join(folder, "model.onnx")
    options = {}
    if opset is not None:
        options["opset_version"] = opset
    if keep_inputs:
        options["keep_initializers_as_inputs"] = True
    if dynamic and exporter == "dynamo":
        # Under the config's positions; named, or the exporter writes s0.
        batch = torch.export.Dim("batch", max=16)
        sequence = torch.export.Dim(
            "sequence", max=model.config.max_position_embeddings - 1)
        # Head takes *args: one tuple for the lot.
        options["dynamic_shapes"] = (
            tuple({0: batch, 1: sequence} for _ in inputs),)
    elif dynamic:
        axes = {n: {0: "batch", 1: "sequence"} for n in list(inputs) + ["output"]}
        options["dynamic_axes"] = axes
    with torch.no_grad():
        torch.onnx.export(wrapped, args, path, input_names=list(inputs),
                          output_names=["output"],
                          dynamo=(exporter == "dynamo"), **options)
    settle(path, exporter, keep_inputs)
    if optimized:
        ort_optimize(path, model.config)
    if dynamic:
        inputs = text_inputs(*DYNAMIC_SHAPE)
        args = tuple(torch.from_numpy(v) for v in inputs.values())
        with open(os.path.join(folder, "dims"), "w") as f:
            f.write("batch=%d,sequence=%d\n" % DYNAMIC_SHAPE)
    write_oracle(path, folder, inputs, wrapped, args)


class DecoderStep(torch.nn.Module):
    """One decoding step with a KV cache, on flat tensors: (input_ids,
    attention_mask, past K and V of each layer) -> (logits, present K and V
    of each layer)."""

    def __init__(self, model):
        super().__init__()
        self.model = model
        self.layers = model.config.num_hidden_layers

    def forward(self, input_ids, attention_mask, *past):
        cache = transformers.DynamicCache(
            ddp_cache_data=[(past[2 * i], past[2 * i + 1])
                            for i in range(self.layers)],
            config=self.model.config)
        out = self.model(input_ids=input_ids, attention_mask=attention_mask,
                         past_key_values=cache, use_cache=True,
                         return_dict=True)
        present = []
        for layer in out.past_key_values.layers[:self.layers]:
            present += [layer.keys, layer.values]
        return (out.logits, *present)


def _export_decoder_step(model, exporter, opset, folder):
    model.eval()
    config = model.config
    layers = config.num_hidden_layers
    kv_heads = (getattr(config, "num_key_value_heads", None)
                or config.num_attention_heads)
    head_dim = config.hidden_size // config.num_attention_heads
    batch, new, past_len = KV_STEP
    rng = np.random.default_rng(SEED)
    inputs = {
        "input_ids": rng.integers(0, VOCAB, (batch, new), dtype=np.int64),
        "attention_mask": np.ones((batch, past_len + new), np.int64)}
    inputs["attention_mask"][-1, :2] = 0  # a left-padded row
    for layer in range(layers):
        for kv in ("key", "value"):
            inputs[f"past_key_values.{layer}.{kv}"] = rng.standard_normal(
                (batch, kv_heads, past_len, head_dim)).astype(np.float32)
    outputs = ["logits"] + [f"present.{layer}.{kv}" for layer in range(layers)
                            for kv in ("key", "value")]
    step = DecoderStep(model).eval()
    args = tuple(torch.from_numpy(v) for v in inputs.values())
    path = os.path.join(folder, "model.onnx")
    with torch.no_grad():
        if exporter == "dynamo":
            b = torch.export.Dim("batch", max=16)
            s = torch.export.Dim("sequence", max=16)
            p = torch.export.Dim("past_sequence", max=15)
            # The mask's length is past + new, which torch.export cannot be
            # told; it names that dim itself.
            shapes = ({0: b, 1: s}, {0: b, 1: torch.export.Dim.DYNAMIC},
                      tuple({0: b, 2: p} for _ in args[2:]))
            torch.onnx.export(step, args, path, input_names=list(inputs),
                              output_names=outputs, dynamic_shapes=shapes,
                              dynamo=True)
        else:
            axes = {"input_ids": {0: "batch", 1: "sequence"},
                    "attention_mask": {0: "batch", 1: "total_sequence"},
                    "logits": {0: "batch", 1: "sequence"}}
            for name in list(inputs)[2:]:
                axes[name] = {0: "batch", 2: "past_sequence"}
            for name in outputs[1:]:
                axes[name] = {0: "batch", 2: "total_sequence"}
            torch.onnx.export(step, args, path, input_names=list(inputs),
                              output_names=outputs, dynamic_axes=axes,
                              opset_version=opset, dynamo=False)
    settle(path, exporter, False)
    # The dims file: each named input dim's value in the oracle's inputs.
    dims = {}
    m = onnx.load(path, load_external_data=False)
    for info in m.graph.input:
        for axis, d in enumerate(info.type.tensor_type.shape.dim):
            if d.dim_param:
                dims[d.dim_param] = inputs[info.name].shape[axis]
    with open(os.path.join(folder, "dims"), "w") as f:
        f.write(",".join(f"{k}={v}" for k, v in dims.items()) + "\n")
    write_oracle(path, folder, inputs, lambda *a: step(*a)[0], args)


def storage(folder):
    """One line on how model.onnx stores its tensors, for the pattern and
    loader work these exports feed: what is external, what is inline."""
    m = onnx.load(os.path.join(folder, "model.onnx"), load_external_data=False)
    inits = list(m.graph.initializer)
    external = [t for t in inits
                if t.data_location == onnx.TensorProto.EXTERNAL]
    ext_bytes = sum(int({e.key: e.value for e in t.external_data}
                        .get("length", 0)) for t in external)
    keys = sorted({e.key for t in external for e in t.external_data})
    raw = sum(1 for t in inits if t.HasField("raw_data"))
    as_inputs = len({t.name for t in inits} & {i.name for i in m.graph.input})
    opset = max(o.version for o in m.opset_import
                if o.domain in ("", "ai.onnx"))
    return (f"opset {opset}; {len(inits)} initializers, {len(external)} "
            f"external ({ext_bytes} bytes, keys {','.join(keys) or '-'}), "
            f"{len(inits) - len(external)} inline ({raw} raw_data); "
            f"{as_inputs} also graph inputs")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "fresh"))
    parser.add_argument("--only", default="")
    parser.add_argument("--variants", default="",
                        help="only these variants, e.g. torchscript-dynamic")
    parser.add_argument("--max-bytes", type=int, default=900_000)
    parser.add_argument("--bert-base", action="store_true",
                        help="export a BERT-base-shaped encoder only")
    args = parser.parse_args()
    if args.bert_base:
        args.max_bytes = 1 << 40
    only = set(filter(None, args.only.split(",")))
    os.makedirs(args.out, exist_ok=True)
    print(f"torch {torch.__version__}, "
          f"transformers {transformers.__version__}, "
          f"onnxscript {_version('onnxscript')}, onnx {onnx.__version__}, "
          f"onnxruntime {ort.__version__}")
    for name, model, inputs, key in (bert_base() if args.bert_base
                                     else architectures()):
        if only and name not in only:
            continue
        print(f"{name}: attention implementation "
              f"{model.config._attn_implementation!r}")
        for (suffix, exporter, opset, keep_inputs, attention, archs,
             optimized) in VARIANTS:
            if archs is not None and name not in archs or (
                    args.bert_base and keep_inputs) or (
                    args.variants and suffix not in args.variants.split(",")):
                continue
            tag = f"{name}-{suffix}"
            form = suffix.rsplit("-", 1)[-1]
            form = form if form in ("dynamic", "kv") else ""
            # Called at once: the loop's variables are this variant's.
            written = write_export(
                args.out, tag, args.max_bytes,
                lambda staging: export(model, inputs, key, exporter, opset,
                                       keep_inputs, attention, staging, form,
                                       optimized))
            if not written:
                continue
            folder, size = written
            # mkdtemp makes the folder 0700; the committed data is not private.
            os.chmod(folder, 0o755)
            ops = sorted({n.op_type for n in onnx.load(
                os.path.join(folder, "model.onnx"),
                load_external_data=False).graph.node})
            print(f"wrote  {tag}: {size} bytes; {storage(folder)}\n"
                  f"       ops: {' '.join(ops)}")
    # An exporter that cannot handle an architecture is reported above, not
    # fatal: what was written is what the tests check.
    return 0


def _version(module):
    try:
        return __import__(module).__version__
    except ImportError:
        return "absent"


if __name__ == "__main__":
    sys.exit(main())
