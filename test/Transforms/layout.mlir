// RUN: kiln-opt %s -split-input-file -kiln-layout | FileCheck %s
// RUN: split-file %s %t
// RUN: kiln-run %t/packed.mlir --compare-pipeline --seed 5 | FileCheck %s --check-prefix=SEMANTICS
// RUN: kiln-run %t/packed_biases.mlir --compare-pipeline --seed 5 | FileCheck %s --check-prefix=SEMANTICS
// RUN: kiln-run %t/negative_one_projection_without_bias.mlir --compare-pipeline --seed 5 | FileCheck %s --check-prefix=SEMANTICS
// RUN: kiln-run %t/packed_swiglu.mlir --compare-pipeline --seed 5 | FileCheck %s --check-prefix=SEMANTICS
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
// CHECK: %[[W:.*]] = kiln.constant dense<{{.*}}> : tensor<4x6xf32>
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
// CHECK: %[[W:.*]] = kiln.constant dense<{{.*}}> : tensor<4x6xf32>
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
// CHECK: %[[W:.*]] = kiln.constant dense<{{.*}}> : tensor<4x6xf32>
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
