
func.func @kernel_yield_named(%x: tensor<4x4xf32>) -> (tensor<4x4xf32> {kiln.name = "out"}) {
  %r = kiln.relu %x {kiln.tensors = ["act"]} : tensor<4x4xf32>
  %m = kiln.matmul %r, %r : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %m : tensor<4x4xf32>
}

