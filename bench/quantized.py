"""Quantized builds of a bench case, timed beside its 16-bit rows (issue 39:
int4 weights against Kiln's own fp16 build; an FP8 Q/DQ model against its
fp16 build).

Two kinds:
- Kiln's compile-time weight quantization (`kilnc --weights int4|int8|fp8`:
  block-wise round-to-nearest, per-channel scales for fp8). The reference
  is the fp32 model's, so a row's diff holds the quantization's own error;
  the tolerance is the kind's (TOLERANCE), well above the 16-bit one.
- onnxruntime's quantize_static in the QDQ format (`qdq-int8`, `qdq-fp8`:
  what onnxruntime's users and TensorRT pipelines feed Kiln), calibrated on
  four batches shaped like the case's inputs (token ids drawn afresh,
  other inputs as they are). The reference is onnxruntime on the CPU made
  exact (docs/quantization.md) on that quantized model, at the precision's
  own tolerance.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "test", "models"))
import oracle  # noqa: E402

KINDS = ("int4", "int8", "fp8", "qdq-int8", "qdq-fp8")

# The largest output difference from the fp32 model's reference, relative
# to its largest magnitude, that a weight-quantized build may show: random
# weights lose about 10% rms to int4 in blocks of 32, 2.5% to fp8 and 0.5%
# to int8 (docs/quantization.md), and a layer's norm spreads it.
TOLERANCE = {"int4": 0.5, "int8": 0.1, "fp8": 0.2}

LABEL = {"int4": "int4 weights (kilnc --weights int4)",
         "int8": "int8 weights (kilnc --weights int8)",
         "fp8": "fp8 weights (kilnc --weights fp8)",
         "qdq-int8": "int8 Q/DQ (onnxruntime quantize_static)",
         "qdq-fp8": "fp8 Q/DQ (onnxruntime quantize_static)"}


class _Batches:
    """onnxruntime's calibration reader: four batches like `inputs`."""

    def __init__(self, inputs, vocab):
        rng = np.random.default_rng(3)
        self.batches = iter([
            {k: rng.integers(0, vocab, v.shape).astype(v.dtype)
             if k == "input_ids" else v for k, v in inputs.items()}
            for _ in range(4)])

    def get_next(self):
        return next(self.batches, None)


def _exact_outputs(path, inputs):
    """onnxruntime on the CPU made exact: no fused Q/DQ kernels, the graph
    as written (test/models/export_quantized.py says why)."""
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.add_session_config_entry("session.disable_quant_qdq", "1")
    options.graph_optimization_level = (
        ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    session = ort.InferenceSession(path, options,
                                   providers=["CPUExecutionProvider"])
    return session.run(None, inputs)


def interpreter_outputs(tools, model_path, inputs, folder, most_tokens):
    """Kiln's reference interpreter on `model_path` (its products summed in
    double: a Q/DQ GEMM's sum exactly), as a list of outputs in the model's
    order; None above `most_tokens` input elements (BERT-base at b1 s128
    takes it 74 s on the 2-core development machine, b32 half an hour) or
    where it fails, which the caller's judgement then says."""
    tokens = max((v.size for v in inputs.values()), default=0)
    if tokens > most_tokens:
        return None
    import onnx
    import subprocess
    out = os.path.join(folder, "interpreter")
    cmd = [os.path.join(tools, "kiln-run"), model_path, "--backend=reference",
           "--output-dir", out]
    # The case's inputs as models.save_inputs wrote them for kiln-run.
    for name in inputs:
        cmd += ["--input",
                f"{name}={os.path.join(folder, 'inputs', name + '.npy')}"]
    try:
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL,
                       timeout=600)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as e:
        print(f"the reference interpreter on {model_path}: {e}",
              file=sys.stderr)
        return None
    names = [o.name for o in onnx.load(model_path,
                                       load_external_data=False).graph.output]
    return [np.load(os.path.join(out, n + ".npy")) for n in names]


def judge(ours, onnxruntime, interpreter, tolerance, precision):
    """(whether a Q/DQ row's outputs pass, what its note says). A Q/DQ
    model's outputs are ill-conditioned in the quantizers: an fp32 rounding
    difference before one moves a value by a step, and the steps spread
    through the layers. onnxruntime sums a GEMM's dequantized products in
    fp32, Kiln exactly, and on 2026-12-04 an int8 BERT-base (12 layers, b1
    s128) had onnxruntime, Kiln's fp32 build and the reference interpreter
    each 6-7% of the largest output apart (a 2-layer BERT: bit for bit).
    Each output passes within `tolerance` of onnxruntime (relative to its
    largest magnitude). Past it, and only where onnxruntime is itself
    beyond rtol 1e-4 / atol 1e-5 of the interpreter, DESIGN.md's float64
    rule judges it: Kiln at most twice as far from the interpreter as
    onnxruntime is, plus 1e-6, max-abs. A 16-bit build may add its own
    precision's `tolerance` (times the output's largest magnitude) to that:
    the rule is fp32's, and a 16-bit build is judged against fp32."""
    notes, passed = [], True
    for index, (got, want) in enumerate(zip(ours, onnxruntime)):
        got = np.asarray(got, np.float64)
        want = np.asarray(want, np.float64)
        if got.shape != want.shape:
            return False, f"output {index}: shape {got.shape}, not {want.shape}"
        scale = max(float(np.max(np.abs(want))), 1e-30) if want.size else 1.0
        diff = float(np.max(np.abs(got - want))) / scale if got.size else 0.0
        if diff <= tolerance:
            continue
        if interpreter is None:
            passed = False
            notes.append(f"output {index} differs from onnxruntime made exact "
                         f"by {diff:.2e} (tolerance {tolerance:g}; no "
                         "reference interpreter to judge by the float64 "
                         "rule)")
            continue
        ours_off, theirs_off, applies = oracle.float64_distances(
            got, want, np.asarray(interpreter[index]))
        if not applies:
            passed = False
            notes.append(f"output {index} differs from onnxruntime made exact "
                         f"by {diff:.2e}, which agrees with the reference "
                         "interpreter (no float64 rule)")
            continue
        slack = oracle.FLOAT64_RULE_ATOL + (tolerance * scale
                                            if precision != "fp32" else 0.0)
        ok = ours_off <= oracle.FLOAT64_RULE_FACTOR * theirs_off + slack
        passed &= ok
        notes.append(f"output {index}: float64 rule ("
                     f"{'passes' if ok else 'FAILS'}): Kiln {ours_off:.2e} and "
                     f"onnxruntime {theirs_off:.2e} from the reference "
                     f"interpreter, max-abs; {diff:.2e} from onnxruntime")
    return passed, "; ".join(notes)


def tolerance(kind, precision, precision_tolerance):
    """The largest relative output difference a `kind` row at `precision`
    may show from its reference. A float8 Q/DQ model built at 16 bits rounds
    each activation to 16 bits before its quantizer, which moves some values
    across a float8 step (an eighth of the value; docs/quantization.md):
    its outputs, dequantized float8 values, may differ by a step."""
    if kind in TOLERANCE:
        return TOLERANCE[kind]
    if kind == "qdq-fp8" and precision in ("fp16", "bf16"):
        return max(precision_tolerance, 0.125)
    return precision_tolerance


def prepare(kind, model_path, inputs, folder, vocab=96):
    """What a `kind` row compiles: (the model, kilnc's extra flags, its
    reference outputs or None for the fp32 model's)."""
    if kind in ("int4", "int8", "fp8"):
        return model_path, ["--weights", kind], None
    from onnxruntime import quantization as q
    target = os.path.join(folder, f"model-{kind}.onnx")
    # Float8's calibration is histograms, which an attention mask's -inf
    # breaks: only the products are quantized (as export_quantized.py does).
    float8 = kind == "qdq-fp8"
    q.quantize_static(
        model_path, target, _Batches(inputs, vocab),
        quant_format=q.QuantFormat.QDQ, per_channel=not float8,
        calibrate_method=(q.CalibrationMethod.Distribution if float8
                          else q.CalibrationMethod.MinMax),
        op_types_to_quantize=["MatMul", "Gemm"] if float8 else None,
        activation_type=(q.QuantType.QFLOAT8E4M3FN if float8
                         else q.QuantType.QInt8),
        weight_type=(q.QuantType.QFLOAT8E4M3FN if float8
                     else q.QuantType.QInt8))
    return target, [], _exact_outputs(target, inputs)
