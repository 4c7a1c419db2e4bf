#!/usr/bin/env python3
"""Reads the SASS of the kernels kilnc builds, without a GPU.

Compiles MODEL with kilnc (the options after `--`) into a fresh kernel
cache, takes the sm_90a cubin out of the cache entry, disassembles it with
nvdisasm (on PATH, under /usr/local/cuda/bin, or from the PyPI package
nvidia-cuda-nvdisasm) and prints, for each kernel (or --kernel NAME), its
instruction count and each loop's: its length and its opcodes by
count, nested loops indented. A loop is counted once, as ptxas laid it
out (branches inside it included, taken or not): static counts, not the
instructions a run issues. --sass prints the
instructions themselves.

  scripts/kernel_sass.py model.onnx --kernel kiln_attention_0 -- --precision fp16
"""
import argparse
import collections
import glob
import importlib.util
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile


def find_nvdisasm():
    """nvdisasm's path, or None."""
    found = shutil.which("nvdisasm")
    if found:
        return found
    candidates = ["/usr/local/cuda/bin/nvdisasm"]
    spec = importlib.util.find_spec("nvidia")
    for root in (spec.submodule_search_locations or []) if spec else []:
        candidates += glob.glob(os.path.join(root, "cu*", "bin", "nvdisasm"))
    for path in candidates:
        if os.access(path, os.X_OK):
            return path
    return None


def cubin_of(entry):
    """The cubin in a kernel cache entry (lib/Compiler/Nvrtc.cpp, writeEntry):
    8 bytes of magic, a checksum, the cubin's, PTX's and ptxas log's sizes
    (little-endian u64), then the three."""
    data = open(entry, "rb").read()
    if len(data) < 40:
        sys.exit(f"kernel_sass: {entry} is no kernel cache entry")
    cubin_size, = struct.unpack_from("<Q", data, 16)
    cubin = data[40:40 + cubin_size]
    if len(cubin) != cubin_size or not cubin.startswith(b"\x7fELF"):
        sys.exit(f"kernel_sass: no cubin in {entry}")
    return cubin


def functions(sass):
    """{kernel: [instruction text]} and {kernel: {label: index}}."""
    code, labels = collections.OrderedDict(), {}
    name, pending = None, []
    for line in sass.splitlines():
        header = re.match(r"\s*\.text\.(\S+):", line)
        if header:
            name = header.group(1)
            code[name], labels[name] = [], {}
            continue
        if name is None:
            continue
        label = re.match(r"\s*(\.L_x_\d+):", line)
        if label:
            pending.append(label.group(1))
            continue
        instruction = re.match(r"\s*/\*[0-9a-f]+\*/\s+(.*?)\s*;", line)
        if instruction:
            for each in pending:
                labels[name][each] = len(code[name])
            pending = []
            code[name].append(instruction.group(1))
    return code, labels


def opcode(instruction):
    words = instruction.split()
    return words[1] if words[0].startswith("@") and len(words) > 1 else words[0]


def loops(code, labels):
    """(first, last) of each backward branch's range, outer ones first."""
    found = set()
    for i, text in enumerate(code):
        target = re.search(r"BRA\s+`\((\.L_x_\d+)\)", text)
        if target and labels.get(target.group(1), i + 1) <= i:
            found.add((labels[target.group(1)], i))
    return sorted(found, key=lambda r: (r[0], -r[1]))


def main():
    args_in = sys.argv[1:]
    kilnc_args = []
    if "--" in args_in:
        split = args_in.index("--")
        args_in, kilnc_args = args_in[:split], args_in[split + 1:]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", nargs="?")
    parser.add_argument("--which", action="store_true",
                        help="print nvdisasm's path (exit 1 without one)")
    parser.add_argument("--opcodes", default="",
                        help="comma-separated opcode prefixes (HMMA,LDL): "
                        "each loop's count of each, in this order")
    parser.add_argument("--kernel", default="")
    parser.add_argument("--sass", action="store_true",
                        help="print the instructions too")
    parser.add_argument("--top", type=int, default=12,
                        help="opcodes shown a loop")
    parser.add_argument("--kilnc", default=shutil.which("kilnc") or "kilnc")
    args = parser.parse_args(args_in)
    nvdisasm = find_nvdisasm()
    if args.which:
        print(nvdisasm or "no nvdisasm")
        return 0 if nvdisasm else 1
    if not nvdisasm:
        sys.exit("kernel_sass: no nvdisasm (pip install nvidia-cuda-nvdisasm)")
    if not args.model:
        parser.error("a model is needed")
    wanted = [w for w in args.opcodes.split(",") if w]
    with tempfile.TemporaryDirectory() as work:
        env = dict(os.environ, KILN_CACHE_DIR=os.path.join(work, "cache"))
        built = subprocess.run(
            [args.kilnc, args.model, "-q", "-o", os.path.join(work, "m.so")]
            + kilnc_args, env=env, capture_output=True, text=True)
        if built.returncode != 0:
            sys.exit(f"kernel_sass: kilnc failed\n{built.stderr}")
        entries = glob.glob(os.path.join(work, "cache", "*.kcache"))
        shown = 0
        for entry in entries:
            cubin = os.path.join(work, "kernels.cubin")
            with open(cubin, "wb") as f:
                f.write(cubin_of(entry))
            sass = subprocess.run([nvdisasm, "-c", cubin], check=True,
                                  capture_output=True, text=True).stdout
            code, labels = functions(sass)
            for name, instructions in code.items():
                if args.kernel and name != args.kernel:
                    continue
                shown += 1
                counts = collections.Counter(opcode(t) for t in instructions)
                print(f"{name}: {len(instructions)} instructions" + "".join(
                    f", {w} {sum(v for k, v in counts.items() if k.startswith(w))}"
                    for w in wanted))
                ranges = loops(instructions, labels[name])
                for first, last in ranges:
                    depth = sum(a <= first and last <= b and (a, b) != (first, last)
                                for a, b in ranges)
                    counts = collections.Counter(
                        opcode(t) for t in instructions[first:last + 1])
                    listed = ([(w, sum(v for k, v in counts.items()
                                       if k.startswith(w))) for w in wanted]
                              if wanted else counts.most_common(args.top))
                    print(f"  {'  ' * depth}loop {first}-{last}: "
                          f"{last - first + 1} instructions: " +
                          ", ".join(f"{k} {v}" for k, v in listed))
                if args.sass:
                    for i, text in enumerate(instructions):
                        print(f"  {i:5d}  {text}")
    if not shown:
        sys.exit(f"kernel_sass: no kernel {args.kernel}" if args.kernel
                 else "kernel_sass: the model has no kernels")
    return 0


if __name__ == "__main__":
    sys.exit(main())
