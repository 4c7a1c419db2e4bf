//===- HostModule.cpp - Compile, cache and load host kernel modules -------===//
//
// A module is built in a private temporary folder from three kinds of file:
// the artifact's CUDA source as `kernels.cu`, byte for byte; the emulation
// headers embedded in this runtime (so an artifact needs no install tree);
// and `module.cpp`, which includes both and instantiates an entry point per
// kernel. The compiler is run directly (no shell), its output kept for the
// error message. A built module is copied into the cache under its key with
// a checksum file; a cached module whose checksum fails is rebuilt.
//
//===----------------------------------------------------------------------===//

#include "HostModule.h"

#include "kiln/runtime/CacheDirectory.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

extern char **environ;

using namespace kiln::rt;
using namespace kiln::rt::host;

namespace {

/// A header the kernel module is compiled against.
struct EmbeddedHeader {
  const char *name;
  const char *text;
};

// kHostHeaders: runtime/host/*.h, embedded at build time.
#include "HostHeaders.inc"

/// Headers a generated source may include for the GPU; here everything they
/// declare comes from the force-included emulation header.
constexpr const char *kEmptyCudaHeaders[] = {"cuda_fp16.h", "cuda_bf16.h",
                                             "cuda_runtime.h"};

/// Whether `name` is a C identifier, so that it can be pasted into code and
/// symbol names.
bool isIdentifier(const std::string &name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0])))
    return false;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_')
      return false;
  return true;
}

bool readFile(const std::string &path, std::string &out) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return static_cast<bool>(in) || in.eof();
}

bool writeFile(const std::string &path, const std::string &data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  out.close();
  return static_cast<bool>(out);
}

/// Writes `data` to `path` through a temporary file in the same folder, so
/// that no reader ever sees a partial file.
bool writeFileAtomically(const std::string &path, const std::string &data) {
  std::string temp = path + ".tmp." + std::to_string(getpid());
  if (!writeFile(temp, data)) {
    std::remove(temp.c_str());
    return false;
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    std::remove(temp.c_str());
    return false;
  }
  return true;
}

std::string hex64(uint64_t v) {
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx",
                static_cast<unsigned long long>(v));
  return text;
}

/// FNV-1a 64 continued over `data`.
uint64_t hashMore(uint64_t hash, const std::string &data) {
  hash ^= data.size();
  hash *= 0x100000001b3ull;
  for (unsigned char c : data) {
    hash ^= c;
    hash *= 0x100000001b3ull;
  }
  return hash;
}

std::string getEnv(const char *name) {
  const char *value = std::getenv(name);
  return value ? value : "";
}

/// Returns the full path of `program`, searching PATH when it has no slash.
std::string findProgram(const std::string &program) {
  if (program.empty())
    return "";
  if (program.find('/') != std::string::npos)
    return access(program.c_str(), X_OK) == 0 ? program : "";
  std::stringstream path(getEnv("PATH"));
  std::string dir;
  while (std::getline(path, dir, ':')) {
    std::string candidate = (dir.empty() ? "." : dir) + "/" + program;
    if (access(candidate.c_str(), X_OK) == 0)
      return candidate;
  }
  return "";
}

/// The C++ compiler: KILN_HOST_CXX, $CXX, then c++, g++, clang++.
Status findCompiler(std::string &out) {
  for (const char *var : {"KILN_HOST_CXX", "CXX"}) {
    std::string named = getEnv(var);
    if (named.empty())
      continue;
    out = findProgram(named);
    if (out.empty())
      return Status::error(StatusCode::Unsupported,
                           std::string(var) + " names '" + named +
                               "', which is not an executable compiler");
    return Status::ok();
  }
  for (const char *name : {"c++", "g++", "clang++"}) {
    out = findProgram(name);
    if (!out.empty())
      return Status::ok();
  }
  return Status::error(StatusCode::Unsupported,
                       "the host backend compiles the generated kernels with "
                       "a C++ compiler, and none was found (c++, g++ or "
                       "clang++ on PATH; or set KILN_HOST_CXX)");
}

/// Creates `path` and its missing parents; true if it exists afterwards.
bool makeDirectories(const std::string &path) {
  for (size_t slash = path.find('/', 1);; slash = path.find('/', slash + 1)) {
    std::string prefix = path.substr(0, slash);
    if (mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST)
      return false;
    if (slash == std::string::npos)
      break;
  }
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

/// The cache folder, created if needed; empty when there is none usable.
std::string usableCacheDirectory() {
  std::string dir = cacheDirectory();
  if (dir.empty() || !makeDirectories(dir))
    return "";
  return dir;
}

/// A private temporary folder, removed with what the build wrote into it.
class BuildFolder {
public:
  Status create() {
    std::string base = getEnv("TMPDIR");
    std::string pattern = (base.empty() ? "/tmp" : base) + "/kiln-host-XXXXXX";
    std::vector<char> name(pattern.begin(), pattern.end());
    name.push_back('\0');
    if (!mkdtemp(name.data()))
      return Status::error(StatusCode::Internal,
                           "cannot create a temporary folder for the host "
                           "backend: " +
                               std::string(std::strerror(errno)));
    path = name.data();
    return Status::ok();
  }
  /// Returns the path of `file` in the folder and remembers to remove it.
  std::string file(const std::string &name) {
    files.push_back(name);
    return path + "/" + name;
  }
  ~BuildFolder() {
    if (path.empty())
      return;
    for (const std::string &name : files)
      std::remove((path + "/" + name).c_str());
    rmdir(path.c_str());
  }
  std::string path;

private:
  std::vector<std::string> files;
};

/// Runs `argv` with stdout and stderr into `logPath`; returns its status.
Status runCompiler(const std::vector<std::string> &argv,
                   const std::string &logPath) {
  std::vector<char *> args;
  for (const std::string &a : argv)
    args.push_back(const_cast<char *>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, logPath.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = 0;
  int err = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0)
    return Status::error(StatusCode::Unsupported,
                         "cannot run the host compiler '" + argv[0] +
                             "': " + std::strerror(err));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      return Status::error(StatusCode::Internal, "waitpid failed");
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
    return Status::ok();
  std::string log;
  readFile(logPath, log);
  if (log.size() > 4000)
    log = log.substr(0, 4000) + "\n[...]";
  std::string command;
  for (const std::string &a : argv)
    command += (command.empty() ? "" : " ") + a;
  return Status::error(StatusCode::Internal,
                       "the host compiler failed on the generated kernels:\n" +
                           command + "\n" + log);
}

/// The compiler's flags; part of the cache key.
std::vector<std::string> compileFlags(bool checking) {
  // Generated CUDA moves elements through uint4/uint2 pointers, as CUDA
  // code does; the host compiler must not assume strict aliasing.
  std::vector<std::string> flags = {"-std=c++17", "-shared",
                                    "-fPIC",      "-fvisibility=hidden",
                                    "-w",         "-fno-strict-aliasing"};
  if (checking) {
    for (const char *f :
         {"-O1", "-g", "-fsanitize=address", "-fno-omit-frame-pointer"})
      flags.push_back(f);
  } else {
    flags.push_back("-O2");
  }
  return flags;
}

/// `module.cpp`: the emulation header, the source, one entry per kernel.
std::string moduleSource(const Artifact &artifact) {
  std::string text = "// Generated by the Kiln host backend.\n"
                     "#include \"kiln_cuda_host.h\"\n"
                     "#include \"kernels.cu\"\n"
                     "KILN_HOST_MODULE()\n";
  for (const std::string &name : artifact.kernelNames)
    text += "KILN_HOST_KERNEL(" + name + ")\n";
  // The run-time index checks' flag, which the kernels' prelude defines.
  if (!artifact.indexSites.empty())
    text += "extern \"C\" __attribute__((visibility(\"default\"))) unsigned "
            "*kiln_host_index_error(void) { return &kiln_index_error; }\n";
  return text;
}

template <class Fn>
bool resolve(void *handle, const std::string &name, Fn &fn) {
  fn = reinterpret_cast<Fn>(dlsym(handle, name.c_str()));
  return fn != nullptr;
}

} // namespace

bool kiln::rt::host::addressSanitizerLoaded() {
  return dlsym(RTLD_DEFAULT, "__asan_region_is_poisoned") != nullptr;
}

KernelModule::~KernelModule() {
  if (handle)
    dlclose(handle);
}

Status kiln::rt::host::loadKernelModule(const Artifact &artifact, bool checking,
                                        std::unique_ptr<KernelModule> &out) {
  for (const std::string &name : artifact.kernelNames)
    if (!isIdentifier(name))
      return Status::error(StatusCode::CorruptArtifact,
                           "kernel name '" + name + "' is not an identifier");
  if (!artifact.kernelNames.empty() && artifact.cudaSource.empty())
    return Status::error(StatusCode::Unsupported,
                         "the artifact carries no CUDA source, which the host "
                         "backend compiles");
  if (checking && !addressSanitizerLoaded())
    return Status::error(
        StatusCode::Unsupported,
        "the host backend's checking mode builds the kernels with "
        "AddressSanitizer, which must be loaded first in the process: run "
        "under `kiln-run --check`, or with LD_PRELOAD=$(c++ "
        "-print-file-name=libasan.so)");

  std::string compiler;
  if (Status s = findCompiler(compiler); !s.isOk())
    return s;
  std::vector<std::string> flags = compileFlags(checking);
  std::string module = moduleSource(artifact);

  // The key covers everything that shapes the binary, including the
  // compiler's identity as far as a stat tells it.
  uint64_t key = 0xcbf29ce484222325ull;
  key = hashMore(key,
                 "kiln-host-module/" + std::to_string(KILN_HOST_ABI_VERSION));
  struct stat st;
  char resolved[PATH_MAX];
  std::string real = realpath(compiler.c_str(), resolved) ? resolved : compiler;
  key = hashMore(key, real);
  if (stat(real.c_str(), &st) == 0)
    key = hashMore(key, std::to_string(st.st_size) + "/" +
                            std::to_string(st.st_mtime));
  for (const std::string &f : flags)
    key = hashMore(key, f);
  for (const EmbeddedHeader &h : kHostHeaders)
    key = hashMore(hashMore(key, h.name), h.text);
  key = hashMore(hashMore(key, artifact.cudaSource), module);

  std::string cache = usableCacheDirectory();
  std::string cached =
      cache.empty() ? "" : cache + "/host-" + hex64(key) + ".so";
  std::string image;
  bool haveCached = false;
  if (!cached.empty()) {
    std::string sum;
    haveCached = readFile(cached, image) && readFile(cached + ".sum", sum) &&
                 sum == hex64(artifactChecksum(image.data(), image.size()));
  }

  BuildFolder folder;
  if (Status s = folder.create(); !s.isOk())
    return s;
  std::string libraryPath = cached;
  if (!haveCached) {
    for (const EmbeddedHeader &h : kHostHeaders)
      if (!writeFile(folder.file(h.name), h.text))
        return Status::error(StatusCode::Internal,
                             "cannot write in " + folder.path);
    for (const char *name : kEmptyCudaHeaders)
      if (!writeFile(folder.file(name),
                     "// Declared by kiln_cuda_host.h for the host backend.\n"))
        return Status::error(StatusCode::Internal,
                             "cannot write in " + folder.path);
    if (!writeFile(folder.file("kernels.cu"), artifact.cudaSource) ||
        !writeFile(folder.file("module.cpp"), module))
      return Status::error(StatusCode::Internal,
                           "cannot write in " + folder.path);
    std::string built = folder.file("module.so");
    std::vector<std::string> argv = {compiler};
    argv.insert(argv.end(), flags.begin(), flags.end());
    for (const std::string &a :
         {std::string("-I"), folder.path, std::string("-o"), built,
          folder.path + "/module.cpp"})
      argv.push_back(a);
    if (Status s = runCompiler(argv, folder.file("compile.log")); !s.isOk())
      return s;
    libraryPath = built;
    if (!cached.empty() && readFile(built, image) &&
        writeFileAtomically(cached, image) &&
        writeFileAtomically(cached + ".sum", hex64(artifactChecksum(
                                                 image.data(), image.size()))))
      libraryPath = cached;
  }

  std::unique_ptr<KernelModule> result(new KernelModule());
  result->handle = dlopen(libraryPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!result->handle) {
    const char *why = dlerror();
    return Status::error(StatusCode::Internal,
                         "cannot load the host kernel module " + libraryPath +
                             ": " + (why ? why : "dlopen failed"));
  }
  kiln_host_abi_version_fn version = nullptr;
  if (!resolve(result->handle, "kiln_host_abi_version", version) ||
      version() != KILN_HOST_ABI_VERSION)
    return Status::error(StatusCode::VersionMismatch,
                         "the host kernel module " + libraryPath +
                             " was built for another host ABI");
  for (const std::string &name : artifact.kernelNames) {
    kiln_host_arity_fn arity = nullptr;
    kiln_host_entry_fn entry = nullptr;
    if (!resolve(result->handle, "kiln_host_arity_" + name, arity) ||
        !resolve(result->handle, "kiln_host_entry_" + name, entry))
      return Status::error(StatusCode::Internal,
                           "the host kernel module lacks kernel " + name);
    result->arities.push_back(arity());
    result->entries.push_back(entry);
  }
  if (!artifact.indexSites.empty()) {
    unsigned *(*indexError)(void) = nullptr;
    if (!resolve(result->handle, "kiln_host_index_error", indexError))
      return Status::error(StatusCode::CorruptArtifact,
                           "the artifact checks indices, but its kernels "
                           "define no kiln_index_error flag");
    result->indexErrorFlag = indexError;
  }
  out = std::move(result);
  return Status::ok();
}
