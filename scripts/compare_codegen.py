#!/usr/bin/env python3
"""Records or compares what kilnc generates for the committed fresh exports.

  compare_codegen.py record --kilnc build/bin/kilnc --out BEFORE/
  (change the compiler, rebuild)
  compare_codegen.py record --kilnc build/bin/kilnc --out AFTER/
  compare_codegen.py compare BEFORE/ AFTER/ [--ignore-plan-config]

`record` compiles each model of test/models/fresh (with its `dims` file
where it has one) in fp32, fp16 and TF32, and writes the generated CUDA
(`--emit=cuda`) and the plan (`--emit=plan`) as NAME-MODE.cu and
NAME-MODE.plan. `compare` reports every file that differs: a refactor that
was meant to change no behaviour must leave them all byte-identical.
`--ignore-plan-config` drops the ` config ...` that plans print on launches
of configured kernels, for comparing with a build from before plans printed
it.
"""
import argparse
import difflib
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
FRESH = os.path.join(HERE, "..", "test", "models", "fresh")
MODES = {"fp32": [], "fp16": ["--precision", "fp16"],
         "tf32": ["--allow-tf32"]}


def record(kilnc, out, data):
    os.makedirs(out, exist_ok=True)
    failures = 0
    for name in sorted(os.listdir(data)):
        folder = os.path.join(data, name)
        model = os.path.join(folder, "model.onnx")
        if not os.path.exists(model):
            continue
        dims = []
        if os.path.exists(os.path.join(folder, "dims")):
            with open(os.path.join(folder, "dims")) as f:
                dims = ["--dim", f.read().strip()]
        for mode, flags in MODES.items():
            for emit, suffix in (("cuda", "cu"), ("plan", "plan")):
                path = os.path.join(out, f"{name}-{mode}.{suffix}")
                cmd = [kilnc, model, f"--emit={emit}", "-q", "-o", path] + \
                    dims + flags
                r = subprocess.run(cmd, capture_output=True, text=True)
                if r.returncode != 0:
                    failures += 1
                    print(f"failed: {' '.join(cmd)}\n{r.stderr.strip()}")
        print(f"recorded {name}", flush=True)
    return 1 if failures else 0


def strip_config(text):
    return "\n".join(line.split(" config ")[0] for line in text.split("\n"))


def compare(before, after, ignore_config):
    names = sorted(set(os.listdir(before)) | set(os.listdir(after)))
    differing = 0
    for name in names:
        a, b = os.path.join(before, name), os.path.join(after, name)
        if not (os.path.exists(a) and os.path.exists(b)):
            print(f"only in one: {name}")
            differing += 1
            continue
        with open(a) as f:
            x = f.read()
        with open(b) as f:
            y = f.read()
        if ignore_config and name.endswith(".plan"):
            x, y = strip_config(x), strip_config(y)
        if x != y:
            differing += 1
            print(f"differs: {name}")
            sys.stdout.writelines(list(difflib.unified_diff(
                x.splitlines(True), y.splitlines(True), a, b, n=1))[:40])
    print(f"{len(names)} files, {differing} differ")
    return 1 if differing else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("record")
    r.add_argument("--kilnc", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--data", default=FRESH)
    c = sub.add_parser("compare")
    c.add_argument("before")
    c.add_argument("after")
    c.add_argument("--ignore-plan-config", action="store_true")
    args = parser.parse_args()
    if args.command == "record":
        return record(args.kilnc, args.out, args.data)
    return compare(args.before, args.after, args.ignore_plan_config)


if __name__ == "__main__":
    sys.exit(main())
