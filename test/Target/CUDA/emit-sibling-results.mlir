// An elementwise kernel with several results of its shape (kiln-fuse's
// mergeSiblingKernels: a Q/DQ graph's query, key and value heads, each
// sliced from one packed projection, quantized and transposed) stores each
// at the loop's index; one launch where there were three. Sizes are ragged
// (3 x 37 rows of 20 a head: not a multiple of the 256-thread block), and
// the host backend matches the reference interpreter, once under
// AddressSanitizer.
// RUN: kilnc %s --emit=plan | FileCheck %s --check-prefix=PLAN
// PLAN: launch kiln_elementwise_0 grid
// PLAN-NOT: launch
// RUN: kilnc %s --emit=cuda | FileCheck %s
// RUN: kilnc %s -o %t.so
// RUN: env KILN_CACHE_DIR=%t.cache kiln-run %t.so --backend host --check --reference-model %s --seed 1 --compare-reference | FileCheck %s --check-prefix=HOST
// RUN: env KILN_CACHE_DIR=%t.cache kiln-run %t.so --backend host --reference-model %s --seed 2 --compare-reference | FileCheck %s --check-prefix=HOST
// RUN: %if cuda-device %{ kiln-run %t.so --backend cuda --reference-model %s --seed 3 --compare-reference | FileCheck %s --check-prefix=HOST %}

// CHECK: extern "C" __global__ void kiln_elementwise_0(const float *__restrict__ in0, {{.*}}float *__restrict__ out0, float *__restrict__ out1, float *__restrict__ out2) {
// CHECK: for (int i = vectorEnd + first; i < 2220; i += stride) {
// CHECK-DAG: out0[i] =
// CHECK-DAG: out1[i] =
// CHECK-DAG: out2[i] =
// CHECK-NOT: __global__
// HOST-DAG: compare q: max_abs 0.000e+00
// HOST-DAG: compare k: max_abs 0.000e+00
// HOST-DAG: compare v: max_abs 0.000e+00

func.func @main(%p: tensor<3x37x60xf32>) -> (tensor<3x20x37xf32> {kiln.name = "q"}, tensor<3x20x37xf32> {kiln.name = "k"}, tensor<3x20x37xf32> {kiln.name = "v"}) {
  %sixteen = kiln.constant dense<16.0> : tensor<f32>
  %q0 = kiln.slice %p {starts = array<i64: 0, 0, 0>, strides = array<i64: 1, 1, 1>} : tensor<3x37x60xf32> -> tensor<3x37x20xf32>
  %q1 = kiln.mul %q0, %sixteen : (tensor<3x37x20xf32>, tensor<f32>) -> tensor<3x37x20xf32>
  %q2 = kiln.round %q1 : tensor<3x37x20xf32>
  %q = kiln.transpose %q2 {permutation = array<i64: 0, 2, 1>} : tensor<3x37x20xf32> -> tensor<3x20x37xf32>
  %k0 = kiln.slice %p {starts = array<i64: 0, 0, 20>, strides = array<i64: 1, 1, 1>} : tensor<3x37x60xf32> -> tensor<3x37x20xf32>
  %k1 = kiln.transpose %k0 {permutation = array<i64: 0, 2, 1>} : tensor<3x37x20xf32> -> tensor<3x20x37xf32>
  %k = kiln.neg %k1 : tensor<3x20x37xf32>
  %v0 = kiln.slice %p {starts = array<i64: 0, 0, 40>, strides = array<i64: 1, 1, 1>} : tensor<3x37x60xf32> -> tensor<3x37x20xf32>
  %v1 = kiln.transpose %v0 {permutation = array<i64: 0, 2, 1>} : tensor<3x37x20xf32> -> tensor<3x20x37xf32>
  %v = kiln.relu %v1 : tensor<3x20x37xf32>
  return %q, %k, %v : tensor<3x20x37xf32>, tensor<3x20x37xf32>, tensor<3x20x37xf32>
}
