#include "tools/common_flags.h"

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

ABSL_FLAG(std::string, format, "",
          "Input graph format: text, pb or pbtxt. Empty: from the file extension "
          "(.txt, .pb, .pbtxt)");
ABSL_FLAG(std::string, o, "", "Output file; '-' or empty writes to stdout");
ABSL_FLAG(bool, json, false,
          "Print the results as one JSON document on stdout (described by "
          "docs/cli_json.schema.json)");
ABSL_FLAG(std::string, dump_dir, "",
          "Write the IR as it goes: opt after every pass that changed it (NNN_<pass>.txt and "
          ".pb), compile after every stage (1_graph.txt ... 5_program.cpp)");
ABSL_FLAG(std::string, device, "cpu",
          "Device to compile for and run on: cpu, cuda or cuda:N (cuda on a machine with an "
          "NVIDIA GPU and its driver)");
ABSL_FLAG(std::string, precision, "",
          "Compiled backend: bf16 or fp16 (the float32 model cast as torch.autocast does; weights "
          "converted once), tf32 (TF32 matmuls) or fp32; run's check against the float32 "
          "interpreter then reports its error instead of failing");
// An element matches when |actual - expected| <= atol + rtol * |expected|
// (ONNX's backend-test runner's rule). atol's default is the command's:
// empty here, so that help shows the flag's text.
ABSL_FLAG(double, rtol, 1e-3, "Relative tolerance of output comparisons");
ABSL_FLAG(std::string, atol, "",
          "Absolute tolerance of output comparisons (default: run 1e-5, torch.testing's float32 "
          "tolerance, since compiled code sums in another order than the interpreter; conformance "
          "1e-7, ONNX's backend-test runner's)");

namespace kiln::tools {

absl::StatusOr<testing::Tolerance> ToleranceFromFlags(double default_atol) {
  testing::Tolerance tolerance{absl::GetFlag(FLAGS_rtol), default_atol};
  const std::string atol = absl::GetFlag(FLAGS_atol);
  if (!atol.empty() && !absl::SimpleAtod(atol, &tolerance.atol)) {
    return absl::InvalidArgumentError(absl::StrCat("--atol '", atol, "' is not a number"));
  }
  // Written so that NaN is refused too.
  if (!(tolerance.rtol >= 0) || !(tolerance.atol >= 0)) {
    return absl::InvalidArgumentError("--rtol and --atol must be non-negative numbers");
  }
  return tolerance;
}

}  // namespace kiln::tools
