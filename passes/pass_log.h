// Per-pass logging in the style of PYTORCH_JIT_LOG_LEVEL.
//
//   KILN_LOG_LEVEL="dead_code_elimination:>cse:>>constant_propagation"
//
// Names are colon-separated pass names (canonical names or registered
// aliases; a trailing ".cc"/".cpp"/".h" is stripped, so file names work too).
// The number of leading '>' picks the most verbose level enabled:
//   name     DUMP                 (graphs before/after the pass)
//   >name    DUMP, UPDATE         (one line per rewrite)
//   >>name   DUMP, UPDATE, DEBUG  (why things were not rewritten)
// More '>' than two means DEBUG. "*" matches every pass.
//
// Each emitted line is prefixed with "[DUMP dead_code_elimination] " and goes
// to stderr unless a sink is installed (tests, the CLI).
//
// The macros cost one relaxed atomic load when no logging is configured, and
// a cached hash lookup otherwise; their message arguments are evaluated only
// when the level is enabled.
#ifndef KILN_PASSES_PASS_LOG_H_
#define KILN_PASSES_PASS_LOG_H_

#include <atomic>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace kiln::ir {
class Graph;
}

namespace kiln::passes {

enum class LogLevel : int { kDump = 1, kUpdate = 2, kDebug = 3 };

const char* LogLevelName(LogLevel level);  // "DUMP", "UPDATE", "DEBUG"

// Replaces the configuration with `spec` (the KILN_LOG_LEVEL syntax; "" turns
// logging off). On a malformed spec the configuration is left unchanged.
absl::Status SetLogLevels(absl::string_view spec);
// The configuration in canonical form ("name:>name2:>>name3", sorted).
std::string GetLogLevels();
// Re-reads KILN_LOG_LEVEL (done automatically on first use). A malformed
// value is reported once on stderr and ignored.
void InitLogLevelsFromEnv();

// Makes `alias` log under the same switch as `name` (PassRegistry calls this
// for every alias it registers, so KILN_LOG_LEVEL=">cse" works).
void RegisterLogAlias(absl::string_view alias, absl::string_view name);

bool IsLogEnabled(absl::string_view pass, LogLevel level);

// Where log lines go; nullptr restores stderr. Receives whole prefixed lines
// including the trailing '\n'.
using LogSink = std::function<void(absl::string_view line)>;
void SetLogSink(LogSink sink);

// Renders graphs for KILN_LOG_DUMP_GRAPH. Installed by //passes:pipeline_io
// (ir::PrintGraph); without it a one-line summary is logged.
using GraphPrinter = std::function<std::string(const ir::Graph&)>;
void SetLogGraphPrinter(GraphPrinter printer);

// Writes `message` with every line prefixed by "[LEVEL pass] ".
void EmitLog(absl::string_view pass, LogLevel level, absl::string_view message);
// Writes `message`, then the printed graph.
void EmitLogGraph(absl::string_view pass, LogLevel level, absl::string_view message,
                  const ir::Graph& graph);

namespace log_internal {
// -1: not yet initialised from the environment; 0: nothing enabled; 1: some.
extern std::atomic<int> g_log_state;
bool SlowAnyEnabled();
inline bool AnyEnabled() {
  int s = g_log_state.load(std::memory_order_relaxed);
  return s == 0 ? false : (s > 0 ? true : SlowAnyEnabled());
}
}  // namespace log_internal

}  // namespace kiln::passes

#define KILN_LOG_AT_(pass, level, ...)                                       \
  do {                                                                       \
    if (::kiln::passes::log_internal::AnyEnabled() &&                        \
        ::kiln::passes::IsLogEnabled((pass), (level))) {                     \
      ::kiln::passes::EmitLog((pass), (level), ::absl::StrCat(__VA_ARGS__)); \
    }                                                                        \
  } while (0)

// KILN_LOG_UPDATE("dead_code_elimination", "removed ", n, " nodes");
#define KILN_LOG_DUMP(pass, ...) \
  KILN_LOG_AT_(pass, ::kiln::passes::LogLevel::kDump, __VA_ARGS__)
#define KILN_LOG_UPDATE(pass, ...) \
  KILN_LOG_AT_(pass, ::kiln::passes::LogLevel::kUpdate, __VA_ARGS__)
#define KILN_LOG_DEBUG(pass, ...) \
  KILN_LOG_AT_(pass, ::kiln::passes::LogLevel::kDebug, __VA_ARGS__)

// KILN_LOG_DUMP_GRAPH("cse", "before cse", graph);
#define KILN_LOG_DUMP_GRAPH(pass, message, graph)                            \
  do {                                                                       \
    if (::kiln::passes::log_internal::AnyEnabled() &&                        \
        ::kiln::passes::IsLogEnabled((pass),                                 \
                                     ::kiln::passes::LogLevel::kDump)) {     \
      ::kiln::passes::EmitLogGraph((pass), ::kiln::passes::LogLevel::kDump,  \
                                   (message), (graph));                      \
    }                                                                        \
  } while (0)

#endif  // KILN_PASSES_PASS_LOG_H_
