"""Kiln: ONNX Transformer models compiled to CUDA, from Python.

    import kiln
    model = kiln.compile("model.onnx", dims={"batch": 1, "sequence": 128})
    outputs = model.run({"input_ids": ids, "attention_mask": mask})

A dim given a range, `dims={"batch": (1, 8), "sequence": (1, 512)}`, stays
symbolic: the one model runs at every shape in range, the dims learned from
the inputs' shapes (`Model.dims` names them).

`compile` takes a path or an `onnx.ModelProto` and returns a `Model` that
runs in this process; `load` opens an artifact `.so` written by `kilnc`.
Inputs are numpy arrays or any DLPack tensor (`__dlpack__`); outputs are
numpy arrays, which are DLPack tensors themselves (`torch.from_dlpack`).
On the CUDA backend, device tensors (PyTorch, CuPy) go in and out without
copies when every input and every output (`outputs=`) is on the device.
Errors raise `CompileError` or `RunError` with the message `kilnc` and
`kiln-run` print.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from . import _kiln

__version__: str = _kiln.__version__

__all__ = ["compile", "load", "Model", "Context", "TensorInfo", "DimInfo",
           "Comparison", "compare", "Error", "CompileError", "RunError",
           "version"]

# DLPack device types.
_DL_CPU, _DL_CUDA, _DL_CUDA_HOST = 1, 2, 3


class Error(Exception):
    """Any error Kiln reports."""


class CompileError(Error):
    """The model did not compile; the message is what kilnc prints."""


class RunError(Error):
    """A run failed (bad inputs, the device); the model stays usable."""


@dataclass(frozen=True)
class TensorInfo:
    """A graph input or output: its name, element type and shape."""
    name: str
    dtype: np.dtype
    shape: Tuple[int, ...]


@dataclass(frozen=True)
class DimInfo:
    """A symbolic dim of a model and the values it takes, min to max."""
    name: str
    min: int
    max: int


# Kiln's element types that NumPy lacks, as ml_dtypes (which onnx depends
# on) names them; its int4 and uint4 hold one value a byte, as Kiln does.
_ML_DTYPES = {"bfloat16": "bfloat16", "float8e4m3fn": "float8_e4m3fn",
              "float8e5m2": "float8_e5m2", "int4": "int4", "uint4": "uint4"}


def _numpy_dtype(name: str) -> np.dtype:
    if name not in _ML_DTYPES:
        return np.dtype(name)
    try:
        import ml_dtypes
    except ImportError:
        raise Error(f"tensors of {name} need the ml_dtypes package "
                    f"(pip install ml_dtypes)") from None
    return np.dtype(getattr(ml_dtypes, _ML_DTYPES[name]))


def _infos(described) -> List[TensorInfo]:
    return [TensorInfo(name, _numpy_dtype(dtype), tuple(shape))
            for name, dtype, shape in described]


class Model:
    """A compiled model, bound to a backend ("cuda" or "host")."""

    def __init__(self, native):
        self._native = native
        # With symbolic dims, the shapes at the top of their ranges.
        self.inputs: List[TensorInfo] = _infos(native.inputs)
        self.outputs: List[TensorInfo] = _infos(native.outputs)
        self.dims: List[DimInfo] = [DimInfo(*d) for d in native.dims]
        # Output name -> (input name, axis): the output is kept in that
        # input's storage, a KV cache appended in place along the axis.
        # Pass one array as both (in `inputs` and `outputs`) and a run
        # writes only the new rows.
        self.aliases: Dict[str, Tuple[str, int]] = {
            self.outputs[o].name: (self.inputs[i].name, axis)
            for o, i, axis in native.aliases}

    @property
    def backend(self) -> str:
        """"cuda" or "host": where the model runs ("auto" resolved)."""
        return self._native.backend

    @property
    def report(self) -> str:
        """`kilnc --report`'s text, after `compile(..., report=True)`."""
        return self._native.report

    def __repr__(self) -> str:
        return f"<kiln.Model {self._native.info}>"

    def run(self, inputs: Mapping[str, Any],
            outputs: Optional[Mapping[str, Any]] = None,
            backend: Optional[str] = None) -> Dict[str, Any]:
        """Runs the model once on `inputs` (name -> array or DLPack tensor)
        and returns name -> output. Host arrays in: new numpy arrays out.
        With `outputs` (name -> DLPack tensor of the right shape and dtype)
        the results are written there instead and those tensors returned;
        device tensors in need device tensors out. `backend` ("cuda",
        "host") runs the same plan on another backend than the model's."""
        return _run(self, inputs, outputs,
                    lambda i, o, d, dims: self._native.run(i, o, d,
                                                           backend or "",
                                                           dims))

    def context(self) -> "Context":
        """A new execution context: its own arena and staging buffers over
        this model's kernels and weights. Contexts run at the same time from
        different threads (the GIL is released during a run); one context
        runs one call at a time."""
        return Context(self, self._native.context())


class Context:
    """An execution context of a Model (see Model.context)."""

    def __init__(self, model: Model, native):
        self.model = model
        self._native = native

    def run(self, inputs: Mapping[str, Any],
            outputs: Optional[Mapping[str, Any]] = None,
            stream: Any = None) -> Dict[str, Any]:
        """As Model.run, on this context. With `stream` (a CUDA stream: an
        integer `CUstream`, or an object with a `cuda_stream` attribute such
        as `torch.cuda.Stream`) the run is queued on that stream and the call
        returns without waiting: the tensors must be device tensors (given
        `outputs`), DLPack producers are asked to make them ready on that
        stream, and `synchronize()` waits and reports an index fault. On the
        host backend the run is over when the call returns."""
        if stream is None:
            return _run(self.model, inputs, outputs, self._native.run)
        handle = getattr(stream, "cuda_stream", stream)
        if not isinstance(handle, int) or handle < 0:
            raise RunError(f"stream must be a CUstream (an int) or have "
                           f"cuda_stream, got {stream!r}")
        on_host = self.model.backend == "host"

        def enqueue(i, o, device, dims):
            if device == on_host:
                raise RunError("a run on a stream takes device tensors on "
                               "the CUDA backend, host arrays on the host "
                               "backend")
            self._native.enqueue(i, o, handle, dims)
        return _run(self.model, inputs, outputs, enqueue, stream=handle)

    def synchronize(self) -> None:
        """Waits for the runs queued with `run(..., stream=)`; raises
        RunError for an out-of-range index in any of them."""
        try:
            self._native.synchronize()
        except RuntimeError as e:
            raise RunError(str(e)) from None


def _run(model: Model, inputs: Mapping[str, Any],
         outputs: Optional[Mapping[str, Any]], native_run,
         stream: Optional[int] = None) -> Dict[str, Any]:
    """Checks and converts the tensors of a run of `model`, then calls
    `native_run(input addresses, output addresses, on the device?, dims)`.
    With a `stream`, DLPack producers make device tensors ready on it."""
    missing = [i.name for i in model.inputs if i.name not in inputs]
    unknown = sorted(set(inputs) - {i.name for i in model.inputs})
    if missing or unknown:
        raise RunError(f"inputs missing: {missing}; unknown: {unknown}")
    in_infos, out_infos, dims = _shapes_of_run(model, inputs)
    keep = []  # What must stay alive until the run is over.
    in_ptrs, in_device = [], []
    for info in in_infos:
        ptr, device = _address(inputs[info.name], info, keep, "input", stream)
        in_ptrs.append(ptr)
        in_device.append(device)
    if outputs is None:
        if any(in_device):
            raise RunError("device inputs need device outputs: pass "
                           "outputs={name: tensor}")
        results = {o.name: np.empty(o.shape, o.dtype) for o in out_infos}
    else:
        if set(outputs) != {o.name for o in model.outputs}:
            raise RunError(f"outputs must name exactly "
                           f"{[o.name for o in model.outputs]}")
        results = dict(outputs)
    out_ptrs, out_device = [], []
    for info in out_infos:
        ptr, device = _address(results[info.name], info, keep, "output",
                               stream)
        out_ptrs.append(ptr)
        out_device.append(device)
    on_device = set(in_device + out_device)
    if len(on_device) > 1:
        raise RunError("inputs and outputs must all be in host memory or "
                       "all on the device")
    try:
        native_run(in_ptrs, out_ptrs, on_device == {True}, dims)
    except RuntimeError as e:
        raise RunError(str(e)) from None
    return results


def _shapes_of_run(model: Model, inputs: Mapping[str, Any]):
    """The input and output infos of a run, and its dims' values: the
    model's own for a static model; with symbolic dims, those the inputs'
    shapes give (RunError naming the input and dim that do not fit)."""
    if not model.dims:
        return model.inputs, model.outputs, []
    shapes = []
    for info in model.inputs:
        tensor = inputs[info.name]
        shape = getattr(tensor, "shape", None)
        shapes.append([int(d) for d in (np.shape(tensor) if shape is None
                                        else shape)])
    try:
        dims = model._native.bind_dims(shapes)
        in_shapes, out_shapes = model._native.shapes_at(dims)
    except RuntimeError as e:
        raise RunError(str(e)) from None
    resize = lambda infos, shapes: [  # noqa: E731
        TensorInfo(i.name, i.dtype, tuple(s)) for i, s in zip(infos, shapes)]
    return (resize(model.inputs, in_shapes), resize(model.outputs, out_shapes),
            dims)


def _address(tensor, info: TensorInfo, keep: list, what: str,
             stream: Optional[int] = None):
    """(address, on the device?) of `tensor`, checked against `info`. A
    device tensor is made ready on `stream` when one is given (DLPack's
    stream argument; by default the producer synchronizes with the legacy
    default stream, which synchronous runs wait for)."""
    device = None
    if not isinstance(tensor, np.ndarray) and hasattr(tensor, "__dlpack_device__"):
        device = tensor.__dlpack_device__()[0]
    if device == _DL_CUDA:
        # DLPack: 1 is the legacy default stream, 0 is ambiguous.
        capsule = (tensor.__dlpack__(stream=stream if stream else 1)
                   if stream is not None else tensor.__dlpack__())
        keep.append(capsule)
        ptr, _, _, code, bits, lanes, shape, strides = _kiln.dlpack_info(capsule)
        dtype = _dlpack_dtype(code, bits, lanes)
        if dtype != info.dtype or tuple(shape) != info.shape:
            raise RunError(f"{what} '{info.name}' is {dtype}{list(shape)}, the "
                           f"model takes {info.dtype}{list(info.shape)}")
        if strides is not None and tuple(strides) != _dense_strides(shape):
            raise RunError(f"{what} '{info.name}' is not contiguous")
        return ptr, True
    if device is not None and device not in (_DL_CPU, _DL_CUDA_HOST):
        raise RunError(f"{what} '{info.name}' is on DLPack device {device}; "
                       f"Kiln takes host or CUDA tensors")
    array = tensor if isinstance(tensor, np.ndarray) else np.from_dlpack(tensor) \
        if device is not None else np.asarray(tensor)
    if what == "input":
        if array.dtype != info.dtype or array.shape != info.shape:
            raise RunError(f"input '{info.name}' is {array.dtype}"
                           f"{list(array.shape)}, the model takes "
                           f"{info.dtype}{list(info.shape)}")
        array = np.ascontiguousarray(array)
    elif (array.dtype != info.dtype or array.shape != info.shape
          or not array.flags.c_contiguous or not array.flags.writeable):
        raise RunError(f"output '{info.name}' must be a writable contiguous "
                       f"{info.dtype}{list(info.shape)} array")
    keep.append(array)
    return array.ctypes.data, False


def _dense_strides(shape) -> Tuple[int, ...]:
    strides, step = [], 1
    for dim in reversed(shape):
        strides.append(step)
        step *= dim
    return tuple(reversed(strides))


def _dlpack_dtype(code: int, bits: int, lanes: int) -> np.dtype:
    kinds = {0: "i", 1: "u", 2: "f", 6: "b"}
    if lanes != 1 or code not in kinds:
        raise RunError(f"unsupported DLPack dtype (code {code}, bits {bits})")
    return np.dtype(f"{kinds[code]}{bits // 8}")


def compile(model: Union[str, os.PathLike, Any], *, precision: str = "fp32",
            dims: Optional[Mapping[str, Union[int, Tuple[int, int], str]]] = None,
            input_shapes: Optional[Mapping[str, Sequence[int]]] = None,
            backend: str = "auto", report: bool = False,
            base_dir: Optional[Union[str, os.PathLike]] = None,
            kv_cache_in_place: bool = False,
            allow_tf32: bool = False, weights: str = "float",
            weights_block_size: int = 32) -> Model:
    """Compiles an ONNX model (a path, or an `onnx.ModelProto`) in this
    process. `dims` gives symbolic dims their values (kilnc --dim), a range
    (min, max) to keep one symbolic (--dim NAME=MIN:MAX), or an expression
    of other dims that one equals ("past_sequence+sequence"), `input_shapes`
    whole input shapes (--input-shape); `precision` is
    "fp32", "fp16" or "bf16"; `backend` "auto", "cuda" or "host". A
    ModelProto loaded without its external data (`load_external_data=False`)
    reads it from `base_dir`, the folder of the model file.
    `kv_cache_in_place` keeps a decoder's KV caches in one buffer each of
    their largest length (kilnc --kv-cache-in-place; see Model.aliases);
    `allow_tf32` runs fp32 matmuls on the tensor cores with TF32 inputs
    (kilnc --allow-tf32), outside the fp32 contract. `weights` "int4" or
    "int8" quantizes the linear layers' weights in blocks of
    `weights_block_size` along K, "fp8" to E4M3FN float8 with a scale an
    output column (kilnc --weights; docs/quantization.md)."""
    path, data = str(model), None
    if not isinstance(model, (str, os.PathLike)):
        if not hasattr(model, "SerializeToString"):
            raise TypeError("compile takes a path or an onnx.ModelProto")
        name = (model.graph.name or "model") + ".onnx"
        path = os.path.join(str(base_dir or os.getcwd()), name)
        data = model.SerializeToString()
    values = {k: v for k, v in (dims or {}).items() if isinstance(v, int)}
    expressions = {k: v for k, v in (dims or {}).items()
                   if isinstance(v, str)}
    ranges = {k: tuple(v) for k, v in (dims or {}).items()
              if not isinstance(v, (int, str))}
    if any(len(r) != 2 for r in ranges.values()):
        raise TypeError("a dim is an int, a (min, max) pair or an expression "
                        "of other dims")
    try:
        native = _kiln.compile(path, data, precision, values, ranges,
                               {k: list(v) for k, v in (input_shapes or {}).items()},
                               backend, report, kv_cache_in_place,
                               expressions, allow_tf32, weights,
                               weights_block_size)
    except RuntimeError as e:
        raise CompileError(str(e)) from None
    return Model(native)


def load(path: Union[str, os.PathLike], *, backend: str = "auto") -> Model:
    """Opens an artifact `.so` written by kilnc."""
    try:
        return Model(_kiln.load(str(path), backend))
    except RuntimeError as e:
        raise RunError(str(e)) from None


@dataclass(frozen=True)
class Comparison:
    """How far a tensor is from its reference (`compare`)."""
    max_abs: float
    max_rel: float
    rel_l2: float
    #: The first element (C order) outside the per-element check, or -1.
    first_bad: int
    #: Whether the tensor meets the tolerance.
    within: bool
    #: "max_abs .. max_rel .. rel_l2 .." and, outside the tolerance, why.
    text: str
    #: The tolerance in words.
    tolerance: str

    def __bool__(self) -> bool:
        return self.within


def compare(got, want, *, rtol: float = 1e-4, atol: float = 1e-5,
            rel_l2: float = 0.0) -> Comparison:
    """Compares `got` with the reference `want` by the numerics contract.

    The same comparator as `kiln-run --compare-reference`: every element
    within `atol + rtol * |want|` (NaN only where `want` is NaN; the fp32
    contract's defaults), or with `rel_l2` > 0 the relative L2 error (the
    16-bit contract: 1e-2; non-finite only where `want` is). Integers and
    booleans must be equal. The two arrays must have one shape.
    """
    got, want = np.ascontiguousarray(got), np.ascontiguousarray(want)
    if got.shape != want.shape:
        raise ValueError(f"kiln.compare: shapes {list(got.shape)} and "
                         f"{list(want.shape)} differ")
    result = _kiln.compare(got.tobytes(), got.dtype.name, want.tobytes(),
                           want.dtype.name, list(got.shape), rtol, atol,
                           rel_l2)
    return Comparison(**result)


def version() -> str:
    """What `kilnc --version` prints: Kiln, LLVM/MLIR, NVRTC, formats."""
    return _kiln.version_text()
