//===- DimBindings.cpp - Values of a model's symbolic dims ----------------===//

#include "DimBindings.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CheckedArithmetic.h"

#include <onnx/onnx_pb.h>

using namespace llvm;

namespace kiln {

namespace {

/// Evaluates + - * and parentheses over integers and names, with checked
/// arithmetic. A name is a run of characters other than spaces, operators
/// and parentheses; `lookup` gives its value or nothing.
class DimExpression {
public:
  DimExpression(StringRef text,
                function_ref<std::optional<int64_t>(StringRef)> lookup)
      : rest(text), lookup(lookup) {}

  /// Parses the whole text. False when it is not an expression of that
  /// form; otherwise `value` is set unless a name has no value.
  bool parse(std::optional<int64_t> &value) {
    value = sum();
    skipSpace();
    return !malformed && rest.empty();
  }

  bool overflowed = false;

private:
  std::optional<int64_t> sum() {
    std::optional<int64_t> acc = product();
    while (true) {
      skipSpace();
      if (!rest.consume_front("+") && !rest.starts_with("-"))
        return acc;
      bool minus = rest.consume_front("-");
      std::optional<int64_t> rhs = product();
      acc = combine(acc, rhs, minus ? checkedSub<int64_t>
                                    : checkedAdd<int64_t>);
    }
  }

  std::optional<int64_t> product() {
    std::optional<int64_t> acc = atom();
    while (true) {
      skipSpace();
      if (!rest.consume_front("*"))
        return acc;
      acc = combine(acc, atom(), checkedMul<int64_t>);
    }
  }

  std::optional<int64_t> atom() {
    skipSpace();
    if (rest.consume_front("(")) {
      std::optional<int64_t> inner = sum();
      skipSpace();
      if (!rest.consume_front(")"))
        malformed = true;
      return inner;
    }
    size_t length = rest.find_first_of(" \t+-*()");
    StringRef token = rest.take_front(length);
    rest = rest.drop_front(token.size());
    if (token.empty()) {
      malformed = true;
      return std::nullopt;
    }
    int64_t literal;
    if (!token.getAsInteger(10, literal))
      return literal;
    return lookup(token);
  }

  std::optional<int64_t>
  combine(std::optional<int64_t> lhs, std::optional<int64_t> rhs,
          std::optional<int64_t> (*op)(int64_t, int64_t)) {
    if (!lhs || !rhs)
      return std::nullopt;
    std::optional<int64_t> result = op(*lhs, *rhs);
    overflowed |= !result.has_value();
    return result;
  }

  void skipSpace() { rest = rest.ltrim(" \t"); }

  StringRef rest;
  function_ref<std::optional<int64_t>(StringRef)> lookup;
  bool malformed = false;
};

} // namespace

DimBindings::DimBindings(
    const StringMap<int64_t> &given,
    const StringMap<std::pair<int64_t, int64_t>> &ranges,
    const StringMap<std::string> &expressions,
    std::optional<std::pair<int64_t, int64_t>> unboundRange,
    StringRef dimsOption)
    : ranges(ranges), unboundRange(unboundRange) {
  for (const auto &entry : ranges)
    givenNames[entry.getKey()] = false;
  for (const auto &entry : expressions) {
    std::string error;
    // The caller gave the canonical text (DimExpr::str, as parseDimValue
    // writes it).
    if (std::optional<DimExpr> expr = DimExpr::parse(entry.second, error)) {
      definitions[entry.getKey()] = *expr;
      givenNames[entry.getKey()] = false;
    }
  }
  for (const auto &entry : given) {
    std::string source = dimsOption.str() + " " + entry.getKey().str() + "=" +
                         std::to_string(entry.second);
    values[entry.getKey()] = {entry.second, source};
    givenNames[entry.getKey()] = false;
  }
}

bool DimBindings::isKnown(const onnx::TensorShapeProto::Dimension &dim) {
  return dim.has_dim_value() && dim.dim_value() != -1;
}

std::string DimBindings::nameOf(const onnx::TensorShapeProto::Dimension &dim,
                                StringRef input, int axis) {
  StringRef param = StringRef(dim.dim_param()).trim();
  if (param.empty() || param == "None")
    return input.str() + "." + std::to_string(axis);
  return param.str();
}

bool DimBindings::isExpression(StringRef name) {
  if (name.find_first_of("+-*()") == StringRef::npos)
    return false;
  std::optional<int64_t> value;
  return DimExpression(name, [](StringRef) { return std::nullopt; })
      .parse(value);
}

std::string DimBindings::learn(StringRef name, int64_t value,
                               StringRef source) {
  seen.insert(name.str());
  if (auto given = givenNames.find(name); given != givenNames.end())
    given->second = true;
  auto [it, inserted] = values.try_emplace(name, Binding{value, source.str()});
  if (it->second.value == value)
    return "";
  return source.str() + " makes dim '" + name.str() + "' " +
         std::to_string(value) + ", but " + it->second.source + " makes it " +
         std::to_string(it->second.value);
}

std::optional<int64_t> DimBindings::evaluate(StringRef name,
                                             DimNames &missing,
                                             std::string &error) {
  auto lookup = [&](StringRef part) -> std::optional<int64_t> {
    seen.insert(part.str());
    if (auto given = givenNames.find(part); given != givenNames.end())
      given->second = true;
    auto it = values.find(part);
    if (it == values.end())
      return std::nullopt;
    return it->second.value;
  };
  // A name that is bound as a whole wins over reading it as an expression
  // (a dim called "seq-len").
  if (values.count(name) || !isExpression(name)) {
    std::optional<int64_t> value = lookup(name);
    if (!value)
      missing.insert(name.str());
    return value;
  }
  std::optional<int64_t> value;
  DimNames unbound;
  auto lookupOrNote = [&](StringRef part) {
    std::optional<int64_t> v = lookup(part);
    if (!v)
      unbound.insert(part.str());
    return v;
  };
  // function_ref does not own the callable: it must outlive `expression`.
  DimExpression expression(name, lookupOrNote);
  (void)expression.parse(value);
  if (!unbound.empty()) {
    missing.insert(unbound.begin(), unbound.end());
    return std::nullopt;
  }
  if (expression.overflowed || !value || *value < 0) {
    error = "dim '" + name.str() + "' evaluates to " +
            (expression.overflowed || !value ? std::string("an overflow")
                                             : std::to_string(*value));
    return std::nullopt;
  }
  return value;
}

std::optional<DimExpr> DimBindings::size(StringRef name, DimNames &missing,
                                         std::string &error) {
  // A name bound as a whole wins over reading it as an expression.
  std::optional<DimExpr> expr;
  if (values.count(name) || ranges.count(name) || !isExpression(name)) {
    expr = DimExpr::symbol(name);
  } else {
    std::string parseError;
    expr = DimExpr::parse(name, parseError);
    if (!expr) {
      error = "dim '" + name.str() + "': " + parseError;
      return std::nullopt;
    }
  }
  // Names defined by others, a few levels deep (a cycle stays unresolved
  // and is reported as missing).
  for (int depth = 0; depth < 8; ++depth) {
    bool changed = false;
    DimExpr next;
    for (const std::string &part : expr->symbols()) {
      auto definition = definitions.find(part);
      if (definition == definitions.end())
        continue;
      seen.insert(part);
      givenNames[part] = true;
      std::optional<DimExpr> replaced =
          expr->substituteName(part, definition->second);
      if (!replaced) {
        error = "dim '" + name.str() + "' overflows";
        return std::nullopt;
      }
      expr = std::move(*replaced);
      changed = true;
      break;
    }
    if (!changed)
      break;
  }
  bool complete = true;
  std::optional<DimExpr> size =
      expr->substitute([&](StringRef part) -> std::optional<int64_t> {
        seen.insert(part.str());
        if (auto given = givenNames.find(part); given != givenNames.end())
          given->second = true;
        if (auto it = values.find(part); it != values.end())
          return it->second.value;
        if (!ranges.count(part) && unboundRange)
          ranges[part] = *unboundRange;
        if (!ranges.count(part)) {
          missing.insert(part.str());
          complete = false;
        }
        return std::nullopt;
      });
  if (!complete)
    return std::nullopt;
  std::optional<int64_t> constant = size ? size->getConstant() : std::nullopt;
  if (!size || (constant && *constant < 0)) {
    error = "dim '" + name.str() + "' evaluates to " +
            (!size ? std::string("an overflow") : std::to_string(*constant));
    return std::nullopt;
  }
  return size;
}

std::vector<std::string> DimBindings::unusedGiven() const {
  std::vector<std::string> unused;
  for (const auto &entry : givenNames)
    if (!entry.second)
      unused.push_back(entry.getKey().str());
  llvm::sort(unused);
  return unused;
}

} // namespace kiln
