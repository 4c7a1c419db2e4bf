//===- ArtifactDims.h - The symbolic dims of a compiled model ---*- C++ -*-===//
//
// A model compiled with symbolic dims (`kilnc --dim batch=1:8,...`) has one
// plan for every value of its named dims in range. The artifact stores that
// plan at the top of the ranges (every buffer, step and the arena at its
// largest, so that `validateArtifact` checks the largest case) and, beside
// it, how each size that varies follows from the dims: a `SizeBinding`
// names a field of the plan and the formula that gives it.
//
// At run time the dims are learned from the inputs' shapes (`bindDims`),
// and `instantiatePlan` writes every bound field for those values and
// validates the result, so the executors run a plan of plain numbers as for
// a static model. The kernels get the dims' values as trailing `long long`
// arguments, in the order of `SymbolicPlan::dims`.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_ARTIFACTDIMS_H
#define KILN_RUNTIME_ARTIFACTDIMS_H

#include "kiln/runtime/ArtifactSteps.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace kiln {
namespace rt {

struct Artifact;

/// A named dim and the values it may take.
struct DimRange {
  std::string name;
  int64_t min = 0;
  int64_t max = 0;
};

/// One term of a size: coefficient * the product of some dims.
struct SizeTerm {
  int64_t coefficient = 0;
  /// Indices into `SymbolicPlan::dims`, one per power (`b*s*s` is {b, s, s}).
  std::vector<uint32_t> dims;
};

/// A size: the sum of its terms (none is 0).
struct SizeFormula {
  std::vector<SizeTerm> terms;
};

/// Which field of the plan a binding writes.
enum class SizeField : uint8_t {
  BufferDim,   ///< `buffers[target].shape[axis]` (and so its bytes).
  LaunchGrid,  ///< `steps[target].launch.grid[axis]`.
  MatmulField, ///< Field `axis` of `steps[target].matmul`: 0 batch, 1 m,
               ///< 2 n, 3 k, 4-6 strideA/B/C, 7 outerBatch, 8-10
               ///< outerStrideA/B/C.
  CopyBytes,   ///< `steps[target].copy.bytes`.
  /// Whether `steps[target]` runs (axis 0): it is left out of the plan at
  /// dims where the binding's value is 0. A kernel with a variant for some
  /// dims (attention with its keys split, for a few query rows) is two sets
  /// of steps, each kept where the other is left out.
  StepRuns,
};

/// The last valid `SizeField`, for range checks of decoded values.
constexpr SizeField kLastSizeField = SizeField::StepRuns;

/// Number of MatmulStep fields a `MatmulField` binding may name.
constexpr uint32_t kMatmulFields = 11;

/// The fields of `m` a `MatmulField` binding's axis names, in its order.
inline std::array<int64_t *, kMatmulFields> matmulFields(MatmulStep &m) {
  return {&m.batch,        &m.m,           &m.n,
          &m.k,            &m.strideA,     &m.strideB,
          &m.strideC,      &m.outerBatch,  &m.outerStrideA,
          &m.outerStrideB, &m.outerStrideC};
}

/// One field of the plan that follows from the dims:
/// clamp(ceil(formula / divisor), lowest, highest).
struct SizeBinding {
  SizeField field = SizeField::BufferDim;
  /// A buffer id or step index, as `field` says.
  uint32_t target = 0;
  /// The dim, grid axis or matmul field.
  uint32_t axis = 0;
  SizeFormula formula;
  /// At least 1; a grid divides elements by what one block covers.
  int64_t divisor = 1;
  int64_t lowest = INT64_MIN;
  int64_t highest = INT64_MAX;
};

/// The dims of a model and what follows from them; empty for a static
/// model.
struct SymbolicPlan {
  std::vector<DimRange> dims;
  std::vector<SizeBinding> bindings;

  bool empty() const { return dims.empty(); }
};

/// The value of `f` for `values` (one per dim); false on overflow or a dim
/// index out of range.
bool evaluateSize(const SizeFormula &f, const std::vector<int64_t> &values,
                  int64_t &out);

/// The value of binding `b` for `values`; false on overflow.
bool evaluateBinding(const SizeBinding &b, const std::vector<int64_t> &values,
                     int64_t &out);

/// `f` as text over the dims' names (`past_sequence + sequence`).
std::string sizeText(const SizeFormula &f, const std::vector<DimRange> &dims);

/// Learns the dims' values from the shapes of the graph inputs (one shape
/// per input, in order): a dim from an input dim that is exactly it, then
/// the one unknown dim of a linear size (`past + sequence`). Checks every
/// input dim against its size and every dim against its range. Returns
/// false with a message naming the input, dim and size otherwise.
bool bindDims(const Artifact &a,
              const std::vector<std::vector<int64_t>> &inputShapes,
              std::vector<int64_t> &values, std::string &error);

/// The plan for the dims' `values` (in range): `a`'s plan with every bound
/// field written and the steps that do not run at these dims left out,
/// validated. The kernels, sources and weights are not
/// copied (`shaped` has none of them); the executors take them from `a`.
bool instantiatePlan(const Artifact &a, const std::vector<int64_t> &values,
                     Artifact &shaped, std::string &error);

/// instantiatePlan for `values` into `shaped`, a plan instantiatePlan (or
/// this) wrote from `a` for the dims' `previous` values: where the same
/// steps run at both, only the bound fields are written again (a decoding
/// loop's next length copies nothing), else from scratch. Validated as
/// instantiatePlan's; on failure `shaped` is left empty.
bool reinstantiatePlan(const Artifact &a, const std::vector<int64_t> &previous,
                       const std::vector<int64_t> &values, Artifact &shaped,
                       std::string &error);

/// The formula of dim `axis` of buffer `id`, or null for a static dim.
const SizeFormula *dimFormula(const Artifact &a, uint32_t id, uint32_t axis);

/// The shape of buffer `id` for the dims' `values`.
bool shapeAt(const Artifact &a, uint32_t id, const std::vector<int64_t> &values,
             std::vector<int64_t> &shape);

} // namespace rt
} // namespace kiln

#endif // KILN_RUNTIME_ARTIFACTDIMS_H
