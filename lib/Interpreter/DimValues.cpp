//===- DimValues.cpp - Values of the named dims during a run --------------===//

#include "DimValues.h"

#include "kiln/Dialect/Kiln/SymbolicShapes.h"
#include "kiln/Dialect/Kiln/TensorNames.h"
#include "mlir/IR/Diagnostics.h"

using namespace mlir;

namespace kiln {

namespace {
thread_local const llvm::StringMap<int64_t> *activeValues = nullptr;

std::optional<int64_t> lookup(StringRef name) {
  if (!activeValues)
    return std::nullopt;
  auto it = activeValues->find(name);
  if (it == activeValues->end())
    return std::nullopt;
  return it->second;
}
} // namespace

namespace {
/// One symbolic dim of an input: its size and its value in this run.
struct Observed {
  DimExpr size;
  int64_t value;
  std::string where;
};

/// The value of the one unknown name of `size` that makes it `value`, when
/// the name occurs linearly (`c * name + rest`).
std::optional<std::pair<std::string, int64_t>>
solveForUnknown(const DimExpr &size, int64_t value,
                const llvm::StringMap<int64_t> &known) {
  auto lookupKnown = [&](StringRef name) -> std::optional<int64_t> {
    auto it = known.find(name);
    if (it == known.end())
      return std::nullopt;
    return it->second;
  };
  std::optional<DimExpr> rest = size.substitute(lookupKnown);
  if (!rest)
    return std::nullopt;
  std::vector<std::string> unknown = rest->symbols();
  if (unknown.size() != 1)
    return std::nullopt;
  // rest = c * x + k: k at x = 0, c from x = 1; linear when x = 2 agrees.
  auto at = [&](int64_t x) {
    return rest->evaluate(
        [&](StringRef) -> std::optional<int64_t> { return x; });
  };
  std::optional<int64_t> k = at(0), one = at(1), two = at(2);
  if (!k || !one || !two || *two - *k != 2 * (*one - *k))
    return std::nullopt;
  int64_t c = *one - *k;
  if (c == 0 || (value - *k) % c != 0)
    return std::nullopt;
  return std::make_pair(unknown.front(), (value - *k) / c);
}
} // namespace

LogicalResult learnDimValues(func::FuncOp func, ArrayRef<HostTensor> inputs,
                             llvm::StringMap<int64_t> &values) {
  std::vector<Observed> observed;
  for (auto [index, argument] : llvm::enumerate(func.getArguments())) {
    auto type = dyn_cast<RankedTensorType>(argument.getType());
    if (!type || type.hasStaticShape() || index >= inputs.size())
      continue;
    std::optional<SymbolicShape> sizes = symbolicShapeOf(type);
    if (!sizes || sizes->size() != inputs[index].shape.size())
      continue; // checkTensorType reports the rank.
    auto name = func.getArgAttrOfType<StringAttr>(index, kNameAttr);
    std::string input = name ? "input '" + name.getValue().str() + "'"
                             : "input #" + std::to_string(index);
    for (auto [d, size] : llvm::enumerate(*sizes))
      if (!size.isConstant())
        observed.push_back({size, inputs[index].shape[d],
                            input + " dim " + std::to_string(d)});
  }
  // Names first, then what they leave to solve.
  llvm::StringMap<std::string> learnedFrom;
  for (bool progress = true; progress;) {
    progress = false;
    for (const Observed &o : observed) {
      std::optional<std::pair<std::string, int64_t>> solved;
      if (std::optional<std::string> name = o.size.getSymbol())
        solved = std::make_pair(*name, o.value);
      else
        solved = solveForUnknown(o.size, o.value, values);
      if (!solved || values.count(solved->first))
        continue;
      values[solved->first] = solved->second;
      learnedFrom[solved->first] = o.where;
      progress = true;
    }
  }
  auto lookupValue = [&](StringRef name) -> std::optional<int64_t> {
    auto it = values.find(name);
    if (it == values.end())
      return std::nullopt;
    return it->second;
  };
  for (const Observed &o : observed) {
    std::optional<int64_t> expected = o.size.evaluate(lookupValue);
    if (!expected)
      return func.emitError("dim sizes: ")
             << o.where << " is '" << o.size.str()
             << "', whose names no input dim determines";
    if (*expected != o.value) {
      std::string names;
      for (const std::string &name : o.size.symbols())
        names += (names.empty() ? "" : ", ") + name + " = " +
                 std::to_string(values[name]) + " (from " + learnedFrom[name] +
                 ")";
      return func.emitError("dim sizes: ")
             << o.where << " is " << o.value << ", but its size '"
             << o.size.str() << "' is " << *expected << " with " << names;
    }
  }
  if (auto ranges = func->getAttrOfType<DictionaryAttr>(kDimRangesAttr))
    for (NamedAttribute range : ranges) {
      auto bounds = dyn_cast<DenseI64ArrayAttr>(range.getValue());
      auto it = values.find(range.getName().getValue());
      if (!bounds || bounds.size() != 2 || it == values.end())
        continue;
      if (it->second < bounds[0] || it->second > bounds[1])
        return func.emitError("dim sizes: '")
               << it->first() << "' is " << it->second << " (from "
               << learnedFrom[it->first()] << "), outside its range "
               << bounds[0] << ".." << bounds[1];
    }
  return success();
}

ScopedDimValues::ScopedDimValues(const llvm::StringMap<int64_t> &values)
    : previous(activeValues) {
  activeValues = &values;
}

ScopedDimValues::~ScopedDimValues() { activeValues = previous; }

FailureOr<RankedTensorType> concreteType(Operation *op, Type type) {
  auto tensorType = dyn_cast<RankedTensorType>(type);
  if (!tensorType)
    return op->emitOpError("expected a ranked tensor type, got ") << type;
  if (tensorType.hasStaticShape())
    return tensorType;
  std::optional<SmallVector<int64_t>> shape = concreteShape(tensorType, lookup);
  if (!shape)
    return op->emitOpError("cannot evaluate the symbolic shape of ")
           << type << " (a dim without value, or a negative size)";
  return RankedTensorType::get(*shape, tensorType.getElementType());
}

std::optional<SmallVector<int64_t>>
concreteShapeOnThread(RankedTensorType type) {
  return concreteShape(type, lookup);
}

FailureOr<int64_t> evaluateSize(Operation *op, StringRef text) {
  std::string error;
  std::optional<DimExpr> size = DimExpr::parse(text, error);
  std::optional<int64_t> value = size ? size->evaluate(lookup) : std::nullopt;
  if (!value)
    return op->emitOpError("cannot evaluate the size '")
           << text << "'" << (error.empty() ? "" : ": " + error);
  return *value;
}

} // namespace kiln
