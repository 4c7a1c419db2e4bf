//===- HostBuild.cpp - Files, folders and the compiler of host builds -----===//

#include "HostBuild.h"

#include "kiln/runtime/CacheDirectory.h"
#include "kiln_host_abi.h"

#include <dirent.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

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

} // namespace

bool kiln::rt::host::readFile(const std::string &path, std::string &out) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return static_cast<bool>(in) || in.eof();
}

bool kiln::rt::host::writeFile(const std::string &path,
                               const std::string &data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  out.close();
  return static_cast<bool>(out);
}

bool kiln::rt::host::writeFileAtomically(const std::string &path,
                                         const std::string &data) {
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

void kiln::rt::host::removeFolder(const std::string &dir) {
  if (DIR *d = opendir(dir.c_str())) {
    while (dirent *entry = readdir(d)) {
      std::string name = entry->d_name;
      if (name != "." && name != "..")
        std::remove((dir + "/" + name).c_str());
    }
    closedir(d);
  }
  rmdir(dir.c_str());
}

std::string kiln::rt::host::hex64(uint64_t v) {
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx",
                static_cast<unsigned long long>(v));
  return text;
}

uint64_t kiln::rt::host::hashMore(uint64_t hash, const std::string &data) {
  hash ^= data.size();
  hash *= 0x100000001b3ull;
  for (unsigned char c : data) {
    hash ^= c;
    hash *= 0x100000001b3ull;
  }
  return hash;
}

std::string kiln::rt::host::usableCacheDirectory() {
  std::string dir = cacheDirectory();
  if (dir.empty() || !makeDirectories(dir))
    return "";
  return dir;
}

Status BuildFolder::create(const std::string &base) {
  std::string parent = base.empty() ? getEnv("TMPDIR") : base;
  std::string pattern =
      (parent.empty() ? "/tmp" : parent) + "/kiln-host-XXXXXX";
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

std::string BuildFolder::file(const std::string &name) {
  files.push_back(name);
  return path + "/" + name;
}

BuildFolder::~BuildFolder() {
  if (path.empty())
    return;
  for (const std::string &name : files)
    std::remove((path + "/" + name).c_str());
  rmdir(path.c_str());
}

std::string kiln::rt::host::resolvedPath(const std::string &path) {
  char resolved[PATH_MAX];
  return realpath(path.c_str(), resolved) ? resolved : path;
}

Status kiln::rt::host::findCompiler(std::string &out) {
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

std::vector<std::string> kiln::rt::host::compileFlags(bool checking) {
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

Status kiln::rt::host::runCompiler(const std::vector<std::string> &argv,
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

uint64_t kiln::rt::host::toolchainKey(const std::string &compiler,
                                      const std::vector<std::string> &flags) {
  uint64_t key = hashMore(kHashSeed, "kiln-host-module/" +
                                         std::to_string(KILN_HOST_ABI_VERSION));
  // The compiler's identity as far as a stat tells it.
  struct stat st;
  std::string real = resolvedPath(compiler);
  key = hashMore(key, real);
  if (stat(real.c_str(), &st) == 0)
    key = hashMore(key, std::to_string(st.st_size) + "/" +
                            std::to_string(st.st_mtime));
  for (const std::string &f : flags)
    key = hashMore(key, f);
  for (const EmbeddedHeader &h : kHostHeaders)
    key = hashMore(hashMore(key, h.name), h.text);
  return key;
}

bool kiln::rt::host::writeHostHeaders(BuildFolder &folder) {
  for (const EmbeddedHeader &h : kHostHeaders)
    if (!writeFile(folder.file(h.name), h.text))
      return false;
  for (const char *name : kEmptyCudaHeaders)
    if (!writeFile(folder.file(name),
                   "// Declared by kiln_cuda_host.h for the host backend.\n"))
      return false;
  return true;
}
