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
