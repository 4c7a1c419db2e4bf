// RUN: kiln-opt %s -split-input-file -kiln-layout | FileCheck %s
// RUN: split-file %s %t
// RUN: kiln-run %t/packed.mlir --compare-pipeline --seed 5 | FileCheck %s --check-prefix=SEMANTICS
// RUN: kiln-run %t/packed_biases.mlir --compare-pipeline --seed 5 | FileCheck %s --check-prefix=SEMANTICS
// RUN: kiln-run %t/negative_one_projection_without_bias.mlir --compare-pipeline --seed 5 | FileCheck %s --check-prefix=SEMANTICS
// RUN: kiln-run %t/packed_swiglu.mlir --compare-pipeline --seed 5 | FileCheck %s --check-prefix=SEMANTICS
// RUN: kiln-run %t/packed_quantized_swiglu.mlir --compare-pipeline --seed 5 | FileCheck %s --check-prefix=SEMANTICS
// RUN: kiln-run %t/negative_quantized_forms_differ.mlir --compare-pipeline --seed 5 | FileCheck %s --check-prefix=SEMANTICS
// SEMANTICS: pipeline keeps semantics
// After kiln-fuse, the SwiGLU is one GEMM and one elementwise kernel that
// reads both halves of its product through the slices (no copy kernel).
// RUN: kiln-opt %t/packed_swiglu.mlir -kiln-layout -kiln-fuse | FileCheck %s --check-prefix=FUSED
// FUSED: %[[P:.*]] = kiln.matmul %arg0, %{{.*}} : (tensor<2x4xf32>, tensor<4x6xf32>) -> tensor<2x6xf32>
// FUSED: kiln.kernel elementwise(%[[P]])
// FUSED-COUNT-2: kiln.slice
// FUSED: kiln.sigmoid
// FUSED-NOT: kiln.kernel

// Three projections of one input, each feeding an attention operand through
// a head split: one matmul by the weights concatenated at compile time.
// CHECK-LABEL: func @packed
// CHECK: %[[W:.*]] = kiln.constant dense_resource<packed_projection{{.*}}> : tensor<4x6xf32>
// CHECK: %[[P:.*]] = kiln.matmul %arg0, %[[W]] : (tensor<1x2x4xf32>, tensor<4x6xf32>) -> tensor<1x2x6xf32>
// CHECK: kiln.slice %[[P]] {starts = array<i64: 0, 0, 0>, strides = array<i64: 1, 1, 1>} : tensor<1x2x6xf32> -> tensor<1x2x2xf32>
// CHECK: kiln.slice %[[P]] {starts = array<i64: 0, 0, 2>, strides = array<i64: 1, 1, 1>} : tensor<1x2x6xf32> -> tensor<1x2x2xf32>
// CHECK: kiln.slice %[[P]] {starts = array<i64: 0, 0, 4>, strides = array<i64: 1, 1, 1>} : tensor<1x2x6xf32> -> tensor<1x2x2xf32>
// CHECK-NOT: kiln.matmul
// CHECK: kiln.attention

// -----

// Each projection's only use adds a constant bias row (BERT's Linear
// layers; one bias written [1, 1, 2]): the biases are concatenated too and
// added once, and the slices replace the adds. kiln-fuse makes that add
// the GEMM's bias epilogue.
// CHECK-LABEL: func @packed_biases
// CHECK: %[[W:.*]] = kiln.constant dense_resource<packed_projection{{.*}}> : tensor<4x6xf32>
// CHECK: %[[P:.*]] = kiln.matmul %arg0, %[[W]] : (tensor<1x2x4xf32>, tensor<4x6xf32>) -> tensor<1x2x6xf32>
// CHECK: %[[B:.*]] = kiln.constant dense<[5.000000e-01, -5.000000e-01, 1.000000e+00, 2.000000e+00, -1.000000e+00, 2.500000e-01]> : tensor<6xf32>
// CHECK: %[[S:.*]] = kiln.add %[[P]], %[[B]] : (tensor<1x2x6xf32>, tensor<6xf32>) -> tensor<1x2x6xf32>
// CHECK: kiln.slice %[[S]] {starts = array<i64: 0, 0, 0>
// CHECK: kiln.slice %[[S]] {starts = array<i64: 0, 0, 2>
// CHECK: kiln.slice %[[S]] {starts = array<i64: 0, 0, 4>
// CHECK-NOT: kiln.add
// CHECK: kiln.attention

// -----

// negative_: the key projection has no bias, so the biases are not
// packed: the value's and query's adds stay on their slices.
// CHECK-LABEL: func @negative_one_projection_without_bias
// CHECK: kiln.matmul %arg0, %{{.*}} : (tensor<1x2x4xf32>, tensor<4x6xf32>)
// CHECK-COUNT-2: kiln.add %{{.*}} : (tensor<1x2x2xf32>, tensor<2xf32>) -> tensor<1x2x2xf32>
// CHECK: kiln.attention

// -----

// negative_: the key projection is also returned, so it stays a matmul of
// its own (packing would need a copy); the other two still pack.
// CHECK-LABEL: func @negative_projection_used_twice
// The query and value weights (4x2 each) pack into one 4x4 matmul; the key
// projection (also 4x4) stays on its own.
// CHECK-COUNT-2: kiln.matmul %arg0, %{{.*}} : (tensor<1x2x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4xf32>
// CHECK-NOT: kiln.matmul

// -----

// negative_: weights that are inputs cannot be concatenated at compile time.
// CHECK-LABEL: func @negative_weights_not_constant
// CHECK-COUNT-3: kiln.matmul %arg0, %arg
// CHECK-NOT: kiln.slice

// -----

// negative_: a projection also read by another matmul (not an op kiln-fuse
// folds a slice into) stays a matmul of its own.
// CHECK-LABEL: func @negative_sibling_read_by_matmul
// CHECK-COUNT-3: kiln.matmul
// CHECK-NOT: kiln.slice

// -----

// A LLaMA MLP's gate and up projections (SwiGLU: silu(gate) * up): both
// read only by elementwise ops, so they pack too.
// CHECK-LABEL: func @packed_swiglu
// CHECK: %[[W:.*]] = kiln.constant dense_resource<packed_projection{{.*}}> : tensor<4x6xf32>
// CHECK: %[[P:.*]] = kiln.matmul %arg0, %[[W]] : (tensor<2x4xf32>, tensor<4x6xf32>) -> tensor<2x6xf32>
// CHECK: %[[G:.*]] = kiln.slice %[[P]] {starts = array<i64: 0, 0>, strides = array<i64: 1, 1>} : tensor<2x6xf32> -> tensor<2x3xf32>
// CHECK: %[[U:.*]] = kiln.slice %[[P]] {starts = array<i64: 0, 3>, strides = array<i64: 1, 1>} : tensor<2x6xf32> -> tensor<2x3xf32>
// CHECK-NOT: kiln.matmul
// CHECK: kiln.sigmoid %[[G]]

//--- packed.mlir
func.func @packed(%x: tensor<1x2x4xf32>) -> tensor<1x1x2x2xf32> {
  %wq = kiln.constant dense<[[0.1, 0.2], [0.3, 0.4], [0.5, 0.6], [0.7, 0.8]]> : tensor<4x2xf32>
  %wk = kiln.constant dense<[[-0.1, 0.2], [0.3, -0.4], [0.5, 0.6], [-0.7, 0.8]]> : tensor<4x2xf32>
  %wv = kiln.constant dense<[[0.9, -0.2], [0.1, 0.4], [-0.5, 0.3], [0.2, 0.1]]> : tensor<4x2xf32>
  %b = kiln.constant dense<[0.5, -0.5]> : tensor<2xf32>
  %q = kiln.matmul %x, %wq : (tensor<1x2x4xf32>, tensor<4x2xf32>) -> tensor<1x2x2xf32>
  %k = kiln.matmul %x, %wk : (tensor<1x2x4xf32>, tensor<4x2xf32>) -> tensor<1x2x2xf32>
  %v = kiln.matmul %x, %wv : (tensor<1x2x4xf32>, tensor<4x2xf32>) -> tensor<1x2x2xf32>
  %qb = kiln.add %q, %b : (tensor<1x2x2xf32>, tensor<2xf32>) -> tensor<1x2x2xf32>
  %q4 = kiln.reshape %qb : tensor<1x2x2xf32> -> tensor<1x1x2x2xf32>
  %k4 = kiln.reshape %k : tensor<1x2x2xf32> -> tensor<1x1x2x2xf32>
  %v4 = kiln.reshape %v : tensor<1x2x2xf32> -> tensor<1x1x2x2xf32>
  %o = kiln.attention %q4, %k4, %v4 {scale = 0.5 : f32} : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  return %o : tensor<1x1x2x2xf32>
}

// -----

//--- packed_biases.mlir
func.func @packed_biases(%x: tensor<1x2x4xf32>) -> tensor<1x1x2x2xf32> {
  %wq = kiln.constant dense<[[0.1, 0.2], [0.3, 0.4], [0.5, 0.6], [0.7, 0.8]]> : tensor<4x2xf32>
  %wk = kiln.constant dense<[[-0.1, 0.2], [0.3, -0.4], [0.5, 0.6], [-0.7, 0.8]]> : tensor<4x2xf32>
  %wv = kiln.constant dense<[[0.9, -0.2], [0.1, 0.4], [-0.5, 0.3], [0.2, 0.1]]> : tensor<4x2xf32>
  %bq = kiln.constant dense<[0.5, -0.5]> : tensor<2xf32>
  %bk = kiln.constant dense<[[[1.0, 2.0]]]> : tensor<1x1x2xf32>
  %bv = kiln.constant dense<[-1.0, 0.25]> : tensor<2xf32>
  %q = kiln.matmul %x, %wq : (tensor<1x2x4xf32>, tensor<4x2xf32>) -> tensor<1x2x2xf32>
  %k = kiln.matmul %x, %wk : (tensor<1x2x4xf32>, tensor<4x2xf32>) -> tensor<1x2x2xf32>
  %v = kiln.matmul %x, %wv : (tensor<1x2x4xf32>, tensor<4x2xf32>) -> tensor<1x2x2xf32>
  %qb = kiln.add %q, %bq : (tensor<1x2x2xf32>, tensor<2xf32>) -> tensor<1x2x2xf32>
  %kb = kiln.add %bk, %k : (tensor<1x1x2xf32>, tensor<1x2x2xf32>) -> tensor<1x2x2xf32>
  %vb = kiln.add %v, %bv : (tensor<1x2x2xf32>, tensor<2xf32>) -> tensor<1x2x2xf32>
  %q4 = kiln.reshape %qb : tensor<1x2x2xf32> -> tensor<1x1x2x2xf32>
  %k4 = kiln.reshape %kb : tensor<1x2x2xf32> -> tensor<1x1x2x2xf32>
  %v4 = kiln.reshape %vb : tensor<1x2x2xf32> -> tensor<1x1x2x2xf32>
  %o = kiln.attention %q4, %k4, %v4 {scale = 0.5 : f32} : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  return %o : tensor<1x1x2x2xf32>
}

// -----

//--- negative_one_projection_without_bias.mlir
func.func @negative_one_projection_without_bias(%x: tensor<1x2x4xf32>) -> tensor<1x1x2x2xf32> {
  %wq = kiln.constant dense<[[0.1, 0.2], [0.3, 0.4], [0.5, 0.6], [0.7, 0.8]]> : tensor<4x2xf32>
  %wk = kiln.constant dense<[[-0.1, 0.2], [0.3, -0.4], [0.5, 0.6], [-0.7, 0.8]]> : tensor<4x2xf32>
  %wv = kiln.constant dense<[[0.9, -0.2], [0.1, 0.4], [-0.5, 0.3], [0.2, 0.1]]> : tensor<4x2xf32>
  %bq = kiln.constant dense<[0.5, -0.5]> : tensor<2xf32>
  %bv = kiln.constant dense<[-1.0, 0.25]> : tensor<2xf32>
  %q = kiln.matmul %x, %wq : (tensor<1x2x4xf32>, tensor<4x2xf32>) -> tensor<1x2x2xf32>
  %k = kiln.matmul %x, %wk : (tensor<1x2x4xf32>, tensor<4x2xf32>) -> tensor<1x2x2xf32>
  %v = kiln.matmul %x, %wv : (tensor<1x2x4xf32>, tensor<4x2xf32>) -> tensor<1x2x2xf32>
  %qb = kiln.add %q, %bq : (tensor<1x2x2xf32>, tensor<2xf32>) -> tensor<1x2x2xf32>
  %vb = kiln.add %v, %bv : (tensor<1x2x2xf32>, tensor<2xf32>) -> tensor<1x2x2xf32>
  %q4 = kiln.reshape %qb : tensor<1x2x2xf32> -> tensor<1x1x2x2xf32>
  %k4 = kiln.reshape %k : tensor<1x2x2xf32> -> tensor<1x1x2x2xf32>
  %v4 = kiln.reshape %vb : tensor<1x2x2xf32> -> tensor<1x1x2x2xf32>
  %o = kiln.attention %q4, %k4, %v4 {scale = 0.5 : f32} : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  return %o : tensor<1x1x2x2xf32>
}

// -----

func.func @negative_projection_used_twice(%x: tensor<1x2x4xf32>) -> (tensor<1x1x2x2xf32>, tensor<1x2x4xf32>) {
  %wq = kiln.constant dense<0.1> : tensor<4x2xf32>
  %wk = kiln.constant dense<0.2> : tensor<4x4xf32>
  %wv = kiln.constant dense<0.3> : tensor<4x2xf32>
  %q = kiln.matmul %x, %wq : (tensor<1x2x4xf32>, tensor<4x2xf32>) -> tensor<1x2x2xf32>
  %k = kiln.matmul %x, %wk : (tensor<1x2x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4xf32>
  %v = kiln.matmul %x, %wv : (tensor<1x2x4xf32>, tensor<4x2xf32>) -> tensor<1x2x2xf32>
  %q4 = kiln.reshape %q : tensor<1x2x2xf32> -> tensor<1x1x2x2xf32>
  %k4 = kiln.reshape %k : tensor<1x2x4xf32> -> tensor<1x2x2x2xf32>
  %v4 = kiln.reshape %v : tensor<1x2x2xf32> -> tensor<1x1x2x2xf32>
  %k1 = kiln.slice %k4 {starts = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1, 1, 1>} : tensor<1x2x2x2xf32> -> tensor<1x1x2x2xf32>
  %o = kiln.attention %q4, %k1, %v4 {scale = 0.5 : f32} : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  return %o, %k : tensor<1x1x2x2xf32>, tensor<1x2x4xf32>
}

// -----

func.func @negative_weights_not_constant(%x: tensor<1x2x4xf32>, %wq: tensor<4x2xf32>, %wk: tensor<4x2xf32>, %wv: tensor<4x2xf32>) -> tensor<1x1x2x2xf32> {
  %q = kiln.matmul %x, %wq : (tensor<1x2x4xf32>, tensor<4x2xf32>) -> tensor<1x2x2xf32>
  %k = kiln.matmul %x, %wk : (tensor<1x2x4xf32>, tensor<4x2xf32>) -> tensor<1x2x2xf32>
  %v = kiln.matmul %x, %wv : (tensor<1x2x4xf32>, tensor<4x2xf32>) -> tensor<1x2x2xf32>
  %q4 = kiln.reshape %q : tensor<1x2x2xf32> -> tensor<1x1x2x2xf32>
  %k4 = kiln.reshape %k : tensor<1x2x2xf32> -> tensor<1x1x2x2xf32>
  %v4 = kiln.reshape %v : tensor<1x2x2xf32> -> tensor<1x1x2x2xf32>
  %o = kiln.attention %q4, %k4, %v4 {scale = 0.5 : f32} : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  return %o : tensor<1x1x2x2xf32>
}

// -----

func.func @negative_sibling_read_by_matmul(%x: tensor<2x4xf32>, %w2: tensor<3x3xf32>) -> tensor<2x3xf32> {
  %wg = kiln.constant dense<0.5> : tensor<4x3xf32>
  %wu = kiln.constant dense<0.25> : tensor<4x3xf32>
  %g = kiln.matmul %x, %wg : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  %u = kiln.matmul %x, %wu : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  %h = kiln.matmul %g, %w2 : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x3xf32>
  %y = kiln.mul %h, %u : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

//--- packed_swiglu.mlir
func.func @packed_swiglu(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %wg = kiln.constant dense<[[0.1, 0.2, -0.3], [0.3, 0.4, 0.1], [0.5, -0.6, 0.2], [0.7, 0.8, -0.9]]> : tensor<4x3xf32>
  %wu = kiln.constant dense<[[-0.1, 0.2, 0.4], [0.3, -0.4, 0.6], [0.5, 0.6, -0.2], [-0.7, 0.8, 0.3]]> : tensor<4x3xf32>
  %g = kiln.matmul %x, %wg : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  %u = kiln.matmul %x, %wu : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  %s = kiln.sigmoid %g : tensor<2x3xf32>
  %silu = kiln.mul %g, %s : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %y = kiln.mul %silu, %u : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// Quantized weights (MatMulNBits' kiln.dequantize, read transposed) pack
// too: the packed bytes, scales and zero points concatenated along the
// rows (the product's columns) into one dequantize, whose GEMM kernel then
// reads the packed bytes of both projections.
// CHECK-LABEL: func @packed_quantized_swiglu
// CHECK-DAG: %[[Q:.*]] = kiln.constant dense_resource<packed_projection{{.*}}> : tensor<6x1x16xui8>
// CHECK-DAG: %[[S:.*]] = kiln.constant dense<{{.*}}> : tensor<6x1xf16>
// CHECK-DAG: %[[Z:.*]] = kiln.constant dense<{{.*}}> : tensor<6x1xui8>
// CHECK: %[[W:.*]] = kiln.dequantize %[[Q]], %[[S]], %[[Z]] {bits = 4 : i64, block_size = 32 : i64} : (tensor<6x1x16xui8>, tensor<6x1xf16>, tensor<6x1xui8>) -> tensor<6x32xf16>
// CHECK: %[[P:.*]] = kiln.matmul %arg0, %[[W]] {transpose_rhs = true} : (tensor<2x32xf16>, tensor<6x32xf16>) -> tensor<2x6xf16>
// CHECK: %[[G:.*]] = kiln.slice %[[P]] {starts = array<i64: 0, 0>, strides = array<i64: 1, 1>} : tensor<2x6xf16> -> tensor<2x3xf16>
// CHECK: %[[U:.*]] = kiln.slice %[[P]] {starts = array<i64: 0, 3>, strides = array<i64: 1, 1>} : tensor<2x6xf16> -> tensor<2x3xf16>
// CHECK-NOT: kiln.dequantize
// CHECK-NOT: kiln.matmul
// CHECK: kiln.sigmoid %[[G]]

//--- packed_quantized_swiglu.mlir
func.func @packed_quantized_swiglu(%x: tensor<2x32xf16>) -> tensor<2x3xf16> {
  %qg = kiln.constant dense<[[[1, 35, 69, 103, 137, 171, 205, 239, 18, 52, 86, 120, 154, 188, 222, 0]], [[17, 51, 85, 119, 153, 187, 221, 255, 34, 68, 102, 136, 170, 204, 238, 16]], [[2, 36, 70, 104, 138, 172, 206, 240, 19, 53, 87, 121, 155, 189, 223, 1]]]> : tensor<3x1x16xui8>
  %qu = kiln.constant dense<[[[9, 43, 77, 111, 145, 179, 213, 247, 26, 60, 94, 128, 162, 196, 230, 8]], [[25, 59, 93, 127, 161, 195, 229, 7, 42, 76, 110, 144, 178, 212, 246, 24]], [[3, 37, 71, 105, 139, 173, 207, 241, 20, 54, 88, 122, 156, 190, 224, 2]]]> : tensor<3x1x16xui8>
  %sg = kiln.constant dense<[[0.05], [0.03], [0.02]]> : tensor<3x1xf16>
  %su = kiln.constant dense<[[0.04], [0.01], [0.06]]> : tensor<3x1xf16>
  %zg = kiln.constant dense<[[8], [7], [9]]> : tensor<3x1xui8>
  %zu = kiln.constant dense<[[6], [8], [10]]> : tensor<3x1xui8>
  %wg = kiln.dequantize %qg, %sg, %zg {bits = 4 : i64, block_size = 32 : i64} : (tensor<3x1x16xui8>, tensor<3x1xf16>, tensor<3x1xui8>) -> tensor<3x32xf16>
  %wu = kiln.dequantize %qu, %su, %zu {bits = 4 : i64, block_size = 32 : i64} : (tensor<3x1x16xui8>, tensor<3x1xf16>, tensor<3x1xui8>) -> tensor<3x32xf16>
  %g = kiln.matmul %x, %wg {transpose_rhs = true} : (tensor<2x32xf16>, tensor<3x32xf16>) -> tensor<2x3xf16>
  %u = kiln.matmul %x, %wu {transpose_rhs = true} : (tensor<2x32xf16>, tensor<3x32xf16>) -> tensor<2x3xf16>
  %s = kiln.sigmoid %g : tensor<2x3xf16>
  %silu = kiln.mul %g, %s : (tensor<2x3xf16>, tensor<2x3xf16>) -> tensor<2x3xf16>
  %y = kiln.mul %silu, %u : (tensor<2x3xf16>, tensor<2x3xf16>) -> tensor<2x3xf16>
  return %y : tensor<2x3xf16>
}

// -----

// negative_: quantized projections of different forms (4-bit and 8-bit
// weights) do not share a dequantize, so each stays a matmul of its own.
// CHECK-LABEL: func @negative_quantized_forms_differ
// CHECK-COUNT-2: kiln.dequantize
// CHECK-COUNT-2: kiln.matmul
// CHECK-NOT: kiln.slice

//--- negative_quantized_forms_differ.mlir
func.func @negative_quantized_forms_differ(%x: tensor<2x32xf16>) -> tensor<2x3xf16> {
  %qg = kiln.constant dense<[[[1, 35, 69, 103, 137, 171, 205, 239, 18, 52, 86, 120, 154, 188, 222, 0]], [[17, 51, 85, 119, 153, 187, 221, 255, 34, 68, 102, 136, 170, 204, 238, 16]], [[2, 36, 70, 104, 138, 172, 206, 240, 19, 53, 87, 121, 155, 189, 223, 1]]]> : tensor<3x1x16xui8>
  %qu = kiln.constant dense<7> : tensor<3x1x32xui8>
  %sg = kiln.constant dense<[[0.05], [0.03], [0.02]]> : tensor<3x1xf16>
  %su = kiln.constant dense<[[0.04], [0.01], [0.06]]> : tensor<3x1xf16>
  %wg = kiln.dequantize %qg, %sg {bits = 4 : i64, block_size = 32 : i64} : (tensor<3x1x16xui8>, tensor<3x1xf16>) -> tensor<3x32xf16>
  %wu = kiln.dequantize %qu, %su {bits = 8 : i64, block_size = 32 : i64} : (tensor<3x1x32xui8>, tensor<3x1xf16>) -> tensor<3x32xf16>
  %g = kiln.matmul %x, %wg {transpose_rhs = true} : (tensor<2x32xf16>, tensor<3x32xf16>) -> tensor<2x3xf16>
  %u = kiln.matmul %x, %wu {transpose_rhs = true} : (tensor<2x32xf16>, tensor<3x32xf16>) -> tensor<2x3xf16>
  %s = kiln.sigmoid %g : tensor<2x3xf16>
  %silu = kiln.mul %g, %s : (tensor<2x3xf16>, tensor<2x3xf16>) -> tensor<2x3xf16>
  %y = kiln.mul %silu, %u : (tensor<2x3xf16>, tensor<2x3xf16>) -> tensor<2x3xf16>
  return %y : tensor<2x3xf16>
}
