#include "passes/pipeline.h"

#include <chrono>
#include <map>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "ir/verifier.h"
#include "passes/fingerprint.h"
#include "passes/fixed_point.h"
#include "passes/pass_log.h"
#include "passes/reproducer.h"

namespace kiln::passes {
namespace pipeline_internal {

struct Step {
  PipelineStep::Kind kind = PipelineStep::Kind::kPass;
  // kPass
  std::unique_ptr<Pass> pass;
  std::string name;  // canonical
  bool disabled = false;
  // kFixpoint
  int max_iterations = kDefaultFixedPointIterations;
  std::vector<Step> body;
  std::string label;  // "fixpoint(a,b)", for errors and statistics
};

}  // namespace pipeline_internal

namespace {

using pipeline_internal::Step;

// The pipeline's own log switch: KILN_LOG_LEVEL=">>pipeline".
constexpr char kPipelineLog[] = "pipeline";

// Appends the text of steps[from..] to `parts`; disabled passes (and groups
// left empty without them) are left out when `skip_disabled`.
void AppendSteps(const std::vector<Step>& steps, size_t from, bool skip_disabled,
                 std::vector<std::string>* parts) {
  for (size_t i = from; i < steps.size(); ++i) {
    const Step& s = steps[i];
    if (s.kind == PipelineStep::Kind::kPass) {
      if (!(skip_disabled && s.disabled)) parts->push_back(s.name);
      continue;
    }
    std::vector<std::string> body;
    AppendSteps(s.body, 0, skip_disabled, &body);  // nesting is capped by the parser
    if (body.empty() && skip_disabled) continue;
    std::string cap = s.max_iterations == kDefaultFixedPointIterations
                          ? std::string()
                          : absl::StrCat("<", s.max_iterations, ">");
    parts->push_back(absl::StrCat("fixpoint", cap, "(", absl::StrJoin(body, ","), ")"));
  }
}

std::string StepsToString(const std::vector<Step>& steps, bool skip_disabled) {
  std::vector<std::string> parts;
  AppendSteps(steps, 0, skip_disabled, &parts);
  return absl::StrJoin(parts, ",");
}

absl::Status Instantiate(const std::vector<PipelineStep>& specs, const PassRegistry& registry,
                         const std::vector<std::string>& disabled, int depth,
                         std::vector<Step>* out) {
  if (depth > kMaxPipelineNesting) {
    return absl::InvalidArgumentError(
        absl::StrCat("fixpoint groups nest deeper than ", kMaxPipelineNesting));
  }
  for (const PipelineStep& spec : specs) {
    Step step;
    step.kind = spec.kind;
    if (spec.kind == PipelineStep::Kind::kPass) {
      absl::StatusOr<std::unique_ptr<Pass>> pass = registry.Create(spec.pass);
      if (!pass.ok()) return pass.status();
      step.pass = std::move(*pass);
      step.name = std::string(step.pass->name());
      for (const std::string& d : disabled) step.disabled |= d == step.name;
    } else {
      if (spec.body.empty()) return absl::InvalidArgumentError("fixpoint group is empty");
      if (spec.max_iterations < 1 || spec.max_iterations > kMaxFixedPointIterations) {
        return absl::InvalidArgumentError(
            absl::StrCat("fixpoint iteration cap must be in [1, ", kMaxFixedPointIterations,
                         "], got ", spec.max_iterations));
      }
      step.max_iterations = spec.max_iterations;
      if (absl::Status s = Instantiate(spec.body, registry, disabled, depth + 1, &step.body);
          !s.ok()) {
        return s;
      }
      step.label = absl::StrCat(
          "fixpoint",
          step.max_iterations == kDefaultFixedPointIterations
              ? std::string()
              : absl::StrCat("<", step.max_iterations, ">"),
          "(", StepsToString(step.body, false), ")");
    }
    out->push_back(std::move(step));
  }
  return absl::OkStatus();
}

void CollectInstances(std::vector<Step>& steps, std::map<std::string, std::vector<Pass*>>* out) {
  for (Step& s : steps) {
    if (s.kind == PipelineStep::Kind::kPass) {
      (*out)[s.name].push_back(s.pass.get());
    } else {
      CollectInstances(s.body, out);
    }
  }
}

// One Run() of a pipeline.
class Runner {
 public:
  Runner(const PipelineOptions& options, PipelineStatistics& stats,
         std::vector<Step>& top_level)
      : options_(options), stats_(stats) {
    CollectInstances(top_level, &instances_);
  }

  absl::StatusOr<bool> Run(std::vector<Step>& steps, ir::Graph& graph) {
    if (options_.verifier) {
      absl::Status s = options_.verifier(graph);
      if (!s.ok()) {
        return absl::Status(s.code(), absl::StrCat("the input graph is invalid (before any pass): ",
                                                   s.message()));
      }
    }
    if (!options_.dump_dir.empty()) {
      if (absl::Status s = EnsureDirectory(options_.dump_dir); !s.ok()) return s;
      if (absl::Status s = Dump(0, "input", graph); !s.ok()) return s;
    }
    std::optional<CrashReproducerScope> crash_scope;
    if (!options_.reproducer_dir.empty() && options_.install_crash_handler) {
      if (absl::Status s = EnsureDirectory(options_.reproducer_dir); !s.ok()) return s;
      crash_scope.emplace();
    }
    crash_scope_ = crash_scope ? &*crash_scope : nullptr;
    absl::StatusOr<bool> changed = RunList(steps, graph);
    crash_scope_ = nullptr;
    if (stopped_) stats_.stopped_after = options_.stop_after;
    if (changed.ok() && *changed && options_.verifier && !options_.verify_each_pass) {
      absl::Status s = options_.verifier(graph);
      if (!s.ok()) {
        return absl::Status(s.code(), absl::StrCat("the pipeline produced an invalid graph "
                                                   "(rerun with verification after each pass "
                                                   "to find the pass): ",
                                                   s.message()));
      }
    }
    return changed;
  }

 private:
  // The position being run, for the reproducer's pipeline: at each nesting
  // level, the list and the index of the step being run in it.
  struct Frame {
    const std::vector<Step>* list;
    size_t index;
  };

  absl::StatusOr<bool> RunList(std::vector<Step>& steps, ir::Graph& graph) {
    bool changed = false;
    frames_.push_back({&steps, 0});
    for (size_t i = 0; i < steps.size() && !stopped_; ++i) {
      frames_.back().index = i;
      absl::StatusOr<bool> step_changed = steps[i].kind == PipelineStep::Kind::kPass
                                              ? RunPass(steps[i], graph)
                                              : RunFixpoint(steps[i], graph);
      if (!step_changed.ok()) {
        frames_.pop_back();
        return step_changed.status();
      }
      changed |= *step_changed;
    }
    frames_.pop_back();
    return changed;
  }

  absl::StatusOr<bool> RunFixpoint(Step& step, ir::Graph& graph) {
    FixpointStats& fstats = stats_.ForFixpoint(step.label);
    ++fstats.entries;
    FixedPointOptions fp;
    fp.max_iterations = step.max_iterations;
    fp.detect_cycles = options_.detect_fixpoint_cycles;
    fp.fail_at_cap = options_.fail_at_fixpoint_cap;
    std::string ir_before = options_.reproducer_dir.empty() ? std::string() : Print(graph);
    std::string pipeline_rest = Remainder();
    bool body_failed = false;
    absl::StatusOr<FixedPointResult> result = RunToFixedPoint(
        step.label, fp, graph, [&](ir::Graph& g, bool* stop) -> absl::StatusOr<bool> {
          ++fstats.iterations;
          KILN_LOG_DEBUG(kPipelineLog, step.label, ": iteration ", fstats.iterations);
          absl::StatusOr<bool> changed = RunList(step.body, g);
          body_failed = !changed.ok();
          *stop = stopped_;
          return changed;
        });
    if (!result.ok()) {
      // Errors of passes in the body are already reported; cycles and caps
      // are the group's.
      if (body_failed) return result.status();
      return Fail(result.status(), result.status().message(), pipeline_rest, ir_before);
    }
    if (result->hit_cap) {
      ++fstats.hit_cap;
      stats_.warnings.push_back(absl::StrCat(step.label, " stopped at its cap of ",
                                             step.max_iterations,
                                             " iterations while still changing the graph"));
    }
    return result->changed;
  }

  absl::StatusOr<bool> RunPass(Step& step, ir::Graph& graph) {
    PassRunStats& pstats = stats_.ForPass(step.name);
    if (step.disabled) {
      ++pstats.skipped;
      KILN_LOG_DEBUG(kPipelineLog, "skipping disabled pass '", step.name, "'");
      return false;
    }
    if (options_.stop_after >= 0 && executions_ >= options_.stop_after) {
      stopped_ = true;
      return false;
    }
    int64_t execution = ++executions_;
    ++stats_.executions;
    int64_t nodes_before = static_cast<int64_t>(graph.numNodes());
    if (pstats.nodes_in < 0) pstats.nodes_in = nodes_before;
    uint64_t fp_before = options_.check_changed_bit ? GraphFingerprint(graph) : 0;

    std::string ir_before;
    std::string pipeline_rest;
    if (!options_.reproducer_dir.empty()) {
      ir_before = Print(graph);
      pipeline_rest = Remainder();
      if (crash_scope_ != nullptr) {
        crash_scope_->Arm(
            absl::StrCat(options_.reproducer_dir, "/", kReproducerFileName),
            FormatReproducer(absl::StrCat("fatal signal in pass '", step.name, "'"),
                             pipeline_rest, ir_before),
            step.name);
      }
    }
    KILN_LOG_DUMP_GRAPH(step.name, absl::StrCat("graph before ", step.name, ":"), graph);

    auto start = std::chrono::steady_clock::now();
    absl::StatusOr<bool> result = step.pass->Run(graph);
    const auto end = std::chrono::steady_clock::now();
    double seconds = std::chrono::duration<double>(end - start).count();
    if (options_.on_pass_executed) {
      options_.on_pass_executed(step.name, start, end, result.ok() && *result);
    }

    ++pstats.runs;
    pstats.seconds += seconds;
    pstats.nodes_out = static_cast<int64_t>(graph.numNodes());
    pstats.counters.Clear();
    for (Pass* p : instances_[step.name]) pstats.counters.Merge(p->statistics());

    if (!result.ok()) {
      return Fail(result.status(),
                  absl::StrCat("pass '", step.name, "' failed: ", result.status().message()),
                  pipeline_rest, ir_before);
    }
    bool changed = *result;
    if (changed) ++pstats.changed;
    KILN_LOG_DEBUG(kPipelineLog, "#", execution, " ", step.name, ": changed=", changed,
                   ", nodes ", nodes_before, " -> ", graph.numNodes(), ", ",
                   absl::StrFormat("%.3f", seconds * 1e3), " ms");

    if (options_.check_changed_bit) {
      uint64_t fp_after = GraphFingerprint(graph);
      if (!changed && fp_after != fp_before) {
        return Fail(absl::InternalError(""),
                    absl::StrCat("pass '", step.name,
                                 "' returned changed=false but modified the graph "
                                 "(fingerprint check)"),
                    pipeline_rest, ir_before);
      }
      if (changed && fp_after == fp_before && options_.check_reported_change) {
        return Fail(absl::InternalError(""),
                    absl::StrCat("pass '", step.name,
                                 "' returned changed=true but the graph is unchanged "
                                 "(fingerprint check)"),
                    pipeline_rest, ir_before);
      }
    }
    if (!changed) return false;

    if (options_.verifier && options_.verify_each_pass) {
      absl::Status s = options_.verifier(graph);
      if (!s.ok()) {
        return Fail(s,
                    absl::StrCat("pass '", step.name, "' produced an invalid graph: ",
                                 s.message()),
                    pipeline_rest, ir_before);
      }
    }
    KILN_LOG_DUMP_GRAPH(step.name, absl::StrCat("graph after ", step.name, ":"), graph);
    if (!options_.dump_dir.empty()) {
      if (absl::Status s = Dump(execution, step.name, graph); !s.ok()) return s;
    }
    return true;
  }

  // The pipeline from the current step on: at each level the rest of that
  // level's list (for an enclosing fixpoint, the whole group again).
  std::string Remainder() const {
    std::vector<std::string> parts;
    for (size_t level = frames_.size(); level-- > 0;) {
      AppendSteps(*frames_[level].list, frames_[level].index, /*skip_disabled=*/true, &parts);
    }
    return absl::StrJoin(parts, ",");
  }

  std::string Print(const ir::Graph& graph) const {
    return options_.writers.text ? options_.writers.text(graph) : std::string();
  }

  absl::Status Fail(const absl::Status& cause, absl::string_view message,
                    absl::string_view pipeline_rest, absl::string_view ir_before) {
    std::string full(message);
    if (!options_.reproducer_dir.empty()) {
      absl::StatusOr<std::string> path =
          WriteReproducer(options_.reproducer_dir, message, pipeline_rest, ir_before);
      if (path.ok()) {
        absl::StrAppend(&full, " [reproducer: ", *path, "]");
      } else {
        absl::StrAppend(&full, " [could not write the reproducer: ", path.status().message(),
                        "]");
      }
    }
    absl::StatusCode code = cause.ok() ? absl::StatusCode::kInternal : cause.code();
    return absl::Status(code, full);
  }

  absl::Status Dump(int64_t execution, absl::string_view name, const ir::Graph& graph) {
    std::string base = absl::StrFormat("%s/%03d_%s", options_.dump_dir, execution, name);
    if (absl::Status s = WriteFile(base + ".txt", Print(graph)); !s.ok()) return s;
    if (options_.writers.proto) {
      absl::StatusOr<std::string> bytes = options_.writers.proto(graph);
      if (!bytes.ok()) {
        return absl::Status(bytes.status().code(),
                            absl::StrCat("dumping the graph after '", name,
                                         "' as proto: ", bytes.status().message()));
      }
      if (absl::Status s = WriteFile(base + ".pb", *bytes); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

  const PipelineOptions& options_;
  PipelineStatistics& stats_;
  std::map<std::string, std::vector<Pass*>> instances_;
  std::vector<Frame> frames_;
  CrashReproducerScope* crash_scope_ = nullptr;
  int64_t executions_ = 0;
  bool stopped_ = false;
};

}  // namespace

GraphVerifier DefaultGraphVerifier() {
  return [](const ir::Graph& graph) { return ir::Verify(graph); };
}

Pipeline::Pipeline() : stats_(std::make_unique<PipelineStatistics>()) {}
Pipeline::~Pipeline() = default;

absl::StatusOr<std::unique_ptr<Pipeline>> Pipeline::Create(absl::string_view pipeline,
                                                           const PassRegistry& registry,
                                                           PipelineOptions options) {
  absl::StatusOr<std::vector<PipelineStep>> steps = ParsePipeline(pipeline);
  if (!steps.ok()) return steps.status();
  return Create(*steps, registry, std::move(options));
}

absl::StatusOr<std::unique_ptr<Pipeline>> Pipeline::Create(const std::vector<PipelineStep>& steps,
                                                           const PassRegistry& registry,
                                                           PipelineOptions options) {
  if ((!options.dump_dir.empty() || !options.reproducer_dir.empty()) && !options.writers.text) {
    return absl::FailedPreconditionError(
        "dump_dir and reproducer_dir need a text IR writer (PipelineOptions::writers.text); "
        "link //passes:pipeline_io and use DefaultIrWriters()");
  }
  if (options.stop_after < -1) {
    return absl::InvalidArgumentError(
        absl::StrCat("stop_after must be -1 (no limit) or >= 0, got ", options.stop_after));
  }
  std::vector<std::string> disabled;
  for (const std::string& d : options.disabled_passes) {
    absl::StatusOr<std::string> name = registry.CanonicalName(d);
    if (!name.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--disable-pass: ", name.status().message()));
    }
    disabled.push_back(*name);
  }
  std::unique_ptr<Pipeline> p(new Pipeline());
  if (absl::Status s = Instantiate(steps, registry, disabled, 0, &p->steps_); !s.ok()) {
    return s;
  }
  p->options_ = std::move(options);
  return p;
}

absl::StatusOr<bool> Pipeline::Run(ir::Graph& graph) {
  Runner runner(options_, *stats_, steps_);
  return runner.Run(steps_, graph);
}

std::string Pipeline::ToString() const { return StepsToString(steps_, /*skip_disabled=*/false); }

const PipelineStatistics& Pipeline::statistics() const { return *stats_; }

std::string Pipeline::FormatStats() const { return stats_->Format(); }

}  // namespace kiln::passes
