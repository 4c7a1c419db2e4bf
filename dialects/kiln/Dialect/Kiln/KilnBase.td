//===- KilnBase.td - the kiln dialect and its type constraints -*- tablegen -*-===//
//
// The `kiln` dialect holds ONNX semantics in a normalized form: attributes typed
// and explicit, optional inputs resolved, broadcasting checked by verifiers.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_KILN_KILNBASE_TD
#define KILN_DIALECT_KILN_KILNBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/TensorEncoding.td"

def Kiln_Dialect : Dialect {
  let name = "kiln";
  let summary = "Tensor-level ops for compiling ONNX Transformer models";
  let description = [{
    Ops on ranked tensors with ONNX semantics normalized: every attribute is
    explicit and typed, optional inputs are resolved, and broadcasting is checked
    by the verifiers. Element types are f64, f32, f16, bf16, the signless
    integers i64, i32, i16, i8, the unsigned ui64, ui32, ui16, ui8, and i1. Shape inference lives in one free function per op, shared by
    the verifier, the builders and the ONNX importer. `kiln.kernel` holds one fused
    group of ops that the CUDA target turns into one launch.
  }];
  let cppNamespace = "::kiln";
  let useDefaultAttributePrinterParser = 1;
  let hasConstantMaterializer = 1;
}

/// Element types Kiln computes with. Signed integers are signless (i8, i32),
/// as in MLIR's own dialects; ONNX's unsigned integers keep MLIR's unsigned
/// types (ui8 ... ui64), so that ops know to compare, divide and convert
/// them as unsigned.
def Kiln_FloatType : AnyTypeOf<[F64, F32, F16, BF16]>;
def Kiln_IntegerType
    : AnyTypeOf<[I64, I32, I16, I8, UI64, UI32, UI16, UI8]>;
/// Element types Kiln stores, casts and moves but does not compute with:
/// 4-bit integers (one a byte, int4 sign-extended) and float8, which
/// QuantizeLinear writes and DequantizeLinear reads.
def Kiln_StorageOnlyType : AnyTypeOf<[I<4>, UI<4>, F8E4M3FN, F8E5M2]>;
def Kiln_ElementType
    : AnyTypeOf<[Kiln_FloatType, Kiln_IntegerType, I1, Kiln_StorageOnlyType]>;
def Kiln_Tensor : RankedTensorOf<[Kiln_ElementType]>;
def Kiln_FloatTensor : RankedTensorOf<[Kiln_FloatType]>;
def Kiln_NumericTensor : RankedTensorOf<[Kiln_FloatType, Kiln_IntegerType]>;
def Kiln_BoolTensor : RankedTensorOf<[I1]>;

/// What a `kiln.kernel` computes; picks the CUDA code generator.
def Kiln_KernelKind : I32EnumAttr<"KernelKind", "the code generator of a kernel", [
    I32EnumAttrCase<"elementwise", 0>,
    I32EnumAttrCase<"reduction", 1>,
    I32EnumAttrCase<"gemm", 2>,
    I32EnumAttrCase<"attention", 3>,
    I32EnumAttrCase<"copy", 4>,
    I32EnumAttrCase<"sort", 5>
  ]> {
  let cppNamespace = "::kiln";
  let genSpecializedAttr = 0;
}
def Kiln_KernelKindAttr : EnumAttr<Kiln_Dialect, Kiln_KernelKind, "kernel_kind">;

/// How `kiln.gelu` evaluates the Gaussian CDF (ONNX Gelu's `approximate`).
def Kiln_GeluApproximation : I32EnumAttr<"GeluApproximation",
    "the form of the Gaussian CDF in kiln.gelu", [
    I32EnumAttrCase<"none", 0>,
    I32EnumAttrCase<"tanh", 1>
  ]> {
  let cppNamespace = "::kiln";
}

/// The activation a GEMM kernel's epilogue applies last.
def Kiln_GemmActivation : I32EnumAttr<"GemmActivation",
    "the activation of a GEMM kernel's epilogue", [
    I32EnumAttrCase<"none", 0>,
    I32EnumAttrCase<"relu", 1>,
    I32EnumAttrCase<"gelu", 2>
  ]> {
  let cppNamespace = "::kiln";
  let genSpecializedAttr = 0;
}

/// What a GEMM kernel computes after its matmul, as kiln-fuse matched it.
def Kiln_GemmEpilogueAttr : AttrDef<Kiln_Dialect, "GemmEpilogue"> {
  let mnemonic = "gemm_epilogue";
  let summary = "what a GEMM kernel computes after its matmul";
  let description = [{
    kiln-fuse matches a GEMM kernel's epilogue once and records it on the
    kernel; the CUDA target reads it (one cuBLASLt call with that epilogue),
    and the kernel's verifier checks that the body holds these ops in this
    order: the matmul, the add of `bias` (the kernel input, by number, added
    to every row), the add of `residual` (a kernel input of the result's
    shape: cuBLASLt's C with beta = 1), then `activation`, with reshapes
    (views) between them, then a `kiln.layer_norm` or `kiln.rms_norm` of
    each row whose scale is input `norm_scale` and whose shift is input
    `norm_shift` (none for `kiln.rms_norm`), and last maybe a `kiln.cast` of
    a 16-bit result to f32 (the step stores it widened). An absent input is
    -1. With `tail` (a GEMM of 8-bit activations only), elementwise ops and
    reshapes follow that each read the chain at their own element (an
    operand of the chain has the op's shape) and the kernel's inputs: the
    requantization of the 8-bit GEMM's result and what else of each element
    follows it, computed where the element is stored; with a norm too, the
    tail's end is followed by its `kiln.layer_norm` or `kiln.rms_norm` of
    each row (by `norm_scale` and `norm_shift`) and elementwise ops that
    read the norm's result at their own element (a Q/DQ BERT's LayerNorm
    and its requantization). With `prologue` (a
    product of block-quantized weights only), the matmul's left operand is
    computed in the kernel, before the matmul: elementwise ops and data
    movement other than gathers, of the kernel's inputs, which nothing but
    the product reads (a decoder's SwiGLU before its down projection, which
    the packed GEMV computes where each block reads it). The
    kernel yields the end of that chain; with a norm it may also yield, as
    its second result, the value the norm reads: BERT's post-norm residual
    blocks yield the norm alone, a pre-norm decoder's (GPT-2's LayerNorm,
    LLaMA's RMSNorm) also the residual sum that later layers add to. With
    `wide_norm` (a 16-bit product of block-quantized weights), the residual
    add and the norm are f32, as onnxruntime's SkipLayerNormalization and
    SkipSimplifiedLayerNormalization compute them: after the product (and
    its bias) come its cast to f32, the cast of `residual` to f32 and their
    add, the casts of `norm_scale` and `norm_shift` to f32, the norm of the
    sum, and the norm's cast back to the product's type; the second result,
    where there is one, is the sum's cast to that type. With
    `cache_update` (a product of block-quantized weights with neither norm
    nor tail), elementwise ops and data movement after the chain's end, of
    it and the kernel's inputs, compute one or two `kiln.update_slice` that
    write alike (a decoder's rotary embedding of its new keys and the writes
    of its keys and values into their caches, from its QKV projection); the
    kernel yields them after the chain's end, and the packed GEMV's last
    block writes them.

    ```mlir
    %y = kiln.kernel gemm(%x, %w, %b) {epilogue = #kiln.gemm_epilogue<bias = 2, activation = gelu>} ...
    ```
  }];
  let parameters = (ins
    DefaultValuedParameter<"int64_t", "-1">:$bias,
    DefaultValuedParameter<"int64_t", "-1">:$residual,
    DefaultValuedParameter<"::kiln::GemmActivation",
                           "::kiln::GemmActivation::none">:$activation,
    DefaultValuedParameter<"int64_t", "-1">:$norm_scale,
    DefaultValuedParameter<"int64_t", "-1">:$norm_shift,
    DefaultValuedParameter<"bool", "false">:$tail,
    DefaultValuedParameter<"bool", "false">:$prologue,
    DefaultValuedParameter<"bool", "false">:$wide_norm,
    DefaultValuedParameter<"bool", "false">:$cache_update);
  let assemblyFormat = "`<` struct(params) `>`";
}

/// The sizes of a tensor type's dynamic dims, as the tensor type's encoding.
def Kiln_DimsAttr : AttrDef<Kiln_Dialect, "Dims",
    [DeclareAttrInterfaceMethods<VerifiableTensorEncoding>]> {
  let mnemonic = "dims";
  let summary = "the symbolic size of each dynamic dim of a tensor type";
  let description = [{
    A model's inputs name their dynamic dims (`batch`, `sequence`); every
    size computed from them is a polynomial over those names (see
    DimExpr.h). A tensor type with dynamic dims carries one such size per
    `?`, in order, in canonical text, so that two values of equal symbolic
    shape have equal types:

    ```mlir
    tensor<?x?x768xf32, #kiln.dims<["batch", "sequence"]>>
    tensor<?x12x64xf32, #kiln.dims<["batch*sequence"]>>
    ```
  }];
  let parameters = (ins "::mlir::ArrayAttr":$sizes);
  let assemblyFormat = "`<` $sizes `>`";
}

class Kiln_Op<string mnemonic, list<Trait> traits = []>
    : Op<Kiln_Dialect, mnemonic, traits>;

#endif // KILN_DIALECT_KILN_KILNBASE_TD
