//===- Passes.td - Kiln passes -----------------------------*- tablegen -*-===//

#ifndef KILN_TRANSFORMS_PASSES_TD
#define KILN_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// Recomposition
//===----------------------------------------------------------------------===//

def KilnRecomposePass : Pass<"kiln-recompose", "mlir::func::FuncOp"> {
  let summary = "Replace the decomposed forms exporters write with kiln ops";
  let description = [{
    Scaled dot-product attention, as every exporter and Kiln's own importer
    write it, becomes one `kiln.attention`. One matcher covers the variants,
    starting at a last-axis `kiln.softmax` whose only user multiplies it by
    the values:
    - the scores are a rank-4 `kiln.matmul` of queries and transposed keys
      (a `kiln.transpose` of the last two dims, or `transpose_rhs`);
    - the scale is a scalar constant multiplied into (or divided out of) the
      scores, the queries or the keys, or several of them;
    - an additive mask is added to the scaled scores, or a boolean mask
      selects them against a fill of -inf or a float lowest (~-3.4e38): the
      select becomes an additive mask, which is exact for such fills;
    - keys and values may have fewer heads than the queries (grouped-query
      attention), when the export does not repeat them itself.
    Every intermediate must have no other use. Anything else is left alone.

    LayerNorm as exporters before opset 17 write it (ReduceMean, Sub,
    Pow or Mul, ReduceMean, Add epsilon, Sqrt, Div, then an optional scale
    Mul and shift Add over the normalized dims) becomes one `kiln.layer_norm`
    over the trailing axes.

    Before:
    ```mlir
    %kt = kiln.transpose %k {permutation = array<i64: 0, 1, 3, 2>} ...
    %s = kiln.matmul %q, %kt ...
    %c = kiln.mul %s, %scale ...
    %a = kiln.add %c, %mask ...
    %p = kiln.softmax %a {axis = 3 : i64} ...
    %o = kiln.matmul %p, %v ...
    ```
    After:
    ```mlir
    %o = kiln.attention %q, %k, %v, %mask {scale = 1.250000e-01 : f32} ...
    ```
  }];
  let dependentDialects = ["kiln::KilnDialect"];
}

//===----------------------------------------------------------------------===//
// Layout
//===----------------------------------------------------------------------===//

def KilnLayoutPass : Pass<"kiln-layout", "mlir::func::FuncOp"> {
  let summary = "Pack projections that share an input into one matmul";
  let description = [{
    Matmuls of one input by constant 2-D weights of the same depth, whose
    results each feed a `kiln.attention` operand only (through reshapes,
    transposes, slices and single-use elementwise ops such as a bias add),
    become one matmul by the weights concatenated at compile time, followed
    by a slice per original result. kiln-fuse folds those slices into the
    attention kernel's reads, so the query, key and value projections of a
    layer cost one GEMM. Transpose pairs cancel by canonicalization (a
    transpose of a transpose composes).

    Before:
    ```mlir
    %q = kiln.matmul %x, %wq : (tensor<2x8x32xf32>, tensor<32x32xf32>) -> tensor<2x8x32xf32>
    %k = kiln.matmul %x, %wk : (tensor<2x8x32xf32>, tensor<32x32xf32>) -> tensor<2x8x32xf32>
    ```
    After:
    ```mlir
    %qk = kiln.matmul %x, %wqk : (tensor<2x8x32xf32>, tensor<32x64xf32>) -> tensor<2x8x64xf32>
    %q = kiln.slice %qk {starts = array<i64: 0, 0, 0>, strides = array<i64: 1, 1, 1>} ...
    %k = kiln.slice %qk {starts = array<i64: 0, 0, 32>, strides = array<i64: 1, 1, 1>} ...
    ```
  }];
  let dependentDialects = ["kiln::KilnDialect"];
}

//===----------------------------------------------------------------------===//
// Fusion
//===----------------------------------------------------------------------===//

def KilnFusePass : Pass<"kiln-fuse", "mlir::func::FuncOp"> {
  let summary = "Group ops into kiln.kernel regions, one launch each";
  let description = [{
    Every compute op except `kiln.matmul` ends up in exactly one `kiln.kernel`:
    - `kiln.attention` becomes an `attention` kernel together with the ops
      that produce its operands for it alone (reshapes, transposes, slices of
      a packed projection, expands repeating key/value heads, elementwise ops
      such as a bias add) and a transpose of its result;
    - the ops with the Reduction trait (reduce ops, arg ops, softmax,
      log_softmax, layer_norm, cumsum) become a `reduction` kernel together
      with their elementwise prologue (producers of the reduced input with no
      other use and the input's shape) and epilogue (single-use elementwise
      consumers with the result's shape);
    - a chain of elementwise ops whose intermediate values have no other use
      becomes one `elementwise` kernel;
    - transpose, slice, concat, gather, gather_elements and expand each become
      a `copy` kernel, top_k a `sort` kernel.
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
    caller's output buffers instead. The result of an elementwise kernel takes
    the storage of an input of the same type that dies at that kernel (each
    element is read before it is written, by the same thread), unless another
    input reads that storage at other indices.

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
