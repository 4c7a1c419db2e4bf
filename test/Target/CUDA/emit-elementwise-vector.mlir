// RUN: kilnc %s --emit=cuda | FileCheck %s
// REQUIRES: nvrtc
// RUN: kilnc %s -o %t.so
// RUN: env KILN_CACHE_DIR=%t.cache kiln-run %t.so --backend host --check --reference-model %s --compare-reference --seed 5 | FileCheck %s --check-prefix=HOST
// RUN: %if cuda-device %{ kiln-run %t.so --backend cuda --reference-model %s --compare-reference --seed 5 %}

// An elementwise kernel at the result's shape moves several elements a
// thread: 16 bytes of the widest type (the f32 output: 4 lanes), so 8 bytes
// of the f16 input, when every pointer is aligned for it; the broadcast
// input is read element by element; a scalar loop takes the tail
// (4099 = 1024 x 4 + 3) and any unaligned call. Indices are 32-bit.
// CHECK: extern "C" __global__ void kiln_elementwise_0(const __half *__restrict__ in0, const float *__restrict__ in1, float *__restrict__ out0)
// CHECK: const int first = (int)blockIdx.x * blockDim.x + threadIdx.x;
// CHECK: int vectorEnd = 0;
// CHECK: if ((unsigned long long)in0 % 8 == 0 && (unsigned long long)out0 % 16 == 0) {
// CHECK-NEXT: vectorEnd = 4096;
// CHECK-NEXT: for (int v = first; v < 1024; v += stride) {
// CHECK: alignas(16) __half l0[4];
// CHECK-NEXT: *(uint2 *)l0 = *(const uint2 *)(in0 + base);
// CHECK: alignas(16) float lo[4];
// CHECK: for (int j = 0; j < 4; ++j) {
// CHECK: __half2float(l0[j]);
// CHECK: in1[
// CHECK: lo[j] =
// CHECK: *(uint4 *)(out0 + base) = *(const uint4 *)lo;
// CHECK: for (int i = vectorEnd + first; i < 4099; i += stride) {
// CHECK: out0[i] =

// HOST: compare output0: max_abs

func.func @main(%x: tensor<4099xf16>, %b: tensor<1xf32>) -> tensor<4099xf32> {
  %c = kiln.cast %x : tensor<4099xf16> -> tensor<4099xf32>
  %s = kiln.add %c, %b : (tensor<4099xf32>, tensor<1xf32>) -> tensor<4099xf32>
  %t = kiln.tanh %s : tensor<4099xf32>
  return %t : tensor<4099xf32>
}
