// Differential fuzzer: random graphs of pointwise, reduction, view and extern
// ops (testing/random_graph.h), compiled for the CPU and checked against the
// reference interpreter. The fuzzer bytes drive every choice of the
// generator (shapes, dtypes, ops, input values); once they run out a PRNG
// seeded by them takes over, so short inputs still make full graphs.
//
//   ./bazelw run --config=fuzz //testing:compiled_differential_fuzz -- -max_total_time=600
//
// Each input costs a C++ compile (~1 s), so the smoke run (normal build)
// replays the seeds plus a few mutations. A mismatch, a compile failure of a
// graph the interpreter runs, or an interpreter rejection (a generator bug)
// prints the graph and aborts.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "testing/random_graph.h"

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  // Keep the compile cache of throw-away graphs out of the user's cache.
  if (std::getenv("KILN_CACHE_DIR") == nullptr) {
    std::string dir;
    if (const char* tmp = std::getenv("TEST_TMPDIR")) {
      dir = std::string(tmp) + "/kiln_cache";
    } else {
      char templ[] = "/tmp/kiln_fuzz_cache_XXXXXX";
      if (char* made = mkdtemp(templ)) dir = made;
    }
    if (!dir.empty()) setenv("KILN_CACHE_DIR", dir.c_str(), 1);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kiln::testing;
  Entropy entropy = Entropy::FromBytes(data, size);
  GraphOptions options;
  options.num_expressions = 4 + entropy.Below(12);
  const RandomGraph graph = GenerateRandomGraph(entropy, options);
  const std::vector<kiln::Tensor> inputs = MakeRandomInputs(entropy, graph.inputs, graph.special_values);
  const absl::Status status = RunDifferential(graph, inputs);
  if (!status.ok()) {
    std::fprintf(stderr, "compiled_differential_fuzz: %s\n", std::string(status.message()).c_str());
    std::abort();
  }
  return 0;
}
