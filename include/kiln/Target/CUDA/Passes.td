//===- Passes.td - the CUDA target's passes ----------------*- tablegen -*-===//

#ifndef KILN_TARGET_CUDA_PASSES_TD
#define KILN_TARGET_CUDA_PASSES_TD

include "mlir/Pass/PassBase.td"

def KilnToCudaPass : Pass<"kiln-to-cuda", "mlir::ModuleOp"> {
  let summary = "Lower planned kiln IR to CUDA C++ kernels and a runtime plan";
  let description = [{
    The boundary between the compiler and the runtime. The input is the
    output of the Kiln pipeline: one function whose compute ops are each
    inside a `kiln.kernel` or are a `kiln.matmul`, with every buffer placed
    by kiln-plan-memory. Each kernel becomes one `extern "C" __global__`
    function of one CUDA C++ source, each matmul a cuBLASLt step, each
    reshape a view of its operand's buffer, each constant a weight (or a
    splat buffer the runtime fills), and the function's arguments and
    results the plan's inputs and outputs.

    kilnc and the JIT API create the pass with a place for the result (the
    plan and the weights, which stay in the constants' blobs). Run from
    kiln-opt, the pass instead records the result in the module as text, for
    lit tests: `kiln.cuda_source` (the CUDA C++) and `kiln.plan` (the plan as
    `kilnc --emit=plan` prints it).

    After (kiln-opt):
    ```mlir
    module attributes {kiln.cuda_source = "...", kiln.plan = "arena_bytes 256\0Aweight_bytes 0\0Abuffer 0 input x f32[4] ..."} {...}
    ```
  }];
  let options = [
    Option<"checkIndices", "check-indices", "bool", /*default=*/"true",
           "every gather checks its indices at run time; without, "
           "out-of-range indices are clamped">,
    Option<"allowTf32", "allow-tf32", "bool", /*default=*/"false",
           "fp32 matmuls (CUBLAS_COMPUTE_32F_FAST_TF32) and attention "
           "(mma.sync.m16n8k8.tf32) on the tensor cores with TF32 inputs">,
    Option<"gemmKernels", "gemm-kernels", "bool", /*default=*/"false",
           "each float matmul offers Kiln's GEMM kernels beside cuBLASLt "
           "(the runtime's `gemm` option runs them)">,
    Option<"arch", "arch", "std::string", /*default=*/"\"sm_90a\"",
           "the GPU architecture the kernels are built for (NVRTC's): "
           "Hopper's forms chosen at compile time need sm_90a">,
    Option<"qdqWgmmaRows", "qdq-wgmma-rows", "int64_t", /*default=*/"0",
           "the fewest rows at which an 8-bit Q/DQ GEMM (integer, or float8 "
           "of a 16-bit product) runs on Hopper's wgmma (0 chooses: where "
           "its tiles fill the GPU; -1 never)">,
    Option<"qdqCublasLtRows", "qdq-cublaslt-rows", "int64_t",
           /*default=*/"0",
           "the fewest rows at which an FP8 Q/DQ GEMM of a 16-bit product "
           "runs on cuBLASLt, then a kernel of its epilogue (0 chooses: "
           "where the Hopper form's default starts; -1 never)">,
    // Overrides of the tensor-core attention kernel's configuration
    // (chooseAttentionConfig), for benchmarks that time the forms; 0 leaves
    // the choice to the compiler. The plan and --report print the result.
    Option<"attentionWarps", "attention-warps", "int64_t", /*default=*/"0",
           "tensor-core attention: warps a block (4 or 8; 0 chooses)">,
    Option<"attentionRowsPerWarp", "attention-rows-per-warp", "int64_t",
           /*default=*/"0",
           "tensor-core attention: query rows a warp, 16 or 32 (one or two "
           "m-tiles; 0 chooses)">,
    Option<"attentionWgmma", "attention-wgmma", "bool", /*default=*/"false",
           "tensor-core attention on Hopper's wgmma (fp16/bf16, head sizes "
           "16, 32, 64 or 128, not the split kernel)">,
    Option<"attentionTileKeys", "attention-tile-keys", "int64_t",
           /*default=*/"0",
           "tensor-core attention: keys a tile (32 or 64 with mma.sync, 64 "
           "or 128 with wgmma; 0 chooses)">,
    Option<"attentionKvStages", "attention-kv-stages", "int64_t",
           /*default=*/"0",
           "tensor-core attention: 1 keeps one buffer each for key and value "
           "tiles (0 chooses: two with two m-tiles a warp)">,
    Option<"attentionBarriers", "attention-barriers", "int64_t",
           /*default=*/"0",
           "tensor-core attention with one buffer each: 2 takes "
           "FlashAttention-2's two-barrier order, 4 the default four">,
    Option<"attentionLazyRescale", "attention-lazy-rescale", "bool",
           /*default=*/"true",
           "tensor-core attention: the running maximum moves only when a row "
           "passes it by 2^8 (false: at every rise)">,
  ];
}

#endif // KILN_TARGET_CUDA_PASSES_TD
