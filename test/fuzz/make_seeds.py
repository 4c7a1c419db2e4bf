#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (see scripts/fuzz.sh).

One folder per target under --out, made from material already in the tree or
in ../shared/corpus, none of it written by hand for the fuzzer:
  onnx          the corpus's node tests, fusion graphs and small exports, and
                the exported test models with their weights inline
  kiln-ir       every `// -----` case of the lit tests' .mlir files
  tensor-files  the node tests' input/output .pb files and .npy arrays of
                each dtype the runtime reads (made with numpy)
  artifact      the payloads of a few models compiled with --kilnc

With --smoke, every eighth node test only, so that a one-minute run in CI
spends its time mutating rather than reading seeds.
"""

import argparse
import hashlib
import io
import os
import pathlib
import struct
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]

# Seeds larger than this slow every execution more than they add coverage.
MAX_SEED_BYTES = 200_000

# Node tests compiled into artifact seeds: one per kind of plan step
# (elementwise kernel, matmul, gather with an index check, reduction, the
# attention kernel, a reshape alias).
ARTIFACT_MODELS = [
    "test_add",
    "test_matmul_2d",
    "test_gather_0",
    "test_softmax_axis_1",
    "test_layer_normalization_2d_axis1",
    "test_attention_3d",
    "test_transpose_default",
]


def corpus_dir():
    return pathlib.Path(
        os.environ.get("KILN_CORPUS_DIR", ROOT.parent / "shared" / "corpus"))


def write_seed(folder, data):
    """Stores `data` under its hash, as libFuzzer names corpus files."""
    if len(data) > MAX_SEED_BYTES:
        return 0
    folder.mkdir(parents=True, exist_ok=True)
    (folder / hashlib.sha1(data).hexdigest()).write_bytes(data)
    return 1


def node_tests(corpus, smoke):
    tests = sorted((corpus / "onnx-node").glob("test_*"))
    return tests[::8] if smoke else tests


def onnx_seeds(out, corpus, smoke):
    n = 0
    for test in node_tests(corpus, smoke):
        model = test / "model.onnx"
        if model.exists():
            n += write_seed(out, model.read_bytes())
    for path in sorted((corpus / "ort-fusion").rglob("*.onnx")):
        n += write_seed(out, path.read_bytes())
    for path in sorted((corpus / "models").glob("*.onnx")):
        n += write_seed(out, path.read_bytes())
    for path in sorted((ROOT / "test" / "models" / "data").glob("*/model.onnx")):
        n += write_seed(out, path.read_bytes())
    return n


def ir_seeds(out):
    n = 0
    for path in sorted((ROOT / "test").rglob("*.mlir")):
        if "Inputs" in path.parts:
            continue
        case = []
        for line in path.read_text().splitlines(keepends=True) + ["// -----\n"]:
            if line.startswith("// -----"):
                text = "".join(l for l in case if not l.lstrip().startswith("//"))
                if text.strip():
                    n += write_seed(out, text.encode())
                case = []
            else:
                case.append(line)
    return n


def npy_seeds(out):
    try:
        import numpy as np
    except ImportError:
        print("make_seeds: numpy missing, no .npy seeds", file=sys.stderr)
        return 0
    arrays = [
        np.arange(6, dtype=np.float32).reshape(2, 3),
        np.arange(6, dtype=np.float16).reshape(3, 2),
        np.array([1, -2, 3], dtype=np.int64),
        np.array([7], dtype=np.int32),
        np.array([True, False]),
        np.zeros((0, 4), dtype=np.float32),
        np.float32(3.5),
        np.asfortranarray(np.arange(6, dtype=np.float64).reshape(2, 3)),
        np.arange(4, dtype=np.uint8),
        np.arange(4, dtype=np.int8).astype(">i4"),
    ]
    n = 0
    for array in arrays:
        buf = io.BytesIO()
        np.save(buf, array, allow_pickle=False)
        n += write_seed(out, buf.getvalue())
    return n


def tensor_seeds(out, corpus, smoke):
    n = npy_seeds(out)
    for test in node_tests(corpus, smoke)[::4]:
        for pb in sorted(test.glob("test_data_set_0/*.pb")):
            n += write_seed(out, pb.read_bytes())
    return n


def payload_of(library):
    """The artifact payload appended to a compiled `.so` (ArtifactFormat.h:
    the last 32 bytes are offset, size, checksum and magic)."""
    data = library.read_bytes()
    offset, size, _, magic = struct.unpack("<QQQ8s", data[-32:])
    if magic != b"KILNSO01":
        raise ValueError(f"{library}: no Kiln trailer")
    return data[offset:offset + size]


def artifact_seeds(out, corpus, kilnc):
    if not kilnc:
        print("make_seeds: no --kilnc, no artifact seeds", file=sys.stderr)
        return 0
    n = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name in ARTIFACT_MODELS:
            model = corpus / "onnx-node" / name / "model.onnx"
            library = pathlib.Path(tmp) / f"{name}.so"
            if not model.exists():
                continue
            result = subprocess.run([kilnc, str(model), "-o", str(library)],
                                    capture_output=True, text=True)
            if result.returncode != 0:
                raise RuntimeError(f"kilnc {name}: {result.stderr}")
            n += write_seed(out, payload_of(library))
        n += symbolic_artifact_seed(out, pathlib.Path(tmp), kilnc)
        n += cache_in_place_seed(out, pathlib.Path(tmp), kilnc)
    return n


def cache_in_place_seed(out, tmp, kilnc):
    """A plan with output aliases (KV caches kept in place) over symbolic
    dims: the decoder layer of the kiln-cache-in-place tests."""
    model = ROOT / "test" / "Transforms" / "Inputs" / "cache_in_place_decoder.mlir"
    library = tmp / "cache_in_place.so"
    result = subprocess.run([kilnc, str(model), "--kv-cache-in-place", "-o",
                             str(library)], capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"kilnc cache in place: {result.stderr}")
    return write_seed(out, payload_of(library))


def symbolic_artifact_seed(out, tmp, kilnc):
    """A plan over symbolic dims (its dims, bindings, and kernels taking the
    dims): x [batch, sequence] plus itself, then a softmax over sequence,
    compiled with --dim batch=1:4,sequence=1:8. Needs the onnx package."""
    try:
        from onnx import TensorProto, helper, save
    except ImportError:
        print("make_seeds: no onnx package, no symbolic artifact seed",
              file=sys.stderr)
        return 0
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                      ["batch", "sequence"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                      ["batch", "sequence"])
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "x"], ["twice"]),
         helper.make_node("Softmax", ["twice"], ["y"], axis=-1)],
        "symbolic", [x], [y])
    model = tmp / "symbolic.onnx"
    save(helper.make_model(graph, ir_version=10, opset_imports=[helper.make_opsetid("", 17)]),
         str(model))
    library = tmp / "symbolic.so"
    result = subprocess.run([kilnc, str(model), "--dim",
                             "batch=1:4,sequence=1:8", "-o", str(library)],
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"kilnc symbolic: {result.stderr}")
    return write_seed(out, payload_of(library))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=pathlib.Path)
    parser.add_argument("--kilnc", help="a normal build's kilnc")
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    corpus = corpus_dir()
    if not corpus.is_dir():
        print(f"make_seeds: {corpus} missing; seeds from the tree only",
              file=sys.stderr)
    counts = {
        "onnx": onnx_seeds(args.out / "onnx", corpus, args.smoke),
        "kiln-ir": ir_seeds(args.out / "kiln-ir"),
        "tensor-files": tensor_seeds(args.out / "tensor-files", corpus,
                                     args.smoke),
        "artifact": artifact_seeds(args.out / "artifact", corpus, args.kilnc),
    }
    for target, count in counts.items():
        (args.out / target).mkdir(parents=True, exist_ok=True)
        print(f"make_seeds: {target}: {count} seeds")


if __name__ == "__main__":
    main()
