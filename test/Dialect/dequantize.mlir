// kiln.dequantize: block-quantized weights (MatMulNBits' packing) read as
// floats. Round trip, the reference interpreter against itself across the
// pipeline, the generated kernels on the host backend against it (bit for
// bit: one rounding of an exact fp32 value), and every malformed form
// refused by the verifier.
// RUN: rm -rf %t && split-file %s %t
// RUN: kiln-opt %t/forms.mlir | kiln-opt | FileCheck %s --check-prefix=ROUND
// ROUND: kiln.dequantize %{{.*}}, %{{.*}}, %{{.*}} {bits = 4 : i64, block_size = 16 : i64} : (tensor<5x3x8xui8>, tensor<5x3xf16>, tensor<5x2xui8>) -> tensor<5x40xf16>
// ROUND: kiln.dequantize %{{.*}}, %{{.*}}, %{{.*}} {bits = 2 : i64, block_size = 64 : i64} : (tensor<4x2x16xui8>, tensor<4x2xbf16>, tensor<4x2xbf16>) -> tensor<4x100xbf16>
// ROUND: kiln.dequantize %{{.*}}, %{{.*}} {bits = 8 : i64, block_size = 32 : i64} : (tensor<3x2x32xui8>, tensor<3x2xf32>) -> tensor<3x33xf32>
// ROUND: kiln.dequantize %{{.*}}, %{{.*}} {bits = 8 : i64, block_size = 16 : i64} : (tensor<3x2x16xf8E4M3FN>, tensor<3x2xf16>) -> tensor<3x20xf16>
// RUN: kiln-run %t/forms.mlir --compare-pipeline --seed 3 | FileCheck %s --check-prefix=SEM
// SEM: pipeline keeps semantics
// RUN: env KILN_CACHE_DIR=%t/cache kiln-run %t/forms.mlir --backend host --check --compare-reference --seed 4 | FileCheck %s --check-prefix=HOST
// HOST-COUNT-4: compare output{{[0-3]}}: max_abs 0.000e+00
// RUN: kiln-opt %t/negative_forms.mlir -split-input-file -verify-diagnostics

//--- forms.mlir
// 4 bits with packed zero points and a last block of 8 (K = 40); 2 bits
// with bf16 zero points, blocks of 64 (K = 100); 8 bits with the default
// zero point, one weight in the last block (K = 33); float8 E4M3FN values
// in blocks of 16 (K = 20).
func.func @main(%q4: tensor<5x3x8xui8>, %s16: tensor<5x3xf16>,
                %z4: tensor<5x2xui8>, %q2: tensor<4x2x16xui8>,
                %sb: tensor<4x2xbf16>, %zb: tensor<4x2xbf16>,
                %q8: tensor<3x2x32xui8>, %s32: tensor<3x2xf32>,
                %f8: tensor<3x2x16xf8E4M3FN>, %s8: tensor<3x2xf16>)
    -> (tensor<5x40xf16>, tensor<4x100xbf16>, tensor<3x33xf32>, tensor<3x20xf16>) {
  %0 = kiln.dequantize %q4, %s16, %z4 {bits = 4 : i64, block_size = 16 : i64} : (tensor<5x3x8xui8>, tensor<5x3xf16>, tensor<5x2xui8>) -> tensor<5x40xf16>
  %1 = kiln.dequantize %q2, %sb, %zb {bits = 2 : i64, block_size = 64 : i64} : (tensor<4x2x16xui8>, tensor<4x2xbf16>, tensor<4x2xbf16>) -> tensor<4x100xbf16>
  %2 = kiln.dequantize %q8, %s32 {bits = 8 : i64, block_size = 32 : i64} : (tensor<3x2x32xui8>, tensor<3x2xf32>) -> tensor<3x33xf32>
  %3 = kiln.dequantize %f8, %s8 {bits = 8 : i64, block_size = 16 : i64} : (tensor<3x2x16xf8E4M3FN>, tensor<3x2xf16>) -> tensor<3x20xf16>
  return %0, %1, %2, %3 : tensor<5x40xf16>, tensor<4x100xbf16>, tensor<3x33xf32>, tensor<3x20xf16>
}

//--- negative_forms.mlir
func.func @bits(%q: tensor<2x1x6xui8>, %s: tensor<2x1xf32>) -> tensor<2x16xf32> {
  // expected-error@+1 {{bits must be 2, 4 or 8, got 3}}
  %0 = kiln.dequantize %q, %s {bits = 3 : i64, block_size = 16 : i64} : (tensor<2x1x6xui8>, tensor<2x1xf32>) -> tensor<2x16xf32>
  return %0 : tensor<2x16xf32>
}

// -----

func.func @partial_byte(%q: tensor<2x1x3xui8>, %s: tensor<2x1xf32>) -> tensor<2x7xf32> {
  // expected-error@+1 {{block_size must fill whole bytes and be at most 2^20, got 7 of 4 bits}}
  %0 = kiln.dequantize %q, %s {bits = 4 : i64, block_size = 7 : i64} : (tensor<2x1x3xui8>, tensor<2x1xf32>) -> tensor<2x7xf32>
  return %0 : tensor<2x7xf32>
}

// -----

func.func @short_bytes(%q: tensor<2x2x4xui8>, %s: tensor<2x2xf32>) -> tensor<2x32xf32> {
  // expected-error@+1 {{packed blocks must be block_size * bits / 8 = 8 bytes, got 4}}
  %0 = kiln.dequantize %q, %s {bits = 4 : i64, block_size = 16 : i64} : (tensor<2x2x4xui8>, tensor<2x2xf32>) -> tensor<2x32xf32>
  return %0 : tensor<2x32xf32>
}

// -----

func.func @empty_block(%q: tensor<2x3x8xui8>, %s: tensor<2x3xf32>) -> tensor<2x32xf32> {
  // expected-error@+1 {{must have the packed weights' 2 rows and a K that leaves the last of its 3 blocks of 16 not empty}}
  %0 = kiln.dequantize %q, %s {bits = 4 : i64, block_size = 16 : i64} : (tensor<2x3x8xui8>, tensor<2x3xf32>) -> tensor<2x32xf32>
  return %0 : tensor<2x32xf32>
}

// -----

func.func @scales_shape(%q: tensor<2x2x8xui8>, %s: tensor<2x3xf32>) -> tensor<2x32xf32> {
  // expected-error@+1 {{scales must be 2x2 of 'f32', got 'tensor<2x3xf32>'}}
  %0 = kiln.dequantize %q, %s {bits = 4 : i64, block_size = 16 : i64} : (tensor<2x2x8xui8>, tensor<2x3xf32>) -> tensor<2x32xf32>
  return %0 : tensor<2x32xf32>
}

// -----

func.func @scales_type(%q: tensor<2x2x8xui8>, %s: tensor<2x2xf16>) -> tensor<2x32xf32> {
  // expected-error@+1 {{scales must be 2x2 of 'f32', got 'tensor<2x2xf16>'}}
  %0 = kiln.dequantize %q, %s {bits = 4 : i64, block_size = 16 : i64} : (tensor<2x2x8xui8>, tensor<2x2xf16>) -> tensor<2x32xf32>
  return %0 : tensor<2x32xf32>
}

// -----

func.func @zero_type(%q: tensor<2x2x8xui8>, %s: tensor<2x2xf32>, %z: tensor<2x1xi8>) -> tensor<2x32xf32> {
  // expected-error@+1 {{packed zero points must be 2x1 of 'ui8', got 'tensor<2x1xi8>'}}
  %0 = kiln.dequantize %q, %s, %z {bits = 4 : i64, block_size = 16 : i64} : (tensor<2x2x8xui8>, tensor<2x2xf32>, tensor<2x1xi8>) -> tensor<2x32xf32>
  return %0 : tensor<2x32xf32>
}

// -----

func.func @zero_bytes(%q: tensor<2x3x8xui8>, %s: tensor<2x3xf32>, %z: tensor<2x1xui8>) -> tensor<2x40xf32> {
  // expected-error@+1 {{packed zero points must be 2x2 of 'ui8', got 'tensor<2x1xui8>'}}
  %0 = kiln.dequantize %q, %s, %z {bits = 4 : i64, block_size = 16 : i64} : (tensor<2x3x8xui8>, tensor<2x3xf32>, tensor<2x1xui8>) -> tensor<2x40xf32>
  return %0 : tensor<2x40xf32>
}

// -----

func.func @float_zero_shape(%q: tensor<2x2x8xui8>, %s: tensor<2x2xf32>, %z: tensor<2x1xf32>) -> tensor<2x32xf32> {
  // expected-error@+1 {{float zero points must be 2x2 of 'f32', got 'tensor<2x1xf32>'}}
  %0 = kiln.dequantize %q, %s, %z {bits = 4 : i64, block_size = 16 : i64} : (tensor<2x2x8xui8>, tensor<2x2xf32>, tensor<2x1xf32>) -> tensor<2x32xf32>
  return %0 : tensor<2x32xf32>
}

// -----

func.func @f64(%q: tensor<2x2x8xui8>, %s: tensor<2x2xf64>) -> tensor<2x32xf64> {
  // expected-error@+1 {{result must be f32, f16 or bf16, got 'f64'}}
  %0 = kiln.dequantize %q, %s {bits = 4 : i64, block_size = 16 : i64} : (tensor<2x2x8xui8>, tensor<2x2xf64>) -> tensor<2x32xf64>
  return %0 : tensor<2x32xf64>
}

// -----

func.func @dynamic(%q: tensor<?x2x8xui8>, %s: tensor<2x2xf32>) -> tensor<2x32xf32> {
  // expected-error@+1 {{expects packed weights [rows, blocks, bytes] and a result [rows, K] of static shapes}}
  %0 = kiln.dequantize %q, %s {bits = 4 : i64, block_size = 16 : i64} : (tensor<?x2x8xui8>, tensor<2x2xf32>) -> tensor<2x32xf32>
  return %0 : tensor<2x32xf32>
}

// -----

func.func @float8_bits(%q: tensor<2x1x8xf8E4M3FN>, %s: tensor<2x1xf32>) -> tensor<2x16xf32> {
  // expected-error@+1 {{float8 weights take bits = 8 and no zero points}}
  %0 = kiln.dequantize %q, %s {bits = 4 : i64, block_size = 16 : i64} : (tensor<2x1x8xf8E4M3FN>, tensor<2x1xf32>) -> tensor<2x16xf32>
  return %0 : tensor<2x16xf32>
}

// -----

func.func @float8_zero_points(%q: tensor<2x1x16xf8E4M3FN>, %s: tensor<2x1xf32>, %z: tensor<2x1xf32>) -> tensor<2x16xf32> {
  // expected-error@+1 {{float8 weights take bits = 8 and no zero points}}
  %0 = kiln.dequantize %q, %s, %z {bits = 8 : i64, block_size = 16 : i64} : (tensor<2x1x16xf8E4M3FN>, tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x16xf32>
  return %0 : tensor<2x16xf32>
}

// -----

func.func @float8_e5m2(%q: tensor<2x1x16xf8E5M2>, %s: tensor<2x1xf32>) -> tensor<2x16xf32> {
  // expected-error@+1 {{operand #0 must be ranked tensor of 8-bit unsigned integer or f8E4M3FN type values}}
  %0 = kiln.dequantize %q, %s {bits = 8 : i64, block_size = 16 : i64} : (tensor<2x1x16xf8E5M2>, tensor<2x1xf32>) -> tensor<2x16xf32>
  return %0 : tensor<2x16xf32>
}
