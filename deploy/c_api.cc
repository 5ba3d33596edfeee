// kiln_model.h over DeployedModel. Nothing thrown crosses the C boundary:
// each entry point catches everything and turns it into a status and the
// calling thread's message.
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "deploy/deployed_model.h"
#include "deploy/c_api_tensors.h"
#include "deploy/dlpack_tensor.h"
#include "deploy/kiln_model.h"

struct KilnModel {
  std::unique_ptr<kiln::deploy::DeployedModel> model;
  // What *_info hands out (owned here, stable until destroy).
  struct Info {
    std::string name;
    DLDataType dtype;
    std::vector<int64_t> shape;
  };
  std::vector<Info> inputs;
  std::vector<Info> outputs;
};

namespace {

thread_local std::string last_error;

KilnStatus Fail(KilnStatus status, const std::string& message) {
  last_error = message;
  return status;
}

KilnStatus Ok() {
  last_error.clear();
  return KILN_OK;
}

KilnStatus FromStatus(const absl::Status& s, KilnStatus otherwise) {
  if (s.ok()) return Ok();
  if (absl::IsResourceExhausted(s)) return Fail(KILN_OUT_OF_MEMORY, s.ToString());
  return Fail(otherwise, s.ToString());
}

// Runs `body`, turning exceptions into statuses.
template <typename F>
KilnStatus Guard(F body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return Fail(KILN_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception& e) {
    return Fail(KILN_INTERNAL, absl::StrCat("internal error: ", e.what()));
  } catch (...) {
    return Fail(KILN_INTERNAL, "internal error (unknown exception)");
  }
}

std::vector<KilnModel::Info> InfosOf(const std::vector<kiln::deploy::TensorInfo>& infos) {
  std::vector<KilnModel::Info> out;
  for (const kiln::deploy::TensorInfo& i : infos) {
    absl::StatusOr<DLDataType> dtype = kiln::capi::DTypeToDLPack(i.dtype);
    // Every kiln dtype has a code; lanes 0 would mark one that had not.
    out.push_back({i.name, dtype.ok() ? *dtype : DLDataType{kDLOpaqueHandle, 0, 0}, i.shape});
  }
  return out;
}

KilnStatus Info(const KilnModel* model, size_t index, KilnTensorInfo* info, bool input) {
  if (model == nullptr || info == nullptr) return Fail(KILN_INVALID_ARGUMENT, "null model or info");
  const std::vector<KilnModel::Info>& infos = input ? model->inputs : model->outputs;
  if (index >= infos.size()) {
    return Fail(KILN_INVALID_ARGUMENT, absl::StrCat(input ? "input" : "output", " index ", index,
                                                    " out of range (the model has ", infos.size(), ")"));
  }
  const KilnModel::Info& i = infos[index];
  info->name = i.name.c_str();
  info->dtype = i.dtype;
  info->ndim = static_cast<int32_t>(i.shape.size());
  info->shape = i.shape.data();
  return Ok();
}

}  // namespace

extern "C" {

uint32_t kiln_model_api_version(void) { return KILN_MODEL_API_VERSION; }

const char* kiln_last_error(void) { return last_error.c_str(); }

KilnStatus kiln_model_create(const char* model_dir, KilnModel** model) {
  return Guard([&] {
    if (model == nullptr) return Fail(KILN_INVALID_ARGUMENT, "kiln_model_create: null output pointer");
    *model = nullptr;
    if (model_dir == nullptr) return Fail(KILN_INVALID_ARGUMENT, "kiln_model_create: null directory");
    absl::StatusOr<std::unique_ptr<kiln::deploy::DeployedModel>> loaded =
        kiln::deploy::DeployedModel::Load(model_dir);
    if (!loaded.ok()) return FromStatus(loaded.status(), KILN_INVALID_MODEL);
    auto handle = std::make_unique<KilnModel>();
    handle->inputs = InfosOf((*loaded)->inputs());
    handle->outputs = InfosOf((*loaded)->outputs());
    handle->model = *std::move(loaded);
    *model = handle.release();
    return Ok();
  });
}

KilnStatus kiln_model_destroy(KilnModel* model) {
  return Guard([&] {
    delete model;
    return Ok();
  });
}

KilnStatus kiln_model_num_inputs(const KilnModel* model, size_t* count) {
  if (model == nullptr || count == nullptr) return Fail(KILN_INVALID_ARGUMENT, "null model or count");
  *count = model->inputs.size();
  return Ok();
}

KilnStatus kiln_model_num_outputs(const KilnModel* model, size_t* count) {
  if (model == nullptr || count == nullptr) return Fail(KILN_INVALID_ARGUMENT, "null model or count");
  *count = model->outputs.size();
  return Ok();
}

KilnStatus kiln_model_input_info(const KilnModel* model, size_t index, KilnTensorInfo* info) {
  return Info(model, index, info, /*input=*/true);
}

KilnStatus kiln_model_output_info(const KilnModel* model, size_t index, KilnTensorInfo* info) {
  return Info(model, index, info, /*input=*/false);
}

KilnStatus kiln_model_run(KilnModel* model, const DLTensor* inputs, size_t num_inputs, DLTensor* outputs,
                          size_t num_outputs) {
  return Guard([&] {
    if (model == nullptr) return Fail(KILN_INVALID_ARGUMENT, "kiln_model_run: null model");
    if (num_inputs != model->inputs.size() || num_outputs != model->outputs.size()) {
      return Fail(KILN_INVALID_ARGUMENT,
                  absl::StrCat("kiln_model_run: the model takes ", model->inputs.size(), " inputs and ",
                               model->outputs.size(), " outputs, got ", num_inputs, " and ", num_outputs));
    }
    if ((num_inputs > 0 && inputs == nullptr) || (num_outputs > 0 && outputs == nullptr)) {
      return Fail(KILN_INVALID_ARGUMENT, "kiln_model_run: null inputs or outputs");
    }
    const std::vector<kiln::deploy::TensorInfo>& in_infos = model->model->inputs();
    const std::vector<kiln::deploy::TensorInfo>& out_infos = model->model->outputs();
    std::vector<kiln::Tensor> args;
    for (size_t i = 0; i < num_inputs; ++i) {
      absl::StatusOr<kiln::Tensor> t =
          kiln::deploy::InputFromDLTensor(inputs[i], in_infos[i], absl::StrCat("input ", i));
      if (!t.ok()) return FromStatus(t.status(), KILN_INVALID_ARGUMENT);
      args.push_back(*std::move(t));
    }
    for (size_t i = 0; i < num_outputs; ++i) {
      const absl::Status s = kiln::deploy::CheckDLTensor(outputs[i], out_infos[i], absl::StrCat("output ", i));
      if (!s.ok()) return FromStatus(s, KILN_INVALID_ARGUMENT);
    }
    absl::StatusOr<std::vector<kiln::Tensor>> results = model->model->Run(args);
    if (!results.ok()) {
      return FromStatus(results.status(), absl::IsInvalidArgument(results.status()) ? KILN_INVALID_ARGUMENT
                                                                                     : KILN_INTERNAL);
    }
    for (size_t i = 0; i < num_outputs; ++i) {
      const absl::Status s = kiln::deploy::CopyToDLTensor((*results)[i], outputs[i]);
      if (!s.ok()) return FromStatus(s, KILN_INTERNAL);
    }
    return Ok();
  });
}

}  // extern "C"
