//===- Passes.h - Kiln passes -----------------------------------*- C++ -*-===//

#ifndef KILN_TRANSFORMS_PASSES_H
#define KILN_TRANSFORMS_PASSES_H

#include "kiln/Dialect/Kiln/KilnDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace kiln {

#define GEN_PASS_DECL
#include "kiln/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "kiln/Transforms/Passes.h.inc"

/// Names of the attributes memory planning writes.
inline constexpr llvm::StringLiteral kOffsetsAttr = "kiln.offsets";
inline constexpr llvm::StringLiteral kArenaBytesAttr = "kiln.arena_bytes";
inline constexpr llvm::StringLiteral kLiveLowerBoundAttr =
    "kiln.live_lower_bound_bytes";

} // namespace kiln

#endif // KILN_TRANSFORMS_PASSES_H
