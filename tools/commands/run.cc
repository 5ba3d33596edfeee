#include "tools/commands/run.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "driver/measure.h"
#include "driver/model.h"
#include "driver/precision.h"
#include "frontend/onnx/importer.h"
#include "frontend/onnx/tensor_proto.h"
#include "frontend/pt2/signature.h"
#include "ir/ivalue.h"
#include "runtime/interpreter.h"
#include "support/status.h"
#include "testing/onnx_conformance.h"
#include "testing/output_compare.h"
#include "tools/common_flags.h"
#include "tools/file_io.h"
#include "tools/json_output.h"
#include "tools/memory_limit.h"
#include "tools/output_summary.h"
#include "tools/staged_compile.h"
#include "tools/terminal.h"
#include "tools/trace.h"

ABSL_FLAG(std::string, inputs, "",
          "Directory with input_K.pb files (backend-test layout); output_K.pb files there are "
          "the expected outputs. Default: generated inputs");
ABSL_FLAG(int, iterations, 1, "Timed calls (compiled backend)");
ABSL_FLAG(int, warmup, 0, "Untimed calls before the timed ones (compiled backend)");
ABSL_FLAG(bool, check, true,
          "Compiled backend: also run the interpreter and compare (exit 1 when they differ)");
ABSL_FLAG(int, profile, 0,
          "Compiled backend: time every kernel and extern over N more calls and print the table "
          "(cpu: host clock around each step; cuda: CUDA events, eager launches)");
ABSL_FLAG(std::string, save_outputs, "",
          "Write the outputs to DIR/output_K.pb (ONNX TensorProto, the backend-test layout)");
ABSL_DECLARE_FLAG(std::string, backend);
ABSL_DECLARE_FLAG(std::string, device);
ABSL_DECLARE_FLAG(std::string, pipeline);
ABSL_DECLARE_FLAG(std::string, trace);

namespace kiln::tools {
namespace {

using ir::IValue;
using Clock = std::chrono::steady_clock;

double Ms(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

std::string ShapeText(const std::vector<int64_t>& sizes) {
  return absl::StrCat("[", absl::StrJoin(sizes, ", "), "]");
}

// A deterministic input tensor: floats in [-1, 1) from a fixed linear
// congruential sequence, integers 0, bools false. Checked against
// --max_memory before anything is allocated.
absl::StatusOr<IValue> GeneratedTensor(const std::string& name, DType dtype,
                                       const std::vector<int64_t>& sizes, int64_t* total_bytes) {
  if (dtype != DType::kFloat32 && dtype != DType::kFloat64 && dtype != DType::kInt64 &&
      dtype != DType::kInt32 && dtype != DType::kBool) {
    return absl::InvalidArgumentError(absl::StrCat(
        "input '", name, "': no generator for this element type; pass --inputs DIR"));
  }
  const std::string what =
      absl::StrCat("input '", name, "' (", DTypeName(dtype), ShapeText(sizes), ")");
  const std::optional<int64_t> bytes = DenseBytes(sizes, static_cast<int64_t>(DTypeSize(dtype)));
  if (!bytes.has_value() || __builtin_add_overflow(*total_bytes, *bytes, total_bytes)) {
    return absl::ResourceExhaustedError(absl::StrCat(what, " has more bytes than fit in 64 bits"));
  }
  RETURN_IF_ERROR(CheckMemory(*bytes, what));
  RETURN_IF_ERROR(CheckMemory(*total_bytes, "the generated inputs"));
  Tensor t = Tensor::Empty(dtype, sizes);
  if (dtype == DType::kFloat32 || dtype == DType::kFloat64) {
    uint64_t state = 0x2545F4914F6CDD1DULL;
    for (int64_t i = 0; i < t.numel(); ++i) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      const double v = static_cast<double>(state >> 11) / static_cast<double>(1ULL << 53) * 2 - 1;
      if (dtype == DType::kFloat32) {
        t.data<float>()[i] = static_cast<float>(v);
      } else {
        t.data<double>()[i] = v;
      }
    }
  }
  return IValue::FromTensor(std::move(t));
}

// A generated input for an ONNX model input with a static shape.
absl::StatusOr<IValue> GeneratedInput(const onnx::ValueInfoProto& in, int64_t* total_bytes) {
  const std::string name = Printable(in.name());
  if (!in.type().has_tensor_type()) {
    return absl::InvalidArgumentError(
        absl::StrCat("input '", name, "' is not a tensor: pass --inputs DIR"));
  }
  std::vector<int64_t> sizes;
  for (const auto& d : in.type().tensor_type().shape().dim()) {
    if (!d.has_dim_value() || d.dim_value() < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("input '", name, "' has a symbolic dimension: pass --inputs DIR"));
    }
    sizes.push_back(d.dim_value());
  }
  const int32_t et = in.type().tensor_type().elem_type();
  if (et != onnx::TensorProto::FLOAT && et != onnx::TensorProto::DOUBLE &&
      et != onnx::TensorProto::INT64 && et != onnx::TensorProto::INT32 &&
      et != onnx::TensorProto::BOOL) {
    return absl::InvalidArgumentError(absl::StrCat(
        "input '", name, "': no generator for this element type; pass --inputs DIR"));
  }
  ASSIGN_OR_RETURN(const DType dtype, frontend::onnx_import::DTypeFromOnnx(et));
  return GeneratedTensor(name, dtype, sizes, total_bytes);
}

std::string InputsDir() { return ResolveUserPath(absl::GetFlag(FLAGS_inputs)); }

// A .pt2 program's inputs: DIR/input_K.pb, or generated at the shapes torch
// traced it with; checked against its symbolic sizes.
absl::StatusOr<std::vector<IValue>> Pt2Inputs(const frontend::pt2::Signature& sig) {
  std::vector<IValue> inputs;
  const std::string dir = InputsDir();
  if (!dir.empty()) {
    for (size_t k = 0; k < sig.inputs.size(); ++k) {
      ASSIGN_OR_RETURN(IValue v,
                       testing::ReadTestValue(absl::StrCat(dir, "/input_", k, ".pb"), nullptr));
      inputs.push_back(std::move(v));
    }
  } else {
    ASSIGN_OR_RETURN(const std::vector<std::vector<int64_t>> shapes, sig.ExampleShapes());
    int64_t total_bytes = 0;
    for (size_t k = 0; k < sig.inputs.size(); ++k) {
      const std::string name = Printable(sig.inputs[k].name);
      if (!sig.inputs[k].is_tensor) {
        return absl::InvalidArgumentError(
            absl::StrCat("input '", name, "' is an int: pass --inputs DIR"));
      }
      ASSIGN_OR_RETURN(IValue v,
                       GeneratedTensor(name, sig.inputs[k].dtype, shapes[k], &total_bytes));
      inputs.push_back(std::move(v));
    }
  }
  RETURN_IF_ERROR(sig.CheckInputs(inputs));
  return inputs;
}

absl::StatusOr<std::vector<IValue>> ModelInputs(const driver::ImportedModel& m) {
  if (m.pt2) return Pt2Inputs(*m.pt2);
  const onnx::ModelProto& model = *m.onnx;
  const auto runtime_inputs = frontend::onnx_import::RuntimeInputs(model);
  std::vector<IValue> inputs;
  const std::string dir = InputsDir();
  int64_t total_bytes = 0;
  for (size_t k = 0; k < runtime_inputs.size(); ++k) {
    absl::StatusOr<IValue> v =
        dir.empty() ? GeneratedInput(*runtime_inputs[k], &total_bytes)
                    : testing::ReadTestValue(absl::StrCat(dir, "/input_", k, ".pb"),
                                             &runtime_inputs[k]->type());
    if (!v.ok()) return v.status();
    inputs.push_back(*std::move(v));
  }
  return inputs;
}

std::string OutputName(const driver::ImportedModel& m, size_t k) {
  if (m.pt2) return k < m.pt2->outputs.size() ? m.pt2->outputs[k] : "";
  const onnx::ModelProto& model = *m.onnx;
  return k < static_cast<size_t>(model.graph().output_size()) ? model.graph().output(k).name() : "";
}

// One comparison of the outputs with a reference.
struct Check {
  std::string against;  // "the interpreter", "DIR/output_K.pb"
  struct Output {
    size_t index = 0;
    std::string reference;  // the file, or "interpreter"
    std::string difference;  // empty: matches
  };
  std::vector<Output> outputs;
  bool passed() const {
    return std::all_of(outputs.begin(), outputs.end(),
                       [](const Output& o) { return o.difference.empty(); });
  }
};

Check CompareWithInterpreter(const std::vector<IValue>& outs, const std::vector<IValue>& want,
                             const testing::Tolerance& tolerance) {
  Check check{"the interpreter", {}};
  for (size_t k = 0; k < outs.size() || k < want.size(); ++k) {
    Check::Output o{k, "interpreter", ""};
    if (k >= outs.size() || k >= want.size()) {
      o.difference = absl::StrCat(outs.size(), " outputs, the interpreter gave ", want.size());
    } else {
      o.difference = testing::CompareValues(outs[k], want[k], tolerance);
    }
    check.outputs.push_back(std::move(o));
  }
  return check;
}

// Against DIR/output_K.pb, for each K that exists; nullopt when none does.
absl::StatusOr<std::optional<Check>> CompareWithExpectedFiles(const driver::ImportedModel& model,
                                                              const std::vector<IValue>& outs,
                                                              const testing::Tolerance& tolerance) {
  const std::string dir = InputsDir();
  if (dir.empty()) return std::nullopt;
  Check check{absl::StrCat(dir, "/output_K.pb"), {}};
  for (size_t k = 0; k < outs.size(); ++k) {
    const std::string path = absl::StrCat(dir, "/output_", k, ".pb");
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) continue;
    // ONNX types the test data; a .pt2 program's outputs are read as stored.
    const onnx::TypeProto* type =
        model.onnx && k < static_cast<size_t>(model.onnx->graph().output_size())
            ? &model.onnx->graph().output(k).type()
            : nullptr;
    ASSIGN_OR_RETURN(IValue expected, testing::ReadTestValue(path, type));
    check.outputs.push_back(
        {k, path, testing::CompareValues(outs[k], expected, tolerance)});
  }
  // An expected output the model does not produce.
  const std::string extra = absl::StrCat(dir, "/output_", outs.size(), ".pb");
  std::error_code ec;
  if (std::filesystem::exists(extra, ec)) {
    check.outputs.push_back({outs.size(), extra,
                             absl::StrCat("the model has ", outs.size(), " outputs, but ", extra,
                                          " exists")});
  }
  if (check.outputs.empty()) return std::nullopt;
  return check;
}

struct RunReport {
  std::string backend;
  std::vector<IValue> outputs;
  std::vector<Check> checks;
  double import_ms = 0, passes_ms = 0;
  std::optional<double> compile_ms;  // lower..plan + device compile
  std::optional<double> first_call_ms;  // compiled backend: the first call, one-time work included
  int64_t nodes_executed = 0;        // interpreter
  std::vector<double> run_ms;        // sorted
  Json compiled = nullptr;           // compiled backend: kernels, islands
};

// --save_outputs DIR: output_K.pb files (ONNX TensorProto), the
// backend-test layout that --inputs reads.
absl::Status SaveOutputs(const std::vector<IValue>& outputs) {
  const std::string dir = ResolveUserPath(absl::GetFlag(FLAGS_save_outputs));
  if (dir.empty()) return absl::OkStatus();
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return absl::InvalidArgumentError(absl::StrCat("--save_outputs: cannot create ", dir, ": ", ec.message()));
  for (size_t k = 0; k < outputs.size(); ++k) {
    if (!outputs[k].isTensor()) {
      return absl::InvalidArgumentError(absl::StrCat("--save_outputs: output ", k, " is not a tensor"));
    }
    const std::string name = absl::StrCat("output_", k);
    const std::string bytes =
        frontend::onnx_import::TensorToProto(outputs[k].toTensor(), name).SerializeAsString();
    RETURN_IF_ERROR(WriteFileAtomically(absl::StrCat(dir, "/", name, ".pb"), bytes));
  }
  return absl::OkStatus();
}

absl::Status Finish(const std::string& model_arg, const driver::ImportedModel& model,
                    const testing::Tolerance& tolerance, RunReport report) {
  RETURN_IF_ERROR(SaveOutputs(report.outputs));
  ASSIGN_OR_RETURN(std::optional<Check> expected,
                   CompareWithExpectedFiles(model, report.outputs, tolerance));
  if (expected.has_value()) report.checks.insert(report.checks.begin(), *std::move(expected));
  std::sort(report.run_ms.begin(), report.run_ms.end());

  if (absl::GetFlag(FLAGS_json)) {
    Json doc = JsonDocument("run");
    doc["model"] = model_arg;
    doc["backend"] = report.backend;
    doc["inputs"] = InputsDir().empty() ? "generated" : InputsDir();
    Json outputs = Json::array();
    for (size_t k = 0; k < report.outputs.size(); ++k) {
      Json o = {{"index", k}, {"name", OutputName(model, k)}};
      o.update(SummaryJson(report.outputs[k]));
      outputs.push_back(std::move(o));
    }
    doc["outputs"] = std::move(outputs);
    Json times = {{"import", report.import_ms}, {"passes", report.passes_ms}};
    if (report.compile_ms.has_value()) times["compile"] = *report.compile_ms;
    if (report.first_call_ms.has_value()) times["first_call"] = *report.first_call_ms;
    if (!report.run_ms.empty()) {
      times["run"] = {{"median", report.run_ms[report.run_ms.size() / 2]},
                      {"min", report.run_ms.front()},
                      {"max", report.run_ms.back()},
                      {"calls", report.run_ms.size()}};
    }
    doc["times_ms"] = std::move(times);
    if (!report.compiled.is_null()) doc["compiled"] = report.compiled;
    Json checks = Json::array();
    for (const Check& c : report.checks) {
      Json outs = Json::array();
      for (const Check::Output& o : c.outputs) {
        outs.push_back({{"index", o.index},
                        {"reference", o.reference},
                        {"passed", o.difference.empty()},
                        {"difference", o.difference}});
      }
      checks.push_back({{"against", c.against},
                        {"rtol", tolerance.rtol},
                        {"atol", tolerance.atol},
                        {"passed", c.passed()},
                        {"outputs", std::move(outs)}});
    }
    doc["checks"] = std::move(checks);
    RETURN_IF_ERROR(PrintJson(doc));
  } else {
    for (size_t k = 0; k < report.outputs.size(); ++k) {
      std::printf("output %zu '%s': %s\n", k, Printable(OutputName(model, k)).c_str(),
                  Printable(SummaryText(report.outputs[k])).c_str());
    }
    if (report.backend == "interpreter") {
      std::printf("import %.1f ms, passes %.1f ms, run %.1f ms (%lld nodes executed, interpreter)\n",
                  report.import_ms, report.passes_ms,
                  report.run_ms.empty() ? 0.0 : report.run_ms.front(),
                  static_cast<long long>(report.nodes_executed));
    }
    for (const Check& c : report.checks) {
      if (c.passed()) {
        std::printf("check against %s: %zu output%s match (rtol %g, atol %g)\n",
                    Printable(c.against).c_str(), c.outputs.size(),
                    c.outputs.size() == 1 ? "" : "s", tolerance.rtol, tolerance.atol);
      }
    }
  }
  for (const Check& c : report.checks) {
    for (const Check::Output& o : c.outputs) {
      if (o.difference.empty()) continue;
      return InputRejected(absl::StrCat(
          model_arg, ": output ", o.index, " '", OutputName(model, o.index), "' differs from ",
          o.reference == "interpreter" ? "the interpreter's" : o.reference, " (rtol ",
          tolerance.rtol, ", atol ", tolerance.atol, "): ", o.difference));
    }
  }
  return absl::OkStatus();
}

absl::Status RunCompiled(const std::string& model_arg, const testing::Tolerance& tolerance) {
  StagedCompileOptions options;
  options.model_path = ResolveUserPath(model_arg);
  options.pipeline = absl::GetFlag(FLAGS_pipeline);
  options.device = absl::GetFlag(FLAGS_device);
  if (const std::string p = absl::GetFlag(FLAGS_precision); !p.empty()) {
    ASSIGN_OR_RETURN(options.precision, driver::ParsePrecision(p));
  }
  options.make_inputs = ModelInputs;
  options.program_cache = true;
  ASSIGN_OR_RETURN(options.max_peak_bytes, MaxMemoryBytes());
  TraceRecorder trace;
  const std::string trace_path = absl::GetFlag(FLAGS_trace);
  if (!trace_path.empty()) options.trace = &trace;
  absl::StatusOr<StagedCompile> staged = RunStagedCompile(options);
  if (!staged.ok()) {
    if (absl::IsResourceExhausted(staged.status())) {
      return absl::ResourceExhaustedError(absl::StrCat(model_arg, ": ", staged.status().message(),
                                                       " (see --max_memory)"));
    }
    return staged.status();
  }
  const driver::ImportedModel& model = staged->model;
  const driver::CompiledGraph& compiled = *staged->compiled;
  std::vector<IValue> inputs = staged->inputs;
  if (!staged->inputs_made) {
    ASSIGN_OR_RETURN(inputs, ModelInputs(model));
  }
  std::vector<Tensor> tensors;
  for (const IValue& v : inputs) {
    if (!v.isTensor()) {
      return absl::InvalidArgumentError("run: the compiled backend takes tensor inputs only");
    }
    tensors.push_back(v.toTensor());
  }
  // Inputs placed on the device once; calls timed by the device (CUDA
  // events on a GPU), outputs fetched after the last.
  driver::MeasureOptions measure;
  measure.warmup = absl::GetFlag(FLAGS_warmup);
  measure.iterations = std::max(1, absl::GetFlag(FLAGS_iterations));
  measure.profile_iterations = absl::GetFlag(FLAGS_profile);
  const Clock::time_point calls_start = Clock::now();
  absl::StatusOr<driver::Measurement> measured =
      driver::MeasureProgram(*compiled.compiled, tensors, measure);
  if (!measured.ok()) {
    return absl::Status(measured.status().code(),
                        absl::StrCat(model_arg, ": ", measured.status().message()));
  }
  trace.Complete("calls", "run", calls_start, Clock::now(),
                 {{"warmup", measure.warmup}, {"timed", measure.iterations}});
  RunReport report;
  report.backend = "compiled";
  report.run_ms = measured->ms;
  report.first_call_ms = measured->first_call_ms;
  std::vector<Tensor>& outs = measured->outputs;
  for (Tensor& t : outs) report.outputs.push_back(IValue::FromTensor(t));
  report.import_ms = staged->model.import_ms;
  report.passes_ms = staged->passes_ms;
  // A program cache hit's compile is its lookup and the device's load.
  report.compile_ms = compiled.times.FrontHalfMs() + compiled.times.compile_ms + staged->cache.lookup_ms;
  report.compiled = {{"kernels", compiled.num_kernels},
                     {"extern_calls", compiled.num_externs},
                     {"islands", compiled.num_islands},
                     {"island_nodes", compiled.num_island_nodes},
                     {"whole_graph_interpreted", compiled.whole_graph_interpreted},
                     {"reference_externs", compiled.num_reference_externs},
                     {"not_compiled_ops", driver::NotCompiledOps(compiled)},
                     {"device", options.device},
                     {"precision", options.precision ? driver::PrecisionName(*options.precision) : "fp32"},
                     {"timer", measured->timer},
                     {"notes", Json::array()}};
  if (staged->cache.used) {
    report.compiled["program_cache"] = {{"hit", staged->cache.hit},
                                        {"lookup_ms", staged->cache.lookup_ms},
                                        {"store_ms", staged->cache.store_ms},
                                        {"note", staged->cache.note}};
  }
  for (const std::string& n : measured->notes) report.compiled["notes"].push_back(n);
  for (const std::string& n : compiled.compiled->ReportLines()) report.compiled["notes"].push_back(n);
  if (!absl::GetFlag(FLAGS_json)) {
    std::vector<double> sorted = report.run_ms;
    std::sort(sorted.begin(), sorted.end());
    const std::string device = Printable(options.device);
    std::printf("import %.1f ms, passes %.1f ms, lower+fuse+wrapper+plan %.1f ms, %s compile %.1f ms\n",
                report.import_ms, report.passes_ms, compiled.times.FrontHalfMs(),
                options.device == "cpu" ? "C++" : device.c_str(), compiled.times.compile_ms);
    if (staged->cache.hit) {
      std::printf("  program cache hit: %.1f ms to find and map it (no import, passes or lowering)\n",
                  staged->cache.lookup_ms);
    } else if (staged->cache.used) {
      std::printf("  program cache miss: compiled; entry serialized in %.1f ms, written in the background\n",
                  staged->cache.store_ms);
    }
    if (staged->cache.used && !staged->cache.note.empty()) std::printf("  program cache: %s\n", Printable(staged->cache.note).c_str());
    for (const std::string& line : compiled.compiled->ReportLines()) std::printf("  %s\n", line.c_str());
    if (options.precision) {
      const driver::AutocastStats& a = staged->autocast;
      std::printf("precision %s: %d ops in lower precision, %d kept in float32, %d casts, %d weights converted\n",
                  driver::PrecisionName(*options.precision), a.lower_ops, a.fp32_ops, a.casts_inserted,
                  a.constants_converted);
    }
    std::printf("run (compiled for %s, %d kernels, %d extern calls, %d interpreter islands with %d nodes%s): "
                "median %.3f ms, min %.3f ms, max %.3f ms over %d calls (%s; inputs placed in %.1f ms; "
                "first call %.1f ms, one-time work included)\n",
                device.c_str(), compiled.num_kernels, compiled.num_externs, compiled.num_islands,
                compiled.num_island_nodes, compiled.whole_graph_interpreted ? ", whole graph" : "",
                sorted[sorted.size() / 2], sorted.front(), sorted.back(), measure.iterations,
                measured->timer.c_str(), measured->session_ms, measured->first_call_ms);
    for (const std::string& note : measured->notes) std::printf("  %s\n", note.c_str());
    if (measure.profile_iterations > 0) {
      if (measured->profile.empty()) {
        std::printf("profile: %s\n",
                    measured->profile_error.empty() ? "no steps" : measured->profile_error.c_str());
      } else {
        // Steps run one at a time (CUDA: eager launches, no graph), each
        // timed by the session's timer.
        std::printf("profile over %d calls (each step timed by the %s):\n", measure.profile_iterations,
                    measured->timer.c_str());
        // Line by line: step names come from the model.
        for (absl::string_view line :
             absl::StrSplit(driver::FormatProfile(measured->profile, measure.profile_iterations), '\n')) {
          if (!line.empty()) std::printf("%s\n", Printable(line).c_str());
        }
      }
    }
    if (compiled.num_islands > 0 || compiled.num_reference_externs > 0) {
      // Line by line: node names come from the model.
      for (absl::string_view line : absl::StrSplit(driver::NotCompiledReport(compiled), '\n')) {
        std::printf("%s\n", Printable(line).c_str());
      }
    }
  }
  if (absl::GetFlag(FLAGS_check)) {
    // The graph was compiled in place; the interpreter runs a fresh import.
    ASSIGN_OR_RETURN(driver::ImportedModel fresh, driver::ImportModelFile(model.path));
    const Clock::time_point start = Clock::now();
    absl::StatusOr<std::vector<IValue>> want = runtime::RunGraph(*fresh.graph, inputs);
    trace.Complete("interpreter (check)", "run", start, Clock::now());
    if (!want.ok()) {
      return absl::Status(want.status().code(),
                          absl::StrCat(model_arg, ": the interpreter: ", want.status().message()));
    }
    if (options.precision) {
      // A narrower precision cannot meet float32's tolerance: report the
      // error against the float32 interpreter instead of failing.
      std::vector<Tensor> want_tensors;
      for (const IValue& v : *want) {
        if (!v.isTensor()) return absl::InternalError("run: the interpreter returned a non-tensor output");
        want_tensors.push_back(v.toTensor());
      }
      ASSIGN_OR_RETURN(const driver::OutputError e, driver::CompareOutputs(outs, want_tensors));
      report.compiled["error_vs_fp32"] = {{"max_abs", e.max_abs}, {"rel_l2", e.rel_l2}};
      if (!absl::GetFlag(FLAGS_json)) {
        std::printf("check against the float32 interpreter: max abs difference %.3g, relative L2 %.3g\n",
                    e.max_abs, e.rel_l2);
      }
    } else {
      report.checks.push_back(CompareWithInterpreter(report.outputs, *want, tolerance));
    }
  }
  if (!trace_path.empty()) RETURN_IF_ERROR(trace.WriteTo(trace_path));
  return Finish(model_arg, model, tolerance, std::move(report));
}

absl::Status RunInterpreted(const std::string& model_arg, const testing::Tolerance& tolerance) {
  ASSIGN_OR_RETURN(driver::ImportedModel imported,
                   driver::ImportModelFile(ResolveUserPath(model_arg)));
  RunReport report;
  report.backend = "interpreter";
  report.import_ms = imported.import_ms;
  RETURN_IF_ERROR(driver::RunPipeline(*imported.graph, absl::GetFlag(FLAGS_pipeline),
                                      &report.passes_ms));
  ASSIGN_OR_RETURN(std::vector<IValue> inputs, ModelInputs(imported));
  runtime::Interpreter interp(*imported.graph);
  RETURN_IF_ERROR(interp.Prepare());
  const auto start = Clock::now();
  absl::StatusOr<std::vector<IValue>> outs = interp.Run(inputs);
  if (!outs.ok()) {
    return absl::Status(outs.status().code(), absl::StrCat(model_arg, ": ", outs.status().message()));
  }
  report.run_ms.push_back(Ms(start, Clock::now()));
  report.outputs = *std::move(outs);
  report.nodes_executed = interp.stats().nodes_executed;
  return Finish(model_arg, imported, tolerance, std::move(report));
}

absl::Status RunRun(const std::vector<std::string>& args) {
  RETURN_IF_ERROR(ExpectArgCount(args, 1, "run", "one model file (.onnx or .pt2)"));
  const std::string backend = absl::GetFlag(FLAGS_backend);
  if (!absl::GetFlag(FLAGS_trace).empty() && backend != "compiled" && absl::GetFlag(FLAGS_device) == "cpu") {
    return absl::InvalidArgumentError("run: --trace needs --backend compiled");
  }
  ASSIGN_OR_RETURN(const testing::Tolerance tolerance, ToleranceFromFlags(kRunAtol));
  // A device other than the CPU means the compiled backend.
  if (backend == "compiled" || absl::GetFlag(FLAGS_device) != "cpu") return RunCompiled(args[0], tolerance);
  if (backend == "interpreter") return RunInterpreted(args[0], tolerance);
  return absl::InvalidArgumentError(
      absl::StrCat("run: unknown --backend '", backend, "' (available: interpreter, compiled)"));
}

}  // namespace

Command RunCommand() {
  Command command;
  command.name = "run";
  command.summary = "Run a model (ONNX or .pt2): import, -O2, execute; print outputs and times.";
  command.usage =
      "MODEL.onnx|MODEL.pt2 [--inputs DIR] [--backend interpreter|compiled] [--device cpu|cuda[:N]]\n"
      "           [--iterations N] [--warmup W] [--profile N] [--precision bf16|fp16|tf32|fp32]\n"
      "           [--rtol R] [--atol A] [--max_memory SIZE] [--save_outputs DIR] [--trace FILE] [--json]";
  command.details =
      "Inputs come from DIR/input_K.pb (backend-test layout) or, without --inputs,\n"
      "are generated deterministically from the model's static input shapes (a .pt2\n"
      "program's symbolic sizes take the values torch traced it with; refused when\n"
      "larger than --max_memory). When DIR also holds output_K.pb files, the\n"
      "outputs are compared with them. --backend=compiled compiles for --device\n"
      "(lowering, fusion, generated kernels; a device other than cpu implies it),\n"
      "places the inputs on the device once, times --iterations calls after --warmup\n"
      "ones on the device (CUDA events on a GPU; median, min, max) and, with --check,\n"
      "compares the outputs with the interpreter's. Comparisons use\n"
      "|actual - expected| <= atol + rtol*|expected| (NaN matches only NaN; by\n"
      "default rtol 1e-3 and atol 1e-5, torch.testing's float32 tolerance); any\n"
      "mismatch exits 1. On cuda, calls after the first replay one CUDA graph\n"
      "(KILN_CUDA_GRAPHS=0: off). --profile N times every kernel and extern over N more\n"
      "calls. --precision=bf16|fp16 casts the float32 model as torch.autocast does\n"
      "(matmuls and convolutions narrow, softmax/norms/sums float32, weights converted\n"
      "once), tf32 runs float32 matmuls on TF32 tensor cores; the check then reports\n"
      "the error against the float32 interpreter. --save_outputs writes output_K.pb.";
  command.flags = {"inputs",     "backend", "device",       "pipeline",  "iterations", "warmup",
                   "check",      "profile", "precision",    "rtol",      "atol",       "max_memory",
                   "save_outputs", "trace", "json"};
  command.run = RunRun;
  return command;
}

}  // namespace kiln::tools
