//===- KernelResourcesTest.cpp - ptxas reports and sm_90 occupancy --------===//

#include "kiln/Compiler/KernelResources.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

using namespace kiln;

namespace {

// A log NVRTC 13 wrote for two kernels with --ptxas-options=-v.
constexpr const char *kLog =
    "ptxas info    : 0 bytes gmem\n"
    "ptxas info    : Compiling entry function 'big' for 'sm_90a'\n"
    "ptxas info    : Function properties for big\n"
    "ptxas         .     800 bytes stack frame, 24 bytes spill stores, 16 "
    "bytes spill loads\n"
    "ptxas info    : Used 40 registers, used 0 barriers, 800 bytes "
    "cumulative stack size\n"
    "ptxas info    : Compile time = 108.256 ms\n"
    "ptxas info    : Compiling entry function 'k' for 'sm_90a'\n"
    "ptxas info    : Function properties for k\n"
    "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes "
    "spill loads\n"
    "ptxas info    : Used 10 registers, used 1 barriers, 256 bytes smem\n"
    "ptxas info    : Compile time = 2.043 ms\n";

TEST(KernelResources, ParsesEachKernel) {
  std::vector<KernelResources> kernels = parsePtxasInfo(kLog);
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(kernels[0].name, "big");
  EXPECT_EQ(kernels[0].registers, 40);
  EXPECT_EQ(kernels[0].stackBytes, 800);
  EXPECT_EQ(kernels[0].spillStoreBytes, 24);
  EXPECT_EQ(kernels[0].spillLoadBytes, 16);
  EXPECT_EQ(kernels[0].sharedBytes, 0);
  EXPECT_EQ(kernels[1].name, "k");
  EXPECT_EQ(kernels[1].registers, 10);
  EXPECT_EQ(kernels[1].barriers, 1);
  EXPECT_EQ(kernels[1].sharedBytes, 256);
  EXPECT_EQ(kernels[1].spillStoreBytes, 0);
}

TEST(KernelResources, EmptyOrForeignLogGivesNoKernels) {
  EXPECT_TRUE(parsePtxasInfo("").empty());
  EXPECT_TRUE(parsePtxasInfo("warning: something else\n").empty());
}

/// Appends `value` to `image` as `bytes` little-endian bytes.
void put(std::string &image, uint64_t value, unsigned bytes) {
  for (unsigned i = 0; i < bytes; ++i)
    image.push_back(char((value >> (8 * i)) & 0xff));
}

/// An ELF64 little-endian image laid out by hand from the gABI's tables:
/// the header, a section name table, and section headers for a null
/// section, the names, `.text.<kernel>` of `textBytes` and `.nv.info`.
std::string elfImage(const std::string &kernel, uint64_t textBytes) {
  // (A literal's size, not its first NUL, ends each piece.)
  std::string names = std::string("\0.shstrtab\0.text.", 17) + kernel +
                      std::string("\0.nv.info\0", 10);
  uint32_t shstrtabName = 1, textName = 11,
           infoName = uint32_t(11 + 6 + kernel.size() + 1);
  std::string image = "\x7f"
                      "ELF";
  image += char(2); // ELFCLASS64
  image += char(1); // ELFDATA2LSB
  image.resize(0x28, '\0');
  uint64_t namesAt = 64, headersAt = namesAt + names.size();
  put(image, headersAt, 8); // e_shoff
  put(image, 0, 4);         // e_flags
  put(image, 64, 2);        // e_ehsize
  put(image, 0, 2);         // e_phentsize
  put(image, 0, 2);         // e_phnum
  put(image, 64, 2);        // e_shentsize
  put(image, 4, 2);         // e_shnum
  put(image, 1, 2);         // e_shstrndx
  image += names;
  auto section = [&](uint32_t name, uint64_t offset, uint64_t size) {
    std::string header;
    put(header, name, 4);
    header.resize(24, '\0');
    put(header, offset, 8); // sh_offset
    put(header, size, 8);   // sh_size
    header.resize(64, '\0');
    image += header;
  };
  section(0, 0, 0);
  section(shstrtabName, namesAt, names.size());
  section(textName, 0, textBytes);
  section(infoName, 0, 24);
  return image;
}

TEST(KernelResources, InstructionsAreTheTextSectionOver16Bytes) {
  std::vector<KernelResources> kernels(2);
  kernels[0].name = "other";
  kernels[1].name = "kiln_add";
  countInstructions(elfImage("kiln_add", 160), kernels);
  EXPECT_EQ(kernels[0].instructions, 0);
  EXPECT_EQ(kernels[1].instructions, 10);
}

TEST(KernelResources, negative_DamagedImagesCountNothingAndReadNoFurther) {
  std::string image = elfImage("k", 320);
  std::vector<KernelResources> kernels(1);
  kernels[0].name = "k";
  countInstructions(image, kernels);
  ASSERT_EQ(kernels[0].instructions, 20);
  // Every truncation: the section headers come last, so an image cut
  // before the text section's sh_size (bytes 32 to 40 of the third of four
  // headers) counts nothing, and one cut after it still counts that
  // section (its own header's bytes are all it needs).
  size_t textHeaderEnd = image.size() - 2 * 64 + 40;
  for (size_t size = 0; size < image.size(); ++size) {
    kernels[0].instructions = 0;
    std::string prefix = image.substr(0, size);
    countInstructions(prefix, kernels);
    EXPECT_EQ(kernels[0].instructions, size >= textHeaderEnd ? 20 : 0)
        << "truncated to " << size;
  }
  // A 32-bit or big-endian image, a section name table index out of range,
  // and a text section whose name lies past the table.
  size_t textHeader = image.size() - 2 * 64;
  for (auto [offset, byte] :
       {std::pair<size_t, char>{4, 1}, {5, 2}, {0x3e, 9}, {textHeader, 0x7f}}) {
    std::string damaged = image;
    damaged[offset] = byte;
    kernels[0].instructions = 0;
    countInstructions(damaged, kernels);
    EXPECT_EQ(kernels[0].instructions, 0) << "byte " << offset;
  }
}

// The numbers below follow the CUDA occupancy rules for compute capability
// 9.0, worked by hand.
TEST(KernelResources, OccupancyLimitedByThreads) {
  KernelResources k;
  k.registers = 24; // 768 registers a warp: 85 warps fit
  Occupancy o = occupancyOnSm90(k, 256);
  EXPECT_EQ(o.blocksPerSM, 8); // 2048 threads / 256
  EXPECT_DOUBLE_EQ(o.fraction, 1.0);
  EXPECT_EQ(o.limitedBy, "threads");
}

TEST(KernelResources, OccupancyLimitedByRegisters) {
  KernelResources k;
  k.registers = 128; // 4096 registers a warp: 16 warps fit
  Occupancy o = occupancyOnSm90(k, 256);
  EXPECT_EQ(o.blocksPerSM, 2); // 16 warps / 8 warps a block
  EXPECT_DOUBLE_EQ(o.fraction, 0.25);
  EXPECT_EQ(o.limitedBy, "registers");
}

TEST(KernelResources, OccupancyRoundsRegistersToTheUnit) {
  KernelResources k;
  k.registers = 33; // 1056 a warp, allocated as 1280: 51 warps fit
  Occupancy o = occupancyOnSm90(k, 128);
  EXPECT_EQ(o.blocksPerSM, 12); // 51 warps / 4 warps a block
  EXPECT_EQ(o.limitedBy, "registers");
}

TEST(KernelResources, OccupancyLimitedBySharedMemory) {
  KernelResources k;
  k.registers = 16;
  k.sharedBytes = 48 * 1024; // 49 KiB with the reserved 1 KiB: 4 fit
  Occupancy o = occupancyOnSm90(k, 128);
  EXPECT_EQ(o.blocksPerSM, 4);
  EXPECT_DOUBLE_EQ(o.fraction, 16.0 / 64.0);
  EXPECT_EQ(o.limitedBy, "shared memory");
}

TEST(KernelResources, DynamicSharedMemoryCountsWithTheStatic) {
  KernelResources k;
  k.registers = 16;
  k.sharedBytes = 4 * 1024;
  // 4 + 64 + 1 reserved = 69 KiB a block: 3 fit in 228 KiB (without the
  // dynamic part 45 would, and the threads limit them to 16).
  Occupancy o = occupancyOnSm90(k, 128, 64 * 1024);
  EXPECT_EQ(o.blocksPerSM, 3);
  EXPECT_EQ(o.limitedBy, "shared memory");
  EXPECT_EQ(occupancyOnSm90(k, 128).limitedBy, "threads");
}

TEST(KernelResources, OccupancyLimitedByBlocks) {
  KernelResources k;
  k.registers = 16;
  Occupancy o = occupancyOnSm90(k, 32); // 64 would fit by threads
  EXPECT_EQ(o.blocksPerSM, 32);
  EXPECT_DOUBLE_EQ(o.fraction, 0.5);
  EXPECT_EQ(o.limitedBy, "blocks");
}

} // namespace
