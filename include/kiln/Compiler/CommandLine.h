//===- CommandLine.h - the flags kilnc and kiln-run share -------*- C++ -*-===//

#ifndef KILN_COMPILER_COMMANDLINE_H
#define KILN_COMPILER_COMMANDLINE_H

#include "kiln/Compiler/Compiler.h"
#include "kiln/Compiler/Diagnostics.h"
#include "llvm/Support/SourceMgr.h"

#include <string>
#include <vector>

namespace kiln {

/// Registers the precision flags that kilnc and kiln-run share with
/// llvm::cl: --precision, --keep-io-types, --keep-fp32-ops, --keep-fp32-nodes
/// and --disable-fp32-islands. Call before parsing the command line.
void registerPrecisionCLOptions();

/// Copies the parsed precision flags into `options`.
void applyPrecisionCLOptions(CompileOptions &options);

/// The kiln-mixed-precision pass options that the precision flags set, each
/// with its flag: for OptionFlagNotes, so that the pass's diagnostics (which
/// name its options) also name the tool's flag.
std::vector<OptionFlag> precisionOptionFlags();

/// The diagnostic handlers kilnc and kiln-run install, asked in this order:
/// the notes naming `tool`'s flag for each pass option a message names, the
/// model handler (messages at an ONNX node name it), and MLIR's own (lines
/// of an .mlir file).
class ToolDiagnostics {
public:
  ToolDiagnostics(mlir::MLIRContext *context, std::string tool);

private:
  llvm::SourceMgr sourceMgr;
  mlir::SourceMgrDiagnosticHandler lines;
  ModelDiagnosticHandler model;
  OptionFlagNotes flagNotes;
};

/// The shared flags given on the command line that change only what is
/// compiled (precision, kernel configurations, --unchecked-indices,
/// --kv-cache-in-place, the size limits), as "--name": kiln-run warns that
/// a .so, already compiled, ignores them.
std::vector<std::string> givenCompileOnlyFlags();

/// Registers the flags about a model's inputs and what it may do that kilnc
/// and kiln-run share: --dim, --input-shape, --override-initializer,
/// --unchecked-indices, --max-arena and --max-weights. Call before parsing
/// the command line.
void registerInputCLOptions();

/// Copies the parsed input flags into `options`. Returns an error message
/// naming the flag when a value is malformed, empty otherwise.
std::string applyInputCLOptions(CompileOptions &options);

/// Registers the kernel configuration flags that kilnc and kiln-run share
/// (--gemm-kernels, --attention-warps, --attention-rows-per-warp,
/// --attention-wgmma,
/// --attention-tile-keys, --attention-kv-stages, --attention-barriers,
/// --attention-lazy-rescale: kiln-to-cuda's overrides). Call before parsing
/// the command line.
void registerKernelCLOptions();

/// Copies the parsed kernel configuration flags into `options`. Returns an
/// error message naming the flag when a value is not one it takes, empty
/// otherwise.
std::string applyKernelCLOptions(CompileOptions &options);

} // namespace kiln

#endif // KILN_COMPILER_COMMANDLINE_H
