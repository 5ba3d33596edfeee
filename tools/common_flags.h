// Flags shared by several subcommands (each command lists the ones it reads
// in its Command::flags).
#ifndef KILN_TOOLS_COMMON_FLAGS_H_
#define KILN_TOOLS_COMMON_FLAGS_H_

#include <string>

#include "absl/flags/declare.h"
#include "absl/status/statusor.h"
#include "testing/output_compare.h"

// Input graph format: text, pb or pbtxt; empty = by file extension.
ABSL_DECLARE_FLAG(std::string, format);
// Output file ("-" or empty = stdout where the command allows it).
ABSL_DECLARE_FLAG(std::string, o);
// Print results as one JSON document on stdout (tools/json_output.h).
ABSL_DECLARE_FLAG(bool, json);
// Where to write the IR as a command goes (opt: after every pass; compile:
// after every stage).
ABSL_DECLARE_FLAG(std::string, dump_dir);
// The device to compile for (compile, conformance).
ABSL_DECLARE_FLAG(std::string, device);
// Compiled precision (run, compile): bf16, fp16, tf32, fp32; empty = the model's.
ABSL_DECLARE_FLAG(std::string, precision);
// Tolerances of output comparisons (run, conformance).
ABSL_DECLARE_FLAG(double, rtol);
ABSL_DECLARE_FLAG(std::string, atol);  // empty: the command's default

namespace kiln::tools {

// The commands' defaults for --atol: conformance keeps ONNX's backend-test
// runner's, run takes torch.testing's float32 one (a compiled program sums
// in another order than the interpreter: llama's tiny logits differed by
// 3e-7 at 1e-7).
inline constexpr double kConformanceAtol = 1e-7;
inline constexpr double kRunAtol = 1e-5;

// --rtol and --atol (`default_atol` when --atol is not given);
// InvalidArgument unless both are non-negative numbers.
absl::StatusOr<testing::Tolerance> ToleranceFromFlags(double default_atol);

}  // namespace kiln::tools

#endif  // KILN_TOOLS_COMMON_FLAGS_H_
