//===- ArtifactDims.cpp - Dims of a symbolic plan, learned and applied ----===//
//
// The runtime's side of symbolic dims: evaluating the formulas a compiled
// plan carries, learning the dims from the inputs' shapes, and writing the
// plan for one set of values. Learning follows the reference interpreter
// (lib/Interpreter/DimValues.cpp) so that both accept and refuse the same
// shapes with the same words.
//
//===----------------------------------------------------------------------===//

#include "kiln/runtime/ArtifactDims.h"

#include "kiln/runtime/ArtifactFormat.h"

#include <algorithm>
#include <limits>

using namespace kiln::rt;

bool kiln::rt::evaluateSize(const SizeFormula &f,
                            const std::vector<int64_t> &values, int64_t &out) {
  int64_t sum = 0;
  for (const SizeTerm &term : f.terms) {
    int64_t product = term.coefficient;
    for (uint32_t d : term.dims)
      if (d >= values.size() ||
          __builtin_mul_overflow(product, values[d], &product))
        return false;
    if (__builtin_add_overflow(sum, product, &sum))
      return false;
  }
  out = sum;
  return true;
}

bool kiln::rt::evaluateBinding(const SizeBinding &b,
                               const std::vector<int64_t> &values,
                               int64_t &out) {
  int64_t v = 0;
  if (b.divisor < 1 || !evaluateSize(b.formula, values, v))
    return false;
  // Ceiling division of a possibly negative value: clamped below anyway.
  int64_t q = v / b.divisor;
  if (v % b.divisor > 0)
    ++q;
  out = std::clamp(q, b.lowest, b.highest);
  return true;
}

std::string kiln::rt::sizeText(const SizeFormula &f,
                               const std::vector<DimRange> &dims) {
  std::string text;
  for (const SizeTerm &term : f.terms) {
    int64_t c = term.coefficient;
    if (!text.empty())
      text += c < 0 ? " - " : " + ";
    else if (c < 0)
      text += "-";
    uint64_t magnitude = c < 0 ? 0 - static_cast<uint64_t>(c) : c;
    std::string product;
    for (uint32_t d : term.dims)
      product +=
          (product.empty() ? "" : "*") + (d < dims.size() ? dims[d].name : "?");
    if (magnitude != 1 || product.empty())
      text += std::to_string(magnitude) + (product.empty() ? "" : "*");
    text += product;
  }
  return text.empty() ? "0" : text;
}

namespace {

/// What `bindDims` knows of one dim: its value and where it came from.
struct Learned {
  bool known = false;
  int64_t value = 0;
  std::string source;
};

/// The one dim of `f` that is not known, when `f` is linear in it
/// (coefficient * dim, other terms known) and every other dim is known.
bool singleUnknown(const SizeFormula &f, const std::vector<Learned> &learned,
                   uint32_t &dim, int64_t &coefficient) {
  bool found = false;
  for (const SizeTerm &term : f.terms)
    for (uint32_t d : term.dims) {
      if (learned[d].known)
        continue;
      if (found && d != dim)
        return false;
      if (term.dims.size() != 1)
        return false;
      found = true;
      dim = d;
      coefficient = term.coefficient;
    }
  return found && coefficient != 0;
}

} // namespace

bool kiln::rt::bindDims(const Artifact &a,
                        const std::vector<std::vector<int64_t>> &inputShapes,
                        std::vector<int64_t> &values, std::string &error) {
  const std::vector<DimRange> &dims = a.symbolic.dims;
  if (inputShapes.size() != a.inputs.size()) {
    error = "dim sizes: " + std::to_string(inputShapes.size()) +
            " input shapes for " + std::to_string(a.inputs.size()) + " inputs";
    return false;
  }
  // The symbolic dims of each input: (input, axis) -> binding.
  std::vector<std::vector<const SizeFormula *>> formulas(a.inputs.size());
  for (size_t i = 0; i < a.inputs.size(); ++i) {
    const Buffer &b = a.buffers[a.inputs[i]];
    if (inputShapes[i].size() != b.shape.size()) {
      error = "dim sizes: input '" + b.name + "' has rank " +
              std::to_string(inputShapes[i].size()) + ", expected " +
              std::to_string(b.shape.size());
      return false;
    }
    formulas[i].assign(b.shape.size(), nullptr);
  }
  std::vector<uint32_t> inputOf(a.buffers.size(), UINT32_MAX);
  for (size_t i = 0; i < a.inputs.size(); ++i)
    inputOf[a.inputs[i]] = i;
  for (const SizeBinding &b : a.symbolic.bindings)
    if (b.field == SizeField::BufferDim && inputOf[b.target] != UINT32_MAX)
      formulas[inputOf[b.target]][b.axis] = &b.formula;

  auto where = [&](size_t i, size_t axis) {
    return "input '" + a.buffers[a.inputs[i]].name + "' dim " +
           std::to_string(axis);
  };
  std::vector<Learned> learned(dims.size());
  // Dims that an input dim is exactly, then one unknown of a linear size
  // at a time until nothing more is learned.
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t i = 0; i < formulas.size(); ++i)
      for (size_t axis = 0; axis < formulas[i].size(); ++axis) {
        const SizeFormula *f = formulas[i][axis];
        uint32_t dim = 0;
        int64_t coefficient = 0;
        if (!f || !singleUnknown(*f, learned, dim, coefficient))
          continue;
        // The known part, with the unknown dim at 0.
        std::vector<int64_t> known(dims.size(), 0);
        for (size_t d = 0; d < dims.size(); ++d)
          known[d] = learned[d].known ? learned[d].value : 0;
        int64_t rest = 0, target = inputShapes[i][axis], diff = 0;
        // (INT64_MIN / -1 overflows.)
        if (!evaluateSize(*f, known, rest) ||
            __builtin_sub_overflow(target, rest, &diff) ||
            (diff == INT64_MIN && coefficient == -1) ||
            diff % coefficient != 0)
          continue; // The check below says what does not fit.
        learned[dim] = {true, diff / coefficient, where(i, axis)};
        progress = true;
      }
  }
  values.assign(dims.size(), 0);
  for (size_t d = 0; d < dims.size(); ++d) {
    if (!learned[d].known) {
      error = "dim sizes: no input's shape gives '" + dims[d].name + "'";
      return false;
    }
    values[d] = learned[d].value;
  }
  for (size_t d = 0; d < dims.size(); ++d)
    if (values[d] < dims[d].min || values[d] > dims[d].max) {
      error = "dim sizes: '" + dims[d].name + "' is " +
              std::to_string(values[d]) + " (from " + learned[d].source +
              "), outside its range " + std::to_string(dims[d].min) + ".." +
              std::to_string(dims[d].max);
      return false;
    }
  for (size_t i = 0; i < formulas.size(); ++i)
    for (size_t axis = 0; axis < formulas[i].size(); ++axis) {
      int64_t actual = inputShapes[i][axis], expected = 0;
      const SizeFormula *f = formulas[i][axis];
      if (!f) {
        expected = a.buffers[a.inputs[i]].shape[axis];
      } else if (!evaluateSize(*f, values, expected)) {
        error = "dim sizes: " + where(i, axis) + ": its size '" +
                sizeText(*f, dims) + "' overflows";
        return false;
      }
      if (actual == expected)
        continue;
      error = "dim sizes: " + where(i, axis) + " is " + std::to_string(actual) +
              ", but ";
      if (!f) {
        error += "the model takes " + std::to_string(expected);
        return false;
      }
      error += "its size '" + sizeText(*f, dims) + "' is " +
               std::to_string(expected) + " with";
      const char *separator = " ";
      for (const SizeTerm &term : f->terms)
        for (uint32_t d : term.dims) {
          std::string part = dims[d].name + " = " + std::to_string(values[d]) +
                             " (from " + learned[d].source + ")";
          if (error.find(part) != std::string::npos)
            continue;
          error += separator + part;
          separator = ", ";
        }
      return false;
    }
  return true;
}

/// Which of `a`'s steps run at the dims' `values` (StepRuns); false on
/// overflow.
static bool stepsThatRun(const Artifact &a, const std::vector<int64_t> &values,
                         std::vector<bool> &runs, std::string &error) {
  runs.assign(a.steps.size(), true);
  for (const SizeBinding &b : a.symbolic.bindings) {
    if (b.field != SizeField::StepRuns)
      continue;
    int64_t v = 0;
    if (!evaluateBinding(b, values, v)) {
      error = "dim sizes: a size of the plan overflows";
      return false;
    }
    runs[b.target] = runs[b.target] && v != 0;
  }
  return true;
}

/// Writes every bound field of `shaped` (`a`'s plan with the steps that do
/// not run left out: step s of `a` is step kept[s] of `shaped`, or absent
/// where it is SIZE_MAX), then the buffers' bytes, each within the storage
/// the executors allocate for the plan at the top of the ranges; validates.
static bool writeBoundFields(const Artifact &a,
                             const std::vector<int64_t> &values,
                             const std::vector<size_t> &kept, Artifact &shaped,
                             std::string &error) {
  for (const SizeBinding &b : a.symbolic.bindings) {
    if (b.field == SizeField::StepRuns)
      continue;
    int64_t v = 0;
    if (!evaluateBinding(b, values, v)) {
      error = "dim sizes: a size of the plan overflows";
      return false;
    }
    if (b.field == SizeField::BufferDim) {
      shaped.buffers[b.target].shape[b.axis] = v;
      continue;
    }
    if (kept[b.target] == SIZE_MAX)
      continue;
    Step &step = shaped.steps[kept[b.target]];
    switch (b.field) {
    case SizeField::LaunchGrid:
      step.launch.grid[b.axis] =
          static_cast<uint32_t>(std::clamp<int64_t>(v, 0, UINT32_MAX));
      break;
    case SizeField::MatmulField:
      *matmulFields(step.matmul)[b.axis] = v;
      break;
    case SizeField::CopyBytes:
      step.copy.bytes = static_cast<uint64_t>(v);
      break;
    case SizeField::BufferDim:
    case SizeField::StepRuns:
      break;
    }
  }
  for (size_t id = 0; id < shaped.buffers.size(); ++id) {
    Buffer &b = shaped.buffers[id];
    uint64_t elements = 1;
    bool fits = true;
    for (int64_t dim : b.shape)
      fits = fits && dim >= 0 &&
             !__builtin_mul_overflow(elements, static_cast<uint64_t>(dim),
                                     &elements);
    fits =
        fits && !__builtin_mul_overflow(elements, dtypeSize(b.dtype), &b.bytes);
    if (!fits || b.bytes > a.buffers[id].bytes) {
      error = "dim sizes: buffer '" + a.buffers[id].name +
              "' outgrows its planned storage at these dims";
      return false;
    }
  }
  return validatePlan(shaped, error, a.weightBytes());
}

/// Step s of `a` as an index of the plan that keeps the steps `runs` says
/// (SIZE_MAX for those it leaves out).
static std::vector<size_t> keptIndices(const std::vector<bool> &runs) {
  std::vector<size_t> kept(runs.size(), SIZE_MAX);
  size_t next = 0;
  for (size_t s = 0; s < runs.size(); ++s)
    if (runs[s])
      kept[s] = next++;
  return kept;
}

bool kiln::rt::instantiatePlan(const Artifact &a,
                               const std::vector<int64_t> &values,
                               Artifact &shaped, std::string &error) {
  std::vector<bool> runs;
  if (!stepsThatRun(a, values, runs, error))
    return false;
  shaped.abiVersion = a.abiVersion;
  shaped.arenaBytes = a.arenaBytes;
  shaped.kernelNames = a.kernelNames;
  shaped.buffers = a.buffers;
  shaped.inputs = a.inputs;
  shaped.outputs = a.outputs;
  shaped.indexSites = a.indexSites;
  shaped.aliases = a.aliases;
  shaped.steps.clear();
  for (size_t s = 0; s < a.steps.size(); ++s)
    if (runs[s])
      shaped.steps.push_back(a.steps[s]);
  return writeBoundFields(a, values, keptIndices(runs), shaped, error);
}

bool kiln::rt::reinstantiatePlan(const Artifact &a,
                                 const std::vector<int64_t> &previous,
                                 const std::vector<int64_t> &values,
                                 Artifact &shaped, std::string &error) {
  std::vector<bool> before, runs;
  if (!stepsThatRun(a, previous, before, error) ||
      !stepsThatRun(a, values, runs, error)) {
    shaped = Artifact();
    return false;
  }
  // The same steps: every field that differs between the two plans is a
  // bound one. Other steps: from scratch.
  bool written = before == runs ? writeBoundFields(a, values, keptIndices(runs),
                                                   shaped, error)
                                : instantiatePlan(a, values, shaped, error);
  // Left as nothing valid: a later call starts from scratch.
  if (!written)
    shaped = Artifact();
  return written;
}

bool kiln::rt::shapeAt(const Artifact &a, uint32_t id,
                       const std::vector<int64_t> &values,
                       std::vector<int64_t> &shape) {
  shape = a.buffers[id].shape;
  for (const SizeBinding &b : a.symbolic.bindings)
    if (b.field == SizeField::BufferDim && b.target == id &&
        !evaluateBinding(b, values, shape[b.axis]))
      return false;
  return true;
}

const SizeFormula *kiln::rt::dimFormula(const Artifact &a, uint32_t id,
                                        uint32_t axis) {
  for (const SizeBinding &b : a.symbolic.bindings)
    if (b.field == SizeField::BufferDim && b.target == id && b.axis == axis)
      return &b.formula;
  return nullptr;
}
