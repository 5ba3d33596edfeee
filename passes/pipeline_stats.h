// What a pipeline run did, per pass: `kiln opt --stats`.
#ifndef KILN_PASSES_PIPELINE_STATS_H_
#define KILN_PASSES_PIPELINE_STATS_H_

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "passes/pass.h"

namespace kiln::passes {

// Aggregated over every execution of passes with this name.
struct PassRunStats {
  std::string name;
  int64_t runs = 0;
  int64_t changed = 0;
  int64_t skipped = 0;     // disabled (--disable-pass)
  double seconds = 0;
  int64_t nodes_in = -1;   // before the first run
  int64_t nodes_out = -1;  // after the last run
  PassStatistics counters; // the pass's own counters, summed over instances
};

struct FixpointStats {
  std::string label;  // "fixpoint(dead_code_elimination,cse)"
  int64_t entries = 0;
  int64_t iterations = 0;
  int64_t hit_cap = 0;
};

class PipelineStatistics {
 public:
  // Created on first use; iteration order is first-use order. References
  // stay valid (deque storage).
  PassRunStats& ForPass(absl::string_view name);
  FixpointStats& ForFixpoint(absl::string_view label);
  const PassRunStats* FindPass(absl::string_view name) const;

  const std::deque<PassRunStats>& passes() const { return passes_; }
  const std::deque<FixpointStats>& fixpoints() const { return fixpoints_; }

  int64_t executions = 0;         // pass runs, over the whole pipeline
  int64_t stopped_after = -1;     // --stop-after cut the run after this many
  std::vector<std::string> warnings;

  // A fixed-width table, one row per pass, its counters indented below it.
  std::string Format() const;

 private:
  std::deque<PassRunStats> passes_;
  std::deque<FixpointStats> fixpoints_;
};

}  // namespace kiln::passes

#endif  // KILN_PASSES_PIPELINE_STATS_H_
