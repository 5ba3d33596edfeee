#include "driver/measure.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "support/status.h"

namespace kiln::driver {

absl::StatusOr<Measurement> MeasureProgram(wrapper::CompiledProgram& program, std::vector<Tensor> inputs,
                                           const MeasureOptions& options) {
  Measurement m;
  const auto t0 = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(std::unique_ptr<wrapper::ProgramSession> session, program.NewSession(std::move(inputs)));
  m.session_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const auto t1 = std::chrono::steady_clock::now();
  RETURN_IF_ERROR(session->Run());
  RETURN_IF_ERROR(session->FetchOutputs().status());
  m.first_call_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count();
  // The first call is the first warm-up call.
  for (int i = 1; i < options.warmup; ++i) RETURN_IF_ERROR(session->Run());
  ASSIGN_OR_RETURN(m.ms, session->Time(std::max(1, options.iterations)));
  if (m.ms.empty()) return absl::InternalError("the session timed no call");
  std::vector<double> sorted = m.ms;
  std::sort(sorted.begin(), sorted.end());
  m.median_ms = sorted[sorted.size() / 2];
  m.min_ms = sorted.front();
  m.max_ms = sorted.back();
  m.timer = session->timer();
  ASSIGN_OR_RETURN(m.outputs, session->FetchOutputs());
  if (options.profile_iterations > 0) {
    absl::StatusOr<std::vector<wrapper::StepProfile>> profile = session->Profile(options.profile_iterations);
    if (profile.ok()) {
      m.profile = *std::move(profile);
    } else {
      m.profile_error = std::string(profile.status().message());
    }
  }
  m.notes = session->Notes();
  return m;
}

std::string FormatProfile(const std::vector<wrapper::StepProfile>& steps, int calls, int max_rows) {
  std::map<std::pair<std::string, std::string>, wrapper::StepProfile> rows;
  double total = 0;
  for (const wrapper::StepProfile& s : steps) {
    wrapper::StepProfile& r = rows[{s.name, s.kind}];
    r.name = s.name;
    r.kind = s.kind;
    r.calls += s.calls;
    r.total_ms += s.total_ms;
    total += s.total_ms;
  }
  std::vector<wrapper::StepProfile> sorted;
  for (auto& [key, r] : rows) sorted.push_back(std::move(r));
  std::sort(sorted.begin(), sorted.end(),
            [](const wrapper::StepProfile& a, const wrapper::StepProfile& b) { return a.total_ms > b.total_ms; });
  const double per = calls > 0 ? 1.0 / calls : 1.0;
  std::string out = absl::StrFormat("%-56s %-7s %9s %6s %8s\n", "step", "kind", "ms/call", "%", "n/call");
  double rest = 0;
  int rest_rows = 0;
  for (size_t i = 0; i < sorted.size(); ++i) {
    const wrapper::StepProfile& r = sorted[i];
    if (static_cast<int>(i) >= max_rows) {
      rest += r.total_ms;
      ++rest_rows;
      continue;
    }
    std::string name = r.name.size() > 56 ? absl::StrCat(r.name.substr(0, 53), "...") : r.name;
    absl::StrAppendFormat(&out, "%-56s %-7s %9.4f %6.1f %8.1f\n", name, r.kind, r.total_ms * per,
                          total > 0 ? 100 * r.total_ms / total : 0.0, static_cast<double>(r.calls) * per);
  }
  if (rest_rows > 0) {
    absl::StrAppendFormat(&out, "%-56s %-7s %9.4f %6.1f\n", absl::StrCat("(", rest_rows, " more steps)"), "",
                          rest * per, total > 0 ? 100 * rest / total : 0.0);
  }
  absl::StrAppendFormat(&out, "%-56s %-7s %9.4f %6.1f\n", "total of the steps (events around each)", "",
                        total * per, 100.0);
  return out;
}

absl::StatusOr<OutputError> CompareOutputs(const std::vector<Tensor>& got, const std::vector<Tensor>& want) {
  if (got.size() != want.size()) {
    return absl::InvalidArgumentError(absl::StrCat(got.size(), " outputs against ", want.size(), " expected"));
  }
  OutputError e;
  double worst_rel = 0;
  for (size_t k = 0; k < got.size(); ++k) {
    const Tensor& a = got[k];
    const Tensor& b = want[k];
    const bool same_kind = a.dtype() == b.dtype() || (IsFloatingPoint(a.dtype()) && IsFloatingPoint(b.dtype()));
    if (a.sizes() != b.sizes() || !same_kind) {
      return absl::InvalidArgumentError(absl::StrCat("output ", k, " is ", DTypeName(a.dtype()), "[",
                                                     absl::StrJoin(a.sizes(), ", "), "], expected ",
                                                     DTypeName(b.dtype()), "[", absl::StrJoin(b.sizes(), ", "), "]"));
    }
    double num = 0, den = 0;
    for (int64_t i = 0; i < a.numel(); ++i) {
      const double x = a.GetDouble(i), y = b.GetDouble(i);
      if (std::isnan(x) || std::isnan(y)) {
        if (std::isnan(x) != std::isnan(y)) e.max_abs = std::numeric_limits<double>::infinity();
        continue;
      }
      if (x == y) {  // equal infinities included
        den += std::isinf(y) ? 0 : y * y;
        continue;
      }
      const double d = std::fabs(x - y);
      e.max_abs = std::max(e.max_abs, d);
      num += d * d;
      den += y * y;
    }
    const double rel = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
    worst_rel = std::max(worst_rel, rel);
  }
  e.rel_l2 = std::isinf(e.max_abs) ? std::numeric_limits<double>::infinity() : worst_rel;
  return e;
}

}  // namespace kiln::driver
