//===- CudaGraphs.h - CUDA graphs of one execution context ------*- C++ -*-===//
//
// A CUDA execution context replays its plan as a CUDA graph: one launch
// instead of one per step. Runs fall into shape buckets: the same I/O
// addresses, kernels, matmul shapes and copies, at any dims (a decoding
// loop's tokens, whose dims change every step while their matmuls keep
// M = batch). The first run of a shape issues the steps one by one (it
// loads modules and times matmuls); every later run replays a graph.
//
// A graph bakes in the I/O addresses and the dims' grids and kernel
// arguments. Within a bucket only the kernel launches differ from one set
// of dims to the next (the cuBLASLt calls and copies are the bucket's), so
// a capture records the node of each launch step, and a run at new dims in
// a bucket that has a graph gives those nodes its grids and arguments in
// place (cuGraphExecKernelNodeSetParams, for the graph's later launches
// only; only the launches that depend on a dim that changed,
// LaunchStep::dimsRead) and launches it: a decoding step is one graph launch,
// with no capture, no instantiation and no cuBLASLt call on the host. A run in
// a new bucket is captured; past kCapacity graphs, the least recently used one
// takes its parameters through cuGraphExecUpdate, which is far cheaper than
// instantiating and succeeds where the topology is the same; only when the
// driver refuses the update is it re-instantiated.
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
  /// A graph's bucket (the I/O addresses, inputs then outputs, and what
  /// its steps issue), or its dims.
  using Key = std::vector<cu::DevicePtr>;
  /// Issues the plan's steps on the given (capturing) stream, appending
  /// to the nodes the node of each launch step (null for other steps), or
  /// leaving them empty when it cannot tell them.
  using IssueFn =
      std::function<Status(cu::Stream, std::vector<cu::GraphNode> &)>;
  /// Gives the launch nodes of a graph (one per step, null for the steps
  /// that are not launches), which holds the dims given, the grids and
  /// arguments of the run at hand.
  using UpdateFn = std::function<Status(
      cu::GraphExec, const std::vector<cu::GraphNode> &, const Key &)>;

  /// Graphs kept per context: enough for double or triple buffering of the
  /// I/O without an update per run.
  static constexpr size_t kCapacity = 4;

  /// Destroys the graphs; the driver must still be open and the context
  /// current.
  ~GraphCache() { clear(); }

  /// Binds the cache to `api` (once the driver is open).
  void bind(const cu::DriverApi &driver) { api = &driver; }

  /// Returns the graph of `bucket` at `dims`, or null.
  cu::GraphExec find(const Key &bucket, const Key &dims);

  /// The graph of `bucket` at other dims whose launch nodes are known,
  /// made the graph of `dims` by `update`; null when the bucket has none,
  /// or when the update fails (the graph is then dropped).
  cu::GraphExec updateInPlace(const Key &bucket, const Key &dims,
                              const UpdateFn &update);

  /// Captures `issue` on `stream` (in thread-local mode, so that other
  /// threads' contexts are not disturbed) and stores it for `bucket` at
  /// `dims`: as a new graph while there is room, else into the least
  /// recently used one. On failure nothing is stored and no capture stays
  /// open.
  Status capture(const Key &bucket, const Key &dims, cu::Stream stream,
                 const IssueFn &issue, cu::GraphExec &out);

  /// Updates in place made so far (for tests and profiles).
  uint64_t inPlaceUpdates() const { return updatesInPlace; }

  /// Destroys every graph.
  void clear();

private:
  /// One executable graph and what it was captured with.
  struct Entry {
    Key bucket, dims;
    cu::GraphExec exec = nullptr;
    uint64_t lastUse = 0;
    /// The graph `exec` was instantiated from, kept while its launch
    /// nodes are (the driver names an instance's nodes by that graph's),
    /// and those nodes; null and empty when they are not known.
    cu::Graph graph = nullptr;
    std::vector<cu::GraphNode> nodes;
  };

  Status record(cu::Stream stream, const IssueFn &issue, cu::Graph &graph,
                std::vector<cu::GraphNode> &nodes);
  Status store(const Key &bucket, const Key &dims, cu::Graph graph,
               std::vector<cu::GraphNode> nodes, cu::GraphExec &out);
  /// Destroys `e`'s graph and forgets its nodes.
  void dropNodes(Entry &e);

  const cu::DriverApi *api = nullptr;
  std::vector<Entry> entries;
  /// Advances on every use, for the least-recently-used choice.
  uint64_t clock = 0;
  uint64_t updatesInPlace = 0;
};

} // namespace rt
} // namespace kiln

#endif // KILN_RUNTIME_LIB_CUDAGRAPHS_H
