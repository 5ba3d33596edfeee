// Pass benchmarks: every registered pass alone, the -O2 pipeline, and
// PyTorch's pass order, on large straight-line graphs (see README.md for how
// to run them and how the figures compare with BASELINE.md).
//
// Every iteration runs on a fresh copy of the parsed graph: the input is
// parsed once, and per iteration `graph.copy()` (and later its destruction)
// happens with the timer paused, so only the pass is measured.
//
// Inputs: by default graphs of 1e4, 1e5 and 1e6 nodes from SynthGraphText
// (byte-identical to gen/synth_graph.py's output); --synth_sizes=N,N,...
// changes the sizes, --graph_dir=DIR benchmarks every *.txt file of DIR
// instead. --work_nodes=N sets how many nodes one benchmark processes in all
// (iterations = N / graph size, at least 3); --pipeline_stats prints each
// pipeline's per-pass statistics table (last iteration) to stderr.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "benchmark/benchmark.h"
#include "benchmarks/synth_graph.h"
#include "ir/ir.h"
#include "ir/text_parser.h"
#include "passes/all_passes.h"
#include "passes/pass.h"
#include "passes/pipeline.h"
#include "support/allocator.h"

namespace kiln::bench {
namespace {

struct Input {
  std::string name;
  std::function<std::string()> make_text;

  std::unique_ptr<ir::Graph> graph;  // parsed once; every iteration copies it
  double num_nodes = 0;
};

std::vector<Input>& Inputs() {
  static auto* inputs = new std::vector<Input>();
  return *inputs;
}

double g_work_nodes = 2e6;
bool g_pipeline_stats = false;

[[noreturn]] void Die(absl::string_view what, const absl::Status& status) {
  std::fprintf(stderr, "passes_bench: %.*s: %s\n", static_cast<int>(what.size()), what.data(),
               std::string(status.message()).c_str());
  std::exit(1);
}

// The input with its graph parsed; other inputs released, so at most one
// large graph (plus the copy being optimized) is alive at a time.
Input& Prepare(size_t index) {
  std::vector<Input>& inputs = Inputs();
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (i != index) inputs[i].graph.reset();
  }
  Input& input = inputs[index];
  if (input.graph == nullptr) {
    absl::StatusOr<std::unique_ptr<ir::Graph>> graph = ir::ParseGraph(input.make_text());
    if (!graph.ok()) Die(absl::StrCat("parsing ", input.name), graph.status());
    input.graph = std::move(graph).value();
    input.num_nodes = static_cast<double>(input.graph->numNodes());
  }
  return input;
}

// Runs `optimize` on a fresh copy of the input per iteration, timing only
// `optimize`. Reports time_per_node (CPU time / nodes before, shown as e.g.
// "120ns"), nodes_before and nodes_after.
void RunOnCopies(benchmark::State& state, size_t index,
                 const std::function<void(ir::Graph&)>& optimize) {
  Input& input = Prepare(index);
  size_t nodes_after = 0;
  for (auto _ : state) {
    state.PauseTiming();
    std::unique_ptr<ir::Graph> graph = input.graph->copy();
    state.ResumeTiming();
    optimize(*graph);
    state.PauseTiming();
    nodes_after = graph->numNodes();
    graph.reset();
    state.ResumeTiming();
  }
  state.counters["time_per_node"] = benchmark::Counter(
      input.num_nodes, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.counters["nodes_before"] = input.num_nodes;
  state.counters["nodes_after"] = static_cast<double>(nodes_after);
}

void BM_Pass(benchmark::State& state, std::string pass_name, size_t index) {
  absl::StatusOr<std::unique_ptr<passes::Pass>> pass =
      passes::DefaultPassRegistry().Create(pass_name);
  if (!pass.ok()) Die(pass_name, pass.status());
  RunOnCopies(state, index, [&](ir::Graph& graph) {
    absl::StatusOr<bool> changed = (*pass)->Run(graph);
    if (!changed.ok()) Die(pass_name, changed.status());
    benchmark::DoNotOptimize(*changed);
  });
}

// `verify`: as `kiln opt` runs it (the verifier on the input and after every
// pass that changed the graph); otherwise the passes alone. The changed-bit
// fingerprint check is off (it is off in -c opt builds anyway).
void BM_Pipeline(benchmark::State& state, std::string pipeline_text, bool verify, size_t index) {
  passes::PipelineOptions options;
  options.check_changed_bit = false;
  if (!verify) options.verifier = nullptr;
  std::unique_ptr<passes::Pipeline> last;
  RunOnCopies(state, index, [&](ir::Graph& graph) {
    // A fresh pipeline per iteration so --pipeline_stats shows one run.
    state.PauseTiming();
    absl::StatusOr<std::unique_ptr<passes::Pipeline>> pipeline =
        passes::Pipeline::Create(pipeline_text, passes::DefaultPassRegistry(), options);
    if (!pipeline.ok()) Die(pipeline_text, pipeline.status());
    state.ResumeTiming();
    absl::StatusOr<bool> changed = (*pipeline)->Run(graph);
    if (!changed.ok()) Die(pipeline_text, changed.status());
    state.PauseTiming();
    last = std::move(pipeline).value();
    state.ResumeTiming();
  });
  if (g_pipeline_stats && last != nullptr) {
    std::fprintf(stderr, "%s on %s:\n%s\n", pipeline_text.c_str(), Inputs()[index].name.c_str(),
                 last->FormatStats().c_str());
  }
}

std::string ReadFileOrDie(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream contents;
  contents << in.rdbuf();
  if (!in) Die(path, absl::NotFoundError("cannot read the file"));
  return contents.str();
}

// "1e4"-style names for round sizes, the number otherwise.
std::string SizeName(int64_t n) {
  int exponent = 0;
  int64_t m = n;
  while (m >= 10 && m % 10 == 0) {
    m /= 10;
    ++exponent;
  }
  return m == 1 && exponent > 0 ? absl::StrCat("1e", exponent) : absl::StrCat(n);
}

void AddSyntheticInputs(const std::vector<int64_t>& sizes) {
  for (int64_t n : sizes) {
    Input input;
    input.name = absl::StrCat("synth_", SizeName(n));
    input.make_text = [n] { return SynthGraphText(n, /*seed=*/0); };
    input.num_nodes = static_cast<double>(n);  // estimate until parsed
    Inputs().push_back(std::move(input));
  }
}

void AddFileInputs(const std::string& dir) {
  std::filesystem::path root = dir;
  const char* base = std::getenv("BUILD_WORKING_DIRECTORY");  // set by `bazel run`
  if (root.is_relative() && base != nullptr) root = std::filesystem::path(base) / root;
  std::vector<std::filesystem::path> files;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(root, error)) {
    if (entry.path().extension() == ".txt") files.push_back(entry.path());
  }
  if (error) Die(root.string(), absl::NotFoundError(error.message()));
  if (files.empty()) Die(root.string(), absl::NotFoundError("no *.txt graph files"));
  std::sort(files.begin(), files.end());
  for (const std::filesystem::path& file : files) {
    Input input;
    input.name = file.stem().string();
    const std::string path = file.string();
    input.make_text = [path] { return ReadFileOrDie(path); };
    // Iteration counts are fixed when registering: estimate the node count
    // from the file size (~50 bytes per node in the synthetic text).
    std::error_code size_error;
    const auto bytes = std::filesystem::file_size(file, size_error);
    input.num_nodes = size_error ? 1e5 : std::max(1.0, static_cast<double>(bytes) / 50);
    Inputs().push_back(std::move(input));
  }
}

// PyTorch's `pipeline` in BASELINE.md: each pass once, in this order.
constexpr char kTorchOrder[] =
    "constant_propagation,peephole,common_subexpression_elimination,constant_pooling,"
    "dead_code_elimination";

void RegisterAll() {
  const passes::PassRegistry& registry = passes::DefaultPassRegistry();
  // Input-major order: each input is parsed once and freed before the next.
  for (size_t i = 0; i < Inputs().size(); ++i) {
    const Input& input = Inputs()[i];
    // Enough iterations for a stable figure without copying a 1e6-node graph
    // dozens of times (the copies are untimed but not free).
    const auto iterations = static_cast<benchmark::IterationCount>(
        std::clamp(g_work_nodes / input.num_nodes, 3.0, 1000.0));
    auto add = [&](const std::string& name, auto fn) {
      benchmark::RegisterBenchmark(name.c_str(), fn)
          ->Unit(benchmark::kMillisecond)
          ->Iterations(iterations);
    };
    for (const passes::PassInfo* info : registry.List()) {
      const std::string pass = info->name;
      add(absl::StrCat("BM_Pass/", pass, "/", input.name),
          [pass, i](benchmark::State& state) { BM_Pass(state, pass, i); });
    }
    const std::pair<const char*, std::pair<std::string, bool>> kPipelines[] = {
        {"O2", {"-O2", true}},
        {"O2_noverify", {"-O2", false}},
        {"torch_order", {kTorchOrder, false}},
    };
    for (const auto& [label, spec] : kPipelines) {
      const std::string text = spec.first;
      const bool verify = spec.second;
      add(absl::StrCat("BM_Pipeline/", label, "/", input.name),
          [text, verify, i](benchmark::State& state) { BM_Pipeline(state, text, verify, i); });
    }
  }
}

}  // namespace
}  // namespace kiln::bench

int main(int argc, char** argv) {
  kiln::KeepFreedMemoryInProcess();
  // Our flags first: benchmark::Initialize rejects flags it does not know.
  std::vector<char*> benchmark_args;
  std::string graph_dir;
  std::vector<int64_t> sizes = {10000, 100000, 1000000};
  for (int i = 0; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    if (absl::StartsWith(arg, "--graph_dir=")) {
      graph_dir = std::string(arg.substr(12));
    } else if (absl::StartsWith(arg, "--synth_sizes=") || absl::StartsWith(arg, "--work_nodes=")) {
      const bool is_sizes = absl::StartsWith(arg, "--synth_sizes=");
      if (is_sizes) sizes.clear();
      for (absl::string_view part :
           absl::StrSplit(arg.substr(arg.find('=') + 1), ',', absl::SkipEmpty())) {
        double n = 0;  // accepts "1e5"
        if (!absl::SimpleAtod(part, &n) || n < 1) {
          std::fprintf(stderr, "passes_bench: bad number '%.*s' in %s\n",
                       static_cast<int>(part.size()), part.data(), argv[i]);
          return 1;
        }
        if (is_sizes) {
          sizes.push_back(static_cast<int64_t>(n));
        } else {
          kiln::bench::g_work_nodes = n;
        }
      }
    } else if (arg == "--pipeline_stats") {
      kiln::bench::g_pipeline_stats = true;
    } else {
      benchmark_args.push_back(argv[i]);
    }
  }
  if (graph_dir.empty()) {
    kiln::bench::AddSyntheticInputs(sizes);
  } else {
    kiln::bench::AddFileInputs(graph_dir);
  }
  kiln::bench::RegisterAll();

  int benchmark_argc = static_cast<int>(benchmark_args.size());
  benchmark::Initialize(&benchmark_argc, benchmark_args.data());
  if (benchmark::ReportUnrecognizedArguments(benchmark_argc, benchmark_args.data())) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
