// RUN: kilnc %s --emit=cuda | FileCheck %s
// RUN: kilnc %s -o %t.so
// RUN: env KILN_CACHE_DIR=%t.cache kiln-run %t.so --backend host --reference-model %s --compare-reference --rtol 1e-12 --atol 1e-14 | FileCheck %s --check-prefix=HOST
// REQUIRES: nvrtc

// Unsigned kernels: +, -, * wrap through an unsigned C type, division and
// remainder test only for a zero divisor (an unsigned divisor equal to -1
// after conversion is a large number, not -1), comparisons are unsigned, and
// an unsigned source reaches f16 in one rounding.
// CHECK-LABEL: void kiln_elementwise_0(const unsigned int *__restrict__ in0, const unsigned int *__restrict__ in1, unsigned int *__restrict__ out0)
// CHECK: unsigned int [[SUM:v[0-9]+]] = (unsigned int)((unsigned int)[[A:v[0-9]+]] + (unsigned int)[[B:v[0-9]+]]);
// CHECK-LABEL: void kiln_elementwise_1(
// CHECK: unsigned int [[Q:v[0-9]+]] = ([[D:v[0-9]+]] == 0 ? (unsigned int)0 : (unsigned int)([[N:v[0-9]+]] / [[D]]));
// CHECK: unsigned int {{v[0-9]+}} = ([[D]] == 0 ? 0 : ([[Q]] % [[D]]));
// CHECK-LABEL: void kiln_elementwise_2(
// CHECK: bool {{v[0-9]+}} = ({{v[0-9]+}} > {{v[0-9]+}});
// CHECK-LABEL: void kiln_elementwise_3(
// CHECK: float {{v[0-9]+}} = __half2float(__ull2half_rn((unsigned long long){{v[0-9]+}}));

// uint64 reductions accumulate in unsigned long long, from 0 for max and
// from 2^64 - 1 for min, so that values of 2^63 and more order above the
// others.
// CHECK-LABEL: void kiln_reduction_4(const unsigned long long *__restrict__ in0, unsigned long long *__restrict__ out0)
// CHECK: unsigned long long acc = 0ULL;
// CHECK: acc = kiln_max_op()(acc, (unsigned long long){{v[0-9]+}});
// CHECK-LABEL: void kiln_reduction_5(
// CHECK: unsigned long long acc = 18446744073709551615ULL;

// Double kernels compute in double with the unsuffixed libm functions and
// literals; a double reaches ui8 through the saturating conversion and f16
// in one rounding.
// CHECK-LABEL: void kiln_elementwise_6(const double *__restrict__ in0, const double *__restrict__ in1, double *__restrict__ out0)
// CHECK: double [[E:v[0-9]+]] = exp({{v[0-9]+}});
// CHECK: double [[P:v[0-9]+]] = [[E]] * {{v[0-9]+}};
// CHECK: double {{v[0-9]+}} = 0.5 * [[P]] * (1.0 + erf([[P]] * 0.7071067811865476));
// CHECK-LABEL: void kiln_elementwise_7(
// CHECK: unsigned char {{v[0-9]+}} = kiln_float_to_int<unsigned char>({{v[0-9]+}}, 0.0, 256.0, (unsigned char)0, (unsigned char)255ULL);
// CHECK-LABEL: void kiln_elementwise_8(
// CHECK: float {{v[0-9]+}} = __half2float(__double2half({{v[0-9]+}}));
// CHECK-LABEL: void kiln_reduction_9(const double *__restrict__ in0, double *__restrict__ out0)
// CHECK: __shared__ double scratch[32];
// CHECK: double acc = 0.0;
// CHECK: acc = kiln_block_reduce(acc, (double)0.0, scratch, kiln_sum_op());
// CHECK-LABEL: void kiln_reduction_10(
// CHECK: double row_max = __longlong_as_double(0xfff0000000000000LL);
// CHECK: row_max = kiln_fmax(row_max, {{v[0-9]+}});
// CHECK: row_sum += exp({{v[0-9]+}} - row_max);
// CHECK-NOT: expf(
// CHECK: }

// The host backend runs these kernels to the reference's values: integers
// exactly, doubles to 1e-12 (an fp32 computation would be ~1e-7 off).
// HOST-COUNT-10: compare {{.*}}: max_abs

func.func @main(%a: tensor<3x5xui32>, %b: tensor<5xui32>, %u: tensor<4x6xui64>, %x: tensor<3x5xf64>, %y: tensor<5xf64>) -> (tensor<3x5xui32>, tensor<3x5xi1>, tensor<3x5xf16>, tensor<4x1xui64>, tensor<4xui64>, tensor<3x5xf64>, tensor<3x5xui8>, tensor<3x5xf16>, tensor<3x1xf64>, tensor<3x5xf64>) {
  %s = kiln.add %a, %b : (tensor<3x5xui32>, tensor<5xui32>) -> tensor<3x5xui32>
  %d = kiln.div %s, %b : (tensor<3x5xui32>, tensor<5xui32>) -> tensor<3x5xui32>
  %m = kiln.mod %d, %b : (tensor<3x5xui32>, tensor<5xui32>) -> tensor<3x5xui32>
  %g = kiln.greater %m, %b : (tensor<3x5xui32>, tensor<5xui32>) -> tensor<3x5xi1>
  %h = kiln.cast %s : tensor<3x5xui32> -> tensor<3x5xf16>
  %rmax = kiln.reduce_max %u {axes = array<i64: 1>, keepdims = true} : tensor<4x6xui64> -> tensor<4x1xui64>
  %rmin = kiln.reduce_min %u {axes = array<i64: 1>, keepdims = false} : tensor<4x6xui64> -> tensor<4xui64>
  %e = kiln.exp %x : tensor<3x5xf64>
  %p = kiln.mul %e, %y : (tensor<3x5xf64>, tensor<5xf64>) -> tensor<3x5xf64>
  %q = kiln.gelu %p approximate = none : tensor<3x5xf64>
  %c8 = kiln.cast %q : tensor<3x5xf64> -> tensor<3x5xui8>
  %c16 = kiln.cast %q : tensor<3x5xf64> -> tensor<3x5xf16>
  %sum = kiln.reduce_sum %x {axes = array<i64: 1>, keepdims = true} : tensor<3x5xf64> -> tensor<3x1xf64>
  %sm = kiln.softmax %x {axis = 1 : i64} : tensor<3x5xf64>
  return %m, %g, %h, %rmax, %rmin, %q, %c8, %c16, %sum, %sm : tensor<3x5xui32>, tensor<3x5xi1>, tensor<3x5xf16>, tensor<4x1xui64>, tensor<4xui64>, tensor<3x5xf64>, tensor<3x5xui8>, tensor<3x5xf16>, tensor<3x1xf64>, tensor<3x5xf64>
}
