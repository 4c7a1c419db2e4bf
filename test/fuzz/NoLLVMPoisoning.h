//===- NoLLVMPoisoning.h - Keep LLVM's allocators unpoisoned ----*- C++ -*-===//
//
// Force-included into every C++ file of a KILN_FUZZ build. LLVM's
// BumpPtrAllocator and recyclers poison their free memory when the code that
// inlines them is built with AddressSanitizer, and unpoison it on each
// allocation. Debian's LLVM and MLIR libraries are not instrumented, so an
// allocator inlined both there and here would poison memory that the
// library's copy then hands out without unpoisoning: false reports. Turning
// the poisoning off here makes both copies agree; ASan still checks every
// access of ours against heap, stack and global bounds.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TEST_FUZZ_NOLLVMPOISONING_H
#define KILN_TEST_FUZZ_NOLLVMPOISONING_H

#if __has_include("llvm/Support/Compiler.h")
#include "llvm/Support/Compiler.h"
#undef __asan_poison_memory_region
#undef __asan_unpoison_memory_region
#define __asan_poison_memory_region(p, size) ((void)(p), (void)(size))
#define __asan_unpoison_memory_region(p, size) ((void)(p), (void)(size))
#endif

#endif // KILN_TEST_FUZZ_NOLLVMPOISONING_H
