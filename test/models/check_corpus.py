#!/usr/bin/env python3
"""Checks Kiln on the whole-model and layer exports of ../shared/corpus/models.

  check_corpus.py --kilnc build/bin/kilnc --kiln-run build/bin/kiln-run
                  [--corpus DIR] [--seed N]

The corpus holds no expected outputs: onnxruntime (CPU) is the oracle. Each
model gets static shapes for its symbolic dims and seeded inputs in the range
its inputs mean (token ids below the vocabulary, 0/1 masks, sequence lengths
for 1-D mask indices, floats uniform in [-1, 1)). Kiln runs the model on the
reference interpreter and, compiled by kilnc, on the host backend; both must
match onnxruntime within the fp32 numerics contract (rtol 1e-4, atol 1e-5),
or the 16-bit one (relative L2 1e-2) for fp16 outputs. An fp32 output
outside the contract is judged by DESIGN.md's float64 rule instead, which the
output says with the model's name: the model is run in float64 on the
reference interpreter, and the rule applies only where onnxruntime itself is
beyond rtol 1e-4 of that result; Kiln must then be at most twice as far from
it as onnxruntime is, plus 1e-6 (max-abs).
Models in KNOWN_GAPS must fail with the reason given. The corpus folder is
$KILN_CORPUS_DIR or ../shared/corpus; without it the run is skipped (exit 77).
"""
import os
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort

from oracle import (compare_output, float64_rule, run, run_both_paths,
                    save_inputs, to_float64, tools_parser)

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

# Values of the models' symbolic dims.
DIMS = {"batch": 2, "sequence": 8, "seq_len": 8, "max_seq_len_in_batch": 8,
        "seqlen": 8, "dynamic_prediction_count": 3, "batch_size": 2,
        "past_seq_len": 4, "None": 16}

# Models Kiln does not pass yet, with a substring of the reason (of either
# path's failure).
KNOWN_GAPS = {
    # Judged by the float64 rule: onnxruntime's fp32 output is 2.25e-4 from
    # the float64 result, the host backend's 8.8e-4 (the reference
    # interpreter's 9.2e-5 passes). The error comes from the rounding of the
    # QKV projection (k = 768, |qkv| ~ 35) amplified by near-tied attention
    # scores; a numpy emulation of a blocked FMA GEMM like onnxruntime's MLAS
    # (k blocks of 256) lands at 6.8e-4..7.5e-4 on the same inputs, so the
    # 2x bound is narrower than the spread of correct fp32 GEMMs here.
    "attention_mask2d_fp32.onnx": "beyond the bound",
}


def make_inputs(model, rng):
    """Seeded inputs whose values make sense for what each input is."""
    initializers = {t.name for t in model.graph.initializer}
    shapes, feeds = {}, {}
    for info in model.graph.input:
        if info.name in initializers:
            continue
        dims = [d.dim_value if d.dim_value else DIMS[d.dim_param]
                for d in info.type.tensor_type.shape.dim]
        elem = info.type.tensor_type.elem_type
        name = info.name.lower()
        if elem in (onnx.TensorProto.INT64, onnx.TensorProto.INT32):
            dtype = np.int64 if elem == onnx.TensorProto.INT64 else np.int32
            if "mask" in name and len(dims) == 1:
                value = rng.integers(1, DIMS["sequence"] + 1, dims)  # lengths
            elif "mask" in name:
                value = (rng.random(dims) < 0.8).astype(np.int64)
                value[..., 0] = 1  # never a fully masked row
            elif "type" in name:
                value = rng.integers(0, 2, dims)
            elif "position" in name or "positions" in name:
                value = rng.integers(0, dims[-1] if dims else 1, dims)
            else:
                value = rng.integers(0, 8, dims)  # token ids in any vocab
            feeds[info.name] = value.astype(dtype)
        elif elem == onnx.TensorProto.FLOAT16:
            feeds[info.name] = rng.uniform(-1, 1, dims).astype(np.float16)
        else:
            feeds[info.name] = rng.uniform(-1, 1, dims).astype(np.float32)
        shapes[info.name] = dims
    return shapes, feeds


def judge(out_dir, names, expected, exact):
    """None when every output in out_dir matches onnxruntime's `expected`
    under the fp32 contract, or, for an output outside it, under the float64
    rule against `exact()` (the float64 results, computed on first use).
    Else why not. Outputs judged by the float64 rule are printed."""
    for name, want in zip(names, expected):
        why = compare_output(out_dir, name, want)
        if why and want.dtype == np.float32 and "outside rtol" in why:
            got = np.load(os.path.join(out_dir, name + ".npy"))
            summary, why = float64_rule(name, got, want, exact()[name])
            print(f"  float64 rule ({os.path.basename(out_dir)}) {summary}")
        if why:
            return why
    return None


def float64_results(tools, model, feeds, shape_args, work):
    """The model's outputs computed in float64 by the reference interpreter
    (DESIGN.md's judge for ill-conditioned computations)."""
    path = os.path.join(work, "model-float64.onnx")
    onnx.save(to_float64(model), path)
    args = []
    for i, (name, value) in enumerate(feeds.items()):
        file = os.path.join(work, f"input{i}-float64.npy")
        np.save(file, value.astype(np.float64)
                if value.dtype == np.float32 else value)
        args += ["--input", f"{name}={file}"]
    out = os.path.join(work, "float64")
    why = run([tools.kiln_run, path, "--backend", "reference", "--output-dir",
               out] + args + shape_args)
    if why:
        raise RuntimeError(f"float64 reference run failed: {why}")
    return {f[:-4]: np.load(os.path.join(out, f)) for f in os.listdir(out)
            if f.endswith(".npy")}


def check(tools, path, seed, work):
    model = onnx.load(path)
    shapes, feeds = make_inputs(model, np.random.default_rng(seed))
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    expected = session.run(None, feeds)
    cache = {}

    def exact():
        if "results" not in cache:
            print(f"  {os.path.basename(path)}: outside the fp32 contract; "
                  "judging by the float64 rule (DESIGN.md)")
            cache["results"] = float64_results(tools, model, feeds,
                                                shape_args, work)
        return cache["results"]

    shape_args = []
    for name in feeds:
        if shapes[name]:
            shape_args += ["--input-shape",
                           f"{name}={'x'.join(map(str, shapes[name]))}"]
    return run_both_paths(
        tools, path, save_inputs(feeds, work), work,
        lambda out_dir: judge(out_dir, names, expected, exact), shape_args)


def main():
    parser = tools_parser(__doc__)
    parser.add_argument("--corpus", default=os.environ.get(
        "KILN_CORPUS_DIR", os.path.join(REPO, "..", "shared", "corpus")))
    parser.add_argument("--seed", type=int, default=5)
    tools = parser.parse_args()
    folder = os.path.join(tools.corpus, "models")
    if not os.path.isdir(folder):
        print(f"skipped: no corpus at {folder} (set KILN_CORPUS_DIR)")
        return 77
    print(f"seed {tools.seed}")
    unexpected = 0
    models = sorted(f for f in os.listdir(folder) if f.endswith(".onnx"))
    with tempfile.TemporaryDirectory(prefix="kiln-corpus-") as scratch:
        os.environ.setdefault("KILN_CACHE_DIR", os.path.join(scratch, "cache"))
        for name in models:
            work = os.path.join(scratch, name)
            os.makedirs(work)
            reference, host = check(tools, os.path.join(folder, name),
                                    tools.seed, work)
            gap = KNOWN_GAPS.get(name)
            results = f"reference: {reference or 'pass'}; host: {host or 'pass'}"
            if gap and gap in f"{reference} {host}":
                print(f"known-gap  {name}: {results}")
            elif gap:
                unexpected += 1
                print(f"FAIL       {name}: listed as a gap ({gap}) but {results}")
            elif reference or host:
                unexpected += 1
                print(f"FAIL       {name}: {results}")
            else:
                print(f"pass       {name} (reference and host backend)")
    print(f"\n{len(models)} corpus models, {unexpected} unexpected results")
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main())
