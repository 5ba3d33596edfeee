// The graphs a benchmark binary runs on, shared by ir_bench and passes_bench:
// by default synthetic graphs of 1e4, 1e5 and 1e6 nodes (SynthGraphText,
// byte-identical to gen/synth_graph.py's output); --synth_sizes=N,N,...
// changes the sizes, --graph_dir=DIR takes every *.txt file of DIR instead.
#ifndef KILN_BENCHMARKS_BENCH_INPUTS_H_
#define KILN_BENCHMARKS_BENCH_INPUTS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace kiln::bench {

// One benchmark input, described but not built: the text is made on demand
// so that a binary can keep at most one large graph alive at a time.
struct Input {
  std::string name;  // the benchmark name's last part, e.g. "synth_1e4"
  std::function<std::string()> make_text;
  // Known before anything is parsed (benchmarks fixing iteration counts at
  // registration need it): the size for synthetic graphs, an estimate from
  // the file size for files.
  double estimated_nodes = 0;
};

// Every input, in registration order.
std::vector<Input>& Inputs();

// Names the binary in error messages ("ir_bench: ...").
void SetProgramName(absl::string_view name);

// Prints "<program>: <what>: <message>" to stderr and exits with status 1.
[[noreturn]] void Die(absl::string_view what, const absl::Status& status);

std::string ReadFileOrDie(const std::string& path);

// "1e4"-style names for round sizes, the number otherwise.
std::string SizeName(int64_t n);

void AddSyntheticInputs(const std::vector<int64_t>& sizes);

// Every *.txt file of `dir`, sorted; a relative `dir` is taken from where
// `bazel run` was started. Dies if there is none.
void AddFileInputs(const std::string& dir);

struct InputFlags {
  std::string graph_dir;  // empty: synthetic inputs
  std::vector<int64_t> synth_sizes = {10000, 100000, 1000000};
};

// Takes --graph_dir= and --synth_sizes= out of argv[0..argc) into `flags`
// and appends every other argument to `rest` (benchmark::Initialize rejects
// flags it does not know). Prints a message and returns false on a bad size.
bool ParseInputFlags(int argc, char** argv, InputFlags* flags, std::vector<char*>* rest);

// Parses "1e5"-style numbers (at least 1). Prints "<program>: bad number
// '<part>' in <arg>" and returns false on a bad one.
bool ParseNumberList(absl::string_view list, const char* arg, std::vector<double>* numbers);

// AddFileInputs(flags.graph_dir) if set, AddSyntheticInputs otherwise.
void AddInputs(const InputFlags& flags);

}  // namespace kiln::bench

#endif  // KILN_BENCHMARKS_BENCH_INPUTS_H_
