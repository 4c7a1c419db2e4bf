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
import quantized  # noqa: E402

# The largest output difference, relative to the reference's largest
# magnitude, that counts as agreeing with the fp32 reference.
TOLERANCE = {"fp32": 1e-3, "tf32": 1e-2, "fp16": 3e-2, "bf16": 1e-1}

# What each precision's rows are: TF32 rows are one TF32 pass in Kiln
# (kilnc --allow-tf32) against PyTorch with allow_tf32, not PyTorch's
# fp32-accurate default.
PRECISION_LABEL = {"fp32": "fp32", "fp16": "fp16", "bf16": "bf16",
                   "tf32": "tf32 (one TF32 pass; PyTorch allow_tf32)"}

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
    # A KV-cache export runs as a decoding loop would run it.
    models.in_place_cache(case, os.path.join(folder, "model.onnx"))
    return case


def compile_kiln(args, case, folder, model_path, precision, gemm_kernels,
                 variant="", extra=()):
    """Compiles one precision; returns (the .so, the roofline floor in µs).
    With `gemm_kernels` the artifact also offers Kiln's GEMM kernels (for
    the kiln-gemm peer); without --gemm a run still takes cuBLASLt's.
    `variant` names a quantized build (bench/quantized.py), which `extra`
    flags make."""
    so = os.path.join(folder, f"model-{precision}{'-' + variant if variant else ''}.so")
    flags = (["--allow-tf32"] if precision == "tf32" else
             ["--precision", precision]) + list(extra) + args.kilnc_flag
    if case.cache_in_place:
        flags.append("--kv-cache-in-place")
    if gemm_kernels:
        flags.append("--gemm-kernels")
    compile_cmd = [os.path.join(args.tools, "kilnc"), model_path, "-o", so,
                   *flags, "--report=json", "-q",
                   "--roofline-gpu", args.roofline_gpu]
    if case.dims:
        compile_cmd += ["--dim", case.dims]
    report = json.loads(run(compile_cmd))
    return so, report["roofline"]["floor_us"]


def time_kiln(args, case, folder, so, precision, round_index, gemm="",
              variant=""):
    """One round of Kiln's timing; returns (times, outputs). With `gemm`
    ("timed"), Kiln's own GEMM kernels race cuBLASLt's choice for each
    matmul at the first run (kiln-run --gemm)."""
    out_dir = os.path.join(folder, f"out-{precision}-{variant or 'float'}-"
                                   f"{gemm or 'cublaslt'}-{round_index}")
    run_cmd = [os.path.join(args.tools, "kiln-run"), so, "--backend",
               args.backend, "--bench", "--warmup", str(args.warmup),
               "--iters", str(args.iters), "--output-dir", out_dir]
    if gemm:
        run_cmd += ["--gemm", gemm]
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
    return times, outputs


class KilnGemmPeer:
    """Kiln with its own GEMM kernels (GemmEmitter.cpp, GemvEmitter.cpp,
    GemmWgmmaEmitter.cpp) racing cuBLASLt's choice for each matmul: the same
    .so as Kiln's row, timed as a peer so the table shows the two side by
    side and checks its outputs too."""

    name = "kiln own GEMMs"
    absent = ""

    def __init__(self, args, case, folder, so, precision):
        self.args, self.case, self.folder = args, case, folder
        self.so, self.precision, self.round = so, precision, 0

    def time(self, warmup, iters):
        times, outputs = time_kiln(self.args, self.case, self.folder, self.so,
                                   self.precision, self.round, gemm="timed")
        self.round += 1
        return times, outputs


def over_rounds(rounds):
    """The median of the rounds' medians, the spread of the medians
    ((max - min) / median) and the worst p99."""
    medians = [r["median"] for r in rounds]
    middle = float(np.median(medians))
    return {"median": middle, "p99": max(r["p99"] for r in rounds),
            "spread": (max(medians) - min(medians)) / middle if middle else 0.0,
            "rounds": len(rounds)}


def have_onnxruntime():
    try:
        import onnxruntime  # noqa: F401
        return True
    except ImportError:
        return False


def gpu_clocks(backend):
    """The GPU's clocks, temperature and power now (nvidia-smi), or ""."""
    if backend != "cuda":
        return ""
    try:
        return run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.mem,"
                    "clocks.max.sm,temperature.gpu,power.draw",
                    "--format=csv,noheader"]).splitlines()[0].strip()
    except (OSError, SystemExit):
        return "nvidia-smi unavailable"


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
                        help="comma-separated case or section names (bert, "
                             "vit, gpt2, llama, llama-prefill, "
                             "llama-prefill-2l; default: all)")
    parser.add_argument("--onnx", default="",
                        help="comma-separated export folders to use instead "
                             "of exporting with torch")
    parser.add_argument("--exporter", default="auto",
                        choices=["auto", "torchscript", "dynamo"],
                        help="auto: dynamo for the LLaMA and decoding cases "
                             "(the TorchScript exporter cannot trace "
                             "transformers' causal masks there), torchscript "
                             "for the others")
    parser.add_argument("--precisions", default="fp16,bf16",
                        help="fp16, bf16, fp32 and tf32 (kilnc --allow-tf32 "
                             "against PyTorch with allow_tf32)")
    parser.add_argument("--peers",
                        default=",".join(peers.TORCH_PEERS + ("ort", "kiln-gemm")),
                        help="the peers: PyTorch's, ort, and kiln-gemm (Kiln "
                             "with its own GEMM kernels timed against "
                             "cuBLASLt's, kiln-run --gemm timed)")
    parser.add_argument("--quantize", default="",
                        help="comma-separated quantized builds timed beside "
                             "each precision's row, Kiln alone (bench/"
                             "quantized.py): " + ", ".join(quantized.KINDS))
    parser.add_argument("--qdq-interpreter-tokens", type=int, default=0,
                        help="run Kiln's reference interpreter on a Q/DQ "
                             "build's model where its inputs have at most "
                             "this many elements, to judge an output past "
                             "its tolerance by DESIGN.md's float64 rule "
                             "(default 0: never; BERT-base at 128 tokens "
                             "takes it a minute or more of CPU time)")
    parser.add_argument("--kilnc-flag", action="append", default=[],
                        help="a kilnc flag for every Kiln build, such as "
                             "--gemm-norm-epilogue=false (repeatable)")
    parser.add_argument("--warmup", type=int, default=None)
    parser.add_argument("--iters", type=int, default=None,
                        help="timed calls a round (default 200; at least 100 "
                             "outside a dry run)")
    parser.add_argument("--rounds", type=int, default=None,
                        help="rounds of each system, interleaved (default 3)")
    parser.add_argument("--roofline-gpu", default="h100")
    parser.add_argument("--work", default=os.path.join("build", "bench"))
    parser.add_argument("--out", default="",
                        help="the table's file (default: stdout only)")
    args = parser.parse_args()
    args.warmup = args.warmup if args.warmup is not None else (
        2 if args.dry_run else 20)
    args.iters = args.iters if args.iters is not None else (
        5 if args.dry_run else 200)
    args.rounds = args.rounds if args.rounds is not None else (
        1 if args.dry_run else 3)
    if not args.dry_run and (args.iters < 100 or args.rounds < 3):
        parser.error("a measurement takes at least 100 timed calls in each of "
                     "3 rounds (--dry-run for fewer)")
    wanted = [p for p in args.peers.split(",") if p]
    kinds = [k for k in args.quantize.split(",") if k]
    for kind in kinds:
        if kind not in quantized.KINDS:
            parser.error(f"--quantize: {kind} is not one of "
                         + ", ".join(quantized.KINDS))
    if args.onnx:
        cases = [onnx_case(f) for f in args.onnx.split(",")]
        wanted = [p for p in wanted if p in ("ort", "kiln-gemm")]
    else:
        cases = models.cases(args.dry_run)
        if args.cases:
            wanted_cases = args.cases.split(",")
            cases = [c for c in cases
                     if c.name in wanted_cases or c.section in wanted_cases]
    device = "cuda" if args.backend == "cuda" else "cpu"

    rows, failures, absent, clocks = [], [], {}, []
    for case in cases:
        folder = os.path.join(args.work, case.name)
        os.makedirs(folder, exist_ok=True)
        if case.source:
            model_path = os.path.join(case.source, "model.onnx")
            models.save_inputs(case, folder)
        else:
            models.build(case, args.dry_run)
            exporter = args.exporter
            if exporter == "auto":
                exporter = ("dynamo" if case.family.startswith("llama") or
                            case.family.endswith("-decode") else "torchscript")
            model_path = models.export(case, folder, exporter)
        print(f"{case.name}: {model_path}", file=sys.stderr)
        # The fp32 reference every output is judged against: onnxruntime on
        # the CPU on the fp32 export, or PyTorch eager in fp32.
        if have_onnxruntime():
            reference = peers.ort_reference(model_path, case.inputs)
        else:
            reference = peers.torch_peer(case, "eager", "fp32",
                                         device).time(1, 1)[1]
        clocks.append((case.name, "start", gpu_clocks(args.backend)))
        for precision in args.precisions.split(","):
            so, floor_us = compile_kiln(args, case, folder, model_path,
                                        precision, "kiln-gemm" in wanted)
            prepared = []
            for name in wanted:
                if name in peers.TORCH_PEERS:
                    peer = peers.torch_peer(case, name, precision, device)
                elif name == "ort":
                    peer = peers.ort_peer(model_path, case.inputs, device)
                    peer.name = "ort (fp32)"
                elif name == "kiln-gemm":
                    peer = KilnGemmPeer(args, case, folder, so, precision)
                else:
                    continue
                if peer.absent:
                    absent[peer.name] = peer.absent
                else:
                    prepared.append(peer)
            # Rounds interleaved (Kiln, each peer, Kiln, ...), so that a
            # clock or thermal drift falls on every system alike; the
            # outputs of every timed round are checked.
            kiln_rounds, peer_rounds, diffs = [], {}, {}
            worst = 0.0
            for index in range(args.rounds):
                times, ours = time_kiln(args, case, folder, so, precision,
                                        index)
                kiln_rounds.append(times)
                worst = max(worst, peers.agreement(ours, reference))
                for peer in prepared:
                    times, theirs = peer.time(args.warmup, args.iters)
                    peer_rounds.setdefault(peer.name, []).append(times)
                    diffs[peer.name] = max(diffs.get(peer.name, 0.0),
                                           peers.agreement(theirs, reference))
            row = {"case": case.name, "precision": precision,
                   "kiln": over_rounds(kiln_rounds), "floor_us": floor_us,
                   "diff": worst, "cache_in_place": case.cache_in_place,
                   "peers": {p: over_rounds(r) for p, r in peer_rounds.items()},
                   "peer_diffs": diffs}
            if row["diff"] > TOLERANCE[precision]:
                failures.append(f"{case.name} {precision}: differs from the "
                                f"fp32 reference by {row['diff']:.2e}")
            rows.append(row)
            # Every peer's median too: a call cut off before the table is
            # written still has the row.
            medians = "".join(f", {p} {r['median'] * 1e3:.1f} µs"
                              for p, r in row["peers"].items())
            print(f"{case.name} {precision}: kiln median "
                  f"{row['kiln']['median'] * 1e3:.1f} µs{medians}",
                  file=sys.stderr)
        # The quantized builds, Kiln alone: beside the rows above in the
        # same call, against their own references.
        for kind in kinds:
            q_path, extra, q_reference = quantized.prepare(
                kind, model_path, case.inputs, folder)
            interpreter = (quantized.interpreter_outputs(
                args.tools, q_path, case.inputs, folder,
                args.qdq_interpreter_tokens)
                if q_reference is not None else None)
            for precision in args.precisions.split(","):
                so, floor_us = compile_kiln(args, case, folder, q_path,
                                            precision, False, kind, extra)
                tolerance = quantized.tolerance(kind, precision,
                                                TOLERANCE[precision])
                kiln_rounds, worst, notes, ruled = [], 0.0, [], ""
                for index in range(args.rounds):
                    times, ours = time_kiln(args, case, folder, so, precision,
                                            index, variant=kind)
                    kiln_rounds.append(times)
                    if q_reference is None:
                        worst = max(worst, peers.agreement(ours, reference))
                        if worst > tolerance:
                            notes.append(f"differs from the fp32 model's "
                                         f"reference by {worst:.2e}")
                        continue
                    worst = max(worst, peers.agreement(ours, q_reference))
                    passed, note = quantized.judge(
                        ours, q_reference, interpreter, tolerance, precision)
                    if not passed:
                        notes.append(note)
                    elif note:
                        ruled = note
                        print(f"{case.name} {precision} {kind}: {note}",
                              file=sys.stderr)
                row = {"case": case.name, "precision": precision,
                       "variant": kind, "kiln": over_rounds(kiln_rounds),
                       "floor_us": floor_us, "diff": worst, "peers": {},
                       "peer_diffs": {}, "float64_rule": bool(ruled)}
                if notes:
                    failures.append(f"{case.name} {precision} {kind}: "
                                    f"{notes[-1]}")
                rows.append(row)
                print(f"{case.name} {precision} {kind}: kiln median "
                      f"{row['kiln']['median'] * 1e3:.1f} µs", file=sys.stderr)
        clocks.append((case.name, "end", gpu_clocks(args.backend)))

    peers.publish(render(rows, args, absent, clocks), args.out)
    for failure in failures:
        print("error:", failure, file=sys.stderr)
    return 1 if failures else 0


def render(rows, args, absent, clocks):
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
    lines += [f"Each system: {args.rounds} rounds interleaved (Kiln, then "
              f"each peer, then Kiln again), each {args.iters} timed calls "
              f"after {args.warmup} warm-up; a cell is the median of the "
              "rounds' medians in µs, ± the spread of those medians ((max - "
              "min) / median), on the same input arrays for every system. "
              "Kiln: `kiln-run --bench`, "
              + ("its device line: CUDA events around each run, inputs and "
                 "outputs in device memory, CUDA-graph replays after the "
                 "first." if args.backend == "cuda" else
                 "whole runs with host-memory inputs and outputs (their "
                 "copies included).")
              + " PyTorch peers: "
              + ("inputs on the device, CUDA events around each call."
                 if args.backend == "cuda" else "wall clock on the CPU.")
              + " onnxruntime: wall clock of `session.run` (host inputs)."
              + f" Roofline floor: `kilnc --report`, {args.roofline_gpu} "
              "datasheet peaks. diff: the largest output difference of any "
              "timed round from the fp32 reference, relative to its largest "
              "magnitude (each peer's too, at the same precision)."
              + (" Quantized rows (Kiln alone): weights quantized by kilnc "
                 "are judged against the fp32 model's reference, so their "
                 "diff holds the quantization's error (tolerances in "
                 "bench/quantized.py); Q/DQ models against onnxruntime made "
                 "exact on the quantized model, or where marked, passed by "
                 "DESIGN.md's float64 rule against Kiln's reference "
                 "interpreter (bench/quantized.py says why)." if any(
                     r.get("variant") for r in rows) else ""), ""]
    for name, why in sorted(absent.items()):
        lines.append(f"- {name}: absent: {why}.")
    in_place = sorted({r["case"] for r in rows if r.get("cache_in_place")})
    if in_place:
        lines.append(f"- {', '.join(in_place)}: Kiln's build keeps the KV "
                     "cache in place (`kilnc --kv-cache-in-place`, the "
                     "cache's length symbolic up to the case's past), as a "
                     "decoding loop runs it: each past and its present are "
                     "one buffer, into which the step writes its new rows; "
                     "the peers return a new present.")
    if absent or in_place:
        lines.append("")
    header = ["case", "precision", "Kiln µs (p99)"]
    header += [f"{p} µs" for p in peer_names]
    header += [f"Kiln speedup vs {p}" for p in peer_names]
    header += ["floor µs", "of roofline", "diff"]
    diff_peers = [p for p in peer_names
                  if any(p in r["peer_diffs"] for r in rows)]
    header += [f"{p} diff" for p in diff_peers]
    lines.append(peers.markdown_row(header))
    lines.append("|" + "---|" * len(header))

    def cell(t):
        return f"{t['median'] * 1e3:.1f} ±{t['spread']:.0%}"

    for r in rows:
        k = r["kiln"]["median"]
        label = PRECISION_LABEL[r["precision"]]
        if r.get("variant"):
            label += ", " + quantized.LABEL[r["variant"]]
        cells = [r["case"], label,
                 f"{cell(r['kiln'])} ({r['kiln']['p99'] * 1e3:.1f})"]
        cells += [cell(r["peers"][p]) if p in r["peers"] else "-"
                  for p in peer_names]
        cells += [f"{r['peers'][p]['median'] / k:.2f}x" if p in r["peers"]
                  else "-" for p in peer_names]
        cells += [f"{r['floor_us']:.2f}", f"{r['floor_us'] / (k * 1e3):.1%}",
                  f"{r['diff']:.1e}" + (" (float64 rule)"
                                        if r.get("float64_rule") else "")]
        cells += [f"{r['peer_diffs'][p]:.1e}" if p in r["peer_diffs"]
                  else "-" for p in diff_peers]
        lines.append(peers.markdown_row(cells))
    if any(c for _, _, c in clocks):
        lines += ["", "GPU clocks (SM MHz, memory MHz, max SM MHz, °C, W) "
                  "at each case's start and end:", ""]
        lines += [f"- {case} {when_}: {c}" for case, when_, c in clocks]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
