// Ops of the same code share one kernel (PlanSharedKernels.cpp): their
// text, but for the kernels' names, is compiled once, and each op's launch
// runs it on its own buffers.
// RUN: kilnc %s --precision fp16 --weights int4 --emit=plan -o - | FileCheck %s --check-prefix=PLAN
// RUN: kilnc %s --precision fp16 --weights int4 --emit=cuda -o - | FileCheck %s --check-prefix=CUDA
// RUN: kilnc %s --precision fp16 --weights int4 -q -o %t.so
// RUN: env KILN_CACHE_DIR=%t.cache kiln-run %t.so --backend host --reference-model %s --run-dim rows=1 --seed 3 --compare-reference --rel-l2 1e-3
// RUN: env KILN_CACHE_DIR=%t.cache kiln-run %t.so --backend host --reference-model %s --run-dim rows=12 --seed 4 --compare-reference --rel-l2 1e-3

// The tanh of x and of y: one kernel, two launches.
// PLAN: launch kiln_elementwise_[[TANH:[0-9]+]] grid 2 block 256 args 0 [[X:[0-9]+]]
// PLAN-NEXT: launch kiln_elementwise_[[TANH]] grid 2 block 256 args 1 [[Y:[0-9]+]]
// negative_: the tanh of a row one longer is other code.
// PLAN-NEXT: launch kiln_elementwise_[[OTHER:[0-9]+]] grid 2 block 256 args 2
// PLAN-NOT: kiln_elementwise_[[TANH]]
// Two products of the same shapes by other weights: the packed GEMV and
// GEMM (whose helpers are named after them) once, each launch with its own
// packed weights and scales.
// PLAN: launch kiln_gemvq_[[GEMV:[0-9]+]] grid 1x8x1 block 128 args [[A:[0-9]+]] [[Q1:[0-9]+ [0-9]+]] [[P1:[0-9]+]] runs if 9 - rows >= 1
// PLAN-NEXT: launch kiln_gemvq_[[GEMV]]_mma grid 1 block 128 args [[A]] [[Q1]] [[P1]] runs if -8 + rows >= 1
// PLAN: launch kiln_gemvq_[[GEMV]] grid 1x8x1 block 128 args [[A]] [[Q2:[0-9]+ [0-9]+]] [[P2:[0-9]+]] runs if 9 - rows >= 1
// PLAN-NEXT: launch kiln_gemvq_[[GEMV]]_mma grid 1 block 128 args [[A]] [[Q2]] [[P2]] runs if -8 + rows >= 1

// CUDA: void kiln_elementwise_[[TANH:[0-9]+]](
// CUDA: void kiln_elementwise_[[OTHER:[0-9]+]](
// CUDA: __device__ __forceinline__ unsigned kiln_gemvq_[[GEMV:[0-9]+]]_mma_scaled(
// CUDA: void __launch_bounds__(128) kiln_gemvq_[[GEMV]]_mma(
// CUDA-NOT: __device__ __forceinline__ unsigned kiln_gemvq_{{[0-9]+}}_mma_scaled(
// CUDA-NOT: kiln_gemvq_{{[0-9]+}}_mma(

func.func @main(%x: tensor<3x100xf32>, %y: tensor<3x100xf32>, %z: tensor<3x101xf32>,
                %a: tensor<?x64xf32, #kiln.dims<["rows"]>>)
    -> (tensor<3x100xf32>, tensor<3x100xf32>, tensor<3x101xf32>,
        tensor<?x32xf32, #kiln.dims<["rows"]>>, tensor<?x32xf32, #kiln.dims<["rows"]>>)
    attributes {kiln.dim_ranges = {rows = array<i64: 1, 16>}} {
  %tx = kiln.tanh %x : tensor<3x100xf32>
  %ty = kiln.tanh %y : tensor<3x100xf32>
  %tz = kiln.tanh %z : tensor<3x101xf32>
  %w1 = kiln.constant dense<0.25> : tensor<64x32xf32>
  %w2 = kiln.constant dense<-0.5> : tensor<64x32xf32>
  %p1 = kiln.matmul %a, %w1 : (tensor<?x64xf32, #kiln.dims<["rows"]>>, tensor<64x32xf32>) -> tensor<?x32xf32, #kiln.dims<["rows"]>>
  %p2 = kiln.matmul %a, %w2 : (tensor<?x64xf32, #kiln.dims<["rows"]>>, tensor<64x32xf32>) -> tensor<?x32xf32, #kiln.dims<["rows"]>>
  return %tx, %ty, %tz, %p1, %p2 : tensor<3x100xf32>, tensor<3x100xf32>, tensor<3x101xf32>,
                                   tensor<?x32xf32, #kiln.dims<["rows"]>>, tensor<?x32xf32, #kiln.dims<["rows"]>>
}
