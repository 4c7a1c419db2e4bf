// The scan (cumsum, in the reduction family) and sort (top_k) kernels.
// RUN: kilnc %s --emit=cuda | FileCheck %s
// RUN: kilnc %s --emit=plan | FileCheck %s --check-prefix=PLAN
// RUN: kilnc %s -o %t.so
// RUN: env KILN_CACHE_DIR=%t.cache kiln-run %t.so --backend host --reference-model %s --compare-reference | FileCheck %s --check-prefix=HOST

// A 300-long row takes two chunks of the 256-thread block, with a carry;
// exclusive reads the position before, reverse mirrors both positions.
// Floats sum in double (a long row's prefixes cancel).
// CHECK: extern "C" __global__ void kiln_reduction_0(
// CHECK: for (long long chunk = 0; chunk < 300LL; chunk += blockDim.x)
// CHECK: long long source = p - 1;
// CHECK: long long j = (300LL - 1 - source);
// CHECK: double scanned = kiln_add(carry, kiln_block_inclusive_scan(term, scratch, &total));
// CHECK: carry = kiln_add(carry, total);
// CHECK: long long j = (300LL - 1 - p);
// CHECK: out0[x_idx] =
// Each candidate's rank counts the elements before it, eight positions a
// step, until it reaches k; ranks below k land.
// CHECK: extern "C" __global__ void kiln_sort_1(const int *__restrict__ in0, long long *__restrict__ out0)
// CHECK: for (long long group = 0; group < 9LL && rank < 3LL; group += 8) {
// CHECK: const long long other = group + u;
// CHECK-NEXT: if (other >= 9LL) break;
// CHECK: rank += kiln_arg_better<true, false>(y, position, x, candidate);
// CHECK: out0[row * 3LL + j] = candidate;

// PLAN: launch kiln_reduction_0 grid 2 block 256
// PLAN: launch kiln_sort_1 grid 5 block 32

// HOST: compare output0: max_abs
// HOST: compare output1: max_abs 0.000e+00

func.func @main(%x: tensor<2x300xf32>, %y: tensor<5x9xi32>) -> (tensor<2x300xf32>, tensor<5x3xi64>) {
  %c = kiln.cumsum %x {axis = 1 : i64, exclusive = true, reverse = true} : tensor<2x300xf32>
  %t = kiln.top_k %y {axis = 1 : i64, k = 3 : i64, largest = true} : tensor<5x9xi32> -> tensor<5x3xi64>
  return %c, %t : tensor<2x300xf32>, tensor<5x3xi64>
}
