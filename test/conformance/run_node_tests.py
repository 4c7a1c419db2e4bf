#!/usr/bin/env python3
"""Runs ONNX conformance node tests through kiln-run and checks the outputs.

  run_node_tests.py --kiln-run build/bin/kiln-run [--backend reference] [OP ...]

For every test folder of the corpus whose name starts with test_<op> for the
given ops (default: the walking skeleton's ops), imports the model, runs it on
the given inputs and compares with the expected outputs with the tolerances of
ONNX's own backend runner (rtol 1e-3, atol 1e-7). A test whose model uses an
element type Kiln declares unsupported must fail with a clear "unsupported
element type" message; that counts as unsupported, anything else as a failure.
The corpus folder is $KILN_CORPUS_DIR or ../shared/corpus; without it the run
is skipped with a message.
"""
import argparse
import os
import subprocess
import sys
import tempfile

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


def run_test(kiln_run, backend, folder):
    model = onnx.load(os.path.join(folder, "model.onnx"), load_external_data=False)
    data = os.path.join(folder, "test_data_set_0")
    initializers = {t.name for t in model.graph.initializer}
    args = [kiln_run, os.path.join(folder, "model.onnx"), "--backend", backend]
    # Integer inputs (shapes, axes) are frozen as compile-time constants:
    # Kiln compiles for static shapes.
    for i, info in enumerate(i for i in model.graph.input if i.name not in initializers):
        flag = "--const-input" if info.type.tensor_type.elem_type == onnx.TensorProto.INT64 else "--input"
        args += [flag, f"{info.name}={os.path.join(data, f'input_{i}.pb')}"]
    with tempfile.TemporaryDirectory() as out:
        args += ["--output-dir", out]
        proc = subprocess.run(args, capture_output=True, text=True, timeout=120)
        if proc.returncode != 0:
            message = proc.stderr.strip().splitlines()
            message = message[0] if message else f"exit code {proc.returncode}"
            if "unsupported element type" in proc.stderr:
                return "unsupported", message
            return "fail", message
        for i, info in enumerate(model.graph.output):
            expected = onnx.TensorProto()
            with open(os.path.join(data, f"output_{i}.pb"), "rb") as f:
                expected.ParseFromString(f.read())
            want = numpy_helper.to_array(expected)
            got = np.load(os.path.join(out, info.name.replace("/", "_") + ".npy"))
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
    parser.add_argument("--backend", default="reference")
    parser.add_argument("ops", nargs="*", default=SKELETON_OPS)
    args = parser.parse_args()

    here = os.path.dirname(os.path.abspath(__file__))
    corpus = os.environ.get("KILN_CORPUS_DIR",
                            os.path.join(here, "..", "..", "..", "shared", "corpus"))
    node_dir = os.path.join(corpus, "onnx-node")
    if not os.path.isdir(node_dir):
        print(f"SKIP: no conformance corpus at {node_dir} (set KILN_CORPUS_DIR)")
        return 0
    tests = sorted(t for t in os.listdir(node_dir) if wanted(t, args.ops))
    counts = {"pass": 0, "fail": 0, "unsupported": 0}
    for test in tests:
        status, message = run_test(args.kiln_run, args.backend,
                                   os.path.join(node_dir, test))
        if test in KNOWN_GAPS:
            if status == "fail":
                status, message = "known-gap", KNOWN_GAPS[test]
            else:
                status, message = "fail", "passes now: remove it from KNOWN_GAPS"
        counts[status] = counts.get(status, 0) + 1
        print(f"{status:12} {test} {message}")
    print(f"\n{len(tests)} tests: {counts['pass']} passed, "
          f"{counts['unsupported']} unsupported element types, "
          f"{counts.get('known-gap', 0)} known gaps, "
          f"{counts['fail']} failed")
    return 1 if counts["fail"] or not tests else 0


if __name__ == "__main__":
    sys.exit(main())
