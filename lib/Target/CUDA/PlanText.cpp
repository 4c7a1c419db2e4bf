//===- PlanText.cpp - a runtime plan as text ------------------------------===//

#include "kiln/Target/CUDA/PlanText.h"

#include "llvm/ADT/STLExtras.h"

using namespace kiln;

std::string kiln::runsIfText(const rt::Artifact &a, size_t step) {
  std::string text;
  for (const rt::SizeBinding &b : a.symbolic.bindings)
    if (b.field == rt::SizeField::StepRuns && b.target == step)
      text += (text.empty() ? "runs if " : " and ") +
              rt::sizeText(b.formula, a.symbolic.dims) + " >= 1";
  return text;
}

/// The dims in `read` (LaunchStep::dimsRead) by name, comma-separated; "-"
/// for none.
static std::string dimsReadText(const rt::Artifact &a, uint64_t read) {
  std::string text;
  for (auto [d, dim] : llvm::enumerate(a.symbolic.dims))
    if (d >= 64 || (read >> d & 1))
      text += (text.empty() ? "" : ",") + dim.name;
  return text.empty() ? "-" : text;
}

void kiln::printPlan(const rt::Artifact &a, uint64_t weightBytes,
                     llvm::raw_ostream &os, const KernelConfigs *configs) {
  os << "arena_bytes " << a.arenaBytes << "\nweight_bytes " << weightBytes
     << "\n";
  for (auto [i, b] : llvm::enumerate(a.buffers)) {
    os << "buffer " << i << " " << rt::bufferKindName(b.kind) << " " << b.name
       << " " << rt::dtypeName(b.dtype) << "[";
    llvm::interleave(b.shape, os, "x");
    os << "] offset " << b.offset << " bytes " << b.bytes << "\n";
  }
  for (const rt::OutputAlias &alias : a.aliases)
    os << "alias output " << alias.output << " input " << alias.input
       << " axis " << alias.axis << "\n";
  for (auto [index, s] : llvm::enumerate(a.steps)) {
    switch (s.kind) {
    case rt::Step::Kind::Launch:
      os << "launch " << a.kernelNames[s.launch.kernel] << " grid "
         << s.launch.grid[0];
      if (s.launch.grid[1] > 1 || s.launch.grid[2] > 1)
        os << "x" << s.launch.grid[1] << "x" << s.launch.grid[2];
      os << " block " << s.launch.block[0];
      if (s.launch.sharedBytes)
        os << " shared " << s.launch.sharedBytes;
      os << " args";
      for (uint32_t arg : s.launch.args)
        os << " " << arg;
      if (std::string runsIf = runsIfText(a, index); !runsIf.empty())
        os << " " << runsIf;
      // The first: ops that share a kernel (PlanSharedKernels.cpp) each
      // record its configuration.
      if (configs)
        for (const KernelConfig &config : *configs)
          if (config.kernel == a.kernelNames[s.launch.kernel]) {
            os << " config " << config.text();
            break;
          }
      if (!a.symbolic.empty())
        os << " dims " << dimsReadText(a, s.launch.dimsRead);
      os << "\n";
      break;
    case rt::Step::Kind::Matmul:
      os << "matmul ";
      if (s.matmul.float8)
        os << "float8 into ";
      os << rt::dtypeName(s.matmul.dtype) << " batch " << s.matmul.batch
         << " m " << s.matmul.m << " n " << s.matmul.n << " k " << s.matmul.k
         << " transA " << s.matmul.transA << " transB " << s.matmul.transB
         << " a " << s.matmul.a << " b " << s.matmul.b << " c " << s.matmul.c
         << " strides " << s.matmul.strideA << " " << s.matmul.strideB << " "
         << s.matmul.strideC;
      if (s.matmul.outerBatch > 1)
        os << " outer " << s.matmul.outerBatch << " strides "
           << s.matmul.outerStrideA << " " << s.matmul.outerStrideB << " "
           << s.matmul.outerStrideC;
      if (s.matmul.bias != rt::kNoBuffer)
        os << " bias " << s.matmul.bias;
      if (s.matmul.residual != rt::kNoBuffer)
        os << " residual " << s.matmul.residual << " beta " << s.matmul.beta;
      if (s.matmul.activation == rt::MatmulActivation::Relu)
        os << " relu";
      else if (s.matmul.activation == rt::MatmulActivation::Gelu)
        os << " gelu";
      else if (s.matmul.activation == rt::MatmulActivation::GeluErf)
        os << " gelu_erf " << a.kernelNames[s.matmul.finishKernel];
      // Widened into an fp32 C; without a norm, by its finish kernel.
      if (s.matmul.widen) {
        os << " widen";
        if (!s.matmul.hasNorm())
          os << " " << a.kernelNames[s.matmul.finishKernel];
      }
      if (s.matmul.hasNorm()) {
        os << (s.matmul.normRms ? " rms_norm " : " norm ")
           << s.matmul.normScale;
        if (s.matmul.normShift != rt::kNoBuffer)
          os << " " << s.matmul.normShift;
        os << " eps " << s.matmul.normEpsilon << " "
           << a.kernelNames[s.matmul.normKernel];
        if (s.matmul.normSum != rt::kNoBuffer)
          os << " sum " << s.matmul.normSum;
      }
      if (s.matmul.tf32)
        os << " tf32";
      // Kiln's GEMM kernels the step may run on: name, kernel, and a
      // split's arrival counters.
      for (const rt::GemmCandidate &g : s.matmul.kernels) {
        os << " gemm " << g.name << " " << a.kernelNames[g.kernel];
        if (g.arrivals)
          os << " arrivals " << g.arrivals;
        if (g.withNextLaunch)
          os << " with the next launch";
      }
      if (std::string runsIf = runsIfText(a, index); !runsIf.empty())
        os << " " << runsIf;
      os << "\n";
      break;
    case rt::Step::Kind::Copy:
      os << "copy " << s.copy.src << " -> " << s.copy.dst << " bytes "
         << s.copy.bytes << "\n";
      break;
    }
  }
}
