"""What the model checks share: running a tool, and comparing an output that
Kiln wrote with onnxruntime's under the fp32 numerics contract."""
import os
import subprocess

import numpy as np

RTOL, ATOL = 1e-4, 1e-5
# The 16-bit contract: relative L2 error of each output.
REL_L2 = 1e-2


def run(cmd):
    """Runs `cmd`; returns None on success, else its first lines of error."""
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        lines = (result.stderr or result.stdout).strip().splitlines()
        return "; ".join(lines[:3]) or f"exit code {result.returncode}"
    return None


def compare_output(out_dir, name, want):
    """None when out_dir/name.npy matches `want`, else why not."""
    path = os.path.join(out_dir, name + ".npy")
    if not os.path.exists(path):
        return f"output {name} not written"
    got = np.load(path)
    if got.shape != want.shape:
        return f"{name}: shape {got.shape}, expected {want.shape}"
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


def check_both_paths(tools, path, feeds, expected, work):
    """Runs the model at `path` on the reference interpreter and, compiled by
    kilnc, on the host backend with the inputs `feeds` (name -> array), and
    compares every output with `expected` (name -> array). Returns
    (reference, host): None or why that path failed."""
    args = []
    for name, value in feeds.items():
        file = os.path.join(work, f"input_{name}.npy")
        np.save(file, value)
        args += ["--input", f"{name}={file}"]

    def compare(out_dir):
        for name, want in expected.items():
            why = compare_output(out_dir, name, want)
            if why:
                return why
        return None

    ref, host, so = (os.path.join(work, d) for d in ("reference", "host", "model.so"))
    reference = (run([tools.kiln_run, path, "--backend", "reference", "--output-dir", ref]
                     + args) or compare(ref))
    hosted = (run([tools.kilnc, path, "-o", so])
              or run([tools.kiln_run, so, "--backend", "host", "--output-dir", host] + args)
              or compare(host))
    return reference, hosted


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


def float64_rule(name, got, ort_out, exact):
    """Judges Kiln's fp32 output `got` by the float64 rule against the float64
    result `exact`. Returns (summary, why): `summary` says how far
    onnxruntime and Kiln are from `exact`; `why` is None when Kiln passes,
    else the reason. The rule does not apply (a failure) where onnxruntime is
    itself within rtol 1e-4 of `exact`: it is only for computations where no
    fp32 implementation can meet the per-element contract."""
    exact = exact.astype(np.float64)
    ort_err = np.abs(ort_out.astype(np.float64) - exact).max()
    kiln_err = np.abs(got.astype(np.float64) - exact).max()
    bound = FLOAT64_RULE_FACTOR * ort_err + FLOAT64_RULE_ATOL
    summary = (f"{name}: onnxruntime max_abs {ort_err:.3e} from float64, "
               f"Kiln {kiln_err:.3e} (bound {bound:.3e})")
    if np.allclose(ort_out, exact, rtol=RTOL, atol=ATOL):
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
