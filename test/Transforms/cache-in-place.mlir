// RUN: kiln-opt %s -split-input-file -kiln-cache-in-place | FileCheck %s

// A decoder layer's cache as GPT-2's export writes it: present = concat(past,
// new) along the sequence, read by attention and returned. The past becomes
// the cache at its largest length (p + s at most 7 + 4 = 11), the present an
// update of its new rows at offset p, and attention reads the valid rows.
#p = #kiln.dims<["p"]>
#s = #kiln.dims<["s"]>
#t = #kiln.dims<["p + s"]>
// CHECK-LABEL: func.func @decoder
// CHECK-SAME: (%[[X:.*]]: tensor<1x?x8xf32, #{{.*}}>, %[[MASK:.*]]: tensor<1x?xf32, #{{.*}}>, %[[PK:.*]]: tensor<1x2x11x4xf32>, %[[PV:.*]]: tensor<1x2x11x4xf32>)
// CHECK-SAME: -> (tensor<1x?x8xf32, #{{.*}}>, tensor<1x2x11x4xf32>, tensor<1x2x11x4xf32>)
// CHECK: %[[K:.*]] = kiln.update_slice %[[PK]], %{{.*}} {axis = 2 : i64, offset = "p"} : (tensor<1x2x11x4xf32>, tensor<1x2x?x4xf32, #{{.*}}>) -> tensor<1x2x11x4xf32>
// CHECK-NEXT: %[[KV:.*]] = kiln.slice %[[K]] {starts = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1, 1, 1>} : tensor<1x2x11x4xf32> -> tensor<1x2x?x4xf32, #kiln.dims<["p + s"]>>
// CHECK: %[[V:.*]] = kiln.update_slice %[[PV]], %{{.*}} {axis = 2 : i64, offset = "p"}
// CHECK-NEXT: %[[VV:.*]] = kiln.slice %[[V]]
// CHECK-NOT: kiln.concat
// CHECK: kiln.attention %{{.*}}, %[[KV]], %[[VV]]
// CHECK: return %{{.*}}, %[[K]], %[[V]]
func.func @decoder(%x: tensor<1x?x8xf32, #s>, %mask: tensor<1x?xf32, #t>,
                   %pk: tensor<1x2x?x4xf32, #p>, %pv: tensor<1x2x?x4xf32, #p>)
    -> (tensor<1x?x8xf32, #s>, tensor<1x2x?x4xf32, #t>, tensor<1x2x?x4xf32, #t>)
    attributes {kiln.dim_ranges = {p = array<i64: 0, 7>, s = array<i64: 1, 4>}} {
  %heads = kiln.reshape %x : tensor<1x?x8xf32, #s> -> tensor<1x?x2x4xf32, #s>
  %q = kiln.transpose %heads {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x?x2x4xf32, #s> -> tensor<1x2x?x4xf32, #s>
  %two = kiln.constant dense<2.0> : tensor<f32>
  %knew = kiln.mul %q, %two : (tensor<1x2x?x4xf32, #s>, tensor<f32>) -> tensor<1x2x?x4xf32, #s>
  %k = kiln.concat %pk, %knew {axis = 2 : i64} : (tensor<1x2x?x4xf32, #p>, tensor<1x2x?x4xf32, #s>) -> tensor<1x2x?x4xf32, #t>
  %v = kiln.concat %pv, %q {axis = 2 : i64} : (tensor<1x2x?x4xf32, #p>, tensor<1x2x?x4xf32, #s>) -> tensor<1x2x?x4xf32, #t>
  %m = kiln.reshape %mask : tensor<1x?xf32, #t> -> tensor<1x1x1x?xf32, #t>
  %a = kiln.attention %q, %k, %v, %m {scale = 0.5 : f32} : (tensor<1x2x?x4xf32, #s>, tensor<1x2x?x4xf32, #t>, tensor<1x2x?x4xf32, #t>, tensor<1x1x1x?xf32, #t>) -> tensor<1x2x?x4xf32, #s>
  %merged = kiln.transpose %a {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x2x?x4xf32, #s> -> tensor<1x?x2x4xf32, #s>
  %out = kiln.reshape %merged : tensor<1x?x2x4xf32, #s> -> tensor<1x?x8xf32, #s>
  return %out, %k, %v : tensor<1x?x8xf32, #s>, tensor<1x2x?x4xf32, #t>, tensor<1x2x?x4xf32, #t>
}

// -----

// Left alone: the past is read by something besides its append (it would
// be overwritten past its valid rows).
#p = #kiln.dims<["p"]>
#s = #kiln.dims<["s"]>
#t = #kiln.dims<["p + s"]>
// CHECK-LABEL: func.func @negative_past_read_twice
// CHECK-SAME: tensor<1x?xf32, #kiln.dims<["p"]>>
// CHECK: kiln.concat
// CHECK-NOT: kiln.update_slice
func.func @negative_past_read_twice(%past: tensor<1x?xf32, #p>, %new: tensor<1x?xf32, #s>)
    -> (tensor<1x?xf32, #t>, tensor<1x?xf32, #p>)
    attributes {kiln.dim_ranges = {p = array<i64: 0, 7>, s = array<i64: 1, 4>}} {
  %c = kiln.concat %past, %new {axis = 1 : i64} : (tensor<1x?xf32, #p>, tensor<1x?xf32, #s>) -> tensor<1x?xf32, #t>
  %r = kiln.relu %past : tensor<1x?xf32, #p>
  return %c, %r : tensor<1x?xf32, #t>, tensor<1x?xf32, #p>
}

// -----

// Left alone: the concat's first operand is not the past input (the new rows
// go first), and a concat that is not returned is no cache.
#p = #kiln.dims<["p"]>
#s = #kiln.dims<["s"]>
#t = #kiln.dims<["p + s"]>
// CHECK-LABEL: func.func @negative_not_an_append
// CHECK-NOT: kiln.update_slice
// CHECK: kiln.concat
// CHECK: kiln.concat
func.func @negative_not_an_append(%past: tensor<1x?xf32, #p>, %other: tensor<1x?xf32, #p>, %new: tensor<1x?xf32, #s>)
    -> (tensor<1x?xf32, #t>, tensor<1x?xf32, #t>)
    attributes {kiln.dim_ranges = {p = array<i64: 0, 7>, s = array<i64: 1, 4>}} {
  %c = kiln.concat %new, %past {axis = 1 : i64} : (tensor<1x?xf32, #s>, tensor<1x?xf32, #p>) -> tensor<1x?xf32, #t>
  %d = kiln.concat %other, %new {axis = 1 : i64} : (tensor<1x?xf32, #p>, tensor<1x?xf32, #s>) -> tensor<1x?xf32, #t>
  %e = kiln.relu %d : tensor<1x?xf32, #t>
  return %c, %e : tensor<1x?xf32, #t>, tensor<1x?xf32, #t>
}

// -----

// Left alone: a past of fixed length grows nothing, and a symbolic length
// without a range has no largest size to give the buffer.
#s = #kiln.dims<["s"]>
#t = #kiln.dims<["s + 3"]>
#q = #kiln.dims<["q"]>
#u = #kiln.dims<["q + s"]>
// CHECK-LABEL: func.func @negative_static_or_unbounded
// CHECK-NOT: kiln.update_slice
func.func @negative_static_or_unbounded(%past: tensor<1x3xf32>, %new: tensor<1x?xf32, #s>, %open: tensor<1x?xf32, #q>)
    -> (tensor<1x?xf32, #t>, tensor<1x?xf32, #u>)
    attributes {kiln.dim_ranges = {s = array<i64: 1, 4>}} {
  %c = kiln.concat %past, %new {axis = 1 : i64} : (tensor<1x3xf32>, tensor<1x?xf32, #s>) -> tensor<1x?xf32, #t>
  %d = kiln.concat %open, %new {axis = 1 : i64} : (tensor<1x?xf32, #q>, tensor<1x?xf32, #s>) -> tensor<1x?xf32, #u>
  return %c, %d : tensor<1x?xf32, #t>, tensor<1x?xf32, #u>
}
