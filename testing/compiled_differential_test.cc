// Seeded differential test of the compiled CPU path against the interpreter:
// each seed makes one random graph of many independent expressions (one C++
// compile covers them all; testing/random_graph.h), runs it on two sets of
// random inputs, and on a mismatch narrows it down to the first failing
// output so the report shows a small graph.
//
// KILN_DIFF_SEEDS=first:count runs other seeds (e.g. for a longer local run);
// KILN_DIFF_GRAPH=file replays a (minimised) IR text file on random inputs.
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "testing/random_graph.h"

namespace kiln::testing {
namespace {

void SetCacheDir() {
  if (std::getenv("KILN_CACHE_DIR") != nullptr) return;
  if (const char* tmp = std::getenv("TEST_TMPDIR")) {
    setenv("KILN_CACHE_DIR", (std::string(tmp) + "/kiln_cache").c_str(), 1);
  }
}

// The first output whose single-output graph still fails, or the whole graph.
std::string Narrow(const RandomGraph& graph, const std::vector<Tensor>& inputs,
                   const absl::Status& whole) {
  for (const RandomGraph& one : SingleOutputGraphs(graph)) {
    absl::Status s = RunDifferential(one, inputs);
    if (!s.ok()) return std::string(s.message());
  }
  return std::string(whole.message());
}

void RunSeed(uint64_t seed) {
  Entropy entropy = Entropy::FromSeed(seed);
  const RandomGraph graph = GenerateRandomGraph(entropy);
  for (int round = 0; round < 2; ++round) {
    const std::vector<Tensor> inputs = MakeRandomInputs(entropy, graph.inputs, graph.special_values);
    const absl::Status s = RunDifferential(graph, inputs);
    if (!s.ok()) {
      ADD_FAILURE() << "seed " << seed << " round " << round << ": " << Narrow(graph, inputs, s);
      return;
    }
  }
}

TEST(CompiledDifferentialTest, RandomGraphsMatchTheInterpreter) {
  SetCacheDir();
  uint64_t first = 1, count = 5;
  if (const char* env = std::getenv("KILN_DIFF_SEEDS")) {
    std::vector<std::string> parts = absl::StrSplit(env, ':');
    if (parts.size() == 2) {
      ASSERT_TRUE(absl::SimpleAtoi(parts[0], &first) && absl::SimpleAtoi(parts[1], &count)) << env;
    }
  }
  for (uint64_t seed = first; seed < first + count; ++seed) RunSeed(seed);
}

void ReplayGraphFile(const std::string& path) {
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << "cannot read " << path;
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<RandomGraph> graph = RandomGraphFromText(text.str());
  ASSERT_TRUE(graph.ok()) << path << ": " << graph.status();
  if (std::getenv("KILN_DIFF_DUMP") != nullptr) {
    absl::StatusOr<std::string> dump = DumpCompilation(text.str());
    std::cout << (dump.ok() ? *dump : dump.status().ToString()) << "\n";
  }
  Entropy entropy = Entropy::FromSeed(7);
  for (int round = 0; round < 3; ++round) {
    absl::Status s = RunDifferential(*graph, MakeRandomInputs(entropy, graph->inputs, true));
    EXPECT_TRUE(s.ok()) << path << ": " << s.message();
  }
}

TEST(CompiledDifferentialTest, ReplayFile) {
  const char* path = std::getenv("KILN_DIFF_GRAPH");
  if (path == nullptr) GTEST_SKIP() << "set KILN_DIFF_GRAPH=file";
  SetCacheDir();
  ReplayGraphFile(path);
}

// Graphs that once broke the compiled path, or cover code the generator does
// not reach (testdata/compiled_regressions).
TEST(CompiledDifferentialTest, Regressions) {
  SetCacheDir();
  const std::string dir = "testing/testdata/compiled_regressions/";
  for (const char* name :
       {"long_kernel_names.txt", "unsigned_division_by_max.txt", "wide_row_reductions.txt",
        // amin over -0/+0 then rsqrt: -inf against inf (compiled_differential_fuzz).
        "amin_negative_zero_rsqrt.txt",
        // logsumexp of rows holding +inf: inf (PyTorch), not NaN (compiled_differential_fuzz).
        "logsumexp_of_infinities.txt",
        // Casts of +-inf, NaN and floats past int64 to integers: undefined in
        // C++, saturating in kiln (compiled_differential_fuzz).
        "float_to_int_out_of_range.txt",
        "onnx_gathers_and_reductions.txt", "onnx_shapes_and_norms.txt",
        "onnx_einsum_and_ranges.txt", "onnx_matmuls.txt",
        // torch 2.x core ATen spellings (_softmax, _to_copy, copy, squeeze.dims,
        // any.dims...) and log_sigmoid through their op rows.
        "core_aten_spellings.txt",
        // Row kernels whose reduction keeps an expensive value for a later
        // member (backends/cpu/kept_values.h): softmax over each dim, of a
        // GEMM's output, log_softmax, layer_norm, a custom exp-sum-divide.
        "kept_row_values.txt",
        // Divisions by a per-row value as multiplications by its reciprocal
        // (backends/cpu/row_reciprocals.h), subnormal and zero divisors included.
        "row_reciprocals.txt"}) {
    ReplayGraphFile(dir + name);
  }
}

// amax/amin/max/min (full and .dim) over zeros of both signs in every order,
// through the scalar, vectorized, blocked and threaded reduction loops, in
// float32 and float64 (the zero-sign flag compares bit patterns of each
// width): -0 orders below +0 on both paths (runtime/kernels_reduce.cc), and
// the reciprocals turn a wrong sign into inf against -inf.
TEST(CompiledDifferentialTest, SignedZeroExtremesAgree) {
  SetCacheDir();
  std::ifstream in("testing/testdata/compiled_regressions/signed_zero_extremes.txt");
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<RandomGraph> graph = RandomGraphFromText(text.str());
  ASSERT_TRUE(graph.ok()) << graph.status();
  // +-0.5 truncate to +-0. Row r: r % 4 == 0 alternates from +, 1 alternates
  // from -, 2 is + but for its last element, 3 is - but for its last.
  auto sign_of = [](int64_t row, int64_t col, int64_t cols) {
    switch (row % 4) {
      case 0: return col % 2 == 0 ? 1.0f : -1.0f;
      case 1: return col % 2 == 0 ? -1.0f : 1.0f;
      case 2: return col + 1 == cols ? -1.0f : 1.0f;
      default: return col + 1 == cols ? 1.0f : -1.0f;
    }
  };
  std::vector<Tensor> inputs;
  for (const InputSpec& spec : graph->inputs) {
    ASSERT_EQ(spec.sizes.size(), 2u);
    ASSERT_TRUE(spec.dtype == DType::kFloat32 || spec.dtype == DType::kFloat64);
    Tensor t = Tensor::Empty(spec.dtype, spec.sizes);
    const int64_t rows = spec.sizes[0], cols = spec.sizes[1];
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        const float v = 0.5f * sign_of(r, c, cols);
        if (spec.dtype == DType::kFloat32) {
          t.data<float>()[r * cols + c] = v;
        } else {
          t.data<double>()[r * cols + c] = v;
        }
      }
    }
    inputs.push_back(t);
  }
  absl::Status s = RunDifferential(*graph, inputs);
  EXPECT_TRUE(s.ok()) << s.message();
}

TEST(CompiledDifferentialTest, GeneratorIsDeterministic) {
  Entropy a = Entropy::FromSeed(42), b = Entropy::FromSeed(42);
  EXPECT_EQ(GenerateRandomGraph(a).text, GenerateRandomGraph(b).text);
  const uint8_t bytes[] = {1, 2, 3, 250, 7};
  Entropy c = Entropy::FromBytes(bytes, sizeof(bytes)), d = Entropy::FromBytes(bytes, sizeof(bytes));
  EXPECT_EQ(GenerateRandomGraph(c).text, GenerateRandomGraph(d).text);
}

}  // namespace
}  // namespace kiln::testing
