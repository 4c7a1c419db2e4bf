//===- CudaGraphs.cpp - CUDA graphs of one execution context --------------===//

#include "CudaGraphs.h"

#include <algorithm>

using namespace kiln::rt;

cu::GraphExec GraphCache::find(const Key &key) {
  for (Entry &e : entries)
    if (e.key == key) {
      e.lastUse = ++clock;
      return e.exec;
    }
  return nullptr;
}

Status GraphCache::record(cu::Stream stream, const IssueFn &issue,
                          cu::Graph &graph) {
  graph = nullptr;
  if (cu::Result r =
          api->streamBeginCapture(stream, cu::kStreamCaptureModeThreadLocal);
      r != cu::kSuccess)
    return cu::cudaError(*api, r, "cuStreamBeginCapture");
  Status issued = issue(stream);
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

Status GraphCache::store(const Key &key, cu::Graph graph, cu::GraphExec &out) {
  if (entries.size() < kCapacity) {
    cu::GraphExec exec = nullptr;
    if (cu::Result r = api->graphInstantiate(&exec, graph, 0);
        r != cu::kSuccess)
      return cu::cudaError(*api, r, "cuGraphInstantiate");
    entries.push_back(Entry{key, exec, ++clock});
    out = exec;
    return Status::ok();
  }
  Entry &victim = *std::min_element(
      entries.begin(), entries.end(),
      [](const Entry &a, const Entry &b) { return a.lastUse < b.lastUse; });
  cu::GraphExecUpdateResultInfo info{};
  if (api->graphExecUpdate(victim.exec, graph, &info) != cu::kSuccess) {
    // Refused (a different topology, say a cuBLASLt algorithm that now
    // splits K): a fresh instance replaces the old one.
    cu::GraphExec exec = nullptr;
    if (cu::Result r = api->graphInstantiate(&exec, graph, 0);
        r != cu::kSuccess)
      return cu::cudaError(*api, r, "cuGraphInstantiate");
    api->graphExecDestroy(victim.exec);
    victim.exec = exec;
  }
  victim.key = key;
  victim.lastUse = ++clock;
  out = victim.exec;
  return Status::ok();
}

Status GraphCache::capture(const Key &key, cu::Stream stream,
                           const IssueFn &issue, cu::GraphExec &out) {
  out = nullptr;
  cu::Graph graph = nullptr;
  if (Status s = record(stream, issue, graph); !s.isOk())
    return s;
  Status s = store(key, graph, out);
  // An executable graph does not need the graph it was made from.
  api->graphDestroy(graph);
  return s;
}

void GraphCache::clear() {
  for (Entry &e : entries)
    api->graphExecDestroy(e.exec);
  entries.clear();
}
