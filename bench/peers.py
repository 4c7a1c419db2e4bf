"""The systems Kiln is compared with, timed on the same inputs: PyTorch
eager, torch.compile (default and max-autotune; CUDA graphs allowed to all)
and onnxruntime. On a GPU every time comes from CUDA events around one run
with the inputs already on the device; on the CPU (a dry run) from the wall
clock, and the table says so. Also what the bench scripts share: writing
their table.
"""
import os
import statistics
import time

import numpy as np

TORCH_PEERS = ("eager", "compile", "max-autotune")


def summarize(ms):
    """min, median and p99 (nearest rank) of a list of milliseconds."""
    ms = sorted(ms)
    rank = max(int(np.ceil(0.99 * len(ms))), 1)
    return {"min": ms[0], "median": statistics.median(ms), "p99": ms[rank - 1]}


def time_calls(fn, warmup, iters, cuda):
    """Calls `fn` `warmup` times (at least once), then times `iters` calls:
    between CUDA events on a GPU, on the wall clock otherwise. Returns the
    milliseconds and the last call's result."""
    if cuda:
        import torch
    for _ in range(max(warmup, 1)):
        out = fn()
    ms = []
    for _ in range(iters):
        if cuda:
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            out = fn()
            end.record()
            end.synchronize()
            ms.append(start.elapsed_time(end))
        else:
            begin = time.perf_counter()
            out = fn()
            ms.append((time.perf_counter() - begin) * 1e3)
    return ms, out


def _dtype(torch, precision):
    return {"fp32": torch.float32, "fp16": torch.float16,
            "bf16": torch.bfloat16}[precision]


def torch_peer(case, peer, precision, device, warmup, iters):
    """Times `peer` on case's module; returns (times, outputs as numpy)."""
    import copy
    import torch
    dtype = _dtype(torch, precision)
    module = copy.deepcopy(case.module).to(device=device, dtype=dtype)
    args = []
    for value in case.inputs.values():
        tensor = torch.from_numpy(value).to(device)
        args.append(tensor.to(dtype) if tensor.is_floating_point() else tensor)
    if peer == "compile":
        module = torch.compile(module)
    elif peer == "max-autotune":
        module = torch.compile(module, mode="max-autotune")
    with torch.no_grad():
        ms, out = time_calls(lambda: module(*args), warmup, iters,
                             device == "cuda")
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return summarize(ms), [o.float().cpu().numpy() for o in outs]


def ort_peer(model_path, inputs, device, warmup, iters):
    """Times onnxruntime on the fp32 export; returns (times, outputs)."""
    import onnxruntime as ort
    providers = (["CUDAExecutionProvider"] if device == "cuda" else []) + [
        "CPUExecutionProvider"]
    session = ort.InferenceSession(model_path, providers=providers)
    for _ in range(max(warmup, 1)):
        outs = session.run(None, inputs)
    ms = []
    for _ in range(iters):
        begin = time.perf_counter()
        outs = session.run(None, inputs)
        ms.append((time.perf_counter() - begin) * 1e3)
    return summarize(ms), outs


def markdown_row(cells):
    """One row of a markdown table: `cells`, as text, between bars."""
    return "| " + " | ".join(str(c) for c in cells) + " |"


def add_row(rows, *cells):
    """Appends the markdown row of `cells` to `rows` and prints it at once,
    so that a long run shows its progress."""
    rows.append(markdown_row(cells))
    print(rows[-1], flush=True)


def publish(table, out):
    """Prints the markdown `table` and, when `out` names a file, writes it
    there too (making its folder)."""
    print(table)
    if out:
        os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
        with open(out, "w") as f:
            f.write(table)


def agreement(ours, theirs):
    """The largest difference relative to the reference's largest magnitude,
    over the outputs both have."""
    worst = 0.0
    for a, b in zip(ours, theirs):
        a = np.asarray(a, np.float64)
        b = np.asarray(b, np.float64)
        if a.shape != b.shape:
            return float("inf")
        scale = max(float(np.max(np.abs(b))), 1e-30) if b.size else 1.0
        if a.size:
            worst = max(worst, float(np.max(np.abs(a - b))) / scale)
    return worst
