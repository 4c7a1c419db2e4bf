#!/usr/bin/env python3
"""Turns the lit tests' runs on the host backend into runs on a GPU.

The lit suite checks every kernel family on the host backend (kiln-run
--backend host --check --compare-reference). A lent GPU machine has no lit,
FileCheck or split-file, so this script, run here, writes one shell script per
test under build-gpu/lit/ that replays the test's own kilnc and kiln-run lines
on the GPU: `--backend host` becomes `--backend cuda`, the host-only flags
(--check, --host-seed) go, `%if cuda-device` takes its GPU branch, and the
FileCheck halves of pipelines are dropped; %python is the GPU machine's
python3 (numpy, onnx and onnxruntime are there). What decides pass or fail there is
kiln-run's exit status, which --compare-reference sets when an output leaves
its tolerance, and the exit status of the test's own python checks. Lines expecting an error (`not`), lines needing tools the GPU
machine lacks (FileCheck, nm) and lines over the
shared corpus (which does not travel) are left out, and a test stops at the
first other line it cannot replay (what follows may read its files); each
script lists what it left out, and a test with host runs of which none can
be replayed is named on the output ("left out: TEST: why"), so that one
does not drop off the GPU's runs unseen (test/tools/gpu-lit-cases.test).

Usage: scripts/gpu_lit_cases.py [--out build-gpu/lit]  (after scripts/build.sh)
"""

import argparse
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOLS = {"kilnc", "kiln-run", "kiln-opt", "kiln-jit-example",
         "kiln-generate-example", "rm", "mkdir", "cp", "cmp", "diff", "touch",
         "test", "ls", "head", "cat", "ldd", "sh", "sed", "%python"}
SPLIT_FILE = "/usr/lib/llvm-22/bin/split-file"


def read_test(path):
    """The RUN: lines of a lit test, continuations joined, and its DEFINEs."""
    lines, defines, pending = [], {}, ""
    with open(path, errors="replace") as f:
        for raw in f:
            d = re.search(r"DEFINE:\s*(%\{\w+\})\s*=\s*(.*)$", raw)
            if d:
                defines[d.group(1)] = d.group(2).strip()
                continue
            m = re.search(r"RUN:\s?(.*)$", raw)
            if not m:
                continue
            text = m.group(1).rstrip()
            if text.endswith("\\"):
                pending += text[:-1] + " "
                continue
            lines.append(pending + text)
            pending = ""
    return lines, defines


def gpu_branch(line):
    """`%if cuda-device %{ A %} [%else %{ B %}]` as on a GPU: A."""
    m = re.match(r"\s*%if cuda-device %\{(.*?)%\}(\s*%else %\{.*%\})?\s*$",
                 line)
    return m.group(1).strip() if m else line


def commands(line):
    """The first word of each command of a line (after env assignments)."""
    out = []
    for part in re.split(r"\|\||&&|\|", line):
        words = part.split()
        while words and (words[0] in ("env", "cd") or "=" in words[0]):
            words = words[2:] if words[0] == "cd" else words[1:]
        if words:
            out.append(words[0])
    return out


def to_gpu(line):
    """The line for the GPU, or (None, why) when it cannot run there."""
    line = gpu_branch(line)
    if "%corpus" in line:
        return None, "reads the shared corpus"
    # Drop what checks the text; what remains must run on its own.
    line = re.split(r"\|\s*(FileCheck|count)\b", line)[0].strip()
    used = commands(line)
    if "not" in used:
        return None, "expects an error"
    # `rm -rf %t && split-file %s %t`: the case's folder starts empty.
    if "split-file" in used and set(used) <= {"rm", "split-file"}:
        return "", None
    missing = [c for c in used if c not in TOOLS]
    if missing:
        return None, "needs " + missing[0]
    line = line.replace("--backend host", "--backend cuda")
    line = re.sub(r"\s--backend=host\b", " --backend=cuda", line)
    line = re.sub(r"\s--check(?=\s|$)", "", line)
    line = re.sub(r"\s--host-seed[= ]\S+", "", line)
    return line, None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(ROOT, "build-gpu", "lit"))
    args = parser.parse_args()
    shutil.rmtree(args.out, ignore_errors=True)
    tests = []
    for dirpath, _, files in os.walk(os.path.join(ROOT, "test")):
        if "Inputs" in dirpath.split(os.sep) or "models" in dirpath.split(os.sep):
            continue
        for name in sorted(files):
            if name.endswith((".mlir", ".test", ".onnxtxt")):
                tests.append(os.path.join(dirpath, name))
    written = 0
    for test in sorted(tests):
        rel = os.path.relpath(test, ROOT)
        lines, defines = read_test(test)
        if not any("kiln-run" in l and "--backend host" in l or
                   "%if cuda-device" in l for l in lines):
            continue
        case = os.path.join(args.out, rel.replace(os.sep, "__"))
        os.makedirs(case)
        tmp = os.path.join(case, "t")
        body, skipped, cut = [], [], None
        for line in lines:
            for name, value in defines.items():
                line = line.replace(name, value)
            gpu, why = to_gpu(line)
            if cut or gpu is None:
                # A later line may read what this one would have written:
                # the test stops at the first line it cannot replay.
                why = why if gpu is None else "after " + cut
                skipped.append(f"# skipped ({why}): {line}")
                if gpu is None and why != "expects an error" and not cut:
                    cut = "a skipped line"
                continue
            if gpu == "":
                if "split-file" in line:
                    subprocess.run([SPLIT_FILE, test, tmp], check=True)
                continue
            rel_tmp = os.path.relpath(tmp, ROOT)
            # lit's `%%` is a literal `%`, never the start of a substitution
            # (`'%%d' %% s` in a python3 -c line).
            gpu = (gpu.replace("%%", "\0").replace("%python", "python3")
                   .replace("%t", f"$ROOT/{rel_tmp}")
                   .replace("%s", f"$ROOT/{rel}")
                   .replace("%S", f"$ROOT/{os.path.dirname(rel)}")
                   .replace("%kiln_src", "$ROOT")
                   .replace("%kiln_obj", "$ROOT/build-gpu")
                   .replace("\0", "%"))
            body.append(gpu)
        if not any("kiln-run" in l or "example" in l for l in body):
            shutil.rmtree(case)
            first = next((k for k in skipped if "(expects an error)" not in k),
                         skipped[0] if skipped else "# skipped (nothing): ")
            print(f"left out: {rel}: {first[len('# skipped ('):].split(')')[0]}")
            continue
        with open(os.path.join(case, "run.sh"), "w") as f:
            f.write("# " + rel + ", replayed on the CUDA backend "
                    "(scripts/gpu_lit_cases.py)\nset -ex\n")
            f.write("\n".join(skipped + body) + "\n")
        written += 1
    print(f"gpu_lit_cases: {written} tests under {os.path.relpath(args.out, ROOT)}")


if __name__ == "__main__":
    sys.exit(main())
