//===- CudaScopes.h - Scoped CUDA contexts and events -----------*- C++ -*-===//
//
// Scoped driver state of the CUDA backend: a context made current for one
// scope, and a pair of timing events destroyed with their scope.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_LIB_CUDASCOPES_H
#define KILN_RUNTIME_LIB_CUDASCOPES_H

#include "CudaDriver.h"

namespace kiln {
namespace rt {
namespace detail {

/// Makes a context current on this thread for one scope, restoring the
/// caller's context afterwards so that an application's own CUDA work is not
/// disturbed.
class ContextScope {
public:
  /// Pushes `ctx`; `ok()` says whether it worked.
  ContextScope(const cu::DriverApi &api, cu::Context ctx) : api(api) {
    result = api.ctxPushCurrent(ctx);
  }
  /// Pops the context pushed by the constructor.
  ~ContextScope() {
    if (result == cu::kSuccess) {
      cu::Context popped;
      api.ctxPopCurrent(&popped);
    }
  }
  /// The result of the push.
  cu::Result result;

private:
  /// The driver the context was pushed with.
  const cu::DriverApi &api;
};

/// Two timing events, destroyed with the scope.
class TimingEvents {
public:
  /// Binds to `api`; creates nothing yet (see `create`).
  explicit TimingEvents(const cu::DriverApi &api) : api(api) {}
  /// Destroys the events that were created.
  ~TimingEvents() {
    for (cu::Event e : {start, end})
      if (e)
        api.eventDestroy(e);
  }
  /// Creates both (with timing, unlike the ordering events).
  cu::Result create() {
    cu::Result r = api.eventCreate(&start, 0);
    return r == cu::kSuccess ? api.eventCreate(&end, 0) : r;
  }
  /// The events recorded before and after what is timed.
  cu::Event start = nullptr, end = nullptr;

private:
  /// The driver the events belong to.
  const cu::DriverApi &api;
};

} // namespace detail
} // namespace rt
} // namespace kiln

#endif // KILN_RUNTIME_LIB_CUDASCOPES_H
