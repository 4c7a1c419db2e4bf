// RUN: kiln-opt %s -split-input-file -canonicalize | FileCheck %s
// RUN: kiln-run %s --compare-pipeline --seed 5 | FileCheck %s --check-prefix=SEMANTICS
// SEMANTICS: pipeline keeps semantics

// The kiln folds (KilnFolds.cpp) canonicalization uses.

// A transpose of an operand's last two dims becomes the matmul's own flag,
// flipping one that is set already.
// CHECK-LABEL: func @matmul_transposed_operands
// CHECK-NOT: kiln.transpose
// CHECK: %[[M:.*]] = kiln.matmul %arg0, %arg1 {transpose_lhs = true} : (tensor<2x8x4xf32>, tensor<8x6xf32>) -> tensor<2x4x6xf32>
// CHECK: return %[[M]]
func.func @matmul_transposed_operands(%a: tensor<2x8x4xf32>, %b: tensor<8x6xf32>) -> tensor<2x4x6xf32> {
  %at = kiln.transpose %a {permutation = array<i64: 0, 2, 1>} : tensor<2x8x4xf32> -> tensor<2x4x8xf32>
  %bt = kiln.transpose %b {permutation = array<i64: 1, 0>} : tensor<8x6xf32> -> tensor<6x8xf32>
  %m = kiln.matmul %at, %bt {transpose_rhs = true} : (tensor<2x4x8xf32>, tensor<6x8xf32>) -> tensor<2x4x6xf32>
  return %m : tensor<2x4x6xf32>
}

// -----

/// A transpose that moves a batch dim is no matmul flag: it stays.
// CHECK-LABEL: func @negative_matmul_batch_transpose
// CHECK: %[[T:.*]] = kiln.transpose %arg0 {permutation = array<i64: 1, 0, 2>}
// CHECK: kiln.matmul %[[T]], %arg1 :
func.func @negative_matmul_batch_transpose(%a: tensor<3x2x4xf32>, %b: tensor<4x5xf32>) -> tensor<2x3x5xf32> {
  %t = kiln.transpose %a {permutation = array<i64: 1, 0, 2>} : tensor<3x2x4xf32> -> tensor<2x3x4xf32>
  %m = kiln.matmul %t, %b : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
  return %m : tensor<2x3x5xf32>
}

// -----

// A transpose of a transpose reads the original through the composed
// permutation; an identity permutation is no op.
// CHECK-LABEL: func @transpose_of_transpose
// CHECK: %[[T:.*]] = kiln.transpose %arg0 {permutation = array<i64: 2, 0, 1>}
// CHECK-NEXT: return %[[T]], %arg0
func.func @transpose_of_transpose(%x: tensor<2x3x4xf32>) -> (tensor<4x2x3xf32>, tensor<2x3x4xf32>) {
  %a = kiln.transpose %x {permutation = array<i64: 1, 0, 2>} : tensor<2x3x4xf32> -> tensor<3x2x4xf32>
  %b = kiln.transpose %a {permutation = array<i64: 2, 1, 0>} : tensor<3x2x4xf32> -> tensor<4x2x3xf32>
  %i = kiln.transpose %x {permutation = array<i64: 0, 1, 2>} : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  return %b, %i : tensor<4x2x3xf32>, tensor<2x3x4xf32>
}

// -----

// A reshape of a reshape reads the original tensor.
// CHECK-LABEL: func @reshape_of_reshape
// CHECK: %[[R:.*]] = kiln.reshape %arg0 : tensor<2x6xf32> -> tensor<3x4xf32>
// CHECK-NEXT: return %[[R]]
func.func @reshape_of_reshape(%x: tensor<2x6xf32>) -> tensor<3x4xf32> {
  %a = kiln.reshape %x : tensor<2x6xf32> -> tensor<12xf32>
  %b = kiln.reshape %a : tensor<12xf32> -> tensor<3x4xf32>
  return %b : tensor<3x4xf32>
}
