#!/usr/bin/env python3
"""Kiln models served by a real Triton server through libtriton_kiln.so.

  check_triton_server.py --kilnc BIN --kiln-run BIN --backend LIB
                         [--work DIR]

Run with build/venv-triton's Python (scripts/setup.sh installs tritonserver
from nvidia-pytriton and tritonclient there). The repository holds a
BERT-style encoder (symbolic batch and sequence, its configuration naming
only the backend, batch size and batching delay), a LLaMA decoder step from
onnxruntime-genai's builder (KV cache inputs; a configuration naming only
the backend and two KIND_CPU instances), the encoder's model.onnx compiled
by the backend with a `dims` parameter, an unloadable artifact and a
configuration that asks for more batch than the model has, models whose
configurations or files cannot load (no model file, compiler options with a
.so, an unknown or malformed parameter (dims, weights), padding along a dim
the model lacks), and the encoder
again, its requests of different lengths padded into one run, once with a
valid padding configuration and once padding the batch dim. The server runs
on free loopback ports, on the host backend, and is always stopped.

Checks:
- the configurations are completed from the artifacts (tensors, dims,
  max_batch_size from the batch dim's range) and the two bad models fail to
  load with their causes named, while the others serve;
- 72 concurrent requests of mixed batch sizes and lengths, half over HTTP
  and half over gRPC, each output equal to kiln-run's on the same inputs
  (bit for bit: a row's arithmetic does not depend on the rows beside it);
- the statistics show runs that batched more than one request; with the
  configuration's pad_dim and pad_mask, requests of both lengths run
  together, padded, each output within the fp32 contract of kiln-run's;
- a wrong data type, a wrong shape, inputs that disagree, a missing input,
  a token id past the table (batched with good requests, which succeed) and
  a request to the unloadable model each get a clean error naming the
  cause, and the next request succeeds;
- unloading and loading the encoder again thirty times serves the same
  outputs, and the last twenty grow the server's memory by less than one
  copy of the model's artifact.

Exit code 1 on any failure.
"""
import argparse
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading

import numpy as np

from triton_server import add_model, backend_directory, running_server

import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from oracle import run_with_inputs  # noqa: E402 (triton_server adds its path)

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(HERE, "..", "models")
ENCODER = os.path.join(MODELS, "fresh", "bert-torchscript-dynamic")
ENCODER_DIMS = "batch=1:8,sequence=1:16"
ONNX_DIMS = "batch=1:4,sequence=1:16"
DECODER = os.path.join(MODELS, "hub", "llama-genai-fp32")
DECODER_DIMS = ("batch_size=1:8,sequence_length=1:16,past_sequence_length=0:48,"
                "total_sequence_length=past_sequence_length+sequence_length,"
                "kv_cache_dim=16")
ENCODER_VOCAB = 96
DECODER_VOCAB = 128
LAYERS, KV_HEADS, HEAD = 2, 1, 16

failures = []


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        failures.append(what)


def encoder_feeds(rng, batch, sequence):
    ids = rng.integers(0, ENCODER_VOCAB, (batch, sequence), dtype=np.int64)
    mask = np.ones((batch, sequence), np.int64)
    mask[0, sequence - 2:] = 0  # a padded row
    return {"input_ids": ids, "attention_mask": mask}


def decoder_feeds(rng, batch, past, sequence):
    feeds = {
        "input_ids": rng.integers(0, DECODER_VOCAB, (batch, sequence),
                                  dtype=np.int64),
        "attention_mask": np.ones((batch, past + sequence), np.int64)}
    for layer in range(LAYERS):
        for kind in ("key", "value"):
            feeds[f"past_key_values.{layer}.{kind}"] = rng.standard_normal(
                (batch, KV_HEADS, past, HEAD)).astype(np.float32)
    return feeds


def kiln_run_outputs(kiln_run, model, feeds, work, extra=()):
    """kiln-run's outputs of `model` (on the host backend) on `feeds`."""
    out = tempfile.mkdtemp(dir=work)
    result = run_with_inputs([kiln_run, model, "--backend=host",
                              f"--output-dir={out}", *extra], feeds,
                             os.path.join(out, "in"))
    if result.returncode != 0:
        raise RuntimeError(f"kiln-run {model}: {result.stderr.strip()}")
    return {f[:-4]: np.load(os.path.join(out, f))
            for f in os.listdir(out) if f.endswith(".npy")}


def infer(server, protocol, model, feeds, outputs):
    """One request; returns the outputs by name."""
    module = httpclient if protocol == "http" else grpcclient
    client = module.InferenceServerClient(
        server.http if protocol == "http" else server.grpc)
    inputs = []
    for name, value in feeds.items():
        dtype = {np.int64: "INT64", np.float32: "FP32",
                 np.int32: "INT32"}[value.dtype.type]
        i = module.InferInput(name, list(value.shape), dtype)
        i.set_data_from_numpy(value)
        inputs.append(i)
    requested = [module.InferRequestedOutput(n) for n in outputs]
    result = client.infer(model, inputs, outputs=requested)
    return {n: result.as_numpy(n) for n in outputs}


def expect_error(server, model, feeds, outputs, words, what):
    """A request that must fail with an error containing `words`."""
    try:
        infer(server, "http", model, feeds, outputs)
        check(False, f"{what}: no error")
    except InferenceServerException as e:
        text = str(e)
        check(all(w in text for w in words), f"{what}: {text}")


def build_repository(args, work):
    repository = os.path.join(work, "repository")
    encoder_so = os.path.join(work, "encoder.so")
    decoder_so = os.path.join(work, "decoder.so")
    for model, dims, out in ((ENCODER, ENCODER_DIMS, encoder_so),
                             (DECODER, DECODER_DIMS, decoder_so)):
        subprocess.run([args.kilnc, os.path.join(model, "model.onnx"),
                        "-o", out, f"--dim={dims}", "-q"], check=True)
    add_model(repository, "bert", 'backend: "kiln"\nmax_batch_size: 8\n'
              'dynamic_batching { max_queue_delay_microseconds: 100000 }\n'
              'instance_group [{ kind: KIND_CPU }]\n', {"model.so": encoder_so})
    add_model(repository, "decoder", 'backend: "kiln"\n'
              'dynamic_batching { max_queue_delay_microseconds: 100000 }\n'
              'instance_group [{ kind: KIND_CPU, count: 2 }]\n',
              {"model.so": decoder_so})
    # Copies, not links: external data is read only from inside the
    # model's folder.
    add_model(repository, "bert_onnx", 'backend: "kiln"\n'
              'parameters { key: "dims" value: { string_value: "'
              + ONNX_DIMS + '" } }\ninstance_group [{ kind: KIND_CPU }]\n', {})
    for file in ("model.onnx", "model.onnx.data"):
        shutil.copy(os.path.join(ENCODER, file),
                    os.path.join(repository, "bert_onnx", "1", file))
    add_model(repository, "broken", 'backend: "kiln"\n', {})
    with open(os.path.join(repository, "broken", "1", "model.so"), "wb") as f:
        f.write(b"\x7fELF not a Kiln artifact" * 64)
    add_model(repository, "bad_batch", 'backend: "kiln"\nmax_batch_size: 64\n',
              {"model.so": encoder_so})
    pad = ('parameters { key: "pad_dim" value: { string_value: "%s" } }\n'
           'parameters { key: "pad_mask" value: { string_value: '
           '"attention_mask" } }\n')
    add_model(repository, "bert_padded", 'backend: "kiln"\n'
              'dynamic_batching { max_queue_delay_microseconds: 2000000 }\n'
              'instance_group [{ kind: KIND_CPU }]\n' + pad % "sequence",
              {"model.so": encoder_so})
    add_model(repository, "bad_pad", 'backend: "kiln"\n' + pad % "batch",
              {"model.so": encoder_so})
    add_model(repository, "pad_no_dim", 'backend: "kiln"\n' + pad % "tokens",
              {"model.so": encoder_so})
    add_model(repository, "empty", 'backend: "kiln"\n', {})
    add_model(repository, "so_with_dims", 'backend: "kiln"\nparameters { key: '
              '"dims" value: { string_value: "batch=1:2" } }\n',
              {"model.so": encoder_so})
    add_model(repository, "onnx_typo", 'backend: "kiln"\nparameters { key: '
              '"precison" value: { string_value: "fp16" } }\n', {})
    add_model(repository, "onnx_bad_dims", 'backend: "kiln"\nparameters { '
              'key: "dims" value: { string_value: "batch=8:1" } }\n', {})
    add_model(repository, "onnx_bad_weights", 'backend: "kiln"\nparameters '
              '{ key: "weights" value: { string_value: "int3" } }\n', {})
    for name in ("onnx_typo", "onnx_bad_dims", "onnx_bad_weights"):
        for file in ("model.onnx", "model.onnx.data"):
            shutil.copy(os.path.join(ENCODER, file),
                        os.path.join(repository, name, "1", file))
    return repository, encoder_so, decoder_so


def check_configurations(server):
    _, body = server.get("/v2/models/bert/config")
    bert = json.loads(body)
    check([(t["name"], t["data_type"], t["dims"]) for t in bert["input"]] ==
          [("input_ids", "TYPE_INT64", [-1]),
           ("attention_mask", "TYPE_INT64", [-1])],
          "bert's inputs completed from the artifact")
    check([(t["name"], t["dims"]) for t in bert["output"]] ==
          [("output", [-1, 32])], "bert's output completed")
    decoder = json.loads(server.get("/v2/models/decoder/config")[1])
    check(decoder["max_batch_size"] == 8 and "dynamic_batching" in decoder,
          "decoder's max_batch_size from its batch dim's range, batching on")
    check(len(decoder["input"]) == 6 and decoder["input"][2]["dims"] ==
          [KV_HEADS, -1, HEAD], "decoder's cache inputs completed")
    onnx = json.loads(server.get("/v2/models/bert_onnx/config")[1])
    check(onnx["max_batch_size"] == 4,
          "model.onnx compiled with the configuration's dims")

    client = httpclient.InferenceServerClient(server.http)
    index = {m["name"]: m for m in client.get_model_repository_index()}
    for name, words in (("broken", ["model 'broken'", "model.so"]),
                        ("bad_batch", ["max_batch_size 64 exceeds",
                                       "batch dim, 8"]),
                        ("bad_pad", ["pad_dim", "'batch' is the batch dim"]),
                        ("pad_no_dim", ["pad_dim", "no dim 'tokens'"]),
                        ("empty", ["no model.so or model.onnx"]),
                        ("so_with_dims", ["parameter 'dims'",
                                          "a .so keeps what kilnc compiled"]),
                        ("onnx_typo", ["unknown parameter 'precison'"]),
                        ("onnx_bad_dims", ["parameter 'dims'", "batch"]),
                        ("onnx_bad_weights", ["parameter 'weights'",
                                              "'int3' is not float, int4"])):
        entry = index.get(name, {})
        reason = entry.get("reason", "")
        check(entry.get("state") == "UNAVAILABLE" and
              all(w in reason for w in words),
              f"{name} refused at load: {reason}")


def concurrent_requests(server, cases):
    """Sends every case at once (a barrier releases them together); returns
    each one's outputs or exception."""
    barrier = threading.Barrier(len(cases))

    def send(case):
        protocol, model, feeds, want = case
        barrier.wait()
        try:
            return infer(server, protocol, model, feeds, list(want))
        except Exception as e:  # reported per request below
            return e

    with concurrent.futures.ThreadPoolExecutor(len(cases)) as pool:
        return list(pool.map(send, cases))


def same(got, want, model=""):
    """Whether the outputs equal kiln-run's: bit for bit, or within the
    fp32 contract for a model that pads (its runs sum over more, masked,
    positions)."""
    if model == "bert_padded":
        return all(got[n].shape == w.shape and
                   np.allclose(got[n], w, rtol=1e-4, atol=1e-5)
                   for n, w in want.items())
    return all(got[n].shape == w.shape and np.array_equal(got[n], w)
               for n, w in want.items())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kilnc", required=True)
    parser.add_argument("--kiln-run", required=True)
    parser.add_argument("--backend", required=True,
                        help="libtriton_kiln.so")
    parser.add_argument("--work", help="keep the repository and logs here")
    args = parser.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="kiln-triton-")
    os.makedirs(work, exist_ok=True)
    seed = 2026
    rng = np.random.default_rng(seed)
    print(f"seed {seed}, work folder {work}")

    repository, encoder_so, decoder_so = build_repository(args, work)
    onnx_model = os.path.join(repository, "bert_onnx", "1", "model.onnx")

    # The distinct inputs and kiln-run's outputs on each.
    encoder_sets = [encoder_feeds(rng, b, s) for b in (1, 2, 3) for s in (5, 11)]
    onnx_sets = encoder_sets[:4]
    decoder_sets = [decoder_feeds(rng, b, p, s)
                    for b, p, s in ((1, 5, 1), (2, 5, 1), (1, 0, 4), (3, 9, 1))]
    want = {
        "bert": [kiln_run_outputs(args.kiln_run, encoder_so, f, work)
                 for f in encoder_sets],
        "bert_onnx": [kiln_run_outputs(args.kiln_run, onnx_model, f, work,
                                       [f"--dim={ONNX_DIMS}"])
                      for f in onnx_sets],
        "decoder": [kiln_run_outputs(args.kiln_run, decoder_so, f, work)
                    for f in decoder_sets]}
    feeds = {"bert": encoder_sets, "bert_onnx": onnx_sets,
             "decoder": decoder_sets}
    # Two rows of each length, twice: 8 rows, the model's max_batch_size,
    # which only padding puts in one run.
    feeds["bert_padded"] = [encoder_sets[2], encoder_sets[3]]
    want["bert_padded"] = [want["bert"][2], want["bert"][3]]
    # bert_onnx had 8 requests, which a loaded machine once ran one a run.
    counts = {"bert": 36, "decoder": 16, "bert_onnx": 16, "bert_padded": 4}
    cases = []
    for model, count in counts.items():
        for i in range(count):
            k = i % len(feeds[model])
            protocol = "http" if len(cases) % 2 == 0 else "grpc"
            cases.append((protocol, model, feeds[model][k], want[model][k]))

    log = os.path.join(work, "server.log")
    with running_server(repository, backend_directory(work, args.backend), log,
                        ["bert", "decoder", "bert_onnx", "bert_padded"],
                        extra=["--model-control-mode=explicit",
                               "--load-model=*"]) as server:
        check_configurations(server)

        results = concurrent_requests(server, cases)
        bad = [(c[0], c[1], r) for c, r in zip(cases, results)
               if isinstance(r, Exception) or not same(r, c[3], c[1])]
        for protocol, model, r in bad[:5]:
            print(f"      {protocol} {model}: "
                  f"{r if isinstance(r, Exception) else 'outputs differ'}")
        check(not bad, f"{len(cases)} concurrent requests over HTTP and gRPC "
              f"equal kiln-run's outputs ({len(bad)} differ)")

        client = httpclient.InferenceServerClient(server.http)
        for model, count in counts.items():
            stats = client.get_inference_statistics(model)["model_stats"][0]
            runs = int(stats["execution_count"])
            rows = int(stats["inference_count"])
            sent = sum(f["input_ids"].shape[0]
                       for c in cases if c[1] == model for f in [c[2]])
            # Warm-up runs happen inside the backend, unseen by Triton.
            check(rows == sent and runs < count,
                  f"{model}: {count} requests of {sent} rows ran in {runs} "
                  f"runs (batched)")
        # Padding joins requests of both lengths: a run of more rows than
        # all the requests of either length hold proves it.
        stats = client.get_inference_statistics("bert_padded")["model_stats"][0]
        batches = [int(b["batch_size"]) for b in stats["batch_stats"]]
        one_length = max(
            sum(c[2]["input_ids"].shape[0] for c in cases
                if c[1] == "bert_padded" and c[2]["input_ids"].shape[1] == n)
            for n in (5, 11))
        check(max(batches) > one_length,
              f"bert_padded ran batches of {sorted(set(batches))} rows, more "
              f"than the {one_length} of either length (both padded into one)")

        good = encoder_sets[2]
        good_want = want["bert"][2]

        def next_succeeds(after):
            got = infer(server, "grpc", "bert", good, list(good_want))
            check(same(got, good_want), f"the request after {after} succeeds")

        ids = encoder_sets[0]["input_ids"]
        expect_error(server, "bert",
                     {"input_ids": ids.astype(np.int32),
                      "attention_mask": encoder_sets[0]["attention_mask"]},
                     ["output"], ["input_ids", "INT32", "INT64"],
                     "a wrong data type")
        next_succeeds("a wrong data type")
        long = encoder_feeds(rng, 1, 40)
        expect_error(server, "bert", long, ["output"],
                     ["input 'input_ids'", "40"], "a sequence past its range")
        next_succeeds("a sequence past its range")
        expect_error(server, "bert",
                     {"input_ids": ids,
                      "attention_mask": np.ones((1, 6), np.int64)},
                     ["output"], ["attention_mask"], "inputs that disagree")
        next_succeeds("inputs that disagree")
        expect_error(server, "bert", {"input_ids": ids}, ["output"],
                     ["attention_mask"], "a missing input")
        next_succeeds("a missing input")
        step = dict(decoder_sets[0])
        step["attention_mask"] = np.ones((1, 9), np.int64)
        expect_error(server, "decoder", step, ["logits"],
                     ["attention_mask"], "a decoder mask of the wrong length")
        next_succeeds("a decoder mask of the wrong length")
        # A token id past the table, sent with three good requests of its
        # shape, which Triton batches into one run: the bad one alone fails,
        # with the node named.
        bad_ids = dict(good, input_ids=np.full_like(good["input_ids"], 500))
        mixed = [("http", "bert", good, good_want)] * 3 + \
            [("grpc", "bert", bad_ids, good_want)]
        results = concurrent_requests(server, mixed)
        check(all(not isinstance(r, Exception) and same(r, good_want)
                  for r in results[:3]) and
              isinstance(results[3], Exception) and
              "index out of range" in str(results[3]),
              f"an index fault fails its own request only: {results[3]}")
        expect_error(server, "broken", good, ["output"], ["broken"],
                     "a request to the unloadable model")
        next_succeeds("a request to the unloadable model")

        # Unload and load again. The first ten cycles settle what loads
        # keep (the allocator's pools and Triton's own records reach their
        # level there); the next twenty must not add a model's worth: a
        # model left behind by each would add at least its artifact every
        # time, twenty artifacts. Up to five are allowed, because the
        # allocator sometimes still takes one step of about 3 MiB late (seen
        # once in a few runs, more than one 2.5 MiB artifact).
        def reload(times):
            for _ in range(times):
                client.unload_model("bert")
                client.load_model("bert")
            return server.rss_kib()
        before = reload(10)
        after = reload(20)
        next_succeeds("thirty reloads")
        artifact_kib = os.path.getsize(encoder_so) // 1024
        check(after - before < 5 * artifact_kib,
              f"twenty more reloads grew the server by {after - before} KiB "
              f"(the artifact is {artifact_kib} KiB; a leak of each would "
              f"be 20 of them)")

    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
