// RUN: kiln-opt %s -kiln-fuse="gemm-norm=false" | FileCheck %s
// RUN: kiln-opt %s -kiln-fuse | FileCheck %s --check-prefix=DEFAULT
// RUN: kiln-run %s --compare-pipeline --gemm-norm-epilogue=false --seed 7 | FileCheck %s --check-prefix=SEMANTICS

// kiln-fuse's gemm-norm=false (kilnc --gemm-norm-epilogue=false), so that a
// GPU session can time the two forms in one call: BERT's post-norm block
// keeps its projection's bias and residual in the GEMM's epilogue, and the
// LayerNorm becomes a reduction kernel of its own, as before 2026-12-01.
// The default takes the norm into the GEMM.
// CHECK-LABEL: func @gemm_bias_residual_layer_norm
// CHECK: %[[G:.*]] = kiln.kernel gemm(%arg0, %arg1, %arg2, %arg3) {epilogue = #kiln.gemm_epilogue<bias = 2, residual = 3>}
// CHECK-NOT: kiln.layer_norm
// CHECK: kiln.yield
// CHECK: %[[N:.*]] = kiln.kernel reduction(%[[G]], %arg4, %arg5)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.layer_norm
// CHECK: return %[[N]]
// DEFAULT: kiln.kernel gemm(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5) {epilogue = #kiln.gemm_epilogue<bias = 2, residual = 3, norm_scale = 4, norm_shift = 5>}
// DEFAULT-NOT: kiln.kernel reduction
// SEMANTICS: pipeline keeps semantics
func.func @gemm_bias_residual_layer_norm(%a: tensor<16x32xf16>, %w: tensor<32x64xf16>, %b: tensor<64xf16>, %x: tensor<2x8x64xf16>, %g: tensor<64xf16>, %beta: tensor<64xf16>) -> tensor<2x8x64xf16> {
  %p = kiln.matmul %a, %w : (tensor<16x32xf16>, tensor<32x64xf16>) -> tensor<16x64xf16>
  %s = kiln.add %p, %b : (tensor<16x64xf16>, tensor<64xf16>) -> tensor<16x64xf16>
  %r = kiln.reshape %s : tensor<16x64xf16> -> tensor<2x8x64xf16>
  %y = kiln.add %x, %r : (tensor<2x8x64xf16>, tensor<2x8x64xf16>) -> tensor<2x8x64xf16>
  %n = kiln.layer_norm %y, %g, %beta {axis = 2 : i64, epsilon = 1.0e-12 : f32} : (tensor<2x8x64xf16>, tensor<64xf16>, tensor<64xf16>) -> tensor<2x8x64xf16>
  return %n : tensor<2x8x64xf16>
}
