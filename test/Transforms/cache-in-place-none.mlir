// RUN: kiln-opt %s -split-input-file -kiln-cache-in-place -verify-diagnostics

// Asked for and given nothing to rewrite, the pass says so: a model whose
// caches are not appended by concat (GroupQueryAttention's gather form)
// would otherwise decode with a copy per step while the user believes it
// does not.
#p = #kiln.dims<["p"]>
#t = #kiln.dims<["p + 1"]>
// expected-warning @+1 {{no KV cache to append in place}}
func.func @negative_nothing_to_rewrite(%past: tensor<1x?xf32, #p>, %idx: tensor<1x?xi64, #t>)
    -> tensor<1x?xf32, #t>
    attributes {kiln.dim_ranges = {p = array<i64: 0, 7>}} {
  %z = kiln.constant dense<0.0> : tensor<1x1xf32>
  %c = kiln.concat %past, %z {axis = 1 : i64} : (tensor<1x?xf32, #p>, tensor<1x1xf32>) -> tensor<1x?xf32, #t>
  %g = kiln.relu %c : tensor<1x?xf32, #t>
  return %g : tensor<1x?xf32, #t>
}

// -----

// A cache already written in place (GroupQueryAttention's shared buffer, an
// update_slice returned) needs no rewrite and no warning.
func.func @in_place_already(%cache: tensor<1x8xf32>, %new: tensor<1x1xf32>)
    -> tensor<1x8xf32> {
  %u = kiln.update_slice %cache, %new {axis = 1 : i64, offset = "3"} : (tensor<1x8xf32>, tensor<1x1xf32>) -> tensor<1x8xf32>
  return %u : tensor<1x8xf32>
}
