//===- Interpreter.h - reference executor of kiln IR ------------*- C++ -*-===//
//
// The reference interpreter runs a `func.func` of `kiln` ops on the host, op by
// op, in plain loops. It is the oracle that checks every pass (run the IR
// before and after on the same random inputs and compare) and the engine of
// `kiln-run`. It favours being obviously correct over being fast: every float
// op computes in double and rounds once to the storage type.
//
// Values are HostTensors (kiln/ConstantData/HostTensor.h has their storage).
//
// Integer semantics: arithmetic wraps modulo 2^width; integer division
// truncates toward zero, and division by zero yields 0 (ONNX leaves it
// undefined; the interpreter must not trap on hostile inputs). Unsigned
// integers compare, divide, take remainders and convert as unsigned values
// (ui64 values of 2^63 and above included).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_INTERPRETER_INTERPRETER_H
#define KILN_INTERPRETER_INTERPRETER_H

#include "kiln/ConstantData/HostTensor.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Location.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <random>

namespace kiln {

/// Runs the body of `func` on `inputs` and returns the operands of its
/// `func.return`. Emits a diagnostic and fails when the input count, an
/// input's element type or shape (static dims must match; dynamic dims take
/// the input's) does not match the signature, when an op is not a kiln op the
/// interpreter knows, or when a runtime shape is invalid or too large.
/// Discardable attributes (such as `kiln.offsets`) are ignored.
mlir::FailureOr<llvm::SmallVector<HostTensor>>
interpretFunction(mlir::func::FuncOp func, llvm::ArrayRef<HostTensor> inputs);

/// Evaluates one kiln op with one result and no region on `operands` (in
/// operand order), e.g. to fold an op whose operands are constants.
mlir::FailureOr<HostTensor>
evaluateOp(mlir::Operation *op, llvm::ArrayRef<const HostTensor *> operands);

/// A random tensor of `type`: floats uniform in [-1, 1) (and never all zeros),
/// integers uniform in [0, integerBound) (never all zeros when there are any
/// elements and the bound allows another value), i1 uniform. Dynamic dims
/// are drawn as 1. The draws depend only on `rng`'s output, so one seed
/// gives the same tensor on every platform. Precondition: the element type
/// is supported, the element count is within kMaxHostTensorElements (check
/// with tryRandomTensor or getCheckedNumElements) and integerBound is at
/// least 1; otherwise this is a fatal error.
HostTensor randomTensor(mlir::RankedTensorType type, std::mt19937 &rng,
                        int64_t integerBound = 4);

/// Like randomTensor, but fails with a diagnostic at `loc` (when given) on an
/// unsupported element type or a shape that is too large.
mlir::FailureOr<HostTensor>
tryRandomTensor(mlir::RankedTensorType type, std::mt19937 &rng,
                std::optional<mlir::Location> loc = std::nullopt,
                int64_t integerBound = 4);

} // namespace kiln

#endif // KILN_INTERPRETER_INTERPRETER_H
