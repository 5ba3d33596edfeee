// Hand-built LoopGraph/Schedule fixtures and a fake DeviceCodegen for the
// wrapper tests (no lowering code is linked: bodies are left empty).
#ifndef KILN_WRAPPER_TEST_FIXTURES_H_
#define KILN_WRAPPER_TEST_FIXTURES_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "lowering/loop_ir.h"
#include "lowering/schedule.h"
#include "wrapper/codegen.h"

namespace kiln::wrapper::testing {

lowering::Layout F32(std::vector<int64_t> sizes);
lowering::Buffer InputBuffer(const std::string& name, lowering::Layout layout);
lowering::Buffer ConstantBuffer(const std::string& name, Tensor value);
lowering::Buffer ComputedBuffer(const std::string& name, lowering::Layout layout,
                                std::vector<std::string> origins);
lowering::Buffer ExternBuffer(const std::string& name, lowering::Layout layout,
                              const std::string& op, std::vector<lowering::ExternArg> args,
                              int num_outputs = 1);
lowering::Buffer ViewBuffer(const std::string& name, lowering::Layout layout,
                            const std::string& view_of);
lowering::ExternArg BufferArg(const std::string& name);
lowering::ExternArg ConstArg(ir::IValue value);
lowering::ScheduleStep KernelStep(const std::string& name, std::vector<std::string> buffers,
                                  std::vector<std::string> reads);
lowering::ScheduleStep ExternStep(const std::string& buffer);

// arg0 Float[8, 16] (input), const0 Float[16, 4] (constant)
// buf0 = add/mul(arg0)                  kernel cpp_fused_add_mul_0
// buf1 = aten::mm(buf0, const0)         extern (out= variant)
// buf2 = buf1 transposed (view)         [4, 8] strides [1, 4]
// buf3 = sum(buf2, dim 1); buf4 = tanh(buf3)   kernel cpp_fused_sum_tanh_1
// outputs: buf4
lowering::LoopGraph SampleGraph();
lowering::Schedule SampleSchedule();

// arg0 Float[1024] -> buf0 -> buf1 -> ... -> buf{n-1} (output), one
// pointwise kernel each (cpp_fused_relu_<i>).
lowering::LoopGraph ChainGraph(int n);
lowering::Schedule ChainSchedule(int n);

// Kernel bodies "// <name>: writes a, b\n..." ; fails for `fail_kernel`.
class FakeCodegen : public DeviceCodegen {
 public:
  explicit FakeCodegen(std::string fail_kernel = "") : fail_kernel_(std::move(fail_kernel)) {}
  std::string device() const override { return "cpu"; }
  absl::StatusOr<std::string> KernelSource(const lowering::LoopGraph& graph,
                                           const lowering::FusedKernel& kernel) override;
  absl::StatusOr<std::unique_ptr<CompiledProgram>> Compile(const WrapperProgram& program) override;

 private:
  std::string fail_kernel_;
};

}  // namespace kiln::wrapper::testing

#endif  // KILN_WRAPPER_TEST_FIXTURES_H_
