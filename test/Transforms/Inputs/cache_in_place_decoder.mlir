// A decoder attention layer with a KV cache in the form GPT-2's export writes
// it (present = concat(past, new), read by attention, returned), for
// cache-in-place-semantics.test.
#p = #kiln.dims<["p"]>
#s = #kiln.dims<["s"]>
#t = #kiln.dims<["p + s"]>
func.func @main(%x: tensor<1x?x8xf32, #s> {kiln.name = "x"},
                %mask: tensor<1x?xf32, #t> {kiln.name = "mask"},
                %pk: tensor<1x2x?x4xf32, #p> {kiln.name = "past_key"},
                %pv: tensor<1x2x?x4xf32, #p> {kiln.name = "past_value"})
    -> (tensor<1x?x8xf32, #s> {kiln.name = "out"},
        tensor<1x2x?x4xf32, #t> {kiln.name = "present_key"},
        tensor<1x2x?x4xf32, #t> {kiln.name = "present_value"})
    attributes {kiln.dim_ranges = {p = array<i64: 0, 7>, s = array<i64: 1, 4>}} {
  %heads = kiln.reshape %x : tensor<1x?x8xf32, #s> -> tensor<1x?x2x4xf32, #s>
  %q = kiln.transpose %heads {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x?x2x4xf32, #s> -> tensor<1x2x?x4xf32, #s>
  %two = kiln.constant dense<2.0> : tensor<f32>
  %knew = kiln.mul %q, %two : (tensor<1x2x?x4xf32, #s>, tensor<f32>) -> tensor<1x2x?x4xf32, #s>
  %k = kiln.concat %pk, %knew {axis = 2 : i64} : (tensor<1x2x?x4xf32, #p>, tensor<1x2x?x4xf32, #s>) -> tensor<1x2x?x4xf32, #t>
  %v = kiln.concat %pv, %q {axis = 2 : i64} : (tensor<1x2x?x4xf32, #p>, tensor<1x2x?x4xf32, #s>) -> tensor<1x2x?x4xf32, #t>
  %m = kiln.reshape %mask : tensor<1x?xf32, #t> -> tensor<1x1x1x?xf32, #t>
  %a = kiln.attention %q, %k, %v, %m {scale = 0.5 : f32} : (tensor<1x2x?x4xf32, #s>, tensor<1x2x?x4xf32, #t>, tensor<1x2x?x4xf32, #t>, tensor<1x1x1x?xf32, #t>) -> tensor<1x2x?x4xf32, #s>
  %merged = kiln.transpose %a {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x2x?x4xf32, #s> -> tensor<1x?x2x4xf32, #s>
  %out = kiln.reshape %merged : tensor<1x?x2x4xf32, #s> -> tensor<1x?x8xf32, #s>
  return %out, %k, %v : tensor<1x?x8xf32, #s>, tensor<1x2x?x4xf32, #t>, tensor<1x2x?x4xf32, #t>
}
