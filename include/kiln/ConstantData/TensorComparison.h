//===- TensorComparison.h - a tensor against its reference ------*- C++ -*-===//
//
// The numerics contract's comparator (DESIGN.md, "Numerics"): how far a
// computed tensor is from its reference, and whether it is within a
// tolerance. One definition for kiln-run, the Python package (`kiln.compare`)
// and the tests, so that "within the contract" means the same everywhere.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CONSTANTDATA_TENSORCOMPARISON_H
#define KILN_CONSTANTDATA_TENSORCOMPARISON_H

#include "kiln/ConstantData/HostTensor.h"

#include <string>

namespace kiln {

/// What a tensor must meet. With `relL2` > 0 the relative L2 error decides
/// (the 16-bit contract); otherwise every element must be within
/// `atol + rtol * |reference|` (the fp32 contract's defaults).
struct Tolerance {
  double rtol = 1e-4;
  double atol = 1e-5;
  double relL2 = 0;

  /// The tolerance in words, for messages: "rtol 0.0001 / atol 1e-05" or
  /// "relative L2 0.01".
  std::string text() const;
};

/// How far one tensor is from its reference.
struct TensorError {
  double maxAbs = 0, maxRel = 0, relL2 = 0;
  /// The first element outside the per-element check, or -1.
  int64_t firstBad = -1;
  /// Whether the tensor meets the tolerance.
  bool within = true;
};

/// Compares `got` with `want` (same element count): every element within
/// atol + rtol * |reference| (NaN only where the reference is NaN), or with
/// a relative-L2 tolerance the relative L2 error (non-finite only where the
/// reference is); integers and booleans must be equal, compared as integers
/// (a double holds no i64 or ui64 beyond 2^53 exactly).
TensorError compareTensors(const HostTensor &got, const HostTensor &want,
                           const Tolerance &tolerance);

/// Element `i` of `tensor` as text: floats with nine significant digits
/// (seventeen for f64), integers exactly (unsigned ones as unsigned).
std::string formatElement(const HostTensor &tensor, int64_t i);

/// `max_abs .. max_rel .. rel_l2 ..` and, outside the tolerance, why (with
/// the first offending element), on one line without its end.
std::string describeError(const TensorError &error, const HostTensor &got,
                          const HostTensor &want, const Tolerance &tolerance);

} // namespace kiln

#endif // KILN_CONSTANTDATA_TENSORCOMPARISON_H
