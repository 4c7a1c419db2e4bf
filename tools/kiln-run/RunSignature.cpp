//===- RunSignature.cpp - what a run takes and gives ----------------------===//

#include "RunSignature.h"
#include "RunOptions.h"

#include "kiln/Dialect/Kiln/KilnOps.h"
#include "kiln/Dialect/Kiln/SymbolicShapes.h"
#include "kiln/Dialect/Kiln/TensorNames.h"
#include "kiln/Interpreter/Interpreter.h"

#include "llvm/ADT/DenseSet.h"

#include <algorithm>
#include <climits>
#include <optional>

using namespace mlir;
using kiln::HostTensor;

namespace kilnrun {

llvm::StringMap<int64_t> integerInputBounds(func::FuncOp func) {
  llvm::StringMap<int64_t> bounds;
  for (BlockArgument arg : func.getArguments()) {
    auto type = cast<RankedTensorType>(arg.getType());
    if (!type.getElementType().isSignlessInteger() ||
        type.getElementType().isInteger(1))
      continue;
    auto nameAttr =
        func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kiln::kNameAttr);
    std::string name = nameAttr ? nameAttr.str()
                                : "input" + std::to_string(arg.getArgNumber());
    std::optional<int64_t> bound;
    // The input's values through the ops that move them, to the gathers
    // that index with them.
    SmallVector<Value> worklist = {arg};
    llvm::DenseSet<Value> seen;
    while (!worklist.empty()) {
      Value v = worklist.pop_back_val();
      if (!seen.insert(v).second)
        continue;
      for (OpOperand &use : v.getUses()) {
        Operation *user = use.getOwner();
        if (auto gather = dyn_cast<kiln::GatherOp>(user);
            gather && use.getOperandNumber() == 1) {
          auto table = cast<RankedTensorType>(gather.getData().getType());
          int64_t axis = gather.getAxis();
          if (axis >= 0 && axis < table.getRank() &&
              !table.isDynamicDim(axis) && table.getDimSize(axis) > 0)
            bound = std::min(bound.value_or(INT64_MAX), table.getDimSize(axis));
          continue;
        }
        if (kiln::isDataMovement(user) || isa<kiln::CastOp>(user))
          for (Value result : user->getResults())
            worklist.push_back(result);
      }
    }
    if (bound)
      bounds[name] = *bound;
  }
  return bounds;
}

/// Bytes as a 4-bit type, each wrapped to its four bits.
static HostTensor inFourBits(const HostTensor &t, Type elementType) {
  HostTensor converted = *HostTensor::allocate(elementType, t.shape);
  for (int64_t i = 0, n = t.numElements(); i < n; ++i)
    converted.setFromInt(i, t.getAsInt(i));
  return converted;
}

FailureOr<SmallVector<HostTensor>>
gatherInputs(ArrayRef<std::pair<std::string, RankedTensorType>> signature,
             llvm::StringMap<HostTensor> &given, std::mt19937 &rng,
             const llvm::StringMap<int64_t> &bounds) {
  SmallVector<HostTensor> result;
  for (auto &[name, type] : signature) {
    auto it = given.find(name);
    if (it == given.end()) {
      // A mask's values are 0 and 1 (its name is all that says so).
      auto bound = bounds.find(name);
      int64_t integers =
          bound != bounds.end() ? bound->second
          : StringRef(name).lower().find("mask") != std::string::npos ? 2
                                                                      : 4;
      result.push_back(kiln::randomTensor(type, rng, integers));
      continue;
    }
    // Symbolic dims take the file's sizes; the interpreter checks that
    // inputs agree on them. A float32 array feeds a 16-bit float or float8
    // input, rounded to it, and bytes feed a 4-bit input, as kiln-run
    // writes them: NumPy has no bfloat16, float8 or 4-bit types, and so a
    // benchmark can give Kiln and its peers the same values.
    HostTensor &file = it->second;
    Type want = type.getElementType();
    if (file.elementType.isF32() &&
        (want.isF16() || want.isBF16() ||
         isa<Float8E4M3FNType, Float8E5M2Type>(want)))
      file = inElementType(file, want);
    if ((file.elementType.isSignlessInteger(8) && want.isSignlessInteger(4)) ||
        (file.elementType.isUnsignedInteger(8) && want.isUnsignedInteger(4)))
      file = inFourBits(file, want);
    RankedTensorType fileType = file.getType();
    bool fits = fileType.getElementType() == type.getElementType() &&
                fileType.getRank() == type.getRank();
    for (int64_t d = 0; fits && d < type.getRank(); ++d)
      fits =
          type.isDynamicDim(d) || type.getDimSize(d) == fileType.getDimSize(d);
    if (!fits) {
      std::string given, expected;
      llvm::raw_string_ostream(given) << file.getType();
      llvm::raw_string_ostream(expected) << type;
      fail("input '" + name + "' is " + given + ", the model takes " +
           expected);
      return failure();
    }
    result.push_back(file);
  }
  return result;
}

HostTensor inElementType(const HostTensor &t, Type elementType) {
  if (t.elementType == elementType || !isa<FloatType>(t.elementType) ||
      !isa<FloatType>(elementType))
    return t;
  HostTensor converted = *HostTensor::allocate(elementType, t.shape);
  for (int64_t i = 0, n = t.numElements(); i < n; ++i)
    converted.setFromDouble(i, t.getAsDouble(i));
  return converted;
}

/// The signature with its symbolic dims at the values random inputs take:
/// --run-dim, else what the inputs from files say, else the top of the
/// dim's range. A dim left without value stays dynamic (drawn as 1).
/// Only the random inputs' types change.
static FailureOr<Signature>
concreteSignature(func::FuncOp func, Signature signature,
                  const llvm::StringMap<HostTensor> &given) {
  llvm::StringMap<int64_t> values;
  if (failed(parseRunDims(values)))
    return failure();
  for (auto &[name, type] : signature.inputs) {
    auto file = given.find(name);
    std::optional<kiln::SymbolicShape> sizes = kiln::symbolicShapeOf(type);
    if (file == given.end() || !sizes ||
        sizes->size() != file->second.shape.size())
      continue;
    for (auto [d, size] : llvm::enumerate(*sizes))
      if (std::optional<std::string> symbol = size.getSymbol())
        values.try_emplace(*symbol, file->second.shape[d]);
  }
  if (auto ranges = func->getAttrOfType<DictionaryAttr>(kiln::kDimRangesAttr))
    for (NamedAttribute range : ranges)
      if (auto bounds = dyn_cast<DenseI64ArrayAttr>(range.getValue());
          bounds && bounds.size() == 2)
        values.try_emplace(range.getName().getValue(), bounds[1]);
  auto lookup = [&](StringRef name) -> std::optional<int64_t> {
    auto it = values.find(name);
    if (it == values.end())
      return std::nullopt;
    return it->second;
  };
  // Inputs from files keep the symbolic type: the interpreter checks them.
  for (auto &[name, type] : signature.inputs)
    if (!given.count(name))
      if (std::optional<SmallVector<int64_t>> shape =
              kiln::concreteShape(type, lookup))
        type = RankedTensorType::get(*shape, type.getElementType());
  return signature;
}

/// The names and types `func` declares (names from the importer's
/// attributes, else inputN / outputN).
static Signature signatureOf(func::FuncOp func) {
  Signature s;
  for (auto [i, type] : llvm::enumerate(func.getArgumentTypes())) {
    auto name = func.getArgAttrOfType<StringAttr>(i, kiln::kNameAttr);
    s.inputs.push_back({name ? name.str() : "input" + std::to_string(i),
                        cast<RankedTensorType>(type)});
  }
  for (size_t i = 0; i < func.getNumResults(); ++i) {
    auto name = func.getResultAttrOfType<StringAttr>(i, kiln::kNameAttr);
    s.outputNames.push_back(name ? name.str() : "output" + std::to_string(i));
  }
  return s;
}

FailureOr<FunctionRun> prepareRun(func::FuncOp func,
                                  llvm::StringMap<HostTensor> &given,
                                  std::mt19937 &rng) {
  FailureOr<Signature> signature =
      concreteSignature(func, signatureOf(func), given);
  if (failed(signature))
    return failure();
  auto inputs =
      gatherInputs(signature->inputs, given, rng, integerInputBounds(func));
  if (failed(inputs))
    return failure();
  return FunctionRun{std::move(*signature), std::move(*inputs)};
}

} // namespace kilnrun
