//===- IndexSites.h - the gathers whose indices a run checks ----*- C++ -*-===//
//
// Internal to the CUDA target. With index checking on, every gather inside a
// kernel is a site: its kernel records the site's number when an index is
// out of range, and the runtime names the site's ONNX node in the error.
// kiln-to-cuda numbers the sites on the IR (kIndexSiteAttr) before it emits
// anything; emission reads the numbers and changes nothing.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_TARGET_CUDA_INDEXSITES_H
#define KILN_LIB_TARGET_CUDA_INDEXSITES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <string>
#include <vector>

namespace kiln {

/// Gives every gather and gather_elements inside a kernel of `func` its
/// site number (kIndexSiteAttr), 1-based in walk order.
void numberIndexSites(mlir::func::FuncOp func);

/// What each site of `func` is, by its number less one, for the artifact's
/// `indexSites`: "ONNX node 'NAME' (gather over a dim of N)". Fails on a
/// gather in a kernel without its number, or numbers that are not 1 to N.
mlir::FailureOr<std::vector<std::string>>
describeIndexSites(mlir::func::FuncOp func);

} // namespace kiln

#endif // KILN_LIB_TARGET_CUDA_INDEXSITES_H
