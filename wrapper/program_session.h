// Repeated calls of a compiled program on inputs placed on its device once:
// what `kiln run` times and profiles. A device whose memory is not the
// host's (CUDA) uploads the inputs when the session starts, keeps each
// call's outputs on the device until FetchOutputs, and times calls on the
// device (events); the host session (MakeHostSession) is the default for
// programs that run on host tensors.
//
//   ASSIGN_OR_RETURN(auto session, program.NewSession(inputs));
//   ASSIGN_OR_RETURN(std::vector<double> ms, session->Time(10));  // after warm-up calls
//   ASSIGN_OR_RETURN(std::vector<Tensor> outputs, session->FetchOutputs());
#ifndef KILN_WRAPPER_PROGRAM_SESSION_H_
#define KILN_WRAPPER_PROGRAM_SESSION_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "support/tensor.h"

namespace kiln::wrapper {

class CompiledProgram;

// One step of a program (a kernel launch, an extern call) in a profile:
// its time summed over the profiled calls.
struct StepProfile {
  std::string name;  // the kernel's name, or the extern's op
  std::string kind;  // "kernel", "cublas", "cudnn", "conv", "host", ...
  int64_t calls = 0;
  double total_ms = 0;
};

class ProgramSession {
 public:
  virtual ~ProgramSession() = default;
  // One call on the session's inputs. On an asynchronous device it may
  // return before the work is done (Time and FetchOutputs wait).
  virtual absl::Status Run() = 0;
  // Calls the program `iterations` times and returns each call's
  // milliseconds, measured by the device (events on an asynchronous
  // device, the host clock otherwise).
  virtual absl::StatusOr<std::vector<double>> Time(int iterations) = 0;
  // The last call's outputs (in WrapperProgram::outputs order), on the host.
  virtual absl::StatusOr<std::vector<Tensor>> FetchOutputs() = 0;
  // Runs `iterations` calls timing each step on the device; the steps in
  // program order, each once. Unimplemented where the device cannot.
  virtual absl::StatusOr<std::vector<StepProfile>> Profile(int iterations) {
    return absl::UnimplementedError("this device does not profile steps");
  }
  // How calls run, for reports (e.g. "CUDA graph: 212 launches replayed as
  // one graph"); empty when there is nothing to say.
  virtual std::vector<std::string> Notes() const { return {}; }
  // What measures Time ("CUDA events", "host clock").
  virtual std::string timer() const = 0;
};

// The session of a program that runs on host tensors: Run() is
// program.Run(inputs), timed with the host's steady clock.
std::unique_ptr<ProgramSession> MakeHostSession(CompiledProgram& program, std::vector<Tensor> inputs);

}  // namespace kiln::wrapper

#endif  // KILN_WRAPPER_PROGRAM_SESSION_H_
