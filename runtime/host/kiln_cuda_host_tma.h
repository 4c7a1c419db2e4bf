//===- kiln_cuda_host_tma.h - Hopper's TMA and mbarriers on the host -*- C++
//-*-===//
//
// `cp.async.bulk.tensor.<r>d.shared::cluster.global.tile.mbarrier::
// complete_tx::bytes` (the Tensor Memory Accelerator's tiled loads) and the
// `mbarrier` operations that track them, emulated over the fibers of
// kiln_cuda_host.h. Generated code reaches them through kiln_tma_load_2d /
// _3d, kiln_mbarrier_init, kiln_fence_mbarrier_init, kiln_mbarrier_arrive,
// kiln_mbarrier_arrive_expect_tx, kiln_mbarrier_wait and
// kiln_prefetch_tensor_map, which the GPU's prelude defines as inline PTX
// (lib/Target/CUDA/TensorCores.cpp).
//
// The semantics, from the PTX ISA ("Tensor Copy" and "Tensor Access Modes",
// "mbarrier"):
// - A tiled load copies the box of the tensor map that starts at the given
//   coordinates (innermost first, signed) to shared memory, densely, the
//   box's innermost dim fastest. Elements outside the tensor (a negative
//   coordinate, or one at or past the dim) are written as zeros. The copy
//   counts the whole box's bytes against the mbarrier's transaction count,
//   outside elements included.
// - With a swizzle of S bytes (32, 64 or 128), the 16-byte chunk at shared
//   address bits 4 and up is XORed with the address's bits 7 and up, as
//   many bits as S / 16 has (CUTLASS's Swizzle<log2(S/16), 4, 3>): chunk c
//   of the box's row r lands at chunk c ^ (r % (S / 16)) when rows are S
//   bytes. The pattern repeats every 8 * S bytes, and the destination must
//   start at such a boundary (the address bits are the destination's).
//   Swizzled boxes here have innermost rows of exactly S bytes (the
//   emulation refuses shorter ones, which the GPU pads).
// - An mbarrier (8 bytes of shared memory) counts arrivals and transaction
//   bytes of its current phase. init(count) starts phase 0 expecting
//   `count` arrivals and no bytes; arrive.expect_tx(b) raises the expected
//   bytes by b, then arrives; a tensor copy's completion lowers them. The
//   phase completes when its arrivals are in and its bytes are 0: the next
//   phase starts with `count` arrivals again. try_wait.parity(p) is true
//   once the phase of parity p has completed (the current phase's parity is
//   not p).
//
// A copy lands at the latest moment the GPU allows: when some thread tests
// its mbarrier. Shared memory read before that wait holds what was there
// before, as a race on the GPU would read. A wait spins by yielding to the
// block's other threads (KILN_HOST_WAIT_YIELD); one that sees no mbarrier
// of its block change for kMostIdleRounds rounds can never complete, and
// stops the process with a message, as a hang would on the GPU.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CUDA_HOST_TMA_H
#define KILN_CUDA_HOST_TMA_H

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

/// A tensor map as kernels take it (`const __grid_constant__
/// kiln_tensor_map`): on the GPU the driver's 128 opaque bytes, here what
/// the runtime encoded (kiln_host_abi.h).
typedef kiln_host_tensor_map kiln_tensor_map;
static_assert(sizeof(kiln_tensor_map) == 128 && alignof(kiln_tensor_map) == 128,
              "a tensor map is CUtensorMap's 128 bytes, aligned to 128");

namespace kiln_host_tma {

/// Rounds a wait may see no mbarrier change before it gives up. A round is
/// every runnable thread running until it waits; a warp collective takes
/// two, so a producer may spend hundreds on them between arrivals.
constexpr unsigned kMostIdleRounds = 4096;

[[noreturn]] inline void fail(const char *what) {
  std::fprintf(stderr, "kiln host backend: tma: %s\n", what);
  std::abort();
}

/// An mbarrier's state in its 8 bytes: arrivals pending (bits 0-19), the
/// arrivals a phase expects (20-39), transaction bytes pending as a 21-bit
/// two's complement (40-60), the phase's parity (63).
struct Barrier {
  unsigned pending, expected, phase;
  long long tx;
};

inline Barrier load(const unsigned long long *bar) {
  unsigned long long v = *bar;
  long long tx = static_cast<long long>(v >> 40 & 0x1fffffu);
  if (tx & 0x100000)
    tx -= 0x200000;
  return {unsigned(v & 0xfffffu), unsigned(v >> 20 & 0xfffffu),
          unsigned(v >> 63), tx};
}

/// Every change to an mbarrier of the running block; a spin wait watches it.
inline unsigned long long &changes() {
  static thread_local unsigned long long count = 0;
  return count;
}

/// Stores `b`, first completing its phase if nothing is pending.
inline void store(unsigned long long *bar, Barrier b) {
  if (b.pending == 0 && b.tx == 0) {
    b.pending = b.expected;
    b.phase ^= 1u;
  }
  if (b.tx <= -0x100000 || b.tx >= 0x100000)
    fail("an mbarrier's transaction count left its range of +-(2^20 - 1)");
  *bar = (unsigned long long)b.pending | (unsigned long long)b.expected << 20 |
         (static_cast<unsigned long long>(b.tx) & 0x1fffffu) << 40 |
         (unsigned long long)b.phase << 63;
  ++changes();
}

/// One issued tensor copy: where it goes, its map and box's coordinates.
struct Copy {
  unsigned long long *bar;
  unsigned char *dst;
  kiln_tensor_map map;
  int coords[5];
};

/// The copies of the running block not yet landed, in issue order.
inline std::vector<Copy> &inFlight() {
  static thread_local std::vector<Copy> copies;
  static thread_local unsigned block[3] = {~0u, ~0u, ~0u};
  unsigned now[3] = {blockIdx.x, blockIdx.y, blockIdx.z};
  if (std::memcmp(block, now, sizeof now) != 0) {
    copies.clear();
    std::memcpy(block, now, sizeof now);
  }
  return copies;
}

/// `address` as the swizzle of `span` bytes places it (0: unchanged).
inline uintptr_t swizzled(uintptr_t address, unsigned span) {
  if (span == 0)
    return address;
  return address ^ ((address >> 7) & (span / 16 - 1)) << 4;
}

/// Bytes in the box of `map`.
inline unsigned long long boxBytes(const kiln_tensor_map &map) {
  unsigned long long bytes = map.elementBytes;
  for (unsigned d = 0; d < map.rank; ++d)
    bytes *= map.box[d];
  return bytes;
}

/// Writes the box of `c` to shared memory (zeros outside the tensor), then
/// lowers its mbarrier's transaction bytes.
inline void land(const Copy &c) {
  const kiln_tensor_map &m = c.map;
  unsigned index[5] = {0, 0, 0, 0, 0};
  unsigned long long elements = boxBytes(m) / m.elementBytes;
  for (unsigned long long e = 0; e < elements; ++e) {
    unsigned long long rest = e;
    bool inside = true;
    const unsigned char *from = m.global;
    for (unsigned d = 0; d < m.rank; ++d) {
      index[d] = unsigned(rest % m.box[d]);
      rest /= m.box[d];
      long long at = (long long)c.coords[d] + index[d];
      inside = inside && at >= 0 && (unsigned long long)at < m.dims[d];
      if (inside)
        from += (unsigned long long)at * m.strides[d];
    }
    uintptr_t to =
        swizzled(uintptr_t(c.dst) + e * m.elementBytes, m.swizzleBytes);
    if (inside)
      std::memcpy(reinterpret_cast<void *>(to), from, m.elementBytes);
    else
      std::memset(reinterpret_cast<void *>(to), 0, m.elementBytes);
  }
  Barrier b = load(c.bar);
  b.tx -= (long long)boxBytes(m);
  store(c.bar, b);
}

/// Lands every copy in flight that completes on `bar`, in issue order.
inline void landOn(unsigned long long *bar) {
  std::vector<Copy> &copies = inFlight();
  auto now = std::stable_partition(copies.begin(), copies.end(),
                                   [&](const Copy &c) { return c.bar != bar; });
  for (auto c = now; c != copies.end(); ++c)
    land(*c);
  copies.erase(now, copies.end());
}

/// Puts a tiled load of the box at `coords` in flight.
template <unsigned R>
inline void issue(void *dst, const kiln_tensor_map &map, const int (&coords)[R],
                  unsigned long long *bar) {
  if (map.rank != R)
    fail("a tensor copy's coordinates are not as many as its map's dims");
  uintptr_t align = map.swizzleBytes ? 8u * map.swizzleBytes : 128u;
  if (uintptr_t(dst) % align != 0)
    fail("a tensor copy's shared destination is not aligned to 128 bytes, "
         "or to its swizzle pattern's 8 rows");
  if (uintptr_t(bar) % 8 != 0)
    fail("an mbarrier is not 8-byte aligned");
  Copy c;
  c.bar = bar;
  c.dst = static_cast<unsigned char *>(dst);
  c.map = map;
  for (unsigned d = 0; d < 5; ++d)
    c.coords[d] = d < R ? coords[d] : 0;
  inFlight().push_back(c);
  ++changes();
}

} // namespace kiln_host_tma

/// mbarrier.init.shared::cta.b64: phase 0 expecting `count` arrivals (1 to
/// 2^20 - 1) and no transaction bytes. Copies in flight to it are dropped.
inline void kiln_mbarrier_init(unsigned long long *bar, unsigned count) {
  if (count == 0 || count > 0xfffffu)
    kiln_host_tma::fail("mbarrier.init's count must be 1 to 2^20 - 1");
  std::vector<kiln_host_tma::Copy> &copies = kiln_host_tma::inFlight();
  for (size_t i = copies.size(); i-- > 0;)
    if (copies[i].bar == bar)
      copies.erase(copies.begin() + long(i));
  *bar = (unsigned long long)count | (unsigned long long)count << 20;
  ++kiln_host_tma::changes();
}

/// fence.mbarrier_init.release.cluster: the initializations visible to the
/// async proxy. One memory here.
inline void kiln_fence_mbarrier_init() {}

/// prefetch.tensormap: a hint.
inline void kiln_prefetch_tensor_map(const kiln_tensor_map &) {}

/// mbarrier.arrive.shared::cta.b64.
inline void kiln_mbarrier_arrive(unsigned long long *bar) {
  kiln_host_tma::Barrier b = kiln_host_tma::load(bar);
  if (b.pending == 0)
    kiln_host_tma::fail("an arrival on an mbarrier whose phase expects none "
                        "more");
  --b.pending;
  kiln_host_tma::store(bar, b);
}

/// mbarrier.arrive.expect_tx.shared::cta.b64: `bytes` more transaction
/// bytes expected, then an arrival.
inline void kiln_mbarrier_arrive_expect_tx(unsigned long long *bar,
                                           unsigned bytes) {
  kiln_host_tma::Barrier b = kiln_host_tma::load(bar);
  if (b.pending == 0)
    kiln_host_tma::fail("an arrival on an mbarrier whose phase expects none "
                        "more");
  b.tx += bytes;
  --b.pending;
  kiln_host_tma::store(bar, b);
}

/// Spins on mbarrier.try_wait.parity.shared::cta.b64 until the phase of
/// parity `parity` has completed.
inline void kiln_mbarrier_wait(unsigned long long *bar, unsigned parity) {
  unsigned long long seen = kiln_host_tma::changes();
  unsigned idle = 0;
  while (true) {
    kiln_host_tma::landOn(bar);
    if (kiln_host_tma::load(bar).phase != (parity & 1u))
      return;
    kiln_host_wait(KILN_HOST_WAIT_YIELD);
    if (kiln_host_tma::changes() != seen) {
      seen = kiln_host_tma::changes();
      idle = 0;
    } else if (++idle > kiln_host_tma::kMostIdleRounds) {
      kiln_host_tma::fail("an mbarrier wait can never complete: no mbarrier "
                          "of the block changes while it spins");
    }
  }
}

/// The box at (c0, c1) of a 2-d map to `dst`, completing on `bar`.
inline void kiln_tma_load_2d(void *dst, const kiln_tensor_map &map, int c0,
                             int c1, unsigned long long *bar) {
  kiln_host_tma::issue<2>(dst, map, {c0, c1}, bar);
}

/// The box at (c0, c1, c2) of a 3-d map to `dst`, completing on `bar`.
inline void kiln_tma_load_3d(void *dst, const kiln_tensor_map &map, int c0,
                             int c1, int c2, unsigned long long *bar) {
  kiln_host_tma::issue<3>(dst, map, {c0, c1, c2}, bar);
}

#endif // KILN_CUDA_HOST_TMA_H
