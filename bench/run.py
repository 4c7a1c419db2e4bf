#!/usr/bin/env python3
"""Times Kiln against its peers on the models DESIGN.md names, and writes
one table: latency, the ratio to each peer, and the fraction of the roofline.

On the GPU machine (the tools packed by scripts/gpu_bundle.sh and carried):
  bench/run.py --tools build-gpu/bin --out bench/results/$(date +%F)-h200.md

Without a GPU, the same harness end to end on the host backend, with small
models (nothing it prints is a GPU time):
  bench/run.py --dry-run --backend host
  bench/run.py --dry-run --backend host --onnx test/models/fresh/bert-torchscript \\
      --peers ort     # on existing exports, without torch

For each case: export (torch, random weights), `kilnc --precision P
--report=json` (the roofline floor on --roofline-gpu), `kiln-run --bench`
(with the inputs used everywhere), then each peer on the same inputs. Every
output is compared with an fp32 reference (onnxruntime on the fp32 export,
or PyTorch eager in fp32); a disagreement beyond the precision's tolerance
fails the run, so a fast wrong answer never makes the table.
"""
import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models  # noqa: E402
import peers  # noqa: E402

# The largest output difference, relative to the reference's largest
# magnitude, that counts as agreeing with the fp32 reference.
TOLERANCE = {"fp32": 1e-3, "fp16": 3e-2, "bf16": 1e-1}


def run(cmd):
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{result.stdout}{result.stderr}")
    return result.stdout


def onnx_case(folder):
    """A case from an existing export: FOLDER/model.onnx, its inputs in
    FOLDER/inputs/NAME.npy and, for symbolic dims, their values in
    FOLDER/dims."""
    import onnx
    model = onnx.load(os.path.join(folder, "model.onnx"),
                      load_external_data=False)
    case = models.Case(os.path.basename(os.path.normpath(folder)), "onnx", 0, 0,
                       source=folder)
    case.inputs = {i.name: np.load(os.path.join(folder, "inputs",
                                                i.name + ".npy"))
                   for i in model.graph.input}
    case.output_names = [o.name for o in model.graph.output]
    dims = os.path.join(folder, "dims")
    case.dims = open(dims).read().strip() if os.path.exists(dims) else ""
    return case


def kiln(args, case, folder, model_path, precision):
    """Compiles and times one precision; returns (times, floor_us, outputs)."""
    so = os.path.join(folder, f"model-{precision}.so")
    compile_cmd = [os.path.join(args.tools, "kilnc"), model_path, "-o", so,
                   "--precision", precision, "--report=json", "-q",
                   "--roofline-gpu", args.roofline_gpu]
    if case.dims:
        compile_cmd += ["--dim", case.dims]
    report = json.loads(run(compile_cmd))
    out_dir = os.path.join(folder, f"out-{precision}")
    run_cmd = [os.path.join(args.tools, "kiln-run"), so, "--backend",
               args.backend, "--bench", "--warmup", str(args.warmup),
               "--iters", str(args.iters), "--output-dir", out_dir]
    for name in case.inputs:
        run_cmd += ["--input",
                    f"{name}={os.path.join(folder, 'inputs', name + '.npy')}"]
    text = run(run_cmd)
    # On a GPU the device-memory line (CUDA events), as the peers are timed;
    # on the host backend the wall-clock line is the only one.
    summary = r"min ([0-9.]+) ms, median ([0-9.]+) ms, p99 ([0-9.]+)"
    match = re.search(r"bench: device: .*?" + summary, text)
    if args.backend == "cuda" and not match:
        sys.exit(f"no device time from {' '.join(run_cmd)}:\n{text}")
    match = match or re.search(summary, text)
    times = {"min": float(match.group(1)), "median": float(match.group(2)),
             "p99": float(match.group(3))}
    outputs = [np.load(os.path.join(out_dir, name + ".npy"))
               for name in case.output_names]
    return times, report["roofline"]["floor_us"], outputs


def device_name(backend):
    if backend == "host":
        return f"host backend on {platform.processor() or platform.machine()}"
    try:
        return run(["nvidia-smi", "--query-gpu=name",
                    "--format=csv,noheader"]).splitlines()[0].strip()
    except (OSError, SystemExit):
        return "unknown GPU"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "build", "bin"))
    parser.add_argument("--backend", default="cuda", choices=["cuda", "host"])
    parser.add_argument("--dry-run", action="store_true",
                        help="small models, few runs: exercises the harness")
    parser.add_argument("--cases", default="",
                        help="comma-separated case names (default: all)")
    parser.add_argument("--onnx", default="",
                        help="comma-separated export folders to use instead "
                             "of exporting with torch")
    parser.add_argument("--exporter", default="torchscript",
                        choices=["torchscript", "dynamo"])
    parser.add_argument("--precisions", default="fp16,bf16")
    parser.add_argument("--peers", default="eager,compile,max-autotune,ort")
    parser.add_argument("--warmup", type=int, default=None)
    parser.add_argument("--iters", type=int, default=None)
    parser.add_argument("--roofline-gpu", default="h100")
    parser.add_argument("--work", default=os.path.join("build", "bench"))
    parser.add_argument("--out", default="",
                        help="the table's file (default: stdout only)")
    args = parser.parse_args()
    args.warmup = args.warmup if args.warmup is not None else (
        2 if args.dry_run else 20)
    args.iters = args.iters if args.iters is not None else (
        5 if args.dry_run else 200)
    wanted = [p for p in args.peers.split(",") if p]
    if args.onnx:
        cases = [onnx_case(f) for f in args.onnx.split(",")]
        wanted = [p for p in wanted if p == "ort"]
    else:
        cases = models.cases(args.dry_run)
        if args.cases:
            cases = [c for c in cases if c.name in args.cases.split(",")]
    device = "cuda" if args.backend == "cuda" else "cpu"

    rows, failures = [], []
    for case in cases:
        folder = os.path.join(args.work, case.name)
        os.makedirs(folder, exist_ok=True)
        if case.source:
            model_path = os.path.join(case.source, "model.onnx")
            models.save_inputs(case, folder)
        else:
            models.build(case, args.dry_run)
            model_path = models.export(case, folder, args.exporter)
        print(f"{case.name}: {model_path}", file=sys.stderr)
        # The fp32 reference every output is judged against, and onnxruntime
        # as a peer (fp32: it runs the export as it is).
        ort_times = None
        if "ort" in wanted:
            ort_times, reference = peers.ort_peer(model_path, case.inputs,
                                                  device, args.warmup,
                                                  args.iters)
        else:
            _, reference = peers.torch_peer(case, "eager", "fp32", device,
                                            1, 1)
        for precision in args.precisions.split(","):
            times, floor_us, ours = kiln(args, case, folder, model_path,
                                         precision)
            row = {"case": case.name, "precision": precision,
                   "kiln": times, "floor_us": floor_us,
                   "diff": peers.agreement(ours, reference), "peers": {},
                   "peer_diffs": {}}
            for peer in wanted:
                if peer in peers.TORCH_PEERS:
                    row["peers"][peer], theirs = peers.torch_peer(
                        case, peer, precision, device, args.warmup,
                        args.iters)
                    # The same measure for the peer at this precision: how
                    # far 16 bits alone take this model from fp32.
                    row["peer_diffs"][peer] = peers.agreement(theirs,
                                                              reference)
            if ort_times:
                row["peers"]["ort (fp32)"] = ort_times
            if row["diff"] > TOLERANCE[precision]:
                failures.append(f"{case.name} {precision}: differs from the "
                                f"fp32 reference by {row['diff']:.2e}")
            rows.append(row)
            print(f"{case.name} {precision}: kiln median "
                  f"{times['median']:.3f} ms", file=sys.stderr)

    peers.publish(render(rows, args), args.out)
    for failure in failures:
        print("error:", failure, file=sys.stderr)
    return 1 if failures else 0


def render(rows, args):
    peer_names = []
    for r in rows:
        peer_names += [p for p in r["peers"] if p not in peer_names]
    when = datetime.date.today().isoformat()
    lines = [f"# Kiln bench: {device_name(args.backend)}, {when}", ""]
    if args.backend == "host" or args.dry_run:
        lines += ["**Dry run**: the harness end to end"
                  + (" on the host backend, which emulates the GPU"
                     if args.backend == "host" else "")
                  + "; these are not measurements of Kiln's speed.", ""]
    lines += [f"Kiln: `kiln-run --bench`, {args.iters} runs after "
              f"{args.warmup} warm-up, "
              + ("its device line: CUDA events around each run, inputs and "
                 "outputs in device memory, CUDA-graph replays after the "
                 "first." if args.backend == "cuda" else
                 "whole runs with host-memory inputs and outputs (their "
                 "copies included).")
              + " Peers: "
              + ("inputs on the device, CUDA events (onnxruntime: wall "
                 "clock of `session.run`)." if args.backend == "cuda" else
                 "wall clock on the CPU.")
              + f" Roofline floor: `kilnc --report`, {args.roofline_gpu} "
              "datasheet peaks. diff: the largest output difference from "
              "the fp32 reference, relative to its largest magnitude (each "
              "PyTorch peer's too, at the same precision).", ""]
    header = ["case", "precision", "Kiln median µs (p99)"]
    header += [f"{p} median µs" for p in peer_names]
    header += [f"Kiln speedup vs {p}" for p in peer_names]
    header += ["floor µs", "of roofline", "diff"]
    diff_peers = [p for p in peer_names
                  if any(p in r["peer_diffs"] for r in rows)]
    header += [f"{p} diff" for p in diff_peers]
    lines.append(peers.markdown_row(header))
    lines.append("|" + "---|" * len(header))
    for r in rows:
        k = r["kiln"]["median"]
        cells = [r["case"], r["precision"],
                 f"{k * 1e3:.1f} ({r['kiln']['p99'] * 1e3:.1f})"]
        cells += [f"{r['peers'][p]['median'] * 1e3:.1f}" if p in r["peers"]
                  else "-" for p in peer_names]
        cells += [f"{r['peers'][p]['median'] / k:.2f}x" if p in r["peers"]
                  else "-" for p in peer_names]
        cells += [f"{r['floor_us']:.2f}", f"{r['floor_us'] / (k * 1e3):.1%}",
                  f"{r['diff']:.1e}"]
        cells += [f"{r['peer_diffs'][p]:.1e}" if p in r["peer_diffs"]
                  else "-" for p in diff_peers]
        lines.append(peers.markdown_row(cells))
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
