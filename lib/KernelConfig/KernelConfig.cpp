//===- KernelConfig.cpp - kernel configurations as data -------------------===//

#include "kiln/KernelConfig/KernelConfig.h"

#include "llvm/Support/FormatVariadic.h"

namespace kiln {

const char *attentionFormName(AttentionForm form) {
  switch (form) {
  case AttentionForm::MmaSync:
    return "mma.sync";
  case AttentionForm::MmaSyncTf32:
    return "mma.sync.tf32";
  case AttentionForm::Wgmma:
    return "wgmma";
  }
  return "?";
}

std::string AttentionConfig::text() const {
  return llvm::formatv("{0}{1} warps={2} m_tiles={3} tile_keys={4} "
                       "kv_stages={5} barriers={6} lazy_rescale={7}",
                       attentionFormName(form), split ? " split" : "", warps,
                       mTiles, tileKeys, kvStages, barriers,
                       lazyRescale ? 1 : 0);
}

std::string GemmConfig::layoutName() const {
  if (form == GemmForm::Gemv)
    return llvm::formatv("gemv_{0}x{1}_w{2}", tileM, tileN, warpsM * warpsN);
  if (form == GemmForm::Wgmma)
    return llvm::formatv("wgmma_{0}x{1}x{2}_s{3}", tileM, tileN, tileK, stages);
  return llvm::formatv("{0}_{1}x{2}x{3}_w{4}x{5}",
                       form == GemmForm::Fma ? "fma" : "mma", tileM, tileN,
                       tileK, warpsM, warpsN);
}

std::string GemmConfig::name() const {
  return layoutName() + "_split" + std::to_string(splitK);
}

std::string KernelConfig::text() const {
  if (gemmCandidates.empty())
    return attention.text();
  std::string text = "gemm";
  for (const GemmConfig &gemm : gemmCandidates)
    text += " " + gemm.name();
  return text;
}

std::string checkAttentionOverrides(const AttentionOverrides &o) {
  auto bad = [](const char *flag, int64_t value, const char *allowed) {
    return llvm::formatv("attention-{0}={1}: expected {2}", flag, value,
                         allowed)
        .str();
  };
  if (o.warps != 0 && o.warps != 4 && o.warps != 8)
    return bad("warps", o.warps, "4 or 8");
  if (o.rowsPerWarp != 0 && o.rowsPerWarp != 16 && o.rowsPerWarp != 32)
    return bad("rows-per-warp", o.rowsPerWarp, "16 or 32");
  if (o.tileKeys != 0 && o.tileKeys != 32 && o.tileKeys != 64 &&
      o.tileKeys != 128)
    return bad("tile-keys", o.tileKeys, "32, 64 or 128");
  if (o.kvStages != 0 && o.kvStages != 1 && o.kvStages != 2)
    return bad("kv-stages", o.kvStages, "1 or 2");
  if (o.barriers != 0 && o.barriers != 2 && o.barriers != 4)
    return bad("barriers", o.barriers, "2 or 4");
  return "";
}

} // namespace kiln
