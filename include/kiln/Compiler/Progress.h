//===- Progress.h - A compile's stages as they happen -----------*- C++ -*-===//
//
// A large model takes minutes to compile; on a terminal kilnc says which
// stage it is in (import, each pass, CUDA generation, NVRTC, writing) and
// how long each took. A stage's line is printed when it starts and ended
// with its time, so that a slow stage shows what is running.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_PROGRESS_H
#define KILN_COMPILER_PROGRESS_H

#include "mlir/Pass/PassInstrumentation.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <memory>
#include <string>

namespace kiln {

class Progress {
public:
  /// Prints to `os` with `prefix` ("kilnc: ") before each stage.
  Progress(llvm::raw_ostream &os, llvm::StringRef prefix)
      : os(os), prefix(prefix.str()) {}
  /// Ends the last stage.
  ~Progress() { end(); }

  /// Ends the current stage, if any, and starts `name`.
  void stage(const llvm::Twine &name);
  /// Ends the current stage, printing its time.
  void end();

  /// Reports each pass of a pass manager as a stage.
  std::unique_ptr<mlir::PassInstrumentation> passStages();

private:
  llvm::raw_ostream &os;
  std::string prefix;
  bool open = false;
  std::chrono::steady_clock::time_point start;
};

} // namespace kiln

#endif // KILN_COMPILER_PROGRESS_H
