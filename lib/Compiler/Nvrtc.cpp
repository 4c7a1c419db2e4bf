//===- Nvrtc.cpp - CUDA C++ to cubin and PTX, cached on disk --------------===//

#include "kiln/Compiler/Nvrtc.h"

#include "kiln/runtime/CacheDirectory.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <nvrtc.h>

#include <cstring>
#include <thread>

using namespace mlir;

namespace kiln {

namespace {

// Version 2 added the ptxas report.
constexpr char kCacheMagic[8] = {'K', 'I', 'L', 'N', 'C', 'U', 'B', '2'};

std::string nvrtcVersionString() {
  int major = 0, minor = 0;
  ::nvrtcVersion(&major, &minor);
  return std::to_string(major) + "." + std::to_string(minor);
}

/// The CUDA toolkit's include folder, for cuda_fp16.h and cuda_bf16.h:
/// $KILN_CUDA_INCLUDE, $CUDA_HOME/include, $CUDA_PATH/include, the toolkit
/// Kiln was built with, then /usr/local/cuda/include.
std::string cudaIncludeDir() {
  SmallVector<std::string> candidates;
  if (auto dir = llvm::sys::Process::GetEnv("KILN_CUDA_INCLUDE"))
    candidates.push_back(*dir);
  for (const char *var : {"CUDA_HOME", "CUDA_PATH"})
    if (auto dir = llvm::sys::Process::GetEnv(var))
      candidates.push_back(*dir + "/include");
  candidates.push_back(KILN_CUDA_INCLUDE_DIR);
  candidates.push_back("/usr/local/cuda/include");
  for (const std::string &dir : candidates)
    if (llvm::sys::fs::exists(dir + "/cuda_fp16.h"))
      return dir;
  return "";
}

/// Runs NVRTC once for `arch`; fills `ptx` with the PTX, and for a real
/// architecture (sm_*) `cubin` with the cubin made from it and `log` with
/// ptxas's resource report, or `log` with the error.
bool runNvrtc(StringRef source, StringRef arch, std::string &cubin,
              std::string &ptx, std::string &log) {
  nvrtcProgram program;
  std::string src = source.str();
  if (nvrtcCreateProgram(&program, src.c_str(), "kiln_kernels.cu", 0, nullptr,
                         nullptr) != NVRTC_SUCCESS) {
    log = "nvrtcCreateProgram failed";
    return false;
  }
  bool wantCubin = arch.starts_with("sm_");
  std::string archOpt = "--gpu-architecture=" + arch.str();
  std::string includeOpt = "-I" + cudaIncludeDir();
  SmallVector<const char *> options = {archOpt.c_str(), "--std=c++17",
                                       "-default-device"};
  if (wantCubin)
    options.push_back("--ptxas-options=-v");
  if (includeOpt.size() > 2)
    options.push_back(includeOpt.c_str());
  nvrtcResult result =
      nvrtcCompileProgram(program, options.size(), options.data());
  size_t logSize = 0;
  nvrtcGetProgramLogSize(program, &logSize);
  log.assign(logSize, '\0');
  if (logSize)
    nvrtcGetProgramLog(program, log.data());
  bool ok = result == NVRTC_SUCCESS;
  if (ok) {
    size_t size = 0;
    nvrtcGetPTXSize(program, &size);
    ptx.assign(size, '\0');
    ok = nvrtcGetPTX(program, ptx.data()) == NVRTC_SUCCESS;
    if (ok && wantCubin) {
      nvrtcGetCUBINSize(program, &size);
      cubin.assign(size, '\0');
      ok = nvrtcGetCUBIN(program, cubin.data()) == NVRTC_SUCCESS;
    }
  } else {
    log = std::string(nvrtcGetErrorString(result)) + "\n" + log;
  }
  nvrtcDestroyProgram(&program);
  return ok;
}

/// The portable PTX (for the virtual architecture of `arch`'s generation),
/// read off the PTX NVRTC made for the cubin's `arch` where that is the same
/// program, so that most sources take
/// one compile instead of two (NVRTC's front end is about 60% of a compile:
/// 3.4 s of BERT's 5.8 s). For an architecture without the arch-specific
/// suffix, its PTX is compute_XX's. For sm_90a, the preprocessor sees the
/// same text as for compute_90 except where code tests
/// __CUDA_ARCH_FEAT_SM90_ALL, and Kiln's sources test it only to issue
/// wgmma (TensorCores.cpp, which falls back to mma.sync elsewhere): a PTX
/// with none of the instructions only sm_90a has is compute_90's, but for
/// its .target line. Otherwise empty: compile the virtual architecture
/// separately.
std::string portablePtxOf(StringRef ptx, StringRef arch) {
  StringRef number = arch.drop_front(strlen("sm_"));
  if (llvm::all_of(number, llvm::isDigit))
    return ptx.str();
  if (arch != "sm_90a" || ptx.contains("wgmma.") || ptx.contains("setmaxnreg."))
    return "";
  StringRef target = "\n.target sm_90a\n";
  size_t at = ptx.find(target);
  if (at == StringRef::npos)
    return "";
  return (ptx.take_front(at) + "\n.target sm_90\n" +
          ptx.drop_front(at + target.size()))
      .str();
}

void appendU64(std::string &s, uint64_t v) {
  s.append(reinterpret_cast<const char *>(&v), sizeof(v));
}

/// Reads a cache entry; false when absent, short or failing its checksum.
bool readEntry(const std::string &path, CompiledCuda &out) {
  auto buffer = llvm::MemoryBuffer::getFile(path, false, false);
  if (!buffer)
    return false;
  StringRef data = (*buffer)->getBuffer();
  if (data.size() < 40 || std::memcmp(data.data(), kCacheMagic, 8) != 0)
    return false;
  uint64_t checksum, cubinSize, ptxSize, logSize;
  std::memcpy(&checksum, data.data() + 8, 8);
  std::memcpy(&cubinSize, data.data() + 16, 8);
  std::memcpy(&ptxSize, data.data() + 24, 8);
  std::memcpy(&logSize, data.data() + 32, 8);
  StringRef payload = data.drop_front(40);
  if (cubinSize > payload.size() || ptxSize > payload.size() - cubinSize ||
      logSize != payload.size() - cubinSize - ptxSize ||
      llvm::xxh3_64bits(payload) != checksum)
    return false;
  out.cubin = payload.take_front(cubinSize).str();
  out.ptx = payload.drop_front(cubinSize).take_front(ptxSize).str();
  out.resources = parsePtxasInfo(payload.drop_front(cubinSize + ptxSize));
  countInstructions(out.cubin, out.resources);
  return true;
}

/// Writes a cache entry (with ptxas's log, from which the resources are
/// read again) through a temporary file so a reader never sees a partial
/// entry; failures only cost a recompile later.
void writeEntry(const std::string &path, const CompiledCuda &compiled,
                StringRef ptxasLog) {
  std::string payload = compiled.cubin + compiled.ptx + ptxasLog.str();
  std::string data(kCacheMagic, 8);
  appendU64(data, llvm::xxh3_64bits(payload));
  appendU64(data, compiled.cubin.size());
  appendU64(data, compiled.ptx.size());
  appendU64(data, ptxasLog.size());
  data += payload;
  auto temp = llvm::sys::fs::TempFile::create(path + "-%%%%%%.tmp");
  if (!temp) {
    llvm::consumeError(temp.takeError());
    return;
  }
  {
    llvm::raw_fd_ostream os(temp->FD, /*shouldClose=*/false);
    os << data;
  }
  if (llvm::Error err = temp->keep(path))
    llvm::consumeError(std::move(err));
}

} // namespace

FailureOr<CompiledCuda> compileCuda(Location loc, StringRef source,
                                    StringRef arch) {
  if (!arch.starts_with("sm_"))
    return emitError(loc, "expected an arch like sm_90a, got '") << arch << "'";
  // sm_90a is arch-specific and cannot be JIT'ed forward; the PTX targets the
  // portable virtual architecture of the same generation.
  std::string virtualArch = "compute_" + arch.drop_front(3).rtrim('a').str();
  std::string key = source.str() + "\n" + arch.str() + "\n" + virtualArch +
                    "\n" + nvrtcVersionString();
  std::string dir = rt::cacheDirectory();
  std::string entry;
  if (!dir.empty()) {
    entry = dir + "/" + llvm::utohexstr(llvm::xxh3_64bits(key), true) + ".kcache";
    CompiledCuda cached;
    if (readEntry(entry, cached))
      return cached;
  }
  auto nvrtcFailed = [&](StringRef log) {
    auto diag = emitError(loc, "NVRTC failed to compile the generated CUDA:\n")
                << log;
    diag.attachNote() << "source:\n" << source;
    return failure();
  };
  CompiledCuda compiled;
  std::string archPtx, ptxasLog, ptxLog, noCubin;
  // A source that issues wgmma (kernels it is asked for) has a portable PTX
  // of its own: NVRTC makes it on a thread of its own meanwhile, as programs
  // compile independently.
  bool ptxOk = true;
  auto compilePortable = [&] {
    ptxOk = runNvrtc(source, virtualArch, noCubin, compiled.ptx, ptxLog);
  };
  bool separate = source.contains("wgmma.mma_async");
  std::thread ptxThread;
  if (separate)
    ptxThread = std::thread(compilePortable);
  bool cubinOk = runNvrtc(source, arch, compiled.cubin, archPtx, ptxasLog);
  if (separate)
    ptxThread.join();
  if (!cubinOk)
    return nvrtcFailed(ptxasLog);
  if (!separate) {
    compiled.ptx = portablePtxOf(archPtx, arch);
    if (compiled.ptx.empty())
      compilePortable();
  }
  if (!ptxOk)
    return nvrtcFailed(ptxLog);
  compiled.resources = parsePtxasInfo(ptxasLog);
  countInstructions(compiled.cubin, compiled.resources);
  if (!entry.empty() && !llvm::sys::fs::create_directories(dir))
    writeEntry(entry, compiled, ptxasLog);
  return compiled;
}

} // namespace kiln
