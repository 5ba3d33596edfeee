// Backend-test conformance: runs every test under a root
// (`<test>/model.onnx`, or each torch.export archive `<test>/<name>.pt2`,
// with `<test>/test_data_set_N/{input,output}_K.pb`) through import -> -O2
// passes -> a backend, and compares each output with ONNX's own tolerance
// by default (|actual - expected| <= atol + rtol * |expected|, rtol 1e-3,
// atol 1e-7; NaN matches NaN; dtype and shape must match). A .pt2 test
// checks its inputs against the program's symbolic sizes and ranges; a
// program with symbolic sizes is compiled at its first data set's shapes.
//
// Tests whose outputs are random (Bernoulli, Dropout in training mode with a
// non-zero ratio, Random*) cannot match bit for bit: for them only shapes,
// dtypes and value ranges are checked, and they are counted separately.
#ifndef KILN_TESTING_ONNX_CONFORMANCE_H_
#define KILN_TESTING_ONNX_CONFORMANCE_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/ivalue.h"
#include "onnx/onnx_pb.h"

namespace kiln::testing {

struct ConformanceOptions {
  std::string root;
  // RE2 regex matched (partially) against test directory names; "" = all.
  std::string filter;
  // "interpreter", or "compiled" (lowering, fusion, Wrapper IR, the CPU
  // backend's generated C++).
  std::string backend = "interpreter";
  // The compiled backend's device: a registered codegen ("cpu"; "cuda" where
  // the binary registered it, e.g. `kiln conformance --device=cuda`).
  std::string device = "cpu";
  // Pass pipeline (preset or pipeline string) run before execution.
  std::string pipeline = "-O2";
  double rtol = 1e-3;
  double atol = 1e-7;
  // Told before each test runs (index, count, directory name): progress.
  std::function<void(int index, int total, const std::string& name)> on_test_start;
};

struct ConformanceResult {
  std::string name;
  bool passed = false;
  bool random = false;  // checked by shape/dtype/range only
  std::string reason;   // why it failed (empty when passed)
  double seconds = 0;
  // Compiled backend: graph nodes run by interpreter islands (0: all
  // compiled), and whether the whole graph was one island.
  int island_nodes = 0;
  int islands = 0;
  bool whole_graph_island = false;
  // Compiled backend: extern calls of reference kernels (not libraries), and
  // the ops that ran in islands or as such externs ("aten::foo (island 2)"),
  // over every version the test compiled.
  int reference_externs = 0;
  std::vector<std::string> not_compiled_ops;
};

struct ConformanceSummary {
  std::vector<ConformanceResult> results;
  int passed = 0;  // including random ones that passed their checks
  int failed = 0;
  int random_passed = 0;
  int random_failed = 0;
  // Compiled backend: passing tests that used interpreter islands (of them,
  // whole-graph islands).
  int passed_with_islands = 0;
  int passed_whole_graph_island = 0;
  // "N passed, M failed" (+ the random counts when any).
  std::string Line() const;
  // One line per test: "PASS name (0.01 s)" / "FAIL name: reason".
  std::string Report() const;
};

// Reads a backend-test data file (input_K.pb / output_K.pb) as the value kind
// `type` says: a tensor (also when `type` is null), a sequence (list) or an
// optional (None or the value).
absl::StatusOr<ir::IValue> ReadTestValue(const std::string& path, const onnx::TypeProto* type);

// Runs one test: a directory with model.onnx, or a .pt2 file.
ConformanceResult RunConformanceTest(const std::string& dir, const ConformanceOptions& options);
// Runs every matching test directory under options.root, sorted by name.
absl::StatusOr<ConformanceSummary> RunConformance(const ConformanceOptions& options);

}  // namespace kiln::testing

#endif  // KILN_TESTING_ONNX_CONFORMANCE_H_
