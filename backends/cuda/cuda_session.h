// Repeated calls of a CudaProgram (wrapper::ProgramSession): the inputs are
// uploaded once, calls run on the session's own stream (a non-blocking
// stream: the legacy default stream cannot be captured), each call's
// outputs stay on the device until FetchOutputs, and Time() measures calls
// with CUDA events.
//
// CUDA graphs (static shapes): the first call runs eagerly (warm-up: cuBLAS
// handles, lazily loaded modules, the ones vector); the second is captured
// (relaxed capture mode, so the caching allocator may still grow) and every
// call from then on replays the graph with one cuGraphLaunch. Every storage
// the captured call allocated is kept for the graph's lifetime, so no
// replay's addresses are ever handed to anything else; the outputs are the
// graph's own buffers, overwritten by each replay (like torch.compile's
// mode="reduce-overhead"). A program with a host fallback inside (an
// extern or island that ran on the host during warm-up) is not captured:
// it runs eagerly and Notes() says why. KILN_CUDA_GRAPHS=0 turns capture
// off.
#ifndef KILN_BACKENDS_CUDA_CUDA_SESSION_H_
#define KILN_BACKENDS_CUDA_CUDA_SESSION_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/cuda/cuda_program.h"
#include "devices/device_interface.h"
#include "support/tensor.h"
#include "wrapper/program_session.h"

namespace kiln::backends::cuda {

struct CudaSessionOptions {
  // Capture the second call and replay it (see the file comment).
  bool cuda_graphs = true;
};

// CudaSessionOptions from the environment (KILN_CUDA_GRAPHS=0: no graphs).
CudaSessionOptions CudaSessionOptionsFromEnv();

class CudaSession : public wrapper::ProgramSession {
 public:
  // Uploads `inputs` on a new stream of the program's device.
  static absl::StatusOr<std::unique_ptr<CudaSession>> Create(CudaProgram& program, const std::vector<Tensor>& inputs,
                                                             CudaSessionOptions options);
  ~CudaSession() override;

  absl::Status Run() override;
  absl::StatusOr<std::vector<double>> Time(int iterations) override;
  absl::StatusOr<std::vector<Tensor>> FetchOutputs() override;
  absl::StatusOr<std::vector<wrapper::StepProfile>> Profile(int iterations) override;
  std::vector<std::string> Notes() const override;
  std::string timer() const override { return "CUDA events"; }

  bool replaying_graph() const { return graph_ != nullptr; }
  // The last call's outputs, on the device.
  const std::vector<DeviceTensor>& device_outputs() const { return outputs_; }

 private:
  CudaSession(CudaProgram& program, CudaSessionOptions options) : program_(program), options_(options) {}
  // Makes the session's stream current for the calling thread until the
  // returned guard goes.
  class StreamScope;
  absl::Status RunEager();
  // Captures one call into graph_ (or records why not and stays eager).
  absl::Status Capture();

  CudaProgram& program_;
  CudaSessionOptions options_;
  std::unique_ptr<devices::Stream> stream_;
  CUstream cu_stream_ = nullptr;
  std::vector<DeviceTensor> inputs_;
  std::vector<DeviceTensor> outputs_;
  bool ran_ = false;
  int eager_calls_ = 0;
  bool capture_refused_ = false;
  std::string graph_note_;
  std::string steps_note_;
  CUgraphExec graph_ = nullptr;
  std::vector<std::shared_ptr<DeviceStorage>> graph_storage_;
};

}  // namespace kiln::backends::cuda

#endif  // KILN_BACKENDS_CUDA_CUDA_SESSION_H_
