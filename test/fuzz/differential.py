#!/usr/bin/env python3
"""The differential fuzz target: random small ONNX graphs (random_graphs.py),
compiled by Kiln and run on the host backend (the generated CUDA kernels,
executed on the CPU), compared with Kiln's reference interpreter within
DESIGN.md's numerics contract.

  differential.py --kiln-run build/bin/kiln-run --seconds 60 --seed 1 \\
      --crashes build-fuzz/crashes/differential
  differential.py --kiln-run build/bin/kiln-run --replay FILE.onnx...
  differential.py ... --backend cuda          the same graphs on the GPU

Each batch puts several graphs side by side in one model (one host compile
for all of them) in one mode: fp32 graphs held to rtol 1e-4 / atol 1e-5,
float16 graphs and fp32 graphs compiled with --precision fp16|bf16 held to
the 16-bit contract (relative L2 error 1e-2 per output; integers exactly).
A float output of an fp32 graph outside rtol/atol is judged again by
DESIGN.md's float64 rule: the model with every float widened to float64, run
on the interpreter, is the truth, and the host backend may be at most twice
as far from it as the fp32 interpreter is, plus 1e-6.

A failing batch is split: each graph that fails alone is reduced (the
output that fails with the fewest nodes behind it) and saved as
CRASHES/<id>.onnx (its kilnc flags in the model's metadata) beside
CRASHES/<id>.npz (its inputs) and CRASHES/<id>.txt (what differed). A crash
of kiln-run (a signal, an assertion, a sanitizer report, a timeout) is a
finding, and so is a graph that Kiln refuses: the generator writes only
valid graphs of ops and types Kiln takes, so a refusal is a gap or a bug
(an emitter that cannot compute what fusion grouped, generated code the
host compiler rejects). Saved findings replay with --replay, which
scripts/fuzz.sh runs over test/fuzz/regressions/differential first.

Once per mode, the judge is shown a wrong answer (a float output negated,
an integer one plus one) and must reject it, or the campaign stops.

The last line is the tally: batches, graphs, ops, runs, findings. Exit
status 1 when anything was found (or a replay fails).
"""
import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time

import ml_dtypes
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import random_graphs  # noqa: E402

RTOL, ATOL = 1e-4, 1e-5
REL_L2 = 1e-2
FLAGS_KEY = "kiln.differential.flags"
CRASH_SIGNS = ("Assertion", "LLVM ERROR", "AddressSanitizer",
               "UndefinedBehaviorSanitizer", "Stack dump", "UNREACHABLE",
               "Segmentation fault", "terminate called")


# -- running the tools ------------------------------------------------------
def write_feeds(feeds, folder):
    os.makedirs(folder, exist_ok=True)
    args = []
    for name, data in feeds.items():
        path = os.path.join(folder, name + ".npy")
        np.save(path, data)
        args += ["--input", f"{name}={path}"]
    return args


def run_tool(cmd, timeout):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout}s: {' '.join(cmd)}"
    return r.returncode, (r.stdout + r.stderr)


def is_crash(rc, log):
    return rc is None or rc < 0 or rc >= 128 or any(
        s in log for s in CRASH_SIGNS)


class Runner:
    """Runs models on the host (or CUDA) backend and on the interpreter."""

    def __init__(self, args, work):
        self.kiln_run, self.backend = args.kiln_run, args.backend
        self.timeout = args.timeout
        self.work = work
        self.runs = 0
        # kiln-run's options for every run (a kernel path's bound, to aim a
        # campaign at a form the small graphs do not reach by default).
        self.kiln_flags = args.kiln_flags.split()

    def run(self, model, feeds, flags, tag, check=False, host_seed=0):
        """Returns (status, detail, host outputs, reference outputs):
        status is 'ok', 'rejected' or 'crash'."""
        folder = os.path.join(self.work, tag)
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        path = os.path.join(folder, "model.onnx")
        onnx.save(model, path)
        inputs = write_feeds(feeds, os.path.join(folder, "in"))
        self.runs += 1
        cmd = [self.kiln_run, path, "--backend", self.backend,
               "--output-dir", os.path.join(folder, "host"),
               "--host-seed", str(host_seed)] + inputs + flags.split() + \
            self.kiln_flags
        if check and self.backend == "host":
            cmd.append("--check")
        rc, log = run_tool(cmd, self.timeout)
        if is_crash(rc, log):
            return "crash", f"$ {' '.join(cmd)}\n{log}", None, None
        if rc != 0:
            return "rejected", log.strip(), None, None
        cmd = [self.kiln_run, path, "--backend", "reference",
               "--output-dir", os.path.join(folder, "ref")] + inputs
        rc, log = run_tool(cmd, self.timeout)
        if is_crash(rc, log):
            return "crash", f"$ {' '.join(cmd)}\n{log}", None, None
        if rc != 0:
            return "rejected", log.strip(), None, None
        names = [o.name for o in model.graph.output]
        return ("ok", "", load_outputs(folder, "host", names),
                load_outputs(folder, "ref", names))

    def reference_f64(self, model, feeds, tag):
        """The outputs of `model` with every float widened to float64, on
        the interpreter; None where that model cannot run."""
        return self.reference_as(model, feeds, tag, WIDEN, np.float64)

    def reference_f16(self, model, feeds, tag):
        """The outputs of `model` with its float32 tensors as float16, on the
        interpreter (which rounds every op): a 16-bit implementation to
        measure an output's conditioning by."""
        return self.reference_as(model, feeds, tag, NARROW, np.float16)

    def reference_f64_rounded_inputs(self, model, feeds, tag, dtype):
        """The float64 truth of `model` on its float inputs rounded to
        `dtype` (float16, or ml_dtypes' bfloat16): how far rounding the
        inputs alone, which every build of that type does, moves each
        output. A periodic or saturating op of a value that moves by a whole
        step lands anywhere, which no 16-bit yardstick need show (float16's
        error on such an output can be 0 by luck)."""
        rounded = {k: (v.astype(dtype).astype(v.dtype)
                       if v.dtype in (np.float32, np.float16) else v)
                   for k, v in feeds.items()}
        return self.reference_f64(model, rounded, tag + "-rounded-inputs")

    def reference_as(self, model, feeds, tag, types, dtype):
        wide, wide_feeds = retype(model, feeds, types, dtype)
        folder = os.path.join(self.work, tag + "-" + np.dtype(dtype).name)
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        path = os.path.join(folder, "model.onnx")
        onnx.save(wide, path)
        inputs = write_feeds(wide_feeds, os.path.join(folder, "in"))
        rc, _ = run_tool([self.kiln_run, path, "--backend", "reference",
                          "--output-dir", os.path.join(folder, "ref")] +
                         inputs, self.timeout)
        if rc != 0:
            return None
        return load_outputs(folder, "ref", [o.name for o in wide.graph.output])


def load_outputs(folder, sub, names):
    out = {}
    for n in names:
        p = os.path.join(folder, sub, n + ".npy")
        out[n] = np.load(p) if os.path.exists(p) else None
    return out


WIDEN = {TensorProto.FLOAT: TensorProto.DOUBLE,
         TensorProto.FLOAT16: TensorProto.DOUBLE}
NARROW = {TensorProto.FLOAT: TensorProto.FLOAT16}


def retype(model, feeds, types, dtype):
    """`model` with its float tensors retyped by `types` (WIDEN: float32 and
    float16 as float64; bfloat16 casts stay, their rounding is part of the
    graph), and its float32/float16 inputs as `dtype`."""
    wide = onnx.ModelProto()
    wide.CopyFrom(model)
    g = wide.graph
    for vi in list(g.input) + list(g.output):
        t = vi.type.tensor_type
        t.elem_type = types.get(t.elem_type, t.elem_type)
    for i, init in enumerate(g.initializer):
        if init.data_type in types:
            a = numpy_helper.to_array(init).astype(
                helper.tensor_dtype_to_np_dtype(types[init.data_type]))
            g.initializer[i].CopyFrom(numpy_helper.from_array(a, init.name))
    for node in g.node:
        for a in node.attribute:
            if node.op_type == "Cast" and a.name == "to":
                a.i = types.get(a.i, a.i)
    if TensorProto.DOUBLE in types.values():
        keep_float32_products(g)
    feeds = {k: (v.astype(dtype) if v.dtype in (np.float32, np.float16)
                 and helper.np_dtype_to_tensor_dtype(v.dtype) in types else v)
             for k, v in feeds.items()}
    return wide, feeds


def keep_float32_products(g):
    """MatMulNBits takes no float64: in a widened graph `g`, each runs in
    float32 between casts, its float initializers (scales, zero points,
    bias) back in float32 (exact: they were float32 or float16)."""
    at = {init.name: i for i, init in enumerate(g.initializer)}
    nodes = []
    for original in g.node:
        node = onnx.NodeProto()
        node.CopyFrom(original)
        if node.op_type != "MatMulNBits":
            nodes.append(node)
            continue
        for name in node.input[1:]:
            init = g.initializer[at[name]] if name in at else None
            if init is not None and init.data_type == TensorProto.DOUBLE:
                narrow = numpy_helper.to_array(init).astype(np.float32)
                init.CopyFrom(numpy_helper.from_array(narrow, name))
        a, out = node.input[0], node.output[0]
        nodes.append(helper.make_node("Cast", [a], [a + "_as_f32_" + node.name],
                                      to=TensorProto.FLOAT))
        node.input[0] = a + "_as_f32_" + node.name
        node.output[0] = out + "_f32"
        nodes.append(node)
        nodes.append(helper.make_node("Cast", [out + "_f32"], [out],
                                      to=TensorProto.DOUBLE))
    del g.node[:]
    g.node.extend(nodes)


# -- judging ----------------------------------------------------------------
def rel_l2(got, want):
    g, w = got.astype(np.float64), want.astype(np.float64)
    finite = np.isfinite(w)
    if (finite & ~np.isfinite(g)).any():
        return np.inf
    return float(np.linalg.norm((g - w)[finite]) /
                 max(np.linalg.norm(w[finite]), 1e-30))


def differs(got, want, sixteen_bit):
    """Why `got` leaves the contract against `want`, or None."""
    if got is None:
        return "output not written"
    if got.shape != want.shape:
        return f"shape {got.shape}, reference {want.shape}"
    if want.dtype.kind not in "fc":
        bad = np.flatnonzero(got.astype(want.dtype) != want)
        if bad.size:
            i = bad[0]
            return (f"{bad.size} of {want.size} elements differ; first at "
                    f"{i}: {got.flat[i]}, reference {want.flat[i]}")
        return None
    if sixteen_bit:
        e = rel_l2(got, want)
        return None if e <= REL_L2 else f"relative L2 {e:.3e} above {REL_L2}"
    g, w = got.astype(np.float64), want.astype(np.float64)
    ok = np.isclose(g, w, rtol=RTOL, atol=ATOL, equal_nan=True)
    if ok.all():
        return None
    i = np.flatnonzero(~ok)[0]
    return (f"{(~ok).sum()} of {w.size} elements outside rtol {RTOL:g} / atol "
            f"{ATOL:g}; first at {i}: {g.flat[i]!r}, reference {w.flat[i]!r}")


def onnxruntime_outputs(model, feeds):
    """onnxruntime's (CPU) outputs of `model`, or None where it cannot run
    it (an op or type it lacks)."""
    try:
        import onnxruntime
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3
        # MatMulNBits as written (accuracy_level 0: A is not quantized),
        # none of onnxruntime's fused quantized forms (as test/models'
        # exact sessions).
        options.add_session_config_entry(
            "session.qdq_matmulnbits_accuracy_level", "1")
        session = onnxruntime.InferenceSession(
            model.SerializeToString(), options,
            providers=["CPUExecutionProvider"])
        names = [o.name for o in session.get_outputs()]
        return dict(zip(names, session.run(None, feeds)))
    except Exception:  # noqa: BLE001 - any failure: no yardstick
        return None


def float64_rule(host, yardsticks, truth):
    """DESIGN.md's rule for ill-conditioned fp32 outputs: None when the host
    result is at most 2x as far from the float64 truth as an fp32
    implementation is (onnxruntime's, or the interpreter's where
    onnxruntime cannot run the graph), plus 1e-6 (max-abs)."""
    if truth is None:
        return "no float64 truth"
    h, t = host.astype(np.float64), truth.astype(np.float64)
    finite = np.isfinite(t)
    if (finite & ~np.isfinite(h)).any():
        return "non-finite where the float64 truth is finite"
    eh = np.abs(h - t)[finite].max(initial=0)
    errors = {name: np.abs(y.astype(np.float64) - t)[finite].max(initial=0)
              for name, y in yardsticks.items() if y is not None and
              y.shape == t.shape}
    worst = max(errors.values(), default=0.0)
    if eh <= 2 * worst + 1e-6:
        return None
    return (f"float64 rule: host {eh:.3e} from the float64 truth; " +
            ", ".join(f"{n} {e:.3e}" for n, e in errors.items()))


# float16's unit roundoff; bfloat16's is 8 times larger.
FP16_ROUNDOFF = 2.0 ** -11


def sixteen_bit_rule(host, yardstick, scale, truth, magnitude,
                     yardstick_name="op-by-op float16",
                     yardstick_scale=None):
    """The 16-bit contract for ill-conditioned outputs (cancellation, a norm
    of a nearly constant row), where no 16-bit implementation comes within
    1e-2 of the fp32 reference: None when the host's error from the float64
    truth is at most twice that of an op-by-op 16-bit implementation (the
    interpreter on the graph in float16; for bfloat16, whose unit roundoff
    is 8x float16's, `scale` 8) plus the contract's own allowance: 1e-2
    relative L2, or, for an output that cancels to (nearly) zero, where a
    relative error means nothing, eight unit roundoffs of `magnitude` (the
    largest of the graph's float inputs and the output) per element. A
    mixed-precision build may round one side of a cancellation and not the
    other: 1.0058 rounded to float16 minus its fp32 L2 norm is 1.4e-5, not
    the 0 that op-by-op rounding of both sides gives. Another yardstick
    (`yardstick_name`) of the host's own rounding counts once:
    `yardstick_scale` 1."""
    if truth is None or yardstick is None:
        return "no float64 truth or 16-bit yardstick"
    eh, ey = rel_l2(host, truth), rel_l2(yardstick, truth)
    ys = scale if yardstick_scale is None else yardstick_scale
    if eh <= REL_L2 + 2 * ys * ey:
        return None
    h, y, t = (x.astype(np.float64) for x in (host, yardstick, truth))
    finite = np.isfinite(t)
    if not (finite & ~np.isfinite(h)).any():
        ah = np.abs(h - t)[finite].max(initial=0)
        ay = np.abs(y - t)[finite].max(initial=0)
        if ah <= 2 * ay + 8 * scale * FP16_ROUNDOFF * magnitude:
            return None
    return (f"16-bit rule: host relative L2 {eh:.3e} from the float64 truth, "
            f"{yardstick_name} {ey:.3e}")


def float_magnitude(feeds, *arrays):
    """The largest finite magnitude among the float inputs and `arrays`."""
    values = [v for v in feeds.values() if v.dtype.kind == "f"] + [
        a for a in arrays if a is not None]
    return max((float(np.abs(v[np.isfinite(v)].astype(np.float64)).max(
        initial=0)) for v in values), default=0.0)


def judge(runner, model, feeds, mode, host, ref, tag):
    """The outputs that leave the contract: name -> why. `mode` is a batch
    mode (fp32, fp16, mixed-fp16, mixed-bf16)."""
    bad = {}
    for name, want in ref.items():
        why = differs(host.get(name), want, mode != "fp32")
        if why:
            bad[name] = why
    comparable = [n for n in bad if ref[n].dtype.kind == "f" and
                  host.get(n) is not None and host[n].shape == ref[n].shape]
    if mode != "fp32" and comparable:
        truth = runner.reference_f64(model, feeds, tag) or {}
        yard = ref if mode == "fp16" else (
            runner.reference_f16(model, feeds, tag) or {})
        rounded = None
        for name in comparable:
            scale = 8 if mode == "mixed-bf16" else 1
            magnitude = float_magnitude(feeds, truth.get(name))
            why = sixteen_bit_rule(host[name], yard.get(name), scale,
                                   truth.get(name), magnitude)
            # Also against the truth on the inputs rounded to the build's
            # type: an output that rounding the inputs alone moves that far
            # is ill-conditioned for any 16-bit build.
            if why is not None:
                if rounded is None:
                    rounded = runner.reference_f64_rounded_inputs(
                        model, feeds, tag,
                        ml_dtypes.bfloat16 if mode == "mixed-bf16"
                        else np.float16) or {}
                also = sixteen_bit_rule(host[name], rounded.get(name), scale,
                                        truth.get(name), magnitude,
                                        yardstick_name="the truth on rounded "
                                        "inputs",
                                        yardstick_scale=1)
                why = None if also is None else why + "; " + also
            if why is None:
                del bad[name]
            else:
                bad[name] += "; " + why
    if mode == "fp32" and any(ref[n].dtype.kind == "f" and host.get(n) is
                              not None and host[n].shape == ref[n].shape
                              for n in bad):
        truth = runner.reference_f64(model, feeds, tag)
        ort = onnxruntime_outputs(model, feeds) or {}
        for name in list(bad):
            if ref[name].dtype.kind != "f" or host.get(name) is None or \
                    host[name].shape != ref[name].shape:
                continue
            why = float64_rule(host[name], {"interpreter": ref[name],
                                            "onnxruntime": ort.get(name)},
                               truth.get(name) if truth else None)
            if why is None:
                del bad[name]
            else:
                bad[name] += "; " + why
    return bad


# -- cases: graphs as models --------------------------------------------------
FLAGS = {"fp32": "", "fp16": "", "mixed-fp16": "--precision fp16",
         "mixed-bf16": "--precision bf16"}


def graph_mode(mode):
    return "mixed" if mode.startswith("mixed") else mode


def sub_model(graph, output_names):
    """A model of `graph` alone with only `output_names` as outputs, its
    nodes pruned to those the outputs need."""
    nodes = graph.nodes
    needed = set(output_names)
    kept = []
    for node in reversed(nodes):
        if any(o in needed for o in node.output):
            kept.append(node)
            needed.update(node.input)
    kept.reverse()
    outputs = [v for v in graph.values if v.name in output_names]
    g = random_graphs.Graph.__new__(random_graphs.Graph)
    g.nodes = kept
    g.initializers = [i for i in graph.initializers if i.name in needed]
    g.inputs = [(v, d) for v, d in graph.inputs if v.name in needed]
    g.outputs = outputs
    g.values = graph.values
    return g


def reduce_case(graph, still_fails):
    """The failing single-output model with the fewest nodes: each computed
    value tried as the only output."""
    best = None
    candidates = [v for v in graph.values if not v.cast_only and
                  v.dtype != "bfloat16" and
                  v.name not in {i.name for i, _ in graph.inputs}]
    for v in candidates:
        g = sub_model(graph, [v.name])
        if best is not None and len(g.nodes) >= len(best.nodes):
            continue
        if still_fails(g):
            best = g
    return best


# -- the campaign --------------------------------------------------------------
def batch_mode(rng):
    r = rng.random()
    if r < 0.6:
        return "fp32"
    if r < 0.8:
        return "fp16"
    return "mixed-fp16" if r < 0.95 else "mixed-bf16"


class Campaign:
    def __init__(self, args):
        self.args = args
        self.work = tempfile.mkdtemp(prefix="kiln-differential-")
        self.runner = Runner(args, self.work)
        self.batches = self.graphs = self.ops = 0
        self.findings = []
        self.self_checked = set()

    def check_batch(self, graphs, mode, check, host_seed, tag):
        """Runs graphs side by side; returns (status, detail, bad outputs)."""
        model, feeds = random_graphs.make_model(graphs, FLAGS[mode])
        status, detail, host, ref = self.runner.run(
            model, feeds, FLAGS[mode], tag, check, host_seed)
        if status != "ok":
            return status, detail, {}
        bad = judge(self.runner, model, feeds, mode, host, ref, tag)
        if not bad:
            self.self_check(model, feeds, mode, host, ref, tag)
        return ("mismatch" if bad else "ok"), "", bad

    def self_check(self, model, feeds, mode, host, ref, tag):
        """Once per mode and kind of output: the judge must reject a wrong
        answer (a float output negated, an integer output plus one), or the
        campaign proves nothing."""
        for name, want in ref.items():
            kind = "float" if want.dtype.kind == "f" else "integer"
            if (mode, kind) in self.self_checked or not np.any(want) or (
                    kind == "float" and not (
                        np.isfinite(want).all() and
                        np.abs(want.astype(np.float64)).max() > 0.5)):
                continue
            wrong = dict(host)
            wrong[name] = -host[name] if kind == "float" else (
                host[name].astype(np.int64) + 1).astype(want.dtype)
            if want.dtype == np.bool_:
                wrong[name] = ~host[name]
            if name not in judge(self.runner, model, feeds, mode, wrong, ref,
                                 tag + "-self-check"):
                raise RuntimeError(
                    f"self-check: the {mode} judge accepts output {name} "
                    f"({kind}) changed to a wrong answer")
            self.self_checked.add((mode, kind))

    def save(self, graphs, mode, check, host_seed, kind, detail):
        model, feeds = random_graphs.make_model(graphs, FLAGS[mode])
        text = model.SerializeToString()
        ident = f"{kind}-{hashlib.sha1(text).hexdigest()[:12]}"
        folder = self.args.crashes
        os.makedirs(folder, exist_ok=True)
        onnx.save(model, os.path.join(folder, ident + ".onnx"))
        np.savez(os.path.join(folder, ident + ".npz"), **feeds)
        with open(os.path.join(folder, ident + ".txt"), "w") as f:
            f.write(f"mode {mode}; check {check}; host seed {host_seed}\n"
                    f"{detail}\n\n{onnx.printer.to_text(model.graph)}\n")
        self.findings.append(ident)
        print(f"FINDING {ident} ({mode}): {detail.strip().splitlines()[0]}",
              flush=True)
        print(onnx.printer.to_text(model.graph), flush=True)

    def triage(self, graphs, mode, check, host_seed, tag, batch_detail):
        """Finds the graphs of a failing batch that fail alone, reduces and
        saves each; a batch whose graphs pass alone is saved whole."""
        found = False
        for k, g in enumerate(graphs):
            status, detail, bad = self.check_batch([g], mode, check, host_seed,
                                                   f"{tag}-g{k}")
            if status == "ok":
                continue
            found = True

            def still_fails(sub, status=status):
                s, _, _ = self.check_batch([sub], mode, check, host_seed,
                                           f"{tag}-g{k}-r")
                return s == status

            small = reduce_case(g, still_fails)
            if small is not None:
                s, d, b = self.check_batch([small], mode, check, host_seed,
                                           f"{tag}-g{k}-min")
                if s == status:
                    g, detail, bad = small, d, b
            why = detail if status != "mismatch" else "\n".join(
                f"{n}: {w}" for n, w in bad.items())
            self.save([g], mode, check, host_seed, status, why or status)
        if not found:
            self.save(graphs, mode, check, host_seed, "batch",
                      batch_detail or "fails only with its graphs together")

    def run(self, seconds, max_batches):
        rng = np.random.default_rng(self.args.seed)
        start = time.time()
        while time.time() - start < seconds and (
                max_batches is None or self.batches < max_batches):
            bseed = int(rng.integers(2**31))
            brng = np.random.default_rng(bseed)
            mode = batch_mode(brng)
            graphs = []
            for k in range(self.args.graphs_per_batch):
                g = random_graphs.Graph(brng, f"g{k}_",
                                        graph_mode(mode))
                g.build(int(brng.integers(3, 13)))
                if g.outputs:
                    graphs.append(g)
            if not graphs:
                continue
            check = self.args.check_every > 0 and \
                self.batches % self.args.check_every == 0
            host_seed = int(brng.integers(1000))
            tag = f"b{self.batches}"
            self.batches += 1
            self.graphs += len(graphs)
            self.ops += sum(len(g.nodes) for g in graphs)
            status, detail, bad = self.check_batch(graphs, mode, check,
                                                   host_seed, tag)
            if self.args.verbose:
                print(f"batch {tag} seed {bseed} {mode}: {status}", flush=True)
            if status != "ok":
                self.triage(graphs, mode, check, host_seed, tag,
                            detail or "\n".join(f"{n}: {w}"
                                                for n, w in bad.items()))
            shutil.rmtree(os.path.join(self.work, tag), ignore_errors=True)
        return time.time() - start

    def replay(self, paths):
        failed = 0
        for path in paths:
            model = onnx.load(path)
            flags = next((p.value for p in model.metadata_props
                          if p.key == FLAGS_KEY), "")
            data = np.load(os.path.splitext(path)[0] + ".npz")
            feeds = {k: data[k] for k in data.files}
            mode = next((m for m, f in FLAGS.items() if f == flags and f),
                        None)
            if mode is None:
                sixteen = any(i.type.tensor_type.elem_type ==
                              TensorProto.FLOAT16 for i in model.graph.input)
                mode = "fp16" if sixteen else "fp32"
            tag = os.path.basename(path)
            status, detail, host, ref = self.runner.run(model, feeds, flags,
                                                        tag, check=True)
            bad = judge(self.runner, model, feeds, mode, host, ref,
                        tag) if status == "ok" else {}
            if status != "ok" or bad:
                failed += 1
                print(f"FAIL {path}: {status} {detail}\n" + "\n".join(
                    f"  {n}: {w}" for n, w in bad.items()), flush=True)
            else:
                print(f"ok {path}", flush=True)
        return failed


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kiln-run", required=True)
    p.add_argument("--backend", default="host", choices=["host", "cuda"])
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--batches", type=int, help="stop after this many")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--graphs-per-batch", type=int, default=6)
    p.add_argument("--check-every", type=int, default=4,
                   help="every Nth batch runs with --check (AddressSanitizer "
                   "in the kernels); 0 never")
    p.add_argument("--timeout", type=int, default=300)
    p.add_argument("--crashes", default="build-fuzz/crashes/differential")
    p.add_argument("--replay", nargs="*")
    p.add_argument("--keep-work", action="store_true")
    p.add_argument("--verbose", "-v", action="store_true")
    p.add_argument("--weight", action="append", default=[],
                   metavar="STEP=W",
                   help="the weight of one of random_graphs' steps (e.g. "
                   "qdq_matmul=20), to aim a campaign at it (repeatable)")
    p.add_argument("--kiln-flags", default="",
                   help="kiln-run options for every run, e.g. "
                   "--kiln-flags=--qdq-wgmma-rows=1 (every Q/DQ product on "
                   "its Hopper form, which the small graphs' rows do not "
                   "reach by default)")
    args = p.parse_args()
    steps = dict(random_graphs.Graph.STEPS)
    for item in args.weight:
        name, _, weight = item.partition("=")
        if name not in steps or not weight.replace(".", "", 1).isdigit():
            p.error(f"--weight {item}: expected STEP=W with STEP one of "
                    + ", ".join(steps))
        steps[name] = float(weight)
    random_graphs.Graph.STEPS = list(steps.items())
    campaign = Campaign(args)
    try:
        if args.replay is not None:
            failed = campaign.replay(args.replay)
            print(f"replayed {len(args.replay)}, {failed} failed")
            return 1 if failed else 0
        wall = campaign.run(args.seconds, args.batches)
    finally:
        if not args.keep_work:
            shutil.rmtree(campaign.work, ignore_errors=True)
    print(f"differential: {campaign.batches} batches, {campaign.graphs} "
          f"graphs, {campaign.ops} ops, {campaign.runner.runs} runs in "
          f"{wall:.0f}s; judge self-checked on " +
          (", ".join(f"{m} {k}" for m, k in sorted(campaign.self_checked))
           or "nothing") + f"; {len(campaign.findings)} findings")
    return 1 if campaign.findings else 0


if __name__ == "__main__":
    sys.exit(main())
