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
#include "frontend/onnx/importer.h"
#include "ir/ivalue.h"
#include "runtime/interpreter.h"
#include "testing/onnx_conformance.h"
#include "driver/initialize.h"
#include "driver/model.h"
#include "tools/file_io.h"

ABSL_FLAG(std::string, inputs, "",
          "Directory with input_K.pb files (backend-test layout); default: generated inputs");
ABSL_FLAG(int, iterations, 1, "Timed calls (compiled backend)");
ABSL_FLAG(int, warmup, 0, "Untimed calls before the timed ones (compiled backend)");
ABSL_FLAG(bool, check, true,
          "Compiled backend: also run the interpreter and report the largest difference");
ABSL_DECLARE_FLAG(std::string, backend);
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
  options.inputs_for = ModelInputs;  // compile for these inputs' shapes (dynamic dims)
  absl::StatusOr<driver::CompiledModel> m = driver::CompileModelFile(path, options);
  if (!m.ok()) return ReportError(m.status());
  const onnx::ModelProto& model = *m->model.onnx;
  const absl::StatusOr<std::vector<IValue>> inputs = m->inputs;
  std::vector<Tensor> tensors;
  for (const IValue& v : *inputs) {
    if (!v.isTensor()) return ReportError("run: the compiled backend takes tensor inputs only");
    tensors.push_back(v.toTensor());
  }
  wrapper::CompiledProgram& program = *m->compiled.compiled;
  for (int i = 0; i < absl::GetFlag(FLAGS_warmup); ++i) {
    absl::StatusOr<std::vector<Tensor>> r = program.Run(tensors);
    if (!r.ok()) return ReportError(r.status());
  }
  std::vector<double> ms;
  std::vector<Tensor> outs;
  const int iterations = std::max(1, absl::GetFlag(FLAGS_iterations));
  for (int i = 0; i < iterations; ++i) {
    const auto t = Clock::now();
    absl::StatusOr<std::vector<Tensor>> r = program.Run(tensors);
    ms.push_back(Ms(t, Clock::now()));
    if (!r.ok()) return ReportError(r.status());
    outs = *std::move(r);
  }
  std::vector<IValue> values;
  for (Tensor& t : outs) values.push_back(IValue::FromTensor(t));
  PrintOutputs(model, values);
  std::sort(ms.begin(), ms.end());
  const driver::CompileTimes& ct = m->compiled.times;
  std::printf("import %.1f ms, passes %.1f ms, lower+fuse+wrapper+plan %.1f ms, C++ compile %.1f ms\n",
              m->model.import_ms, m->passes_ms, ct.FrontHalfMs(), ct.compile_ms);
  std::printf("run (compiled, %d kernels, %d extern calls, %d interpreter islands with %d nodes%s): "
              "median %.3f ms, min %.3f ms, max %.3f ms over %d calls\n",
              m->compiled.num_kernels, m->compiled.num_externs, m->compiled.num_islands,
              m->compiled.num_island_nodes, m->compiled.whole_graph_interpreted ? ", whole graph" : "",
              ms[ms.size() / 2], ms.front(), ms.back(), iterations);
  if (m->compiled.num_islands > 0 || m->compiled.num_reference_externs > 0) {
    std::printf("%s", driver::NotCompiledReport(m->compiled).c_str());
  }
  if (absl::GetFlag(FLAGS_check)) {
    // The graph was compiled in place; the interpreter runs a fresh import.
    absl::StatusOr<std::unique_ptr<ir::Graph>> g = driver::ImportOnnxModel(model);
    if (!g.ok()) return ReportError(g.status());
    absl::StatusOr<std::vector<IValue>> want = runtime::RunGraph(**g, *inputs);
    if (!want.ok()) return ReportError(want.status());
    double worst = 0;
    for (size_t k = 0; k < want->size() && k < values.size(); ++k) {
      const Tensor& a = values[k].toTensor();
      const Tensor& b = (*want)[k].toTensor();
      if (a.sizes() != b.sizes() || a.dtype() != b.dtype()) {
        return ReportError(absl::StrCat("run: output ", k, " differs in shape or dtype from the interpreter's"));
      }
      for (int64_t i = 0; i < a.numel(); ++i) {
        worst = std::max(worst, std::fabs(a.GetDouble(i) - b.GetDouble(i)));
      }
    }
    std::printf("check against the interpreter: max abs difference %.3g\n", worst);
  }
  return kExitOk;
}

int RunRun(const std::vector<std::string>& args) {
  if (!ExpectArgCount(args, 1, "run", "one ONNX model file")) return kExitUsageError;
  const std::string backend = absl::GetFlag(FLAGS_backend);
  if (backend == "compiled") return RunCompiled(ResolveUserPath(args[0]));
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
      "MODEL.onnx [--inputs DIR] [--backend interpreter|compiled] [--iterations N] [--warmup W]";
  command.details =
      "Inputs come from DIR/input_K.pb (backend-test layout) or, without --inputs,\n"
      "are generated deterministically from the model's static input shapes.\n"
      "--backend=compiled compiles for the CPU (lowering, fusion, generated C++), times\n"
      "--iterations calls after --warmup ones (median, min, max) and, with --check,\n"
      "compares the outputs with the interpreter's.";
  command.flags = {"inputs", "backend", "pipeline", "iterations", "warmup", "check"};
  command.run = RunRun;
  return command;
}

}  // namespace kiln::tools
