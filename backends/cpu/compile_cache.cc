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

// Bumped when the entry format changes (v2: XXH3-128 keys and checksums).
constexpr char kSidecarMagic[] = "kiln-cpu-cache-v2";

absl::Status Errno(const std::string& what) {
  return absl::InternalError(absl::StrCat(what, ": ", std::strerror(errno)));
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

CompileCache::CompileCache(std::string directory, CompilerConfig config, std::optional<uint64_t> max_bytes)
    : disk_([&] {
        DiskCacheOptions o;
        o.directory = std::move(directory);
        o.magic = kSidecarMagic;
        o.suffix = ".so";
        o.content_prefix = "\x7f" "ELF";
        o.max_bytes = max_bytes;
        o.sync = true;
        return o;
      }()),
      config_(std::move(config)) {}

absl::StatusOr<std::string> CompileCache::Key(const std::string& source) const {
  return Key(std::vector<std::string>{source});
}

absl::StatusOr<std::string> CompileCache::Key(const std::vector<std::string>& units) const {
  if (units.empty()) return absl::InvalidArgumentError("compile cache: a program without translation units");
  ASSIGN_OR_RETURN(std::string compiler, CompilerIdentity(config_.compiler));
  CacheKeyBuilder key;
  key.Add("kiln-cpu").Add(absl::StrCat(units.size()));
  for (const std::string& unit : units) key.Add(unit);
  key.Add(config_.compiler).Add(compiler);
  for (const std::vector<std::string>* list : {&config_.flags, &config_.libs}) {
    key.Add(absl::StrJoin(*list, "\x1f"));
  }
  // Glue flags apply to multi-unit programs only: one unit is the same
  // entry whatever they are.
  key.Add(units.size() > 1 ? absl::StrJoin(config_.glue_flags, "\x1f") : "");
  key.Add(CpuIdentity());
  return key.Hex();
}

absl::Status CompileCache::Validate(const std::string& key) const { return disk_.Load(key).status(); }

absl::StatusOr<CacheEntry> CompileCache::GetOrCompile(const std::string& source) {
  return GetOrCompile(std::vector<std::string>{source});
}

absl::StatusOr<CacheEntry> CompileCache::GetOrCompile(const std::vector<std::string>& units) {
  const auto start = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(std::string key, Key(units));
  ASSIGN_OR_RETURN(DiskCacheEntry found,
                   disk_.GetOrBuild(key, [&](const std::string& scratch) { return Build(scratch, units); }));
  if (found.path.empty()) {
    return absl::UnavailableError(
        absl::StrCat("compile cache ", disk_.directory(), ": the library was built but could not be stored"));
  }
  CacheEntry entry;
  entry.key = key;
  entry.library_path = found.path;
  entry.hit = found.hit;
  entry.compiled = found.built;
  entry.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return entry;
}

absl::StatusOr<CacheArtifact> CompileCache::Build(const std::string& scratch,
                                                  const std::vector<std::string>& units) const {
  const std::string tmp_so = scratch + ".so";
  const bool multi = units.size() > 1;
  std::vector<std::string> tmp_cc, tmp_o;
  for (size_t i = 0; i < units.size(); ++i) {
    tmp_cc.push_back(multi ? absl::StrCat(scratch, ".", i, ".cc") : scratch + ".cc");
    tmp_o.push_back(absl::StrCat(scratch, ".", i, ".o"));
  }
  auto cleanup = [&] {
    for (const std::string& f : tmp_cc) ::unlink(f.c_str());
    for (const std::string& f : tmp_o) ::unlink(f.c_str());
    ::unlink(tmp_so.c_str());
  };
  absl::Status s = absl::OkStatus();
  for (size_t i = 0; s.ok() && i < units.size(); ++i) s = WriteFile(tmp_cc[i], units[i], FileWriteOptions{0600, false});
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
  cleanup();
  RETURN_IF_ERROR(library.status());
  CacheArtifact artifact;
  artifact.contents = std::move(*library);
  for (size_t i = 0; i < units.size(); ++i) {
    artifact.extras.emplace_back(multi ? absl::StrCat(".", i, ".cc") : ".cc", units[i]);
  }
  return artifact;
}

}  // namespace kiln::backends::cpu
