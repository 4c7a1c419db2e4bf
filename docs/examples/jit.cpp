//===- jit.cpp - compile an ONNX model in-process and run it --------------===//
//
// The C++ JIT path: kiln::compileModel builds the same artifact kilnc writes,
// and kiln::rt::Model runs it on host buffers (device pointers work the same
// with rt::Memory::Device on the CUDA backend). Backend::Auto runs on the GPU
// when there is one and otherwise on the host backend, which compiles the
// generated kernels for the CPU.
//
//   kiln-jit-example model.onnx
//
//===----------------------------------------------------------------------===//

#include "kiln/Compiler/Compiler.h"
#include "kiln/Compiler/Diagnostics.h"
#include "kiln/runtime/Model.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

#include <vector>

int main(int argc, char **argv) {
  if (argc != 2) {
    llvm::errs() << "usage: kiln-jit-example model.onnx\n";
    return 2;
  }
  mlir::MLIRContext context;
  // Errors name the ONNX node they are at.
  kiln::ModelDiagnosticHandler diagnostics(&context);
  kiln::CompileOptions options;
  kiln::rt::Artifact artifact;
  if (mlir::failed(kiln::compileModel(&context, argv[1], options, artifact)))
    return 1;

  std::unique_ptr<kiln::rt::Model> model;
  kiln::rt::Status status =
      kiln::rt::Model::create(std::move(artifact), kiln::rt::Backend::Auto, model);
  if (!status.isOk()) {
    llvm::errs() << status.message << "\n";
    return 1;
  }
  // One host buffer per input (filled with 0.5) and per output.
  std::vector<std::vector<char>> inputs, outputs;
  std::vector<const void *> in;
  std::vector<void *> out;
  for (size_t i = 0; i < model->numInputs(); ++i) {
    const kiln::rt::Buffer &b = model->input(i);
    inputs.emplace_back(b.bytes);
    if (b.dtype == kiln::rt::DType::F32)
      for (size_t j = 0; j < b.bytes / 4; ++j)
        reinterpret_cast<float *>(inputs.back().data())[j] = 0.5f;
    in.push_back(inputs.back().data());
  }
  for (size_t i = 0; i < model->numOutputs(); ++i) {
    outputs.emplace_back(model->output(i).bytes);
    out.push_back(outputs.back().data());
  }
  status = model->run(in.data(), out.data(), kiln::rt::Memory::Host);
  if (!status.isOk()) {
    llvm::errs() << status.message << "\n";
    return 1;
  }
  llvm::outs() << "ran " << model->info() << "\n";
  return 0;
}
