"""kiln-cache-in-place keeps semantics: the decoder layer of
cache_in_place_decoder.mlir, run on the reference interpreter as written (past
and present of their own lengths) and after the pass (one cache buffer of the
largest length, its rows past the valid ones holding NaN), at several (past,
new) lengths; then compiled with --kv-cache-in-place and run on the host
backend with the same buffers. The output must agree, the present's valid
rows must be the concat's, and the rows after them must still be NaN: the
update writes the new rows and nothing else."""

import argparse
import os
import subprocess
import sys

import numpy as np

CAPACITY = 11  # p + s at most: 7 + 4


def run(cmd):
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{result.stdout}{result.stderr}")
    return result.stdout


def run_model(tools, model, inputs, folder, extra):
    os.makedirs(folder, exist_ok=True)
    args = []
    for name, value in inputs.items():
        path = os.path.join(folder, f"in_{name}.npy")
        np.save(path, value)
        args.append(f"--input={name}={path}")
    run([tools.kiln_run, model, *extra, *args, "--output-dir", folder])
    return {n: np.load(os.path.join(folder, f"{n}.npy"))
            for n in ("out", "present_key", "present_value")}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--kiln-opt", required=True)
    parser.add_argument("--kiln-run", required=True)
    parser.add_argument("--kilnc", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--scratch", required=True)
    tools = parser.parse_args()
    os.makedirs(tools.scratch, exist_ok=True)
    after = os.path.join(tools.scratch, "after.mlir")
    run([tools.kiln_opt, tools.model, "-kiln-cache-in-place", "-o", after])
    library = os.path.join(tools.scratch, "decoder.so")
    run([tools.kilnc, tools.model, "--kv-cache-in-place", "-o", library])
    rng = np.random.default_rng(11)
    problems = []
    for past, new in [(0, 1), (0, 4), (5, 1), (3, 4), (7, 4)]:
        total = past + new
        x = rng.standard_normal((1, new, 8)).astype(np.float32)
        mask = np.where(rng.random((1, total)) < 0.2, -1e4, 0.0).astype(np.float32)
        mask[0, -1] = 0.0
        keys = rng.standard_normal((1, 2, past, 4)).astype(np.float32)
        values = rng.standard_normal((1, 2, past, 4)).astype(np.float32)
        before = run_model(tools, tools.model, {
            "x": x, "mask": mask, "past_key": keys, "past_value": values},
            os.path.join(tools.scratch, f"before_{past}_{new}"),
            ["--backend", "reference"])

        def cache(rows):
            buffer = np.full((1, 2, CAPACITY, 4), np.nan, np.float32)
            buffer[:, :, :past] = rows
            return buffer
        inputs = {"x": x, "mask": mask, "past_key": cache(keys),
                  "past_value": cache(values)}
        for label, model, extra in [
                ("reference", after, ["--backend", "reference"]),
                ("host", library, ["--backend", "host"])]:
            got = run_model(tools, model, inputs, os.path.join(
                tools.scratch, f"{label}_{past}_{new}"), extra)
            where = f"{label} at past {past}, new {new}"
            if not np.allclose(got["out"], before["out"], rtol=1e-5, atol=1e-6):
                problems.append(f"{where}: out differs by "
                                f"{np.abs(got['out'] - before['out']).max()}")
            for name in ("present_key", "present_value"):
                if got[name].shape != (1, 2, CAPACITY, 4):
                    problems.append(f"{where}: {name} is {got[name].shape}")
                    continue
                if not np.array_equal(got[name][:, :, :total], before[name]):
                    problems.append(f"{where}: {name}'s rows 0..{total} are "
                                    "not the concat's")
                if not np.isnan(got[name][:, :, total:]).all():
                    problems.append(f"{where}: {name}'s rows from {total} "
                                    "were written")
        print(f"past {past}, new {new}: reference and host match the concat "
              "form; rows after the new ones untouched")
    if problems:
        sys.exit("\n".join(problems))
    print("cache in place keeps semantics")


if __name__ == "__main__":
    main()
