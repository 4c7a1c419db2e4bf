//===- FloatBits.h - float32 to 16-bit float bits, fast ---------*- C++ -*-===//
//
// Converting a model's weights to fp16 or bf16 at compile time touches every
// weight once: gigabytes for a 1B-parameter model. APFloat's conversion is
// exact but costs microseconds an element; these give the same bits (round
// to nearest, ties to even) with a few integer operations, so that the
// conversion costs about what reading the weights does.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CONSTANTDATA_FLOATBITS_H
#define KILN_CONSTANTDATA_FLOATBITS_H

#include <cstddef>
#include <cstdint>

namespace kiln {

/// The IEEE binary16 bits nearest `value`: ties to even, beyond the largest
/// finite value infinity, NaN a quiet NaN of the same sign.
uint16_t halfBitsOf(float value);

/// The bfloat16 bits nearest `value`: ties to even, NaN a quiet NaN of the
/// same sign.
uint16_t bfloat16BitsOf(float value);

/// The float of IEEE binary16 bits (exact: every half is a float).
float floatOfHalfBits(uint16_t bits);
/// The float of bfloat16 bits (exact).
float floatOfBfloat16Bits(uint16_t bits);
/// Converts `count` floats to half (or, with `bfloat16`, bfloat16) bits,
/// each first clamped to [-limit, limit] when `limit` is finite and the
/// value is (a model's weight kept in range).
void convertToHalfBits(const float *src, uint16_t *dst, size_t count,
                       bool bfloat16, float limit);

} // namespace kiln

#endif // KILN_CONSTANTDATA_FLOATBITS_H
