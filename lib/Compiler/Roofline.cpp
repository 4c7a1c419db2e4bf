//===- Roofline.cpp - Work and floor time of each launch ------------------===//

#include "kiln/Compiler/Roofline.h"

#include "kiln/Dialect/Kiln/KilnOps.h"
#include "kiln/Dialect/Kiln/SymbolicShapes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <algorithm>
#include <set>

using namespace mlir;

namespace kiln {

/// Peak rates, from NVIDIA's datasheets for the SXM parts (dense, without
/// sparsity). The H200 has the H100's GH100 compute and faster HBM3e.
static const GpuPeaks kGpus[] = {
    {"h100", 67e12, 989.4e12, 494.7e12, 3.35e12,
     "NVIDIA H100 datasheet (SXM5): FP32 67 TFLOP/s, dense BF16/FP16 tensor "
     "989.4 TFLOP/s, dense TF32 tensor 494.7 TFLOP/s, HBM3 3.35 TB/s"},
    {"h200", 67e12, 989.4e12, 494.7e12, 4.8e12,
     "NVIDIA H200 datasheet (SXM): FP32 67 TFLOP/s, dense BF16/FP16 tensor "
     "989.4 TFLOP/s, dense TF32 tensor 494.7 TFLOP/s, HBM3e 4.8 TB/s"},
};

const GpuPeaks *findGpuPeaks(llvm::StringRef name) {
  for (const GpuPeaks &gpu : kGpus)
    if (name == gpu.name)
      return &gpu;
  return nullptr;
}

std::string knownGpus() {
  std::string names;
  for (const GpuPeaks &gpu : kGpus)
    names += (names.empty() ? "" : ", ") + std::string(gpu.name);
  return names;
}

/// The dims of `value`, symbolic ones at the top of their ranges: the plan
/// the report describes (0 for a dim without a range).
static SmallVector<double> dimsOf(Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<double> dims;
  std::optional<SymbolicShape> sizes = symbolicShapeOf(type);
  if (!sizes)
    return SmallVector<double>(type.getRank(), 0.0);
  Operation *scope = value.getParentRegion()->getParentOp();
  auto func = isa<func::FuncOp>(scope) ? cast<func::FuncOp>(scope)
                                       : scope->getParentOfType<func::FuncOp>();
  DimRanges ranges = func ? dimRangesOf(func) : DimRanges();
  for (const DimExpr &size : *sizes) {
    std::optional<int64_t> upper = upperBound(size, ranges);
    dims.push_back(upper ? double(*upper) : 0.0);
  }
  return dims;
}

static double elementsOf(Value value) {
  double elements = 1;
  for (double d : dimsOf(value))
    elements *= d;
  return elements;
}

/// FLOPs of one op inside a kernel.
static double flopsOf(Operation *op) {
  if (auto attention = dyn_cast<AttentionOp>(op)) {
    SmallVector<double> query = dimsOf(attention.getQuery());
    SmallVector<double> key = dimsOf(attention.getKey());
    SmallVector<double> value = dimsOf(attention.getValue());
    double rows = query[0] * query[1] * query[2];
    double keys = key[key.size() - 2];
    // Q.K^T, softmax (about five per score), P.V.
    double perScore = 2.0 * query.back() + 5.0 + 2.0 * value.back();
    return rows * keys * perScore;
  }
  if (auto matmul = dyn_cast<MatmulOp>(op)) {
    return 2.0 * elementsOf(matmul.getResult()) *
           dimsOf(op->getOperand(0)).back();
  }
  if (isa<LayerNormOp>(op))
    return 8.0 * elementsOf(op->getOperand(0));
  if (isa<RmsNormOp>(op)) // The square and its sum, the scaled quotient.
    return 4.0 * elementsOf(op->getOperand(0));
  if (isa<SoftmaxOp, LogSoftmaxOp>(op))
    return 5.0 * elementsOf(op->getOperand(0));
  if (isReduction(op))
    return elementsOf(op->getOperand(0));
  if (isElementwise(op) && op->getNumResults() == 1)
    return elementsOf(op->getResult(0));
  return 0; // Data movement.
}

std::vector<double> kernelFlopsOf(ModuleOp module) {
  std::vector<double> flops;
  for (auto func : module.getOps<func::FuncOp>())
    for (auto kernel : func.getOps<KernelOp>()) {
      // A GEMM kernel is a cuBLASLt step, not a launch: costOf counts it
      // from the step, and the launches' numbering skips it. One of
      // quantized weights is launched too (its packed GEMV, or the
      // unpacking before its step; PlanPackedMatmuls.cpp).
      if (kernel.getKind() == KernelKind::gemm &&
          kernel.getBody().getOps<DequantizeOp>().empty())
        continue;
      double total = 0;
      kernel.getBody().walk([&](Operation *op) { total += flopsOf(op); });
      flops.push_back(total);
    }
  return flops;
}

std::vector<double> flopsOfKernels(const rt::Artifact &artifact,
                                   llvm::ArrayRef<double> opFlops) {
  std::vector<double> flops;
  llvm::StringRef lastIndex;
  llvm::StringSet<> opNames;
  size_t op = 0;
  for (llvm::StringRef name : artifact.kernelNames) {
    // kiln_<family>_<index>[_<part>]: the launches of one op share its
    // index. Kiln's GEMM kernels (kiln_gemm_f16_nt_..., kiln_gemm_norm_...)
    // are no op's launches: a matmul step runs them, and costOf counts the
    // step.
    auto [family, rest] = name.drop_front(5).split('_');
    auto [index, part] = rest.split('_');
    if (index.empty() || !llvm::all_of(index, llvm::isDigit)) {
      flops.push_back(0.0);
      continue;
    }
    // An op that shares an earlier op's kernels (PlanSharedKernels.cpp)
    // takes their names: the next op starts where a name repeats too.
    if (!flops.empty() && !lastIndex.empty() &&
        (index != lastIndex || opNames.contains(name))) {
      ++op;
      opNames.clear();
    }
    opNames.insert(name);
    lastIndex = index;
    // An unpacking converts weights; a left operand's kernel computes a
    // prologue's few flops for the paths after it, a cache update's kernel
    // an epilogue's after them (each path's kernel counts them with the
    // product), and an FP8 product's finish the epilogue after the matmul
    // step that counts the product: none is the op's arithmetic, which its
    // main kernel (or the step before or after) does.
    flops.push_back(part == "unpack" || part == "lhs" || part == "update" ||
                            part == "finish" || op >= opFlops.size()
                        ? 0.0
                        : opFlops[op]);
  }
  return flops;
}

std::vector<MmaUse> kernelsIssuingMmaSync(const rt::Artifact &artifact,
                                          const KernelConfigs &configs) {
  std::vector<MmaUse> issues(artifact.kernelNames.size(), MmaUse::None);
  // One pass over the PTX: each entry's body runs to the next entry.
  // Ops that share a kernel share its name (PlanSharedKernels.cpp).
  llvm::StringMap<llvm::SmallVector<size_t, 1>> index;
  for (auto [i, name] : llvm::enumerate(artifact.kernelNames))
    index[name].push_back(i);
  llvm::StringRef ptx = artifact.ptx;
  for (size_t entry = ptx.find(".entry "); entry != llvm::StringRef::npos;) {
    size_t next = ptx.find(".entry ", entry + 1);
    llvm::StringRef body = ptx.slice(entry, next);
    llvm::StringRef name = body.drop_front(7).take_until(
        [](char c) { return c == '(' || c == ' ' || c == '\n'; });
    auto it = index.find(name);
    if (it != index.end()) {
      MmaUse use = body.contains("mma.sync.aligned.m16n8k8.row.col.f32.tf32")
                       ? MmaUse::Tf32
                   : body.contains("mma.sync") ? MmaUse::Sixteen
                                               : MmaUse::None;
      for (size_t i : it->second)
        issues[i] = use;
    }
    entry = next;
  }
  for (const KernelConfig &config : configs) {
    auto it = index.find(config.kernel);
    if (it != index.end() && config.attention.form == AttentionForm::Wgmma)
      for (size_t i : it->second)
        issues[i] = MmaUse::Wgmma;
  }
  return issues;
}

StepCost costOf(const rt::Artifact &artifact, const rt::Step &step,
                llvm::ArrayRef<double> kernelFlops,
                const std::vector<MmaUse> &mmaSync) {
  StepCost cost;
  switch (step.kind) {
  case rt::Step::Kind::Launch: {
    if (step.launch.kernel < kernelFlops.size())
      cost.flops = kernelFlops[step.launch.kernel];
    MmaUse mma = step.launch.kernel < mmaSync.size()
                     ? mmaSync[step.launch.kernel]
                     : MmaUse::None;
    cost.tensorCores = mma != MmaUse::None;
    cost.tf32 = mma == MmaUse::Tf32;
    cost.wgmma = mma == MmaUse::Wgmma;
    // Each distinct buffer once (a view and its source count once). An FP8
    // product's finish after cuBLASLt takes the Q/DQ GEMM's operands (its
    // rival's signature, QdqCublasLtFinish.cpp) and reads neither.
    llvm::StringRef name =
        step.launch.kernel < artifact.kernelNames.size()
            ? llvm::StringRef(artifact.kernelNames[step.launch.kernel])
            : llvm::StringRef();
    bool finish = name.starts_with("kiln_gemmf8_") && name.ends_with("_finish");
    std::set<uint32_t> seen;
    for (auto [i, id] : llvm::enumerate(step.launch.args))
      if (!(finish && i < 2) && seen.insert(id).second)
        cost.bytes += artifact.buffers[id].bytes;
    break;
  }
  case rt::Step::Kind::Matmul: {
    const rt::MatmulStep &m = step.matmul;
    double batch = double(m.batch) * double(m.outerBatch);
    cost.flops = 2.0 * batch * m.m * m.n * m.k;
    // The epilogue: one operation per element for the bias, the residual
    // (or C's previous contents) and the activation, as flopsOf counts
    // them in a kernel.
    double elements = batch * m.m * m.n;
    cost.flops += elements * ((m.bias != rt::kNoBuffer) + (m.beta != 0) +
                              (m.activation != rt::MatmulActivation::None));
    const rt::Buffer &c = artifact.buffers[m.c];
    // C is written, and its residual read where beta scales one (C's own
    // contents without a residual buffer). A widened step's residual is
    // 16-bit where C is fp32.
    double residualBytes = 0;
    if (m.beta != 0)
      residualBytes = m.residual != rt::kNoBuffer
                          ? artifact.buffers[m.residual].bytes
                          : c.bytes;
    cost.bytes = artifact.buffers[m.a].bytes + artifact.buffers[m.b].bytes +
                 c.bytes + residualBytes;
    // The epilogue's bias is read once; its activation costs no memory.
    if (m.bias != rt::kNoBuffer)
      cost.bytes += double(m.n) * rt::dtypeSize(m.dtype);
    // A LayerNorm: its statistics and normalization (about eight operations
    // an element, as a row kernel's), its scale and shift read once.
    if (m.hasNorm()) {
      cost.flops += 8 * elements;
      cost.bytes += 2 * double(m.n) * rt::dtypeSize(m.dtype);
    }
    // Float8 operands run at twice the 16-bit rate, which GpuPeaks does not
    // list: their floor is the 16-bit one.
    cost.tensorCores =
        m.dtype == rt::DType::F16 || m.dtype == rt::DType::BF16 || m.float8;
    cost.tf32 = m.tf32;
    break;
  }
  case rt::Step::Kind::Copy:
    cost.bytes = 2.0 * step.copy.bytes;
    break;
  }
  return cost;
}

double floorSeconds(const StepCost &cost, const GpuPeaks &gpu) {
  double peak = cost.tf32          ? gpu.tf32FlopsPerSecond
                : cost.tensorCores ? gpu.tensor16FlopsPerSecond
                                   : gpu.fp32FlopsPerSecond;
  return std::max(cost.flops / peak, cost.bytes / gpu.bytesPerSecond);
}

} // namespace kiln
