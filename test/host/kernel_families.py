#!/usr/bin/env python3
"""Runs every kernel family Kiln emits on the host backend against the reference.

  kernel_families.py --kilnc build/bin/kilnc --kiln-run build/bin/kiln-run
                     [--seed N] [--jobs N] [--filter TEXT] [--no-check]
                     [--backend host|cuda]

Builds small ONNX models with onnx.helper in a temporary folder, one per
(family, shape): elementwise (unary chains, broadcasting binaries, casts,
integer and 16-bit float arithmetic, unsigned and int16 arithmetic at the
types' limits, every cast between two element types, casts through uint64
and double, double math), reduction (Softmax and LogSoftmax on the last and
a middle axis, LayerNormalization with and without bias, RMSNormalization
and LLaMA's spelled-out RMSNorm in fp16 and bf16, pre-norm residual sums
that the norm's kernel writes too,
ReduceMean/Sum/Max/Min/Prod over adjacent and non-adjacent axes on floats
and integers, ReduceL1/L2/LogSumExp/SumSquare, ArgMax/ArgMin with ties,
CumSum over several chunks, each with fused prologues and epilogues; double
and unsigned reductions; int64 sums, products and scans that wrap), sort (TopK, with ties), attention (recomposed
layers with packed, biased projections and ONNX Attention with grouped-query
heads, one kernel each), copy (Transpose of rank 2 to 4, Identity outputs),
matmul (2-D, batched, broadcast batch, 1-D operands, Gemm), Kiln's own GEMM
kernels (every layout and split of both forms, tensor-core tiles and
decoding's GEMV, run by name with kiln-run --gemm) and
FFN / attention chains. Shapes are ragged on purpose: sizes that are not
multiples of the 256-thread block or of a warp (1, 7, 31, 33, 255, 257, 1000,
4099); one elementwise, one reduction and one copy case are larger than one
launch (65535 blocks), so that the kernels' grid-stride loops take a second
turn. (The elementwise case no longer takes one: its vector loop moves
four elements a thread and fits in one launch; the copy case still runs the
scalar grid-stride loop, the one the elementwise family falls back to for
unaligned pointers and data movement, twice around.) Weights are drawn
from a generator seeded by the case's name; inputs are kiln-run's seeded
random draws.

Each case is compiled with `kilnc` and run with
`kiln-run x.so --backend host --reference-model x.onnx --compare-reference
--seed S --host-seed H` (the fp32 contract, rtol 1e-4 / atol 1e-5, unless the
case says why not); a subset also runs with `--check` (AddressSanitizer). A
self-check compiles one model and compares it with a slightly different
reference model: kiln-run must fail there, which shows that a mismatch is
caught. One line per case, then a summary; exit code 1 when anything failed.
On failure the temporary folder is kept so that the printed commands can be
run again.
"""
import argparse
import concurrent.futures
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import types
import zlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F32, F16, BF16 = TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16
F64 = TensorProto.DOUBLE
I64, I32, I16, I8 = TensorProto.INT64, TensorProto.INT32, TensorProto.INT16, TensorProto.INT8
U64, U32, U16, U8 = TensorProto.UINT64, TensorProto.UINT32, TensorProto.UINT16, TensorProto.UINT8
BOOL = TensorProto.BOOL
OPSET = 17

# Ragged sizes: neither multiples of the 256-thread block nor of 32.
RAGGED = [1, 7, 31, 33, 255, 257, 1000, 4099]
# Launches are capped at 65535 blocks; beyond that, kernels loop.
MAX_GRID = 65535
GRID_STRIDE_ELEMENTS = 256 * MAX_GRID + 7

# Tolerances other than the fp32 contract, each with its reason.
# The kernels compute 16-bit floats in fp32 and round only where the IR stores
# or casts; the reference rounds after every op. A fused chain of 16-bit ops
# therefore differs by up to an ulp of the type, plus cancellation near 0.
F16_TOL = (2e-3, 5e-4, "f16 chain: kernel rounds only at stores (1 f16 ulp)")
BF16_TOL = (1.6e-2, 4e-3, "bf16 chain: kernel rounds only at stores (1 bf16 ulp)")
# Doubles compute in double in the kernels as in the reference: the same libm
# functions in the same order, only the order of a block's sums differs. An
# fp32 computation would be ~1e-7 off and fail this.
F64_TOL = (1e-12, 1e-14, "f64 computes in double: only summation order differs")

# Values at and near each integer type's limits, tiled over a weight: against
# kiln-run's random inputs in [0, 4) they make sums wrap past the maximum,
# differences wrap below zero (below the minimum for int16), and put uint64
# values at and above 2^63, which order wrongly if read as signed.
LIMITS = {
    U8: (np.uint8, [255, 254, 128, 127, 1, 0, 200]),
    U16: (np.uint16, [65535, 65534, 32768, 32767, 1, 0, 40000]),
    U32: (np.uint32, [2**32 - 1, 2**32 - 2, 2**31, 2**31 - 1, 1, 0, 3 * 10**9]),
    U64: (np.uint64, [2**64 - 1, 2**64 - 2, 2**63, 2**63 - 1, 1, 0, 10**19]),
    I16: (np.int16, [32767, -32768, -1, 1, 30000, -30000, 0]),
    I64: (np.int64, [2**63 - 1, -2**63, -1, 1, 2**62, -2**62, 0]),
}


def limits(name, dtype, n):
    """A weight of `n` values at and near the limits of `dtype`."""
    np_type, pattern = LIMITS[dtype]
    return numpy_helper.from_array(np.resize(np.array(pattern, dtype=np_type), n), name)


class Case:
    """One model at one shape."""

    def __init__(self, family, name, build, check=False, tol=None, gemm=None):
        self.family = family
        self.name = name
        self.build = build  # () -> ModelProto
        self.check = check
        self.tol = tol  # (rtol, atol, why) or None for the contract
        # The Kiln GEMM kernel every matmul runs on (kiln-run --gemm), or
        # None for the CPU GEMM that stands in for cuBLASLt.
        self.gemm = gemm

    @property
    def id(self):
        return f"{self.family}/{self.name}"

    def make_model(self):
        _weights.rng = np.random.default_rng(zlib.crc32(self.id.encode()))
        return self.build()


# ----------------------------------------------------------------------------
# Model building
# ----------------------------------------------------------------------------

# Weights are part of the model, so they do not depend on the run's seed: each
# case draws them from a generator seeded by its name (models are built in
# worker threads, hence one generator per thread).
_weights = threading.local()


def weight(name, shape, dtype=np.float32, scale=1.0):
    """A random initializer, uniform in [-scale, scale)."""
    value = (_weights.rng.uniform(-1, 1, size=shape) * scale).astype(dtype)
    return numpy_helper.from_array(value, name)


def const(name, value, dtype=np.float32):
    return numpy_helper.from_array(np.array(value, dtype=dtype), name)


def ints(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def model(nodes, inputs, outputs, inits=(), opset=OPSET):
    """A checked model; inputs are (name, elem_type, shape), outputs names.

    Output types and shapes come from ONNX shape inference, so that a model
    built wrong is caught here rather than blamed on Kiln."""
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, TensorProto.UNDEFINED, None) for n in outputs],
        list(inits))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    inferred = onnx.shape_inference.infer_shapes(m, strict_mode=True)
    known = {v.name: v for v in list(inferred.graph.value_info) + list(inferred.graph.output)}
    del m.graph.output[:]
    for name in outputs:
        info = known[name]
        if not info.type.tensor_type.HasField("shape"):
            raise RuntimeError(f"no inferred shape for output {name}")
        m.graph.output.append(info)
    onnx.checker.check_model(m, full_check=True)
    return m


def node(op, ins, outs, **attrs):
    if isinstance(outs, str):
        outs = [outs]
    return helper.make_node(op, ins, outs, name=f"{op}_{outs[0]}", **attrs)


# ----------------------------------------------------------------------------
# Families
# ----------------------------------------------------------------------------

def elementwise_cases():
    cases = []

    # A unary chain through every transcendental, fused into one kernel.
    def unary(shape):
        nodes = [
            node("Erf", ["x"], "a"), node("Tanh", ["a"], "b"),
            node("Neg", ["b"], "c"), node("Sigmoid", ["c"], "d"),
            node("Exp", ["x"], "e"), node("Sqrt", ["e"], "f"),
            node("Mul", ["d", "f"], "g"), node("Sub", ["g", "half"], "h"),
            node("Relu", ["h"], "y"),
        ]
        return model(nodes, [("x", F32, shape)], ["y"], [const("half", 0.5)])

    for n in RAGGED:
        cases.append(Case("elementwise", f"unary_chain_{n}", lambda n=n: unary([n]),
                          check=(n == 33)))
    cases.append(Case("elementwise", "unary_chain_7x257x3", lambda: unary([7, 257, 3])))

    # More elements than one launch has threads (65535 blocks of 256): the
    # vector loop over 4-element groups and the 3-element scalar tail.
    def grid_stride(n):
        nodes = [node("Relu", ["x"], "a"), node("Mul", ["a", "y"], "z")]
        return model(nodes, [("x", F32, [n]), ("y", F32, [1])], ["z"])

    cases.append(Case("elementwise", f"grid_stride_{GRID_STRIDE_ELEMENTS}",
                      lambda: grid_stride(GRID_STRIDE_ELEMENTS)))

    # Broadcasting binaries: every op, an operand of each broadcast pattern.
    def binary(xs, ys):
        nodes = [
            node("Add", ["x", "y"], "a"), node("Mul", ["a", "y"], "b"),
            node("Sub", ["b", "x"], "c"), node("Div", ["c", "y"], "d"),
            node("Exp", ["d"], "e"), node("Pow", ["e", "y"], "f"),
            node("Add", ["f", "w"], "z"),
        ]
        out = np.broadcast_shapes(tuple(xs), tuple(ys))
        return model(nodes, [("x", F32, xs), ("y", F32, ys)], ["z"],
                     [weight("w", [out[-1]])])

    for xs, ys in [([1000], [1000]), ([7, 257], [257]), ([3, 1, 33], [31, 1]),
                   ([1], [5, 4099]), ([2, 7, 33], [1, 1, 1]), ([255, 1], [1, 33])]:
        label = "x".join(map(str, xs)) + "_by_" + "x".join(map(str, ys))
        cases.append(Case("elementwise", f"binary_bcast_{label}",
                          lambda xs=xs, ys=ys: binary(xs, ys),
                          check=(xs == [3, 1, 33])))

    # Pow with constant exponents (squares of negative bases) and a scalar
    # rank-0 operand.
    def powers(n):
        nodes = [node("Pow", ["x", "two"], "a"), node("Pow", ["x", "three"], "b"),
                 node("Add", ["a", "b"], "c"), node("Div", ["c", "s"], "y")]
        return model(nodes, [("x", F32, [n])], ["y"],
                     [const("two", 2.0), const("three", 3.0), const("s", 0.3)])

    cases.append(Case("elementwise", "pow_const_257", lambda: powers(257)))

    # Casts through every element type Kiln supports.
    def casts(shape):
        nodes = [
            node("Cast", ["x"], "h", to=F16), node("Cast", ["h"], "hf", to=F32),
            node("Cast", ["x"], "bh", to=BF16), node("Cast", ["bh"], "bf", to=F32),
            node("Mul", ["x", "hundred"], "big"),
            node("Cast", ["big"], "i32", to=I32), node("Cast", ["i32"], "i32f", to=F32),
            node("Cast", ["big"], "i64", to=I64), node("Cast", ["i64"], "i64f", to=F32),
            node("Cast", ["big"], "i8", to=I8), node("Cast", ["i8"], "i8f", to=F32),
            node("Cast", ["x"], "b", to=BOOL), node("Cast", ["b"], "bfl", to=F32),
        ]
        outs = ["hf", "bf", "i32f", "i64f", "i8f", "bfl"]
        return model(nodes, [("x", F32, shape)], outs, [const("hundred", 100.0)])

    for shape in [[1], [33], [4099], [3, 257]]:
        label = "x".join(map(str, shape))
        cases.append(Case("elementwise", f"casts_{label}", lambda s=shape: casts(s),
                          check=(shape == [33])))

    # Casts whose outputs keep the narrow type (stores of f16, bf16, ints).
    def narrow_outputs(n):
        nodes = [node("Cast", ["x"], "h", to=F16), node("Cast", ["x"], "bh", to=BF16),
                 node("Mul", ["x", "hundred"], "big"),
                 node("Cast", ["big"], "i32", to=I32), node("Cast", ["big"], "i8", to=I8),
                 node("Cast", ["x"], "b", to=BOOL)]
        return model(nodes, [("x", F32, [n])], ["h", "bh", "i32", "i8", "b"],
                     [const("hundred", 100.0)])

    cases.append(Case("elementwise", "narrow_outputs_257", lambda: narrow_outputs(257)))

    # Integer inputs (random draws in [0, 4), so Div meets zero divisors,
    # which Kiln defines as 0) and a bool input.
    def integers(dtype, n):
        nodes = [node("Add", ["x", "y"], "a"), node("Mul", ["a", "y"], "b"),
                 node("Sub", ["b", "x"], "c"), node("Div", ["c", "y"], "d"),
                 node("Neg", ["d"], "e"), node("Relu", ["e"], "r"),
                 node("Add", ["e", "r"], "z"),
                 node("Cast", ["x"], "xf", to=F32), node("Cast", ["m"], "mf", to=F32),
                 node("Mul", ["xf", "mf"], "w")]
        return model(nodes, [("x", dtype, [n]), ("y", dtype, [n]), ("m", BOOL, [n])],
                     ["z", "w"])

    for dtype, label in [(I32, "int32"), (I64, "int64"), (I8, "int8")]:
        for n in [7, 1000]:
            cases.append(Case("elementwise", f"{label}_arith_{n}",
                              lambda d=dtype, n=n: integers(d, n),
                              check=(dtype == I64 and n == 7)))

    # Unsigned and int16 arithmetic at the types' limits (see LIMITS): Add,
    # Sub and Mul wrap, Div and Mod by zero give 0, and comparisons, Max and
    # Min, Abs and Sign treat unsigned values as unsigned.
    def integer_limits(dtype, n):
        nodes = [node("Add", ["x", "w"], "sum"), node("Sub", ["x", "w"], "diff"),
                 node("Mul", ["w", "w"], "sq"), node("Div", ["w", "x"], "quot"),
                 node("Mod", ["w", "x"], "rem"), node("Max", ["x", "sum"], "hi"),
                 node("Min", ["diff", "w"], "lo"), node("Less", ["x", "w"], "lt"),
                 node("Greater", ["sum", "diff"], "gt"),
                 node("Equal", ["diff", "w"], "eq"), node("Abs", ["diff"], "abs"),
                 node("Sign", ["diff"], "sign")]
        outs = ["sum", "sq", "quot", "rem", "hi", "lo", "lt", "gt", "eq", "abs", "sign"]
        return model(nodes, [("x", dtype, [n])], outs, [limits("w", dtype, n)])

    for dtype, label in [(U8, "uint8"), (U16, "uint16"), (U32, "uint32"),
                         (U64, "uint64"), (I16, "int16")]:
        for n in [7, 1000]:
            cases.append(Case("elementwise", f"{label}_limits_{n}",
                              lambda d=dtype, n=n: integer_limits(d, n),
                              check=(dtype == U64 and n == 7)))

    # Casts to and from the new types: doubles scaled past each integer range
    # (negative values saturate to 0 in unsigned types, large ones to the
    # maximum), uint64 values at 2^64 - 1 and 2^63 to float, double and f16,
    # doubles to f16 and f32 rounded once.
    def wide_casts(n):
        nodes = [node("Cast", ["x"], "xd", to=F64),
                 node("Mul", ["xd", "small"], "s"), node("Mul", ["xd", "large"], "t"),
                 node("Cast", ["s"], "u8", to=U8), node("Cast", ["s"], "u16", to=U16),
                 node("Cast", ["s"], "i16", to=I16), node("Cast", ["t"], "u32", to=U32),
                 node("Cast", ["t"], "u64", to=U64), node("Cast", ["t"], "i64", to=I64),
                 node("Cast", ["s"], "sh", to=F16), node("Cast", ["t"], "tf", to=F32),
                 node("Add", ["u", "w"], "big"), node("Cast", ["big"], "bf", to=F32),
                 node("Cast", ["big"], "bd", to=F64), node("Cast", ["big"], "bh", to=F16),
                 node("Cast", ["big"], "b8", to=U8), node("Cast", ["u8"], "u8d", to=F64)]
        outs = ["u8", "u16", "i16", "u32", "u64", "i64", "sh", "tf", "bf", "bd", "bh",
                "b8", "u8d"]
        return model(nodes, [("x", F32, [n]), ("u", U64, [n])], outs,
                     [const("small", 3e5, np.float64), const("large", 3e19, np.float64),
                      limits("w", U64, n)])

    for n in [7, 1000]:
        cases.append(Case("elementwise", f"wide_casts_{n}", lambda n=n: wide_casts(n),
                          check=(n == 7)))

    # Every Cast between two element types Kiln supports, from doubles scaled
    # so that the values fit every type (300) or overflow most of them (1e19,
    # which saturate, wrap or become infinity); all exact.
    ALL_TYPES = [F64, F32, F16, BF16, I64, I32, I16, I8, U64, U32, U16, U8, BOOL]

    def cast_matrix(scale, n):
        nodes = [node("Mul", ["x", "scale"], "s")]
        nodes += [node("Cast", ["s"], f"t{a}", to=a) for a in ALL_TYPES]
        nodes += [node("Cast", [f"t{a}"], f"t{a}_{b}", to=b)
                  for a in ALL_TYPES for b in ALL_TYPES if a != b]
        outs = [f"t{a}" for a in ALL_TYPES] + [
            f"t{a}_{b}" for a in ALL_TYPES for b in ALL_TYPES if a != b]
        return model(nodes, [("x", F64, [n])], outs,
                     [const("scale", scale, np.float64)])

    for scale in [300.0, 1e19]:
        cases.append(Case("elementwise", f"cast_matrix_scale{scale:g}_33",
                          lambda sc=scale: cast_matrix(sc, 33)))

    # Double math: every transcendental in double, checked to 1e-12.
    def double_math(shape):
        nodes = [node("Erf", ["x"], "a"), node("Tanh", ["a"], "b"),
                 node("Sigmoid", ["b"], "c"), node("Exp", ["x"], "e"),
                 node("Sqrt", ["e"], "f"), node("Log", ["f"], "g"),
                 node("Mul", ["c", "g"], "h"), node("Div", ["h", "e"], "i"),
                 node("Pow", ["e", "y"], "p"), node("Sin", ["p"], "q"),
                 node("Cos", ["i"], "k"), node("Add", ["q", "k"], "z")]
        return model(nodes, [("x", F64, shape), ("y", F64, shape[-1:])], ["z"])

    for shape in [[7], [3, 1000]]:
        label = "x".join(map(str, shape))
        cases.append(Case("elementwise", f"f64_math_{label}",
                          lambda s=shape: double_math(s), tol=F64_TOL,
                          check=(shape == [7])))

    # Arithmetic in 16-bit floats: inputs given as f16 / bf16.
    def narrow_arith(dtype, shape):
        nodes = [node("Mul", ["x", "y"], "a"), node("Add", ["a", "x"], "b"),
                 node("Tanh", ["b"], "c"), node("Sub", ["c", "y"], "z")]
        return model(nodes, [("x", dtype, shape), ("y", dtype, shape[-1:])], ["z"])

    for shape in [[1], [7, 257]]:
        label = "x".join(map(str, shape))
        cases.append(Case("elementwise", f"f16_arith_{label}",
                          lambda s=shape: narrow_arith(F16, s), tol=F16_TOL))
        cases.append(Case("elementwise", f"bf16_arith_{label}",
                          lambda s=shape: narrow_arith(BF16, s), tol=BF16_TOL))
    return cases


def reduction_cases():
    cases = []

    def softmax(shape, axis):
        return model([node("Softmax", ["x"], "y", axis=axis)], [("x", F32, shape)], ["y"])

    for n in RAGGED:
        cases.append(Case("reduction", f"softmax_last_3x{n}",
                          lambda n=n: softmax([3, n], -1), check=(n == 33)))
    for shape, axis in [([2, 7, 5], 1), ([2, 257, 3], 1), ([33, 4], 0),
                        ([3, 1000, 1], 1), ([2, 31, 3, 5], -3)]:
        label = "x".join(map(str, shape))
        cases.append(Case("reduction", f"softmax_axis{axis}_{label}",
                          lambda s=shape, a=axis: softmax(s, a),
                          check=(shape == [2, 7, 5])))

    # Masked softmax: a broadcast additive mask and a scale fused as prologue.
    def masked_softmax(s):
        mask = np.triu(np.full((s, s), -10000.0, np.float32), 1)
        nodes = [node("Mul", ["x", "scale"], "a"), node("Add", ["a", "mask"], "b"),
                 node("Softmax", ["b"], "y", axis=-1)]
        return model(nodes, [("x", F32, [2, 3, s, s])], ["y"],
                     [const("scale", 0.125), numpy_helper.from_array(mask, "mask")])

    for s in [7, 33]:
        cases.append(Case("reduction", f"masked_softmax_{s}",
                          lambda s=s: masked_softmax(s)))

    def layernorm(shape, axis, bias):
        normalized = shape[axis:]
        inits = [weight("gamma", normalized)]
        ins = ["x", "gamma"]
        if bias:
            inits.append(weight("beta", normalized))
            ins.append("beta")
        return model([node("LayerNormalization", ins, "y", axis=axis, epsilon=1e-5)],
                     [("x", F32, shape)], ["y"], inits)

    for n in RAGGED:
        cases.append(Case("reduction", f"layernorm_bias_5x{n}",
                          lambda n=n: layernorm([5, n], -1, True), check=(n == 33)))
    for n in [1, 33, 257, 4099]:
        cases.append(Case("reduction", f"layernorm_nobias_3x{n}",
                          lambda n=n: layernorm([3, n], -1, False)))
    cases.append(Case("reduction", "layernorm_axis-2_2x7x33",
                      lambda: layernorm([2, 7, 33], -2, True)))
    cases.append(Case("reduction", "layernorm_axis1_2x3x5x7",
                      lambda: layernorm([2, 3, 5, 7], 1, False)))

    # Add before LayerNorm (residual), Mul and Add after it.
    def layernorm_fused(shape):
        n = shape[-1]
        nodes = [node("Add", ["x", "r"], "h"),
                 node("LayerNormalization", ["h", "gamma", "beta"], "n", axis=-1),
                 node("Mul", ["n", "s"], "m"), node("Add", ["m", "t"], "y")]
        return model(nodes, [("x", F32, shape), ("r", F32, shape)], ["y"],
                     [weight("gamma", [n]), weight("beta", [n]), weight("s", [n]),
                      const("t", 0.25)])

    for shape in [[2, 7, 33], [3, 257], [1, 4099]]:
        label = "x".join(map(str, shape))
        cases.append(Case("reduction", f"layernorm_fused_{label}",
                          lambda s=shape: layernorm_fused(s), check=(shape == [2, 7, 33])))

    # RMSNorm, one row kernel (kiln.rms_norm): ONNX's RMSNormalization at
    # lengths that hit the warp, cached-block and uncached forms' edges.
    def rmsnorm(shape, axis):
        return model([node("RMSNormalization", ["x", "gamma"], "y", axis=axis,
                           epsilon=1e-6)],
                     [("x", F32, shape)], ["y"], [weight("gamma", shape[axis:])],
                     opset=23)

    for n in [1, 33, 1024, 1025, 4099]:
        cases.append(Case("reduction", f"rmsnorm_3x{n}", lambda n=n: rmsnorm([3, n], -1),
                          check=(n == 33)))
    cases.append(Case("reduction", "rmsnorm_axis1_2x3x5x7",
                      lambda: rmsnorm([2, 3, 5, 7], 1)))

    # LLaMA's RMSNorm as a 16-bit export spells it after the residual add:
    # widened to fp32, normalized, cast back, then the 16-bit scale. One
    # kernel of the 16-bit sum; it rounds once where the reference rounds at
    # the cast and again at the scale.
    def rmsnorm_llama(shape, dtype):
        n = shape[-1]
        nodes = [node("Add", ["x", "r"], "h"), node("Cast", ["h"], "w", to=F32),
                 node("Pow", ["w", "two"], "sq"),
                 node("ReduceMean", ["sq"], "ms", axes=[-1], keepdims=1),
                 node("Add", ["ms", "eps"], "a"), node("Sqrt", ["a"], "s"),
                 node("Reciprocal", ["s"], "i"), node("Mul", ["w", "i"], "nw"),
                 node("Cast", ["nw"], "n", to=dtype), node("Mul", ["gamma", "n"], "y")]
        if dtype == F16:
            gamma = weight("gamma", [n], np.float16)
        else:  # numpy has no bfloat16: onnx rounds the floats.
            gamma = helper.make_tensor("gamma", BF16, [n],
                                       _weights.rng.uniform(-1, 1, n).astype(np.float32))
        return model(nodes, [("x", dtype, shape), ("r", dtype, shape)], ["y"],
                     [gamma, const("two", 2.0), const("eps", 1e-6)])

    for shape in [[2, 7, 33], [3, 1000], [1, 4099]]:
        label = "x".join(map(str, shape))
        cases.append(Case("reduction", f"rmsnorm_llama_f16_{label}",
                          lambda s=shape: rmsnorm_llama(s, F16), tol=F16_TOL,
                          check=(shape == [2, 7, 33])))
    cases.append(Case("reduction", "rmsnorm_llama_bf16_3x1000",
                      lambda: rmsnorm_llama([3, 1000], BF16), tol=BF16_TOL))

    # A pre-norm decoder's residual sum, also an output: the norm's kernel
    # writes it in its first pass. onnxruntime's SkipSimplifiedLayerNorm as
    # the importer spells it (fp32 sum and statistics of 16-bit inputs), and
    # GPT-2's residual into LayerNormalization.
    def skip_rmsnorm(shape):
        n = shape[-1]
        nodes = [node("Cast", ["x"], "x32", to=F32), node("Cast", ["r"], "r32", to=F32),
                 node("Add", ["x32", "r32"], "s"), node("Cast", ["gamma"], "g32", to=F32),
                 node("Mul", ["s", "s"], "sq"),
                 node("ReduceMean", ["sq"], "ms", axes=[-1], keepdims=1),
                 node("Add", ["ms", "eps"], "a"), node("Sqrt", ["a"], "root"),
                 node("Div", ["s", "root"], "nw"), node("Mul", ["nw", "g32"], "y32"),
                 node("Cast", ["y32"], "y", to=F16), node("Cast", ["s"], "sum", to=F16)]
        return model(nodes, [("x", F16, shape), ("r", F16, shape)], ["y", "sum"],
                     [weight("gamma", [n], np.float16), const("eps", 1e-6)])

    def prenorm_layernorm(shape):
        n = shape[-1]
        nodes = [node("Add", ["x", "r"], "s"),
                 node("LayerNormalization", ["s", "gamma", "beta"], "y", axis=-1)]
        return model(nodes, [("x", F32, shape), ("r", F32, shape)], ["y", "s"],
                     [weight("gamma", [n]), weight("beta", [n])])

    for shape in [[2, 7, 33], [3, 1000], [1, 4099]]:
        label = "x".join(map(str, shape))
        cases.append(Case("reduction", f"skip_rmsnorm_f16_{label}",
                          lambda s=shape: skip_rmsnorm(s), tol=F16_TOL,
                          check=(shape == [2, 7, 33])))
        cases.append(Case("reduction", f"prenorm_layernorm_{label}",
                          lambda s=shape: prenorm_layernorm(s),
                          check=(shape == [2, 7, 33])))

    def reduce_mean(shape, axes, keepdims, opset=OPSET):
        if opset >= 18:
            nodes = [node("ReduceMean", ["x", "axes"], "y", keepdims=keepdims)]
            inits = [ints("axes", axes)]
        else:
            nodes = [node("ReduceMean", ["x"], "y", axes=axes, keepdims=keepdims)]
            inits = []
        return model(nodes, [("x", F32, shape)], ["y"], inits, opset=opset)

    for shape, axes in [([5, 1], [-1]), ([3, 33], [-1]), ([2, 4099], [1]),
                        ([3, 7, 257], [-2, -1]), ([2, 31, 33], [1]),
                        ([2, 3, 255, 4], [1, 2]), ([1000, 7], [0])]:
        for keepdims in [0, 1]:
            label = "x".join(map(str, shape)) + "_axes" + "_".join(map(str, axes))
            cases.append(Case("reduction", f"reducemean_k{keepdims}_{label}",
                              lambda s=shape, a=axes, k=keepdims: reduce_mean(s, a, k),
                              check=(shape == [3, 33] and keepdims == 1)))
    # More rows than blocks in a launch: each block takes a second row.
    cases.append(Case("reduction", f"reducemean_k1_{MAX_GRID + 2}x3_axes-1",
                      lambda: reduce_mean([MAX_GRID + 2, 3], [-1], 1)))
    cases.append(Case("reduction", "reducemean_opset18_3x7x33",
                      lambda: reduce_mean([3, 7, 33], [-1], 1, opset=18)))

    # RMS-style: Mul prologue, Add/Sqrt/Div epilogue over the reduced row.
    def rms(shape):
        nodes = [node("Mul", ["x", "x"], "sq"),
                 node("ReduceMean", ["sq"], "ms", axes=[-1], keepdims=1),
                 node("Add", ["ms", "eps"], "a"), node("Sqrt", ["a"], "r"),
                 node("Div", ["one", "r"], "y")]
        return model(nodes, [("x", F32, shape)], ["y"],
                     [const("eps", 1e-6), const("one", 1.0)])

    for shape in [[7, 33], [2, 3, 1000]]:
        label = "x".join(map(str, shape))
        cases.append(Case("reduction", f"rms_fused_{label}", lambda s=shape: rms(s)))

    # The other reduce ops (opset 18: axes as an input), over trailing, middle
    # and non-adjacent axes, on floats and integers (random ints are 0..3).
    def reduce(op, dtype, shape, axes, keepdims, opset=18):
        nodes = [node(op, ["x", "axes"], "y", keepdims=keepdims)]
        return model(nodes, [("x", dtype, shape)], ["y"], [ints("axes", axes)], opset=opset)

    for op in ["ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd"]:
        for dtype, label in [(F32, "f32"), (I64, "i64"), (I32, "i32")]:
            for shape, axes in [([3, 33], [-1]), ([2, 257, 3], [1]),
                                ([2, 7, 5, 3], [0, 2]), ([4099], [0])]:
                if op == "ReduceProd" and shape[axes[0]] > 33:
                    continue  # a product of hundreds of values in [-1, 1) is 0
                slabel = "x".join(map(str, shape)) + "_axes" + "_".join(map(str, axes))
                cases.append(Case(
                    "reduction", f"{op.lower()}_{label}_{slabel}",
                    lambda o=op, d=dtype, s=shape, a=axes: reduce(o, d, s, a, 1),
                    check=(shape == [2, 7, 5, 3] and dtype == F32)))
    # Few rows longer than 16384 split over blocks, the last to arrive
    # finishing each row (ReductionEmitter.cpp, splitRowParts).
    for op, dtype, label in [("ReduceMax", F32, "f32"), ("ReduceSum", I32, "i32"),
                             ("ReduceMin", I64, "i64")]:
        cases.append(Case(
            "reduction", f"{op.lower()}_{label}_split_3x40001",
            lambda o=op, d=dtype: reduce(o, d, [3, 40001], [-1], 0),
            check=(dtype == F32)))
    cases.append(Case("reduction", "reducemax_bool_5x33",
                      lambda: reduce("ReduceMax", BOOL, [5, 33], [1], 0, opset=20)))
    cases.append(Case("reduction", "reducemin_f16_7x257",
                      lambda: reduce("ReduceMin", F16, [7, 257], [1], 0)))
    cases.append(Case("reduction", "reducesum_f16_3x1000",
                      lambda: reduce("ReduceSum", F16, [3, 1000], [1], 1),
                      tol=(2e-3, 2e-3, "f16 output of a 1000-term fp32 sum: 1 f16 ulp")))
    for op in ["ReduceL1", "ReduceL2", "ReduceLogSumExp", "ReduceSumSquare"]:
        cases.append(Case("reduction", f"{op.lower()}_3x7x33_axes0_2",
                          lambda o=op: reduce(o, F32, [3, 7, 33], [0, 2], 0)))

    # ArgMax/ArgMin; Floor(2x) makes ties, which select_last_index decides.
    def arg(op, dtype, shape, axis, last, ties):
        nodes = [node(op, ["t" if ties else "x"], "y", axis=axis, keepdims=0,
                      select_last_index=last)]
        if ties:
            nodes[:0] = [node("Mul", ["x", "two"], "d"), node("Floor", ["d"], "t")]
        return model(nodes, [("x", dtype, shape)], ["y"],
                     [const("two", 2.0)] if ties else [])

    for op in ["ArgMax", "ArgMin"]:
        for last in [0, 1]:
            # [2, 40001]: rows split over blocks (splitRowParts).
            for shape, axis in [([3, 1000], 1), ([2, 257, 3], 1), ([33, 7], 0),
                                ([2, 40001], 1)]:
                slabel = "x".join(map(str, shape)) + f"_axis{axis}"
                cases.append(Case(
                    "reduction", f"{op.lower()}_ties_last{last}_{slabel}",
                    lambda o=op, s=shape, a=axis, l=last: arg(o, F32, s, a, l, True),
                    check=(shape == [33, 7])))
            cases.append(Case("reduction", f"{op.lower()}_i32_last{last}_5x257",
                              lambda o=op, l=last: arg(o, I32, [5, 257], 1, l, False)))

    # CumSum: rows longer than a block take several chunks with a carry.
    def cumsum(dtype, shape, axis, exclusive, reverse):
        nodes = [node("CumSum", ["x", "axis"], "y", exclusive=exclusive, reverse=reverse)]
        return model(nodes, [("x", dtype, shape)], ["y"], [ints("axis", [axis])])

    scan_tol = (1e-4, 1e-4, "fp32 running sums of up to 1000 terms in [-1, 1): "
                "the absolute error grows with the partial sums")
    for dtype, label, shape, axis, tol in [
            (F32, "f32", [3, 1000], 1, scan_tol), (F32, "f32", [2, 257, 3], 1, None),
            (F32, "f32", [33, 7], 0, None), (I32, "i32", [5, 33], 1, None),
            (I64, "i64", [4099], 0, None)]:
        for exclusive, reverse in [(0, 0), (1, 1)]:
            slabel = "x".join(map(str, shape)) + f"_axis{axis}_e{exclusive}r{reverse}"
            cases.append(Case(
                "reduction", f"cumsum_{label}_{slabel}",
                lambda d=dtype, s=shape, a=axis, e=exclusive, r=reverse: cumsum(d, s, a, e, r),
                check=(shape == [2, 257, 3]), tol=tol))

    # TopK: the positions (sort kernel) and the values gathered at them;
    # Floor(2x) makes ties, which keep their order.
    def top_k(dtype, shape, axis, k, largest, ties):
        nodes = [node("TopK", ["t" if ties else "x", "k"], ["v", "i"], axis=axis,
                      largest=largest)]
        if ties:
            nodes[:0] = [node("Mul", ["x", "two"], "d"), node("Floor", ["d"], "t")]
        inits = [ints("k", [k])] + ([const("two", 2.0)] if ties else [])
        return model(nodes, [("x", dtype, shape)], ["v", "i"], inits)

    for dtype, label, shape, axis, k, largest, ties in [
            (F32, "f32", [3, 1000], 1, 5, 1, False),
            (F32, "f32", [2, 257, 3], 1, 257, 0, False),
            (F32, "f32", [7, 33], 1, 10, 1, True),
            (F32, "f32", [33, 7], 0, 3, 0, True),
            (I32, "i32", [5, 257], 1, 7, 1, False),
            # Split over blocks (emitSplitTopK): rows longer than 16384.
            (F32, "f32", [2, 40001], 1, 50, 1, True),
            (I32, "i32", [1, 20000], 1, 9, 0, False)]:
        slabel = "x".join(map(str, shape)) + f"_axis{axis}_k{k}_l{largest}"
        cases.append(Case(
            "sort", f"topk_{label}{'_ties' if ties else ''}_{slabel}",
            lambda d=dtype, s=shape, a=axis, k=k, l=largest, t=ties: top_k(d, s, a, k, l, t),
            check=(shape == [7, 33])))

    # Doubles reduce, normalize and scan in double (F64_TOL).
    def double_reductions(shape):
        n = shape[-1]
        nodes = [node("ReduceSum", ["x", "axes"], "sum", keepdims=1),
                 node("ReduceMax", ["x", "axes"], "max", keepdims=0),
                 node("ReduceMean", ["x", "axes"], "mean", keepdims=1),
                 node("Softmax", ["x"], "soft", axis=-1),
                 node("LayerNormalization", ["x", "gamma", "beta"], "norm", axis=-1),
                 node("CumSum", ["x", "axis"], "scan")]
        return model(nodes, [("x", F64, shape)], ["sum", "max", "mean", "soft", "norm", "scan"],
                     [ints("axes", [-1]), ints("axis", [1]),
                      weight("gamma", [n], np.float64), weight("beta", [n], np.float64)],
                     opset=18)

    for shape in [[3, 33], [2, 1000]]:
        label = "x".join(map(str, shape))
        cases.append(Case("reduction", f"f64_reductions_{label}",
                          lambda s=shape: double_reductions(s), tol=F64_TOL,
                          check=(shape == [3, 33])))

    # Unsigned reductions, arg reductions, scans and top-k over values at the
    # top of the range (a fused Add of LIMITS): uint64 values at and above
    # 2^63 must be the maxima, sums wrap.
    def unsigned_reductions(dtype, shape):
        nodes = [node("Add", ["x", "w"], "v"),
                 node("ReduceMax", ["v", "axes"], "max", keepdims=1),
                 node("ReduceMin", ["v", "axes"], "min", keepdims=0),
                 node("ReduceSum", ["v", "axes"], "sum", keepdims=0),
                 node("ArgMax", ["v"], "argmax", axis=-1, keepdims=0),
                 node("ArgMin", ["v"], "argmin", axis=-1, keepdims=0),
                 node("CumSum", ["v", "axis"], "scan"),
                 node("TopK", ["v", "k"], ["top", "pos"], axis=-1)]
        outs = ["max", "min", "sum", "argmax", "argmin", "scan", "top", "pos"]
        return model(nodes, [("x", dtype, shape)], outs,
                     [limits("w", dtype, shape[-1]), ints("axes", [-1]),
                      ints("axis", [len(shape) - 1]), ints("k", [3])], opset=18)

    for dtype, label in [(U32, "uint32"), (U64, "uint64")]:
        for shape in [[5, 7], [3, 257]]:
            slabel = "x".join(map(str, shape))
            cases.append(Case("reduction", f"{label}_reductions_{slabel}",
                              lambda d=dtype, s=shape: unsigned_reductions(d, s),
                              check=(dtype == U64 and shape == [5, 7])))

    # int64 sums, products and scans that overflow: two's complement wrap,
    # as the reference computes them (signed overflow is undefined in C++,
    # so the kernels add and multiply through unsigned long long).
    def signed_wrap(shape):
        nodes = [node("Add", ["x", "w"], "v"),
                 node("ReduceSum", ["v", "axes"], "sum", keepdims=0),
                 node("ReduceProd", ["v", "axes"], "prod", keepdims=0),
                 node("CumSum", ["v", "axis"], "scan")]
        return model(nodes, [("x", I64, shape)], ["sum", "prod", "scan"],
                     [limits("w", I64, shape[-1]), ints("axes", [-1]),
                      ints("axis", [len(shape) - 1])], opset=18)

    for shape in [[5, 7], [3, 257]]:
        slabel = "x".join(map(str, shape))
        cases.append(Case("reduction", f"int64_wrap_{slabel}",
                          lambda s=shape: signed_wrap(s), check=(shape == [5, 7])))

    def log_softmax(shape, axis):
        return model([node("LogSoftmax", ["x"], "y", axis=axis)],
                     [("x", F32, shape)], ["y"])

    for shape, axis in [([3, 33], -1), ([2, 4099], -1), ([2, 257, 3], 1)]:
        label = "x".join(map(str, shape))
        cases.append(Case("reduction", f"logsoftmax_axis{axis}_{label}",
                          lambda s=shape, a=axis: log_softmax(s, a)))
    return cases


def copy_cases():
    cases = []

    def transpose(shape, perm):
        attrs = {} if perm is None else {"perm": perm}
        return model([node("Transpose", ["x"], "y", **attrs)], [("x", F32, shape)], ["y"])

    for shape in [[1, 7], [33, 257], [257, 31], [1000, 7], [4099, 1]]:
        label = "x".join(map(str, shape))
        cases.append(Case("copy", f"transpose_{label}_perm1_0",
                          lambda s=shape: transpose(s, [1, 0]),
                          check=(shape == [33, 257])))
    for perm in [[0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]]:
        for shape in [[3, 7, 33], [1, 257, 5]]:
            label = "x".join(map(str, shape)) + "_perm" + "_".join(map(str, perm))
            cases.append(Case("copy", f"transpose_{label}",
                              lambda s=shape, p=perm: transpose(s, p)))
    # More elements than one launch has threads (grid-stride loop).
    cases.append(Case("copy", "transpose_4097x4097_perm1_0",
                      lambda: transpose([4097, 4097], [1, 0])))
    cases.append(Case("copy", "transpose_default_perm_3x7x33",
                      lambda: transpose([3, 7, 33], None)))
    for perm in [[0, 2, 1, 3], [3, 2, 1, 0], [0, 3, 1, 2], [2, 0, 3, 1], [1, 3, 0, 2]]:
        label = "2x7x5x33_perm" + "_".join(map(str, perm))
        cases.append(Case("copy", f"transpose_{label}",
                          lambda p=perm: transpose([2, 7, 5, 33], p),
                          check=(perm == [0, 2, 1, 3])))

    # Attention's head split and merge: Reshape, Transpose, elementwise use.
    def heads(b, s, h, d):
        nodes = [node("Reshape", ["x", "split"], "r"),
                 node("Transpose", ["r"], "t", perm=[0, 2, 1, 3]),
                 node("Mul", ["t", "k"], "m"),
                 node("Transpose", ["m"], "u", perm=[0, 2, 1, 3]),
                 node("Reshape", ["u", "merge"], "y")]
        return model(nodes, [("x", F32, [b, s, h * d])], ["y"],
                     [ints("split", [b, s, h, d]), ints("merge", [b, s, h * d]),
                      weight("k", [h, 1, d])])

    cases.append(Case("copy", "head_split_merge_2x7x3x11", lambda: heads(2, 7, 3, 11)))
    cases.append(Case("copy", "head_split_merge_1x33x2x65", lambda: heads(1, 33, 2, 65)))

    # Outputs that are not computed by a kernel: an input returned through
    # Identity, a value returned twice, a weight returned.
    def passthrough(n):
        nodes = [node("Identity", ["x"], "y"), node("Relu", ["x"], "r"),
                 node("Identity", ["r"], "r2"), node("Identity", ["w"], "wy")]
        return model(nodes, [("x", F32, [n])], ["y", "r", "r2", "wy"], [weight("w", [n])])

    cases.append(Case("copy", "passthrough_outputs_33", lambda: passthrough(33),
                      check=True))
    cases.append(Case("copy", "passthrough_outputs_4099", lambda: passthrough(4099)))
    return cases


def fused_move_cases():
    """Data movement fused into elementwise and reduction kernels, read
    through at a remapped index (one kernel each)."""
    cases = []

    # Rotary's rotate-half: slices, a negation at the half shape, a concat,
    # and the multiply-add with the cos/sin tables.
    def rotate_half(shape):
        half = shape[-1] // 2
        last = len(shape) - 1
        nodes = [node("Slice", ["x", "zero", "mid", "axis"], "lo"),
                 node("Slice", ["x", "mid", "end", "axis"], "hi"),
                 node("Neg", ["hi"], "n"),
                 node("Concat", ["n", "lo"], "r", axis=-1),
                 node("Mul", ["x", "cos"], "a"), node("Mul", ["r", "sin"], "b"),
                 node("Add", ["a", "b"], "y")]
        return model(nodes, [("x", F32, shape)], ["y"],
                     [ints("zero", [0]), ints("mid", [half]), ints("end", [shape[-1]]),
                      ints("axis", [last]), weight("cos", shape[-2:]),
                      weight("sin", shape[-2:])])

    for shape in [[2, 3, 7, 16], [1, 2, 257, 6]]:
        label = "x".join(map(str, shape))
        cases.append(Case("elementwise", f"fused_rotate_half_{label}",
                          lambda s=shape: rotate_half(s), check=(shape[0] == 2)))

    # An embedding lookup plus positions: Gather fused into the Add.
    def embed(vocab, seq, width):
        nodes = [node("Gather", ["table", "ids"], "g", axis=0),
                 node("Add", ["g", "pos"], "y")]
        return model(nodes, [("ids", I64, [2, seq])], ["y"],
                     [weight("table", [vocab, width]), weight("pos", [seq, width])])

    cases.append(Case("elementwise", "fused_gather_add_2x7x33",
                      lambda: embed(50, 7, 33), check=True))

    # A transpose, strided slice and expand feeding an elementwise chain, at
    # ragged sizes; Where with a condition expanded along a row.
    def moves(rows, cols):
        nodes = [node("Transpose", ["x"], "t", perm=[1, 0]),
                 node("Slice", ["t", "zero", "end", "axis", "two"], "s"),
                 node("Expand", ["c", "shape"], "e"),
                 node("Relu", ["s"], "r"),
                 node("Where", ["e", "r", "s"], "y")]
        return model(nodes, [("x", F32, [rows, cols]), ("c", BOOL, [(cols + 1) // 2, 1])],
                     ["y"],
                     [ints("zero", [0]), ints("end", [cols]), ints("axis", [0]),
                      ints("two", [2]), ints("shape", [(cols + 1) // 2, rows])])

    for rows, cols in [(33, 257), (7, 31)]:
        cases.append(Case("elementwise", f"fused_transpose_slice_expand_{rows}x{cols}",
                          lambda r=rows, c=cols: moves(r, c), check=(rows == 7)))

    # GatherElements of an elementwise result: the gather is the root.
    def gather_elements(rows, cols, picks):
        nodes = [node("Exp", ["x"], "e"),
                 node("GatherElements", ["e", "i"], "y", axis=1)]
        return model(nodes, [("x", F32, [rows, cols]), ("i", I64, [rows, picks])], ["y"])

    cases.append(Case("elementwise", "fused_exp_gather_elements_5x257x3",
                      lambda: gather_elements(5, 257, 3), check=True))

    # A concat of three inputs with a computation in each branch (only the
    # branch that holds an element is read), at widths 1, 255 and 257.
    def concat_branches(rows):
        nodes = [node("Exp", ["a"], "ea"), node("Neg", ["b"], "nb"),
                 node("Sigmoid", ["c"], "sc"),
                 node("Concat", ["ea", "nb", "sc"], "cat", axis=1),
                 node("Mul", ["cat", "w"], "y")]
        return model(nodes, [("a", F32, [rows, 1]), ("b", F32, [rows, 255]),
                             ("c", F32, [rows, 257])], ["y"],
                     [weight("w", [513])])

    cases.append(Case("elementwise", "fused_concat_branches_3x513",
                      lambda: concat_branches(3), check=True))

    # BERT's embeddings: gathers summed into a LayerNorm's input are its
    # reduction kernel's prologue; a transposed input before a Softmax.
    def embedding_layer_norm(seq, width):
        nodes = [node("Gather", ["words", "ids"], "w", axis=0),
                 node("Gather", ["positions", "pos"], "p", axis=0),
                 node("Add", ["w", "p"], "s"),
                 node("LayerNormalization", ["s", "gamma", "beta"], "y", axis=-1)]
        return model(nodes, [("ids", I64, [2, seq]), ("pos", I64, [2, seq])], ["y"],
                     [weight("words", [50, width]), weight("positions", [seq, width]),
                      weight("gamma", [width]), weight("beta", [width])], opset=18)

    def transposed_softmax(rows, cols):
        nodes = [node("Transpose", ["x"], "t", perm=[1, 0]),
                 node("Softmax", ["t"], "y", axis=-1)]
        return model(nodes, [("x", F32, [cols, rows])], ["y"])

    cases.append(Case("reduction", "fused_embedding_layernorm_2x7x257",
                      lambda: embedding_layer_norm(7, 257), check=True))
    cases.append(Case("reduction", "fused_transpose_softmax_33x1000",
                      lambda: transposed_softmax(33, 1000)))
    return cases


def matmul_cases():
    cases = []
    # The contraction stays at or below 257: a sequential fp32 sum over more
    # terms of inputs in [-1, 1) approaches the contract's atol 1e-5 near zero
    # results (simulated worst error / tolerance: 0.3 at K=257, 0.97 at
    # K=1000), which would make the check flaky rather than stricter.

    def matmul(a_shape, b_shape):
        return model([node("MatMul", ["a", "b"], "y")],
                     [("a", F32, a_shape), ("b", F32, b_shape)], ["y"])

    for m, k, n in [(1, 1, 1), (7, 33, 31), (33, 257, 1), (1, 255, 1000),
                    (257, 7, 257), (31, 33, 4099)]:
        cases.append(Case("matmul", f"matmul_{m}x{k}x{n}",
                          lambda m=m, k=k, n=n: matmul([m, k], [k, n]),
                          check=((m, k, n) == (7, 33, 31))))
    for a_shape, b_shape in [
            ([3, 7, 33], [3, 33, 31]), ([2, 257, 31], [2, 31, 33]),
            ([2, 3, 7, 33], [2, 3, 33, 5]), ([1, 2, 1, 255], [1, 2, 255, 7]),
            # Broadcast batch: one side's batch is all ones or missing.
            ([4, 7, 33], [33, 31]), ([7, 33], [4, 33, 31]), ([1, 7, 33], [4, 33, 31]),
            ([2, 3, 5, 31], [31, 7]), ([1, 1, 5, 31], [2, 3, 31, 7]),
            # 1-D operands.
            ([33], [33, 257]), ([257, 33], [33]), ([3, 7, 31], [31]), ([31], [2, 31, 7])]:
        label = "x".join(map(str, a_shape)) + "_by_" + "x".join(map(str, b_shape))
        cases.append(Case("matmul", f"matmul_{label}",
                          lambda a=a_shape, b=b_shape: matmul(a, b),
                          check=(a_shape == [3, 7, 33])))

    def gemm(m, k, n, trans_a, trans_b, c_shape, alpha=1.0, beta=1.0):
        a_shape = [k, m] if trans_a else [m, k]
        b_shape = [n, k] if trans_b else [k, n]
        ins, inits = ["a", "w"], [weight("w", b_shape)]
        if c_shape is not None:
            ins.append("c")
            inits.append(weight("c", c_shape))
        return model([node("Gemm", ins, "y", transA=trans_a, transB=trans_b,
                           alpha=alpha, beta=beta)],
                     [("a", F32, a_shape)], ["y"], inits)

    for ta in [0, 1]:
        for tb in [0, 1]:
            cases.append(Case("matmul", f"gemm_tA{ta}_tB{tb}_7x33x31_biasN",
                              lambda ta=ta, tb=tb: gemm(7, 33, 31, ta, tb, [31]),
                              check=(ta == 1 and tb == 1)))
    cases.append(Case("matmul", "gemm_alpha_beta_257x31x33_biasMN",
                      lambda: gemm(257, 31, 33, 0, 1, [257, 33], alpha=0.5, beta=2.0)))
    cases.append(Case("matmul", "gemm_noC_1x257x1000",
                      lambda: gemm(1, 257, 1000, 0, 0, None, alpha=1.5)))
    cases.append(Case("matmul", "gemm_biasM1_33x7x5",
                      lambda: gemm(33, 7, 5, 1, 0, [33, 1])))

    # Transposes of an operand's last two dims fold into the matmul's flags
    # (batched, with a broadcast weight): no copy kernel.
    def transposed_matmul(batch, m, k, n):
        nodes = [node("Transpose", ["a"], "at", perm=[0, 2, 1]),
                 node("Transpose", ["w"], "wt", perm=[1, 0]),
                 node("MatMul", ["at", "wt"], "y")]
        return model(nodes, [("a", F32, [batch, k, m])], ["y"], [weight("w", [n, k])])

    cases.append(Case("matmul", "matmul_transposed_operands_3x7x33x31",
                      lambda: transposed_matmul(3, 7, 33, 31), check=True))

    # 16-bit matmuls: the reference accumulates in double, the host GEMM in
    # fp32; both round the result once, so they can differ by an ulp.
    def narrow_matmul(dtype, m, k, n):
        nodes = [node("Cast", ["a"], "ah", to=dtype), node("Cast", ["b"], "bh", to=dtype),
                 node("MatMul", ["ah", "bh"], "yh"), node("Cast", ["yh"], "y", to=F32)]
        return model(nodes, [("a", F32, [m, k]), ("b", F32, [k, n])], ["y"])

    cases.append(Case("matmul", "f16_matmul_7x33x31",
                      lambda: narrow_matmul(F16, 7, 33, 31), tol=F16_TOL))
    cases.append(Case("matmul", "bf16_matmul_33x257x7",
                      lambda: narrow_matmul(BF16, 33, 257, 7), tol=BF16_TOL))
    return cases


def gemm_cases():
    """Kiln's own GEMM kernels (GemmEmitter.cpp), each layout and split the
    compiler offers, run in place of the host's stand-in for cuBLASLt: at
    M = 1, 7, 128 and 129 rows, N = 72 and K = 520 (neither whole tiles of 64
    and 32; 520 is 17 k-tiles, split 4 ways as 5, 5, 5 and 2), each
    transpose, a batch, and the epilogues. The inputs are cast to 16 bits in
    the graph, so the reference multiplies the same values; it accumulates in
    double and the kernels in fp32, and both round once."""
    cases = []
    large, medium, small = "mma_128x128x32_w2x2", "mma_64x64x32_w2x2", "mma_16x64x32_w1x4"

    def narrow_gemm(dtype, m, k, n, trans_a=False, trans_b=False, batch=None,
                    bias=False, relu=False, residual=False, norm=False, sum_out=False,
                    gelu=False, norm_cast=False):
        # norm: False, True (LayerNorm) or "rms" (RMSNorm); sum_out: the sum
        # the norm reads is an output too (a pre-norm block's residual
        # stream), which the norm kernel writes beside the norm.
        lead = [batch] if batch else []
        a_shape = lead + ([k, m] if trans_a else [m, k])
        b_shape = lead + ([n, k] if trans_b else [k, n])
        nodes = [node("Cast", ["a"], "ah", to=dtype), node("Cast", ["b"], "bh", to=dtype)]
        ops = ["ah", "bh"]
        perm = list(range(len(lead))) + [len(lead) + 1, len(lead)]
        for i, (flag, name) in enumerate([(trans_a, "ah"), (trans_b, "bh")]):
            if flag:
                nodes.append(node("Transpose", [name], name + "t", perm=perm))
                ops[i] = name + "t"
        nodes.append(node("MatMul", ops, "y0"))
        inputs = [("a", F32, a_shape), ("b", F32, b_shape)]
        inits, last = [], "y0"
        if bias:
            inits.append(weight("bias", [n]))
            nodes += [node("Cast", ["bias"], "biash", to=dtype),
                      node("Add", [last, "biash"], "y1")]
            last = "y1"
        if relu:
            nodes.append(node("Relu", [last], "y2"))
            last = "y2"
        if gelu:
            # ONNX's Gelu (opset 20), its exact (erf) form.
            nodes.append(node("Gelu", [last], "y2"))
            last = "y2"
        if residual and norm:
            # A 16-bit input: a residual cast for this add alone stays the
            # add's (kiln-fuse takes only one a GEMM can read), and the
            # norm joins a GEMM only after its residual.
            inputs.append(("r", dtype, lead + [m, n]))
            nodes.append(node("Add", [last, "r"], "y3"))
            last = "y3"
        elif residual:
            inputs.append(("r", F32, lead + [m, n]))
            nodes += [node("Cast", ["r"], "rh", to=dtype), node("Add", [last, "rh"], "y3")]
            last = "y3"
        if norm:
            # The 16-bit norm is the output, or (norm_cast) its cast to an
            # fp32 output, which joins the step (rt::MatmulStep::widen).
            outputs = ["y", last] if sum_out else ["y"]
            normed = "yn" if norm_cast else "y"
            tail = [node("Cast", ["yn"], "y", to=F32)] if norm_cast else []
            if norm == "rms":
                inits.append(weight("gamma", [n]))
                nodes += [node("Cast", ["gamma"], "gammah", to=dtype),
                          node("RMSNormalization", [last, "gammah"], normed, axis=-1,
                               epsilon=1e-6)] + tail
                return model(nodes, inputs, outputs, inits, opset=23)
            inits += [weight("gamma", [n]), weight("beta", [n])]
            nodes += [node("Cast", ["gamma"], "gammah", to=dtype),
                      node("Cast", ["beta"], "betah", to=dtype),
                      node("LayerNormalization", [last, "gammah", "betah"], normed,
                           axis=-1, epsilon=1e-5)] + tail
            return model(nodes, inputs, outputs, inits)
        nodes.append(node("Cast", [last], "y", to=F32))
        return model(nodes, inputs, ["y"], inits, opset=20 if gelu else OPSET)

    def add(label, variant, build, dtype=F16, check=False, tol=None):
        # "cublaslt": the step as the run chooses without --gemm (on the
        # host, its stand-in for cuBLASLt).
        # fp32 is held to the numerics contract (tol None).
        cases.append(Case("gemm", f"{label}_{variant}", build, check=check,
                          tol=tol or {F16: F16_TOL, BF16: BF16_TOL}.get(dtype),
                          gemm=None if variant == "cublaslt" else variant))

    # The reference rounds the product to f16 before it adds the bias and
    # the residual (each rounded too); the kernel adds them to the fp32 sum
    # and rounds once. Products over K = 520 reach |y| ~ 30, where half an
    # f16 ulp is 0.008: two such roundings before a cancellation can leave
    # a small result 0.016 from the kernel's (seen: 0.0098 at -0.18). A
    # missing or misplaced bias or residual is off by O(1).
    epilogue_tol = (2e-3, 3e-2, "f16 epilogue: the reference rounds the "
                    "product (|y| to ~30) before the adds; the kernel once")

    # Every layout and split at the tails of M; the split variants' counts
    # are what chooseGemmConfigs gives these shapes (kilnc --report).
    for m, variants in [(1, [medium + "_split1", medium + "_split4", small + "_split1",
                             small + "_split4"]),
                        (7, [small + "_split4"]),
                        (128, [large + "_split1", large + "_split4", medium + "_split4"]),
                        (129, [large + "_split4", medium + "_split1"])]:
        for variant in variants:
            add(f"f16_{m}x520x72", variant,
                lambda m=m: narrow_gemm(F16, m, 520, 72), check=(m == 7))
    add("bf16_7x520x72", small + "_split4", lambda: narrow_gemm(BF16, 7, 520, 72),
        dtype=BF16)
    add("bf16_129x40x72", medium + "_split1", lambda: narrow_gemm(BF16, 129, 40, 72),
        dtype=BF16)
    # Each transpose (a transposed A's rows are M long: 136, whole chunks).
    for ta, tb in [(True, False), (False, True), (True, True)]:
        add(f"f16_tA{int(ta)}_tB{int(tb)}_136x520x72", medium + "_split4",
            lambda ta=ta, tb=tb: narrow_gemm(F16, 136, 520, 72, ta, tb), check=(ta and tb))
        add(f"f16_tA{int(ta)}_tB{int(tb)}_136x40x72", large + "_split1",
            lambda ta=ta, tb=tb: narrow_gemm(F16, 136, 40, 72, ta, tb))
    # A batch of three, whole and split (each matrix's tiles finished by
    # their own last blocks), and the epilogues in registers and through
    # the split's finish.
    add("f16_batch3_7x40x72", medium + "_split1",
        lambda: narrow_gemm(F16, 7, 40, 72, batch=3))
    add("f16_batch3_7x520x72", small + "_split4",
        lambda: narrow_gemm(F16, 7, 520, 72, batch=3), check=True)
    for variant in [small + "_split1", small + "_split4"]:
        add("f16_bias_relu_7x520x72", variant,
            lambda: narrow_gemm(F16, 7, 520, 72, bias=True, relu=True), check=True,
            tol=epilogue_tol)
        add("f16_bias_residual_7x520x72", variant,
            lambda: narrow_gemm(F16, 7, 520, 72, bias=True, residual=True),
            tol=epilogue_tol)

    # The LayerNorm epilogue (BERT's post-norm block: bias, residual, then
    # a norm of each row): the norm kernel after the host's stand-in for
    # cuBLASLt (no --gemm: its fp32 product), after each form's partials
    # unsplit and split, at the tails of M, N = 72 columns a row. The
    # reference rounds the sum to 16 bits before it normalizes; the kernel
    # normalizes the fp32 sum: the sum's rounding (|y| ~ 30, 0.008) over
    # its spread (~10) moves a normalized value by ~1e-3, about one f16 ulp
    # of the outputs (up to ~3: 0.002; gemm-layer-norm.test saw 0.00195). A
    # missing bias or residual, or a wrong mean, is off by O(0.1).
    norm_tol = (5e-3, 4e-3, "the reference rounds the sum to 16 bits "
                "before the norm; the kernel normalizes the fp32 sum")
    for m, variants in [(1, [None, "gemv_1x128_w4_split1", small + "_split4"]),
                        (7, [None, small + "_split1", small + "_split4"]),
                        (128, [large + "_split1", medium + "_split4"]),
                        (129, [None, medium + "_split1", large + "_split4"])]:
        for variant in variants:
            add(f"f16_bias_residual_norm_{m}x520x72", variant or "cublaslt",
                lambda m=m: narrow_gemm(F16, m, 520, 72, bias=True, residual=True,
                                        norm=True),
                check=(m == 7), tol=norm_tol)
    # bf16 keeps 8 bits: one ulp of an output in [2, 4) is 0.0156.
    add("bf16_norm_7x520x72", small + "_split4",
        lambda: narrow_gemm(BF16, 7, 520, 72, norm=True), dtype=BF16,
        tol=(2e-2, 3.2e-2, "bf16 norm: one bf16 ulp of outputs up to ~4, the "
             "reference's sum rounded to bf16 first"))
    add("f16_batch3_relu_norm_7x40x72", medium + "_split1",
        lambda: narrow_gemm(F16, 7, 40, 72, batch=3, bias=True, relu=True, norm=True),
        tol=norm_tol)
    # The kernels finish the norm themselves: split over a batch (each
    # matrix's row tiles counted apart), 33 column tiles of 64 (more than a
    # warp's lanes combine at once), and the GEMV over an n x k weight.
    add("f16_batch3_relu_norm_7x520x72", small + "_split4",
        lambda: narrow_gemm(F16, 7, 520, 72, batch=3, bias=True, relu=True, norm=True),
        check=True, tol=norm_tol)
    # (After cuBLASLt too: past 1,024 columns the norm kernel's block takes
    # a row, its threads keeping 32 columns each in registers.)
    for variant in [None, small + "_split4"]:
        add("f16_bias_residual_norm_7x520x2112", variant or "cublaslt",
            lambda: narrow_gemm(F16, 7, 520, 2112, bias=True, residual=True,
                                norm=True),
            check=True, tol=norm_tol)
    add("f16_bias_residual_norm_1x520x2112", "cublaslt",
        lambda: narrow_gemm(F16, 1, 520, 2112, bias=True, residual=True, norm=True),
        tol=norm_tol)
    add("f16_tB1_bias_residual_norm_7x1040x72", "gemv_8x64_w4_split2",
        lambda: narrow_gemm(F16, 7, 1040, 72, trans_b=True, bias=True, residual=True,
                            norm=True),
        check=True, tol=norm_tol)

    # A pre-norm decoder's block (LLaMA's RMSNorm after the residual, GPT-2's
    # LayerNorm after bias and residual): the sum is an output too, which
    # the norm kernel writes, rounded to 16 bits, and normalizes as written,
    # as the reference does; after cuBLASLt's stand-in it reads the sum
    # back. Both outputs are compared. A norm of the wrong kind (LayerNorm's
    # centering where RMSNorm has none) is off by the rows' mean over their
    # spread, ~0.1; a sum left unwritten is whatever the arena held.
    prenorm_tol = (5e-3, 3e-2, "the sum as epilogue_tol (the reference rounds "
                   "the product first); the norm as norm_tol")
    for m, variants in [(1, [None, "gemv_1x128_w4_split1", small + "_split4"]),
                        (7, [None, small + "_split1", small + "_split4"]),
                        (128, [large + "_split1", medium + "_split4"]),
                        (129, [None, medium + "_split1", large + "_split4"])]:
        for variant in variants:
            add(f"f16_residual_rms_norm_sum_{m}x520x72", variant or "cublaslt",
                lambda m=m: narrow_gemm(F16, m, 520, 72, residual=True, norm="rms",
                                        sum_out=True),
                check=(m == 7), tol=prenorm_tol)
    for variant in [None, small + "_split4"]:
        add("f16_bias_residual_norm_sum_7x520x72", variant or "cublaslt",
            lambda: narrow_gemm(F16, 7, 520, 72, bias=True, residual=True, norm=True,
                                sum_out=True),
            check=variant is None, tol=prenorm_tol)
    # Past 1,024 columns: the norm kernel's block a row.
    add("f16_residual_rms_norm_sum_3x520x2112", "cublaslt",
        lambda: narrow_gemm(F16, 3, 520, 2112, residual=True, norm="rms",
                            sum_out=True),
        tol=prenorm_tol)
    add("bf16_rms_norm_sum_7x520x72", small + "_split4",
        lambda: narrow_gemm(BF16, 7, 520, 72, residual=True, norm="rms", sum_out=True),
        dtype=BF16,
        tol=(2e-2, 6.3e-2, "bf16: one bf16 ulp of the sum (to ~30: 0.125 half "
             "ulp 0.0625) and of outputs up to ~4"))

    # Hopper's form (GemmWgmmaEmitter.cpp: tensor copies, wgmma from shared
    # memory), offered where M reaches 64 rows of one matrix with A not
    # transposed: 128 x 128 tiles at M = 128 and 129 (gemm-wgmma.test runs
    # M = 1 and 7 of a symbolic M), K = 520 split two ways (9 tiles of 64),
    # B stored k x n and n x k, bf16, the epilogues in registers and
    # through the reduce, and the LayerNorm kernel after its partials.
    wgmma = "wgmma_128x128x64_s4"
    for m in [128, 129]:
        for split in ["_split1", "_split2"]:
            add(f"f16_{m}x520x72", wgmma + split, lambda m=m: narrow_gemm(F16, m, 520, 72),
                check=(m == 129))
    add("f16_tA0_tB1_136x520x72", wgmma + "_split2",
        lambda: narrow_gemm(F16, 136, 520, 72, trans_b=True), check=True)
    add("bf16_129x520x72", wgmma + "_split1", lambda: narrow_gemm(BF16, 129, 520, 72),
        dtype=BF16)
    for split in ["_split1", "_split2"]:
        add("f16_bias_residual_relu_129x520x72", wgmma + split,
            lambda: narrow_gemm(F16, 129, 520, 72, bias=True, relu=True, residual=True),
            tol=epilogue_tol)
        add("f16_bias_residual_norm_129x520x72", wgmma + split,
            lambda: narrow_gemm(F16, 129, 520, 72, bias=True, residual=True, norm=True),
            tol=norm_tol)
        add("f16_residual_rms_norm_sum_129x520x72", wgmma + split,
            lambda: narrow_gemm(F16, 129, 520, 72, residual=True, norm="rms",
                                sum_out=True),
            tol=prenorm_tol)

    # The GEMV form (GemvEmitter.cpp), offered where M is 16 or fewer and A
    # is not transposed: one block row of 1 row at M = 1, of 8 rows at
    # M = 7 (a row past m) and 16 (two block rows). K = 1040 is 130 chunks
    # of 8, split two ways (65 each: no multiple of the 8 slots a block of
    # a k x n B walks, nor of a column's 8 lanes of an n x k B); N = 72 is
    # not a whole slab of 128 (k x n) or 64 (n x k) columns.
    for tb in [False, True]:
        cols = 64 if tb else 128
        for m, rows in [(1, 1), (7, 8), (16, 8)]:
            add(f"f16_tB{int(tb)}_{m}x1040x72", f"gemv_{rows}x{cols}_w4_split2",
                lambda m=m, tb=tb: narrow_gemm(F16, m, 1040, 72, trans_b=tb),
                check=(m == 7))
        add(f"bf16_tB{int(tb)}_7x1040x72", f"gemv_8x{cols}_w4_split2",
            lambda tb=tb: narrow_gemm(BF16, 7, 1040, 72, trans_b=tb), dtype=BF16)
        add(f"f16_tB{int(tb)}_batch3_7x1040x72", f"gemv_8x{cols}_w4_split2",
            lambda tb=tb: narrow_gemm(F16, 7, 1040, 72, trans_b=tb, batch=3))
        # The epilogues: in registers (K = 520 is not split) and through the
        # split's finish.
        for k, split in [(520, 1), (1040, 2)]:
            add(f"f16_tB{int(tb)}_bias_residual_relu_7x{k}x72",
                f"gemv_8x{cols}_w4_split{split}",
                lambda k=k, tb=tb: narrow_gemm(F16, 7, k, 72, trans_b=tb, bias=True,
                                               relu=True, residual=True),
                check=(split == 1), tol=epilogue_tol)

    # A 16-bit result cast to an fp32 output is stored widened
    # (rt::MatmulStep::widen): every 16-bit case above ends in that cast,
    # so each form's main (a split's finish too) and GEMV kernels store floats, and after
    # cuBLASLt's stand-in the widen kernel does. Here the norm's cast: the
    # norm kernel widens after the stand-in (the product read from the
    # runtime's scratch), after each form's partials, and with the sum.
    for variant in [None, small + "_split1", small + "_split4", "gemv_8x128_w4_split1"]:
        add("f16_bias_residual_norm_cast_7x520x72", variant or "cublaslt",
            lambda: narrow_gemm(F16, 7, 520, 72, bias=True, residual=True, norm=True,
                                norm_cast=True),
            check=variant in (None, small + "_split4"), tol=norm_tol)
    for variant in [None, small + "_split4"]:
        add("bf16_residual_rms_norm_sum_cast_7x520x72", variant or "cublaslt",
            lambda: narrow_gemm(BF16, 7, 520, 72, residual=True, norm="rms",
                                sum_out=True, norm_cast=True),
            dtype=BF16, check=variant is None,
            tol=(2e-2, 6.3e-2, "bf16: one bf16 ulp of the sum and of the norm"))
    add("f16_bias_residual_norm_cast_129x520x72", wgmma + "_split2",
        lambda: narrow_gemm(F16, 129, 520, 72, bias=True, residual=True, norm=True,
                            norm_cast=True),
        tol=norm_tol)
    for variant in [None, "gemv_8x128_w4_split1"]:
        add("f16_cast_7x520x72", variant or "cublaslt",
            lambda: narrow_gemm(F16, 7, 520, 72), check=True)

    # fp32 on the CUDA cores (the fma form: the mma form's tiles, staging and
    # epilogue, 16 columns of K a step, so K = 520 is 33 k-tiles split 8
    # ways as 5 x 6 and 3) and the GEMV form's fp32 chunks (two 16-byte
    # words of 8 elements), at the tails of M, each transpose, a batch and
    # the epilogues, within the fp32 contract: no rounding to 16 bits on
    # either side, so a misplaced element or a lost split is far outside it.
    fma_large, fma_medium, fma_small = ("fma_128x128x16_w2x2", "fma_64x64x16_w2x2",
                                        "fma_16x64x16_w1x4")
    for m, variants in [(1, [fma_medium + "_split1", fma_small + "_split1",
                             fma_small + "_split8"]),
                        (7, [fma_small + "_split8"]),
                        (128, [fma_large + "_split1", fma_medium + "_split8"]),
                        (129, [fma_large + "_split8", fma_medium + "_split1"])]:
        for variant in variants:
            add(f"f32_{m}x520x72", variant, lambda m=m: narrow_gemm(F32, m, 520, 72),
                dtype=F32, check=(m == 7))
    for ta, tb in [(True, False), (False, True), (True, True)]:
        add(f"f32_tA{int(ta)}_tB{int(tb)}_136x520x72", fma_medium + "_split8",
            lambda ta=ta, tb=tb: narrow_gemm(F32, 136, 520, 72, ta, tb), dtype=F32,
            check=(ta and tb))
        add(f"f32_tA{int(ta)}_tB{int(tb)}_136x40x72", fma_large + "_split1",
            lambda ta=ta, tb=tb: narrow_gemm(F32, 136, 40, 72, ta, tb), dtype=F32)
    add("f32_batch3_7x40x72", fma_medium + "_split1",
        lambda: narrow_gemm(F32, 7, 40, 72, batch=3), dtype=F32)
    for variant in [fma_small + "_split1", fma_small + "_split8"]:
        add("f32_bias_residual_relu_7x520x72", variant,
            lambda: narrow_gemm(F32, 7, 520, 72, bias=True, relu=True, residual=True),
            dtype=F32, check=True)
    for tb in [False, True]:
        cols = 64 if tb else 128
        for m, rows in [(1, 1), (7, 8), (16, 8)]:
            add(f"f32_tB{int(tb)}_{m}x1040x72", f"gemv_{rows}x{cols}_w4_split2",
                lambda m=m, tb=tb: narrow_gemm(F32, m, 1040, 72, trans_b=tb), dtype=F32,
                check=(m == 7))
        add(f"f32_tB{int(tb)}_bias_residual_relu_7x520x72", f"gemv_8x{cols}_w4_split1",
            lambda tb=tb: narrow_gemm(F32, 7, 520, 72, trans_b=tb, bias=True, relu=True,
                                      residual=True),
            dtype=F32, check=True)
    # fp32's exact GELU (rt::MatmulActivation::GeluErf): in the epilogue of
    # the fma and GEMV forms, unsplit and through the reduce, and after
    # cuBLASLt's stand-in (which, as cuBLASLt, has no such form) by the
    # step's activation kernel. The tanh form cuBLASLt has differs from it
    # by up to 4.7e-4, far outside the fp32 contract.
    for variant in [None, fma_small + "_split1", fma_small + "_split8",
                    fma_medium + "_split1", "gemv_8x128_w4_split1"]:
        add("f32_bias_gelu_erf_7x520x72", variant or "cublaslt",
            lambda: narrow_gemm(F32, 7, 520, 72, bias=True, gelu=True), dtype=F32,
            check=variant in (None, fma_small + "_split8"))
    # fp32's norm epilogue: BERT's post-norm block (bias, residual, LayerNorm)
    # and a pre-norm block's RMSNorm with its sum, after cuBLASLt's stand-in
    # and after each form's partials, at the tails of M.
    for m, variants in [(1, [None, "gemv_1x128_w4_split1", fma_small + "_split8"]),
                        (7, [None, fma_small + "_split1"]),
                        (129, [None, fma_large + "_split8", fma_medium + "_split1"])]:
        for variant in variants:
            add(f"f32_bias_residual_norm_{m}x520x72", variant or "cublaslt",
                lambda m=m: narrow_gemm(F32, m, 520, 72, bias=True, residual=True,
                                        norm=True),
                dtype=F32, check=(m == 7))
    for variant in [None, fma_small + "_split8", "gemv_8x128_w4_split1"]:
        add("f32_residual_rms_norm_sum_7x520x72", variant or "cublaslt",
            lambda: narrow_gemm(F32, 7, 520, 72, residual=True, norm="rms", sum_out=True),
            dtype=F32, check=variant is None)
    return cases


def chain_cases():
    cases = []

    def ffn(batch, seq, hidden, inner):
        inits = [weight("w1", [hidden, inner], scale=0.2), weight("b1", [inner]),
                 weight("w2", [inner, hidden], scale=0.2), weight("b2", [hidden]),
                 weight("gamma", [hidden]), weight("beta", [hidden]),
                 const("inv_sqrt2", np.sqrt(0.5)), const("one", 1.0), const("half", 0.5)]
        nodes = [
            node("MatMul", ["x", "w1"], "h0"), node("Add", ["h0", "b1"], "h1"),
            node("Mul", ["h1", "inv_sqrt2"], "g0"), node("Erf", ["g0"], "g1"),
            node("Add", ["g1", "one"], "g2"), node("Mul", ["h1", "g2"], "g3"),
            node("Mul", ["g3", "half"], "g4"), node("MatMul", ["g4", "w2"], "h2"),
            node("Add", ["h2", "b2"], "h3"), node("Add", ["h3", "x"], "h4"),
            node("LayerNormalization", ["h4", "gamma", "beta"], "y", axis=-1),
        ]
        return model(nodes, [("x", F32, [batch, seq, hidden])], ["y"], inits)

    def heads_attention(batch, seq, heads, dim, biased):
        """Causal multi-head attention over x [batch, seq, heads * dim],
        its projections biased or not: the initializers and the nodes up to
        the heads' outputs moved back beside each other, o1 [batch, seq,
        heads, dim]."""
        d = heads * dim
        mask = np.triu(np.full((seq, seq), -10000.0, np.float32), 1)
        inits = [weight(n, [d, d], scale=0.3) for n in ("wq", "wk", "wv")]
        if biased:
            inits += [weight(f"b{p}", [d]) for p in "qkv"]
        inits += [ints("split", [batch, seq, heads, dim]), ints("merge", [batch, seq, d]),
                  const("scale", 1.0 / np.sqrt(dim)), numpy_helper.from_array(mask, "mask")]
        nodes = []
        for p in "qkv":
            nodes.append(node("MatMul", ["x", f"w{p}"], f"{p}0"))
            if biased:
                nodes.append(node("Add", [f"{p}0", f"b{p}"], f"{p}b"))
            nodes.append(node("Reshape", [f"{p}b" if biased else f"{p}0", "split"], f"{p}1"))
        nodes += [
            node("Transpose", ["q1"], "q", perm=[0, 2, 1, 3]),
            node("Transpose", ["k1"], "kt", perm=[0, 2, 3, 1]),
            node("Transpose", ["v1"], "v", perm=[0, 2, 1, 3]),
            node("MatMul", ["q", "kt"], "s0"), node("Mul", ["s0", "scale"], "s1"),
            node("Add", ["s1", "mask"], "s2"), node("Softmax", ["s2"], "p", axis=-1),
            node("MatMul", ["p", "v"], "o0"),
            node("Transpose", ["o0"], "o1", perm=[0, 2, 1, 3]),
        ]
        return inits, nodes

    def attention(batch, seq, heads, dim):
        d = heads * dim
        inits, nodes = heads_attention(batch, seq, heads, dim, biased=False)
        inits += [weight("wo", [d, d], scale=0.3), weight("gamma", [d]), weight("beta", [d])]
        nodes += [
            node("Reshape", ["o1", "merge"], "o2"), node("MatMul", ["o2", "wo"], "o3"),
            node("Add", ["o3", "x"], "r"),
            node("LayerNormalization", ["r", "gamma", "beta"], "y", axis=-1),
        ]
        return model(nodes, [("x", F32, [batch, seq, d])], ["y", "p"], inits)

    # The same layer without the probabilities as an output, with biased
    # projections: kiln-recompose makes one kiln.attention, kiln-layout packs
    # the projections, and the attention kernel reads the packed, biased,
    # head-split operands itself. Key counts above 128 take several tiles of
    # the online softmax; head sizes above 128 several outputs per thread.
    def attention_kernel(batch, seq, heads, dim):
        inits, nodes = heads_attention(batch, seq, heads, dim, biased=True)
        nodes.append(node("Reshape", ["o1", "merge"], "y"))
        return model(nodes, [("x", F32, [batch, seq, heads * dim])], ["y"], inits)

    for shape in [(2, 7, 3, 11), (1, 257, 2, 16), (1, 33, 1, 200), (2, 1, 4, 8)]:
        label = "x".join(map(str, shape))
        cases.append(Case("attention", f"attention_kernel_{label}",
                          lambda s=shape: attention_kernel(*s), check=(shape[1] == 7)))

    # ONNX Attention-23 with grouped-query heads and a causal mask.
    def onnx_attention(batch, heads, kv_heads, seq, dim):
        n = node("Attention", ["q", "k", "v"], "y", is_causal=1)
        return model([n], [("q", F32, [batch, heads, seq, dim]),
                           ("k", F32, [batch, kv_heads, seq, dim]),
                           ("v", F32, [batch, kv_heads, seq, dim])], ["y"], opset=23)

    for shape in [(2, 4, 2, 9, 8), (1, 6, 1, 130, 16)]:
        label = "x".join(map(str, shape))
        cases.append(Case("attention", f"onnx_attention_gqa_causal_{label}",
                          lambda s=shape: onnx_attention(*s)))

    cases.append(Case("chain", "ffn_2x7x33x65", lambda: ffn(2, 7, 33, 65), check=True))
    cases.append(Case("chain", "ffn_1x31x32x257", lambda: ffn(1, 31, 32, 257)))
    cases.append(Case("chain", "attention_2x7x3x11", lambda: attention(2, 7, 3, 11),
                      check=True))
    cases.append(Case("chain", "attention_1x33x2x16", lambda: attention(1, 33, 2, 16)))
    return cases


# ----------------------------------------------------------------------------
# Running
# ----------------------------------------------------------------------------

def run(args, timeout=600):
    """Runs a tool; a tool that cannot start or times out is a failed run."""
    start = time.monotonic()
    try:
        proc = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        proc = subprocess.CompletedProcess(args, 124, "", f"timed out after {timeout}s")
    except OSError as e:
        proc = subprocess.CompletedProcess(args, 127, "", f"cannot run: {e}")
    return proc, time.monotonic() - start


def quote(args):
    return " ".join(a if a and all(c.isalnum() or c in "/._=-+," for c in a) else repr(a)
                    for a in args)


def run_case(tools, work, case, seed, host_seed, check):
    """Returns (ok, line, details)."""
    folder = os.path.join(work, case.id.replace("/", "__") + ("__check" if check else ""))
    os.makedirs(folder, exist_ok=True)
    onnx_path = os.path.join(folder, "x.onnx")
    so_path = os.path.join(folder, "x.so")
    try:
        m = case.make_model()
    except Exception as e:  # a harness bug, not Kiln's
        return False, f"cannot build the model: {e}", ""
    onnx.save(m, onnx_path)
    outputs = [o.name for o in m.graph.output]

    compile_cmd = [tools.kilnc, onnx_path, "-o", so_path]
    if case.gemm:
        # Kiln's GEMM kernels are in an artifact only when asked for.
        compile_cmd.append("--gemm-kernels")
    proc, compile_s = run(compile_cmd)
    if proc.returncode != 0:
        return False, "kilnc failed", f"$ {quote(compile_cmd)}\n{proc.stdout}{proc.stderr}"

    run_cmd = [tools.kiln_run, so_path, "--backend", tools.backend, "--reference-model",
               onnx_path, "--compare-reference", "--seed", str(seed),
               "--host-seed", str(host_seed)]
    if case.tol:
        run_cmd += ["--rtol", str(case.tol[0]), "--atol", str(case.tol[1])]
    if check:
        run_cmd.append("--check")
    if case.gemm:
        # A matmul without this kernel fails the run, so a pass means the
        # kernel's generated code computed every matmul of the model.
        run_cmd += ["--gemm", case.gemm]
    proc, run_s = run(run_cmd)
    text = proc.stdout + proc.stderr
    details = f"$ {quote(compile_cmd)}\n$ {quote(run_cmd)}\n{text}"
    if proc.returncode != 0:
        first = next((l for l in text.splitlines() if "FAIL" in l or "error" in l.lower()),
                     f"exit code {proc.returncode}")
        return False, first.strip(), details
    # A pass must have compared every output, not merely exited 0.
    missing = [o for o in outputs if f"compare {o}:" not in proc.stdout]
    if missing:
        compared = [l.split(":")[0][len("compare "):] for l in proc.stdout.splitlines()
                    if l.startswith("compare ")]
        return False, (f"kiln-run printed no comparison of output(s) {missing}; "
                       f"it compared {compared}"), details
    worst = max((l.split("max_abs ")[1].split()[0] for l in proc.stdout.splitlines()
                 if l.startswith("compare ")), key=float)
    timing = f"{compile_s + run_s:.1f}s"
    return True, f"max_abs {worst} ({timing})", details


def self_check(tools, work):
    """kiln-run must fail when the reference differs: y = x + 1 compiled, checked
    against y = x + 1.001 (an error of 1e-3, above atol 1e-5 + rtol 1e-4 * 2)."""
    folder = os.path.join(work, "self_check")
    os.makedirs(folder)
    paths = {}
    for label, c in [("compiled", 1.0), ("wrong", 1.001)]:
        m = model([node("Add", ["x", "c"], "y")], [("x", F32, [257])], ["y"],
                  [const("c", c)])
        paths[label] = os.path.join(folder, f"{label}.onnx")
        onnx.save(m, paths[label])
    so_path = os.path.join(folder, "compiled.so")
    compile_cmd = [tools.kilnc, paths["compiled"], "-o", so_path]
    proc, _ = run(compile_cmd)
    if proc.returncode != 0:
        return False, "kilnc failed", f"$ {quote(compile_cmd)}\n{proc.stderr}"
    details = ""
    for label, must_fail in [("compiled", False), ("wrong", True)]:
        cmd = [tools.kiln_run, so_path, "--backend", "host", "--reference-model",
               paths[label], "--compare-reference", "--seed", "1"]
        proc, _ = run(cmd)
        details += f"$ {quote(cmd)}\n{proc.stdout}{proc.stderr}"
        failed = proc.returncode != 0 and "FAIL at element" in proc.stdout
        if failed != must_fail:
            what = "did not detect" if must_fail else "rejected"
            return False, f"kiln-run {what} the {label} reference model", details
    return True, "a wrong reference model is caught", details


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kilnc", required=True)
    parser.add_argument("--kiln-run", required=True)
    parser.add_argument("--seed", type=int, default=None,
                        help="base seed of the per-case seeds (default: random)")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--filter", default="",
                        help="run only cases whose family/name contains this")
    parser.add_argument("--no-check", action="store_true",
                        help="skip the --check (AddressSanitizer) runs")
    parser.add_argument("--keep", action="store_true",
                        help="keep the temporary folder even when all passes")
    parser.add_argument("--backend", choices=["host", "cuda"], default="host",
                        help="where the cases run: the host backend (CI), or the "
                             "GPU (the lent machine: --filter gemm/ runs every GEMM "
                             "variant there); --check runs are host-only")
    args = parser.parse_args()
    if args.backend == "cuda":
        args.no_check = True

    tools = types.SimpleNamespace(kilnc=os.path.abspath(args.kilnc),
                                  kiln_run=os.path.abspath(args.kiln_run),
                                  backend=args.backend)

    base = args.seed if args.seed is not None else random.SystemRandom().randrange(1, 2**31)
    print(f"base seed {base} (rerun with --seed {base})")
    rng = random.Random(base)

    cases = (elementwise_cases() + reduction_cases() + copy_cases()
             + fused_move_cases() + matmul_cases() + gemm_cases() + chain_cases())
    ids = [c.id for c in cases]
    assert len(ids) == len(set(ids)), "duplicate case names"
    cases = [c for c in cases if args.filter in c.id]
    runs = []  # (case, seed, host seed, check)
    for c in cases:
        runs.append((c, rng.randrange(1, 2**31), rng.randrange(1, 2**31), False))
    if not args.no_check:
        for c in cases:
            if c.check:
                runs.append((c, rng.randrange(1, 2**31), rng.randrange(1, 2**31), True))

    work = tempfile.mkdtemp(prefix="kiln-host-families-")
    os.environ.setdefault("KILN_CACHE_DIR", os.path.join(work, "cache"))
    start = time.monotonic()
    failures = 0
    counts = {}

    ok, line, details = self_check(tools, work)
    print(f"{'PASS' if ok else 'FAIL':4} self-check: {line}")
    if not ok:
        failures += 1
        print("    " + details.replace("\n", "\n    "))

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(run_case, tools, work, c, s, h, chk) for c, s, h, chk in runs]
        for (c, s, h, chk), future in zip(runs, futures):
            ok, line, details = future.result()
            mode = " --check" if chk else ""
            tol = f" rtol {c.tol[0]} atol {c.tol[1]} ({c.tol[2]})" if c.tol else ""
            print(f"{'PASS' if ok else 'FAIL':4} {c.id}{mode} seed {s} host-seed {h}"
                  f"{tol}: {line}", flush=True)
            key = c.family + (" --check" if chk else "")
            passed, total = counts.get(key, (0, 0))
            counts[key] = (passed + ok, total + 1)
            if not ok:
                failures += 1
                print("    " + details.rstrip().replace("\n", "\n    "))

    elapsed = time.monotonic() - start
    print("\nsummary:")
    for key, (passed, total) in counts.items():
        print(f"  {key:22} {passed}/{total} passed")
    print(f"{len(runs) + 1 - failures}/{len(runs) + 1} passed (self-check included) "
          f"in {elapsed:.0f}s, base seed {base}")
    if failures or args.keep:
        print(f"models and artifacts kept in {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
