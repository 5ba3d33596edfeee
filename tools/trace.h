// A compile timeline in the Chrome trace event format (the JSON that
// chrome://tracing and https://ui.perfetto.dev open): `kiln compile --trace`.
//
// Every event is a complete ("ph": "X") event on one track, in
// microseconds since the recorder was made; nesting shows as stacking
// (a pass inside "passes", the C++ compiler inside "device compile").
#ifndef KILN_TOOLS_TRACE_H_
#define KILN_TOOLS_TRACE_H_

#include <chrono>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "tools/json_output.h"

namespace kiln::tools {

class TraceRecorder {
 public:
  using Clock = std::chrono::steady_clock;

  TraceRecorder();

  // One event from `start` to `end`; `category` groups them ("import",
  // "pass", "stage", "codegen"); `args` is shown when it is selected.
  void Complete(absl::string_view name, absl::string_view category, Clock::time_point start,
                Clock::time_point end, Json args = Json::object());

  // {"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}.
  Json ToJson() const;
  // ToJson() to `path` (replaced atomically).
  absl::Status WriteTo(const std::string& path) const;

  size_t size() const { return events_.size(); }

 private:
  Clock::time_point origin_;
  Json events_ = Json::array();
};

}  // namespace kiln::tools

#endif  // KILN_TOOLS_TRACE_H_
