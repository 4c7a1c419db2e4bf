"""The models bench/ measures, built from transformers configs with random
weights (the GPU machine reaches no network), and their ONNX exports.

Each case is one (model, shape), the end-to-end issue's list: BERT-base at
batch 1, 8 and 32 over 128 and 384 tokens; ViT-B/16 at batch 1 and 32; a
GPT-2 medium decode step (one new token after 512 and after 1000, the KV
cache as inputs and outputs); a TinyLlama-width LLaMA at its full depth (22
layers, hidden 2048, 32 query heads over 4 key/value heads, rotary
embeddings) decoding one token at batch 1 and 8 after 1024, and its
prefill of 2048 tokens (the hidden states out: no LM head, whose GEMM would
dwarf the layers). Cases are grouped in sections (`section`), each meant
to end inside one device call of the lent machine: run.py --cases takes a
section's name as well as a case's. `--dry-run` shrinks every case to a
few layers of width 64, so the whole harness runs on the host backend in
seconds.
"""
import dataclasses
import os
import re
import sys

import numpy as np

SEED = 0
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclasses.dataclass
class Case:
    name: str
    family: str          # bert, gpt2-decode, vit, llama or llama-decode
    batch: int
    seq: int             # tokens per run (new tokens for a decode step)
    past: int = 0        # decode: tokens already in the KV cache
    image: int = 224
    layers: int = 0      # llama: hidden layers (0: the family's default)
    section: str = ""    # the group of cases one device call measures
    # An existing export's folder (run.py --onnx) and its dims' values.
    source: str = ""
    dims: str = ""
    # A decoding step compiled with its KV cache in place (in_place_cache).
    cache_in_place: bool = False
    # Filled by build(): the torch module, its inputs and their names.
    module: object = None
    inputs: dict = None
    output_names: list = None


def cases(dry_run):
    """The cases to measure; small versions of the same ones for a dry run."""
    if dry_run:
        return [Case("bert-b1-s16", "bert", 1, 16, section="bert"),
                Case("bert-b4-s16", "bert", 4, 16, section="bert"),
                Case("gpt2-decode-p8", "gpt2-decode", 1, 1, past=8,
                     section="gpt2"),
                Case("vit-b1", "vit", 1, 0, image=32, section="vit"),
                Case("vit-b4", "vit", 4, 0, image=32, section="vit"),
                Case("llama-decode-b2-p8", "llama-decode", 2, 1, past=8,
                     section="llama")]
    bert = [Case(f"bert-base-b{b}-s{s}", "bert", b, s, section="bert")
            for s in (128, 384) for b in (1, 8, 32)]
    return bert + [
        Case("vit-base-b1", "vit", 1, 0, section="vit"),
        Case("vit-base-b32", "vit", 32, 0, section="vit"),
        Case("gpt2-medium-decode-p512", "gpt2-decode", 1, 1, past=512,
             section="gpt2"),
        Case("gpt2-medium-decode-p1000", "gpt2-decode", 1, 1, past=1000,
             section="gpt2"),
        Case("llama-22l-decode-b1-p1024", "llama-decode", 1, 1, past=1024,
             layers=22, section="llama"),
        Case("llama-22l-decode-b8-p1024", "llama-decode", 8, 1, past=1024,
             layers=22, section="llama"),
        Case("llama-22l-prefill-s2048", "llama", 1, 2048, layers=22,
             section="llama-prefill"),
        # Two of its layers: a prefill that fits one device call beside the
        # others (scripts/gpu_check.sh's bench-llama).
        Case("llama-2l-prefill-s2048", "llama", 1, 2048, layers=2,
             section="llama-prefill-2l")]


def _config(case, dry_run):
    import transformers
    small = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                 intermediate_size=128)
    if case.family == "bert":
        return transformers.BertConfig(**(small if dry_run else {}),
                                       attn_implementation="sdpa")
    if case.family in ("llama", "llama-decode"):
        if dry_run:
            return transformers.LlamaConfig(
                hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, intermediate_size=128, vocab_size=512,
                use_cache=case.family == "llama-decode",
                attn_implementation="sdpa")
        # TinyLlama-1.1B's widths and depth.
        return transformers.LlamaConfig(
            hidden_size=2048, num_hidden_layers=case.layers or 22,
            num_attention_heads=32, num_key_value_heads=4,
            intermediate_size=5632, vocab_size=32000,
            max_position_embeddings=max(2048, case.seq + case.past),
            use_cache=case.family == "llama-decode",
            attn_implementation="sdpa")
    if case.family == "vit":
        extra = dict(image_size=case.image, patch_size=8) if dry_run else {}
        return transformers.ViTConfig(**(small if dry_run else {}), **extra,
                                      attn_implementation="sdpa")
    if dry_run:
        return transformers.GPT2Config(n_embd=64, n_layer=2, n_head=4,
                                       vocab_size=512,
                                       attn_implementation="sdpa")
    # GPT-2 medium.
    return transformers.GPT2Config(n_embd=1024, n_layer=24, n_head=16,
                                   attn_implementation="sdpa")


def _decode_step(model):
    """A causal LM as one decoding step on flat tensors: (input_ids,
    attention_mask, past K and V of each layer) -> (logits, present K and V
    of each layer): the wrapper the test exports use (test/models), imported
    here rather than at the top so that the harness runs on exports without
    torch."""
    sys.path.insert(0, os.path.join(REPO, "test", "models"))
    from export_fresh import DecoderStep
    return DecoderStep(model).eval()


def build(case, dry_run):
    """Fills case.module, case.inputs (name -> numpy) and case.output_names."""
    import torch
    import transformers
    torch.manual_seed(SEED)
    rng = np.random.default_rng(SEED)
    config = _config(case, dry_run)
    if case.family == "bert":
        case.module = _pick_output(transformers.BertModel(config).eval(),
                               "last_hidden_state")
        case.inputs = {
            "input_ids": rng.integers(0, config.vocab_size,
                                      (case.batch, case.seq), dtype=np.int64),
            "attention_mask": np.ones((case.batch, case.seq), np.int64)}
        case.output_names = ["last_hidden_state"]
    elif case.family == "llama":
        case.module = _pick_output(transformers.LlamaModel(config).eval(),
                                   "last_hidden_state")
        case.inputs = {"input_ids": rng.integers(
            0, config.vocab_size, (case.batch, case.seq), dtype=np.int64)}
        case.output_names = ["last_hidden_state"]
    elif case.family == "vit":
        case.module = _pick_output(transformers.ViTModel(config).eval(),
                               "last_hidden_state")
        case.inputs = {"pixel_values": rng.standard_normal(
            (case.batch, 3, config.image_size, config.image_size)).astype(
                np.float32)}
        case.output_names = ["last_hidden_state"]
    else:
        if case.family == "llama-decode":
            model = transformers.LlamaForCausalLM(config).eval()
            heads = config.num_key_value_heads
            layers = config.num_hidden_layers
            head_dim = config.hidden_size // config.num_attention_heads
        else:
            model = transformers.GPT2LMHeadModel(config).eval()
            heads, layers = config.n_head, config.n_layer
            head_dim = config.n_embd // heads
        case.module = _decode_step(model)
        case.inputs = {
            "input_ids": rng.integers(0, config.vocab_size,
                                      (case.batch, case.seq), dtype=np.int64),
            "attention_mask": np.ones((case.batch, case.past + case.seq),
                                      np.int64)}
        for layer in range(layers):
            for kv in ("key", "value"):
                case.inputs[f"past.{layer}.{kv}"] = rng.standard_normal(
                    (case.batch, heads, case.past, head_dim)).astype(
                        np.float32)
        case.output_names = ["logits"] + [
            f"present.{layer}.{kv}" for layer in range(layers)
            for kv in ("key", "value")]


def _pick_output(model, name):
    """A transformers model as a module returning its output `name`."""
    import torch

    class Pick(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, *args):
            return getattr(self.model(*args, return_dict=True), name)

    return Pick().eval()


def in_place_cache(case, model_path):
    """Makes a decoding step's Kiln build the form a decoding loop runs: its
    KV cache kept in place (kilnc --kv-cache-in-place), one buffer for each
    past and its present, into which the step writes only its new rows,
    where the concat form copies the whole cache into a new present every
    step. Applies to an export whose past inputs (named past...) have a
    named length (dim 2) and whose attention_mask's length is named: sets
    case.dims to that length as a range up to the case's past (the cache's
    capacity is then past + new tokens: the present the peers return), the
    mask's length as past + new, and every other named dim pinned to its
    value in the case's inputs. Returns whether it applies."""
    import onnx
    model = onnx.load(model_path, load_external_data=False)
    named = {}
    for info in model.graph.input:
        for axis, d in enumerate(info.type.tensor_type.shape.dim):
            if d.dim_param:
                named.setdefault(d.dim_param, (info.name, axis))
    past = next((n for n, (i, a) in named.items()
                 if i.startswith("past") and a == 2), None)
    total = next((n for n, (i, a) in named.items()
                  if i == "attention_mask" and a == 1), None)
    if not past or not total or "input_ids" not in case.inputs:
        return False
    past_len = case.inputs[named[past][0]].shape[2]
    new = case.inputs["input_ids"].shape[1]
    dims = [f"{past}=0:{past_len}"]
    # The mask's length as past + new, where the exporter named it apart
    # (an expression of the past's name needs no statement).
    if re.fullmatch(r"[A-Za-z_]\w*", total) and total != past:
        dims.append(f"{total}={past}+{new}")
    dims += [f"{n}={case.inputs[i].shape[a]}" for n, (i, a) in named.items()
             if n not in (past, total)]
    case.dims = ",".join(dims)
    case.cache_in_place = True
    return True


def kiln_inputs(case):
    """case's inputs as its Kiln build takes them: with the cache in place
    (in_place_cache), each past padded with zeros to its capacity, the rows
    the step writes; the same arrays otherwise."""
    if not case.cache_in_place:
        return case.inputs
    new = case.inputs["input_ids"].shape[1]
    padded = {}
    for name, value in case.inputs.items():
        if name.startswith("past"):
            pad = [(0, 0)] * value.ndim
            pad[2] = (0, new)
            value = np.pad(value, pad)
        padded[name] = value
    return padded


def save_inputs(case, folder):
    """Writes case's inputs as Kiln takes them (kiln_inputs) to
    FOLDER/inputs/NAME.npy, where kiln-run reads them."""
    os.makedirs(os.path.join(folder, "inputs"), exist_ok=True)
    for name, value in kiln_inputs(case).items():
        np.save(os.path.join(folder, "inputs", name + ".npy"), value)


def export(case, folder, exporter):
    """Writes case's model to FOLDER/model.onnx (weights as external data)
    and its inputs to FOLDER/inputs/NAME.npy. Shapes are static but for a
    decoding step's cache length (its past's and the mask's), which its
    build keeps in place (in_place_cache)."""
    import torch
    path = os.path.join(folder, "model.onnx")
    args = tuple(torch.from_numpy(v) for v in case.inputs.values())
    names = list(case.inputs)
    decode = case.family.endswith("-decode")
    with torch.no_grad():
        if exporter == "dynamo":
            shapes = None
            if decode:
                # The mask's length is past + new, which torch.export cannot
                # be told; it names that dim itself.
                past = torch.export.Dim("past_sequence",
                                        max=max(case.past, 2) * 2)
                shapes = ({}, {1: torch.export.Dim.DYNAMIC},
                          tuple({2: past} for _ in args[2:]))
            program = torch.onnx.export(case.module, args, dynamo=True,
                                        input_names=names,
                                        output_names=case.output_names,
                                        dynamic_shapes=shapes)
            program.save(path, external_data=True)
        else:
            axes = None
            if decode:
                axes = {"attention_mask": {1: "total_sequence"}}
                axes.update({n: {2: "past_sequence"} for n in names[2:]})
                axes.update({n: {2: "total_sequence"}
                             for n in case.output_names[1:]})
            torch.onnx.export(case.module, args, path, dynamo=False,
                              input_names=names,
                              output_names=case.output_names,
                              dynamic_axes=axes, opset_version=17)
            import onnx
            model = onnx.load(path)
            onnx.save(model, path, save_as_external_data=True,
                      location="model.onnx.data")
    if decode and not in_place_cache(case, path):
        sys.exit(f"{case.name}: the export names no cache length to keep "
                 "in place")
    save_inputs(case, folder)
    return path
