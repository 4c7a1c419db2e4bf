//===- KernelResources.cpp - what ptxas gave each kernel ------------------===//

#include "kiln/Compiler/KernelResources.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Regex.h"

#include <algorithm>
#include <optional>

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

namespace {
/// A little-endian integer of `bytes` bytes at `offset` of `image`, or
/// nothing past its end.
std::optional<uint64_t> readLE(llvm::StringRef image, uint64_t offset,
                               unsigned bytes) {
  if (offset > image.size() || bytes > image.size() - offset)
    return std::nullopt;
  uint64_t value = 0;
  for (unsigned i = 0; i < bytes; ++i)
    value |= uint64_t(uint8_t(image[offset + i])) << (8 * i);
  return value;
}
} // namespace

void kiln::countInstructions(llvm::StringRef cubin,
                             std::vector<KernelResources> &kernels) {
  // ELF64 (System V gABI): e_shoff at 0x28, e_shentsize, e_shnum and
  // e_shstrndx at 0x3a, 0x3c, 0x3e; a section header's sh_name at 0 and
  // sh_size at 32.
  constexpr uint64_t kInstructionBytes = 16;
  if (!cubin.starts_with("\x7f"
                         "ELF") ||
      cubin.size() < 64 || cubin[4] != 2 || cubin[5] != 1)
    return;
  auto headers = readLE(cubin, 0x28, 8), entrySize = readLE(cubin, 0x3a, 2),
       count = readLE(cubin, 0x3c, 2), namesIndex = readLE(cubin, 0x3e, 2);
  if (!headers || !entrySize || *entrySize < 64 || !count || !namesIndex ||
      *namesIndex >= *count)
    return;
  auto header = [&](uint64_t i, uint64_t field, unsigned bytes) {
    return readLE(cubin, *headers + i * *entrySize + field, bytes);
  };
  auto namesAt = header(*namesIndex, 24, 8),
       namesSize = header(*namesIndex, 32, 8);
  if (!namesAt || !namesSize || *namesAt > cubin.size() ||
      *namesSize > cubin.size() - *namesAt)
    return;
  llvm::StringRef names = cubin.substr(*namesAt, *namesSize);
  for (uint64_t i = 0; i < *count; ++i) {
    auto nameAt = header(i, 0, 4), size = header(i, 32, 8);
    if (!nameAt || !size || *nameAt >= names.size())
      continue;
    llvm::StringRef name = names.drop_front(*nameAt);
    name = name.take_until([](char c) { return c == '\0'; });
    if (!name.consume_front(".text."))
      continue;
    for (KernelResources &k : kernels)
      if (k.name == name)
        k.instructions = int64_t(*size / kInstructionBytes);
  }
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
