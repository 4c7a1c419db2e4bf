#!/usr/bin/env python3
"""Checks an artifact whose weights exceed 2 GiB: sidecar file, load, run.

  check_large_artifact.py --kilnc build/bin/kilnc --kiln-run build/bin/kiln-run

Writes a model whose weights are almost all one embedding table of 2.2 GB
(ONNX external data), so that running it is cheap: y = table[ids] * scale.
kilnc must write the weights to model.kw beside a small model.so (the .so
keeps the plan, kernels and runtime), within the memory target of
docs/performance.md (peak RSS at most 0.3 x the weights + 1 GiB: the weights
stream from the mapped input to the output); the host backend then maps and
checks the sidecar and must return the table rows that numpy reads straight
from the data file. Everything is written to a temporary folder and removed.
"""
import argparse
import os
import resource
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper

ROWS, WIDTH = 540_000, 1024  # 2.21 GB of float32
IDS = np.array([[0, 1, ROWS // 2, ROWS - 1]], dtype=np.int64)


def write_model(folder):
    """The model, and the table in model.onnx.data written row block by row
    block: row i holds i + j / 1024 at column j, so every row differs."""
    data = os.path.join(folder, "model.onnx.data")
    with open(data, "wb") as f:
        block = 20_000
        cols = np.arange(WIDTH, dtype=np.float64) / WIDTH
        for start in range(0, ROWS, block):
            rows = np.arange(start, min(start + block, ROWS), dtype=np.float64)
            f.write((rows[:, None] + cols[None, :]).astype(np.float32).tobytes())
    table = TensorProto(name="table", data_type=TensorProto.FLOAT,
                        dims=[ROWS, WIDTH])
    table.data_location = TensorProto.EXTERNAL
    for key, value in (("location", "model.onnx.data"), ("offset", "0"),
                       ("length", str(ROWS * WIDTH * 4))):
        table.external_data.add(key=key, value=value)
    scale = helper.make_tensor("scale", TensorProto.FLOAT, [], [0.5])
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "ids"], ["rows"], name="embed"),
         helper.make_node("Mul", ["rows", "scale"], ["y"], name="scale")],
        "large", [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, WIDTH])],
        [table, scale])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, os.path.join(folder, "model.onnx"))
    return data


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kilnc", required=True)
    parser.add_argument("--kiln-run", required=True)
    tools = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kiln-large-") as folder:
        os.environ.setdefault("KILN_CACHE_DIR", os.path.join(folder, "cache"))
        data = write_model(folder)
        weight_bytes = os.path.getsize(data)
        so = os.path.join(folder, "model.so")
        subprocess.run([tools.kilnc, os.path.join(folder, "model.onnx"), "-o",
                        so], check=True)
        # ru_maxrss of the children is the largest child's, in KiB; kilnc is
        # the only child so far.
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
        sidecar = os.path.join(folder, "model.kw")
        so_bytes, kw_bytes = os.path.getsize(so), os.path.getsize(sidecar)
        budget = 0.3 * weight_bytes + (1 << 30)
        print(f"weights {weight_bytes} bytes: model.so {so_bytes} bytes, "
              f"model.kw {kw_bytes} bytes; kilnc peak RSS {peak / 2**20:.0f} MiB "
              f"(target {budget / 2**20:.0f} MiB)")
        failures = []
        if kw_bytes < weight_bytes or so_bytes > (64 << 20):
            failures.append("the weights are not in the sidecar file")
        if peak > budget:
            failures.append("kilnc's peak RSS is over the target")
        ids = os.path.join(folder, "ids.npy")
        np.save(ids, IDS)
        out = os.path.join(folder, "out")
        subprocess.run([tools.kiln_run, so, "--backend", "host", "--input",
                        f"ids={ids}", "--output-dir", out], check=True,
                       stdout=subprocess.DEVNULL)
        table = np.memmap(data, dtype=np.float32, mode="r", shape=(ROWS, WIDTH))
        want = table[IDS[0]][None] * np.float32(0.5)
        got = np.load(os.path.join(out, "y.npy"))
        if not np.array_equal(got, want):
            failures.append("the host backend's rows differ from the table's")
        for f in failures:
            print(f"FAIL: {f}")
        if not failures:
            print("pass: a > 2 GiB artifact with its weights beside it loads "
                  "and runs on the host backend")
        return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
