// kiln-to-cuda, the compiler/runtime boundary as a pass: under kiln-opt it
// records the CUDA source and the plan in the module; kilnc's plan is the
// same text, and the host backend runs the result like the reference.
// RUN: split-file %s %t
// RUN: kiln-opt %t/ok.mlir -split-input-file -kiln-pipeline -kiln-to-cuda | FileCheck %s
// RUN: kiln-opt %t/ok.mlir -split-input-file -kiln-pipeline -kiln-to-cuda=check-indices=false | FileCheck %s --check-prefix=UNCHECKED
// RUN: not kiln-opt %t/errors.mlir -split-input-file -kiln-to-cuda -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERRORS
// RUN: kiln-opt %t/add.mlir -kiln-pipeline -kiln-to-cuda | %python -c "import re, sys; print(re.search(r'kiln.plan = \"(.*?)\"', sys.stdin.read()).group(1).replace('\\\\0A', '\\n'), end='')" > %t/pass-plan.txt
// RUN: kilnc %t/add.mlir --emit=plan -o %t/kilnc-plan.txt
// RUN: diff %t/pass-plan.txt %t/kilnc-plan.txt
// RUN: kiln-run %t/add.mlir --backend host --compare-reference --seed 5 | FileCheck %s --check-prefix=SEMANTICS
// SEMANTICS: compare output0: max_abs 0.000e+00

//--- ok.mlir
// One fused kernel, its inputs and output in the plan.
// CHECK: module attributes {kiln.cuda_source = "{{.*}}extern \22C\22 __global__ void kiln_elementwise_0(const float *__restrict__ in0, const float *__restrict__ in1, float *__restrict__ out0)
// CHECK-SAME: expf(
// CHECK-SAME: kiln.plan = "arena_bytes 0\0Aweight_bytes 0\0Abuffer 0 input input0 float32[4] offset 0 bytes 16\0Abuffer 1 input input1 float32[4] offset 1 bytes 16\0Abuffer 2 output output0 float32[4] offset 0 bytes 16\0Alaunch kiln_elementwise_0 grid 1 block 256 args 0 1 2\0A"
func.func @main(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln.add %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = kiln.exp %0 : tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// A gather checks its indices at run time unless check-indices=false. The
// pass numbers its site on the IR before emission (which only reads it).
// CHECK: kiln_checked_index((long long)v{{[0-9]+}}, 5LL, 1u)
// CHECK: kiln.gather {{.*}}kiln.index_site = 1 : i32
// UNCHECKED: kiln_gather_index((long long)v
// UNCHECKED-NOT: kiln_checked_index((long long)v
// UNCHECKED-NOT: kiln.index_site
func.func @gather(%t: tensor<5x2xf32>, %i: tensor<3xi64>) -> tensor<3x2xf32> {
  %0 = kiln.gather %t, %i {axis = 0 : i64} : (tensor<5x2xf32>, tensor<3xi64>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

//--- errors.mlir
// ERRORS: error: memory is not planned (run kiln-plan-memory)
func.func @negative_unplanned(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln.exp %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// ERRORS: error: expected exactly one function
func.func @negative_two_functions(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
func.func @other(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// Only a row norm's kernel has a second result, and only the norm's input
// (kiln-fuse's sharedNormInput): the CUDA target refuses any other.
// ERRORS: error: 'kiln.kernel' op yields a second value that is not its row norm's input or a cast of it
func.func @negative_second_result_not_the_norm_input(%x: tensor<4x8xf32>, %g: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) attributes {kiln.arena_bytes = 0 : i64, kiln.live_lower_bound_bytes = 0 : i64} {
  %0:2 = kiln.kernel reduction(%x, %g) {kiln.offsets = array<i64: -1, -2>} : (tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  ^bb0(%a: tensor<4x8xf32>, %b: tensor<8xf32>):
    %e = kiln.exp %a : tensor<4x8xf32>
    %n = kiln.rms_norm %e, %b {axis = 1 : i64, epsilon = 1.0e-6 : f32} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    %r = kiln.relu %n : tensor<4x8xf32>
    kiln.yield %r, %n : tensor<4x8xf32>, tensor<4x8xf32>
  }
  return %0#0, %0#1 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// An elementwise kernel's second result must have its first's shape (two
// one-element results are kiln-fuse's pairScalarKernels; dynamic-int8-gemm.test
// runs one).
// ERRORS: error: 'kiln.kernel' op has 2 results; the CUDA target needs one
func.func @negative_two_elementwise_results_of_two_shapes(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<2xf32>) attributes {kiln.arena_bytes = 0 : i64, kiln.live_lower_bound_bytes = 0 : i64} {
  %0:2 = kiln.kernel elementwise(%x) {kiln.offsets = array<i64: -1, -2>} : (tensor<4xf32>) -> (tensor<4xf32>, tensor<2xf32>) {
  ^bb0(%a: tensor<4xf32>):
    %e = kiln.exp %a : tensor<4xf32>
    %r = kiln.slice %e {starts = array<i64: 0>, strides = array<i64: 2>} : tensor<4xf32> -> tensor<2xf32>
    kiln.yield %e, %r : tensor<4xf32>, tensor<2xf32>
  }
  return %0#0, %0#1 : tensor<4xf32>, tensor<2xf32>
}

// -----

// Two cache updates share a kernel only where they write alike
// (kiln-fuse's pairCacheUpdates): here at other offsets.
// ERRORS: error: 'kiln.kernel' op yields cache updates that do not write alike (one shape, axis, offset and starts)
func.func @negative_cache_updates_unalike(%kc: tensor<1x2x8x4xf32>, %vc: tensor<1x2x8x4xf32>, %k: tensor<1x2x1x4xf32>, %v: tensor<1x2x1x4xf32>) -> (tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>) attributes {kiln.arena_bytes = 0 : i64, kiln.live_lower_bound_bytes = 0 : i64} {
  %0:2 = kiln.kernel elementwise(%kc, %vc, %k, %v) {kiln.offsets = array<i64: -1, -2>} : (tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x1x4xf32>, tensor<1x2x1x4xf32>) -> (tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>) {
  ^bb0(%a: tensor<1x2x8x4xf32>, %b: tensor<1x2x8x4xf32>, %c: tensor<1x2x1x4xf32>, %d: tensor<1x2x1x4xf32>):
    %ku = kiln.update_slice %a, %c {axis = 2 : i64, offset = "5"} : (tensor<1x2x8x4xf32>, tensor<1x2x1x4xf32>) -> tensor<1x2x8x4xf32>
    %vu = kiln.update_slice %b, %d {axis = 2 : i64, offset = "6"} : (tensor<1x2x8x4xf32>, tensor<1x2x1x4xf32>) -> tensor<1x2x8x4xf32>
    kiln.yield %ku, %vu : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>
  }
  return %0#0, %0#1 : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>
}

// -----

// A Q/DQ GEMM normalizes only after its tail (kiln-fuse's growQdqTailNorm):
// a norm straight after the product is refused.
// ERRORS: error: 'kiln.kernel' op of kind gemm over 8-bit activations takes a norm only after its tail on the CUDA target
func.func @negative_qdq_norm_without_tail(%x: tensor<3x32xi8>, %q: tensor<8x1x32xui8>, %s: tensor<8x1xf32>, %sa: tensor<f32>, %g: tensor<8xf32>) -> tensor<3x8xf32> attributes {kiln.arena_bytes = 0 : i64, kiln.live_lower_bound_bytes = 0 : i64} {
  %0 = kiln.kernel gemm(%x, %q, %s, %sa, %g) {epilogue = #kiln.gemm_epilogue<norm_scale = 4>, kiln.offsets = array<i64: -1>} : (tensor<3x32xi8>, tensor<8x1x32xui8>, tensor<8x1xf32>, tensor<f32>, tensor<8xf32>) -> tensor<3x8xf32> {
  ^bb0(%a: tensor<3x32xi8>, %bq: tensor<8x1x32xui8>, %bs: tensor<8x1xf32>, %as: tensor<f32>, %ag: tensor<8xf32>):
    %af = kiln.cast %a : tensor<3x32xi8> -> tensor<3x32xf32>
    %ad = kiln.mul %af, %as : (tensor<3x32xf32>, tensor<f32>) -> tensor<3x32xf32>
    %w = kiln.dequantize %bq, %bs {bits = 8 : i64, block_size = 32 : i64} : (tensor<8x1x32xui8>, tensor<8x1xf32>) -> tensor<8x32xf32>
    %p = kiln.matmul %ad, %w {transpose_rhs = true} : (tensor<3x32xf32>, tensor<8x32xf32>) -> tensor<3x8xf32>
    %n = kiln.rms_norm %p, %ag {axis = 1 : i64, epsilon = 1.0e-6 : f32} : (tensor<3x8xf32>, tensor<8xf32>) -> tensor<3x8xf32>
    kiln.yield %n : tensor<3x8xf32>
  }
  return %0 : tensor<3x8xf32>
}

// -----

// The Q/DQ GEMM's norm finish is fp32: a tail that ends in 16 bits keeps
// its norm's kernel (kiln-fuse takes an fp32 tail's norm only).
// ERRORS: error: 'kiln.kernel' op of kind gemm over 8-bit activations normalizes an fp32 tail by fp32 scale and shift only on the CUDA target
func.func @negative_qdq_norm_of_16_bit_tail(%x: tensor<3x32xi8>, %q: tensor<8x1x32xui8>, %s: tensor<8x1xf32>, %sa: tensor<f32>, %g: tensor<8xf16>) -> tensor<3x8xf16> attributes {kiln.arena_bytes = 0 : i64, kiln.live_lower_bound_bytes = 0 : i64} {
  %0 = kiln.kernel gemm(%x, %q, %s, %sa, %g) {epilogue = #kiln.gemm_epilogue<norm_scale = 4, tail = true>, kiln.offsets = array<i64: -1>} : (tensor<3x32xi8>, tensor<8x1x32xui8>, tensor<8x1xf32>, tensor<f32>, tensor<8xf16>) -> tensor<3x8xf16> {
  ^bb0(%a: tensor<3x32xi8>, %bq: tensor<8x1x32xui8>, %bs: tensor<8x1xf32>, %as: tensor<f32>, %ag: tensor<8xf16>):
    %af = kiln.cast %a : tensor<3x32xi8> -> tensor<3x32xf32>
    %ad = kiln.mul %af, %as : (tensor<3x32xf32>, tensor<f32>) -> tensor<3x32xf32>
    %w = kiln.dequantize %bq, %bs {bits = 8 : i64, block_size = 32 : i64} : (tensor<8x1x32xui8>, tensor<8x1xf32>) -> tensor<8x32xf32>
    %p = kiln.matmul %ad, %w {transpose_rhs = true} : (tensor<3x32xf32>, tensor<8x32xf32>) -> tensor<3x8xf32>
    %h = kiln.cast %p : tensor<3x8xf32> -> tensor<3x8xf16>
    %n = kiln.rms_norm %h, %ag {axis = 1 : i64, epsilon = 1.0e-6 : f32} : (tensor<3x8xf16>, tensor<8xf16>) -> tensor<3x8xf16>
    kiln.yield %n : tensor<3x8xf16>
  }
  return %0 : tensor<3x8xf16>
}

//--- add.mlir
func.func @main(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln.add %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = kiln.exp %0 : tensor<4xf32>
  return %1 : tensor<4xf32>
}
