#!/usr/bin/env python3
"""Writes a kiln IR function of three 8-bit GEMMs whose requantization
follows them (the Q/DQ GEMM's tail), and of a mean whose quantization
follows it (a reduction's epilogue), with power-of-two scales so that every
float the reference interpreter computes is exact, as the GEMM's integer
sums are: the host backend must equal it bit for bit.

  qdq_tail_model.py OUT.mlir [--norm-floats | --norm-bytes]

  y_i8 = requantize(dequantize(q(x)) . W1^T + b1)   M 129, K 1040, N 72
  y_f32 = dequantize(requantize(dequantize(q(x2)) . W2^T + b2))
                                                    M 7, K 48, N 32
  y_long = dequantize(requantize(...)), requantized and dequantized 7
           times over (some 80 ops, as BERT's GELU with its every step
           quantized)                               M 5, K 32, N 16
  y_mean = requantize(mean(q(x4)) over rows of 64)  M 33

With --norm-floats (--norm-bytes), three products whose tail adds a
residual input and ends in a LayerNorm or RMSNorm of each row (then
requantized to int8): a Q/DQ BERT's post-norm blocks, whose norms are not
exact in floats.

requantize(v) = cast_i8(clamp(round(v * m) + zp)), m a power of two a
column; x quantized with scale 1/16 (inputs are drawn from a normal
distribution, so clamping to the int8 range is rare), W int8 stored q + 128
with scales 2^-5 or 2^-6 a column; |sum| stays below 2^24.
"""
import sys

import numpy as np


# The quantization's scalars every function reads.
SCALARS = [
    "  %sixteen = kiln.constant dense<16.0> : tensor<f32>",
    "  %sixteenth = kiln.constant dense<0.0625> : tensor<f32>",
    "  %lo = kiln.constant dense<-128.0> : tensor<f32>",
    "  %hi = kiln.constant dense<127.0> : tensor<f32>",
    "  %zp = kiln.constant dense<3.0> : tensor<f32>",
]


def dense(values, type_text):
    return f"kiln.constant dense<{np.asarray(values).tolist()}> : {type_text}"


def requantize(name, source, m, n, mult):
    """The ops that requantize %{source} (m x n) to int8 %{name}_i."""
    return [
        f"  %{name}_r = kiln.mul %{source}, %{mult} : (tensor<{m}x{n}xf32>, tensor<{n}xf32>) -> tensor<{m}x{n}xf32>",
        f"  %{name}_n = kiln.round %{name}_r : tensor<{m}x{n}xf32>",
        f"  %{name}_z = kiln.add %{name}_n, %zp : (tensor<{m}x{n}xf32>, tensor<f32>) -> tensor<{m}x{n}xf32>",
        f"  %{name}_nan = kiln.is_nan %{name}_z : tensor<{m}x{n}xf32> -> tensor<{m}x{n}xi1>",
        f"  %{name}_v = kiln.where %{name}_nan, %lo, %{name}_z : (tensor<{m}x{n}xi1>, tensor<f32>, tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>",
        f"  %{name}_l = kiln.max %{name}_v, %lo : (tensor<{m}x{n}xf32>, tensor<f32>) -> tensor<{m}x{n}xf32>",
        f"  %{name}_h = kiln.min %{name}_l, %hi : (tensor<{m}x{n}xf32>, tensor<f32>) -> tensor<{m}x{n}xf32>",
        f"  %{name}_i = kiln.cast %{name}_h : tensor<{m}x{n}xf32> -> tensor<{m}x{n}xi8>",
    ]


def dequantize(name, source, m, n):
    """The ops that dequantize int8 %{source} to %{name}_y, scale 1/16."""
    return [
        f"  %{name}_if = kiln.cast %{source} : tensor<{m}x{n}xi8> -> tensor<{m}x{n}xf32>",
        f"  %{name}_iz = kiln.sub %{name}_if, %zp : (tensor<{m}x{n}xf32>, tensor<f32>) -> tensor<{m}x{n}xf32>",
        f"  %{name}_y = kiln.mul %{name}_iz, %sixteenth : (tensor<{m}x{n}xf32>, tensor<f32>) -> tensor<{m}x{n}xf32>",
    ]


def quantized_mean(name, m, k):
    """mean(q(x)) over rows of k (a power of two: the mean is exact),
    requantized to int8 %{name}_i, m x 1."""
    return [
        f"  %{name}_xs = kiln.mul %{name}_x, %sixteen : (tensor<{m}x{k}xf32>, tensor<f32>) -> tensor<{m}x{k}xf32>",
        f"  %{name}_xr = kiln.round %{name}_xs : tensor<{m}x{k}xf32>",
        f"  %{name}_a = kiln.mul %{name}_xr, %sixteenth : (tensor<{m}x{k}xf32>, tensor<f32>) -> tensor<{m}x{k}xf32>",
        f"  %{name}_mean = kiln.reduce_mean %{name}_a {{axes = array<i64: 1>, keepdims = true}} : tensor<{m}x{k}xf32> -> tensor<{m}x1xf32>",
        f"  %{name}_m = {dense([64.0], 'tensor<1xf32>')}",
    ] + requantize(name, f"{name}_mean", m, 1, f"{name}_m")


def product(rng, name, m, k, n, out_float, steps=1):
    """The ops of one product, its result named %{name}_y (%{name}_i when
    not out_float); with steps > 1, requantized and dequantized as many
    times."""
    w = rng.integers(1, 256, (n, 1, k))
    scales = rng.choice([2.0 ** -5, 2.0 ** -6], (n, 1))
    bias = rng.integers(-64, 64, n) * 2.0 ** -10
    mult = rng.choice([2.0, 4.0, 8.0], n)
    lines = [
        f"  %{name}_w = {dense(w, f'tensor<{n}x1x{k}xui8>')}",
        f"  %{name}_s = {dense(scales, f'tensor<{n}x1xf32>')}",
        f"  %{name}_b = {dense(bias, f'tensor<{n}xf32>')}",
        f"  %{name}_m = {dense(mult, f'tensor<{n}xf32>')}",
        f"  %{name}_xs = kiln.mul %{name}_x, %sixteen : (tensor<{m}x{k}xf32>, tensor<f32>) -> tensor<{m}x{k}xf32>",
        f"  %{name}_xr = kiln.round %{name}_xs : tensor<{m}x{k}xf32>",
        f"  %{name}_xl = kiln.max %{name}_xr, %lo : (tensor<{m}x{k}xf32>, tensor<f32>) -> tensor<{m}x{k}xf32>",
        f"  %{name}_xh = kiln.min %{name}_xl, %hi : (tensor<{m}x{k}xf32>, tensor<f32>) -> tensor<{m}x{k}xf32>",
        f"  %{name}_q = kiln.cast %{name}_xh : tensor<{m}x{k}xf32> -> tensor<{m}x{k}xi8>",
        f"  %{name}_qf = kiln.cast %{name}_q : tensor<{m}x{k}xi8> -> tensor<{m}x{k}xf32>",
        f"  %{name}_a = kiln.mul %{name}_qf, %sixteenth : (tensor<{m}x{k}xf32>, tensor<f32>) -> tensor<{m}x{k}xf32>",
        f"  %{name}_dw = kiln.dequantize %{name}_w, %{name}_s {{bits = 8 : i64, block_size = {k} : i64}} : (tensor<{n}x1x{k}xui8>, tensor<{n}x1xf32>) -> tensor<{n}x{k}xf32>",
        f"  %{name}_p = kiln.matmul %{name}_a, %{name}_dw {{transpose_rhs = true}} : (tensor<{m}x{k}xf32>, tensor<{n}x{k}xf32>) -> tensor<{m}x{n}xf32>",
        f"  %{name}_c = kiln.add %{name}_p, %{name}_b : (tensor<{m}x{n}xf32>, tensor<{n}xf32>) -> tensor<{m}x{n}xf32>",
    ]
    source = f"{name}_c"
    for step in range(1, steps):
        # Scale 1/16 back to 1/16 after the first: multiplier 1.
        at = f"{name}{step}"
        lines += requantize(at, source, m, n, f"{name}_m" if step == 1 else "ones")
        lines += dequantize(at, f"{at}_i", m, n)
        source = f"{at}_y"
    lines += requantize(name, source, m, n, f"{name}_m" if steps == 1 else "ones")
    if out_float:
        lines += dequantize(name, f"{name}_i", m, n)
    return lines


def normed(rng, name, m, k, n, rms, requantized):
    """A product whose tail (requantized, dequantized, plus the residual
    input %{name}_res) ends in a LayerNorm (or RMSNorm) of each row, then
    maybe requantized to int8 (%{name}_i): a Q/DQ BERT's post-norm block.
    The result is %{name}_i or the norm's %{name}_ln."""
    lines = product(rng, name, m, k, n, True)
    gamma = rng.uniform(0.5, 1.5, n)
    beta = rng.uniform(-0.5, 0.5, n)
    lines += [
        f"  %{name}_g = {dense(gamma, f'tensor<{n}xf32>')}",
        f"  %{name}_bt = {dense(beta, f'tensor<{n}xf32>')}",
        f"  %{name}_sum = kiln.add %{name}_y, %{name}_res : (tensor<{m}x{n}xf32>, tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>",
    ]
    if rms:
        lines.append(f"  %{name}_ln = kiln.rms_norm %{name}_sum, %{name}_g {{axis = 1 : i64, epsilon = 1.0e-6 : f32}} : (tensor<{m}x{n}xf32>, tensor<{n}xf32>) -> tensor<{m}x{n}xf32>")
    else:
        lines.append(f"  %{name}_ln = kiln.layer_norm %{name}_sum, %{name}_g, %{name}_bt {{axis = 1 : i64, epsilon = 1.0e-12 : f32}} : (tensor<{m}x{n}xf32>, tensor<{n}xf32>, tensor<{n}xf32>) -> tensor<{m}x{n}xf32>")
    if requantized:
        # Scale 1/16 a column.
        lines.append(f"  %{name}_sixteens = {dense([16.0] * n, f'tensor<{n}xf32>')}")
        lines += requantize(f"{name}q", f"{name}_ln", m, n, f"{name}_sixteens")
    return lines


def main_norm(path, requantized):
    """The normed products: into fp32 (the norm's result) or int8."""
    rng = np.random.default_rng(7)
    body = list(SCALARS)
    # M 129, K 1040 (split), N 72: two column tiles; M 7, K 48, N 200 (an
    # RMSNorm): four; M 33, K 64, N 136: three.
    shapes = [("one", 129, 1040, 72, False), ("two", 7, 48, 200, True),
              ("three", 33, 64, 136, False)]
    for name, m, k, n, rms in shapes:
        body += normed(rng, name, m, k, n, rms, requantized)
    args = ", ".join(f"%{name}_x: tensor<{m}x{k}xf32>, "
                     f"%{name}_res: tensor<{m}x{n}xf32>"
                     for name, m, k, n, _ in shapes)
    element = "i8" if requantized else "f32"
    results = [(f"%{name}q_i" if requantized else f"%{name}_ln",
                f"tensor<{m}x{n}x{element}>", f"y_{name}")
               for name, m, k, n, _ in shapes]
    with open(path, "w") as f:
        f.write(f"func.func @main({args}) -> (" + ", ".join(
            f'{t} {{kiln.name = "{label}"}}' for _, t, label in results)
            + ") {\n")
        f.write("\n".join(body) + "\n")
        f.write("  return " + ", ".join(v for v, _, _ in results) + " : "
                + ", ".join(t for _, t, _ in results) + "\n}\n")


def main():
    if len(sys.argv) > 2:
        main_norm(sys.argv[1], sys.argv[2] == "--norm-bytes")
        return
    rng = np.random.default_rng(5)
    body = SCALARS + ["  %ones = kiln.constant dense<1.0> : tensor<16xf32>"]
    body += product(rng, "one", 129, 1040, 72, False)
    body += product(rng, "two", 7, 48, 32, True)
    body += product(rng, "long", 5, 32, 16, True, steps=7)
    body += quantized_mean("mean", 33, 64)
    with open(sys.argv[1], "w") as f:
        f.write("func.func @main(%one_x: tensor<129x1040xf32>, "
                "%two_x: tensor<7x48xf32>, %long_x: tensor<5x32xf32>, "
                "%mean_x: tensor<33x64xf32>) -> (tensor<129x72xi8> "
                "{kiln.name = \"y_i8\"}, tensor<7x32xf32> "
                "{kiln.name = \"y_f32\"}, tensor<5x16xf32> "
                "{kiln.name = \"y_long\"}, tensor<33x1xi8> "
                "{kiln.name = \"y_mean\"}) {\n")
        f.write("\n".join(body) + "\n")
        f.write("  return %one_i, %two_y, %long_y, %mean_i : tensor<129x72xi8>, "
                "tensor<7x32xf32>, tensor<5x16xf32>, tensor<33x1xi8>\n}\n")


if __name__ == "__main__":
    main()
