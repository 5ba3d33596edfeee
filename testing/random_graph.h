// Random but valid kiln graphs for differential testing of the compiled CPU
// path against the reference interpreter (compiled_differential_fuzz.cc,
// compiled_differential_test.cc).
//
// A graph holds several independent random expressions over a few inputs of
// broadcast-compatible shapes (one C++ compile covers all of them): chains
// and DAGs of pointwise unary/binary ops (tensor and scalar operands, mixed
// float32/float64/int64/bool), reductions, softmax/log_softmax, views,
// where/clamp, casts, and the extern ops mm and cat. The generator tracks
// shapes, dtypes (runtime::ResultType) and whether a float value is computed
// exactly the same way by both backends ("exact": inputs, views, max/min,
// casts); ops whose result jumps on a tiny change of a float input
// (comparisons, floor, float->int casts, argmax, division by a computed
// value) only take exact operands, so that contraction into FMA and vector
// math do not make false mismatches.
#ifndef KILN_TESTING_RANDOM_GRAPH_H_
#define KILN_TESTING_RANDOM_GRAPH_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "support/dtype.h"
#include "support/tensor.h"

namespace kiln::testing {

// Where the generator's choices come from: a seed, or fuzzer bytes (then a
// PRNG seeded by the bytes once they run out).
class Entropy {
 public:
  static Entropy FromSeed(uint64_t seed);
  static Entropy FromBytes(const uint8_t* data, size_t size);

  // Uniform-ish in [0, n); n > 0.
  int Below(int n);
  bool Percent(int p) { return Below(100) < p; }
  double Uniform(double lo, double hi);

 private:
  uint64_t NextWord();
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  size_t pos_ = 0;
  uint64_t state_ = 0;
};

struct GraphOptions {
  int num_expressions = 30;
  int max_depth = 5;
  int max_inputs = 4;
  // Allow an occasional large base shape (parallel / vectorized loops).
  bool allow_large = true;
};

struct InputSpec {
  DType dtype = DType::kFloat32;
  std::vector<int64_t> sizes;
};

struct RandomGraph {
  std::string text;  // TorchScript IR text
  std::vector<InputSpec> inputs;
  // Per output: computed through float32 somewhere, so compared at float32
  // tolerance even when it is float64 (missing entries: true).
  std::vector<bool> f32_tolerance;
  // Whether inputs may hold NaN and signed zeros (the generator then avoids
  // float->int casts, undefined for NaN).
  bool special_values = false;
};

RandomGraph GenerateRandomGraph(Entropy& entropy, const GraphOptions& options = {});

// A hand-written (e.g. minimised) graph; inputs take their types from the
// graph's input annotations (`%x : Float(2, 3)`).
absl::StatusOr<RandomGraph> RandomGraphFromText(const std::string& text);

// The graph once per output, returning only that output (a first step of
// minimising a mismatch: the other expressions become dead code).
std::vector<RandomGraph> SingleOutputGraphs(const RandomGraph& graph);

// Random input values (floats in [-2, 2], with special_values occasional
// 0/-0/nan (no infinities: see testing/README.md), ints
// in [-5, 5], bools); some are non-contiguous views.
std::vector<Tensor> MakeRandomInputs(Entropy& entropy, const std::vector<InputSpec>& specs,
                                     bool special_values);

struct DiffOptions {
  // Extra detail (the graph text) goes into error messages.
  bool include_graph_in_errors = true;
};

// Parses `graph.text` twice, runs one copy on the interpreter and compiles the
// other (CompileGraph, CPU), runs both on `inputs` and compares every output:
// same dtype and shape; floats allclose (float32: rtol 1e-4, atol 1e-5 scaled
// by the output's largest magnitude; float64 tighter), NaN equals NaN; ints
// and bools exactly. FailedPrecondition when the interpreter itself rejects
// the graph (a generator bug), Internal for a compile failure or a mismatch.
absl::Status RunDifferential(const RandomGraph& graph, const std::vector<Tensor>& inputs,
                             const DiffOptions& options = {});

// The loop graph and Wrapper IR lines (with kernel sources) of `text`, for
// diagnosing a mismatch; no C++ compile.
absl::StatusOr<std::string> DumpCompilation(const std::string& text);

// Registers the reference kernels and the CPU backend (once).
absl::Status EnsureBackends();

}  // namespace kiln::testing

#endif  // KILN_TESTING_RANDOM_GRAPH_H_
