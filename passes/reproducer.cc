#include "passes/reproducer.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace kiln::passes {

std::string FormatReproducer(absl::string_view reason, absl::string_view pipeline,
                             absl::string_view ir_text) {
  std::string out;
  bool first = true;
  for (absl::string_view line : absl::StrSplit(reason, '\n')) {
    absl::StrAppend(&out, first ? "# kiln reproducer: " : "#   ", line, "\n");
    first = false;
  }
  absl::StrAppend(&out, kReproducerPipelinePrefix, pipeline, "\n", ir_text);
  if (!ir_text.empty() && ir_text.back() != '\n') out.push_back('\n');
  return out;
}

absl::StatusOr<std::string> ReproducerPipeline(absl::string_view reproducer) {
  for (absl::string_view line : absl::StrSplit(reproducer, '\n')) {
    if (absl::ConsumePrefix(&line, kReproducerPipelinePrefix)) return std::string(line);
  }
  return absl::NotFoundError(
      absl::StrCat("no '", kReproducerPipelinePrefix, "' line in the reproducer"));
}

absl::Status EnsureDirectory(absl::string_view dir) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(std::string(dir)), ec);
  if (ec) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create directory '", dir, "': ", ec.message()));
  }
  return absl::OkStatus();
}

absl::Status WriteFile(absl::string_view path, absl::string_view contents) {
  std::string p(path);
  std::FILE* f = std::fopen(p.c_str(), "wb");
  if (f == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("cannot open '", path, "' for writing"));
  }
  size_t written = std::fwrite(contents.data(), 1, contents.size(), f);
  bool closed = std::fclose(f) == 0;
  if (written != contents.size() || !closed) {
    return absl::DataLossError(absl::StrCat("short write to '", path, "'"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> WriteReproducer(absl::string_view dir, absl::string_view reason,
                                            absl::string_view pipeline,
                                            absl::string_view ir_text) {
  if (absl::Status s = EnsureDirectory(dir); !s.ok()) return s;
  std::string path = absl::StrCat(dir, "/", kReproducerFileName);
  if (absl::Status s = WriteFile(path, FormatReproducer(reason, pipeline, ir_text)); !s.ok()) {
    return s;
  }
  return path;
}

// ------------------------------------------------------------ crash handler

namespace {

constexpr int kSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
constexpr int kNumSignals = sizeof(kSignals) / sizeof(kSignals[0]);

}  // namespace

struct CrashReproducerScope::State {
  std::string path;
  std::string contents;
  std::string message;  // for stderr
  struct sigaction previous[kNumSignals];
};

namespace {

std::atomic<CrashReproducerScope::State*>& Current() {
  static std::atomic<CrashReproducerScope::State*> current{nullptr};
  return current;
}

void WriteAll(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    ssize_t n = ::write(fd, s.data() + done, s.size() - done);
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

void OnFatalSignal(int sig) {
  // Only async-signal-safe calls from here on.
  CrashReproducerScope::State* state = Current().exchange(nullptr);
  if (state == nullptr) return;
  if (!state->path.empty()) {
    int fd = ::open(state->path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      WriteAll(fd, state->contents);
      ::close(fd);
      WriteAll(STDERR_FILENO, state->message);
    }
  }
  for (int i = 0; i < kNumSignals; ++i) {
    if (kSignals[i] == sig) ::sigaction(sig, &state->previous[i], nullptr);
  }
  // Delivered with the previous handler once this one returns.
  ::raise(sig);
}

}  // namespace

CrashReproducerScope::CrashReproducerScope() : state_(new State()) {
  previous_ = Current().load();
  struct sigaction action = {};
  action.sa_handler = OnFatalSignal;
  sigemptyset(&action.sa_mask);
  for (int i = 0; i < kNumSignals; ++i) {
    ::sigaction(kSignals[i], &action, &state_->previous[i]);
  }
  Current().store(state_);
}

CrashReproducerScope::~CrashReproducerScope() {
  Current().store(nullptr);
  for (int i = 0; i < kNumSignals; ++i) {
    ::sigaction(kSignals[i], &state_->previous[i], nullptr);
  }
  Current().store(previous_);
  delete state_;
}

void CrashReproducerScope::Arm(std::string path, std::string contents, absl::string_view pass) {
  // Disarm while the strings change, so a signal never sees a half-built one.
  Current().store(nullptr);
  state_->path = std::move(path);
  state_->contents = std::move(contents);
  state_->message = absl::StrCat("kiln: fatal signal in pass '", pass,
                                 "'; reproducer written to ", state_->path, "\n");
  Current().store(state_);
}

}  // namespace kiln::passes
