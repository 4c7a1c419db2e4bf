//===- CudaGraphs.cpp - CUDA graphs of one execution context --------------===//

#include "CudaGraphs.h"

#include <algorithm>

using namespace kiln::rt;

cu::GraphExec GraphCache::find(const Key &bucket, const Key &dims) {
  for (Entry &e : entries)
    if (e.bucket == bucket && e.dims == dims) {
      e.lastUse = ++clock;
      return e.exec;
    }
  return nullptr;
}

cu::GraphExec GraphCache::updateInPlace(const Key &bucket, const Key &dims,
                                        const UpdateFn &update) {
  Entry *best = nullptr;
  for (Entry &e : entries)
    if (e.bucket == bucket && !e.nodes.empty() &&
        (!best || e.lastUse > best->lastUse))
      best = &e;
  if (!best)
    return nullptr;
  if (!update(best->exec, best->nodes, best->dims).isOk()) {
    // Its nodes may now hold some of the new dims: it no longer holds the
    // old ones either.
    api->graphExecDestroy(best->exec);
    api->graphDestroy(best->graph);
    if (best != &entries.back())
      *best = std::move(entries.back());
    entries.pop_back();
    return nullptr;
  }
  ++updatesInPlace;
  best->dims = dims;
  best->lastUse = ++clock;
  return best->exec;
}

Status GraphCache::record(cu::Stream stream, const IssueFn &issue,
                          cu::Graph &graph, std::vector<cu::GraphNode> &nodes) {
  graph = nullptr;
  nodes.clear();
  if (cu::Result r =
          api->streamBeginCapture(stream, cu::kStreamCaptureModeThreadLocal);
      r != cu::kSuccess)
    return cu::cudaError(*api, r, "cuStreamBeginCapture");
  Status issued = issue(stream, nodes);
  // The capture ends whatever happened, so that the stream is usable again.
  cu::Result ended = api->streamEndCapture(stream, &graph);
  if (issued.isOk() && ended != cu::kSuccess)
    issued = cu::cudaError(*api, ended, "cuStreamEndCapture");
  if (!issued.isOk() && graph) {
    api->graphDestroy(graph);
    graph = nullptr;
  }
  return issued;
}

void GraphCache::dropNodes(Entry &e) {
  if (e.graph)
    api->graphDestroy(e.graph);
  e.graph = nullptr;
  e.nodes.clear();
}

Status GraphCache::store(const Key &bucket, const Key &dims, cu::Graph graph,
                         std::vector<cu::GraphNode> nodes, cu::GraphExec &out) {
  // A graph whose launch nodes are known is instantiated, and kept: an
  // instance's nodes are named by the graph it was instantiated from, so
  // one updated from another capture could not be updated in place. Once
  // the cache is full, only for a bucket it holds already: a bucket seen
  // once (a copy sized by the dims makes each dims one) updates the least
  // recently used graph, as without nodes, not an instantiation a run.
  bool keep = !nodes.empty() &&
              (entries.size() < kCapacity ||
               std::any_of(entries.begin(), entries.end(),
                           [&](const Entry &e) { return e.bucket == bucket; }));
  Entry *victim = nullptr;
  if (entries.size() >= kCapacity)
    victim = &*std::min_element(
        entries.begin(), entries.end(),
        [](const Entry &a, const Entry &b) { return a.lastUse < b.lastUse; });
  cu::GraphExecUpdateResultInfo info{};
  if (victim && !keep &&
      api->graphExecUpdate(victim->exec, graph, &info) == cu::kSuccess) {
    dropNodes(*victim);
    api->graphDestroy(graph);
  } else {
    // Refused (a different topology, say a cuBLASLt algorithm that now
    // splits K), or a graph to keep: a fresh instance.
    cu::GraphExec exec = nullptr;
    if (cu::Result r = api->graphInstantiate(&exec, graph, 0);
        r != cu::kSuccess) {
      api->graphDestroy(graph);
      return cu::cudaError(*api, r, "cuGraphInstantiate");
    }
    if (!victim) {
      entries.emplace_back();
      victim = &entries.back();
    } else {
      api->graphExecDestroy(victim->exec);
      dropNodes(*victim);
    }
    victim->exec = exec;
    if (keep) {
      victim->graph = graph;
      victim->nodes = std::move(nodes);
    } else {
      api->graphDestroy(graph);
    }
  }
  victim->bucket = bucket;
  victim->dims = dims;
  victim->lastUse = ++clock;
  out = victim->exec;
  return Status::ok();
}

Status GraphCache::capture(const Key &bucket, const Key &dims,
                           cu::Stream stream, const IssueFn &issue,
                           cu::GraphExec &out) {
  out = nullptr;
  cu::Graph graph = nullptr;
  std::vector<cu::GraphNode> nodes;
  if (Status s = record(stream, issue, graph, nodes); !s.isOk())
    return s;
  // store takes the graph: it keeps it with the nodes or destroys it.
  return store(bucket, dims, graph, std::move(nodes), out);
}

void GraphCache::clear() {
  for (Entry &e : entries) {
    api->graphExecDestroy(e.exec);
    dropNodes(e);
  }
  entries.clear();
}
