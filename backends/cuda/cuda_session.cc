#include "backends/cuda/cuda_session.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/cuda/cuda_env.h"
#include "backends/cuda/cuda_loader.h"
#include "support/status.h"

namespace kiln::backends::cuda {
namespace {

const CudaDriverApi& Driver() { return LoadCudaLibraries().driver; }

// Host fallbacks so far, and the ops that took them.
int64_t HostFallbacks(CudaProgram& p) { return p.stats().host_fallbacks.load(); }

std::string FallbackOps(CudaProgram& p) {
  std::lock_guard<std::mutex> lock(p.stats().mu);
  std::vector<std::string> ops;
  for (const auto& [op, n] : p.stats().fallback_ops) ops.push_back(op);
  return absl::StrJoin(ops, ", ");
}

}  // namespace

CudaSessionOptions CudaSessionOptionsFromEnv() {
  CudaSessionOptions o;
  if (env::CudaGraphsOff()) o.cuda_graphs = false;
  return o;
}

class CudaSession::StreamScope {
 public:
  explicit StreamScope(CudaSession& s) : index_(s.program_.device_index()) {
    CudaDevice device;
    absl::StatusOr<devices::Stream*> current = device.CurrentStream(index_);
    previous_ = current.ok() ? *current : nullptr;
    status_ = device.MakeCurrent(index_);
    if (status_.ok()) status_ = device.SetStream(s.stream_.get());
  }
  ~StreamScope() {
    if (previous_ != nullptr) (void)CudaDevice().SetStream(previous_);
  }
  StreamScope(const StreamScope&) = delete;
  StreamScope& operator=(const StreamScope&) = delete;
  const absl::Status& status() const { return status_; }

 private:
  int index_;
  devices::Stream* previous_ = nullptr;
  absl::Status status_;
};

absl::StatusOr<std::unique_ptr<CudaSession>> CudaSession::Create(CudaProgram& program,
                                                                 const std::vector<Tensor>& inputs,
                                                                 CudaSessionOptions options) {
  std::unique_ptr<CudaSession> s(new CudaSession(program, options));
  CudaDevice device;
  ASSIGN_OR_RETURN(s->stream_, device.CreateStream(program.device_index()));
  s->cu_stream_ = static_cast<CUstream>(s->stream_->raw());
  StreamScope scope(*s);
  RETURN_IF_ERROR(scope.status());
  ASSIGN_OR_RETURN(s->inputs_, program.Upload(inputs));
  RETURN_IF_ERROR(CuCheck(Driver().cuStreamSynchronize(s->cu_stream_), "cuStreamSynchronize"));
  if (!options.cuda_graphs) s->graph_note_ = "CUDA graph: off (KILN_CUDA_GRAPHS=0); every call launches its steps";
  return s;
}

CudaSession::~CudaSession() {
  if (cu_stream_ != nullptr) (void)Driver().cuStreamSynchronize(cu_stream_);
  if (graph_ != nullptr) Driver().cuGraphExecDestroy(graph_);
  // Storage returns to the allocator's cache before its stream goes.
  outputs_.clear();
  graph_storage_.clear();
  inputs_.clear();
}

absl::Status CudaSession::RunEager() {
  const int64_t fallbacks_before = HostFallbacks(program_);
  CudaProgramStats& st = program_.stats();
  const int64_t launches = st.launches.load(), cublas = st.cublas_calls.load(), convs = st.gpu_convolutions.load(),
                cudnn = st.cudnn_convolutions.load(), nhwc = st.nhwc_convolutions.load(),
                fused = st.fused_epilogues.load();
  ASSIGN_OR_RETURN(outputs_, program_.Execute(inputs_, cu_stream_, CudaProgram::CallHooks{}));
  if (eager_calls_ == 0) {
    steps_note_ = absl::StrCat("steps per call: ", st.launches.load() - launches, " kernel launches, ",
                               st.cublas_calls.load() - cublas, " cuBLAS calls, ", st.cudnn_convolutions.load() - cudnn,
                               " cuDNN convolutions (", st.nhwc_convolutions.load() - nhwc, " channels-last, ",
                               st.fused_epilogues.load() - fused, " with fused epilogues), ",
                               st.gpu_convolutions.load() - convs - (st.cudnn_convolutions.load() - cudnn),
                               " convolutions by kiln's kernels, ", HostFallbacks(program_) - fallbacks_before,
                               " host fallbacks");
    std::lock_guard<std::mutex> lock(st.mu);
    if (!st.cudnn_error.empty()) absl::StrAppend(&steps_note_, " (cuDNN could not start: ", st.cudnn_error, ")");
    if (!st.nhwc_error.empty()) {
      absl::StrAppend(&steps_note_, " (cuDNN refused ", st.nhwc_refusals.load(), " channels-last convolutions: ",
                      st.nhwc_error, "; they run NCHW)");
    }
  }
  ++eager_calls_;
  ran_ = true;
  if (options_.cuda_graphs && graph_ == nullptr && !capture_refused_ && HostFallbacks(program_) > fallbacks_before) {
    // A host fallback copies to the host and synchronizes: not capturable.
    capture_refused_ = true;
    graph_note_ = absl::StrCat("CUDA graph: off: host fallback inside (", FallbackOps(program_),
                               "); every call launches its steps");
  }
  return absl::OkStatus();
}

absl::Status CudaSession::Capture() {
  std::vector<std::shared_ptr<DeviceStorage>> storage;
  CudaProgram::CallHooks hooks;
  hooks.keep_alive = &storage;
  RETURN_IF_ERROR(CuCheck(Driver().cuStreamBeginCapture(cu_stream_, kStreamCaptureModeRelaxed), "cuStreamBeginCapture"));
  absl::StatusOr<std::vector<DeviceTensor>> outs = program_.Execute(inputs_, cu_stream_, hooks);
  CUgraph graph = nullptr;
  const absl::Status ended = CuCheck(Driver().cuStreamEndCapture(cu_stream_, &graph), "cuStreamEndCapture");
  absl::Status failure = !outs.ok() ? outs.status() : ended;
  if (failure.ok() && graph == nullptr) failure = absl::InternalError("cuStreamEndCapture gave no graph");
  size_t nodes = 0;
  if (failure.ok()) failure = CuCheck(Driver().cuGraphGetNodes(graph, nullptr, &nodes), "cuGraphGetNodes");
  CUgraphExec exec = nullptr;
  if (failure.ok()) {
    failure = CuCheck(Driver().cuGraphInstantiateWithFlags(&exec, graph, 0), "cuGraphInstantiateWithFlags");
  }
  if (graph != nullptr) Driver().cuGraphDestroy(graph);
  if (!failure.ok()) {
    capture_refused_ = true;
    graph_note_ = absl::StrCat("CUDA graph: capture failed (", failure.message(), "); every call launches its steps");
    return RunEager();
  }
  graph_ = exec;
  outputs_ = *std::move(outs);
  graph_storage_ = std::move(storage);
  int64_t bytes = 0;
  for (const auto& st : graph_storage_) bytes += static_cast<int64_t>(st->nbytes());
  graph_note_ = absl::StrCat("CUDA graph: call ", eager_calls_ + 1, " captured (", nodes,
                             " nodes, ", bytes >> 20, " MiB of buffers held by the graph); each call is one cuGraphLaunch");
  RETURN_IF_ERROR(CuCheck(Driver().cuGraphLaunch(graph_, cu_stream_), "cuGraphLaunch"));
  ran_ = true;
  return absl::OkStatus();
}

absl::Status CudaSession::Run() {
  StreamScope scope(*this);
  RETURN_IF_ERROR(scope.status());
  if (graph_ != nullptr) return CuCheck(Driver().cuGraphLaunch(graph_, cu_stream_), "cuGraphLaunch");
  if (options_.cuda_graphs && !capture_refused_ && eager_calls_ >= 1) return Capture();
  return RunEager();
}

absl::StatusOr<std::vector<double>> CudaSession::Time(int iterations) {
  // Settle first (warm-up, capture), so that no timed call includes them.
  while (!ran_ || (options_.cuda_graphs && graph_ == nullptr && !capture_refused_)) RETURN_IF_ERROR(Run());
  StreamScope scope(*this);
  RETURN_IF_ERROR(scope.status());
  CUevent start = nullptr, end = nullptr;
  RETURN_IF_ERROR(CuCheck(Driver().cuEventCreate(&start, kEventDefault), "cuEventCreate"));
  absl::Status status = CuCheck(Driver().cuEventCreate(&end, kEventDefault), "cuEventCreate");
  std::vector<double> ms;
  for (int i = 0; i < iterations && status.ok(); ++i) {
    status = CuCheck(Driver().cuEventRecord(start, cu_stream_), "cuEventRecord");
    if (status.ok()) status = Run();
    if (status.ok()) status = CuCheck(Driver().cuEventRecord(end, cu_stream_), "cuEventRecord");
    if (status.ok()) status = CuCheck(Driver().cuEventSynchronize(end), "cuEventSynchronize");
    float elapsed = 0;
    if (status.ok()) status = CuCheck(Driver().cuEventElapsedTime(&elapsed, start, end), "cuEventElapsedTime");
    if (status.ok()) ms.push_back(elapsed);
  }
  Driver().cuEventDestroy(start);
  if (end != nullptr) Driver().cuEventDestroy(end);
  RETURN_IF_ERROR(status);
  return ms;
}

absl::StatusOr<std::vector<Tensor>> CudaSession::FetchOutputs() {
  if (!ran_) return absl::FailedPreconditionError("no call has run yet");
  StreamScope scope(*this);
  RETURN_IF_ERROR(scope.status());
  std::vector<Tensor> out;
  for (const DeviceTensor& t : outputs_) {
    ASSIGN_OR_RETURN(Tensor host, program_.Download(t));
    out.push_back(std::move(host));
  }
  return out;
}

absl::StatusOr<std::vector<wrapper::StepProfile>> CudaSession::Profile(int iterations) {
  StreamScope scope(*this);
  RETURN_IF_ERROR(scope.status());
  return program_.Profile(inputs_, cu_stream_, iterations);
}

std::vector<std::string> CudaSession::Notes() const {
  std::vector<std::string> notes;
  if (!steps_note_.empty()) notes.push_back(steps_note_);
  if (!graph_note_.empty()) notes.push_back(graph_note_);
  return notes;
}

absl::StatusOr<std::unique_ptr<wrapper::ProgramSession>> CudaProgram::NewSession(std::vector<Tensor> inputs) {
  ASSIGN_OR_RETURN(std::unique_ptr<CudaSession> s, CudaSession::Create(*this, inputs, CudaSessionOptionsFromEnv()));
  return std::unique_ptr<wrapper::ProgramSession>(std::move(s));
}

}  // namespace kiln::backends::cuda
