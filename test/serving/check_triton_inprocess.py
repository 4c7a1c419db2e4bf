#!/usr/bin/env python3
"""One request through Triton's C API in this process: no sockets.

  check_triton_inprocess.py --kilnc BIN --kiln-run BIN --backend LIB
                            [--work DIR]

Loads libtritonserver.so from nvidia-pytriton's wheel with ctypes, starts a
server over a repository holding a BERT-style encoder (its configuration
naming only the backend, completed by it), which loads libtriton_kiln.so;
then sends one request of batch 2 and one whose inputs disagree, and checks
the first's output equals kiln-run's bit for bit and the second's error
names the input. The way to debug the backend under gdb or valgrind:
everything runs in one process. Run with build/venv-triton's Python.

With --kind gpu (on a GPU machine) the instance is KIND_GPU, the output is
held to kiln-run's on the GPU within the fp32 contract, and a third request
passes its inputs in GPU memory (cudaMalloc through the wheel's libcudart)
and gets its output there: the backend's copy-free path.

Exit code 1 on any failure.
"""
import argparse
import ctypes
import os
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

from triton_server import add_model, backend_directory, tritonserver_library

from oracle import run_with_inputs  # noqa: E402 (triton_server adds its path)

HERE = os.path.dirname(os.path.abspath(__file__))
ENCODER = os.path.join(HERE, "..", "models", "fresh", "bert-torchscript-dynamic")

# tritonserver.h's values (server API 1.31).
TYPE_INT64, TYPE_FP32 = 9, 11
MEMORY_CPU, MEMORY_GPU = 0, 2
CUDA_HOST_TO_DEVICE, CUDA_DEVICE_TO_HOST = 1, 2
MODEL_CONTROL_NONE = 0
RESPONSE_COMPLETE_FINAL = 1

p = ctypes.c_void_p
ALLOC_FN = ctypes.CFUNCTYPE(
    p, p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int64, p,
    ctypes.POINTER(p), ctypes.POINTER(p), ctypes.POINTER(ctypes.c_int),
    ctypes.POINTER(ctypes.c_int64))
RELEASE_FN = ctypes.CFUNCTYPE(p, p, p, p, ctypes.c_size_t, ctypes.c_int,
                              ctypes.c_int64)
REQUEST_RELEASE_FN = ctypes.CFUNCTYPE(None, p, ctypes.c_uint32, p)
RESPONSE_FN = ctypes.CFUNCTYPE(None, p, ctypes.c_uint32, p)


class Triton:
    """The functions of libtritonserver.so this check calls."""

    def __init__(self, path):
        # Global, so that the backend Triton loads finds the TRITONSERVER_*
        # and TRITONBACKEND_* functions it calls.
        self.lib = ctypes.CDLL(path, mode=os.RTLD_GLOBAL | os.RTLD_NOW)
        for name in ("ErrorMessage",):
            getattr(self.lib, "TRITONSERVER_" + name).restype = ctypes.c_char_p
        for name in ("ErrorNew", "ServerOptionsNew", "ServerNew",
                     "ServerModelIsReady", "ResponseAllocatorNew",
                     "InferenceRequestNew", "InferenceRequestAddInput",
                     "InferenceRequestAppendInputData",
                     "InferenceRequestAddRequestedOutput",
                     "InferenceRequestSetReleaseCallback",
                     "InferenceRequestSetResponseCallback",
                     "ServerInferAsync", "InferenceResponseError",
                     "InferenceResponseOutputCount", "InferenceResponseOutput",
                     "ServerOptionsSetModelRepositoryPath",
                     "ServerOptionsSetBackendDirectory",
                     "ServerOptionsSetModelControlMode",
                     "ServerOptionsSetStrictModelConfig",
                     "ServerOptionsSetLogVerbose", "ServerOptionsSetMetrics",
                     "ServerOptionsSetMinSupportedComputeCapability",
                     "ServerOptionsDelete", "InferenceResponseDelete",
                     "InferenceRequestDelete", "ResponseAllocatorDelete",
                     "ServerStop", "ServerDelete"):
            getattr(self.lib, "TRITONSERVER_" + name).restype = p
        self.lib.TRITONSERVER_ServerOptionsSetMinSupportedComputeCapability\
            .argtypes = [p, ctypes.c_double]
        self.lib.TRITONSERVER_InferenceRequestNew.argtypes = [
            ctypes.POINTER(p), p, ctypes.c_char_p, ctypes.c_int64]
        self.lib.TRITONSERVER_ServerModelIsReady.argtypes = [
            p, ctypes.c_char_p, ctypes.c_int64, ctypes.POINTER(ctypes.c_bool)]
        self.lib.TRITONSERVER_InferenceRequestAddInput.argtypes = [
            p, ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(ctypes.c_int64),
            ctypes.c_uint64]
        self.lib.TRITONSERVER_InferenceRequestAppendInputData.argtypes = [
            p, ctypes.c_char_p, p, ctypes.c_size_t, ctypes.c_int,
            ctypes.c_int64]
        self.lib.TRITONSERVER_InferenceResponseOutput.argtypes = [
            p, ctypes.c_uint32, ctypes.POINTER(ctypes.c_char_p),
            ctypes.POINTER(ctypes.c_int), ctypes.POINTER(
                ctypes.POINTER(ctypes.c_int64)),
            ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(p),
            ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.c_int),
            ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(p)]

    def __getattr__(self, name):
        function = getattr(self.lib, "TRITONSERVER_" + name)

        def call(*args):
            error = function(*args)
            if error:
                message = self.lib.TRITONSERVER_ErrorMessage(p(error))
                raise RuntimeError(f"TRITONSERVER_{name}: {message.decode()}")
        return call


class Cuda:
    """cudaMalloc, cudaFree and cudaMemcpy from the wheel's libcudart."""

    def __init__(self, library_folder):
        import glob
        found = glob.glob(os.path.join(library_folder, "libcudart*.so*"))
        self.lib = ctypes.CDLL(found[0])
        self.lib.cudaMalloc.argtypes = [ctypes.POINTER(p), ctypes.c_size_t]
        self.lib.cudaFree.argtypes = [p]
        self.lib.cudaMemcpy.argtypes = [p, p, ctypes.c_size_t, ctypes.c_int]

    def malloc(self, size):
        ptr = p()
        if self.lib.cudaMalloc(ctypes.byref(ptr), max(size, 1)) != 0:
            raise RuntimeError("cudaMalloc failed")
        return ptr.value

    def free(self, ptr):
        self.lib.cudaFree(p(ptr))

    def copy(self, dst, src, size, kind):
        if self.lib.cudaMemcpy(p(dst), p(src), size, kind) != 0:
            raise RuntimeError("cudaMemcpy failed")


class Allocator:
    """Output buffers in host memory, or in GPU memory where Triton asks for
    it and `cuda` is given; kept alive until Triton releases them."""

    def __init__(self, triton, cuda=None):
        self.cuda = cuda
        self.device = set()
        self.buffers = {}
        self.alloc_fn = ALLOC_FN(self.alloc)
        self.release_fn = RELEASE_FN(self.release)
        self.handle = p()
        triton.ResponseAllocatorNew(ctypes.byref(self.handle), self.alloc_fn,
                                    self.release_fn, None)

    def alloc(self, allocator, name, size, memory, memory_id, userp, buffer,
              buffer_userp, actual_memory, actual_id):
        if memory == MEMORY_GPU and self.cuda:
            address = self.cuda.malloc(size)
            self.device.add(address)
            buffer[0] = address
            buffer_userp[0] = None
            actual_memory[0] = MEMORY_GPU
            actual_id[0] = memory_id
            return None
        storage = ctypes.create_string_buffer(max(size, 1))
        address = ctypes.addressof(storage)
        self.buffers[address] = storage
        buffer[0] = address
        buffer_userp[0] = None
        actual_memory[0] = MEMORY_CPU
        actual_id[0] = 0
        return None

    def release(self, allocator, buffer, buffer_userp, size, memory,
                memory_id):
        if buffer in self.device:
            self.device.discard(buffer)
            self.cuda.free(buffer)
        self.buffers.pop(buffer, None)
        return None


def infer(triton, server, allocator, feeds, cuda=None):
    """One request, its inputs in GPU memory when `cuda` is given; returns
    (outputs by name, None) or (None, error); `.memory` of the outputs dict
    says where the first output was."""
    request = p()
    triton.InferenceRequestNew(ctypes.byref(request), server, b"bert", -1)
    device_inputs = []
    for name, value in feeds.items():
        shape = (ctypes.c_int64 * value.ndim)(*value.shape)
        triton.InferenceRequestAddInput(request, name.encode(), TYPE_INT64,
                                        shape, value.ndim)
        data, memory = value.ctypes.data, MEMORY_CPU
        if cuda:
            data, memory = cuda.malloc(value.nbytes), MEMORY_GPU
            device_inputs.append(data)
            cuda.copy(data, value.ctypes.data, value.nbytes,
                      CUDA_HOST_TO_DEVICE)
        triton.InferenceRequestAppendInputData(
            request, name.encode(), p(data), value.nbytes, memory, 0)
    triton.InferenceRequestAddRequestedOutput(request, b"output")
    released = threading.Event()
    done = threading.Event()
    result = {}

    def on_release(req, flags, userp):
        triton.InferenceRequestDelete(p(req))
        released.set()

    def on_response(response, flags, userp):
        result["response"] = response
        done.set()

    release_fn = REQUEST_RELEASE_FN(on_release)
    response_fn = RESPONSE_FN(on_response)
    triton.InferenceRequestSetReleaseCallback(request, release_fn, None)
    triton.InferenceRequestSetResponseCallback(request, allocator.handle, None,
                                               response_fn, None)
    triton.ServerInferAsync(server, request, None)
    if not done.wait(120) or not released.wait(120):
        return None, "no response in 120 s"
    for data in device_inputs:
        cuda.free(data)
    response = p(result["response"])
    lib = triton.lib
    error = lib.TRITONSERVER_InferenceResponseError(response)
    if error:
        message = lib.TRITONSERVER_ErrorMessage(p(error)).decode()
        triton.InferenceResponseDelete(response)
        return None, message
    name = ctypes.c_char_p()
    dtype = ctypes.c_int()
    shape = ctypes.POINTER(ctypes.c_int64)()
    rank = ctypes.c_uint64()
    base = p()
    size = ctypes.c_size_t()
    memory = ctypes.c_int()
    memory_id = ctypes.c_int64()
    userp = p()
    triton.InferenceResponseOutput(
        response, 0, ctypes.byref(name), ctypes.byref(dtype),
        ctypes.byref(shape), ctypes.byref(rank), ctypes.byref(base),
        ctypes.byref(size), ctypes.byref(memory), ctypes.byref(memory_id),
        ctypes.byref(userp))
    dims = [shape[i] for i in range(rank.value)]
    assert dtype.value == TYPE_FP32, dtype.value
    out = np.empty(dims, np.float32)
    if memory.value == MEMORY_GPU:
        allocator.cuda.copy(out.ctypes.data, base.value, size.value,
                            CUDA_DEVICE_TO_HOST)
    else:
        ctypes.memmove(out.ctypes.data, base, size.value)
    triton.InferenceResponseDelete(response)
    return OutputsAt({name.value.decode(): out}, memory.value), None


class OutputsAt(dict):
    """Outputs by name, and the memory type the first one was in."""

    def __init__(self, outputs, memory):
        super().__init__(outputs)
        self.memory = memory


def with_library_path():
    """Runs this script again with the wheel's library folder on
    LD_LIBRARY_PATH, unless it is there: libtritonserver.so finds the
    libraries beside it only through it (the loader reads it at start)."""
    libs = os.path.dirname(tritonserver_library())
    paths = os.environ.get("LD_LIBRARY_PATH", "").split(":")
    if libs not in paths:
        env = dict(os.environ, LD_LIBRARY_PATH=":".join([libs] + paths))
        os.execve(sys.executable, [sys.executable] + sys.argv, env)


def main():
    with_library_path()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kilnc", required=True)
    parser.add_argument("--kiln-run", required=True)
    parser.add_argument("--backend", required=True, help="libtriton_kiln.so")
    parser.add_argument("--work")
    parser.add_argument("--kind", choices=["cpu", "gpu"], default="cpu",
                        help="the instance's kind (gpu: on a GPU machine)")
    args = parser.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="kiln-triton-inprocess-")
    os.makedirs(work, exist_ok=True)
    failures = []

    def check(ok, what):
        print(("ok    " if ok else "FAIL  ") + what)
        if not ok:
            failures.append(what)

    model = os.path.join(work, "encoder.so")
    subprocess.run([args.kilnc, os.path.join(ENCODER, "model.onnx"), "-o",
                    model, "--dim=batch=1:4,sequence=1:16", "-q"], check=True)
    repository = os.path.join(work, "repository")
    gpu = args.kind == "gpu"
    add_model(repository, "bert", 'backend: "kiln"\ninstance_group [{ kind: '
              + ('KIND_GPU' if gpu else 'KIND_CPU') + ' }]\n',
              {"model.so": model})
    rng = np.random.default_rng(7)
    feeds = {"input_ids": rng.integers(0, 96, (2, 7), dtype=np.int64),
             "attention_mask": np.ones((2, 7), np.int64)}
    out = os.path.join(work, "kiln-run")
    ran = run_with_inputs([args.kiln_run, model,
                           "--backend=" + ("cuda" if gpu else "host"),
                           f"--output-dir={out}"], feeds,
                          os.path.join(out, "in"))
    if ran.returncode != 0:
        sys.exit(ran.stderr)
    want = np.load(os.path.join(out, "output.npy"))

    triton = Triton(tritonserver_library())
    options = p()
    triton.ServerOptionsNew(ctypes.byref(options))
    triton.ServerOptionsSetModelRepositoryPath(options, repository.encode())
    triton.ServerOptionsSetBackendDirectory(
        options, backend_directory(work, args.backend).encode())
    triton.ServerOptionsSetModelControlMode(options, MODEL_CONTROL_NONE)
    # The C API's default is strict (no completing of configurations).
    triton.ServerOptionsSetStrictModelConfig(options, False)
    triton.ServerOptionsSetLogVerbose(options, 0)
    triton.ServerOptionsSetMetrics(options, False)
    triton.ServerOptionsSetMinSupportedComputeCapability(options, 0.0)
    server = p()
    triton.ServerNew(ctypes.byref(server), options)
    triton.ServerOptionsDelete(options)
    try:
        ready = ctypes.c_bool(False)
        deadline = time.time() + 300
        while not ready.value and time.time() < deadline:
            triton.ServerModelIsReady(server, b"bert", -1, ctypes.byref(ready))
            time.sleep(0.2)
        check(ready.value, "the backend loaded the model in-process")
        cuda = Cuda(os.path.dirname(tritonserver_library())) if gpu else None
        allocator = Allocator(triton, cuda)

        def matches(got):
            # cuBLASLt may pick another algorithm in another process.
            if gpu:
                return np.allclose(got, want, rtol=1e-4, atol=1e-5)
            return np.array_equal(got, want)

        got, error = infer(triton, server, allocator, feeds)
        check(error is None and matches(got["output"]),
              f"one request of batch 2 equals kiln-run's output"
              f"{': ' + error if error else ''}")
        if gpu:
            got, error = infer(triton, server, allocator, feeds, cuda)
            check(error is None and matches(got["output"]) and
                  got.memory == MEMORY_GPU,
                  f"inputs and output in GPU memory"
                  f"{': ' + error if error else ''}")
        bad = dict(feeds, attention_mask=np.ones((2, 9), np.int64))
        got, error = infer(triton, server, allocator, bad)
        check(error is not None and "attention_mask" in error,
              f"inputs that disagree answered with an error: {error}")
        triton.ResponseAllocatorDelete(allocator.handle)
    finally:
        triton.ServerStop(server)
        triton.ServerDelete(server)
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
