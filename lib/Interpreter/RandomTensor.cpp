//===- RandomTensor.cpp - reproducible random inputs ----------------------===//
//
// The inputs every semantics check draws: the same seed gives the same
// tensor on every platform, so a failure seen in CI reproduces anywhere.
//
//===----------------------------------------------------------------------===//

#include "kiln/Interpreter/Interpreter.h"

#include "llvm/Support/ErrorHandling.h"

#include <cmath>

using namespace mlir;
using namespace kiln;

FailureOr<HostTensor> kiln::tryRandomTensor(RankedTensorType type,
                                            std::mt19937 &rng,
                                            std::optional<Location> loc,
                                            int64_t integerBound) {
  SmallVector<int64_t> shape;
  for (int64_t dim : type.getShape())
    shape.push_back(ShapedType::isDynamic(dim) ? 1 : dim);
  FailureOr<HostTensor> tensor =
      HostTensor::allocate(type.getElementType(), shape, loc);
  if (failed(tensor))
    return failure();
  bool isBool = tensor->elementType.isInteger(1);
  bool isFloat = isa<FloatType>(tensor->elementType);
  int64_t count = tensor->numElements();
  bool allZero = true;
  for (int64_t i = 0; i < count; ++i) {
    if (isBool) {
      tensor->setFromInt(i, rng() & 1);
    } else if (isFloat) {
      // 24 random bits map to a multiple of 2^-23 in [-1, 1), exact in every
      // float type up to rounding; a draw that a 16-bit type rounds up to 1
      // is drawn again so the range stays half-open. The arithmetic is done
      // here rather than by std::uniform_real_distribution, whose output
      // differs between standard libraries.
      do {
        uint32_t bits = static_cast<uint32_t>(rng()) >> 8;
        tensor->setFromDouble(i,
                              std::ldexp(static_cast<double>(bits), -23) - 1.0);
      } while (tensor->getAsDouble(i) >= 1.0);
    } else {
      tensor->setFromInt(i, static_cast<uint32_t>(rng()) %
                                static_cast<uint64_t>(integerBound));
    }
    if (tensor->getAsDouble(i) != 0.0)
      allZero = false;
  }
  // An all-zero input hides whole classes of bugs (a dropped operand, a
  // missing scale); bools stay uniform since false is as valid as true.
  if (allZero && count > 0 && !isBool && (isFloat || integerBound > 1))
    tensor->setFromDouble(0, isFloat ? 0.5 : 1.0);
  return tensor;
}

HostTensor kiln::randomTensor(RankedTensorType type, std::mt19937 &rng,
                              int64_t integerBound) {
  if (integerBound < 1)
    llvm::report_fatal_error("randomTensor: integerBound must be at least 1");
  FailureOr<HostTensor> tensor =
      tryRandomTensor(type, rng, std::nullopt, integerBound);
  if (failed(tensor))
    llvm::report_fatal_error("randomTensor: unsupported element type or too "
                             "many elements; check with tryRandomTensor");
  return std::move(*tensor);
}
