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
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "benchmark/benchmark.h"
#include "benchmarks/bench_inputs.h"
#include "ir/ir.h"
#include "ir/text_parser.h"
#include "passes/all_passes.h"
#include "passes/pass.h"
#include "passes/pipeline.h"
#include "support/allocator.h"

namespace kiln::bench {
namespace {

// One input's parsed graph: parsed once, every iteration copies it.
struct Prepared {
  size_t index = SIZE_MAX;
  std::unique_ptr<ir::Graph> graph;
  double num_nodes = 0;
};

double g_work_nodes = 2e6;
bool g_pipeline_stats = false;

// Inputs()[index] with its graph parsed; the previous input released, so at
// most one large graph (plus the copy being optimized) is alive at a time.
Prepared& Prepare(size_t index) {
  static auto* prepared = new Prepared();
  Prepared& input = *prepared;
  if (input.index != index || input.graph == nullptr) {
    input = Prepared();  // frees the previous graph before parsing this one
    input.index = index;
    const Input& source = Inputs()[index];
    absl::StatusOr<std::unique_ptr<ir::Graph>> graph = ir::ParseGraph(source.make_text());
    if (!graph.ok()) Die(absl::StrCat("parsing ", source.name), graph.status());
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
  Prepared& input = Prepare(index);
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
        std::clamp(g_work_nodes / input.estimated_nodes, 3.0, 1000.0));
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
  kiln::bench::SetProgramName("passes_bench");
  // Our flags first: benchmark::Initialize rejects flags it does not know.
  std::vector<char*> other_args;
  for (int i = 0; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    if (absl::StartsWith(arg, "--work_nodes=")) {
      std::vector<double> work_nodes;
      if (!kiln::bench::ParseNumberList(arg.substr(13), argv[i], &work_nodes)) return 1;
      if (!work_nodes.empty()) kiln::bench::g_work_nodes = work_nodes.back();
    } else if (arg == "--pipeline_stats") {
      kiln::bench::g_pipeline_stats = true;
    } else {
      other_args.push_back(argv[i]);
    }
  }
  std::vector<char*> benchmark_args;
  kiln::bench::InputFlags input_flags;
  if (!kiln::bench::ParseInputFlags(static_cast<int>(other_args.size()), other_args.data(),
                                    &input_flags, &benchmark_args)) {
    return 1;
  }
  kiln::bench::AddInputs(input_flags);
  kiln::bench::RegisterAll();

  int benchmark_argc = static_cast<int>(benchmark_args.size());
  benchmark::Initialize(&benchmark_argc, benchmark_args.data());
  if (benchmark::ReportUnrecognizedArguments(benchmark_argc, benchmark_args.data())) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
