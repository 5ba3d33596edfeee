// Pipeline strings: the textual, data form of a pass pipeline.
//
//   pipeline := "" | item ("," item)*     or a preset: -O0, -O1, -O2
//   item     := pass_name
//             | "fixpoint" ["<" N ">"] "(" item ("," item)* ")"
//
// `fixpoint(...)` runs its body until no pass in it changes the graph, at
// most N times (default kDefaultFixedPointIterations). Groups may nest (up to
// kMaxPipelineNesting deep). Whitespace between tokens is ignored. Pass
// names may be aliases; they are resolved against a registry only when a
// Pipeline is built, so a spec can name passes that are not linked in.
#ifndef KILN_PASSES_PIPELINE_SPEC_H_
#define KILN_PASSES_PIPELINE_SPEC_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kiln::passes {

constexpr int kMaxPipelineNesting = 8;

struct PipelineStep {
  enum class Kind { kPass, kFixpoint };
  Kind kind = Kind::kPass;
  std::string pass;                    // kPass: the name as written
  int max_iterations = 0;              // kFixpoint: the cap
  std::vector<PipelineStep> body;      // kFixpoint: the group

  static PipelineStep Pass(std::string name);
  static PipelineStep Fixpoint(std::vector<PipelineStep> body, int max_iterations);
};

// Parses a pipeline string or expands a preset. Errors are InvalidArgument
// and quote the string with a 1-based column: "pipeline 'dce,,cse': column
// 5: expected a pass name or fixpoint(...), got ','".
absl::StatusOr<std::vector<PipelineStep>> ParsePipeline(absl::string_view text);

// Canonical text: "a,fixpoint(b,c),fixpoint<3>(d)". Parsing it gives the
// same steps.
std::string PipelineToString(const std::vector<PipelineStep>& steps);

// The pipeline string of a preset ("-O0", "-O1", "-O2"); NotFound listing
// the presets otherwise.
absl::StatusOr<std::string> PresetPipeline(absl::string_view preset);
std::vector<std::string> PresetNames();

}  // namespace kiln::passes

#endif  // KILN_PASSES_PIPELINE_SPEC_H_
