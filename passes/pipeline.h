// Runs a pipeline of passes with the checks and tooling around them.
//
//   ASSIGN_OR_RETURN(auto pipeline,
//                    Pipeline::Create("-O2", DefaultPassRegistry(), options));
//   ASSIGN_OR_RETURN(bool changed, pipeline->Run(graph));
//   std::cerr << pipeline->FormatStats();
//
// Around every pass execution the pipeline:
//  * skips it if disabled (--disable-pass) or past --stop-after=N;
//  * checks the changed bit against a graph fingerprint
//    (check_changed_bit; on by default in debug builds and tests);
//  * runs the verifier if the pass changed the graph; a failure reads
//    "pass 'cse' produced an invalid graph: <verifier message>";
//  * records time, node counts and the pass's own counters;
//  * logs per KILN_LOG_LEVEL (DUMP: the graph before, and after if changed);
//  * writes NNN_<pass>.txt / .pb to dump_dir if the pass changed the graph
//    (NNN = the execution number --stop-after counts; 000_input is the input);
//  * on a pass error or crash, writes reproducer_dir/reproducer.txt (the IR
//    before the pass and the pipeline from that pass on) and names it in the
//    error.
#ifndef KILN_PASSES_PIPELINE_H_
#define KILN_PASSES_PIPELINE_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/ir.h"
#include "passes/pass.h"
#include "passes/pass_registry.h"
#include "passes/pipeline_spec.h"
#include "passes/pipeline_stats.h"

namespace kiln::passes {

namespace pipeline_internal {
struct Step;  // an instantiated PipelineStep (pipeline.cc)
}  // namespace pipeline_internal

#ifdef NDEBUG
constexpr bool kDebugBuild = false;
#else
constexpr bool kDebugBuild = true;
#endif

// How IR is written to files. The core pass manager does not depend on the
// printer or on protobuf; //passes:pipeline_io provides DefaultIrWriters().
struct IrWriters {
  // Text IR, for dumps (.txt), reproducers and KILN_LOG dumps.
  std::function<std::string(const ir::Graph&)> text;
  // Serialized binary proto, for dumps (.pb). Optional.
  std::function<absl::StatusOr<std::string>(const ir::Graph&)> proto;
};

using GraphVerifier = std::function<absl::Status(const ir::Graph&)>;

// Told of every pass execution when it ends: the pass, when it started and
// ended, whether it changed the graph (false when it failed). For timelines
// (`kiln compile --trace`).
using PassObserver =
    std::function<void(absl::string_view pass, std::chrono::steady_clock::time_point start,
                       std::chrono::steady_clock::time_point end, bool changed)>;

// ir::Verify with its default options (structure, SSA, control flow,
// operator schemas).
GraphVerifier DefaultGraphVerifier();

struct PipelineOptions {
  // Fail a pass that returns false although the graph's fingerprint changed.
  bool check_changed_bit = kDebugBuild;
  // Also fail a pass that returns true although the fingerprint is the same.
  // Off by default: a pass may legitimately rewrite a node into an identical
  // one, but inside fixpoint(...) that still counts as a cycle.
  bool check_reported_change = false;

  // Run after every pass that changed the graph (and on the input, so an
  // invalid input is not blamed on the first pass). Empty: no verification.
  GraphVerifier verifier = DefaultGraphVerifier();
  // With a verifier: true runs it after every pass that changed the graph;
  // false only on the input and on the final graph (a failure then names no
  // pass). The input is always checked, so passes never see invalid IR.
  bool verify_each_pass = true;

  // Pass names or aliases to skip. Unknown names are an error.
  std::vector<std::string> disabled_passes;
  // Run only the first N pass executions (counting inside fixpoints); -1 =
  // all. For bisecting: the dump files are numbered the same way.
  int64_t stop_after = -1;

  // Fixed points: cycle detection, and whether reaching a group's cap while
  // still changing is an error (otherwise a warning in the statistics).
  bool detect_fixpoint_cycles = true;
  bool fail_at_fixpoint_cap = false;

  // Write NNN_<pass>.txt (and .pb when writers.proto is set) here after each
  // pass that changed the graph. Requires writers.text.
  std::string dump_dir;
  // On a pass failure or crash write reproducer.txt here. Requires
  // writers.text.
  std::string reproducer_dir;
  // With reproducer_dir: also write the reproducer on a fatal signal.
  bool install_crash_handler = true;

  IrWriters writers;

  // Optional.
  PassObserver on_pass_executed;
};

class Pipeline {
 public:
  // `pipeline` is a pipeline string or a preset (see pipeline_spec.h).
  // Unknown pass names, here or in disabled_passes, are InvalidArgument
  // listing the known passes.
  static absl::StatusOr<std::unique_ptr<Pipeline>> Create(absl::string_view pipeline,
                                                          const PassRegistry& registry,
                                                          PipelineOptions options = {});
  static absl::StatusOr<std::unique_ptr<Pipeline>> Create(
      const std::vector<PipelineStep>& steps, const PassRegistry& registry,
      PipelineOptions options = {});
  ~Pipeline();

  // Returns whether any pass changed the graph. Statistics accumulate over
  // calls; --stop-after counts per call.
  absl::StatusOr<bool> Run(ir::Graph& graph);

  // The pipeline with canonical pass names (disabled passes included).
  std::string ToString() const;
  const PipelineStatistics& statistics() const;
  std::string FormatStats() const;
  const PipelineOptions& options() const { return options_; }

 private:
  Pipeline();

  std::vector<pipeline_internal::Step> steps_;
  PipelineOptions options_;
  std::unique_ptr<PipelineStatistics> stats_;
};

}  // namespace kiln::passes

#endif  // KILN_PASSES_PIPELINE_H_
