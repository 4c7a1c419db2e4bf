//===- CudaGraphs.h - CUDA graphs of one execution context ------*- C++ -*-===//
//
// A CUDA execution context replays its plan as a CUDA graph: one launch
// instead of one per step. Runs fall into shape buckets: the same I/O
// addresses, kernels and matmul shapes, at any dims (a decoding loop's
// tokens, whose dims change every step while their matmuls keep M = batch).
// The first run of a bucket issues the steps one by one (it loads modules
// and times matmuls); every later run in it, at dims seen or not, replays a
// graph. A graph bakes in the I/O addresses and the dims' grids and kernel
// arguments, so a context keeps a few graphs, keyed by bucket and dims. A
// run at new dims or addresses is captured again and, past that number,
// the least recently used executable graph takes its parameters through
// cuGraphExecUpdate, which is far cheaper than instantiating and succeeds
// within a bucket (same nodes, new grids and arguments); only when the
// driver refuses the update is it re-instantiated. Kernel parameters alone
// could be patched in place, but the cuBLASLt calls are opaque nodes whose
// arguments only a new capture knows.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_LIB_CUDAGRAPHS_H
#define KILN_RUNTIME_LIB_CUDAGRAPHS_H

#include "CudaDriver.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace kiln {
namespace rt {

/// The executable graphs of one context, keyed by their I/O addresses.
class GraphCache {
public:
  /// What a graph was captured with: its bucket (the I/O addresses, inputs
  /// then outputs, and what its steps issue), then its dims.
  using Key = std::vector<cu::DevicePtr>;
  /// Issues the plan's steps on the given (capturing) stream.
  using IssueFn = std::function<Status(cu::Stream)>;

  /// Graphs kept per context: enough for double or triple buffering of the
  /// I/O without an update per run.
  static constexpr size_t kCapacity = 4;

  /// Destroys the graphs; the driver must still be open and the context
  /// current.
  ~GraphCache() { clear(); }

  /// Binds the cache to `api` (once the driver is open).
  void bind(const cu::DriverApi &driver) { api = &driver; }

  /// Returns the graph captured for `key`, or null.
  cu::GraphExec find(const Key &key);

  /// Captures `issue` on `stream` (in thread-local mode, so that other
  /// threads' contexts are not disturbed) and stores it for `key`: as a new
  /// graph while there is room, else into the least recently used one. On
  /// failure nothing is stored and no capture stays open.
  Status capture(const Key &key, cu::Stream stream, const IssueFn &issue,
                 cu::GraphExec &out);

  /// Destroys every graph.
  void clear();

private:
  /// One executable graph and what it was captured with.
  struct Entry {
    Key key;
    cu::GraphExec exec = nullptr;
    uint64_t lastUse = 0;
  };

  Status record(cu::Stream stream, const IssueFn &issue, cu::Graph &graph);
  Status store(const Key &key, cu::Graph graph, cu::GraphExec &out);

  const cu::DriverApi *api = nullptr;
  std::vector<Entry> entries;
  /// Advances on every use, for the least-recently-used choice.
  uint64_t clock = 0;
};

} // namespace rt
} // namespace kiln

#endif // KILN_RUNTIME_LIB_CUDAGRAPHS_H
