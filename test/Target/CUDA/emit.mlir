// RUN: kilnc %s --emit=cuda | FileCheck %s
// RUN: kilnc %s --emit=plan | FileCheck %s --check-prefix=PLAN
// REQUIRES: nvrtc
// RUN: kilnc %s -o %t.so && nm -D --defined-only %t.so | FileCheck %s --check-prefix=SYMS

// CHECK: extern "C" __global__ void kiln_reduction_0(const float *__restrict__ in0, const float *__restrict__ in1, float *__restrict__ out0)
// A short row: a warp each, four a block, reduced by shuffles.
// CHECK-NOT: __shared__
// CHECK: const int lane = threadIdx.x & 31;
// CHECK: for (long long row = (long long)blockIdx.x * 4 + (threadIdx.x >> 5); row < 3LL; row += (long long)gridDim.x * 4) {
// CHECK: row_max = kiln_warp_max(row_max);
// CHECK: row_sum = kiln_warp_sum(row_sum);
// The epilogue (mul, add, erf) runs on each normalized element.
// CHECK: float [[P:v[0-9]+]] = expf(v{{[0-9]+}} - row_max) / row_sum;
// CHECK: in1[((x_idx / 1) % 5) * 1]
// CHECK: [[P]] *
// CHECK: erff(
// CHECK: out0[x_idx] =
// CHECK: extern "C" __global__ void kiln_copy_1(
// The transpose's index arithmetic is unsigned 32-bit: the indices fit.
// CHECK: unsigned [[I:iv[0-9]+]] = (unsigned)(i);
// CHECK: float [[V:v[0-9]+]] = in0[0 + (([[I]] / 3) % 5) * 1 + (([[I]] / 1) % 3) * 5];
// CHECK: out0[i] = [[V]];

// PLAN: matmul float32 batch 1 m 3 n 5 k 4 transA 0 transB 0
// PLAN: launch kiln_reduction_0 grid 1 block 128
// PLAN: launch kiln_copy_1 grid 1 block 256

// SYMS-DAG: T kiln_model_create
// SYMS-DAG: T kiln_model_run
// SYMS-DAG: T kiln_model_destroy

func.func @main(%x: tensor<3x4xf32>, %w: tensor<4x5xf32>, %b: tensor<5xf32>) -> tensor<5x3xf32> {
  %m = kiln.matmul %x, %w : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  %s = kiln.softmax %m {axis = 1 : i64} : tensor<3x5xf32>
  %c = kiln.mul %s, %b : (tensor<3x5xf32>, tensor<5xf32>) -> tensor<3x5xf32>
  %a = kiln.add %c, %b : (tensor<3x5xf32>, tensor<5xf32>) -> tensor<3x5xf32>
  %e = kiln.erf %a : tensor<3x5xf32>
  %t = kiln.transpose %e {permutation = array<i64: 1, 0>} : tensor<3x5xf32> -> tensor<5x3xf32>
  return %t : tensor<5x3xf32>
}
