#include "wrapper/program_session.h"

#include <chrono>
#include <utility>

#include "support/status.h"
#include "wrapper/codegen.h"

namespace kiln::wrapper {
namespace {

class HostSession : public ProgramSession {
 public:
  HostSession(CompiledProgram& program, std::vector<Tensor> inputs)
      : program_(program), inputs_(std::move(inputs)) {}

  absl::Status Run() override {
    ASSIGN_OR_RETURN(outputs_, program_.Run(inputs_));
    ran_ = true;
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<double>> Time(int iterations) override {
    std::vector<double> ms;
    for (int i = 0; i < iterations; ++i) {
      const auto start = std::chrono::steady_clock::now();
      RETURN_IF_ERROR(Run());
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    return ms;
  }

  absl::StatusOr<std::vector<Tensor>> FetchOutputs() override {
    if (!ran_) return absl::FailedPreconditionError("no call has run yet");
    return outputs_;
  }

  absl::StatusOr<std::vector<StepProfile>> Profile(int iterations) override {
    return program_.ProfileSteps(inputs_, iterations);
  }

  std::string timer() const override { return "host clock"; }

 private:
  CompiledProgram& program_;
  std::vector<Tensor> inputs_;
  std::vector<Tensor> outputs_;
  bool ran_ = false;
};

}  // namespace

std::unique_ptr<ProgramSession> MakeHostSession(CompiledProgram& program, std::vector<Tensor> inputs) {
  return std::make_unique<HostSession>(program, std::move(inputs));
}

}  // namespace kiln::wrapper
