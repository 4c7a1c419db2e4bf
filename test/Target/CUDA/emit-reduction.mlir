// The reduction family beyond softmax/layer_norm: reduce ops over
// non-adjacent axes (index split into kept and reduced runs), an arg_max with
// its tie rule, and an integer max with the type's lowest value as identity.
// RUN: kilnc %s --emit=cuda | FileCheck %s
// RUN: kilnc %s --emit=plan | FileCheck %s --check-prefix=PLAN
// RUN: kilnc %s -o %t.so
// RUN: env KILN_CACHE_DIR=%t.cache kiln-run %t.so --backend host --reference-model %s --compare-reference | FileCheck %s --check-prefix=HOST

// CHECK: extern "C" __global__ void kiln_reduction_0(const float *__restrict__ in0, float *__restrict__ out0)
// CHECK: float acc = 0.0f;
// CHECK: for (long long j = threadIdx.x; j < 10LL; j += blockDim.x)
// Dims 0 and 2 reduced (j), 1 and 3 kept (row).
// CHECK: long long x_idx = (j / 5LL) * 105LL + (row / 3LL) * 15LL + (j % 5LL) * 3LL + (row % 3LL);
// CHECK: acc = kiln_sum_op()(acc, (float)v0);
// CHECK: acc = kiln_block_reduce(acc, (float)0.0f, scratch, kiln_sum_op());
// The tanh epilogue runs once per result element.
// CHECK: long long out_idx = row;
// CHECK: tanhf(
// CHECK: out0[out_idx] =
// CHECK: extern "C" __global__ void kiln_reduction_1(const int *__restrict__ in0, long long *__restrict__ out0)
// CHECK: if (kiln_arg_better<true, true>((long long)v0, j, best, best_j))
// CHECK: best_j = kiln_block_arg<true, true>(best, best_j, scratch_value, scratch_index);
// CHECK: extern "C" __global__ void kiln_reduction_2(
// CHECK: long long acc = (-2147483647LL - 1);
// CHECK: acc = kiln_max_op()(acc, (long long)v0);

// PLAN: launch kiln_reduction_0 grid 21 block 32
// PLAN: launch kiln_reduction_1 grid 4 block 32
// PLAN: launch kiln_reduction_2 grid 4 block 32

// HOST: compare output0: max_abs
// HOST: compare output1: max_abs 0.000e+00
// HOST: compare output2: max_abs 0.000e+00

func.func @main(%x: tensor<2x7x5x3xf32>, %i: tensor<4x9xi32>) -> (tensor<7x3xf32>, tensor<4xi64>, tensor<4x1xi32>) {
  %s = kiln.reduce_sum %x {axes = array<i64: 0, 2>, keepdims = false} : tensor<2x7x5x3xf32> -> tensor<7x3xf32>
  %t = kiln.tanh %s : tensor<7x3xf32>
  %a = kiln.arg_max %i {axis = 1 : i64, keepdims = false, select_last_index = true} : tensor<4x9xi32> -> tensor<4xi64>
  %m = kiln.reduce_max %i {axes = array<i64: 1>, keepdims = true} : tensor<4x9xi32> -> tensor<4x1xi32>
  return %t, %a, %m : tensor<7x3xf32>, tensor<4xi64>, tensor<4x1xi32>
}
