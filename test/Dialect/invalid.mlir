// RUN: kiln-opt %s -split-input-file -verify-diagnostics

func.func @broadcast_mismatch(%a: tensor<2x3xf32>, %b: tensor<4xf32>) -> tensor<2x3xf32> {
  // expected-error@+2 {{shapes 2x3 and 4 do not broadcast at dim 1}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = kiln.add %a, %b : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @element_type_mismatch(%a: tensor<3xf32>, %b: tensor<3xf16>) -> tensor<3xf32> {
  // expected-error@+2 {{expected operands of one element type, got 'f32' and 'f16'}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = kiln.mul %a, %b : (tensor<3xf32>, tensor<3xf16>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @wrong_result(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error@+2 {{inferred type(s) 'tensor<2x3xf32>' are incompatible with return type(s) of operation 'tensor<3xf32>'}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = kiln.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// Elementwise math and comparisons.

func.func @mod_float_without_fmod(%a: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error@+1 {{expected fmod = true for float element type 'f32'}}
  %0 = kiln.mod %a, %b : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @compare_element_types(%a: tensor<3xf32>, %b: tensor<3xf16>) -> tensor<3xi1> {
  // expected-error@+2 {{expected operands of one element type, got 'f32' and 'f16'}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = kiln.less %a, %b : (tensor<3xf32>, tensor<3xf16>) -> tensor<3xi1>
  return %0 : tensor<3xi1>
}

// -----

func.func @compare_result_type(%a: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error@+1 {{result #0 must be ranked tensor of 1-bit signless integer values}}
  %0 = kiln.equal %a, %b : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @where_condition_type(%c: tensor<3xf32>, %a: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error@+1 {{operand #0 must be ranked tensor of 1-bit signless integer values}}
  %0 = kiln.where %c, %a, %a : (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @where_broadcast(%c: tensor<2xi1>, %a: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error@+2 {{shapes 2 and 3 do not broadcast at dim 0}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = kiln.where %c, %a, %a : (tensor<2xi1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @where_value_types(%c: tensor<3xi1>, %a: tensor<3xf32>, %b: tensor<3xi64>) -> tensor<3xf32> {
  // expected-error@+2 {{expected operands of one element type, got 'f32' and 'i64'}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = kiln.where %c, %a, %b : (tensor<3xi1>, tensor<3xf32>, tensor<3xi64>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @logic_on_floats(%a: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error@+1 {{operand #0 must be ranked tensor of 1-bit signless integer values}}
  %0 = kiln.not %a : tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @is_nan_of_integers(%a: tensor<3xi64>) -> tensor<3xi1> {
  // expected-error@+1 {{operand #0 must be ranked tensor of 64-bit float or 32-bit float or 16-bit float or bfloat16 type values}}
  %0 = kiln.is_nan %a : tensor<3xi64> -> tensor<3xi1>
  return %0 : tensor<3xi1>
}

// -----

func.func @matmul_contracting(%a: tensor<4x8xf32>, %b: tensor<7x16xf32>) -> tensor<4x16xf32> {
  // expected-error@+2 {{expected contracting dims to match, got 8 vs 7}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = kiln.matmul %a, %b : (tensor<4x8xf32>, tensor<7x16xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @matmul_rank(%a: tensor<8xf32>, %b: tensor<8x16xf32>) -> tensor<16xf32> {
  // expected-error@+2 {{expected operands of rank >= 2, got 1 and 2}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = kiln.matmul %a, %b : (tensor<8xf32>, tensor<8x16xf32>) -> tensor<16xf32>
  return %0 : tensor<16xf32>
}

// -----

func.func @reshape_count(%a: tensor<2x3xf32>) -> tensor<7xf32> {
  // expected-error@+1 {{cannot reshape 6 elements (2x3) into 7 (7)}}
  %0 = kiln.reshape %a : tensor<2x3xf32> -> tensor<7xf32>
  return %0 : tensor<7xf32>
}

// -----

func.func @transpose_perm(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error@+2 {{invalid permutation entry 0}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = kiln.transpose %a {permutation = array<i64: 0, 0>} : tensor<2x3xf32> -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @negative_softmax_axis(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error@+1 {{axis -1 out of range for rank 2}}
  %0 = kiln.softmax %a {axis = -1 : i64} : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @softmax_axis(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error@+1 {{axis 2 out of range for rank 2}}
  %0 = kiln.softmax %a {axis = 2 : i64} : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @reduce_axes(%a: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error@+2 {{expected sorted unique axes}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = kiln.reduce_mean %a {axes = array<i64: 1, 1>, keepdims = false} : tensor<2x3xf32> -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @layer_norm_scale(%a: tensor<2x8xf32>, %g: tensor<4xf32>) -> tensor<2x8xf32> {
  // expected-error@+2 {{expected scale of shape 4 to broadcast to the normalized dims 8}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = kiln.layer_norm %a, %g {axis = 1 : i64, epsilon = 1.0e-5 : f32} : (tensor<2x8xf32>, tensor<4xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

func.func @rms_norm_scale(%a: tensor<2x8xf32>, %g: tensor<2x8xf32>) -> tensor<2x8xf32> {
  // expected-error@+2 {{expected scale of shape 2x8 to broadcast to the normalized dims 8}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = kiln.rms_norm %a, %g {axis = 1 : i64, epsilon = 1.0e-5 : f32} : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

func.func @rms_norm_axis(%a: tensor<2x8xf32>, %g: tensor<8xf32>) -> tensor<2x8xf32> {
  // expected-error@+2 {{axis 2 out of range for rank 2}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = kiln.rms_norm %a, %g {axis = 2 : i64, epsilon = 1.0e-5 : f32} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

func.func @rms_norm_scale_type(%a: tensor<2x8xf16>, %g: tensor<8xf32>) -> tensor<2x8xf16> {
  // expected-error@+2 {{expected scale of element type 'f16'}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = kiln.rms_norm %a, %g {axis = 1 : i64, epsilon = 1.0e-5 : f32} : (tensor<2x8xf16>, tensor<8xf32>) -> tensor<2x8xf16>
  return %0 : tensor<2x8xf16>
}

// -----

func.func @cast_shape(%a: tensor<2x3xf32>) -> tensor<6xf16> {
  // expected-error@+1 {{expected the same shape}}
  %0 = kiln.cast %a : tensor<2x3xf32> -> tensor<6xf16>
  return %0 : tensor<6xf16>
}

// -----

func.func @kernel_yield(%a: tensor<4xf32>) -> tensor<4xf16> {
  // expected-error@+1 {{expected yielded types to match the results}}
  %0 = kiln.kernel elementwise (%a) : (tensor<4xf32>) -> tensor<4xf16> {
  ^bb0(%x: tensor<4xf32>):
    kiln.yield %x : tensor<4xf32>
  }
  return %0 : tensor<4xf16>
}

// -----

func.func @pow_int(%a: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error@+1 {{operand #0 must be ranked tensor of 64-bit float or 32-bit float or 16-bit float or bfloat16 type values}}
  %0 = kiln.pow %a, %a : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @attention_sink_size(%q: tensor<1x4x2x8xf32>, %k: tensor<1x2x3x8xf32>, %v: tensor<1x2x3x8xf32>) -> tensor<1x4x2x8xf32> {
  // expected-error@+1 {{sink holds 2 logits; expected 1 or one per query head (4)}}
  %0 = kiln.attention %q, %k, %v {scale = 1.0 : f32, sink = array<f32: 0.5, 0.25>} : (tensor<1x4x2x8xf32>, tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>) -> tensor<1x4x2x8xf32>
  return %0 : tensor<1x4x2x8xf32>
}

// -----

func.func @attention_negative_softcap(%q: tensor<1x4x2x8xf32>, %k: tensor<1x2x3x8xf32>, %v: tensor<1x2x3x8xf32>) -> tensor<1x4x2x8xf32> {
  // expected-error@+1 {{softcap must not be negative}}
  %0 = kiln.attention %q, %k, %v {scale = 1.0 : f32, softcap = -2.0 : f32} : (tensor<1x4x2x8xf32>, tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>) -> tensor<1x4x2x8xf32>
  return %0 : tensor<1x4x2x8xf32>
}

// -----

func.func @update_slice_other_dims_differ(%c: tensor<1x2x8x4xf32>, %u: tensor<1x3x1x4xf32>) -> tensor<1x2x8x4xf32> {
  // expected-error@+1 {{update's dim 1 (3) differs from dest's (2)}}
  %0 = kiln.update_slice %c, %u {axis = 2 : i64, offset = "p"} : (tensor<1x2x8x4xf32>, tensor<1x3x1x4xf32>) -> tensor<1x2x8x4xf32>
  return %0 : tensor<1x2x8x4xf32>
}

// -----

func.func @update_slice_outside(%c: tensor<1x8xf32>, %u: tensor<1x2xf32>) -> tensor<1x8xf32> {
  // expected-error@+1 {{writes rows outside dest's dim 1}}
  %0 = kiln.update_slice %c, %u {axis = 1 : i64, offset = "7"} : (tensor<1x8xf32>, tensor<1x2xf32>) -> tensor<1x8xf32>
  return %0 : tensor<1x8xf32>
}

// -----

func.func @update_slice_offset_not_canonical(%c: tensor<1x8xf32>, %u: tensor<1x2xf32>) -> tensor<1x8xf32> {
  // expected-error@+1 {{offset 's+p' is not in canonical form ('p + s')}}
  %0 = kiln.update_slice %c, %u {axis = 1 : i64, offset = "s+p"} : (tensor<1x8xf32>, tensor<1x2xf32>) -> tensor<1x8xf32>
  return %0 : tensor<1x8xf32>
}

// -----

func.func @update_slice_axis(%c: tensor<1x8xf32>, %u: tensor<1x2xf32>) -> tensor<1x8xf32> {
  // expected-error@+1 {{axis 2 is outside rank 2}}
  %0 = kiln.update_slice %c, %u {axis = 2 : i64, offset = "0"} : (tensor<1x8xf32>, tensor<1x2xf32>) -> tensor<1x8xf32>
  return %0 : tensor<1x8xf32>
}

// -----

func.func @gemm_without_epilogue(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  // expected-error@+1 {{of kind gemm needs its epilogue (#kiln.gemm_epilogue, which kiln-fuse records)}}
  %0 = kiln.kernel gemm (%x, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>, %bw: tensor<8x8xf32>):
    %p = kiln.matmul %a, %bw : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %r = kiln.relu %p : tensor<4x8xf32>
    kiln.yield %r : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

// -----

func.func @epilogue_on_elementwise(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error@+1 {{of kind elementwise has a GEMM epilogue}}
  %0 = kiln.kernel elementwise (%x) {epilogue = #kiln.gemm_epilogue<activation = relu>} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    %r = kiln.relu %a : tensor<4x8xf32>
    kiln.yield %r : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

// -----

func.func @gemm_bias_out_of_range(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  // expected-error@+1 {{epilogue bias 5 is not one of its 2 inputs}}
  %0 = kiln.kernel gemm (%x, %w) {epilogue = #kiln.gemm_epilogue<bias = 5>} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>, %bw: tensor<8x8xf32>):
    %p = kiln.matmul %a, %bw : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %r = kiln.relu %p : tensor<4x8xf32>
    kiln.yield %r : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

// -----

func.func @gemm_starts_elsewhere(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  // expected-error@+1 {{of kind gemm must start with kiln.matmul}}
  %0 = kiln.kernel gemm (%x, %w) {epilogue = #kiln.gemm_epilogue<activation = relu>} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>, %bw: tensor<8x8xf32>):
    %r = kiln.relu %a : tensor<4x8xf32>
    kiln.yield %r : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

// -----

func.func @gemm_int8_activations_with_4bit_weights(%x: tensor<4x32xi8>, %q: tensor<8x1x16xui8>, %s: tensor<8x1xf32>, %sa: tensor<f32>) -> tensor<4x8xf32> {
  // expected-error@+1 {{of kind gemm dequantizes 8-bit activations for 8-bit weights of their kind only (integers or float8 E4M3FN)}}
  %0 = kiln.kernel gemm (%x, %q, %s, %sa) {epilogue = #kiln.gemm_epilogue<>} : (tensor<4x32xi8>, tensor<8x1x16xui8>, tensor<8x1xf32>, tensor<f32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x32xi8>, %bq: tensor<8x1x16xui8>, %bs: tensor<8x1xf32>, %as: tensor<f32>):
    %af = kiln.cast %a : tensor<4x32xi8> -> tensor<4x32xf32>
    %ad = kiln.mul %af, %as : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
    %w = kiln.dequantize %bq, %bs {bits = 4 : i64, block_size = 32 : i64} : (tensor<8x1x16xui8>, tensor<8x1xf32>) -> tensor<8x32xf32>
    %p = kiln.matmul %ad, %w {transpose_rhs = true} : (tensor<4x32xf32>, tensor<8x32xf32>) -> tensor<4x8xf32>
    kiln.yield %p : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

// -----

func.func @gemm_float8_activations_with_int8_weights(%x: tensor<4x32xf8E4M3FN>, %q: tensor<8x1x32xui8>, %s: tensor<8x1xf32>, %sa: tensor<f32>) -> tensor<4x8xf32> {
  // expected-error@+1 {{of kind gemm dequantizes 8-bit activations for 8-bit weights of their kind only (integers or float8 E4M3FN)}}
  %0 = kiln.kernel gemm (%x, %q, %s, %sa) {epilogue = #kiln.gemm_epilogue<>} : (tensor<4x32xf8E4M3FN>, tensor<8x1x32xui8>, tensor<8x1xf32>, tensor<f32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x32xf8E4M3FN>, %bq: tensor<8x1x32xui8>, %bs: tensor<8x1xf32>, %as: tensor<f32>):
    %af = kiln.cast %a : tensor<4x32xf8E4M3FN> -> tensor<4x32xf32>
    %ad = kiln.mul %af, %as : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
    %w = kiln.dequantize %bq, %bs {bits = 8 : i64, block_size = 32 : i64} : (tensor<8x1x32xui8>, tensor<8x1xf32>) -> tensor<8x32xf32>
    %p = kiln.matmul %ad, %w {transpose_rhs = true} : (tensor<4x32xf32>, tensor<8x32xf32>) -> tensor<4x8xf32>
    kiln.yield %p : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

// -----

func.func @gemm_int8_activations_without_weights(%x: tensor<4x32xi8>, %w: tensor<32x8xf32>, %sa: tensor<f32>) -> tensor<4x8xf32> {
  // expected-error@+1 {{of kind gemm dequantizes 8-bit activations for 8-bit weights of their kind only (integers or float8 E4M3FN)}}
  %0 = kiln.kernel gemm (%x, %w, %sa) {epilogue = #kiln.gemm_epilogue<>} : (tensor<4x32xi8>, tensor<32x8xf32>, tensor<f32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x32xi8>, %b: tensor<32x8xf32>, %as: tensor<f32>):
    %af = kiln.cast %a : tensor<4x32xi8> -> tensor<4x32xf32>
    %ad = kiln.mul %af, %as : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
    %p = kiln.matmul %ad, %b : (tensor<4x32xf32>, tensor<32x8xf32>) -> tensor<4x8xf32>
    kiln.yield %p : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

// -----

func.func @gemm_dequantized_not_transposed(%x: tensor<4x8xf16>, %q: tensor<8x1x16xui8>, %s: tensor<8x1xf16>) -> tensor<4x32xf16> {
  // expected-error@+1 {{of kind gemm must multiply by the transpose of the weights it dequantizes}}
  %0 = kiln.kernel gemm (%x, %q, %s) {epilogue = #kiln.gemm_epilogue<>} : (tensor<4x8xf16>, tensor<8x1x16xui8>, tensor<8x1xf16>) -> tensor<4x32xf16> {
  ^bb0(%a: tensor<4x8xf16>, %bq: tensor<8x1x16xui8>, %bs: tensor<8x1xf16>):
    %w = kiln.dequantize %bq, %bs {bits = 4 : i64, block_size = 32 : i64} : (tensor<8x1x16xui8>, tensor<8x1xf16>) -> tensor<8x32xf16>
    %p = kiln.matmul %a, %w : (tensor<4x8xf16>, tensor<8x32xf16>) -> tensor<4x32xf16>
    kiln.yield %p : tensor<4x32xf16>
  }
  return %0 : tensor<4x32xf16>
}

// -----

func.func @gemm_epilogue_names_no_exp(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  // expected-error@+1 {{of kind gemm has an op its epilogue does not name: kiln.exp}}
  %0 = kiln.kernel gemm (%x, %w) {epilogue = #kiln.gemm_epilogue<activation = none>} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>, %bw: tensor<8x8xf32>):
    %p = kiln.matmul %a, %bw : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %r = kiln.exp %p : tensor<4x8xf32>
    kiln.yield %r : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

// -----

func.func @gemm_activation_missing(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  // expected-error@+1 {{of kind gemm has no gelu of its product where its epilogue says}}
  %0 = kiln.kernel gemm (%x, %w) {epilogue = #kiln.gemm_epilogue<activation = gelu>} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>, %bw: tensor<8x8xf32>):
    %p = kiln.matmul %a, %bw : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %r = kiln.relu %p : tensor<4x8xf32>
    kiln.yield %r : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

// -----

func.func @gemm_activation_of_another_value(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  // expected-error@+1 {{of kind gemm has no relu of its product where its epilogue says}}
  %0 = kiln.kernel gemm (%x, %w) {epilogue = #kiln.gemm_epilogue<activation = relu>} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>, %bw: tensor<8x8xf32>):
    %p = kiln.matmul %a, %bw : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %r = kiln.relu %a : tensor<4x8xf32>
    kiln.yield %r : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

// -----

func.func @gemm_residual_not_an_input(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  // expected-error@+1 {{of kind gemm has no add of its residual input 1 where its epilogue says}}
  %0 = kiln.kernel gemm (%x, %w) {epilogue = #kiln.gemm_epilogue<residual = 1>} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>, %bw: tensor<8x8xf32>):
    %p = kiln.matmul %a, %bw : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %r = kiln.add %p, %p : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    kiln.yield %r : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

// -----

func.func @gemm_yields_the_product(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  // expected-error@+1 {{of kind gemm must yield the end of its epilogue}}
  %0 = kiln.kernel gemm (%x, %w) {epilogue = #kiln.gemm_epilogue<activation = relu>} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>, %bw: tensor<8x8xf32>):
    %p = kiln.matmul %a, %bw : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %r = kiln.relu %p : tensor<4x8xf32>
    kiln.yield %p : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

// -----

func.func @gemm_bias_not_a_row(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %c: tensor<4x1xf32>) -> tensor<4x8xf32> {
  // expected-error@+1 {{of kind gemm adds a bias of type 'tensor<4x1xf32>' to a product of 'tensor<4x8xf32>'}}
  %0 = kiln.kernel gemm (%x, %w, %c) {epilogue = #kiln.gemm_epilogue<bias = 2>} : (tensor<4x8xf32>, tensor<8x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>, %bw: tensor<8x8xf32>, %bias: tensor<4x1xf32>):
    %p = kiln.matmul %a, %bw : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %r = kiln.add %p, %bias : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
    kiln.yield %r : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

// -----

func.func @check_range_bound_type(%x: tensor<4xi64>, %lo: tensor<i32>, %hi: tensor<i64>) -> tensor<4xi64> {
  // expected-error@+1 {{low has element type 'i32', expected 'i64'}}
  %0 = kiln.check_range %x, %lo, %hi {what = "x"} : (tensor<4xi64>, tensor<i32>, tensor<i64>) -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

func.func @check_range_bound_broadcasts_beyond(%x: tensor<4xi64>, %lo: tensor<i64>, %hi: tensor<2x4xi64>) -> tensor<4xi64> {
  // expected-error@+1 {{high of type 'tensor<2x4xi64>' broadcasts beyond the input 'tensor<4xi64>'}}
  %0 = kiln.check_range %x, %lo, %hi {what = "x"} : (tensor<4xi64>, tensor<i64>, tensor<2x4xi64>) -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

func.func @gemm_norm_missing(%x: tensor<4x8xf16>, %w: tensor<8x8xf16>, %g: tensor<8xf16>) -> tensor<4x8xf16> {
  // expected-error@+1 {{of kind gemm has no layer_norm or rms_norm of its product by its norm inputs where its epilogue says}}
  %0 = kiln.kernel gemm (%x, %w, %g) {epilogue = #kiln.gemm_epilogue<norm_scale = 2>} : (tensor<4x8xf16>, tensor<8x8xf16>, tensor<8xf16>) -> tensor<4x8xf16> {
  ^bb0(%a: tensor<4x8xf16>, %bw: tensor<8x8xf16>, %s: tensor<8xf16>):
    %p = kiln.matmul %a, %bw : (tensor<4x8xf16>, tensor<8x8xf16>) -> tensor<4x8xf16>
    kiln.yield %p : tensor<4x8xf16>
  }
  return %0 : tensor<4x8xf16>
}

// -----

func.func @gemm_norm_shift_without_scale(%x: tensor<4x8xf16>, %w: tensor<8x8xf16>, %g: tensor<8xf16>) -> tensor<4x8xf16> {
  // expected-error@+1 {{of kind gemm has a norm shift without a norm scale}}
  %0 = kiln.kernel gemm (%x, %w, %g) {epilogue = #kiln.gemm_epilogue<norm_shift = 2>} : (tensor<4x8xf16>, tensor<8x8xf16>, tensor<8xf16>) -> tensor<4x8xf16> {
  ^bb0(%a: tensor<4x8xf16>, %bw: tensor<8x8xf16>, %s: tensor<8xf16>):
    %p = kiln.matmul %a, %bw : (tensor<4x8xf16>, tensor<8x8xf16>) -> tensor<4x8xf16>
    kiln.yield %p : tensor<4x8xf16>
  }
  return %0 : tensor<4x8xf16>
}

// -----

func.func @gemm_norm_scale_out_of_range(%x: tensor<4x8xf16>, %w: tensor<8x8xf16>) -> tensor<4x8xf16> {
  // expected-error@+1 {{epilogue norm_scale 5 is not one of its 2 inputs}}
  %0 = kiln.kernel gemm (%x, %w) {epilogue = #kiln.gemm_epilogue<norm_scale = 5>} : (tensor<4x8xf16>, tensor<8x8xf16>) -> tensor<4x8xf16> {
  ^bb0(%a: tensor<4x8xf16>, %bw: tensor<8x8xf16>):
    %p = kiln.matmul %a, %bw : (tensor<4x8xf16>, tensor<8x8xf16>) -> tensor<4x8xf16>
    kiln.yield %p : tensor<4x8xf16>
  }
  return %0 : tensor<4x8xf16>
}

// -----

// An RMSNorm has no shift to be the epilogue's norm_shift.
func.func @gemm_rms_norm_with_shift(%x: tensor<4x8xf16>, %w: tensor<8x8xf16>, %g: tensor<8xf16>) -> tensor<4x8xf16> {
  // expected-error@+1 {{of kind gemm has no layer_norm or rms_norm of its product by its norm inputs where its epilogue says}}
  %0 = kiln.kernel gemm (%x, %w, %g) {epilogue = #kiln.gemm_epilogue<norm_scale = 2, norm_shift = 2>} : (tensor<4x8xf16>, tensor<8x8xf16>, tensor<8xf16>) -> tensor<4x8xf16> {
  ^bb0(%a: tensor<4x8xf16>, %bw: tensor<8x8xf16>, %s: tensor<8xf16>):
    %p = kiln.matmul %a, %bw : (tensor<4x8xf16>, tensor<8x8xf16>) -> tensor<4x8xf16>
    %n = kiln.rms_norm %p, %s {axis = 1 : i64, epsilon = 1.0e-5 : f32} : (tensor<4x8xf16>, tensor<8xf16>) -> tensor<4x8xf16>
    kiln.yield %n : tensor<4x8xf16>
  }
  return %0 : tensor<4x8xf16>
}

// -----

// A norm's kernel may also yield what the norm reads, and nothing else:
// here the product before its residual.
func.func @gemm_norm_yields_other_than_its_sum(%x: tensor<4x8xf16>, %w: tensor<8x8xf16>, %r: tensor<4x8xf16>, %g: tensor<8xf16>) -> (tensor<4x8xf16>, tensor<4x8xf16>) {
  // expected-error@+1 {{of kind gemm must yield the end of its epilogue (and with a norm, maybe what it normalizes)}}
  %0:2 = kiln.kernel gemm (%x, %w, %r, %g) {epilogue = #kiln.gemm_epilogue<residual = 2, norm_scale = 3>} : (tensor<4x8xf16>, tensor<8x8xf16>, tensor<4x8xf16>, tensor<8xf16>) -> (tensor<4x8xf16>, tensor<4x8xf16>) {
  ^bb0(%a: tensor<4x8xf16>, %bw: tensor<8x8xf16>, %res: tensor<4x8xf16>, %s: tensor<8xf16>):
    %p = kiln.matmul %a, %bw : (tensor<4x8xf16>, tensor<8x8xf16>) -> tensor<4x8xf16>
    %y = kiln.add %p, %res : (tensor<4x8xf16>, tensor<4x8xf16>) -> tensor<4x8xf16>
    %n = kiln.rms_norm %y, %s {axis = 1 : i64, epsilon = 1.0e-5 : f32} : (tensor<4x8xf16>, tensor<8xf16>) -> tensor<4x8xf16>
    kiln.yield %n, %p : tensor<4x8xf16>, tensor<4x8xf16>
  }
  return %0#0, %0#1 : tensor<4x8xf16>, tensor<4x8xf16>
}

// -----

// Without a norm a GEMM kernel yields its epilogue's end alone.
func.func @gemm_yields_two_without_a_norm(%x: tensor<4x8xf16>, %w: tensor<8x8xf16>, %r: tensor<4x8xf16>) -> (tensor<4x8xf16>, tensor<4x8xf16>) {
  // expected-error@+1 {{of kind gemm must yield the end of its epilogue}}
  %0:2 = kiln.kernel gemm (%x, %w, %r) {epilogue = #kiln.gemm_epilogue<residual = 2>} : (tensor<4x8xf16>, tensor<8x8xf16>, tensor<4x8xf16>) -> (tensor<4x8xf16>, tensor<4x8xf16>) {
  ^bb0(%a: tensor<4x8xf16>, %bw: tensor<8x8xf16>, %res: tensor<4x8xf16>):
    %p = kiln.matmul %a, %bw : (tensor<4x8xf16>, tensor<8x8xf16>) -> tensor<4x8xf16>
    %y = kiln.add %p, %res : (tensor<4x8xf16>, tensor<4x8xf16>) -> tensor<4x8xf16>
    kiln.yield %y, %y : tensor<4x8xf16>, tensor<4x8xf16>
  }
  return %0#0, %0#1 : tensor<4x8xf16>, tensor<4x8xf16>
}

// -----

// A norm over both axes is not a norm of the product's rows.
func.func @gemm_norm_over_two_axes(%x: tensor<4x8xf16>, %w: tensor<8x8xf16>, %g: tensor<4x8xf16>) -> tensor<4x8xf16> {
  // expected-error@+1 {{of kind gemm normalizes other than the product's rows by scale and shift of one row each}}
  %0 = kiln.kernel gemm (%x, %w, %g) {epilogue = #kiln.gemm_epilogue<norm_scale = 2>} : (tensor<4x8xf16>, tensor<8x8xf16>, tensor<4x8xf16>) -> tensor<4x8xf16> {
  ^bb0(%a: tensor<4x8xf16>, %bw: tensor<8x8xf16>, %s: tensor<4x8xf16>):
    %p = kiln.matmul %a, %bw : (tensor<4x8xf16>, tensor<8x8xf16>) -> tensor<4x8xf16>
    %n = kiln.layer_norm %p, %s {axis = 0 : i64, epsilon = 1.0e-5 : f32} : (tensor<4x8xf16>, tensor<4x8xf16>) -> tensor<4x8xf16>
    kiln.yield %n : tensor<4x8xf16>
  }
  return %0 : tensor<4x8xf16>
}

// -----

// A malformed op in a GEMM kernel's body (here a norm without its axis) is
// reported as itself, before the epilogue is read from it.
func.func @gemm_norm_malformed(%x: tensor<4x8xf16>, %w: tensor<8x8xf16>, %g: tensor<8xf16>) -> tensor<4x8xf16> {
  %0 = kiln.kernel gemm (%x, %w, %g) {epilogue = #kiln.gemm_epilogue<norm_scale = 2>} : (tensor<4x8xf16>, tensor<8x8xf16>, tensor<8xf16>) -> tensor<4x8xf16> {
  ^bb0(%a: tensor<4x8xf16>, %bw: tensor<8x8xf16>, %s: tensor<8xf16>):
    %p = kiln.matmul %a, %bw : (tensor<4x8xf16>, tensor<8x8xf16>) -> tensor<4x8xf16>
    // expected-error@+1 {{'kiln.layer_norm' op requires attribute 'axis'}}
    %n = kiln.layer_norm %p, %s {epsilon = 1.0e-5 : f32} : (tensor<4x8xf16>, tensor<8xf16>) -> tensor<4x8xf16>
    kiln.yield %n : tensor<4x8xf16>
  }
  return %0 : tensor<4x8xf16>
}

// -----

func.func @gemm_tail_without_8bit_activations(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  // expected-error@+1 {{of kind gemm has a tail only over 8-bit activations, after its product and bias alone}}
  %0 = kiln.kernel gemm (%x, %w) {epilogue = #kiln.gemm_epilogue<tail = true>} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>, %b: tensor<8x8xf32>):
    %p = kiln.matmul %a, %b : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %r = kiln.round %p : tensor<4x8xf32>
    kiln.yield %r : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

// -----

func.func @gemm_tail_moves_data(%x: tensor<4x32xi8>, %q: tensor<8x1x32xui8>, %s: tensor<8x1xf32>, %sa: tensor<f32>) -> tensor<8x4xf32> {
  // expected-error@+1 {{of kind gemm has a tail op that is neither elementwise nor a reshape: kiln.transpose}}
  %0 = kiln.kernel gemm (%x, %q, %s, %sa) {epilogue = #kiln.gemm_epilogue<tail = true>} : (tensor<4x32xi8>, tensor<8x1x32xui8>, tensor<8x1xf32>, tensor<f32>) -> tensor<8x4xf32> {
  ^bb0(%a: tensor<4x32xi8>, %bq: tensor<8x1x32xui8>, %bs: tensor<8x1xf32>, %as: tensor<f32>):
    %af = kiln.cast %a : tensor<4x32xi8> -> tensor<4x32xf32>
    %ad = kiln.mul %af, %as : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
    %w = kiln.dequantize %bq, %bs {bits = 8 : i64, block_size = 32 : i64} : (tensor<8x1x32xui8>, tensor<8x1xf32>) -> tensor<8x32xf32>
    %p = kiln.matmul %ad, %w {transpose_rhs = true} : (tensor<4x32xf32>, tensor<8x32xf32>) -> tensor<4x8xf32>
    %t = kiln.transpose %p {permutation = array<i64: 1, 0>} : tensor<4x8xf32> -> tensor<8x4xf32>
    kiln.yield %t : tensor<8x4xf32>
  }
  return %0 : tensor<8x4xf32>
}

// -----

func.func @gemm_tail_broadcasts_product(%x: tensor<4x32xi8>, %q: tensor<8x1x32xui8>, %s: tensor<8x1xf32>, %sa: tensor<f32>, %e: tensor<3x32xf32>) -> tensor<3x32xf32> {
  // expected-error@+1 {{of kind gemm has a tail op that reads its product at another element: kiln.add}}
  %0 = kiln.kernel gemm (%x, %q, %s, %sa, %e) {epilogue = #kiln.gemm_epilogue<tail = true>} : (tensor<4x32xi8>, tensor<8x1x32xui8>, tensor<8x1xf32>, tensor<f32>, tensor<3x32xf32>) -> tensor<3x32xf32> {
  ^bb0(%a: tensor<4x32xi8>, %bq: tensor<8x1x32xui8>, %bs: tensor<8x1xf32>, %as: tensor<f32>, %ee: tensor<3x32xf32>):
    %af = kiln.cast %a : tensor<4x32xi8> -> tensor<4x32xf32>
    %ad = kiln.mul %af, %as : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
    %w = kiln.dequantize %bq, %bs {bits = 8 : i64, block_size = 32 : i64} : (tensor<8x1x32xui8>, tensor<8x1xf32>) -> tensor<8x32xf32>
    %p = kiln.matmul %ad, %w {transpose_rhs = true} : (tensor<4x32xf32>, tensor<8x32xf32>) -> tensor<4x8xf32>
    %r = kiln.reshape %p : tensor<4x8xf32> -> tensor<1x32xf32>
    %y = kiln.add %r, %ee : (tensor<1x32xf32>, tensor<3x32xf32>) -> tensor<3x32xf32>
    kiln.yield %y : tensor<3x32xf32>
  }
  return %0 : tensor<3x32xf32>
}

// -----

func.func @gemm_tail_reads_the_prologue(%x: tensor<4x32xi8>, %q: tensor<8x1x32xui8>, %s: tensor<8x1xf32>, %sa: tensor<f32>) -> tensor<4x8xf32> {
  // expected-error@+1 {{of kind gemm has a tail op that reads other than its product, its inputs and values of them: kiln.reshape}}
  %0 = kiln.kernel gemm (%x, %q, %s, %sa) {epilogue = #kiln.gemm_epilogue<tail = true>} : (tensor<4x32xi8>, tensor<8x1x32xui8>, tensor<8x1xf32>, tensor<f32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x32xi8>, %bq: tensor<8x1x32xui8>, %bs: tensor<8x1xf32>, %as: tensor<f32>):
    %af = kiln.cast %a : tensor<4x32xi8> -> tensor<4x32xf32>
    %ad = kiln.mul %af, %as : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
    %w = kiln.dequantize %bq, %bs {bits = 8 : i64, block_size = 32 : i64} : (tensor<8x1x32xui8>, tensor<8x1xf32>) -> tensor<8x32xf32>
    %p = kiln.matmul %ad, %w {transpose_rhs = true} : (tensor<4x32xf32>, tensor<8x32xf32>) -> tensor<4x8xf32>
    %r = kiln.reshape %ad : tensor<4x32xf32> -> tensor<4x8x4xf32>
    %y = kiln.add %p, %p : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    kiln.yield %y : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

// -----

// A GEMM's prologue (its left operand computed in the kernel) is for
// products of block-quantized weights only.
func.func @gemm_prologue_unquantized(%x: tensor<3x64xf16>, %w: tensor<64x8xf16>) -> tensor<3x8xf16> {
  // expected-error@+1 {{of kind gemm computes its left operand only for a product of block-quantized weights}}
  %0 = kiln.kernel gemm (%x, %w) {epilogue = #kiln.gemm_epilogue<prologue = true>} : (tensor<3x64xf16>, tensor<64x8xf16>) -> tensor<3x8xf16> {
  ^bb0(%a: tensor<3x64xf16>, %b: tensor<64x8xf16>):
    %s = kiln.sigmoid %a : tensor<3x64xf16>
    %p = kiln.matmul %s, %b : (tensor<3x64xf16>, tensor<64x8xf16>) -> tensor<3x8xf16>
    kiln.yield %p : tensor<3x8xf16>
  }
  return %0 : tensor<3x8xf16>
}

// -----

func.func @gemm_prologue_gather(%t: tensor<10x64xf16>, %ids: tensor<3xi64>, %q: tensor<8x2x16xui8>, %s: tensor<8x2xf16>) -> tensor<3x8xf16> {
  // expected-error@+1 {{of kind gemm computes its left operand with an op other than elementwise ops and data movement: kiln.gather}}
  %0 = kiln.kernel gemm (%t, %ids, %q, %s) {epilogue = #kiln.gemm_epilogue<prologue = true>} : (tensor<10x64xf16>, tensor<3xi64>, tensor<8x2x16xui8>, tensor<8x2xf16>) -> tensor<3x8xf16> {
  ^bb0(%at: tensor<10x64xf16>, %ai: tensor<3xi64>, %aq: tensor<8x2x16xui8>, %as: tensor<8x2xf16>):
    %g = kiln.gather %at, %ai {axis = 0 : i64} : (tensor<10x64xf16>, tensor<3xi64>) -> tensor<3x64xf16>
    %w = kiln.dequantize %aq, %as {bits = 4 : i64, block_size = 32 : i64} : (tensor<8x2x16xui8>, tensor<8x2xf16>) -> tensor<8x64xf16>
    %p = kiln.matmul %g, %w {transpose_rhs = true} : (tensor<3x64xf16>, tensor<8x64xf16>) -> tensor<3x8xf16>
    kiln.yield %p : tensor<3x8xf16>
  }
  return %0 : tensor<3x8xf16>
}

// -----

func.func @gemm_prologue_read_past(%x: tensor<3x8xf16>, %q: tensor<8x1x4xui8>, %s: tensor<8x1xf16>) -> tensor<3x8xf16> {
  // expected-error@+1 {{of kind gemm has a prologue value read past its product: kiln.sigmoid}}
  %0 = kiln.kernel gemm (%x, %q, %s) {epilogue = #kiln.gemm_epilogue<prologue = true>} : (tensor<3x8xf16>, tensor<8x1x4xui8>, tensor<8x1xf16>) -> tensor<3x8xf16> {
  ^bb0(%a: tensor<3x8xf16>, %aq: tensor<8x1x4xui8>, %as: tensor<8x1xf16>):
    %g = kiln.sigmoid %a : tensor<3x8xf16>
    %w = kiln.dequantize %aq, %as {bits = 4 : i64, block_size = 8 : i64} : (tensor<8x1x4xui8>, tensor<8x1xf16>) -> tensor<8x8xf16>
    %p = kiln.matmul %g, %w {transpose_rhs = true} : (tensor<3x8xf16>, tensor<8x8xf16>) -> tensor<3x8xf16>
    %r = kiln.add %p, %g : (tensor<3x8xf16>, tensor<3x8xf16>) -> tensor<3x8xf16>
    kiln.yield %r : tensor<3x8xf16>
  }
  return %0 : tensor<3x8xf16>
}

// -----

func.func @gemm_prologue_elsewhere(%x: tensor<3x64xf16>, %q: tensor<8x2x16xui8>, %s: tensor<8x2xf16>) -> tensor<3x8xf16> {
  // expected-error@+1 {{of kind gemm has a prologue that does not compute its product's left operand}}
  %0 = kiln.kernel gemm (%x, %q, %s) {epilogue = #kiln.gemm_epilogue<prologue = true>} : (tensor<3x64xf16>, tensor<8x2x16xui8>, tensor<8x2xf16>) -> tensor<3x8xf16> {
  ^bb0(%a: tensor<3x64xf16>, %aq: tensor<8x2x16xui8>, %as: tensor<8x2xf16>):
    %w = kiln.dequantize %aq, %as {bits = 4 : i64, block_size = 32 : i64} : (tensor<8x2x16xui8>, tensor<8x2xf16>) -> tensor<8x64xf16>
    %p = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<3x64xf16>, tensor<8x64xf16>) -> tensor<3x8xf16>
    kiln.yield %p : tensor<3x8xf16>
  }
  return %0 : tensor<3x8xf16>
}

// -----

func.func @gemm_prologue_reads_weights(%x: tensor<3x8xf16>, %q: tensor<8x1x4xui8>, %s: tensor<8x1xf16>) -> tensor<3x8xf16> {
  // expected-error@+1 {{of kind gemm has a prologue that reads the weights it dequantizes}}
  %0 = kiln.kernel gemm (%x, %q, %s) {epilogue = #kiln.gemm_epilogue<prologue = true>} : (tensor<3x8xf16>, tensor<8x1x4xui8>, tensor<8x1xf16>) -> tensor<3x8xf16> {
  ^bb0(%a: tensor<3x8xf16>, %aq: tensor<8x1x4xui8>, %as: tensor<8x1xf16>):
    %w = kiln.dequantize %aq, %as {bits = 4 : i64, block_size = 8 : i64} : (tensor<8x1x4xui8>, tensor<8x1xf16>) -> tensor<8x8xf16>
    %r = kiln.slice %w {starts = array<i64: 0, 0>, strides = array<i64: 1, 1>} : tensor<8x8xf16> -> tensor<3x8xf16>
    %g = kiln.mul %a, %r : (tensor<3x8xf16>, tensor<3x8xf16>) -> tensor<3x8xf16>
    %p = kiln.matmul %g, %w {transpose_rhs = true} : (tensor<3x8xf16>, tensor<8x8xf16>) -> tensor<3x8xf16>
    kiln.yield %p : tensor<3x8xf16>
  }
  return %0 : tensor<3x8xf16>
}

// -----

func.func @gemm_wide_norm_unquantized(%x: tensor<3x8xf16>, %w: tensor<8x8xf16>, %r: tensor<3x8xf16>, %g: tensor<8xf16>) -> tensor<3x8xf16> {
  // expected-error@+1 {{of kind gemm has a wide norm only over block-quantized weights of a 16-bit product, after its product and bias, with a norm scale}}
  %0 = kiln.kernel gemm (%x, %w, %r, %g) {epilogue = #kiln.gemm_epilogue<residual = 2, norm_scale = 3, wide_norm = true>} : (tensor<3x8xf16>, tensor<8x8xf16>, tensor<3x8xf16>, tensor<8xf16>) -> tensor<3x8xf16> {
  ^bb0(%a: tensor<3x8xf16>, %b: tensor<8x8xf16>, %ar: tensor<3x8xf16>, %ag: tensor<8xf16>):
    %p = kiln.matmul %a, %b : (tensor<3x8xf16>, tensor<8x8xf16>) -> tensor<3x8xf16>
    %pw = kiln.cast %p : tensor<3x8xf16> -> tensor<3x8xf32>
    %rw = kiln.cast %ar : tensor<3x8xf16> -> tensor<3x8xf32>
    %y = kiln.add %pw, %rw : (tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<3x8xf32>
    %gw = kiln.cast %ag : tensor<8xf16> -> tensor<8xf32>
    %n = kiln.rms_norm %y, %gw {axis = 1 : i64, epsilon = 1.0e-6 : f32} : (tensor<3x8xf32>, tensor<8xf32>) -> tensor<3x8xf32>
    %o = kiln.cast %n : tensor<3x8xf32> -> tensor<3x8xf16>
    kiln.yield %o : tensor<3x8xf16>
  }
  return %0 : tensor<3x8xf16>
}

// -----

func.func @gemm_wide_norm_stray_cast(%x: tensor<3x64xf16>, %q: tensor<8x2x16xui8>, %s: tensor<8x2xf16>, %r: tensor<3x8xf16>, %g: tensor<8xf16>) -> tensor<3x8xf16> {
  // expected-error@+1 {{of kind gemm has a wide norm whose cast is not one of its product, residual, scale or shift to f32}}
  %0 = kiln.kernel gemm (%x, %q, %s, %r, %g) {epilogue = #kiln.gemm_epilogue<residual = 3, norm_scale = 4, wide_norm = true>} : (tensor<3x64xf16>, tensor<8x2x16xui8>, tensor<8x2xf16>, tensor<3x8xf16>, tensor<8xf16>) -> tensor<3x8xf16> {
  ^bb0(%a: tensor<3x64xf16>, %aq: tensor<8x2x16xui8>, %as: tensor<8x2xf16>, %ar: tensor<3x8xf16>, %ag: tensor<8xf16>):
    %w = kiln.dequantize %aq, %as {bits = 4 : i64, block_size = 32 : i64} : (tensor<8x2x16xui8>, tensor<8x2xf16>) -> tensor<8x64xf16>
    %p = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<3x64xf16>, tensor<8x64xf16>) -> tensor<3x8xf16>
    %pw = kiln.cast %p : tensor<3x8xf16> -> tensor<3x8xf32>
    %sw = kiln.cast %as : tensor<8x2xf16> -> tensor<8x2xf32>
    kiln.yield %p : tensor<3x8xf16>
  }
  return %0 : tensor<3x8xf16>
}

// -----

func.func @gemm_wide_norm_of_product_alone(%x: tensor<3x64xf16>, %q: tensor<8x2x16xui8>, %s: tensor<8x2xf16>, %r: tensor<3x8xf16>, %g: tensor<8xf16>) -> tensor<3x8xf16> {
  // expected-error@+1 {{of kind gemm has no f32 norm of its product and residual by its scale and shift, over the last axis, where its wide norm says}}
  %0 = kiln.kernel gemm (%x, %q, %s, %r, %g) {epilogue = #kiln.gemm_epilogue<residual = 3, norm_scale = 4, wide_norm = true>} : (tensor<3x64xf16>, tensor<8x2x16xui8>, tensor<8x2xf16>, tensor<3x8xf16>, tensor<8xf16>) -> tensor<3x8xf16> {
  ^bb0(%a: tensor<3x64xf16>, %aq: tensor<8x2x16xui8>, %as: tensor<8x2xf16>, %ar: tensor<3x8xf16>, %ag: tensor<8xf16>):
    %w = kiln.dequantize %aq, %as {bits = 4 : i64, block_size = 32 : i64} : (tensor<8x2x16xui8>, tensor<8x2xf16>) -> tensor<8x64xf16>
    %p = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<3x64xf16>, tensor<8x64xf16>) -> tensor<3x8xf16>
    %pw = kiln.cast %p : tensor<3x8xf16> -> tensor<3x8xf32>
    %gw = kiln.cast %ag : tensor<8xf16> -> tensor<8xf32>
    %n = kiln.rms_norm %pw, %gw {axis = 1 : i64, epsilon = 1.0e-6 : f32} : (tensor<3x8xf32>, tensor<8xf32>) -> tensor<3x8xf32>
    %o = kiln.cast %n : tensor<3x8xf32> -> tensor<3x8xf16>
    kiln.yield %o : tensor<3x8xf16>
  }
  return %0 : tensor<3x8xf16>
}

// -----

func.func @gemm_wide_norm_not_narrowed(%x: tensor<3x64xf16>, %q: tensor<8x2x16xui8>, %s: tensor<8x2xf16>, %r: tensor<3x8xf16>, %g: tensor<8xf16>) -> tensor<3x8xf32> {
  // expected-error@+1 {{of kind gemm has no cast of its wide norm back to its product's type}}
  %0 = kiln.kernel gemm (%x, %q, %s, %r, %g) {epilogue = #kiln.gemm_epilogue<residual = 3, norm_scale = 4, wide_norm = true>} : (tensor<3x64xf16>, tensor<8x2x16xui8>, tensor<8x2xf16>, tensor<3x8xf16>, tensor<8xf16>) -> tensor<3x8xf32> {
  ^bb0(%a: tensor<3x64xf16>, %aq: tensor<8x2x16xui8>, %as: tensor<8x2xf16>, %ar: tensor<3x8xf16>, %ag: tensor<8xf16>):
    %w = kiln.dequantize %aq, %as {bits = 4 : i64, block_size = 32 : i64} : (tensor<8x2x16xui8>, tensor<8x2xf16>) -> tensor<8x64xf16>
    %p = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<3x64xf16>, tensor<8x64xf16>) -> tensor<3x8xf16>
    %pw = kiln.cast %p : tensor<3x8xf16> -> tensor<3x8xf32>
    %rw = kiln.cast %ar : tensor<3x8xf16> -> tensor<3x8xf32>
    %y = kiln.add %rw, %pw : (tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<3x8xf32>
    %gw = kiln.cast %ag : tensor<8xf16> -> tensor<8xf32>
    %n = kiln.rms_norm %y, %gw {axis = 1 : i64, epsilon = 1.0e-6 : f32} : (tensor<3x8xf32>, tensor<8xf32>) -> tensor<3x8xf32>
    kiln.yield %n : tensor<3x8xf32>
  }
  return %0 : tensor<3x8xf32>
}

// -----

// A cache update after a product of block-quantized weights only.
func.func @gemm_cache_update_unquantized(%x: tensor<1x32xf16>, %w: tensor<32x8xf16>, %kc: tensor<6x8xf16>) -> (tensor<1x8xf16>, tensor<6x8xf16>) {
  // expected-error@+1 {{of kind gemm updates a cache only after a product of block-quantized weights with neither norm nor tail}}
  %0:2 = kiln.kernel gemm (%x, %w, %kc) {epilogue = #kiln.gemm_epilogue<cache_update = true>} : (tensor<1x32xf16>, tensor<32x8xf16>, tensor<6x8xf16>) -> (tensor<1x8xf16>, tensor<6x8xf16>) {
  ^bb0(%a: tensor<1x32xf16>, %b: tensor<32x8xf16>, %k: tensor<6x8xf16>):
    %p = kiln.matmul %a, %b : (tensor<1x32xf16>, tensor<32x8xf16>) -> tensor<1x8xf16>
    %u = kiln.update_slice %k, %p {axis = 0 : i64, offset = "2"} : (tensor<6x8xf16>, tensor<1x8xf16>) -> tensor<6x8xf16>
    kiln.yield %p, %u : tensor<1x8xf16>, tensor<6x8xf16>
  }
  return %0#0, %0#1 : tensor<1x8xf16>, tensor<6x8xf16>
}

// -----

func.func @gemm_cache_update_reduction(%x: tensor<1x32xf16>, %q: tensor<8x1x16xui8>, %s: tensor<8x1xf16>, %kc: tensor<6x8xf16>) -> (tensor<1x8xf16>, tensor<6x8xf16>) {
  // expected-error@+1 {{of kind gemm computes its cache update with an op other than elementwise ops and data movement: kiln.softmax}}
  %0:2 = kiln.kernel gemm (%x, %q, %s, %kc) {epilogue = #kiln.gemm_epilogue<cache_update = true>} : (tensor<1x32xf16>, tensor<8x1x16xui8>, tensor<8x1xf16>, tensor<6x8xf16>) -> (tensor<1x8xf16>, tensor<6x8xf16>) {
  ^bb0(%a: tensor<1x32xf16>, %bq: tensor<8x1x16xui8>, %bs: tensor<8x1xf16>, %k: tensor<6x8xf16>):
    %w = kiln.dequantize %bq, %bs {bits = 4 : i64, block_size = 32 : i64} : (tensor<8x1x16xui8>, tensor<8x1xf16>) -> tensor<8x32xf16>
    %p = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<1x32xf16>, tensor<8x32xf16>) -> tensor<1x8xf16>
    %m = kiln.softmax %p {axis = 1 : i64} : tensor<1x8xf16>
    %u = kiln.update_slice %k, %m {axis = 0 : i64, offset = "2"} : (tensor<6x8xf16>, tensor<1x8xf16>) -> tensor<6x8xf16>
    kiln.yield %p, %u : tensor<1x8xf16>, tensor<6x8xf16>
  }
  return %0#0, %0#1 : tensor<1x8xf16>, tensor<6x8xf16>
}

// -----

func.func @gemm_cache_update_order(%x: tensor<1x32xf16>, %q: tensor<16x1x16xui8>, %s: tensor<16x1xf16>, %kc: tensor<6x8xf16>, %vc: tensor<6x8xf16>) -> (tensor<1x16xf16>, tensor<6x8xf16>, tensor<6x8xf16>) {
  // expected-error@+1 {{of kind gemm must yield the end of its epilogue, then its cache updates, the later first}}
  %0:3 = kiln.kernel gemm (%x, %q, %s, %kc, %vc) {epilogue = #kiln.gemm_epilogue<cache_update = true>} : (tensor<1x32xf16>, tensor<16x1x16xui8>, tensor<16x1xf16>, tensor<6x8xf16>, tensor<6x8xf16>) -> (tensor<1x16xf16>, tensor<6x8xf16>, tensor<6x8xf16>) {
  ^bb0(%a: tensor<1x32xf16>, %bq: tensor<16x1x16xui8>, %bs: tensor<16x1xf16>, %k: tensor<6x8xf16>, %v: tensor<6x8xf16>):
    %w = kiln.dequantize %bq, %bs {bits = 4 : i64, block_size = 32 : i64} : (tensor<16x1x16xui8>, tensor<16x1xf16>) -> tensor<16x32xf16>
    %p = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<1x32xf16>, tensor<16x32xf16>) -> tensor<1x16xf16>
    %kn = kiln.slice %p {starts = array<i64: 0, 0>, strides = array<i64: 1, 1>} : tensor<1x16xf16> -> tensor<1x8xf16>
    %vn = kiln.slice %p {starts = array<i64: 0, 8>, strides = array<i64: 1, 1>} : tensor<1x16xf16> -> tensor<1x8xf16>
    %ku = kiln.update_slice %k, %kn {axis = 0 : i64, offset = "2"} : (tensor<6x8xf16>, tensor<1x8xf16>) -> tensor<6x8xf16>
    %vu = kiln.update_slice %v, %vn {axis = 0 : i64, offset = "2"} : (tensor<6x8xf16>, tensor<1x8xf16>) -> tensor<6x8xf16>
    kiln.yield %p, %ku, %vu : tensor<1x16xf16>, tensor<6x8xf16>, tensor<6x8xf16>
  }
  return %0#0, %0#1, %0#2 : tensor<1x16xf16>, tensor<6x8xf16>, tensor<6x8xf16>
}

// -----

func.func @gemm_cache_update_other_offsets(%x: tensor<1x32xf16>, %q: tensor<16x1x16xui8>, %s: tensor<16x1xf16>, %kc: tensor<6x8xf16>, %vc: tensor<6x8xf16>) -> (tensor<1x16xf16>, tensor<6x8xf16>, tensor<6x8xf16>) {
  // expected-error@+1 {{of kind gemm updates one or two caches that write alike (one shape, axis, offset and starts)}}
  %0:3 = kiln.kernel gemm (%x, %q, %s, %kc, %vc) {epilogue = #kiln.gemm_epilogue<cache_update = true>} : (tensor<1x32xf16>, tensor<16x1x16xui8>, tensor<16x1xf16>, tensor<6x8xf16>, tensor<6x8xf16>) -> (tensor<1x16xf16>, tensor<6x8xf16>, tensor<6x8xf16>) {
  ^bb0(%a: tensor<1x32xf16>, %bq: tensor<16x1x16xui8>, %bs: tensor<16x1xf16>, %k: tensor<6x8xf16>, %v: tensor<6x8xf16>):
    %w = kiln.dequantize %bq, %bs {bits = 4 : i64, block_size = 32 : i64} : (tensor<16x1x16xui8>, tensor<16x1xf16>) -> tensor<16x32xf16>
    %p = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<1x32xf16>, tensor<16x32xf16>) -> tensor<1x16xf16>
    %kn = kiln.slice %p {starts = array<i64: 0, 0>, strides = array<i64: 1, 1>} : tensor<1x16xf16> -> tensor<1x8xf16>
    %vn = kiln.slice %p {starts = array<i64: 0, 8>, strides = array<i64: 1, 1>} : tensor<1x16xf16> -> tensor<1x8xf16>
    %ku = kiln.update_slice %k, %kn {axis = 0 : i64, offset = "2"} : (tensor<6x8xf16>, tensor<1x8xf16>) -> tensor<6x8xf16>
    %vu = kiln.update_slice %v, %vn {axis = 0 : i64, offset = "3"} : (tensor<6x8xf16>, tensor<1x8xf16>) -> tensor<6x8xf16>
    kiln.yield %p, %vu, %ku : tensor<1x16xf16>, tensor<6x8xf16>, tensor<6x8xf16>
  }
  return %0#0, %0#2, %0#1 : tensor<1x16xf16>, tensor<6x8xf16>, tensor<6x8xf16>
}

// -----

func.func @gemm_cache_update_computed_cache(%x: tensor<1x32xf16>, %q: tensor<8x1x16xui8>, %s: tensor<8x1xf16>, %kc: tensor<6x8xf16>) -> (tensor<1x8xf16>, tensor<6x8xf16>) {
  // expected-error@+1 {{of kind gemm updates a cache that is not one of its inputs}}
  %0:2 = kiln.kernel gemm (%x, %q, %s, %kc) {epilogue = #kiln.gemm_epilogue<cache_update = true>} : (tensor<1x32xf16>, tensor<8x1x16xui8>, tensor<8x1xf16>, tensor<6x8xf16>) -> (tensor<1x8xf16>, tensor<6x8xf16>) {
  ^bb0(%a: tensor<1x32xf16>, %bq: tensor<8x1x16xui8>, %bs: tensor<8x1xf16>, %k: tensor<6x8xf16>):
    %w = kiln.dequantize %bq, %bs {bits = 4 : i64, block_size = 32 : i64} : (tensor<8x1x16xui8>, tensor<8x1xf16>) -> tensor<8x32xf16>
    %p = kiln.matmul %a, %w {transpose_rhs = true} : (tensor<1x32xf16>, tensor<8x32xf16>) -> tensor<1x8xf16>
    %kk = kiln.neg %k : tensor<6x8xf16>
    %u = kiln.update_slice %kk, %p {axis = 0 : i64, offset = "2"} : (tensor<6x8xf16>, tensor<1x8xf16>) -> tensor<6x8xf16>
    kiln.yield %p, %u : tensor<1x8xf16>, tensor<6x8xf16>
  }
  return %0#0, %0#1 : tensor<1x8xf16>, tensor<6x8xf16>
}

// -----

// A Q/DQ GEMM's tail ends in the norm its epilogue names.
func.func @gemm_tail_norm_missing(%x: tensor<3x32xi8>, %q: tensor<8x1x32xui8>, %s: tensor<8x1xf32>, %sa: tensor<f32>, %g: tensor<8xf32>) -> tensor<3x8xf32> {
  // expected-error@+1 {{of kind gemm has no layer_norm or rms_norm of its tail's end where its epilogue says}}
  %0 = kiln.kernel gemm (%x, %q, %s, %sa, %g) {epilogue = #kiln.gemm_epilogue<norm_scale = 4, tail = true>} : (tensor<3x32xi8>, tensor<8x1x32xui8>, tensor<8x1xf32>, tensor<f32>, tensor<8xf32>) -> tensor<3x8xf32> {
  ^bb0(%a: tensor<3x32xi8>, %bq: tensor<8x1x32xui8>, %bs: tensor<8x1xf32>, %as: tensor<f32>, %ag: tensor<8xf32>):
    %af = kiln.cast %a : tensor<3x32xi8> -> tensor<3x32xf32>
    %ad = kiln.mul %af, %as : (tensor<3x32xf32>, tensor<f32>) -> tensor<3x32xf32>
    %w = kiln.dequantize %bq, %bs {bits = 8 : i64, block_size = 32 : i64} : (tensor<8x1x32xui8>, tensor<8x1xf32>) -> tensor<8x32xf32>
    %p = kiln.matmul %ad, %w {transpose_rhs = true} : (tensor<3x32xf32>, tensor<8x32xf32>) -> tensor<3x8xf32>
    %r = kiln.mul %p, %as : (tensor<3x8xf32>, tensor<f32>) -> tensor<3x8xf32>
    kiln.yield %r : tensor<3x8xf32>
  }
  return %0 : tensor<3x8xf32>
}

// -----

func.func @gemm_tail_norm_other_scale(%x: tensor<3x32xi8>, %q: tensor<8x1x32xui8>, %s: tensor<8x1xf32>, %sa: tensor<f32>, %g: tensor<8xf32>, %g2: tensor<8xf32>) -> tensor<3x8xf32> {
  // expected-error@+1 {{of kind gemm has a norm that is not of its tail's end's rows by its norm inputs}}
  %0 = kiln.kernel gemm (%x, %q, %s, %sa, %g, %g2) {epilogue = #kiln.gemm_epilogue<norm_scale = 4, tail = true>} : (tensor<3x32xi8>, tensor<8x1x32xui8>, tensor<8x1xf32>, tensor<f32>, tensor<8xf32>, tensor<8xf32>) -> tensor<3x8xf32> {
  ^bb0(%a: tensor<3x32xi8>, %bq: tensor<8x1x32xui8>, %bs: tensor<8x1xf32>, %as: tensor<f32>, %ag: tensor<8xf32>, %ag2: tensor<8xf32>):
    %af = kiln.cast %a : tensor<3x32xi8> -> tensor<3x32xf32>
    %ad = kiln.mul %af, %as : (tensor<3x32xf32>, tensor<f32>) -> tensor<3x32xf32>
    %w = kiln.dequantize %bq, %bs {bits = 8 : i64, block_size = 32 : i64} : (tensor<8x1x32xui8>, tensor<8x1xf32>) -> tensor<8x32xf32>
    %p = kiln.matmul %ad, %w {transpose_rhs = true} : (tensor<3x32xf32>, tensor<8x32xf32>) -> tensor<3x8xf32>
    %r = kiln.mul %p, %as : (tensor<3x8xf32>, tensor<f32>) -> tensor<3x8xf32>
    %n = kiln.rms_norm %r, %ag2 {axis = 1 : i64, epsilon = 1.0e-6 : f32} : (tensor<3x8xf32>, tensor<8xf32>) -> tensor<3x8xf32>
    kiln.yield %n : tensor<3x8xf32>
  }
  return %0 : tensor<3x8xf32>
}

// -----

func.func @sizes_dynamic_shape() -> tensor<?xi64, #kiln.dims<["n"]>> {
  // expected-error@+1 {{expected a static shape, got}}
  %0 = kiln.sizes ["n"] : tensor<?xi64, #kiln.dims<["n"]>>
  return %0 : tensor<?xi64, #kiln.dims<["n"]>>
}

// -----

func.func @sizes_count() -> tensor<2x1xi64> {
  // expected-error@+1 {{has 1 sizes for 2 elements}}
  %0 = kiln.sizes ["n"] : tensor<2x1xi64>
  return %0 : tensor<2x1xi64>
}

// -----

func.func @sizes_not_canonical() -> tensor<1xi64> {
  // expected-error@+1 {{size 'sequence + past' is not in canonical form ('past + sequence')}}
  %0 = kiln.sizes ["sequence + past"] : tensor<1xi64>
  return %0 : tensor<1xi64>
}
