"""What the model checks share: their command line, running a tool, passing
inputs to kiln-run, comparing an output that Kiln wrote with onnxruntime's
under the fp32 numerics contract, and running a list of checks."""
import argparse
import os
import subprocess
import tempfile

import numpy as np

RTOL, ATOL = 1e-4, 1e-5
# The 16-bit contract: relative L2 error of each output.
REL_L2 = 1e-2


def tools_parser(doc):
    """An argument parser described by the first line of `doc` that takes
    the two tools every check runs: --kilnc and --kiln-run."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--kilnc", required=True)
    parser.add_argument("--kiln-run", required=True)
    return parser


def model_folders(data, only):
    """The sorted names of the model folders under `data`; with `only`, those
    whose name contains it."""
    models = sorted(d for d in os.listdir(data)
                    if os.path.isdir(os.path.join(data, d)))
    return [m for m in models if only in m] if only else models


def run(cmd):
    """Runs `cmd`; returns None on success, else its first lines of error."""
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        lines = (result.stderr or result.stdout).strip().splitlines()
        return "; ".join(lines[:3]) or f"exit code {result.returncode}"
    return None


def save_inputs(feeds, folder):
    """Saves each input of `feeds` (name -> array) in `folder` (by position:
    a name may hold a '/'); returns the kiln-run arguments that pass them."""
    args = []
    for i, (name, value) in enumerate(feeds.items()):
        file = os.path.join(folder, f"input{i}.npy")
        np.save(file, value)
        args += ["--input", f"{name}={file}"]
    return args


def run_with_inputs(cmd, feeds, folder):
    """Runs `cmd` with `feeds` saved in `folder` (made if missing) as its
    --input arguments; returns the finished process, output captured."""
    os.makedirs(folder, exist_ok=True)
    return subprocess.run(cmd + save_inputs(feeds, folder),
                          capture_output=True, text=True)


def load_output(out_dir, name, want):
    """Kiln's output out_dir/name.npy as (array, None), or (None, why) when
    it was not written or its shape is not that of `want`."""
    path = os.path.join(out_dir, name + ".npy")
    if not os.path.exists(path):
        return None, f"output {name} not written"
    got = np.load(path)
    if got.shape != want.shape:
        return None, f"{name}: shape {got.shape}, expected {want.shape}"
    return got, None


def compare_output(out_dir, name, want):
    """None when out_dir/name.npy matches `want`, else why not."""
    got, why = load_output(out_dir, name, want)
    if why:
        return why
    if (np.isfinite(want) & ~np.isfinite(got)).any():
        return f"{name}: non-finite where onnxruntime is finite"
    if want.dtype == np.float16:
        # A 16-bit model is held to the 16-bit contract (DESIGN.md): relative
        # L2 error, since onnxruntime's own fp16 rounding differs per element.
        w, g = want.astype(np.float64), got.astype(np.float64)
        rel = np.linalg.norm(g - w) / max(np.linalg.norm(w), 1e-30)
        if rel > REL_L2:
            return f"{name}: relative L2 {rel:.3e} above {REL_L2:g} (fp16 contract)"
        return None
    if not np.allclose(got, want, rtol=RTOL, atol=ATOL, equal_nan=True):
        diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
        return (f"{name}: max_abs {diff.max():.3e} outside rtol {RTOL:g} / "
                f"atol {ATOL:g}")
    return None


def expect_close(got, want, what):
    """Whether `got` has the shape of `want` and is within the fp32 contract
    of it; prints the verdict on `what` with the largest difference."""
    same_shape = got.shape == want.shape
    close = same_shape and np.allclose(got, want, rtol=RTOL, atol=ATOL)
    worst = (float(np.abs(got.astype(np.float64) - want).max())
             if same_shape else float("inf"))
    print(f"{'ok  ' if close else 'FAIL'} {what} {list(got.shape)} "
          f"max_abs {worst:.3e}")
    return close


def expect_refusal(result, message, what):
    """Whether the finished kiln-run `result` failed with `message` in its
    error; prints the verdict on `what`, and the error when it did not."""
    refused = result.returncode != 0 and message in result.stderr
    print(f"{'ok  ' if refused else 'FAIL'} {what}refuses: {message}")
    if not refused:
        print(result.stderr)
    return refused


def run_both_paths(tools, path, input_args, work, judge, shape_args=()):
    """Runs the model at `path` on the reference interpreter and, compiled by
    kilnc, on the host backend, with the kiln-run arguments `input_args` and
    `shape_args` (which kilnc gets too); `judge(out_dir)` says why the outputs
    a path wrote are wrong, or None. Returns (reference, host): None or why
    that path failed."""
    shape_args = list(shape_args)
    ref, host, so = (os.path.join(work, d) for d in ("reference", "host", "model.so"))
    reference = (run([tools.kiln_run, path, "--backend", "reference", "--output-dir", ref]
                     + input_args + shape_args) or judge(ref))
    hosted = (run([tools.kilnc, path, "-o", so] + shape_args)
              or run([tools.kiln_run, so, "--backend", "host", "--output-dir", host]
                     + input_args)
              or judge(host))
    return reference, hosted


def check_both_paths(tools, path, feeds, expected, work, compare=compare_output,
                     shape_args=()):
    """run_both_paths on the inputs `feeds` (name -> array), every output
    judged against `expected` (name -> array) by `compare(out_dir, name,
    want)`: by default the fp32 contract (the 16-bit one for fp16 outputs)."""
    def judge(out_dir):
        for name, want in expected.items():
            why = compare(out_dir, name, want)
            if why:
                return why
        return None

    return run_both_paths(tools, path, save_inputs(feeds, work), work, judge,
                          shape_args)


def both_paths_failure(reference, host):
    """None when both paths passed, else a line saying how each did."""
    if reference or host:
        return f"reference: {reference or 'pass'}; host: {host or 'pass'}"
    return None


def run_checks(checks, prefix, noun, passed="reference and host backend"):
    """Runs `checks`, (label, check) pairs where check(work) returns None or
    why it failed, each in a folder of its own in one scratch directory
    (named with `prefix`, which also holds KILN_CACHE_DIR unless it is set).
    Prints a line a check and how many `noun` failed; returns the exit code:
    1 when a check failed or there was none."""
    failures = count = 0
    with tempfile.TemporaryDirectory(prefix=prefix) as scratch:
        os.environ.setdefault("KILN_CACHE_DIR", os.path.join(scratch, "cache"))
        for label, check in checks:
            work = os.path.join(scratch, str(count))
            os.makedirs(work)
            count += 1
            why = check(work)
            if why:
                failures += 1
                print(f"FAIL  {label}: {why}")
            else:
                print(f"pass  {label}" + (f" ({passed})" if passed else ""))
    print(f"\n{count} {noun}, {failures} failed")
    return 1 if failures or not count else 0


# DESIGN.md's rule for ill-conditioned computations: Kiln's fp32 output may be
# at most twice as far from the float64 result as onnxruntime's fp32 output
# is, plus this (max-abs over the output's elements).
FLOAT64_RULE_FACTOR, FLOAT64_RULE_ATOL = 2.0, 1e-6


def to_float64(model):
    """A copy of the ONNX `model` that computes in float64: its float32
    initializers, inputs, outputs, intermediate types, Cast targets and
    Constant values become doubles. Run on the reference interpreter it gives
    the float64 result that judges ill-conditioned models."""
    import onnx
    from onnx import numpy_helper
    F32, F64 = onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE
    m = onnx.ModelProto()
    m.CopyFrom(model)

    def widen_tensor(t):
        if t.data_type == F32:
            t.CopyFrom(numpy_helper.from_array(
                numpy_helper.to_array(t).astype(np.float64), t.name))

    def widen_graph(g):
        for t in g.initializer:
            widen_tensor(t)
        for info in list(g.input) + list(g.output) + list(g.value_info):
            if info.type.tensor_type.elem_type == F32:
                info.type.tensor_type.elem_type = F64
        for node in g.node:
            for a in node.attribute:
                if node.op_type == "Cast" and a.name == "to" and a.i == F32:
                    a.i = F64
                if a.type == onnx.AttributeProto.TENSOR:
                    widen_tensor(a.t)
                if a.type == onnx.AttributeProto.GRAPH:
                    widen_graph(a.g)
    widen_graph(m.graph)
    return m


def float64_distances(got, ort_out, exact):
    """(Kiln's max-abs distance from the float64 result `exact`,
    onnxruntime's, whether the float64 rule applies: onnxruntime is itself
    beyond rtol / atol of `exact`). What every check that judges by the rule
    shares (float64_rule below, compare_ort.py, bench/quantized.py)."""
    exact = exact.astype(np.float64)
    ort_err = float(np.abs(ort_out.astype(np.float64) - exact).max())
    kiln_err = float(np.abs(got.astype(np.float64) - exact).max())
    return kiln_err, ort_err, not np.allclose(ort_out, exact, rtol=RTOL,
                                              atol=ATOL)


def float64_rule(name, got, ort_out, exact):
    """Judges Kiln's fp32 output `got` by the float64 rule against the float64
    result `exact`. Returns (summary, why): `summary` says how far
    onnxruntime and Kiln are from `exact`; `why` is None when Kiln passes,
    else the reason. The rule does not apply (a failure) where onnxruntime is
    itself within rtol 1e-4 of `exact`: it is only for computations where no
    fp32 implementation can meet the per-element contract."""
    kiln_err, ort_err, applies = float64_distances(got, ort_out, exact)
    bound = FLOAT64_RULE_FACTOR * ort_err + FLOAT64_RULE_ATOL
    summary = (f"{name}: onnxruntime max_abs {ort_err:.3e} from float64, "
               f"Kiln {kiln_err:.3e} (bound {bound:.3e})")
    if not applies:
        return summary, (f"{name}: onnxruntime is within rtol {RTOL:g} of the "
                         "float64 result, so the float64 rule does not apply")
    if (np.isfinite(exact) & ~np.isfinite(got)).any():
        return summary, f"{name}: non-finite where the float64 result is finite"
    if not kiln_err <= bound:
        return summary, summary + ": beyond the bound"
    return summary, None


def dims_args(folder):
    """`--dim NAME=N,...` for an export with symbolic dims (the folder's
    `dims` file, written by export_fresh.py), else nothing."""
    path = os.path.join(folder, "dims")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return ["--dim", f.read().strip()]


def kv_dims(folder, dims):
    """--dim for the KV-cache export in `folder` (export_fresh.py's -kv):
    `dims`, the ranges of batch, sequence and past_sequence, then each name
    the exporter gave the total length (from the folder's `dims` file)
    stated as past_sequence+sequence."""
    with open(os.path.join(folder, "dims")) as f:
        names = [part.split("=")[0] for part in f.read().strip().split(",")]
    return dims + "".join(f",{n}=past_sequence+sequence" for n in names
                          if n not in ("batch", "sequence", "past_sequence"))


def decoding_dims(folder, window):
    """kv_dims of a decoding loop over up to `window` tokens at batch 1: the
    new tokens and the cache up to the window (check_generate.py's build)."""
    return kv_dims(folder, f"batch=1:1,sequence=1:{window},"
                           f"past_sequence=0:{window - 1}")
