// RUN: kiln-opt %s -split-input-file -kiln-fuse -kiln-plan-memory | FileCheck %s
// RUN: not kiln-opt %s -kiln-fuse -kiln-plan-memory=alignment=3 -o /dev/null 2>&1 | FileCheck %s --check-prefix=BADALIGN
// BADALIGN: alignment must be a positive power of two, got 3

// Three 4 KiB buffers in a chain: each dies when the next is written, so two
// slots suffice; the last writes straight into the output.
// CHECK-LABEL: func @chain
// CHECK-SAME: kiln.arena_bytes = 8192
// CHECK-SAME: kiln.live_lower_bound_bytes = 8192
// CHECK: kiln.matmul {{.*}}kiln.offsets = array<i64: [[A:[0-9]+]]>
// CHECK: kiln.matmul {{.*}}kiln.offsets = array<i64: [[B:[0-9]+]]>
// CHECK: kiln.matmul {{.*}}kiln.offsets = array<i64: [[A]]>
// CHECK: kiln.matmul {{.*}}kiln.offsets = array<i64: -1>
func.func @chain(%x: tensor<32x32xf32>) -> tensor<32x32xf32> {
  %0 = kiln.matmul %x, %x : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>
  %1 = kiln.matmul %0, %x : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>
  %2 = kiln.matmul %1, %x : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>
  %3 = kiln.matmul %2, %x : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>
  return %3 : tensor<32x32xf32>
}

// -----

/// A reshape is a view: its source stays live until the view's last use, so
/// the second buffer may not reuse the first's slot. (A reshape read only by
/// an elementwise kernel is fused into it; a matmul reads the view.)
// CHECK-LABEL: func @negative_view_extends_life
// CHECK: kiln.matmul {{.*}}kiln.offsets = array<i64: [[A:[0-9]+]]>
// CHECK: kiln.reshape
// CHECK: kiln.matmul {{.*}}kiln.offsets = array<i64: [[B:[0-9]+]]>
// CHECK-NOT: kiln.offsets = array<i64: [[A]]>
// CHECK: kiln.matmul {{.*}}kiln.offsets = array<i64: -1>
func.func @negative_view_extends_life(%x: tensor<32x32xf32>) -> tensor<1x32x32xf32> {
  %0 = kiln.matmul %x, %x : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>
  %v = kiln.reshape %0 : tensor<32x32xf32> -> tensor<1x32x32xf32>
  %1 = kiln.matmul %x, %x : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>
  %2 = kiln.matmul %v, %1 : (tensor<1x32x32xf32>, tensor<32x32xf32>) -> tensor<1x32x32xf32>
  return %2 : tensor<1x32x32xf32>
}

// -----

/// Returning a graph input needs no arena at all.
// CHECK-LABEL: func @negative_identity
// CHECK-SAME: kiln.arena_bytes = 0
func.func @negative_identity(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

/// In place: the elementwise kernel's input dies at it and has its shape, so
/// the result takes the input's slot (the matmul after it then needs only
/// one more): 2 slots instead of 3.
// CHECK-LABEL: func @in_place_elementwise
// CHECK-SAME: kiln.arena_bytes = 8192
// CHECK-SAME: kiln.live_lower_bound_bytes = 8192
// CHECK: kiln.matmul {{.*}}kiln.offsets = array<i64: [[A:[0-9]+]]>
// CHECK: kiln.kernel elementwise{{.*}}kiln.offsets = array<i64: [[A]]>
func.func @in_place_elementwise(%x: tensor<32x32xf32>) -> tensor<32x32xf32> {
  %0 = kiln.matmul %x, %x : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>
  %1 = kiln.exp %0 : tensor<32x32xf32>
  %2 = kiln.matmul %1, %x : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>
  %3 = kiln.matmul %2, %1 : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>
  return %3 : tensor<32x32xf32>
}

// -----

/// In place: a GEMM kernel's residual sum takes its residual's slot where
/// the residual dies at it (every kernel of the step reads an element of
/// the residual before it writes that element of the sum): 1 slot, not 2.
// CHECK-LABEL: func @in_place_gemm_residual
// CHECK-SAME: kiln.arena_bytes = 4096
// CHECK: kiln.matmul {{.*}}kiln.offsets = array<i64: [[A:[0-9]+]]>
// CHECK: kiln.kernel gemm{{.*}}residual = {{[0-9]}}>, kiln.offsets = array<i64: [[A]]>
func.func @in_place_gemm_residual(%x: tensor<32x32xf32>, %w: tensor<32x32xf32>) -> tensor<32x32xf32> {
  %r = kiln.matmul %x, %x : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>
  %p = kiln.matmul %x, %w : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>
  %s = kiln.add %r, %p : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>
  %t = kiln.matmul %s, %w : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>
  return %t : tensor<32x32xf32>
}

// -----

/// negative_: the residual read as the GEMM's own A too (one kernel input,
/// read at other elements than the one written) keeps its slot.
// CHECK-LABEL: func @negative_in_place_gemm_residual_is_a
// CHECK-SAME: kiln.arena_bytes = 8192
// CHECK: kiln.matmul {{.*}}kiln.offsets = array<i64: [[A:[0-9]+]]>
// CHECK-NOT: kiln.offsets = array<i64: [[A]]>
// CHECK: kiln.kernel gemm(%0, %arg1) {epilogue = #kiln.gemm_epilogue<residual = 0>, kiln.offsets = array<i64: {{[0-9]+}}>}
func.func @negative_in_place_gemm_residual_is_a(%x: tensor<32x32xf32>, %w: tensor<32x32xf32>) -> tensor<32x32xf32> {
  %r = kiln.matmul %x, %x : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>
  %p = kiln.matmul %r, %w : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>
  %s = kiln.add %r, %p : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>
  %t = kiln.matmul %s, %w : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>
  return %t : tensor<32x32xf32>
}

// -----

/// negative_: a residual read again after the GEMM keeps its slot.
// CHECK-LABEL: func @negative_in_place_gemm_residual_lives_on
// CHECK-SAME: kiln.arena_bytes = 12288
// CHECK: kiln.matmul {{.*}}kiln.offsets = array<i64: [[A:[0-9]+]]>
// CHECK-NOT: kiln.offsets = array<i64: [[A]]>
// CHECK: kiln.kernel gemm{{.*}}residual = {{[0-9]}}>, kiln.offsets = array<i64: {{[0-9]+}}>
func.func @negative_in_place_gemm_residual_lives_on(%x: tensor<32x32xf32>, %w: tensor<32x32xf32>) -> tensor<32x32xf32> {
  %r = kiln.matmul %x, %x : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>
  %p = kiln.matmul %x, %w : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>
  %s = kiln.add %r, %p : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>
  %t = kiln.matmul %s, %r : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>
  %u = kiln.matmul %t, %s : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>
  return %u : tensor<32x32xf32>
}

// -----

/// negative_: the input is read again later, so the result needs a slot of
/// its own.
// CHECK-LABEL: func @negative_in_place_input_lives_on
// CHECK: kiln.matmul {{.*}}kiln.offsets = array<i64: [[A:[0-9]+]]>
// CHECK: kiln.kernel elementwise
// CHECK-NOT: kiln.offsets = array<i64: [[A]]>
// CHECK-SAME: kiln.offsets
func.func @negative_in_place_input_lives_on(%x: tensor<32x32xf32>) -> tensor<32x32xf32> {
  %0 = kiln.matmul %x, %x : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>
  %1 = kiln.relu %0 : tensor<32x32xf32>
  %2 = kiln.matmul %1, %0 : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>
  %3 = kiln.matmul %2, %1 : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>
  return %3 : tensor<32x32xf32>
}

// -----

/// negative_: a broadcast input (another shape than the result) is read at
/// other indices than the one written, so it is never overwritten in place.
// CHECK-LABEL: func @negative_in_place_broadcast
// CHECK: kiln.matmul {{.*}}kiln.offsets = array<i64: [[A:[0-9]+]]>
// CHECK: kiln.kernel elementwise
// CHECK-NOT: kiln.offsets = array<i64: [[A]]>
// CHECK-SAME: kiln.offsets
func.func @negative_in_place_broadcast(%x: tensor<1x32xf32>, %y: tensor<32x32xf32>) -> tensor<32x32xf32> {
  %0 = kiln.matmul %x, %y : (tensor<1x32xf32>, tensor<32x32xf32>) -> tensor<1x32xf32>
  %1 = kiln.add %0, %y : (tensor<1x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>
  %2 = kiln.matmul %1, %y : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>
  return %2 : tensor<32x32xf32>
}

// -----

/// An elementwise kernel that reads its input through a fused transpose reads
/// other elements than the one it writes: no in-place writing over it, though
/// the input dies there and has the result's type.
// CHECK-LABEL: func @negative_in_place_through_transpose
// CHECK: kiln.matmul {{.*}}kiln.offsets = array<i64: [[A:[0-9]+]]>
// CHECK: kiln.kernel elementwise
// CHECK-NOT: kiln.offsets = array<i64: [[A]]>
// CHECK-SAME: kiln.offsets = array<i64: [[B:[0-9]+]]>
func.func @negative_in_place_through_transpose(%x: tensor<32x32xf32>) -> tensor<32x32xf32> {
  %m = kiln.matmul %x, %x : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>
  %t = kiln.transpose %m {permutation = array<i64: 1, 0>} : tensor<32x32xf32> -> tensor<32x32xf32>
  %r = kiln.relu %t : tensor<32x32xf32>
  %o = kiln.matmul %r, %x : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>
  return %o : tensor<32x32xf32>
}

// -----

/// Through a reshape the flat index is the same: in place.
// CHECK-LABEL: func @in_place_through_reshape
// CHECK: kiln.matmul {{.*}}kiln.offsets = array<i64: [[A:[0-9]+]]>
// CHECK: kiln.kernel elementwise{{.*}}kiln.offsets = array<i64: [[A]]>
func.func @in_place_through_reshape(%x: tensor<32x32xf32>) -> tensor<32x32xf32> {
  %m = kiln.matmul %x, %x : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>
  %v = kiln.reshape %m : tensor<32x32xf32> -> tensor<1024xf32>
  %r = kiln.exp %v : tensor<1024xf32>
  %b = kiln.reshape %r : tensor<1024xf32> -> tensor<32x32xf32>
  %o = kiln.matmul %b, %x : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>
  return %o : tensor<32x32xf32>
}
