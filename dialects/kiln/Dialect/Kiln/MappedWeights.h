//===- MappedWeights.h - weights that live in mapped files ------*- C++ -*-===//
//
// Weights imported from ONNX external data are resource blobs that point into
// read-only mappings of the model's files. Reading them faults their pages
// into the process, and those pages count as its resident memory until
// dropped. The passes and the artifact writer that read gigabytes of weights
// once (converting them, streaming them out) release the pages behind them,
// so that compiling a model needs far less memory than its weights' size.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_KILN_MAPPEDWEIGHTS_H
#define KILN_DIALECT_KILN_MAPPEDWEIGHTS_H

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <cstddef>

namespace kiln {

/// Records [begin, begin + size) as a read-only file mapping whose pages may
/// be dropped (they are read back from the file when touched again).
void registerMappedWeights(const char *begin, size_t size);

/// Forgets the mapping starting at `begin`, before it is unmapped.
void unregisterMappedWeights(const char *begin);

/// Drops the whole pages of `bytes` from resident memory when they lie in a
/// registered mapping; leaves any other memory alone (heap weights hold the
/// only copy of their values).
void releaseMappedWeightPages(llvm::ArrayRef<char> bytes);

/// A resource blob of `size` bytes that `fill(chunk, offset, bytes)` writes
/// piece by piece (`chunk` holds `bytes` bytes of the blob from `offset`),
/// kept in an unlinked temporary file that is mapped read-only and
/// registered as mapped weights: a weight converted at compile time never
/// sits whole in memory, and the artifact writer drops its pages as it
/// streams it out. Small blobs, and any when no temporary file can be made
/// (under $TMPDIR, else /tmp), stay on the heap.
mlir::AsmResourceBlob spilledBlob(
    size_t size,
    llvm::function_ref<void(char *chunk, size_t offset, size_t bytes)> fill);

/// The value of a constant of `type` whose `size` bytes `fill` writes, as
/// for spilledBlob: a readable `dense` literal up to 16 elements, else a
/// `dense_resource` blob named `name` (spilled when large).
mlir::ElementsAttr filledConstantValue(
    mlir::RankedTensorType type, size_t size,
    llvm::function_ref<void(char *chunk, size_t offset, size_t bytes)> fill,
    llvm::StringRef name);

/// The bytes of a `dense_resource` weight, read where they are (for external
/// data, the mapped model file), when its blob holds exactly the tensor's
/// elements in row-major order, one storage width each; empty otherwise
/// (other attributes, booleans, which MLIR stores packed, or a blob of the
/// wrong size). Readers that find it empty convert through a copy.
llvm::ArrayRef<char> storedBytesInPlace(mlir::ElementsAttr value);

} // namespace kiln

#endif // KILN_DIALECT_KILN_MAPPEDWEIGHTS_H
