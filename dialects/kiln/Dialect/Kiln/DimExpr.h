//===- DimExpr.h - Symbolic sizes over a model's named dims -----*- C++ -*-===//
//
// A dim of a symbolic shape is a polynomial with integer coefficients over
// the model's named dims: `batch`, `sequence`, `batch*sequence` (a flattened
// Reshape), `past_sequence + sequence` (a KV cache), `768`. Shape rules only
// add, subtract and multiply sizes, and divide them exactly (a Reshape's -1,
// heads = hidden / head size), so polynomials are closed under everything a
// shape rule needs, and two sizes are equal exactly when their canonical
// forms are. A division that is not exact for every value of the names has
// no polynomial and is refused by whoever asks for it.
//
// The canonical text (`str`) is the form kept in IR (the `#kiln.dims`
// encoding of a tensor type), so equal sizes print and compare equal.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_KILN_DIMEXPR_H
#define KILN_DIALECT_KILN_DIMEXPR_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kiln {

class DimExpr {
public:
  /// The names multiplied in one term, sorted, a name once per power.
  using Monomial = std::vector<std::string>;

  /// The constant 0.
  DimExpr() = default;
  /// The constant `value`.
  static DimExpr constant(int64_t value);
  /// The named dim `name`.
  static DimExpr symbol(llvm::StringRef name);

  /// Parses + - * and parentheses over integers and names (the text of an
  /// ONNX `dim_param`, or `str`'s output). A name is a run of characters
  /// other than spaces, operators and parentheses, or any text in square
  /// brackets. Returns nothing and sets `error` when malformed or when a
  /// coefficient overflows.
  static std::optional<DimExpr> parse(llvm::StringRef text, std::string &error);

  /// Checked arithmetic: nothing when a coefficient overflows 64 bits.
  static std::optional<DimExpr> add(const DimExpr &lhs, const DimExpr &rhs);
  static std::optional<DimExpr> sub(const DimExpr &lhs, const DimExpr &rhs);
  static std::optional<DimExpr> mul(const DimExpr &lhs, const DimExpr &rhs);
  /// `lhs / rhs` when it is a polynomial (`rhs` divides `lhs` exactly, as
  /// `8*past + 8*sequence` divides `32*batch*past + 32*batch*sequence`).
  static std::optional<DimExpr> divExact(const DimExpr &lhs,
                                         const DimExpr &rhs);

  /// The value when no name occurs in it.
  std::optional<int64_t> getConstant() const;
  bool isConstant() const { return getConstant().has_value(); }
  /// The name when the expression is exactly one name.
  std::optional<std::string> getSymbol() const;
  /// The terms: coefficient by monomial (the constant's is empty), none
  /// zero, in the order of `Monomial`'s comparison.
  const std::map<Monomial, int64_t> &getTerms() const { return terms; }
  /// The names that occur, sorted, each once.
  std::vector<std::string> symbols() const;

  /// The value for the names' values (`lookup` gives nothing for a name
  /// without one); nothing when a name has no value or on overflow.
  std::optional<int64_t> evaluate(
      llvm::function_ref<std::optional<int64_t>(llvm::StringRef)> lookup) const;

  /// The expression with each name that `lookup` gives a value replaced by
  /// it; nothing on overflow.
  std::optional<DimExpr> substitute(
      llvm::function_ref<std::optional<int64_t>(llvm::StringRef)> lookup) const;

  /// The expression with the name `name` replaced by `value`; nothing on
  /// overflow.
  std::optional<DimExpr> substituteName(llvm::StringRef name,
                                        const DimExpr &value) const;

  /// The least and greatest value over names ranging over
  /// `range(name) = [min, max]` (every name's min >= 0); nothing when a name
  /// has no range or on overflow. Exact for a polynomial whose coefficients
  /// are all >= 0 (every size a shape rule makes); otherwise a bound.
  std::optional<std::pair<int64_t, int64_t>>
  bounds(llvm::function_ref<
         std::optional<std::pair<int64_t, int64_t>>(llvm::StringRef)>
             range) const;

  /// The canonical text: terms by descending degree then name, names in a
  /// term sorted and joined by `*`, the constant last (`2*batch*sequence +
  /// sequence - 1`). A name that would not parse back as one name is
  /// written in square brackets.
  std::string str() const;

  bool operator==(const DimExpr &other) const { return terms == other.terms; }
  bool operator!=(const DimExpr &other) const { return terms != other.terms; }

private:
  /// The expression with each name replaced by `replacement(name)`; nothing
  /// on overflow.
  std::optional<DimExpr>
  replaceNames(llvm::function_ref<DimExpr(llvm::StringRef)> replacement) const;

  /// Nonzero coefficients by monomial; the constant's monomial is empty.
  std::map<Monomial, int64_t> terms;
};

/// The sizes of a symbolic shape, one per dim.
using SymbolicShape = std::vector<DimExpr>;

/// The product of `dims` (1 for none); nothing on overflow.
std::optional<DimExpr> productOf(llvm::ArrayRef<DimExpr> dims);

} // namespace kiln

#endif // KILN_DIALECT_KILN_DIMEXPR_H
