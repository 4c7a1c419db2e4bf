//===- Interpreter.h - reference executor of kiln IR ------------*- C++ -*-===//
//
// The reference interpreter runs a `func.func` of `kiln` ops on the host, op by
// op, in plain loops. It is the oracle that checks every pass (run the IR
// before and after on the same random inputs and compare) and the engine of
// `kiln-run`. It favours being obviously correct over being fast: every float
// op computes in double and rounds once to the storage type.
//
// Storage: tensors are dense, row-major and little-endian; f64 and f32 are
// IEEE doubles and floats, f16 and bf16 are 2 bytes of their IEEE bit
// patterns, i64/i32/i16/i8 are two's complement, ui64/ui32/ui16/ui8 plain
// binary, and i1 is one byte holding 0 or 1 (as in numpy and ONNX, not MLIR's
// bit-packed attribute storage).
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

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Location.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <optional>
#include <random>
#include <vector>

namespace kiln {

/// The most elements one interpreter tensor may hold; larger tensors are
/// refused with a diagnostic so that a hostile model cannot make the
/// interpreter allocate without bound.
inline constexpr int64_t kMaxHostTensorElements = int64_t(1) << 31;

/// Bytes one element of `elementType` takes in a HostTensor; 0 when the
/// interpreter does not support the type (anything but f64, f32, f16, bf16,
/// i64, i32, i16, i8, ui64, ui32, ui16, ui8 and i1).
int64_t getHostElementByteWidth(mlir::Type elementType);

/// The number of elements of `shape`, with checked arithmetic. Fails, with a
/// diagnostic at `loc` when one is given, on a negative or dynamic dim, on
/// overflow, or above kMaxHostTensorElements.
mlir::FailureOr<int64_t>
getCheckedNumElements(llvm::ArrayRef<int64_t> shape,
                      std::optional<mlir::Location> loc = std::nullopt);

/// A dense tensor in host memory; see the file comment for the layout.
struct HostTensor {
  /// One of the types getHostElementByteWidth supports.
  mlir::Type elementType;
  /// Static dims, row-major.
  llvm::SmallVector<int64_t> shape;
  /// numElements() * getHostElementByteWidth(elementType) bytes.
  std::vector<char> bytes;

  /// A zero-filled tensor. Fails, with a diagnostic at `loc` when one is
  /// given, on an unsupported element type or a shape refused by
  /// getCheckedNumElements.
  static mlir::FailureOr<HostTensor>
  allocate(mlir::Type elementType, llvm::ArrayRef<int64_t> shape,
           std::optional<mlir::Location> loc = std::nullopt);

  /// Copies the value of a constant: dense (splat or not) and
  /// `dense_resource` blobs, or any ElementsAttr that can enumerate APFloat or
  /// APInt values. Fails, with a diagnostic at `loc` when one is given, on an
  /// unsupported type, a missing blob or a blob of the wrong size.
  static mlir::FailureOr<HostTensor>
  fromElementsAttr(mlir::ElementsAttr attr,
                   std::optional<mlir::Location> loc = std::nullopt);

  /// A tensor holding `values` (row-major), each stored as setFromDouble
  /// does. Fails when the count does not match the shape or allocate fails.
  static mlir::FailureOr<HostTensor>
  fromDoubles(mlir::Type elementType, llvm::ArrayRef<int64_t> shape,
              llvm::ArrayRef<double> values,
              std::optional<mlir::Location> loc = std::nullopt);

  /// A tensor holding `values` (row-major), each stored as setFromInt does.
  /// Fails when the count does not match the shape or allocate fails.
  static mlir::FailureOr<HostTensor>
  fromInts(mlir::Type elementType, llvm::ArrayRef<int64_t> shape,
           llvm::ArrayRef<int64_t> values,
           std::optional<mlir::Location> loc = std::nullopt);

  /// The product of the dims; -1 when a dim is negative or the product
  /// overflows int64_t.
  int64_t numElements() const;

  /// The tensor type of this value.
  mlir::RankedTensorType getType() const;

  /// Element `i` (row-major) as a double: floats exactly, integers converted
  /// (i64 and ui64 beyond 2^53 round), i1 as 0 or 1.
  double getAsDouble(int64_t i) const;

  /// Stores `value` at element `i` with the semantics of `kiln.cast` from a
  /// float: floats round to nearest even; integers truncate toward zero and
  /// saturate at the type's range (a negative value gives 0 in an unsigned
  /// type), NaN gives 0; i1 is `value != 0`.
  void setFromDouble(int64_t i, double value);

  /// Element `i` as an integer: signed integers sign-extended, unsigned ones
  /// zero-extended, i1 as 0 or 1, floats converted as setFromDouble converts
  /// to i64. A ui64 value of 2^63 or more comes back as the int64_t of the
  /// same bits: read unsigned types as `static_cast<uint64_t>(getAsInt(i))`
  /// wherever order or magnitude matters.
  int64_t getAsInt(int64_t i) const;

  /// Stores `value` at element `i` with the semantics of `kiln.cast` from a
  /// signed integer: integers wrap modulo 2^width, i1 is `value != 0`,
  /// floats round to nearest even.
  void setFromInt(int64_t i, int64_t value);

  /// Stores `value` at element `i` with the semantics of `kiln.cast` from an
  /// unsigned integer: as setFromInt, but a float gets the unsigned value
  /// (2^64 - 1 rounds to 2^64 in f32, not to -1).
  void setFromUnsigned(int64_t i, uint64_t value);

  /// The value as a DenseElementsAttr of getType() (for printing and constant
  /// folding).
  mlir::DenseElementsAttr toDenseElementsAttr() const;

  /// Prints the type and the elements, for messages and kiln-run output.
  void print(llvm::raw_ostream &os) const;
};

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
/// integers uniform in [0, 4) (never all zeros when there are any elements),
/// i1 uniform. Dynamic dims are drawn as 1. The draws depend only on `rng`'s
/// output, so one seed gives the same tensor on every platform. Precondition:
/// the element type is supported and the element count is within
/// kMaxHostTensorElements (check with tryRandomTensor or
/// getCheckedNumElements); otherwise this is a fatal error.
HostTensor randomTensor(mlir::RankedTensorType type, std::mt19937 &rng);

/// Like randomTensor, but fails with a diagnostic at `loc` (when given) on an
/// unsupported element type or a shape that is too large.
mlir::FailureOr<HostTensor>
tryRandomTensor(mlir::RankedTensorType type, std::mt19937 &rng,
                std::optional<mlir::Location> loc = std::nullopt);

} // namespace kiln

#endif // KILN_INTERPRETER_INTERPRETER_H
