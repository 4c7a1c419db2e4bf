// RUN: kiln-opt %s -split-input-file -kiln-recompose -canonicalize | FileCheck %s
// Semantics: recompose-semantics.test runs each positive form.

// The TorchScript BERT form: keys transposed to [b, h, d, s] for the scores,
// a scalar scale multiplied in, an additive mask broadcast over heads.
// CHECK-LABEL: func @bert_form
// CHECK: %[[K:.*]] = kiln.transpose %arg1 {permutation = array<i64: 0, 2, 1, 3>}
// CHECK: %[[O:.*]] = kiln.attention %arg0, %[[K]], %arg2, %arg3 {scale = 2.500000e-01 : f32}
// CHECK-NOT: kiln.softmax
// CHECK: return %[[O]]
func.func @bert_form(%q: tensor<2x4x8x16xf32>, %k: tensor<2x8x4x16xf32>, %v: tensor<2x4x8x16xf32>, %m: tensor<2x1x8x8xf32>) -> tensor<2x4x8x16xf32> {
  %kt = kiln.transpose %k {permutation = array<i64: 0, 2, 3, 1>} : tensor<2x8x4x16xf32> -> tensor<2x4x16x8xf32>
  %s = kiln.matmul %q, %kt : (tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x8x8xf32>
  %c = kiln.constant dense<2.500000e-01> : tensor<f32>
  %x = kiln.mul %s, %c : (tensor<2x4x8x8xf32>, tensor<f32>) -> tensor<2x4x8x8xf32>
  %a = kiln.add %x, %m : (tensor<2x4x8x8xf32>, tensor<2x1x8x8xf32>) -> tensor<2x4x8x8xf32>
  %p = kiln.softmax %a {axis = 3 : i64} : tensor<2x4x8x8xf32>
  %o = kiln.matmul %p, %v : (tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  return %o : tensor<2x4x8x16xf32>
}

// -----

// Kiln's own importer form: transpose_rhs, the scale divided out of the
// queries and the keys each (sqrt(d) twice), the mask first in the add.
// CHECK-LABEL: func @importer_form
// CHECK: kiln.attention %arg0, %arg1, %arg2, %arg3 {scale = 6.250000e-02 : f32}
func.func @importer_form(%q: tensor<1x2x5x16xf32>, %k: tensor<1x2x7x16xf32>, %v: tensor<1x2x7x4xf32>, %m: tensor<5x7xf32>) -> tensor<1x2x5x4xf32> {
  %c = kiln.constant dense<4.000000e+00> : tensor<f32>
  %qs = kiln.div %q, %c : (tensor<1x2x5x16xf32>, tensor<f32>) -> tensor<1x2x5x16xf32>
  %ks = kiln.div %k, %c : (tensor<1x2x7x16xf32>, tensor<f32>) -> tensor<1x2x7x16xf32>
  %s = kiln.matmul %qs, %ks {transpose_rhs = true} : (tensor<1x2x5x16xf32>, tensor<1x2x7x16xf32>) -> tensor<1x2x5x7xf32>
  %a = kiln.add %m, %s : (tensor<5x7xf32>, tensor<1x2x5x7xf32>) -> tensor<1x2x5x7xf32>
  %p = kiln.softmax %a {axis = 3 : i64} : tensor<1x2x5x7xf32>
  %o = kiln.matmul %p, %v : (tensor<1x2x5x7xf32>, tensor<1x2x7x4xf32>) -> tensor<1x2x5x4xf32>
  return %o : tensor<1x2x5x4xf32>
}

// -----

// GPT-2's causal select against the float's lowest value becomes an additive
// mask; the keys broadcast over the query heads (multi-query attention).
// CHECK-LABEL: func @select_mask_mqa
// CHECK: %[[M:.*]] = kiln.where %arg3, %{{.*}}, %{{.*}} : (tensor<6x6xi1>, tensor<f32>, tensor<f32>) -> tensor<6x6xf32>
// CHECK: kiln.attention %arg0, %arg1, %arg2, %[[M]] {scale = 1.000000e+00 : f32} : (tensor<2x4x6x8xf32>, tensor<2x1x6x8xf32>, tensor<2x1x6x8xf32>, tensor<6x6xf32>)
func.func @select_mask_mqa(%q: tensor<2x4x6x8xf32>, %k: tensor<2x1x6x8xf32>, %v: tensor<2x1x6x8xf32>, %causal: tensor<6x6xi1>) -> tensor<2x4x6x8xf32> {
  %s = kiln.matmul %q, %k {transpose_rhs = true} : (tensor<2x4x6x8xf32>, tensor<2x1x6x8xf32>) -> tensor<2x4x6x6xf32>
  %low = kiln.constant dense<-3.40282347E+38> : tensor<f32>
  %w = kiln.where %causal, %s, %low : (tensor<6x6xi1>, tensor<2x4x6x6xf32>, tensor<f32>) -> tensor<2x4x6x6xf32>
  %p = kiln.softmax %w {axis = 3 : i64} : tensor<2x4x6x6xf32>
  %o = kiln.matmul %p, %v : (tensor<2x4x6x6xf32>, tensor<2x1x6x8xf32>) -> tensor<2x4x6x8xf32>
  return %o : tensor<2x4x6x8xf32>
}

// -----

// A one-element (rank-1) scale, as opset-11 exports write it.
// CHECK-LABEL: func @one_element_scale
// CHECK: kiln.attention %arg0, %{{.*}}, %arg2 {scale = 5.000000e-01 : f32}
func.func @one_element_scale(%q: tensor<1x2x3x4xf32>, %kt: tensor<1x2x4x3xf32>, %v: tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32> {
  %s = kiln.matmul %q, %kt : (tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x3x3xf32>
  %c = kiln.constant dense<2.000000e+00> : tensor<1xf32>
  %d = kiln.div %s, %c : (tensor<1x2x3x3xf32>, tensor<1xf32>) -> tensor<1x2x3x3xf32>
  %p = kiln.softmax %d {axis = 3 : i64} : tensor<1x2x3x3xf32>
  %o = kiln.matmul %p, %v : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  return %o : tensor<1x2x3x4xf32>
}

// -----

// negative_: a scale that broadcasts the scores to a larger shape.
// CHECK-LABEL: func @negative_broadcasting_scale
// CHECK-NOT: kiln.attention
func.func @negative_broadcasting_scale(%q: tensor<1x1x4x8xf32>, %k: tensor<1x1x4x8xf32>, %v: tensor<1x1x4x8xf32>) -> tensor<2x1x4x8xf32> {
  %s = kiln.matmul %q, %k {transpose_rhs = true} : (tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<1x1x4x4xf32>
  %c = kiln.constant dense<5.000000e-01> : tensor<2x1x1x1xf32>
  %x = kiln.mul %s, %c : (tensor<1x1x4x4xf32>, tensor<2x1x1x1xf32>) -> tensor<2x1x4x4xf32>
  %p = kiln.softmax %x {axis = 3 : i64} : tensor<2x1x4x4xf32>
  %o = kiln.matmul %p, %v : (tensor<2x1x4x4xf32>, tensor<1x1x4x8xf32>) -> tensor<2x1x4x8xf32>
  return %o : tensor<2x1x4x8xf32>
}

// -----

// negative_: the probabilities are also an output.
// CHECK-LABEL: func @negative_probs_used_twice
// CHECK-NOT: kiln.attention
// CHECK: kiln.softmax
func.func @negative_probs_used_twice(%q: tensor<1x1x4x8xf32>, %k: tensor<1x1x4x8xf32>, %v: tensor<1x1x4x8xf32>) -> (tensor<1x1x4x8xf32>, tensor<1x1x4x4xf32>) {
  %s = kiln.matmul %q, %k {transpose_rhs = true} : (tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<1x1x4x4xf32>
  %p = kiln.softmax %s {axis = 3 : i64} : tensor<1x1x4x4xf32>
  %o = kiln.matmul %p, %v : (tensor<1x1x4x4xf32>, tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32>
  return %o, %p : tensor<1x1x4x8xf32>, tensor<1x1x4x4xf32>
}

// -----

// negative_: a select against -10000 is not an additive mask (a fully masked
// row would differ), so it stays.
// CHECK-LABEL: func @negative_finite_fill
// CHECK-NOT: kiln.attention
func.func @negative_finite_fill(%q: tensor<1x1x4x8xf32>, %k: tensor<1x1x4x8xf32>, %v: tensor<1x1x4x8xf32>, %c: tensor<4x4xi1>) -> tensor<1x1x4x8xf32> {
  %s = kiln.matmul %q, %k {transpose_rhs = true} : (tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<1x1x4x4xf32>
  %fill = kiln.constant dense<-1.000000e+04> : tensor<f32>
  %w = kiln.where %c, %s, %fill : (tensor<4x4xi1>, tensor<1x1x4x4xf32>, tensor<f32>) -> tensor<1x1x4x4xf32>
  %p = kiln.softmax %w {axis = 3 : i64} : tensor<1x1x4x4xf32>
  %o = kiln.matmul %p, %v : (tensor<1x1x4x4xf32>, tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32>
  return %o : tensor<1x1x4x8xf32>
}

// -----

// negative_: softmax over another axis than the keys.
// CHECK-LABEL: func @negative_softmax_axis
// CHECK-NOT: kiln.attention
func.func @negative_softmax_axis(%q: tensor<1x1x4x8xf32>, %k: tensor<1x1x4x8xf32>, %v: tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32> {
  %s = kiln.matmul %q, %k {transpose_rhs = true} : (tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<1x1x4x4xf32>
  %p = kiln.softmax %s {axis = 2 : i64} : tensor<1x1x4x4xf32>
  %o = kiln.matmul %p, %v : (tensor<1x1x4x4xf32>, tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32>
  return %o : tensor<1x1x4x8xf32>
}

// -----

// negative_: a scale that is a tensor, not a scalar constant.
// CHECK-LABEL: func @negative_tensor_scale
// CHECK-NOT: kiln.attention
func.func @negative_tensor_scale(%q: tensor<1x1x4x8xf32>, %k: tensor<1x1x4x8xf32>, %v: tensor<1x1x4x8xf32>, %t: tensor<4xf32>) -> tensor<1x1x4x8xf32> {
  %s = kiln.matmul %q, %k {transpose_rhs = true} : (tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<1x1x4x4xf32>
  %x = kiln.mul %s, %t : (tensor<1x1x4x4xf32>, tensor<4xf32>) -> tensor<1x1x4x4xf32>
  %p = kiln.softmax %x {axis = 3 : i64} : tensor<1x1x4x4xf32>
  %o = kiln.matmul %p, %v : (tensor<1x1x4x4xf32>, tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32>
  return %o : tensor<1x1x4x8xf32>
}

// -----

// negative_: 3-D (heads folded into the batch) is not matched.
// CHECK-LABEL: func @negative_rank3
// CHECK-NOT: kiln.attention
func.func @negative_rank3(%q: tensor<8x4x16xf32>, %k: tensor<8x4x16xf32>, %v: tensor<8x4x16xf32>) -> tensor<8x4x16xf32> {
  %s = kiln.matmul %q, %k {transpose_rhs = true} : (tensor<8x4x16xf32>, tensor<8x4x16xf32>) -> tensor<8x4x4xf32>
  %p = kiln.softmax %s {axis = 2 : i64} : tensor<8x4x4xf32>
  %o = kiln.matmul %p, %v : (tensor<8x4x4xf32>, tensor<8x4x16xf32>) -> tensor<8x4x16xf32>
  return %o : tensor<8x4x16xf32>
}

// -----

// LayerNorm before opset 17: Pow form, with scale and shift.
// CHECK-LABEL: func @layer_norm_pow
// CHECK: %[[N:.*]] = kiln.layer_norm %arg0, %arg1, %arg2 {axis = 2 : i64, epsilon = 9.99999996E-13 : f32}
// CHECK-NOT: kiln.reduce_mean
// CHECK: return %[[N]]
func.func @layer_norm_pow(%x: tensor<2x8x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>) -> tensor<2x8x32xf32> {
  %m = kiln.reduce_mean %x {axes = array<i64: 2>, keepdims = true} : tensor<2x8x32xf32> -> tensor<2x8x1xf32>
  %d = kiln.sub %x, %m : (tensor<2x8x32xf32>, tensor<2x8x1xf32>) -> tensor<2x8x32xf32>
  %two = kiln.constant dense<2.000000e+00> : tensor<f32>
  %sq = kiln.pow %d, %two : (tensor<2x8x32xf32>, tensor<f32>) -> tensor<2x8x32xf32>
  %v = kiln.reduce_mean %sq {axes = array<i64: 2>, keepdims = true} : tensor<2x8x32xf32> -> tensor<2x8x1xf32>
  %eps = kiln.constant dense<9.99999996E-13> : tensor<f32>
  %ve = kiln.add %v, %eps : (tensor<2x8x1xf32>, tensor<f32>) -> tensor<2x8x1xf32>
  %s = kiln.sqrt %ve : tensor<2x8x1xf32>
  %n = kiln.div %d, %s : (tensor<2x8x32xf32>, tensor<2x8x1xf32>) -> tensor<2x8x32xf32>
  %y = kiln.mul %n, %g : (tensor<2x8x32xf32>, tensor<32xf32>) -> tensor<2x8x32xf32>
  %z = kiln.add %y, %b : (tensor<2x8x32xf32>, tensor<32xf32>) -> tensor<2x8x32xf32>
  return %z : tensor<2x8x32xf32>
}

// -----

// Mul form over the last two dims, no scale or shift: unit scale.
// CHECK-LABEL: func @layer_norm_mul_two_axes
// CHECK: %[[ONES:.*]] = kiln.constant dense<1.000000e+00> : tensor<3x4xf32>
// CHECK: kiln.layer_norm %arg0, %[[ONES]] {axis = 1 : i64, epsilon = 9.99999974E-6 : f32}
func.func @layer_norm_mul_two_axes(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %m = kiln.reduce_mean %x {axes = array<i64: 1, 2>, keepdims = true} : tensor<2x3x4xf32> -> tensor<2x1x1xf32>
  %d = kiln.sub %x, %m : (tensor<2x3x4xf32>, tensor<2x1x1xf32>) -> tensor<2x3x4xf32>
  %sq = kiln.mul %d, %d : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %v = kiln.reduce_mean %sq {axes = array<i64: 1, 2>, keepdims = true} : tensor<2x3x4xf32> -> tensor<2x1x1xf32>
  %eps = kiln.constant dense<9.99999974E-6> : tensor<f32>
  %ve = kiln.add %eps, %v : (tensor<f32>, tensor<2x1x1xf32>) -> tensor<2x1x1xf32>
  %s = kiln.sqrt %ve : tensor<2x1x1xf32>
  %n = kiln.div %d, %s : (tensor<2x3x4xf32>, tensor<2x1x1xf32>) -> tensor<2x3x4xf32>
  return %n : tensor<2x3x4xf32>
}

// -----

// negative_: normalized over a leading axis, which kiln.layer_norm does not
// express.
// CHECK-LABEL: func @negative_layer_norm_leading_axis
// CHECK-NOT: kiln.layer_norm
func.func @negative_layer_norm_leading_axis(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %m = kiln.reduce_mean %x {axes = array<i64: 0>, keepdims = true} : tensor<4x8xf32> -> tensor<1x8xf32>
  %d = kiln.sub %x, %m : (tensor<4x8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
  %sq = kiln.mul %d, %d : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %v = kiln.reduce_mean %sq {axes = array<i64: 0>, keepdims = true} : tensor<4x8xf32> -> tensor<1x8xf32>
  %eps = kiln.constant dense<1.0E-5> : tensor<f32>
  %ve = kiln.add %v, %eps : (tensor<1x8xf32>, tensor<f32>) -> tensor<1x8xf32>
  %s = kiln.sqrt %ve : tensor<1x8xf32>
  %n = kiln.div %d, %s : (tensor<4x8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
  return %n : tensor<4x8xf32>
}

// -----

// negative_: the centered values are also an output.
// CHECK-LABEL: func @negative_layer_norm_centered_used
// CHECK-NOT: kiln.layer_norm
// CHECK-NOT: kiln.rms_norm
func.func @negative_layer_norm_centered_used(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %m = kiln.reduce_mean %x {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %d = kiln.sub %x, %m : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %sq = kiln.mul %d, %d : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %v = kiln.reduce_mean %sq {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %eps = kiln.constant dense<1.0E-5> : tensor<f32>
  %ve = kiln.add %v, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %s = kiln.sqrt %ve : tensor<4x1xf32>
  %n = kiln.div %d, %s : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  return %n, %d : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// A softcap between the scale and the mask (ONNX Attention's and
// GroupQueryAttention's softcap as Kiln imports it): c * tanh(s / c).
// CHECK-LABEL: func @softcap_form
// CHECK: kiln.attention %arg0, %arg1, %arg2, %arg3 {scale = 2.500000e-01 : f32, softcap = 5.000000e+00 : f32}
// CHECK-NOT: kiln.tanh
func.func @softcap_form(%q: tensor<1x2x5x16xf32>, %k: tensor<1x2x7x16xf32>, %v: tensor<1x2x7x4xf32>, %m: tensor<5x7xf32>) -> tensor<1x2x5x4xf32> {
  %s = kiln.matmul %q, %k {transpose_rhs = true} : (tensor<1x2x5x16xf32>, tensor<1x2x7x16xf32>) -> tensor<1x2x5x7xf32>
  %c = kiln.constant dense<2.500000e-01> : tensor<f32>
  %x = kiln.mul %s, %c : (tensor<1x2x5x7xf32>, tensor<f32>) -> tensor<1x2x5x7xf32>
  %cap = kiln.constant dense<5.000000e+00> : tensor<f32>
  %r = kiln.div %x, %cap : (tensor<1x2x5x7xf32>, tensor<f32>) -> tensor<1x2x5x7xf32>
  %t = kiln.tanh %r : tensor<1x2x5x7xf32>
  %y = kiln.mul %t, %cap : (tensor<1x2x5x7xf32>, tensor<f32>) -> tensor<1x2x5x7xf32>
  %a = kiln.add %y, %m : (tensor<1x2x5x7xf32>, tensor<5x7xf32>) -> tensor<1x2x5x7xf32>
  %p = kiln.softmax %a {axis = 3 : i64} : tensor<1x2x5x7xf32>
  %o = kiln.matmul %p, %v : (tensor<1x2x5x7xf32>, tensor<1x2x7x4xf32>) -> tensor<1x2x5x4xf32>
  return %o : tensor<1x2x5x4xf32>
}

// -----

/// tanh of the scores divided by one constant and multiplied by another is no
/// softcap: left alone.
// CHECK-LABEL: func @negative_softcap_mismatched
// CHECK-NOT: kiln.attention
// CHECK: kiln.tanh
// CHECK: kiln.softmax
func.func @negative_softcap_mismatched(%q: tensor<1x2x5x16xf32>, %k: tensor<1x2x7x16xf32>, %v: tensor<1x2x7x4xf32>) -> tensor<1x2x5x4xf32> {
  %s = kiln.matmul %q, %k {transpose_rhs = true} : (tensor<1x2x5x16xf32>, tensor<1x2x7x16xf32>) -> tensor<1x2x5x7xf32>
  %d = kiln.constant dense<5.000000e+00> : tensor<f32>
  %e = kiln.constant dense<3.000000e+00> : tensor<f32>
  %r = kiln.div %s, %d : (tensor<1x2x5x7xf32>, tensor<f32>) -> tensor<1x2x5x7xf32>
  %t = kiln.tanh %r : tensor<1x2x5x7xf32>
  %y = kiln.mul %t, %e : (tensor<1x2x5x7xf32>, tensor<f32>) -> tensor<1x2x5x7xf32>
  %p = kiln.softmax %y {axis = 3 : i64} : tensor<1x2x5x7xf32>
  %o = kiln.matmul %p, %v : (tensor<1x2x5x7xf32>, tensor<1x2x7x4xf32>) -> tensor<1x2x5x4xf32>
  return %o : tensor<1x2x5x4xf32>
}

// -----

// An attention sink as the importer writes it (GroupQueryAttention's
// head_sink from an initializer): softmax over the scores joined by one
// logit per head, sliced back to the keys.
// CHECK-LABEL: func @sink_form
// CHECK: kiln.attention %arg0, %arg1, %arg2 {scale = 2.500000e-01 : f32, sink = array<f32: 5.000000e-01, -1.000000e+00>}
// CHECK-NOT: kiln.softmax
func.func @sink_form(%q: tensor<1x2x5x16xf32>, %k: tensor<1x2x7x16xf32>, %v: tensor<1x2x7x4xf32>) -> tensor<1x2x5x4xf32> {
  %s = kiln.matmul %q, %k {transpose_rhs = true} : (tensor<1x2x5x16xf32>, tensor<1x2x7x16xf32>) -> tensor<1x2x5x7xf32>
  %c = kiln.constant dense<2.500000e-01> : tensor<f32>
  %x = kiln.mul %s, %c : (tensor<1x2x5x7xf32>, tensor<f32>) -> tensor<1x2x5x7xf32>
  %h = kiln.constant dense<[[[[5.000000e-01]], [[-1.000000e+00]]]]> : tensor<1x2x1x1xf32>
  %e = kiln.expand %h : tensor<1x2x1x1xf32> -> tensor<1x2x5x1xf32>
  %j = kiln.concat %x, %e {axis = 3 : i64} : (tensor<1x2x5x7xf32>, tensor<1x2x5x1xf32>) -> tensor<1x2x5x8xf32>
  %p = kiln.softmax %j {axis = 3 : i64} : tensor<1x2x5x8xf32>
  %ps = kiln.slice %p {starts = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1, 1, 1>} : tensor<1x2x5x8xf32> -> tensor<1x2x5x7xf32>
  %o = kiln.matmul %ps, %v : (tensor<1x2x5x7xf32>, tensor<1x2x7x4xf32>) -> tensor<1x2x5x4xf32>
  return %o : tensor<1x2x5x4xf32>
}

// -----

/// A joined column that varies along the queries is no sink: left alone.
// CHECK-LABEL: func @negative_sink_varies_by_query
// CHECK-NOT: kiln.attention
// CHECK: kiln.softmax
func.func @negative_sink_varies_by_query(%q: tensor<1x2x2x16xf32>, %k: tensor<1x2x7x16xf32>, %v: tensor<1x2x7x4xf32>) -> tensor<1x2x2x4xf32> {
  %s = kiln.matmul %q, %k {transpose_rhs = true} : (tensor<1x2x2x16xf32>, tensor<1x2x7x16xf32>) -> tensor<1x2x2x7xf32>
  %h = kiln.constant dense<[[[[5.000000e-01], [2.000000e+00]]]]> : tensor<1x1x2x1xf32>
  %e = kiln.expand %h : tensor<1x1x2x1xf32> -> tensor<1x2x2x1xf32>
  %j = kiln.concat %s, %e {axis = 3 : i64} : (tensor<1x2x2x7xf32>, tensor<1x2x2x1xf32>) -> tensor<1x2x2x8xf32>
  %p = kiln.softmax %j {axis = 3 : i64} : tensor<1x2x2x8xf32>
  %ps = kiln.slice %p {starts = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1, 1, 1>} : tensor<1x2x2x8xf32> -> tensor<1x2x2x7xf32>
  %o = kiln.matmul %ps, %v : (tensor<1x2x2x7xf32>, tensor<1x2x7x4xf32>) -> tensor<1x2x2x4xf32>
  return %o : tensor<1x2x2x4xf32>
}

// -----

// PyTorch's scaled_dot_product_attention as today's exporters write it: the
// scale split between queries and keys (8^-0.25 each), a boolean mask turned
// into 0 / -inf, and a NaN guard after the softmax.
// CHECK-LABEL: func @sdpa_nan_guard_form
// CHECK: kiln.attention %arg0, %{{.*}}, %arg2, %{{.*}} {scale = 0.35355{{[0-9]*}} : f32, zero_nan_probs}
// CHECK-NOT: kiln.is_nan
// CHECK-NOT: kiln.softmax
func.func @sdpa_nan_guard_form(%q: tensor<1x2x5x8xf32>, %kt: tensor<1x2x8x7xf32>, %v: tensor<1x2x7x4xf32>, %keep: tensor<1x1x5x7xi1>) -> tensor<1x2x5x4xf32> {
  %c = kiln.constant dense<0.594603539> : tensor<f32>
  %qs = kiln.mul %q, %c : (tensor<1x2x5x8xf32>, tensor<f32>) -> tensor<1x2x5x8xf32>
  %ks = kiln.mul %kt, %c : (tensor<1x2x8x7xf32>, tensor<f32>) -> tensor<1x2x8x7xf32>
  %s = kiln.matmul %qs, %ks : (tensor<1x2x5x8xf32>, tensor<1x2x8x7xf32>) -> tensor<1x2x5x7xf32>
  %zero = kiln.constant dense<0.000000e+00> : tensor<1xf32>
  %ninf = kiln.constant dense<0xFF800000> : tensor<1xf32>
  %bias = kiln.where %keep, %zero, %ninf : (tensor<1x1x5x7xi1>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x1x5x7xf32>
  %a = kiln.add %s, %bias : (tensor<1x2x5x7xf32>, tensor<1x1x5x7xf32>) -> tensor<1x2x5x7xf32>
  %p = kiln.softmax %a {axis = 3 : i64} : tensor<1x2x5x7xf32>
  %nan = kiln.is_nan %p : tensor<1x2x5x7xf32> -> tensor<1x2x5x7xi1>
  %g = kiln.where %nan, %zero, %p : (tensor<1x2x5x7xi1>, tensor<1xf32>, tensor<1x2x5x7xf32>) -> tensor<1x2x5x7xf32>
  %o = kiln.matmul %g, %v : (tensor<1x2x5x7xf32>, tensor<1x2x7x4xf32>) -> tensor<1x2x5x4xf32>
  return %o : tensor<1x2x5x4xf32>
}

// -----

/// A guard that replaces NaN probabilities by anything but zero is not what
/// zero_nan_probs means: left alone.
// CHECK-LABEL: func @negative_nan_guard_nonzero
// CHECK-NOT: kiln.attention
// CHECK: kiln.softmax
// CHECK: kiln.is_nan
func.func @negative_nan_guard_nonzero(%q: tensor<1x2x5x8xf32>, %k: tensor<1x2x7x8xf32>, %v: tensor<1x2x7x4xf32>) -> tensor<1x2x5x4xf32> {
  %s = kiln.matmul %q, %k {transpose_rhs = true} : (tensor<1x2x5x8xf32>, tensor<1x2x7x8xf32>) -> tensor<1x2x5x7xf32>
  %p = kiln.softmax %s {axis = 3 : i64} : tensor<1x2x5x7xf32>
  %nan = kiln.is_nan %p : tensor<1x2x5x7xf32> -> tensor<1x2x5x7xi1>
  %one = kiln.constant dense<1.000000e+00> : tensor<f32>
  %g = kiln.where %nan, %one, %p : (tensor<1x2x5x7xi1>, tensor<f32>, tensor<1x2x5x7xf32>) -> tensor<1x2x5x7xf32>
  %o = kiln.matmul %g, %v : (tensor<1x2x5x7xf32>, tensor<1x2x7x4xf32>) -> tensor<1x2x5x4xf32>
  return %o : tensor<1x2x5x4xf32>
}

// -----

/// The NaN test is also a result of the function: the probabilities must
/// stay in memory, so nothing is recomposed.
// CHECK-LABEL: func @negative_nan_guard_shared
// CHECK-NOT: kiln.attention
// CHECK: kiln.softmax
func.func @negative_nan_guard_shared(%q: tensor<1x2x5x8xf32>, %k: tensor<1x2x7x8xf32>, %v: tensor<1x2x7x4xf32>) -> (tensor<1x2x5x4xf32>, tensor<1x2x5x7xi1>) {
  %s = kiln.matmul %q, %k {transpose_rhs = true} : (tensor<1x2x5x8xf32>, tensor<1x2x7x8xf32>) -> tensor<1x2x5x7xf32>
  %p = kiln.softmax %s {axis = 3 : i64} : tensor<1x2x5x7xf32>
  %nan = kiln.is_nan %p : tensor<1x2x5x7xf32> -> tensor<1x2x5x7xi1>
  %zero = kiln.constant dense<0.000000e+00> : tensor<f32>
  %g = kiln.where %nan, %zero, %p : (tensor<1x2x5x7xi1>, tensor<f32>, tensor<1x2x5x7xf32>) -> tensor<1x2x5x7xf32>
  %o = kiln.matmul %g, %v : (tensor<1x2x5x7xf32>, tensor<1x2x7x4xf32>) -> tensor<1x2x5x4xf32>
  return %o, %nan : tensor<1x2x5x4xf32>, tensor<1x2x5x7xi1>
}

// -----

// GELU as the TorchScript exporter writes BERT's: x / sqrt(2), erf, + 1,
// times x, times 0.5.
// CHECK-LABEL: func @gelu_erf_form
// CHECK: %[[G:.*]] = kiln.gelu %arg0 : tensor<2x8xf32>
// CHECK-NOT: kiln.erf
// CHECK: return %[[G]]
func.func @gelu_erf_form(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %sqrt2 = kiln.constant dense<1.41421354> : tensor<f32>
  %d = kiln.div %x, %sqrt2 : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %e = kiln.erf %d : tensor<2x8xf32>
  %one = kiln.constant dense<1.000000e+00> : tensor<f32>
  %a = kiln.add %e, %one : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %m = kiln.mul %x, %a : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %half = kiln.constant dense<5.000000e-01> : tensor<f32>
  %g = kiln.mul %m, %half : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  return %g : tensor<2x8xf32>
}

// -----

// The Hugging Face form: 0.5 multiplied in first, x times 1/sqrt(2), the
// one before the erf.
// CHECK-LABEL: func @gelu_erf_hf_form
// CHECK: kiln.gelu %arg0 : tensor<4xf32>
func.func @gelu_erf_hf_form(%x: tensor<4xf32>) -> tensor<4xf32> {
  %half = kiln.constant dense<5.000000e-01> : tensor<1xf32>
  %h = kiln.mul %x, %half : (tensor<4xf32>, tensor<1xf32>) -> tensor<4xf32>
  %r = kiln.constant dense<0.707106769> : tensor<f32>
  %s = kiln.mul %x, %r : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %e = kiln.erf %s : tensor<4xf32>
  %one = kiln.constant dense<1.000000e+00> : tensor<f32>
  %a = kiln.add %one, %e : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  %g = kiln.mul %h, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %g : tensor<4xf32>
}

// -----

// GPT-2's gelu_new: the tanh form with pow(x, 3).
// CHECK-LABEL: func @gelu_tanh_form
// CHECK: %[[G:.*]] = kiln.gelu %arg0 approximate = tanh : tensor<2x8xf32>
// CHECK-NOT: kiln.tanh
// CHECK: return %[[G]]
func.func @gelu_tanh_form(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %three = kiln.constant dense<3.000000e+00> : tensor<f32>
  %p = kiln.pow %x, %three : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %c = kiln.constant dense<4.471500e-02> : tensor<f32>
  %pc = kiln.mul %c, %p : (tensor<f32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %in = kiln.add %x, %pc : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %k = kiln.constant dense<0.797884583> : tensor<f32>
  %arg = kiln.mul %in, %k : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %t = kiln.tanh %arg : tensor<2x8xf32>
  %one = kiln.constant dense<1.000000e+00> : tensor<f32>
  %a = kiln.add %t, %one : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %half = kiln.constant dense<5.000000e-01> : tensor<f32>
  %h = kiln.mul %half, %x : (tensor<f32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %g = kiln.mul %h, %a : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %g : tensor<2x8xf32>
}

// -----

// The cube as x * x * x, and the GELU multiplied by another tensor (a gated
// unit): the inner product is the GELU.
// CHECK-LABEL: func @gelu_tanh_cube_gated
// CHECK: %[[G:.*]] = kiln.gelu %arg0 approximate = tanh
// CHECK: kiln.mul %[[G]], %arg1
func.func @gelu_tanh_cube_gated(%x: tensor<8xf32>, %y: tensor<8xf32>) -> tensor<8xf32> {
  %xx = kiln.mul %x, %x : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %xxx = kiln.mul %xx, %x : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %c = kiln.constant dense<4.471500e-02> : tensor<f32>
  %pc = kiln.mul %xxx, %c : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %in = kiln.add %pc, %x : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %k = kiln.constant dense<0.797884583> : tensor<f32>
  %arg = kiln.mul %k, %in : (tensor<f32>, tensor<8xf32>) -> tensor<8xf32>
  %t = kiln.tanh %arg : tensor<8xf32>
  %one = kiln.constant dense<1.000000e+00> : tensor<f32>
  %a = kiln.add %t, %one : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %xa = kiln.mul %x, %a : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %half = kiln.constant dense<5.000000e-01> : tensor<f32>
  %g = kiln.mul %xa, %half : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %o = kiln.mul %g, %y : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %o : tensor<8xf32>
}

// -----

/// The erf's argument is x / 2, not x / sqrt(2): not GELU.
// CHECK-LABEL: func @negative_gelu_wrong_scale
// CHECK-NOT: kiln.gelu
// CHECK: kiln.erf
func.func @negative_gelu_wrong_scale(%x: tensor<4xf32>) -> tensor<4xf32> {
  %two = kiln.constant dense<2.000000e+00> : tensor<f32>
  %d = kiln.div %x, %two : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %e = kiln.erf %d : tensor<4xf32>
  %one = kiln.constant dense<1.000000e+00> : tensor<f32>
  %a = kiln.add %e, %one : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %m = kiln.mul %x, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %half = kiln.constant dense<5.000000e-01> : tensor<f32>
  %g = kiln.mul %m, %half : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %g : tensor<4xf32>
}

// -----

/// The erf is used elsewhere too: recomposing would compute it twice.
// CHECK-LABEL: func @negative_gelu_erf_shared
// CHECK-NOT: kiln.gelu
func.func @negative_gelu_erf_shared(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %sqrt2 = kiln.constant dense<1.41421354> : tensor<f32>
  %d = kiln.div %x, %sqrt2 : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %e = kiln.erf %d : tensor<4xf32>
  %one = kiln.constant dense<1.000000e+00> : tensor<f32>
  %a = kiln.add %e, %one : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %m = kiln.mul %x, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %half = kiln.constant dense<5.000000e-01> : tensor<f32>
  %g = kiln.mul %m, %half : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %g, %e : tensor<4xf32>, tensor<4xf32>
}

// -----

/// 0.5 * y * (1 + erf(x / sqrt(2))) with y not x: not GELU.
// CHECK-LABEL: func @negative_gelu_other_operand
// CHECK-NOT: kiln.gelu
func.func @negative_gelu_other_operand(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %sqrt2 = kiln.constant dense<1.41421354> : tensor<f32>
  %d = kiln.div %x, %sqrt2 : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %e = kiln.erf %d : tensor<4xf32>
  %one = kiln.constant dense<1.000000e+00> : tensor<f32>
  %a = kiln.add %e, %one : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %m = kiln.mul %y, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %half = kiln.constant dense<5.000000e-01> : tensor<f32>
  %g = kiln.mul %m, %half : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %g : tensor<4xf32>
}

// -----


// LLaMA's RMSNorm from the dynamo exporter: Pow, ReduceMean, Add, Sqrt,
// Reciprocal, Mul, then the scale on the left.
// CHECK-LABEL: func @rms_norm_reciprocal_form
// CHECK-NOT: kiln.reduce_mean
// CHECK: %[[N:.*]] = kiln.rms_norm %arg0, %arg1 {axis = 2 : i64, epsilon = 9.99999997E-7 : f32} : (tensor<2x8x32xf32>, tensor<32xf32>) -> tensor<2x8x32xf32>
// CHECK-NEXT: return %[[N]]
func.func @rms_norm_reciprocal_form(%x: tensor<2x8x32xf32>, %g: tensor<32xf32>) -> tensor<2x8x32xf32> {
  %two = kiln.constant dense<2.000000e+00> : tensor<f32>
  %sq = kiln.pow %x, %two : (tensor<2x8x32xf32>, tensor<f32>) -> tensor<2x8x32xf32>
  %ms = kiln.reduce_mean %sq {axes = array<i64: 2>, keepdims = true} : tensor<2x8x32xf32> -> tensor<2x8x1xf32>
  %eps = kiln.constant dense<9.99999997E-7> : tensor<f32>
  %se = kiln.add %ms, %eps : (tensor<2x8x1xf32>, tensor<f32>) -> tensor<2x8x1xf32>
  %r = kiln.sqrt %se : tensor<2x8x1xf32>
  %i = kiln.reciprocal %r : tensor<2x8x1xf32>
  %n = kiln.mul %x, %i : (tensor<2x8x32xf32>, tensor<2x8x1xf32>) -> tensor<2x8x32xf32>
  %y = kiln.mul %g, %n : (tensor<32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  return %y : tensor<2x8x32xf32>
}

// -----

// The TorchScript exporter's form: 1 / Sqrt, the epsilon on the left, and x
// read again after the norm (the residual stream).
// CHECK-LABEL: func @rms_norm_one_over_form
// CHECK-NOT: kiln.sqrt
// CHECK: %[[N:.*]] = kiln.rms_norm %arg0, %arg1 {axis = 1 : i64, epsilon = 9.99999974E-6 : f32}
// CHECK-NEXT: %[[R:.*]] = kiln.add %arg0, %[[N]]
// CHECK-NEXT: return %[[R]]
func.func @rms_norm_one_over_form(%x: tensor<4x16xf32>, %g: tensor<16xf32>) -> tensor<4x16xf32> {
  %two = kiln.constant dense<2.000000e+00> : tensor<f32>
  %sq = kiln.pow %x, %two : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %ms = kiln.reduce_mean %sq {axes = array<i64: 1>, keepdims = true} : tensor<4x16xf32> -> tensor<4x1xf32>
  %eps = kiln.constant dense<9.99999974E-6> : tensor<f32>
  %se = kiln.add %eps, %ms : (tensor<f32>, tensor<4x1xf32>) -> tensor<4x1xf32>
  %r = kiln.sqrt %se : tensor<4x1xf32>
  %one = kiln.constant dense<1.000000e+00> : tensor<f32>
  %i = kiln.div %one, %r : (tensor<f32>, tensor<4x1xf32>) -> tensor<4x1xf32>
  %n = kiln.mul %i, %x : (tensor<4x1xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %y = kiln.mul %n, %g : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %res = kiln.add %x, %y : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  return %res : tensor<4x16xf32>
}

// -----

// A 16-bit export: x widened to fp32, the normalized value cast back before
// the 16-bit scale. One norm of the 16-bit x.
// CHECK-LABEL: func @rms_norm_fp16_export
// CHECK-NOT: kiln.cast
// CHECK: %[[N:.*]] = kiln.rms_norm %arg0, %arg1 {axis = 2 : i64, epsilon = 9.99999997E-7 : f32} : (tensor<1x5x64xf16>, tensor<64xf16>) -> tensor<1x5x64xf16>
// CHECK-NEXT: return %[[N]]
func.func @rms_norm_fp16_export(%x16: tensor<1x5x64xf16>, %g: tensor<64xf16>) -> tensor<1x5x64xf16> {
  %x = kiln.cast %x16 : tensor<1x5x64xf16> -> tensor<1x5x64xf32>
  %sq = kiln.mul %x, %x : (tensor<1x5x64xf32>, tensor<1x5x64xf32>) -> tensor<1x5x64xf32>
  %ms = kiln.reduce_mean %sq {axes = array<i64: 2>, keepdims = true} : tensor<1x5x64xf32> -> tensor<1x5x1xf32>
  %eps = kiln.constant dense<9.99999997E-7> : tensor<f32>
  %se = kiln.add %ms, %eps : (tensor<1x5x1xf32>, tensor<f32>) -> tensor<1x5x1xf32>
  %r = kiln.sqrt %se : tensor<1x5x1xf32>
  %i = kiln.reciprocal %r : tensor<1x5x1xf32>
  %n = kiln.mul %x, %i : (tensor<1x5x64xf32>, tensor<1x5x1xf32>) -> tensor<1x5x64xf32>
  %n16 = kiln.cast %n : tensor<1x5x64xf32> -> tensor<1x5x64xf16>
  %y = kiln.mul %g, %n16 : (tensor<64xf16>, tensor<1x5x64xf16>) -> tensor<1x5x64xf16>
  return %y : tensor<1x5x64xf16>
}

// -----

// The same, but x is computed in fp32 (a residual sum): the norm stays fp32
// with unit scale, and the cast and the 16-bit scale stay after it.
// CHECK-LABEL: func @rms_norm_fp32_sum_cast_back
// CHECK: %[[ONES:.*]] = kiln.constant dense<1.000000e+00> : tensor<64xf32>
// CHECK: %[[SUM:.*]] = kiln.add %arg0, %arg1
// CHECK-NEXT: %[[N:.*]] = kiln.rms_norm %[[SUM]], %[[ONES]] {{.*}} -> tensor<1x5x64xf32>
// CHECK-NEXT: %[[C:.*]] = kiln.cast %[[N]]
// CHECK-NEXT: kiln.mul %arg2, %[[C]]
func.func @rms_norm_fp32_sum_cast_back(%a: tensor<1x5x64xf32>, %b: tensor<1x5x64xf32>, %g: tensor<64xf16>) -> tensor<1x5x64xf16> {
  %x = kiln.add %a, %b : (tensor<1x5x64xf32>, tensor<1x5x64xf32>) -> tensor<1x5x64xf32>
  %sq = kiln.mul %x, %x : (tensor<1x5x64xf32>, tensor<1x5x64xf32>) -> tensor<1x5x64xf32>
  %ms = kiln.reduce_mean %sq {axes = array<i64: 2>, keepdims = true} : tensor<1x5x64xf32> -> tensor<1x5x1xf32>
  %eps = kiln.constant dense<9.99999997E-7> : tensor<f32>
  %se = kiln.add %ms, %eps : (tensor<1x5x1xf32>, tensor<f32>) -> tensor<1x5x1xf32>
  %r = kiln.sqrt %se : tensor<1x5x1xf32>
  %n = kiln.div %x, %r : (tensor<1x5x64xf32>, tensor<1x5x1xf32>) -> tensor<1x5x64xf32>
  %n16 = kiln.cast %n : tensor<1x5x64xf32> -> tensor<1x5x64xf16>
  %y = kiln.mul %g, %n16 : (tensor<64xf16>, tensor<1x5x64xf16>) -> tensor<1x5x64xf16>
  return %y : tensor<1x5x64xf16>
}

// -----

// onnxruntime's SimplifiedLayerNormalization as the importer spells it: x
// and the scale widened, the fp32 result narrowed to the scale's type. The
// 16-bit norm, exactly.
// CHECK-LABEL: func @rms_norm_simplified_layer_norm
// CHECK-NOT: kiln.cast
// CHECK: %[[N:.*]] = kiln.rms_norm %arg0, %arg1 {axis = 1 : i64, epsilon = 9.99999997E-7 : f32} : (tensor<3x32xbf16>, tensor<32xbf16>) -> tensor<3x32xbf16>
// CHECK-NEXT: return %[[N]]
func.func @rms_norm_simplified_layer_norm(%x16: tensor<3x32xbf16>, %g16: tensor<32xbf16>) -> tensor<3x32xbf16> {
  %x = kiln.cast %x16 : tensor<3x32xbf16> -> tensor<3x32xf32>
  %g = kiln.cast %g16 : tensor<32xbf16> -> tensor<32xf32>
  %sq = kiln.mul %x, %x : (tensor<3x32xf32>, tensor<3x32xf32>) -> tensor<3x32xf32>
  %ms = kiln.reduce_mean %sq {axes = array<i64: 1>, keepdims = true} : tensor<3x32xf32> -> tensor<3x1xf32>
  %eps = kiln.constant dense<9.99999997E-7> : tensor<f32>
  %se = kiln.add %ms, %eps : (tensor<3x1xf32>, tensor<f32>) -> tensor<3x1xf32>
  %r = kiln.sqrt %se : tensor<3x1xf32>
  %n = kiln.div %x, %r : (tensor<3x32xf32>, tensor<3x1xf32>) -> tensor<3x32xf32>
  %y = kiln.mul %n, %g : (tensor<3x32xf32>, tensor<32xf32>) -> tensor<3x32xf32>
  %y16 = kiln.cast %y : tensor<3x32xf32> -> tensor<3x32xbf16>
  return %y16 : tensor<3x32xbf16>
}

// -----

// Over the last two dims with no scale: unit scale of those dims.
// CHECK-LABEL: func @rms_norm_two_axes_no_scale
// CHECK: %[[ONES:.*]] = kiln.constant dense<1.000000e+00> : tensor<3x4xf32>
// CHECK: kiln.rms_norm %arg0, %[[ONES]] {axis = 1 : i64, epsilon = 9.99999974E-6 : f32}
func.func @rms_norm_two_axes_no_scale(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %sq = kiln.mul %x, %x : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %ms = kiln.reduce_mean %sq {axes = array<i64: 1, 2>, keepdims = true} : tensor<2x3x4xf32> -> tensor<2x1x1xf32>
  %eps = kiln.constant dense<9.99999974E-6> : tensor<f32>
  %se = kiln.add %ms, %eps : (tensor<2x1x1xf32>, tensor<f32>) -> tensor<2x1x1xf32>
  %r = kiln.sqrt %se : tensor<2x1x1xf32>
  %n = kiln.div %x, %r : (tensor<2x3x4xf32>, tensor<2x1x1xf32>) -> tensor<2x3x4xf32>
  return %n : tensor<2x3x4xf32>
}

// -----

/// negative_: over a leading axis.
// CHECK-LABEL: func @negative_rms_norm_leading_axis
// CHECK-NOT: kiln.rms_norm
func.func @negative_rms_norm_leading_axis(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %sq = kiln.mul %x, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %ms = kiln.reduce_mean %sq {axes = array<i64: 0>, keepdims = true} : tensor<4x8xf32> -> tensor<1x8xf32>
  %eps = kiln.constant dense<1.0E-5> : tensor<f32>
  %se = kiln.add %ms, %eps : (tensor<1x8xf32>, tensor<f32>) -> tensor<1x8xf32>
  %r = kiln.sqrt %se : tensor<1x8xf32>
  %n = kiln.div %x, %r : (tensor<4x8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
  return %n : tensor<4x8xf32>
}

// -----

/// negative_: the root is also an output, which the norm would not give.
// CHECK-LABEL: func @negative_rms_norm_root_used
// CHECK-NOT: kiln.rms_norm
func.func @negative_rms_norm_root_used(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>) {
  %sq = kiln.mul %x, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %ms = kiln.reduce_mean %sq {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %eps = kiln.constant dense<1.0E-5> : tensor<f32>
  %se = kiln.add %ms, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %r = kiln.sqrt %se : tensor<4x1xf32>
  %n = kiln.div %x, %r : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  return %n, %r : tensor<4x8xf32>, tensor<4x1xf32>
}

// -----

/// negative_: the square of another value than the one divided.
// CHECK-LABEL: func @negative_rms_norm_other_value
// CHECK-NOT: kiln.rms_norm
func.func @negative_rms_norm_other_value(%x: tensor<4x8xf32>, %z: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %sq = kiln.mul %z, %z : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %ms = kiln.reduce_mean %sq {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %eps = kiln.constant dense<1.0E-5> : tensor<f32>
  %se = kiln.add %ms, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %r = kiln.sqrt %se : tensor<4x1xf32>
  %n = kiln.div %x, %r : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  return %n : tensor<4x8xf32>
}

// -----

/// negative_: a cube.
// CHECK-LABEL: func @negative_rms_norm_cube
// CHECK-NOT: kiln.rms_norm
func.func @negative_rms_norm_cube(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %three = kiln.constant dense<3.000000e+00> : tensor<f32>
  %sq = kiln.pow %x, %three : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %ms = kiln.reduce_mean %sq {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %eps = kiln.constant dense<1.0E-5> : tensor<f32>
  %se = kiln.add %ms, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %r = kiln.sqrt %se : tensor<4x1xf32>
  %n = kiln.div %x, %r : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  return %n : tensor<4x8xf32>
}

// -----

/// negative_: a mean without its kept dim.
// CHECK-LABEL: func @negative_rms_norm_no_keepdims
// CHECK-NOT: kiln.rms_norm
func.func @negative_rms_norm_no_keepdims(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %sq = kiln.mul %x, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %ms = kiln.reduce_mean %sq {axes = array<i64: 1>, keepdims = false} : tensor<4x8xf32> -> tensor<4xf32>
  %eps = kiln.constant dense<1.0E-5> : tensor<f32>
  %se = kiln.add %ms, %eps : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %r = kiln.sqrt %se : tensor<4xf32>
  %rr = kiln.reshape %r : tensor<4xf32> -> tensor<4x1xf32>
  %n = kiln.div %x, %rr : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  return %n : tensor<4x8xf32>
}

// -----

/// negative_: a row of symbolic length, whose scale no constant can be.
// CHECK-LABEL: func @negative_rms_norm_symbolic_row
// CHECK-NOT: kiln.rms_norm
func.func @negative_rms_norm_symbolic_row(%x: tensor<4x?xf32, #kiln.dims<["n"]>>) -> tensor<4x?xf32, #kiln.dims<["n"]>> {
  %sq = kiln.mul %x, %x : (tensor<4x?xf32, #kiln.dims<["n"]>>, tensor<4x?xf32, #kiln.dims<["n"]>>) -> tensor<4x?xf32, #kiln.dims<["n"]>>
  %ms = kiln.reduce_mean %sq {axes = array<i64: 1>, keepdims = true} : tensor<4x?xf32, #kiln.dims<["n"]>> -> tensor<4x1xf32>
  %eps = kiln.constant dense<1.0E-5> : tensor<f32>
  %se = kiln.add %ms, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %r = kiln.sqrt %se : tensor<4x1xf32>
  %n = kiln.div %x, %r : (tensor<4x?xf32, #kiln.dims<["n"]>>, tensor<4x1xf32>) -> tensor<4x?xf32, #kiln.dims<["n"]>>
  return %n : tensor<4x?xf32, #kiln.dims<["n"]>>
}

// -----

/// negative_: the fp32 norm narrowed to a type its inputs do not come from.
// CHECK-LABEL: func @negative_rms_norm_narrow_other_type
// CHECK: kiln.rms_norm {{.*}} -> tensor<3x32xf32>
// CHECK: kiln.cast {{.*}} -> tensor<3x32xf16>
func.func @negative_rms_norm_narrow_other_type(%x16: tensor<3x32xbf16>, %g16: tensor<32xbf16>) -> tensor<3x32xf16> {
  %x = kiln.cast %x16 : tensor<3x32xbf16> -> tensor<3x32xf32>
  %g = kiln.cast %g16 : tensor<32xbf16> -> tensor<32xf32>
  %n = kiln.rms_norm %x, %g {axis = 1 : i64, epsilon = 1.0e-6 : f32} : (tensor<3x32xf32>, tensor<32xf32>) -> tensor<3x32xf32>
  %y = kiln.cast %n : tensor<3x32xf32> -> tensor<3x32xf16>
  return %y : tensor<3x32xf16>
}

// -----

/// negative_: an epsilon that is not a constant.
// CHECK-LABEL: func @negative_rms_norm_epsilon_input
// CHECK-NOT: kiln.rms_norm
func.func @negative_rms_norm_epsilon_input(%x: tensor<4x8xf32>, %eps: tensor<f32>) -> tensor<4x8xf32> {
  %sq = kiln.mul %x, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %ms = kiln.reduce_mean %sq {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %se = kiln.add %ms, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %r = kiln.sqrt %se : tensor<4x1xf32>
  %n = kiln.div %x, %r : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  return %n : tensor<4x8xf32>
}

// -----

/// negative_: the square is also an output.
// CHECK-LABEL: func @negative_rms_norm_square_used
// CHECK-NOT: kiln.rms_norm
func.func @negative_rms_norm_square_used(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %sq = kiln.mul %x, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %ms = kiln.reduce_mean %sq {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %eps = kiln.constant dense<1.0E-5> : tensor<f32>
  %se = kiln.add %ms, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %r = kiln.sqrt %se : tensor<4x1xf32>
  %n = kiln.div %x, %r : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  return %n, %sq : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

/// negative_: an f64 norm of widened f32 values, cast back to f32: one
/// rounding from f64 is not within the f32 contract of two, so the norm
/// stays f64 and the cast and scale after it.
// CHECK-LABEL: func @negative_rms_norm_f64_cast_back
// CHECK: kiln.rms_norm {{.*}} -> tensor<3x32xf64>
// CHECK-NEXT: kiln.cast {{.*}} -> tensor<3x32xf32>
// CHECK-NEXT: kiln.mul
func.func @negative_rms_norm_f64_cast_back(%x32: tensor<3x32xf32>, %g: tensor<32xf32>) -> tensor<3x32xf32> {
  %x = kiln.cast %x32 : tensor<3x32xf32> -> tensor<3x32xf64>
  %sq = kiln.mul %x, %x : (tensor<3x32xf64>, tensor<3x32xf64>) -> tensor<3x32xf64>
  %ms = kiln.reduce_mean %sq {axes = array<i64: 1>, keepdims = true} : tensor<3x32xf64> -> tensor<3x1xf64>
  %eps = kiln.constant dense<1.0E-6> : tensor<f64>
  %se = kiln.add %ms, %eps : (tensor<3x1xf64>, tensor<f64>) -> tensor<3x1xf64>
  %r = kiln.sqrt %se : tensor<3x1xf64>
  %n = kiln.div %x, %r : (tensor<3x32xf64>, tensor<3x1xf64>) -> tensor<3x32xf64>
  %n32 = kiln.cast %n : tensor<3x32xf64> -> tensor<3x32xf32>
  %y = kiln.mul %n32, %g : (tensor<3x32xf32>, tensor<32xf32>) -> tensor<3x32xf32>
  return %y : tensor<3x32xf32>
}

// -----

/// negative_: an f64 norm of widened f32 values narrowed back to f32 stays
/// f64: the kernel keeps f64 statistics for it.
// CHECK-LABEL: func @negative_rms_norm_narrow_f64
// CHECK: kiln.rms_norm {{.*}} -> tensor<3x32xf64>
// CHECK-NEXT: kiln.cast {{.*}} -> tensor<3x32xf32>
func.func @negative_rms_norm_narrow_f64(%x32: tensor<3x32xf32>, %g32: tensor<32xf32>) -> tensor<3x32xf32> {
  %x = kiln.cast %x32 : tensor<3x32xf32> -> tensor<3x32xf64>
  %g = kiln.cast %g32 : tensor<32xf32> -> tensor<32xf64>
  %n = kiln.rms_norm %x, %g {axis = 1 : i64, epsilon = 1.0e-6 : f32} : (tensor<3x32xf64>, tensor<32xf64>) -> tensor<3x32xf64>
  %y = kiln.cast %n : tensor<3x32xf64> -> tensor<3x32xf32>
  return %y : tensor<3x32xf32>
}

// -----

// onnxruntime's quantize_dynamic form, as the importer writes
// MatMulInteger and its Cast and Mul: the scales move into the operands
// (the activations' one value onto A, the weights' column scales into the
// dequantize in place of its ones) and the casts through int32 go.
// CHECK-LABEL: func @integer_product_form
// CHECK: %[[S:.*]] = kiln.constant dense<{{\[}}[5.000000e-01], [2.500000e-01], [2.000000e+00]]> : tensor<3x1xf32>
// CHECK: %[[A:.*]] = kiln.sub
// CHECK: %[[SA:.*]] = kiln.mul %[[A]], %arg1 : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x6xf32>
// CHECK: %[[W:.*]] = kiln.dequantize %{{.*}}, %[[S]] {bits = 8 : i64, block_size = 6 : i64}
// CHECK: %[[Y:.*]] = kiln.matmul %[[SA]], %[[W]] {transpose_rhs = true}
// CHECK-NOT: xi32
// CHECK: return %[[Y]]
func.func @integer_product_form(%q: tensor<4x6xui8>, %sa: tensor<f32>, %za: tensor<ui8>) -> tensor<4x3xf32> {
  %qf = kiln.cast %q : tensor<4x6xui8> -> tensor<4x6xf32>
  %zf = kiln.cast %za : tensor<ui8> -> tensor<f32>
  %a = kiln.sub %qf, %zf : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x6xf32>
  %p = kiln.constant dense<[[[130, 183, 14, 238, 127, 26]], [[80, 57, 190, 240, 126, 194]], [[52, 127, 6, 110, 208, 143]]]> : tensor<3x1x6xui8>
  %one = kiln.constant dense<1.000000e+00> : tensor<3x1xf32>
  %w = kiln.dequantize %p, %one {bits = 8 : i64, block_size = 6 : i64} : (tensor<3x1x6xui8>, tensor<3x1xf32>) -> tensor<3x6xf32>
  %m = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<4x6xf32>, tensor<3x6xf32>) -> tensor<4x3xf32>
  %i = kiln.cast %m : tensor<4x3xf32> -> tensor<4x3xi32>
  %f = kiln.cast %i : tensor<4x3xi32> -> tensor<4x3xf32>
  %sw = kiln.constant dense<[5.000000e-01, 2.500000e-01, 2.000000e+00]> : tensor<3xf32>
  %s = kiln.mul %sa, %sw : (tensor<f32>, tensor<3xf32>) -> tensor<3xf32>
  %y = kiln.mul %f, %s : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}

// -----

// negative_: the weights' scales are not 1 (the product is not MatMulInteger's).
// CHECK-LABEL: func @negative_weight_scales_not_one
// CHECK: kiln.cast %{{.*}} : tensor<4x3xf32> -> tensor<4x3xi32>
func.func @negative_weight_scales_not_one(%q: tensor<4x6xui8>, %sa: tensor<f32>, %za: tensor<ui8>) -> tensor<4x3xf32> {
  %qf = kiln.cast %q : tensor<4x6xui8> -> tensor<4x6xf32>
  %zf = kiln.cast %za : tensor<ui8> -> tensor<f32>
  %a = kiln.sub %qf, %zf : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x6xf32>
  %p = kiln.constant dense<[[[130, 183, 14, 238, 127, 26]], [[80, 57, 190, 240, 126, 194]], [[52, 127, 6, 110, 208, 143]]]> : tensor<3x1x6xui8>
  %one = kiln.constant dense<2.000000e+00> : tensor<3x1xf32>
  %w = kiln.dequantize %p, %one {bits = 8 : i64, block_size = 6 : i64} : (tensor<3x1x6xui8>, tensor<3x1xf32>) -> tensor<3x6xf32>
  %m = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<4x6xf32>, tensor<3x6xf32>) -> tensor<4x3xf32>
  %i = kiln.cast %m : tensor<4x3xf32> -> tensor<4x3xi32>
  %f = kiln.cast %i : tensor<4x3xi32> -> tensor<4x3xf32>
  %sw = kiln.constant dense<[5.000000e-01, 2.500000e-01, 2.000000e+00]> : tensor<3xf32>
  %s = kiln.mul %sa, %sw : (tensor<f32>, tensor<3xf32>) -> tensor<3xf32>
  %y = kiln.mul %f, %s : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}

// -----

// negative_: A is floats, not whole numbers: its product's cast to int32 rounds.
// CHECK-LABEL: func @negative_float_activations
// CHECK: kiln.cast %{{.*}} : tensor<4x3xf32> -> tensor<4x3xi32>
func.func @negative_float_activations(%x: tensor<4x6xf32>, %q: tensor<4x6xui8>, %sa: tensor<f32>, %za: tensor<ui8>) -> tensor<4x3xf32> {
  %qf = kiln.cast %q : tensor<4x6xui8> -> tensor<4x6xf32>
  %zf = kiln.cast %za : tensor<ui8> -> tensor<f32>
  %a = kiln.sub %x, %zf : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x6xf32>
  %p = kiln.constant dense<[[[130, 183, 14, 238, 127, 26]], [[80, 57, 190, 240, 126, 194]], [[52, 127, 6, 110, 208, 143]]]> : tensor<3x1x6xui8>
  %one = kiln.constant dense<1.000000e+00> : tensor<3x1xf32>
  %w = kiln.dequantize %p, %one {bits = 8 : i64, block_size = 6 : i64} : (tensor<3x1x6xui8>, tensor<3x1xf32>) -> tensor<3x6xf32>
  %m = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<4x6xf32>, tensor<3x6xf32>) -> tensor<4x3xf32>
  %i = kiln.cast %m : tensor<4x3xf32> -> tensor<4x3xi32>
  %f = kiln.cast %i : tensor<4x3xi32> -> tensor<4x3xf32>
  %sw = kiln.constant dense<[5.000000e-01, 2.500000e-01, 2.000000e+00]> : tensor<3xf32>
  %s = kiln.mul %sa, %sw : (tensor<f32>, tensor<3xf32>) -> tensor<3xf32>
  %y = kiln.mul %f, %s : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}

// -----

// negative_: the int32 product is also a result.
// CHECK-LABEL: func @negative_integer_product_returned
// CHECK: kiln.cast %{{.*}} : tensor<4x3xf32> -> tensor<4x3xi32>
func.func @negative_integer_product_returned(%q: tensor<4x6xui8>, %sa: tensor<f32>, %za: tensor<ui8>) -> (tensor<4x3xf32>, tensor<4x3xi32>) {
  %qf = kiln.cast %q : tensor<4x6xui8> -> tensor<4x6xf32>
  %zf = kiln.cast %za : tensor<ui8> -> tensor<f32>
  %a = kiln.sub %qf, %zf : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x6xf32>
  %p = kiln.constant dense<[[[130, 183, 14, 238, 127, 26]], [[80, 57, 190, 240, 126, 194]], [[52, 127, 6, 110, 208, 143]]]> : tensor<3x1x6xui8>
  %one = kiln.constant dense<1.000000e+00> : tensor<3x1xf32>
  %w = kiln.dequantize %p, %one {bits = 8 : i64, block_size = 6 : i64} : (tensor<3x1x6xui8>, tensor<3x1xf32>) -> tensor<3x6xf32>
  %m = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<4x6xf32>, tensor<3x6xf32>) -> tensor<4x3xf32>
  %i = kiln.cast %m : tensor<4x3xf32> -> tensor<4x3xi32>
  %f = kiln.cast %i : tensor<4x3xi32> -> tensor<4x3xf32>
  %sw = kiln.constant dense<[5.000000e-01, 2.500000e-01, 2.000000e+00]> : tensor<3xf32>
  %s = kiln.mul %sa, %sw : (tensor<f32>, tensor<3xf32>) -> tensor<3xf32>
  %y = kiln.mul %f, %s : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  return %y, %i : tensor<4x3xf32>, tensor<4x3xi32>
}

// -----

// negative_: the weights' scales are an input, not constants.
// CHECK-LABEL: func @negative_weight_scales_input
// CHECK: kiln.cast %{{.*}} : tensor<4x3xf32> -> tensor<4x3xi32>
func.func @negative_weight_scales_input(%q: tensor<4x6xui8>, %sa: tensor<f32>, %za: tensor<ui8>, %sw: tensor<3xf32>) -> tensor<4x3xf32> {
  %qf = kiln.cast %q : tensor<4x6xui8> -> tensor<4x6xf32>
  %zf = kiln.cast %za : tensor<ui8> -> tensor<f32>
  %a = kiln.sub %qf, %zf : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x6xf32>
  %p = kiln.constant dense<[[[130, 183, 14, 238, 127, 26]], [[80, 57, 190, 240, 126, 194]], [[52, 127, 6, 110, 208, 143]]]> : tensor<3x1x6xui8>
  %one = kiln.constant dense<1.000000e+00> : tensor<3x1xf32>
  %w = kiln.dequantize %p, %one {bits = 8 : i64, block_size = 6 : i64} : (tensor<3x1x6xui8>, tensor<3x1xf32>) -> tensor<3x6xf32>
  %m = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<4x6xf32>, tensor<3x6xf32>) -> tensor<4x3xf32>
  %i = kiln.cast %m : tensor<4x3xf32> -> tensor<4x3xi32>
  %f = kiln.cast %i : tensor<4x3xi32> -> tensor<4x3xf32>
    %s = kiln.mul %sa, %sw : (tensor<f32>, tensor<3xf32>) -> tensor<3xf32>
  %y = kiln.mul %f, %s : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}

// -----

// negative_: the activations' scale is one a row, not one value.
// CHECK-LABEL: func @negative_activation_scale_per_row
// CHECK: kiln.cast %{{.*}} : tensor<4x3xf32> -> tensor<4x3xi32>
func.func @negative_activation_scale_per_row(%q: tensor<4x6xui8>, %sa: tensor<4x1xf32>, %za: tensor<ui8>) -> tensor<4x3xf32> {
  %qf = kiln.cast %q : tensor<4x6xui8> -> tensor<4x6xf32>
  %zf = kiln.cast %za : tensor<ui8> -> tensor<f32>
  %a = kiln.sub %qf, %zf : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x6xf32>
  %p = kiln.constant dense<[[[130, 183, 14, 238, 127, 26]], [[80, 57, 190, 240, 126, 194]], [[52, 127, 6, 110, 208, 143]]]> : tensor<3x1x6xui8>
  %one = kiln.constant dense<1.000000e+00> : tensor<3x1xf32>
  %w = kiln.dequantize %p, %one {bits = 8 : i64, block_size = 6 : i64} : (tensor<3x1x6xui8>, tensor<3x1xf32>) -> tensor<3x6xf32>
  %m = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<4x6xf32>, tensor<3x6xf32>) -> tensor<4x3xf32>
  %i = kiln.cast %m : tensor<4x3xf32> -> tensor<4x3xi32>
  %f = kiln.cast %i : tensor<4x3xi32> -> tensor<4x3xf32>
  %sw = kiln.constant dense<[5.000000e-01, 2.500000e-01, 2.000000e+00]> : tensor<3xf32>
  %s = kiln.mul %sa, %sw : (tensor<4x1xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %y = kiln.mul %f, %s : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}

// -----

// negative_: K = 33026 (a scale of one value, which the pattern takes too), where 255 * 255 * K passes 2^31 and the cast to
// int32 may wrap.
// CHECK-LABEL: func @negative_sums_past_int32
// CHECK: kiln.cast %{{.*}} : tensor<2x3xf32> -> tensor<2x3xi32>
func.func @negative_sums_past_int32(%q: tensor<2x33026xui8>, %sa: tensor<f32>) -> tensor<2x3xf32> {
  %a = kiln.cast %q : tensor<2x33026xui8> -> tensor<2x33026xf32>
  %p = kiln.constant dense<7> : tensor<3x1x33026xui8>
  %one = kiln.constant dense<1.000000e+00> : tensor<3x1xf32>
  %w = kiln.dequantize %p, %one {bits = 8 : i64, block_size = 33026 : i64} : (tensor<3x1x33026xui8>, tensor<3x1xf32>) -> tensor<3x33026xf32>
  %m = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<2x33026xf32>, tensor<3x33026xf32>) -> tensor<2x3xf32>
  %i = kiln.cast %m : tensor<2x3xf32> -> tensor<2x3xi32>
  %f = kiln.cast %i : tensor<2x3xi32> -> tensor<2x3xf32>
  %sw = kiln.constant dense<5.000000e-01> : tensor<f32>
  %s = kiln.mul %sa, %sw : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %y = kiln.mul %f, %s : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// onnxruntime's QOperator QLinearMatMul as the importer writes it: the
// product of differences times one multiplier a column (a_scale * b_scale
// / y_scale, folded), then requantized. The multiplier goes into the
// weights' dequantize, halved, and A is scaled by 2: the integer GEMM's
// (float(sum) * 2) * (m / 2) is exactly onnxruntime's float(sum) * m.
// CHECK-LABEL: func @requantized_product_form
// CHECK-DAG: %[[TWO:.*]] = kiln.constant dense<2.000000e+00> : tensor<f32>
// CHECK-DAG: %[[S:.*]] = kiln.constant dense<{{\[}}[2.500000e-03], [1.250000e-03], [5.000000e-03]]> : tensor<3x1xf32>
// CHECK: %[[A:.*]] = kiln.sub
// CHECK: %[[SA:.*]] = kiln.mul %[[A]], %[[TWO]] : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x6xf32>
// CHECK: %[[W:.*]] = kiln.dequantize %{{.*}}, %[[S]] {bits = 8 : i64, block_size = 6 : i64}
// CHECK: %[[Y:.*]] = kiln.matmul %[[SA]], %[[W]] {transpose_rhs = true}
// CHECK-NEXT: kiln.round %[[Y]]
func.func @requantized_product_form(%q: tensor<4x6xui8>) -> tensor<4x3xf32> {
  %qf = kiln.cast %q : tensor<4x6xui8> -> tensor<4x6xf32>
  %zf = kiln.constant dense<1.280000e+02> : tensor<f32>
  %a = kiln.sub %qf, %zf : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x6xf32>
  %p = kiln.constant dense<[[[130, 183, 14, 238, 127, 26]], [[80, 57, 190, 240, 126, 194]], [[52, 127, 6, 110, 208, 143]]]> : tensor<3x1x6xui8>
  %one = kiln.constant dense<1.000000e+00> : tensor<3x1xf32>
  %w = kiln.dequantize %p, %one {bits = 8 : i64, block_size = 6 : i64} : (tensor<3x1x6xui8>, tensor<3x1xf32>) -> tensor<3x6xf32>
  %m = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<4x6xf32>, tensor<3x6xf32>) -> tensor<4x3xf32>
  %mult = kiln.constant dense<[5.000000e-03, 2.500000e-03, 1.000000e-02]> : tensor<3xf32>
  %y = kiln.mul %m, %mult : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %r = kiln.round %y : tensor<4x3xf32>
  return %r : tensor<4x3xf32>
}

// -----

// Two products of one A (a layer's query and key) share its scaled A, so
// that kiln-layout still packs them.
// CHECK-LABEL: func @requantized_products_share_a
// CHECK-COUNT-1: kiln.mul %{{.*}}, %{{.*}} : (tensor<4x6xf32>, tensor<f32>)
// CHECK-NOT: kiln.mul %{{.*}}, %{{.*}} : (tensor<4x6xf32>, tensor<f32>)
func.func @requantized_products_share_a(%q: tensor<4x6xui8>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
  %qf = kiln.cast %q : tensor<4x6xui8> -> tensor<4x6xf32>
  %zf = kiln.constant dense<1.280000e+02> : tensor<f32>
  %a = kiln.sub %qf, %zf : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x6xf32>
  %p = kiln.constant dense<[[[130, 183, 14, 238, 127, 26]], [[80, 57, 190, 240, 126, 194]], [[52, 127, 6, 110, 208, 143]]]> : tensor<3x1x6xui8>
  %one = kiln.constant dense<1.000000e+00> : tensor<3x1xf32>
  %w = kiln.dequantize %p, %one {bits = 8 : i64, block_size = 6 : i64} : (tensor<3x1x6xui8>, tensor<3x1xf32>) -> tensor<3x6xf32>
  %m = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<4x6xf32>, tensor<3x6xf32>) -> tensor<4x3xf32>
  %w2 = kiln.dequantize %p, %one {bits = 8 : i64, block_size = 6 : i64} : (tensor<3x1x6xui8>, tensor<3x1xf32>) -> tensor<3x6xf32>
  %m2 = kiln.matmul %a, %w2 {transpose_rhs = true} : (tensor<4x6xf32>, tensor<3x6xf32>) -> tensor<4x3xf32>
  %mult = kiln.constant dense<[5.000000e-03, 2.500000e-03, 1.000000e-02]> : tensor<3xf32>
  %y = kiln.mul %m, %mult : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %y2 = kiln.mul %m2, %mult : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  return %y, %y2 : tensor<4x3xf32>, tensor<4x3xf32>
}

// -----

// negative_: a multiplier whose half is not a normal float (1e-38 < 2^-125)
// would not be halved exactly: the product stays as it is.
// CHECK-LABEL: func @negative_requantized_multiplier_tiny
// CHECK: kiln.dequantize %{{.*}}, %{{.*}} {bits = 8 : i64, block_size = 6 : i64} : (tensor<3x1x6xui8>, tensor<3x1xf32>)
// CHECK: %[[M:.*]] = kiln.matmul
// CHECK: kiln.mul %[[M]]
func.func @negative_requantized_multiplier_tiny(%q: tensor<4x6xui8>) -> tensor<4x3xf32> {
  %qf = kiln.cast %q : tensor<4x6xui8> -> tensor<4x6xf32>
  %zf = kiln.constant dense<1.280000e+02> : tensor<f32>
  %a = kiln.sub %qf, %zf : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x6xf32>
  %p = kiln.constant dense<[[[130, 183, 14, 238, 127, 26]], [[80, 57, 190, 240, 126, 194]], [[52, 127, 6, 110, 208, 143]]]> : tensor<3x1x6xui8>
  %one = kiln.constant dense<1.000000e+00> : tensor<3x1xf32>
  %w = kiln.dequantize %p, %one {bits = 8 : i64, block_size = 6 : i64} : (tensor<3x1x6xui8>, tensor<3x1xf32>) -> tensor<3x6xf32>
  %m = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<4x6xf32>, tensor<3x6xf32>) -> tensor<4x3xf32>
  %mult = kiln.constant dense<[5.000000e-03, 1.000000e-38, 1.000000e-02]> : tensor<3xf32>
  %y = kiln.mul %m, %mult : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}

// -----

// negative_: a multiplier a row (a's scale per row) fits no column scales.
// CHECK-LABEL: func @negative_requantized_multiplier_per_row
// CHECK: %[[M:.*]] = kiln.matmul
// CHECK: kiln.mul %[[M]]
func.func @negative_requantized_multiplier_per_row(%q: tensor<4x6xui8>) -> tensor<4x3xf32> {
  %qf = kiln.cast %q : tensor<4x6xui8> -> tensor<4x6xf32>
  %zf = kiln.constant dense<1.280000e+02> : tensor<f32>
  %a = kiln.sub %qf, %zf : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x6xf32>
  %p = kiln.constant dense<[[[130, 183, 14, 238, 127, 26]], [[80, 57, 190, 240, 126, 194]], [[52, 127, 6, 110, 208, 143]]]> : tensor<3x1x6xui8>
  %one = kiln.constant dense<1.000000e+00> : tensor<3x1xf32>
  %w = kiln.dequantize %p, %one {bits = 8 : i64, block_size = 6 : i64} : (tensor<3x1x6xui8>, tensor<3x1xf32>) -> tensor<3x6xf32>
  %m = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<4x6xf32>, tensor<3x6xf32>) -> tensor<4x3xf32>
  %mult = kiln.constant dense<[[5.000000e-03], [2.500000e-03], [1.000000e-02], [2.000000e-02]]> : tensor<4x1xf32>
  %y = kiln.mul %m, %mult : (tensor<4x3xf32>, tensor<4x1xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}

// -----

// negative_: the unscaled product is also a result.
// CHECK-LABEL: func @negative_requantized_product_returned
// CHECK: %[[M:.*]] = kiln.matmul
// CHECK: kiln.mul %[[M]]
func.func @negative_requantized_product_returned(%q: tensor<4x6xui8>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
  %qf = kiln.cast %q : tensor<4x6xui8> -> tensor<4x6xf32>
  %zf = kiln.constant dense<1.280000e+02> : tensor<f32>
  %a = kiln.sub %qf, %zf : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x6xf32>
  %p = kiln.constant dense<[[[130, 183, 14, 238, 127, 26]], [[80, 57, 190, 240, 126, 194]], [[52, 127, 6, 110, 208, 143]]]> : tensor<3x1x6xui8>
  %one = kiln.constant dense<1.000000e+00> : tensor<3x1xf32>
  %w = kiln.dequantize %p, %one {bits = 8 : i64, block_size = 6 : i64} : (tensor<3x1x6xui8>, tensor<3x1xf32>) -> tensor<3x6xf32>
  %m = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<4x6xf32>, tensor<3x6xf32>) -> tensor<4x3xf32>
  %mult = kiln.constant dense<[5.000000e-03, 2.500000e-03, 1.000000e-02]> : tensor<3xf32>
  %y = kiln.mul %m, %mult : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  return %y, %m : tensor<4x3xf32>, tensor<4x3xf32>
}

// -----

// onnxruntime's QOperator QGemm with its int32 C, as the importer writes
// it: the integer sum plus C in int32, then the multiplier (alpha *
// a_scale * b_scale / y_scale, one a column). The integer GEMM's form with
// C as its fp32 bias (exact below 2^24): A scaled by 2, the weights' scales
// 1/2, so that the GEMM's float(sum) + float(C) is onnxruntime's
// float(sum + C); the multiplier after it.
// CHECK-LABEL: func @biased_product_form
// CHECK-DAG: %[[TWO:.*]] = kiln.constant dense<2.000000e+00> : tensor<f32>
// CHECK-DAG: %[[HALF:.*]] = kiln.constant dense<5.000000e-01> : tensor<3x1xf32>
// CHECK-DAG: %[[C:.*]] = kiln.constant dense<[-3.000000e+03, 0x4B7FFFFF, 4.200000e+01]> : tensor<3xf32>
// CHECK-DAG: %[[MULT:.*]] = kiln.constant dense<[5.000000e-03, 2.500000e-03, 0.00999999977]> : tensor<3xf32>
// CHECK: %[[A:.*]] = kiln.sub
// CHECK: %[[SA:.*]] = kiln.mul %[[A]], %[[TWO]] : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x6xf32>
// CHECK: %[[W:.*]] = kiln.dequantize %{{.*}}, %[[HALF]] {bits = 8 : i64, block_size = 6 : i64}
// CHECK: %[[P:.*]] = kiln.matmul %[[SA]], %[[W]] {transpose_rhs = true}
// CHECK-NEXT: %[[B:.*]] = kiln.add %[[P]], %[[C]] : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
// CHECK-NEXT: %[[Y:.*]] = kiln.mul %[[B]], %[[MULT]]
// CHECK-NEXT: kiln.round %[[Y]]
// CHECK-NOT: kiln.cast
func.func @biased_product_form(%q: tensor<4x6xui8>) -> tensor<4x3xf32> {
  %qf = kiln.cast %q : tensor<4x6xui8> -> tensor<4x6xf32>
  %zf = kiln.constant dense<1.280000e+02> : tensor<f32>
  %a = kiln.sub %qf, %zf : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x6xf32>
  %p = kiln.constant dense<[[[130, 183, 14, 238, 127, 26]], [[80, 57, 190, 240, 126, 194]], [[52, 127, 6, 110, 208, 143]]]> : tensor<3x1x6xui8>
  %one = kiln.constant dense<1.000000e+00> : tensor<3x1xf32>
  %w = kiln.dequantize %p, %one {bits = 8 : i64, block_size = 6 : i64} : (tensor<3x1x6xui8>, tensor<3x1xf32>) -> tensor<3x6xf32>
  %m = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<4x6xf32>, tensor<3x6xf32>) -> tensor<4x3xf32>
  %i = kiln.cast %m : tensor<4x3xf32> -> tensor<4x3xi32>
  %c = kiln.constant dense<[-3000, 16777215, 42]> : tensor<3xi32>
  %s = kiln.add %i, %c : (tensor<4x3xi32>, tensor<3xi32>) -> tensor<4x3xi32>
  %f = kiln.cast %s : tensor<4x3xi32> -> tensor<4x3xf32>
  %mult = kiln.constant dense<[5.000000e-03, 2.500000e-03, 1.000000e-02]> : tensor<3xf32>
  %y = kiln.mul %f, %mult : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %r = kiln.round %y : tensor<4x3xf32>
  return %r : tensor<4x3xf32>
}

// -----

// negative_: a C of 2^24 has no exact fp32: the sum stays in int32.
// CHECK-LABEL: func @negative_biased_c_not_exact
// CHECK: %[[M:.*]] = kiln.matmul
// CHECK: kiln.cast %[[M]] : tensor<4x3xf32> -> tensor<4x3xi32>
// CHECK: kiln.add %{{.*}}, %{{.*}} : (tensor<4x3xi32>, tensor<3xi32>)
func.func @negative_biased_c_not_exact(%q: tensor<4x6xui8>) -> tensor<4x3xf32> {
  %qf = kiln.cast %q : tensor<4x6xui8> -> tensor<4x6xf32>
  %zf = kiln.constant dense<1.280000e+02> : tensor<f32>
  %a = kiln.sub %qf, %zf : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x6xf32>
  %p = kiln.constant dense<[[[130, 183, 14, 238, 127, 26]], [[80, 57, 190, 240, 126, 194]], [[52, 127, 6, 110, 208, 143]]]> : tensor<3x1x6xui8>
  %one = kiln.constant dense<1.000000e+00> : tensor<3x1xf32>
  %w = kiln.dequantize %p, %one {bits = 8 : i64, block_size = 6 : i64} : (tensor<3x1x6xui8>, tensor<3x1xf32>) -> tensor<3x6xf32>
  %m = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<4x6xf32>, tensor<3x6xf32>) -> tensor<4x3xf32>
  %i = kiln.cast %m : tensor<4x3xf32> -> tensor<4x3xi32>
  %c = kiln.constant dense<[-3000, 16777216, 42]> : tensor<3xi32>
  %s = kiln.add %i, %c : (tensor<4x3xi32>, tensor<3xi32>) -> tensor<4x3xi32>
  %f = kiln.cast %s : tensor<4x3xi32> -> tensor<4x3xf32>
  %mult = kiln.constant dense<[5.000000e-03, 2.500000e-03, 1.000000e-02]> : tensor<3xf32>
  %y = kiln.mul %f, %mult : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}

// -----

// negative_: a C of the result's shape (one a row and column) is no bias
// of the columns; nor is one that is not a constant.
// CHECK-LABEL: func @negative_biased_c_per_element
// CHECK: %[[M:.*]] = kiln.matmul
// CHECK: kiln.cast %[[M]] : tensor<4x3xf32> -> tensor<4x3xi32>
// CHECK-LABEL: func @negative_biased_c_input
// CHECK: %[[M:.*]] = kiln.matmul
// CHECK: kiln.cast %[[M]] : tensor<4x3xf32> -> tensor<4x3xi32>
func.func @negative_biased_c_per_element(%q: tensor<4x6xui8>) -> tensor<4x3xf32> {
  %qf = kiln.cast %q : tensor<4x6xui8> -> tensor<4x6xf32>
  %zf = kiln.constant dense<1.280000e+02> : tensor<f32>
  %a = kiln.sub %qf, %zf : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x6xf32>
  %p = kiln.constant dense<[[[130, 183, 14, 238, 127, 26]], [[80, 57, 190, 240, 126, 194]], [[52, 127, 6, 110, 208, 143]]]> : tensor<3x1x6xui8>
  %one = kiln.constant dense<1.000000e+00> : tensor<3x1xf32>
  %w = kiln.dequantize %p, %one {bits = 8 : i64, block_size = 6 : i64} : (tensor<3x1x6xui8>, tensor<3x1xf32>) -> tensor<3x6xf32>
  %m = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<4x6xf32>, tensor<3x6xf32>) -> tensor<4x3xf32>
  %i = kiln.cast %m : tensor<4x3xf32> -> tensor<4x3xi32>
  %c = kiln.constant dense<[[1, 2, 3], [4, 5, 6], [7, 8, 9], [10, 11, 12]]> : tensor<4x3xi32>
  %s = kiln.add %i, %c : (tensor<4x3xi32>, tensor<4x3xi32>) -> tensor<4x3xi32>
  %f = kiln.cast %s : tensor<4x3xi32> -> tensor<4x3xf32>
  %mult = kiln.constant dense<[5.000000e-03, 2.500000e-03, 1.000000e-02]> : tensor<3xf32>
  %y = kiln.mul %f, %mult : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}
func.func @negative_biased_c_input(%q: tensor<4x6xui8>, %c: tensor<3xi32>) -> tensor<4x3xf32> {
  %qf = kiln.cast %q : tensor<4x6xui8> -> tensor<4x6xf32>
  %zf = kiln.constant dense<1.280000e+02> : tensor<f32>
  %a = kiln.sub %qf, %zf : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x6xf32>
  %p = kiln.constant dense<[[[130, 183, 14, 238, 127, 26]], [[80, 57, 190, 240, 126, 194]], [[52, 127, 6, 110, 208, 143]]]> : tensor<3x1x6xui8>
  %one = kiln.constant dense<1.000000e+00> : tensor<3x1xf32>
  %w = kiln.dequantize %p, %one {bits = 8 : i64, block_size = 6 : i64} : (tensor<3x1x6xui8>, tensor<3x1xf32>) -> tensor<3x6xf32>
  %m = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<4x6xf32>, tensor<3x6xf32>) -> tensor<4x3xf32>
  %i = kiln.cast %m : tensor<4x3xf32> -> tensor<4x3xi32>
  %s = kiln.add %i, %c : (tensor<4x3xi32>, tensor<3xi32>) -> tensor<4x3xi32>
  %f = kiln.cast %s : tensor<4x3xi32> -> tensor<4x3xf32>
  %mult = kiln.constant dense<[5.000000e-03, 2.500000e-03, 1.000000e-02]> : tensor<3xf32>
  %y = kiln.mul %f, %mult : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}
