//===- TensorComparison.cpp - a tensor against its reference --------------===//

#include "kiln/ConstantData/TensorComparison.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>

using namespace mlir;

namespace kiln {

std::string Tolerance::text() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  if (relL2 > 0)
    os << llvm::format("relative L2 %g", relL2);
  else
    os << llvm::format("rtol %g / atol %g", rtol, atol);
  return text;
}

TensorError compareTensors(const HostTensor &got, const HostTensor &want,
                           const Tolerance &tolerance) {
  TensorError e;
  double errorSquares = 0, referenceSquares = 0;
  bool isFloat = isa<FloatType>(want.elementType);
  for (int64_t i = 0, n = got.numElements(); i < n; ++i) {
    double a = got.getAsDouble(i), b = want.getAsDouble(i);
    // Equal infinities are no error (their difference would be NaN).
    double diff = a == b ? 0.0 : std::fabs(a - b);
    if (std::isfinite(b)) {
      errorSquares += std::isfinite(a) ? diff * diff : INFINITY;
      referenceSquares += b * b;
    }
    bool ok = !isFloat ? got.getAsInt(i) == want.getAsInt(i)
                       : (std::isnan(a) && std::isnan(b)) || a == b ||
                             (tolerance.relL2 > 0
                                  ? std::isfinite(a) || !std::isfinite(b)
                                  : diff <= tolerance.atol +
                                                tolerance.rtol * std::fabs(b));
    if (!ok && e.firstBad < 0)
      e.firstBad = i;
    // A NaN that matches a NaN is no error; any other NaN is the worst.
    if (std::isnan(a) && std::isnan(b))
      diff = 0;
    else if (std::isnan(diff))
      diff = INFINITY;
    e.maxAbs = std::max(e.maxAbs, diff);
    e.maxRel = std::max(e.maxRel, diff / std::max(std::fabs(b), 1e-30));
  }
  e.relL2 =
      std::sqrt(errorSquares) / std::max(std::sqrt(referenceSquares), 1e-30);
  e.within =
      e.firstBad < 0 && (tolerance.relL2 <= 0 || e.relL2 <= tolerance.relL2);
  return e;
}

std::string formatElement(const HostTensor &tensor, int64_t i) {
  Type type = tensor.elementType;
  std::string text;
  llvm::raw_string_ostream os(text);
  if (isa<FloatType>(type))
    os << llvm::format(type.isF64() ? "%.17g" : "%.9g", tensor.getAsDouble(i));
  else if (type.isUnsignedInteger())
    os << static_cast<uint64_t>(tensor.getAsInt(i));
  else
    os << tensor.getAsInt(i);
  return text;
}

std::string describeError(const TensorError &e, const HostTensor &got,
                          const HostTensor &want, const Tolerance &tolerance) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "max_abs " << llvm::format("%.3e", e.maxAbs) << " max_rel "
     << llvm::format("%.3e", e.maxRel) << " rel_l2 "
     << llvm::format("%.3e", e.relL2);
  if (e.firstBad >= 0)
    os << " FAIL at element " << e.firstBad << ": got "
       << formatElement(got, e.firstBad) << ", reference "
       << formatElement(want, e.firstBad);
  else if (!e.within)
    os << " FAIL: rel_l2 above " << llvm::format("%g", tolerance.relL2);
  return text;
}

} // namespace kiln
