// RUN: kiln-opt %s -split-input-file -kiln-fuse | FileCheck %s
// RUN: kiln-run %s --compare-pipeline --seed 7 | FileCheck %s --check-prefix=SEMANTICS
// (Every function of the file, each before and after the whole pipeline.)
// SEMANTICS: pipeline keeps semantics

// CHECK-LABEL: func @elementwise_chain
// CHECK: %[[K:.*]] = kiln.kernel elementwise(%arg0, %arg1)
// CHECK-NEXT: ^bb0(%[[X:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<8xf32>):
// CHECK-NEXT: %[[S:.*]] = kiln.add %[[X]], %[[B]]
// CHECK-NEXT: %[[R:.*]] = kiln.relu %[[S]]
// CHECK-NEXT: kiln.yield %[[R]]
// CHECK: return %[[K]]
func.func @elementwise_chain(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %s = kiln.add %x, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %r = kiln.relu %s : tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func @reduction_prologue_epilogue
// CHECK: kiln.kernel reduction
// CHECK: kiln.add
// CHECK: kiln.layer_norm
// CHECK: kiln.exp
// CHECK: kiln.yield
// CHECK-NOT: kiln.kernel
func.func @reduction_prologue_epilogue(%x: tensor<4x8xf32>, %b: tensor<8xf32>, %g: tensor<8xf32>) -> tensor<4x8xf32> {
  %s = kiln.add %x, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %n = kiln.layer_norm %s, %g {axis = 1 : i64, epsilon = 1.0e-5 : f32} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %e = kiln.exp %n : tensor<4x8xf32>
  return %e : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func @softmax_then_scale
// CHECK: kiln.kernel reduction
// CHECK: kiln.softmax
// CHECK: kiln.mul
// CHECK: kiln.yield
func.func @softmax_then_scale(%x: tensor<2x3x5xf32>, %c: tensor<f32>) -> tensor<2x3x5xf32> {
  %p = kiln.softmax %x {axis = 1 : i64} : tensor<2x3x5xf32>
  %m = kiln.mul %p, %c : (tensor<2x3x5xf32>, tensor<f32>) -> tensor<2x3x5xf32>
  return %m : tensor<2x3x5xf32>
}

// -----

/// A reduction's epilogue takes ops that read one value twice (a
/// QuantizeLinear's NaN test and select both read the rounded value): the
/// norm's kernel writes the 8-bit bytes, and no kernel of its own clamps and
/// casts them.
// CHECK-LABEL: func @reduction_epilogue_quantizes
// CHECK: %[[K:.*]] = kiln.kernel reduction({{.*}}) : {{.*}} -> tensor<4x8xi8>
// CHECK: kiln.layer_norm
// CHECK: kiln.round
// CHECK-NEXT: kiln.is_nan
// CHECK-NEXT: kiln.where
// CHECK-NEXT: kiln.max
// CHECK-NEXT: kiln.min
// CHECK-NEXT: kiln.cast %{{.*}} : tensor<4x8xf32> -> tensor<4x8xi8>
// CHECK-NEXT: kiln.yield
// CHECK-NOT: kiln.kernel
// CHECK: return %[[K]]
func.func @reduction_epilogue_quantizes(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %s: tensor<f32>, %lo: tensor<f32>, %hi: tensor<f32>) -> tensor<4x8xi8> {
  %n = kiln.layer_norm %x, %g {axis = 1 : i64, epsilon = 1.0e-5 : f32} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %d = kiln.div %n, %s : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %r = kiln.round %d : tensor<4x8xf32>
  %nan = kiln.is_nan %r : tensor<4x8xf32> -> tensor<4x8xi1>
  %v = kiln.where %nan, %lo, %r : (tensor<4x8xi1>, tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %l = kiln.max %v, %lo : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %h = kiln.min %l, %hi : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %i = kiln.cast %h : tensor<4x8xf32> -> tensor<4x8xi8>
  return %i : tensor<4x8xi8>
}

// -----

/// negative_: the epilogue ends at its last value that nothing outside reads
/// but that value: the rounded value also returned, the NaN test and what
/// follows it are a kernel of their own that reads it.
// CHECK-LABEL: func @negative_reduction_epilogue_read_outside
// CHECK: %[[K:.*]] = kiln.kernel reduction({{.*}}) : {{.*}} -> tensor<4x8xf32>
// CHECK: kiln.layer_norm
// CHECK-NEXT: kiln.div
// CHECK-NEXT: kiln.round
// CHECK-NEXT: kiln.yield
// CHECK: %[[E:.*]] = kiln.kernel elementwise(%[[K]]
// CHECK: kiln.is_nan
// CHECK: return %[[E]], %[[K]]
func.func @negative_reduction_epilogue_read_outside(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %s: tensor<f32>, %lo: tensor<f32>, %hi: tensor<f32>) -> (tensor<4x8xi8>, tensor<4x8xf32>) {
  %n = kiln.layer_norm %x, %g {axis = 1 : i64, epsilon = 1.0e-5 : f32} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %d = kiln.div %n, %s : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %r = kiln.round %d : tensor<4x8xf32>
  %nan = kiln.is_nan %r : tensor<4x8xf32> -> tensor<4x8xi1>
  %v = kiln.where %nan, %lo, %r : (tensor<4x8xi1>, tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %l = kiln.max %v, %lo : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %h = kiln.min %l, %hi : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %i = kiln.cast %h : tensor<4x8xf32> -> tensor<4x8xi8>
  return %i, %r : tensor<4x8xi8>, tensor<4x8xf32>
}

// -----

/// negative_: an op that reads the softmax at another shape (a broadcast
/// add) cannot join its kernel, so the exp that reads the softmax beside it
/// cannot either: the softmax is stored for both.
// CHECK-LABEL: func @negative_reduction_epilogue_other_shape
// CHECK: %[[K:.*]] = kiln.kernel reduction
// CHECK: kiln.softmax
// CHECK-NEXT: kiln.yield
// CHECK: kiln.kernel elementwise(%[[K]])
// CHECK: kiln.exp
// CHECK: kiln.kernel elementwise(%[[K]]
// CHECK: kiln.add
func.func @negative_reduction_epilogue_other_shape(%x: tensor<2x3x5xf32>, %y: tensor<4x2x3x5xf32>) -> (tensor<2x3x5xf32>, tensor<4x2x3x5xf32>) {
  %p = kiln.softmax %x {axis = 2 : i64} : tensor<2x3x5xf32>
  %e = kiln.exp %p : tensor<2x3x5xf32>
  %b = kiln.add %p, %y : (tensor<2x3x5xf32>, tensor<4x2x3x5xf32>) -> tensor<4x2x3x5xf32>
  return %e, %b : tensor<2x3x5xf32>, tensor<4x2x3x5xf32>
}

// -----

/// A value with a use outside the chain is computed once, in its own kernel,
/// and read by the other: fusing it twice would duplicate work.
// CHECK-LABEL: func @negative_shared_producer
// CHECK: %[[E:.*]] = kiln.kernel elementwise(%arg0)
// CHECK: kiln.exp
// CHECK: kiln.kernel elementwise(%[[E]])
// CHECK: kiln.kernel elementwise(%[[E]])
func.func @negative_shared_producer(%x: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
  %e = kiln.exp %x : tensor<16xf32>
  %a = kiln.relu %e : tensor<16xf32>
  %b = kiln.neg %e : tensor<16xf32>
  return %a, %b : tensor<16xf32>, tensor<16xf32>
}

// -----

/// Matmuls stay outside kernels (cuBLASLt steps) and reshapes are views.
// CHECK-LABEL: func @negative_matmul_reshape
// CHECK-NOT: kiln.kernel
// CHECK: kiln.matmul
// CHECK: kiln.reshape
func.func @negative_matmul_reshape(%a: tensor<4x8xf32>, %b: tensor<8x2xf32>) -> tensor<8xf32> {
  %m = kiln.matmul %a, %b : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
  %r = kiln.reshape %m : tensor<4x2xf32> -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

/// A producer at a broadcast (smaller) shape is not pulled into a kernel that
/// iterates over a larger one.
// CHECK-LABEL: func @negative_broadcast_producer
// CHECK: kiln.kernel elementwise(%arg1)
// CHECK: kiln.exp
// CHECK: kiln.kernel elementwise
// CHECK: kiln.add
func.func @negative_broadcast_producer(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %e = kiln.exp %b : tensor<8xf32>
  %s = kiln.add %x, %e : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}

// -----

// An attention kernel takes the head split of its operands (reshape,
// transpose, the slice of a packed projection) and the transpose merging
// heads back. The packed projection's bias add is left to its GEMM (the
// bias epilogue, free in cuBLASLt): the attention reads the biased
// projection itself, rows it copies whole.
// CHECK-LABEL: func @attention_group
// CHECK: %[[P:.*]] = kiln.kernel gemm(%arg0, %arg2, %arg1)
// CHECK: kiln.matmul
// CHECK: kiln.add
// CHECK: %[[K:.*]] = kiln.kernel attention(%[[P]])
// CHECK-NOT: kiln.add
// CHECK: kiln.slice
// CHECK: kiln.reshape
// CHECK: kiln.transpose
// CHECK: %[[A:.*]] = kiln.attention
// CHECK: %[[T:.*]] = kiln.transpose %[[A]]
// CHECK: kiln.yield %[[T]]
// CHECK: kiln.reshape %[[K]]
func.func @attention_group(%x: tensor<2x3x8xf32>, %b: tensor<12xf32>, %w: tensor<8x12xf32>) -> tensor<2x3x4xf32> {
  %p = kiln.matmul %x, %w : (tensor<2x3x8xf32>, tensor<8x12xf32>) -> tensor<2x3x12xf32>
  %pb = kiln.add %p, %b : (tensor<2x3x12xf32>, tensor<12xf32>) -> tensor<2x3x12xf32>
  %q = kiln.slice %pb {starts = array<i64: 0, 0, 0>, strides = array<i64: 1, 1, 1>} : tensor<2x3x12xf32> -> tensor<2x3x4xf32>
  %k = kiln.slice %pb {starts = array<i64: 0, 0, 4>, strides = array<i64: 1, 1, 1>} : tensor<2x3x12xf32> -> tensor<2x3x4xf32>
  %v = kiln.slice %pb {starts = array<i64: 0, 0, 8>, strides = array<i64: 1, 1, 1>} : tensor<2x3x12xf32> -> tensor<2x3x4xf32>
  %q4 = kiln.reshape %q : tensor<2x3x4xf32> -> tensor<2x3x2x2xf32>
  %k4 = kiln.reshape %k : tensor<2x3x4xf32> -> tensor<2x3x2x2xf32>
  %v4 = kiln.reshape %v : tensor<2x3x4xf32> -> tensor<2x3x2x2xf32>
  %qt = kiln.transpose %q4 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x3x2x2xf32> -> tensor<2x2x3x2xf32>
  %kt = kiln.transpose %k4 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x3x2x2xf32> -> tensor<2x2x3x2xf32>
  %vt = kiln.transpose %v4 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x3x2x2xf32> -> tensor<2x2x3x2xf32>
  %o = kiln.attention %qt, %kt, %vt {scale = 0.7 : f32} : (tensor<2x2x3x2xf32>, tensor<2x2x3x2xf32>, tensor<2x2x3x2xf32>) -> tensor<2x2x3x2xf32>
  %ot = kiln.transpose %o {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x2x3x2xf32> -> tensor<2x3x2x2xf32>
  %r = kiln.reshape %ot : tensor<2x3x2x2xf32> -> tensor<2x3x4xf32>
  return %r : tensor<2x3x4xf32>
}

// -----

// negative_: a bias added to a product that is also returned is no GEMM
// epilogue (the product must be stored as it is): the attention kernel
// computes the sum where it reads the key.
// CHECK-LABEL: func @negative_attention_bias_of_shared_product
// CHECK: %[[P:.*]] = kiln.matmul
// CHECK: kiln.kernel attention(%[[P]], %arg3, %arg0, %arg4)
// CHECK: kiln.add
// CHECK: kiln.attention
func.func @negative_attention_bias_of_shared_product(%q: tensor<1x2x3x2xf32>, %x: tensor<1x3x8xf32>, %w: tensor<8x4xf32>, %b: tensor<4xf32>, %v: tensor<1x2x3x2xf32>) -> (tensor<1x2x3x2xf32>, tensor<1x3x4xf32>) {
  %p = kiln.matmul %x, %w : (tensor<1x3x8xf32>, tensor<8x4xf32>) -> tensor<1x3x4xf32>
  %pb = kiln.add %p, %b : (tensor<1x3x4xf32>, tensor<4xf32>) -> tensor<1x3x4xf32>
  %k4 = kiln.reshape %pb : tensor<1x3x4xf32> -> tensor<1x3x2x2xf32>
  %k = kiln.transpose %k4 {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x3x2x2xf32> -> tensor<1x2x3x2xf32>
  %o = kiln.attention %q, %k, %v {scale = 0.7 : f32} : (tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>) -> tensor<1x2x3x2xf32>
  return %o, %p : tensor<1x2x3x2xf32>, tensor<1x3x4xf32>
}

// -----

// Where every run has more queries than a tensor-core block's 64 rows,
// each query tile would stage the keys and values again: their compute (a
// scaling here, as a rotary embedding's multiply-add) is a kernel of its
// own, computed once, and the attention reads its result through the head
// split (data movement stays). The query's compute stays in the attention
// kernel, which stages each query row once.
// CHECK-LABEL: func @attention_long_queries_keys_apart
// CHECK: %[[KS:.*]] = kiln.kernel elementwise(%arg1, %arg3)
// CHECK: kiln.mul
// CHECK: kiln.kernel attention(%arg0, %arg3, %[[KS]], %arg2)
// CHECK: kiln.mul
// CHECK: kiln.transpose
// CHECK: kiln.attention
func.func @attention_long_queries_keys_apart(%q: tensor<1x2x80x4xf32>, %k: tensor<1x40x2x4xf32>, %v: tensor<1x2x40x4xf32>, %c: tensor<f32>) -> tensor<1x2x80x4xf32> {
  %qs = kiln.mul %q, %c : (tensor<1x2x80x4xf32>, tensor<f32>) -> tensor<1x2x80x4xf32>
  %ks = kiln.mul %k, %c : (tensor<1x40x2x4xf32>, tensor<f32>) -> tensor<1x40x2x4xf32>
  %kt = kiln.transpose %ks {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x40x2x4xf32> -> tensor<1x2x40x4xf32>
  %o = kiln.attention %qs, %kt, %v {scale = 0.5 : f32} : (tensor<1x2x80x4xf32>, tensor<1x2x40x4xf32>, tensor<1x2x40x4xf32>) -> tensor<1x2x80x4xf32>
  return %o : tensor<1x2x80x4xf32>
}

// -----

// negative_: 64 queries are one tile, whose keys are staged once: the keys'
// compute stays in the attention kernel.
// CHECK-LABEL: func @negative_attention_one_query_tile_keeps_keys
// CHECK-NOT: kiln.kernel elementwise
// CHECK: kiln.kernel attention(%arg0, %arg3, %arg1, %arg2)
// CHECK: kiln.mul
// CHECK: kiln.mul
// CHECK: kiln.attention
func.func @negative_attention_one_query_tile_keeps_keys(%q: tensor<1x2x64x4xf32>, %k: tensor<1x40x2x4xf32>, %v: tensor<1x2x40x4xf32>, %c: tensor<f32>) -> tensor<1x2x64x4xf32> {
  %qs = kiln.mul %q, %c : (tensor<1x2x64x4xf32>, tensor<f32>) -> tensor<1x2x64x4xf32>
  %ks = kiln.mul %k, %c : (tensor<1x40x2x4xf32>, tensor<f32>) -> tensor<1x40x2x4xf32>
  %kt = kiln.transpose %ks {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x40x2x4xf32> -> tensor<1x2x40x4xf32>
  %o = kiln.attention %qs, %kt, %v {scale = 0.5 : f32} : (tensor<1x2x64x4xf32>, tensor<1x2x40x4xf32>, tensor<1x2x40x4xf32>) -> tensor<1x2x64x4xf32>
  return %o : tensor<1x2x64x4xf32>
}

// -----

// negative_: a symbolic query length that may be 1 (a decoding step, whose
// kernel reads each key once) keeps the values' compute in the attention
// kernel; one whose least is 65 computes it apart.
// CHECK-LABEL: func @negative_attention_short_symbolic_queries
// CHECK-NOT: kiln.kernel elementwise
// CHECK: kiln.kernel attention
// CHECK: kiln.mul
// CHECK: kiln.attention
// CHECK-LABEL: func @attention_long_symbolic_queries
// CHECK: kiln.kernel elementwise
// CHECK: kiln.mul
// CHECK: kiln.kernel attention
// CHECK-NOT: kiln.mul
// CHECK: kiln.attention
#s = #kiln.dims<["s"]>
func.func @negative_attention_short_symbolic_queries(%q: tensor<1x2x?x4xf32, #s>, %k: tensor<1x2x40x4xf32>, %v: tensor<1x2x40x4xf32>, %c: tensor<f32>) -> tensor<1x2x?x4xf32, #s>
    attributes {kiln.dim_ranges = {s = array<i64: 1, 100>}} {
  %vs = kiln.mul %v, %c : (tensor<1x2x40x4xf32>, tensor<f32>) -> tensor<1x2x40x4xf32>
  %o = kiln.attention %q, %k, %vs {scale = 0.5 : f32} : (tensor<1x2x?x4xf32, #s>, tensor<1x2x40x4xf32>, tensor<1x2x40x4xf32>) -> tensor<1x2x?x4xf32, #s>
  return %o : tensor<1x2x?x4xf32, #s>
}
func.func @attention_long_symbolic_queries(%q: tensor<1x2x?x4xf32, #s>, %k: tensor<1x2x40x4xf32>, %v: tensor<1x2x40x4xf32>, %c: tensor<f32>) -> tensor<1x2x?x4xf32, #s>
    attributes {kiln.dim_ranges = {s = array<i64: 65, 100>}} {
  %vs = kiln.mul %v, %c : (tensor<1x2x40x4xf32>, tensor<f32>) -> tensor<1x2x40x4xf32>
  %o = kiln.attention %q, %k, %vs {scale = 0.5 : f32} : (tensor<1x2x?x4xf32, #s>, tensor<1x2x40x4xf32>, tensor<1x2x40x4xf32>) -> tensor<1x2x?x4xf32, #s>
  return %o : tensor<1x2x?x4xf32, #s>
}

// -----

// Data movement read only by an elementwise chain is fused into it: the
// rotate-half of rotary embeddings (two slices, a negation and a concat)
// and the multiply-add around it make one kernel. The negation computes at
// the slice's shape, behind the concat.
// CHECK-LABEL: func @rotate_half
// CHECK: %[[K:.*]] = kiln.kernel elementwise(%arg0, %arg1, %arg2)
// CHECK-DAG: kiln.slice
// CHECK-DAG: kiln.neg
// CHECK: kiln.concat
// CHECK: kiln.yield
// CHECK-NOT: kiln.kernel
// CHECK: return %[[K]]
func.func @rotate_half(%x: tensor<2x8xf32>, %cos: tensor<2x8xf32>, %sin: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %lo = kiln.slice %x {starts = array<i64: 0, 0>, strides = array<i64: 1, 1>} : tensor<2x8xf32> -> tensor<2x4xf32>
  %hi = kiln.slice %x {starts = array<i64: 0, 4>, strides = array<i64: 1, 1>} : tensor<2x8xf32> -> tensor<2x4xf32>
  %n = kiln.neg %hi : tensor<2x4xf32>
  %r = kiln.concat %n, %lo {axis = 1 : i64} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x8xf32>
  %a = kiln.mul %x, %cos : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %b = kiln.mul %r, %sin : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %s = kiln.add %a, %b : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %s : tensor<2x8xf32>
}

// -----

// A gather with elementwise producers of its data becomes one elementwise
// kernel rooted at the gather (not a copy kernel of the gather alone).
// CHECK-LABEL: func @gather_of_elementwise
// CHECK: %[[K:.*]] = kiln.kernel elementwise(%arg0, %arg1)
// CHECK: kiln.exp
// CHECK: kiln.gather_elements
// CHECK-NOT: kiln.kernel
// CHECK: return %[[K]]
func.func @gather_of_elementwise(%x: tensor<4x6xf32>, %i: tensor<4x3xi64>) -> tensor<4x3xf32> {
  %e = kiln.exp %x : tensor<4x6xf32>
  %g = kiln.gather_elements %e, %i {axis = 1 : i64} : (tensor<4x6xf32>, tensor<4x3xi64>) -> tensor<4x3xf32>
  return %g : tensor<4x3xf32>
}

// -----

/// A transpose with another user outside the group is written once, by its
/// own copy kernel, and read by both: fusing it would duplicate it.
// CHECK-LABEL: func @negative_shared_transpose
// CHECK: %[[T:.*]] = kiln.kernel copy(%arg0)
// CHECK: kiln.kernel elementwise(%[[T]])
// CHECK: kiln.kernel elementwise(%[[T]])
func.func @negative_shared_transpose(%x: tensor<4x8xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %t = kiln.transpose %x {permutation = array<i64: 1, 0>} : tensor<4x8xf32> -> tensor<8x4xf32>
  %a = kiln.relu %t : tensor<8x4xf32>
  %b = kiln.neg %t : tensor<8x4xf32>
  return %a, %b : tensor<8x4xf32>, tensor<8x4xf32>
}

// -----

/// Behind data movement as in front of it, an elementwise producer that its
/// consumer broadcasts stays in its own kernel: fused, it would be computed
/// again for every element that reads it.
// CHECK-LABEL: func @negative_broadcast_behind_move
// CHECK: %[[E:.*]] = kiln.kernel elementwise(%arg1)
// CHECK: kiln.exp
// CHECK: kiln.kernel elementwise(%arg0, %[[E]])
// CHECK: kiln.transpose
// CHECK: kiln.add
func.func @negative_broadcast_behind_move(%x: tensor<4x8xf32>, %b: tensor<4xf32>) -> tensor<8x4xf32> {
  %t = kiln.transpose %x {permutation = array<i64: 1, 0>} : tensor<4x8xf32> -> tensor<8x4xf32>
  %e = kiln.exp %b : tensor<4xf32>
  %s = kiln.add %t, %e : (tensor<8x4xf32>, tensor<4xf32>) -> tensor<8x4xf32>
  return %s : tensor<8x4xf32>
}

// -----

// BERT's embeddings: word and position gathers summed into the LayerNorm's
// input are the reduction kernel's prologue, read through per element.
// CHECK-LABEL: func @embedding_layer_norm
// CHECK: %[[K:.*]] = kiln.kernel reduction(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5)
// CHECK-DAG: kiln.gather
// CHECK-DAG: kiln.gather
// CHECK: kiln.add
// CHECK: kiln.layer_norm
// CHECK-NOT: kiln.kernel
// CHECK: return %[[K]]
func.func @embedding_layer_norm(%words: tensor<50x8xf32>, %ids: tensor<2x5xi64>, %positions: tensor<16x8xf32>, %pos: tensor<2x5xi64>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<2x5x8xf32> {
  %w = kiln.gather %words, %ids {axis = 0 : i64} : (tensor<50x8xf32>, tensor<2x5xi64>) -> tensor<2x5x8xf32>
  %p = kiln.gather %positions, %pos {axis = 0 : i64} : (tensor<16x8xf32>, tensor<2x5xi64>) -> tensor<2x5x8xf32>
  %s = kiln.add %w, %p : (tensor<2x5x8xf32>, tensor<2x5x8xf32>) -> tensor<2x5x8xf32>
  %n = kiln.layer_norm %s, %g, %b {axis = 2 : i64, epsilon = 1.0e-5 : f32} : (tensor<2x5x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x5x8xf32>
  return %n : tensor<2x5x8xf32>
}

// -----

// A bias over the columns and a ReLU after a matmul: one GEMM kernel, which
// the CUDA target turns into one cuBLASLt call with its epilogue.
// CHECK-LABEL: func @gemm_bias_relu
// CHECK: %[[K:.*]] = kiln.kernel gemm(%arg0, %arg1, %arg2) {epilogue = #kiln.gemm_epilogue<bias = 2, activation = relu>}
// CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<2x5x3xf32>, %[[W:.*]]: tensor<3x7xf32>, %[[B:.*]]: tensor<1x7xf32>):
// CHECK-NEXT: %[[P:.*]] = kiln.matmul %[[A]], %[[W]]
// CHECK-NEXT: %[[S:.*]] = kiln.add %[[P]], %[[B]]
// CHECK-NEXT: %[[R:.*]] = kiln.relu %[[S]]
// CHECK-NEXT: kiln.yield %[[R]]
// CHECK: return %[[K]]
func.func @gemm_bias_relu(%a: tensor<2x5x3xf32>, %w: tensor<3x7xf32>, %b: tensor<1x7xf32>) -> tensor<2x5x7xf32> {
  %p = kiln.matmul %a, %w : (tensor<2x5x3xf32>, tensor<3x7xf32>) -> tensor<2x5x7xf32>
  %s = kiln.add %p, %b : (tensor<2x5x7xf32>, tensor<1x7xf32>) -> tensor<2x5x7xf32>
  %r = kiln.relu %s : tensor<2x5x7xf32>
  return %r : tensor<2x5x7xf32>
}

// -----

// The tanh GELU joins an fp32 GEMM; the bias may come first in the add.
// CHECK-LABEL: func @gemm_bias_gelu_tanh
// CHECK: kiln.kernel gemm({{.*}}) {epilogue = #kiln.gemm_epilogue<bias = {{[0-9]}}, activation = gelu>}
// CHECK: kiln.matmul
// CHECK: kiln.add
// CHECK: kiln.gelu {{.*}} approximate = tanh
// CHECK-NEXT: kiln.yield
func.func @gemm_bias_gelu_tanh(%a: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %p = kiln.matmul %a, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %s = kiln.add %b, %p : (tensor<16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %g = kiln.gelu %s approximate = tanh : tensor<4x16xf32>
  return %g : tensor<4x16xf32>
}

// -----

// The erf GELU joins a 16-bit GEMM: the tanh form cuBLASLt computes is
// within the 16-bit rounding of it.
// CHECK-LABEL: func @gemm_bias_gelu_erf_f16
// CHECK: kiln.kernel gemm
// CHECK: kiln.gelu
// CHECK-NEXT: kiln.yield
func.func @gemm_bias_gelu_erf_f16(%a: tensor<4x8xf16>, %w: tensor<8x16xf16>, %b: tensor<16xf16>) -> tensor<4x16xf16> {
  %p = kiln.matmul %a, %w : (tensor<4x8xf16>, tensor<8x16xf16>) -> tensor<4x16xf16>
  %s = kiln.add %p, %b : (tensor<4x16xf16>, tensor<16xf16>) -> tensor<4x16xf16>
  %g = kiln.gelu %s : tensor<4x16xf16>
  return %g : tensor<4x16xf16>
}

// -----

/// The erf GELU joins an fp32 GEMM too: Kiln's fp32 kernels compute it in
/// their epilogue, and after cuBLASLt (whose GELU is the tanh form) a
/// kernel of the step applies it (rt::MatmulActivation::GeluErf).
// CHECK-LABEL: func @gemm_bias_gelu_erf_f32
// CHECK: kiln.kernel gemm({{.*}}) {epilogue = #kiln.gemm_epilogue<bias = 2, activation = gelu>}
// CHECK: kiln.gelu
// CHECK-NOT: approximate
// CHECK: kiln.yield
// CHECK-NOT: kiln.kernel
func.func @gemm_bias_gelu_erf_f32(%a: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %p = kiln.matmul %a, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %s = kiln.add %p, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %g = kiln.gelu %s : tensor<4x16xf32>
  return %g : tensor<4x16xf32>
}

// -----

/// negative_: the erf GELU of an f64 product stays out of any GEMM kernel
/// (no kernel of Kiln's multiplies f64, and cuBLASLt's tanh form is not
/// it): an elementwise kernel adds the bias and computes it.
// CHECK-LABEL: func @negative_gemm_gelu_erf_f64
// CHECK-NOT: kiln.kernel gemm
// CHECK: %[[P:.*]] = kiln.matmul
// CHECK: kiln.kernel elementwise(%[[P]], %arg2)
// CHECK: kiln.gelu
func.func @negative_gemm_gelu_erf_f64(%a: tensor<4x8xf64>, %w: tensor<8x16xf64>, %b: tensor<16xf64>) -> tensor<4x16xf64> {
  %p = kiln.matmul %a, %w : (tensor<4x8xf64>, tensor<8x16xf64>) -> tensor<4x16xf64>
  %s = kiln.add %p, %b : (tensor<4x16xf64>, tensor<16xf64>) -> tensor<4x16xf64>
  %g = kiln.gelu %s : tensor<4x16xf64>
  return %g : tensor<4x16xf64>
}

// -----

/// A residual of the product's full shape joins as cuBLASLt's C (beta = 1),
/// the result written apart from it.
// CHECK-LABEL: func @gemm_residual
// CHECK: %[[K:.*]] = kiln.kernel gemm(%arg0, %arg1, %arg2) {epilogue = #kiln.gemm_epilogue<residual = 2>}
// CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<4x8xf32>, %[[W:.*]]: tensor<8x16xf32>, %[[R:.*]]: tensor<4x16xf32>):
// CHECK-NEXT: %[[P:.*]] = kiln.matmul %[[A]], %[[W]]
// CHECK-NEXT: %[[S:.*]] = kiln.add %[[R]], %[[P]]
// CHECK-NEXT: kiln.yield %[[S]]
// CHECK: return %[[K]]
func.func @gemm_residual(%a: tensor<4x8xf32>, %w: tensor<8x16xf32>, %r: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %p = kiln.matmul %a, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %s = kiln.add %r, %p : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  return %s : tensor<4x16xf32>
}

// -----

// GPT-2's attention output: a 2-D Gemm with its bias, a reshape to
// [b, s, n], the residual stream added, the sum used twice (the next
// LayerNorm and the next residual): one GEMM kernel writes it.
// CHECK-LABEL: func @gemm_bias_reshape_residual
// CHECK: %[[K:.*]] = kiln.kernel gemm(%arg0, %arg1, %arg2, %arg3) {epilogue = #kiln.gemm_epilogue<bias = 2, residual = 3>}
// CHECK: kiln.matmul
// CHECK-NEXT: kiln.add
// CHECK-NEXT: kiln.reshape
// CHECK-NEXT: kiln.add
// CHECK-NEXT: kiln.yield
// CHECK: kiln.kernel elementwise(%[[K]])
func.func @gemm_bias_reshape_residual(%a: tensor<16x32xf32>, %w: tensor<32x64xf32>, %b: tensor<64xf32>, %x: tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
  %p = kiln.matmul %a, %w : (tensor<16x32xf32>, tensor<32x64xf32>) -> tensor<16x64xf32>
  %s = kiln.add %p, %b : (tensor<16x64xf32>, tensor<64xf32>) -> tensor<16x64xf32>
  %r = kiln.reshape %s : tensor<16x64xf32> -> tensor<2x8x64xf32>
  %y = kiln.add %x, %r : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
  %z = kiln.mul %y, %y : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
  return %z : tensor<2x8x64xf32>
}

// -----

/// A residual broadcast over the columns is neither a bias nor of the
/// product's shape: the add is an elementwise kernel.
// CHECK-LABEL: func @negative_gemm_residual_broadcast
// CHECK-NOT: kiln.kernel gemm
// CHECK: kiln.matmul
// CHECK: kiln.kernel elementwise
func.func @negative_gemm_residual_broadcast(%a: tensor<4x8xf32>, %w: tensor<8x16xf32>, %r: tensor<4x1xf32>) -> tensor<4x16xf32> {
  %p = kiln.matmul %a, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %s = kiln.add %p, %r : (tensor<4x16xf32>, tensor<4x1xf32>) -> tensor<4x16xf32>
  return %s : tensor<4x16xf32>
}

// -----

/// A residual that an elementwise op computes for the add alone (a model
/// input converted to fp16) stays out: in the GEMM it would need a kernel of
/// its own; the add's kernel computes it on the way.
// CHECK-LABEL: func @negative_gemm_residual_computed_for_it
// CHECK: kiln.matmul
// CHECK-NOT: kiln.kernel gemm
// CHECK: kiln.kernel elementwise
// CHECK: kiln.cast
// CHECK: kiln.add
func.func @negative_gemm_residual_computed_for_it(%a: tensor<4x8xf16>, %w: tensor<8x16xf16>, %x: tensor<4x16xf32>) -> tensor<4x16xf16> {
  %p = kiln.matmul %a, %w : (tensor<4x8xf16>, tensor<8x16xf16>) -> tensor<4x16xf16>
  %r = kiln.cast %x : tensor<4x16xf32> -> tensor<4x16xf16>
  %s = kiln.add %p, %r : (tensor<4x16xf16>, tensor<4x16xf16>) -> tensor<4x16xf16>
  return %s : tensor<4x16xf16>
}

// -----

/// A residual after the activation stays out: cuBLASLt adds C before it.
// CHECK-LABEL: func @negative_gemm_residual_after_activation
// CHECK: %[[K:.*]] = kiln.kernel gemm({{.*}}) {epilogue = #kiln.gemm_epilogue<bias = 2, activation = relu>}
// CHECK: kiln.relu
// CHECK-NEXT: kiln.yield
// CHECK: kiln.kernel elementwise(%{{.*}}, %[[K]])
// CHECK: kiln.add
func.func @negative_gemm_residual_after_activation(%a: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>, %r: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %p = kiln.matmul %a, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %s = kiln.add %p, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %g = kiln.relu %s : tensor<4x16xf32>
  %y = kiln.add %r, %g : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

/// The product is used twice: the epilogue cannot hide it.
// CHECK-LABEL: func @negative_gemm_product_used_twice
// CHECK-NOT: kiln.kernel gemm
func.func @negative_gemm_product_used_twice(%a: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %p = kiln.matmul %a, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %s = kiln.add %p, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %s, %p : tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

// GPT-2's form: a 2-D Gemm with its bias, a reshape to [b, s, n], then the
// tanh GELU. The reshape moves no data: it joins the GEMM kernel.
// CHECK-LABEL: func @gemm_bias_reshape_gelu
// CHECK: %[[K:.*]] = kiln.kernel gemm({{.*}}) {epilogue = #kiln.gemm_epilogue<bias = 2, activation = gelu>}
// CHECK: kiln.matmul
// CHECK: kiln.add
// CHECK: kiln.reshape
// CHECK: kiln.gelu
// CHECK-NEXT: kiln.yield
// CHECK: return %[[K]]
func.func @gemm_bias_reshape_gelu(%a: tensor<16x32xf32>, %w: tensor<32x64xf32>, %b: tensor<64xf32>) -> tensor<2x8x64xf32> {
  %p = kiln.matmul %a, %w : (tensor<16x32xf32>, tensor<32x64xf32>) -> tensor<16x64xf32>
  %s = kiln.add %p, %b : (tensor<16x64xf32>, tensor<64xf32>) -> tensor<16x64xf32>
  %r = kiln.reshape %s : tensor<16x64xf32> -> tensor<2x8x64xf32>
  %g = kiln.gelu %r approximate = tanh : tensor<2x8x64xf32>
  return %g : tensor<2x8x64xf32>
}

// -----

/// A reshape with no activation after it stays outside: the GEMM yields the
/// biased product and the reshape is a view of it.
// CHECK-LABEL: func @negative_gemm_reshape_without_activation
// CHECK: %[[K:.*]] = kiln.kernel gemm
// CHECK-NOT: kiln.reshape
// CHECK: kiln.yield
// CHECK: kiln.reshape %[[K]]
func.func @negative_gemm_reshape_without_activation(%a: tensor<16x32xf32>, %w: tensor<32x64xf32>, %b: tensor<64xf32>) -> tensor<2x8x64xf32> {
  %p = kiln.matmul %a, %w : (tensor<16x32xf32>, tensor<32x64xf32>) -> tensor<16x64xf32>
  %s = kiln.add %p, %b : (tensor<16x64xf32>, tensor<64xf32>) -> tensor<16x64xf32>
  %r = kiln.reshape %s : tensor<16x64xf32> -> tensor<2x8x64xf32>
  return %r : tensor<2x8x64xf32>
}

// -----

/// The product is returned as it is: nothing to fuse (found by the kiln-ir
/// fuzzer: the return has no result to compare types with).
// CHECK-LABEL: func @negative_gemm_product_returned
// CHECK-NOT: kiln.kernel gemm
// CHECK: %[[M:.*]] = kiln.matmul
// CHECK: return %[[M]]
func.func @negative_gemm_product_returned(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %r = kiln.relu %x : tensor<4x4xf32>
  %m = kiln.matmul %r, %r : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %m : tensor<4x4xf32>
}

// -----

// A cache update with per-batch starts: the producers of the new rows and
// of the starts that feed it alone run inside its kernel.
// CHECK-LABEL: func @update_slice_starts
// CHECK: kiln.kernel elementwise(%arg2, %{{.*}}, %arg1, %arg0)
// CHECK: %[[R:.*]] = kiln.reshape
// CHECK-NEXT: %[[S:.*]] = kiln.add %[[R]]
// CHECK-NEXT: %[[N:.*]] = kiln.relu
// CHECK-NEXT: %[[U:.*]] = kiln.update_slice %{{.*}}, %[[N]], %[[S]] {axis = 2 : i64, offset = "0"}
// CHECK-NEXT: kiln.yield %[[U]]
// CHECK-NOT: kiln.kernel
func.func @update_slice_starts(%cache: tensor<2x3x8x2xf32>, %new: tensor<2x3x1x2xf32>, %lengths: tensor<2xi64>) -> tensor<2x3x8x2xf32> {
  %one = kiln.constant dense<1> : tensor<i64>
  %r = kiln.reshape %lengths : tensor<2xi64> -> tensor<2x1x1x1xi64>
  %s = kiln.add %r, %one : (tensor<2x1x1x1xi64>, tensor<i64>) -> tensor<2x1x1x1xi64>
  %n = kiln.relu %new : tensor<2x3x1x2xf32>
  %u = kiln.update_slice %cache, %n, %s {axis = 2 : i64, offset = "0"} : (tensor<2x3x8x2xf32>, tensor<2x3x1x2xf32>, tensor<2x1x1x1xi64>) -> tensor<2x3x8x2xf32>
  return %u : tensor<2x3x8x2xf32>
}

// -----

// Block-quantized weights (MatMulNBits) of a 16-bit product: the dequantize
// is the GEMM kernel's first op, the packed bytes its inputs.
// CHECK-LABEL: func @gemm_dequantize_f16
// CHECK: kiln.kernel  gemm(%arg1, %arg2, %arg0, %arg3) {epilogue = #kiln.gemm_epilogue<bias = 3>}
// CHECK-NEXT: ^bb0
// CHECK-NEXT: %[[W:.*]] = kiln.dequantize
// CHECK-NEXT: kiln.matmul %{{.*}}, %[[W]] {transpose_rhs = true}
// CHECK-NEXT: kiln.add
// CHECK-NOT: kiln.kernel
func.func @gemm_dequantize_f16(%a: tensor<3x64xf16>, %q: tensor<8x2x16xui8>, %s: tensor<8x2xf16>, %b: tensor<8xf16>) -> tensor<3x8xf16> {
  %w = kiln.dequantize %q, %s {bits = 4 : i64, block_size = 32 : i64} : (tensor<8x2x16xui8>, tensor<8x2xf16>) -> tensor<8x64xf16>
  %m = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<3x64xf16>, tensor<8x64xf16>) -> tensor<3x8xf16>
  %y = kiln.add %m, %b : (tensor<3x8xf16>, tensor<8xf16>) -> tensor<3x8xf16>
  return %y : tensor<3x8xf16>
}

// -----

// The left operand of a product of block-quantized weights, computed by
// elementwise ops and data movement that only the product reads (a
// decoder's SwiGLU over the slices of its packed gate and up projection),
// joins its GEMM kernel as the prologue: the packed GEMV computes it where
// each block reads it, and its kernel's launch is saved.
// CHECK-LABEL: func @gemm_operand_prologue
// CHECK: kiln.kernel  gemm(%arg0, %arg1, %arg2) {epilogue = #kiln.gemm_epilogue<prologue = true>}
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.slice
// CHECK-NEXT: kiln.sigmoid
// CHECK-NEXT: kiln.mul
// CHECK-NEXT: kiln.slice
// CHECK-NEXT: kiln.mul
// CHECK-NEXT: kiln.dequantize
// CHECK-NEXT: kiln.matmul
// CHECK-NOT: kiln.kernel
func.func @gemm_operand_prologue(%gu: tensor<3x128xf16>, %q: tensor<8x2x16xui8>, %s: tensor<8x2xf16>) -> tensor<3x8xf16> {
  %g = kiln.slice %gu {starts = array<i64: 0, 0>, strides = array<i64: 1, 1>} : tensor<3x128xf16> -> tensor<3x64xf16>
  %sig = kiln.sigmoid %g : tensor<3x64xf16>
  %silu = kiln.mul %g, %sig : (tensor<3x64xf16>, tensor<3x64xf16>) -> tensor<3x64xf16>
  %u = kiln.slice %gu {starts = array<i64: 0, 64>, strides = array<i64: 1, 1>} : tensor<3x128xf16> -> tensor<3x64xf16>
  %a = kiln.mul %silu, %u : (tensor<3x64xf16>, tensor<3x64xf16>) -> tensor<3x64xf16>
  %w = kiln.dequantize %q, %s {bits = 4 : i64, block_size = 32 : i64} : (tensor<8x2x16xui8>, tensor<8x2xf16>) -> tensor<8x64xf16>
  %m = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<3x64xf16>, tensor<8x64xf16>) -> tensor<3x8xf16>
  return %m : tensor<3x8xf16>
}

// -----

// negative_: the operand stays a kernel of its own where something else
// reads it too (it would be computed twice), where a reduction's kernel
// takes it as its epilogue anyway (a softmax then a scale: no launch to
// save), where a gather computes it (an index check of its own), and over
// weights that are not block-quantized (cuBLASLt reads A from memory).
// CHECK-LABEL: func @negative_gemm_operand_prologue
// CHECK: %[[A:.*]] = kiln.kernel  elementwise
// CHECK: kiln.kernel  gemm(%arg1, %arg2, %[[A]]) {epilogue = #kiln.gemm_epilogue<>}
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.dequantize
// CHECK: kiln.kernel  reduction
// CHECK: kiln.softmax
// CHECK-NEXT: kiln.mul
// CHECK: kiln.kernel  gemm({{.*}}) {epilogue = #kiln.gemm_epilogue<>}
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.dequantize
// CHECK: kiln.kernel  elementwise
// CHECK: kiln.gather
// CHECK: kiln.kernel  gemm({{.*}}) {epilogue = #kiln.gemm_epilogue<>}
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.dequantize
// CHECK: %[[F:.*]] = kiln.kernel  elementwise
// CHECK: kiln.matmul %[[F]], %arg3
func.func @negative_gemm_operand_prologue(%x: tensor<3x64xf16>, %q: tensor<8x2x16xui8>, %s: tensor<8x2xf16>, %w16: tensor<64x8xf16>, %table: tensor<10x64xf16>, %ids: tensor<3xi64>) -> (tensor<3x8xf16>, tensor<3x64xf16>, tensor<3x8xf16>, tensor<3x8xf16>, tensor<3x8xf16>) {
  %a = kiln.sigmoid %x : tensor<3x64xf16>
  %w = kiln.dequantize %q, %s {bits = 4 : i64, block_size = 32 : i64} : (tensor<8x2x16xui8>, tensor<8x2xf16>) -> tensor<8x64xf16>
  %m = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<3x64xf16>, tensor<8x64xf16>) -> tensor<3x8xf16>
  %p = kiln.softmax %x {axis = 1 : i64} : tensor<3x64xf16>
  %ps = kiln.mul %p, %x : (tensor<3x64xf16>, tensor<3x64xf16>) -> tensor<3x64xf16>
  %w2 = kiln.dequantize %q, %s {bits = 4 : i64, block_size = 32 : i64} : (tensor<8x2x16xui8>, tensor<8x2xf16>) -> tensor<8x64xf16>
  %m2 = kiln.matmul %ps, %w2 {transpose_rhs = true} : (tensor<3x64xf16>, tensor<8x64xf16>) -> tensor<3x8xf16>
  %e = kiln.gather %table, %ids {axis = 0 : i64} : (tensor<10x64xf16>, tensor<3xi64>) -> tensor<3x64xf16>
  %es = kiln.sigmoid %e : tensor<3x64xf16>
  %w3 = kiln.dequantize %q, %s {bits = 4 : i64, block_size = 32 : i64} : (tensor<8x2x16xui8>, tensor<8x2xf16>) -> tensor<8x64xf16>
  %m3 = kiln.matmul %es, %w3 {transpose_rhs = true} : (tensor<3x64xf16>, tensor<8x64xf16>) -> tensor<3x8xf16>
  %f = kiln.neg %x : tensor<3x64xf16>
  %m4 = kiln.matmul %f, %w16 : (tensor<3x64xf16>, tensor<64x8xf16>) -> tensor<3x8xf16>
  return %m, %a, %m2, %m3, %m4 : tensor<3x8xf16>, tensor<3x64xf16>, tensor<3x8xf16>, tensor<3x8xf16>, tensor<3x8xf16>
}

// -----

// A value the epilogue reads too (the residual added to the product) is
// not the prologue's: it stays a kernel of its own, which the prologue
// reads as an input, and the product keeps its residual.
// CHECK-LABEL: func @gemm_operand_prologue_residual
// CHECK: %[[S:.*]] = kiln.kernel  elementwise(%arg0)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.sigmoid
// CHECK: kiln.kernel  gemm(%[[S]], %arg1, %arg2) {epilogue = #kiln.gemm_epilogue<residual = 0, prologue = true>}
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.neg
// CHECK-NEXT: kiln.dequantize
// CHECK-NEXT: kiln.matmul
// CHECK-NEXT: kiln.add
func.func @gemm_operand_prologue_residual(%x: tensor<3x64xf16>, %q: tensor<64x2x16xui8>, %s: tensor<64x2xf16>) -> tensor<3x64xf16> {
  %sig = kiln.sigmoid %x : tensor<3x64xf16>
  %a = kiln.neg %sig : tensor<3x64xf16>
  %w = kiln.dequantize %q, %s {bits = 4 : i64, block_size = 32 : i64} : (tensor<64x2x16xui8>, tensor<64x2xf16>) -> tensor<64x64xf16>
  %m = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<3x64xf16>, tensor<64x64xf16>) -> tensor<3x64xf16>
  %y = kiln.add %m, %sig : (tensor<3x64xf16>, tensor<3x64xf16>) -> tensor<3x64xf16>
  return %y : tensor<3x64xf16>
}

// -----

// negative_: an fp32 product (Kiln's GEMMs are 16-bit) leaves the
// dequantize to a kernel of its own, the matmul a plain step.
// CHECK-LABEL: func @negative_gemm_dequantize_f32
// CHECK: %[[W:.*]] = kiln.kernel  copy(%arg1, %arg2)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.dequantize
// CHECK: kiln.matmul %arg0, %[[W]] {transpose_rhs = true}
func.func @negative_gemm_dequantize_f32(%a: tensor<3x64xf32>, %q: tensor<8x2x16xui8>, %s: tensor<8x2xf32>) -> tensor<3x8xf32> {
  %w = kiln.dequantize %q, %s {bits = 4 : i64, block_size = 32 : i64} : (tensor<8x2x16xui8>, tensor<8x2xf32>) -> tensor<8x64xf32>
  %m = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<3x64xf32>, tensor<8x64xf32>) -> tensor<3x8xf32>
  return %m : tensor<3x8xf32>
}

// -----

// Block-quantized weights with a residual and an RMSNorm after them (a
// quantized decoder's output projection): the norm joins the GEMM kernel,
// which yields the norm and the sum the next block adds to.
// CHECK-LABEL: func @gemm_dequantize_rms_norm_sum
// CHECK: %[[K:.*]]:2 = kiln.kernel  gemm(%arg1, %arg2, %arg0, %arg3, %arg4) {epilogue = #kiln.gemm_epilogue<residual = 3, norm_scale = 4>}
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.dequantize
// CHECK-NEXT: kiln.matmul
// CHECK-NEXT: %[[Y:.*]] = kiln.add
// CHECK-NEXT: %[[N:.*]] = kiln.rms_norm %[[Y]]
// CHECK-NEXT: kiln.yield %[[N]], %[[Y]]
// CHECK: return %[[K]]#0, %[[K]]#1
func.func @gemm_dequantize_rms_norm_sum(%a: tensor<3x64xf16>, %q: tensor<8x2x16xui8>, %s: tensor<8x2xf16>, %x: tensor<3x8xf16>, %g: tensor<8xf16>) -> (tensor<3x8xf16>, tensor<3x8xf16>) {
  %w = kiln.dequantize %q, %s {bits = 4 : i64, block_size = 32 : i64} : (tensor<8x2x16xui8>, tensor<8x2xf16>) -> tensor<8x64xf16>
  %m = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<3x64xf16>, tensor<8x64xf16>) -> tensor<3x8xf16>
  %y = kiln.add %m, %x : (tensor<3x8xf16>, tensor<3x8xf16>) -> tensor<3x8xf16>
  %n = kiln.rms_norm %y, %g {axis = 1 : i64, epsilon = 1.0e-6 : f32} : (tensor<3x8xf16>, tensor<8xf16>) -> tensor<3x8xf16>
  return %n, %y : tensor<3x8xf16>, tensor<3x8xf16>
}

// -----

// onnxruntime-genai's SkipSimplifiedLayerNormalization after an int4
// output projection, as the importer writes it (the sum and the norm in
// f32, cast back): the GEMM kernel takes it as a wide norm and yields the
// norm's cast and the sum's.
// CHECK-LABEL: func @gemm_dequantize_wide_rms_norm
// CHECK: %[[K:.*]]:2 = kiln.kernel  gemm(%arg1, %arg2, %arg0, %arg3, %arg4) {epilogue = #kiln.gemm_epilogue<residual = 3, norm_scale = 4, wide_norm = true>}
// CHECK: kiln.matmul
// CHECK: %[[S:.*]] = kiln.add
// CHECK: %[[N:.*]] = kiln.rms_norm %[[S]]
// CHECK: %[[Y:.*]] = kiln.cast %[[N]]
// CHECK-NEXT: %[[T:.*]] = kiln.cast %[[S]]
// CHECK-NEXT: kiln.yield %[[Y]], %[[T]]
// CHECK: return %[[K]]#0, %[[K]]#1
func.func @gemm_dequantize_wide_rms_norm(%a: tensor<3x64xf16>, %q: tensor<8x2x16xui8>, %s: tensor<8x2xf16>, %x: tensor<3x8xf16>, %g: tensor<8xf16>) -> (tensor<3x8xf16>, tensor<3x8xf16>) {
  %w = kiln.dequantize %q, %s {bits = 4 : i64, block_size = 32 : i64} : (tensor<8x2x16xui8>, tensor<8x2xf16>) -> tensor<8x64xf16>
  %m = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<3x64xf16>, tensor<8x64xf16>) -> tensor<3x8xf16>
  %xw = kiln.cast %x : tensor<3x8xf16> -> tensor<3x8xf32>
  %mw = kiln.cast %m : tensor<3x8xf16> -> tensor<3x8xf32>
  %y = kiln.add %xw, %mw : (tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<3x8xf32>
  %gw = kiln.cast %g : tensor<8xf16> -> tensor<8xf32>
  %n = kiln.rms_norm %y, %gw {axis = 1 : i64, epsilon = 1.0e-6 : f32} : (tensor<3x8xf32>, tensor<8xf32>) -> tensor<3x8xf32>
  %o = kiln.cast %n : tensor<3x8xf32> -> tensor<3x8xf16>
  %t = kiln.cast %y : tensor<3x8xf32> -> tensor<3x8xf16>
  return %o, %t : tensor<3x8xf16>, tensor<3x8xf16>
}

// -----

// The same with the sum's cast before the norm and the residual's cast
// before the product in the function: the kernel orders them as its
// verifier reads them (the product's casts, the add, the norm, its cast,
// then the sum's).
// CHECK-LABEL: func @gemm_dequantize_wide_norm_order
// CHECK: kiln.kernel  gemm({{.*}}) {epilogue = #kiln.gemm_epilogue<residual = {{[0-9]+}}, norm_scale = {{[0-9]+}}, wide_norm = true>}
// CHECK: kiln.matmul
// CHECK: %[[S:.*]] = kiln.add
// CHECK: %[[N:.*]] = kiln.rms_norm %[[S]]
// CHECK-NEXT: %[[Y:.*]] = kiln.cast %[[N]]
// CHECK-NEXT: %[[T:.*]] = kiln.cast %[[S]]
// CHECK-NEXT: kiln.yield %[[Y]], %[[T]]
func.func @gemm_dequantize_wide_norm_order(%a: tensor<3x64xf16>, %q: tensor<8x2x16xui8>, %s: tensor<8x2xf16>, %x: tensor<3x8xf16>, %g: tensor<8xf16>) -> (tensor<3x8xf16>, tensor<3x8xf16>) {
  %xw = kiln.cast %x : tensor<3x8xf16> -> tensor<3x8xf32>
  %w = kiln.dequantize %q, %s {bits = 4 : i64, block_size = 32 : i64} : (tensor<8x2x16xui8>, tensor<8x2xf16>) -> tensor<8x64xf16>
  %m = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<3x64xf16>, tensor<8x64xf16>) -> tensor<3x8xf16>
  %mw = kiln.cast %m : tensor<3x8xf16> -> tensor<3x8xf32>
  %y = kiln.add %mw, %xw : (tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<3x8xf32>
  %t = kiln.cast %y : tensor<3x8xf32> -> tensor<3x8xf16>
  %gw = kiln.cast %g : tensor<8xf16> -> tensor<8xf32>
  %n = kiln.rms_norm %y, %gw {axis = 1 : i64, epsilon = 1.0e-6 : f32} : (tensor<3x8xf32>, tensor<8xf32>) -> tensor<3x8xf32>
  %o = kiln.cast %n : tensor<3x8xf32> -> tensor<3x8xf16>
  return %o, %t : tensor<3x8xf16>, tensor<3x8xf16>
}

// -----

// negative_: the same over unquantized weights (cuBLASLt's step, whose
// norm kernel reads the sum as stored) keeps the norm a row kernel of its
// own; so does a quantized product whose f32 sum is read by an op other
// than the norm and its cast back.
// CHECK-LABEL: func @negative_gemm_wide_norm
// CHECK: kiln.kernel  gemm(%arg0, %arg5) {epilogue = #kiln.gemm_epilogue<>}
// CHECK: kiln.kernel  reduction(
// CHECK: kiln.kernel  gemm({{.*}}) {epilogue = #kiln.gemm_epilogue<>}
// CHECK: kiln.kernel  reduction(
// CHECK-NOT: wide_norm
func.func @negative_gemm_wide_norm(%a: tensor<3x64xf16>, %q: tensor<8x2x16xui8>, %s: tensor<8x2xf16>, %x: tensor<3x8xf16>, %g: tensor<8xf16>, %b: tensor<64x8xf16>) -> (tensor<3x8xf16>, tensor<3x8xf16>, tensor<3x8xf32>) {
  %m = kiln.matmul %a, %b : (tensor<3x64xf16>, tensor<64x8xf16>) -> tensor<3x8xf16>
  %xw = kiln.cast %x : tensor<3x8xf16> -> tensor<3x8xf32>
  %mw = kiln.cast %m : tensor<3x8xf16> -> tensor<3x8xf32>
  %y = kiln.add %xw, %mw : (tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<3x8xf32>
  %gw = kiln.cast %g : tensor<8xf16> -> tensor<8xf32>
  %n = kiln.rms_norm %y, %gw {axis = 1 : i64, epsilon = 1.0e-6 : f32} : (tensor<3x8xf32>, tensor<8xf32>) -> tensor<3x8xf32>
  %o = kiln.cast %n : tensor<3x8xf32> -> tensor<3x8xf16>
  %w = kiln.dequantize %q, %s {bits = 4 : i64, block_size = 32 : i64} : (tensor<8x2x16xui8>, tensor<8x2xf16>) -> tensor<8x64xf16>
  %m2 = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<3x64xf16>, tensor<8x64xf16>) -> tensor<3x8xf16>
  %xw2 = kiln.cast %x : tensor<3x8xf16> -> tensor<3x8xf32>
  %mw2 = kiln.cast %m2 : tensor<3x8xf16> -> tensor<3x8xf32>
  %y2 = kiln.add %xw2, %mw2 : (tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<3x8xf32>
  %gw2 = kiln.cast %g : tensor<8xf16> -> tensor<8xf32>
  %n2 = kiln.rms_norm %y2, %gw2 {axis = 1 : i64, epsilon = 1.0e-6 : f32} : (tensor<3x8xf32>, tensor<8xf32>) -> tensor<3x8xf32>
  %o2 = kiln.cast %n2 : tensor<3x8xf32> -> tensor<3x8xf16>
  return %o, %o2, %y2 : tensor<3x8xf16>, tensor<3x8xf16>, tensor<3x8xf32>
}

// -----

// negative_: an 8-bit product of a 16-bit type (the Q/DQ GEMM, which has
// no norm) keeps its LayerNorm in a row kernel of its own.
// CHECK-LABEL: func @negative_gemm_int8_activations_norm
// CHECK: kiln.kernel  gemm({{.*}}) {epilogue = #kiln.gemm_epilogue<residual = {{[0-9]+}}>}
// CHECK-NOT: kiln.layer_norm
// CHECK: kiln.kernel  reduction(
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.layer_norm
func.func @negative_gemm_int8_activations_norm(%x: tensor<3x32xf16>, %s: tensor<8x1xf16>, %sa: tensor<f16>, %r: tensor<3x8xf16>, %g: tensor<8xf16>) -> tensor<3x8xf16> {
  %q = kiln.constant dense<131> : tensor<8x1x32xui8>
  %xq = kiln.cast %x : tensor<3x32xf16> -> tensor<3x32xi8>
  %xf = kiln.cast %xq : tensor<3x32xi8> -> tensor<3x32xf16>
  %a = kiln.mul %xf, %sa : (tensor<3x32xf16>, tensor<f16>) -> tensor<3x32xf16>
  %w = kiln.dequantize %q, %s {bits = 8 : i64, block_size = 32 : i64} : (tensor<8x1x32xui8>, tensor<8x1xf16>) -> tensor<8x32xf16>
  %m = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<3x32xf16>, tensor<8x32xf16>) -> tensor<3x8xf16>
  %y = kiln.add %m, %r : (tensor<3x8xf16>, tensor<3x8xf16>) -> tensor<3x8xf16>
  %n = kiln.layer_norm %y, %g {axis = 1 : i64, epsilon = 1.0e-5 : f32} : (tensor<3x8xf16>, tensor<8xf16>) -> tensor<3x8xf16>
  return %n : tensor<3x8xf16>
}

// -----

// 8-bit activations (a Q/DQ graph's DequantizeLinear per tensor, its zero
// point a cast of int8) times symmetric int8 weights with a scale a column:
// each product's GEMM kernel takes its own copy of the activations'
// dequantization, so both read the int8 tensor itself (which a kernel
// before them writes: a graph input's bytes are not taken).
// CHECK-LABEL: func @gemm_int8_activations
// CHECK: %[[ZERO:.*]] = kiln.kernel  elementwise(%arg2)
// CHECK: %[[Q:.*]] = kiln.kernel  elementwise(%arg0)
// CHECK: kiln.kernel  gemm(%{{.*}}, %arg1, %[[Q]], %[[ZERO]], %arg3) {epilogue = #kiln.gemm_epilogue<>}
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.dequantize
// CHECK-NEXT: kiln.cast %{{.*}} : tensor<3x32xi8> -> tensor<3x32xf32>
// CHECK-NEXT: kiln.sub
// CHECK-NEXT: kiln.mul
// CHECK-NEXT: kiln.matmul
// CHECK: kiln.kernel  gemm(%[[Q]], %[[ZERO]], %arg3, %{{.*}}, %arg1)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.cast
// CHECK-NEXT: kiln.sub
// CHECK-NEXT: kiln.mul
// CHECK-NEXT: kiln.dequantize
// CHECK-NEXT: kiln.matmul
func.func @gemm_int8_activations(%x: tensor<3x32xf32>, %s: tensor<8x1xf32>, %z: tensor<i8>, %sa: tensor<f32>) -> (tensor<3x8xf32>, tensor<3x8xf32>) {
  %q = kiln.constant dense<131> : tensor<8x1x32xui8>
  %q2 = kiln.constant dense<120> : tensor<8x1x32xui8>
  %zf = kiln.cast %z : tensor<i8> -> tensor<f32>
  %xq = kiln.cast %x : tensor<3x32xf32> -> tensor<3x32xi8>
  %xf = kiln.cast %xq : tensor<3x32xi8> -> tensor<3x32xf32>
  %d = kiln.sub %xf, %zf : (tensor<3x32xf32>, tensor<f32>) -> tensor<3x32xf32>
  %a = kiln.mul %d, %sa : (tensor<3x32xf32>, tensor<f32>) -> tensor<3x32xf32>
  %w = kiln.dequantize %q, %s {bits = 8 : i64, block_size = 32 : i64} : (tensor<8x1x32xui8>, tensor<8x1xf32>) -> tensor<8x32xf32>
  %m = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<3x32xf32>, tensor<8x32xf32>) -> tensor<3x8xf32>
  %w2 = kiln.dequantize %q2, %s {bits = 8 : i64, block_size = 32 : i64} : (tensor<8x1x32xui8>, tensor<8x1xf32>) -> tensor<8x32xf32>
  %n = kiln.matmul %a, %w2 {transpose_rhs = true} : (tensor<3x32xf32>, tensor<8x32xf32>) -> tensor<3x8xf32>
  return %m, %n : tensor<3x8xf32>, tensor<3x8xf32>
}

// -----

// float8 E4M3FN activations (NVIDIA ModelOpt's Q/DQ: the zero point a
// float8 0) times float8 weights with a scale a column: the GEMM kernel
// takes the activations' dequantization as it does integers'.
// CHECK-LABEL: func @gemm_float8_activations
// CHECK: %[[Q:.*]] = kiln.kernel  elementwise(%arg0)
// CHECK: kiln.kernel  gemm(
// CHECK-SAME: %[[Q]]
// CHECK-NEXT: ^bb0
// CHECK: kiln.cast %{{.*}} : tensor<3x32xf8E4M3FN> -> tensor<3x32xf32>
// CHECK-NEXT: kiln.sub
// CHECK-NEXT: kiln.mul
// CHECK: kiln.dequantize {{.*}} : (tensor<8x1x32xf8E4M3FN>, tensor<8x1xf32>) -> tensor<8x32xf32>
// CHECK-NEXT: kiln.matmul
func.func @gemm_float8_activations(%x: tensor<3x32xf32>, %s: tensor<8x1xf32>, %sa: tensor<f32>) -> tensor<3x8xf32> {
  %q = kiln.constant dense<1.5> : tensor<8x1x32xf8E4M3FN>
  %z = kiln.constant dense<0.0> : tensor<f8E4M3FN>
  %zf = kiln.cast %z : tensor<f8E4M3FN> -> tensor<f32>
  %xq = kiln.cast %x : tensor<3x32xf32> -> tensor<3x32xf8E4M3FN>
  %xf = kiln.cast %xq : tensor<3x32xf8E4M3FN> -> tensor<3x32xf32>
  %d = kiln.sub %xf, %zf : (tensor<3x32xf32>, tensor<f32>) -> tensor<3x32xf32>
  %a = kiln.mul %d, %sa : (tensor<3x32xf32>, tensor<f32>) -> tensor<3x32xf32>
  %w = kiln.dequantize %q, %s {bits = 8 : i64, block_size = 32 : i64} : (tensor<8x1x32xf8E4M3FN>, tensor<8x1xf32>) -> tensor<8x32xf32>
  %m = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<3x32xf32>, tensor<8x32xf32>) -> tensor<3x8xf32>
  return %m : tensor<3x8xf32>
}

// -----

// negative_: a float8 zero point other than 0 keeps the float product (the
// FP8 GEMM does not subtract one).
// CHECK-LABEL: func @negative_gemm_float8_nonzero_zero
// CHECK-NOT: kiln.kernel  gemm
// CHECK: kiln.matmul
func.func @negative_gemm_float8_nonzero_zero(%x: tensor<3x32xf32>, %s: tensor<8x1xf32>, %sa: tensor<f32>) -> tensor<3x8xf32> {
  %q = kiln.constant dense<1.5> : tensor<8x1x32xf8E4M3FN>
  %z = kiln.constant dense<1.0> : tensor<f8E4M3FN>
  %zf = kiln.cast %z : tensor<f8E4M3FN> -> tensor<f32>
  %xq = kiln.cast %x : tensor<3x32xf32> -> tensor<3x32xf8E4M3FN>
  %xf = kiln.cast %xq : tensor<3x32xf8E4M3FN> -> tensor<3x32xf32>
  %d = kiln.sub %xf, %zf : (tensor<3x32xf32>, tensor<f32>) -> tensor<3x32xf32>
  %a = kiln.mul %d, %sa : (tensor<3x32xf32>, tensor<f32>) -> tensor<3x32xf32>
  %w = kiln.dequantize %q, %s {bits = 8 : i64, block_size = 32 : i64} : (tensor<8x1x32xf8E4M3FN>, tensor<8x1xf32>) -> tensor<8x32xf32>
  %m = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<3x32xf32>, tensor<8x32xf32>) -> tensor<3x8xf32>
  return %m : tensor<3x8xf32>
}

// -----

// negative_: float8 activations times int8 weights, kinds the 8-bit GEMM
// does not mix, keep the float product.
// CHECK-LABEL: func @negative_gemm_float8_activations_int8_weights
// CHECK-NOT: kiln.kernel  gemm
// CHECK: kiln.matmul
func.func @negative_gemm_float8_activations_int8_weights(%x: tensor<3x32xf32>, %s: tensor<8x1xf32>, %sa: tensor<f32>) -> tensor<3x8xf32> {
  %q = kiln.constant dense<131> : tensor<8x1x32xui8>
  %xq = kiln.cast %x : tensor<3x32xf32> -> tensor<3x32xf8E4M3FN>
  %xf = kiln.cast %xq : tensor<3x32xf8E4M3FN> -> tensor<3x32xf32>
  %a = kiln.mul %xf, %sa : (tensor<3x32xf32>, tensor<f32>) -> tensor<3x32xf32>
  %w = kiln.dequantize %q, %s {bits = 8 : i64, block_size = 32 : i64} : (tensor<8x1x32xui8>, tensor<8x1xf32>) -> tensor<8x32xf32>
  %m = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<3x32xf32>, tensor<8x32xf32>) -> tensor<3x8xf32>
  return %m : tensor<3x8xf32>
}

// -----

// The importer folds a constant zero point's cast: a whole constant in the
// activations' range is an 8-bit zero point too (131 for uint8).
// CHECK-LABEL: func @gemm_uint8_constant_zero
// CHECK: kiln.kernel  gemm(
// CHECK-NEXT: ^bb0
// CHECK: kiln.cast %{{.*}} : tensor<3x32xui8> -> tensor<3x32xf32>
// CHECK-NEXT: kiln.sub
// CHECK-NEXT: kiln.mul
// CHECK: kiln.matmul
func.func @gemm_uint8_constant_zero(%x: tensor<3x32xf32>, %s: tensor<8x1xf32>, %sa: tensor<f32>) -> tensor<3x8xf32> {
  %q = kiln.constant dense<131> : tensor<8x1x32xui8>
  %zf = kiln.constant dense<131.0> : tensor<f32>
  %xq = kiln.cast %x : tensor<3x32xf32> -> tensor<3x32xui8>
  %xf = kiln.cast %xq : tensor<3x32xui8> -> tensor<3x32xf32>
  %d = kiln.sub %xf, %zf : (tensor<3x32xf32>, tensor<f32>) -> tensor<3x32xf32>
  %a = kiln.mul %d, %sa : (tensor<3x32xf32>, tensor<f32>) -> tensor<3x32xf32>
  %w = kiln.dequantize %q, %s {bits = 8 : i64, block_size = 32 : i64} : (tensor<8x1x32xui8>, tensor<8x1xf32>) -> tensor<8x32xf32>
  %m = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<3x32xf32>, tensor<8x32xf32>) -> tensor<3x8xf32>
  return %m : tensor<3x8xf32>
}

// -----

// negative_: constant zero points that are not 8-bit integers of the
// activations' type (7.5; 131 for int8) keep the float product.
// CHECK-LABEL: func @negative_gemm_int8_constant_zero
// CHECK-NOT: kiln.kernel  gemm
// CHECK: kiln.matmul
// CHECK-NOT: kiln.kernel  gemm
// CHECK: kiln.matmul
func.func @negative_gemm_int8_constant_zero(%x: tensor<3x32xf32>, %s: tensor<8x1xf32>, %sa: tensor<f32>) -> (tensor<3x8xf32>, tensor<3x8xf32>) {
  %q = kiln.constant dense<131> : tensor<8x1x32xui8>
  %xq = kiln.cast %x : tensor<3x32xf32> -> tensor<3x32xi8>
  %xf = kiln.cast %xq : tensor<3x32xi8> -> tensor<3x32xf32>
  %w = kiln.dequantize %q, %s {bits = 8 : i64, block_size = 32 : i64} : (tensor<8x1x32xui8>, tensor<8x1xf32>) -> tensor<8x32xf32>
  %half = kiln.constant dense<7.5> : tensor<f32>
  %d = kiln.sub %xf, %half : (tensor<3x32xf32>, tensor<f32>) -> tensor<3x32xf32>
  %a = kiln.mul %d, %sa : (tensor<3x32xf32>, tensor<f32>) -> tensor<3x32xf32>
  %m = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<3x32xf32>, tensor<8x32xf32>) -> tensor<3x8xf32>
  %high = kiln.constant dense<131.0> : tensor<f32>
  %d2 = kiln.sub %xf, %high : (tensor<3x32xf32>, tensor<f32>) -> tensor<3x32xf32>
  %a2 = kiln.mul %d2, %sa : (tensor<3x32xf32>, tensor<f32>) -> tensor<3x32xf32>
  %n = kiln.matmul %a2, %w {transpose_rhs = true} : (tensor<3x32xf32>, tensor<8x32xf32>) -> tensor<3x8xf32>
  return %m, %n : tensor<3x8xf32>, tensor<3x8xf32>
}

// -----

// negative_: int8 activations that are a graph input (a caller's buffer
// need not be aligned for the kernel's 16-byte copies) keep the float
// product.
// CHECK-LABEL: func @negative_gemm_int8_input
// CHECK-NOT: kiln.kernel  gemm
// CHECK: kiln.matmul
func.func @negative_gemm_int8_input(%x: tensor<3x32xi8>, %s: tensor<8x1xf32>, %sa: tensor<f32>) -> tensor<3x8xf32> {
  %q = kiln.constant dense<131> : tensor<8x1x32xui8>
  %xf = kiln.cast %x : tensor<3x32xi8> -> tensor<3x32xf32>
  %a = kiln.mul %xf, %sa : (tensor<3x32xf32>, tensor<f32>) -> tensor<3x32xf32>
  %w = kiln.dequantize %q, %s {bits = 8 : i64, block_size = 32 : i64} : (tensor<8x1x32xui8>, tensor<8x1xf32>) -> tensor<8x32xf32>
  %m = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<3x32xf32>, tensor<8x32xf32>) -> tensor<3x8xf32>
  return %m : tensor<3x8xf32>
}

// -----

// Weights with integer zero points (asymmetric), which the integer GEMM
// takes too (a zero point a column, from a graph input here): the gemm
// kernel reads them with the packed bytes.
// CHECK-LABEL: func @gemm_int8_weight_zero_points
// CHECK: kiln.kernel  elementwise
// CHECK: kiln.kernel  gemm(%{{.*}}, %arg3, %{{.*}}, %arg1, %arg2)
// CHECK: kiln.cast
// CHECK-NEXT: kiln.mul
// CHECK-NEXT: kiln.dequantize %{{.*}}, %{{.*}}, %{{.*}} {bits = 8 : i64, block_size = 32 : i64}
// CHECK-NEXT: kiln.matmul
func.func @gemm_int8_weight_zero_points(%x0: tensor<3x32xf32>, %s: tensor<8x1xf32>, %wz: tensor<8x1xui8>, %sa: tensor<f32>) -> tensor<3x8xf32> {
  %q = kiln.constant dense<131> : tensor<8x1x32xui8>
  %x = kiln.cast %x0 : tensor<3x32xf32> -> tensor<3x32xi8>
  %xf = kiln.cast %x : tensor<3x32xi8> -> tensor<3x32xf32>
  %a = kiln.mul %xf, %sa : (tensor<3x32xf32>, tensor<f32>) -> tensor<3x32xf32>
  %w = kiln.dequantize %q, %s, %wz {bits = 8 : i64, block_size = 32 : i64} : (tensor<8x1x32xui8>, tensor<8x1xf32>, tensor<8x1xui8>) -> tensor<8x32xf32>
  %m = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<3x32xf32>, tensor<8x32xf32>) -> tensor<3x8xf32>
  return %m : tensor<3x8xf32>
}

// -----

// negative_: float zero points (MatMulNBits' form of the scales' type) keep
// the float product: the integer GEMM subtracts whole zero points.
// CHECK-LABEL: func @negative_gemm_int8_float_weight_zero_points
// CHECK-NOT: kiln.kernel  gemm
// CHECK: return
func.func @negative_gemm_int8_float_weight_zero_points(%x0: tensor<3x32xf32>, %s: tensor<8x1xf32>, %wz: tensor<8x1xf32>, %sa: tensor<f32>) -> tensor<3x8xf32> {
  %q = kiln.constant dense<131> : tensor<8x1x32xui8>
  %x = kiln.cast %x0 : tensor<3x32xf32> -> tensor<3x32xi8>
  %xf = kiln.cast %x : tensor<3x32xi8> -> tensor<3x32xf32>
  %a = kiln.mul %xf, %sa : (tensor<3x32xf32>, tensor<f32>) -> tensor<3x32xf32>
  %w = kiln.dequantize %q, %s, %wz {bits = 8 : i64, block_size = 32 : i64} : (tensor<8x1x32xui8>, tensor<8x1xf32>, tensor<8x1xf32>) -> tensor<8x32xf32>
  %m = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<3x32xf32>, tensor<8x32xf32>) -> tensor<3x8xf32>
  return %m : tensor<3x8xf32>
}

// -----

// negative_: an activation zero point that is any float (not a cast of an
// 8-bit integer, so perhaps not whole) keeps the float product.
// CHECK-LABEL: func @negative_gemm_int8_float_zero
// CHECK-NOT: kiln.kernel  gemm
// CHECK: kiln.matmul
func.func @negative_gemm_int8_float_zero(%x0: tensor<3x32xf32>, %s: tensor<8x1xf32>, %zf: tensor<f32>, %sa: tensor<f32>) -> tensor<3x8xf32> {
  %q = kiln.constant dense<131> : tensor<8x1x32xui8>
  %x = kiln.cast %x0 : tensor<3x32xf32> -> tensor<3x32xi8>
  %xf = kiln.cast %x : tensor<3x32xi8> -> tensor<3x32xf32>
  %d = kiln.sub %xf, %zf : (tensor<3x32xf32>, tensor<f32>) -> tensor<3x32xf32>
  %a = kiln.mul %d, %sa : (tensor<3x32xf32>, tensor<f32>) -> tensor<3x32xf32>
  %w = kiln.dequantize %q, %s {bits = 8 : i64, block_size = 32 : i64} : (tensor<8x1x32xui8>, tensor<8x1xf32>) -> tensor<8x32xf32>
  %m = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<3x32xf32>, tensor<8x32xf32>) -> tensor<3x8xf32>
  return %m : tensor<3x8xf32>
}

// -----

// negative_: K = 24, not whole 16-byte chunks of either operand's rows,
// keeps the float product.
// CHECK-LABEL: func @negative_gemm_int8_odd_k
// CHECK-NOT: kiln.kernel  gemm
// CHECK: kiln.matmul
func.func @negative_gemm_int8_odd_k(%x0: tensor<3x24xf32>, %s: tensor<8x1xf32>, %sa: tensor<f32>) -> tensor<3x8xf32> {
  %q = kiln.constant dense<131> : tensor<8x1x24xui8>
  %x = kiln.cast %x0 : tensor<3x24xf32> -> tensor<3x24xi8>
  %xf = kiln.cast %x : tensor<3x24xi8> -> tensor<3x24xf32>
  %a = kiln.mul %xf, %sa : (tensor<3x24xf32>, tensor<f32>) -> tensor<3x24xf32>
  %w = kiln.dequantize %q, %s {bits = 8 : i64, block_size = 24 : i64} : (tensor<8x1x24xui8>, tensor<8x1xf32>) -> tensor<8x24xf32>
  %m = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<3x24xf32>, tensor<8x24xf32>) -> tensor<3x8xf32>
  return %m : tensor<3x8xf32>
}

// -----

// Weights that two 16-bit products read: each product's GEMM kernel
// reads the packed bytes itself (nothing unpacks them into memory).
// CHECK-LABEL: func @gemm_dequantize_shared
// CHECK: kiln.kernel  gemm(%arg2, %arg3, %arg0)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.dequantize
// CHECK: kiln.kernel  gemm(%arg2, %arg3, %arg1)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.dequantize
// CHECK-NOT: kiln.kernel  copy
func.func @gemm_dequantize_shared(%a: tensor<3x64xf16>, %c: tensor<2x64xf16>, %q: tensor<8x2x16xui8>, %s: tensor<8x2xf16>) -> (tensor<3x8xf16>, tensor<2x8xf16>) {
  %w = kiln.dequantize %q, %s {bits = 4 : i64, block_size = 32 : i64} : (tensor<8x2x16xui8>, tensor<8x2xf16>) -> tensor<8x64xf16>
  %m = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<3x64xf16>, tensor<8x64xf16>) -> tensor<3x8xf16>
  %n = kiln.matmul %c, %w {transpose_rhs = true} : (tensor<2x64xf16>, tensor<8x64xf16>) -> tensor<2x8xf16>
  return %m, %n : tensor<3x8xf16>, tensor<2x8xf16>
}

// -----

// A tied embedding: the LM head's product and the embedding's gather read
// one dequantize; each kernel computes its own from the packed bytes, so
// the gather unpacks only the rows it picks.
// CHECK-LABEL: func @gather_dequantize_tied
// CHECK: kiln.kernel  gemm(%arg2, %arg3, %arg0)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.dequantize
// CHECK: kiln.kernel  elementwise(%arg2, %arg3, %arg1)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: %[[W:.*]] = kiln.dequantize
// CHECK-NEXT: kiln.gather %[[W]]
func.func @gather_dequantize_tied(%h: tensor<3x64xf16>, %ids: tensor<5xi64>, %q: tensor<8x2x16xui8>, %s: tensor<8x2xf16>) -> (tensor<3x8xf16>, tensor<5x64xf16>) {
  %w = kiln.dequantize %q, %s {bits = 4 : i64, block_size = 32 : i64} : (tensor<8x2x16xui8>, tensor<8x2xf16>) -> tensor<8x64xf16>
  %logits = kiln.matmul %h, %w {transpose_rhs = true} : (tensor<3x64xf16>, tensor<8x64xf16>) -> tensor<3x8xf16>
  %e = kiln.gather %w, %ids {axis = 0 : i64} : (tensor<8x64xf16>, tensor<5xi64>) -> tensor<5x64xf16>
  return %logits, %e : tensor<3x8xf16>, tensor<5x64xf16>
}

// -----

// negative_: fp32 products read unpacked floats: weights two of them read
// are dequantized once, by a kernel of their own.
// CHECK-LABEL: func @negative_gemm_dequantize_shared_f32
// CHECK: %[[W:.*]] = kiln.kernel  copy(%arg2, %arg3)
// CHECK: kiln.matmul %arg0, %[[W]]
// CHECK: kiln.matmul %arg1, %[[W]]
func.func @negative_gemm_dequantize_shared_f32(%a: tensor<3x64xf32>, %c: tensor<2x64xf32>, %q: tensor<8x2x16xui8>, %s: tensor<8x2xf32>) -> (tensor<3x8xf32>, tensor<2x8xf32>) {
  %w = kiln.dequantize %q, %s {bits = 4 : i64, block_size = 32 : i64} : (tensor<8x2x16xui8>, tensor<8x2xf32>) -> tensor<8x64xf32>
  %m = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<3x64xf32>, tensor<8x64xf32>) -> tensor<3x8xf32>
  %n = kiln.matmul %c, %w {transpose_rhs = true} : (tensor<2x64xf32>, tensor<8x64xf32>) -> tensor<2x8xf32>
  return %m, %n : tensor<3x8xf32>, tensor<2x8xf32>
}

// -----

// An elementwise consumer reads through the dequantize (an fp32 model's
// weights cast to fp16, as kiln-mixed-precision leaves them).
// CHECK-LABEL: func @dequantize_into_elementwise
// CHECK: kiln.kernel  elementwise(%arg1, %arg2)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.dequantize
// CHECK-NEXT: kiln.cast
func.func @dequantize_into_elementwise(%a: tensor<3x64xf16>, %q: tensor<8x2x16xui8>, %s: tensor<8x2xf32>) -> tensor<3x8xf16> {
  %w = kiln.dequantize %q, %s {bits = 4 : i64, block_size = 32 : i64} : (tensor<8x2x16xui8>, tensor<8x2xf32>) -> tensor<8x64xf32>
  %h = kiln.cast %w : tensor<8x64xf32> -> tensor<8x64xf16>
  %m = kiln.matmul %a, %h {transpose_rhs = true} : (tensor<3x64xf16>, tensor<8x64xf16>) -> tensor<3x8xf16>
  return %m : tensor<3x8xf16>
}

// -----

// BERT's post-norm block: the projection, its bias, a reshape to [b, s, n],
// the residual stream added and the sum normalized by its only reader, a
// LayerNorm of each row: one GEMM kernel, the norm last in its epilogue
// (its scale and shift by input number).
// CHECK-LABEL: func @gemm_bias_residual_layer_norm
// CHECK: %[[K:.*]] = kiln.kernel gemm(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5) {epilogue = #kiln.gemm_epilogue<bias = 2, residual = 3, norm_scale = 4, norm_shift = 5>}
// CHECK: kiln.matmul
// CHECK-NEXT: kiln.add
// CHECK-NEXT: kiln.reshape
// CHECK-NEXT: kiln.add
// CHECK-NEXT: kiln.layer_norm
// CHECK-NEXT: kiln.yield
// CHECK: return %[[K]]
func.func @gemm_bias_residual_layer_norm(%a: tensor<16x32xf16>, %w: tensor<32x64xf16>, %b: tensor<64xf16>, %x: tensor<2x8x64xf16>, %g: tensor<64xf16>, %beta: tensor<64xf16>) -> tensor<2x8x64xf16> {
  %p = kiln.matmul %a, %w : (tensor<16x32xf16>, tensor<32x64xf16>) -> tensor<16x64xf16>
  %s = kiln.add %p, %b : (tensor<16x64xf16>, tensor<64xf16>) -> tensor<16x64xf16>
  %r = kiln.reshape %s : tensor<16x64xf16> -> tensor<2x8x64xf16>
  %y = kiln.add %x, %r : (tensor<2x8x64xf16>, tensor<2x8x64xf16>) -> tensor<2x8x64xf16>
  %n = kiln.layer_norm %y, %g, %beta {axis = 2 : i64, epsilon = 1.0e-12 : f32} : (tensor<2x8x64xf16>, tensor<64xf16>, tensor<64xf16>) -> tensor<2x8x64xf16>
  return %n : tensor<2x8x64xf16>
}

// -----

// A norm without a shift, straight on the product (bfloat16).
// CHECK-LABEL: func @gemm_layer_norm_no_shift
// CHECK: kiln.kernel gemm(%arg0, %arg1, %arg2) {epilogue = #kiln.gemm_epilogue<norm_scale = 2>}
func.func @gemm_layer_norm_no_shift(%a: tensor<4x8xbf16>, %w: tensor<8x16xbf16>, %g: tensor<16xbf16>) -> tensor<4x16xbf16> {
  %p = kiln.matmul %a, %w : (tensor<4x8xbf16>, tensor<8x16xbf16>) -> tensor<4x16xbf16>
  %n = kiln.layer_norm %p, %g {axis = 1 : i64, epsilon = 1.0e-5 : f32} : (tensor<4x16xbf16>, tensor<16xbf16>) -> tensor<4x16xbf16>
  return %n : tensor<4x16xbf16>
}

// -----

// An fp32 product's norm joins its GEMM (Kiln's norm kernel finishes fp32
// GEMMs too).
// CHECK-LABEL: func @gemm_layer_norm_f32
// CHECK: kiln.kernel gemm({{.*}}) {epilogue = #kiln.gemm_epilogue<residual = 2, norm_scale = 3>}
// CHECK: kiln.layer_norm
// CHECK: kiln.yield
// CHECK-NOT: kiln.kernel
func.func @gemm_layer_norm_f32(%a: tensor<4x8xf32>, %w: tensor<8x16xf32>, %x: tensor<4x16xf32>, %g: tensor<16xf32>) -> tensor<4x16xf32> {
  %p = kiln.matmul %a, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %y = kiln.add %x, %p : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %n = kiln.layer_norm %y, %g {axis = 1 : i64, epsilon = 1.0e-5 : f32} : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %n : tensor<4x16xf32>
}

// -----

// negative_: an f64 product's norm stays a row kernel (Kiln's norm kernel
// finishes fp32 and 16-bit GEMMs only).
// CHECK-LABEL: func @negative_gemm_layer_norm_f64
// CHECK-NOT: kiln.kernel gemm
// CHECK: kiln.kernel reduction
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.add
// CHECK-NEXT: kiln.layer_norm
func.func @negative_gemm_layer_norm_f64(%a: tensor<4x8xf64>, %w: tensor<8x16xf64>, %x: tensor<4x16xf64>, %g: tensor<16xf64>) -> tensor<4x16xf64> {
  %p = kiln.matmul %a, %w : (tensor<4x8xf64>, tensor<8x16xf64>) -> tensor<4x16xf64>
  %y = kiln.add %x, %p : (tensor<4x16xf64>, tensor<4x16xf64>) -> tensor<4x16xf64>
  %n = kiln.layer_norm %y, %g {axis = 1 : i64, epsilon = 1.0e-5 : f32} : (tensor<4x16xf64>, tensor<16xf64>) -> tensor<4x16xf64>
  return %n : tensor<4x16xf64>
}

// -----

// A pre-norm block's sum, read by the norm and again after it (here the
// function's result): the GEMM kernel yields the norm and the sum.
// CHECK-LABEL: func @gemm_layer_norm_sum_also_read
// CHECK: %[[K:.*]]:2 = kiln.kernel gemm(%arg0, %arg1, %arg2, %arg3) {epilogue = #kiln.gemm_epilogue<residual = 2, norm_scale = 3>}
// CHECK: %[[Y:.*]] = kiln.add
// CHECK-NEXT: %[[N:.*]] = kiln.layer_norm %[[Y]]
// CHECK-NEXT: kiln.yield %[[N]], %[[Y]]
// CHECK: return %[[K]]#0, %[[K]]#1
func.func @gemm_layer_norm_sum_also_read(%a: tensor<4x8xf16>, %w: tensor<8x16xf16>, %x: tensor<4x16xf16>, %g: tensor<16xf16>) -> (tensor<4x16xf16>, tensor<4x16xf16>) {
  %p = kiln.matmul %a, %w : (tensor<4x8xf16>, tensor<8x16xf16>) -> tensor<4x16xf16>
  %y = kiln.add %x, %p : (tensor<4x16xf16>, tensor<4x16xf16>) -> tensor<4x16xf16>
  %n = kiln.layer_norm %y, %g {axis = 1 : i64, epsilon = 1.0e-5 : f32} : (tensor<4x16xf16>, tensor<16xf16>) -> tensor<4x16xf16>
  return %n, %y : tensor<4x16xf16>, tensor<4x16xf16>
}

// -----

// LLaMA's pre-norm residual stream: the attention output's projection adds
// to the stream, RMSNorm feeds the MLP, and the MLP's projection adds to
// the same sum. The first GEMM kernel yields the norm and the sum; the
// second reads the sum as its residual.
// CHECK-LABEL: func @gemm_residual_rms_norm_prenorm
// CHECK: %[[K:.*]]:2 = kiln.kernel gemm(%arg0, %arg1, %arg2, %arg3) {epilogue = #kiln.gemm_epilogue<residual = 2, norm_scale = 3>}
// CHECK: kiln.matmul
// CHECK-NEXT: %[[Y:.*]] = kiln.add
// CHECK-NEXT: %[[N:.*]] = kiln.rms_norm %[[Y]]
// CHECK-NEXT: kiln.yield %[[N]], %[[Y]]
// CHECK: kiln.kernel gemm(%[[K]]#0, %arg4, %[[K]]#1) {epilogue = #kiln.gemm_epilogue<residual = 2>}
func.func @gemm_residual_rms_norm_prenorm(%a: tensor<2x4x8xf16>, %wo: tensor<8x8xf16>, %x: tensor<2x4x8xf16>, %g: tensor<8xf16>, %wd: tensor<8x8xf16>) -> tensor<2x4x8xf16> {
  %p = kiln.matmul %a, %wo : (tensor<2x4x8xf16>, tensor<8x8xf16>) -> tensor<2x4x8xf16>
  %y = kiln.add %x, %p : (tensor<2x4x8xf16>, tensor<2x4x8xf16>) -> tensor<2x4x8xf16>
  %n = kiln.rms_norm %y, %g {axis = 2 : i64, epsilon = 1.0e-6 : f32} : (tensor<2x4x8xf16>, tensor<8xf16>) -> tensor<2x4x8xf16>
  %q = kiln.matmul %n, %wd : (tensor<2x4x8xf16>, tensor<8x8xf16>) -> tensor<2x4x8xf16>
  %z = kiln.add %y, %q : (tensor<2x4x8xf16>, tensor<2x4x8xf16>) -> tensor<2x4x8xf16>
  return %z : tensor<2x4x8xf16>
}

// -----

// negative_: a sum read before the norm (where the kernel would be placed)
// cannot be the kernel's second result: the GEMM writes it, the norm is a
// row kernel of its own.
// CHECK-LABEL: func @negative_gemm_norm_sum_read_before
// CHECK: kiln.kernel gemm({{.*}}) {epilogue = #kiln.gemm_epilogue<residual = 2>}
// CHECK: kiln.kernel elementwise
// CHECK: kiln.kernel reduction
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.rms_norm
func.func @negative_gemm_norm_sum_read_before(%a: tensor<4x8xf16>, %w: tensor<8x16xf16>, %x: tensor<4x16xf16>, %g: tensor<16xf16>) -> (tensor<4x16xf16>, tensor<4x16xf16>) {
  %p = kiln.matmul %a, %w : (tensor<4x8xf16>, tensor<8x16xf16>) -> tensor<4x16xf16>
  %y = kiln.add %x, %p : (tensor<4x16xf16>, tensor<4x16xf16>) -> tensor<4x16xf16>
  %e = kiln.relu %y : tensor<4x16xf16>
  %n = kiln.rms_norm %y, %g {axis = 1 : i64, epsilon = 1.0e-5 : f32} : (tensor<4x16xf16>, tensor<16xf16>) -> tensor<4x16xf16>
  return %n, %e : tensor<4x16xf16>, tensor<4x16xf16>
}

// -----

// negative_: a norm over more than the last axis, and one whose reshape
// changes the rows, are not norms of the product's rows.
// CHECK-LABEL: func @negative_gemm_layer_norm_other_axes
// CHECK: kiln.kernel gemm({{.*}}) {epilogue = #kiln.gemm_epilogue<bias = 2>}
// CHECK: kiln.layer_norm
// CHECK: kiln.kernel gemm({{.*}}) {epilogue = #kiln.gemm_epilogue<bias = 2>}
// CHECK: kiln.layer_norm
func.func @negative_gemm_layer_norm_other_axes(%a: tensor<16x32xf16>, %w: tensor<32x64xf16>, %b: tensor<64xf16>, %g: tensor<8x64xf16>, %h: tensor<128xf16>) -> (tensor<2x8x64xf16>, tensor<8x128xf16>) {
  %p = kiln.matmul %a, %w : (tensor<16x32xf16>, tensor<32x64xf16>) -> tensor<16x64xf16>
  %s = kiln.add %p, %b : (tensor<16x64xf16>, tensor<64xf16>) -> tensor<16x64xf16>
  %r = kiln.reshape %s : tensor<16x64xf16> -> tensor<2x8x64xf16>
  %n = kiln.layer_norm %r, %g {axis = 1 : i64, epsilon = 1.0e-5 : f32} : (tensor<2x8x64xf16>, tensor<8x64xf16>) -> tensor<2x8x64xf16>
  %q = kiln.matmul %a, %w : (tensor<16x32xf16>, tensor<32x64xf16>) -> tensor<16x64xf16>
  %t = kiln.add %q, %b : (tensor<16x64xf16>, tensor<64xf16>) -> tensor<16x64xf16>
  %u = kiln.reshape %t : tensor<16x64xf16> -> tensor<8x128xf16>
  %m = kiln.layer_norm %u, %h {axis = 1 : i64, epsilon = 1.0e-5 : f32} : (tensor<8x128xf16>, tensor<128xf16>) -> tensor<8x128xf16>
  return %n, %m : tensor<2x8x64xf16>, tensor<8x128xf16>
}

// -----

// A model's last norm and its cast to the fp32 output join the GEMM: the
// step stores the 16-bit norm widened (rt::MatmulStep::widen).
// CHECK-LABEL: func @gemm_layer_norm_cast_to_output
// CHECK: kiln.kernel gemm({{.*}}) {epilogue = #kiln.gemm_epilogue<residual = 2, norm_scale = 3>} : {{.*}} -> tensor<4x16xf32>
// CHECK: kiln.layer_norm
// CHECK-NEXT: kiln.cast
// CHECK-NEXT: kiln.yield
// CHECK-NOT: kiln.kernel
func.func @gemm_layer_norm_cast_to_output(%a: tensor<4x8xf16>, %w: tensor<8x16xf16>, %x: tensor<4x16xf16>, %g: tensor<16xf16>) -> tensor<4x16xf32> {
  %p = kiln.matmul %a, %w : (tensor<4x8xf16>, tensor<8x16xf16>) -> tensor<4x16xf16>
  %y = kiln.add %x, %p : (tensor<4x16xf16>, tensor<4x16xf16>) -> tensor<4x16xf16>
  %n = kiln.layer_norm %y, %g {axis = 1 : i64, epsilon = 1.0e-5 : f32} : (tensor<4x16xf16>, tensor<16xf16>) -> tensor<4x16xf16>
  %c = kiln.cast %n : tensor<4x16xf16> -> tensor<4x16xf32>
  return %c : tensor<4x16xf32>
}

// -----

// An LM head's logits (bf16) and their cast to the fp32 output: one step.
// CHECK-LABEL: func @gemm_cast_to_output
// CHECK: kiln.kernel gemm({{.*}}) {epilogue = #kiln.gemm_epilogue<>} : {{.*}} -> tensor<4x16xf32>
// CHECK: kiln.matmul
// CHECK-NEXT: kiln.cast
// CHECK-NEXT: kiln.yield
func.func @gemm_cast_to_output(%a: tensor<4x8xbf16>, %w: tensor<8x16xbf16>) -> tensor<4x16xf32> {
  %p = kiln.matmul %a, %w : (tensor<4x8xbf16>, tensor<8x16xbf16>) -> tensor<4x16xbf16>
  %c = kiln.cast %p : tensor<4x16xbf16> -> tensor<4x16xf32>
  return %c : tensor<4x16xf32>
}

// -----

// negative_: a product read by its cast and by another op keeps the cast
// out (the GEMM writes the 16-bit product the other reads); a cast to
// another type than f32 stays out too.
// CHECK-LABEL: func @negative_gemm_cast_shared_or_narrowing
// CHECK: %[[P:.*]] = kiln.matmul
// CHECK: kiln.kernel elementwise(%[[P]])
// CHECK: kiln.cast
// CHECK: %[[Q:.*]] = kiln.matmul
// CHECK: kiln.kernel elementwise(%[[Q]])
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.cast {{.*}} -> tensor<4x16xi32>
func.func @negative_gemm_cast_shared_or_narrowing(%a: tensor<4x8xf16>, %w: tensor<8x16xf16>) -> (tensor<4x16xf32>, tensor<4x16xf16>, tensor<4x16xi32>) {
  %p = kiln.matmul %a, %w : (tensor<4x8xf16>, tensor<8x16xf16>) -> tensor<4x16xf16>
  %c = kiln.cast %p : tensor<4x16xf16> -> tensor<4x16xf32>
  %q = kiln.matmul %a, %w : (tensor<4x8xf16>, tensor<8x16xf16>) -> tensor<4x16xf16>
  %i = kiln.cast %q : tensor<4x16xf16> -> tensor<4x16xi32>
  return %c, %p, %i : tensor<4x16xf32>, tensor<4x16xf16>, tensor<4x16xi32>
}

// -----

// A pre-norm decoder's residual sum (onnxruntime's SkipSimplifiedLayerNorm,
// in fp32 from 16-bit inputs): read by the norm and, through its 16-bit
// cast, by later ops. The norm's kernel computes the sum in its first pass
// anyway and writes the cast as a second result, with the casts that feed
// the sum; neither gets a kernel of its own.
// CHECK-LABEL: func @rms_norm_writes_its_shared_input
// CHECK: %[[K:.*]]:2 = kiln.kernel reduction(%arg0, %arg1, %arg2)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.cast
// CHECK-NEXT: kiln.cast
// CHECK-NEXT: %[[S:.*]] = kiln.add
// CHECK-NEXT: %[[N:.*]] = kiln.rms_norm %[[S]]
// CHECK-NEXT: %[[C:.*]] = kiln.cast %[[N]]
// CHECK-NEXT: %[[S16:.*]] = kiln.cast %[[S]]
// CHECK-NEXT: kiln.yield %[[C]], %[[S16]] : tensor<4x16xf16>, tensor<4x16xf16>
// CHECK-NOT: kiln.kernel
// CHECK: return %[[K]]#0, %[[K]]#1
func.func @rms_norm_writes_its_shared_input(%a: tensor<4x16xf16>, %b: tensor<4x16xf16>, %g: tensor<16xf32>) -> (tensor<4x16xf16>, tensor<4x16xf16>) {
  %a32 = kiln.cast %a : tensor<4x16xf16> -> tensor<4x16xf32>
  %b32 = kiln.cast %b : tensor<4x16xf16> -> tensor<4x16xf32>
  %s = kiln.add %a32, %b32 : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %n = kiln.rms_norm %s, %g {axis = 1 : i64, epsilon = 1.0e-6 : f32} : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %n16 = kiln.cast %n : tensor<4x16xf32> -> tensor<4x16xf16>
  %s16 = kiln.cast %s : tensor<4x16xf32> -> tensor<4x16xf16>
  return %n16, %s16 : tensor<4x16xf16>, tensor<4x16xf16>
}

// -----

// A sum that only the norm and the norm's own epilogue read is its
// prologue: one kernel, one result (the epilogue reads the sum's value).
// CHECK-LABEL: func @norm_input_read_in_epilogue
// CHECK-NEXT: kiln.kernel reduction(%arg0, %arg1, %arg2) : {{.*}} -> tensor<4x16xf32>
// CHECK-NEXT: ^bb0
// CHECK-NEXT: %[[S:.*]] = kiln.add
// CHECK-NEXT: %[[N:.*]] = kiln.rms_norm %[[S]]
// CHECK-NEXT: kiln.add %[[S]], %[[N]]
// CHECK-NOT: kiln.kernel
func.func @norm_input_read_in_epilogue(%a: tensor<4x16xf32>, %b: tensor<4x16xf32>, %g: tensor<16xf32>) -> tensor<4x16xf32> {
  %s = kiln.add %a, %b : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %n = kiln.rms_norm %s, %g {axis = 1 : i64, epsilon = 1.0e-6 : f32} : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %y = kiln.add %s, %n : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// negative_: the sum is also read before the norm, where the norm's kernel
// is not yet placed: it stays a kernel of its own.
// CHECK-LABEL: func @negative_norm_input_read_before
// CHECK: kiln.kernel elementwise
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.add
// CHECK-NEXT: kiln.yield
// CHECK: kiln.kernel reduction
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.softmax
// CHECK: kiln.kernel reduction
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.layer_norm
func.func @negative_norm_input_read_before(%a: tensor<4x16xf32>, %b: tensor<4x16xf32>, %g: tensor<16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %s = kiln.add %a, %b : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %r = kiln.softmax %s {axis = 0 : i64} : tensor<4x16xf32>
  %n = kiln.layer_norm %s, %g {axis = 1 : i64, epsilon = 1.0e-5 : f32} : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %n, %r : tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

/// negative_: a widened weight two norms read is not either kernel's: it
/// keeps a kernel of its own (computed once), which both norms read.
// CHECK-LABEL: func @negative_norm_scale_cast_shared
// CHECK: %[[G:.*]] = kiln.kernel elementwise(%arg2)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.cast
// CHECK: kiln.kernel reduction(%arg0, %[[G]])
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.rms_norm
// CHECK: kiln.kernel reduction(%arg1, %[[G]])
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.rms_norm
func.func @negative_norm_scale_cast_shared(%a: tensor<4x16xf32>, %b: tensor<4x16xf32>, %g: tensor<16xf16>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %g32 = kiln.cast %g : tensor<16xf16> -> tensor<16xf32>
  %n = kiln.rms_norm %a, %g32 {axis = 1 : i64, epsilon = 1.0e-6 : f32} : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %m = kiln.rms_norm %b, %g32 {axis = 1 : i64, epsilon = 1.0e-6 : f32} : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %n, %m : tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

/// negative_: a scale computed by more than a cast (here a tanh of an
/// input) would be computed again for every row: it keeps its own kernel.
// CHECK-LABEL: func @negative_norm_scale_computed
// CHECK: %[[G:.*]] = kiln.kernel elementwise(%arg1)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.tanh
// CHECK: kiln.kernel reduction(%arg0, %[[G]])
func.func @negative_norm_scale_computed(%a: tensor<4x16xf32>, %g: tensor<16xf32>) -> tensor<4x16xf32> {
  %t = kiln.tanh %g : tensor<16xf32>
  %n = kiln.rms_norm %a, %t {axis = 1 : i64, epsilon = 1.0e-6 : f32} : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %n : tensor<4x16xf32>
}

// -----

/// negative_: a residual sum a GEMM takes as its epilogue (cuBLASLt's C) is
/// the GEMM kernel's result: where the GEMM cannot take the norm too (one
/// over both axes, not each row), the norm reads it, with one result of its
/// own.
// CHECK-LABEL: func @negative_norm_input_in_gemm
// CHECK: %[[P:.*]] = kiln.kernel gemm
// CHECK: kiln.kernel reduction(%[[P]], %arg3) : {{.*}} -> tensor<2x64xf32> {
// CHECK: return
func.func @negative_norm_input_in_gemm(%a: tensor<2x8xf32>, %w: tensor<8x64xf32>, %x: tensor<2x64xf32>, %g: tensor<2x64xf32>) -> (tensor<2x64xf32>, tensor<2x64xf32>) {
  %p = kiln.matmul %a, %w : (tensor<2x8xf32>, tensor<8x64xf32>) -> tensor<2x64xf32>
  %h = kiln.add %x, %p : (tensor<2x64xf32>, tensor<2x64xf32>) -> tensor<2x64xf32>
  %n = kiln.rms_norm %h, %g {axis = 0 : i64, epsilon = 1.0e-6 : f32} : (tensor<2x64xf32>, tensor<2x64xf32>) -> tensor<2x64xf32>
  return %n, %h : tensor<2x64xf32>, tensor<2x64xf32>
}

// -----

/// Rows of any static width take their norm (12168 columns: past what the
/// norm kernel once held in shared memory).
// CHECK-LABEL: func @gemm_wide_rows_norm
// CHECK: kiln.kernel gemm({{.*}}) {epilogue = #kiln.gemm_epilogue<residual = 2, norm_scale = 3>}
// CHECK-NOT: kiln.kernel
// CHECK: return
func.func @gemm_wide_rows_norm(%a: tensor<2x8xf32>, %w: tensor<8x12168xf32>, %x: tensor<2x12168xf32>, %g: tensor<12168xf32>) -> tensor<2x12168xf32> {
  %p = kiln.matmul %a, %w : (tensor<2x8xf32>, tensor<8x12168xf32>) -> tensor<2x12168xf32>
  %h = kiln.add %x, %p : (tensor<2x12168xf32>, tensor<2x12168xf32>) -> tensor<2x12168xf32>
  %n = kiln.rms_norm %h, %g {axis = 1 : i64, epsilon = 1.0e-6 : f32} : (tensor<2x12168xf32>, tensor<12168xf32>) -> tensor<2x12168xf32>
  return %n : tensor<2x12168xf32>
}

// -----

// The sum read by two later ops (not one cast): the sum itself is the
// second result.
// CHECK-LABEL: func @layer_norm_writes_its_input
// CHECK: %[[K:.*]]:2 = kiln.kernel reduction(%arg0, %arg1, %arg2)
// CHECK: kiln.yield %{{.*}}, %{{.*}} : tensor<4x16xf32>, tensor<4x16xf32>
// CHECK: kiln.kernel elementwise(%[[K]]#1)
func.func @layer_norm_writes_its_input(%a: tensor<4x16xf32>, %b: tensor<4x16xf32>, %g: tensor<16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>) {
  %s = kiln.add %a, %b : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %n = kiln.layer_norm %s, %g {axis = 1 : i64, epsilon = 1.0e-5 : f32} : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %e = kiln.exp %s : tensor<4x16xf32>
  return %n, %s, %e : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

// A decoder layer's key and value cache updates write alike (one shape,
// axis and offset): one kernel with two results, placed at the later
// update, the key's rotary-like producer inside it.
// CHECK-LABEL: func @cache_updates_paired
// CHECK: %[[K:.*]]:2 = kiln.kernel elementwise
// CHECK: %[[KU:.*]] = kiln.update_slice %{{.*}}, %{{.*}} {axis = 2 : i64, offset = "5"}
// CHECK: %[[VU:.*]] = kiln.update_slice %{{.*}}, %{{.*}} {axis = 2 : i64, offset = "5"}
// CHECK-NEXT: kiln.yield %[[VU]], %[[KU]]
// CHECK-NOT: kiln.update_slice
// CHECK: return %[[K]]#1, %[[K]]#0
func.func @cache_updates_paired(%kc: tensor<1x2x8x4xf32>, %vc: tensor<1x2x8x4xf32>, %k: tensor<1x2x1x4xf32>, %v: tensor<1x2x1x4xf32>) -> (tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>) {
  %kn = kiln.neg %k : tensor<1x2x1x4xf32>
  %ku = kiln.update_slice %kc, %kn {axis = 2 : i64, offset = "5"} : (tensor<1x2x8x4xf32>, tensor<1x2x1x4xf32>) -> tensor<1x2x8x4xf32>
  %vu = kiln.update_slice %vc, %v {axis = 2 : i64, offset = "5"} : (tensor<1x2x8x4xf32>, tensor<1x2x1x4xf32>) -> tensor<1x2x8x4xf32>
  return %ku, %vu : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>
}

// -----

// With per-batch starts (onnxruntime-genai's buffer form writes each
// sequence's new rows at its seqlens_k), one starts value for both: paired
// too, the kernel's one row index serving both.
// CHECK-LABEL: func @cache_updates_paired_with_starts
// CHECK: %[[K:.*]]:2 = kiln.kernel elementwise
// CHECK: %[[KU:.*]] = kiln.update_slice %{{.*}}, %{{.*}}, %[[S:.*]] {axis = 2 : i64, offset = "0"}
// CHECK: %[[VU:.*]] = kiln.update_slice %{{.*}}, %{{.*}}, %[[S]] {axis = 2 : i64, offset = "0"}
// CHECK-NEXT: kiln.yield %[[VU]], %[[KU]]
// CHECK-NOT: kiln.update_slice
// CHECK: return %[[K]]#1, %[[K]]#0
func.func @cache_updates_paired_with_starts(%kc: tensor<2x2x8x4xf32>, %vc: tensor<2x2x8x4xf32>, %k: tensor<2x2x1x4xf32>, %v: tensor<2x2x1x4xf32>, %at: tensor<2x1x1x1xi64>) -> (tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>) {
  %kn = kiln.neg %k : tensor<2x2x1x4xf32>
  %ku = kiln.update_slice %kc, %kn, %at {axis = 2 : i64, offset = "0"} : (tensor<2x2x8x4xf32>, tensor<2x2x1x4xf32>, tensor<2x1x1x1xi64>) -> tensor<2x2x8x4xf32>
  %vu = kiln.update_slice %vc, %v, %at {axis = 2 : i64, offset = "0"} : (tensor<2x2x8x4xf32>, tensor<2x2x1x4xf32>, tensor<2x1x1x1xi64>) -> tensor<2x2x8x4xf32>
  return %ku, %vu : tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>
}

// -----

/// negative_: per-batch starts of two values write at other rows.
// CHECK-LABEL: func @negative_cache_updates_other_starts
// CHECK: kiln.kernel elementwise
// CHECK: kiln.kernel elementwise
func.func @negative_cache_updates_other_starts(%kc: tensor<2x2x8x4xf32>, %vc: tensor<2x2x8x4xf32>, %k: tensor<2x2x1x4xf32>, %v: tensor<2x2x1x4xf32>, %at: tensor<2x1x1x1xi64>, %other: tensor<2x1x1x1xi64>) -> (tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>) {
  %ku = kiln.update_slice %kc, %k, %at {axis = 2 : i64, offset = "0"} : (tensor<2x2x8x4xf32>, tensor<2x2x1x4xf32>, tensor<2x1x1x1xi64>) -> tensor<2x2x8x4xf32>
  %vu = kiln.update_slice %vc, %v, %other {axis = 2 : i64, offset = "0"} : (tensor<2x2x8x4xf32>, tensor<2x2x1x4xf32>, tensor<2x1x1x1xi64>) -> tensor<2x2x8x4xf32>
  return %ku, %vu : tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>
}

// -----

/// negative_: updates at different offsets do not share a loop.
// CHECK-LABEL: func @negative_cache_updates_other_offsets
// CHECK: kiln.kernel elementwise
// CHECK: kiln.kernel elementwise
func.func @negative_cache_updates_other_offsets(%kc: tensor<1x2x8x4xf32>, %vc: tensor<1x2x8x4xf32>, %k: tensor<1x2x1x4xf32>, %v: tensor<1x2x1x4xf32>) -> (tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>) {
  %ku = kiln.update_slice %kc, %k {axis = 2 : i64, offset = "5"} : (tensor<1x2x8x4xf32>, tensor<1x2x1x4xf32>) -> tensor<1x2x8x4xf32>
  %vu = kiln.update_slice %vc, %v {axis = 2 : i64, offset = "6"} : (tensor<1x2x8x4xf32>, tensor<1x2x1x4xf32>) -> tensor<1x2x8x4xf32>
  return %ku, %vu : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>
}

// -----

/// negative_: the key cache is read between the two updates (by an exp):
/// the pair's kernel, placed at the value update, would come too late for
/// it.
// CHECK-LABEL: func @negative_cache_update_read_between
// CHECK: kiln.kernel elementwise
// CHECK: kiln.kernel elementwise
// CHECK: kiln.kernel elementwise
func.func @negative_cache_update_read_between(%kc: tensor<1x2x8x4xf32>, %vc: tensor<1x2x8x4xf32>, %k: tensor<1x2x1x4xf32>, %v: tensor<1x2x1x4xf32>) -> (tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>) {
  %ku = kiln.update_slice %kc, %k {axis = 2 : i64, offset = "5"} : (tensor<1x2x8x4xf32>, tensor<1x2x1x4xf32>) -> tensor<1x2x8x4xf32>
  %e = kiln.exp %ku : tensor<1x2x8x4xf32>
  %vu = kiln.update_slice %vc, %v {axis = 2 : i64, offset = "5"} : (tensor<1x2x8x4xf32>, tensor<1x2x1x4xf32>) -> tensor<1x2x8x4xf32>
  return %ku, %vu, %e : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>
}

// -----

// A cheap scalar (one element: a dynamic quantization's scale and zero
// point, from the extremes one reduction wrote) read by several
// elementwise kernels: each computes it again where it reads it, through
// the slices of the extremes, rather than a one-element kernel writing it.
// Here both the quantize and a second elementwise reader take the chain in;
// no kernel computes the scalar alone.
// CHECK-LABEL: func @cheap_scalars_duplicated
// CHECK: %[[R:.*]] = kiln.kernel reduction(%arg0)
// CHECK: kiln.kernel elementwise(%[[R]], %{{.*}}, %arg0)
// CHECK: kiln.slice
// CHECK: kiln.div
// CHECK: kiln.round
// CHECK: kiln.kernel elementwise(%[[R]], %{{.*}}, %arg1)
// CHECK: kiln.slice
// CHECK: kiln.mul
// CHECK-NOT: kiln.kernel
func.func @cheap_scalars_duplicated(%x: tensor<4x8xf32>, %y: tensor<3xf32>) -> (tensor<4x8xf32>, tensor<3xf32>) {
  %m = kiln.reduce_max %x {axes = array<i64: 1>, keepdims = false} : tensor<4x8xf32> -> tensor<4xf32>
  %s = kiln.slice %m {starts = array<i64: 1>, strides = array<i64: 1>} : tensor<4xf32> -> tensor<1xf32>
  %r = kiln.reshape %s : tensor<1xf32> -> tensor<f32>
  %c = kiln.constant dense<2.550000e+02> : tensor<f32>
  %scale = kiln.div %r, %c : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %q = kiln.div %x, %scale : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %qr = kiln.round %q : tensor<4x8xf32>
  %w = kiln.mul %y, %scale : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  return %qr, %w : tensor<4x8xf32>, tensor<3xf32>
}

// -----

// negative_: a scalar the function returns (DynamicQuantizeLinear's scale
// output) is still written for that reader, while an elementwise reader
// computes its own copy (the reader's kernel writes the scalar too, from
// its first thread: mergeScalarKernels); and a two-element value is not a
// scalar: one kernel writes it, two read it.
// CHECK-LABEL: func @negative_scalars_kept
// CHECK: %[[S:.*]]:2 = kiln.kernel elementwise(%arg1, %arg0) {{.*}} -> (tensor<4x8xf32>, tensor<f32>)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.exp
// CHECK-NEXT: kiln.exp
// CHECK-NEXT: kiln.add
// CHECK: %[[P:.*]] = kiln.kernel elementwise(%arg2)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.exp
// CHECK-NEXT: kiln.yield
// CHECK: %[[V:.*]] = kiln.reshape %[[P]]
// CHECK: kiln.kernel elementwise(%arg3, %[[V]])
// CHECK: kiln.kernel elementwise(%arg3, %[[V]])
// CHECK: return %[[S]]#0, {{.*}}, %[[S]]#1
func.func @negative_scalars_kept(%a: tensor<4x8xf32>, %t: tensor<f32>, %u: tensor<2xf32>, %v: tensor<2x5xf32>) -> (tensor<4x8xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<f32>) {
  %s = kiln.exp %t : tensor<f32>
  %e = kiln.add %a, %s : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %pair = kiln.exp %u : tensor<2xf32>
  %pr = kiln.reshape %pair : tensor<2xf32> -> tensor<2x1xf32>
  %one = kiln.mul %v, %pr : (tensor<2x5xf32>, tensor<2x1xf32>) -> tensor<2x5xf32>
  %two = kiln.sub %v, %pr : (tensor<2x5xf32>, tensor<2x1xf32>) -> tensor<2x5xf32>
  return %e, %one, %two, %s : tensor<4x8xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<f32>
}

// -----

// Two one-element kernels whose results one op reads are one kernel that
// yields both (a dynamic quantization's scale and zero point, both read by
// the integer GEMM; here by the return): one launch where there were two.
// The zero point's kernel computes the scale itself (duplicateCheapScalars),
// so the body computes it twice.
// CHECK-LABEL: func @scalar_kernels_paired
// CHECK: %[[K:.*]]:2 = kiln.kernel  elementwise(%arg0, %arg1)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.exp
// CHECK-NEXT: kiln.exp
// CHECK-NEXT: kiln.div
// CHECK-NEXT: kiln.round
// CHECK-NEXT: kiln.yield %{{.*}}, %{{.*}} : tensor<f32>, tensor<f32>
// CHECK-NOT: kiln.kernel
// CHECK: return %[[K]]#1, %[[K]]#0
func.func @scalar_kernels_paired(%t: tensor<f32>, %r: tensor<f32>) -> (tensor<f32>, tensor<f32>) {
  %s = kiln.exp %t : tensor<f32>
  %d = kiln.div %r, %s : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %z = kiln.round %d : tensor<f32>
  return %s, %z : tensor<f32>, tensor<f32>
}

// -----

// negative_: kernels of two elements are not paired, though one op reads
// both.
// CHECK-LABEL: func @negative_scalar_kernels_of_two
// CHECK: kiln.kernel  elementwise(%arg0)
// CHECK: kiln.kernel  elementwise(%arg1)
func.func @negative_scalar_kernels_of_two(%t: tensor<2xf32>, %r: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  %s = kiln.exp %t : tensor<2xf32>
  %z = kiln.round %r : tensor<2xf32>
  return %s, %z : tensor<2xf32>, tensor<2xf32>
}

// -----

// negative_: one-element kernels of two shapes (tensor<f32> and
// tensor<1xf32>, both read by the return) are not paired: the CUDA
// target's elementwise kernel stores its results at one index (the
// differential fuzzer's finding, test/fuzz/regressions/differential).
// CHECK-LABEL: func @negative_scalar_kernels_of_two_shapes
// CHECK: kiln.kernel  elementwise(%arg0)
// CHECK: kiln.kernel  elementwise(%arg1)
func.func @negative_scalar_kernels_of_two_shapes(%t: tensor<f32>, %r: tensor<1xf32>) -> (tensor<f32>, tensor<1xf32>) {
  %s = kiln.exp %t : tensor<f32>
  %z = kiln.round %r : tensor<1xf32>
  return %s, %z : tensor<f32>, tensor<1xf32>
}

// -----

/// A one-element kernel whose every input an elementwise kernel of more
/// elements reads too joins it, written by its first thread (a dynamic
/// quantization's scale for its GEMM, beside the kernel that quantizes
/// with it).
// CHECK-LABEL: func @scalar_kernel_merged_into_reader
// CHECK: %[[K:.*]]:2 = kiln.kernel  elementwise(%arg1, %arg2, %arg0) {{.*}} -> (tensor<4x8xf32>, tensor<f32>)
// CHECK: kiln.round
// CHECK: kiln.yield %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<f32>
// CHECK-NOT: kiln.kernel
// CHECK: return %[[K]]#0, %[[K]]#1
func.func @scalar_kernel_merged_into_reader(%x: tensor<4x8xf32>, %e: tensor<2xf32>, %c: tensor<f32>) -> (tensor<4x8xf32>, tensor<f32>) {
  %h = kiln.slice %e {starts = array<i64: 1>, strides = array<i64: 1>} : tensor<2xf32> -> tensor<1xf32>
  %hs = kiln.reshape %h : tensor<1xf32> -> tensor<f32>
  %sc = kiln.div %hs, %c : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %q = kiln.div %x, %sc : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %r = kiln.round %q : tensor<4x8xf32>
  return %r, %sc : tensor<4x8xf32>, tensor<f32>
}

// -----

/// negative_: a one-element kernel that reads a value the other kernel does
/// not (%c) keeps its own launch.
// CHECK-LABEL: func @negative_scalar_kernel_reads_more
// CHECK: kiln.kernel  elementwise(%arg1, %arg2) {{.*}} -> tensor<f32>
// CHECK: kiln.kernel  elementwise(%arg1, %arg0) {{.*}} -> tensor<4x8xf32>
func.func @negative_scalar_kernel_reads_more(%x: tensor<4x8xf32>, %e: tensor<2xf32>, %c: tensor<f32>) -> (tensor<4x8xf32>, tensor<f32>) {
  %h = kiln.slice %e {starts = array<i64: 1>, strides = array<i64: 1>} : tensor<2xf32> -> tensor<1xf32>
  %hs = kiln.reshape %h : tensor<1xf32> -> tensor<f32>
  %sc = kiln.div %hs, %c : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %q = kiln.div %x, %hs : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %r = kiln.round %q : tensor<4x8xf32>
  return %r, %sc : tensor<4x8xf32>, tensor<f32>
}

// -----

/// negative_: a one-element kernel read before the other kernel (the 8-bit
/// GEMM's activation scale, whose product the other kernel reads through a
/// transpose) cannot move into it.
// CHECK-LABEL: func @negative_scalar_kernel_read_before
// CHECK: %[[S:.*]] = kiln.kernel  elementwise(%arg2) {{.*}} -> tensor<f32>
// CHECK: %[[G:.*]] = kiln.kernel  gemm({{.*}}%[[S]]
// CHECK: kiln.kernel  elementwise(%[[G]], %arg2) {{.*}} -> tensor<8x3xf32>
func.func @negative_scalar_kernel_read_before(%x: tensor<3x32xf32>, %s: tensor<8x1xf32>, %e: tensor<2xf32>) -> tensor<8x3xf32> {
  %q = kiln.constant dense<131> : tensor<8x1x32xui8>
  %h = kiln.slice %e {starts = array<i64: 1>, strides = array<i64: 1>} : tensor<2xf32> -> tensor<1xf32>
  %hs = kiln.reshape %h : tensor<1xf32> -> tensor<f32>
  %sa = kiln.exp %hs : tensor<f32>
  %xq = kiln.cast %x : tensor<3x32xf32> -> tensor<3x32xi8>
  %xf = kiln.cast %xq : tensor<3x32xi8> -> tensor<3x32xf32>
  %a = kiln.mul %xf, %sa : (tensor<3x32xf32>, tensor<f32>) -> tensor<3x32xf32>
  %w = kiln.dequantize %q, %s {bits = 8 : i64, block_size = 32 : i64} : (tensor<8x1x32xui8>, tensor<8x1xf32>) -> tensor<8x32xf32>
  %m = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<3x32xf32>, tensor<8x32xf32>) -> tensor<3x8xf32>
  %t = kiln.transpose %m {permutation = array<i64: 1, 0>} : tensor<3x8xf32> -> tensor<8x3xf32>
  %y = kiln.mul %t, %sa : (tensor<8x3xf32>, tensor<f32>) -> tensor<8x3xf32>
  return %y : tensor<8x3xf32>
}

// -----

/// Kernels of one shape that read a value in common through data movement
/// (a Q/DQ graph's query, key and value heads, each sliced from one packed
/// projection and transposed) are one kernel with a result each.
// CHECK-LABEL: func @sibling_kernels_merged
// CHECK: %[[K:.*]]:3 = kiln.kernel  elementwise(%arg0) {{.*}} -> (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>)
// CHECK-COUNT-3: kiln.transpose
// CHECK: kiln.yield
// CHECK-NOT: kiln.kernel
// CHECK: return %[[K]]#2, %[[K]]#0, %[[K]]#1
func.func @sibling_kernels_merged(%p: tensor<2x4x9xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>) {
  %q0 = kiln.slice %p {starts = array<i64: 0, 0, 0>, strides = array<i64: 1, 1, 1>} : tensor<2x4x9xf32> -> tensor<2x4x3xf32>
  %q1 = kiln.transpose %q0 {permutation = array<i64: 0, 2, 1>} : tensor<2x4x3xf32> -> tensor<2x3x4xf32>
  %q = kiln.exp %q1 : tensor<2x3x4xf32>
  %k0 = kiln.slice %p {starts = array<i64: 0, 0, 3>, strides = array<i64: 1, 1, 1>} : tensor<2x4x9xf32> -> tensor<2x4x3xf32>
  %k1 = kiln.transpose %k0 {permutation = array<i64: 0, 2, 1>} : tensor<2x4x3xf32> -> tensor<2x3x4xf32>
  %k = kiln.neg %k1 : tensor<2x3x4xf32>
  %v0 = kiln.slice %p {starts = array<i64: 0, 0, 6>, strides = array<i64: 1, 1, 1>} : tensor<2x4x9xf32> -> tensor<2x4x3xf32>
  %v1 = kiln.transpose %v0 {permutation = array<i64: 0, 2, 1>} : tensor<2x4x3xf32> -> tensor<2x3x4xf32>
  %v = kiln.relu %v1 : tensor<2x3x4xf32>
  return %q, %k, %v : tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>
}

// -----

/// negative_: kernels that read their inputs at their own element stay
/// apart (each is vectorized; a kernel of several results is not), and so
/// does one whose result the other reads.
// CHECK-LABEL: func @negative_sibling_kernels
// CHECK: kiln.kernel  elementwise(%arg0) {{.*}} -> tensor<2x3x4xf32>
// CHECK: kiln.kernel  elementwise(%arg0) {{.*}} -> tensor<2x3x4xf32>
// CHECK: %[[Q:.*]] = kiln.kernel  elementwise(%arg1) {{.*}} -> tensor<2x3x4xf32>
// CHECK: kiln.kernel  elementwise(%arg1, %[[Q]]) {{.*}} -> tensor<2x3x4xf32>
func.func @negative_sibling_kernels(%x: tensor<2x3x4xf32>, %p: tensor<2x4x6xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>) {
  %a = kiln.exp %x : tensor<2x3x4xf32>
  %b = kiln.neg %x : tensor<2x3x4xf32>
  %q0 = kiln.slice %p {starts = array<i64: 0, 0, 0>, strides = array<i64: 1, 1, 1>} : tensor<2x4x6xf32> -> tensor<2x4x3xf32>
  %q1 = kiln.transpose %q0 {permutation = array<i64: 0, 2, 1>} : tensor<2x4x3xf32> -> tensor<2x3x4xf32>
  %q = kiln.exp %q1 : tensor<2x3x4xf32>
  %k0 = kiln.slice %p {starts = array<i64: 0, 0, 3>, strides = array<i64: 1, 1, 1>} : tensor<2x4x6xf32> -> tensor<2x4x3xf32>
  %k1 = kiln.transpose %k0 {permutation = array<i64: 0, 2, 1>} : tensor<2x4x3xf32> -> tensor<2x3x4xf32>
  %k = kiln.add %k1, %q : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %a, %b, %q, %k : tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>
}

// -----

// An 8-bit GEMM's tail: the requantization of its sums with their bias
// (onnxruntime's QLinearMatMul and QGemm: a multiplier a column, rounding,
// the zero point, saturation) is computed where the kernel stores each
// element, which it stores as int8; no elementwise kernel reads the product
// back.
// CHECK-LABEL: func @gemm_int8_tail
// CHECK: kiln.kernel  gemm({{.*}}) {epilogue = #kiln.gemm_epilogue<bias = {{[0-9]+}}, tail = true>} : {{.*}} -> tensor<3x8xi8>
// CHECK: kiln.matmul
// CHECK-NEXT: kiln.add
// CHECK-NEXT: kiln.mul
// CHECK-NEXT: kiln.round
// CHECK-NEXT: kiln.add
// CHECK-NEXT: kiln.is_nan
// CHECK-NEXT: kiln.where
// CHECK-NEXT: kiln.max
// CHECK-NEXT: kiln.min
// CHECK-NEXT: kiln.cast %{{.*}} : tensor<3x8xf32> -> tensor<3x8xi8>
// CHECK-NEXT: kiln.yield
// CHECK-NOT: kiln.kernel
// CHECK: return
func.func @gemm_int8_tail(%x0: tensor<3x32xf32>, %s: tensor<8x1xf32>, %sa: tensor<f32>, %b: tensor<8xf32>, %mul: tensor<8xf32>) -> tensor<3x8xi8> {
  %q = kiln.constant dense<131> : tensor<8x1x32xui8>
  %lo = kiln.constant dense<-128.0> : tensor<f32>
  %hi = kiln.constant dense<127.0> : tensor<f32>
  %zp = kiln.constant dense<3.0> : tensor<f32>
  %x = kiln.cast %x0 : tensor<3x32xf32> -> tensor<3x32xi8>
  %xf = kiln.cast %x : tensor<3x32xi8> -> tensor<3x32xf32>
  %a = kiln.mul %xf, %sa : (tensor<3x32xf32>, tensor<f32>) -> tensor<3x32xf32>
  %w = kiln.dequantize %q, %s {bits = 8 : i64, block_size = 32 : i64} : (tensor<8x1x32xui8>, tensor<8x1xf32>) -> tensor<8x32xf32>
  %m = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<3x32xf32>, tensor<8x32xf32>) -> tensor<3x8xf32>
  %c = kiln.add %m, %b : (tensor<3x8xf32>, tensor<8xf32>) -> tensor<3x8xf32>
  %r = kiln.mul %c, %mul : (tensor<3x8xf32>, tensor<8xf32>) -> tensor<3x8xf32>
  %n = kiln.round %r : tensor<3x8xf32>
  %z = kiln.add %n, %zp : (tensor<3x8xf32>, tensor<f32>) -> tensor<3x8xf32>
  %nan = kiln.is_nan %z : tensor<3x8xf32> -> tensor<3x8xi1>
  %v = kiln.where %nan, %lo, %z : (tensor<3x8xi1>, tensor<f32>, tensor<3x8xf32>) -> tensor<3x8xf32>
  %u = kiln.max %v, %lo : (tensor<3x8xf32>, tensor<f32>) -> tensor<3x8xf32>
  %t = kiln.min %u, %hi : (tensor<3x8xf32>, tensor<f32>) -> tensor<3x8xf32>
  %y = kiln.cast %t : tensor<3x8xf32> -> tensor<3x8xi8>
  return %y : tensor<3x8xi8>
}

// -----

// The tail stops before the next 8-bit product's dequantization of its
// activations, which that product reads as the bytes the tail stores.
// CHECK-LABEL: func @gemm_int8_tail_into_gemm
// CHECK: %[[FIRST:.*]] = kiln.kernel  gemm({{.*}}) {epilogue = #kiln.gemm_epilogue<tail = true>} : {{.*}} -> tensor<3x32xi8>
// CHECK: kiln.matmul
// CHECK-NEXT: kiln.mul
// CHECK-NEXT: kiln.cast %{{.*}} : tensor<3x32xf32> -> tensor<3x32xi8>
// CHECK-NEXT: kiln.yield
// CHECK: kiln.kernel  gemm(%[[FIRST]], {{.*}}) {epilogue = #kiln.gemm_epilogue<>}
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.cast %{{.*}} : tensor<3x32xi8> -> tensor<3x32xf32>
func.func @gemm_int8_tail_into_gemm(%x0: tensor<3x32xf32>, %s: tensor<32x1xf32>, %s2: tensor<8x1xf32>, %sa: tensor<f32>, %inv: tensor<f32>) -> tensor<3x8xf32> {
  %q = kiln.constant dense<131> : tensor<32x1x32xui8>
  %q2 = kiln.constant dense<120> : tensor<8x1x32xui8>
  %x = kiln.cast %x0 : tensor<3x32xf32> -> tensor<3x32xi8>
  %xf = kiln.cast %x : tensor<3x32xi8> -> tensor<3x32xf32>
  %a = kiln.mul %xf, %sa : (tensor<3x32xf32>, tensor<f32>) -> tensor<3x32xf32>
  %w = kiln.dequantize %q, %s {bits = 8 : i64, block_size = 32 : i64} : (tensor<32x1x32xui8>, tensor<32x1xf32>) -> tensor<32x32xf32>
  %m = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<3x32xf32>, tensor<32x32xf32>) -> tensor<3x32xf32>
  %r = kiln.mul %m, %inv : (tensor<3x32xf32>, tensor<f32>) -> tensor<3x32xf32>
  %y = kiln.cast %r : tensor<3x32xf32> -> tensor<3x32xi8>
  %yf = kiln.cast %y : tensor<3x32xi8> -> tensor<3x32xf32>
  %a2 = kiln.mul %yf, %sa : (tensor<3x32xf32>, tensor<f32>) -> tensor<3x32xf32>
  %w2 = kiln.dequantize %q2, %s2 {bits = 8 : i64, block_size = 32 : i64} : (tensor<8x1x32xui8>, tensor<8x1xf32>) -> tensor<8x32xf32>
  %n = kiln.matmul %a2, %w2 {transpose_rhs = true} : (tensor<3x32xf32>, tensor<8x32xf32>) -> tensor<3x8xf32>
  return %n : tensor<3x8xf32>
}

// -----

// negative_: no tail where the product is read at another element (a
// transpose), read outside it too, or multiplied by a value that only the
// tail would read and that only data movement computes (a transpose, which the
// elementwise kernel the tail replaces reads through, would be a launch of
// its own).
// CHECK-LABEL: func @negative_gemm_int8_tail
// CHECK-NOT: tail = true
// CHECK-COUNT-3: kiln.kernel  gemm({{.*}}) {epilogue = #kiln.gemm_epilogue<>}
// CHECK-NOT: tail = true
// CHECK: return
func.func @negative_gemm_int8_tail(%x0: tensor<3x32xf32>, %s: tensor<8x1xf32>, %sa: tensor<f32>, %e: tensor<8x3xf32>) -> (tensor<8x3xf32>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>) {
  %q = kiln.constant dense<131> : tensor<8x1x32xui8>
  %x = kiln.cast %x0 : tensor<3x32xf32> -> tensor<3x32xi8>
  %xf = kiln.cast %x : tensor<3x32xi8> -> tensor<3x32xf32>
  %a = kiln.mul %xf, %sa : (tensor<3x32xf32>, tensor<f32>) -> tensor<3x32xf32>
  %w = kiln.dequantize %q, %s {bits = 8 : i64, block_size = 32 : i64} : (tensor<8x1x32xui8>, tensor<8x1xf32>) -> tensor<8x32xf32>
  %m = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<3x32xf32>, tensor<8x32xf32>) -> tensor<3x8xf32>
  %t = kiln.transpose %m {permutation = array<i64: 1, 0>} : tensor<3x8xf32> -> tensor<8x3xf32>
  %tr = kiln.relu %t : tensor<8x3xf32>
  %w2 = kiln.dequantize %q, %s {bits = 8 : i64, block_size = 32 : i64} : (tensor<8x1x32xui8>, tensor<8x1xf32>) -> tensor<8x32xf32>
  %m2 = kiln.matmul %a, %w2 {transpose_rhs = true} : (tensor<3x32xf32>, tensor<8x32xf32>) -> tensor<3x8xf32>
  %r2 = kiln.mul %m2, %sa : (tensor<3x8xf32>, tensor<f32>) -> tensor<3x8xf32>
  %ex = kiln.transpose %e {permutation = array<i64: 1, 0>} : tensor<8x3xf32> -> tensor<3x8xf32>
  %w3 = kiln.dequantize %q, %s {bits = 8 : i64, block_size = 32 : i64} : (tensor<8x1x32xui8>, tensor<8x1xf32>) -> tensor<8x32xf32>
  %m3 = kiln.matmul %a, %w3 {transpose_rhs = true} : (tensor<3x32xf32>, tensor<8x32xf32>) -> tensor<3x8xf32>
  %r3 = kiln.mul %m3, %ex : (tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<3x8xf32>
  return %tr, %m2, %r2, %r3 : tensor<8x3xf32>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>
}

// -----

// A quantized add in the tail: its other operand, less its zero point and
// times a ratio of scales that only it reads, is computed where the tail
// reads it (as the elementwise kernel the tail replaces computed it), its
// ops moved after the product.
// CHECK-LABEL: func @gemm_int8_tail_quantized_add
// CHECK: kiln.kernel  gemm({{.*}}) {epilogue = #kiln.gemm_epilogue<tail = true>} : {{.*}} -> tensor<3x8xi8>
// CHECK: kiln.matmul
// CHECK-NEXT: kiln.mul
// CHECK-NEXT: kiln.cast %{{.*}} : tensor<3x8xi8> -> tensor<3x8xf32>
// CHECK-NEXT: kiln.sub
// CHECK-NEXT: kiln.div
// CHECK-NEXT: kiln.mul
// CHECK-NEXT: kiln.add
// CHECK-NEXT: kiln.round
// CHECK-NEXT: kiln.cast %{{.*}} : tensor<3x8xf32> -> tensor<3x8xi8>
// CHECK-NEXT: kiln.yield
// CHECK-NOT: kiln.kernel
// CHECK: return
func.func @gemm_int8_tail_quantized_add(%x0: tensor<3x32xf32>, %s: tensor<8x1xf32>, %sa: tensor<f32>, %r: tensor<3x8xi8>, %rs: tensor<f32>, %ys: tensor<f32>) -> tensor<3x8xi8> {
  %q = kiln.constant dense<131> : tensor<8x1x32xui8>
  %rz = kiln.constant dense<5.0> : tensor<f32>
  %x = kiln.cast %x0 : tensor<3x32xf32> -> tensor<3x32xi8>
  %xf = kiln.cast %x : tensor<3x32xi8> -> tensor<3x32xf32>
  %a = kiln.mul %xf, %sa : (tensor<3x32xf32>, tensor<f32>) -> tensor<3x32xf32>
  %ratio = kiln.div %rs, %ys : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %rf = kiln.cast %r : tensor<3x8xi8> -> tensor<3x8xf32>
  %rd = kiln.sub %rf, %rz : (tensor<3x8xf32>, tensor<f32>) -> tensor<3x8xf32>
  %w = kiln.dequantize %q, %s {bits = 8 : i64, block_size = 32 : i64} : (tensor<8x1x32xui8>, tensor<8x1xf32>) -> tensor<8x32xf32>
  %m = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<3x32xf32>, tensor<8x32xf32>) -> tensor<3x8xf32>
  %mp = kiln.mul %m, %ys : (tensor<3x8xf32>, tensor<f32>) -> tensor<3x8xf32>
  %rr = kiln.mul %rd, %ratio : (tensor<3x8xf32>, tensor<f32>) -> tensor<3x8xf32>
  %sum = kiln.add %mp, %rr : (tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<3x8xf32>
  %n = kiln.round %sum : tensor<3x8xf32>
  %y = kiln.cast %n : tensor<3x8xf32> -> tensor<3x8xi8>
  return %y : tensor<3x8xi8>
}

// -----

// A decoder's QKV projection over block-quantized weights (fp16), its key
// rotated (cos and sin computed after the product, as the importer orders a
// GroupQueryAttention's rotary tables) and written with its value into the
// caches at each sequence's start: the paired update's kernel joins the
// projection's GEMM, which yields the product, then the value's and the
// key's caches, and is placed at the update; the query's reader (an exp
// here, attention in a model) reads the product after it.
// CHECK-LABEL: func @gemm_cache_update
// CHECK: %[[COS:.*]] = kiln.kernel  elementwise(%arg4)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.cos
// CHECK: %[[K:.*]]:3 = kiln.kernel  gemm(%arg1, %arg2, %arg0, %arg4, %[[COS]], %arg3, %arg6, %arg5) {epilogue = #kiln.gemm_epilogue<cache_update = true>}
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.dequantize
// CHECK-NEXT: %[[P:.*]] = kiln.matmul
// CHECK-NEXT: kiln.sin
// CHECK: %[[KU:.*]] = kiln.update_slice
// CHECK: %[[VU:.*]] = kiln.update_slice
// CHECK-NEXT: kiln.yield %[[P]], %[[VU]], %[[KU]]
// CHECK: kiln.kernel  elementwise(%[[K]]#0)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.slice
// CHECK-NEXT: kiln.exp
// CHECK: return %{{.*}}, %[[K]]#2, %[[K]]#1, %[[COS]]
func.func @gemm_cache_update(%x: tensor<1x32xf16>, %q: tensor<24x1x16xui8>, %s: tensor<24x1xf16>, %kc: tensor<1x8x8xf16>, %angle: tensor<1x4xf16>, %vc: tensor<1x8x8xf16>, %at: tensor<1x1x1xi64>) -> (tensor<1x8xf16>, tensor<1x8x8xf16>, tensor<1x8x8xf16>, tensor<1x4xf16>) {
  %w = kiln.dequantize %q, %s {bits = 4 : i64, block_size = 32 : i64} : (tensor<24x1x16xui8>, tensor<24x1xf16>) -> tensor<24x32xf16>
  %p = kiln.matmul %x, %w {transpose_rhs = true} : (tensor<1x32xf16>, tensor<24x32xf16>) -> tensor<1x24xf16>
  %cos = kiln.cos %angle : tensor<1x4xf16>
  %sin = kiln.sin %angle : tensor<1x4xf16>
  %k = kiln.slice %p {starts = array<i64: 0, 8>, strides = array<i64: 1, 1>} : tensor<1x24xf16> -> tensor<1x8xf16>
  %k1 = kiln.slice %k {starts = array<i64: 0, 0>, strides = array<i64: 1, 1>} : tensor<1x8xf16> -> tensor<1x4xf16>
  %k2 = kiln.slice %k {starts = array<i64: 0, 4>, strides = array<i64: 1, 1>} : tensor<1x8xf16> -> tensor<1x4xf16>
  %a = kiln.mul %k1, %cos : (tensor<1x4xf16>, tensor<1x4xf16>) -> tensor<1x4xf16>
  %b = kiln.mul %k2, %sin : (tensor<1x4xf16>, tensor<1x4xf16>) -> tensor<1x4xf16>
  %r1 = kiln.sub %a, %b : (tensor<1x4xf16>, tensor<1x4xf16>) -> tensor<1x4xf16>
  %c = kiln.mul %k1, %sin : (tensor<1x4xf16>, tensor<1x4xf16>) -> tensor<1x4xf16>
  %d = kiln.mul %k2, %cos : (tensor<1x4xf16>, tensor<1x4xf16>) -> tensor<1x4xf16>
  %r2 = kiln.add %c, %d : (tensor<1x4xf16>, tensor<1x4xf16>) -> tensor<1x4xf16>
  %kr = kiln.concat %r1, %r2 {axis = 1 : i64} : (tensor<1x4xf16>, tensor<1x4xf16>) -> tensor<1x8xf16>
  %k3 = kiln.reshape %kr : tensor<1x8xf16> -> tensor<1x1x8xf16>
  %ku = kiln.update_slice %kc, %k3, %at {axis = 1 : i64, offset = "0"} : (tensor<1x8x8xf16>, tensor<1x1x8xf16>, tensor<1x1x1xi64>) -> tensor<1x8x8xf16>
  %v = kiln.slice %p {starts = array<i64: 0, 16>, strides = array<i64: 1, 1>} : tensor<1x24xf16> -> tensor<1x8xf16>
  %v3 = kiln.reshape %v : tensor<1x8xf16> -> tensor<1x1x8xf16>
  %vu = kiln.update_slice %vc, %v3, %at {axis = 1 : i64, offset = "0"} : (tensor<1x8x8xf16>, tensor<1x1x8xf16>, tensor<1x1x1xi64>) -> tensor<1x8x8xf16>
  %qs = kiln.slice %p {starts = array<i64: 0, 0>, strides = array<i64: 1, 1>} : tensor<1x24xf16> -> tensor<1x8xf16>
  %e = kiln.exp %qs : tensor<1x8xf16>
  return %e, %ku, %vu, %cos : tensor<1x8xf16>, tensor<1x8x8xf16>, tensor<1x8x8xf16>, tensor<1x4xf16>
}

// -----

// negative_: the update stays a kernel of its own where its product is a
// matmul of weights that are not block-quantized (cuBLASLt computes it),
// and where a reader of the product comes before the update (the GEMM,
// placed at the update, would come too late for it).
// CHECK-LABEL: func @negative_gemm_cache_update
// CHECK: kiln.matmul
// CHECK: kiln.kernel  elementwise
// CHECK: kiln.update_slice
// CHECK: kiln.kernel  gemm(%arg3, %arg4, %arg2) {epilogue = #kiln.gemm_epilogue<>}
// CHECK: kiln.kernel  elementwise
// CHECK: kiln.kernel  elementwise
// CHECK: kiln.update_slice
// CHECK-NOT: cache_update
func.func @negative_gemm_cache_update(%x: tensor<1x32xf16>, %w: tensor<32x8xf16>, %y: tensor<1x32xf16>, %q: tensor<8x1x16xui8>, %s: tensor<8x1xf16>, %kc: tensor<8x8xf16>, %kc2: tensor<8x8xf16>) -> (tensor<8x8xf16>, tensor<1x8xf16>, tensor<8x8xf16>) {
  %p = kiln.matmul %x, %w : (tensor<1x32xf16>, tensor<32x8xf16>) -> tensor<1x8xf16>
  %n = kiln.neg %p : tensor<1x8xf16>
  %u = kiln.update_slice %kc, %n {axis = 0 : i64, offset = "3"} : (tensor<8x8xf16>, tensor<1x8xf16>) -> tensor<8x8xf16>
  %dq = kiln.dequantize %q, %s {bits = 4 : i64, block_size = 32 : i64} : (tensor<8x1x16xui8>, tensor<8x1xf16>) -> tensor<8x32xf16>
  %p2 = kiln.matmul %y, %dq {transpose_rhs = true} : (tensor<1x32xf16>, tensor<8x32xf16>) -> tensor<1x8xf16>
  %e = kiln.exp %p2 : tensor<1x8xf16>
  %u2 = kiln.update_slice %kc2, %p2 {axis = 0 : i64, offset = "4"} : (tensor<8x8xf16>, tensor<1x8xf16>) -> tensor<8x8xf16>
  return %u, %e, %u2 : tensor<8x8xf16>, tensor<1x8xf16>, tensor<8x8xf16>
}

// -----

// An 8-bit GEMM's tail whose end only a LayerNorm of each row reads, then
// the norm's requantization (a Q/DQ BERT's post-norm block): the norm and
// the ops after it join the kernel (norm_scale and norm_shift with the
// tail), which yields the requantized bytes; no reduction kernel is left.
// CHECK-LABEL: func @gemm_int8_tail_norm
// CHECK: kiln.kernel  gemm({{.*}}) {epilogue = #kiln.gemm_epilogue<norm_scale = {{[0-9]+}}, norm_shift = {{[0-9]+}}, tail = true>} : {{.*}} -> tensor<3x8xi8>
// CHECK: kiln.matmul
// CHECK: kiln.add
// CHECK-NEXT: kiln.layer_norm
// CHECK-NEXT: kiln.mul
// CHECK-NEXT: kiln.round
// CHECK-NEXT: kiln.cast %{{.*}} : tensor<3x8xf32> -> tensor<3x8xi8>
// CHECK-NEXT: kiln.yield
// CHECK-NOT: kiln.kernel
// CHECK: return
func.func @gemm_int8_tail_norm(%x0: tensor<3x32xf32>, %s: tensor<8x1xf32>, %sa: tensor<f32>, %res: tensor<3x8xf32>, %g: tensor<8xf32>, %bt: tensor<8xf32>) -> tensor<3x8xi8> {
  %q = kiln.constant dense<131> : tensor<8x1x32xui8>
  %sixteen = kiln.constant dense<16.0> : tensor<f32>
  %x = kiln.cast %x0 : tensor<3x32xf32> -> tensor<3x32xi8>
  %xf = kiln.cast %x : tensor<3x32xi8> -> tensor<3x32xf32>
  %a = kiln.mul %xf, %sa : (tensor<3x32xf32>, tensor<f32>) -> tensor<3x32xf32>
  %w = kiln.dequantize %q, %s {bits = 8 : i64, block_size = 32 : i64} : (tensor<8x1x32xui8>, tensor<8x1xf32>) -> tensor<8x32xf32>
  %m = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<3x32xf32>, tensor<8x32xf32>) -> tensor<3x8xf32>
  %r = kiln.mul %m, %sa : (tensor<3x8xf32>, tensor<f32>) -> tensor<3x8xf32>
  %sum = kiln.add %r, %res : (tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<3x8xf32>
  %ln = kiln.layer_norm %sum, %g, %bt {axis = 1 : i64, epsilon = 1.0e-12 : f32} : (tensor<3x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<3x8xf32>
  %ls = kiln.mul %ln, %sixteen : (tensor<3x8xf32>, tensor<f32>) -> tensor<3x8xf32>
  %lr = kiln.round %ls : tensor<3x8xf32>
  %y = kiln.cast %lr : tensor<3x8xf32> -> tensor<3x8xi8>
  return %y : tensor<3x8xi8>
}

// -----

// negative_: the norm stays a kernel of its own where the tail's end is
// read past it too (the sum), and where the norm is over another axis than
// the product's columns.
// CHECK-LABEL: func @negative_gemm_int8_tail_norm
// CHECK-NOT: norm_scale
// CHECK: kiln.kernel  reduction
// CHECK: kiln.layer_norm
// CHECK-NOT: norm_scale
// CHECK: kiln.kernel  reduction
// CHECK: kiln.layer_norm
func.func @negative_gemm_int8_tail_norm(%x0: tensor<3x32xf32>, %s: tensor<8x1xf32>, %sa: tensor<f32>, %g: tensor<8xf32>, %g3: tensor<3xf32>) -> (tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>) {
  %q = kiln.constant dense<131> : tensor<8x1x32xui8>
  %x = kiln.cast %x0 : tensor<3x32xf32> -> tensor<3x32xi8>
  %xf = kiln.cast %x : tensor<3x32xi8> -> tensor<3x32xf32>
  %a = kiln.mul %xf, %sa : (tensor<3x32xf32>, tensor<f32>) -> tensor<3x32xf32>
  %w = kiln.dequantize %q, %s {bits = 8 : i64, block_size = 32 : i64} : (tensor<8x1x32xui8>, tensor<8x1xf32>) -> tensor<8x32xf32>
  %m = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<3x32xf32>, tensor<8x32xf32>) -> tensor<3x8xf32>
  %r = kiln.mul %m, %sa : (tensor<3x8xf32>, tensor<f32>) -> tensor<3x8xf32>
  %ln = kiln.layer_norm %r, %g {axis = 1 : i64, epsilon = 1.0e-12 : f32} : (tensor<3x8xf32>, tensor<8xf32>) -> tensor<3x8xf32>
  %w2 = kiln.dequantize %q, %s {bits = 8 : i64, block_size = 32 : i64} : (tensor<8x1x32xui8>, tensor<8x1xf32>) -> tensor<8x32xf32>
  %m2 = kiln.matmul %a, %w2 {transpose_rhs = true} : (tensor<3x32xf32>, tensor<8x32xf32>) -> tensor<3x8xf32>
  %r2 = kiln.mul %m2, %sa : (tensor<3x8xf32>, tensor<f32>) -> tensor<3x8xf32>
  %t2 = kiln.transpose %r2 {permutation = array<i64: 1, 0>} : tensor<3x8xf32> -> tensor<8x3xf32>
  %ln2 = kiln.layer_norm %t2, %g3 {axis = 1 : i64, epsilon = 1.0e-12 : f32} : (tensor<8x3xf32>, tensor<3xf32>) -> tensor<8x3xf32>
  %b2 = kiln.transpose %ln2 {permutation = array<i64: 1, 0>} : tensor<8x3xf32> -> tensor<3x8xf32>
  return %ln, %r, %b2 : tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>
}

// -----

// An update's producer that comes before the product in the function (a
// rotary table computed first) joins too: the kernel's body computes it
// after the product, where the update's ops are.
// CHECK-LABEL: func @gemm_cache_update_producer_first
// CHECK: kiln.kernel  gemm({{.*}}) {epilogue = #kiln.gemm_epilogue<cache_update = true>}
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.dequantize
// CHECK-NEXT: kiln.matmul
// CHECK-NEXT: kiln.neg
// CHECK: kiln.update_slice
// CHECK-NEXT: kiln.yield
func.func @gemm_cache_update_producer_first(%x: tensor<1x32xf16>, %q: tensor<8x1x16xui8>, %s: tensor<8x1xf16>, %kc: tensor<6x8xf16>, %t: tensor<1x8xf16>) -> (tensor<1x8xf16>, tensor<6x8xf16>) {
  %n = kiln.neg %t : tensor<1x8xf16>
  %w = kiln.dequantize %q, %s {bits = 4 : i64, block_size = 32 : i64} : (tensor<8x1x16xui8>, tensor<8x1xf16>) -> tensor<8x32xf16>
  %p = kiln.matmul %x, %w {transpose_rhs = true} : (tensor<1x32xf16>, tensor<8x32xf16>) -> tensor<1x8xf16>
  %r = kiln.mul %p, %n : (tensor<1x8xf16>, tensor<1x8xf16>) -> tensor<1x8xf16>
  %u = kiln.update_slice %kc, %r {axis = 0 : i64, offset = "2"} : (tensor<6x8xf16>, tensor<1x8xf16>) -> tensor<6x8xf16>
  %e = kiln.exp %p : tensor<1x8xf16>
  return %e, %u : tensor<1x8xf16>, tensor<6x8xf16>
}

// -----

// A 16-bit product whose tail widens it (an fp16 build's Q/DQ GEMM keeps
// its quantization arithmetic fp32): the fp32 tail's norm joins too.
// CHECK-LABEL: func @gemm_f16_tail_norm
// CHECK: kiln.kernel  gemm({{.*}}) {epilogue = #kiln.gemm_epilogue<norm_scale = {{[0-9]+}}, norm_shift = {{[0-9]+}}, tail = true>} : {{.*}} -> tensor<3x8xf32>
// CHECK: kiln.matmul {{.*}} -> tensor<3x8xf16>
// CHECK-NEXT: kiln.cast
// CHECK-NEXT: kiln.add
// CHECK-NEXT: kiln.layer_norm
// CHECK-NEXT: kiln.yield
// CHECK-NOT: kiln.kernel
func.func @gemm_f16_tail_norm(%x0: tensor<3x32xf16>, %s: tensor<8x1xf16>, %sa: tensor<f16>, %res: tensor<3x8xf32>, %g: tensor<8xf32>, %bt: tensor<8xf32>) -> tensor<3x8xf32> {
  %q = kiln.constant dense<131> : tensor<8x1x32xui8>
  %x = kiln.cast %x0 : tensor<3x32xf16> -> tensor<3x32xi8>
  %xf = kiln.cast %x : tensor<3x32xi8> -> tensor<3x32xf16>
  %a = kiln.mul %xf, %sa : (tensor<3x32xf16>, tensor<f16>) -> tensor<3x32xf16>
  %w = kiln.dequantize %q, %s {bits = 8 : i64, block_size = 32 : i64} : (tensor<8x1x32xui8>, tensor<8x1xf16>) -> tensor<8x32xf16>
  %m = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<3x32xf16>, tensor<8x32xf16>) -> tensor<3x8xf16>
  %mw = kiln.cast %m : tensor<3x8xf16> -> tensor<3x8xf32>
  %sum = kiln.add %mw, %res : (tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<3x8xf32>
  %ln = kiln.layer_norm %sum, %g, %bt {axis = 1 : i64, epsilon = 1.0e-12 : f32} : (tensor<3x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<3x8xf32>
  return %ln : tensor<3x8xf32>
}
