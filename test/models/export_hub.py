#!/usr/bin/env python3
"""Makes decoder LLMs in the forms the hub ships them, offline.

  export_hub.py --optimum-python VENV/bin/python [--out test/models/hub]
                [--only llama,genai]

Most users of an ONNX language model do not export it themselves: they take
one that onnxruntime-genai's model builder made (GroupQueryAttention,
SimplifiedLayerNormalization, SkipSimplifiedLayerNormalization, a KV cache
whose head size is a named dim) or one that Hugging Face Optimum made
(`optimum-cli export onnx --task text-generation-with-past`: plain ONNX ops,
positions computed from the past length, dims named by expressions such as
`past_sequence_length + sequence_length`). This script makes both, as a user
would, over tiny random-weight LLaMA, Qwen2, Qwen3, Gemma, Phi-3 and GPT-2 checkpoints
saved with save_pretrained (a word-level tokenizer made with `tokenizers`
beside each, which the builder needs); nothing is downloaded.

  genai-fp32, genai-fp16: onnxruntime_genai.models.builder -p fp32 -e cpu and
      -p fp16 -e cuda (the GPU form) for LLaMA, Qwen2 and Phi-3 (the builder
      has no GPT-2);
  genai-int4, genai-int8, genai-int4-asym, genai-int4-fp16: its weight-only
      quantized forms (MatMulNBits: int4 and int8 weights with fp32
      activations for LLaMA, unsigned int4 with zero points for Phi-3, int4
      with fp16 activations for LLaMA and for a Qwen2 whose embedding is
      tied to its LM head, which the builder writes as one packed table
      that a GatherBlockQuantized reads too); onnxruntime, the oracle, runs
      their matmuls exactly (exact_session);
  Qwen3's CUDA forms (genai-int4-fp16) fold its per-head Q/K norms into
      GroupQueryAttention (q_norm_weight, k_norm_weight), which
      onnxruntime's CPU kernel refuses: their oracle is the builder's
      unfused form of the same checkpoint (--extra_options
      fuse_qk_norm_gqa=false: the norms as SimplifiedLayerNormalization);
  optimum: optimum-cli in its own virtual environment (optimum-onnx needs
      transformers below 4.58; --optimum-python names its interpreter) for
      all four.

This script runs where torch, transformers and onnxruntime-genai are
installed. For each model it writes DIR/<arch>-<form>/ with model.onnx and
model.onnx.data, `dims` (the --dim ranges it is compiled with once),
points/B<b>-P<p>-S<s>/{inputs,expected}/NAME.npy (onnxruntime's outputs at
three (batch, past, new tokens) points: a first prompt of two rows, one
right-padded; one token after a past in two rows; several tokens after a
past) and generate.json (a prompt and the 32 greedy tokens of onnxruntime's
own loop over the same model: the prompt, then one token a step with the
presents fed back as the pasts). check_hub_decoders.py reads them.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort

VOCAB, HIDDEN, FFN, LAYERS, HEADS, KV_HEADS = 128, 32, 64, 2, 2, 1
HEAD_SIZE = HIDDEN // HEADS
CONTEXT = 64
# (batch, past, new tokens); onnxruntime's GroupQueryAttention takes several
# new tokens after a past for one row only.
POINTS = [(2, 0, 6), (2, 5, 1), (1, 9, 4)]
PROMPT = [1, 5, 9, 33]
GENERATED = 32
SEED = 7


def config(arch):
    """A tiny transformers config of `arch`; ids 0 to 2 are pad, bos, eos.
    `qwen2-tied` ties the embedding and the LM head (as Qwen2.5's small
    models and Llama 3.2 do), which the builder's int4 forms quantize into
    one table read by a GatherBlockQuantized and a MatMulNBits."""
    import transformers as tf
    ids = dict(pad_token_id=0, bos_token_id=1, eos_token_id=2)
    if arch == "qwen2-tied":
        arch = "qwen2"
        ids["tie_word_embeddings"] = True
    if arch == "gpt2":
        return tf.GPT2Config(vocab_size=VOCAB, n_embd=HIDDEN, n_layer=LAYERS,
                             n_head=HEADS, n_positions=CONTEXT, **ids)
    if arch == "phi3":
        # The builder takes a context longer than the original one for
        # Phi-3's LongRoPE form, which needs its scaling factors.
        ids["original_max_position_embeddings"] = CONTEXT
    if arch in ("qwen3", "gemma"):
        # Qwen3 normalizes each head's queries and keys (an RMSNorm of
        # head_dim features); Gemma scales the embedding, adds 1 to its
        # RMSNorm weights and uses GELU (tanh).
        ids["head_dim"] = HEAD_SIZE
    cls = {"llama": tf.LlamaConfig, "qwen2": tf.Qwen2Config,
           "phi3": tf.Phi3Config, "qwen3": tf.Qwen3Config,
           "gemma": tf.GemmaConfig}[arch]
    return cls(vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=FFN,
               num_hidden_layers=LAYERS, num_attention_heads=HEADS,
               num_key_value_heads=KV_HEADS,
               max_position_embeddings=CONTEXT, **ids)


def save_checkpoint(arch, folder):
    """A random-weight checkpoint of `arch` and a word-level tokenizer."""
    import torch
    import transformers as tf
    from tokenizers import Tokenizer, models, pre_tokenizers
    torch.manual_seed(SEED)
    model = tf.AutoModelForCausalLM.from_config(config(arch)).eval()
    model.save_pretrained(folder)
    vocab = {f"t{i}": i for i in range(VOCAB)}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="t0"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tf.PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="t0",
                               pad_token="t0", bos_token="t1",
                               eos_token="t2").save_pretrained(folder)


# The builder's arguments for each genai form: fp32 and int4/int8 weights
# for the CPU (fp32 activations), fp16 and int4 for CUDA (fp16 activations);
# -asym quantizes to unsigned values with zero points.
GENAI_FORMS = {
    "genai-fp32": ["-p", "fp32", "-e", "cpu"],
    "genai-fp16": ["-p", "fp16", "-e", "cuda"],
    "genai-int4": ["-p", "int4", "-e", "cpu"],
    "genai-int8": ["-p", "int8", "-e", "cpu"],
    "genai-int4-asym": ["-p", "int4", "-e", "cpu", "--extra_options",
                        "is_symmetric=false"],
    "genai-int4-fp16": ["-p", "int4", "-e", "cuda"],
}


# For the CUDA forms of a model with per-head Q/K norms (Qwen3), the
# builder folds the norms into GroupQueryAttention (q_norm_weight,
# k_norm_weight), which onnxruntime's CPU kernel refuses. The oracle then
# runs the builder's unfused form of the same checkpoint (the norms as
# SimplifiedLayerNormalization nodes), the same arithmetic.
QK_NORM_ARCHS = ("qwen3",)


def build_genai(checkpoint, out, form, unfused=False):
    args = list(GENAI_FORMS[form])
    if unfused and "--extra_options" in args:
        args[args.index("--extra_options") + 1] += " fuse_qk_norm_gqa=false"
    elif unfused:
        args += ["--extra_options", "fuse_qk_norm_gqa=false"]
    subprocess.run([sys.executable, "-m", "onnxruntime_genai.models.builder",
                    "-i", checkpoint, "-o", out] + args,
                   check=True, capture_output=True)


def needs_unfused_oracle(arch, form):
    return arch in QK_NORM_ARCHS and "cuda" in GENAI_FORMS.get(form, [])


def build_optimum(checkpoint, out, python):
    cli = os.path.join(os.path.dirname(python), "optimum-cli")
    subprocess.run([cli, "export", "onnx", "--model", checkpoint, "--task",
                    "text-generation-with-past", out], check=True,
                   capture_output=True)


def dims_of(form):
    """The --dim ranges the model is compiled with: the past and the new
    tokens together within the rotary tables' CONTEXT rows."""
    if form.startswith("genai"):
        return ("batch_size=1:2,sequence_length=1:16,"
                "past_sequence_length=0:48,"
                "total_sequence_length=past_sequence_length+sequence_length,"
                f"kv_cache_dim={HEAD_SIZE}")
    return "batch_size=1:2,sequence_length=1:16,past_sequence_length=0:48"


def exact_session(path):
    """onnxruntime over the model at `path` as written: its graph rewrites
    off (export_quantized.py's exact_session says why; over these models
    they moved Optimum's outputs by at most 9e-8 and no token), and its
    quantized matmuls made exact: MatMulNBits' accuracy_level 0 (the
    builder asks for int8 activations, which onnxruntime's CPU kernel then
    uses) and onnxruntime's own fused forms of them off."""
    model = onnx.load(path)
    for node in model.graph.node:
        if node.op_type == "MatMulNBits":
            for attr in node.attribute:
                if attr.name == "accuracy_level":
                    attr.i = 0
    options = ort.SessionOptions()
    options.add_session_config_entry(
        "session.qdq_matmulnbits_accuracy_level", "1")
    options.add_session_config_entry("session.disable_quant_qdq", "1")
    options.graph_optimization_level = (
        ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    return ort.InferenceSession(model.SerializeToString(), options,
                                providers=["CPUExecutionProvider"])


class Session:
    """onnxruntime over one exported model, fed as each hub tool's runtime
    feeds it."""

    def __init__(self, path):
        self.session = exact_session(path)
        self.inputs = {i.name: i for i in self.session.get_inputs()}
        self.outputs = [o.name for o in self.session.get_outputs()]
        self.pasts = [n for n in self.inputs if n.startswith("past_key_values")]
        past_type = self.inputs[self.pasts[0]].type
        self.float = np.float16 if "float16" in past_type else np.float32
        self.kv_heads = self.inputs[self.pasts[0]].shape[1]

    def feeds(self, ids, mask, past):
        """The inputs for token `ids` [B, S] after `past` (name -> array)."""
        batch, sequence = ids.shape
        length = next(iter(past.values())).shape[2]
        feeds = {"input_ids": ids, "attention_mask": mask, **past}
        if "position_ids" in self.inputs:
            positions = np.arange(length, length + sequence, dtype=np.int64)
            feeds["position_ids"] = np.tile(positions, (batch, 1))
        return {k: v for k, v in feeds.items() if k in self.inputs}

    def empty_past(self, batch, length, rng=None):
        shape = (batch, self.kv_heads, length, HEAD_SIZE)
        return {n: (rng.standard_normal(shape) if rng else np.zeros(shape))
                .astype(self.float) for n in self.pasts}

    def run(self, feeds):
        return dict(zip(self.outputs, self.session.run(None, feeds)))

    def greedy(self, prompt, count):
        """onnxruntime's loop: the prompt, then one token a step."""
        past = self.empty_past(1, 0)
        new, tokens = list(prompt), []
        for _ in range(count):
            length = next(iter(past.values())).shape[2]
            ids = np.array([new], np.int64)
            mask = np.ones((1, length + len(new)), np.int64)
            result = self.run(self.feeds(ids, mask, past))
            token = int(np.argmax(result["logits"][0, -1]))
            tokens.append(token)
            new = [token]
            past = {n: result[n.replace("past_key_values", "present")]
                    for n in self.pasts}
        return tokens


def save(folder, arrays):
    os.makedirs(folder, exist_ok=True)
    for name, value in arrays.items():
        np.save(os.path.join(folder, name + ".npy"), value)


def write_oracle(model_dir, form, oracle_model=None):
    """onnxruntime's outputs over the model of `model_dir`, or over
    `oracle_model`, another form of the same arithmetic."""
    session = Session(oracle_model or os.path.join(model_dir, "model.onnx"))
    rng = np.random.default_rng(SEED)
    for batch, past, sequence in POINTS:
        ids = rng.integers(3, VOCAB, (batch, sequence)).astype(np.int64)
        mask = np.ones((batch, past + sequence), np.int64)
        if past == 0 and batch > 1:
            mask[1, -2:] = 0  # a right-padded prompt
        feeds = session.feeds(ids, mask, session.empty_past(batch, past, rng))
        point = os.path.join(model_dir, "points",
                             f"B{batch}-P{past}-S{sequence}")
        save(os.path.join(point, "inputs"), feeds)
        save(os.path.join(point, "expected"), session.run(feeds))
    with open(os.path.join(model_dir, "dims"), "w") as f:
        f.write(dims_of(form) + "\n")
    with open(os.path.join(model_dir, "generate.json"), "w") as f:
        json.dump({"prompt": PROMPT,
                   "tokens": session.greedy(PROMPT, GENERATED)}, f)
        f.write("\n")


def keep_model_files(built, model_dir):
    """The model and its weights only (the hub tools also write configs and
    tokenizers, which Kiln does not read)."""
    os.makedirs(model_dir, exist_ok=True)
    for name in ("model.onnx", "model.onnx.data"):
        if os.path.exists(os.path.join(built, name)):
            shutil.copy(os.path.join(built, name), model_dir)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "hub"))
    parser.add_argument("--optimum-python", required=True,
                        help="the interpreter of optimum-onnx's environment")
    parser.add_argument("--only", default="",
                        help="comma-separated parts of model names to make")
    args = parser.parse_args()
    wanted = [w for w in args.only.split(",") if w]
    forms = [("llama", "genai-fp32"), ("llama", "genai-fp16"),
             ("qwen2", "genai-fp32"), ("qwen2", "genai-fp16"),
             ("phi3", "genai-fp32"), ("phi3", "genai-fp16"),
             ("llama", "genai-int4"), ("llama", "genai-int8"),
             ("llama", "genai-int4-fp16"), ("phi3", "genai-int4-asym"),
             ("qwen2-tied", "genai-int4-fp16"),
             ("qwen3", "genai-fp32"), ("qwen3", "genai-int4-fp16"),
             ("gemma", "genai-fp32"),
             ("llama", "optimum"), ("qwen2", "optimum"),
             ("phi3", "optimum"), ("gpt2", "optimum")]
    failed = 0
    with tempfile.TemporaryDirectory(prefix="kiln-hub-") as work:
        for arch, form in forms:
            name = f"{arch}-{form}"
            if wanted and not any(w in name for w in wanted):
                continue
            checkpoint = os.path.join(work, arch)
            if not os.path.isdir(checkpoint):
                save_checkpoint(arch, checkpoint)
            built = os.path.join(work, name)
            try:
                if form == "optimum":
                    build_optimum(checkpoint, built, args.optimum_python)
                else:
                    build_genai(checkpoint, built, form)
            except subprocess.CalledProcessError as e:
                print(f"FAIL {name}: {e.stderr.decode()[-2000:]}")
                failed += 1
                continue
            oracle = None
            if needs_unfused_oracle(arch, form):
                twin = built + "-unfused"
                build_genai(checkpoint, twin, form, unfused=True)
                oracle = os.path.join(twin, "model.onnx")
            model_dir = os.path.join(args.out, name)
            shutil.rmtree(model_dir, ignore_errors=True)
            keep_model_files(built, model_dir)
            write_oracle(model_dir, form, oracle)
            print(f"wrote {model_dir}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
