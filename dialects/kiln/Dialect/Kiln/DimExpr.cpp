//===- DimExpr.cpp - Symbolic sizes over a model's named dims -------------===//

#include "kiln/Dialect/Kiln/DimExpr.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CheckedArithmetic.h"

#include <algorithm>

using namespace llvm;

namespace kiln {

namespace {

/// Characters that end a bare name.
constexpr StringLiteral kNameStops = " \t+-*()[]";

/// Recursive descent over sum := product (('+' | '-') product)*,
/// product := atom ('*' atom)*,
/// atom := '-' atom | integer | name | [name] | (sum).
class DimExprParser {
public:
  explicit DimExprParser(StringRef text) : rest(text) {}

  std::optional<DimExpr> parse(std::string &error) {
    std::optional<DimExpr> result = sum();
    skipSpace();
    if (!problem.empty() || !rest.empty()) {
      error = !problem.empty() ? problem : "unexpected '" + rest.str() + "'";
      return std::nullopt;
    }
    return result;
  }

private:
  std::optional<DimExpr> sum() {
    std::optional<DimExpr> acc = product();
    while (acc) {
      skipSpace();
      bool minus = rest.starts_with("-");
      if (!minus && !rest.starts_with("+"))
        break;
      rest = rest.drop_front();
      std::optional<DimExpr> rhs = product();
      if (!rhs)
        return std::nullopt;
      acc = minus ? DimExpr::sub(*acc, *rhs) : DimExpr::add(*acc, *rhs);
      if (!acc)
        problem = "a coefficient overflows 64 bits";
    }
    return acc;
  }

  std::optional<DimExpr> product() {
    std::optional<DimExpr> acc = atom();
    while (acc) {
      skipSpace();
      if (!rest.consume_front("*"))
        break;
      std::optional<DimExpr> rhs = atom();
      if (!rhs)
        return std::nullopt;
      acc = DimExpr::mul(*acc, *rhs);
      if (!acc)
        problem = "a coefficient overflows 64 bits";
    }
    return acc;
  }

  std::optional<DimExpr> atom() {
    skipSpace();
    if (rest.consume_front("-")) {
      std::optional<DimExpr> negated = atom();
      if (negated && !(negated = DimExpr::mul(*negated, DimExpr::constant(-1))))
        problem = "a coefficient overflows 64 bits";
      return negated;
    }
    if (rest.consume_front("(")) {
      std::optional<DimExpr> inner = sum();
      skipSpace();
      if (inner && !rest.consume_front(")")) {
        problem = "missing ')'";
        return std::nullopt;
      }
      return inner;
    }
    if (rest.consume_front("[")) {
      size_t end = rest.find(']');
      if (end == StringRef::npos || end == 0) {
        problem = end == 0 ? "empty name in '[]'" : "missing ']'";
        return std::nullopt;
      }
      DimExpr name = DimExpr::symbol(rest.take_front(end));
      rest = rest.drop_front(end + 1);
      return name;
    }
    StringRef token = rest.take_front(rest.find_first_of(kNameStops));
    rest = rest.drop_front(token.size());
    if (token.empty()) {
      problem = rest.empty() ? "missing a name or number at the end"
                             : "unexpected '" + rest.take_front(1).str() + "'";
      return std::nullopt;
    }
    if (isDigit(token.front())) {
      int64_t literal;
      if (token.getAsInteger(10, literal)) {
        problem = "'" + token.str() + "' is not a 64-bit integer";
        return std::nullopt;
      }
      return DimExpr::constant(literal);
    }
    return DimExpr::symbol(token);
  }

  void skipSpace() { rest = rest.ltrim(" \t"); }

  StringRef rest;
  std::string problem;
};

/// Whether `name` parses back as the one name it is.
bool isBareName(StringRef name) {
  return !name.empty() && !isDigit(name.front()) &&
         name.find_first_of(kNameStops) == StringRef::npos;
}

} // namespace

DimExpr DimExpr::constant(int64_t value) {
  DimExpr e;
  if (value != 0)
    e.terms[{}] = value;
  return e;
}

DimExpr DimExpr::symbol(StringRef name) {
  DimExpr e;
  e.terms[{name.str()}] = 1;
  return e;
}

std::optional<DimExpr> DimExpr::parse(StringRef text, std::string &error) {
  return DimExprParser(text).parse(error);
}

std::optional<DimExpr> DimExpr::add(const DimExpr &lhs, const DimExpr &rhs) {
  DimExpr result = lhs;
  for (const auto &[monomial, coefficient] : rhs.terms) {
    int64_t &slot = result.terms[monomial];
    std::optional<int64_t> next = checkedAdd(slot, coefficient);
    if (!next)
      return std::nullopt;
    slot = *next;
    if (slot == 0)
      result.terms.erase(monomial);
  }
  return result;
}

std::optional<DimExpr> DimExpr::sub(const DimExpr &lhs, const DimExpr &rhs) {
  std::optional<DimExpr> negated = mul(rhs, constant(-1));
  return negated ? add(lhs, *negated) : std::nullopt;
}

std::optional<DimExpr> DimExpr::mul(const DimExpr &lhs, const DimExpr &rhs) {
  DimExpr result;
  for (const auto &[left, a] : lhs.terms)
    for (const auto &[right, b] : rhs.terms) {
      Monomial monomial = left;
      monomial.insert(monomial.end(), right.begin(), right.end());
      llvm::sort(monomial);
      std::optional<int64_t> coefficient = checkedMul(a, b);
      if (!coefficient)
        return std::nullopt;
      DimExpr term;
      term.terms[monomial] = *coefficient;
      std::optional<DimExpr> sum = add(result, term);
      if (!sum)
        return std::nullopt;
      result = std::move(*sum);
    }
  return result;
}

namespace {
/// Graded lexicographic order of monomials (a monomial order: compatible
/// with multiplication), for dividing by a polynomial of several terms.
bool gradedLexLess(const DimExpr::Monomial &a, const DimExpr::Monomial &b) {
  if (a.size() != b.size())
    return a.size() < b.size();
  // Equal degree: the monomial with more of the alphabetically first name
  // is larger; a and b are sorted, so compare position by position.
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i])
      return a[i] > b[i];
  return false;
}
} // namespace

std::optional<DimExpr> DimExpr::divExact(const DimExpr &lhs,
                                         const DimExpr &rhs) {
  if (rhs.terms.empty())
    return std::nullopt;
  if (rhs.terms.size() > 1) {
    // Polynomial division by leading terms; exact when the remainder
    // vanishes (`(32*b*p + 32*b*s) / (8*p + 8*s)` is `4*b`). Each step
    // removes the remainder's leading term, so the steps are bounded by its
    // terms as long as the quotient terms stay few.
    auto leading = [](const DimExpr &e) {
      auto best = e.terms.begin();
      for (auto it = e.terms.begin(); it != e.terms.end(); ++it)
        if (gradedLexLess(best->first, it->first))
          best = it;
      return *best;
    };
    auto [divisorNames, divisor] = leading(rhs);
    DimExpr quotient, remainder = lhs;
    for (int step = 0; !remainder.terms.empty(); ++step) {
      if (step > 64)
        return std::nullopt;
      auto [names, coefficient] = leading(remainder);
      DimExpr top, divisorTop;
      top.terms[names] = coefficient;
      divisorTop.terms[divisorNames] = divisor;
      std::optional<DimExpr> single = divExact(top, divisorTop);
      if (!single)
        return std::nullopt;
      std::optional<DimExpr> next = add(quotient, *single);
      std::optional<DimExpr> product = mul(*single, rhs);
      std::optional<DimExpr> rest =
          product ? sub(remainder, *product) : std::nullopt;
      if (!next || !rest)
        return std::nullopt;
      quotient = std::move(*next);
      remainder = std::move(*rest);
    }
    return quotient;
  }
  const auto &[divisorNames, divisor] = *rhs.terms.begin();
  DimExpr result;
  for (const auto &[names, coefficient] : lhs.terms) {
    // The divisor's names must all occur in the term (a multiset subset).
    Monomial remaining;
    if (!std::includes(names.begin(), names.end(), divisorNames.begin(),
                       divisorNames.end()))
      return std::nullopt;
    std::set_difference(names.begin(), names.end(), divisorNames.begin(),
                        divisorNames.end(), std::back_inserter(remaining));
    if (coefficient % divisor != 0 ||
        (coefficient == INT64_MIN && divisor == -1))
      return std::nullopt;
    result.terms[remaining] = coefficient / divisor;
  }
  return result;
}

std::optional<int64_t> DimExpr::getConstant() const {
  if (terms.empty())
    return 0;
  if (terms.size() == 1 && terms.begin()->first.empty())
    return terms.begin()->second;
  return std::nullopt;
}

std::optional<std::string> DimExpr::getSymbol() const {
  if (terms.size() != 1 || terms.begin()->second != 1 ||
      terms.begin()->first.size() != 1)
    return std::nullopt;
  return terms.begin()->first.front();
}

std::vector<std::string> DimExpr::symbols() const {
  std::vector<std::string> names;
  for (const auto &term : terms)
    names.insert(names.end(), term.first.begin(), term.first.end());
  llvm::sort(names);
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

std::optional<int64_t> DimExpr::evaluate(
    function_ref<std::optional<int64_t>(StringRef)> lookup) const {
  int64_t total = 0;
  for (const auto &[names, coefficient] : terms) {
    std::optional<int64_t> term = coefficient;
    for (const std::string &name : names) {
      std::optional<int64_t> value = lookup(name);
      if (!value)
        return std::nullopt;
      term = checkedMul(*term, *value);
      if (!term)
        return std::nullopt;
    }
    std::optional<int64_t> next = checkedAdd(total, *term);
    if (!next)
      return std::nullopt;
    total = *next;
  }
  return total;
}

std::optional<DimExpr>
DimExpr::replaceNames(function_ref<DimExpr(StringRef)> replacement) const {
  DimExpr result;
  for (const auto &[names, coefficient] : terms) {
    DimExpr term = constant(coefficient);
    for (const std::string &name : names) {
      std::optional<DimExpr> next = mul(term, replacement(name));
      if (!next)
        return std::nullopt;
      term = std::move(*next);
    }
    std::optional<DimExpr> sum = add(result, term);
    if (!sum)
      return std::nullopt;
    result = std::move(*sum);
  }
  return result;
}

std::optional<DimExpr> DimExpr::substitute(
    function_ref<std::optional<int64_t>(StringRef)> lookup) const {
  return replaceNames([&](StringRef name) {
    std::optional<int64_t> value = lookup(name);
    return value ? constant(*value) : symbol(name);
  });
}

std::optional<DimExpr> DimExpr::substituteName(StringRef name,
                                               const DimExpr &value) const {
  return replaceNames(
      [&](StringRef part) { return part == name ? value : symbol(part); });
}

std::optional<std::pair<int64_t, int64_t>> DimExpr::bounds(
    function_ref<std::optional<std::pair<int64_t, int64_t>>(StringRef)> range)
    const {
  // Every name is >= 0, so a term is monotone in each name: its extremes
  // are at all-min and all-max, with the sign of its coefficient.
  int64_t low = 0, high = 0;
  for (const auto &[names, coefficient] : terms) {
    std::optional<int64_t> atMin = 1, atMax = 1;
    for (const std::string &name : names) {
      auto r = range(name);
      if (!r || r->first < 0 || r->first > r->second)
        return std::nullopt;
      atMin = checkedMul(*atMin, r->first);
      atMax = checkedMul(*atMax, r->second);
      if (!atMin || !atMax)
        return std::nullopt;
    }
    atMin = checkedMul(*atMin, coefficient);
    atMax = checkedMul(*atMax, coefficient);
    if (!atMin || !atMax)
      return std::nullopt;
    std::optional<int64_t> nextLow = checkedAdd(low, std::min(*atMin, *atMax));
    std::optional<int64_t> nextHigh =
        checkedAdd(high, std::max(*atMin, *atMax));
    if (!nextLow || !nextHigh)
      return std::nullopt;
    low = *nextLow;
    high = *nextHigh;
  }
  return std::make_pair(low, high);
}

std::string DimExpr::str() const {
  if (terms.empty())
    return "0";
  std::vector<const std::pair<const Monomial, int64_t> *> order;
  for (const auto &term : terms)
    order.push_back(&term);
  std::stable_sort(order.begin(), order.end(), [](auto *a, auto *b) {
    return a->first.size() > b->first.size();
  });
  std::string text;
  for (const auto *term : order) {
    const auto &[names, coefficient] = *term;
    bool negative = coefficient < 0;
    if (text.empty())
      text = negative ? "-" : "";
    else
      text += negative ? " - " : " + ";
    // |INT64_MIN| does not fit; its digits are written as they are.
    std::string magnitude =
        coefficient == INT64_MIN
            ? std::string("9223372036854775808")
            : std::to_string(negative ? -coefficient : coefficient);
    std::vector<std::string> factors;
    if (names.empty() || magnitude != "1")
      factors.push_back(magnitude);
    for (const std::string &name : names)
      factors.push_back(isBareName(name) ? name : "[" + name + "]");
    text += llvm::join(factors, "*");
  }
  return text;
}

std::optional<DimExpr> productOf(ArrayRef<DimExpr> dims) {
  DimExpr product = DimExpr::constant(1);
  for (const DimExpr &dim : dims) {
    std::optional<DimExpr> next = DimExpr::mul(product, dim);
    if (!next)
      return std::nullopt;
    product = std::move(*next);
  }
  return product;
}

} // namespace kiln
