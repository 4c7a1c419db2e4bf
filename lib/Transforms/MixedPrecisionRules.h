//===- MixedPrecisionRules.h - kiln-mixed-precision internals ---*- C++ -*-===//
//
// What the files of kiln-mixed-precision share: how a value is brought to a
// narrower float type, the constant conversion, and the Assigner that
// decides and converts the type of every op of a function body.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_TRANSFORMS_MIXEDPRECISIONRULES_H
#define KILN_LIB_TRANSFORMS_MIXEDPRECISIONRULES_H

#include "kiln/Dialect/Kiln/KilnOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"

#include <optional>
#include <string>
#include <tuple>

namespace kiln::mixed_precision {

/// How a value is brought to a narrower float type.
enum class Conversion {
  /// As kiln.cast does: round to nearest even, overflow to infinity.
  Round,
  /// Finite values beyond the range saturate to its ends (weights).
  Saturate,
  /// Every value, infinities included, is clamped to the finite range: an
  /// attention mask of -inf or f32's lowest becomes the low type's lowest,
  /// so that a fully masked row stays finite.
  Clamp,
};

/// The element type of `v`, a value of shaped type.
mlir::Type elementTypeOf(mlir::Value v);

/// `type`, a ranked tensor type, with element type `elementType`; its shape
/// and encoding stay.
mlir::RankedTensorType withElementType(mlir::Type type, mlir::Type elementType);

/// The value of a float constant converted to element type `to`: splats stay
/// splats, small constants stay inline, larger ones become dense_resource
/// blobs named after the original.
mlir::FailureOr<mlir::ElementsAttr>
convertElements(mlir::ElementsAttr value, mlir::FloatType to, Conversion how);

/// `name` in lower case without underscores or a `kiln.` prefix, so that
/// `LayerNorm`, `layer_norm` and `kiln.layer_norm` are one op type; ONNX's
/// names of ops that import as another kiln op name that op.
std::string normalizeOpType(llvm::StringRef name);

/// What an op computes in.
struct Decision {
  /// The element type its f32 operands and results take; null leaves the op
  /// alone.
  mlir::Type type;
  /// Why it stays f32, when it does.
  std::string rule;
  /// The op is not one the pass knows: its operands are brought back to f32
  /// and its results stay as they are.
  bool opaque = false;
};

/// Assigns types over one function body.
class Assigner {
public:
  /// Prepares the walk over the body of `func`: f32 becomes `low` except
  /// where an island, a kept op type or node, or `keepIoTypes` keeps it.
  Assigner(mlir::func::FuncOp func, mlir::FloatType low, bool keepIoTypes,
           const llvm::StringSet<> &disabledIslands,
           const llvm::StringSet<> &keepOpTypes,
           const llvm::StringSet<> &keepNodeNames)
      : func(func), block(func.getBody().front()), low(low),
        f32(mlir::Float32Type::get(func.getContext())),
        keepIoTypes(keepIoTypes), disabledIslands(disabledIslands),
        keepOpTypes(keepOpTypes), keepNodeNames(keepNodeNames) {}

  /// Decides and converts every op; returns the node names that matched
  /// keep-node-names.
  llvm::StringSet<> run();

private:
  /// Finds the islands of reductions and softmax.
  void collectStatistics();
  /// Finds the ops that compute attention masks.
  void collectMasks();
  /// Finds the ops that compute sin and cos angles.
  void collectAngles();
  /// Finds the ops that compute the values a cast quantizes.
  void collectQuantizers();
  /// Finds the products cast to integers (MatMulInteger's, ConvInteger's).
  void collectIntegerProducts();
  /// The type `op` computes in and the rule that keeps it f32, if one does.
  Decision decide(mlir::Operation *op);
  /// f32 when an operand computed by an op before `op` arrives in f32, the
  /// low type otherwise.
  mlir::Type arrivalType(mlir::Operation *op);
  /// The keep-op-types or keep-node-names rule that keeps `op` f32, if any.
  std::optional<std::string> overrideRule(mlir::Operation *op);
  /// Converts the operands of `op` and retypes its results as `decision`
  /// says, and records the rule that kept it f32.
  void apply(mlir::Operation *op, const Decision &decision);
  /// `value` converted to element type `type` as `how` says, for `user`;
  /// a `shared` conversion sits after the value's definition and serves
  /// every user that asks for it.
  mlir::Value convert(mlir::Value value, mlir::Type type, Conversion how,
                      mlir::Operation *user, bool shared);
  /// `constant` converted at compile time, once per type and conversion;
  /// null when it cannot be.
  mlir::Value convertConstant(ConstantOp constant, mlir::FloatType type,
                              Conversion how);
  /// An f32 scalar constant of `value`, built at `b`.
  mlir::Value scalar(mlir::OpBuilder &b, mlir::Location loc, double value);
  /// Whether the island of `rule` is on.
  bool isOn(llvm::StringRef rule) const {
    return !disabledIslands.contains(rule);
  }

  /// The function whose body is assigned.
  mlir::func::FuncOp func;
  /// Its one block.
  mlir::Block &block;
  /// The 16-bit type f32 values become.
  mlir::FloatType low;
  /// f32, the type islands keep.
  mlir::Type f32;
  /// Graph inputs and outputs keep their f32 type.
  bool keepIoTypes;
  /// The pass options: islands turned off, op types and ONNX node names kept
  /// in f32.
  const llvm::StringSet<> &disabledIslands, &keepOpTypes, &keepNodeNames;
  /// The keep-node-names entries that matched an op.
  llvm::StringSet<> matchedNodes;
  /// Values that were f32 before the pass: the ones it may retype.
  llvm::DenseSet<mlir::Value> wasF32;
  /// The islands and their rules, found before the walk.
  llvm::DenseMap<mlir::Operation *, llvm::StringRef> islandRules;
  /// Conversions shared by users that cannot fuse them.
  llvm::DenseMap<std::tuple<mlir::Value, mlir::Type, int>, mlir::Value>
      sharedConversions;
  /// Constants converted at compile time, by constant, type and conversion.
  llvm::DenseMap<std::tuple<mlir::Operation *, mlir::Type, int>, mlir::Value>
      convertedConstants;
};

} // namespace kiln::mixed_precision

#endif // KILN_LIB_TRANSFORMS_MIXEDPRECISIONRULES_H
