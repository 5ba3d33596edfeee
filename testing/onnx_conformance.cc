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

std::string Shape(const Tensor& t) {
  std::string s = "[";
  for (size_t i = 0; i < t.sizes().size(); ++i) absl::StrAppend(&s, i ? ", " : "", t.sizes()[i]);
  return s + "]";
}

bool IsRandomTest(const std::string& name) {
  for (const char* random_op : {"bernoulli", "random_uniform", "random_normal", "multinomial"}) {
    if (absl::StrContains(name, random_op)) return true;
  }
  // Training-mode dropout draws a mask unless the ratio is zero.
  return absl::StrContains(name, "training_dropout") && !absl::StrContains(name, "zero_ratio");
}

// Compares tensors; an empty string when they match.
std::string CompareTensors(const Tensor& actual, const Tensor& expected, double rtol, double atol,
                           bool random) {
  if (actual.dtype() != expected.dtype()) {
    return absl::StrCat("dtype ", DTypeName(actual.dtype()), ", expected ",
                        DTypeName(expected.dtype()));
  }
  if (actual.sizes() != expected.sizes()) {
    return absl::StrCat("shape ", Shape(actual), ", expected ", Shape(expected));
  }
  if (!actual.has_data()) return "output has no data";
  const int64_t n = actual.numel();
  if (random) {
    for (int64_t i = 0; i < n; ++i) {
      if (IsFloatingPoint(actual.dtype()) && !std::isfinite(actual.GetDouble(i))) {
        return absl::StrCat("random output element ", i, " is not finite");
      }
    }
    return "";
  }
  const bool floating = IsFloatingPoint(expected.dtype()) || IsComplex(expected.dtype());
  int64_t mismatches = 0;
  int64_t first = -1;
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!floating) {
      if (actual.GetInt(i) != expected.GetInt(i)) {
        if (first < 0) first = i;
        ++mismatches;
      }
      continue;
    }
    const double a = actual.GetDouble(i), e = expected.GetDouble(i);
    if (std::isnan(a) && std::isnan(e)) continue;
    if (std::isinf(e) || std::isinf(a)) {
      if (a != e) {
        if (first < 0) first = i;
        ++mismatches;
      }
      continue;
    }
    const double diff = std::fabs(a - e);
    if (!(diff <= atol + rtol * std::fabs(e))) {
      if (first < 0) first = i;
      ++mismatches;
      worst = std::max(worst, diff);
    }
  }
  if (mismatches == 0) return "";
  if (!floating) {
    return absl::StrCat(mismatches, "/", n, " elements differ; first at ", first, ": ",
                        actual.GetInt(first), " vs expected ", expected.GetInt(first));
  }
  return absl::StrFormat("%d/%d elements differ (max abs diff %g); first at %d: %.9g vs expected %.9g",
                         mismatches, n, worst, first, actual.GetDouble(first),
                         expected.GetDouble(first));
}

std::string CompareValues(const IValue& actual, const IValue& expected, double rtol, double atol,
                          bool random) {
  if (expected.isNone() || actual.isNone()) {
    return expected.isNone() == actual.isNone() ? "" : absl::StrCat("got ", actual.DebugString().substr(0, 80), ", expected None");
  }
  if (expected.isTuple()) {  // a string tensor: exact match
    return actual == expected ? "" : absl::StrCat("got ", actual.DebugString().substr(0, 200),
                                                  ", expected ", expected.DebugString().substr(0, 200));
  }
  if (expected.isList()) {
    if (!actual.isList() && !actual.isTuple()) return "expected a sequence";
    if (actual.elements().size() != expected.elements().size()) {
      return absl::StrCat("sequence of ", actual.elements().size(), " elements, expected ",
                          expected.elements().size());
    }
    for (size_t i = 0; i < expected.elements().size(); ++i) {
      std::string r = CompareValues(actual.elements()[i], expected.elements()[i], rtol, atol, random);
      if (!r.empty()) return absl::StrCat("sequence element ", i, ": ", r);
    }
    return "";
  }
  if (!actual.isTensor()) return absl::StrCat("expected a tensor, got ", actual.DebugString().substr(0, 80));
  return CompareTensors(actual.toTensor(), expected.toTensor(), rtol, atol, random);
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
  static absl::StatusOr<std::unique_ptr<Executor>> Create(ir::Graph& graph, const std::string& backend,
                                                          const std::string& device) {
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
      ASSIGN_OR_RETURN(e->compiled_, driver::SpecializingProgram::Create(graph, compile_options, 4));
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

absl::Status RunTest(const fs::path& dir, const ConformanceOptions& options, bool random,
                     ConformanceResult* result) {
  RETURN_IF_ERROR(EnsureKernels());
  ASSIGN_OR_RETURN(driver::ImportedModel imported,
                   driver::ImportModelFile((dir / "model.onnx").string()));
  RETURN_IF_ERROR(driver::RunPipeline(*imported.graph, options.pipeline));
  const onnx::ModelProto& model = *imported.onnx;
  ASSIGN_OR_RETURN(std::unique_ptr<Executor> executor,
                   Executor::Create(*imported.graph, options.backend, options.device));
  struct SummarizeOnExit {
    const Executor* e;
    ConformanceResult* r;
    ~SummarizeOnExit() { e->Summarize(r); }
  } summarize{executor.get(), result};
  const std::vector<const onnx::ValueInfoProto*> inputs = onnx_import::RuntimeInputs(model);
  std::vector<fs::path> sets;
  for (const auto& e : fs::directory_iterator(dir)) {
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
      const onnx::TypeProto* type =
          k < inputs.size() && inputs[k]->has_type() ? &inputs[k]->type() : nullptr;
      ASSIGN_OR_RETURN(IValue v, ReadValue(p, type));
      in.push_back(std::move(v));
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
      const onnx::TypeProto* type = k < static_cast<size_t>(model.graph().output_size()) &&
                                            model.graph().output(k).has_type()
                                        ? &model.graph().output(k).type()
                                        : nullptr;
      ASSIGN_OR_RETURN(IValue expected, ReadValue(p, type));
      if (k >= out.size()) return absl::InternalError(absl::StrCat("missing output ", k));
      std::string diff = CompareValues(out[k], expected, options.rtol, options.atol, random);
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
  r.name = fs::path(dir).filename().string();
  r.random = IsRandomTest(r.name);
  const auto start = std::chrono::steady_clock::now();
  absl::Status s = RunTest(dir, options, r.random, &r);
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
    if (!e.is_directory() || !fs::exists(e.path() / "model.onnx")) continue;
    if (filter && !RE2::PartialMatch(e.path().filename().string(), *filter)) continue;
    dirs.push_back(e.path());
  }
  std::sort(dirs.begin(), dirs.end());
  ConformanceSummary summary;
  for (const fs::path& d : dirs) {
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
