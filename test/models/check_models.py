#!/usr/bin/env python3
"""Checks Kiln on the exported architectures of test/models/data.

  check_models.py --kilnc build/bin/kilnc --kiln-run build/bin/kiln-run
                  [--data test/models/data] [--only NAME]

Each folder holds model.onnx, inputs/*.npy and expected/*.npy (onnxruntime's
outputs, written by export_models.py). For each model: the reference
interpreter runs the .onnx, and kilnc compiles it to a .so that runs on the
host backend (the generated kernels emulated on the CPU); both must match
onnxruntime within the fp32 numerics contract (rtol 1e-4, atol 1e-5, no NaN
where onnxruntime is finite). Models in KNOWN_GAPS must fail for the reason
given (a gap that closes is reported so that the entry goes). A folder with
a `dims` file (NAME=N,...) holds an export with symbolic dims, which both
tools get as --dim. Exit code 1 on any unexpected result.
"""
import os
import sys
import tempfile

import numpy as np

from oracle import (compare_output, dims_args, model_folders, run_both_paths,
                    tools_parser)

HERE = os.path.dirname(os.path.abspath(__file__))

# Models Kiln cannot compile yet, with the reason; the substring must appear
# in the failure.
KNOWN_GAPS = {}


def compare(out_dir, folder):
    """Returns None when every output matches, else why not."""
    expected_dir = os.path.join(folder, "expected")
    for file in sorted(os.listdir(expected_dir)):
        why = compare_output(out_dir, file[:-4],
                             np.load(os.path.join(expected_dir, file)))
        if why:
            return why
    return None


def check(tools, folder, scratch):
    """Returns (reference result, host result), each None or why it failed."""
    inputs = []
    for f in sorted(os.listdir(os.path.join(folder, "inputs"))):
        inputs += ["--input", f"{f[:-4]}={os.path.join(folder, 'inputs', f)}"]
    return run_both_paths(tools, os.path.join(folder, "model.onnx"), inputs,
                          scratch, lambda out_dir: compare(out_dir, folder),
                          dims_args(folder))


def main():
    parser = tools_parser(__doc__)
    parser.add_argument("--data", default=os.path.join(HERE, "data"))
    parser.add_argument("--only", default="")
    tools = parser.parse_args()
    models = model_folders(tools.data, tools.only)
    if not models:
        print("no models to check")
        return 1
    unexpected = 0
    with tempfile.TemporaryDirectory(prefix="kiln-models-") as scratch:
        os.environ.setdefault("KILN_CACHE_DIR", os.path.join(scratch, "cache"))
        for name in models:
            work = os.path.join(scratch, name)
            os.makedirs(work)
            reference, host = check(tools, os.path.join(tools.data, name), work)
            gap = KNOWN_GAPS.get(name)
            if gap:
                failed = [r for r in (reference, host) if r]
                if len(failed) == 2 and all(gap in r for r in failed):
                    print(f"known-gap  {name}: {gap}")
                    continue
                unexpected += 1
                print(f"FAIL       {name}: listed as a gap ({gap}) but "
                      f"reference: {reference or 'pass'}; host: {host or 'pass'}")
                continue
            if reference or host:
                unexpected += 1
                print(f"FAIL       {name}: reference: {reference or 'pass'}; "
                      f"host: {host or 'pass'}")
            else:
                print(f"pass       {name} (reference and host backend)")
    print(f"\n{len(models)} models, {unexpected} unexpected results")
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main())
