#include "driver/initialize.h"
#include "driver/model.h"
#include "lazy/kiln_backend.h"

#include <atomic>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "devices/device_registry.h"
#include "lazy/graph_executor.h"
#include "lazy/kiln_computation.h"
#include "lazy/kiln_lowering_context.h"
#include "lazy/metrics.h"
#include "ir/op_registry.h"
#include "runtime/kernels.h"
#include "support/status.h"
#include "wrapper/codegen.h"
#include "driver/compile_graph.h"

namespace kiln::lazy {
namespace {

constexpr const char* kTypeNames[] = {"cpu", "cuda"};

class KilnDeviceType : public BackendDeviceType {
 public:
  explicit KilnDeviceType(int8_t code) : BackendDeviceType(code) {}
  std::string ToString() const override {
    return type >= 0 && type < 2 ? kTypeNames[type] : absl::StrCat("kiln", type);
  }
};

std::shared_ptr<const BackendDeviceType> TypeOf(int8_t code) {
  static const auto* types = new std::shared_ptr<const BackendDeviceType>[2]{
      std::make_shared<KilnDeviceType>(kKilnCpu), std::make_shared<KilnDeviceType>(kKilnCuda)};
  return types[code == kKilnCuda ? 1 : 0];
}

std::optional<int8_t> CodeOf(absl::string_view name) {
  for (int8_t i = 0; i < 2; ++i) {
    if (name == kTypeNames[i]) return i;
  }
  return std::nullopt;
}

// Whether kiln can compile for and run on devices of this type here: its
// codegen is registered and, where the device registry knows the type, it
// is available. Returns the device count.
absl::StatusOr<int> CheckDeviceType(absl::string_view name) {
  if (!wrapper::CreateDeviceCodegen(std::string(name)).ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "lazy backend: device '", name, "' has no registered codegen (link its implementation "
        "and call its registration function, e.g. backends::cpu::RegisterCpuBackend(), first)"));
  }
  devices::DeviceRegistry& registry = devices::DeviceRegistry::Global();
  if (!registry.Contains(name)) return 1;
  ASSIGN_OR_RETURN(devices::DeviceRef ref, registry.Find(name));
  if (!ref.device->is_available() || ref.device->device_count() < 1) {
    return absl::FailedPreconditionError(
        absl::StrCat("lazy backend: device '", name, "' is registered but not available"));
  }
  return ref.device->device_count();
}

const KilnBackendData* AsKiln(const BackendDataPtr& data) {
  return dynamic_cast<const KilnBackendData*>(data.get());
}

class KilnBackendImpl : public BackendImplInterface {
 public:
  absl::Status Configure(const KilnBackendOptions& options) {
    std::optional<int8_t> code = CodeOf(options.device);
    if (!code.has_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat("lazy backend: unknown device type '", options.device, "' (cpu, cuda)"));
    }
    RETURN_IF_ERROR(CheckDeviceType(options.device).status());
    absl::MutexLock lock(&mu_);
    default_type_ = *code;
    default_ordinal_ = 0;
    pipeline_ = options.pipeline;
    return absl::OkStatus();
  }

  void PrepareToExit() const override { LazyGraphExecutor::Get().ClearCaches(); }
  void SetRngSeed(size_t seed) const override { rng_seed_.store(seed); }

  absl::StatusOr<BackendDataPtr> MakeComputationDataFromTensor(
      const Tensor& tensor, const Shape& shape, const BackendDevice& device) const override {
    if (!tensor.has_data()) return absl::InvalidArgumentError("upload: tensor without data");
    if (tensor.dtype() != shape.dtype || tensor.sizes() != shape.sizes) {
      return absl::InvalidArgumentError(absl::StrCat("upload: tensor is ",
                                                     Shape(tensor.dtype(), tensor.sizes()).ToString(),
                                                     ", expected ", shape.ToString()));
    }
    // A transfer: the device copy does not follow later writes to `tensor`.
    Tensor contiguous = tensor.Contiguous();
    ASSIGN_OR_RETURN(Tensor copy,
                     Tensor::FromBytes(tensor.dtype(), tensor.sizes(), contiguous.raw_data(),
                                       static_cast<size_t>(tensor.numel()) * tensor.element_size()));
    return std::make_shared<KilnBackendData>(device, shape, std::move(copy));
  }

  absl::StatusOr<BackendDataPtr> MakeComputationDataFromScalar(
      double value, DType dtype, const BackendDevice& device) const override {
    Tensor t = IsFloatingPoint(dtype) ? Tensor::ScalarDouble(value, dtype)
                                      : Tensor::ScalarInt(static_cast<int64_t>(value), dtype);
    return std::make_shared<KilnBackendData>(device, Shape(dtype, {}), std::move(t));
  }

  BackendDataPtr CreateDataPlaceholder(const BackendDevice& device,
                                       const Shape& shape) const override {
    return std::make_shared<KilnBackendData>(device, shape);
  }

  absl::StatusOr<Tensor> MakeTensorFromComputationData(
      const BackendDataPtr& data, std::optional<DType> logical_type) const override {
    const KilnBackendData* kd = AsKiln(data);
    if (kd == nullptr) return absl::InvalidArgumentError("download: not kiln backend data");
    if (!kd->HasValue()) return absl::FailedPreconditionError("download: placeholder without value");
    // A copy: the caller may write to it.
    Tensor out = kd->value().Contiguous();
    ASSIGN_OR_RETURN(out, Tensor::FromBytes(out.dtype(), out.sizes(), out.raw_data(),
                                            static_cast<size_t>(out.numel()) * out.element_size()));
    if (logical_type.has_value() && *logical_type != out.dtype()) {
      return runtime::To(out, *logical_type);
    }
    return out;
  }

  std::unique_ptr<LoweringContext> CreateLoweringContext(
      const std::string& name, const BackendDevice& device,
      absl::Span<const Node* const> post_order) const override {
    (void)post_order;  // lowered on demand from the results, in the same order
    return CreateLoweringContext(name, device);
  }
  std::unique_ptr<LoweringContext> CreateLoweringContext(
      const std::string& name, const BackendDevice& device) const override {
    return std::make_unique<KilnLoweringContext>(name, device, device.device_type().ToString());
  }

  std::vector<std::string> GetCompilationDevices(
      const std::string& device, absl::Span<const std::string> devices) const override {
    (void)devices;
    return {device};
  }

  absl::StatusOr<std::vector<ComputationPtr>> Compile(
      std::vector<ComputationPtr> instances) const override {
    std::string pipeline;
    {
      absl::MutexLock lock(&mu_);
      pipeline = pipeline_;
    }
    for (const ComputationPtr& c : instances) {
      auto* kc = dynamic_cast<KilnComputation*>(c.get());
      if (kc == nullptr) return absl::InvalidArgumentError("Compile: not a kiln computation");
      // Traced graphs are built by kiln itself: no verifier after each pass.
      RETURN_IF_ERROR(driver::RunPipeline(kc->graph(), pipeline, nullptr,
                                          /*verify_each_pass=*/false));
      driver::CompileOptions options;
      options.device = kc->device();
      ASSIGN_OR_RETURN(driver::CompiledGraph compiled, driver::CompileGraph(kc->graph(), options));
      if (compiled.compiled == nullptr) {
        return absl::InternalError("Compile: the compiler returned no program");
      }
      kc->set_compiled(std::make_unique<driver::CompiledGraph>(std::move(compiled)));
    }
    return instances;
  }

  absl::StatusOr<std::vector<BackendDataPtr>> ExecuteComputation(
      const ComputationPtr& computation, absl::Span<const BackendDataPtr> arguments,
      const BackendDevice& device) const override {
    auto* kc = dynamic_cast<KilnComputation*>(computation.get());
    if (kc == nullptr || kc->compiled() == nullptr) {
      return absl::FailedPreconditionError("ExecuteComputation: not a compiled kiln computation");
    }
    if (arguments.size() != kc->parameters_size()) {
      return absl::InvalidArgumentError(absl::StrCat("ExecuteComputation: ", arguments.size(),
                                                     " arguments for ", kc->parameters_size(),
                                                     " parameters"));
    }
    std::vector<Tensor> inputs;
    inputs.reserve(arguments.size());
    for (size_t i = 0; i < arguments.size(); ++i) {
      const KilnBackendData* kd = AsKiln(arguments[i]);
      if (kd == nullptr || !kd->HasValue()) {
        return absl::InvalidArgumentError(
            absl::StrCat("ExecuteComputation: argument ", i, " has no kiln data"));
      }
      if (kd->shape() != kc->parameter_shapes()[i]) {
        return absl::InvalidArgumentError(absl::StrCat(
            "ExecuteComputation: argument ", i, " is ", kd->shape().ToString(), ", parameter ",
            kc->parameter_names()[i], " is ", kc->parameter_shapes()[i].ToString()));
      }
      inputs.push_back(kd->value());
    }
    ASSIGN_OR_RETURN(std::vector<Tensor> outputs, kc->compiled()->compiled->Run(inputs));
    const std::vector<Shape>& expected = kc->result_shape();
    if (outputs.size() != expected.size()) {
      return absl::InternalError(absl::StrCat("ExecuteComputation: ", outputs.size(),
                                              " outputs for ", expected.size(), " results"));
    }
    std::vector<BackendDataPtr> results;
    results.reserve(outputs.size());
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (outputs[i].dtype() != expected[i].dtype || outputs[i].sizes() != expected[i].sizes) {
        return absl::InternalError(absl::StrCat(
            "ExecuteComputation: result ", i, " is ",
            Shape(outputs[i].dtype(), outputs[i].sizes()).ToString(), ", expected ",
            expected[i].ToString()));
      }
      results.push_back(std::make_shared<KilnBackendData>(device, expected[i], std::move(outputs[i])));
    }
    return results;
  }

  std::shared_ptr<const BackendDeviceType> GetDefaultDeviceType() const override {
    absl::MutexLock lock(&mu_);
    return TypeOf(default_type_);
  }
  absl::Status SetDefaultDeviceType(int8_t type) override {
    if (type != kKilnCpu && type != kKilnCuda) {
      return absl::InvalidArgumentError(absl::StrCat("lazy backend: unknown device type ", type));
    }
    RETURN_IF_ERROR(CheckDeviceType(kTypeNames[type]).status());
    absl::MutexLock lock(&mu_);
    default_type_ = type;
    default_ordinal_ = 0;
    return absl::OkStatus();
  }
  int64_t GetDefaultDeviceOrdinal() const override {
    absl::MutexLock lock(&mu_);
    return default_ordinal_;
  }
  absl::Status SetDefaultDeviceOrdinal(int64_t ordinal) override {
    int8_t type;
    {
      absl::MutexLock lock(&mu_);
      type = default_type_;
    }
    ASSIGN_OR_RETURN(int count, CheckDeviceType(kTypeNames[type]));
    if (ordinal < 0 || ordinal >= count) {
      return absl::InvalidArgumentError(absl::StrCat("lazy backend: ", kTypeNames[type], " has ",
                                                     count, " devices, not ordinal ", ordinal));
    }
    absl::MutexLock lock(&mu_);
    default_ordinal_ = ordinal;
    return absl::OkStatus();
  }
  std::shared_ptr<const BackendDeviceType> EagerFallbackDeviceType() const override {
    // The reference kernels run on the host.
    return TypeOf(kKilnCpu);
  }
  std::vector<BackendDevice> GetBackendDevices() const override {
    std::vector<BackendDevice> out;
    for (int8_t code = 0; code < 2; ++code) {
      absl::StatusOr<int> count = CheckDeviceType(kTypeNames[code]);
      if (!count.ok()) continue;
      for (int i = 0; i < *count; ++i) out.emplace_back(TypeOf(code), i);
    }
    return out;
  }
  absl::StatusOr<BackendDevice> GetBackendDevice(absl::string_view device_name) const override {
    if (device_name.empty()) {
      absl::MutexLock lock(&mu_);
      return BackendDevice(TypeOf(default_type_), default_ordinal_);
    }
    ASSIGN_OR_RETURN(devices::DeviceName parsed, devices::ParseDeviceName(device_name));
    std::optional<int8_t> code = CodeOf(parsed.type);
    if (!code.has_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat("lazy backend: unknown device type in '", device_name, "' (cpu, cuda)"));
    }
    ASSIGN_OR_RETURN(int count, CheckDeviceType(parsed.type));
    if (parsed.index >= count) {
      return absl::NotFoundError(absl::StrCat("lazy backend: ", parsed.type, " has ", count,
                                              " devices; '", device_name, "' does not exist"));
    }
    return BackendDevice(TypeOf(*code), parsed.index);
  }

  std::string GetComputationBackendText(const ComputationPtr& computation) const override {
    auto* kc = dynamic_cast<KilnComputation*>(computation.get());
    if (kc == nullptr) return "<not a kiln computation>";
    std::string out = absl::StrCat("// kiln lazy computation for ", kc->device(), "\n",
                                   kc->ToString());
    if (const driver::CompiledGraph* c = kc->compiled()) {
      absl::StrAppend(&out, "// compiled: ", c->num_kernels, " kernels, ", c->num_externs,
                      " externs, ", c->num_islands, " islands",
                      c->whole_graph_interpreted ? " (interpreted)" : "", "\n");
    }
    return out;
  }

  std::string CreateMetricReport() const override {
    LazyGraphExecutor& executor = LazyGraphExecutor::Get();
    return absl::StrCat(GlobalMetrics().Snapshot().ToString(), " compile cache: ",
                        executor.CompileCacheEntries(), " / ", executor.CompileCacheSize(),
                        " entries\n default device: ", GetBackendDevice("")->ToString(), "\n");
  }

 private:
  mutable absl::Mutex mu_;
  int8_t default_type_ ABSL_GUARDED_BY(mu_) = kKilnCpu;
  int64_t default_ordinal_ ABSL_GUARDED_BY(mu_) = 0;
  std::string pipeline_ ABSL_GUARDED_BY(mu_) = "-O2";
  mutable std::atomic<size_t> rng_seed_{0};
};

}  // namespace

absl::Status RegisterKilnLazyBackend(const KilnBackendOptions& options) {
  static KilnBackendImpl* backend = new KilnBackendImpl();
  RETURN_IF_ERROR(driver::Initialize());
  RETURN_IF_ERROR(backend->Configure(options));
  BackendRegistrar registrar(backend);
  return absl::OkStatus();
}

}  // namespace kiln::lazy
