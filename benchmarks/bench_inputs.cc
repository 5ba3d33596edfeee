#include "benchmarks/bench_inputs.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "benchmarks/synth_graph.h"

namespace kiln::bench {
namespace {

std::string& ProgramName() {
  static auto* name = new std::string("bench");
  return *name;
}

}  // namespace

std::vector<Input>& Inputs() {
  static auto* inputs = new std::vector<Input>();
  return *inputs;
}

void SetProgramName(absl::string_view name) { ProgramName() = std::string(name); }

void Die(absl::string_view what, const absl::Status& status) {
  std::fprintf(stderr, "%s: %.*s: %s\n", ProgramName().c_str(), static_cast<int>(what.size()),
               what.data(), std::string(status.message()).c_str());
  std::exit(1);
}

std::string ReadFileOrDie(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream contents;
  contents << in.rdbuf();
  if (!in) Die(path, absl::NotFoundError("cannot read the file"));
  return contents.str();
}

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
    input.estimated_nodes = static_cast<double>(n);
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
    // ~50 bytes per node in the synthetic text.
    std::error_code size_error;
    const auto bytes = std::filesystem::file_size(file, size_error);
    input.estimated_nodes = size_error ? 1e5 : std::max(1.0, static_cast<double>(bytes) / 50);
    Inputs().push_back(std::move(input));
  }
}

bool ParseNumberList(absl::string_view list, const char* arg, std::vector<double>* numbers) {
  for (absl::string_view part : absl::StrSplit(list, ',', absl::SkipEmpty())) {
    double n = 0;  // accepts "1e5"
    if (!absl::SimpleAtod(part, &n) || n < 1) {
      std::fprintf(stderr, "%s: bad number '%.*s' in %s\n", ProgramName().c_str(),
                   static_cast<int>(part.size()), part.data(), arg);
      return false;
    }
    numbers->push_back(n);
  }
  return true;
}

bool ParseInputFlags(int argc, char** argv, InputFlags* flags, std::vector<char*>* rest) {
  for (int i = 0; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    if (absl::StartsWith(arg, "--graph_dir=")) {
      flags->graph_dir = std::string(arg.substr(arg.find('=') + 1));
    } else if (absl::StartsWith(arg, "--synth_sizes=")) {
      std::vector<double> sizes;
      if (!ParseNumberList(arg.substr(arg.find('=') + 1), argv[i], &sizes)) return false;
      flags->synth_sizes.clear();
      for (double n : sizes) flags->synth_sizes.push_back(static_cast<int64_t>(n));
    } else {
      rest->push_back(argv[i]);
    }
  }
  return true;
}

void AddInputs(const InputFlags& flags) {
  if (flags.graph_dir.empty()) {
    AddSyntheticInputs(flags.synth_sizes);
  } else {
    AddFileInputs(flags.graph_dir);
  }
}

}  // namespace kiln::bench
