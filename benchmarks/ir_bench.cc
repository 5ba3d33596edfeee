// IR benchmarks: text parse, verify, print, and the binary proto round trip
// on large straight-line graphs (see README.md for how to run them and how
// the figures compare with PyTorch's, BASELINE.md).
//
// Inputs: by default graphs of 1e4, 1e5 and 1e6 nodes from SynthGraphText
// (byte-identical to gen/synth_graph.py's output); --synth_sizes=N,N,...
// changes the sizes, --graph_dir=DIR benchmarks every *.txt file of DIR
// instead. Every benchmark reports time_per_node and nodes_per_s (CPU time).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
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
#include "ir/proto/proto_convert.h"
#include "ir/text_parser.h"
#include "ir/text_printer.h"
#include "ir/verifier.h"
#include "support/allocator.h"

namespace kiln::bench {
namespace {

// One benchmark input. Its text, parsed graph and serialised proto are made on
// first use and dropped when the benchmarks move on to the next input, so at
// most one 1e6-node graph is alive at a time.
struct Input {
  std::string name;
  std::function<std::string()> make_text;

  std::string text;
  std::unique_ptr<ir::Graph> graph;
  std::string proto_bytes;
  double num_nodes = 0;

  void Release() {
    text = std::string();
    graph.reset();
    proto_bytes = std::string();
  }
};

std::vector<Input>& Inputs() {
  static auto* inputs = new std::vector<Input>();
  return *inputs;
}

[[noreturn]] void Die(absl::string_view what, const absl::Status& status) {
  std::fprintf(stderr, "ir_bench: %.*s: %s\n", static_cast<int>(what.size()), what.data(),
               std::string(status.message()).c_str());
  std::exit(1);
}

// The input with everything built, other inputs released.
Input& Prepare(size_t index) {
  std::vector<Input>& inputs = Inputs();
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (i != index) inputs[i].Release();
  }
  Input& input = inputs[index];
  if (input.text.empty()) {
    input.text = input.make_text();
    absl::StatusOr<std::unique_ptr<ir::Graph>> graph = ir::ParseGraph(input.text);
    if (!graph.ok()) Die(absl::StrCat("parsing ", input.name), graph.status());
    input.graph = std::move(graph).value();
    input.num_nodes = static_cast<double>(input.graph->numNodes());
    absl::StatusOr<std::string> bytes = ir::SerializeGraph(*input.graph);
    if (!bytes.ok()) Die(absl::StrCat("serialising ", input.name), bytes.status());
    input.proto_bytes = std::move(bytes).value();
  }
  return input;
}

void SetCounters(benchmark::State& state, const Input& input) {
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
  Input& input = Prepare(index);
  for (auto _ : state) {
    std::unique_ptr<ir::Graph> graph = ParseOrDie(input.text);
    benchmark::DoNotOptimize(graph.get());
    DestroyUntimed(state, std::move(graph));
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * input.text.size()));
  SetCounters(state, input);
}

void BM_Verify(benchmark::State& state, size_t index) {
  Input& input = Prepare(index);
  for (auto _ : state) VerifyOrDie(*input.graph);
  SetCounters(state, input);
}

// The structural checks alone (no operator schema matching).
void BM_VerifyStructure(benchmark::State& state, size_t index) {
  Input& input = Prepare(index);
  for (auto _ : state) VerifyOrDie(*input.graph, /*check_schemas=*/false);
  SetCounters(state, input);
}

void BM_ParseVerify(benchmark::State& state, size_t index) {
  Input& input = Prepare(index);
  for (auto _ : state) {
    std::unique_ptr<ir::Graph> graph = ParseOrDie(input.text);
    VerifyOrDie(*graph);
    DestroyUntimed(state, std::move(graph));
  }
  SetCounters(state, input);
}

void BM_PrintText(benchmark::State& state, size_t index) {
  Input& input = Prepare(index);
  for (auto _ : state) {
    std::string text;
    ir::PrintGraphTo(*input.graph, &text);
    benchmark::DoNotOptimize(text.data());
  }
  SetCounters(state, input);
}

// ToProto + SerializeToString.
void BM_ProtoSave(benchmark::State& state, size_t index) {
  Input& input = Prepare(index);
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
  Input& input = Prepare(index);
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
  Input& input = Prepare(index);
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
  Input& input = Prepare(index);
  for (auto _ : state) {
    std::unique_ptr<ir::Graph> graph = ParseOrDie(input.text);
    std::string text;
    ir::PrintGraphTo(*graph, &text);
    benchmark::DoNotOptimize(text.data());
    DestroyUntimed(state, std::move(graph));
  }
  SetCounters(state, input);
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
    Inputs().push_back(
        {absl::StrCat("synth_", SizeName(n)), [n] { return SynthGraphText(n, /*seed=*/0); }});
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
    std::string path = file.string();
    Inputs().push_back({file.stem().string(), [path] { return ReadFileOrDie(path); }});
  }
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
  // Our flags first: benchmark::Initialize rejects flags it does not know.
  std::vector<char*> benchmark_args;
  std::string graph_dir;
  std::vector<int64_t> sizes = {10000, 100000, 1000000};
  for (int i = 0; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    if (absl::StartsWith(arg, "--graph_dir=")) {
      graph_dir = std::string(arg.substr(12));
    } else if (absl::StartsWith(arg, "--synth_sizes=")) {
      sizes.clear();
      for (absl::string_view part : absl::StrSplit(arg.substr(14), ',', absl::SkipEmpty())) {
        double n = 0;  // accepts "1e5"
        if (!absl::SimpleAtod(part, &n) || n < 1) {
          std::fprintf(stderr, "ir_bench: bad --synth_sizes entry '%.*s'\n",
                       static_cast<int>(part.size()), part.data());
          return 1;
        }
        sizes.push_back(static_cast<int64_t>(n));
      }
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
