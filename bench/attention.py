#!/usr/bin/env python3
"""Times Kiln's attention kernel against PyTorch's flash SDPA (issue 17).

For each shape (B, H, S, D): one kiln.attention over [B, H, S, D] query, key
and value tensors (no mask, scale 1/sqrt(D)), built with --precision P
--keep-io-types=false so the artifact is the attention kernel alone, timed by
`kiln-run --bench` (CUDA events around each run, device memory); then
torch.nn.functional.scaled_dot_product_attention restricted to the flash
backend on the same shapes, timed with CUDA events after a warm-up. Both
report the median; TFLOP/s counts 4*B*H*S*S*D operations (the two products).
Kiln's kernel is timed in each of --configs: its default, and overrides of
the compiler's choice of configuration (lib/Target/CUDA/AttentionConfig.cpp),
given as kilnc's flags without their dashes: attention-wgmma for Hopper's
wgmma instead of mma.sync, attention-warps=8 warps a block,
attention-rows-per-warp=16 or 32 query rows a warp (mma.sync),
attention-tile-keys=32, 64 or (wgmma) 128 keys a tile,
attention-kv-stages=1 for one buffer each for the key and value tiles where
two are the default (two m-tiles), attention-barriers=2 for
FlashAttention-2's two-barrier order with one buffer each,
attention-lazy-rescale=false to move the running maximum at every rise;
`+` joins several. One call on the GPU compares them on one machine, and
the report of each build names the configuration it ran.
Decoding shapes (one query row over a long cache: B, H, 1, S keys, D) time
the split-keys form (flash-decoding) and report the bandwidth of reading the
keys and values once, 2*B*H*S*D 16-bit elements, in GB/s.
Precision `tf32` times the fp32 kernel built with --allow-tf32 (TF32 tensor
cores, four warps) against SDPA in fp32 with TF32 matmuls allowed (flash
has no fp32 kernel: the memory-efficient one), the decode bandwidth then in
fp32 elements.
Kiln and SDPA get the same query, key and value values (make_inputs:
float32 arrays, rounded to the 16-bit type by each). Correctness is not
checked here: the lit tests and scripts/gpu_check.sh compare the same kernel
with the reference at smaller shapes.

  bench/attention.py --tools build-gpu/bin [--precisions fp16,bf16,tf32]
                     [--out table.md]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402

SHAPES = [(8, 16, 512, 64), (8, 16, 512, 128), (8, 16, 2048, 64),
          (8, 16, 2048, 128)]
# (B, H, keys, D) with one query row.
DECODE_SHAPES = [(1, 32, 4096, 128), (8, 32, 2048, 128), (1, 12, 1024, 64)]


def attention_mlir(b, h, s, d, keys=None):
    keys = s if keys is None else keys
    q = f"tensor<{b}x{h}x{s}x{d}xf32>"
    kv = f"tensor<{b}x{h}x{keys}x{d}xf32>"
    return (f"func.func @main(%q: {q}, %k: {kv}, %v: {kv}) -> {q} {{\n"
            f"  %a = kiln.attention %q, %k, %v {{scale = {d ** -0.5} : f32}}"
            f" : ({q}, {kv}, {kv}) -> {q}\n"
            f"  return %a : {q}\n}}\n")


def make_inputs(work, shape, keys=None):
    """Query, key and value arrays for `shape` (float32, seeded by the
    shape), saved in `work` as q.npy, k.npy and v.npy under the shape's
    name: Kiln (kiln-run --input, rounded to the kernel's 16-bit type) and
    SDPA (converted by torch) get the same values."""
    import numpy as np
    b, h, s, d = shape
    rng = np.random.default_rng([b, h, s, d, keys or 0])
    kv = (b, h, s if keys is None else keys, d)
    arrays = {"q": rng.standard_normal(shape, np.float32),
              "k": rng.standard_normal(kv, np.float32),
              "v": rng.standard_normal(kv, np.float32)}
    name = "inputs_%dx%dx%dx%d" % shape + ("" if keys is None else "_keys%d" % keys)
    paths = {}
    for tensor, array in arrays.items():
        paths[tensor] = os.path.join(work, f"{name}_{tensor}.npy")
        np.save(paths[tensor], array)
    return arrays, paths


def kiln_ms(tools, work, shape, precision, config, warmup, iters, paths,
            keys=None):
    name = "attention_%dx%dx%dx%d" % shape
    if keys is not None:
        name += "_keys%d" % keys
    path = os.path.join(work, name + ".mlir")
    with open(path, "w") as f:
        f.write(attention_mlir(*shape, keys=keys))
    build = (["--precision", "fp32", "--allow-tf32"] if precision == "tf32"
             else ["--precision", precision, "--keep-io-types=false"])
    cmd = [os.path.join(tools, "kiln-run"), path, "--backend", "cuda"] + \
        build + ["--bench", "--warmup", str(warmup), "--iters", str(iters)]
    for tensor, file in paths.items():
        cmd += ["--input", f"{tensor}={file}"]
    if config != "default":
        cmd += ["--" + flag for flag in config.split("+")]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{out.stdout}{out.stderr}")
    m = re.search(r"bench: device:.*?median ([0-9.]+) ?(ms|us)", out.stdout)
    if not m:
        sys.exit(f"no device time in:\n{out.stdout}")
    return float(m.group(1)) / (1000.0 if m.group(2) == "us" else 1.0)


def sdpa_ms(arrays, precision, warmup, iters, cudnn=False):
    """SDPA's median ms over `arrays` (make_inputs'): FlashAttention-2's
    backend (memory-efficient for TF32, which flash does not take), or with
    `cudnn` cuDNN's; None where the backend refuses the shape or type."""
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16,
             "tf32": torch.float32}[precision]
    backend = (SDPBackend.CUDNN_ATTENTION if cudnn
               else SDPBackend.EFFICIENT_ATTENTION if precision == "tf32"
               else SDPBackend.FLASH_ATTENTION)
    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    q, k, v = (torch.from_numpy(arrays[t]).to("cuda", dtype) for t in "qkv")
    try:
        with sdpa_kernel([backend]):
            times, _ = peers.time_calls(
                lambda: torch.nn.functional.scaled_dot_product_attention(
                    q, k, v), warmup, iters, cuda=True)
    except RuntimeError:
        return None
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", default=os.path.join("build-gpu", "bin"))
    parser.add_argument("--work", default=os.path.join("build-gpu", "attention"))
    parser.add_argument("--precisions", default="fp16,bf16")
    parser.add_argument(
        "--configs", default="default,attention-wgmma,"
        "attention-wgmma+attention-tile-keys=64",
        help="comma-separated: 'default' or kilnc flags without their "
        "dashes, joined by '+' (attention-warps=8+attention-tile-keys=32)")
    parser.add_argument(
        "--shapes", default=",".join("x".join(map(str, x)) for x in SHAPES),
        help="comma-separated BxHxSxD (default: the issue's four)")
    parser.add_argument(
        "--decode-shapes",
        default=",".join("x".join(map(str, x)) for x in DECODE_SHAPES),
        help="comma-separated BxHxKEYSxD with one query row; '' for none")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--iters", type=int, default=30)
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    shapes, decode_shapes = (
        [tuple(int(n) for n in x.split("x")) for x in text.split(",") if x]
        for text in (args.shapes, args.decode_shapes))
    os.makedirs(args.work, exist_ok=True)
    rows = ["| precision | B | H | S | D | config | Kiln ms | Kiln TFLOP/s | "
            "SDPA ms | SDPA TFLOP/s | Kiln / SDPA speed | cuDNN SDPA ms | "
            "Kiln / cuDNN speed |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for precision in args.precisions.split(","):
        # Largest first: a run cut off at its time limit keeps the shape
        # the goal is stated at (D=128, S=2048).
        for shape in sorted(shapes, key=lambda x: -x[2] * x[2] * x[3]):
            b, h, s, d = shape
            flops = 4.0 * b * h * s * s * d
            arrays, paths = make_inputs(args.work, shape)
            t = sdpa_ms(arrays, precision, args.warmup, args.iters)
            c = sdpa_ms(arrays, precision, args.warmup, args.iters, cudnn=True)
            # The TF32 kernel has one form.
            configs = (["default"] if precision == "tf32"
                       else args.configs.split(","))
            for config in configs:
                k = kiln_ms(args.tools, args.work, shape, precision, config,
                            args.warmup, args.iters, paths)
                peers.add_row(rows, precision, b, h, s, d, config, f"{k:.3f}",
                              f"{flops / k / 1e9:.1f}", f"{t:.3f}",
                              f"{flops / t / 1e9:.1f}", f"{t / k:.2f}x",
                              "-" if c is None else f"{c:.3f}",
                              "-" if c is None else f"{c / k:.2f}x")
    rows += ["", "| precision | B | H | keys | D | Kiln ms | Kiln GB/s | "
             "SDPA ms | SDPA GB/s | Kiln / SDPA speed |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for precision in args.precisions.split(","):
        for b, h, keys, d in decode_shapes:
            shape = (b, h, 1, d)
            moved = 2.0 * b * h * keys * d * (4 if precision == "tf32" else 2)
            arrays, paths = make_inputs(args.work, shape, keys)
            t = sdpa_ms(arrays, precision, args.warmup, args.iters)
            k = kiln_ms(args.tools, args.work, shape, precision, "default",
                        args.warmup, args.iters, paths, keys)
            peers.add_row(rows, precision, b, h, keys, d, f"{k:.4f}",
                          f"{moved / k / 1e6:.0f}", f"{t:.4f}",
                          f"{moved / t / 1e6:.0f}", f"{t / k:.2f}x")
    peers.publish("\n".join(rows) + "\n", args.out)


if __name__ == "__main__":
    main()
