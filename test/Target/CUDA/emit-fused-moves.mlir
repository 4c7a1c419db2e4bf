// Data movement fused into an elementwise kernel: each value is computed at
// the index it is read at. A concat reads only the input that holds the
// element, each in its own branch (the others would be read out of bounds).
// RUN: kilnc %s --emit=cuda | FileCheck %s
// RUN: kilnc %s -o %t.so
// RUN: env KILN_CACHE_DIR=%t.cache kiln-run %t.so --backend host --reference-model %s --compare-reference | FileCheck %s --check-prefix=HOST

// CHECK: extern "C" __global__ void kiln_elementwise_0(
// CHECK: float [[CAT:v[0-9]+]];
// CHECK-NEXT: if (((iv{{[0-9]+}} / 1LL) % 8LL) < 4LL) {
// CHECK: [[CAT]] = v{{[0-9]+}};
// CHECK-NEXT: } else {
// CHECK: [[CAT]] = v{{[0-9]+}};
// CHECK-NEXT: }
// CHECK: out0[i] =
// CHECK-NOT: __global__
// HOST: compare y: max_abs
func.func @main(%x: tensor<2x8xf32>, %cos: tensor<2x8xf32>, %sin: tensor<2x8xf32>) -> (tensor<2x8xf32> {kiln.name = "y"}) {
  %lo = kiln.slice %x {starts = array<i64: 0, 0>, strides = array<i64: 1, 1>} : tensor<2x8xf32> -> tensor<2x4xf32>
  %hi = kiln.slice %x {starts = array<i64: 0, 4>, strides = array<i64: 1, 1>} : tensor<2x8xf32> -> tensor<2x4xf32>
  %n = kiln.neg %hi : tensor<2x4xf32>
  %r = kiln.concat %n, %lo {axis = 1 : i64} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x8xf32>
  %a = kiln.mul %x, %cos : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %b = kiln.mul %r, %sin : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %s = kiln.add %a, %b : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %s : tensor<2x8xf32>
}
