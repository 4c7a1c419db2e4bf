//===- DimBindings.h - Values of a model's symbolic dims --------*- C++ -*-===//
//
// Exports name their dynamic dims (`batch`, `sequence`, and, in exports with
// a KV cache, expressions such as `past_sequence + sequence`). Each name is
// either pinned to a value at compile time (`--dim batch=1`, or an input's
// whole shape with `--input-shape ids=1x128`, which gives the names its dims
// carry) or left symbolic over a range (`--dim batch=1:8`). Every input
// sharing a name gets the same size, and an expression gets its size from
// the names in it.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_IMPORTER_ONNX_DIMBINDINGS_H
#define KILN_LIB_IMPORTER_ONNX_DIMBINDINGS_H

#include "kiln/Dialect/Kiln/DimExpr.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace onnx {
class TensorShapeProto_Dimension;
} // namespace onnx

namespace kiln {

/// Dim names in the order first seen, each once.
using DimNames = llvm::SetVector<std::string, std::vector<std::string>,
                                 std::set<std::string>>;

class DimBindings {
public:
  /// Starts from the values, ranges and expressions given for the dims
  /// (`dimsOption`: how the caller names that option, for messages).
  DimBindings(const llvm::StringMap<int64_t> &given,
              const llvm::StringMap<std::pair<int64_t, int64_t>> &ranges,
              const llvm::StringMap<std::string> &expressions,
              std::optional<std::pair<int64_t, int64_t>> unboundRange,
              llvm::StringRef dimsOption);

  /// The symbolic names' ranges: those given, and those a name without
  /// value took from the unbound range.
  const llvm::StringMap<std::pair<int64_t, int64_t>> &symbolRanges() const {
    return ranges;
  }

  /// Whether `dim` has a value. Some exporters write -1 for a dim they do
  /// not know, as onnxruntime reads it; other negative values are errors.
  static bool isKnown(const onnx::TensorShapeProto_Dimension &dim);

  /// The name of dim `axis` of input `input`: its `dim_param`, or
  /// `<input>.<axis>` when it has none (Keras exporters write "None" for
  /// every unknown dim, which names nothing).
  static std::string nameOf(const onnx::TensorShapeProto_Dimension &dim,
                            llvm::StringRef input, int axis);

  /// Records that dim `name` is `value`, as `source` (an `--input-shape`
  /// flag) says. Returns an error message when an earlier value differs.
  std::string learn(llvm::StringRef name, int64_t value,
                    llvm::StringRef source);

  /// The value of a dim named `name`: a bound name, or an expression of
  /// integers and bound names with + - * and parentheses. Returns nothing
  /// and adds the names that have no value to `missing` when it cannot be
  /// evaluated, and sets `error` when the value is negative or overflows.
  std::optional<int64_t> evaluate(llvm::StringRef name,
                                  DimNames &missing,
                                  std::string &error);

  /// The size of a dim named `name`: a constant when every name in it is
  /// pinned, else an expression over the names that have a range. Returns
  /// nothing and adds the names with neither to `missing`, or sets `error`
  /// when a constant size is negative or overflows.
  std::optional<DimExpr> size(llvm::StringRef name, DimNames &missing,
                              std::string &error);

  /// Whether `name` is an expression over other names rather than a name.
  static bool isExpression(llvm::StringRef name);

  /// The `--dim` names that no input dim mentioned (call after `evaluate`
  /// has seen every dim).
  std::vector<std::string> unusedGiven() const;

  /// Every name mentioned so far, in order, for messages.
  const DimNames &mentioned() const { return seen; }

private:
  struct Binding {
    int64_t value;
    /// Where it came from: "--dim batch=1" or "--input-shape ids=1x128".
    std::string source;
  };
  llvm::StringMap<Binding> values;
  llvm::StringMap<std::pair<int64_t, int64_t>> ranges;
  /// The range a name without value, range or expression takes, if any.
  std::optional<std::pair<int64_t, int64_t>> unboundRange;
  /// Names defined as expressions of other names (`--dim total=past+seq`).
  llvm::StringMap<DimExpr> definitions;
  llvm::StringMap<bool> givenNames;
  DimNames seen;
};

} // namespace kiln

#endif // KILN_LIB_IMPORTER_ONNX_DIMBINDINGS_H
