//===- EmitterSupport.h - what the CUDA kernel generators share -*- C++ -*-===//
//
// Internal to the CUDA target: C types and conversions of kiln element types,
// broadcast indexing, the body emitter that turns fused ops into C
// statements, and one generator entry point per kernel family.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_TARGET_CUDA_EMITTERSUPPORT_H
#define KILN_LIB_TARGET_CUDA_EMITTERSUPPORT_H

#include "KernelEmitter.h"
#include "KernelSizes.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <optional>
#include <string>

namespace kiln {

constexpr int64_t kBlockSize = 256;
constexpr int64_t kMaxGrid = 65535;

/// The first statement of every kernel: wait for the kernel before it in
/// the stream, then let the next one launch (the prelude's kiln_pdl_enter
/// says why). The GEMM family's templates spell the same call.
constexpr const char *kPdlEnter = "  kiln_pdl_enter();\n";

inline mlir::RankedTensorType tensorType(mlir::Value v) {
  return llvm::cast<mlir::RankedTensorType>(v.getType());
}

/// The C type values of `t` are stored as.
std::string storageType(mlir::Type t);
/// The C type values of `t` are computed in: fp64 for f64, fp32 for the
/// other float types, integers in their own type.
std::string computeType(mlir::Type t);

/// How C spells float math in the compute type of a float element type:
/// fp32 uses the `f`-suffixed libm functions and literals (`expf`, `1.0f`),
/// fp64 the plain ones (`exp`, `1.0`). Emitters build every float
/// expression through one of these, so a double kernel never rounds
/// through float.
class FloatSpelling {
public:
  explicit FloatSpelling(mlir::Type elementType)
      : isDouble(elementType.isF64()) {}

  /// The compute type: `float` or `double`.
  std::string type() const { return isDouble ? "double" : "float"; }
  /// The libm function `name`, given by its double name: `exp` -> `expf`.
  std::string fn(llvm::StringRef name) const {
    return isDouble ? name.str() : (name + "f").str();
  }
  /// A literal written with a decimal point: `0.5` -> `0.5f`.
  std::string literal(llvm::StringRef digits) const {
    return isDouble ? digits.str() : (digits + "f").str();
  }
  /// Positive or negative infinity, from its bit pattern.
  std::string infinity(bool negative = false) const {
    if (isDouble)
      return negative ? "__longlong_as_double(0xfff0000000000000LL)"
                      : "__longlong_as_double(0x7ff0000000000000LL)";
    return negative ? "__int_as_float(0xff800000)"
                    : "__int_as_float(0x7f800000)";
  }

private:
  bool isDouble;
};

/// Converts a stored element to its compute type.
std::string loadExpr(mlir::Type t, const std::string &element);
/// Converts a computed value to its storage type.
std::string storeExpr(mlir::Type t, const std::string &value);
/// `x op y` (op one of + - *) for integers of type `t`, wrapping modulo
/// 2^width.
std::string wrappingExpr(mlir::Type t, const std::string &x, llvm::StringRef op,
                         const std::string &y);
/// The discardable attribute numbering a gather's run-time index check: the
/// 1-based site in the artifact's `indexSites` (IndexSites.h).
inline constexpr llvm::StringLiteral kIndexSiteAttr = "kiln.index_site";
/// The position `index` of the gather `op` takes in a dim of `extent`:
/// negative indices count from the end; out-of-range ones are clamped, and
/// recorded for the runtime's check when `op` has an index site.
std::string gatherIndexExpr(mlir::Operation *op, const std::string &index,
                            const Size &extent);
/// The offset into an input of shape `arg` that broadcasts into `shape`, at
/// flat index `idx` of `shape`.
std::string broadcastOffset(llvm::ArrayRef<Size> arg,
                            llvm::ArrayRef<Size> shape, const std::string &idx);

/// Emits the statements of body ops, naming each value once per emission.
class BodyEmitter {
public:
  BodyEmitter(KernelOp kernel, llvm::raw_ostream &os);

  /// Starts a fresh scope: values computed by an earlier pass are forgotten.
  void reset() {
    names.clear();
    computedAt.clear();
    aliases.clear();
    everywhere.clear();
  }

  /// Binds `value` to the C expression `name`.
  void bind(mlir::Value value, const std::string &name) { names[value] = name; }

  /// Loads input `argNumber` through L2 (__ldcg): a value other blocks of
  /// the same launch wrote (a GEMM's product, read by its last block's
  /// cache update), which the non-coherent path may not see.
  void loadThroughL2(unsigned argNumber) { throughL2.insert(argNumber); }

  /// Binds `value` to `name` at every index getAt reads it at: the value of
  /// the one element this scope computes (a GEMM's product where its tail
  /// stores it), which its readers read at that element only.
  void bindAtEveryIndex(mlir::Value value, const std::string &name) {
    everywhere[value] = name;
  }

  /// The C name of `value` computed at flat index `idx` of `shape`: the
  /// name emit() bound in this scope, else a block argument loaded or a
  /// kernel-body value computed again from its own expression (getAt), on
  /// first use. A value computed in another scope (a row kernel's prologue,
  /// read by its epilogue) is never read from the kernel's raw input.
  mlir::FailureOr<std::string> get(mlir::Value value, const std::string &idx,
                                   llvm::ArrayRef<Size> shape,
                                   const std::string &indent);

  /// The C name of `value` at flat index `idx` (a C expression) of its own
  /// shape, computing on demand the kernel-body ops that produce it: data
  /// movement (reshape, transpose, slice, expand, gather, gather_elements,
  /// concat) remaps the index, elementwise ops broadcast it to their
  /// operands. Call reset() before each use site.
  mlir::FailureOr<std::string> getAt(mlir::Value value, const std::string &idx,
                                     const std::string &indent);

  /// Emits `op` at flat index `idx` of `shape`.
  mlir::LogicalResult emit(mlir::Operation *op, const std::string &idx,
                           llvm::ArrayRef<Size> shape,
                           const std::string &indent);

  std::string fresh() { return "v" + std::to_string(counter++); }

private:
  /// getAt for a concat: the element of the one input that holds it.
  mlir::FailureOr<std::string> getConcatAt(ConcatOp concat,
                                           const std::string &index,
                                           const std::string &indent);
  /// getAt for a dequantize: the weight from its packed bits, its block's
  /// scale and zero point; `index` is 32-bit where `narrow`.
  mlir::FailureOr<std::string> getDequantizedAt(DequantizeOp op,
                                                const std::string &index,
                                                bool narrow,
                                                const std::string &indent);
  static std::optional<std::string> mathExpr(mlir::Operation *op,
                                             llvm::ArrayRef<std::string> in);
  static std::string castExpr(mlir::Type from, mlir::Type to,
                              const std::string &v);
  /// The index expression `idx` names, where it is one of getAt's index
  /// aliases (the same value, maybe narrowed to 32 bits); else `idx`.
  std::string indexAliased(const std::string &idx) const {
    auto it = aliases.find(idx);
    return it == aliases.end() ? idx : it->second;
  }

  KernelOp kernel;
  llvm::raw_ostream &os;
  llvm::DenseMap<mlir::Value, std::string> names;
  /// getAt's values by (value, index expression).
  std::map<std::pair<void *, std::string>, std::string> computedAt;
  llvm::DenseMap<mlir::Value, unsigned> argIndex;
  /// bindAtEveryIndex's values.
  llvm::DenseMap<mlir::Value, std::string> everywhere;
  /// loadThroughL2's inputs.
  llvm::SmallDenseSet<unsigned, 2> throughL2;
  /// The element of input `arg` at `offset`, as loadThroughL2 says.
  std::string inputElement(unsigned arg, const std::string &offset) const {
    std::string element = "in" + std::to_string(arg) + "[" + offset + "]";
    return throughL2.contains(arg) ? "__ldcg(&" + element + ")" : element;
  }
  /// getAt's index aliases, by name: the expression each stands for.
  std::map<std::string, std::string> aliases;
  int counter = 0;
};

/// A kernel's pointer parameters as emitSignature spells them: `const T
/// *__restrict__ in<i>, ` for each input (input 0 without `__restrict__`
/// where `firstWritten`: the caller writes it in the same launch, a GEMM's
/// product that its cache update reads), and `T *__restrict__ out<i>` for
/// each result, comma-separated.
std::string inputParameters(KernelOp kernel, bool firstWritten = false);
std::string resultParameters(KernelOp kernel);

/// `extern "C" __global__ void name(const T *in0, ..., T *out0, ...) {`,
/// one `out` a result, then `long long kd_NAME` for each symbolic dim of
/// the function (dimNamesOf).
/// A kernel that writes elsewhere than the result (a partial result) names
/// its last pointer parameter in `output` instead of `T *out0`.
void emitSignature(KernelOp kernel, llvm::StringRef name, llvm::raw_ostream &os,
                   llvm::StringRef output = {});

/// `value` as a CUDA float literal (`1.25000000e-01f`): nine significant
/// digits, which every float takes to be read back exactly (seven, printf's
/// default, may round an attention scale such as 1/sqrt(96) to its
/// neighbour).
std::string floatLiteral(float value);

/// Whether a grid-stride loop over `elements` can index in 32 bits: every
/// index it forms, the last one plus a whole grid's stride included, fits.
bool fitsIndex32(int64_t elements);

/// Blocks of kBlockSize threads for a grid-stride loop over `elements`.
uint32_t gridFor(int64_t elements);

/// Sets grid dim `axis` of `geometry` to `blocks` blocks of a grid-stride
/// loop over `elements` / `perBlock` (at most `highest`): the count for a
/// static size, the count at the top of the ranges and its formula for a
/// symbolic one.
void setGridDim(LaunchGeometry &geometry, int axis, const Size &elements,
                int64_t perBlock, int64_t highest);

/// The kernel families, one generator each (KernelEmitter.cpp,
/// ReductionEmitter.cpp and AttentionEmitter.cpp).
mlir::FailureOr<LaunchGeometry>
emitElementwise(KernelOp kernel, llvm::StringRef name, llvm::raw_ostream &os);
mlir::FailureOr<LaunchGeometry> emitCopy(KernelOp kernel, llvm::StringRef name,
                                         llvm::raw_ostream &os);
mlir::FailureOr<LaunchGeometry>
emitReduction(KernelOp kernel, llvm::StringRef name, llvm::raw_ostream &os);
mlir::FailureOr<LaunchGeometry> emitSort(KernelOp kernel, llvm::StringRef name,
                                         llvm::raw_ostream &os);
mlir::FailureOr<LaunchGeometry> emitAttention(KernelOp kernel,
                                              llvm::StringRef name,
                                              llvm::raw_ostream &os,
                                              const CudaEmitOptions &options);

} // namespace kiln

#endif // KILN_LIB_TARGET_CUDA_EMITTERSUPPORT_H
