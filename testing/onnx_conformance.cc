#include "testing/onnx_conformance.h"

#include <algorithm>
#include <set>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "frontend/onnx/importer.h"
#include "frontend/onnx/tensor_proto.h"
#include "ir/ivalue.h"
#include "onnx/onnx-data_pb.h"
#include "backends/cpu/cpu_backend.h"
#include "re2/re2.h"
#include "runtime/interpreter.h"
#include "support/status.h"
#include "testing/output_compare.h"
#include "wrapper/codegen.h"
#include "driver/compile_graph.h"
#include "driver/initialize.h"
#include "driver/model.h"
#include "driver/specializing_program.h"

namespace kiln::testing {
namespace {

namespace fs = std::filesystem;
namespace onnx_import = frontend::onnx_import;
using ir::IValue;

absl::StatusOr<std::string> ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", p.string()));
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

absl::StatusOr<IValue> ValueFromSequence(const onnx::SequenceProto& s);
absl::StatusOr<IValue> ValueFromOptional(const onnx::OptionalProto& o);

// A STRING tensor as the interpreter holds one: (int[] sizes, str[] data),
// elements in row-major order (see runtime/register_special.cc).
absl::StatusOr<IValue> StringTensorValue(const onnx::TensorProto& t) {
  int64_t numel = 1;
  std::vector<int64_t> sizes;
  for (int64_t d : t.dims()) {
    if (d < 0) return absl::InvalidArgumentError("negative dimension in a STRING tensor");
    numel *= d;
    sizes.push_back(d);
  }
  if (numel != t.string_data_size()) {
    return absl::InvalidArgumentError(absl::StrCat("STRING tensor '", t.name(), "' has ",
                                                   t.string_data_size(), " strings, expected ",
                                                   numel));
  }
  std::vector<IValue> data;
  for (const std::string& e : t.string_data()) data.push_back(IValue::String(e));
  return IValue::Tuple({IValue::IntList(sizes), IValue::List(std::move(data))});
}

// `declared`: the element type the model declares for this value (0 when
// unknown). ONNX's backend tests store BFLOAT16 data as UINT16 bit patterns
// (numpy has no bfloat16); such a tensor is read back as the bfloat16 it is.
absl::StatusOr<IValue> ValueFromTensor(const onnx::TensorProto& t, int32_t declared = 0) {
  if (t.data_type() == onnx::TensorProto::STRING) return StringTensorValue(t);
  if (declared == onnx::TensorProto::BFLOAT16 && t.data_type() == onnx::TensorProto::UINT16) {
    onnx::TensorProto copy = t;
    copy.set_data_type(onnx::TensorProto::BFLOAT16);
    ASSIGN_OR_RETURN(Tensor v, onnx_import::TensorFromProto(copy));
    return IValue::FromTensor(std::move(v));
  }
  ASSIGN_OR_RETURN(Tensor v, onnx_import::TensorFromProto(t));
  return IValue::FromTensor(std::move(v));
}

absl::StatusOr<IValue> ValueFromSequence(const onnx::SequenceProto& s) {
  std::vector<IValue> elems;
  for (const auto& t : s.tensor_values()) {
    ASSIGN_OR_RETURN(IValue v, ValueFromTensor(t));
    elems.push_back(std::move(v));
  }
  for (const auto& q : s.sequence_values()) {
    ASSIGN_OR_RETURN(IValue v, ValueFromSequence(q));
    elems.push_back(std::move(v));
  }
  for (const auto& o : s.optional_values()) {
    ASSIGN_OR_RETURN(IValue v, ValueFromOptional(o));
    elems.push_back(std::move(v));
  }
  if (s.sparse_tensor_values_size() > 0 || s.map_values_size() > 0) {
    return absl::UnimplementedError("sequences of sparse tensors or maps are not supported");
  }
  return IValue::List(std::move(elems));
}

absl::StatusOr<IValue> ValueFromOptional(const onnx::OptionalProto& o) {
  if (o.has_tensor_value()) return ValueFromTensor(o.tensor_value());
  if (o.has_sequence_value()) return ValueFromSequence(o.sequence_value());
  if (o.has_optional_value()) return ValueFromOptional(o.optional_value());
  return IValue::None();
}

// Reads a test-data file as the kind `type` says (tensor, sequence,
// optional); a null type means tensor.
absl::StatusOr<IValue> ReadValue(const fs::path& p, const onnx::TypeProto* type) {
  ASSIGN_OR_RETURN(std::string bytes, ReadFile(p));
  const auto kind = type ? type->value_case() : onnx::TypeProto::kTensorType;
  if (kind == onnx::TypeProto::kSequenceType) {
    onnx::SequenceProto s;
    if (!s.ParseFromString(bytes)) return absl::InvalidArgumentError(p.string() + ": bad SequenceProto");
    return ValueFromSequence(s);
  }
  if (kind == onnx::TypeProto::kOptionalType) {
    onnx::OptionalProto o;
    if (!o.ParseFromString(bytes)) return absl::InvalidArgumentError(p.string() + ": bad OptionalProto");
    return ValueFromOptional(o);
  }
  onnx::TensorProto t;
  if (!t.ParseFromString(bytes)) return absl::InvalidArgumentError(p.string() + ": bad TensorProto");
  const int32_t declared =
      type && type->has_tensor_type() ? type->tensor_type().elem_type() : 0;
  absl::StatusOr<IValue> v = ValueFromTensor(t, declared);
  if (!v.ok()) return absl::Status(v.status().code(), p.string() + ": " + std::string(v.status().message()));
  return v;
}

}  // namespace

absl::StatusOr<IValue> ReadTestValue(const std::string& path, const onnx::TypeProto* type) {
  return ReadValue(path, type);
}

namespace {

bool IsRandomTest(const std::string& name) {
  for (const char* random_op : {"bernoulli", "random_uniform", "random_normal", "multinomial"}) {
    if (absl::StrContains(name, random_op)) return true;
  }
  // Training-mode dropout draws a mask unless the ratio is zero.
  return absl::StrContains(name, "training_dropout") && !absl::StrContains(name, "zero_ratio");
}

// The runner compiles for the CPU by default; other devices are registered
// by the binary (kiln's main registers every built-in backend).
absl::Status EnsureKernels() {
  RETURN_IF_ERROR(driver::Initialize());
  return backends::cpu::RegisterCpuBackend();
}

// Runs the graph by one backend: the interpreter, or the program compiled
// for the CPU (its inputs and outputs are tensors).
class Executor {
 public:
  // `first_inputs`, when given, are the first call's: a model whose inputs
  // have dynamic shapes compiles its first version for them (as
  // torch.compile compiles at the first call), so that the islands counted
  // are those of the program that runs; `refine` types its specializations.
  static absl::StatusOr<std::unique_ptr<Executor>> Create(
      ir::Graph& graph, const std::string& backend, const std::string& device,
      const std::vector<IValue>* first_inputs = nullptr, driver::GraphRefiner refine = nullptr) {
    auto e = std::unique_ptr<Executor>(new Executor());
    if (backend == "interpreter") {
      e->interp_ = std::make_unique<runtime::Interpreter>(graph);
      RETURN_IF_ERROR(e->interp_->Prepare());
    } else if (backend == "compiled") {
      // Test data may feed other shapes than the model declares
      // (castlike_*'s `like` input): those calls compile a specialised
      // version, as torch.compile recompiles on a guard failure.
      driver::CompileOptions compile_options;
      compile_options.device = device;
      ASSIGN_OR_RETURN(e->compiled_, driver::SpecializingProgram::Create(
                                         graph, compile_options, 4, nullptr, std::move(refine),
                                         first_inputs));
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown backend '", backend, "' (available: interpreter, compiled)"));
    }
    return e;
  }

  absl::StatusOr<std::vector<IValue>> Run(const std::vector<IValue>& inputs) {
    if (interp_) return interp_->Run(inputs);
    return compiled_->RunValues(inputs);
  }

  // The compiled versions' islands and externs (the worst version's counts;
  // the ops of all of them).
  void Summarize(ConformanceResult* result) const {
    if (!compiled_) return;
    std::set<std::string> ops;
    for (const driver::CompileSummary& s : compiled_->compile_summaries()) {
      result->islands = std::max(result->islands, s.num_islands);
      result->island_nodes = std::max(result->island_nodes, s.num_island_nodes);
      result->whole_graph_island |= s.whole_graph_interpreted;
      result->reference_externs = std::max(result->reference_externs, s.num_reference_externs);
      driver::CompiledGraph view;
      view.not_compiled = s.not_compiled;
      for (std::string& op : driver::NotCompiledOps(view)) ops.insert(std::move(op));
    }
    result->not_compiled_ops.assign(ops.begin(), ops.end());
  }

 private:
  Executor() = default;
  std::unique_ptr<runtime::Interpreter> interp_;
  std::unique_ptr<driver::SpecializingProgram> compiled_;
};

// One test: `model_file` (model.onnx, or a .pt2 archive) beside its
// test_data_set_N directories.
absl::Status RunTest(const fs::path& model_file, const ConformanceOptions& options, bool random,
                     ConformanceResult* result) {
  RETURN_IF_ERROR(EnsureKernels());
  ASSIGN_OR_RETURN(driver::ImportedModel imported, driver::ImportModelFile(model_file.string()));
  RETURN_IF_ERROR(driver::RunPipeline(*imported.graph, options.pipeline));
  // ONNX declares the kinds of its inputs and outputs (tensor, sequence,
  // optional); a .pt2 program's are tensors.
  std::vector<const onnx::ValueInfoProto*> inputs;
  if (imported.onnx) inputs = onnx_import::RuntimeInputs(*imported.onnx);
  auto input_type = [&](size_t k) -> const onnx::TypeProto* {
    return k < inputs.size() && inputs[k]->has_type() ? &inputs[k]->type() : nullptr;
  };
  auto output_type = [&](size_t k) -> const onnx::TypeProto* {
    if (!imported.onnx) return nullptr;
    const onnx::GraphProto& g = imported.onnx->graph();
    return k < static_cast<size_t>(g.output_size()) && g.output(k).has_type() ? &g.output(k).type()
                                                                              : nullptr;
  };
  std::unique_ptr<Executor> executor;
  // The islands and externs of what ran, also when a data set fails.
  struct SummarizeOnExit {
    const std::unique_ptr<Executor>& e;
    ConformanceResult* r;
    ~SummarizeOnExit() {
      if (e) e->Summarize(r);
    }
  } summarize{executor, result};
  std::vector<fs::path> sets;
  for (const auto& e : fs::directory_iterator(model_file.parent_path())) {
    if (e.is_directory() && absl::StartsWith(e.path().filename().string(), "test_data_set_")) {
      sets.push_back(e.path());
    }
  }
  std::sort(sets.begin(), sets.end());
  if (sets.empty()) return absl::NotFoundError("no test_data_set_* directories");
  for (const fs::path& set : sets) {
    std::vector<IValue> in;
    for (size_t k = 0;; ++k) {
      const fs::path p = set / absl::StrCat("input_", k, ".pb");
      if (!fs::exists(p)) break;
      ASSIGN_OR_RETURN(IValue v, ReadValue(p, input_type(k)));
      in.push_back(std::move(v));
    }
    if (imported.pt2) {
      // The program's guard: dtypes, ranks, symbolic sizes within range.
      absl::Status guard = imported.pt2->CheckInputs(in);
      if (!guard.ok()) {
        return absl::Status(guard.code(), absl::StrCat(set.filename().string(), ": ", guard.message()));
      }
    }
    if (executor == nullptr) {
      ASSIGN_OR_RETURN(executor, Executor::Create(*imported.graph, options.backend, options.device,
                                                  imported.HasDynamicShapes() ? &in : nullptr,
                                                  imported.Refiner()));
    }
    ASSIGN_OR_RETURN(std::vector<IValue> out, executor->Run(in));
    for (size_t k = 0;; ++k) {
      const fs::path p = set / absl::StrCat("output_", k, ".pb");
      if (!fs::exists(p)) {
        if (k != out.size()) {
          return absl::InternalError(absl::StrCat("graph returned ", out.size(),
                                                  " outputs, expected ", k));
        }
        break;
      }
      ASSIGN_OR_RETURN(IValue expected, ReadValue(p, output_type(k)));
      if (k >= out.size()) return absl::InternalError(absl::StrCat("missing output ", k));
      std::string diff =
          CompareValues(out[k], expected, Tolerance{options.rtol, options.atol}, random);
      if (!diff.empty()) {
        return absl::InternalError(absl::StrCat(set.filename().string(), " output ", k, ": ", diff));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

ConformanceResult RunConformanceTest(const std::string& dir, const ConformanceOptions& options) {
  ConformanceResult r;
  const fs::path path(dir);
  // A .pt2 test is named <test>/<file>.pt2 (a test directory may hold a
  // program in several forms).
  const bool pt2 = path.extension() == ".pt2";
  r.name = pt2 ? absl::StrCat(path.parent_path().filename().string(), "/", path.filename().string())
               : path.filename().string();
  r.random = IsRandomTest(r.name);
  const auto start = std::chrono::steady_clock::now();
  absl::Status s = RunTest(pt2 ? path : path / "model.onnx", options, r.random, &r);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.passed = s.ok();
  if (!s.ok()) r.reason = std::string(s.message());
  return r;
}

absl::StatusOr<ConformanceSummary> RunConformance(const ConformanceOptions& options) {
  std::error_code ec;
  if (!fs::is_directory(options.root, ec)) {
    return absl::NotFoundError(absl::StrCat("conformance root ", options.root, " is not a directory"));
  }
  std::unique_ptr<RE2> filter;
  if (!options.filter.empty()) {
    filter = std::make_unique<RE2>(options.filter);
    if (!filter->ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("bad --filter regex '", options.filter, "': ", filter->error()));
    }
  }
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(options.root)) {
    if (!e.is_directory()) continue;
    if (fs::exists(e.path() / "model.onnx")) {
      if (!filter || RE2::PartialMatch(e.path().filename().string(), *filter)) dirs.push_back(e.path());
      continue;
    }
    for (const auto& f : fs::directory_iterator(e.path())) {
      if (!f.is_regular_file() || f.path().extension() != ".pt2") continue;
      const std::string name =
          absl::StrCat(e.path().filename().string(), "/", f.path().filename().string());
      if (!filter || RE2::PartialMatch(name, *filter)) dirs.push_back(f.path());
    }
  }
  std::sort(dirs.begin(), dirs.end());
  RETURN_IF_ERROR(EnsureKernels());
  if (options.backend == "compiled") {
    // An unknown device is a usage error, not a failure of every test.
    absl::StatusOr<std::unique_ptr<wrapper::DeviceCodegen>> codegen =
        wrapper::CreateDeviceCodegen(options.device);
    if (!codegen.ok()) return codegen.status();
  } else if (options.backend != "interpreter") {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown backend '", options.backend, "' (available: interpreter, compiled)"));
  }
  ConformanceSummary summary;
  for (size_t i = 0; i < dirs.size(); ++i) {
    const fs::path& d = dirs[i];
    if (options.on_test_start) {
      options.on_test_start(static_cast<int>(i), static_cast<int>(dirs.size()),
                            d.filename().string());
    }
    ConformanceResult r = RunConformanceTest(d.string(), options);
    if (r.passed) {
      ++summary.passed;
      if (r.islands > 0) ++summary.passed_with_islands;
      if (r.whole_graph_island) ++summary.passed_whole_graph_island;
      if (r.random) ++summary.random_passed;
    } else {
      ++summary.failed;
      if (r.random) ++summary.random_failed;
    }
    summary.results.push_back(std::move(r));
  }
  return summary;
}

std::string ConformanceSummary::Line() const {
  std::string s = absl::StrCat(passed, " passed, ", failed, " failed");
  if (random_passed + random_failed > 0) {
    absl::StrAppend(&s, " (random-output tests, checked by shape/dtype/range: ", random_passed,
                    " passed, ", random_failed, " failed)");
  }
  if (passed_with_islands > 0) {
    absl::StrAppend(&s, "; ", passed_with_islands, " passed using interpreter islands (",
                    passed_whole_graph_island, " of them whole-graph), ",
                    passed - passed_with_islands, " fully compiled");
  }
  return s;
}

std::string ConformanceSummary::Report() const {
  std::string out;
  for (const ConformanceResult& r : results) {
    if (r.passed) {
      std::string islands;
      if (r.whole_graph_island) {
        islands = absl::StrCat(" [islands: whole graph, ", r.island_nodes, " nodes]");
      } else if (r.islands > 0) {
        islands = absl::StrCat(" [islands: ", r.islands, ", ", r.island_nodes, " nodes]");
      }
      if (r.reference_externs > 0) {
        absl::StrAppend(&islands, " [reference externs: ", r.reference_externs, "]");
      }
      if (!r.not_compiled_ops.empty()) {
        absl::StrAppend(&islands, " [not compiled: ", absl::StrJoin(r.not_compiled_ops, ", "), "]");
      }
      absl::StrAppendFormat(&out, "PASS %s%s%s (%.3f s)\n", r.name, r.random ? " [random]" : "",
                            islands, r.seconds);
    } else {
      absl::StrAppendFormat(&out, "FAIL %s%s: %s\n", r.name, r.random ? " [random]" : "",
                            r.reason);
    }
  }
  return out;
}

}  // namespace kiln::testing
