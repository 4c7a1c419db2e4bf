#!/usr/bin/env python3
"""Writes a kiln IR function of a decoder layer's QKV projection over int4
weights (blocks of 32) whose keys, rotated, and values are written into
their caches: the cache update kiln-fuse merges into the projection's
GEMM kernel (#kiln.gemm_epilogue's cache_update).

  cache_update_model.py OUT.mlir ROWS

  p = x . dequantize(W)^T            ROWS x 2048 times 320 x 2048: K split,
                                     five column tiles of the GEMV
  q = p[:, 0:64]                     (an output, read after the update)
  k = rotate(heads(p[:, 64:192]))    two heads of 64, their halves turned
                                     by cos and sin (ROWS x 32 inputs)
  v = heads(p[:, 192:320])
  k_cache[:, 3:3+ROWS] = k, v_cache[:, 3:3+ROWS] = v   (2 x 64 x 64 each)
"""
import sys

import numpy as np


def dense(values, type_text):
    return f"kiln.constant dense<{np.asarray(values).tolist()}> : {type_text}"


def main():
    path, rows = sys.argv[1], int(sys.argv[2])
    rng = np.random.default_rng(11)
    k, n, blocks = 2048, 320, 2048 // 32
    packed = rng.integers(0, 256, (n, blocks, 16))
    scales = rng.uniform(0.002, 0.02, (n, blocks)).astype(np.float16)
    r = rows

    def heads(name, start):
        return [
            f"  %{name}s = kiln.slice %p {{starts = array<i64: 0, {start}>, strides = array<i64: 1, 1>}} : tensor<{r}x{n}xf16> -> tensor<{r}x128xf16>",
            f"  %{name}3 = kiln.reshape %{name}s : tensor<{r}x128xf16> -> tensor<{r}x2x64xf16>",
            f"  %{name}h = kiln.transpose %{name}3 {{permutation = array<i64: 1, 0, 2>}} : tensor<{r}x2x64xf16> -> tensor<2x{r}x64xf16>",
        ]

    half = f"tensor<2x{r}x32xf16>"
    body = [
        f"  %q = {dense(packed, f'tensor<{n}x{blocks}x16xui8>')}",
        f"  %s = {dense(scales, f'tensor<{n}x{blocks}xf16>')}",
        f"  %w = kiln.dequantize %q, %s {{bits = 4 : i64, block_size = 32 : i64}} : (tensor<{n}x{blocks}x16xui8>, tensor<{n}x{blocks}xf16>) -> tensor<{n}x{k}xf16>",
        f"  %p = kiln.matmul %x, %w {{transpose_rhs = true}} : (tensor<{r}x{k}xf16>, tensor<{n}x{k}xf16>) -> tensor<{r}x{n}xf16>",
    ]
    body += heads("k", 64)
    body += [
        f"  %k1 = kiln.slice %kh {{starts = array<i64: 0, 0, 0>, strides = array<i64: 1, 1, 1>}} : tensor<2x{r}x64xf16> -> {half}",
        f"  %k2 = kiln.slice %kh {{starts = array<i64: 0, 0, 32>, strides = array<i64: 1, 1, 1>}} : tensor<2x{r}x64xf16> -> {half}",
        f"  %a = kiln.mul %k1, %cos : ({half}, tensor<{r}x32xf16>) -> {half}",
        f"  %b = kiln.mul %k2, %sin : ({half}, tensor<{r}x32xf16>) -> {half}",
        f"  %r1 = kiln.sub %a, %b : ({half}, {half}) -> {half}",
        f"  %c = kiln.mul %k1, %sin : ({half}, tensor<{r}x32xf16>) -> {half}",
        f"  %d = kiln.mul %k2, %cos : ({half}, tensor<{r}x32xf16>) -> {half}",
        f"  %r2 = kiln.add %c, %d : ({half}, {half}) -> {half}",
        f"  %kr = kiln.concat %r1, %r2 {{axis = 2 : i64}} : ({half}, {half}) -> tensor<2x{r}x64xf16>",
        f"  %ku = kiln.update_slice %kc, %kr {{axis = 1 : i64, offset = \"3\"}} : (tensor<2x64x64xf16>, tensor<2x{r}x64xf16>) -> tensor<2x64x64xf16>",
    ]
    body += heads("v", 192)
    body += [
        f"  %vu = kiln.update_slice %vc, %vh {{axis = 1 : i64, offset = \"3\"}} : (tensor<2x64x64xf16>, tensor<2x{r}x64xf16>) -> tensor<2x64x64xf16>",
        f"  %qo = kiln.slice %p {{starts = array<i64: 0, 0>, strides = array<i64: 1, 1>}} : tensor<{r}x{n}xf16> -> tensor<{r}x64xf16>",
    ]
    with open(path, "w") as f:
        f.write(f"func.func @main(%x: tensor<{r}x{k}xf16>, "
                f"%cos: tensor<{r}x32xf16>, %sin: tensor<{r}x32xf16>, "
                "%kc: tensor<2x64x64xf16>, %vc: tensor<2x64x64xf16>) -> "
                f"(tensor<{r}x64xf16> {{kiln.name = \"q\"}}, "
                "tensor<2x64x64xf16> {kiln.name = \"k_cache\"}, "
                "tensor<2x64x64xf16> {kiln.name = \"v_cache\"}) {\n")
        f.write("\n".join(body) + "\n")
        f.write(f"  return %qo, %ku, %vu : tensor<{r}x64xf16>, "
                "tensor<2x64x64xf16>, tensor<2x64x64xf16>\n}\n")


if __name__ == "__main__":
    main()
