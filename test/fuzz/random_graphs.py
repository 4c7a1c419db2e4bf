"""Random small ONNX graphs for the differential fuzz target (differential.py).

A graph is grown step by step from a few inputs: each step adds one op (or a
short composite, such as a softmax or a layer norm written as its
decomposition, or an attention block) over values already in the graph. The
steps favour what fusion groups in ways the test suite does not: operands are
often the newest value (chains that fuse into one kernel) and often a value
that already has a consumer (values with several consumers, which a fused
kernel must keep for each of them: a reduction's prologue value read again by
its epilogue was the miscompile of issue 35).

Numbers stay tame on purpose: each float value carries a bound on its
magnitude, and ops that would take it past what fp32 (or fp16) holds well
are skipped (exponents of large values, long products), and divisors are
kept away from zero. A difference the comparison then finds is the
compiler's, not the arithmetic's.

Modes (`Graph.mode`):
- fp32: float32 graphs, compared with the fp32 contract. 16-bit floats
  appear only as casts (rounded, then cast back), since arithmetic on them
  rounds differently fused than op by op (docs/precision.md).
- fp16: float16 graphs (the main float type is float16), compared with the
  16-bit contract (relative L2 error).
- mixed: float32 graphs compiled with --precision fp16 (or bf16).
In the 16-bit modes no integer or boolean value is computed from a float
(comparisons, casts to integers, arg max): a rounding difference could
flip it, and integers must match exactly.
"""
import math

import numpy as np
from onnx import TensorProto, helper, numpy_helper

OPSET = 19

FLOAT_TYPES = ["float32", "float16", "bfloat16", "float64"]
INT_TYPES = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64",
             "uint64"]
SIGNED = {"int8", "int16", "int32", "int64"}
ONNX_TYPE = {
    "float32": TensorProto.FLOAT, "float16": TensorProto.FLOAT16,
    "bfloat16": TensorProto.BFLOAT16, "float64": TensorProto.DOUBLE,
    "int8": TensorProto.INT8, "uint8": TensorProto.UINT8,
    "int16": TensorProto.INT16, "uint16": TensorProto.UINT16,
    "int32": TensorProto.INT32, "uint32": TensorProto.UINT32,
    "int64": TensorProto.INT64, "uint64": TensorProto.UINT64,
    "bool": TensorProto.BOOL, "float8e4m3fn": TensorProto.FLOAT8E4M3FN,
}
# The integer types ONNX's CumSum and ReduceSum/Prod take.
SCAN_INTS = ["int32", "int64", "uint32", "uint64"]
# ReduceMax/Min and ArgMax/Min take the 8-bit ones too.
ORDER_INTS = SCAN_INTS + ["int8", "uint8"]

# Dim sizes of random shapes: ragged on purpose (not multiples of a warp).
DIMS = [1, 1, 2, 3, 4, 5, 7, 8, 13, 16, 33]
# Rows longer than a warp's registers (1024), than a block's cache (4096).
LONG_ROWS = [1100, 2000, 4500]


def is_float(dtype):
    return dtype in FLOAT_TYPES


def broadcast(a, b):
    """The broadcast of two shapes, or None."""
    out = []
    for i in range(max(len(a), len(b))):
        x = a[len(a) - 1 - i] if i < len(a) else 1
        y = b[len(b) - 1 - i] if i < len(b) else 1
        if x != y and x != 1 and y != 1:
            return None
        out.append(max(x, y) if x != 0 and y != 0 else 0)
    return tuple(reversed(out))


class Value:
    """A tensor of the graph: its name, element type, shape, a bound on the
    magnitude of its elements (floats), and how many ops read it."""

    def __init__(self, name, dtype, shape, mag=None, cast_only=False):
        self.name, self.dtype, self.shape = name, dtype, tuple(shape)
        self.mag = mag
        self.uses = 0
        # A 16-bit float of an fp32 graph: only a cast may read it.
        self.cast_only = cast_only

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))


class Graph:
    """One random graph; its names start with `prefix` so that several can
    share a model."""

    def __init__(self, rng, prefix, mode):
        self.rng, self.prefix, self.mode = rng, prefix, mode
        self.nodes, self.initializers, self.values = [], [], []
        self.inputs = []  # (Value, numpy array)
        self.outputs = []
        self.count = 0
        self.float = "float16" if mode == "fp16" else "float32"
        self.max_mag = 1e3 if mode != "fp32" else 1e4

    # -- building blocks ------------------------------------------------
    def fresh(self, what="v"):
        self.count += 1
        return f"{self.prefix}{what}{self.count}"

    def random_shape(self, rank=None, long_row=False):
        rank = rank if rank is not None else self.rng.integers(1, 5)
        while True:
            shape = [int(self.rng.choice(DIMS)) for _ in range(rank)]
            if long_row:
                shape[-1] = int(self.rng.choice(LONG_ROWS))
                shape = [min(d, 3) for d in shape[:-1]] + shape[-1:]
            if np.prod(shape) <= 8192:
                return tuple(shape)

    def add_input(self, dtype, shape, wide=False):
        """A graph input with data drawn here: floats in [-2, 2]; integers
        small (or, with `wide`, over the whole type, for wrapping)."""
        name = self.fresh("in")
        shape = tuple(shape)
        if is_float(dtype):
            data = self.rng.uniform(-2, 2, size=shape).astype(dtype)
            mag = 2.0
        elif dtype == "bool":
            data = self.rng.random(size=shape) < 0.5
            mag = None
        else:
            info = np.iinfo(dtype)
            low, high = (int(info.min), int(info.max)) if wide else (
                (-6, 6) if dtype in SIGNED else (0, 12))
            data = self.rng.integers(low, high, size=shape, endpoint=True,
                                     dtype=dtype)
            mag = None
        v = Value(name, dtype, shape, mag)
        self.values.append(v)
        self.inputs.append((v, data))
        return v

    def const(self, array, dtype=None):
        """An initializer (not a Value: ops read it as an attribute-like
        operand)."""
        name = self.fresh("c")
        array = np.asarray(array, dtype=dtype) if dtype else np.asarray(array)
        self.initializers.append(numpy_helper.from_array(array, name))
        return name

    def float_const(self, shape, dtype, mag=1.0):
        """A float initializer, as a Value."""
        data = self.rng.uniform(-mag, mag, size=shape).astype(dtype)
        name = self.const(data)
        return Value(name, dtype, shape, mag)

    def node(self, op, operands, dtype, shape, mag=None, cast_only=False,
             **attrs):
        """Adds `op` over `operands` (Values or initializer names) and
        returns its result."""
        names = []
        for o in operands:
            if isinstance(o, Value):
                o.uses += 1
                names.append(o.name)
            else:
                names.append(o)
        out = Value(self.fresh(), dtype, shape, mag, cast_only)
        self.nodes.append(helper.make_node(op, names, [out.name],
                                           name=self.fresh(op), **attrs))
        self.values.append(out)
        return out

    def pick(self, pred):
        """An operand: most often the newest value that fits (chains), often
        one that already has a reader (values with several consumers)."""
        candidates = [v for v in self.values if not v.cast_only and pred(v)]
        if not candidates:
            return None
        r = self.rng.random()
        if r < 0.45:
            return candidates[-1]
        if r < 0.8:
            used = [v for v in candidates if v.uses]
            if used:
                return used[self.rng.integers(len(used))]
        return candidates[self.rng.integers(len(candidates))]

    def pick_float(self, pred=lambda v: True):
        # 16-bit floats that only casts may read are never picked.
        return self.pick(lambda v: is_float(v.dtype) and pred(v))

    def discrete_from_float_ok(self):
        return self.mode == "fp32"

    def choice(self, items):
        return items[self.rng.integers(len(items))]

    def tame(self, mag):
        return mag is not None and mag <= self.max_mag

    # -- elementwise ----------------------------------------------------
    def unary_float(self):
        x = self.pick_float()
        if x is None:
            return None
        ops = [("Neg", x.mag), ("Abs", x.mag), ("Relu", x.mag),
               ("Tanh", 1.0), ("Sigmoid", 1.0), ("Sin", 1.0), ("Cos", 1.0),
               ("Floor", x.mag + 1), ("Ceil", x.mag + 1), ("Erf", 1.0),
               ("Softsign", 1.0), ("Sign", 1.0), ("Round", x.mag + 1)]
        if x.mag <= 4:
            ops.append(("Exp", math.exp(x.mag)))
        op, mag = self.choice(ops)
        if op in ("Floor", "Ceil", "Round") and self.mode != "fp32":
            # A rounding difference moves the result by a whole unit.
            op, mag = "Tanh", 1.0
        return self.node(op, [x], x.dtype, x.shape, mag)

    def positive(self, x):
        """|x| + 1: a divisor or logarithm argument away from zero."""
        a = self.node("Abs", [x], x.dtype, x.shape, x.mag)
        one = self.const(np.ones((), dtype=x.dtype))
        return self.node("Add", [a, one], x.dtype, x.shape, x.mag + 1)

    def safe_math(self):
        x = self.pick_float()
        if x is None:
            return None
        kind = self.choice(["Sqrt", "Log", "Reciprocal", "Pow"])
        if kind == "Pow":
            p = self.choice([2.0, 3.0])
            if x.mag ** p > self.max_mag:
                return None
            e = self.const(np.array(p, dtype=x.dtype))
            return self.node("Pow", [x, e], x.dtype, x.shape, x.mag ** p)
        p = self.positive(x)
        mag = {"Sqrt": math.sqrt(p.mag), "Log": math.log(p.mag),
               "Reciprocal": 1.0}[kind]
        return self.node(kind, [p], x.dtype, x.shape, mag)

    def second_operand(self, x, pred):
        """A value that broadcasts with `x` (same shape or fewer dims), or a
        new input or initializer of such a shape."""
        y = self.pick(lambda v: v is not x and pred(v) and v.dtype == x.dtype
                      and broadcast(v.shape, x.shape) == x.shape)
        if y is not None and self.rng.random() < 0.7:
            return y
        # A trailing part of x's shape with some dims set to 1.
        k = int(self.rng.integers(0, len(x.shape) + 1))
        shape = tuple(d if self.rng.random() < 0.7 else 1
                      for d in x.shape[len(x.shape) - k:])
        if is_float(x.dtype) and self.rng.random() < 0.5:
            return self.float_const(shape, x.dtype)
        return self.add_input(x.dtype, shape)

    def binary_float(self):
        x = self.pick_float()
        if x is None:
            return None
        y = self.second_operand(x, lambda v: v.mag is not None)
        if y.mag is None:
            return None
        if self.rng.random() < 0.5:
            x, y = y, x
        shape = broadcast(x.shape, y.shape)
        op = self.choice(["Add", "Sub", "Mul", "Div", "Max", "Min"])
        if op == "Div":
            y = self.positive(y)
            return self.node("Div", [x, y], x.dtype, shape, x.mag)
        mag = {"Add": x.mag + y.mag, "Sub": x.mag + y.mag,
               "Mul": x.mag * y.mag}.get(op, max(x.mag, y.mag))
        if not self.tame(mag):
            op, mag = "Max", max(x.mag, y.mag)
        return self.node(op, [x, y], x.dtype, shape, mag)

    def integer_op(self):
        x = self.pick(lambda v: v.dtype in INT_TYPES)
        if x is None:
            x = self.add_input(self.choice(INT_TYPES), self.random_shape(),
                               wide=self.rng.random() < 0.3)
        if self.rng.random() < 0.3:
            op = "Neg" if x.dtype in SIGNED and self.rng.random() < 0.5 \
                else "Abs"
            return self.node(op, [x], x.dtype, x.shape)
        y = self.second_operand(x, lambda v: True)
        if self.rng.random() < 0.5:
            x, y = y, x
        op = self.choice(["Add", "Sub", "Mul", "Div", "Mod", "Max", "Min"])
        attrs = {}
        if op == "Mod" and self.rng.random() < 0.5:
            attrs["fmod"] = 1
        return self.node(op, [x, y], x.dtype, broadcast(x.shape, y.shape),
                         **attrs)

    def compare(self):
        if self.discrete_from_float_ok() and self.rng.random() < 0.5:
            x = self.pick_float()
        else:
            x = self.pick(lambda v: v.dtype in INT_TYPES)
        if x is None:
            return None
        y = self.second_operand(x, lambda v: True)
        op = self.choice(["Less", "Greater", "LessOrEqual", "GreaterOrEqual",
                          "Equal"])
        c = self.node(op, [x, y], "bool", broadcast(x.shape, y.shape))
        return c

    def logic(self):
        x = self.pick(lambda v: v.dtype == "bool")
        if x is None:
            return None
        if self.rng.random() < 0.3:
            return self.node("Not", [x], "bool", x.shape)
        y = self.second_operand(x, lambda v: True)
        op = self.choice(["And", "Or", "Xor"])
        return self.node(op, [x, y], "bool", broadcast(x.shape, y.shape))

    def where(self):
        c = self.pick(lambda v: v.dtype == "bool")
        if c is None:
            return None
        x = self.pick(lambda v: v.dtype != "bool" and v.dtype != "bfloat16"
                      and broadcast(v.shape, c.shape) is not None)
        if x is None:
            return None
        y = self.second_operand(x, lambda v: True)
        shape = broadcast(broadcast(c.shape, x.shape), y.shape)
        mag = max(x.mag, y.mag) if x.mag is not None and y.mag is not None \
            else None
        if is_float(x.dtype) and mag is None:
            return None
        return self.node("Where", [c, x, y], x.dtype, shape, mag)

    def cast(self):
        x = self.pick(lambda v: True)
        if x is None:
            return None
        if is_float(x.dtype) and not self.discrete_from_float_ok():
            targets = ["float32", "float64", "float16", "bfloat16"]
        else:
            targets = FLOAT_TYPES + INT_TYPES + ["bool"]
        to = self.choice(targets)
        if x.dtype in ("float16", "bfloat16") and self.mode == "fp32":
            to = self.choice(["float32", "float64"])
        mag = None
        if is_float(to):
            if is_float(x.dtype):
                mag = x.mag
            elif x.dtype == "bool":
                mag = 1.0
            else:
                # Integers here are small unless drawn wide.
                info = np.iinfo(x.dtype)
                mag = float(max(abs(int(info.min)), int(info.max)))
                if to in ("float16", "bfloat16") or mag > self.max_mag:
                    return None
        # 16-bit floats: only a cast reads them in an fp32 graph; bfloat16
        # is read only by casts everywhere (numpy has no bfloat16 output).
        cast_only = to == "bfloat16" or (
            to == "float16" and self.mode != "fp16")
        return self.node("Cast", [x], to, x.shape, mag, cast_only, to=ONNX_TYPE[to])

    # -- rows: scans, reductions, softmax, norms -------------------------
    def axis_of(self, x, prefer_unit=False):
        units = [d for d, s in enumerate(x.shape) if s == 1]
        if prefer_unit and units and self.rng.random() < 0.5:
            return self.choice(units)
        return int(self.rng.integers(len(x.shape)))

    def cumsum(self):
        x = self.pick(lambda v: len(v.shape) > 0 and (
            (is_float(v.dtype) and v.dtype != "bfloat16") or
            v.dtype in SCAN_INTS))
        if x is None:
            return None
        axis = self.axis_of(x)
        mag = x.mag * x.shape[axis] if x.mag is not None else None
        if mag is not None and not self.tame(mag):
            return None
        a = self.const(np.array(axis - len(x.shape) * int(self.rng.integers(2)),
                                dtype=np.int64))
        return self.node("CumSum", [x, a], x.dtype, x.shape, mag,
                         exclusive=int(self.rng.integers(2)),
                         reverse=int(self.rng.integers(2)))

    def reduce(self):
        float_ok = lambda v: is_float(v.dtype) and v.dtype != "bfloat16"
        x = self.pick(lambda v: len(v.shape) > 0 and v.size > 0 and (
            float_ok(v) or v.dtype in ORDER_INTS))
        if x is None:
            return None
        rank = len(x.shape)
        if self.rng.random() < 0.4:
            axes = [self.axis_of(x, prefer_unit=True)]
        else:
            axes = sorted(set(int(a) for a in self.rng.integers(
                rank, size=int(self.rng.integers(1, rank + 1)))))
        n = int(np.prod([x.shape[a] for a in axes]))
        keep = int(self.rng.integers(2))
        shape = tuple(1 if d in axes else s for d, s in enumerate(x.shape)
                      if keep or d not in axes)
        if is_float(x.dtype):
            ops = {"ReduceMax": x.mag, "ReduceMin": x.mag,
                   "ReduceMean": x.mag, "ReduceSum": x.mag * n,
                   "ReduceL1": x.mag * n, "ReduceL2": x.mag * math.sqrt(n),
                   "ReduceSumSquare": x.mag * x.mag * n}
            if x.mag <= 20:
                ops["ReduceLogSumExp"] = x.mag + math.log(n)
            if n <= 6 and x.mag <= 2:
                ops["ReduceProd"] = x.mag ** n
        else:
            ops = {"ReduceMax": None, "ReduceMin": None}
            if x.dtype in SCAN_INTS:
                ops.update({"ReduceSum": None, "ReduceProd": None})
        op = self.choice(sorted(ops))
        mag = ops[op]
        if mag is not None and not self.tame(mag):
            op, mag = "ReduceMax", x.mag
        axes_name = self.const(np.array(
            [a - rank if self.rng.random() < 0.3 else a for a in axes],
            dtype=np.int64))
        return self.node(op, [x, axes_name], x.dtype, shape, mag,
                         keepdims=keep)

    def arg_reduce(self):
        if self.discrete_from_float_ok():
            x = self.pick(lambda v: len(v.shape) > 0 and v.size > 0 and (
                v.dtype in ("float32", "float64") or v.dtype in ORDER_INTS))
        else:
            x = self.pick(lambda v: len(v.shape) > 0 and v.size > 0 and
                          v.dtype in ORDER_INTS)
        if x is None:
            return None
        axis = self.axis_of(x, prefer_unit=True)
        keep = int(self.rng.integers(2))
        shape = tuple(1 if d == axis else s for d, s in enumerate(x.shape)
                      if keep or d != axis)
        return self.node(self.choice(["ArgMax", "ArgMin"]), [x], "int64",
                         shape, axis=axis, keepdims=keep,
                         select_last_index=int(self.rng.integers(2)))

    def row_input(self):
        """A float operand for a row op; sometimes a new input with a long
        row (block per row, and past the row cache)."""
        if self.rng.random() < 0.15:
            return self.add_input(self.float, self.random_shape(
                int(self.rng.integers(1, 3)), long_row=True))
        return self.pick_float(lambda v: len(v.shape) > 0 and v.size > 0)

    def softmax(self):
        x = self.row_input()
        if x is None:
            return None
        axis = self.axis_of(x)
        if self.rng.random() < 0.5:
            axis -= len(x.shape)
        op = self.choice(["Softmax", "LogSoftmax"])
        mag = 1.0 if op == "Softmax" else 2 * x.mag + math.log(
            max(x.shape[axis], 1))
        return self.node(op, [x], x.dtype, x.shape, mag, axis=axis)

    def softmax_decomposed(self):
        x = self.row_input()
        if x is None or x.mag > 30:
            return None
        axis = self.axis_of(x)
        axes = self.const(np.array([axis], dtype=np.int64))
        m = self.node("ReduceMax", [x, axes], x.dtype,
                      tuple(1 if d == axis else s for d, s in
                            enumerate(x.shape)), x.mag, keepdims=1)
        d = self.node("Sub", [x, m], x.dtype, x.shape, 2 * x.mag)
        e = self.node("Exp", [d], x.dtype, x.shape, 1.0)
        s = self.node("ReduceSum", [e, axes], x.dtype, m.shape,
                      float(x.shape[axis]), keepdims=1)
        return self.node("Div", [e, s], x.dtype, x.shape, 1.0)

    def norm_params(self, x, axis):
        """Scale and bias over the normalized dims: initializers, or (now
        and then) values computed in the graph, which fusion may then pull
        into the norm's kernel."""
        shape = x.shape[axis:]
        params = []
        for _ in range(2):
            if self.rng.random() < 0.2:
                src = self.add_input(x.dtype, shape)
                params.append(self.node(self.choice(["Neg", "Tanh", "Abs"]),
                                        [src], x.dtype, shape, 2.0))
            else:
                params.append(self.float_const(shape, x.dtype))
        return params

    def layer_norm(self):
        x = self.row_input()
        if x is None:
            return None
        axis = self.axis_of(x)
        scale, bias = self.norm_params(x, axis)
        operands = [x, scale] + ([bias] if self.rng.random() < 0.7 else [])
        mag = 2.0 * math.sqrt(max(int(np.prod(x.shape[axis:])), 1)) + 2
        return self.node("LayerNormalization", operands, x.dtype, x.shape,
                         mag, axis=axis - len(x.shape) *
                         int(self.rng.integers(2)), epsilon=1e-5)

    def layer_norm_decomposed(self, rms=False):
        x = self.row_input()
        if x is None or x.mag > 30:
            return None
        axes = self.const(np.array([-1], dtype=np.int64))
        stat = x.shape[:-1] + (1,)
        n = x.shape[-1]
        if rms:
            d = x
        else:
            mean = self.node("ReduceMean", [x, axes], x.dtype, stat, x.mag,
                             keepdims=1)
            d = self.node("Sub", [x, mean], x.dtype, x.shape, 2 * x.mag)
        if self.rng.random() < 0.5:
            sq = self.node("Mul", [d, d], x.dtype, x.shape, d.mag ** 2)
        else:
            two = self.const(np.array(2.0, dtype=x.dtype))
            sq = self.node("Pow", [d, two], x.dtype, x.shape, d.mag ** 2)
        var = self.node("ReduceMean", [sq, axes], x.dtype, stat, sq.mag,
                        keepdims=1)
        eps = self.const(np.array(1e-5, dtype=x.dtype))
        ve = self.node("Add", [var, eps], x.dtype, stat, var.mag)
        sd = self.node("Sqrt", [ve], x.dtype, stat, math.sqrt(ve.mag))
        nmag = math.sqrt(max(n, 1)) + 1
        if self.rng.random() < 0.5:
            nrm = self.node("Div", [d, sd], x.dtype, x.shape, nmag)
        else:
            # The exporters' other spelling: times the root's reciprocal.
            inv = self.node("Reciprocal", [sd], x.dtype, stat, 1.0 / math.sqrt(1e-5))
            operands = [d, inv] if self.rng.random() < 0.5 else [inv, d]
            nrm = self.node("Mul", operands, x.dtype, x.shape, nmag)
        scale, bias = self.norm_params(x, len(x.shape) - 1)
        y = self.node("Mul", [nrm, scale], x.dtype, x.shape, 2 * nrm.mag)
        if rms:
            return y
        return self.node("Add", [y, bias], x.dtype, x.shape, y.mag + 2)

    def rms_norm_decomposed(self):
        return self.layer_norm_decomposed(rms=True)

    # -- data movement ----------------------------------------------------
    def transpose(self):
        x = self.pick(lambda v: len(v.shape) >= 2)
        if x is None:
            return None
        perm = [int(p) for p in self.rng.permutation(len(x.shape))]
        return self.node("Transpose", [x], x.dtype,
                         tuple(x.shape[p] for p in perm), x.mag, perm=perm)

    def reshape(self):
        x = self.pick(lambda v: len(v.shape) >= 1)
        if x is None:
            return None
        shape = list(x.shape)
        if len(shape) >= 2 and self.rng.random() < 0.5:
            i = int(self.rng.integers(len(shape) - 1))
            shape[i:i + 2] = [shape[i] * shape[i + 1]]
        else:
            i = int(self.rng.integers(len(shape)))
            d = shape[i]
            f = [k for k in range(2, d) if d % k == 0]
            if f:
                k = self.choice(f)
                shape[i:i + 1] = [k, d // k]
            else:
                shape.insert(i, 1)
        target = list(shape)
        if self.rng.random() < 0.3 and 0 not in shape:
            target[int(self.rng.integers(len(target)))] = -1
        s = self.const(np.array(target, dtype=np.int64))
        return self.node("Reshape", [x, s], x.dtype, tuple(shape), x.mag)

    def slice(self):
        x = self.pick(lambda v: len(v.shape) >= 1 and v.size > 0)
        if x is None:
            return None
        axes, starts, ends, steps, shape = [], [], [], [], list(x.shape)
        for d in range(len(x.shape)):
            if self.rng.random() < 0.5 or x.shape[d] < 2:
                continue
            n = x.shape[d]
            step = int(self.choice([1, 1, 2, -1, -2]))
            a, b = sorted(int(t) for t in self.rng.integers(0, n, size=2))
            if step > 0:
                start, end = a, b + 1
                count = (end - start + step - 1) // step
            else:
                start, end = b, a - 1
                count = (start - end + (-step) - 1) // (-step)
                if end < 0:
                    end = -n - 1  # before the first element
            axes.append(d)
            starts.append(start)
            ends.append(end)
            steps.append(step)
            shape[d] = count
        if not axes:
            return None
        operands = [x, self.const(np.array(starts, dtype=np.int64)),
                    self.const(np.array(ends, dtype=np.int64)),
                    self.const(np.array(axes, dtype=np.int64)),
                    self.const(np.array(steps, dtype=np.int64))]
        return self.node("Slice", operands, x.dtype, tuple(shape), x.mag)

    def gather(self):
        x = self.pick(lambda v: len(v.shape) >= 1 and v.size > 0)
        if x is None:
            return None
        axis = int(self.rng.integers(len(x.shape)))
        n = x.shape[axis]
        ishape = tuple(int(self.rng.integers(1, 5)) for _ in range(
            int(self.rng.integers(0, 3))))
        indices = self.rng.integers(-n, n, size=ishape, dtype=np.int64)
        if self.rng.random() < 0.3:
            # Indices computed in the graph: an input cast and clamped
            # stays in range; here, an input of valid indices.
            idx = self.add_input("int64", ishape)
            self.inputs[-1] = (idx, indices)
            iname = idx
        else:
            iname = self.const(indices)
        shape = x.shape[:axis] + ishape + x.shape[axis + 1:]
        return self.node("Gather", [x, iname], x.dtype, shape, x.mag,
                         axis=axis)

    def gather_elements(self):
        x = self.pick(lambda v: len(v.shape) >= 1 and v.size > 0)
        if x is None:
            return None
        axis = int(self.rng.integers(len(x.shape)))
        shape = list(x.shape)
        shape[axis] = int(self.rng.integers(1, x.shape[axis] + 2))
        indices = self.rng.integers(-x.shape[axis], x.shape[axis],
                                    size=shape, dtype=np.int64)
        return self.node("GatherElements", [x, self.const(indices)], x.dtype,
                         tuple(shape), x.mag, axis=axis)

    def expand(self):
        x = self.pick(lambda v: v.size > 0 and v.size <= 512)
        if x is None:
            return None
        shape = [d if d != 1 or self.rng.random() < 0.5 else
                 int(self.choice([2, 3, 5])) for d in x.shape]
        if self.rng.random() < 0.4:
            shape.insert(0, int(self.choice([1, 2, 3])))
        s = self.const(np.array(shape, dtype=np.int64))
        return self.node("Expand", [x, s], x.dtype, tuple(shape), x.mag)

    def concat(self):
        x = self.pick(lambda v: len(v.shape) >= 1)
        if x is None:
            return None
        axis = int(self.rng.integers(len(x.shape)))
        y = self.pick(lambda v: v is not x and v.dtype == x.dtype and len(
            v.shape) == len(x.shape) and all(
                a == b for d, (a, b) in enumerate(zip(v.shape, x.shape))
                if d != axis))
        if y is None:
            shape = list(x.shape)
            shape[axis] = int(self.rng.integers(1, 6))
            y = self.add_input(x.dtype, shape) if x.dtype != "bfloat16" \
                else None
            if y is None:
                return None
        operands = [x, y] if self.rng.random() < 0.5 else [y, x]
        shape = list(x.shape)
        shape[axis] = x.shape[axis] + y.shape[axis]
        mag = max(x.mag, y.mag) if x.mag is not None and y.mag is not None \
            else None
        return self.node("Concat", operands, x.dtype, tuple(shape), mag,
                         axis=axis)

    def squeeze_unsqueeze(self):
        x = self.pick(lambda v: True)
        if x is None:
            return None
        units = [d for d, s in enumerate(x.shape) if s == 1]
        if units and self.rng.random() < 0.5:
            axes = [self.choice(units)]
            shape = tuple(s for d, s in enumerate(x.shape) if d not in axes)
            return self.node("Squeeze", [x, self.const(
                np.array(axes, dtype=np.int64))], x.dtype, shape, x.mag)
        if len(x.shape) >= 4:
            return None
        axis = int(self.rng.integers(len(x.shape) + 1))
        shape = x.shape[:axis] + (1,) + x.shape[axis:]
        return self.node("Unsqueeze", [x, self.const(
            np.array([axis], dtype=np.int64))], x.dtype, shape, x.mag)

    # -- products -------------------------------------------------------
    def matmul(self):
        x = self.pick_float(lambda v: len(v.shape) >= 2 and v.shape[-1] <= 64
                            and v.size > 0)
        if x is None:
            return None
        k = x.shape[-1]
        n = int(self.choice([1, 3, 8, 16]))
        w = self.float_const((k, n), x.dtype)
        mag = x.mag * k
        if not self.tame(mag):
            return None
        return self.node("MatMul", [x, w], x.dtype, x.shape[:-1] + (n,), mag)

    def matmul_nbits(self):
        """com.microsoft.MatMulNBits over random packed weights (int4 in
        blocks of 32, or int8 in blocks of 16 or 32; zero points packed, or
        the middle): the packed GEMV and GEMM where the product is 16-bit,
        which compute a left operand that only they read (a chain of
        elementwise ops and data movement) themselves."""
        x = self.pick_float(lambda v: len(v.shape) >= 2 and v.size > 0 and
                            v.shape[-1] % 8 == 0 and v.shape[-1] <= 256 and
                            v.dtype in ("float32", "float16"))
        if x is None:
            return None
        k = x.shape[-1]
        n = int(self.choice([8, 16, 72]))
        bits = int(self.choice([4, 8]))
        block = 32 if bits == 4 else int(self.choice([16, 32]))
        blocks = -(-k // block)
        packed = self.rng.integers(0, 256, (n, blocks, block * bits // 8),
                                   dtype=np.uint8)
        # Weights within about 1.2: steps of at most 1.2 / 2^bits, the
        # zero point anywhere in the range.
        scales = (self.rng.uniform(0.5, 1.0, (n, blocks)) * 1.2 /
                  (1 << bits)).astype(x.dtype)
        operands = [x, self.const(packed), self.const(scales)]
        if self.rng.random() < 0.5:
            per_byte = 8 // bits
            operands.append(self.const(self.rng.integers(
                0, 256, (n, -(-blocks // per_byte)), dtype=np.uint8)))
        mag = x.mag * k * 1.2
        if not self.tame(mag):
            return None
        return self.node("MatMulNBits", operands, x.dtype,
                         x.shape[:-1] + (n,), mag, domain="com.microsoft",
                         K=k, N=n, bits=bits, block_size=block)

    def quantize_dequantize(self, x, scale, qtype):
        """DequantizeLinear(QuantizeLinear(x)) at a power-of-two `scale`: an
        activation as quantize_static writes it (uint8 with a zero point,
        int8 or float8 e4m3 without). x / scale is then exact, so the
        quantized value is the same however x's producer was fused."""
        if qtype == "uint8":
            z = self.const(np.array(int(self.rng.integers(96, 160)), np.uint8))
        elif qtype == "int8":
            z = self.const(np.array(0, np.int8))
        else:
            z = self.float8_const(np.zeros(()))
        s = self.const(np.array(scale, np.float32))
        bound = {"uint8": 256 * scale, "int8": 128 * scale,
                 "float8e4m3fn": 448 * scale}[qtype]
        q = self.node("QuantizeLinear", [x, s, z], qtype, x.shape)
        # Read by its dequantization only (never picked, never an output).
        self.values.remove(q)
        return self.node("DequantizeLinear", [q, s, z], "float32", x.shape,
                         min(x.mag, bound))

    def float8_const(self, array):
        """A float8 e4m3 initializer of `array` (values it holds exactly)."""
        name = self.fresh("c")
        array = np.asarray(array, np.float32)
        self.initializers.append(helper.make_tensor(
            name, TensorProto.FLOAT8E4M3FN, array.shape,
            array.flatten().tolist()))
        return name

    def qdq_matmul(self):
        """A product as onnxruntime's quantize_static writes it in its QDQ
        format: the activation quantized and dequantized, int8 weights
        dequantized (per tensor or per column), an int32 bias dequantized
        at the product's scale and added, the sum requantized; now and then
        a residual (quantized too) added and requantized; often a
        LayerNormalization over the columns after it, and an elementwise op
        after that: the Q/DQ GEMM with its tail and its norm
        (growQdqTailNorm). Every scale is a power of two and every operand
        on its grid, so each value up to the norm is exact in fp32 in any
        order of summation (a requantization that rounds a value within
        fp32 rounding of a half step would differ by a whole step between
        a fused and an unfused order). fp32 graphs only."""
        if self.mode != "fp32":
            return None
        # Whole 16-byte rows of 8-bit values (the integer GEMM) and not.
        k = int(self.choice([16, 32, 48, 64, 128, 24, 40, 136]))
        n = int(self.choice([8, 16, 24, 72, 136]))
        rows = tuple(int(self.choice(DIMS)) for _ in range(
            int(self.rng.integers(1, 3))))
        qtype = self.choice(["uint8", "uint8", "int8", "float8e4m3fn"])
        fp8 = qtype == "float8e4m3fn"
        sx = 2.0 ** -int(self.rng.integers(4, 7))
        x = self.add_input("float32", rows + (k,))
        if fp8:
            # On the grid of integers to 16, which e4m3 holds exactly: the
            # products' sums then stay exact too (e4m3's own grid spans
            # more than fp32's 24 bits over a row).
            self.inputs[-1] = (x, (self.rng.integers(
                -16, 17, x.shape) * sx).astype(np.float32))
        a = self.quantize_dequantize(x, sx, qtype)
        sw_exp = int(self.rng.integers(6, 9))
        if self.rng.random() < 0.5 or fp8:
            sw = np.full((), 2.0 ** -sw_exp, np.float32)
        else:
            sw = (2.0 ** -self.rng.integers(sw_exp - 1, sw_exp + 2, n)).astype(
                np.float32)
        if fp8:
            wq = self.float8_const(self.rng.integers(-16, 17, (k, n)))
        else:
            wq = self.const(self.rng.integers(-127, 128, (k, n),
                                              dtype=np.int8))
        w_attrs = {} if sw.ndim == 0 else {"axis": 1}
        w = self.node("DequantizeLinear", [wq, self.const(sw)],
                      "float32", (k, n), 1.0, **w_attrs)
        mag = a.mag * k * 2.0
        p = self.node("MatMul", [a, w], "float32", rows + (n,), mag)
        # The bias at the product's scale: sx * sw, per column.
        bias_scale = (sx * np.broadcast_to(sw, (n,))).astype(np.float32)
        bq = self.rng.integers(-4096, 4097, n, dtype=np.int32)
        b = self.node("DequantizeLinear", [self.const(bq),
                                           self.const(bias_scale)],
                      "float32", (n,), 4096 * float(bias_scale.max()), axis=0)
        y = self.node("Add", [p, b], "float32", p.shape, mag + b.mag)
        sy = 2.0 ** -int(self.rng.integers(-1, 3))
        y = self.quantize_dequantize(y, sy, qtype)
        if self.rng.random() < 0.5:
            r = self.quantize_dequantize(
                self.add_input("float32", rows + (n,)), sx, qtype)
            y = self.node("Add", [y, r], "float32", y.shape, y.mag + r.mag)
            y = self.quantize_dequantize(y, sy, qtype)
        if self.rng.random() < 0.7:
            scale, shift = (self.float_const((n,), "float32")
                            for _ in range(2))
            y = self.node("LayerNormalization", [y, scale, shift], "float32",
                          y.shape, 2.0 * math.sqrt(n) + 2, axis=-1,
                          epsilon=1e-5)
            if self.rng.random() < 0.5:
                y = self.node(self.choice(["Tanh", "Relu", "Neg"]), [y],
                              "float32", y.shape, y.mag)
        return y

    def attention(self):
        """softmax(Q Kᵀ · scale [+ mask]) V over [B, H, S, D] inputs, with
        Q computed here: what kiln-recompose turns into kiln.attention (its
        keys split across blocks at 300 keys and few query rows)."""
        b, h = int(self.choice([1, 2])), int(self.choice([1, 2]))
        # 300 keys at 16 query rows or fewer split the keys across blocks
        # (flash-decoding), whose last split merges them.
        s = int(self.choice([1, 5, 17, 33]))
        t = int(self.choice([1, 7, 40, 300]))
        d = int(self.choice([8, 16, 32]))
        q0 = self.add_input(self.float, (b, h, s, d))
        q = self.node(self.choice(["Tanh", "Neg", "Relu"]), [q0], self.float,
                      q0.shape, 2.0)
        k = self.add_input(self.float, (b, h, t, d))
        v = self.add_input(self.float, (b, h, t, d))
        kt = self.node("Transpose", [k], self.float, (b, h, d, t), 2.0,
                       perm=[0, 1, 3, 2])
        scores = self.node("MatMul", [q, kt], self.float, (b, h, s, t),
                           4.0 * d)
        scale = self.const(np.array(1 / math.sqrt(d), dtype=self.float))
        scaled = self.node("Mul", [scores, scale], self.float, scores.shape,
                           4.0 * math.sqrt(d))
        if self.rng.random() < 0.5:
            mask = self.add_input(self.float, (b, 1, s, t))
            scaled = self.node("Add", [scaled, mask], self.float,
                               scores.shape, scaled.mag + 2)
        probs = self.node("Softmax", [scaled], self.float, scores.shape, 1.0,
                          axis=-1)
        return self.node("MatMul", [probs, v], self.float, (b, h, s, d), 2.0)

    # -- the graph --------------------------------------------------------
    STEPS = [
        ("unary_float", 8), ("safe_math", 3), ("binary_float", 8),
        ("integer_op", 5), ("compare", 3), ("logic", 2), ("where", 3),
        ("cast", 6), ("cumsum", 3), ("reduce", 5), ("arg_reduce", 1),
        ("softmax", 4), ("softmax_decomposed", 2), ("layer_norm", 3),
        ("layer_norm_decomposed", 1), ("rms_norm_decomposed", 1),
        ("transpose", 2), ("reshape", 2), ("slice", 3), ("gather", 3),
        ("gather_elements", 1), ("expand", 1), ("concat", 2),
        ("squeeze_unsqueeze", 1), ("matmul", 2), ("matmul_nbits", 2),
        ("qdq_matmul", 2), ("attention", 1),
    ]

    def build(self, steps):
        """Grows the graph by `steps` ops and picks its outputs."""
        rank = int(self.rng.integers(1, 5))
        shape = self.random_shape(rank, long_row=self.rng.random() < 0.1)
        self.add_input(self.float, shape)
        if self.rng.random() < 0.5:
            self.add_input(self.choice(INT_TYPES), shape,
                           wide=self.rng.random() < 0.3)
        names = [n for n, _ in self.STEPS]
        weights = np.array([w for _, w in self.STEPS], dtype=np.float64)
        done = 0
        for _ in range(steps * 8):
            if done >= steps:
                break
            step = names[self.rng.choice(len(names), p=weights / weights.sum())]
            if getattr(self, step)() is not None:
                done += 1
        self.choose_outputs()

    def choose_outputs(self):
        computed = [v for v in self.values if not v.cast_only and
                    v.dtype != "bfloat16" and
                    v.name not in {i.name for i, _ in self.inputs}]
        if not computed:
            return
        chosen = [computed[-1]]
        for v in computed[:-1]:
            if self.rng.random() < 0.25:
                chosen.append(v)
        self.outputs = chosen


def make_model(graphs, flags=""):
    """One ONNX model holding every graph of `graphs` side by side, and its
    inputs (name -> array). `flags` are kilnc's, kept in the model's
    metadata so that a saved finding replays as it ran."""
    nodes, inits, inputs, outputs, feeds = [], [], [], [], {}
    for g in graphs:
        nodes += g.nodes
        inits += g.initializers
        for v, data in g.inputs:
            inputs.append(helper.make_tensor_value_info(
                v.name, ONNX_TYPE[v.dtype], v.shape))
            feeds[v.name] = data
        for v in g.outputs:
            outputs.append(helper.make_tensor_value_info(
                v.name, ONNX_TYPE[v.dtype], v.shape))
    graph = helper.make_graph(nodes, "differential", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[
        helper.make_opsetid("", OPSET), helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 9
    helper.set_model_props(model, {"kiln.differential.flags": flags})
    return model, feeds
