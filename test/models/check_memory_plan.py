#!/usr/bin/env python3
"""Checks the memory plan of every model against its lower bound.

  check_memory_plan.py --kilnc build/bin/kilnc [--corpus DIR] [--max-ratio 1.1]

For each exported architecture in test/models/data and each model of
../shared/corpus/models (symbolic dims bound as check_corpus.py binds them),
compiles with `kilnc --emit=plan --report=json` and reads peak_arena_bytes,
live_lower_bound_bytes (the largest set of buffers live at one time, which
no plan can beat) and weight_bytes. Fails when a peak exceeds --max-ratio
times its lower bound, or a model does not compile (corpus models listed
as gaps in check_corpus.py excepted, reported as such).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from check_corpus import DIMS, KNOWN_GAPS  # noqa: E402


def shape_args(path):
    model = onnx.load(path, load_external_data=False)
    initializers = {t.name for t in model.graph.initializer}
    args = []
    for info in model.graph.input:
        dims = info.type.tensor_type.shape.dim
        if info.name in initializers or all(d.dim_value for d in dims):
            continue
        shape = [d.dim_value if d.dim_value else DIMS[d.dim_param] for d in dims]
        args += ["--input-shape", f"{info.name}={'x'.join(map(str, shape))}"]
    return args


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kilnc", required=True)
    parser.add_argument("--max-ratio", type=float, default=1.1)
    parser.add_argument("--corpus", default=os.environ.get(
        "KILN_CORPUS_DIR", os.path.join(REPO, "..", "shared", "corpus")))
    args = parser.parse_args()
    models = []
    data = os.path.join(HERE, "data")
    for name in sorted(os.listdir(data)):
        models.append((name, os.path.join(data, name, "model.onnx")))
    corpus = os.path.join(args.corpus, "models")
    if os.path.isdir(corpus):
        models += [(f, os.path.join(corpus, f)) for f in sorted(os.listdir(corpus))
                   if f.endswith(".onnx")]
    else:
        print(f"corpus models skipped: no corpus at {corpus}")
    failures = 0
    print(f"{'model':45} {'peak':>10} {'bound':>10} {'ratio':>6} {'weights':>10}")
    with tempfile.TemporaryDirectory(prefix="kiln-memory-") as work:
        for name, path in models:
            result = subprocess.run(
                [args.kilnc, path, "--emit=plan", "-o", os.path.join(work, "plan.txt"),
                 "--report=json"] + shape_args(path),
                capture_output=True, text=True, timeout=600)
            if result.returncode != 0:
                gap = KNOWN_GAPS.get(name)
                if gap and gap in result.stderr:
                    print(f"{name:45} does not compile (a known gap: {gap})")
                    continue
                failures += 1
                print(f"{name:45} FAIL: {result.stderr.strip().splitlines()[:1]}")
                continue
            report = json.loads(result.stdout)
            peak, bound = report["peak_arena_bytes"], report["live_lower_bound_bytes"]
            ratio = peak / bound if bound else (1.0 if peak == 0 else float("inf"))
            ok = ratio <= args.max_ratio
            failures += not ok
            print(f"{name:45} {peak:10d} {bound:10d} {ratio:6.3f} "
                  f"{report['weight_bytes']:10d}{'' if ok else '  FAIL'}")
    print(f"\n{len(models)} models, {failures} failed (peak <= {args.max_ratio}x bound wanted)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
