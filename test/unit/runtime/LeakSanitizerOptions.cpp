//===- LeakSanitizerOptions.cpp - LeakSanitizer's settings for the tests --===//
//
// The host backend dlopens each compiled kernel library, whose emulated
// threads keep `thread_local` state (the running thread, __shared__
// arrays), and dlcloses it with its model. At exit LeakSanitizer walks the
// dynamic TLS that glibc recorded for every module, unloaded ones included,
// and for some layouts of this binary reads a freed block and crashes after
// every test passed ("Tracer caught signal 11"; a known LeakSanitizer
// limitation with dlclosed TLS). Thread-local storage is therefore not a
// root of the leak scan here: a block reachable only from it would be
// reported. glibc's own such blocks are suppressed: the thread's module
// vector (_dl_resize_dtv) and its last dlerror message (_dlerror_run, with
// the message it formats); the tests keep nothing else there.
//
//===----------------------------------------------------------------------===//

extern "C" const char *__lsan_default_options() { return "use_tls=0"; }

extern "C" const char *__lsan_default_suppressions() {
  return "leak:_dl_resize_dtv\n"
         "leak:_dlerror_run\n";
}
