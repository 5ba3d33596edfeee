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
#include "passes/all_passes.h"
#include "passes/pipeline.h"
#include "runtime/interpreter.h"
#include "runtime/register_kernels.h"
#include "testing/onnx_conformance.h"

ABSL_FLAG(std::string, inputs, "",
          "Directory with input_K.pb files (backend-test layout); default: generated inputs");
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

int RunRun(const std::vector<std::string>& args) {
  if (!ExpectArgCount(args, 1, "run", "one ONNX model file")) return kExitUsageError;
  if (absl::GetFlag(FLAGS_backend) != "interpreter") {
    return ReportError(absl::StrCat("run: unknown --backend '", absl::GetFlag(FLAGS_backend),
                                    "' (available: interpreter)"));
  }
  const absl::Status kernels = runtime::RegisterReferenceKernels(ir::BuiltinOps());
  if (!kernels.ok()) return ReportError(kernels);
  const auto t0 = Clock::now();
  absl::StatusOr<onnx::ModelProto> model = frontend::onnx_import::LoadModelFile(args[0]);
  if (!model.ok()) return ReportError(model.status());
  absl::StatusOr<std::unique_ptr<ir::Graph>> graph = frontend::onnx_import::ImportModel(*model);
  if (!graph.ok()) return ReportError(graph.status());
  const auto t1 = Clock::now();
  absl::StatusOr<std::unique_ptr<passes::Pipeline>> pipeline =
      passes::Pipeline::Create(absl::GetFlag(FLAGS_pipeline), passes::DefaultPassRegistry());
  if (!pipeline.ok()) return ReportError(pipeline.status());
  absl::StatusOr<bool> changed = (*pipeline)->Run(**graph);
  if (!changed.ok()) return ReportError(changed.status());
  const auto t2 = Clock::now();

  const auto runtime_inputs = frontend::onnx_import::RuntimeInputs(*model);
  std::vector<IValue> inputs;
  const std::string dir = absl::GetFlag(FLAGS_inputs);
  for (size_t k = 0; k < runtime_inputs.size(); ++k) {
    absl::StatusOr<IValue> v =
        dir.empty() ? GeneratedInput(*runtime_inputs[k])
                    : testing::ReadTestValue(absl::StrCat(dir, "/input_", k, ".pb"),
                                             &runtime_inputs[k]->type());
    if (!v.ok()) return ReportError(v.status());
    inputs.push_back(*std::move(v));
  }
  runtime::Interpreter interp(**graph);
  const absl::Status prepared = interp.Prepare();
  if (!prepared.ok()) return ReportError(prepared);
  const auto t3 = Clock::now();
  absl::StatusOr<std::vector<IValue>> outs = interp.Run(inputs);
  if (!outs.ok()) return ReportError(outs.status());
  const auto t4 = Clock::now();
  for (size_t k = 0; k < outs->size(); ++k) {
    const std::string name =
        k < static_cast<size_t>(model->graph().output_size()) ? model->graph().output(k).name() : "";
    std::printf("output %zu '%s': %s\n", k, name.c_str(), Summary((*outs)[k]).c_str());
  }
  std::printf("import %.1f ms, passes %.1f ms, run %.1f ms (%lld nodes executed, interpreter)\n",
              Ms(t0, t1), Ms(t1, t2), Ms(t3, t4),
              static_cast<long long>(interp.stats().nodes_executed));
  return kExitOk;
}

}  // namespace

Command RunCommand() {
  Command command;
  command.name = "run";
  command.summary = "Run an ONNX model: import, -O2, execute; print outputs and times.";
  command.usage = "MODEL.onnx [--inputs DIR] [--backend interpreter] [--pipeline -O2]";
  command.details =
      "Inputs come from DIR/input_K.pb (backend-test layout) or, without --inputs,\n"
      "are generated deterministically from the model's static input shapes.";
  command.flags = {"inputs", "backend", "pipeline"};
  command.run = RunRun;
  return command;
}

}  // namespace kiln::tools
