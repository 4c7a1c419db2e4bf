// RUN: kiln-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// The indexing ops (concat, slice, gather, expand): round trip and verifiers.

// CHECK-LABEL: func.func @indexing
// CHECK: kiln.concat %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
// CHECK: kiln.slice %{{.*}} {starts = array<i64: 1, 3>, strides = array<i64: 1, -2>} : tensor<2x4xf32> -> tensor<1x2xf32>
// CHECK: kiln.gather %{{.*}}, %{{.*}} {axis = 0 : i64} : (tensor<5x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
// CHECK: kiln.expand %{{.*}} : tensor<1x4xf32> -> tensor<3x1x4xf32>
func.func @indexing(%a: tensor<2x3xf32>, %b: tensor<2x1xf32>, %t: tensor<5x4xf32>,
                    %i: tensor<2x3xi64>, %r: tensor<1x4xf32>)
    -> (tensor<1x2xf32>, tensor<2x3x4xf32>, tensor<3x1x4xf32>) {
  %c = kiln.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  %s = kiln.slice %c {starts = array<i64: 1, 3>, strides = array<i64: 1, -2>} : tensor<2x4xf32> -> tensor<1x2xf32>
  %g = kiln.gather %t, %i {axis = 0 : i64} : (tensor<5x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
  %e = kiln.expand %r : tensor<1x4xf32> -> tensor<3x1x4xf32>
  return %s, %g, %e : tensor<1x2xf32>, tensor<2x3x4xf32>, tensor<3x1x4xf32>
}

// -----

func.func @negative_concat_dims(%a: tensor<2x3xf32>, %b: tensor<3x1xf32>) -> tensor<2x4xf32> {
  // expected-error@+1 {{concat inputs differ in dim 0 (3 vs 2)}}
  %c = kiln.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<3x1xf32>) -> tensor<2x4xf32>
  return %c : tensor<2x4xf32>
}

// -----

func.func @negative_concat_result(%a: tensor<2x3xf32>, %b: tensor<2x1xf32>) -> tensor<2x5xf32> {
  // expected-error@+1 {{differs from the concatenation 'tensor<2x4xf32>'}}
  %c = kiln.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x5xf32>
  return %c : tensor<2x5xf32>
}

// -----

func.func @negative_slice_out_of_bounds(%a: tensor<2x4xf32>) -> tensor<2x3xf32> {
  // expected-error@+1 {{slice of dim 1 reads outside [0, 4)}}
  %s = kiln.slice %a {starts = array<i64: 0, 2>, strides = array<i64: 1, 1>} : tensor<2x4xf32> -> tensor<2x3xf32>
  return %s : tensor<2x3xf32>
}

// -----

func.func @negative_slice_zero_stride(%a: tensor<2x4xf32>) -> tensor<2x1xf32> {
  // expected-error@+1 {{slice stride of dim 1 is 0}}
  %s = kiln.slice %a {starts = array<i64: 0, 0>, strides = array<i64: 1, 0>} : tensor<2x4xf32> -> tensor<2x1xf32>
  return %s : tensor<2x1xf32>
}

// -----

func.func @negative_gather_axis(%t: tensor<5x4xf32>, %i: tensor<2xi64>) -> tensor<2x4xf32> {
  // expected-error@+1 {{gather axis 2 out of range for rank 2}}
  %g = kiln.gather %t, %i {axis = 2 : i64} : (tensor<5x4xf32>, tensor<2xi64>) -> tensor<2x4xf32>
  return %g : tensor<2x4xf32>
}

// -----

func.func @negative_expand(%r: tensor<2x4xf32>) -> tensor<3x4xf32> {
  // expected-error@+1 {{shapes 2x4 and 3x4 do not broadcast at dim 0}}
  %e = kiln.expand %r : tensor<2x4xf32> -> tensor<3x4xf32>
  return %e : tensor<3x4xf32>
}

// -----

// CHECK-LABEL: func.func @gather_elements
// CHECK: kiln.gather_elements %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<2x5xf32>, tensor<2x3xi64>) -> tensor<2x3xf32>
func.func @gather_elements(%d: tensor<2x5xf32>, %i: tensor<2x3xi64>) -> tensor<2x3xf32> {
  %g = kiln.gather_elements %d, %i {axis = 1 : i64} : (tensor<2x5xf32>, tensor<2x3xi64>) -> tensor<2x3xf32>
  return %g : tensor<2x3xf32>
}

// -----

func.func @negative_gather_elements_dims(%d: tensor<2x5xf32>, %i: tensor<3x1xi64>) -> tensor<3x1xf32> {
  // expected-error@+1 {{gather_elements indices exceed the data in dim 0}}
  %g = kiln.gather_elements %d, %i {axis = 1 : i64} : (tensor<2x5xf32>, tensor<3x1xi64>) -> tensor<3x1xf32>
  return %g : tensor<3x1xf32>
}

// -----

// update_slice with per-batch starts (a batched cache whose batches hold
// different numbers of rows): round trip.
// CHECK-LABEL: func.func @update_slice_starts
// CHECK: kiln.update_slice %{{.*}}, %{{.*}}, %{{.*}} {axis = 2 : i64, offset = "0"} : (tensor<2x4x8x2xf32>, tensor<2x4x1x2xf32>, tensor<2x1x1x1xi64>) -> tensor<2x4x8x2xf32>
func.func @update_slice_starts(%c: tensor<2x4x8x2xf32>, %u: tensor<2x4x1x2xf32>, %s: tensor<2x1x1x1xi64>) -> tensor<2x4x8x2xf32> {
  %0 = kiln.update_slice %c, %u, %s {axis = 2 : i64, offset = "0"} : (tensor<2x4x8x2xf32>, tensor<2x4x1x2xf32>, tensor<2x1x1x1xi64>) -> tensor<2x4x8x2xf32>
  return %0 : tensor<2x4x8x2xf32>
}

// -----

func.func @negative_update_slice_float_starts(%c: tensor<2x8xf32>, %u: tensor<2x1xf32>, %s: tensor<2x1xf32>) -> tensor<2x8xf32> {
  // expected-error@+1 {{starts must be integers, got 'tensor<2x1xf32>'}}
  %0 = kiln.update_slice %c, %u, %s {axis = 1 : i64, offset = "0"} : (tensor<2x8xf32>, tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

func.func @negative_update_slice_starts_rank(%c: tensor<2x8xf32>, %u: tensor<2x1xf32>, %s: tensor<2xi64>) -> tensor<2x8xf32> {
  // expected-error@+1 {{starts must have dest's rank, got 'tensor<2xi64>'}}
  %0 = kiln.update_slice %c, %u, %s {axis = 1 : i64, offset = "0"} : (tensor<2x8xf32>, tensor<2x1xf32>, tensor<2xi64>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

func.func @negative_update_slice_starts_along_axis(%c: tensor<2x8xf32>, %u: tensor<2x2xf32>, %s: tensor<2x2xi64>) -> tensor<2x8xf32> {
  // expected-error@+1 {{starts' dim 1 (2) must be 1 (the axis)}}
  %0 = kiln.update_slice %c, %u, %s {axis = 1 : i64, offset = "0"} : (tensor<2x8xf32>, tensor<2x2xf32>, tensor<2x2xi64>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

func.func @negative_update_slice_starts_broadcast(%c: tensor<2x8xf32>, %u: tensor<2x1xf32>, %s: tensor<3x1xi64>) -> tensor<2x8xf32> {
  // expected-error@+1 {{starts' dim 0 (3) must be 1 or the update's}}
  %0 = kiln.update_slice %c, %u, %s {axis = 1 : i64, offset = "0"} : (tensor<2x8xf32>, tensor<2x1xf32>, tensor<3x1xi64>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}
