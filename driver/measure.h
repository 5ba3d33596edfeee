// Timing a compiled program the way `kiln run` reports it, on any device:
// the inputs placed on the device once (wrapper::ProgramSession), warm-up
// calls, timed calls measured by the device (CUDA events on a GPU), an
// optional per-step profile, and the last call's outputs fetched at the end.
//
//   driver::MeasureOptions o{.warmup = 2, .iterations = 20, .profile_iterations = 5};
//   ASSIGN_OR_RETURN(driver::Measurement m, driver::MeasureProgram(*compiled, inputs, o));
//   std::puts(driver::FormatProfile(m.profile, o.profile_iterations).c_str());
#ifndef KILN_DRIVER_MEASURE_H_
#define KILN_DRIVER_MEASURE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "support/tensor.h"
#include "wrapper/codegen.h"
#include "wrapper/program_session.h"

namespace kiln::driver {

struct MeasureOptions {
  int warmup = 0;  // untimed calls, the first call (always made) among them
  int iterations = 1;  // at least one call is timed
  // > 0: per-step times over that many extra calls (devices that can).
  int profile_iterations = 0;
};

struct Measurement {
  std::vector<double> ms;  // each timed call, in order
  double median_ms = 0, min_ms = 0, max_ms = 0;
  std::string timer;        // what measured them ("CUDA events", "host clock")
  double session_ms = 0;    // placing the inputs on the device (host clock)
  // The first call until its outputs are on the host (host clock): with
  // what a program does once (runtime kernels compiled on first use,
  // algorithm searches), which no timed call includes.
  double first_call_ms = 0;
  std::vector<Tensor> outputs;  // the last call's
  std::vector<wrapper::StepProfile> profile;
  std::string profile_error;    // why there is no profile, when one was asked for
  std::vector<std::string> notes;  // the session's (e.g. CUDA graph replay)
};

absl::StatusOr<Measurement> MeasureProgram(wrapper::CompiledProgram& program, std::vector<Tensor> inputs,
                                           const MeasureOptions& options);

// A table of `steps` (profiled over `calls` calls), one row per distinct
// step name and kind, largest total first: ms per call, share of the
// profiled time, launches per call. At most `max_rows` rows; the rest are
// summed in one line.
std::string FormatProfile(const std::vector<wrapper::StepProfile>& steps, int calls, int max_rows = 40);

// Largest absolute difference and relative L2 error (||got - want|| /
// ||want||, the worst output) of outputs; NaN where exactly one side is NaN
// counts as an infinite difference. Floating outputs of different dtypes
// compare by value (a bf16 run against its float32 reference);
// InvalidArgument when shapes differ or a float meets a non-float.
struct OutputError {
  double max_abs = 0;
  double rel_l2 = 0;
};
absl::StatusOr<OutputError> CompareOutputs(const std::vector<Tensor>& got, const std::vector<Tensor>& want);

}  // namespace kiln::driver

#endif  // KILN_DRIVER_MEASURE_H_
