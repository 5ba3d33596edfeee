#include "sim/sim_codegen.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <utility>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "devices/device_guard.h"
#include "ir/op_registry.h"
#include "runtime/interpreter.h"
#include "sim/sim_isa.h"
#include "sim/sim_launch.h"
#include "support/status.h"
#include "wrapper/validate.h"

namespace kiln_sim {
namespace {

using kiln::DType;
using kiln::Tensor;
using kiln::lowering::Layout;
namespace w = kiln::wrapper;

// Device memory of one sim index, freed with the last reference.
class DeviceBuffer {
 public:
  static absl::StatusOr<std::shared_ptr<DeviceBuffer>> Allocate(SimDevice& device, int index,
                                                                int64_t nbytes) {
    ASSIGN_OR_RETURN(kiln::devices::DeviceAllocator * allocator, device.allocator(index));
    ASSIGN_OR_RETURN(void* data, allocator->Allocate(static_cast<size_t>(nbytes), 64));
    return std::shared_ptr<DeviceBuffer>(new DeviceBuffer(allocator, data, nbytes));
  }
  ~DeviceBuffer() { allocator_->Free(data_); }
  void* data() const { return data_; }
  int64_t nbytes() const { return nbytes_; }

 private:
  DeviceBuffer(kiln::devices::DeviceAllocator* allocator, void* data, int64_t nbytes)
      : allocator_(allocator), data_(data), nbytes_(nbytes) {}
  kiln::devices::DeviceAllocator* allocator_;
  void* data_;
  int64_t nbytes_;
};

struct Binding {
  std::shared_ptr<DeviceBuffer> storage;
  Layout layout;
};

// Copies `sizes` elements between two strided arrays (strides in elements,
// pointers at element 0).
void CopyStrided(const char* src, const std::vector<int64_t>& src_strides, char* dst,
                 const std::vector<int64_t>& dst_strides, const std::vector<int64_t>& sizes,
                 size_t element_size) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  if (n == 0) return;
  std::vector<int64_t> index(sizes.size(), 0);
  const int64_t es = static_cast<int64_t>(element_size);
  for (int64_t k = 0; k < n; ++k) {
    int64_t so = 0, d = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      so += index[i] * src_strides[i];
      d += index[i] * dst_strides[i];
    }
    std::memcpy(dst + d * es, src + so * es, element_size);
    for (size_t i = sizes.size(); i-- > 0;) {
      if (++index[i] < sizes[i]) break;
      index[i] = 0;
    }
  }
}

absl::Status CheckFits(const Binding& b, const std::string& name) {
  if (b.storage == nullptr) return absl::InternalError(absl::StrCat("sim: ", name, " has no storage"));
  if (b.layout.StorageBytes() > b.storage->nbytes()) {
    return absl::InternalError(absl::StrCat("sim: ", name, "'s layout ", b.layout.ToString(),
                                            " exceeds its storage of ", b.storage->nbytes(), " bytes"));
  }
  for (int64_t s : b.layout.strides) {
    if (s < 0) return absl::UnimplementedError(absl::StrCat("sim: negative stride in ", name));
  }
  return absl::OkStatus();
}

// Device -> host: a contiguous Tensor with the binding's layout's values.
absl::StatusOr<Tensor> Download(const Binding& b, const std::string& name) {
  RETURN_IF_ERROR(CheckFits(b, name));
  Tensor t = Tensor::Empty(b.layout.dtype, b.layout.sizes);
  const size_t es = kiln::DTypeSize(b.layout.dtype);
  CopyStrided(static_cast<const char*>(b.storage->data()) + b.layout.offset * static_cast<int64_t>(es),
              b.layout.strides, static_cast<char*>(t.raw_data()), t.strides(), b.layout.sizes, es);
  return t;
}

// Host -> device: `t`'s values into the binding's layout.
absl::Status Upload(const Tensor& t, const Binding& b, const std::string& name) {
  RETURN_IF_ERROR(CheckFits(b, name));
  if (t.dtype() != b.layout.dtype || t.sizes() != b.layout.sizes || !t.has_data()) {
    return absl::InvalidArgumentError(absl::StrCat("sim: ", name, " expects ", b.layout.ToString()));
  }
  const size_t es = kiln::DTypeSize(b.layout.dtype);
  CopyStrided(static_cast<const char*>(t.raw_data()), t.strides(),
              static_cast<char*>(b.storage->data()) + b.layout.offset * static_cast<int64_t>(es),
              b.layout.strides, b.layout.sizes, es);
  return absl::OkStatus();
}

class SimProgram : public w::CompiledProgram {
 public:
  // `index`: the sim index the program runs on (its buffers live there).
  SimProgram(SimDevice& device, int index, w::WrapperProgram program,
             std::map<std::string, std::shared_ptr<const Kernel>> kernels)
      : device_(device), index_(index), program_(std::move(program)), kernels_(std::move(kernels)) {
    for (const auto& [name, layout] : program_.layouts) layouts_.emplace(name, layout);
  }

  absl::StatusOr<std::vector<Tensor>> Run(const std::vector<Tensor>& inputs) override {
    absl::StatusOr<std::vector<Tensor>> result = RunLines(inputs);
    // Whatever happened, nothing queued may outlive the buffers it uses.
    for (SimStream* stream : used_streams_) {
      absl::Status s = stream->Synchronize();
      if (!s.ok() && result.ok()) result = s;
    }
    used_streams_.clear();
    in_flight_.clear();
    return result;
  }

  const SimRunStats& stats() const { return stats_; }

 private:
  absl::StatusOr<std::vector<Tensor>> RunLines(const std::vector<Tensor>& inputs) {
    if (inputs.size() != program_.inputs.size()) {
      return absl::InvalidArgumentError(absl::StrCat("sim program: ", inputs.size(), " inputs for ",
                                                     program_.inputs.size()));
    }
    stats_ = SimRunStats();
    // The whole run (inputs, constants, host fallback) on the program's
    // index; the lines' own device contexts nest inside.
    ASSIGN_OR_RETURN(kiln::devices::DeviceGuard run_guard,
                     kiln::devices::DeviceGuard::Create(device_, index_));
    std::map<std::string, Binding> env;
    std::vector<kiln::devices::DeviceGuard> guards;
    auto bind_new = [&](const std::string& name, const Layout& layout) -> absl::Status {
      ASSIGN_OR_RETURN(auto storage, DeviceBuffer::Allocate(device_, device_.CurrentDevice(),
                                                            std::max<int64_t>(layout.StorageBytes(), 1)));
      env[name] = Binding{std::move(storage), layout};
      return absl::OkStatus();
    };
    auto find = [&](const std::string& name) -> absl::StatusOr<Binding*> {
      auto it = env.find(name);
      if (it == env.end()) return absl::InternalError(absl::StrCat("sim program: ", name, " is not live"));
      return &it->second;
    };
    for (size_t i = 0; i < inputs.size(); ++i) {
      const std::string& name = program_.inputs[i];
      RETURN_IF_ERROR(bind_new(name, layouts_.at(name)));
      RETURN_IF_ERROR(Upload(inputs[i], env[name], name));
    }
    for (const auto& [name, value] : program_.constants) {
      RETURN_IF_ERROR(bind_new(name, layouts_.at(name)));
      RETURN_IF_ERROR(Upload(value, env[name], name));
    }

    for (const w::Line& line : program_.lines) {
      if (const auto* l = std::get_if<w::EnterDeviceContextManagerLine>(&line)) {
        ASSIGN_OR_RETURN(kiln::devices::DeviceGuard guard,
                         kiln::devices::DeviceGuard::Create(device_, l->device_index));
        guards.push_back(std::move(guard));
      } else if (std::holds_alternative<w::ExitDeviceContextManagerLine>(line)) {
        if (guards.empty()) return absl::InternalError("sim program: unbalanced device context");
        RETURN_IF_ERROR(guards.back().Restore());
        guards.pop_back();
      } else if (const auto* l = std::get_if<w::AllocateLine>(&line)) {
        RETURN_IF_ERROR(bind_new(l->buffer, l->layout));
      } else if (const auto* l = std::get_if<w::FreeIfNotReusedLine>(&line)) {
        if (!l->is_reused) env.erase(l->buffer);
      } else if (const auto* l = std::get_if<w::FreeLine>(&line)) {
        env.erase(l->buffer);
      } else if (const auto* l = std::get_if<w::ReuseLine>(&line)) {
        ASSIGN_OR_RETURN(Binding * old, find(l->old_buffer));
        Binding reused{old->storage, l->layout};
        if (l->delete_old) env.erase(l->old_buffer);
        env[l->new_buffer] = std::move(reused);
      } else if (const auto* l = std::get_if<w::ReinterpretLine>(&line)) {
        ASSIGN_OR_RETURN(Binding * base, find(l->base));
        env[l->buffer] = Binding{base->storage, l->layout};
      } else if (const auto* l = std::get_if<w::KernelCallLine>(&line)) {
        RETURN_IF_ERROR(LaunchKernel(*l, env));
      } else if (const auto* l = std::get_if<w::ExternKernelLine>(&line)) {
        RETURN_IF_ERROR(RunOnHost(l->op, l->args, l->outputs, l->island, env, nullptr));
      } else if (const auto* l = std::get_if<w::ExternKernelAllocLine>(&line)) {
        for (size_t i = 0; i < l->outputs.size() && i < l->layouts.size(); ++i) {
          if (!l->outputs[i].empty()) RETURN_IF_ERROR(bind_new(l->outputs[i], l->layouts[i]));
        }
        RETURN_IF_ERROR(RunOnHost(l->op, l->args, l->outputs, l->island, env, &l->layouts));
      } else if (std::holds_alternative<w::MultiOutputLine>(line)) {
        return absl::UnimplementedError("sim program: MultiOutputLine");
      }
      // Kernel definitions were loaded by Compile; comments and null lines
      // do nothing.
    }
    RETURN_IF_ERROR(SynchronizeCurrent());
    ASSIGN_OR_RETURN(stats_.peak_device_bytes, device_.MaxMemoryAllocated(device_.CurrentDevice()));
    std::vector<Tensor> outputs;
    for (const std::string& name : program_.outputs) {
      ASSIGN_OR_RETURN(Binding * b, find(name));
      ASSIGN_OR_RETURN(Tensor t, Download(*b, name));
      outputs.push_back(std::move(t));
    }
    return outputs;
  }

  absl::StatusOr<SimStream*> CurrentStream() {
    ASSIGN_OR_RETURN(kiln::devices::Stream * stream, device_.CurrentStream(device_.CurrentDevice()));
    auto* sim = dynamic_cast<SimStream*>(stream);
    if (sim == nullptr) return absl::InternalError("sim program: current stream is not a sim stream");
    return sim;
  }

  absl::Status SynchronizeCurrent() {
    ASSIGN_OR_RETURN(SimStream * stream, CurrentStream());
    return stream->Synchronize();
  }

  absl::Status LaunchKernel(const w::KernelCallLine& call, std::map<std::string, Binding>& env) {
    auto it = kernels_.find(call.kernel_name);
    if (it == kernels_.end()) {
      return absl::InternalError(absl::StrCat("sim program: kernel ", call.kernel_name, " not loaded"));
    }
    const Kernel& kernel = *it->second;
    if (call.args.size() != kernel.params.size()) {
      return absl::InternalError(absl::StrCat("sim program: ", call.kernel_name, " called with ",
                                              call.args.size(), " arguments"));
    }
    std::vector<KernelArg> args;
    for (size_t i = 0; i < call.args.size(); ++i) {
      auto b = env.find(call.args[i]);
      if (b == env.end()) return absl::InternalError(absl::StrCat("sim program: ", call.args[i], " is not live"));
      const int64_t es = static_cast<int64_t>(kiln::DTypeSize(kernel.params[i].second));
      args.push_back(KernelArg{b->second.storage->data(), b->second.storage->nbytes() / es});
      // A Free line may drop the buffer before the queued launch runs:
      // its memory stays allocated until the stream is synchronized
      // (stream-ordered freeing, as a device's caching allocator does).
      in_flight_.push_back(b->second.storage);
    }
    ASSIGN_OR_RETURN(kiln::devices::DeviceProperties props,
                     device_.GetDeviceProperties(device_.CurrentDevice()));
    ASSIGN_OR_RETURN(SimStream * stream, CurrentStream());
    if (std::find(used_streams_.begin(), used_streams_.end(), stream) == used_streams_.end()) {
      used_streams_.push_back(stream);
    }
    ++stats_.kernel_launches;
    return Launch(*stream, it->second, GridFor(kernel, props), std::move(args));
  }

  // An extern kernel or island on the host: the stream is drained, buffer
  // arguments are copied out, results copied back into the outputs.
  absl::Status RunOnHost(const std::string& op, const std::vector<kiln::lowering::ExternArg>& args,
                         const std::vector<std::string>& outputs, int island,
                         std::map<std::string, Binding>& env, const std::vector<Layout>* layouts) {
    RETURN_IF_ERROR(SynchronizeCurrent());
    ++stats_.host_externs;
    auto download = [&](const std::string& name) -> absl::StatusOr<kiln::ir::IValue> {
      auto b = env.find(name);
      if (b == env.end()) return absl::InternalError(absl::StrCat("sim program: ", name, " is not live"));
      ASSIGN_OR_RETURN(Tensor t, Download(b->second, name));
      return kiln::ir::IValue::FromTensor(std::move(t));
    };
    std::vector<kiln::ir::IValue> values;
    for (const kiln::lowering::ExternArg& a : args) {
      if (!a.buffer.empty()) {
        ASSIGN_OR_RETURN(kiln::ir::IValue v, download(a.buffer));
        values.push_back(std::move(v));
      } else if (a.is_buffer_list) {
        std::vector<kiln::ir::IValue> list;
        for (const std::string& name : a.buffer_list) {
          ASSIGN_OR_RETURN(kiln::ir::IValue v, download(name));
          list.push_back(std::move(v));
        }
        values.push_back(kiln::ir::IValue::List(std::move(list)));
      } else {
        values.push_back(a.constant.has_value() ? *a.constant : kiln::ir::IValue::None());
      }
    }
    std::vector<kiln::ir::IValue> results;
    if (island >= 0) {
      if (island >= static_cast<int>(program_.islands.size()) || program_.islands[island] == nullptr) {
        return absl::InternalError("sim program: bad island index");
      }
      std::vector<kiln::ir::IValue> tensors;  // islands take their buffers only
      for (kiln::ir::IValue& v : values) {
        if (v.isTensor()) tensors.push_back(std::move(v));
      }
      kiln::runtime::Interpreter interpreter(*program_.islands[island]);
      ASSIGN_OR_RETURN(results, interpreter.Run(tensors));
    } else {
      const kiln::ir::Operator* overload = kiln::ir::BuiltinOps().Find(op);
      if (overload == nullptr || !overload->kernel) {
        return absl::UnimplementedError(absl::StrCat("sim program: no host kernel for ", op));
      }
      ASSIGN_OR_RETURN(results, overload->kernel(values));
    }
    std::vector<Tensor> tensors;
    for (const kiln::ir::IValue& r : results) {
      if (r.isTensor()) {
        tensors.push_back(r.toTensor());
      } else if (r.isList() || r.isTuple()) {
        for (const kiln::ir::IValue& e : r.elements()) {
          if (e.isTensor()) tensors.push_back(e.toTensor());
        }
      }
    }
    if (tensors.size() != outputs.size()) {
      return absl::InternalError(absl::StrCat("sim program: ", op, " gave ", tensors.size(),
                                              " tensors for ", outputs.size(), " outputs"));
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (outputs[i].empty()) continue;
      auto b = env.find(outputs[i]);
      if (b == env.end()) return absl::InternalError(absl::StrCat("sim program: ", outputs[i], " is not live"));
      RETURN_IF_ERROR(Upload(tensors[i], b->second, outputs[i]));
    }
    (void)layouts;
    return absl::OkStatus();
  }

  SimDevice& device_;
  int index_;
  w::WrapperProgram program_;
  std::map<std::string, std::shared_ptr<const Kernel>> kernels_;
  std::map<std::string, Layout> layouts_;
  SimRunStats stats_;
  // Buffers used by queued launches, and the streams they were queued on;
  // released once those streams are synchronized at the end of Run.
  std::vector<std::shared_ptr<DeviceBuffer>> in_flight_;
  std::vector<SimStream*> used_streams_;
};

}  // namespace

absl::StatusOr<std::string> SimCodegen::KernelSource(const kiln::lowering::LoopGraph& graph,
                                                     const kiln::lowering::FusedKernel& kernel) {
  ASSIGN_OR_RETURN(Kernel compiled, CompileKernel(graph, kernel));
  return PrintKernel(compiled);
}

absl::StatusOr<std::unique_ptr<w::CompiledProgram>> SimCodegen::Compile(
    const w::WrapperProgram& program) {
  RETURN_IF_ERROR(w::ValidateWrapperProgram(program));
  std::map<std::string, std::shared_ptr<const Kernel>> kernels;
  int index = -1;
  for (const w::Line& line : program.lines) {
    if (const auto* enter = std::get_if<w::EnterDeviceContextManagerLine>(&line)) {
      if (enter->device == device() && index < 0) index = enter->device_index;
    }
    const auto* def = std::get_if<w::KernelDefinitionLine>(&line);
    if (def == nullptr) continue;
    // Load the kernel from its text, as a driver loads a binary.
    absl::StatusOr<Kernel> kernel = ParseKernel(def->kernel_body);
    if (!kernel.ok()) {
      return absl::Status(kernel.status().code(),
                          absl::StrCat("kernel ", def->kernel_name, ": ", kernel.status().message()));
    }
    kernels[def->kernel_name] = std::make_shared<const Kernel>(*std::move(kernel));
  }
  return std::unique_ptr<w::CompiledProgram>(
      std::make_unique<SimProgram>(device_, std::max(index, 0), program, std::move(kernels)));
}

const SimRunStats* SimProgramStats(const w::CompiledProgram& program) {
  const auto* sim = dynamic_cast<const SimProgram*>(&program);
  return sim == nullptr ? nullptr : &sim->stats();
}

}  // namespace kiln_sim
