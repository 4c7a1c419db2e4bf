//===- Passes.td - Kiln passes -----------------------------*- tablegen -*-===//

#ifndef KILN_TRANSFORMS_PASSES_TD
#define KILN_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// Fusion
//===----------------------------------------------------------------------===//

def KilnFusePass : Pass<"kiln-fuse", "mlir::func::FuncOp"> {
  let summary = "Group ops into kiln.kernel regions, one launch each";
  let description = [{
    Every compute op except `kiln.matmul` ends up in exactly one `kiln.kernel`:
    - a chain of elementwise ops whose intermediate values have no other use
      becomes one `elementwise` kernel;
    - `kiln.softmax`, `kiln.layer_norm` and `kiln.reduce_mean` become a
      `reduction` kernel together with their elementwise prologue (producers of
      the reduced input with no other use and the input's shape) and epilogue
      (single-use elementwise consumers with the result's shape);
    - `kiln.transpose` becomes a `copy` kernel.
    Reshapes and constants stay outside: they are views and weights.

    Before:
    ```mlir
    %s = kiln.add %x, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    %r = kiln.relu %s : tensor<4x8xf32>
    ```
    After:
    ```mlir
    %r = kiln.kernel elementwise (%x, %b)
        : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: tensor<4x8xf32>, %c: tensor<8xf32>):
      %s = kiln.add %a, %c : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
      %t = kiln.relu %s : tensor<4x8xf32>
      kiln.yield %t : tensor<4x8xf32>
    }
    ```
  }];
  let dependentDialects = ["kiln::KilnDialect"];
}

//===----------------------------------------------------------------------===//
// Memory planning
//===----------------------------------------------------------------------===//

def KilnPlanMemoryPass : Pass<"kiln-plan-memory", "mlir::func::FuncOp"> {
  let summary = "Assign arena offsets to every materialized tensor";
  let description = [{
    Computes each buffer's live interval over the op order (a reshape extends
    the interval of the tensor it views), then places buffers into one arena,
    largest first, each at the lowest aligned offset that overlaps no buffer
    live at the same time (the greedy-by-size approach of TFLite's and TVM's
    planners). Values returned by the function are written straight into the
    caller's output buffers instead.

    Each op that materializes tensors gets `kiln.offsets` (one entry per
    result: an arena offset, or -1 - i for graph output i); the function gets
    `kiln.arena_bytes` and `kiln.live_lower_bound_bytes`.

    Before:
    ```mlir
    %0 = kiln.kernel elementwise (%arg0) : (tensor<4xf32>) -> tensor<4xf32> {...}
    ```
    After:
    ```mlir
    %0 = kiln.kernel elementwise (%arg0) {kiln.offsets = array<i64: 0>} ...
    ```
  }];
  let options = [
    Option<"alignment", "alignment", "int64_t", /*default=*/"256",
           "byte alignment of every buffer (cuBLASLt and vector loads)">,
  ];
}

#endif // KILN_TRANSFORMS_PASSES_TD
