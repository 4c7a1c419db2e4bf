// A value that two ops of a kernel read at one element is computed once
// there, though each reader reaches it through data movement (getAt's
// index aliases): ten quantization-like diamonds (is_nan and where both
// read one product) behind slices cost ten comparisons a slice, not 2^10.
// The two slices read the chain at two elements, each computed: 20 in all.
// RUN: kilnc %s --emit=cuda | FileCheck %s
// RUN: kilnc %s -o %t.so
// RUN: env KILN_CACHE_DIR=%t.cache kiln-run %t.so --backend host --reference-model %s --compare-reference | FileCheck %s --check-prefix=HOST

// CHECK: extern "C" __global__ void kiln_elementwise_0(
// CHECK-COUNT-20: = (v{{[0-9]+}} != v{{[0-9]+}});
// CHECK-NOT: !=
// CHECK: out0[i] =
// CHECK-NOT: __global__
// HOST: compare y: max_abs 0

func.func @main(%x: tensor<2x8xf32>, %c: tensor<f32>) -> (tensor<4x2xf32> {kiln.name = "y"}) {
  %z = kiln.constant dense<0.0> : tensor<f32>
  %m0 = kiln.mul %x, %c : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %n0 = kiln.is_nan %m0 : tensor<2x8xf32> -> tensor<2x8xi1>
  %w0 = kiln.where %n0, %z, %m0 : (tensor<2x8xi1>, tensor<f32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %m1 = kiln.mul %w0, %c : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %n1 = kiln.is_nan %m1 : tensor<2x8xf32> -> tensor<2x8xi1>
  %w1 = kiln.where %n1, %z, %m1 : (tensor<2x8xi1>, tensor<f32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %m2 = kiln.mul %w1, %c : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %n2 = kiln.is_nan %m2 : tensor<2x8xf32> -> tensor<2x8xi1>
  %w2 = kiln.where %n2, %z, %m2 : (tensor<2x8xi1>, tensor<f32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %m3 = kiln.mul %w2, %c : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %n3 = kiln.is_nan %m3 : tensor<2x8xf32> -> tensor<2x8xi1>
  %w3 = kiln.where %n3, %z, %m3 : (tensor<2x8xi1>, tensor<f32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %m4 = kiln.mul %w3, %c : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %n4 = kiln.is_nan %m4 : tensor<2x8xf32> -> tensor<2x8xi1>
  %w4 = kiln.where %n4, %z, %m4 : (tensor<2x8xi1>, tensor<f32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %m5 = kiln.mul %w4, %c : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %n5 = kiln.is_nan %m5 : tensor<2x8xf32> -> tensor<2x8xi1>
  %w5 = kiln.where %n5, %z, %m5 : (tensor<2x8xi1>, tensor<f32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %m6 = kiln.mul %w5, %c : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %n6 = kiln.is_nan %m6 : tensor<2x8xf32> -> tensor<2x8xi1>
  %w6 = kiln.where %n6, %z, %m6 : (tensor<2x8xi1>, tensor<f32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %m7 = kiln.mul %w6, %c : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %n7 = kiln.is_nan %m7 : tensor<2x8xf32> -> tensor<2x8xi1>
  %w7 = kiln.where %n7, %z, %m7 : (tensor<2x8xi1>, tensor<f32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %m8 = kiln.mul %w7, %c : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %n8 = kiln.is_nan %m8 : tensor<2x8xf32> -> tensor<2x8xi1>
  %w8 = kiln.where %n8, %z, %m8 : (tensor<2x8xi1>, tensor<f32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %m9 = kiln.mul %w8, %c : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %n9 = kiln.is_nan %m9 : tensor<2x8xf32> -> tensor<2x8xi1>
  %w9 = kiln.where %n9, %z, %m9 : (tensor<2x8xi1>, tensor<f32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %lo = kiln.slice %w9 {starts = array<i64: 0, 0>, strides = array<i64: 1, 1>} : tensor<2x8xf32> -> tensor<2x4xf32>
  %hi = kiln.slice %w9 {starts = array<i64: 0, 4>, strides = array<i64: 1, 1>} : tensor<2x8xf32> -> tensor<2x4xf32>
  %s = kiln.add %lo, %hi : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %t = kiln.transpose %s {permutation = array<i64: 1, 0>} : tensor<2x4xf32> -> tensor<4x2xf32>
  return %t : tensor<4x2xf32>
}
