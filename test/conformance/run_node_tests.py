#!/usr/bin/env python3
"""Runs ONNX conformance node tests through kiln-run and checks the outputs.

  run_node_tests.py --kiln-run build/bin/kiln-run [--backend reference] [OP ...]
  run_node_tests.py --kiln-run build/bin/kiln-run --kilnc build/bin/kilnc
                    --backend host [OP ...]

For every test folder of the corpus whose name starts with test_<op> for the
given ops (default: the walking skeleton's ops), runs the model on the given
inputs and compares with the expected outputs with the tolerances of ONNX's
own backend runner (rtol 1e-3, atol 1e-7). With --backend reference, kiln-run
imports the model and interprets it; with --backend host (or cuda), kilnc
compiles it to a .so first, which kiln-run runs on that backend, so the
generated kernels themselves are checked. Integer (int64) inputs are frozen
as compile-time constants in both modes (--const-input of kiln-run or kilnc).
A test whose model uses an element type Kiln declares unsupported must fail
with a clear "unsupported element type" message; that counts as unsupported,
anything else as a failure. The corpus folder is $KILN_CORPUS_DIR or
../shared/corpus; without it the run is skipped with a message.
"""
import argparse
import concurrent.futures
import os
import shutil
import subprocess
import sys
import tempfile
import types

import numpy as np
import onnx
from onnx import numpy_helper

SKELETON_OPS = [
    "matmul", "gemm", "add", "sub", "mul", "div", "pow", "sqrt", "erf", "tanh",
    "exp", "relu", "sigmoid", "softmax", "layer_normalization", "reduce_mean",
    "transpose", "reshape", "cast_FLOAT_to_FLOAT16", "cast_FLOAT16_to_FLOAT",
]
# Known gaps, each failing for the reason given; they are reported, and a
# test that starts passing is reported too so the entry can go.
KNOWN_GAPS = {
    f"test_pow_types_{base}_{exp}": "integer Pow bases are not implemented"
    for base, exp in [("int32", "float32"), ("int32", "int32"),
                      ("int64", "float32"), ("int64", "int64")]
}


def wanted(name, ops):
    if name.endswith("_expanded") or "_expanded_" in name:
        return False
    for op in ops:
        prefix = "test_" + op
        if name == prefix or name.startswith(prefix + "_"):
            # test_exp_example is Exp; test_expand is not.
            if op in ("exp", "sub") and name != prefix and not name.startswith(
                    (prefix + "_example", prefix + "_bcast", prefix + "_int",
                     prefix + "_uint")):
                continue
            return not name.startswith("test_softmax_cross_entropy")
    return False


def run(args):
    """Runs a tool; a tool that cannot start or times out is a failed run."""
    try:
        return subprocess.run(args, capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(args, 124, "", "timed out after 300s")
    except OSError as e:
        return subprocess.CompletedProcess(args, 127, "", f"cannot run: {e}")


def first_line(proc, tool):
    lines = proc.stderr.strip().splitlines()
    return f"{tool}: " + (lines[0] if lines else f"exit code {proc.returncode}")


def run_test(tools, backend, folder):
    model = onnx.load(os.path.join(folder, "model.onnx"), load_external_data=False)
    data = os.path.join(folder, "test_data_set_0")
    initializers = {t.name for t in model.graph.initializer}
    # Integer inputs (shapes, axes) are frozen as compile-time constants:
    # Kiln compiles for static shapes.
    inputs, frozen = [], []
    for i, info in enumerate(i for i in model.graph.input if i.name not in initializers):
        spec = f"{info.name}={os.path.join(data, f'input_{i}.pb')}"
        is_int64 = info.type.tensor_type.elem_type == onnx.TensorProto.INT64
        (frozen if is_int64 else inputs).append(spec)
    with tempfile.TemporaryDirectory() as out:
        if backend == "reference":
            args = [tools.kiln_run, os.path.join(folder, "model.onnx"), "--backend", backend]
            for spec in frozen:
                args += ["--const-input", spec]
        else:
            library = os.path.join(out, "model.so")
            compile_args = [tools.kilnc, os.path.join(folder, "model.onnx"), "-o", library]
            for spec in frozen:
                compile_args += ["--const-input", spec]
            proc = run(compile_args)
            if proc.returncode != 0:
                if "unsupported element type" in proc.stderr:
                    return "unsupported", first_line(proc, "kilnc")
                return "fail", first_line(proc, "kilnc")
            args = [tools.kiln_run, library, "--backend", backend]
        for spec in inputs:
            args += ["--input", spec]
        args += ["--output-dir", os.path.join(out, "outputs")]
        proc = run(args)
        if proc.returncode != 0:
            if "unsupported element type" in proc.stderr:
                return "unsupported", first_line(proc, "kiln-run")
            return "fail", first_line(proc, "kiln-run")
        for i, info in enumerate(model.graph.output):
            expected = onnx.TensorProto()
            with open(os.path.join(data, f"output_{i}.pb"), "rb") as f:
                expected.ParseFromString(f.read())
            want = numpy_helper.to_array(expected)
            path = os.path.join(out, "outputs", info.name.replace("/", "_") + ".npy")
            if not os.path.exists(path):
                written = sorted(f for f in os.listdir(os.path.join(out, "outputs"))
                                 if f.endswith(".npy"))
                return "fail", f"output {info.name}: not written (kiln-run wrote {written})"
            got = np.load(path)
            if got.shape != want.shape:
                return "fail", f"output {info.name}: shape {got.shape} vs {want.shape}"
            if not np.allclose(got.astype(np.float64), want.astype(np.float64),
                               rtol=1e-3, atol=1e-7, equal_nan=True):
                diff = np.abs(got.astype(np.float64) - want.astype(np.float64)).max()
                return "fail", f"output {info.name}: max abs error {diff:.3e}"
    return "pass", ""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kiln-run", required=True)
    parser.add_argument("--kilnc", help="compiles each test for --backend host or cuda")
    parser.add_argument("--backend", default="reference",
                        choices=["reference", "host", "cuda"])
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                        help="tests run at once")
    parser.add_argument("ops", nargs="*", default=SKELETON_OPS)
    args = parser.parse_args()
    if args.backend != "reference" and not args.kilnc:
        parser.error(f"--backend {args.backend} needs --kilnc")

    here = os.path.dirname(os.path.abspath(__file__))
    corpus = os.environ.get("KILN_CORPUS_DIR",
                            os.path.join(here, "..", "..", "..", "shared", "corpus"))
    node_dir = os.path.join(corpus, "onnx-node")
    if not os.path.isdir(node_dir):
        print(f"SKIP: no conformance corpus at {node_dir} (set KILN_CORPUS_DIR)")
        return 0

    tools = types.SimpleNamespace(
        kiln_run=os.path.abspath(args.kiln_run),
        kilnc=os.path.abspath(args.kilnc) if args.kilnc else None)

    # Compiled host modules are cached; keep this run's cache to itself
    # unless the caller chose one.
    cache = None
    if args.backend != "reference" and "KILN_CACHE_DIR" not in os.environ:
        cache = tempfile.mkdtemp(prefix="kiln-conformance-cache-")
        os.environ["KILN_CACHE_DIR"] = cache

    tests = sorted(t for t in os.listdir(node_dir) if wanted(t, args.ops))
    counts = {"pass": 0, "fail": 0, "unsupported": 0}
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            futures = [pool.submit(run_test, tools, args.backend,
                                   os.path.join(node_dir, test)) for test in tests]
            for test, future in zip(tests, futures):
                status, message = future.result()
                if test in KNOWN_GAPS:
                    if status == "fail":
                        status, message = "known-gap", KNOWN_GAPS[test]
                    else:
                        status, message = "fail", "passes now: remove it from KNOWN_GAPS"
                counts[status] = counts.get(status, 0) + 1
                print(f"{status:12} {test} {message}", flush=True)
    finally:
        if cache:
            shutil.rmtree(cache, ignore_errors=True)
    print(f"\n{len(tests)} tests on --backend {args.backend}: {counts['pass']} passed, "
          f"{counts['unsupported']} unsupported element types, "
          f"{counts.get('known-gap', 0)} known gaps, "
          f"{counts['fail']} failed")
    return 1 if counts["fail"] or not tests else 0


if __name__ == "__main__":
    sys.exit(main())
