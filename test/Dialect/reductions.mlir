// RUN: kiln-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// The reduce, arg and log_softmax ops: round trip and verifiers.

// CHECK-LABEL: func.func @reductions
// CHECK: kiln.reduce_sum %{{.*}} {axes = array<i64: 0, 2>, keepdims = false} : tensor<2x3x4xi32> -> tensor<3xi32>
// CHECK: kiln.reduce_max %{{.*}} {axes = array<i64: 1>, keepdims = true} : tensor<2x3xi1> -> tensor<2x1xi1>
// CHECK: kiln.reduce_min
// CHECK: kiln.reduce_prod
// CHECK: kiln.arg_max %{{.*}} {axis = 1 : i64, keepdims = false, select_last_index = true} : tensor<2x3xf32> -> tensor<2xi64>
// CHECK: kiln.arg_min %{{.*}} {axis = 0 : i64, keepdims = true, select_last_index = false} : tensor<2x3xf32> -> tensor<1x3xi64>
// CHECK: kiln.log_softmax %{{.*}} {axis = 1 : i64} : tensor<2x3xf32>
func.func @reductions(%i: tensor<2x3x4xi32>, %b: tensor<2x3xi1>, %x: tensor<2x3xf32>)
    -> (tensor<3xi32>, tensor<2x1xi1>, tensor<f32>, tensor<2xf32>, tensor<2xi64>,
        tensor<1x3xi64>, tensor<2x3xf32>) {
  %s = kiln.reduce_sum %i {axes = array<i64: 0, 2>, keepdims = false} : tensor<2x3x4xi32> -> tensor<3xi32>
  %m = kiln.reduce_max %b {axes = array<i64: 1>, keepdims = true} : tensor<2x3xi1> -> tensor<2x1xi1>
  %n = kiln.reduce_min %x {axes = array<i64: 0, 1>, keepdims = false} : tensor<2x3xf32> -> tensor<f32>
  %p = kiln.reduce_prod %x {axes = array<i64: 1>, keepdims = false} : tensor<2x3xf32> -> tensor<2xf32>
  %a = kiln.arg_max %x {axis = 1 : i64, keepdims = false, select_last_index = true} : tensor<2x3xf32> -> tensor<2xi64>
  %c = kiln.arg_min %x {axis = 0 : i64, keepdims = true, select_last_index = false} : tensor<2x3xf32> -> tensor<1x3xi64>
  %l = kiln.log_softmax %x {axis = 1 : i64} : tensor<2x3xf32>
  return %s, %m, %n, %p, %a, %c, %l : tensor<3xi32>, tensor<2x1xi1>, tensor<f32>, tensor<2xf32>, tensor<2xi64>, tensor<1x3xi64>, tensor<2x3xf32>
}

// -----

func.func @negative_reduce_axis(%a: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error@+2 {{axis 2 out of range for rank 2}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = kiln.reduce_sum %a {axes = array<i64: 2>, keepdims = false} : tensor<2x3xf32> -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @negative_reduce_mean_int(%a: tensor<2x3xi32>) -> tensor<2xi32> {
  // expected-error@+1 {{must be ranked tensor of}}
  %0 = kiln.reduce_mean %a {axes = array<i64: 1>, keepdims = false} : tensor<2x3xi32> -> tensor<2xi32>
  return %0 : tensor<2xi32>
}

// -----

func.func @negative_arg_max_axis(%a: tensor<2x3xf32>) -> tensor<2xi64> {
  // expected-error@+1 {{axis -1 out of range for rank 2}}
  %0 = kiln.arg_max %a {axis = -1 : i64, keepdims = false, select_last_index = false} : tensor<2x3xf32> -> tensor<2xi64>
  return %0 : tensor<2xi64>
}

// -----

func.func @negative_arg_min_shape(%a: tensor<2x3xf32>) -> tensor<3xi64> {
  // expected-error@+1 {{result shape does not match the reduced input}}
  %0 = kiln.arg_min %a {axis = 1 : i64, keepdims = false, select_last_index = false} : tensor<2x3xf32> -> tensor<3xi64>
  return %0 : tensor<3xi64>
}

// -----

func.func @negative_arg_max_result_type(%a: tensor<2x3xf32>) -> tensor<2xi32> {
  // expected-error@+1 {{must be ranked tensor of 64-bit signless integer values}}
  %0 = kiln.arg_max %a {axis = 1 : i64, keepdims = false, select_last_index = false} : tensor<2x3xf32> -> tensor<2xi32>
  return %0 : tensor<2xi32>
}

// -----

func.func @negative_log_softmax_axis(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error@+1 {{axis 2 out of range for rank 2}}
  %0 = kiln.log_softmax %a {axis = 2 : i64} : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @scans
// CHECK: kiln.cumsum %{{.*}} {axis = 1 : i64, exclusive = true, reverse = false} : tensor<2x3xi32>
// CHECK: kiln.top_k %{{.*}} {axis = 1 : i64, k = 2 : i64, largest = false} : tensor<2x3xf32> -> tensor<2x2xi64>
func.func @scans(%i: tensor<2x3xi32>, %x: tensor<2x3xf32>) -> (tensor<2x3xi32>, tensor<2x2xi64>) {
  %c = kiln.cumsum %i {axis = 1 : i64, exclusive = true, reverse = false} : tensor<2x3xi32>
  %t = kiln.top_k %x {axis = 1 : i64, k = 2 : i64, largest = false} : tensor<2x3xf32> -> tensor<2x2xi64>
  return %c, %t : tensor<2x3xi32>, tensor<2x2xi64>
}

// -----

func.func @negative_cumsum_axis(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error@+1 {{axis 2 out of range for rank 2}}
  %0 = kiln.cumsum %a {axis = 2 : i64, exclusive = false, reverse = false} : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @negative_top_k_k(%a: tensor<2x3xf32>) -> tensor<2x4xi64> {
  // expected-error@+1 {{k = 4 is outside 0..3}}
  %0 = kiln.top_k %a {axis = 1 : i64, k = 4 : i64, largest = true} : tensor<2x3xf32> -> tensor<2x4xi64>
  return %0 : tensor<2x4xi64>
}

// -----

func.func @negative_top_k_shape(%a: tensor<2x3xf32>) -> tensor<2x3xi64> {
  // expected-error@+1 {{result shape must be the input's with k along the axis}}
  %0 = kiln.top_k %a {axis = 1 : i64, k = 2 : i64, largest = true} : tensor<2x3xf32> -> tensor<2x3xi64>
  return %0 : tensor<2x3xi64>
}
