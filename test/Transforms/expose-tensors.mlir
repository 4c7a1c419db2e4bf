// RUN: kiln-opt %s -split-input-file -kiln-fuse -kiln-expose-tensors | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-fuse -kiln-expose-tensors -kiln-plan-memory | FileCheck %s --check-prefix=PLANNED

// A matmul's result and what a kernel yields are in memory: both come back,
// after the model's own output, named after their ONNX tensors. The add
// inside the kernel never reaches memory. (The add broadcasts a column:
// neither a bias nor a residual of the product's shape, which would join
// the matmul's GEMM kernel.)
// CHECK-LABEL: func @matmul_then_kernel
// CHECK-SAME: -> (tensor<4x4xf32> {kiln.name = "y"}, tensor<4x4xf32> {kiln.name = "mm"})
// CHECK: %[[M:.*]] = kiln.matmul
// CHECK: %[[K:.*]] = kiln.kernel elementwise
// CHECK: return %[[K]], %[[M]]
// The exposed tensor is an output: it gets no arena slot to be overwritten.
// PLANNED-LABEL: func @matmul_then_kernel
// PLANNED: kiln.matmul {{.*}}kiln.offsets = array<i64: -2>
func.func @matmul_then_kernel(%x: tensor<4x4xf32>, %res: tensor<4x1xf32>) -> (tensor<4x4xf32> {kiln.name = "y"}) {
  %m = kiln.matmul %x, %x {kiln.tensors = ["mm"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %s = kiln.add %m, %res {kiln.tensors = ["biased"]} : (tensor<4x4xf32>, tensor<4x1xf32>) -> tensor<4x4xf32>
  %r = kiln.relu %s {kiln.tensors = ["y"]} : tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}

// -----

// A kernel result is named after the op inside that computes it.
// CHECK-LABEL: func @kernel_yield_named
// CHECK-SAME: -> (tensor<4x4xf32> {kiln.name = "out"}, tensor<4x4xf32> {kiln.name = "act"})
// CHECK: %[[K:.*]] = kiln.kernel elementwise
// CHECK: return %{{.*}}, %[[K]]
func.func @kernel_yield_named(%x: tensor<4x4xf32>) -> (tensor<4x4xf32> {kiln.name = "out"}) {
  %r = kiln.relu %x {kiln.tensors = ["act"]} : tensor<4x4xf32>
  %m = kiln.matmul %r, %r : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %m : tensor<4x4xf32>
}

// -----

// Nothing named: nothing changes.
// CHECK-LABEL: func @negative_no_names
// CHECK-SAME: -> (tensor<4x4xf32> {kiln.name = "y"})
// CHECK: return %{{[^,]*}} : tensor<4x4xf32>
func.func @negative_no_names(%x: tensor<4x4xf32>) -> (tensor<4x4xf32> {kiln.name = "y"}) {
  %m = kiln.matmul %x, %x : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %r = kiln.relu %m : tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}

// -----

// A value the function returns already, a reshape (a view of a tensor in
// memory) and a second tensor of an existing name are not exposed again.
// CHECK-LABEL: func @negative_returned_view_duplicate
// CHECK-SAME: -> (tensor<4x4xf32> {kiln.name = "y"}, tensor<16xf32> {kiln.name = "flat"})
// CHECK-NOT: kiln.name = "y2"
// CHECK: return %{{[^,]*}}, %{{[^,]*}} : tensor<4x4xf32>, tensor<16xf32>
func.func @negative_returned_view_duplicate(%x: tensor<4x4xf32>) -> (tensor<4x4xf32> {kiln.name = "y"}, tensor<16xf32> {kiln.name = "flat"}) {
  %m = kiln.matmul %x, %x {kiln.tensors = ["y"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %f = kiln.reshape %m {kiln.tensors = ["flat"]} : tensor<4x4xf32> -> tensor<16xf32>
  %n = kiln.matmul %m, %x {kiln.tensors = ["y"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %v = kiln.reshape %n {kiln.tensors = ["view"]} : tensor<4x4xf32> -> tensor<16xf32>
  %s = kiln.add %f, %v : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  return %m, %s : tensor<4x4xf32>, tensor<16xf32>
}

// -----

// Constants (weights) are no computed tensor.
// CHECK-LABEL: func @negative_constant
// CHECK-SAME: -> (tensor<4xf32> {kiln.name = "y"})
// CHECK-NOT: kiln.name = "w"
func.func @negative_constant(%x: tensor<4xf32>) -> (tensor<4xf32> {kiln.name = "y"}) {
  %w = kiln.constant dense<1.0> : tensor<4xf32> {kiln.tensors = ["w"]}
  %r = kiln.add %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
