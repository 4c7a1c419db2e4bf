// RUN: rm -rf %t && split-file %s %t
// RUN: kiln-opt %t/products.mlir -kiln-quantize-weights="bits=4 block-size=32" | FileCheck %s --check-prefix=INT4
// RUN: kiln-opt %t/products.mlir -kiln-quantize-weights="bits=8 block-size=16" | FileCheck %s --check-prefix=INT8
// RUN: kiln-opt %t/products.mlir -kiln-quantize-weights="float8=true" | FileCheck %s --check-prefix=FP8

// A K x N weight (transposed at compile time to MatMulNBits' N x K) and an
// N x K one; K = 40 leaves the last block of 32 part padding. (Blob names
// are numbered per function, and the functions here run in parallel: the
// second to claim quantized0 gets quantized0_1.)
// INT4-LABEL: func @products
// INT4: %[[Q:.*]] = kiln.constant dense_resource<quantized0{{(_[0-9]+)?}}> : tensor<6x2x16xui8>
// INT4: %[[S:.*]] = kiln.constant dense<{{.*}}> : tensor<6x2xf32>
// INT4: %[[W:.*]] = kiln.dequantize %[[Q]], %[[S]] {bits = 4 : i64, block_size = 32 : i64, kiln.quantization_error = {{.*}} : f64} : (tensor<6x2x16xui8>, tensor<6x2xf32>) -> tensor<6x40xf32>
// INT4: kiln.matmul %arg0, %[[W]] {transpose_rhs = true} : (tensor<3x40xf32>, tensor<6x40xf32>) -> tensor<3x6xf32>
// INT4: kiln.dequantize {{.*}} : (tensor<5x2x16xui8>, tensor<5x2xf16>) -> tensor<5x40xf16>
// INT4: kiln.matmul %arg1, %{{.*}} {transpose_rhs = true} : (tensor<3x40xf16>, tensor<5x40xf16>) -> tensor<3x5xf16>
// INT8: kiln.dequantize {{.*}} {bits = 8 : i64, block_size = 16 : i64, {{.*}}} : (tensor<6x3x16xui8>, tensor<6x3xf32>) -> tensor<6x40xf32>
// float8: one block a column, K = 40 padded to 48 (whole 16-byte chunks);
// the weights come back exactly (each its column's largest, 448 times its
// scale).
// FP8-LABEL: func @products
// FP8: %[[Q:.*]] = kiln.constant dense_resource<quantized0{{(_[0-9]+)?}}> : tensor<6x1x48xf8E4M3FN>
// FP8: kiln.dequantize %[[Q]], %{{.*}} {bits = 8 : i64, block_size = 48 : i64, kiln.quantization_error = 0.000000e+00 : f64} : (tensor<6x1x48xf8E4M3FN>, tensor<6x1xf32>) -> tensor<6x40xf32>
// FP8: kiln.dequantize {{.*}} : (tensor<5x1x48xf8E4M3FN>, tensor<5x1xf16>) -> tensor<5x40xf16>

// negative_: products by activations (attention's scores), by a transposed
// left operand, and by weights shorter than one block are left as they
// are.
// INT4-LABEL: func @negative_not_weights
// INT4-NOT: kiln.dequantize
// INT4: kiln.matmul %arg0, %arg1
// INT4: kiln.matmul %arg0, %{{.*}} {transpose_lhs = true}
// INT4: kiln.matmul %arg2, %{{.*}} :
// INT4-NOT: kiln.dequantize

// Weights that are whole multiples of each block's scale (a magnitude of
// 7/8 in each block of 32: the scale 1/8) come back exactly, so the
// pipeline with --weights int4 keeps the product's value.
// RUN: kiln-run %t/exact.mlir --weights int4 --compare-pipeline --seed 3 | FileCheck %s --check-prefix=EXACT
// EXACT: pipeline keeps semantics
// The same weights over their float8 scale (7/8 over 448) are multiples of
// 64 up to 448, all E4M3FN values.
// RUN: kiln-run %t/exact.mlir --weights fp8 --compare-pipeline --seed 3 | FileCheck %s --check-prefix=EXACT

// compute-type: the scales rounded to the type kiln-mixed-precision will
// give the products (the pipeline runs this pass before it). 0.3 / 7 is
// 0.042857144 in f32 (the weights come back exactly) and 0.0428466797 in
// f16 (7 of them are 0.29993, an error the report shows), and the f32
// weights are rounded against the f16 scale. The conversion after keeps
// it exactly.
// RUN: kiln-opt %t/scales.mlir -kiln-quantize-weights | FileCheck %s --check-prefix=OWN
// OWN: kiln.constant dense<0.042857144> : tensor<6x2xf32>
// OWN: kiln.quantization_error = 0.000000e+00
// RUN: kiln-opt %t/scales.mlir -kiln-quantize-weights="compute-type=f16" | FileCheck %s --check-prefix=HALF
// HALF: kiln.constant dense<0.0428466797> : tensor<6x2xf32>
// RUN: kiln-opt %t/scales.mlir -kiln-quantize-weights="compute-type=f16" -kiln-mixed-precision="precision=fp16" | FileCheck %s --check-prefix=CONVERTED
// CONVERTED: kiln.constant dense<4.284670e-02> : tensor<6x2xf16>
// CONVERTED: kiln.dequantize {{.*}} : (tensor<6x2x16xui8>, tensor<6x2xf16>) -> tensor<6x40xf16>
// RUN: kiln-opt %t/scales.mlir -kiln-quantize-weights="compute-type=bf16" | FileCheck %s --check-prefix=BRAIN
// BRAIN: kiln.constant dense<0.04296875> : tensor<6x2xf32>
// RUN: not kiln-opt %t/scales.mlir -kiln-quantize-weights="compute-type=f64" 2>&1 | FileCheck %s --check-prefix=TYPE
// TYPE: error: kiln-quantize-weights: compute-type must be f16 or bf16, got f64

// RUN: not kiln-opt %t/products.mlir -kiln-quantize-weights="bits=3" 2>&1 | FileCheck %s --check-prefix=BITS
// BITS: error: kiln-quantize-weights: bits must be 4 or 8, got 3
// RUN: not kiln-opt %t/products.mlir -kiln-quantize-weights="block-size=24" 2>&1 | FileCheck %s --check-prefix=BLOCK
// BLOCK: error: kiln-quantize-weights: block-size must be a power of two of at least 16, got 24

//--- products.mlir
func.func @products(%a: tensor<3x40xf32>, %h: tensor<3x40xf16>) -> (tensor<3x6xf32>, tensor<3x5xf16>) {
  %w = kiln.constant dense<0.25> : tensor<40x6xf32>
  %y = kiln.matmul %a, %w : (tensor<3x40xf32>, tensor<40x6xf32>) -> tensor<3x6xf32>
  %v = kiln.constant dense<-0.5> : tensor<5x40xf16>
  %z = kiln.matmul %h, %v {transpose_rhs = true} : (tensor<3x40xf16>, tensor<5x40xf16>) -> tensor<3x5xf16>
  return %y, %z : tensor<3x6xf32>, tensor<3x5xf16>
}

func.func @negative_not_weights(%a: tensor<3x40xf32>, %b: tensor<40x6xf32>, %c: tensor<3x8xf32>) -> (tensor<3x6xf32>, tensor<40x6xf32>, tensor<3x6xf32>) {
  %y = kiln.matmul %a, %b : (tensor<3x40xf32>, tensor<40x6xf32>) -> tensor<3x6xf32>
  %w = kiln.constant dense<0.25> : tensor<3x6xf32>
  %t = kiln.matmul %a, %w {transpose_lhs = true} : (tensor<3x40xf32>, tensor<3x6xf32>) -> tensor<40x6xf32>
  %s = kiln.constant dense<0.5> : tensor<8x6xf32>
  %u = kiln.matmul %c, %s : (tensor<3x8xf32>, tensor<8x6xf32>) -> tensor<3x6xf32>
  return %y, %t, %u : tensor<3x6xf32>, tensor<40x6xf32>, tensor<3x6xf32>
}

//--- scales.mlir
func.func @scales(%a: tensor<3x40xf32>) -> tensor<3x6xf32> {
  %w = kiln.constant dense<0.3> : tensor<40x6xf32>
  %y = kiln.matmul %a, %w : (tensor<3x40xf32>, tensor<40x6xf32>) -> tensor<3x6xf32>
  return %y : tensor<3x6xf32>
}

//--- exact.mlir
func.func @main(%a: tensor<2x64xf32>) -> tensor<2x4xf32> {
  %w = kiln.constant dense<[
    [0.875, -0.5, 0.25, 0.0], [-0.125, 0.875, -0.875, 0.375],
    [0.5, 0.125, 0.625, -0.75], [-0.25, -0.375, 0.0, 0.875],
    [0.875, -0.5, 0.25, 0.0], [-0.125, 0.875, -0.875, 0.375],
    [0.5, 0.125, 0.625, -0.75], [-0.25, -0.375, 0.0, 0.875],
    [0.875, -0.5, 0.25, 0.0], [-0.125, 0.875, -0.875, 0.375],
    [0.5, 0.125, 0.625, -0.75], [-0.25, -0.375, 0.0, 0.875],
    [0.875, -0.5, 0.25, 0.0], [-0.125, 0.875, -0.875, 0.375],
    [0.5, 0.125, 0.625, -0.75], [-0.25, -0.375, 0.0, 0.875],
    [0.875, -0.5, 0.25, 0.0], [-0.125, 0.875, -0.875, 0.375],
    [0.5, 0.125, 0.625, -0.75], [-0.25, -0.375, 0.0, 0.875],
    [0.875, -0.5, 0.25, 0.0], [-0.125, 0.875, -0.875, 0.375],
    [0.5, 0.125, 0.625, -0.75], [-0.25, -0.375, 0.0, 0.875],
    [0.875, -0.5, 0.25, 0.0], [-0.125, 0.875, -0.875, 0.375],
    [0.5, 0.125, 0.625, -0.75], [-0.25, -0.375, 0.0, 0.875],
    [0.875, -0.5, 0.25, 0.0], [-0.125, 0.875, -0.875, 0.375],
    [0.5, 0.125, 0.625, -0.75], [-0.25, -0.375, 0.0, 0.875],
    [0.875, -0.5, 0.25, 0.0], [-0.125, 0.875, -0.875, 0.375],
    [0.5, 0.125, 0.625, -0.75], [-0.25, -0.375, 0.0, 0.875],
    [0.875, -0.5, 0.25, 0.0], [-0.125, 0.875, -0.875, 0.375],
    [0.5, 0.125, 0.625, -0.75], [-0.25, -0.375, 0.0, 0.875],
    [0.875, -0.5, 0.25, 0.0], [-0.125, 0.875, -0.875, 0.375],
    [0.5, 0.125, 0.625, -0.75], [-0.25, -0.375, 0.0, 0.875],
    [0.875, -0.5, 0.25, 0.0], [-0.125, 0.875, -0.875, 0.375],
    [0.5, 0.125, 0.625, -0.75], [-0.25, -0.375, 0.0, 0.875],
    [0.875, -0.5, 0.25, 0.0], [-0.125, 0.875, -0.875, 0.375],
    [0.5, 0.125, 0.625, -0.75], [-0.25, -0.375, 0.0, 0.875],
    [0.875, -0.5, 0.25, 0.0], [-0.125, 0.875, -0.875, 0.375],
    [0.5, 0.125, 0.625, -0.75], [-0.25, -0.375, 0.0, 0.875],
    [0.875, -0.5, 0.25, 0.0], [-0.125, 0.875, -0.875, 0.375],
    [0.5, 0.125, 0.625, -0.75], [-0.25, -0.375, 0.0, 0.875],
    [0.875, -0.5, 0.25, 0.0], [-0.125, 0.875, -0.875, 0.375],
    [0.5, 0.125, 0.625, -0.75], [-0.25, -0.375, 0.0, 0.875]]> : tensor<64x4xf32>
  %y = kiln.matmul %a, %w : (tensor<2x64xf32>, tensor<64x4xf32>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}
