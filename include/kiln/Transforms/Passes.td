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
    - the scaled scores may be capped, `c * tanh(s / c)` with a positive
      scalar constant c (Gemma 2's softcap, as ONNX Attention and
      GroupQueryAttention import), which becomes the op's `softcap`;
    - the softmax may take one more column, a constant logit per head at
      most (an attention sink, GroupQueryAttention's head_sink from weights
      or smooth_softmax), with the probabilities sliced back to the keys:
      it becomes the op's `sink`;
    - an additive mask is added to the scaled scores, or a boolean mask
      selects them against a fill of -inf or a float lowest (~-3.4e38): the
      select becomes an additive mask, which is exact for such fills;
    - keys and values may have fewer heads than the queries (grouped-query
      attention), when the export does not repeat them itself;
    - the probabilities may be guarded against NaN, `where(isnan(p), 0, p)`,
      as today's PyTorch exports scaled_dot_product_attention (a row whose
      keys are all masked gives zeros): the op gets `zero_nan_probs`.
    Every intermediate must have no other use (the guarded softmax: only the
    guard's). Anything else is left alone.

    LayerNorm as exporters before opset 17 write it (ReduceMean, Sub,
    Pow or Mul, ReduceMean, Add epsilon, Sqrt, Div, then an optional scale
    Mul and shift Add over the normalized dims) becomes one `kiln.layer_norm`
    over the trailing axes.

    RMSNorm (`x / sqrt(mean(x^2) + eps)`, the division or a multiply by the
    root's reciprocal, Reciprocal or 1 / Sqrt, then an optional scale Mul)
    becomes one `kiln.rms_norm`: LLaMA's RMSNorm from both exporters, ONNX's
    RMSNormalization and onnxruntime's SimplifiedLayerNormalization as the
    importer spells them. A 16-bit export widens x to fp32 and casts the
    normalized value back before the scale: the norm then takes the 16-bit
    x and the scale at once (one rounding where the spelled form has two).
    An fp32 norm of widened 16-bit values, cast back to that type, is the
    16-bit norm (exactly: the op rounds once).

    GELU as exporters decompose it becomes one `kiln.gelu`: the erf form
    `0.5 * x * (1 + erf(x / sqrt(2)))` (TorchScript's BERT) and the tanh form
    `0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))` (GPT-2's
    gelu_new), the product in any order and grouping, the constants
    multiplied or divided (to 1e-3 relative, as exporters round them), the
    cube as `pow(x, 3)` or `x * x * x`; every intermediate of one use.

    onnxruntime's dynamically quantized product, the importer's
    MatMulInteger (the fp32 product of 8-bit differences, B a
    `kiln.dequantize` with scales of 1) cast to i32 and back and multiplied
    by the activations' scale (one value) times the weights' (a constant,
    one value or one a column), becomes the product of the scaled
    operands: A times the activations' scale, and the dequantize with the
    weights' scales. The casts are exact for whole-number sums within int32
    (K at most 33,025); only where the scales multiply moves.

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
    layer cost one GEMM. When each projection's only use adds a constant
    bias row (`[n]` or `[1, ..., 1, n]`), the biases are concatenated too and
    added once to the packed product, the slices taking the adds' place:
    kiln-fuse makes that add the GEMM's bias epilogue, and the attention
    kernel reads plain slices of the GEMM's output, rows it copies whole.
    Transpose pairs cancel by canonicalization (a transpose of a transpose
    composes). Quantized weights pack too: matmuls reading the transpose of
    a `kiln.dequantize` of constants (MatMulNBits' and DequantizeLinear's
    weights) that only they read, of one form (bits, block size and count,
    the packed, scale and zero point types), become one dequantize of the
    packed bytes, scales and zero points concatenated along its rows, so a
    decoder's gate and up projections (and a Q/DQ BERT's query, key and
    value) read their bytes in one GEMM.

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
// Mixed precision
//===----------------------------------------------------------------------===//

def KilnMixedPrecisionPass : Pass<"kiln-mixed-precision", "mlir::func::FuncOp"> {
  let summary = "Compute in fp16 or bf16 with fp32 islands";
  let description = [{
    Chooses, for every op that computes on f32 tensors, whether it computes
    in the low type (`precision`: fp16 or bf16) or stays in f32, in one walk
    in program order:
    - `kiln.matmul` and `kiln.attention` compute in the low type (their
      kernels accumulate in fp32 whatever the element type), and so does
      `kiln.dequantize` (its scales and float zero points converted at
      compile time; it computes in fp32 and rounds once), so that a 16-bit
      product reads quantized weights straight from it;
    - fp32 islands, each recorded with its rule: `softmax` (softmax and
      log_softmax with the elementwise ops that feed them alone),
      `norm-statistics` (reductions that compute a LayerNorm or RMSNorm
      mean or mean square, with the square that feeds them),
      `reduction` (other sums, means, products and running sums; an
      exponential or square that feeds one joins it even when shared), `mask`
      (the arithmetic that computes an attention mask; converted to the low
      type with every value, -inf included, clamped to its finite range, so
      that a fully masked row stays finite), `from-integer` (values cast
      from integers: positions and masks, which bf16 holds exactly only up
      to 256), `angle` (sin and cos with the ops that compute their
      arguments alone, a matmul included: rotary angles reach thousands of
      radians, where fp16's spacing is 1 and bf16's 16), `quantize` (the
      elementwise ops that compute what a cast to an integer or float8
      reads alone: QuantizeLinear's `x / scale`, rounding, zero point and
      clamp, whose 16-bit rounding would move values across the quantized
      grid's boundaries); a model's own casts from 16 bits to f32 stay
      (`explicit-cast`);
    - `kiln.layer_norm` and `kiln.rms_norm` compute in the type their input
      arrives in: their kernels keep the statistics in fp32 either way;
    - every other op computes in the type its float inputs arrive in (f32
      when any of them is f32: rule `propagated`), constants and graph
      inputs taking whichever type their user computes in;
    - overrides keep ops in f32 by op type (`keep-op-types`, kiln op names
      such as `matmul` or `layer_norm`, written in any case with or without
      underscores; ONNX's `LayerNormalization` and `Gemm` name their kiln
      ops, as `RMSNormalization` and `SimplifiedLayerNormalization` name
      `rms_norm`) or by ONNX node name (`keep-node-names`, any node an op came
      from);
    - with `keep-io-types` (the default) the graph's inputs and outputs keep
      their types; otherwise f32 inputs and outputs become the low type,
      except a KV cache kept in place (kiln-cache-in-place), one storage
      for its input and output, which keeps the type its update writes.
    Constants are converted at compile time (finite values saturate to the
    low type's range). A conversion is inserted where a value's type differs
    from what its user computes in: before the user when kiln-fuse can fuse
    it there, shared otherwise. Casts then cancel where the round trip is
    exact (f16 -> f32 -> f16), narrowing casts move above and widening casts
    below reshapes, transposes, slices and expands. Ops kept in f32 carry
    `kiln.fp32 = "<rule>"` (graph inputs and outputs too, and f32 weights
    of f32 users: `fp32-user`), which `kilnc --report` lists. Tensors of
    other types (integers, a model's own f16) are left alone, and so are
    ops the pass does not know (`unconverted`: their operands come back to
    f32). docs/precision.md has the reasons.

    `disable-islands` turns islands off by rule (`all` for every one): their
    ops then compute like any other, and with `mask` off masks convert
    without clamping. That is for measuring what an island buys, not for
    use.

    Before:
    ```mlir
    %h = kiln.matmul %x, %w : (tensor<2x8x32xf32>, tensor<32x32xf32>) -> tensor<2x8x32xf32>
    %p = kiln.softmax %h {axis = 2 : i64} : tensor<2x8x32xf32>
    ```
    After (precision=fp16):
    ```mlir
    %w16 = kiln.constant dense_resource<w_fp16> : tensor<32x32xf16>
    %x16 = kiln.cast %x : tensor<2x8x32xf32> -> tensor<2x8x32xf16>
    %h = kiln.matmul %x16, %w16 : (tensor<2x8x32xf16>, tensor<32x32xf16>) -> tensor<2x8x32xf16>
    %h32 = kiln.cast %h : tensor<2x8x32xf16> -> tensor<2x8x32xf32>
    %p = kiln.softmax %h32 {axis = 2 : i64, kiln.fp32 = "softmax"} : tensor<2x8x32xf32>
    ```
  }];
  let options = [
    Option<"precision", "precision", "std::string", /*default=*/"\"fp16\"",
           "the low type: fp16 or bf16">,
    Option<"keepIoTypes", "keep-io-types", "bool", /*default=*/"true",
           "keep the types of the graph's inputs and outputs">,
    ListOption<"keepOpTypes", "keep-op-types", "std::string",
               "op types kept in f32 (kiln op names)">,
    ListOption<"keepNodeNames", "keep-node-names", "std::string",
               "ONNX node names whose ops are kept in f32">,
    ListOption<"disableIslands", "disable-islands", "std::string",
               "fp32 islands turned off: all, softmax, norm-statistics, "
               "reduction, mask, from-integer, angle, quantize">,
  ];
  let dependentDialects = ["kiln::KilnDialect"];
}

//===----------------------------------------------------------------------===//
// KV caches
//===----------------------------------------------------------------------===//

def KilnCacheInPlacePass : Pass<"kiln-cache-in-place", "mlir::func::FuncOp"> {
  let summary = "Append a decoder's new cache rows in place of copying the cache";
  let description = [{
    A decoder exported with a KV cache returns `present = concat(past, new)`
    along the sequence dim: every step writes the whole cache again. This
    pass gives such a cache one buffer of its largest length instead: the
    graph input `past` becomes that buffer (its sequence dim the capacity,
    the largest size of `present`'s over `kiln.dim_ranges`, holding the past
    rows first), the output `present` is `kiln.update_slice` of it, which
    writes only the new rows at offset `past`, and the ops that read
    `present` read a `kiln.slice` of its valid rows. The CUDA target makes
    the output share the input's storage (the C ABI's output aliases), so a
    decode step costs O(new rows).

    It rewrites a returned `kiln.concat` whose first operand is a function
    argument used by nothing else, along a dim that is symbolic in both and
    bounded by the ranges. The calling convention changes with it, so it
    runs only when asked (`kilnc --kv-cache-in-place`).

    Before:
    ```mlir
    func.func @main(%past: tensor<1x4x?x8xf32, #kiln.dims<["past"]>>,
                    %new: tensor<1x4x?x8xf32, #kiln.dims<["sequence"]>>) -> ... {
      %p = kiln.concat %past, %new {axis = 2 : i64} : ...
          -> tensor<1x4x?x8xf32, #kiln.dims<["past+sequence"]>>
      return %p : ...
    ```
    After (past 0:31, sequence 1:32):
    ```mlir
    func.func @main(%past: tensor<1x4x63x8xf32>, %new: ...) -> tensor<1x4x63x8xf32> {
      %c = kiln.update_slice %past, %new {axis = 2 : i64, offset = "past"} ...
      %p = kiln.slice %c {starts = array<i64: 0, 0, 0, 0>, ...} : ...
          -> tensor<1x4x?x8xf32, #kiln.dims<["past+sequence"]>>
      return %c : tensor<1x4x63x8xf32>
    ```
  }];
  let dependentDialects = ["kiln::KilnDialect"];
}

//===----------------------------------------------------------------------===//
// Fusion
//===----------------------------------------------------------------------===//

def KilnQuantizeWeightsPass
    : Pass<"kiln-quantize-weights", "mlir::func::FuncOp"> {
  let summary = "Block-quantize the weights of linear layers at compile time";
  let description = [{
    Every `kiln.matmul` of activations by a constant float matrix (f32, f16
    or bf16, K at least one block) becomes a product by the transpose of a
    `kiln.dequantize` of the weights quantized here, in MatMulNBits'
    layout: `bits`-bit values (4 or 8) packed along K for each output
    column, one scale for each block of `block-size` along K, and the
    middle of the range (8, 128) as the zero point. Each scale is the
    block's largest magnitude over 7 (int4) or 127 (int8), rounded to
    `compute-type` (else the weights' type); each weight is
    round(w / scale) + middle, clamped to the range, and the padding past
    K is the middle (weights of 0). This is
    symmetric round-to-nearest, what onnxruntime's default MatMulNBits
    quantizer writes. The weights are never held twice as floats: they are
    read where they are stored and their pages dropped, and the packed
    bytes are spilled to a temporary file as other converted weights are.

    With `float8`, the weights are E4M3FN values instead, kept as their
    bytes (ModelOpt's FP8 weights, read by the same GEMV): one scale an
    output column, its largest magnitude over 448 rounded as the integer
    forms' scales are, each weight w / scale rounded to the nearest float8
    (ties to even), and one block of the whole row padded with zeros to
    whole 16-byte chunks.

    Each dequantize records `kiln.quantization_error`: the relative L2
    distance between a seeded random row times the weights and times their
    dequantized values (in the type the products compute in, as the kernels
    compute them), which `kilnc --report` lists.

    `compute-type` (f16 or bf16) names the type kiln-mixed-precision will
    give the products when this pass runs before it, as the pipeline runs
    it: scales are rounded to that type and the error measured in it, so
    that the conversion after changes no value, and the weights are read
    once, as the model stores them, rather than converted to 16 bits and
    spilled first. Empty, the weights' own type.

    Before:
    ```mlir
    %y = kiln.matmul %a, %w : (tensor<1x64xf16>, tensor<64x8xf16>) -> tensor<1x8xf16>
    ```
    After (`bits=4 block-size=32`):
    ```mlir
    %q = kiln.constant dense_resource<quantized0> : tensor<8x2x16xui8>
    %s = kiln.constant dense<...> : tensor<8x2xf16>
    %d = kiln.dequantize %q, %s {bits = 4 : i64, block_size = 32 : i64,
        kiln.quantization_error = 0.07 : f64}
        : (tensor<8x2x16xui8>, tensor<8x2xf16>) -> tensor<8x64xf16>
    %y = kiln.matmul %a, %d {transpose_rhs = true}
        : (tensor<1x64xf16>, tensor<8x64xf16>) -> tensor<1x8xf16>
    ```
  }];
  let options = [
    Option<"bits", "bits", "int64_t", /*default=*/"4",
           "bits a weight: 4 or 8">,
    Option<"blockSize", "block-size", "int64_t", /*default=*/"32",
           "weights a block along K, each with its own scale: a power of "
           "two of at least 16">,
    Option<"float8", "float8", "bool", /*default=*/"false",
           "E4M3FN float8 weights (bits 8) with one scale an output column; "
           "block-size is unused">,
    Option<"computeType", "compute-type", "std::string", /*default=*/"\"\"",
           "f16 or bf16: the type the products will compute in, which the "
           "scales are rounded to (empty: the weights' own type)">,
  ];
  let dependentDialects = ["kiln::KilnDialect"];
}

def KilnFusePass : Pass<"kiln-fuse", "mlir::func::FuncOp"> {
  let summary = "Group ops into kiln.kernel regions, one launch each";
  let description = [{
    Every compute op except a plain `kiln.matmul` ends up in exactly one
    `kiln.kernel`:
    - `kiln.attention` becomes an `attention` kernel together with the ops
      that produce its operands for it alone (reshapes, transposes, slices of
      a packed projection, expands repeating key/value heads, concats and
      gathers such as rotary embedding's rotate-half, elementwise ops such as
      a rotary embedding's arithmetic) and a transpose of its result; a bias
      add on a projection that only it uses is left to the projection's
      GEMM (its bias epilogue), so that the attention reads the projection
      itself;
    - a float `kiln.matmul` followed by what cuBLASLt's epilogue computes
      becomes a `gemm` kernel (one cuBLASLt call): an add of a bias over
      the product's columns (shape [n] or [1, ..., 1, n]), then an add of a
      residual of the product's own shape (read as cuBLASLt's C, beta = 1),
      then a `kiln.relu` or a `kiln.gelu`, each the only user of the one
      before (reshapes between them included), and for a 16-bit product a
      `kiln.layer_norm` or `kiln.rms_norm` of each row last, the kernel
      also yielding the sum it normalizes where later ops read that too
      (a pre-norm block's residual stream; `gemm-norm=false` leaves the
      norm to its row kernel); over block-quantized weights too (the packed
      kernels finish it), there also onnxruntime's skip norms as the
      importer writes them, the add and the norm in f32 between casts
      (`wide_norm`); over 8-bit activations only after the Q/DQ GEMM's
      tail, the norm the fp32 tail's end's only reader, with the
      elementwise ops after it (a Q/DQ BERT's requantized LayerNorms). cuBLASLt's
      GELU is the tanh form: the erf form joins only a 16-bit product, whose
      own rounding exceeds the two forms' difference (4.7e-4 at most). A
      16-bit product by the transpose of block-quantized weights
      (`kiln.dequantize`, MatMulNBits) takes the dequantize in too, as the
      kernel's first op: the CUDA target reads the packed bytes in a GEMV
      where the rows are few and unpacks them once a run where they are
      many. A matmul with none of these stays a plain matmul (a cuBLASLt
      call as well);
    - the ops with the Reduction trait (reduce ops, arg ops, softmax,
      log_softmax, layer_norm, rms_norm, cumsum) become a `reduction`
      kernel together with their prologue (producers of the reduced input
      with no other use: elementwise ops and data movement, such as the
      embedding gathers summed before BERT's first LayerNorm; a norm's
      scale and shift too, such as a 16-bit weight widened for an fp32
      norm) and epilogue (single-use elementwise consumers with the
      result's shape). A norm's input computed by an elementwise op that
      later ops read too (a pre-norm decoder's residual sum) joins as the
      kernel's second result, written in its first pass over the row;
    - a chain of elementwise ops whose intermediate values have no other use
      becomes one `elementwise` kernel, together with the data movement
      (reshape, transpose, slice, expand, concat, gather, gather_elements)
      and the `kiln.dequantize` that feed it alone, at any shape: the kernel
      reads through them at a remapped index. An elementwise producer joins only where its users
      read it at its own shape (not broadcast, which would compute it again
      per element read), except one of one element: such one-element
      arithmetic and data movement (a dynamic quantization's scale and zero
      point) is copied into each elementwise kernel that reads it, a few
      flops an element for a launch, and kept as a kernel of its own only
      for readers already in other kernels (a GEMM's scale operand);
    - a data-movement op left over roots such a group too (an `elementwise`
      kernel with its producers), or alone a `copy` kernel; top_k is a
      `sort` kernel;
    - a `kiln.update_slice` (kiln-cache-in-place) roots an `elementwise`
      kernel with the producers of its update that feed it alone: the
      kernel writes the update's rows into the destination's storage. Two
      updates that write alike (one shape, axis, offset and starts: a
      decoder layer's key and value caches) share one kernel with two
      results, placed at the later one, where the earlier is read only
      after it. Such a kernel that reads a 16-bit product of
      block-quantized weights (a decoder's QKV projection, its key rotated
      on the way) joins that product's `gemm` kernel, which yields the
      updates after the product (`cache_update`) and is placed at the
      update, where the product's other readers come after it: the packed
      GEMV writes the update in its last block (`gemm-cache-update=false`
      keeps the update's kernel);
    Reshapes outside any group and constants stay outside: they are views
    and weights.

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
  let options = [
    Option<"gemmNorm", "gemm-norm", "bool", /*default=*/"true",
           "end a 16-bit GEMM kernel's epilogue with the LayerNorm or "
           "RMSNorm of each row (false: the norm keeps its row kernel, to "
           "time the two against each other)">,
    Option<"gemmCacheUpdate", "gemm-cache-update", "bool", /*default=*/"true",
           "merge a cache update that reads a 16-bit product of "
           "block-quantized weights into the product's GEMM kernel (false: "
           "the update keeps its kernel, to time the two against each "
           "other)">
  ];
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

    With symbolic dims (`#kiln.dims`, ranges in `kiln.dim_ranges`) every
    buffer is sized at the top of its dims' ranges, so one plan serves every
    shape; the function also gets `kiln.live_peak_bytes`, the bytes live at
    the step where most are live, as a formula of the dims. A symbolic dim
    without a range is an error.

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

//===----------------------------------------------------------------------===//
// Debugging
//===----------------------------------------------------------------------===//

def KilnExposeTensorsPass : Pass<"kiln-expose-tensors", "mlir::func::FuncOp"> {
  let summary = "Return every named tensor in memory, for a per-layer comparison";
  let description = [{
    Appends to the function's results each value that carries an ONNX tensor
    name (`kiln.tensors`, recorded by the importer when asked) and has
    storage of its own: the results of matmuls and other top-level ops, and
    what a `kiln.kernel` yields (named after the op inside that computes it).
    Values inside a kernel body never reach memory and are not exposed; nor
    are constants, reshapes (views of a tensor that is exposed already),
    values the function returns already, or a second value of the same name.
    Each new result is named after its tensor (`kiln.name`).

    `kiln-run --per-layer` runs it after kiln-fuse, so that the kernels are
    the ones of a normal build, and on the imported IR for the reference.
    The new outputs are never overwritten, so memory planning gives each its
    own storage and the arena grows; this is a debugging build.

    Before:
    ```mlir
    %0 = kiln.matmul %x, %w {kiln.tensors = ["mm"]} ...
    %1 = kiln.kernel elementwise (%0) ... {
      %r = kiln.relu %a {kiln.tensors = ["act"]} ...
      kiln.yield %r ...
    }
    return %1
    ```
    After:
    ```mlir
    return %1, %0 ...  // the second result named "mm"
    ```
  }];
  let dependentDialects = ["kiln::KilnDialect"];
}

#endif // KILN_TRANSFORMS_PASSES_TD
