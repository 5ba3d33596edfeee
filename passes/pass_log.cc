#include "passes/pass_log.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "ir/ir.h"

namespace kiln::passes {
namespace log_internal {
std::atomic<int> g_log_state{-1};
}  // namespace log_internal

namespace {

constexpr int kOff = 0;

struct LogConfig {
  absl::Mutex mu;
  // As configured, keyed by the (extension-stripped) name the user wrote.
  std::map<std::string, int> levels ABSL_GUARDED_BY(mu);
  int wildcard_level ABSL_GUARDED_BY(mu) = kOff;
  absl::flat_hash_map<std::string, std::string> canonical_of_alias ABSL_GUARDED_BY(mu);
  absl::flat_hash_map<std::string, std::vector<std::string>> aliases_of
      ABSL_GUARDED_BY(mu);
  // Effective level per queried name; cleared whenever anything changes.
  absl::flat_hash_map<std::string, int> cache ABSL_GUARDED_BY(mu);
  LogSink sink ABSL_GUARDED_BY(mu);
  GraphPrinter printer ABSL_GUARDED_BY(mu);
};

LogConfig& Config() {
  static LogConfig* config = new LogConfig();
  return *config;
}

absl::string_view StripExtension(absl::string_view name) {
  for (absl::string_view ext : {".cc", ".cpp", ".h"}) {
    if (absl::EndsWith(name, ext)) return name.substr(0, name.size() - ext.size());
  }
  return name;
}

bool IsNameChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' ||
         c == '.' || c == '/';
}

struct ParsedSpec {
  std::map<std::string, int> levels;
  int wildcard_level = kOff;
};

absl::Status ParseSpec(absl::string_view spec, ParsedSpec* out) {
  int index = 0;
  for (absl::string_view entry : absl::StrSplit(spec, ':')) {
    ++index;
    entry = absl::StripAsciiWhitespace(entry);
    if (entry.empty()) continue;  // tolerate "a::b" and a trailing ':'
    size_t arrows = 0;
    while (arrows < entry.size() && entry[arrows] == '>') ++arrows;
    absl::string_view name = StripExtension(entry.substr(arrows));
    int level = static_cast<int>(arrows) + 1;
    if (level > static_cast<int>(LogLevel::kDebug)) level = static_cast<int>(LogLevel::kDebug);
    if (name.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("KILN_LOG_LEVEL entry ", index, " ('", entry,
                       "'): expected a pass name after the '>' prefix"));
    }
    if (name == "*") {
      out->wildcard_level = std::max(out->wildcard_level, level);
      continue;
    }
    for (char c : name) {
      if (!IsNameChar(c)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "KILN_LOG_LEVEL entry ", index, " ('", entry, "'): unexpected character '",
            absl::string_view(&c, 1),
            "' (expected '>'* then a pass name of letters, digits, '_', '-', '.', '/')"));
      }
    }
    // A path like "passes/dce" logs as "dce".
    size_t slash = name.find_last_of('/');
    if (slash != absl::string_view::npos) name = name.substr(slash + 1);
    int& slot = out->levels[std::string(name)];
    slot = std::max(slot, level);
  }
  return absl::OkStatus();
}

void Install(ParsedSpec parsed) {
  LogConfig& config = Config();
  absl::MutexLock lock(&config.mu);
  config.levels = std::move(parsed.levels);
  config.wildcard_level = parsed.wildcard_level;
  config.cache.clear();
  bool any = config.wildcard_level != kOff || !config.levels.empty();
  log_internal::g_log_state.store(any ? 1 : 0, std::memory_order_relaxed);
}

// A function, not a lambda: clang's thread-safety analysis does not carry
// the caller's lock into a lambda body.
int LevelIn(const LogConfig& config, const std::string& n) ABSL_EXCLUSIVE_LOCKS_REQUIRED(config.mu) {
  auto it = config.levels.find(n);
  return it == config.levels.end() ? kOff : it->second;
}

int LevelOf(LogConfig& config, const std::string& name)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(config.mu) {
  int level = std::max(config.wildcard_level, LevelIn(config, name));
  std::string canonical = name;
  auto alias = config.canonical_of_alias.find(name);
  if (alias != config.canonical_of_alias.end()) canonical = alias->second;
  level = std::max(level, LevelIn(config, canonical));
  auto aliases = config.aliases_of.find(canonical);
  if (aliases != config.aliases_of.end()) {
    for (const std::string& a : aliases->second) level = std::max(level, LevelIn(config, a));
  }
  return level;
}

void WriteLine(absl::string_view line) {
  LogSink sink;
  {
    LogConfig& config = Config();
    absl::MutexLock lock(&config.mu);
    sink = config.sink;
  }
  if (sink) {
    sink(line);
  } else {
    std::fwrite(line.data(), 1, line.size(), stderr);
  }
}

}  // namespace

const char* LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDump:
      return "DUMP";
    case LogLevel::kUpdate:
      return "UPDATE";
    case LogLevel::kDebug:
      return "DEBUG";
  }
  return "?";
}

absl::Status SetLogLevels(absl::string_view spec) {
  ParsedSpec parsed;
  if (absl::Status s = ParseSpec(spec, &parsed); !s.ok()) return s;
  Install(std::move(parsed));
  return absl::OkStatus();
}

std::string GetLogLevels() {
  LogConfig& config = Config();
  absl::MutexLock lock(&config.mu);
  std::vector<std::string> parts;
  auto arrows = [](int level) { return std::string(static_cast<size_t>(level - 1), '>'); };
  if (config.wildcard_level != kOff) parts.push_back(arrows(config.wildcard_level) + "*");
  for (const auto& [name, level] : config.levels) parts.push_back(arrows(level) + name);
  return absl::StrJoin(parts, ":");
}

void InitLogLevelsFromEnv() {
  const char* env = std::getenv("KILN_LOG_LEVEL");
  ParsedSpec parsed;
  if (env != nullptr) {
    absl::Status s = ParseSpec(env, &parsed);
    if (!s.ok()) {
      std::string msg = absl::StrCat("kiln: ignoring KILN_LOG_LEVEL: ", s.message(), "\n");
      std::fwrite(msg.data(), 1, msg.size(), stderr);
      parsed = ParsedSpec();
    }
  }
  Install(std::move(parsed));
}

namespace log_internal {
bool SlowAnyEnabled() {
  // Only the first caller reads the environment; if SetLogLevels ran first,
  // its explicit configuration wins.
  static const bool initialised = [] {
    if (g_log_state.load() < 0) InitLogLevelsFromEnv();
    return true;
  }();
  (void)initialised;
  return g_log_state.load(std::memory_order_relaxed) > 0;
}
}  // namespace log_internal

void RegisterLogAlias(absl::string_view alias, absl::string_view name) {
  if (alias == name) return;
  LogConfig& config = Config();
  absl::MutexLock lock(&config.mu);
  auto [it, inserted] = config.canonical_of_alias.emplace(std::string(alias), std::string(name));
  if (!inserted) {
    if (it->second == name) return;
    // Re-pointing an alias: drop it from the old name's list.
    auto& old_list = config.aliases_of[it->second];
    old_list.erase(std::remove(old_list.begin(), old_list.end(), std::string(alias)),
                   old_list.end());
    it->second = std::string(name);
  }
  config.aliases_of[std::string(name)].push_back(std::string(alias));
  config.cache.clear();
}

bool IsLogEnabled(absl::string_view pass, LogLevel level) {
  if (!log_internal::AnyEnabled()) return false;
  LogConfig& config = Config();
  absl::MutexLock lock(&config.mu);
  auto it = config.cache.find(pass);
  if (it == config.cache.end()) {
    std::string name(pass);
    int effective = LevelOf(config, name);
    it = config.cache.emplace(std::move(name), effective).first;
  }
  return static_cast<int>(level) <= it->second;
}

void SetLogSink(LogSink sink) {
  LogConfig& config = Config();
  absl::MutexLock lock(&config.mu);
  config.sink = std::move(sink);
}

void SetLogGraphPrinter(GraphPrinter printer) {
  LogConfig& config = Config();
  absl::MutexLock lock(&config.mu);
  config.printer = std::move(printer);
}

void EmitLog(absl::string_view pass, LogLevel level, absl::string_view message) {
  std::string prefix = absl::StrCat("[", LogLevelName(level), " ", pass, "] ");
  std::string out;
  for (absl::string_view line : absl::StrSplit(message, '\n')) {
    absl::StrAppend(&out, prefix, line, "\n");
  }
  // A message ending in '\n' would otherwise log an empty last line.
  if (!message.empty() && message.back() == '\n') out.resize(out.size() - prefix.size() - 1);
  WriteLine(out);
}

void EmitLogGraph(absl::string_view pass, LogLevel level, absl::string_view message,
                  const ir::Graph& graph) {
  GraphPrinter printer;
  {
    LogConfig& config = Config();
    absl::MutexLock lock(&config.mu);
    printer = config.printer;
  }
  std::string text =
      printer ? printer(graph)
              : absl::StrCat("<graph with ", graph.numNodes(),
                             " nodes; link //passes:pipeline_io to print it>");
  EmitLog(pass, level, absl::StrCat(message, "\n", text));
}

}  // namespace kiln::passes
