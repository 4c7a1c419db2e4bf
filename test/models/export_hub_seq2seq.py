#!/usr/bin/env python3
"""Makes encoder-decoder models in the form Optimum exports them, offline.

  export_hub_seq2seq.py --optimum-python VENV/bin/python
                        [--out test/models/hub-seq2seq] [--only t5]

`optimum-cli export onnx --task text2text-generation-with-past` (T5) and
`--task automatic-speech-recognition-with-past` (Whisper) write three files:
encoder_model.onnx, decoder_model.onnx (the first step: the start token
over the encoder's output, every cache built) and decoder_with_past_model.onnx
(each later step: the self-attention cache fed back, the cross-attention
cache the first step made). A fourth, decoder_model_merged.onnx, joins the
two decoders under an `If`; Kiln refuses it, naming these two
(test/Importer/optimum-merged.test).

This script runs optimum-cli (in its own virtual environment: optimum-onnx
needs transformers below 4.58) over tiny random-weight T5 and Whisper
checkpoints saved with save_pretrained; nothing is downloaded. For each it
writes DIR/<arch>-optimum/ with one folder per file (encoder, decoder,
decoder_with_past), each holding model.onnx, `dims` (the --dim ranges it is
compiled with once) and points/<point>/{inputs,expected}/NAME.npy
(onnxruntime's outputs at three points; the decoders read the encoder's real
output), and generate.json, generate/NAME.npy and generate_logits.npy (the
encoder's input for one row, and the 32 greedy tokens of onnxruntime's loop
over the three files with the logits each was picked from). check_hub_seq2seq.py reads them.

It runs where torch, transformers and onnxruntime are installed.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnxruntime as ort

from check_hub_seq2seq import FILES, greedy

VOCAB, GENERATED, SEED = 128, 32, 7
WEIGHT_SCALE = 0.5
# Whisper's log-mel frames (twice its encoder's positions) and mel bins.
FRAMES, MELS = 64, 8
# (batch, encoder length, new decoder tokens, decoder past); Whisper's
# encoder length is its fixed FRAMES / 2.
POINTS = [(2, 7, 3, 4), (1, 5, 1, 9), (2, 12, 1, 1)]
DIMS = {
    "t5": {
        "encoder": "batch_size=1:2,encoder_sequence_length=1:16",
        "decoder": "batch_size=1:2,encoder_sequence_length=1:16,"
                   "decoder_sequence_length=1:16",
        "decoder_with_past": "batch_size=1:2,encoder_sequence_length=1:16,"
                             "decoder_sequence_length=1:16,"
                             "past_decoder_sequence_length=1:48",
    },
    "whisper": {
        "encoder": "batch_size=1:2",
        "decoder": f"batch_size=1:2,encoder_sequence_length={FRAMES // 2},"
                   "decoder_sequence_length=1:16",
        "decoder_with_past": f"batch_size=1:2,encoder_sequence_length="
                             f"{FRAMES // 2},decoder_sequence_length=1:16,"
                             "past_decoder_sequence_length=1:48",
    },
}
TASKS = {"t5": "text2text-generation-with-past",
         "whisper": "automatic-speech-recognition-with-past"}


def save_spread(model, folder):
    """Saves `model` with its weights drawn wider than its initializer's:
    at the default scale a tiny T5 gives nearly flat logits and repeats
    its start token, which would leave the numbers little to check."""
    import torch
    with torch.no_grad():
        for weight in model.parameters():
            weight.normal_(0.0, WEIGHT_SCALE)
    model.eval().save_pretrained(folder)


def save_checkpoint(arch, folder):
    import torch
    import transformers as tf
    torch.manual_seed(SEED)
    ids = dict(decoder_start_token_id=1, pad_token_id=0, eos_token_id=2)
    if arch == "t5":
        cfg = tf.T5Config(vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=64,
                          num_layers=2, num_decoder_layers=2, num_heads=4,
                          **ids)
        save_spread(tf.T5ForConditionalGeneration(cfg), folder)
        return
    cfg = tf.WhisperConfig(
        vocab_size=VOCAB, num_mel_bins=MELS, d_model=32, encoder_layers=2,
        decoder_layers=2, encoder_attention_heads=2, decoder_attention_heads=2,
        encoder_ffn_dim=64, decoder_ffn_dim=64,
        max_source_positions=FRAMES // 2, max_target_positions=64,
        bos_token_id=1, begin_suppress_tokens=None, suppress_tokens=None,
        **ids)
    save_spread(tf.WhisperForConditionalGeneration(cfg), folder)
    tf.WhisperFeatureExtractor(feature_size=MELS).save_pretrained(folder)


def build_optimum(arch, checkpoint, out, python):
    cli = os.path.join(os.path.dirname(python), "optimum-cli")
    frames = ["--nb_max_frames", str(FRAMES)] if arch == "whisper" else []
    subprocess.run([cli, "export", "onnx", "--model", checkpoint, "--task",
                    TASKS[arch], out] + frames, check=True,
                   capture_output=True)


class Files:
    """onnxruntime over the three files, each fed only the inputs it has."""

    def __init__(self, folder):
        self.sessions = {
            name: ort.InferenceSession(os.path.join(folder, file),
                                       providers=["CPUExecutionProvider"])
            for name, file in FILES.items()}

    def inputs(self, name):
        return [i.name for i in self.sessions[name].get_inputs()]

    def run(self, name, feeds):
        session = self.sessions[name]
        feeds = {k: v for k, v in feeds.items() if k in self.inputs(name)}
        outputs = [o.name for o in session.get_outputs()]
        return feeds, dict(zip(outputs, session.run(None, feeds)))


def save(folder, arrays):
    os.makedirs(folder, exist_ok=True)
    for name, value in arrays.items():
        np.save(os.path.join(folder, name + ".npy"), value)


def encoder_feeds(arch, rng, batch, length):
    if arch == "whisper":
        return {"input_features": rng.standard_normal(
            (batch, MELS, FRAMES)).astype(np.float32)}
    mask = np.ones((batch, length), np.int64)
    if batch > 1:
        mask[1, -2:] = 0  # a padded source
    return {"input_ids": rng.integers(3, VOCAB, (batch, length)),
            "attention_mask": mask}


def write_oracle(arch, files, model_dir):
    rng = np.random.default_rng(SEED)
    for batch, source, sequence, past in POINTS:
        first = encoder_feeds(arch, rng, batch, source)
        feeds, encoded = files.run("encoder", first)
        hidden = encoded["last_hidden_state"]
        context = {"encoder_hidden_states": hidden,
                   "input_ids": rng.integers(3, VOCAB, (batch, sequence))}
        if "attention_mask" in first:
            context["encoder_attention_mask"] = first["attention_mask"]
        for cache in files.sessions["decoder_with_past"].get_inputs():
            if cache.name.startswith("past_key_values"):
                length = past if ".decoder." in cache.name else hidden.shape[1]
                context[cache.name] = rng.standard_normal(
                    (batch, cache.shape[1], length, cache.shape[3])
                ).astype(np.float32)
        runs = {"encoder": (feeds, encoded)}
        for name in ("decoder", "decoder_with_past"):
            runs[name] = files.run(name, context)
        for name, (inputs, outputs) in runs.items():
            point = os.path.join(model_dir, name, "points",
                                 f"B{batch}-E{source}-S{sequence}-P{past}")
            save(os.path.join(point, "inputs"), inputs)
            save(os.path.join(point, "expected"), outputs)
    prompt = encoder_feeds(arch, rng, 1, 9)
    save(os.path.join(model_dir, "generate"), prompt)
    tokens, logits = greedy(lambda name, feeds: files.run(name, feeds)[1],
                            prompt, start=1, count=GENERATED)
    np.save(os.path.join(model_dir, "generate_logits.npy"), logits)
    with open(os.path.join(model_dir, "generate.json"), "w") as f:
        json.dump({"start": 1, "tokens": tokens}, f)
        f.write("\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "hub-seq2seq"))
    parser.add_argument("--optimum-python", required=True,
                        help="the interpreter of optimum-onnx's environment")
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    failed = 0
    with tempfile.TemporaryDirectory(prefix="kiln-hub-seq2seq-") as work:
        for arch in ("t5", "whisper"):
            if args.only and args.only not in arch:
                continue
            checkpoint, built = (os.path.join(work, arch + d)
                                 for d in ("", "-onnx"))
            save_checkpoint(arch, checkpoint)
            try:
                build_optimum(arch, checkpoint, built, args.optimum_python)
            except subprocess.CalledProcessError as e:
                print(f"FAIL {arch}: {e.stderr.decode()[-2000:]}")
                failed += 1
                continue
            model_dir = os.path.join(args.out, f"{arch}-optimum")
            shutil.rmtree(model_dir, ignore_errors=True)
            for name, file in FILES.items():
                os.makedirs(os.path.join(model_dir, name))
                shutil.copy(os.path.join(built, file),
                            os.path.join(model_dir, name, "model.onnx"))
                with open(os.path.join(model_dir, name, "dims"), "w") as f:
                    f.write(DIMS[arch][name] + "\n")
            write_oracle(arch, Files(built), model_dir)
            print(f"wrote {model_dir}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
