//===- AttentionConfig.h - choosing the attention kernel's layout -*- C++
//-*-===//
//
// Internal to the CUDA target: the one function that lays out a tensor-core
// attention kernel (AttentionConfig.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_TARGET_CUDA_ATTENTIONCONFIG_H
#define KILN_LIB_TARGET_CUDA_ATTENTIONCONFIG_H

#include "AttentionParts.h"

#include "kiln/KernelConfig/KernelConfig.h"

namespace kiln {

/// The layout of the tensor-core kernel of `parts` (TF32 where `tf32`; the
/// split kernel of flash-decoding where `split`) under `overrides`, which
/// checkAttentionOverrides has accepted.
AttentionConfig chooseAttentionConfig(const AttentionParts &parts, bool tf32,
                                      bool split,
                                      const AttentionOverrides &overrides);

} // namespace kiln

#endif // KILN_LIB_TARGET_CUDA_ATTENTIONCONFIG_H
