//===- Report.cpp - what a compilation produced, for kilnc --report -------===//

#include "kiln/Compiler/Report.h"

#include "kiln/Compiler/Roofline.h"

#include "kiln/Dialect/Kiln/KilnOps.h"
#include "kiln/Dialect/Kiln/TensorNames.h"
#include "kiln/Target/CUDA/PlanText.h"
#include "kiln/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

using namespace mlir;

namespace kiln {

namespace {

/// A launch kind as the report names it: the kernel family for kernels,
/// `matmul` for cuBLASLt calls, `memcpy` for output copies.
std::string kindOf(const rt::Artifact &artifact, const rt::Step &step) {
  switch (step.kind) {
  case rt::Step::Kind::Launch: {
    // Kernel names are kiln_<family>_<index>, then _<part> for a kernel
    // generated as several (attention's _split beside its whole kernel).
    llvm::StringRef name = artifact.kernelNames[step.launch.kernel];
    return name.drop_front(5).split('_').first.str();
  }
  case rt::Step::Kind::Matmul:
    return "matmul";
  case rt::Step::Kind::Copy:
    return "memcpy";
  }
  return "unknown";
}

std::string nameOf(const rt::Artifact &artifact, const rt::Step &step) {
  switch (step.kind) {
  case rt::Step::Kind::Launch:
    return artifact.kernelNames[step.launch.kernel];
  case rt::Step::Kind::Matmul:
    return "cublasLtMatmul";
  case rt::Step::Kind::Copy:
    return "cuMemcpyDtoDAsync";
  }
  return "";
}

/// The shape of the work, for people: grid and block, or the GEMM sizes.
std::string detailOf(const rt::Step &step) {
  switch (step.kind) {
  case rt::Step::Kind::Launch: {
    const rt::LaunchStep &l = step.launch;
    if (l.grid[1] == 1 && l.grid[2] == 1)
      return llvm::formatv("grid {0} block {1}", l.grid[0], l.block[0]);
    return llvm::formatv("grid {0}x{1}x{2} block {3}", l.grid[0], l.grid[1],
                         l.grid[2], l.block[0]);
  }
  case rt::Step::Kind::Matmul: {
    const rt::MatmulStep &m = step.matmul;
    std::string detail = llvm::formatv(
        "{0}{1} batch {2} m {3} n {4} k {5}", m.float8 ? "float8 into " : "",
        rt::dtypeName(m.dtype), m.batch * m.outerBatch, m.m, m.n, m.k);
    // The epilogue cuBLASLt applies inside the call (kiln-fuse's GEMM
    // kernels): no kernel of its own.
    if (m.bias != rt::kNoBuffer)
      detail += " +bias";
    if (m.residual != rt::kNoBuffer)
      detail += " +residual";
    if (m.activation == rt::MatmulActivation::Relu)
      detail += " +relu";
    else if (m.activation == rt::MatmulActivation::Gelu)
      detail += " +gelu";
    else if (m.activation == rt::MatmulActivation::GeluErf)
      detail += " +gelu_erf";
    // The norm's kernel follows the product in the same step; with a sum,
    // it writes the residual sum too.
    if (m.hasNorm())
      detail += m.normRms ? " +rms_norm" : " +layer_norm";
    if (m.normSum != rt::kNoBuffer)
      detail += " +sum";
    if (m.widen)
      detail += " +to_f32";
    if (m.tf32)
      detail += " tf32";
    // Kiln's own kernels the run may choose instead (MatmulChoice.cpp).
    if (!m.kernels.empty()) {
      detail += " or kiln";
      for (const rt::GemmCandidate &g : m.kernels)
        detail += " " + g.name;
    }
    return detail;
  }
  case rt::Step::Kind::Copy:
    return llvm::formatv("{0} bytes", step.copy.bytes);
  }
  return "";
}

/// `value` with an SI prefix: 12.3 M, 4.56 G.
std::string scaled(double value, llvm::StringRef unit) {
  static const char *prefixes[] = {"", "K", "M", "G", "T", "P"};
  int i = 0;
  while (value >= 1000 && i < 5) {
    value /= 1000;
    ++i;
  }
  return llvm::formatv("{0:f1} {1}{2}", value, prefixes[i], unit).str();
}

/// `seconds` in ns, us, ms or s, whichever reads best.
std::string scaledTime(double seconds) {
  static const std::pair<double, const char *> units[] = {
      {1e-6, "ns"}, {1e-3, "us"}, {1, "ms"}};
  for (auto [limit, unit] : units)
    if (seconds < limit)
      return llvm::formatv("{0:f1} {1}", seconds / limit * 1e3, unit).str();
  return llvm::formatv("{0:f1} s", seconds).str();
}

/// The roofline of the whole plan on the report's GPU.
struct Roofline {
  const GpuPeaks *gpu = nullptr;
  std::vector<StepCost> costs;
  double flops = 0, bytes = 0, floor = 0, computeFloor = 0, memoryFloor = 0;
};

/// Whether each step runs at the top of the dims' ranges, where the plan
/// is reported: a step guarded for other dims (rt::SizeField::StepRuns)
/// does not.
std::vector<bool> runsAtTop(const rt::Artifact &artifact) {
  std::vector<int64_t> top;
  for (const rt::DimRange &dim : artifact.symbolic.dims)
    top.push_back(dim.max);
  std::vector<bool> runs(artifact.steps.size(), true);
  for (const rt::SizeBinding &b : artifact.symbolic.bindings) {
    int64_t value = 1;
    if (b.field == rt::SizeField::StepRuns &&
        rt::evaluateBinding(b, top, value) && value == 0)
      runs[b.target] = false;
  }
  return runs;
}

Roofline rooflineOf(const rt::Artifact &artifact, const CompileReport &report) {
  Roofline r;
  r.gpu = findGpuPeaks(report.rooflineGpu);
  std::vector<MmaUse> mmaSync =
      kernelsIssuingMmaSync(artifact, report.kernelConfigs);
  std::vector<double> kernelFlops =
      flopsOfKernels(artifact, report.kernelFlops);
  std::vector<bool> runs = runsAtTop(artifact);
  for (auto [i, step] : llvm::enumerate(artifact.steps)) {
    StepCost cost = costOf(artifact, step, kernelFlops, mmaSync);
    if (!runs[i])
      cost.flops = cost.bytes = 0;
    r.costs.push_back(cost);
    r.flops += cost.flops;
    r.bytes += cost.bytes;
    if (!r.gpu)
      continue;
    r.floor += floorSeconds(cost, *r.gpu);
    StepCost compute = cost, memory;
    compute.bytes = 0;
    memory.bytes = cost.bytes;
    r.computeFloor += floorSeconds(compute, *r.gpu);
    r.memoryFloor += floorSeconds(memory, *r.gpu);
  }
  return r;
}

struct Counts {
  int64_t kernels = 0, libraryCalls = 0, copies = 0, nodes = 0;
  /// Kernels that run after a cuBLASLt matmul in its step (its norm or
  /// finish kernel): launches of their own, where cuBLASLt wins the step.
  int64_t finishing = 0;
};

Counts countsOf(const rt::Artifact &artifact, const CompileReport &report) {
  Counts counts;
  for (const rt::Step &step : artifact.steps) {
    counts.kernels += step.kind == rt::Step::Kind::Launch;
    counts.libraryCalls += step.kind == rt::Step::Kind::Matmul;
    counts.copies += step.kind == rt::Step::Kind::Copy;
    if (step.kind == rt::Step::Kind::Matmul)
      counts.finishing += (step.matmul.finishKernel != rt::kNoKernel) +
                          (step.matmul.normKernel != rt::kNoKernel);
  }
  llvm::StringSet<> nodes;
  for (const auto &names : report.origins)
    for (const std::string &name : names)
      nodes.insert(name);
  counts.nodes = nodes.size();
  return counts;
}

} // namespace

static std::vector<std::string> toStrings(ArrayRef<StringRef> names) {
  return std::vector<std::string>(names.begin(), names.end());
}

static std::string typeString(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  type.print(os);
  return text;
}

std::vector<Fp32Kept> collectFp32Kept(ModuleOp module) {
  std::vector<Fp32Kept> kept;
  for (auto func : module.getOps<func::FuncOp>()) {
    auto nameOf = [](StringAttr name, StringRef fallback, size_t i) {
      return name ? name.str() : (fallback + llvm::Twine(i)).str();
    };
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      if (auto rule = func.getArgAttrOfType<StringAttr>(i, kFp32RuleAttr))
        kept.push_back({"input",
                        nameOf(func.getArgAttrOfType<StringAttr>(i, kNameAttr),
                               "input", i),
                        typeString(func.getArgumentTypes()[i]),
                        {},
                        rule.str()});
    func.walk<WalkOrder::PreOrder>([&](Operation *op) {
      auto rule = op->getAttrOfType<StringAttr>(kFp32RuleAttr);
      if (!rule || op->getNumResults() == 0)
        return;
      std::string kind = "op", name = op->getName().getStringRef().str();
      if (auto constant = dyn_cast<ConstantOp>(op)) {
        kind = "weight";
        auto resource =
            dyn_cast<DenseResourceElementsAttr>(constant.getValue());
        name = resource ? resource.getRawHandle().getKey().str() : "constant";
      }
      kept.push_back({kind, name, typeString(op->getResult(0).getType()),
                      kind == "weight" ? std::vector<std::string>()
                                       : toStrings(onnxNodeNames(op->getLoc())),
                      rule.str()});
    });
    for (unsigned i = 0; i < func.getNumResults(); ++i)
      if (auto rule = func.getResultAttrOfType<StringAttr>(i, kFp32RuleAttr))
        kept.push_back(
            {"output",
             nameOf(func.getResultAttrOfType<StringAttr>(i, kNameAttr),
                    "output", i),
             typeString(func.getResultTypes()[i]),
             {},
             rule.str()});
  }
  return kept;
}

/// The dequantizes kiln-quantize-weights made (those with the error it
/// measured), in program order.
static std::vector<QuantizedWeights> collectQuantizedWeights(ModuleOp module) {
  std::vector<QuantizedWeights> found;
  module.walk<WalkOrder::PreOrder>([&](DequantizeOp op) {
    auto error = op->getAttrOfType<FloatAttr>("kiln.quantization_error");
    if (!error)
      return;
    RankedTensorType type = op.getType();
    found.push_back(
        {llvm::formatv("{0}x{1}", type.getDimSize(0), type.getDimSize(1)).str(),
         op.isFloat8() ? "fp8" : "int" + std::to_string(op.getBits()),
         int64_t(op.getBits()), int64_t(op.getBlockSize()),
         error.getValueAsDouble(), toStrings(onnxNodeNames(op->getLoc()))});
  });
  return found;
}

CompileReport reportOf(ModuleOp module, llvm::StringRef model,
                       llvm::StringRef precision) {
  CompileReport report;
  report.model = model.str();
  report.liveLowerBoundBytes = liveLowerBoundOf(module);
  for (auto func : module.getOps<func::FuncOp>())
    if (auto peak = func->getAttrOfType<StringAttr>(kLivePeakAttr))
      report.livePeakFormula = peak.str();
  report.precision = precision.str();
  report.fp32Kept = collectFp32Kept(module);
  report.quantizedWeights = collectQuantizedWeights(module);
  report.kernelFlops = kernelFlopsOf(module);
  return report;
}

int64_t liveLowerBoundOf(ModuleOp module) {
  for (auto func : module.getOps<func::FuncOp>())
    if (auto bound = func->getAttrOfType<IntegerAttr>(kLiveLowerBoundAttr))
      return bound.getInt();
  return -1;
}

/// The weights' size the report states.
static int64_t weightBytesOf(const rt::Artifact &artifact,
                             const CompileReport &report) {
  return report.weightBytes >= 0 ? report.weightBytes
                                 : static_cast<int64_t>(artifact.weightBytes());
}

/// What ptxas gave the kernel of launch `step`, or null (not a launch, or
/// no cubin built).
static const KernelResources *resourcesOf(const rt::Artifact &artifact,
                                          const CompileReport &report,
                                          const rt::Step &step) {
  if (step.kind != rt::Step::Kind::Launch)
    return nullptr;
  llvm::StringRef name = artifact.kernelNames[step.launch.kernel];
  for (const KernelResources &k : report.kernelResources)
    if (k.name == name)
      return &k;
  return nullptr;
}

/// The configuration the kernel of launch `step` was emitted with, or null.
static const KernelConfig *configOf(const rt::Artifact &artifact,
                                    const CompileReport &report,
                                    const rt::Step &step) {
  if (step.kind != rt::Step::Kind::Launch)
    return nullptr;
  llvm::StringRef name = artifact.kernelNames[step.launch.kernel];
  for (const KernelConfig &config : report.kernelConfigs)
    if (config.kernel == name)
      return &config;
  return nullptr;
}

/// The threads of a launch's block.
static int64_t threadsOf(const rt::Step &step) {
  return int64_t(step.launch.block[0]) * step.launch.block[1] *
         step.launch.block[2];
}

void printReportText(const rt::Artifact &artifact, const CompileReport &report,
                     llvm::raw_ostream &os) {
  Counts counts = countsOf(artifact, report);
  os << "kiln report: " << report.model << "\n"
     << "launches: " << artifact.steps.size() + counts.finishing << " ("
     << counts.kernels << " kernels, " << counts.libraryCalls
     << " cuBLASLt matmuls, ";
  if (counts.finishing)
    os << counts.finishing << " kernels after cuBLASLt in their steps, ";
  os << counts.copies << " copies) covering " << counts.nodes
     << " ONNX nodes\n";
  Roofline roofline = rooflineOf(artifact, report);
  for (auto [i, step] : llvm::enumerate(artifact.steps)) {
    os << llvm::formatv("  #{0,-3} {1,-11} {2,-22} {3}", i,
                        kindOf(artifact, step), nameOf(artifact, step),
                        detailOf(step));
    const StepCost &cost = roofline.costs[i];
    os << "  [" << scaled(cost.flops, "FLOP") << ", "
       << scaled(cost.bytes, "B");
    if (roofline.gpu)
      os << ", floor " << scaledTime(floorSeconds(cost, *roofline.gpu));
    os << "]";
    if (const KernelResources *k = resourcesOf(artifact, report, step)) {
      Occupancy occupancy =
          occupancyOnSm90(*k, threadsOf(step), step.launch.sharedBytes);
      // A stack frame is local memory: spills, or an array indexed at run
      // time (a loop over registers left rolled).
      std::string stack = k->stackBytes
                              ? llvm::formatv(", {0} B stack", k->stackBytes)
                              : std::string();
      // The code size: what a change to the kernel's text removes or adds
      // (a loop's body once).
      std::string code =
          k->instructions
              ? llvm::formatv(", {0} instructions", k->instructions).str()
              : std::string();
      os << llvm::formatv(
          "  [{0} regs, {1} B smem, {2} B spilled{5}{6}, "
          "occupancy {3:P0}{4}]",
          k->registers, k->sharedBytes + step.launch.sharedBytes,
          k->spillStoreBytes + k->spillLoadBytes, occupancy.fraction,
          cost.tf32          ? ", mma.sync tf32"
          : cost.wgmma       ? ", wgmma"
          : cost.tensorCores ? ", mma.sync"
                             : "",
          stack, code);
    }
    if (std::string runsIf = runsIfText(artifact, i); !runsIf.empty())
      os << "  " << runsIf;
    if (i < report.origins.size() && !report.origins[i].empty()) {
      os << "  <- ";
      llvm::interleave(report.origins[i], os, ", ");
    }
    if (const KernelConfig *config = configOf(artifact, report, step))
      os << "  config " << config->text();
    os << "\n";
  }
  if (!report.kernelResources.empty()) {
    int64_t maxRegisters = 0, spilling = 0, withStack = 0;
    for (const KernelResources &k : report.kernelResources) {
      maxRegisters = std::max(maxRegisters, k.registers);
      spilling += k.spillStoreBytes + k.spillLoadBytes > 0;
      withStack += k.stackBytes > 0;
    }
    os << "kernels (ptxas, " << artifact.arch
       << "): " << report.kernelResources.size() << ", at most " << maxRegisters
       << " registers, " << spilling << " spilling, " << withStack
       << " with local memory\n";
  }
  os << "roofline: " << scaled(roofline.flops, "FLOP") << ", "
     << scaled(roofline.bytes, "B") << " moved";
  if (roofline.gpu)
    os << "; floor on " << roofline.gpu->name << " "
       << scaledTime(roofline.floor) << " (compute "
       << scaledTime(roofline.computeFloor) << ", memory "
       << scaledTime(roofline.memoryFloor)
       << ")\n  peaks: " << roofline.gpu->origin;
  os << "\n";
  os << "memory: peak arena " << artifact.arenaBytes << " bytes";
  if (report.liveLowerBoundBytes > 0)
    os << llvm::formatv(
        " (live lower bound {0} bytes, {1:f2}x)", report.liveLowerBoundBytes,
        double(artifact.arenaBytes) / double(report.liveLowerBoundBytes));
  else if (report.liveLowerBoundBytes == 0)
    os << " (live lower bound 0 bytes)";
  os << ", weights " << weightBytesOf(artifact, report) << " bytes\n";
  if (!artifact.symbolic.empty()) {
    os << "dims:";
    for (auto [i, dim] : llvm::enumerate(artifact.symbolic.dims))
      os << (i ? ", " : " ") << dim.name << " " << dim.min << ".." << dim.max;
    os << " (the arena is planned for the top of the ranges)\n";
    if (!report.livePeakFormula.empty())
      os << "  live bytes at the peak: " << report.livePeakFormula << "\n";
  }
  os << "precision: " << report.precision;
  if (report.precision != "fp32")
    os << " (" << report.fp32Kept.size() << " tensors kept in fp32)";
  os << "\n";
  for (const Fp32Kept &k : report.fp32Kept) {
    os << llvm::formatv("  {0,-24} {1,-6} {2} {3}", k.rule, k.kind, k.name,
                        k.type);
    if (!k.onnxNodes.empty()) {
      os << "  <- ";
      llvm::interleave(k.onnxNodes, os, ", ");
    }
    os << "\n";
  }
  if (report.quantizedWeights.empty())
    return;
  os << "weights quantized at compile time: " << report.quantizedWeights.size()
     << " products (relative L2 error of a random row through them)\n";
  for (const QuantizedWeights &q : report.quantizedWeights) {
    std::string form =
        q.format == "fp8"
            ? "fp8 per column"
            : llvm::formatv("{0} blocks of {1}", q.format, q.blockSize).str();
    os << llvm::formatv("  {0,-19} {1,-12} error {2:e2}", form, q.shape,
                        q.error);
    if (!q.onnxNodes.empty()) {
      os << "  <- ";
      llvm::interleave(q.onnxNodes, os, ", ");
    }
    os << "\n";
  }
}

void printReportJson(const rt::Artifact &artifact, const CompileReport &report,
                     llvm::raw_ostream &os) {
  Counts counts = countsOf(artifact, report);
  Roofline roofline = rooflineOf(artifact, report);
  llvm::json::Array launches;
  for (auto [i, step] : llvm::enumerate(artifact.steps)) {
    llvm::json::Array nodes;
    if (i < report.origins.size())
      for (const std::string &name : report.origins[i])
        nodes.push_back(name);
    const StepCost &cost = roofline.costs[i];
    llvm::json::Object launch{{"index", static_cast<int64_t>(i)},
                              {"kind", kindOf(artifact, step)},
                              {"name", nameOf(artifact, step)},
                              {"onnx_nodes", std::move(nodes)},
                              {"flops", cost.flops},
                              {"bytes", cost.bytes},
                              {"tensor_cores", cost.tensorCores}};
    if (roofline.gpu)
      launch["floor_us"] = floorSeconds(cost, *roofline.gpu) * 1e6;
    if (std::string runsIf = runsIfText(artifact, i); !runsIf.empty())
      launch["runs_if"] = runsIf;
    if (step.kind == rt::Step::Kind::Launch) {
      launch["grid"] = llvm::json::Array{
          step.launch.grid[0], step.launch.grid[1], step.launch.grid[2]};
      launch["block"] = llvm::json::Array{
          step.launch.block[0], step.launch.block[1], step.launch.block[2]};
      if (const KernelResources *k = resourcesOf(artifact, report, step)) {
        Occupancy occupancy =
            occupancyOnSm90(*k, threadsOf(step), step.launch.sharedBytes);
        launch["resources"] = llvm::json::Object{
            {"registers", k->registers},
            {"barriers", k->barriers},
            {"shared_bytes", k->sharedBytes},
            {"dynamic_shared_bytes", step.launch.sharedBytes},
            {"stack_bytes", k->stackBytes},
            {"spill_store_bytes", k->spillStoreBytes},
            {"spill_load_bytes", k->spillLoadBytes},
            {"instructions", k->instructions},
            {"blocks_per_sm", occupancy.blocksPerSM},
            {"occupancy", occupancy.fraction},
            {"occupancy_limited_by", occupancy.limitedBy}};
      }
      const KernelConfig *config = configOf(artifact, report, step);
      if (config && !config->gemmCandidates.empty()) {
        // A GEMM kernel launched on its own (the packed GEMV): its layout.
        launch["config"] = llvm::json::Object{
            {"form", "gemm"}, {"layout", config->gemmCandidates[0].name()}};
      } else if (config) {
        const AttentionConfig &a = config->attention;
        launch["config"] =
            llvm::json::Object{{"form", attentionFormName(a.form)},
                               {"split", a.split},
                               {"warps", a.warps},
                               {"m_tiles", a.mTiles},
                               {"tile_keys", a.tileKeys},
                               {"kv_stages", a.kvStages},
                               {"barriers", a.barriers},
                               {"lazy_rescale", a.lazyRescale}};
      }
    } else if (step.kind == rt::Step::Kind::Matmul) {
      const rt::MatmulStep &m = step.matmul;
      launch["dtype"] = rt::dtypeName(m.dtype);
      launch["batch"] = static_cast<int64_t>(m.batch * m.outerBatch);
      launch["m"] = static_cast<int64_t>(m.m);
      launch["n"] = static_cast<int64_t>(m.n);
      launch["k"] = static_cast<int64_t>(m.k);
      llvm::json::Array kernels;
      for (const rt::GemmCandidate &g : m.kernels)
        kernels.push_back(
            llvm::json::Object{{"name", g.name},
                               {"kernel", artifact.kernelNames[g.kernel]},
                               {"tile_m", static_cast<int64_t>(g.tileM)},
                               {"tile_n", static_cast<int64_t>(g.tileN)},
                               {"threads", static_cast<int64_t>(g.threads)},
                               {"split_k", static_cast<int64_t>(g.splitK)}});
      launch["gemm_kernels"] = std::move(kernels);
      // The kernel that finishes a step with a norm, whichever runs it.
      if (m.hasNorm()) {
        launch["norm_kernel"] = artifact.kernelNames[m.normKernel];
        launch["norm"] = m.normRms ? "rms_norm" : "layer_norm";
        launch["writes_sum"] = m.normSum != rt::kNoBuffer;
      }
    } else {
      launch["bytes"] = static_cast<int64_t>(step.copy.bytes);
    }
    launches.push_back(std::move(launch));
  }
  llvm::json::Object root{
      {"model", report.model},
      {"launches", std::move(launches)},
      {"kernel_count", counts.kernels},
      {"library_call_count", counts.libraryCalls},
      {"after_library_call_count", counts.finishing},
      {"copy_count", counts.copies},
      {"onnx_node_count", counts.nodes},
      {"peak_arena_bytes", static_cast<int64_t>(artifact.arenaBytes)},
      {"live_lower_bound_bytes", report.liveLowerBoundBytes},
      {"weight_bytes", weightBytesOf(artifact, report)},
      {"precision", report.precision}};
  if (!artifact.symbolic.empty()) {
    llvm::json::Array dims;
    for (const rt::DimRange &dim : artifact.symbolic.dims)
      dims.push_back(llvm::json::Object{
          {"name", dim.name}, {"min", dim.min}, {"max", dim.max}});
    root["dims"] = std::move(dims);
    root["live_peak_formula"] = report.livePeakFormula;
  }
  llvm::json::Object line{{"flops", roofline.flops}, {"bytes", roofline.bytes}};
  if (roofline.gpu) {
    line["gpu"] = roofline.gpu->name;
    line["floor_us"] = roofline.floor * 1e6;
    line["compute_floor_us"] = roofline.computeFloor * 1e6;
    line["memory_floor_us"] = roofline.memoryFloor * 1e6;
    line["peaks"] = roofline.gpu->origin;
  }
  root["roofline"] = std::move(line);
  llvm::json::Array kept;
  for (const Fp32Kept &k : report.fp32Kept) {
    llvm::json::Array nodes;
    for (const std::string &name : k.onnxNodes)
      nodes.push_back(name);
    kept.push_back(llvm::json::Object{{"kind", k.kind},
                                      {"name", k.name},
                                      {"type", k.type},
                                      {"onnx_nodes", std::move(nodes)},
                                      {"rule", k.rule}});
  }
  root["fp32_kept"] = std::move(kept);
  llvm::json::Array quantized;
  for (const QuantizedWeights &q : report.quantizedWeights) {
    llvm::json::Array nodes;
    for (const std::string &name : q.onnxNodes)
      nodes.push_back(name);
    quantized.push_back(llvm::json::Object{{"shape", q.shape},
                                           {"format", q.format},
                                           {"bits", q.bits},
                                           {"block_size", q.blockSize},
                                           {"error", q.error},
                                           {"onnx_nodes", std::move(nodes)}});
  }
  root["quantized_weights"] = std::move(quantized);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
}

} // namespace kiln
