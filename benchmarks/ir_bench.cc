// IR benchmarks: text parse, verify, print, and the binary proto round trip
// on large straight-line graphs (see README.md for how to run them and how
// the figures compare with PyTorch's, BASELINE.md).
//
// Inputs: by default graphs of 1e4, 1e5 and 1e6 nodes from SynthGraphText
// (byte-identical to gen/synth_graph.py's output); --synth_sizes=N,N,...
// changes the sizes, --graph_dir=DIR benchmarks every *.txt file of DIR
// instead. Every benchmark reports time_per_node and nodes_per_s (CPU time).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "benchmarks/bench_inputs.h"
#include "ir/ir.h"
#include "ir/proto/proto_convert.h"
#include "ir/text_parser.h"
#include "ir/text_printer.h"
#include "ir/verifier.h"
#include "support/allocator.h"

namespace kiln::bench {
namespace {

// One input's text, parsed graph and serialised proto. Made on first use and
// dropped when the benchmarks move on to the next input, so at most one
// 1e6-node graph is alive at a time.
struct Prepared {
  size_t index = SIZE_MAX;
  std::string text;
  std::unique_ptr<ir::Graph> graph;
  std::string proto_bytes;
  double num_nodes = 0;
};

// Inputs()[index] with everything built, the previous input released.
Prepared& Prepare(size_t index) {
  static auto* prepared = new Prepared();
  Prepared& input = *prepared;
  if (input.index != index || input.text.empty()) {
    input = Prepared();  // frees the previous input before building this one
    input.index = index;
    const Input& source = Inputs()[index];
    input.text = source.make_text();
    absl::StatusOr<std::unique_ptr<ir::Graph>> graph = ir::ParseGraph(input.text);
    if (!graph.ok()) Die(absl::StrCat("parsing ", source.name), graph.status());
    input.graph = std::move(graph).value();
    input.num_nodes = static_cast<double>(input.graph->numNodes());
    absl::StatusOr<std::string> bytes = ir::SerializeGraph(*input.graph);
    if (!bytes.ok()) Die(absl::StrCat("serialising ", source.name), bytes.status());
    input.proto_bytes = std::move(bytes).value();
  }
  return input;
}

void SetCounters(benchmark::State& state, const Prepared& input) {
  // Per-iteration rates over the benchmark's time (CPU time of this thread:
  // robust on a shared machine; wall time is in the Time column). kInvert
  // turns nodes/s into s/node, which the console shows as e.g. "350.2ns".
  state.counters["time_per_node"] = benchmark::Counter(
      input.num_nodes, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.counters["nodes_per_s"] =
      benchmark::Counter(input.num_nodes, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["nodes"] = input.num_nodes;
}

// Destroying a 1e6-node graph takes a while; it is not what these measure.
void DestroyUntimed(benchmark::State& state, std::unique_ptr<ir::Graph> graph) {
  state.PauseTiming();
  graph.reset();
  state.ResumeTiming();
}

std::unique_ptr<ir::Graph> ParseOrDie(const std::string& text) {
  absl::StatusOr<std::unique_ptr<ir::Graph>> graph = ir::ParseGraph(text);
  if (!graph.ok()) Die("parse", graph.status());
  return std::move(graph).value();
}

void VerifyOrDie(const ir::Graph& graph, bool check_schemas = true) {
  ir::VerifyOptions options;
  options.check_schemas = check_schemas;
  const absl::Status status = ir::Verify(graph, options);
  if (!status.ok()) Die("verify", status);
}

void BM_Parse(benchmark::State& state, size_t index) {
  Prepared& input = Prepare(index);
  for (auto _ : state) {
    std::unique_ptr<ir::Graph> graph = ParseOrDie(input.text);
    benchmark::DoNotOptimize(graph.get());
    DestroyUntimed(state, std::move(graph));
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * input.text.size()));
  SetCounters(state, input);
}

void BM_Verify(benchmark::State& state, size_t index) {
  Prepared& input = Prepare(index);
  for (auto _ : state) VerifyOrDie(*input.graph);
  SetCounters(state, input);
}

// The structural checks alone (no operator schema matching).
void BM_VerifyStructure(benchmark::State& state, size_t index) {
  Prepared& input = Prepare(index);
  for (auto _ : state) VerifyOrDie(*input.graph, /*check_schemas=*/false);
  SetCounters(state, input);
}

void BM_ParseVerify(benchmark::State& state, size_t index) {
  Prepared& input = Prepare(index);
  for (auto _ : state) {
    std::unique_ptr<ir::Graph> graph = ParseOrDie(input.text);
    VerifyOrDie(*graph);
    DestroyUntimed(state, std::move(graph));
  }
  SetCounters(state, input);
}

void BM_PrintText(benchmark::State& state, size_t index) {
  Prepared& input = Prepare(index);
  for (auto _ : state) {
    std::string text;
    ir::PrintGraphTo(*input.graph, &text);
    benchmark::DoNotOptimize(text.data());
  }
  SetCounters(state, input);
}

// ToProto + SerializeToString.
void BM_ProtoSave(benchmark::State& state, size_t index) {
  Prepared& input = Prepare(index);
  for (auto _ : state) {
    absl::StatusOr<std::string> bytes = ir::SerializeGraph(*input.graph);
    if (!bytes.ok()) Die("serialise", bytes.status());
    benchmark::DoNotOptimize(bytes->data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * input.proto_bytes.size()));
  SetCounters(state, input);
}

// ParseFromString + FromProto.
void BM_ProtoLoad(benchmark::State& state, size_t index) {
  Prepared& input = Prepare(index);
  for (auto _ : state) {
    absl::StatusOr<std::unique_ptr<ir::Graph>> graph = ir::DeserializeGraph(input.proto_bytes);
    if (!graph.ok()) Die("deserialise", graph.status());
    DestroyUntimed(state, std::move(graph).value());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * input.proto_bytes.size()));
  SetCounters(state, input);
}

// Save + load: graph -> bytes -> graph.
void BM_ProtoRoundTrip(benchmark::State& state, size_t index) {
  Prepared& input = Prepare(index);
  for (auto _ : state) {
    absl::StatusOr<std::string> bytes = ir::SerializeGraph(*input.graph);
    if (!bytes.ok()) Die("serialise", bytes.status());
    absl::StatusOr<std::unique_ptr<ir::Graph>> graph = ir::DeserializeGraph(*bytes);
    if (!graph.ok()) Die("deserialise", graph.status());
    DestroyUntimed(state, std::move(graph).value());
  }
  SetCounters(state, input);
}

// Text -> graph -> text.
void BM_TextRoundTrip(benchmark::State& state, size_t index) {
  Prepared& input = Prepare(index);
  for (auto _ : state) {
    std::unique_ptr<ir::Graph> graph = ParseOrDie(input.text);
    std::string text;
    ir::PrintGraphTo(*graph, &text);
    benchmark::DoNotOptimize(text.data());
    DestroyUntimed(state, std::move(graph));
  }
  SetCounters(state, input);
}

void RegisterAll() {
  using Fn = void (*)(benchmark::State&, size_t);
  const std::pair<const char*, Fn> kBenchmarks[] = {
      {"Parse", BM_Parse},
      {"Verify", BM_Verify},
      {"VerifyStructure", BM_VerifyStructure},
      {"ParseVerify", BM_ParseVerify},
      {"PrintText", BM_PrintText},
      {"ProtoSave", BM_ProtoSave},
      {"ProtoLoad", BM_ProtoLoad},
      {"ProtoRoundTrip", BM_ProtoRoundTrip},
      {"TextRoundTrip", BM_TextRoundTrip},
  };
  // Input-major order: each input is built once and freed before the next.
  for (size_t i = 0; i < Inputs().size(); ++i) {
    for (const auto& [name, fn] : kBenchmarks) {
      benchmark::RegisterBenchmark(absl::StrCat("BM_", name, "/", Inputs()[i].name).c_str(), fn, i)
          ->Unit(benchmark::kMillisecond);
    }
  }
}

}  // namespace
}  // namespace kiln::bench

int main(int argc, char** argv) {
  kiln::KeepFreedMemoryInProcess();
  kiln::bench::SetProgramName("ir_bench");
  std::vector<char*> benchmark_args;
  kiln::bench::InputFlags input_flags;
  if (!kiln::bench::ParseInputFlags(argc, argv, &input_flags, &benchmark_args)) return 1;
  kiln::bench::AddInputs(input_flags);
  kiln::bench::RegisterAll();

  int benchmark_argc = static_cast<int>(benchmark_args.size());
  benchmark::Initialize(&benchmark_argc, benchmark_args.data());
  if (benchmark::ReportUnrecognizedArguments(benchmark_argc, benchmark_args.data())) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
