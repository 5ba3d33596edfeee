// kiln_c.h over the driver: import (file, or torch.export JSON with the
// constants given), the pass pipeline, a SpecializingProgram per model.
// Every entry point converts Status (and any C++ exception) into a
// kilnc_status plus the thread's last-error message.
#include "python/kiln_c.h"

#include <chrono>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "backends/builtin.h"
#include "devices/device_registry.h"
#include "driver/initialize.h"
#include "driver/model.h"
#include "driver/specializing_program.h"
#include "frontend/pt2/importer.h"
#include "frontend/pt2/program.h"
#include "ir/op_registry.h"
#include "nlohmann/json.hpp"
#include "deploy/dlpack_tensor.h"
#include "python/dlpack_device.h"
#include "support/status.h"
#include "tools/version.h"

struct kilnc_model {
  std::unique_ptr<kiln::driver::SpecializingProgram> program;
  // Where its inputs and outputs live: kDLCPU, or the device's memory
  // (kDLCUDA for "cuda"), read and handed out in place.
  DLDevice memory = {kDLCPU, 0};
  int num_inputs = 0;
  int num_outputs = 0;
  std::string summary;
};

namespace kiln::capi {
namespace {

thread_local std::string last_error;

kilnc_status Fail(const absl::Status& s) {
  last_error = std::string(s.message());
  if (last_error.empty()) last_error = absl::StatusCodeToString(s.code());
  return static_cast<kilnc_status>(s.code());
}

// Runs `body` (returning absl::Status) with no exception escaping.
template <typename Fn>
kilnc_status Guarded(Fn&& body) {
  try {
    const absl::Status s = body();
    if (!s.ok()) return Fail(s);
    last_error.clear();
    return KILNC_OK;
  } catch (const std::bad_alloc&) {
    return Fail(absl::ResourceExhaustedError("out of memory"));
  } catch (const std::exception& e) {
    return Fail(absl::InternalError(absl::StrCat("unexpected C++ exception: ", e.what())));
  } catch (...) {
    return Fail(absl::InternalError("unexpected C++ exception"));
  }
}

absl::Status Setup() {
  static absl::Status* status = [] {
    absl::Status s = driver::Initialize();
    if (s.ok()) s = backends::RegisterBuiltinBackends();
    return new absl::Status(s);
  }();
  return *status;
}

std::string Summary(const driver::CompiledGraph& c, const driver::ImportedModel& m, double passes_ms) {
  nlohmann::json j;
  j["kernels"] = c.num_kernels;
  j["externs"] = c.num_externs;
  j["islands"] = c.num_islands;
  j["island_nodes"] = c.num_island_nodes;
  j["whole_graph_interpreted"] = c.whole_graph_interpreted;
  j["reference_externs"] = c.num_reference_externs;
  j["not_compiled_ops"] = driver::NotCompiledOps(c);  // ops run by reference kernels
  j["import_ms"] = m.import_ms;
  j["passes_ms"] = passes_ms;
  j["lower_ms"] = c.times.FrontHalfMs();
  j["device_compile_ms"] = c.times.compile_ms;
  return j.dump();
}

absl::StatusOr<std::vector<ir::IValue>> Placeholders(const DLTensor* const* tensors, int n) {
  if (n < 0 || (n > 0 && tensors == nullptr)) return absl::InvalidArgumentError("bad example inputs");
  std::vector<ir::IValue> out;
  for (int i = 0; i < n; ++i) {
    if (tensors[i] == nullptr) return absl::InvalidArgumentError(absl::StrCat("example input ", i, " is NULL"));
    ASSIGN_OR_RETURN(Tensor t, PlaceholderFromDLPack(*tensors[i], absl::StrCat("example input ", i)));
    out.push_back(ir::IValue::FromTensor(std::move(t)));
  }
  return out;
}

absl::StatusOr<std::unique_ptr<kilnc_model>> CompileModel(driver::ImportedModel model,
                                                         const kilnc_compile_options* options,
                                                         std::vector<ir::IValue> examples) {
  driver::CompileOptions compile;
  std::string pipeline = "-O2";
  int max_versions = 8;
  if (options != nullptr) {
    if (options->device != nullptr && options->device[0] != '\0') compile.device = options->device;
    if (options->pipeline != nullptr) pipeline = options->pipeline;
    if (options->max_specializations < 0) {
      return absl::InvalidArgumentError("max_specializations must be >= 0");
    }
    if (options->max_specializations > 0) max_versions = options->max_specializations;
  }
  ASSIGN_OR_RETURN(devices::DeviceName device, devices::ParseDeviceName(compile.device));
  ASSIGN_OR_RETURN(DLDevice memory, DLDeviceOf(device));
  double passes_ms = 0;
  RETURN_IF_ERROR(driver::RunPipeline(*model.graph, pipeline, &passes_ms));
  if (examples.empty()) {
    ASSIGN_OR_RETURN(examples, model.TracedInputs());  // empty for static shapes
  }
  driver::CompiledGraph first;
  ASSIGN_OR_RETURN(std::unique_ptr<driver::SpecializingProgram> program,
                   driver::SpecializingProgram::Create(*model.graph, compile, max_versions, &first,
                                                       model.Refiner(),
                                                       examples.empty() ? nullptr : &examples));
  auto m = std::make_unique<kilnc_model>();
  m->program = std::move(program);
  m->memory = memory;
  m->num_inputs = static_cast<int>(model.graph->inputs().size());
  m->num_outputs = static_cast<int>(model.graph->outputs().size());
  m->summary = Summary(first, model, passes_ms);
  return m;
}

absl::Status CheckOut(kilnc_model** out) {
  if (out == nullptr) return absl::InvalidArgumentError("out is NULL");
  *out = nullptr;
  return absl::OkStatus();
}

// A CPU model: inputs read in place from host memory, outputs on the host.
absl::StatusOr<std::vector<DLManagedTensor*>> RunOnHost(kilnc_model& model, const DLTensor* const* inputs,
                                                       int num_inputs) {
  std::vector<Tensor> in;
  in.reserve(static_cast<size_t>(num_inputs));
  for (int i = 0; i < num_inputs; ++i) {
    const std::string what = absl::StrCat("input ", i);
    RETURN_IF_ERROR(CheckHostInput(*inputs[i], what));
    ASSIGN_OR_RETURN(Tensor t, TensorFromDLPack(*inputs[i], what));
    in.push_back(std::move(t));
  }
  ASSIGN_OR_RETURN(std::vector<Tensor> result, model.program->Run(in));
  std::vector<DLManagedTensor*> made;
  for (const Tensor& t : result) {
    absl::StatusOr<DLManagedTensor*> d = TensorToDLPack(t);
    if (!d.ok()) {
      for (DLManagedTensor* m : made) m->deleter(m);
      return d.status();
    }
    made.push_back(*d);
  }
  return made;
}

// A device model: device inputs borrowed, host inputs uploaded, outputs in
// device memory, all queued on `stream`.
absl::StatusOr<std::vector<DLManagedTensor*>> RunOnDevice(kilnc_model& model, void* stream,
                                                         const DLTensor* const* inputs, int num_inputs) {
  std::vector<wrapper::DeviceRunInput> in;
  in.reserve(static_cast<size_t>(num_inputs));
  for (int i = 0; i < num_inputs; ++i) {
    ASSIGN_OR_RETURN(wrapper::DeviceRunInput t,
                     DeviceInputFromDLPack(*inputs[i], model.memory, absl::StrCat("input ", i)));
    in.push_back(std::move(t));
  }
  ASSIGN_OR_RETURN(std::vector<wrapper::DeviceBuffer> result, model.program->RunOnDevice(in, stream));
  std::vector<DLManagedTensor*> made;
  for (wrapper::DeviceBuffer& b : result) {
    absl::StatusOr<DLManagedTensor*> d = DeviceBufferToDLPack(std::move(b), model.memory);
    if (!d.ok()) {
      for (DLManagedTensor* m : made) m->deleter(m);
      return d.status();
    }
    made.push_back(*d);
  }
  return made;
}

}  // namespace
}  // namespace kiln::capi

using kiln::Tensor;
using kiln::capi::Guarded;

extern "C" {

int kilnc_api_version(void) { return KILNC_API_VERSION; }

const char* kilnc_version(void) { return kiln::tools::kKilnVersion; }

const char* kilnc_last_error(void) { return kiln::capi::last_error.c_str(); }

int kilnc_has_operator(const char* qualified_name) {
  int known = 0;
  const kilnc_status s = Guarded([&]() -> absl::Status {
    if (qualified_name == nullptr) return absl::InvalidArgumentError("qualified_name is NULL");
    RETURN_IF_ERROR(kiln::capi::Setup());
    known = kiln::ir::BuiltinOps().Find(qualified_name) != nullptr ? 1 : 0;
    return absl::OkStatus();
  });
  return s == KILNC_OK ? known : 0;
}

kilnc_status kilnc_compile_file(const char* path, const kilnc_compile_options* options,
                              const DLTensor* const* example_inputs, int num_example_inputs,
                              kilnc_model** out) {
  return Guarded([&]() -> absl::Status {
    RETURN_IF_ERROR(kiln::capi::CheckOut(out));
    if (path == nullptr) return absl::InvalidArgumentError("path is NULL");
    RETURN_IF_ERROR(kiln::capi::Setup());
    ASSIGN_OR_RETURN(std::vector<kiln::ir::IValue> examples,
                     kiln::capi::Placeholders(example_inputs, num_example_inputs));
    ASSIGN_OR_RETURN(kiln::driver::ImportedModel model, kiln::driver::ImportModelFile(path));
    absl::StatusOr<std::unique_ptr<kilnc_model>> m =
        kiln::capi::CompileModel(std::move(model), options, std::move(examples));
    if (!m.ok()) return absl::Status(m.status().code(), absl::StrCat(path, ": ", m.status().message()));
    *out = m->release();
    return absl::OkStatus();
  });
}

kilnc_status kilnc_compile_export_json(const char* json, size_t json_size, const char* origin,
                                     const char* const* constant_names,
                                     const DLTensor* const* constants, int num_constants,
                                     const kilnc_compile_options* options, kilnc_model** out) {
  return Guarded([&]() -> absl::Status {
    RETURN_IF_ERROR(kiln::capi::CheckOut(out));
    if (json == nullptr) return absl::InvalidArgumentError("json is NULL");
    if (num_constants < 0 || (num_constants > 0 && (constant_names == nullptr || constants == nullptr))) {
      return absl::InvalidArgumentError("bad constants");
    }
    RETURN_IF_ERROR(kiln::capi::Setup());
    const std::string where = origin != nullptr ? origin : "<program>";
    absl::flat_hash_map<std::string, Tensor> payloads;
    for (int i = 0; i < num_constants; ++i) {
      if (constant_names[i] == nullptr || constants[i] == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat(where, ": constant ", i, " is NULL"));
      }
      const std::string name = constant_names[i];
      ASSIGN_OR_RETURN(Tensor t, kiln::capi::TensorFromDLPack(*constants[i],
                                                              absl::StrCat(where, ": constant '", name, "'")));
      if (!payloads.emplace(name, std::move(t)).second) {
        return absl::InvalidArgumentError(absl::StrCat(where, ": constant '", name, "' given twice"));
      }
    }
    const auto start = std::chrono::steady_clock::now();
    ASSIGN_OR_RETURN(kiln::frontend::pt2::ExportedProgram program,
                     kiln::frontend::pt2::ParseExportedProgram(absl::string_view(json, json_size), where));
    ASSIGN_OR_RETURN(kiln::frontend::pt2::ImportedProgram imported,
                     kiln::frontend::pt2::ImportProgram(program, payloads, where));
    kiln::driver::ImportedModel model;
    model.path = where;
    model.format = kiln::driver::ModelFormat::kPt2;
    model.graph = std::move(imported.graph);
    model.pt2 = std::move(imported.signature);
    model.import_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    absl::StatusOr<std::unique_ptr<kilnc_model>> m = kiln::capi::CompileModel(std::move(model), options, {});
    if (!m.ok()) return absl::Status(m.status().code(), absl::StrCat(where, ": ", m.status().message()));
    *out = m->release();
    return absl::OkStatus();
  });
}

int kilnc_model_num_inputs(const kilnc_model* model) { return model != nullptr ? model->num_inputs : -1; }

int kilnc_model_num_outputs(const kilnc_model* model) { return model != nullptr ? model->num_outputs : -1; }

kilnc_status kilnc_model_run(kilnc_model* model, const DLTensor* const* inputs, int num_inputs,
                           DLManagedTensor** outputs, int num_outputs) {
  return kilnc_model_run_stream(model, nullptr, inputs, num_inputs, outputs, num_outputs);
}

kilnc_status kilnc_model_run_stream(kilnc_model* model, void* stream, const DLTensor* const* inputs,
                                  int num_inputs, DLManagedTensor** outputs, int num_outputs) {
  return Guarded([&]() -> absl::Status {
    if (model == nullptr) return absl::InvalidArgumentError("model is NULL");
    if (num_inputs != model->num_inputs || (num_inputs > 0 && inputs == nullptr)) {
      return absl::InvalidArgumentError(
          absl::StrCat("the model takes ", model->num_inputs, " inputs, got ", num_inputs));
    }
    if (num_outputs != model->num_outputs || (num_outputs > 0 && outputs == nullptr)) {
      return absl::InvalidArgumentError(absl::StrCat("the model returns ", model->num_outputs,
                                                     " outputs, room for ", num_outputs));
    }
    for (int i = 0; i < num_outputs; ++i) outputs[i] = nullptr;
    for (int i = 0; i < num_inputs; ++i) {
      if (inputs[i] == nullptr) return absl::InvalidArgumentError(absl::StrCat("input ", i, " is NULL"));
    }
    const bool on_host = model->memory.device_type == kDLCPU;
    if (on_host && stream != nullptr) {
      return absl::InvalidArgumentError("a stream was given, but the model was compiled for cpu (pass NULL)");
    }
    absl::StatusOr<std::vector<DLManagedTensor*>> made =
        on_host ? kiln::capi::RunOnHost(*model, inputs, num_inputs)
                : kiln::capi::RunOnDevice(*model, stream, inputs, num_inputs);
    if (!made.ok()) return made.status();
    if (static_cast<int>(made->size()) != num_outputs) {
      for (DLManagedTensor* m : *made) m->deleter(m);
      return absl::InternalError(absl::StrCat("the program returned ", made->size(), " outputs, not ",
                                              num_outputs));
    }
    for (int i = 0; i < num_outputs; ++i) outputs[i] = (*made)[static_cast<size_t>(i)];
    return absl::OkStatus();
  });
}

const char* kilnc_model_summary(const kilnc_model* model) {
  return model != nullptr ? model->summary.c_str() : "";
}

void kilnc_model_free(kilnc_model* model) { delete model; }

}  // extern "C"
