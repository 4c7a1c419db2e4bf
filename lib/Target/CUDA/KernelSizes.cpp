//===- KernelSizes.cpp - Sizes in generated code --------------------------===//

#include "KernelSizes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/ErrorHandling.h"

using namespace mlir;

namespace kiln {

Size::Size(int64_t value) : expr(DimExpr::constant(value)), upperBound(value) {}

Size::Size(DimExpr expr, int64_t upper)
    : expr(std::move(expr)), upperBound(upper) {}

/// `expr` as C over the dim parameters: `(2LL*kd_b*kd_s + kd_s)`.
static std::string cText(const DimExpr &expr) {
  std::string text;
  for (const auto &[monomial, coefficient] : expr.getTerms()) {
    std::string term;
    if (coefficient != 1 || monomial.empty())
      term = std::to_string(coefficient) + "LL";
    for (const std::string &name : monomial)
      term += (term.empty() ? "" : "*") + dimParameterName(name);
    text += (text.empty() ? "" : " + ") + term;
  }
  return "(" + (text.empty() ? std::string("0LL") : text) + ")";
}

std::string Size::str() const {
  if (auto value = getConstant())
    return std::to_string(*value) + "LL";
  return cText(expr);
}

std::string Size::str32() const {
  if (auto value = getConstant())
    return std::to_string(*value);
  return cText(expr);
}

/// Overflow is out of reach once memory is planned; a size past it is a
/// compiler bug, not an input error.
static DimExpr checked(std::optional<DimExpr> value) {
  if (!value)
    llvm::report_fatal_error("a kernel size overflows 64 bits");
  return *value;
}

static int64_t checkedUpper(bool overflow, int64_t value) {
  return overflow ? INT64_MAX : value;
}

Size operator*(const Size &lhs, const Size &rhs) {
  int64_t upper = 0;
  bool overflow = __builtin_mul_overflow(lhs.upper(), rhs.upper(), &upper);
  return Size(checked(DimExpr::mul(lhs.expr, rhs.expr)),
              checkedUpper(overflow, upper));
}

Size operator+(const Size &lhs, const Size &rhs) {
  int64_t upper = 0;
  bool overflow = __builtin_add_overflow(lhs.upper(), rhs.upper(), &upper);
  return Size(checked(DimExpr::add(lhs.expr, rhs.expr)),
              checkedUpper(overflow, upper));
}

Size operator-(const Size &lhs, const Size &rhs) {
  // Sizes are not negative: the difference is at most the minuend. A
  // constant difference is exact.
  DimExpr difference = checked(DimExpr::sub(lhs.expr, rhs.expr));
  int64_t upper = difference.getConstant().value_or(lhs.upper());
  return Size(difference, upper);
}

llvm::raw_ostream &operator<<(llvm::raw_ostream &os, const Size &size) {
  return os << size.str();
}

bool namesIdentifier(StringRef code, StringRef word) {
  auto identifierChar = [](char c) { return llvm::isAlnum(c) || c == '_'; };
  for (size_t at = code.find(word); at != StringRef::npos;
       at = code.find(word, at + 1)) {
    size_t end = at + word.size();
    if ((at == 0 || !identifierChar(code[at - 1])) &&
        (end == code.size() || !identifierChar(code[end])))
      return true;
  }
  return false;
}

std::string dimParameterName(StringRef name) {
  std::string out = "kd_";
  for (char c : name) {
    if (llvm::isAlnum(c))
      out += c;
    else if (c == '_')
      out += "__";
    else
      out += "_" + llvm::utohexstr(static_cast<uint8_t>(c), /*LowerCase=*/true,
                                   /*Width=*/2);
  }
  return out;
}

SmallVector<StringRef> dimNamesOf(Operation *func) {
  SmallVector<StringRef> names;
  if (func)
    if (auto ranges = func->getAttrOfType<DictionaryAttr>(kDimRangesAttr))
      for (NamedAttribute entry : ranges)
        names.push_back(entry.getName().getValue());
  return names;
}

Sizes sizesOf(RankedTensorType type, const DimRanges &ranges) {
  std::optional<SymbolicShape> shape = symbolicShapeOf(type);
  if (!shape)
    llvm::report_fatal_error("a kernel's tensor has a `?` without its size");
  Sizes sizes;
  for (const DimExpr &dim : *shape) {
    if (auto value = dim.getConstant()) {
      sizes.push_back(Size(*value));
      continue;
    }
    // Memory planning refuses a size without a bounded range first.
    sizes.push_back(Size(dim, upperBound(dim, ranges).value_or(INT64_MAX)));
  }
  return sizes;
}

Sizes sizesOf(Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  if (!isSymbolic(type))
    return sizesOf(type, DimRanges());
  Operation *scope = value.getParentRegion()->getParentOp();
  auto func = isa<func::FuncOp>(scope) ? cast<func::FuncOp>(scope)
                                       : scope->getParentOfType<func::FuncOp>();
  return sizesOf(type, func ? dimRangesOf(func) : DimRanges());
}

Size productOf(ArrayRef<Size> sizes) {
  Size product(1);
  for (const Size &s : sizes)
    product *= s;
  return product;
}

Sizes stridesOf(ArrayRef<Size> sizes) {
  Sizes strides(sizes.size(), Size(1));
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * sizes[d + 1];
  return strides;
}

} // namespace kiln
