//===- GemmParts.h - the text both GEMM forms share -------------*- C++ -*-===//
//
// Internal to the CUDA target: what the tensor-core GEMM kernels
// (GemmEmitter.cpp) and decoding's GEMV kernels (GemvEmitter.cpp) both
// write: the spelling of their element type, the integer parameters every
// kernel of the family takes (rt::GemmCandidate's calling convention), the
// epilogue of one element, and the placeholder substitution their
// templates are written in; and what both kernels over packed weights
// (PackedGemvEmitter.cpp, PackedGemmEmitter.cpp) write: the zero points
// and the finish of a split.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_TARGET_CUDA_GEMMPARTS_H
#define KILN_LIB_TARGET_CUDA_GEMMPARTS_H

#include "GemmEmitter.h"

#include <string>
#include <utility>
#include <vector>

namespace kiln {
namespace gemm {

/// The C storage type, the name suffix, the conversions, the pair type and
/// its conversion to float2, and the mma.sync helper of a 16-bit element
/// type.
struct HalfSpelling {
  const char *type, *suffix, *toFloat, *fromFloat, *pair, *pairToFloat2, *mma;
};

/// The spelling of F16 or BF16, or of F32 (the fma and GEMV forms, and the
/// integer GEMM's epilogue; its pair and mma empty).
HalfSpelling spellingOf(rt::DType dtype);

/// The parameters every kernel of the family takes after its pointers: the
/// step's extents and strides in rt::MatmulField order, the activation and
/// the split.
extern const char *const kIntegerParameters;

/// The main kernel's signature, both forms (rt::GemmCandidate's calling
/// convention: A, B, C, the bias, the residual, the split's partial sums,
/// $NORM_PARAMETERS, then kIntegerParameters and $NORM_INTEGERS), and its
/// first statement, the wait for the
/// kernel before (the prelude's kiln_pdl_enter). Reads $THREADS, $NAME,
/// $ELEMENT, $C_ELEMENT (C's: float where widened) and $INTEGERS.
extern const char *const kMainSignature;

/// The epilogue of element (row, col) of the matrix at `c_mat` (and `r_mat`,
/// laid out alike) from its fp32 sum `v`, for a kernel of `kind`: its
/// choices are constants of the kernel (GemmEmitter.cpp says why).
std::string finishOf(const GemmKernelKind &kind);
/// The epilogue of `v` at (row, col) without its store: `kind`'s residual,
/// bias and activation, constants of the kernel.
std::string applyOf(const GemmKernelKind &kind);
/// The epilogue of a Q/DQ GEMM with a tail: `kind`'s epilogue, the value
/// rounded to the product's type as `product`, then the tail's statements
/// and the store of its value.
std::string finishThroughTail(const GemmKernelKind &kind,
                              const QdqGemmTail &tail);
/// The placeholders both forms of the Q/DQ GEMM (QdqGemmEmitter.cpp,
/// QdqWgmmaEmitter.cpp) and their split finish share: packedValues' for a row
/// of `shape.rowBytes` bytes, with the tail's storage, parameters and finish
/// where there is one; the activations' scale's $A_ELEMENT and $A_TO_FLOAT;
/// and $STORE of an element's scaled sum `v` (the split's partial, or the
/// finish).
std::vector<std::pair<std::string, std::string>>
qdqValues(const QdqGemmShape &shape, int64_t splitK, const std::string &name,
          const std::string &rows, const std::string &dims,
          const QdqGemmTail *tail);
/// The packed kernels' shape that a Q/DQ GEMM of `shape` fills their
/// placeholders from (one block a row of bytes with no zero points, which
/// the epilogue does not read), its norm included.
PackedGemvShape qdqPackedShape(const QdqGemmShape &shape);
/// The epilogue (bias, residual, activation) of a Q/DQ GEMM of `shape`
/// before its tail.
GemmKernelKind qdqEpilogueKind(const QdqGemmShape &shape);
/// The end of both forms of the Q/DQ GEMM: splitFinishValues', or where
/// the tail ends in a norm (shape.norm), normFinishValues' with each
/// element's value the tail's (the norm's input) and each normalized
/// element `y` stored through the tail's ops after the norm.
std::vector<std::pair<std::string, std::string>>
qdqFinishValues(const QdqGemmShape &shape, const std::string &name,
                int64_t splitK, int64_t tileM, int64_t tileN, int64_t mostRows,
                const QdqGemmTail *tail, std::string &counters);
/// How a value `v` of a `dtype` product is stored into C: converted to
/// `dtype`, or with `widen` rounded to it and kept a float (a function's
/// name, called on the value).
std::string storedAs(rt::DType dtype, bool widen);

/// The opening of a split's loop over its k tiles, two buffers deep, in
/// the three mma.sync GEMMs (GemmEmitter.cpp, PackedGemmEmitter.cpp,
/// QdqGemmEmitter.cpp): tile kt_begin staged into buffer 0 by
/// $STAGE_TILE (which reads `st` and `kn`), then each step `kt` stages the
/// next tile into the other buffer and waits for its own. The body that
/// follows multiplies buffer `s` and ends with a barrier and the loop's
/// brace.
extern const char *const kStagedLoop;

/// The epilogue of the GEMMs over 8-bit or packed weights
/// (PackedGemmEmitter.cpp, QdqGemmEmitter.cpp), a tileM x 64 tile of four
/// warps of 16 columns: each accumulator in C's bounds becomes `v` by
/// $TILE_VALUE (after the kernel's own $TILE_LOCALS) and is stored by
/// $STORE, with packedValues' $R_MAT and $BIAS_LOCAL; it closes the kernel.
extern const char *const kFourWarpTileStore;

/// The exchanges of the n x k GEMV's sums (GemvEmitter.cpp) for `rows`
/// rows and `columns` columns a lane, straight-line: defines held_row (the
/// row the lane's acc[0] sums belong to after them) and copies (the mask
/// bits of lanes that hold the same sums). Both GEMVs over n x k weights
/// (16-bit and packed) end with it.
std::string gemvExchangeText(int64_t rows, int64_t columns);

/// The end of both GEMVs over n x k weights: the exchanges ($EXCHANGE, the
/// text gemvExchangeText gives), then each lane's row of its columns
/// ($COLUMNS_PER_LANE) stored by $STORE, after $DECLARATIONS (the
/// declarations the store reads that the kernel has not made).
extern const char *const kGemvColumnStores;

/// The declarations of kernel `name`'s arrival counters: `tiles` for its
/// splits' tiles of C (`NAME_arrived`) and, where `rowTiles` is not 0,
/// `rowTiles` for its column tiles' row tiles (`NAME_rows_arrived`).
std::string arrivalCounters(const std::string &name, uint64_t tiles,
                            uint64_t rowTiles);

/// The end of a kernel over packed or 8-bit weights (PackedGemvEmitter.cpp,
/// PackedGemmEmitter.cpp, QdqGemmEmitter.cpp, QdqWgmmaEmitter.cpp) whose
/// blocks own `tileM` x `tileN` tiles of C, split `splitK` ways over K: the
/// value of $ARRIVALS, which ends the kernel's text with every thread
/// of the block. Without a split it is empty. With one, each block has
/// stored its sums (`partials`, split s's element (row, col) at
/// (s * m + row) * n + col), and the last block of a tile to arrive adds
/// them in split order and applies the epilogue ($FINISH). `counters` gets
/// the declaration of the arrival counters, one a tile of the grid for
/// runs of up to `mostRows` rows of `n` columns, which the kernel's text
/// must follow.
std::vector<std::pair<std::string, std::string>>
splitFinishValues(const std::string &name, int64_t splitK, int64_t tileM,
                  int64_t tileN, int64_t mostRows, int64_t n,
                  std::string &counters);
/// The end of a GEMM family kernel of `kind` and `config`'s tiles, split
/// `split_k` ways at run time, and the parameters it adds to the family's
/// ($NORM_PARAMETERS, $NORM_INTEGERS). After each block stored its sums (as
/// above, past the matrix's first split's `matrix * split_k * m * n`
/// floats; unsplit, a block without a norm stores C itself), the last
/// block of a tile to arrive adds them in split order and applies the
/// epilogue, bit for bit the reduce kernel this replaced. With a norm
/// (kind.norm), normFinishValues' two arrivals, its choices (LayerNorm or
/// RMSNorm, epsilon, the shift and the sum) read at run time as the norm
/// kernel reads them: the kernel also takes (norm_scale, norm_shift, sum)
/// after the partials and (epsilon_bits, rms) after the integers, and its
/// partials hold each matrix's rows' statistics past every split's sums.
/// Its counters are `NAME_arrived` (and with a norm `NAME_rows_arrived`),
/// which familyArrivalCounters (GemmEmitter.h) declares.
std::vector<std::pair<std::string, std::string>>
familyFinishValues(const GemmKernelKind &kind, const GemmConfig &config);
/// What the module's text must have before such a kernel `name` of `kind`
/// besides its counters: the norm finish's helper.
std::string familyFinishPreamble(const GemmKernelKind &kind,
                                 const std::string &name);
/// The same end for a kernel over packed weights of `shape` whose epilogue
/// ends in a row norm (shape.norm): every block stores its sums
/// (`partials`, split or not, with room past the splits' sums for each
/// row's statistics over each column tile: 2 floats a row and column
/// tile). The last block of a tile to arrive adds them, applies the
/// epilogue, stores what the norm reads (the `sum` result where the kernel
/// has one, else the floats over split 0's sums) and the tile's
/// statistics of each row; the last column tile of a row tile to arrive
/// combines them and normalizes the rows into C. `preamble` gets the
/// counters' declarations and the helpers, which the kernel's text must
/// follow.
std::vector<std::pair<std::string, std::string>>
normFinishValues(const PackedGemvShape &shape, const std::string &name,
                 int64_t splitK, int64_t tileM, int64_t tileN, int64_t mostRows,
                 std::string &preamble);
/// The end of the kernel over packed weights of `shape` and `config`:
/// normFinishValues' where the epilogue ends in a norm, else
/// splitFinishValues'.
std::vector<std::pair<std::string, std::string>>
packedFinishValues(const PackedGemvShape &shape, const std::string &name,
                   const GemmConfig &config, int64_t mostRows,
                   std::string &preamble);

/// The placeholders both kernels over packed weights of `shape` fill alike
/// for kernel `name` split `splitK` ways: the element type ($ELEMENT,
/// $TO_FLOAT), the weights' format ($BITS, $BLOCK_SIZE, $BLOCKS,
/// $ROW_BYTES), the extents ($EXTENT_M is `rows`, C text over the dim
/// parameters `dims`, $DIMS), the zero points ($ZERO_PARAMETER, and
/// $ZERO_POINT: column `col`'s in quantization block `blk` as a float, 0
/// where `live` is false), the epilogue's parameters and locals
/// ($BIAS_PARAMETER, $RESIDUAL_PARAMETER, $R_MAT, $BIAS_LOCAL,
/// $PARTIALS_PARAMETER) and the epilogue of `v` at (row, col) ($FINISH).
std::vector<std::pair<std::string, std::string>>
packedValues(const PackedGemvShape &shape, int64_t splitK,
             const std::string &name, const std::string &rows,
             const std::string &dims);

/// `text` with each `$NAME` of `values` replaced, and again until none is
/// left, so that a value may hold placeholders itself. No name is the
/// start of another. Without `complete`, placeholders may stay for a later
/// substitution.
std::string
substitute(std::string text,
           const std::vector<std::pair<std::string, std::string>> &values,
           bool complete = true);

} // namespace gemm
} // namespace kiln

#endif // KILN_LIB_TARGET_CUDA_GEMMPARTS_H
