// RUN: kiln-opt %s -split-input-file -kiln-mixed-precision | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-mixed-precision='precision=bf16 keep-io-types=false' | FileCheck %s --check-prefix=BF16
// RUN: kiln-opt %s -split-input-file -kiln-mixed-precision='keep-op-types=LayerNormalization keep-node-names=proj' 2>/dev/null | FileCheck %s --check-prefix=KEEP
// RUN: kiln-opt %s -split-input-file -kiln-mixed-precision='disable-islands=all' | FileCheck %s --check-prefix=OFF
// RUN: kiln-opt %s -split-input-file -kiln-mixed-precision='keep-node-names=no_such_node' 2>&1 >/dev/null | FileCheck %s --check-prefix=WARN
// RUN: not kiln-opt %s -split-input-file -kiln-mixed-precision='precision=fp8' 2>&1 | FileCheck %s --check-prefix=BADPREC
// RUN: not kiln-opt %s -split-input-file -kiln-mixed-precision='keep-op-types=Convolution' 2>&1 | FileCheck %s --check-prefix=BADOP
// RUN: not kiln-opt %s -split-input-file -kiln-mixed-precision='disable-islands=layer_norm' 2>&1 | FileCheck %s --check-prefix=BADISLAND
// Semantics: mixed-precision-semantics.test runs models of these forms on the
// reference interpreter and the host backend against fp32.

// The pass names its own options; kiln-opt has no flags of its own for
// them, so no note names one (kilnc-precision.test has kilnc's).
// WARN: warning: kiln-mixed-precision: no op comes from ONNX node 'no_such_node' (keep-node-names)
// WARN-NOT: note
// BADPREC: error: kiln-mixed-precision: unknown precision 'fp8'; expected fp16 or bf16
// BADOP: error: kiln-mixed-precision: unknown op type 'Convolution' in keep-op-types; expected a kiln op name
// BADISLAND: error: kiln-mixed-precision: unknown island 'layer_norm' in disable-islands; expected all, softmax, norm-statistics, reduction, mask, from-integer, angle or quantize

// Cast insertion: the matmul computes in f16 on its input converted at run
// time and its weights converted at compile time (saturating to f16's range);
// the softmax is an fp32 island; the output keeps its type.
// CHECK-LABEL: func @matmul_softmax
// CHECK-SAME: %[[X:.*]]: tensor<2x4xf32> {kiln.fp32 = "keep-io-types"}
// CHECK-SAME: -> (tensor<2x3xf32> {kiln.fp32 = "keep-io-types"})
// CHECK: %[[W:.*]] = kiln.constant dense<{{\[}}[1.000000e+00, 2.000000e+00, 3.000000e+00], {{.*}}, [6.550400e+04, -6.550400e+04, 5.000000e-01]]> : tensor<4x3xf16>
// CHECK: %[[X16:.*]] = kiln.cast %[[X]] : tensor<2x4xf32> -> tensor<2x4xf16>
// CHECK: %[[H:.*]] = kiln.matmul %[[X16]], %[[W]] : (tensor<2x4xf16>, tensor<4x3xf16>) -> tensor<2x3xf16>
// CHECK: %[[H32:.*]] = kiln.cast %[[H]] : tensor<2x3xf16> -> tensor<2x3xf32>
// CHECK: %[[P:.*]] = kiln.softmax %[[H32]] {axis = 1 : i64, kiln.fp32 = "softmax"} : tensor<2x3xf32>
// CHECK: return %[[P]] : tensor<2x3xf32>
// Without keep-io-types the interface takes bf16 too.
// BF16-LABEL: func @matmul_softmax
// BF16-SAME: %[[X:.*]]: tensor<2x4xbf16>) -> tensor<2x3xbf16>
// BF16: kiln.constant {{.*}} : tensor<4x3xbf16>
// BF16: %[[H:.*]] = kiln.matmul %[[X]]
// BF16: %[[H32:.*]] = kiln.cast %[[H]] : tensor<2x3xbf16> -> tensor<2x3xf32>
// BF16: %[[P:.*]] = kiln.softmax %[[H32]] {axis = 1 : i64, kiln.fp32 = "softmax"}
// BF16: %[[P16:.*]] = kiln.cast %[[P]] : tensor<2x3xf32> -> tensor<2x3xbf16>
// BF16: return %[[P16]] : tensor<2x3xbf16>
// OFF-LABEL: func @matmul_softmax
// OFF: kiln.softmax %{{.*}} {axis = 1 : i64} : tensor<2x3xf16>
func.func @matmul_softmax(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %w = kiln.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0], [1.0e5, -1.0e5, 0.5]]> : tensor<4x3xf32>
  %h = kiln.matmul %x, %w : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  %p = kiln.softmax %h {axis = 1 : i64} : tensor<2x3xf32>
  return %p : tensor<2x3xf32>
}

// -----

// Cancellation: f16 -> f32 -> f16 is the identity.
// CHECK-LABEL: func @round_trip
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf16>)
// CHECK-NEXT: return %[[X]] : tensor<4x8xf16>
func.func @round_trip(%x: tensor<4x8xf16>) -> tensor<4x8xf16> {
  %a = kiln.cast %x : tensor<4x8xf16> -> tensor<4x8xf32>
  %b = kiln.cast %a : tensor<4x8xf32> -> tensor<4x8xf16>
  return %b : tensor<4x8xf16>
}

// -----

/// f32 -> f16 -> f32 rounds: both casts stay.
// CHECK-LABEL: func @negative_lossy_round_trip
// CHECK: %[[A:.*]] = kiln.cast %arg0 : tensor<4x8xf32> -> tensor<4x8xf16>
// CHECK: %[[B:.*]] = kiln.cast %[[A]] {kiln.fp32 = "explicit-cast"} : tensor<4x8xf16> -> tensor<4x8xf32>
// CHECK: return %[[B]]
func.func @negative_lossy_round_trip(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %a = kiln.cast %x : tensor<4x8xf32> -> tensor<4x8xf16>
  %b = kiln.cast %a : tensor<4x8xf16> -> tensor<4x8xf32>
  return %b : tensor<4x8xf32>
}

// -----

// Propagation: the transpose follows the f16 matmul; the cast back to f16
// after the softmax moves above the reshape (into the softmax's kernel).
// CHECK-LABEL: func @hoist_through_reshape
// CHECK: %[[H:.*]] = kiln.matmul {{.*}} -> tensor<2x4x8xf16>
// CHECK: %[[T:.*]] = kiln.transpose %[[H]] {permutation = array<i64: 0, 2, 1>} : tensor<2x4x8xf16> -> tensor<2x8x4xf16>
// CHECK: %[[T32:.*]] = kiln.cast %[[T]] : tensor<2x8x4xf16> -> tensor<2x8x4xf32>
// CHECK: %[[P:.*]] = kiln.softmax %[[T32]]
// CHECK: %[[P16:.*]] = kiln.cast %[[P]] : tensor<2x8x4xf32> -> tensor<2x8x4xf16>
// CHECK: %[[R:.*]] = kiln.reshape %[[P16]] : tensor<2x8x4xf16> -> tensor<2x4x8xf16>
// CHECK: kiln.matmul %[[R]]
func.func @hoist_through_reshape(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>, %v: tensor<2x8x4xf32>) -> tensor<2x4x4xf32> {
  %h = kiln.matmul %x, %w : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %t = kiln.transpose %h {permutation = array<i64: 0, 2, 1>} : tensor<2x4x8xf32> -> tensor<2x8x4xf32>
  %p = kiln.softmax %t {axis = 2 : i64} : tensor<2x8x4xf32>
  %r = kiln.reshape %p : tensor<2x8x4xf32> -> tensor<2x4x8xf32>
  %o = kiln.matmul %r, %v : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  return %o : tensor<2x4x4xf32>
}

// -----

// A widening cast moves below the transpose, where it meets the matmul's
// narrowing one and both cancel. (The transpose moves a batch dim: one of the
// last two dims would fold into the matmul's transpose_lhs.)
// CHECK-LABEL: func @sink_through_transpose
// CHECK: %[[T:.*]] = kiln.transpose %arg0 {permutation = array<i64: 1, 0, 2>} : tensor<4x8x3xf16> -> tensor<8x4x3xf16>
// CHECK: kiln.matmul %[[T]], %{{.*}} : (tensor<8x4x3xf16>, tensor<3x2xf16>) -> tensor<8x4x2xf16>
func.func @sink_through_transpose(%x: tensor<4x8x3xf16>, %w: tensor<3x2xf32>) -> tensor<8x4x2xf32> {
  %a = kiln.cast %x : tensor<4x8x3xf16> -> tensor<4x8x3xf32>
  %t = kiln.transpose %a {permutation = array<i64: 1, 0, 2>} : tensor<4x8x3xf32> -> tensor<8x4x3xf32>
  %m = kiln.matmul %t, %w : (tensor<8x4x3xf32>, tensor<3x2xf32>) -> tensor<8x4x2xf32>
  return %m : tensor<8x4x2xf32>
}

// -----

// RMSNorm as exporters write it: the square and the mean are an fp32 island
// (x^2 would overflow f16 at |x| > 256); the normalization after them
// follows their fp32 result; the weight stays f32 for its f32 user.
// CHECK-LABEL: func @rms_norm
// CHECK: %[[G:.*]] = kiln.constant {{.*}} : tensor<8xf32> {kiln.fp32 = "fp32-user"}
// CHECK: %[[H:.*]] = kiln.matmul {{.*}} -> tensor<2x8xf16>
// CHECK: %[[H32:.*]] = kiln.cast %[[H]] : tensor<2x8xf16> -> tensor<2x8xf32>
// CHECK: %[[SQ:.*]] = kiln.pow %[[H32]], %{{.*}} {kiln.fp32 = "norm-statistics"} : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
// CHECK: kiln.reduce_mean %[[SQ]] {axes = array<i64: 1>, keepdims = true, kiln.fp32 = "norm-statistics"} : tensor<2x8xf32> -> tensor<2x1xf32>
// CHECK: kiln.add {{.*}} {kiln.fp32 = "propagated"} : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
// CHECK: kiln.sqrt {{.*}} {kiln.fp32 = "propagated"} : tensor<2x1xf32>
// CHECK: %[[R:.*]] = kiln.reciprocal {{.*}} {kiln.fp32 = "propagated"} : tensor<2x1xf32>
// CHECK: %[[HB:.*]] = kiln.cast %[[H]] : tensor<2x8xf16> -> tensor<2x8xf32>
// CHECK: %[[N:.*]] = kiln.mul %[[HB]], %[[R]] {kiln.fp32 = "propagated"}
// CHECK: %[[Y:.*]] = kiln.mul %[[N]], %[[G]] {kiln.fp32 = "propagated"}
// CHECK: %[[Y16:.*]] = kiln.cast %[[Y]] : tensor<2x8xf32> -> tensor<2x8xf16>
// CHECK: kiln.matmul %[[Y16]]
// OFF-LABEL: func @rms_norm
// OFF-NOT: norm-statistics
// OFF: kiln.pow {{.*}} : (tensor<2x8xf16>, tensor<f16>) -> tensor<2x8xf16>
// OFF: kiln.reduce_mean {{.*}} : tensor<2x8xf16> -> tensor<2x1xf16>
func.func @rms_norm(%x: tensor<2x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x8xf32> {
  %h = kiln.matmul %x, %w : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
  %two = kiln.constant dense<2.0> : tensor<f32>
  %sq = kiln.pow %h, %two : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %ms = kiln.reduce_mean %sq {axes = array<i64: 1>, keepdims = true} : tensor<2x8xf32> -> tensor<2x1xf32>
  %eps = kiln.constant dense<1.0e-6> : tensor<f32>
  %v = kiln.add %ms, %eps : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %s = kiln.sqrt %v : tensor<2x1xf32>
  %r = kiln.reciprocal %s : tensor<2x1xf32>
  %n = kiln.mul %h, %r : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
  %g = kiln.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : tensor<8xf32>
  %y = kiln.mul %n, %g : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %o = kiln.matmul %y, %w : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
  return %o : tensor<2x8xf32>
}

// -----

// LayerNorm that recomposition left decomposed: the mean (x - mean(x)) and
// the mean of squares are fp32 statistics.
// CHECK-LABEL: func @layer_norm_statistics
// CHECK: %[[H:.*]] = kiln.matmul {{.*}} -> tensor<2x8xf16>
// CHECK: %[[M:.*]] = kiln.reduce_mean %{{.*}} {axes = array<i64: 1>, keepdims = true, kiln.fp32 = "norm-statistics"} : tensor<2x8xf32>
// CHECK: %[[D:.*]] = kiln.sub %{{.*}}, %[[M]] {kiln.fp32 = "propagated"} : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
// CHECK: %[[DD:.*]] = kiln.mul %[[D]], %[[D]] {kiln.fp32 = "norm-statistics"}
// CHECK: kiln.reduce_mean %[[DD]] {axes = array<i64: 1>, keepdims = true, kiln.fp32 = "norm-statistics"}
func.func @layer_norm_statistics(%x: tensor<2x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x8xf32> {
  %h = kiln.matmul %x, %w : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
  %m = kiln.reduce_mean %h {axes = array<i64: 1>, keepdims = true} : tensor<2x8xf32> -> tensor<2x1xf32>
  %d = kiln.sub %h, %m : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
  %dd = kiln.mul %d, %d : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %var = kiln.reduce_mean %dd {axes = array<i64: 1>, keepdims = true} : tensor<2x8xf32> -> tensor<2x1xf32>
  %eps = kiln.constant dense<1.0e-5> : tensor<f32>
  %ve = kiln.add %var, %eps : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %s = kiln.sqrt %ve : tensor<2x1xf32>
  %r = kiln.reciprocal %s : tensor<2x1xf32>
  %n = kiln.mul %d, %r : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
  %o = kiln.matmul %n, %w : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
  return %o : tensor<2x8xf32>
}

// -----

// kiln.layer_norm computes in the type its input arrives in (its kernel
// keeps the statistics in fp32); scale and bias are converted with it.
// The op-type override keeps it in f32 (ONNX's name for it works too), and
// the residual add after it follows its f32 result.
// CHECK-LABEL: func @layer_norm_follows
// CHECK-DAG: %[[B:.*]] = kiln.constant dense<5.000000e-01> : tensor<8xf16>
// CHECK-DAG: %[[G:.*]] = kiln.constant dense<{{.*}}> : tensor<8xf16>
// CHECK: %[[H:.*]] = kiln.matmul {{.*}} -> tensor<2x8xf16>
// CHECK: %[[N:.*]] = kiln.layer_norm %[[H]], %[[G]], %[[B]] {axis = 1 : i64, epsilon = {{.*}}} : (tensor<2x8xf16>, tensor<8xf16>, tensor<8xf16>) -> tensor<2x8xf16>
// CHECK: kiln.add %[[N]], %[[H]] : (tensor<2x8xf16>, tensor<2x8xf16>) -> tensor<2x8xf16>
// KEEP-LABEL: func @layer_norm_follows
// KEEP: %[[H:.*]] = kiln.matmul {{.*}} -> tensor<2x8xf16>
// KEEP: %[[H32:.*]] = kiln.cast %[[H]] : tensor<2x8xf16> -> tensor<2x8xf32>
// KEEP: %[[N:.*]] = kiln.layer_norm %[[H32]], {{.*}} kiln.fp32 = "keep-op-types=layer_norm"} : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
// KEEP: kiln.add %[[N]], %{{.*}} {kiln.fp32 = "propagated"} : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
func.func @layer_norm_follows(%x: tensor<2x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x8xf32> {
  %h = kiln.matmul %x, %w : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
  %g = kiln.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : tensor<8xf32>
  %b = kiln.constant dense<0.5> : tensor<8xf32>
  %n = kiln.layer_norm %h, %g, %b {axis = 1 : i64, epsilon = 1.0e-5 : f32} : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %a = kiln.add %n, %h : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %a : tensor<2x8xf32>
}

// -----

// Softmax as some exporters write it: the exponential is in the island even
// though the division shares it (stored in f16 it would overflow above
// x = 11), and the division follows its f32 operands.
// CHECK-LABEL: func @decomposed_softmax
// CHECK: %[[E:.*]] = kiln.exp %{{.*}} {kiln.fp32 = "softmax"} : tensor<2x8xf32>
// CHECK: %[[S:.*]] = kiln.reduce_sum %[[E]] {axes = array<i64: 1>, keepdims = true, kiln.fp32 = "softmax"}
// CHECK: kiln.div %[[E]], %[[S]] {kiln.fp32 = "propagated"} : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
func.func @decomposed_softmax(%x: tensor<2x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x8xf32> {
  %h = kiln.matmul %x, %w : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
  %e = kiln.exp %h : tensor<2x8xf32>
  %s = kiln.reduce_sum %e {axes = array<i64: 1>, keepdims = true} : tensor<2x8xf32> -> tensor<2x1xf32>
  %p = kiln.div %e, %s : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
  return %p : tensor<2x8xf32>
}

// -----

// CHECK-LABEL: func @sum_reduction
// CHECK: kiln.reduce_sum %{{.*}} {axes = array<i64: 1>, keepdims = false, kiln.fp32 = "reduction"} : tensor<2x8xf32> -> tensor<2xf32>
func.func @sum_reduction(%x: tensor<2x8xf32>, %w: tensor<8x8xf32>) -> tensor<2xf32> {
  %h = kiln.matmul %x, %w : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
  %s = kiln.reduce_sum %h {axes = array<i64: 1>, keepdims = false} : tensor<2x8xf32> -> tensor<2xf32>
  return %s : tensor<2xf32>
}

// -----

// Mask arithmetic is an fp32 island; each attention clamps the mask to f16's
// finite range before converting it (in its own kernel), so -3.4e38 and -inf
// become -65504 and a fully masked row stays finite. A constant mask is
// converted at compile time, -inf included. Without the island, the mask is
// computed in f16 (constants saturate to its range, as weights do, but -inf
// stays -inf) and converted without clamping.
// CHECK-LABEL: func @attention_mask
// CHECK-DAG: %[[CAUSAL:.*]] = kiln.constant dense<{{\[\[\[}}[0.000000e+00, -6.550400e+04, -6.550400e+04, -6.550400e+04], {{.*}}> : tensor<1x1x4x4xf16>
// CHECK-DAG: %[[HI:.*]] = kiln.constant dense<6.550400e+04> : tensor<f32>
// CHECK-DAG: %[[LO:.*]] = kiln.constant dense<-6.550400e+04> : tensor<f32>
// CHECK: %[[Q:.*]] = kiln.matmul {{.*}} -> tensor<1x2x4x8xf16>
// CHECK: %[[MF:.*]] = kiln.cast %arg3 {kiln.fp32 = "mask"} : tensor<1x4xi64> -> tensor<1x4xf32>
// CHECK: %[[INV:.*]] = kiln.sub %{{.*}}, %[[MF]] {kiln.fp32 = "mask"}
// CHECK: %[[ADD:.*]] = kiln.mul %[[INV]], %{{.*}} {kiln.fp32 = "mask"}
// CHECK: %[[M:.*]] = kiln.reshape %[[ADD]] {kiln.fp32 = "mask"} : tensor<1x4xf32> -> tensor<1x1x1x4xf32>
// CHECK: %[[CL:.*]] = kiln.max %[[M]], %[[LO]]
// CHECK: %[[CH:.*]] = kiln.min %[[CL]], %[[HI]]
// CHECK: %[[M16:.*]] = kiln.cast %[[CH]] : tensor<1x1x1x4xf32> -> tensor<1x1x1x4xf16>
// CHECK: kiln.attention %[[Q]], %{{.*}}, %{{.*}}, %[[M16]] {scale = {{.*}}} : (tensor<1x2x4x8xf16>, tensor<1x2x4x8xf16>, tensor<1x2x4x8xf16>, tensor<1x1x1x4xf16>) -> tensor<1x2x4x8xf16>
// CHECK: kiln.attention %[[Q]], %{{.*}}, %{{.*}}, %[[CAUSAL]]
// BF16-LABEL: func @attention_mask
// BF16: kiln.constant dense<{{\[\[\[}}[0.000000e+00, -3.389530e+38, -3.389530e+38, -3.389530e+38], {{.*}}> : tensor<1x1x4x4xbf16>
// OFF-LABEL: func @attention_mask
// OFF-DAG: kiln.constant dense<{{\[\[\[}}[0.000000e+00, -6.550400e+04, -6.550400e+04, 0xFC00], {{.*}}> : tensor<1x1x4x4xf16>
// OFF-DAG: %[[LOW:.*]] = kiln.constant dense<-6.550400e+04> : tensor<f16>
// OFF: %[[MF:.*]] = kiln.cast %arg3 : tensor<1x4xi64> -> tensor<1x4xf16>
// OFF: kiln.mul %{{.*}}, %[[LOW]] : (tensor<1x4xf16>, tensor<f16>) -> tensor<1x4xf16>
// OFF-NOT: kiln.max
func.func @attention_mask(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %ids: tensor<1x4xi64>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) {
  %wq = kiln.constant dense<0.25> : tensor<8x8xf32>
  %qp = kiln.matmul %q, %wq : (tensor<1x2x4x8xf32>, tensor<8x8xf32>) -> tensor<1x2x4x8xf32>
  %one = kiln.constant dense<1.0> : tensor<f32>
  %low = kiln.constant dense<-3.40282347E+38> : tensor<f32>
  %mf = kiln.cast %ids : tensor<1x4xi64> -> tensor<1x4xf32>
  %inv = kiln.sub %one, %mf : (tensor<f32>, tensor<1x4xf32>) -> tensor<1x4xf32>
  %add = kiln.mul %inv, %low : (tensor<1x4xf32>, tensor<f32>) -> tensor<1x4xf32>
  %m = kiln.reshape %add : tensor<1x4xf32> -> tensor<1x1x1x4xf32>
  %o1 = kiln.attention %qp, %k, %v, %m {scale = 0.35355338 : f32} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x1x1x4xf32>) -> tensor<1x2x4x8xf32>
  %causal = kiln.constant dense<[[[[0.0, -3.40282347E+38, -3.40282347E+38, 0xFF800000], [0.0, 0.0, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, 0.0, -3.40282347E+38], [0.0, 0.0, 0.0, 0.0]]]]> : tensor<1x1x4x4xf32>
  %o2 = kiln.attention %qp, %k, %v, %causal {scale = 0.35355338 : f32} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x8xf32>
  return %o1, %o2 : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>
}

// -----

// Positions cast from integers stay fp32 (bf16 holds integers exactly only
// up to 256), and so does the rotary angle computed from them: the cast,
// reshape and product feed the cosine alone, so they join its `angle`
// island; the rotation computes in f32 after it (propagated) and its result
// converts for the matmul. With the island off, the cast is still
// from-integer and the rest follows it.
// CHECK-LABEL: func @positions
// CHECK: %[[P:.*]] = kiln.cast %arg0 {kiln.fp32 = "angle"} : tensor<8xi64> -> tensor<8xf32>
// CHECK: %[[PR:.*]] = kiln.reshape %[[P]] {kiln.fp32 = "angle"} : tensor<8xf32> -> tensor<8x1xf32>
// CHECK: %[[A:.*]] = kiln.mul %[[PR]], %{{.*}} {kiln.fp32 = "angle"} : (tensor<8x1xf32>, tensor<4xf32>) -> tensor<8x4xf32>
// CHECK: %[[C:.*]] = kiln.cos %[[A]] {kiln.fp32 = "angle"} : tensor<8x4xf32>
// CHECK: kiln.mul %{{.*}}, %[[C]] {kiln.fp32 = "propagated"} : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
// OFF-LABEL: func @positions
// OFF: kiln.cast %arg0 : tensor<8xi64> -> tensor<8xf16>
// OFF: kiln.cos %{{.*}} : tensor<8x4xf16>
func.func @positions(%pos: tensor<8xi64>, %q: tensor<8x4xf32>, %w: tensor<4x4xf32>) -> tensor<8x4xf32> {
  %h = kiln.matmul %q, %w : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  %p = kiln.cast %pos : tensor<8xi64> -> tensor<8xf32>
  %pr = kiln.reshape %p : tensor<8xf32> -> tensor<8x1xf32>
  %f = kiln.constant dense<[1.0, 0.1, 0.01, 0.001]> : tensor<4xf32>
  %angle = kiln.mul %pr, %f : (tensor<8x1xf32>, tensor<4xf32>) -> tensor<8x4xf32>
  %c = kiln.cos %angle : tensor<8x4xf32>
  %r = kiln.mul %h, %c : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  %o = kiln.matmul %r, %w : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  return %o : tensor<8x4xf32>
}

// -----

// A rotary table as exporters fold it for static shapes: a constant of
// angles (position times frequency, here up to 2047 radians, where fp16's
// spacing is 1) concatenated once for the cosine and the sine. The constant
// stays f32 (its users compute in f32), the concat joins the island.
// CHECK-LABEL: func @rotary_table
// CHECK: %[[T:.*]] = kiln.constant dense<{{.*}}> : tensor<2x2xf32>
// CHECK: %[[A:.*]] = kiln.concat %[[T]], %[[T]] {axis = 1 : i64, kiln.fp32 = "angle"} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x4xf32>
// CHECK: kiln.cos %[[A]] {kiln.fp32 = "angle"} : tensor<2x4xf32>
// CHECK: kiln.sin %[[A]] {kiln.fp32 = "angle"} : tensor<2x4xf32>
// BF16-LABEL: func @rotary_table
// BF16: kiln.concat {{.*}} -> tensor<2x4xf32>
// OFF-LABEL: func @rotary_table
// OFF: kiln.concat {{.*}} -> tensor<2x4xf16>
func.func @rotary_table(%x: tensor<2x4xf32>, %w: tensor<4x4xf32>) -> tensor<2x4xf32> {
  %h = kiln.matmul %x, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %t = kiln.constant dense<[[2046.0, 20.46], [2047.0, 20.47]]> : tensor<2x2xf32>
  %a = kiln.concat %t, %t {axis = 1 : i64} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x4xf32>
  %c = kiln.cos %a : tensor<2x4xf32>
  %s = kiln.sin %a : tensor<2x4xf32>
  %hc = kiln.mul %h, %c : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %hs = kiln.mul %h, %s : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %r = kiln.add %hc, %hs : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %o = kiln.matmul %r, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  return %o : tensor<2x4xf32>
}

// -----

// Angles as an outer product (older transformers: inverse frequencies
// matmul positions): the matmul that computes them stays f32.
// CHECK-LABEL: func @angles_from_matmul
// CHECK: %[[A:.*]] = kiln.matmul %{{.*}}, %{{.*}} {kiln.fp32 = "angle"} : (tensor<4x1xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
// CHECK: kiln.sin %{{.*}} {kiln.fp32 = "angle"} : tensor<8x4xf32>
// CHECK: kiln.matmul {{.*}} -> tensor<8x4xf16>
func.func @angles_from_matmul(%pos: tensor<1x8xi64>, %x: tensor<8x4xf32>, %w: tensor<4x4xf32>) -> tensor<8x4xf32> {
  %f = kiln.constant dense<[[1.0], [0.1], [0.01], [0.001]]> : tensor<4x1xf32>
  %p = kiln.cast %pos : tensor<1x8xi64> -> tensor<1x8xf32>
  %a = kiln.matmul %f, %p : (tensor<4x1xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
  %at = kiln.transpose %a {permutation = array<i64: 1, 0>} : tensor<4x8xf32> -> tensor<8x4xf32>
  %s = kiln.sin %at : tensor<8x4xf32>
  %r = kiln.mul %x, %s : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  %o = kiln.matmul %r, %w : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  return %o : tensor<8x4xf32>
}

// -----

// negative_: a value that also feeds something other than an angle is not
// pulled into the island: the matmul's result keeps f16 (the sine takes it
// in f32, converted at its input).
// CHECK-LABEL: func @negative_shared_angle
// CHECK: %[[H:.*]] = kiln.matmul {{.*}} -> tensor<2x4xf16>
// CHECK: %[[H32:.*]] = kiln.cast %[[H]] : tensor<2x4xf16> -> tensor<2x4xf32>
// CHECK: kiln.sin %[[H32]] {kiln.fp32 = "angle"} : tensor<2x4xf32>
func.func @negative_shared_angle(%x: tensor<2x4xf32>, %w: tensor<4x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  %h = kiln.matmul %x, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %s = kiln.sin %h : tensor<2x4xf32>
  %o = kiln.matmul %h, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  return %s, %o : tensor<2x4xf32>, tensor<2x4xf32>
}

// -----

// Override by ONNX node name: the matmul from node "proj" stays in f32 on
// its f32 inputs; the next one converts its result.
// CHECK-LABEL: func @keep_matmul_by_node
// CHECK: kiln.matmul {{.*}} -> tensor<2x8xf16>
// CHECK: kiln.matmul {{.*}} -> tensor<2x8xf16>
// KEEP-LABEL: func @keep_matmul_by_node
// KEEP: %[[W16:.*]] = kiln.cast %arg1 : tensor<8x8xf32> -> tensor<8x8xf16>
// KEEP: %[[H:.*]] = kiln.matmul %arg0, %arg1 {kiln.fp32 = "keep-node-names=proj"} : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
// KEEP: %[[H16:.*]] = kiln.cast %[[H]] : tensor<2x8xf32> -> tensor<2x8xf16>
// KEEP: kiln.matmul %[[H16]], %[[W16]] : (tensor<2x8xf16>, tensor<8x8xf16>) -> tensor<2x8xf16>
func.func @keep_matmul_by_node(%x: tensor<2x8xf32>, %w: tensor<8x8xf32>) -> tensor<2x8xf32> {
  %h = kiln.matmul %x, %w : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32> loc("proj")
  %o = kiln.matmul %h, %w : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32> loc("out")
  return %o : tensor<2x8xf32>
}

// -----

/// Integers are not the pass's business: nothing changes.
// CHECK-LABEL: func @negative_integers
// CHECK-NOT: kiln.cast
// CHECK-NOT: kiln.fp32
// CHECK: kiln.gather %arg1, %arg0 {axis = 0 : i64} : (tensor<16x4xi64>, tensor<2x4xi64>) -> tensor<2x4x4xi64>
// CHECK: kiln.add {{.*}} : (tensor<2x4x4xi64>, tensor<i64>) -> tensor<2x4x4xi64>
func.func @negative_integers(%ids: tensor<2x4xi64>, %table: tensor<16x4xi64>) -> tensor<2x4x4xi64> {
  %g = kiln.gather %table, %ids {axis = 0 : i64} : (tensor<16x4xi64>, tensor<2x4xi64>) -> tensor<2x4x4xi64>
  %one = kiln.constant dense<1> : tensor<i64>
  %a = kiln.add %g, %one : (tensor<2x4x4xi64>, tensor<i64>) -> tensor<2x4x4xi64>
  return %a : tensor<2x4x4xi64>
}

// -----

// Quantization (QuantizeLinear: x / scale, rounded for integers, cast) is
// an fp32 island: an f16 x / scale moves values across the quantized
// grid's boundaries. x arrives in f16 (the matmul's) and is widened; the
// scale stays the f32 constant it is.
// CHECK-LABEL: func @quantize
// CHECK: %[[S:.*]] = kiln.constant dense<0.00999{{[0-9]*}}> : tensor<f32>
// CHECK: %[[H:.*]] = kiln.matmul {{.*}} -> tensor<2x8xf16>
// CHECK: %[[H32:.*]] = kiln.cast %[[H]] : tensor<2x8xf16> -> tensor<2x8xf32>
// CHECK: %[[R:.*]] = kiln.div %[[H32]], %[[S]] {kiln.fp32 = "quantize"} : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
// CHECK: kiln.cast %[[R]] : tensor<2x8xf32> -> tensor<2x8xf8E4M3FN>
// The integers' rounding is shared by two casts, each adding its own zero
// point, one through QuantizeLinear's NaN guard (whose predicate joins
// too).
// CHECK: %[[R2:.*]] = kiln.div %{{.*}}, %[[S]] {kiln.fp32 = "quantize"}
// CHECK: %[[N:.*]] = kiln.round %[[R2]] {kiln.fp32 = "quantize"} : tensor<2x8xf32>
// CHECK: %[[Z:.*]] = kiln.add %[[N]], %{{.*}} {kiln.fp32 = "quantize"}
// CHECK: kiln.is_nan %[[Z]] : tensor<2x8xf32> -> tensor<2x8xi1>
// CHECK: %[[G:.*]] = kiln.where %{{.*}}, %{{.*}}, %[[Z]] {kiln.fp32 = "quantize"}
// CHECK: kiln.cast %[[G]] : tensor<2x8xf32> -> tensor<2x8xi8>
// CHECK: %[[Z2:.*]] = kiln.add %[[N]], %{{.*}} {kiln.fp32 = "quantize"}
// CHECK: kiln.cast %[[Z2]] : tensor<2x8xf32> -> tensor<2x8xui8>
// OFF-LABEL: func @quantize
// OFF: kiln.div %{{.*}}, %{{.*}} : (tensor<2x8xf16>, tensor<f16>) -> tensor<2x8xf16>
func.func @quantize(%x: tensor<2x8xf32>, %w: tensor<8x8xf32>) -> (tensor<2x8xf8E4M3FN>, tensor<2x8xi8>, tensor<2x8xui8>) {
  %h = kiln.matmul %x, %w : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
  %s = kiln.constant dense<0.01> : tensor<f32>
  %r = kiln.div %h, %s : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %q = kiln.cast %r : tensor<2x8xf32> -> tensor<2x8xf8E4M3FN>
  %r2 = kiln.div %h, %s : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %n = kiln.round %r2 : tensor<2x8xf32>
  %c7 = kiln.constant dense<7.0> : tensor<f32>
  %z = kiln.add %n, %c7 : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %nan = kiln.is_nan %z : tensor<2x8xf32> -> tensor<2x8xi1>
  %low = kiln.constant dense<-128.0> : tensor<f32>
  %g = kiln.where %nan, %low, %z : (tensor<2x8xi1>, tensor<f32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %i = kiln.cast %g : tensor<2x8xf32> -> tensor<2x8xi8>
  %c131 = kiln.constant dense<131.0> : tensor<f32>
  %z2 = kiln.add %n, %c131 : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %u = kiln.cast %z2 : tensor<2x8xf32> -> tensor<2x8xui8>
  return %q, %i, %u : tensor<2x8xf8E4M3FN>, tensor<2x8xi8>, tensor<2x8xui8>
}

// -----

// MatMulInteger's and ConvInteger's product (the fp32 sum of 8-bit
// differences, cast to int32, here through a view) is the integer-product
// island: in f16 the sums round past 2048 and overflow past 65504. No
// --disable-fp32-islands name turns it off (OFF keeps it too).
// CHECK-LABEL: func @integer_product
// CHECK: %[[P:.*]] = kiln.matmul %{{.*}}, %{{.*}} {kiln.fp32 = "integer-product"} : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
// CHECK: %[[V:.*]] = kiln.reshape %[[P]] {kiln.fp32 = "integer-product"} : tensor<2x4xf32> -> tensor<8xf32>
// CHECK: kiln.cast %[[V]] : tensor<8xf32> -> tensor<8xi32>
// OFF-LABEL: func @integer_product
// OFF: kiln.matmul %{{.*}}, %{{.*}} {kiln.fp32 = "integer-product"}
func.func @integer_product(%a: tensor<2x8xui8>, %z: tensor<ui8>, %b: tensor<8x4xi8>) -> tensor<8xi32> {
  %af = kiln.cast %a : tensor<2x8xui8> -> tensor<2x8xf32>
  %zf = kiln.cast %z : tensor<ui8> -> tensor<f32>
  %d = kiln.sub %af, %zf : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %bf = kiln.cast %b : tensor<8x4xi8> -> tensor<8x4xf32>
  %p = kiln.matmul %d, %bf : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  %v = kiln.reshape %p : tensor<2x4xf32> -> tensor<8xf32>
  %i = kiln.cast %v : tensor<8xf32> -> tensor<8xi32>
  return %i : tensor<8xi32>
}

// -----

// QLinearMatMul's product: 8-bit differences (an activation less its zero
// point, packed weights dequantized with scales of 1) requantized, not cast
// to int32. The operands make it an integer product: in f16 a BERT's sums
// of 8-bit products past 2048 lose their whole numbers and the
// requantized bytes flip.
// CHECK-LABEL: func @integer_product_requantized
// CHECK: kiln.matmul %{{.*}}, %{{.*}} {kiln.fp32 = "integer-product", transpose_rhs = true} : (tensor<2x8xf32>, tensor<4x8xf32>) -> tensor<2x4xf32>
func.func @integer_product_requantized(%a: tensor<2x8xui8>, %q: tensor<4x1x8xui8>) -> tensor<2x4xi8> {
  %af = kiln.cast %a : tensor<2x8xui8> -> tensor<2x8xf32>
  %za = kiln.constant dense<128.0> : tensor<f32>
  %d = kiln.sub %af, %za : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %ones = kiln.constant dense<1.0> : tensor<4x1xf32>
  %w = kiln.dequantize %q, %ones {bits = 8 : i64, block_size = 8 : i64} : (tensor<4x1x8xui8>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %p = kiln.matmul %d, %w {transpose_rhs = true} : (tensor<2x8xf32>, tensor<4x8xf32>) -> tensor<2x4xf32>
  %m = kiln.constant dense<0.002> : tensor<f32>
  %r = kiln.mul %p, %m : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %n = kiln.round %r : tensor<2x4xf32>
  %i = kiln.cast %n : tensor<2x4xf32> -> tensor<2x4xi8>
  return %i : tensor<2x4xi8>
}

// -----

// The same with the packed weights' scales of 1 a blob (one a column, as the
// importer stores a QLinearMatMul's per-column weights past 16 columns), not
// a splat: in f16 a full-width product's sums overflowed (rel-L2 3.5,
// mixed-precision-semantics.test).
// CHECK-LABEL: func @integer_product_ones_in_a_blob
// CHECK: kiln.matmul %{{.*}}, %{{.*}} {kiln.fp32 = "integer-product", transpose_rhs = true} : (tensor<2x8xf32>, tensor<4x8xf32>) -> tensor<2x4xf32>
func.func @integer_product_ones_in_a_blob(%a: tensor<2x8xui8>, %q: tensor<4x1x8xui8>) -> tensor<2x4xi8> {
  %af = kiln.cast %a : tensor<2x8xui8> -> tensor<2x8xf32>
  %za = kiln.constant dense<128.0> : tensor<f32>
  %d = kiln.sub %af, %za : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %ones = kiln.constant dense_resource<ones> : tensor<4x1xf32>
  %w = kiln.dequantize %q, %ones {bits = 8 : i64, block_size = 8 : i64} : (tensor<4x1x8xui8>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %p = kiln.matmul %d, %w {transpose_rhs = true} : (tensor<2x8xf32>, tensor<4x8xf32>) -> tensor<2x4xf32>
  %m = kiln.constant dense<0.002> : tensor<f32>
  %r = kiln.mul %p, %m : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %n = kiln.round %r : tensor<2x4xf32>
  %i = kiln.cast %n : tensor<2x4xf32> -> tensor<2x4xi8>
  return %i : tensor<2x4xi8>
}

{-#
  dialect_resources: {
    builtin: {
      ones: "0x040000000000803F0000803F0000803F0000803F"
    }
  }
#-}

// -----

// negative_: a blob of scales with one that is not 1 (2.0, the last) scales
// the weights: no whole numbers, the product computes in f16.
// CHECK-LABEL: func @negative_integer_product_scales_in_a_blob
// CHECK: kiln.matmul %{{.*}}, %{{.*}} {transpose_rhs = true} : (tensor<2x8xf16>, tensor<4x8xf16>) -> tensor<2x4xf16>
func.func @negative_integer_product_scales_in_a_blob(%a: tensor<2x8xui8>, %q: tensor<4x1x8xui8>) -> tensor<2x4xf32> {
  %af = kiln.cast %a : tensor<2x8xui8> -> tensor<2x8xf32>
  %za = kiln.constant dense<128.0> : tensor<f32>
  %d = kiln.sub %af, %za : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %scales = kiln.constant dense_resource<scales> : tensor<4x1xf32>
  %w = kiln.dequantize %q, %scales {bits = 8 : i64, block_size = 8 : i64} : (tensor<4x1x8xui8>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %p = kiln.matmul %d, %w {transpose_rhs = true} : (tensor<2x8xf32>, tensor<4x8xf32>) -> tensor<2x4xf32>
  return %p : tensor<2x4xf32>
}

{-#
  dialect_resources: {
    builtin: {
      scales: "0x040000000000803F0000803F0000803F00000040"
    }
  }
#-}

// -----

// QLinearMatMul as kiln-recompose leaves it for the integer GEMM: dequantized
// 8-bit activations (scale 2) by 8-bit weights whose scales are the
// requantizing multipliers, the result only requantized (here through a
// slice, as Q, K and V packed into one product are). The product and the
// weights' dequantize stay f32, so that the integer GEMM scales its exact
// sums by the f32 multipliers and the requantized bytes are onnxruntime's.
// CHECK-LABEL: func @integer_product_requantized_qdq
// CHECK: kiln.dequantize %{{.*}}, %{{.*}} {bits = 8 : i64, block_size = 8 : i64, kiln.fp32 = "integer-product"} : (tensor<4x1x8xui8>, tensor<4x1xf32>) -> tensor<4x8xf32>
// CHECK: kiln.matmul %{{.*}}, %{{.*}} {kiln.fp32 = "integer-product", transpose_rhs = true} : (tensor<2x8xf32>, tensor<4x8xf32>) -> tensor<2x4xf32>
func.func @integer_product_requantized_qdq(%a: tensor<2x8xui8>, %q: tensor<4x1x8xui8>) -> tensor<2x2xi8> {
  %af = kiln.cast %a : tensor<2x8xui8> -> tensor<2x8xf32>
  %za = kiln.constant dense<128.0> : tensor<f32>
  %d = kiln.sub %af, %za : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %two = kiln.constant dense<2.0> : tensor<f32>
  %x = kiln.mul %d, %two : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %s = kiln.constant dense<[[0.00125], [0.0025], [0.001], [0.003]]> : tensor<4x1xf32>
  %w = kiln.dequantize %q, %s {bits = 8 : i64, block_size = 8 : i64} : (tensor<4x1x8xui8>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %p = kiln.matmul %x, %w {transpose_rhs = true} : (tensor<2x8xf32>, tensor<4x8xf32>) -> tensor<2x4xf32>
  %h = kiln.slice %p {starts = array<i64: 0, 2>, strides = array<i64: 1, 1>} : tensor<2x4xf32> -> tensor<2x2xf32>
  %n = kiln.round %h : tensor<2x2xf32>
  %i = kiln.cast %n : tensor<2x2xf32> -> tensor<2x2xi8>
  return %i : tensor<2x2xi8>
}

// -----

// negative_: the same product also read as floats (a Q/DQ graph's product
// going on to a float op) is the low type's.
// CHECK-LABEL: func @negative_integer_product_requantized_and_float
// CHECK: kiln.matmul %{{.*}}, %{{.*}} {transpose_rhs = true} : (tensor<2x8xf16>, tensor<4x8xf16>) -> tensor<2x4xf16>
func.func @negative_integer_product_requantized_and_float(%a: tensor<2x8xui8>, %q: tensor<4x1x8xui8>) -> (tensor<2x4xi8>, tensor<2x4xf32>) {
  %af = kiln.cast %a : tensor<2x8xui8> -> tensor<2x8xf32>
  %za = kiln.constant dense<128.0> : tensor<f32>
  %d = kiln.sub %af, %za : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %two = kiln.constant dense<2.0> : tensor<f32>
  %x = kiln.mul %d, %two : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %s = kiln.constant dense<[[0.00125], [0.0025], [0.001], [0.003]]> : tensor<4x1xf32>
  %w = kiln.dequantize %q, %s {bits = 8 : i64, block_size = 8 : i64} : (tensor<4x1x8xui8>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %p = kiln.matmul %x, %w {transpose_rhs = true} : (tensor<2x8xf32>, tensor<4x8xf32>) -> tensor<2x4xf32>
  %n = kiln.round %p : tensor<2x4xf32>
  %i = kiln.cast %n : tensor<2x4xf32> -> tensor<2x4xi8>
  %e = kiln.exp %p : tensor<2x4xf32>
  return %i, %e : tensor<2x4xi8>, tensor<2x4xf32>
}

// -----

// negative_: a product of 8-bit differences scaled first (a Q/DQ graph's
// dequantized activations) holds no whole numbers: it computes in f16.
// CHECK-LABEL: func @negative_integer_product_scaled
// CHECK: kiln.matmul %{{.*}}, %{{.*}} {transpose_rhs = true} : (tensor<2x8xf16>, tensor<4x8xf16>) -> tensor<2x4xf16>
func.func @negative_integer_product_scaled(%a: tensor<2x8xui8>, %q: tensor<4x1x8xui8>, %s: tensor<4x1xf32>) -> tensor<2x4xf32> {
  %af = kiln.cast %a : tensor<2x8xui8> -> tensor<2x8xf32>
  %za = kiln.constant dense<128.0> : tensor<f32>
  %d = kiln.sub %af, %za : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %sa = kiln.constant dense<0.05> : tensor<f32>
  %x = kiln.mul %d, %sa : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %w = kiln.dequantize %q, %s {bits = 8 : i64, block_size = 8 : i64} : (tensor<4x1x8xui8>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %p = kiln.matmul %x, %w {transpose_rhs = true} : (tensor<2x8xf32>, tensor<4x8xf32>) -> tensor<2x4xf32>
  return %p : tensor<2x4xf32>
}

// -----

// negative_: a float product (not of 8-bit values) that also feeds a float
// op is not an integer product, though it is cast to int32 too; it computes
// in f16.
// CHECK-LABEL: func @negative_integer_product_also_float
// CHECK: %[[P:.*]] = kiln.matmul %{{.*}}, %{{.*}} : (tensor<2x8xf16>, tensor<8x4xf16>) -> tensor<2x4xf16>
// CHECK-NEXT: kiln.cast %[[P]] : tensor<2x4xf16> -> tensor<2x4xi32>
func.func @negative_integer_product_also_float(%a: tensor<2x8xf32>, %b: tensor<8x4xf32>) -> (tensor<2x4xi32>, tensor<2x4xf32>) {
  %p = kiln.matmul %a, %b : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  %i = kiln.cast %p : tensor<2x4xf32> -> tensor<2x4xi32>
  %e = kiln.exp %p : tensor<2x4xf32>
  return %i, %e : tensor<2x4xi32>, tensor<2x4xf32>
}

// -----

// A product of 8-bit values stays f32 whatever else reads it: its sums
// are whole numbers that overflow f16 past 65504.
// CHECK-LABEL: func @integer_product_also_float
// CHECK: kiln.matmul %{{.*}}, %{{.*}} {kiln.fp32 = "integer-product"} : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
func.func @integer_product_also_float(%a: tensor<2x8xui8>, %b: tensor<8x4xi8>) -> (tensor<2x4xi32>, tensor<2x4xf32>) {
  %af = kiln.cast %a : tensor<2x8xui8> -> tensor<2x8xf32>
  %bf = kiln.cast %b : tensor<8x4xi8> -> tensor<8x4xf32>
  %p = kiln.matmul %af, %bf : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  %i = kiln.cast %p : tensor<2x4xf32> -> tensor<2x4xi32>
  %e = kiln.exp %p : tensor<2x4xf32>
  return %i, %e : tensor<2x4xi32>, tensor<2x4xf32>
}

// -----

// negative_: a value that also feeds something other than the quantizing
// cast is not an island: it computes in the low type as its other user
// does.
// CHECK-LABEL: func @negative_shared_quantize
// CHECK: %[[R:.*]] = kiln.div %{{.*}}, %{{.*}} : (tensor<2x8xf16>, tensor<f16>) -> tensor<2x8xf16>
// CHECK-NOT: "quantize"
func.func @negative_shared_quantize(%x: tensor<2x8xf32>, %w: tensor<8x8xf32>) -> (tensor<2x8xf8E4M3FN>, tensor<2x8xf32>) {
  %h = kiln.matmul %x, %w : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
  %s = kiln.constant dense<0.01> : tensor<f32>
  %r = kiln.div %h, %s : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %q = kiln.cast %r : tensor<2x8xf32> -> tensor<2x8xf8E4M3FN>
  %e = kiln.exp %r : tensor<2x8xf32>
  return %q, %e : tensor<2x8xf8E4M3FN>, tensor<2x8xf32>
}

// -----

// A dequantize of float8 weights converts as one of integers does: its
// scales with it, so that the 16-bit product reads its result (float8
// bytes are storage, not the model's own 16-bit computation).
// CHECK-LABEL: func @dequantize_float8
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x32xf32> {kiln.fp32 = "keep-io-types"}, %[[Q:[^:]*]]: tensor<8x1x32xf8E4M3FN>, %[[S:[^:]*]]: tensor<8x1xf32>
// CHECK: %[[X16:.*]] = kiln.cast %[[X]] : tensor<2x32xf32> -> tensor<2x32xf16>
// CHECK: %[[S16:.*]] = kiln.cast %[[S]] : tensor<8x1xf32> -> tensor<8x1xf16>
// CHECK: %[[W:.*]] = kiln.dequantize %[[Q]], %[[S16]] {bits = 8 : i64, block_size = 32 : i64} : (tensor<8x1x32xf8E4M3FN>, tensor<8x1xf16>) -> tensor<8x32xf16>
// CHECK: kiln.matmul %[[X16]], %[[W]] {transpose_rhs = true} : (tensor<2x32xf16>, tensor<8x32xf16>) -> tensor<2x8xf16>
func.func @dequantize_float8(%x: tensor<2x32xf32>, %q: tensor<8x1x32xf8E4M3FN>, %s: tensor<8x1xf32>) -> tensor<2x8xf32> {
  %w = kiln.dequantize %q, %s {bits = 8 : i64, block_size = 32 : i64} : (tensor<8x1x32xf8E4M3FN>, tensor<8x1xf32>) -> tensor<8x32xf32>
  %h = kiln.matmul %x, %w {transpose_rhs = true} : (tensor<2x32xf32>, tensor<8x32xf32>) -> tensor<2x8xf32>
  return %h : tensor<2x8xf32>
}

// -----

/// A model's own f16 ops are its choice: nothing changes, not even its
/// f16 softmax.
// CHECK-LABEL: func @negative_own_fp16
// CHECK-NOT: kiln.cast
// CHECK: kiln.matmul %arg0, %arg1 : (tensor<2x8xf16>, tensor<8x8xf16>) -> tensor<2x8xf16>
// CHECK: kiln.softmax %{{.*}} {axis = 1 : i64} : tensor<2x8xf16>
func.func @negative_own_fp16(%x: tensor<2x8xf16>, %w: tensor<8x8xf16>) -> tensor<2x8xf16> {
  %h = kiln.matmul %x, %w : (tensor<2x8xf16>, tensor<8x8xf16>) -> tensor<2x8xf16>
  %p = kiln.softmax %h {axis = 1 : i64} : tensor<2x8xf16>
  return %p : tensor<2x8xf16>
}

// -----

// A KV cache kept in place (kiln-cache-in-place) is one storage for its
// input and output: without keep-io-types they stay f32 all the same,
// while the other input becomes bf16.
// BF16-LABEL: func @cache_in_place
// BF16-SAME: %[[CACHE:.*]]: tensor<1x8x4xf32> {kiln.fp32 = "kv-cache-in-place"}, %[[X:.*]]: tensor<1x2x4xbf16>
// BF16-SAME: -> (tensor<1x8x4xf32> {kiln.fp32 = "kv-cache-in-place"}, tensor<1x2x4xbf16>)
// BF16: %[[U:.*]] = kiln.update_slice %[[CACHE]], %{{.*}} {axis = 1 : i64, kiln.fp32 = "unconverted", offset = "3"} : (tensor<1x8x4xf32>, tensor<1x2x4xf32>) -> tensor<1x8x4xf32>
// BF16: return %[[U]], %{{.*}} : tensor<1x8x4xf32>, tensor<1x2x4xbf16>
func.func @cache_in_place(%cache: tensor<1x8x4xf32>, %x: tensor<1x2x4xf32>) -> (tensor<1x8x4xf32>, tensor<1x2x4xf32>) {
  %r = kiln.relu %x : tensor<1x2x4xf32>
  %u = kiln.update_slice %cache, %r {axis = 1 : i64, offset = "3"} : (tensor<1x8x4xf32>, tensor<1x2x4xf32>) -> tensor<1x8x4xf32>
  return %u, %r : tensor<1x8x4xf32>, tensor<1x2x4xf32>
}
