//===- Concatenate.h - joining host tensors along an axis -------*- C++ -*-===//
//
// The one implementation of concatenation on constant data: the reference
// interpreter executes `kiln.concat` with it, and the layout pass packs the
// weights of sibling projections with it at compile time.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CONSTANTDATA_CONCATENATE_H
#define KILN_CONSTANTDATA_CONCATENATE_H

#include "kiln/ConstantData/HostTensor.h"

namespace kiln {

/// Copies `inputs`, in order, into `result` along `axis`. Every input has
/// result's element type and rank, and the inputs' extents along `axis` sum
/// to result's; the other dims are the caller's to have checked (the op
/// verifier does). Fails with a diagnostic at `loc` when given otherwise.
mlir::LogicalResult
concatenateInto(HostTensor &result, llvm::ArrayRef<const HostTensor *> inputs,
                int64_t axis, std::optional<mlir::Location> loc = std::nullopt);

} // namespace kiln

#endif // KILN_CONSTANTDATA_CONCATENATE_H
