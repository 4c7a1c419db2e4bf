//===- ExecuteMatmul.cpp - kiln.matmul on the host ------------------------===//
//
// The batched matrix product as a plain triple loop per batch entry, floats
// accumulated in double and integers in wrapping int64_t.
//
//===----------------------------------------------------------------------===//

#include "ExecuteMatmul.h"

#include "IndexArithmetic.h"
#include "ScalarMath.h"

#include <vector>

using namespace mlir;

namespace kiln {

/// Every element of `tensor` as a double.
static std::vector<double> decodeFloats(const HostTensor &tensor) {
  std::vector<double> values(tensor.numElements());
  for (auto [index, value] : llvm::enumerate(values))
    value = tensor.getAsDouble(index);
  return values;
}

FailureOr<HostTensor> executeMatmul(MatmulOp op, const HostTensor &lhs,
                                    const HostTensor &rhs) {
  if (lhs.elementType != rhs.elementType)
    return op.emitOpError("expected operands of one element type, got ")
           << lhs.elementType << " and " << rhs.elementType;
  if (lhs.shape.size() < 2 || rhs.shape.size() < 2)
    return op.emitOpError("expected operands of rank >= 2, got ")
           << lhs.shape.size() << " and " << rhs.shape.size();
  bool transposeLhs = op.getTransposeLhs();
  bool transposeRhs = op.getTransposeRhs();
  ArrayRef<int64_t> l = lhs.shape, r = rhs.shape;
  int64_t m = l[l.size() - (transposeLhs ? 1 : 2)];
  int64_t k = l[l.size() - (transposeLhs ? 2 : 1)];
  int64_t rhsK = r[r.size() - (transposeRhs ? 1 : 2)];
  int64_t n = r[r.size() - (transposeRhs ? 2 : 1)];
  if (k != rhsK)
    return op.emitOpError("expected contracting dims to match, got ")
           << k << " vs " << rhsK;
  ArrayRef<int64_t> lhsBatch = l.drop_back(2), rhsBatch = r.drop_back(2);
  FailureOr<SmallVector<int64_t>> batch =
      broadcastShapes(op.getLoc(), lhsBatch, rhsBatch);
  if (failed(batch))
    return failure();
  SmallVector<int64_t> resultShape = *batch;
  resultShape.push_back(m);
  resultShape.push_back(n);
  FailureOr<HostTensor> result =
      HostTensor::allocate(lhs.elementType, resultShape, op.getLoc());
  if (failed(result))
    return failure();

  // Batch strides count whole matrices; scale them to elements.
  SmallVector<int64_t> lhsBatchStrides = getBroadcastStrides(lhsBatch, *batch);
  SmallVector<int64_t> rhsBatchStrides = getBroadcastStrides(rhsBatch, *batch);
  int64_t batchCount = getProduct(*batch);
  bool isFloat = isa<FloatType>(lhs.elementType);
  // Each element is read n or m times: decode floats once, since decoding
  // f16 and bf16 goes through APFloat.
  std::vector<double> lhsValues, rhsValues;
  if (isFloat) {
    lhsValues = decodeFloats(lhs);
    rhsValues = decodeFloats(rhs);
  }
  for (int64_t b = 0; b < batchCount; ++b) {
    int64_t lhsBase = getOffset(b, *batch, lhsBatchStrides) * m * k;
    int64_t rhsBase = getOffset(b, *batch, rhsBatchStrides) * k * n;
    int64_t resultBase = b * m * n;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double floatSum = 0.0;
        int64_t intSum = 0;
        for (int64_t p = 0; p < k; ++p) {
          int64_t lhsIndex = lhsBase + (transposeLhs ? p * m + i : i * k + p);
          int64_t rhsIndex = rhsBase + (transposeRhs ? j * k + p : p * n + j);
          if (isFloat)
            floatSum += lhsValues[lhsIndex] * rhsValues[rhsIndex];
          else
            intSum = wrappingAdd(intSum, wrappingMul(lhs.getAsInt(lhsIndex),
                                                     rhs.getAsInt(rhsIndex)));
        }
        if (isFloat)
          result->setFromDouble(resultBase + i * n + j, floatSum);
        else
          result->setFromInt(resultBase + i * n + j, intSum);
      }
    }
  }
  return result;
}

} // namespace kiln
