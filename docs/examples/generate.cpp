//===- generate.cpp - text generation with a compiled decoder -------------===//
//
// Compiles a causal language model exported with symbolic dims (input_ids
// and attention_mask of [batch, sequence], logits out) for batch 1 and any
// sequence up to WINDOW, as `kilnc --dim batch=1,sequence=1:WINDOW` does,
// and decodes greedily from a prompt of token ids with kiln::rt::generate:
// each step runs the text at its own length. The tokenizer is the
// application's (Kiln works on ids).
//
//   kiln-generate-example model.onnx WINDOW ID,ID,...
//
//===----------------------------------------------------------------------===//

#include "kiln/Compiler/Compiler.h"
#include "kiln/Compiler/Diagnostics.h"
#include "kiln/runtime/Generate.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <vector>

int main(int argc, char **argv) {
  int64_t window = 0;
  if (argc != 4 || llvm::StringRef(argv[2]).getAsInteger(10, window)) {
    llvm::errs() << "usage: kiln-generate-example model.onnx WINDOW ID,...\n";
    return 2;
  }
  std::vector<int64_t> tokens;
  llvm::SmallVector<llvm::StringRef> ids;
  llvm::StringRef(argv[3]).split(ids, ',');
  for (llvm::StringRef id : ids)
    if (int64_t token; !id.getAsInteger(10, token))
      tokens.push_back(token);

  mlir::MLIRContext context;
  kiln::ModelDiagnosticHandler diagnostics(&context);
  kiln::CompileOptions options;
  options.import.dimValues["batch"] = 1;
  options.import.dimRanges["sequence"] = {1, window};
  kiln::rt::Artifact artifact;
  if (mlir::failed(kiln::compileModel(&context, argv[1], options, artifact)))
    return 1;
  std::unique_ptr<kiln::rt::Model> model;
  kiln::rt::Status status = kiln::rt::Model::create(
      std::move(artifact), kiln::rt::Backend::Auto, model);
  if (status.isOk()) {
    kiln::rt::GenerateOptions generate; // Greedy, up to 32 tokens.
    status = kiln::rt::generate(*model, generate, tokens);
  }
  if (!status.isOk()) {
    llvm::errs() << status.message << "\n";
    return 1;
  }
  llvm::outs() << "tokens:";
  for (int64_t token : tokens)
    llvm::outs() << " " << token;
  llvm::outs() << "\n";
  return 0;
}
