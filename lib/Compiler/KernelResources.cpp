//===- KernelResources.cpp - what ptxas gave each kernel ------------------===//

#include "kiln/Compiler/KernelResources.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Regex.h"

#include <algorithm>

using namespace kiln;

/// The integer before `unit` in `line` (e.g. "40 registers"), or -1.
static int64_t numberBefore(llvm::StringRef line, llvm::StringRef unit) {
  llvm::Regex pattern("([0-9]+) " + unit.str());
  llvm::SmallVector<llvm::StringRef, 2> match;
  int64_t value = -1;
  if (pattern.match(line, &match))
    (void)match[1].getAsInteger(10, value);
  return value;
}

std::vector<KernelResources> kiln::parsePtxasInfo(llvm::StringRef log) {
  // ptxas writes, per kernel:
  //   ptxas info    : Function properties for NAME
  //   ptxas         .     800 bytes stack frame, 0 bytes spill stores, ...
  //   ptxas info    : Used 40 registers, used 0 barriers, 256 bytes smem
  std::vector<KernelResources> kernels;
  llvm::SmallVector<llvm::StringRef> lines;
  log.split(lines, '\n');
  constexpr llvm::StringLiteral kProperties = "Function properties for ";
  for (llvm::StringRef line : lines) {
    size_t at = line.find(kProperties);
    if (at != llvm::StringRef::npos) {
      kernels.emplace_back();
      kernels.back().name = line.drop_front(at + kProperties.size()).trim();
      continue;
    }
    if (kernels.empty())
      continue;
    KernelResources &k = kernels.back();
    if (line.contains("stack frame")) {
      k.stackBytes = std::max<int64_t>(numberBefore(line, "bytes stack"), 0);
      k.spillStoreBytes =
          std::max<int64_t>(numberBefore(line, "bytes spill stores"), 0);
      k.spillLoadBytes =
          std::max<int64_t>(numberBefore(line, "bytes spill loads"), 0);
    } else if (line.contains("Used ")) {
      k.registers = std::max<int64_t>(numberBefore(line, "registers"), 0);
      k.barriers = std::max<int64_t>(numberBefore(line, "barriers"), 0);
      k.sharedBytes = std::max<int64_t>(numberBefore(line, "bytes smem"), 0);
    }
  }
  return kernels;
}

Occupancy kiln::occupancyOnSm90(const KernelResources &kernel,
                                int64_t threadsPerBlock,
                                int64_t dynamicSharedBytes) {
  constexpr int64_t kRegistersPerSM = 65536, kRegisterUnit = 256;
  constexpr int64_t kSharedPerSM = 228 * 1024, kReservedPerBlock = 1024;
  constexpr int64_t kThreadsPerSM = 2048, kBlocksPerSM = 32, kWarpsPerSM = 64;
  Occupancy result;
  if (threadsPerBlock <= 0)
    return result;
  int64_t warps = (threadsPerBlock + 31) / 32;
  // Registers are allocated per warp, rounded up to the allocation unit.
  int64_t perWarp = (std::max<int64_t>(kernel.registers, 1) * 32 +
                     kRegisterUnit - 1) / kRegisterUnit * kRegisterUnit;
  struct Limit {
    int64_t blocks;
    const char *what;
  } limits[] = {{kRegistersPerSM / perWarp / warps, "registers"},
                {kSharedPerSM / (kernel.sharedBytes + dynamicSharedBytes +
                                 kReservedPerBlock),
                 "shared memory"},
                {kThreadsPerSM / (warps * 32), "threads"},
                {kBlocksPerSM, "blocks"}};
  const Limit *least = llvm::min_element(
      limits, [](const Limit &a, const Limit &b) { return a.blocks < b.blocks; });
  result.blocksPerSM = least->blocks;
  result.limitedBy = least->what;
  result.fraction =
      std::min(1.0, double(least->blocks * warps) / double(kWarpsPerSM));
  return result;
}
