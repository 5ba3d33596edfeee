#include "backends/cuda/cuda_program.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "backends/cuda/cublas_matmul.h"
#include "backends/cuda/channels_last_conv.h"
#include "backends/cuda/channels_last_plan.h"
#include "backends/cuda/cuda_conv.h"
#include "backends/cuda/cudnn_graph_conv.h"
#include "backends/cuda/cuda_gather.h"
#include "backends/cuda/cuda_pool.h"
#include "backends/cuda/cuda_loader.h"
#include "backends/cuda/runtime_kernels.h"
#include "runtime/tensor_ops.h"
#include "support/status.h"
#include "wrapper/host_fallback.h"

namespace kiln::backends::cuda {
namespace {

using lowering::Layout;

const CudaDriverApi& Driver() { return LoadCudaLibraries().driver; }

// "[2, 3]"; with separator "," the compact "[2,3]" of the profile's rows.
std::string Shape(const std::vector<int64_t>& s, absl::string_view separator = ", ") {
  return absl::StrCat("[", absl::StrJoin(s, separator), "]");
}

int64_t Elements(const Layout& l) { return std::max<int64_t>(l.StorageElements(), 1); }

// A host copy of the storage range a layout covers from `base`, and the
// view of it with the layout.
absl::StatusOr<Tensor> DownloadRange(CUdeviceptr base, const Layout& l, CUstream stream, Tensor* staging) {
  *staging = Tensor::Empty(l.dtype, {Elements(l)});
  const int64_t bytes = l.StorageBytes();
  if (bytes > 0) {
    RETURN_IF_ERROR(CuCheck(Driver().cuMemcpyDtoHAsync(staging->raw_data(), base, static_cast<size_t>(bytes), stream),
                            "cuMemcpyDtoHAsync"));
    RETURN_IF_ERROR(CuCheck(Driver().cuStreamSynchronize(stream), "cuStreamSynchronize"));
  }
  return Tensor::View(*staging, l.sizes, l.strides, l.offset);
}

absl::Status UploadRange(const Tensor& staging, CUdeviceptr base, const Layout& l, CUstream stream) {
  const int64_t bytes = l.StorageBytes();
  if (bytes <= 0) return absl::OkStatus();
  // Pageable source: the call returns once the data is staged, so the host
  // tensor may go away right after.
  return CuCheck(Driver().cuMemcpyHtoDAsync(base, staging.raw_data(), static_cast<size_t>(bytes), stream),
                 "cuMemcpyHtoDAsync");
}

}  // namespace

const char* ExternPathName(ExternPath path) {
  switch (path) {
    case ExternPath::kCublas: return "cublas";
    case ExternPath::kCudnn: return "cudnn";
    case ExternPath::kConv: return "conv";
    case ExternPath::kGather: return "gather";
    case ExternPath::kPool: return "pool";
    case ExternPath::kMetadata: return "shape";
    case ExternPath::kHost: return "host";
  }
  return "?";
}

struct StepTimer {
  struct Entry {
    CUevent start = nullptr;
    CUevent end = nullptr;
    bool pending = false;  // both recorded in the current call
    const char* kind = "";
  };
  std::vector<Entry> steps;  // by step index
  explicit StepTimer(size_t n) : steps(n) {}
  ~StepTimer() {
    for (Entry& e : steps) {
      if (e.start != nullptr) Driver().cuEventDestroy(e.start);
      if (e.end != nullptr) Driver().cuEventDestroy(e.end);
    }
  }
  StepTimer(const StepTimer&) = delete;
  StepTimer& operator=(const StepTimer&) = delete;
};

namespace {

absl::Status TimerStart(StepTimer* timer, size_t step, CUstream stream) {
  if (timer == nullptr) return absl::OkStatus();
  StepTimer::Entry& e = timer->steps[step];
  if (e.start == nullptr) RETURN_IF_ERROR(CuCheck(Driver().cuEventCreate(&e.start, kEventDefault), "cuEventCreate"));
  if (e.end == nullptr) RETURN_IF_ERROR(CuCheck(Driver().cuEventCreate(&e.end, kEventDefault), "cuEventCreate"));
  return CuCheck(Driver().cuEventRecord(e.start, stream), "cuEventRecord");
}

absl::Status TimerEnd(StepTimer* timer, size_t step, CUstream stream, const char* kind) {
  if (timer == nullptr) return absl::OkStatus();
  StepTimer::Entry& e = timer->steps[step];
  e.pending = true;
  e.kind = kind;
  return CuCheck(Driver().cuEventRecord(e.end, stream), "cuEventRecord");
}

// A profile row's name: the op and its first two operands' shapes (a
// convolution's input and weight, a matmul's two sides) and "nhwc" for a
// channels-last convolution, so that the table tells one convolution
// shape from another (rows with the same name add up); at most 56
// characters, the table's column.
std::string ExternStepName(const ResolvedProgram& r, const ExternStep& e) {
  if (e.island) return "kiln::interpret";
  std::string name = e.op;
  for (size_t k = 0; k < e.buffer_slots.size() && k < 2; ++k) {
    absl::StrAppend(&name, k == 0 ? " " : "x", Shape(r.slot_layouts[static_cast<size_t>(e.buffer_slots[k])].sizes, ","));
  }
  if (e.channels_last) absl::StrAppend(&name, " nhwc");
  return name;
}

}  // namespace

absl::StatusOr<std::vector<wrapper::StepProfile>> CudaProgram::Profile(const std::vector<DeviceTensor>& inputs,
                                                                       CUstream stream, int iterations) {
  const ResolvedProgram& r = resolved_;
  StepTimer timer(r.steps.size());
  std::map<size_t, wrapper::StepProfile> by_step;
  CallHooks hooks;
  hooks.timer = &timer;
  for (int it = 0; it < iterations; ++it) {
    ASSIGN_OR_RETURN(std::vector<DeviceTensor> outputs, Execute(inputs, stream, hooks));
    RETURN_IF_ERROR(CuCheck(Driver().cuStreamSynchronize(stream), "cuStreamSynchronize"));
    for (size_t i = 0; i < timer.steps.size(); ++i) {
      StepTimer::Entry& e = timer.steps[i];
      if (!e.pending) continue;
      e.pending = false;
      float ms = 0;
      RETURN_IF_ERROR(CuCheck(Driver().cuEventElapsedTime(&ms, e.start, e.end), "cuEventElapsedTime"));
      wrapper::StepProfile& p = by_step[i];
      if (p.calls == 0) {
        const ProgramStep& step = r.steps[i];
        if (step.kind == ProgramStep::Kind::kLaunch) {
          p.name = r.kernel_names[static_cast<size_t>(step.index)];
        } else {
          p.name = ExternStepName(r, r.externs[static_cast<size_t>(step.index)]);
        }
        p.kind = e.kind;
      }
      ++p.calls;
      p.total_ms += ms;
    }
  }
  std::vector<wrapper::StepProfile> out;
  for (auto& [step, p] : by_step) out.push_back(std::move(p));
  return out;
}

std::vector<std::pair<std::string, std::string>> CudaProgram::SourceFiles() const {
  std::string text;
  for (size_t i = 0; i < unit_sources_.size(); ++i) {
    absl::StrAppend(&text, "// ==== NVRTC translation unit ", i + 1, " of ", unit_sources_.size(), "\n",
                    unit_sources_[i], "\n");
  }
  return {{"kernels.cu", text}};
}

std::map<std::string, wrapper::ExternRun> CudaProgram::ExternRuns() const {
  std::map<std::string, wrapper::ExternRun> runs;
  for (const ExternStep& e : resolved_.externs) {
    wrapper::ExternRun run = wrapper::ExternRun::kReference;
    if (!e.island && !e.output_slots.empty()) {
      const DType t = resolved_.slot_layouts[static_cast<size_t>(e.output_slots[0])].dtype;
      const bool float_type = t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBFloat16;
      if ((IsCublasOp(e.op) || IsConvOp(e.op)) && float_type) {
        run = wrapper::ExternRun::kLibrary;
      } else if ((IsPoolOp(e.op) && float_type) || IsGatherOp(e.op) || IsMetadataOnlyOp(e.op)) {
        run = wrapper::ExternRun::kGenerated;
      }
    }
    for (int slot : e.output_slots) runs[resolved_.slot_names[static_cast<size_t>(slot)]] = run;
  }
  return runs;
}

std::vector<std::string> CudaProgram::ReportLines() const {
  const CudaProgramStats& s = stats_;
  const CudaLibraries& libs = LoadCudaLibraries();
  std::string cudnn = libs.cudnn_status.ok()
                          ? absl::StrCat("cuDNN ", libs.cudnn_version, " (", libs.cudnn_path, ")")
                          : absl::StrCat("no cuDNN (", libs.cudnn_status.message(), "): kiln's own convolutions");
  if (libs.cudnn_status.ok()) {
    // Which cuDNN API ran the convolutions (cudnn_graph_conv.h).
    absl::StrAppend(&cudnn, "; convolutions: ",
                    CudnnGraphApiEnabled() ? "graph API first" : "legacy API only (KILN_CUDNN_BACKEND=0)");
    if (s.runs.load() > 0) {
      const int64_t graph = s.cudnn_graph_convolutions.load();
      absl::StrAppend(&cudnn, ", ran ", graph, " through the graph API and ", s.cudnn_convolutions.load() - graph,
                      " through the legacy API over ", s.runs.load(), " calls");
    }
    const GraphApiSummary g = CudnnGraphSummary();
    if (g.refused > 0) {
      absl::StrAppend(&cudnn, "; graph API refused ", g.refused, " shapes in this process (first: ", g.first_refusal,
                      ")");
    }
    // Fused epilogues inside the graph (KILN_CUDNN_GRAPH_FUSED).
    if (g.fused_refused > 0) {
      absl::StrAppend(&cudnn, "; in-graph epilogues refused for ", g.fused_refused,
                      " shapes+chains in this process (first: ", g.first_fused_refusal, ")");
    }
    if (g.fused_candidates_rejected > 0) {
      absl::StrAppend(&cudnn, "; ", g.fused_candidates_rejected,
                      " fused candidate plans dropped for their output (first: ", g.first_rejected_candidate, ")");
    }
    if (!g.first_unmapped_chain.empty()) {
      absl::StrAppend(&cudnn, "; a chain not mapped into the graph (first: ", g.first_unmapped_chain, ")");
    }
  }
  // Which convolutions run channels-last (NHWC) and which fuse their epilogue.
  std::vector<std::string> nhwc_fused, nhwc_plain, fused_nchw;
  int convs = 0;
  for (const ExternStep& e : resolved_.externs) {
    if (e.island || !IsConvOp(e.op) || e.output_slots.empty()) continue;
    ++convs;
    const std::string& name = resolved_.slot_names[static_cast<size_t>(e.output_slots[0])];
    const bool fused = e.op == "kiln::conv_post_ops";
    if (e.channels_last) {
      (fused ? nhwc_fused : nhwc_plain).push_back(name);
    } else if (fused) {
      fused_nchw.push_back(name);
    }
  }
  std::string layout = absl::StrCat(
      "channels-last: ", nhwc_fused.size() + nhwc_plain.size(), " of ", convs, " convolutions NHWC (",
      resolved_.channels_last_slots.size(), " values NHWC, ", resolved_.boundary_transposes,
      " boundary transposes per call",
      ChannelsLastSetting() == ChannelsLastMode::kOff ? "; off: KILN_CUDA_CHANNELS_LAST=0"
      : !libs.cudnn_status.ok()                       ? "; off: no cuDNN"
      : !resolved_.channels_last_skipped.empty()      ? absl::StrCat("; off: ", resolved_.channels_last_skipped)
                                                      : "",
      "); fused epilogues ", nhwc_fused.size() + fused_nchw.size(), "; NHWC+fused [", absl::StrJoin(nhwc_fused, " "),
      "] NHWC [", absl::StrJoin(nhwc_plain, " "), "] NCHW+fused [", absl::StrJoin(fused_nchw, " "), "]");
  if (s.runs.load() > 0) {
    absl::StrAppend(&layout, "; ran ", s.nhwc_convolutions.load(), " NHWC, ", s.fused_epilogues.load(),
                    " fused epilogues (", s.graph_epilogues.load(), " inside cuDNN's graph",
                    !CudnnGraphApiEnabled()     ? ", off: KILN_CUDNN_BACKEND=0"
                    : !CudnnGraphFusedEnabled() ? ", off: KILN_CUDNN_GRAPH_FUSED=0"
                                                : "",
                    ")");
    // The refusal's reason: CudaProgramStats::nhwc_error.
    if (s.nhwc_refusals.load() > 0) absl::StrAppend(&layout, ", ", s.nhwc_refusals.load(), " refused by cuDNN");
  }
  std::vector<std::string> lines = {cudnn, layout};
  if (!s.attention.empty()) lines.push_back(s.attention);
  lines.push_back(absl::StrFormat("NVRTC: %d kernels (%d distinct) in %d translation units, %d cubin cache hits; "
                          "codegen %.2f ms, NVRTC + cache %.2f ms (inside NVRTC %.2f ms summed over units), "
                          "module load %.2f ms",
                          s.kernels, s.distinct_kernels, s.translation_units, s.cache_hits, s.codegen_seconds * 1e3,
                          s.nvrtc_seconds * 1e3, s.compiler_seconds * 1e3, s.load_seconds * 1e3));
  return lines;
}

std::vector<ConvProblem> ConvProblemsOf(const ResolvedProgram& resolved) {
  std::vector<ConvProblem> convs;
  for (const ExternStep& e : resolved.externs) {
    if (e.island || !IsConvOp(e.op)) continue;
    std::vector<DeviceView> args, outs;
    for (int slot : e.buffer_slots) args.push_back(DeviceView{0, resolved.slot_layouts[static_cast<size_t>(slot)]});
    for (int slot : e.output_slots) outs.push_back(DeviceView{0, resolved.slot_layouts[static_cast<size_t>(slot)]});
    if (std::optional<ConvProblem> c = ParseConv(e.op, e.args, args, outs)) convs.push_back(*std::move(c));
  }
  return convs;
}

absl::StatusOr<std::unique_ptr<CudaProgram>> CudaProgram::Create(ResolvedProgram resolved, int device_index,
                                                                 std::map<std::string, LoadedKernel> kernels,
                                                                 std::vector<CUmodule> modules) {
  std::unique_ptr<CudaProgram> p(new CudaProgram());
  p->resolved_ = std::move(resolved);
  p->device_index_ = device_index;
  p->modules_ = std::move(modules);
  for (const std::string& name : p->resolved_.kernel_names) {
    auto it = kernels.find(name);
    if (it == kernels.end()) return absl::InternalError(absl::StrCat("cuda program: kernel '", name, "' not loaded"));
    p->kernels_.push_back(it->second);
  }
  CudaDevice device;
  RETURN_IF_ERROR(device.MakeCurrent(device_index));
  ASSIGN_OR_RETURN(CUstream stream, device.CurrentCuStream(device_index));
  for (const auto& [slot, tensor] : p->resolved_.constants) {
    const Layout& l = p->resolved_.slot_layouts[static_cast<size_t>(slot)];
    // A contiguous constant in the slot's own layout (the weights) uploads
    // from its own memory; others through a copy in the slot's layout (a
    // zeroed staging buffer and an element-wise copy of every weight were
    // most of a large model's load).
    const bool direct = tensor.has_data() && tensor.dtype() == l.dtype && l.offset == 0 && l.IsContiguous() &&
                        tensor.sizes() == l.sizes && tensor.is_contiguous();
    Tensor staging = tensor;
    if (!direct) {
      staging = Tensor::Empty(l.dtype, {Elements(l)});
      Tensor view = Tensor::View(staging, l.sizes, l.strides, l.offset);
      RETURN_IF_ERROR(runtime::CopyInto(tensor, view));
    }
    ASSIGN_OR_RETURN(std::shared_ptr<DeviceStorage> storage,
                     device.AllocateStorage(device_index, static_cast<size_t>(std::max<int64_t>(l.StorageBytes(), 1))));
    RETURN_IF_ERROR(UploadRange(staging, storage->ptr(), l, stream));
    p->constant_slots_.push_back(Slot{std::move(storage), 0});
  }
  // Channels-last convolutions' weights, permuted to KRSC once.
  p->krsc_weights_.resize(p->resolved_.externs.size());
  p->nhwc_refused_.reset(new std::atomic<bool>[p->resolved_.externs.size()]());
  for (size_t i = 0; i < p->resolved_.externs.size(); ++i) {
    const ExternStep& e = p->resolved_.externs[i];
    if (!e.channels_last || e.weight_constant < 0) continue;
    // A weight it cannot permute (not a dense 4-D tensor) leaves the
    // convolution on the plain path over the same strided buffers.
    absl::StatusOr<Tensor> permuted = PermuteToKrsc(p->resolved_.constants[static_cast<size_t>(e.weight_constant)].second);
    if (!permuted.ok()) continue;
    const Tensor& krsc = *permuted;
    const Layout l = Layout::Contiguous(krsc.dtype(), krsc.sizes(), "cuda");
    ASSIGN_OR_RETURN(std::shared_ptr<DeviceStorage> storage,
                     device.AllocateStorage(device_index, static_cast<size_t>(std::max<int64_t>(l.StorageBytes(), 1))));
    RETURN_IF_ERROR(UploadRange(krsc, storage->ptr(), l, stream));
    p->krsc_weights_[i] = std::move(storage);
  }
  RETURN_IF_ERROR(CuCheck(Driver().cuStreamSynchronize(stream), "cuStreamSynchronize"));
  p->stats_.kernels = static_cast<int>(p->kernels_.size());
  return p;
}

CudaProgram::~CudaProgram() {
  CudaDevice device;
  if ((!modules_.empty() || last_call_end_ != nullptr) && device.MakeCurrent(device_index_).ok()) {
    // Calls queued on a caller's stream (RunOnDevice returns without
    // waiting) may still use the kernels and the constants.
    if (last_call_end_ != nullptr) Driver().cuCtxSynchronize();
    if (last_call_end_ != nullptr) Driver().cuEventDestroy(last_call_end_);
    for (CUmodule m : modules_) Driver().cuModuleUnload(m);
  }
}

absl::StatusOr<std::shared_ptr<DeviceStorage>> CudaProgram::Allocate(int64_t bytes, const CallHooks& hooks) {
  CudaDevice device;
  ASSIGN_OR_RETURN(std::shared_ptr<DeviceStorage> storage,
                   device.AllocateStorage(device_index_, static_cast<size_t>(std::max<int64_t>(bytes, 1))));
  if (hooks.keep_alive != nullptr) hooks.keep_alive->push_back(storage);
  return storage;
}

bool IsMetadataOnlyOp(const std::string& op) {
  return op == "kiln::shape" || op == "kiln::size" || op == "aten::_shape_as_tensor";
}

absl::StatusOr<const DeviceStorage*> CudaProgram::MetadataResult(const ExternStep& e,
                                                                 const std::vector<DeviceView>& args,
                                                                 const std::vector<DeviceView>& outs, CUstream stream) {
  std::lock_guard<std::mutex> lock(ones_mu_);
  auto it = metadata_results_.find(&e);
  if (it != metadata_results_.end()) return it->second.get();
  if (outs.size() != 1 || !outs[0].layout.IsContiguous()) {
    return absl::InternalError(absl::StrCat("extern ", e.op, ": one contiguous output expected"));
  }
  std::vector<Tensor> host_args, host_outs;
  for (const DeviceView& v : args) host_args.push_back(Tensor::Empty(v.layout.dtype, v.layout.sizes));
  Tensor out = Tensor::Empty(outs[0].layout.dtype, outs[0].layout.sizes);
  host_outs.push_back(out);
  RETURN_IF_ERROR(wrapper::RunHostExtern(e.op, e.args, host_args, host_outs));
  const int64_t nbytes = out.numel() * static_cast<int64_t>(DTypeSize(out.dtype()));
  CudaDevice device;
  ASSIGN_OR_RETURN(std::shared_ptr<DeviceStorage> storage,
                   device.AllocateStorage(device_index_, static_cast<size_t>(std::max<int64_t>(nbytes, 1))));
  if (nbytes > 0) {
    RETURN_IF_ERROR(CuCheck(Driver().cuMemcpyHtoDAsync(storage->ptr(), out.raw_data(), static_cast<size_t>(nbytes),
                                                       stream),
                            "cuMemcpyHtoDAsync (metadata extern)"));
    RETURN_IF_ERROR(CuCheck(Driver().cuStreamSynchronize(stream), "cuStreamSynchronize"));
  }
  const DeviceStorage* raw = storage.get();
  metadata_results_.emplace(&e, std::move(storage));
  return raw;
}

absl::StatusOr<CUdeviceptr> CudaProgram::Workspace(int64_t bytes) {
  std::lock_guard<std::mutex> lock(ones_mu_);
  if (!workspace_ || static_cast<int64_t>(workspace_->nbytes()) < bytes) {
    // Allocated once, before any capture replays it (never replaced while a
    // graph could hold it: the size is fixed).
    CudaDevice device;
    ASSIGN_OR_RETURN(workspace_, device.AllocateStorage(device_index_, static_cast<size_t>(bytes)));
  }
  return workspace_->ptr();
}

absl::StatusOr<CUdeviceptr> CudaProgram::Ones(int64_t n, DType dtype, CUstream stream, const CallHooks& hooks) {
  std::lock_guard<std::mutex> lock(ones_mu_);
  OnesVector& ones = ones_[dtype];
  if (ones.count < n) {
    const int64_t count = (n + 4095) / 4096 * 4096;
    // A captured graph may still read the old vector.
    if (ones.storage && hooks.keep_alive != nullptr) hooks.keep_alive->push_back(ones.storage);
    ASSIGN_OR_RETURN(ones.storage, Allocate(count * static_cast<int64_t>(DTypeSize(dtype)), hooks));
    if (dtype == DType::kFloat32) {
      RETURN_IF_ERROR(CuCheck(
          Driver().cuMemsetD32Async(ones.storage->ptr(), 0x3f800000u, static_cast<size_t>(count), stream),
          "cuMemsetD32Async"));
    } else if (dtype == DType::kFloat16 || dtype == DType::kBFloat16) {
      const unsigned short one = dtype == DType::kFloat16 ? 0x3c00 : 0x3f80;  // NOLINT(runtime/int)
      RETURN_IF_ERROR(
          CuCheck(Driver().cuMemsetD16Async(ones.storage->ptr(), one, static_cast<size_t>(count), stream),
                  "cuMemsetD16Async"));
    } else {
      return absl::InvalidArgumentError(absl::StrCat("no vector of ones of ", DTypeName(dtype)));
    }
    ones.count = count;
  }
  return ones.storage->ptr();
}

absl::Status CudaProgram::RunExtern(const ExternStep& e, std::vector<Slot>& slots, CUstream stream,
                                    const CallHooks& hooks, ExternPath* path) {
  CudaDevice device;
  for (size_t i = 0; i < e.alloc_bytes.size(); ++i) {
    ASSIGN_OR_RETURN(std::shared_ptr<DeviceStorage> storage, Allocate(e.alloc_bytes[i], hooks));
    slots[static_cast<size_t>(e.output_slots[i])] = Slot{std::move(storage), 0};
  }
  auto view_of = [&](int slot) -> absl::StatusOr<DeviceView> {
    const Slot& s = slots[static_cast<size_t>(slot)];
    if (!s.storage) {
      return absl::InternalError(absl::StrCat("extern ", e.op, ": buffer '",
                                              resolved_.slot_names[static_cast<size_t>(slot)], "' is not live"));
    }
    return DeviceView{s.storage->ptr() + static_cast<CUdeviceptr>(s.byte_offset),
                      resolved_.slot_layouts[static_cast<size_t>(slot)]};
  };
  std::vector<DeviceView> args, outs;
  for (int slot : e.buffer_slots) {
    ASSIGN_OR_RETURN(DeviceView v, view_of(slot));
    args.push_back(std::move(v));
  }
  for (int slot : e.output_slots) {
    ASSIGN_OR_RETURN(DeviceView v, view_of(slot));
    outs.push_back(std::move(v));
  }
  if (!e.island && IsCublasOp(e.op) && LoadCudaLibraries().cublas_status.ok()) {
    ASSIGN_OR_RETURN(cublasHandle_t handle, device.CublasHandle(device_index_, stream));
    GemmContext ctx;
    ctx.handle = handle;
    ctx.stream = stream;
    ctx.tf32 = CudaDevice::MatmulTf32();
    ctx.capturing = hooks.keep_alive != nullptr;
    if (LoadCudaLibraries().cublaslt_status.ok()) {
      absl::StatusOr<cublasLtHandle_t> lt = device.CublasLtHandle(device_index_);
      absl::StatusOr<CUdeviceptr> workspace = Workspace(kLtWorkspaceBytes);
      if (lt.ok() && workspace.ok()) {
        ctx.lt = *lt;
        ctx.workspace = *workspace;
      }
    }
    ctx.ones = [this, stream, &hooks](int64_t n, DType dtype) { return Ones(n, dtype, stream, hooks); };
    std::vector<std::shared_ptr<DeviceStorage>> copies;  // stream order makes their release safe
    ctx.contiguous = [&](const DeviceView& view) -> absl::StatusOr<DeviceView> {
      ASSIGN_OR_RETURN(CUdeviceptr ptr,
                       CopyToContiguous(view, device_index_, stream, [&](int64_t bytes) -> absl::StatusOr<CUdeviceptr> {
                         ASSIGN_OR_RETURN(std::shared_ptr<DeviceStorage> s, Allocate(bytes, hooks));
                         copies.push_back(s);
                         return s->ptr();
                       }));
      return DeviceView{ptr, lowering::Layout::Contiguous(view.layout.dtype, view.layout.sizes, view.layout.device)};
    };
    if (std::optional<absl::Status> done = TryCublasExtern(e.op, e.args, args, outs, ctx)) {
      RETURN_IF_ERROR(*done);
      stats_.cublas_calls.fetch_add(1);
      *path = ExternPath::kCublas;
      return absl::OkStatus();
    }
  }
  if (!e.island && IsConvOp(e.op)) {
    const bool tf32 = CudaDevice::ConvTf32();
    // Scratch for the im2col columns and cuDNN's workspace: returned to the
    // stream's cache after the call; stream order makes its reuse by later
    // work safe.
    std::shared_ptr<DeviceStorage> scratch;
    bool used_cudnn = false, used_cudnn_graph = false, used_graph_epilogue = false;
    ConvContext ctx;
    ctx.device_index = device_index_;
    ctx.stream = stream;
    ctx.tf32 = tf32;
    ctx.capturing = hooks.keep_alive != nullptr;
    ctx.used_cudnn = &used_cudnn;
    ctx.used_cudnn_graph = &used_cudnn_graph;
    ctx.used_graph_epilogue = &used_graph_epilogue;
    if (LoadCudaLibraries().cublas_status.ok()) {
      ASSIGN_OR_RETURN(ctx.handle, device.CublasHandle(device_index_, stream, tf32));
    }
    if (LoadCudaLibraries().cudnn_status.ok()) {
      absl::StatusOr<cudnnHandle_t> cudnn = device.CudnnHandle(device_index_, stream);
      if (cudnn.ok()) {
        ctx.cudnn = *cudnn;
      } else {
        std::lock_guard<std::mutex> lock(stats_.mu);
        stats_.cudnn_error = std::string(cudnn.status().message());
      }
    }
    ctx.scratch = [&](int64_t bytes) -> absl::StatusOr<CUdeviceptr> {
      ASSIGN_OR_RETURN(scratch, Allocate(bytes, hooks));
      return scratch->ptr();
    };
    const size_t index = static_cast<size_t>(&e - resolved_.externs.data());
    const bool fused = e.op == "kiln::conv_post_ops";
    if (index < krsc_weights_.size() && krsc_weights_[index] && !nhwc_refused_[index].load() && ctx.cudnn != nullptr &&
        outs.size() == 1) {
      // The boundary transposes' scratch lives to the end of the call.
      std::vector<std::shared_ptr<DeviceStorage>> staged;
      absl::Status s = RunChannelsLastConv(e.op, e.args, args, outs[0], krsc_weights_[index]->ptr(), ctx,
                                           [&](int64_t bytes) -> absl::StatusOr<CUdeviceptr> {
                                             ASSIGN_OR_RETURN(std::shared_ptr<DeviceStorage> st, Allocate(bytes, hooks));
                                             staged.push_back(st);
                                             return st->ptr();
                                           });
      if (s.ok()) {
        stats_.gpu_convolutions.fetch_add(1);
        stats_.cudnn_convolutions.fetch_add(1);
        if (used_cudnn_graph) stats_.cudnn_graph_convolutions.fetch_add(1);
        stats_.nhwc_convolutions.fetch_add(1);
        if (fused) stats_.fused_epilogues.fetch_add(1);
        if (used_graph_epilogue) stats_.graph_epilogues.fetch_add(1);
        *path = ExternPath::kCudnn;
        return absl::OkStatus();
      }
      // cuDNN refused it: the plain path below from now on (its NCHW
      // weight, the same strided buffers); said once in the report.
      stats_.nhwc_refusals.fetch_add(1);
      {
        std::lock_guard<std::mutex> lock(stats_.mu);
        if (stats_.nhwc_error.empty()) stats_.nhwc_error = std::string(s.message());
      }
      nhwc_refused_[index].store(true);
    }
    if (std::optional<absl::Status> done = TryCudaConv(e.op, e.args, args, outs, ctx)) {
      RETURN_IF_ERROR(*done);
      stats_.gpu_convolutions.fetch_add(1);
      if (used_cudnn) stats_.cudnn_convolutions.fetch_add(1);
      if (used_cudnn_graph) stats_.cudnn_graph_convolutions.fetch_add(1);
      if (fused) stats_.fused_epilogues.fetch_add(1);
      if (used_graph_epilogue) stats_.graph_epilogues.fetch_add(1);
      *path = used_cudnn ? ExternPath::kCudnn : ExternPath::kConv;
      return absl::OkStatus();
    }
  }
  if (!e.island && IsPoolOp(e.op)) {
    if (std::optional<absl::Status> done = TryCudaPool(e.op, e.args, args, outs, device_index_, stream)) {
      RETURN_IF_ERROR(*done);
      *path = ExternPath::kPool;
      return absl::OkStatus();
    }
  }
  if (!e.island && IsGatherOp(e.op)) {
    if (std::optional<absl::Status> done = TryCudaGather(e.op, e.args, args, outs, device_index_, stream)) {
      RETURN_IF_ERROR(*done);
      *path = ExternPath::kGather;
      return absl::OkStatus();
    }
  }
  if (!e.island && IsMetadataOnlyOp(e.op)) {
    // The result depends on the input's shape alone: computed once on the
    // host (over an uninitialized tensor of that shape), kept on the device,
    // copied into the output by every call (a memcpy a CUDA graph captures).
    ASSIGN_OR_RETURN(const DeviceStorage* result, MetadataResult(e, args, outs, stream));
    const int64_t bytes = outs[0].layout.StorageBytes();
    if (bytes > 0) {
      RETURN_IF_ERROR(CuCheck(Driver().cuMemcpyDtoDAsync(outs[0].base, result->ptr(), static_cast<size_t>(bytes), stream),
                              "cuMemcpyDtoDAsync (metadata extern)"));
    }
    *path = ExternPath::kMetadata;
    return absl::OkStatus();
  }
  // Host fallback over copies.
  std::vector<Tensor> host_args, host_outs, out_staging(outs.size());
  for (const DeviceView& v : args) {
    Tensor staging;
    ASSIGN_OR_RETURN(Tensor t, DownloadRange(v.base, v.layout, stream, &staging));
    host_args.push_back(std::move(t));
  }
  for (size_t i = 0; i < outs.size(); ++i) {
    const Layout& l = outs[i].layout;
    if (!e.alloc_bytes.empty()) {
      out_staging[i] = Tensor::Empty(l.dtype, {Elements(l)});
      host_outs.push_back(Tensor::View(out_staging[i], l.sizes, l.strides, l.offset));
    } else {
      ASSIGN_OR_RETURN(Tensor t, DownloadRange(outs[i].base, l, stream, &out_staging[i]));
      host_outs.push_back(std::move(t));
    }
  }
  if (e.island) {
    RETURN_IF_ERROR(wrapper::RunHostIsland(*e.island, host_args, host_outs));
  } else {
    RETURN_IF_ERROR(wrapper::RunHostExtern(e.op, e.args, host_args, host_outs));
  }
  for (size_t i = 0; i < outs.size(); ++i) {
    RETURN_IF_ERROR(UploadRange(out_staging[i], outs[i].base, outs[i].layout, stream));
  }
  stats_.host_fallbacks.fetch_add(1);
  *path = ExternPath::kHost;
  {
    std::lock_guard<std::mutex> lock(stats_.mu);
    ++stats_.fallback_ops[e.island ? std::string("kiln::interpret") : e.op];
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<DeviceTensor>> CudaProgram::RunDevice(const std::vector<DeviceTensor>& inputs) {
  CudaDevice device;
  RETURN_IF_ERROR(device.MakeCurrent(device_index_));
  ASSIGN_OR_RETURN(CUstream stream, device.CurrentCuStream(device_index_));
  return Execute(inputs, stream, CallHooks{});
}

absl::StatusOr<std::vector<DeviceTensor>> CudaProgram::Execute(const std::vector<DeviceTensor>& inputs,
                                                               CUstream stream, const CallHooks& hooks) {
  const ResolvedProgram& r = resolved_;
  if (inputs.size() != r.input_slots.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("compiled program takes ", r.input_slots.size(), " inputs, got ", inputs.size()));
  }
  CudaDevice device;
  RETURN_IF_ERROR(device.MakeCurrent(device_index_));
  std::vector<Slot> slots(r.slot_names.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Layout& l = r.slot_layouts[static_cast<size_t>(r.input_slots[i])];
    if (!inputs[i].storage || inputs[i].layout.dtype != l.dtype || inputs[i].layout.sizes != l.sizes ||
        inputs[i].layout.strides != l.strides || inputs[i].layout.offset != l.offset) {
      return absl::InvalidArgumentError(absl::StrCat("device input ", i, " is not laid out as ", l.ToString(),
                                                     " (use Upload)"));
    }
    slots[static_cast<size_t>(r.input_slots[i])] = Slot{inputs[i].storage, inputs[i].byte_offset};
  }
  for (size_t i = 0; i < r.constants.size(); ++i) {
    slots[static_cast<size_t>(r.constants[i].first)] = constant_slots_[i];
  }
  std::vector<CUdeviceptr> values;
  std::vector<void*> params;
  for (size_t step_index = 0; step_index < r.steps.size(); ++step_index) {
    const ProgramStep& step = r.steps[step_index];
    switch (step.kind) {
      case ProgramStep::Kind::kAllocate: {
        ASSIGN_OR_RETURN(std::shared_ptr<DeviceStorage> storage, Allocate(step.bytes, hooks));
        slots[static_cast<size_t>(step.dst)] = Slot{std::move(storage), 0};
        break;
      }
      case ProgramStep::Kind::kRelease:
        slots[static_cast<size_t>(step.dst)] = Slot{};
        break;
      case ProgramStep::Kind::kAlias: {
        Slot& dst = slots[static_cast<size_t>(step.dst)];
        if (step.only_if_empty && dst.storage) break;
        dst = slots[static_cast<size_t>(step.src)];
        if (step.release_src && step.src != step.dst) slots[static_cast<size_t>(step.src)] = Slot{};
        break;
      }
      case ProgramStep::Kind::kLaunch: {
        const LoadedKernel& k = kernels_[static_cast<size_t>(step.index)];
        values.resize(step.args.size());
        params.resize(step.args.size());
        for (size_t i = 0; i < step.args.size(); ++i) {
          const Slot& s = slots[static_cast<size_t>(step.args[i])];
          if (!s.storage) {
            return absl::InternalError(absl::StrCat("kernel ", r.kernel_names[static_cast<size_t>(step.index)],
                                                    ": buffer '", r.slot_names[static_cast<size_t>(step.args[i])],
                                                    "' is not live"));
          }
          values[i] = s.storage->ptr() + static_cast<CUdeviceptr>(s.byte_offset);
          params[i] = &values[i];
        }
        const KernelLaunchConfig& c = k.launch;
        // An empty index space (a zero-size buffer) has nothing to launch.
        if (c.grid[0] <= 0 || c.grid[1] <= 0 || c.grid[2] <= 0 || c.block[0] <= 0) break;
        RETURN_IF_ERROR(TimerStart(hooks.timer, step_index, stream));
        RETURN_IF_ERROR(CuCheck(
            Driver().cuLaunchKernel(k.function, static_cast<unsigned>(c.grid[0]), static_cast<unsigned>(c.grid[1]),
                                    static_cast<unsigned>(c.grid[2]), static_cast<unsigned>(c.block[0]),
                                    static_cast<unsigned>(c.block[1]), static_cast<unsigned>(c.block[2]),
                                    static_cast<unsigned>(c.shared_bytes), stream, params.data(), nullptr),
            "cuLaunchKernel"));
        RETURN_IF_ERROR(TimerEnd(hooks.timer, step_index, stream, "kernel"));
        stats_.launches.fetch_add(1);
        break;
      }
      case ProgramStep::Kind::kExtern: {
        RETURN_IF_ERROR(TimerStart(hooks.timer, step_index, stream));
        ExternPath path = ExternPath::kHost;
        RETURN_IF_ERROR(RunExtern(r.externs[static_cast<size_t>(step.index)], slots, stream, hooks, &path));
        RETURN_IF_ERROR(TimerEnd(hooks.timer, step_index, stream, ExternPathName(path)));
        break;
      }
      case ProgramStep::Kind::kSetDevice:
        if (step.index != device_index_) {
          return absl::UnimplementedError(absl::StrCat("cuda program for cuda:", device_index_,
                                                       " switches to cuda:", step.index));
        }
        break;
    }
  }
  std::vector<DeviceTensor> outputs;
  for (int slot : r.output_slots) {
    const Slot& s = slots[static_cast<size_t>(slot)];
    const Layout& l = r.slot_layouts[static_cast<size_t>(slot)];
    if (!s.storage) {
      return absl::InternalError(absl::StrCat("output '", r.slot_names[static_cast<size_t>(slot)], "' is not live"));
    }
    DeviceTensor t{s.storage, s.byte_offset, l};
    bool is_constant = false;
    for (const Slot& c : constant_slots_) is_constant = is_constant || c.storage == s.storage;
    if (is_constant) {
      // Callers may write outputs; never hand out the program's constants.
      const size_t bytes = static_cast<size_t>(std::max<int64_t>(l.StorageBytes(), 1));
      ASSIGN_OR_RETURN(std::shared_ptr<DeviceStorage> copy, Allocate(static_cast<int64_t>(bytes), hooks));
      RETURN_IF_ERROR(CuCheck(Driver().cuMemcpyDtoDAsync(copy->ptr(), t.base(), bytes, stream), "cuMemcpyDtoDAsync"));
      t = DeviceTensor{std::move(copy), 0, l};
    }
    outputs.push_back(std::move(t));
  }
  stats_.runs.fetch_add(1);
  return outputs;
}

absl::StatusOr<DeviceTensor> CudaProgram::UploadInput(const Tensor& t, size_t i, CUstream stream) {
  const Layout& l = resolved_.slot_layouts[static_cast<size_t>(resolved_.input_slots[i])];
  if (!t.defined() || !t.has_data()) return absl::InvalidArgumentError(absl::StrCat("input ", i, " has no data"));
  if (t.dtype() != l.dtype || t.sizes() != l.sizes) {
    return absl::InvalidArgumentError(absl::StrCat("input ", i, " is ", DTypeName(t.dtype()), Shape(t.sizes()),
                                                   "; the program expects ", DTypeName(l.dtype), Shape(l.sizes)));
  }
  Tensor staging = Tensor::Empty(l.dtype, {Elements(l)});
  Tensor view = Tensor::View(staging, l.sizes, l.strides, l.offset);
  RETURN_IF_ERROR(runtime::CopyInto(t, view));
  CudaDevice device;
  ASSIGN_OR_RETURN(std::shared_ptr<DeviceStorage> storage,
                   device.AllocateStorage(device_index_, static_cast<size_t>(std::max<int64_t>(l.StorageBytes(), 1))));
  RETURN_IF_ERROR(UploadRange(staging, storage->ptr(), l, stream));
  return DeviceTensor{std::move(storage), 0, l};
}

absl::StatusOr<std::vector<DeviceTensor>> CudaProgram::Upload(const std::vector<Tensor>& inputs) {
  const ResolvedProgram& r = resolved_;
  if (inputs.size() != r.input_slots.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("compiled program takes ", r.input_slots.size(), " inputs, got ", inputs.size()));
  }
  CudaDevice device;
  RETURN_IF_ERROR(device.MakeCurrent(device_index_));
  ASSIGN_OR_RETURN(CUstream stream, device.CurrentCuStream(device_index_));
  std::vector<DeviceTensor> out;
  for (size_t i = 0; i < inputs.size(); ++i) {
    ASSIGN_OR_RETURN(DeviceTensor t, UploadInput(inputs[i], i, stream));
    out.push_back(std::move(t));
  }
  return out;
}

absl::StatusOr<DeviceTensor> CudaProgram::BorrowInput(const wrapper::DeviceBuffer& b, size_t i, CUstream stream) {
  const Layout& l = resolved_.slot_layouts[static_cast<size_t>(resolved_.input_slots[i])];
  if (b.device_index != device_index_) {
    return absl::InvalidArgumentError(absl::StrCat("input ", i, " is on cuda:", b.device_index,
                                                   "; the program runs on cuda:", device_index_));
  }
  if (b.dtype != l.dtype || b.sizes != l.sizes || b.strides.size() != b.sizes.size()) {
    return absl::InvalidArgumentError(absl::StrCat("input ", i, " is ", DTypeName(b.dtype), Shape(b.sizes),
                                                   "; the program expects ", DTypeName(l.dtype), Shape(l.sizes)));
  }
  const int64_t es = static_cast<int64_t>(DTypeSize(l.dtype));
  bool same_strides = l.strides.size() == b.strides.size();
  int64_t extent = 1;  // elements from element 0 to the last one, inclusive
  for (size_t d = 0; d < b.sizes.size(); ++d) {
    if (b.strides[d] < 0) return absl::InvalidArgumentError(absl::StrCat("input ", i, ": negative stride"));
    if (b.sizes[d] == 0) extent = 0;
    if (extent > 0) extent += (b.sizes[d] - 1) * b.strides[d];
    if (same_strides && b.sizes[d] > 1 && b.strides[d] != l.strides[d]) same_strides = false;
  }
  if (same_strides) {
    // The caller's memory, never freed by kiln; slot base + the layout's
    // offset = element 0.
    auto storage = std::make_shared<DeviceStorage>(nullptr, b.data, static_cast<size_t>(extent * es), device_index_);
    return DeviceTensor{std::move(storage), -l.offset * es, l};
  }
  if (!l.IsContiguous() || l.offset != 0) {
    return absl::UnimplementedError(absl::StrCat("input ", i, ": strides [", absl::StrJoin(b.strides, ", "),
                                                 "] where the program expects ", l.ToString()));
  }
  Layout strided = l;
  strided.strides = b.strides;
  std::shared_ptr<DeviceStorage> copy;
  ASSIGN_OR_RETURN(CUdeviceptr unused,
                   CopyToContiguous(DeviceView{static_cast<CUdeviceptr>(b.data), strided}, device_index_, stream,
                                    [&](int64_t bytes) -> absl::StatusOr<CUdeviceptr> {
                                      ASSIGN_OR_RETURN(copy, Allocate(bytes, CallHooks{}));
                                      return copy->ptr();
                                    }));
  (void)unused;
  return DeviceTensor{std::move(copy), 0, l};
}

absl::StatusOr<std::vector<wrapper::DeviceBuffer>> CudaProgram::RunOnDevice(
    const std::vector<wrapper::DeviceRunInput>& inputs, void* stream) {
  const ResolvedProgram& r = resolved_;
  if (inputs.size() != r.input_slots.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("compiled program takes ", r.input_slots.size(), " inputs, got ", inputs.size()));
  }
  std::lock_guard<std::mutex> lock(device_run_mu_);
  ASSIGN_OR_RETURN(std::unique_ptr<ScopedCallerStream> scope,
                   ScopedCallerStream::Enter(device_index_, static_cast<CUstream>(stream)));
  const CUstream cu = scope->cu();
  if (last_call_end_ == nullptr) {
    RETURN_IF_ERROR(CuCheck(Driver().cuEventCreate(&last_call_end_, kEventDisableTiming), "cuEventCreate"));
  } else if (last_call_stream_ != cu) {
    RETURN_IF_ERROR(CuCheck(Driver().cuStreamWaitEvent(cu, last_call_end_, 0), "cuStreamWaitEvent"));
  }
  std::vector<DeviceTensor> device_inputs;
  device_inputs.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    absl::StatusOr<DeviceTensor> t =
        inputs[i].host.defined() ? UploadInput(inputs[i].host, i, cu) : BorrowInput(inputs[i].device, i, cu);
    if (!t.ok()) return t.status();
    device_inputs.push_back(std::move(*t));
  }
  ASSIGN_OR_RETURN(std::vector<DeviceTensor> outs, Execute(device_inputs, cu, CallHooks{}));
  std::vector<wrapper::DeviceBuffer> result;
  result.reserve(outs.size());
  for (DeviceTensor& t : outs) {
    Layout l = t.layout;
    const int64_t es = static_cast<int64_t>(DTypeSize(l.dtype));
    if (t.storage->borrowed()) {
      // A view of an input: the caller may free the input, so the output
      // gets its own storage (the viewed elements, from element 0 on).
      const int64_t bytes = std::max<int64_t>((l.StorageElements() - l.offset) * es, 0);
      ASSIGN_OR_RETURN(std::shared_ptr<DeviceStorage> copy, Allocate(std::max<int64_t>(bytes, 1), CallHooks{}));
      if (bytes > 0) {
        RETURN_IF_ERROR(CuCheck(Driver().cuMemcpyDtoDAsync(copy->ptr(), t.base() + static_cast<CUdeviceptr>(l.offset * es),
                                                           static_cast<size_t>(bytes), cu),
                                "cuMemcpyDtoDAsync (output aliasing an input)"));
      }
      l.offset = 0;
      t = DeviceTensor{std::move(copy), 0, l};
    }
    wrapper::DeviceBuffer b;
    b.data = static_cast<uintptr_t>(t.base() + static_cast<CUdeviceptr>(l.offset * es));
    b.dtype = l.dtype;
    b.sizes = l.sizes;
    b.strides = l.strides;
    b.device_index = device_index_;
    b.owner = std::move(t.storage);
    result.push_back(std::move(b));
  }
  RETURN_IF_ERROR(CuCheck(Driver().cuEventRecord(last_call_end_, cu), "cuEventRecord"));
  last_call_stream_ = cu;
  return result;
}

absl::StatusOr<Tensor> CudaProgram::Download(const DeviceTensor& t) {
  if (!t.storage) return absl::InvalidArgumentError("download of a tensor without storage");
  CudaDevice device;
  RETURN_IF_ERROR(device.MakeCurrent(t.storage->device_index()));
  ASSIGN_OR_RETURN(CUstream stream, device.CurrentCuStream(t.storage->device_index()));
  Tensor staging;
  ASSIGN_OR_RETURN(Tensor view, DownloadRange(t.base(), t.layout, stream, &staging));
  Tensor out = Tensor::Empty(t.layout.dtype, t.layout.sizes);
  RETURN_IF_ERROR(runtime::CopyInto(view, out));
  return out;
}

absl::StatusOr<std::vector<Tensor>> CudaProgram::Run(const std::vector<Tensor>& inputs) {
  ASSIGN_OR_RETURN(std::vector<DeviceTensor> device_inputs, Upload(inputs));
  ASSIGN_OR_RETURN(std::vector<DeviceTensor> device_outputs, RunDevice(device_inputs));
  std::vector<Tensor> outputs;
  for (const DeviceTensor& t : device_outputs) {
    ASSIGN_OR_RETURN(Tensor host, Download(t));
    outputs.push_back(std::move(host));
  }
  return outputs;
}

}  // namespace kiln::backends::cuda
