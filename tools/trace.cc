#include "tools/trace.h"

#include <unistd.h>

#include "tools/file_io.h"
#include "tools/version.h"

namespace kiln::tools {
namespace {

double Microseconds(TraceRecorder::Clock::duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}

}  // namespace

TraceRecorder::TraceRecorder() : origin_(Clock::now()) {}

void TraceRecorder::Complete(absl::string_view name, absl::string_view category,
                             Clock::time_point start, Clock::time_point end, Json args) {
  Json event = Json::object();
  event["name"] = std::string(name);
  event["cat"] = std::string(category);
  event["ph"] = "X";
  event["ts"] = Microseconds(start - origin_);
  event["dur"] = Microseconds(end - start);
  event["pid"] = static_cast<int64_t>(getpid());
  event["tid"] = 1;
  if (!args.empty()) event["args"] = std::move(args);
  events_.push_back(std::move(event));
}

Json TraceRecorder::ToJson() const {
  Json trace = Json::object();
  // The process's name on its track.
  Json metadata = {{"name", "process_name"},
                   {"ph", "M"},
                   {"pid", static_cast<int64_t>(getpid())},
                   {"args", {{"name", "kiln compile"}}}};
  Json events = Json::array();
  events.push_back(std::move(metadata));
  for (const Json& e : events_) events.push_back(e);
  trace["traceEvents"] = std::move(events);
  trace["displayTimeUnit"] = "ms";
  trace["otherData"] = {{"kiln_version", kKilnVersion}};
  return trace;
}

absl::Status TraceRecorder::WriteTo(const std::string& path) const {
  return WriteFileAtomically(path, DumpJson(ToJson()));
}

}  // namespace kiln::tools
