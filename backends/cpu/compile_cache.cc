#include "backends/cpu/compile_cache.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "support/atomic_file.h"
#include "support/status.h"

extern char** environ;

namespace kiln::backends::cpu {
namespace {

constexpr char kSidecarMagic[] = "kiln-cpu-cache-v1";

// Keys and sidecar checksums; the seed keeps them apart from other caches'.
constexpr uint64_t kHashSeed = 0x63707531;

std::string Hash128(const void* data, size_t n) { return Hash128Hex(data, n, kHashSeed); }

// Cache files are private to the user and on disk before a rename
// publishes them.
constexpr FileWriteOptions kEntryFile{0600, true};

absl::Status Errno(const std::string& what) {
  return absl::InternalError(absl::StrCat(what, ": ", std::strerror(errno)));
}

// The cache holds libraries that get dlopen'ed, so nobody else may be able
// to put files in it: the directory must be ours, not a symlink, and not
// writable by group or others; each ancestor must be ours or root's and, if
// writable by others, sticky (/tmp). Otherwise another local user could
// plant a library whose checksum sidecar matches.
absl::Status CheckPrivateDirectory(const std::string& path) {
  std::error_code ec;
  const std::string absolute = std::filesystem::absolute(path, ec).lexically_normal().string();
  if (ec) return absl::InternalError(absl::StrCat("cache directory ", path, ": ", ec.message()));
  const uid_t uid = ::getuid();
  struct stat st;
  if (::lstat(absolute.c_str(), &st) != 0) return Errno(absl::StrCat("cannot stat ", absolute));
  if (!S_ISDIR(st.st_mode) || st.st_uid != uid || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cache directory ", absolute, " must be a directory (not a symlink) owned by uid ", uid,
        " and not writable by group or others; refusing to load code from it (set KILN_CACHE_DIR)"));
  }
  std::filesystem::path ancestor = std::filesystem::path(absolute).parent_path();
  while (true) {
    if (::stat(ancestor.c_str(), &st) != 0) return Errno(absl::StrCat("cannot stat ", ancestor.string()));
    const bool owner_ok = st.st_uid == uid || st.st_uid == 0;
    const bool writable_by_others = (st.st_mode & (S_IWGRP | S_IWOTH)) != 0;
    if (!owner_ok || (writable_by_others && (st.st_mode & S_ISVTX) == 0)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "cache directory ", absolute, ": its ancestor ", ancestor.string(),
          " can be changed by another user; refusing to load code from it (set KILN_CACHE_DIR)"));
    }
    if (ancestor == ancestor.root_path() || !ancestor.has_relative_path()) break;
    ancestor = ancestor.parent_path();
  }
  return absl::OkStatus();
}

// The compiler's identity, once per process and compiler.
absl::StatusOr<std::string> CompilerIdentity(const std::string& compiler) {
  static std::mutex mu;
  static std::map<std::string, std::string>* cache = new std::map<std::string, std::string>();
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache->find(compiler);
  if (it != cache->end()) return it->second;
  std::string output;
  ASSIGN_OR_RETURN(int rc, RunProcess({compiler, "--version"}, &output));
  if (rc != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("C++ compiler '", compiler, "' is not usable (--version exited ", rc, ")"));
  }
  std::string first_line(output.substr(0, output.find('\n')));
  return cache->emplace(compiler, first_line).first->second;
}

// The host CPU's model and feature flags (what -march=native depends on).
const std::string& CpuIdentity() {
  static const std::string* id = [] {
    std::string text;
    std::ifstream in("/proc/cpuinfo");
    std::string line, model, flags;
    while (std::getline(in, line)) {
      if (model.empty() && line.rfind("model name", 0) == 0) model = line;
      if (flags.empty() && line.rfind("flags", 0) == 0) flags = line;
      if (!model.empty() && !flags.empty()) break;
    }
    return new std::string(absl::StrCat(model, "|", flags));
  }();
  return *id;
}

}  // namespace

namespace {

// A started child process whose stdout and stderr go to an unlinked file.
struct Child {
  pid_t pid = 0;
  int log_fd = -1;
};

absl::StatusOr<Child> StartProcess(const std::vector<std::string>& argv) {
  if (argv.empty()) return absl::InvalidArgumentError("RunProcess: empty argv");
  char log_template[] = "/tmp/kiln-cc-log-XXXXXX";
  // Close-on-exec: only the child being spawned may inherit it (as its
  // stdout/stderr through dup2), not other compilers started meanwhile.
  const int log_fd = ::mkostemp(log_template, O_CLOEXEC);
  if (log_fd < 0) return Errno("cannot create a log file");
  ::unlink(log_template);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, log_fd, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, log_fd, STDERR_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  Child child;
  child.log_fd = log_fd;
  const int err = ::posix_spawnp(&child.pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0) {
    ::close(log_fd);
    return absl::FailedPreconditionError(
        absl::StrCat("cannot run '", argv[0], "': ", std::strerror(err)));
  }
  return child;
}

// Waits for `child`, reads its output (at most ~1 MB), closes the log.
absl::StatusOr<int> FinishProcess(const Child& child, std::string* output) {
  int status = 0;
  while (::waitpid(child.pid, &status, 0) < 0) {
    if (errno != EINTR) {
      ::close(child.log_fd);
      return Errno("waitpid");
    }
  }
  if (output != nullptr) {
    output->clear();
    ::lseek(child.log_fd, 0, SEEK_SET);
    char buf[4096];
    ssize_t n;
    while ((n = ::read(child.log_fd, buf, sizeof(buf))) > 0 && output->size() < (1 << 20)) {
      output->append(buf, static_cast<size_t>(n));
    }
  }
  ::close(child.log_fd);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

}  // namespace

absl::StatusOr<int> RunProcess(const std::vector<std::string>& argv, std::string* output) {
  ASSIGN_OR_RETURN(Child child, StartProcess(argv));
  return FinishProcess(child, output);
}

absl::StatusOr<std::vector<int>> RunProcesses(const std::vector<std::vector<std::string>>& argvs,
                                              std::vector<std::string>* outputs) {
  std::vector<absl::StatusOr<Child>> children;
  for (const std::vector<std::string>& argv : argvs) children.push_back(StartProcess(argv));
  if (outputs != nullptr) outputs->assign(argvs.size(), std::string());
  std::vector<int> codes(argvs.size(), -1);
  absl::Status first_error = absl::OkStatus();
  for (size_t i = 0; i < children.size(); ++i) {
    absl::StatusOr<int> code = children[i].ok()
                                   ? FinishProcess(*children[i], outputs != nullptr ? &(*outputs)[i] : nullptr)
                                   : absl::StatusOr<int>(children[i].status());
    if (code.ok()) {
      codes[i] = *code;
    } else if (first_error.ok()) {
      first_error = code.status();
    }
  }
  RETURN_IF_ERROR(first_error);
  return codes;
}

std::string CompileCache::DefaultDirectory() {
  auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v != nullptr ? std::string(v) : std::string();
  };
  if (std::string d = env("KILN_CACHE_DIR"); !d.empty()) return d;
  if (std::string d = env("XDG_CACHE_HOME"); !d.empty()) return absl::StrCat(d, "/kiln/cpu");
  if (std::string d = env("HOME"); !d.empty()) return absl::StrCat(d, "/.cache/kiln/cpu");
  return absl::StrCat("/tmp/kiln-cache-", ::getuid(), "/cpu");
}

CompileCache::CompileCache(std::string directory, CompilerConfig config)
    : directory_(std::move(directory)), config_(std::move(config)) {
  while (directory_.size() > 1 && directory_.back() == '/') directory_.pop_back();
}

std::string CompileCache::PathFor(const std::string& key, const char* suffix) const {
  return absl::StrCat(directory_, "/", key, suffix);
}

absl::StatusOr<std::string> CompileCache::Key(const std::string& source) const {
  ASSIGN_OR_RETURN(std::string compiler, CompilerIdentity(config_.compiler));
  std::string material = absl::StrCat(
      "source:", source.size(), ":", Hash128(source.data(), source.size()), "\ncompiler:",
      config_.compiler, "|", compiler, "\nflags:", absl::StrJoin(config_.flags, " "), "|",
      absl::StrJoin(config_.libs, " "), "\ncpu:", CpuIdentity());
  return Hash128(material.data(), material.size());
}

absl::StatusOr<std::string> CompileCache::Key(const std::vector<std::string>& units) const {
  if (units.size() == 1) return Key(units[0]);
  if (units.empty()) return absl::InvalidArgumentError("compile cache: a program without translation units");
  ASSIGN_OR_RETURN(std::string compiler, CompilerIdentity(config_.compiler));
  std::string material = absl::StrCat("units:", units.size(), "\n");
  for (const std::string& unit : units) {
    absl::StrAppend(&material, "source:", unit.size(), ":", Hash128(unit.data(), unit.size()), "\n");
  }
  absl::StrAppend(&material, "compiler:", config_.compiler, "|", compiler,
                  "\nflags:", absl::StrJoin(config_.flags, " "), "|", absl::StrJoin(config_.libs, " "), "|",
                  absl::StrJoin(config_.glue_flags, " "), "\ncpu:", CpuIdentity());
  return Hash128(material.data(), material.size());
}

absl::Status CompileCache::Validate(const std::string& key) const {
  ASSIGN_OR_RETURN(std::string sidecar, ReadFile(PathFor(key, ".sum")));
  ASSIGN_OR_RETURN(std::string library, ReadFile(PathFor(key, ".so")));
  const absl::Status valid = CheckChecksumSidecar(sidecar, kSidecarMagic, library, kHashSeed, "\x7f" "ELF");
  if (!valid.ok()) return absl::DataLossError(absl::StrCat("cache entry ", key, ": ", valid.message()));
  return absl::OkStatus();
}

absl::StatusOr<CacheEntry> CompileCache::GetOrCompile(const std::string& source) {
  return GetOrCompile(std::vector<std::string>{source});
}

absl::StatusOr<CacheEntry> CompileCache::GetOrCompile(const std::vector<std::string>& units) {
  const auto start = std::chrono::steady_clock::now();
  auto finish = [&](CacheEntry e) {
    e.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return e;
  };
  ASSIGN_OR_RETURN(std::string key, Key(units));
  RETURN_IF_ERROR(MakeDirectories(directory_));
  RETURN_IF_ERROR(CheckPrivateDirectory(directory_));
  CacheEntry entry;
  entry.key = key;
  entry.library_path = PathFor(key, ".so");
  if (Validate(key).ok()) {
    entry.hit = true;
    return finish(entry);
  }
  ExclusiveFileLock lock(PathFor(key, ".lock"));
  // Another thread or process may have built it while we waited.
  if (Validate(key).ok()) {
    entry.hit = true;
    return finish(entry);
  }
  ASSIGN_OR_RETURN(CacheEntry built, CompileLocked(key, units));
  return finish(built);
}

absl::StatusOr<CacheEntry> CompileCache::CompileLocked(const std::string& key,
                                                       const std::vector<std::string>& units) {
  const std::string tmp = PathFor(key, UniqueTempSuffix().c_str());
  const std::string tmp_so = tmp + ".so";
  const bool multi = units.size() > 1;
  std::vector<std::string> tmp_cc, tmp_o;
  for (size_t i = 0; i < units.size(); ++i) {
    tmp_cc.push_back(multi ? absl::StrCat(tmp, ".", i, ".cc") : tmp + ".cc");
    tmp_o.push_back(absl::StrCat(tmp, ".", i, ".o"));
  }
  auto cleanup = [&] {
    for (const std::string& f : tmp_cc) ::unlink(f.c_str());
    for (const std::string& f : tmp_o) ::unlink(f.c_str());
    ::unlink(tmp_so.c_str());
  };
  absl::Status s = absl::OkStatus();
  for (size_t i = 0; s.ok() && i < units.size(); ++i) s = WriteFile(tmp_cc[i], units[i], kEntryFile);
  if (!s.ok()) {
    cleanup();
    return s;
  }
  auto compiler_error = [&](int rc, std::string log) {
    cleanup();
    if (log.size() > 4000) log = log.substr(0, 4000) + "\n...";
    return absl::InternalError(absl::StrCat("C++ compiler exited with status ", rc, ":\n", log));
  };
  std::vector<std::string> link = {config_.compiler};
  link.insert(link.end(), config_.flags.begin(), config_.flags.end());
  link.insert(link.end(), {"-o", tmp_so});
  if (multi) {
    // Every unit at once (the machine's cores work in parallel), then one
    // link of the objects.
    std::vector<std::vector<std::string>> compiles;
    for (size_t i = 0; i < units.size(); ++i) {
      std::vector<std::string> argv = {config_.compiler};
      argv.insert(argv.end(), config_.flags.begin(), config_.flags.end());
      if (i + 1 == units.size()) argv.insert(argv.end(), config_.glue_flags.begin(), config_.glue_flags.end());
      argv.insert(argv.end(), {"-c", "-o", tmp_o[i], tmp_cc[i]});
      compiles.push_back(std::move(argv));
    }
    std::vector<std::string> logs;
    absl::StatusOr<std::vector<int>> codes = RunProcesses(compiles, &logs);
    if (!codes.ok()) {
      cleanup();
      return codes.status();
    }
    for (size_t i = 0; i < codes->size(); ++i) {
      if ((*codes)[i] != 0) return compiler_error((*codes)[i], logs[i]);
    }
    link.insert(link.end(), tmp_o.begin(), tmp_o.end());
  } else {
    link.push_back(tmp_cc[0]);
  }
  link.insert(link.end(), config_.libs.begin(), config_.libs.end());
  std::string log;
  absl::StatusOr<int> rc = RunProcess(link, &log);
  if (!rc.ok()) {
    cleanup();
    return rc.status();
  }
  if (*rc != 0) return compiler_error(*rc, std::move(log));
  absl::StatusOr<std::string> library = ReadFile(tmp_so);
  if (!library.ok()) {
    cleanup();
    return library.status();
  }
  // The library first, then the sidecar that validates it: a reader never
  // sees a sidecar for a library that is not complete.
  if (::rename(tmp_so.c_str(), PathFor(key, ".so").c_str()) != 0) s = Errno("rename library");
  if (s.ok()) {
    s = WriteFileAtomically(PathFor(key, ".sum"), ChecksumSidecar(kSidecarMagic, *library, kHashSeed), kEntryFile);
  }
  // The sources stay beside the entry for people reading generated code:
  // `<key>.cc`, or `<key>.<i>.cc` per unit.
  for (size_t i = 0; s.ok() && i < units.size(); ++i) {
    ::rename(tmp_cc[i].c_str(), PathFor(key, multi ? absl::StrCat(".", i, ".cc").c_str() : ".cc").c_str());
  }
  cleanup();
  RETURN_IF_ERROR(s);
  CacheEntry entry;
  entry.key = key;
  entry.library_path = PathFor(key, ".so");
  entry.compiled = true;
  return entry;
}

}  // namespace kiln::backends::cpu
