#include "deploy/deployed_model.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/cpu/cpu_program.h"
#include "backends/cpu/wrapper_codegen.h"
#include "deploy/artifact_files.h"
#include "deploy/weights_file.h"
#include "driver/initialize.h"
#include "support/atomic_file.h"
#include "support/status.h"
#include "wrapper/proto_convert.h"

namespace kiln::deploy {
namespace {

std::string Shape(const std::vector<int64_t>& s) { return absl::StrCat("[", absl::StrJoin(s, ", "), "]"); }

absl::StatusOr<const lowering::Layout*> LayoutOf(const wrapper::WrapperProgram& program,
                                                 const std::string& name) {
  for (const auto& [n, layout] : program.layouts) {
    if (n == name) return &layout;
  }
  return absl::InvalidArgumentError(absl::StrCat("the program has no layout for '", name, "'"));
}

absl::StatusOr<std::vector<TensorInfo>> Infos(const wrapper::WrapperProgram& program,
                                              const std::vector<std::string>& buffers,
                                              const std::map<std::string, std::string>& metadata,
                                              const char* prefix, const std::string& weights_path) {
  std::vector<TensorInfo> infos;
  for (size_t i = 0; i < buffers.size(); ++i) {
    ASSIGN_OR_RETURN(const lowering::Layout* layout, LayoutOf(program, buffers[i]));
    auto name = metadata.find(absl::StrCat(prefix, i));
    if (name == metadata.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(weights_path, ": no metadata '", prefix, i, "' (the name of that tensor)"));
    }
    infos.push_back({name->second, layout->dtype, layout->sizes});
  }
  return infos;
}

}  // namespace

DeployedModel::~DeployedModel() = default;

absl::StatusOr<std::unique_ptr<DeployedModel>> DeployedModel::Load(const std::string& dir) {
  RETURN_IF_ERROR(driver::Initialize());
  const std::string weights_path = absl::StrCat(dir, "/", kWeightsFile);
  const std::string program_path = absl::StrCat(dir, "/", kProgramFile);
  ASSIGN_OR_RETURN(WeightsContents weights, MapWeightsFile(weights_path));
  absl::StatusOr<std::string> program_bytes = ReadFile(program_path);
  if (!program_bytes.ok()) {
    return absl::NotFoundError(absl::StrCat(program_path, ": ", program_bytes.status().message()));
  }
  absl::StatusOr<wrapper::WrapperProgram> program =
      wrapper::DeserializeWrapperProgram(*program_bytes, weights.tensors);
  if (!program.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(program_path, ": ", program.status().message()));
  }
  // The constants' shapes must be the ones the program was planned with.
  for (const auto& [name, tensor] : program->constants) {
    ASSIGN_OR_RETURN(const lowering::Layout* layout, LayoutOf(*program, name));
    if (tensor.dtype() != layout->dtype || tensor.sizes() != layout->sizes) {
      return absl::InvalidArgumentError(absl::StrCat(
          weights_path, ": constant '", name, "' is ", DTypeName(tensor.dtype()), Shape(tensor.sizes()),
          "; the program expects ", DTypeName(layout->dtype), Shape(layout->sizes)));
    }
  }
  const auto version = weights.metadata.find(kMetaKilnVersion);
  const std::string writer = version != weights.metadata.end() ? version->second : "an unknown kiln";
  const auto hash = weights.metadata.find(kMetaSourceHash);
  if (hash == weights.metadata.end()) {
    return absl::InvalidArgumentError(absl::StrCat(weights_path, ": no metadata '", kMetaSourceHash, "'"));
  }
  ASSIGN_OR_RETURN(backends::cpu::GeneratedProgram generated, backends::cpu::GenerateProgramSource(*program));
  if (SourceHash(generated.source) != hash->second) {
    return absl::FailedPreconditionError(absl::StrCat(
        dir, " was compiled by ", writer,
        " and its program generates different source in this libmodel.so: the files of DIR come "
        "from different compiles or kiln versions (compile the model again)"));
  }
  auto model = std::unique_ptr<DeployedModel>(new DeployedModel());
  ASSIGN_OR_RETURN(model->inputs_, Infos(*program, program->inputs, weights.metadata, kMetaInputPrefix, weights_path));
  ASSIGN_OR_RETURN(model->outputs_,
                   Infos(*program, program->outputs, weights.metadata, kMetaOutputPrefix, weights_path));
  const std::string kernels_path = absl::StrCat(dir, "/", kKernelsFile);
  absl::StatusOr<std::unique_ptr<backends::cpu::CpuProgram>> loaded =
      backends::cpu::CpuProgram::Load(std::move(generated), kernels_path);
  if (!loaded.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(kernels_path, ": ", loaded.status().message()));
  }
  model->program_ = *std::move(loaded);
  return model;
}

absl::StatusOr<std::vector<Tensor>> DeployedModel::Run(const std::vector<Tensor>& inputs) {
  if (inputs.size() != inputs_.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the model takes ", inputs_.size(), " inputs, got ", inputs.size()));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorInfo& info = inputs_[i];
    if (!inputs[i].defined() || inputs[i].dtype() != info.dtype || inputs[i].sizes() != info.shape) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input ", i, " '", info.name, "' is ",
          inputs[i].defined() ? absl::StrCat(DTypeName(inputs[i].dtype()), Shape(inputs[i].sizes())) : "undefined",
          "; the model was compiled for ", DTypeName(info.dtype), Shape(info.shape),
          " (shapes are fixed at compile time; a .pt2 program with symbolic sizes is compiled at "
          "its traced sizes)"));
    }
  }
  return program_->Run(inputs);
}

}  // namespace kiln::deploy
