// A conformance suite as a test: runs the ONNX backend tests under --root
// and fails when fewer pass than the checked-in floor (--floor FILE holds
// one integer). The floor only rises: when more pass, the test says so.
// The per-test report goes to $TEST_UNDECLARED_OUTPUTS_DIR/<suite>.txt.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "testing/onnx_conformance.h"

namespace {

bool FlagValue(const std::string& arg, const char* name, std::string* out) {
  const std::string prefix = absl::StrCat("--", name, "=");
  if (arg.rfind(prefix, 0) != 0) return false;
  *out = arg.substr(prefix.size());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  kiln::testing::ConformanceOptions options;
  std::string floor_file, suite = "suite";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (FlagValue(arg, "root", &options.root) || FlagValue(arg, "filter", &options.filter) ||
        FlagValue(arg, "floor", &floor_file) || FlagValue(arg, "suite", &suite)) {
      continue;
    }
    std::fprintf(stderr, "unknown argument %s\n", arg.c_str());
    return 2;
  }
  std::ifstream in(floor_file);
  std::stringstream buf;
  buf << in.rdbuf();
  int floor = 0;
  if (!in || !absl::SimpleAtoi(absl::StripAsciiWhitespace(buf.str()), &floor)) {
    std::fprintf(stderr, "cannot read an integer floor from %s\n", floor_file.c_str());
    return 2;
  }
  absl::StatusOr<kiln::testing::ConformanceSummary> summary = kiln::testing::RunConformance(options);
  if (!summary.ok()) {
    std::fprintf(stderr, "%s\n", std::string(summary.status().message()).c_str());
    return 1;
  }
  const std::string report = summary->Report();
  if (const char* dir = std::getenv("TEST_UNDECLARED_OUTPUTS_DIR")) {
    std::ofstream(absl::StrCat(dir, "/", suite, ".txt")) << report;
  }
  std::fputs(report.c_str(), stdout);
  std::printf("%s: %s (floor %d)\n", suite.c_str(), summary->Line().c_str(), floor);
  if (summary->passed < floor) {
    std::printf("FAILED: %d passed is below the floor of %d\n", summary->passed, floor);
    return 1;
  }
  if (summary->passed > floor) {
    std::printf("note: %d passed; raise %s to %d\n", summary->passed, floor_file.c_str(),
                summary->passed);
  }
  return 0;
}
