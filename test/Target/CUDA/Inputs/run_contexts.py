#!/usr/bin/env python3
"""Runs a compiled model of one float input several times through the C
ABI, each run against onnxruntime.

  run_contexts.py MODEL.onnx|MODEL.onnxtxt MODEL.so --backend host|cuda
                  [N ...]

Loads MODEL.so (kilnc's artifact) with ctypes on the backend given (the GPU
replay of the lit tests, scripts/gpu_lit_cases.py, turns host into cuda:
each context loads its own module there). A kernel
that keeps state between launches in its execution context (a split
reduction's arrival counters) must leave it as it found it, or a later run
gives another answer. With lengths N (a model of one symbolic dim), runs
the model at each N in turn, the input's shape taking N at its symbolic
dim; without, runs a static model three times in each of two contexts,
alternately (the model's own, then one of kiln_context_create's). Each run
gets new random inputs, of a new spread. Prints one line a run; exit code
1 on any difference from onnxruntime.
"""
import ctypes
import sys

import numpy as np
import onnx
import onnxruntime as ort

BACKENDS = {"cuda": 1, "host": 2}
KILN_MEMORY_HOST, KILN_OK = 0, 0
NUMPY = {onnx.TensorProto.FLOAT: np.float32, onnx.TensorProto.UINT8: np.uint8,
         onnx.TensorProto.INT8: np.int8, onnx.TensorProto.INT64: np.int64}


def main():
    model_path, so_path = sys.argv[1], sys.argv[2]
    if len(sys.argv) < 5 or sys.argv[3] != "--backend" or \
            sys.argv[4] not in BACKENDS:
        sys.exit(__doc__)
    backend = BACKENDS[sys.argv[4]]
    lengths = [int(n) for n in sys.argv[5:]]
    if model_path.endswith(".onnxtxt"):
        # ONNX's text format, as lit tests write models inline.
        with open(model_path) as f:
            model_proto = onnx.parser.parse_model(f.read())
    else:
        model_proto = onnx.load(model_path)
    graph = model_proto.graph
    (x_info,) = graph.input
    x_dims = [d.dim_value if d.HasField("dim_value") else None
              for d in x_info.type.tensor_type.shape.dim]
    session = ort.InferenceSession(model_proto.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    lib = ctypes.CDLL(so_path)
    lib.kiln_last_error.restype = ctypes.c_char_p
    for name in ("kiln_model_run", "kiln_context_run"):
        getattr(lib, name).argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int]
    lib.kiln_model_run_dims.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_int]
    lib.kiln_model_output_shape.argtypes = [
        ctypes.c_void_p, ctypes.POINTER(ctypes.c_int64), ctypes.c_int32,
        ctypes.POINTER(ctypes.c_int64)]

    def check(status, what):
        if status != KILN_OK:
            sys.exit(f"{what}: {lib.kiln_last_error().decode()}")

    model = ctypes.c_void_p()
    check(lib.kiln_model_create(backend, ctypes.byref(model)),
          "kiln_model_create")
    context = ctypes.c_void_p()
    check(lib.kiln_context_create(model, ctypes.byref(context)),
          "kiln_context_create")
    # (dims or None, context or None) a run.
    runs = ([((n,), None) for n in lengths] if lengths else
            [(None, c) for _ in range(3) for c in (None, context)])
    rng = np.random.default_rng(7)
    failed = False
    for run, (values, on) in enumerate(runs):
        shape = [values[0] if d is None else d for d in x_dims]
        x = (rng.normal(size=shape) * (run + 1)).astype(np.float32)
        want = session.run(None, {x_info.name: x})
        dims = (ctypes.c_int64 * 1)(*(values or (0,)))
        outs = []
        for i, info in enumerate(graph.output):
            rank = len(info.type.tensor_type.shape.dim)
            out_shape = (ctypes.c_int64 * max(rank, 1))()
            check(lib.kiln_model_output_shape(model, dims, i, out_shape),
                  "kiln_model_output_shape")
            outs.append(np.zeros(list(out_shape[:rank]),
                                 NUMPY[info.type.tensor_type.elem_type]))
        ins = (ctypes.c_void_p * 1)(x.ctypes.data)
        out = (ctypes.c_void_p * len(outs))(*[o.ctypes.data for o in outs])
        if values:
            status = lib.kiln_model_run_dims(model, dims, ins, out,
                                             KILN_MEMORY_HOST)
        elif on:
            status = lib.kiln_context_run(on, ins, out, KILN_MEMORY_HOST)
        else:
            status = lib.kiln_model_run(model, ins, out, KILN_MEMORY_HOST)
        check(status, f"run {run}")
        same = all(np.array_equal(a, b) for a, b in zip(outs, want))
        failed |= not same
        where = f"n {values[0]}" if values else \
            ("a second context" if on else "the model's context")
        print(f"run {run} ({where}): "
              f"{'equal' if same else 'DIFFERENT'} to onnxruntime")
    lib.kiln_context_destroy(context)
    lib.kiln_model_destroy(model)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
