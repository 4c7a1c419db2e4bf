// The attention kernel: one block per query row, keys in tiles with an online
// softmax; operands read through their in-kernel producers (a slice of the
// packed projection, the head split; the bias is the GEMM's epilogue), the
// result written at the head-merged index.
// RUN: kilnc %s --emit=cuda | FileCheck %s
// RUN: kilnc %s --emit=plan | FileCheck %s --check-prefix=PLAN
// RUN: kilnc %s -o %t.so
// RUN: env KILN_CACHE_DIR=%t.cache kiln-run %t.so --backend host --reference-model %s --compare-reference | FileCheck %s --check-prefix=HOST

// CHECK: extern "C" __global__ void kiln_attention_0(const float *__restrict__ in0, float *__restrict__ out0)
// CHECK: long long kv = b * 2LL + h / 1LL;
// The query feature: the slice at channel offset 0.
// CHECK: q_row[d] =
// CHECK: float tile_max = kiln_block_max(score, scratch);
// CHECK: float rescale = running_max == neg_inf ? 0.0f : expf(running_max - new_max);
// CHECK: acc[r] = acc[r] * rescale + sum;
// Heads merged back: [b, i, h, d] of the [2, 3, 2, 2] result.
// CHECK: out0[0 + b * 12LL + i * 4LL + h * 2LL + d * 1LL] = acc[r] / running_sum;

// PLAN: matmul float32 batch 1 m 6 n 12 k 8 {{.*}} bias
// PLAN: launch kiln_attention_0 grid 12 block 32

// HOST: compare output0: max_abs

func.func @main(%x: tensor<2x3x8xf32>, %b: tensor<12xf32>, %w: tensor<8x12xf32>) -> tensor<2x3x4xf32> {
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
