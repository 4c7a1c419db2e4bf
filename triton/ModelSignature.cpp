//===- ModelSignature.cpp - A Kiln model as Triton configures it ----------===//

#include "ModelSignature.h"

#include "kiln/runtime/ArtifactDims.h"
#include "kiln/runtime/ArtifactPlan.h"

#include <algorithm>

using namespace kiln;
using namespace kiln::triton;

namespace {
/// Triton's configuration name and data type of each Kiln element type, in
/// `rt::DType` order.
struct TritonType {
  const char *config;
  TRITONSERVER_DataType type;
};
constexpr TritonType kTritonTypes[] = {
    {"TYPE_FP32", TRITONSERVER_TYPE_FP32},
    {"TYPE_FP16", TRITONSERVER_TYPE_FP16},
    {"TYPE_BF16", TRITONSERVER_TYPE_BF16},
    {"TYPE_INT64", TRITONSERVER_TYPE_INT64},
    {"TYPE_INT32", TRITONSERVER_TYPE_INT32},
    {"TYPE_INT8", TRITONSERVER_TYPE_INT8},
    {"TYPE_BOOL", TRITONSERVER_TYPE_BOOL},
    {"TYPE_FP64", TRITONSERVER_TYPE_FP64},
    {"TYPE_INT16", TRITONSERVER_TYPE_INT16},
    {"TYPE_UINT8", TRITONSERVER_TYPE_UINT8},
    {"TYPE_UINT16", TRITONSERVER_TYPE_UINT16},
    {"TYPE_UINT32", TRITONSERVER_TYPE_UINT32},
    {"TYPE_UINT64", TRITONSERVER_TYPE_UINT64},
    // 4-bit integers are a byte each, as Triton's 8-bit types hold them;
    // Triton has no float8 type: a model with a float8 input or output
    // does not load (its configuration names TYPE_INVALID).
    {"TYPE_INT8", TRITONSERVER_TYPE_INT8},
    {"TYPE_UINT8", TRITONSERVER_TYPE_UINT8},
    {"TYPE_INVALID", TRITONSERVER_TYPE_INVALID},
    {"TYPE_INVALID", TRITONSERVER_TYPE_INVALID}};
static_assert(sizeof(kTritonTypes) / sizeof(kTritonTypes[0]) ==
                  size_t(rt::kLastDType) + 1,
              "a Triton type for every DType");
} // namespace

const char *kiln::triton::configDataType(rt::DType dtype) {
  return kTritonTypes[size_t(dtype)].config;
}

TRITONSERVER_DataType kiln::triton::tritonDataType(rt::DType dtype) {
  return kTritonTypes[size_t(dtype)].type;
}

/// The dim a formula is exactly (one term, coefficient 1, one dim), or -1.
static int32_t soleDim(const rt::SizeFormula *formula) {
  if (!formula || formula->terms.size() != 1)
    return -1;
  const rt::SizeTerm &term = formula->terms.front();
  if (term.coefficient != 1 || term.dims.size() != 1)
    return -1;
  return static_cast<int32_t>(term.dims.front());
}

/// Whether `formula` involves dim `dim`.
static bool mentions(const rt::SizeFormula *formula, uint32_t dim) {
  if (!formula)
    return false;
  for (const rt::SizeTerm &term : formula->terms)
    if (std::find(term.dims.begin(), term.dims.end(), dim) != term.dims.end())
      return true;
  return false;
}

/// The least and greatest value of `formula` over the dims' ranges, from
/// its values with every dim at its least and at its greatest (sizes grow
/// with their dims in every model Kiln compiles; a formula that does not is
/// bounded loosely, which only widens what a configuration may pin).
static void formulaBounds(const rt::SizeFormula &formula,
                          const std::vector<rt::DimRange> &dims, int64_t &lo,
                          int64_t &hi) {
  std::vector<int64_t> least, greatest;
  for (const rt::DimRange &d : dims) {
    least.push_back(d.min);
    greatest.push_back(d.max);
  }
  int64_t a = 0, b = 0;
  if (!rt::evaluateSize(formula, least, a) ||
      !rt::evaluateSize(formula, greatest, b)) {
    lo = 0;
    hi = INT64_MAX;
    return;
  }
  lo = std::min(a, b);
  hi = std::max(a, b);
}

/// The signature of buffer `id`.
static TensorSignature tensorOf(const rt::Artifact &plan, uint32_t id) {
  const rt::Buffer &buffer = plan.buffers[id];
  TensorSignature t;
  t.name = buffer.name;
  t.dtype = buffer.dtype;
  for (uint32_t axis = 0; axis < buffer.shape.size(); ++axis) {
    const rt::SizeFormula *formula = rt::dimFormula(plan, id, axis);
    if (!formula) {
      t.dims.push_back(buffer.shape[axis]);
      t.minDims.push_back(buffer.shape[axis]);
      t.maxDims.push_back(buffer.shape[axis]);
      continue;
    }
    int64_t lo = 0, hi = 0;
    formulaBounds(*formula, plan.symbolic.dims, lo, hi);
    t.dims.push_back(-1);
    t.minDims.push_back(lo);
    t.maxDims.push_back(hi);
  }
  return t;
}

/// Why the model cannot batch along dim `dim`, or "" when it can.
static std::string whyNotBatchedAlong(const rt::Artifact &plan, int32_t dim) {
  auto check = [&](const std::vector<uint32_t> &ids,
                   const char *kind) -> std::string {
    for (uint32_t id : ids) {
      const rt::Buffer &buffer = plan.buffers[id];
      if (buffer.shape.empty() || soleDim(rt::dimFormula(plan, id, 0)) != dim)
        return std::string(kind) + " '" + buffer.name +
               "' does not have it as its first dim";
      for (uint32_t axis = 1; axis < buffer.shape.size(); ++axis)
        if (mentions(rt::dimFormula(plan, id, axis), uint32_t(dim)))
          return std::string(kind) + " '" + buffer.name + "' has it in dim " +
                 std::to_string(axis) + " as well";
    }
    return "";
  };
  if (std::string why = check(plan.inputs, "input"); !why.empty())
    return why;
  return check(plan.outputs, "output");
}

ModelSignature kiln::triton::signatureOf(const rt::Artifact &plan) {
  ModelSignature signature;
  int32_t candidate = -1;
  if (plan.symbolic.empty())
    signature.whyNotBatched = "the model was compiled with static shapes";
  else if (plan.inputs.empty())
    signature.whyNotBatched = "the model has no inputs";
  else if ((candidate = soleDim(rt::dimFormula(plan, plan.inputs[0], 0))) < 0)
    signature.whyNotBatched = "the first dim of input '" +
                              plan.buffers[plan.inputs[0]].name +
                              "' is not a dim of its own";
  else if (std::string why = whyNotBatchedAlong(plan, candidate); !why.empty())
    signature.whyNotBatched = "dim '" + plan.symbolic.dims[candidate].name +
                              "' is no batch dim: " + why;
  else if (plan.symbolic.dims[candidate].max < 1)
    signature.whyNotBatched =
        "dim '" + plan.symbolic.dims[candidate].name + "' never exceeds 0";

  if (signature.whyNotBatched.empty()) {
    signature.batchDim = candidate;
    signature.maxBatchSize = plan.symbolic.dims[candidate].max;
  }
  for (uint32_t id : plan.inputs)
    signature.inputs.push_back(tensorOf(plan, id));
  for (uint32_t id : plan.outputs)
    signature.outputs.push_back(tensorOf(plan, id));
  return signature;
}
