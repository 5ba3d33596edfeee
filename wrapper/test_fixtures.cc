#include "wrapper/test_fixtures.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "wrapper/layout_math.h"

namespace kiln::wrapper::testing {

using lowering::Buffer;
using lowering::BufferKind;
using lowering::Layout;

Layout F32(std::vector<int64_t> sizes) { return ContiguousLayout(DType::kFloat32, std::move(sizes)); }

Buffer InputBuffer(const std::string& name, Layout layout) {
  Buffer b;
  b.name = name;
  b.kind = BufferKind::kInput;
  b.layout = std::move(layout);
  return b;
}

Buffer ConstantBuffer(const std::string& name, Tensor value) {
  Buffer b;
  b.name = name;
  b.kind = BufferKind::kConstant;
  b.layout = ContiguousLayout(value.dtype(), value.sizes());
  b.constant = std::move(value);
  return b;
}

Buffer ComputedBuffer(const std::string& name, Layout layout, std::vector<std::string> origins) {
  Buffer b;
  b.name = name;
  b.kind = BufferKind::kComputed;
  b.pointwise = lowering::Pointwise{layout.sizes, nullptr};
  b.layout = std::move(layout);
  b.origins = std::move(origins);
  return b;
}

Buffer ExternBuffer(const std::string& name, Layout layout, const std::string& op,
                    std::vector<lowering::ExternArg> args, int num_outputs) {
  Buffer b;
  b.name = name;
  b.kind = BufferKind::kExtern;
  b.layout = std::move(layout);
  b.extern_call = lowering::ExternCall{op, std::move(args), num_outputs};
  const size_t sep = op.find("::");
  b.origins = {op.substr(sep == std::string::npos ? 0 : sep + 2)};
  return b;
}

Buffer ViewBuffer(const std::string& name, Layout layout, const std::string& view_of) {
  Buffer b;
  b.name = name;
  b.kind = BufferKind::kView;
  b.layout = std::move(layout);
  b.view_of = view_of;
  return b;
}

lowering::ExternArg BufferArg(const std::string& name) { return lowering::ExternArg{name, {}}; }
lowering::ExternArg ConstArg(ir::IValue value) { return lowering::ExternArg{"", std::move(value)}; }

lowering::ScheduleStep KernelStep(const std::string& name, std::vector<std::string> buffers,
                                  std::vector<std::string> reads) {
  lowering::ScheduleStep step;
  step.kind = lowering::ScheduleStep::Kind::kKernel;
  step.kernel.name = name;
  step.kernel.buffers = std::move(buffers);
  step.kernel.reads = std::move(reads);
  return step;
}

lowering::ScheduleStep ExternStep(const std::string& buffer) {
  lowering::ScheduleStep step;
  step.kind = lowering::ScheduleStep::Kind::kExtern;
  step.buffer = buffer;
  return step;
}

lowering::LoopGraph SampleGraph() {
  lowering::LoopGraph g;
  Tensor weights = Tensor::Empty(DType::kFloat32, {16, 4});
  for (int64_t i = 0; i < 64; ++i) weights.data<float>()[i] = static_cast<float>(i) * 0.5f;
  g.buffers.push_back(InputBuffer("arg0", F32({8, 16})));
  g.buffers.push_back(ConstantBuffer("const0", weights));
  g.buffers.push_back(ComputedBuffer("buf0", F32({8, 16}), {"add", "mul"}));
  g.buffers.push_back(
      ExternBuffer("buf1", F32({8, 4}), "aten::mm", {BufferArg("buf0"), BufferArg("const0")}));
  Layout transposed = F32({4, 8});
  transposed.strides = {1, 4};
  g.buffers.push_back(ViewBuffer("buf2", transposed, "buf1"));
  g.buffers.push_back(ComputedBuffer("buf3", F32({4}), {"sum"}));
  g.buffers.push_back(ComputedBuffer("buf4", F32({4}), {"tanh"}));
  g.inputs = {"arg0"};
  g.outputs = {"buf4"};
  return g;
}

lowering::Schedule SampleSchedule() {
  lowering::Schedule s;
  s.steps.push_back(KernelStep("cpp_fused_add_mul_0", {"buf0"}, {"arg0"}));
  s.steps.push_back(ExternStep("buf1"));
  s.steps.push_back(KernelStep("cpp_fused_sum_tanh_1", {"buf3", "buf4"}, {"buf2"}));
  return s;
}

lowering::LoopGraph ChainGraph(int n) {
  lowering::LoopGraph g;
  g.buffers.push_back(InputBuffer("arg0", F32({1024})));
  for (int i = 0; i < n; ++i) {
    g.buffers.push_back(ComputedBuffer(absl::StrCat("buf", i), F32({1024}), {"relu"}));
  }
  g.inputs = {"arg0"};
  g.outputs = {absl::StrCat("buf", n - 1)};
  return g;
}

lowering::Schedule ChainSchedule(int n) {
  lowering::Schedule s;
  for (int i = 0; i < n; ++i) {
    s.steps.push_back(KernelStep(absl::StrCat("cpp_fused_relu_", i), {absl::StrCat("buf", i)},
                                 {i == 0 ? std::string("arg0") : absl::StrCat("buf", i - 1)}));
  }
  return s;
}

absl::StatusOr<std::string> FakeCodegen::KernelSource(const lowering::LoopGraph& graph,
                                                      const lowering::FusedKernel& kernel) {
  if (kernel.name == fail_kernel_) {
    return absl::UnimplementedError("fake codegen refuses this kernel");
  }
  return absl::StrCat("// ", kernel.name, ": writes ", absl::StrJoin(kernel.buffers, ", "),
                      "\nextern \"C\" void ", kernel.name, "() {}");
}

absl::StatusOr<std::unique_ptr<CompiledProgram>> FakeCodegen::Compile(const WrapperProgram&) {
  return absl::UnimplementedError("fake codegen does not compile");
}

}  // namespace kiln::wrapper::testing
