// A conformance suite as a test: runs the ONNX backend tests under --root
// and fails when fewer pass than the checked-in floor (--floor FILE holds
// one integer: the pass count; for the compiled backend a second one: the
// tests that passed with no interpreter island, so that islands cannot
// quietly take over what used to compile). Floors only rise: when more pass,
// the test says so.
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
        FlagValue(arg, "floor", &floor_file) || FlagValue(arg, "suite", &suite) ||
        FlagValue(arg, "backend", &options.backend)) {
      continue;
    }
    std::string tolerance;
    if (FlagValue(arg, "atol", &tolerance) || FlagValue(arg, "rtol", &tolerance)) {
      double* field = arg.rfind("--atol", 0) == 0 ? &options.atol : &options.rtol;
      if (!absl::SimpleAtod(tolerance, field) || !(*field >= 0)) {
        std::fprintf(stderr, "bad tolerance %s\n", arg.c_str());
        return 2;
      }
      continue;
    }
    std::fprintf(stderr, "unknown argument %s\n", arg.c_str());
    return 2;
  }
  std::ifstream in(floor_file);
  std::stringstream buf;
  buf << in.rdbuf();
  int floor = 0;
  int compiled_floor = -1;
  {
    std::istringstream fields(buf.str());
    std::string a, b;
    fields >> a >> b;
    if (!in || !absl::SimpleAtoi(a, &floor) || (!b.empty() && !absl::SimpleAtoi(b, &compiled_floor))) {
      std::fprintf(stderr, "cannot read the floor(s) from %s\n", floor_file.c_str());
      return 2;
    }
  }
  // Compiled programs go to a cache inside the test's sandbox.
  if (const char* tmp = std::getenv("TEST_TMPDIR")) setenv("KILN_CACHE_DIR", tmp, /*overwrite=*/0);
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
  const int fully_compiled = summary->passed - summary->passed_with_islands;
  if (compiled_floor >= 0 && fully_compiled < compiled_floor) {
    std::printf("FAILED: %d passed without interpreter islands, below the floor of %d\n",
                fully_compiled, compiled_floor);
    return 1;
  }
  if (summary->passed > floor || (compiled_floor >= 0 && fully_compiled > compiled_floor)) {
    const std::string second = compiled_floor >= 0 ? absl::StrCat(" ", fully_compiled) : "";
    std::printf("note: raise %s to \"%d%s\"\n", floor_file.c_str(), summary->passed,
                second.c_str());
  }
  return 0;
}
