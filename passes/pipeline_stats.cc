#include "passes/pipeline_stats.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace kiln::passes {

PassRunStats& PipelineStatistics::ForPass(absl::string_view name) {
  for (PassRunStats& p : passes_) {
    if (p.name == name) return p;
  }
  passes_.emplace_back();
  passes_.back().name = std::string(name);
  return passes_.back();
}

FixpointStats& PipelineStatistics::ForFixpoint(absl::string_view label) {
  for (FixpointStats& f : fixpoints_) {
    if (f.label == label) return f;
  }
  fixpoints_.emplace_back();
  fixpoints_.back().label = std::string(label);
  return fixpoints_.back();
}

const PassRunStats* PipelineStatistics::FindPass(absl::string_view name) const {
  for (const PassRunStats& p : passes_) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::string PipelineStatistics::Format() const {
  int64_t changed = 0;
  double seconds = 0;
  for (const PassRunStats& p : passes_) {
    changed += p.changed;
    seconds += p.seconds;
  }
  std::string out = absl::StrFormat(
      "=== kiln pass statistics: %d pass executions, %d changed, %.3f ms ===\n", executions,
      changed, seconds * 1e3);
  absl::StrAppendFormat(&out, "%-36s %6s %8s %10s %9s %9s\n", "pass", "runs", "changed",
                        "time(ms)", "nodes in", "nodes out");
  auto nodes = [](int64_t n) { return n < 0 ? std::string("-") : absl::StrCat(n); };
  for (const PassRunStats& p : passes_) {
    absl::StrAppendFormat(&out, "%-36s %6d %8d %10.3f %9s %9s", p.name, p.runs, p.changed,
                          p.seconds * 1e3, nodes(p.nodes_in), nodes(p.nodes_out));
    if (p.skipped > 0) absl::StrAppendFormat(&out, "  (disabled, skipped %d)", p.skipped);
    out.push_back('\n');
    for (const auto& [counter, value] : p.counters.counters()) {
      absl::StrAppendFormat(&out, "    %-32s %6d\n", counter, value);
    }
  }
  for (const FixpointStats& f : fixpoints_) {
    absl::StrAppendFormat(&out, "%s: entered %d, %d iterations", f.label, f.entries,
                          f.iterations);
    if (f.hit_cap > 0) absl::StrAppendFormat(&out, ", hit the cap %d times", f.hit_cap);
    out.push_back('\n');
  }
  if (stopped_after >= 0) {
    absl::StrAppendFormat(&out, "stopped after %d pass executions (--stop-after)\n",
                          stopped_after);
  }
  for (const std::string& w : warnings) absl::StrAppend(&out, "warning: ", w, "\n");
  return out;
}

}  // namespace kiln::passes
