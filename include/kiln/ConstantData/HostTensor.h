//===- HostTensor.h - constant data in host memory -------------*- C++ -*-===//
//
// A HostTensor is a dense tensor in host memory: the value of a constant that
// a pass rewrites (weight packing, precision conversion), that the importer
// folds, or that the CUDA target writes into an artifact, and the value the
// reference interpreter computes with. It is its own library so that the
// compiler's passes work on constant data without linking the interpreter.
//
// Storage: tensors are dense, row-major and little-endian; f64 and f32 are
// IEEE doubles and floats, f16 and bf16 are 2 bytes of their IEEE bit
// patterns, i64/i32/i16/i8 are two's complement, ui64/ui32/ui16/ui8 plain
// binary, and i1 is one byte holding 0 or 1 (as in numpy and ONNX, not MLIR's
// bit-packed attribute storage).
//
// Element access converts through double (floats), int64_t (signed integers
// and i1) or uint64_t (unsigned integers): the three numeric domains. Code
// that computes on elements is written once per domain with
// dispatchNumericDomain, not once per element type.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CONSTANTDATA_HOSTTENSOR_H
#define KILN_CONSTANTDATA_HOSTTENSOR_H

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
#include <vector>

namespace kiln {

/// The most elements one host tensor may hold; larger tensors are
/// refused with a diagnostic so that a hostile model cannot make the
/// compiler or the interpreter allocate without bound.
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

/// The domain an element type computes in: floats in double, unsigned
/// integers in uint64_t, signed integers and i1 in int64_t.
enum class NumericDomain { Float, Signed, Unsigned };

/// The domain of `elementType` (Signed for anything that is neither a float
/// nor an unsigned integer).
NumericDomain getNumericDomain(mlir::Type elementType);

/// Element access in one domain: `Value` is the C++ type, `get` reads element
/// `i` as HostTensor's getter of that domain does, `set` stores as its setter
/// does (so `set(dst, i, get(src, j))` is `kiln.cast` from the source's type).
struct FloatDomain {
  using Value = double;
  static double get(const HostTensor &t, int64_t i) { return t.getAsDouble(i); }
  static void set(HostTensor &t, int64_t i, double v) { t.setFromDouble(i, v); }
};
struct SignedDomain {
  using Value = int64_t;
  static int64_t get(const HostTensor &t, int64_t i) { return t.getAsInt(i); }
  static void set(HostTensor &t, int64_t i, int64_t v) { t.setFromInt(i, v); }
};
struct UnsignedDomain {
  using Value = uint64_t;
  static uint64_t get(const HostTensor &t, int64_t i) {
    return static_cast<uint64_t>(t.getAsInt(i));
  }
  static void set(HostTensor &t, int64_t i, uint64_t v) {
    t.setFromUnsigned(i, v);
  }
};

/// Calls `fn(FloatDomain{})`, `fn(SignedDomain{})` or `fn(UnsignedDomain{})`
/// by the domain of `elementType` and returns what it returns.
template <typename Fn>
decltype(auto) dispatchNumericDomain(mlir::Type elementType, Fn &&fn) {
  switch (getNumericDomain(elementType)) {
  case NumericDomain::Float:
    return fn(FloatDomain{});
  case NumericDomain::Unsigned:
    return fn(UnsignedDomain{});
  case NumericDomain::Signed:
    break;
  }
  return fn(SignedDomain{});
}

} // namespace kiln

#endif // KILN_CONSTANTDATA_HOSTTENSOR_H
