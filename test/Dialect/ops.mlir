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

// Elementwise math and comparisons.
// CHECK-LABEL: func @math
func.func @math(%x: tensor<2x3xf32>, %i: tensor<2x3xi64>, %s: tensor<i64>) -> (tensor<2x3xf32>, tensor<2x3xi64>) {
  // CHECK: kiln.reciprocal %{{.*}} : tensor<2x3xf32>
  %0 = kiln.reciprocal %x : tensor<2x3xf32>
  %1 = kiln.log %0 : tensor<2x3xf32>
  %2 = kiln.floor %1 : tensor<2x3xf32>
  %3 = kiln.ceil %2 : tensor<2x3xf32>
  // CHECK: kiln.round
  %4 = kiln.round %3 : tensor<2x3xf32>
  %5 = kiln.sin %4 : tensor<2x3xf32>
  %6 = kiln.cos %5 : tensor<2x3xf32>
  %7 = kiln.softsign %6 : tensor<2x3xf32>
  %8 = kiln.abs %7 : tensor<2x3xf32>
  %9 = kiln.sign %8 : tensor<2x3xf32>
  // CHECK: kiln.gelu %{{.*}} : tensor<2x3xf32>
  %10 = kiln.gelu %9 : tensor<2x3xf32>
  // CHECK: kiln.gelu %{{.*}} approximate = tanh : tensor<2x3xf32>
  %11 = kiln.gelu %10 approximate = tanh : tensor<2x3xf32>
  // CHECK: kiln.max %{{.*}}, %{{.*}} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %12 = kiln.max %11, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %13 = kiln.min %12, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK: kiln.mod %{{.*}}, %{{.*}} {fmod = true} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %14 = kiln.mod %13, %x {fmod = true} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK: kiln.mod %{{.*}}, %{{.*}} : (tensor<2x3xi64>, tensor<i64>) -> tensor<2x3xi64>
  %15 = kiln.mod %i, %s : (tensor<2x3xi64>, tensor<i64>) -> tensor<2x3xi64>
  %16 = kiln.abs %15 : tensor<2x3xi64>
  %17 = kiln.sign %16 : tensor<2x3xi64>
  %18 = kiln.max %17, %s : (tensor<2x3xi64>, tensor<i64>) -> tensor<2x3xi64>
  return %14, %18 : tensor<2x3xf32>, tensor<2x3xi64>
}

// CHECK-LABEL: func @logic
func.func @logic(%x: tensor<2x3xf32>, %y: tensor<3xf32>, %i: tensor<2x1xi64>, %j: tensor<3xi64>, %b: tensor<3xi1>) -> (tensor<2x3xi1>, tensor<2x3xf32>) {
  // CHECK: kiln.equal %{{.*}}, %{{.*}} : (tensor<2x1xi64>, tensor<3xi64>) -> tensor<2x3xi1>
  %0 = kiln.equal %i, %j : (tensor<2x1xi64>, tensor<3xi64>) -> tensor<2x3xi1>
  // CHECK: kiln.less %{{.*}}, %{{.*}} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %1 = kiln.less %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %2 = kiln.less_equal %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %3 = kiln.greater %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %4 = kiln.greater_equal %i, %j : (tensor<2x1xi64>, tensor<3xi64>) -> tensor<2x3xi1>
  // CHECK: kiln.and %{{.*}}, %{{.*}} : (tensor<2x3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
  %5 = kiln.and %0, %b : (tensor<2x3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
  %6 = kiln.or %5, %1 : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  %7 = kiln.xor %6, %2 : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  // CHECK: kiln.not %{{.*}} : tensor<2x3xi1>
  %8 = kiln.not %7 : tensor<2x3xi1>
  %9 = kiln.and %8, %3 : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  %10 = kiln.or %9, %4 : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  // CHECK: kiln.is_nan %{{.*}} : tensor<2x3xf32> -> tensor<2x3xi1>
  %11 = kiln.is_nan %x : tensor<2x3xf32> -> tensor<2x3xi1>
  // CHECK: kiln.is_inf %{{.*}} {detect_negative = false} : tensor<2x3xf32> -> tensor<2x3xi1>
  %12 = kiln.is_inf %x {detect_negative = false} : tensor<2x3xf32> -> tensor<2x3xi1>
  %13 = kiln.or %11, %12 : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  // CHECK: kiln.where %{{.*}}, %{{.*}}, %{{.*}} : (tensor<3xi1>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %14 = kiln.where %b, %x, %y : (tensor<3xi1>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %15 = kiln.where %13, %14, %x : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %10, %15 : tensor<2x3xi1>, tensor<2x3xf32>
}

// CHECK-LABEL: func @structured
func.func @structured(%x: tensor<2x4x8xf32>, %g: tensor<8xf32>, %g2: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<2x4x1xf32> {
  // CHECK: kiln.cast %{{.*}} : tensor<2x4x8xf32> -> tensor<2x4x8xf16>
  %h = kiln.cast %x : tensor<2x4x8xf32> -> tensor<2x4x8xf16>
  // CHECK: kiln.softmax %{{.*}} {axis = 2 : i64}
  %s = kiln.softmax %x {axis = 2 : i64} : tensor<2x4x8xf32>
  // CHECK: kiln.layer_norm %{{.*}}, %{{.*}} {axis = 2 : i64
  %n = kiln.layer_norm %s, %g {axis = 2 : i64, epsilon = 1.0e-5 : f32} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  // CHECK: kiln.rms_norm %{{.*}}, %{{.*}} {axis = 1 : i64, epsilon = 9.99999997E-7 : f32} : (tensor<2x4x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
  %rms = kiln.rms_norm %n, %g2 {axis = 1 : i64, epsilon = 1.0e-6 : f32} : (tensor<2x4x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
  // CHECK: kiln.matmul %{{.*}}, %{{.*}} {transpose_rhs = true}
  %m = kiln.matmul %rms, %w {transpose_rhs = true} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
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

// CHECK-LABEL: func @gemm_kernel
func.func @gemm_kernel(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>, %r: tensor<2x16xf32>) -> tensor<2x16xf32> {
  // CHECK: kiln.kernel gemm(%{{.*}}) {epilogue = #kiln.gemm_epilogue<bias = 2, residual = 3, activation = gelu>}
  %0 = kiln.kernel gemm (%x, %w, %b, %r) {epilogue = #kiln.gemm_epilogue<bias = 2, residual = 3, activation = gelu>} : (tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<2x16xf32>) -> tensor<2x16xf32> {
  ^bb0(%a: tensor<4x8xf32>, %bw: tensor<8x8xf32>, %bias: tensor<8xf32>, %res: tensor<2x16xf32>):
    %p = kiln.matmul %a, %bw : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %s = kiln.add %p, %bias : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    %v = kiln.reshape %s : tensor<4x8xf32> -> tensor<2x16xf32>
    %t = kiln.add %res, %v : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
    %g = kiln.gelu %t approximate = tanh : tensor<2x16xf32>
    kiln.yield %g : tensor<2x16xf32>
  }
  return %0 : tensor<2x16xf32>
}

// An epilogue's defaults (no bias, no residual, no activation) print as
// nothing.
// CHECK-LABEL: func @gemm_kernel_relu
func.func @gemm_kernel_relu(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  // CHECK: {epilogue = #kiln.gemm_epilogue<activation = relu>}
  %0 = kiln.kernel gemm (%x, %w) {epilogue = #kiln.gemm_epilogue<bias = -1, activation = relu>} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>, %bw: tensor<8x8xf32>):
    %p = kiln.matmul %a, %bw : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %r = kiln.relu %p : tensor<4x8xf32>
    kiln.yield %r : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

// An 8-bit GEMM's tail: its first ops may be a reshape and a cast of the
// product (the tail takes them, not the epilogue's widening cast), and two
// of its ops may read the product.
// CHECK-LABEL: func @gemm_kernel_tail
// CHECK: {epilogue = #kiln.gemm_epilogue<tail = true>}
func.func @gemm_kernel_tail(%x: tensor<4x32xi8>, %q: tensor<8x1x32xui8>, %s: tensor<8x1xf32>, %sa: tensor<f32>) -> tensor<32xf16> {
  %0 = kiln.kernel gemm (%x, %q, %s, %sa) {epilogue = #kiln.gemm_epilogue<tail = true>} : (tensor<4x32xi8>, tensor<8x1x32xui8>, tensor<8x1xf32>, tensor<f32>) -> tensor<32xf16> {
  ^bb0(%a: tensor<4x32xi8>, %bq: tensor<8x1x32xui8>, %bs: tensor<8x1xf32>, %as: tensor<f32>):
    %af = kiln.cast %a : tensor<4x32xi8> -> tensor<4x32xf32>
    %ad = kiln.mul %af, %as : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
    %w = kiln.dequantize %bq, %bs {bits = 8 : i64, block_size = 32 : i64} : (tensor<8x1x32xui8>, tensor<8x1xf32>) -> tensor<8x32xf32>
    %p = kiln.matmul %ad, %w {transpose_rhs = true} : (tensor<4x32xf32>, tensor<8x32xf32>) -> tensor<4x8xf32>
    %r = kiln.reshape %p : tensor<4x8xf32> -> tensor<32xf32>
    %n = kiln.mul %p, %as : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    %rn = kiln.reshape %n : tensor<4x8xf32> -> tensor<32xf32>
    %y = kiln.add %r, %rn : (tensor<32xf32>, tensor<32xf32>) -> tensor<32xf32>
    %h = kiln.cast %y : tensor<32xf32> -> tensor<32xf16>
    kiln.yield %h : tensor<32xf16>
  }
  return %0 : tensor<32xf16>
}

// A cache update after a product of block-quantized weights: its ops may
// start with a reshape of the product (the chain ends at the product the
// kernel yields), and the kernel yields the later update, then the earlier.
// CHECK-LABEL: func @gemm_kernel_cache_update
// CHECK: {epilogue = #kiln.gemm_epilogue<cache_update = true>}
func.func @gemm_kernel_cache_update(%x: tensor<1x32xf16>, %q: tensor<8x1x16xui8>, %s: tensor<8x1xf16>, %kc: tensor<6x4xf16>, %vc: tensor<6x4xf16>) -> (tensor<1x8xf16>, tensor<6x4xf16>, tensor<6x4xf16>) {
  %0:3 = kiln.kernel gemm (%x, %q, %s, %kc, %vc) {epilogue = #kiln.gemm_epilogue<cache_update = true>} : (tensor<1x32xf16>, tensor<8x1x16xui8>, tensor<8x1xf16>, tensor<6x4xf16>, tensor<6x4xf16>) -> (tensor<1x8xf16>, tensor<6x4xf16>, tensor<6x4xf16>) {
  ^bb0(%a: tensor<1x32xf16>, %bq: tensor<8x1x16xui8>, %bs: tensor<8x1xf16>, %k: tensor<6x4xf16>, %v: tensor<6x4xf16>):
    %w = kiln.dequantize %bq, %bs {bits = 4 : i64, block_size = 32 : i64} : (tensor<8x1x16xui8>, tensor<8x1xf16>) -> tensor<8x32xf16>
    %p = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<1x32xf16>, tensor<8x32xf16>) -> tensor<1x8xf16>
    %r = kiln.reshape %p : tensor<1x8xf16> -> tensor<2x4xf16>
    %kn = kiln.slice %r {starts = array<i64: 0, 0>, strides = array<i64: 1, 1>} : tensor<2x4xf16> -> tensor<1x4xf16>
    %kr = kiln.neg %kn : tensor<1x4xf16>
    %vn = kiln.slice %r {starts = array<i64: 1, 0>, strides = array<i64: 1, 1>} : tensor<2x4xf16> -> tensor<1x4xf16>
    %ku = kiln.update_slice %k, %kr {axis = 0 : i64, offset = "2"} : (tensor<6x4xf16>, tensor<1x4xf16>) -> tensor<6x4xf16>
    %vu = kiln.update_slice %v, %vn {axis = 0 : i64, offset = "2"} : (tensor<6x4xf16>, tensor<1x4xf16>) -> tensor<6x4xf16>
    kiln.yield %p, %vu, %ku : tensor<1x8xf16>, tensor<6x4xf16>, tensor<6x4xf16>
  }
  return %0#0, %0#2, %0#1 : tensor<1x8xf16>, tensor<6x4xf16>, tensor<6x4xf16>
}

// Sizes of any static shape, in row-major order (a size unsqueezed).
// CHECK-LABEL: func @sizes_of_a_shape
func.func @sizes_of_a_shape() -> tensor<2x1xi64> {
  // CHECK: kiln.sizes ["0", "past + sequence"] : tensor<2x1xi64>
  %0 = kiln.sizes ["0", "past + sequence"] : tensor<2x1xi64>
  return %0 : tensor<2x1xi64>
}

// A length from the data checked against bounds at run time: the bounds
// broadcast to it (a constant and a size of the run's dims).
// CHECK-LABEL: func @check_range
func.func @check_range(%x: tensor<?x1xi64, #kiln.dims<["batch"]>>) -> tensor<?x1xi64, #kiln.dims<["batch"]>> {
  %low = kiln.constant dense<0> : tensor<i64>
  %high = kiln.sizes ["past + sequence"] : tensor<i64>
  // CHECK: kiln.check_range %{{.*}}, %{{.*}}, %{{.*}} {what = "seqlens_k"} : (tensor<?x1xi64, #kiln.dims<["batch"]>>, tensor<i64>, tensor<i64>) -> tensor<?x1xi64, #kiln.dims<["batch"]>>
  %0 = kiln.check_range %x, %low, %high {what = "seqlens_k"} : (tensor<?x1xi64, #kiln.dims<["batch"]>>, tensor<i64>, tensor<i64>) -> tensor<?x1xi64, #kiln.dims<["batch"]>>
  return %0 : tensor<?x1xi64, #kiln.dims<["batch"]>>
}
