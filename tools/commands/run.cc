#include "tools/commands/run.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "frontend/onnx/importer.h"
#include "frontend/onnx/tensor_proto.h"
#include "ir/ivalue.h"
#include "runtime/interpreter.h"
#include "testing/onnx_conformance.h"
#include "driver/initialize.h"
#include "driver/measure.h"
#include "driver/model.h"
#include "tools/file_io.h"

ABSL_FLAG(std::string, inputs, "",
          "Directory with input_K.pb files (backend-test layout); default: generated inputs");
ABSL_FLAG(int, iterations, 1, "Timed calls (compiled backend)");
ABSL_FLAG(int, warmup, 0, "Untimed calls before the timed ones (compiled backend)");
ABSL_FLAG(bool, check, true,
          "Compiled backend: also run the interpreter and report the largest difference");
ABSL_FLAG(int, profile, 0,
          "Compiled backend: time every kernel and extern over N more calls and print the table "
          "(devices that can: cuda)");
ABSL_FLAG(std::string, precision, "",
          "Compiled backend: bf16 or fp16 (the float32 model cast as torch.autocast does; weights converted "
          "once), tf32 (TF32 matmuls) or fp32; the check then reports the error against the float32 interpreter");
ABSL_FLAG(std::string, save_outputs, "",
          "Compiled backend: write the outputs to DIR/output_K.pb (ONNX TensorProto, the backend-test layout)");
ABSL_FLAG(std::string, json, "",
          "Compiled backend: write the times (compile stages, calls) and the session's notes to FILE as JSON");
ABSL_DECLARE_FLAG(std::string, backend);
ABSL_DECLARE_FLAG(std::string, device);
ABSL_DECLARE_FLAG(std::string, pipeline);

namespace kiln::tools {
namespace {

using ir::IValue;
using Clock = std::chrono::steady_clock;

double Ms(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// A deterministic input for a model input with a static shape: floats in
// [-1, 1) from a fixed linear congruential sequence, integers 0, bools false.
absl::StatusOr<IValue> GeneratedInput(const onnx::ValueInfoProto& in) {
  if (!in.type().has_tensor_type()) {
    return absl::InvalidArgumentError(
        absl::StrCat("input '", in.name(), "' is not a tensor: pass --inputs DIR"));
  }
  std::vector<int64_t> sizes;
  for (const auto& d : in.type().tensor_type().shape().dim()) {
    if (!d.has_dim_value()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input '", in.name(), "' has a symbolic dimension: pass --inputs DIR"));
    }
    sizes.push_back(d.dim_value());
  }
  const int32_t et = in.type().tensor_type().elem_type();
  Tensor t;
  if (et == onnx::TensorProto::FLOAT || et == onnx::TensorProto::DOUBLE) {
    t = Tensor::Empty(et == onnx::TensorProto::FLOAT ? DType::kFloat32 : DType::kFloat64, sizes);
    uint64_t state = 0x2545F4914F6CDD1DULL;
    for (int64_t i = 0; i < t.numel(); ++i) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      const double v = static_cast<double>(state >> 11) / static_cast<double>(1ULL << 53) * 2 - 1;
      if (t.dtype() == DType::kFloat32) {
        t.data<float>()[i] = static_cast<float>(v);
      } else {
        t.data<double>()[i] = v;
      }
    }
  } else if (et == onnx::TensorProto::INT64) {
    t = Tensor::Empty(DType::kInt64, sizes);
  } else if (et == onnx::TensorProto::INT32) {
    t = Tensor::Empty(DType::kInt32, sizes);
  } else if (et == onnx::TensorProto::BOOL) {
    t = Tensor::Empty(DType::kBool, sizes);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("input '", in.name(), "': no generator for this element type; pass --inputs DIR"));
  }
  return IValue::FromTensor(std::move(t));
}

// `s` as a JSON string literal.
std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (const unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      absl::StrAppendFormat(&out, "\\u%04x", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

// The machine-readable record of a compiled run (benchmarks/cuda_realmodels.py reads it).
std::string RunJson(const driver::CompiledModel& m, const driver::Measurement& r, const std::string& device,
                    const std::string& precision) {
  const driver::CompileTimes& t = m.compiled.times;
  std::vector<std::string> notes;
  for (const std::string& n : r.notes) notes.push_back(JsonString(n));
  for (const std::string& n : m.compiled.compiled->ReportLines()) notes.push_back(JsonString(n));
  return absl::StrFormat(
      "{\"device\": %s, \"precision\": %s, \"import_ms\": %.3f, \"passes_ms\": %.3f, \"front_ms\": %.3f, "
      "\"device_compile_ms\": %.3f, \"kernels\": %d, \"externs\": %d, \"islands\": %d, \"island_nodes\": %d, "
      "\"whole_graph_interpreted\": %s, \"median_ms\": %.5f, \"min_ms\": %.5f, \"max_ms\": %.5f, \"calls\": %d, "
      "\"timer\": %s, \"notes\": [%s]}\n",
      JsonString(device), JsonString(precision), m.model.import_ms, m.passes_ms, t.FrontHalfMs(), t.compile_ms,
      m.compiled.num_kernels, m.compiled.num_externs, m.compiled.num_islands, m.compiled.num_island_nodes,
      m.compiled.whole_graph_interpreted ? "true" : "false", r.median_ms, r.min_ms, r.max_ms,
      static_cast<int>(r.ms.size()), JsonString(r.timer), absl::StrJoin(notes, ", "));
}

std::string Summary(const IValue& v) {
  if (!v.isTensor()) return v.DebugString().substr(0, 200);
  const Tensor& t = v.toTensor();
  std::string s = absl::StrCat(DTypeName(t.dtype()), "[");
  for (size_t i = 0; i < t.sizes().size(); ++i) absl::StrAppend(&s, i ? ", " : "", t.sizes()[i]);
  absl::StrAppend(&s, "]");
  const int64_t n = t.numel();
  if (n == 0 || !t.has_data()) return s;
  double lo = t.GetDouble(0), hi = lo, sum = 0;
  int64_t argmax = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double x = t.GetDouble(i);
    lo = std::min(lo, x);
    if (x > hi) {
      hi = x;
      argmax = i;
    }
    sum += x;
  }
  absl::StrAppendFormat(&s, " min %.6g max %.6g (at %d) mean %.6g; first", lo, hi, argmax, sum / n);
  for (int64_t i = 0; i < std::min<int64_t>(n, 5); ++i) absl::StrAppendFormat(&s, " %.6g", t.GetDouble(i));
  return s;
}

absl::StatusOr<std::vector<IValue>> ModelInputs(const onnx::ModelProto& model) {
  const auto runtime_inputs = frontend::onnx_import::RuntimeInputs(model);
  std::vector<IValue> inputs;
  const std::string dir = absl::GetFlag(FLAGS_inputs);
  for (size_t k = 0; k < runtime_inputs.size(); ++k) {
    absl::StatusOr<IValue> v =
        dir.empty() ? GeneratedInput(*runtime_inputs[k])
                    : testing::ReadTestValue(absl::StrCat(ResolveUserPath(dir), "/input_", k, ".pb"),
                                             &runtime_inputs[k]->type());
    if (!v.ok()) return v.status();
    inputs.push_back(*std::move(v));
  }
  return inputs;
}

void PrintOutputs(const onnx::ModelProto& model, const std::vector<IValue>& outs) {
  for (size_t k = 0; k < outs.size(); ++k) {
    const std::string name =
        k < static_cast<size_t>(model.graph().output_size()) ? model.graph().output(k).name() : "";
    std::printf("output %zu '%s': %s\n", k, name.c_str(), Summary(outs[k]).c_str());
  }
}

int RunCompiled(const std::string& path) {
  driver::ModelCompileOptions options;
  options.pipeline = absl::GetFlag(FLAGS_pipeline);
  options.compile.device = absl::GetFlag(FLAGS_device);
  if (const std::string p = absl::GetFlag(FLAGS_precision); !p.empty()) {
    absl::StatusOr<driver::Precision> precision = driver::ParsePrecision(p);
    if (!precision.ok()) return ReportError(precision.status());
    options.precision = *precision;
  }
  absl::StatusOr<driver::CompiledModel> m = driver::CompileModelFile(path, options);
  if (!m.ok()) return ReportError(m.status());
  const onnx::ModelProto& model = *m->model.onnx;
  absl::StatusOr<std::vector<IValue>> inputs = ModelInputs(model);
  if (!inputs.ok()) return ReportError(inputs.status());
  std::vector<Tensor> tensors;
  for (const IValue& v : *inputs) {
    if (!v.isTensor()) return ReportError("run: the compiled backend takes tensor inputs only");
    tensors.push_back(v.toTensor());
  }
  driver::MeasureOptions measure;
  measure.warmup = absl::GetFlag(FLAGS_warmup);
  measure.iterations = std::max(1, absl::GetFlag(FLAGS_iterations));
  measure.profile_iterations = absl::GetFlag(FLAGS_profile);
  absl::StatusOr<driver::Measurement> r = driver::MeasureProgram(*m->compiled.compiled, tensors, measure);
  if (!r.ok()) return ReportError(r.status());
  std::vector<IValue> values;
  for (Tensor& t : r->outputs) values.push_back(IValue::FromTensor(t));
  PrintOutputs(model, values);
  if (const std::string dir = absl::GetFlag(FLAGS_save_outputs); !dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(ResolveUserPath(dir), ec);
    for (size_t k = 0; k < r->outputs.size(); ++k) {
      const std::string bytes =
          frontend::onnx_import::TensorToProto(r->outputs[k], absl::StrCat("output_", k)).SerializeAsString();
      const absl::Status s = WriteFileAtomically(absl::StrCat(ResolveUserPath(dir), "/output_", k, ".pb"), bytes);
      if (!s.ok()) return ReportError(s);
    }
  }
  if (const std::string file = absl::GetFlag(FLAGS_json); !file.empty()) {
    const absl::Status s = WriteFileAtomically(
        ResolveUserPath(file), RunJson(*m, *r, options.compile.device,
                                       options.precision ? driver::PrecisionName(*options.precision) : "fp32"));
    if (!s.ok()) return ReportError(s);
  }
  const driver::CompileTimes& ct = m->compiled.times;
  std::printf("import %.1f ms, passes %.1f ms, lower+fuse+wrapper+plan %.1f ms, %s compile %.1f ms\n",
              m->model.import_ms, m->passes_ms, ct.FrontHalfMs(), options.compile.device.c_str(), ct.compile_ms);
  for (const std::string& line : m->compiled.compiled->ReportLines()) std::printf("  %s\n", line.c_str());
  if (options.precision) {
    const driver::AutocastStats& a = m->autocast;
    std::printf("precision %s: %d ops in lower precision, %d kept in float32, %d casts, %d weights converted\n",
                driver::PrecisionName(*options.precision), a.lower_ops, a.fp32_ops, a.casts_inserted,
                a.constants_converted);
  }
  std::printf("run (compiled for %s, %d kernels, %d extern calls, %d interpreter islands with %d nodes%s): "
              "median %.3f ms, min %.3f ms, max %.3f ms over %d calls (%s; inputs placed in %.1f ms)\n",
              options.compile.device.c_str(), m->compiled.num_kernels, m->compiled.num_externs,
              m->compiled.num_islands, m->compiled.num_island_nodes,
              m->compiled.whole_graph_interpreted ? ", whole graph" : "", r->median_ms, r->min_ms, r->max_ms,
              measure.iterations, r->timer.c_str(), r->session_ms);
  for (const std::string& note : r->notes) std::printf("  %s\n", note.c_str());
  if (measure.profile_iterations > 0) {
    if (r->profile.empty()) {
      std::printf("profile: %s\n", r->profile_error.empty() ? "no steps" : r->profile_error.c_str());
    } else {
      std::printf("profile over %d calls (eager launches, events around each step):\n%s",
                  measure.profile_iterations, driver::FormatProfile(r->profile, measure.profile_iterations).c_str());
    }
  }
  if (absl::GetFlag(FLAGS_check)) {
    // The graph was compiled in place; the interpreter runs a fresh import.
    absl::StatusOr<std::unique_ptr<ir::Graph>> g = frontend::onnx_import::ImportModel(model);
    if (!g.ok()) return ReportError(g.status());
    absl::StatusOr<std::vector<IValue>> want = runtime::RunGraph(**g, *inputs);
    if (!want.ok()) return ReportError(want.status());
    std::vector<Tensor> want_tensors;
    for (const IValue& v : *want) {
      if (!v.isTensor()) return ReportError("run: the interpreter returned a non-tensor output");
      want_tensors.push_back(v.toTensor());
    }
    absl::StatusOr<driver::OutputError> e = driver::CompareOutputs(r->outputs, want_tensors);
    if (!e.ok()) return ReportError(absl::StrCat("run: against the interpreter: ", e.status().message()));
    std::printf("check against the %sinterpreter: max abs difference %.3g, relative L2 %.3g\n",
                options.precision ? "float32 " : "", e->max_abs, e->rel_l2);
  }
  return kExitOk;
}

int RunRun(const std::vector<std::string>& args) {
  if (!ExpectArgCount(args, 1, "run", "one ONNX model file")) return kExitUsageError;
  const std::string backend = absl::GetFlag(FLAGS_backend);
  // A device other than the CPU means the compiled backend.
  if (backend == "compiled" || absl::GetFlag(FLAGS_device) != "cpu") return RunCompiled(ResolveUserPath(args[0]));
  if (backend != "interpreter") {
    return ReportError(absl::StrCat("run: unknown --backend '", backend,
                                    "' (available: interpreter, compiled)"));
  }
  absl::StatusOr<driver::ImportedModel> imported = driver::ImportModelFile(ResolveUserPath(args[0]));
  if (!imported.ok()) return ReportError(imported.status());
  double passes_ms = 0;
  const absl::Status optimized =
      driver::RunPipeline(*imported->graph, absl::GetFlag(FLAGS_pipeline), &passes_ms);
  if (!optimized.ok()) return ReportError(optimized);
  const onnx::ModelProto& model = *imported->onnx;
  absl::StatusOr<std::vector<IValue>> inputs = ModelInputs(model);
  if (!inputs.ok()) return ReportError(inputs.status());
  runtime::Interpreter interp(*imported->graph);
  const absl::Status prepared = interp.Prepare();
  if (!prepared.ok()) return ReportError(prepared);
  const auto t3 = Clock::now();
  absl::StatusOr<std::vector<IValue>> outs = interp.Run(*inputs);
  if (!outs.ok()) return ReportError(outs.status());
  const auto t4 = Clock::now();
  PrintOutputs(model, *outs);
  std::printf("import %.1f ms, passes %.1f ms, run %.1f ms (%lld nodes executed, interpreter)\n",
              imported->import_ms, passes_ms, Ms(t3, t4),
              static_cast<long long>(interp.stats().nodes_executed));
  return kExitOk;
}

}  // namespace

Command RunCommand() {
  Command command;
  command.name = "run";
  command.summary = "Run an ONNX model: import, -O2, execute; print outputs and times.";
  command.usage =
      "MODEL.onnx [--inputs DIR] [--backend interpreter|compiled] [--device cpu|cuda[:N]] [--iterations N]\n"
      "    [--warmup W] [--profile N] [--precision bf16|fp16|tf32|fp32]";
  command.details =
      "Inputs come from DIR/input_K.pb (backend-test layout) or, without --inputs,\n"
      "are generated deterministically from the model's static input shapes.\n"
      "--backend=compiled compiles for --device (lowering, fusion, generated kernels), places\n"
      "the inputs on the device once, times --iterations calls after --warmup ones on the\n"
      "device (CUDA events on a GPU; median, min, max; outputs stay on the device until the\n"
      "end) and, with --check, compares the outputs with the interpreter's. A device other\n"
      "than cpu implies --backend=compiled. On cuda, calls after the first replay one CUDA\n"
      "graph (KILN_CUDA_GRAPHS=0: off). --profile N times every kernel and extern over N\n"
      "more calls and prints the table. --precision=bf16|fp16 casts the float32 model as\n"
      "torch.autocast does (matmuls and convolutions in the narrow type, softmax/norms/sums\n"
      "in float32, weights converted once); tf32 runs float32 matmuls on TF32 tensor cores.";
  command.flags = {"inputs", "backend", "device", "pipeline", "iterations", "warmup", "check", "profile",
                   "precision", "save_outputs", "json"};
  command.run = RunRun;
  return command;
}

}  // namespace kiln::tools
