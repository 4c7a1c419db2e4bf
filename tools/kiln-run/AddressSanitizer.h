//===- AddressSanitizer.h - kiln-run --check under ASan ---------*- C++ -*-===//

#ifndef KILN_TOOLS_KILN_RUN_ADDRESSSANITIZER_H
#define KILN_TOOLS_KILN_RUN_ADDRESSSANITIZER_H

namespace kilnrun {

/// The checking mode needs AddressSanitizer's runtime first in the process;
/// kiln-run is not built with it, so it runs itself again with the runtime
/// preloaded: the one of the compiler that builds the kernels, so the two
/// match. Returns only on failure (its exit status).
int reexecWithAddressSanitizer(char **argv);

} // namespace kilnrun

#endif // KILN_TOOLS_KILN_RUN_ADDRESSSANITIZER_H
