// RUN: kiln-opt %s | kiln-opt | FileCheck %s

// CHECK-LABEL: func @elementwise
func.func @elementwise(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  // CHECK: kiln.add %{{.*}}, %{{.*}} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %0 = kiln.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = kiln.sub %0, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %2 = kiln.mul %1, %0 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %3 = kiln.div %2, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %4 = kiln.pow %3, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK: kiln.neg
  %5 = kiln.neg %4 : tensor<2x3xf32>
  %6 = kiln.sqrt %5 : tensor<2x3xf32>
  %7 = kiln.erf %6 : tensor<2x3xf32>
  %8 = kiln.tanh %7 : tensor<2x3xf32>
  %9 = kiln.exp %8 : tensor<2x3xf32>
  %10 = kiln.relu %9 : tensor<2x3xf32>
  // CHECK: kiln.sigmoid
  %11 = kiln.sigmoid %10 : tensor<2x3xf32>
  return %11 : tensor<2x3xf32>
}

// CHECK-LABEL: func @structured
func.func @structured(%x: tensor<2x4x8xf32>, %g: tensor<8xf32>, %w: tensor<16x8xf32>) -> tensor<2x4x1xf32> {
  // CHECK: kiln.cast %{{.*}} : tensor<2x4x8xf32> -> tensor<2x4x8xf16>
  %h = kiln.cast %x : tensor<2x4x8xf32> -> tensor<2x4x8xf16>
  // CHECK: kiln.softmax %{{.*}} {axis = 2 : i64}
  %s = kiln.softmax %x {axis = 2 : i64} : tensor<2x4x8xf32>
  // CHECK: kiln.layer_norm %{{.*}}, %{{.*}} {axis = 2 : i64
  %n = kiln.layer_norm %s, %g {axis = 2 : i64, epsilon = 1.0e-5 : f32} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  // CHECK: kiln.matmul %{{.*}}, %{{.*}} {transpose_rhs = true}
  %m = kiln.matmul %n, %w {transpose_rhs = true} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  // CHECK: kiln.transpose %{{.*}} {permutation = array<i64: 1, 0, 2>}
  %t = kiln.transpose %m {permutation = array<i64: 1, 0, 2>} : tensor<2x4x16xf32> -> tensor<4x2x16xf32>
  // CHECK: kiln.reshape %{{.*}} : tensor<4x2x16xf32> -> tensor<2x4x16xf32>
  %r = kiln.reshape %t : tensor<4x2x16xf32> -> tensor<2x4x16xf32>
  // CHECK: kiln.reduce_mean %{{.*}} {axes = array<i64: 2>, keepdims = true}
  %mean = kiln.reduce_mean %r {axes = array<i64: 2>, keepdims = true} : tensor<2x4x16xf32> -> tensor<2x4x1xf32>
  return %mean : tensor<2x4x1xf32>
}

// CHECK-LABEL: func @kernel
func.func @kernel(%a: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: kiln.kernel elementwise(%{{.*}}) : (tensor<4xf32>) -> tensor<4xf32>
  %0 = kiln.kernel elementwise (%a) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>):
    %r = kiln.relu %x : tensor<4xf32>
    // CHECK: kiln.yield %{{.*}} : tensor<4xf32>
    kiln.yield %r : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}
