// RUN: kilnc %s --emit=cuda | FileCheck %s
// RUN: kiln-run %s --compare-pipeline --seed 3 | FileCheck %s --check-prefix=SEMANTICS
// SEMANTICS: pipeline keeps semantics
// REQUIRES: nvrtc
// RUN: kilnc %s -o %t.so

// A comparison, a predicate and the logic and choice over them fuse with the
// float math into one kernel: bool values stay in registers. Max lets NaN win
// (fmaxf would drop it), round is rintf (halves to even), and Gelu's tanh
// form has its own formula.
// CHECK: extern "C" __global__ void kiln_elementwise_0(const float *__restrict__ in0, const float *__restrict__ in1, float *__restrict__ out0)
// CHECK: float [[X:v[0-9]+]] = in0[i];
// CHECK: float [[Y:v[0-9]+]] = in1[((i / 1) % 7) * 1];
// CHECK: bool [[LT:v[0-9]+]] = ([[X]] < [[Y]]);
// CHECK: bool [[INF:v[0-9]+]] = ([[X]] == __int_as_float(0x7f800000));
// CHECK: bool [[C:v[0-9]+]] = ([[LT]] || [[INF]]);
// CHECK: float [[M:v[0-9]+]] = ([[X]] != [[X]] || [[X]] > [[Y]] ? [[X]] : [[Y]]);
// CHECK: float [[R:v[0-9]+]] = rintf([[M]]);
// CHECK: float [[G:v[0-9]+]] = 0.5f * [[R]] * (1.0f + tanhf(0.7978845608028654f * ([[R]] + 0.044715f * [[R]] * [[R]] * [[R]])));
// CHECK: float [[W:v[0-9]+]] = ([[C]] ? [[G]] : [[Y]]);
// CHECK: out0[i] = [[W]];

// Integer Mod with fmod = 0 takes the divisor's sign and is 0 for a divisor
// of 0 or -1; integer abs negates through unsigned arithmetic.
// CHECK: extern "C" __global__ void kiln_elementwise_1(const long long *__restrict__ in0, const long long *__restrict__ in1, long long *__restrict__ out0)
// CHECK: long long [[A:v[0-9]+]] = in0[i];
// CHECK: long long [[B:v[0-9]+]] = in1[((i / 1) % 7) * 1];
// CHECK: long long [[MOD:v[0-9]+]] = ([[B]] == 0 || [[B]] == -1 ? 0 : ([[A]] % [[B]]) != 0 && (([[A]] % [[B]]) < 0) != ([[B]] < 0) ? ([[A]] % [[B]]) + [[B]] : ([[A]] % [[B]]));
// CHECK: long long [[ABS:v[0-9]+]] = ([[MOD]] < 0 ? (long long)(0ULL - (unsigned long long)[[MOD]]) : [[MOD]]);
// CHECK: out0[i] = [[ABS]];

func.func @main(%x: tensor<3x7xf32>, %y: tensor<7xf32>, %i: tensor<3x7xi64>, %j: tensor<7xi64>) -> (tensor<3x7xf32>, tensor<3x7xi64>) {
  %lt = kiln.less %x, %y : (tensor<3x7xf32>, tensor<7xf32>) -> tensor<3x7xi1>
  %inf = kiln.is_inf %x {detect_negative = false} : tensor<3x7xf32> -> tensor<3x7xi1>
  %c = kiln.or %lt, %inf : (tensor<3x7xi1>, tensor<3x7xi1>) -> tensor<3x7xi1>
  %m = kiln.max %x, %y : (tensor<3x7xf32>, tensor<7xf32>) -> tensor<3x7xf32>
  %r = kiln.round %m : tensor<3x7xf32>
  %g = kiln.gelu %r approximate = tanh : tensor<3x7xf32>
  %w = kiln.where %c, %g, %y : (tensor<3x7xi1>, tensor<3x7xf32>, tensor<7xf32>) -> tensor<3x7xf32>
  %mod = kiln.mod %i, %j : (tensor<3x7xi64>, tensor<7xi64>) -> tensor<3x7xi64>
  %a = kiln.abs %mod : tensor<3x7xi64>
  return %w, %a : tensor<3x7xf32>, tensor<3x7xi64>
}
