// RUN: kilnc %s --emit=cuda | FileCheck %s
// REQUIRES: nvrtc
// RUN: kilnc %s -o %t.so

// Ragged size (3x7x5 = 105 elements), a broadcast input, f16 storage with
// fp32 math, and an integer cast: NaN to 0 and saturation at the i64 range,
// as the reference interpreter converts (a C cast is undefined there).
// CHECK: #include <cuda_fp16.h>
// CHECK: extern "C" __global__ void kiln_elementwise_0(const __half *__restrict__ in0, const __half *__restrict__ in1, long long *__restrict__ out0)
// CHECK: for (int i = vectorEnd + first; i < 105; i += stride)
// CHECK: float [[X:v[0-9]+]] = __half2float(in0[i]);
// CHECK: float [[B:v[0-9]+]] = __half2float(in1[((i / 5) % 7) * 1]);
// CHECK: float [[S:v[0-9]+]] = [[X]] + [[B]];
// CHECK: float [[T:v[0-9]+]] = tanhf([[S]]);
// CHECK: long long [[I:v[0-9]+]] = kiln_float_to_int<long long>([[T]], -9223372036854775808.0f, 9223372036854775808.0f, (long long)(-9223372036854775807LL - 1), (long long)9223372036854775807LL);
// CHECK: out0[i] = [[I]];

func.func @main(%x: tensor<3x7x5xf16>, %b: tensor<7x1xf16>) -> tensor<3x7x5xi64> {
  %s = kiln.add %x, %b : (tensor<3x7x5xf16>, tensor<7x1xf16>) -> tensor<3x7x5xf16>
  %t = kiln.tanh %s : tensor<3x7x5xf16>
  %i = kiln.cast %t : tensor<3x7x5xf16> -> tensor<3x7x5xi64>
  return %i : tensor<3x7x5xi64>
}
