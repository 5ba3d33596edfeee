#include "wrapper/codegen.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "wrapper/test_fixtures.h"
#include "wrapper/validate.h"

namespace kiln::wrapper {
namespace {

using ::testing::HasSubstr;
using testing::F32;
using testing::FakeCodegen;

std::string Lines(const WrapperProgram& p) {
  std::string out;
  for (const Line& line : p.lines) out += LineToString(line) + "\n";
  return out;
}

TEST(GenerateWrapperTest, SampleGraphGolden) {
  FakeCodegen codegen;
  auto program = GenerateWrapper(testing::SampleGraph(), testing::SampleSchedule(), codegen);
  ASSERT_TRUE(program.ok()) << program.status();
  EXPECT_EQ(Lines(*program),
            "KernelDefinitionLine cpp_fused_add_mul_0 cpu <76 bytes, 2 lines>\n"
            "KernelDefinitionLine cpp_fused_sum_tanh_1 cpu <84 bytes, 2 lines>\n"
            "CommentLine # Source Nodes: [add, mul]\n"
            "AllocateLine buf0 Float[8, 16] strides [16, 1] offset 0 cpu\n"
            "KernelCallLine cpp_fused_add_mul_0(arg0, buf0) cpu\n"
            "CommentLine # Source Nodes: [mm]\n"
            "AllocateLine buf1 Float[8, 4] strides [4, 1] offset 0 cpu\n"
            "ExternKernelLine aten::mm(buf0, const0, out=[buf1])\n"
            "ReinterpretLine buf2 = view of buf1 Float[4, 8] strides [1, 4] offset 0 cpu\n"
            "FreeIfNotReusedLine buf0\n"
            "CommentLine # Source Nodes: [sum, tanh]\n"
            "AllocateLine buf3 Float[4] strides [1] offset 0 cpu\n"
            "AllocateLine buf4 Float[4] strides [1] offset 0 cpu\n"
            "KernelCallLine cpp_fused_sum_tanh_1(buf2, buf3, buf4) cpu\n"
            "FreeIfNotReusedLine buf1\n"
            "FreeIfNotReusedLine buf3\n");
  EXPECT_EQ(program->inputs, std::vector<std::string>{"arg0"});
  EXPECT_EQ(program->outputs, std::vector<std::string>{"buf4"});
  ASSERT_EQ(program->constants.size(), 1);
  EXPECT_EQ(program->constants[0].first, "const0");
  std::vector<std::string> layout_names;
  for (const auto& [name, layout] : program->layouts) layout_names.push_back(name);
  EXPECT_EQ(layout_names, (std::vector<std::string>{"arg0", "const0", "buf0", "buf1", "buf2",
                                                    "buf3", "buf4"}));
  const auto& def = std::get<KernelDefinitionLine>(program->lines[0]);
  EXPECT_EQ(def.kernel_body, "// cpp_fused_add_mul_0: writes buf0\nextern \"C\" void cpp_fused_add_mul_0() {}");
  EXPECT_TRUE(ValidateWrapperProgram(*program).ok());
}

TEST(GenerateWrapperTest, MultiOutputExternAllocatesItsOutputs) {
  lowering::LoopGraph g;
  g.buffers.push_back(testing::InputBuffer("arg0", F32({10})));
  g.buffers.push_back(testing::ExternBuffer("buf0", F32({3}), "aten::topk",
                                            {testing::BufferArg("arg0"),
                                             testing::ConstArg(ir::IValue::Int(3))},
                                            2));
  lowering::Buffer indices;
  indices.name = "buf1";
  indices.kind = lowering::BufferKind::kExtern;
  indices.layout = F32({3});
  indices.layout.dtype = DType::kInt64;
  indices.extern_source = "buf0";
  indices.extern_output = 1;
  g.buffers.push_back(indices);
  g.inputs = {"arg0"};
  g.outputs = {"buf1", "arg0"};
  lowering::Schedule s;
  s.steps.push_back(testing::ExternStep("buf0"));
  FakeCodegen codegen;
  auto program = GenerateWrapper(g, s, codegen);
  ASSERT_TRUE(program.ok()) << program.status();
  EXPECT_EQ(Lines(*program),
            "CommentLine # Source Nodes: [topk]\n"
            "ExternKernelAllocLine buf0, buf1 = aten::topk(arg0, 3) : Float[3] strides [1] "
            "offset 0 cpu; Long[3] strides [1] offset 0 cpu\n"
            "FreeIfNotReusedLine buf0\n");
}

TEST(GenerateWrapperTest, ViewKeepsItsBaseAliveAndOutputsAreNeverFreed) {
  // buf1 = view of buf0 is the output: buf0 must never be freed.
  lowering::LoopGraph g;
  g.buffers.push_back(testing::InputBuffer("arg0", F32({4, 2})));
  g.buffers.push_back(testing::ComputedBuffer("buf0", F32({4, 2}), {"exp"}));
  g.buffers.push_back(testing::ViewBuffer("buf1", F32({8}), "buf0"));
  g.buffers.push_back(testing::ViewBuffer("buf2", F32({2, 4}), "buf1"));  // a view of a view
  g.inputs = {"arg0"};
  g.outputs = {"buf2"};
  lowering::Schedule s;
  s.steps.push_back(testing::KernelStep("cpp_fused_exp_0", {"buf0"}, {"arg0"}));
  FakeCodegen codegen;
  auto program = GenerateWrapper(g, s, codegen);
  ASSERT_TRUE(program.ok()) << program.status();
  const std::string lines = Lines(*program);
  EXPECT_THAT(lines, HasSubstr("ReinterpretLine buf1 = view of buf0"));
  EXPECT_THAT(lines, HasSubstr("ReinterpretLine buf2 = view of buf0"));  // storage owner
  EXPECT_THAT(lines, ::testing::Not(HasSubstr("Free")));
}

TEST(GenerateWrapperTest, BadSchedulesAreErrorsNotCrashes) {
  FakeCodegen codegen;
  {
    lowering::Schedule s = testing::SampleSchedule();
    std::swap(s.steps[0], s.steps[1]);  // mm before its input exists
    auto p = GenerateWrapper(testing::SampleGraph(), s, codegen);
    EXPECT_THAT(p.status().message(), HasSubstr("reads 'buf0'"));
  }
  {
    lowering::Schedule s = testing::SampleSchedule();
    s.steps[2].kernel.reads.push_back("nope");
    EXPECT_FALSE(GenerateWrapper(testing::SampleGraph(), s, codegen).ok());
  }
  {
    lowering::Schedule s = testing::SampleSchedule();
    s.steps.push_back(s.steps[0]);  // buf0 produced twice
    EXPECT_FALSE(GenerateWrapper(testing::SampleGraph(), s, codegen).ok());
  }
  {
    lowering::LoopGraph g = testing::SampleGraph();
    g.buffers[4].view_of = "buf2";  // cyclic view
    EXPECT_FALSE(GenerateWrapper(g, testing::SampleSchedule(), codegen).ok());
  }
  {
    lowering::Schedule s = testing::SampleSchedule();
    s.steps.pop_back();  // the output is never computed
    auto p = GenerateWrapper(testing::SampleGraph(), s, codegen);
    EXPECT_THAT(p.status().message(), HasSubstr("graph output 'buf4'"));
  }
  {
    lowering::LoopGraph g = testing::SampleGraph();
    g.buffers[2].name = "buf0; rm -rf /";
    EXPECT_FALSE(GenerateWrapper(g, testing::SampleSchedule(), codegen).ok());
  }
  {
    FakeCodegen failing("cpp_fused_sum_tanh_1");
    auto p = GenerateWrapper(testing::SampleGraph(), testing::SampleSchedule(), failing);
    EXPECT_EQ(p.status().code(), absl::StatusCode::kUnimplemented);
    EXPECT_THAT(p.status().message(), HasSubstr("cpp_fused_sum_tanh_1"));
  }
}

TEST(DeviceCodegenRegistryTest, RegisterAndCreate) {
  ASSERT_TRUE(RegisterDeviceCodegen("fake_dev", [] { return std::make_unique<FakeCodegen>(); }).ok());
  EXPECT_EQ(RegisterDeviceCodegen("fake_dev", [] { return std::make_unique<FakeCodegen>(); }).code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_FALSE(RegisterDeviceCodegen("", [] { return std::make_unique<FakeCodegen>(); }).ok());
  auto codegen = CreateDeviceCodegen("fake_dev");
  ASSERT_TRUE(codegen.ok());
  EXPECT_EQ((*codegen)->device(), "cpu");
  auto missing = CreateDeviceCodegen("tpu");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("fake_dev"));
  ASSERT_TRUE(RegisterDeviceCodegen("null_dev", [] { return std::unique_ptr<DeviceCodegen>(); }).ok());
  EXPECT_FALSE(CreateDeviceCodegen("null_dev").ok());
}

// The op rows' EXTERN column decides (ops/defs/linalg.def, conv_pool.def).
TEST(ExternUsesOutVariantTest, BlasOpsOnly) {
  EXPECT_TRUE(ExternUsesOutVariant({"aten::mm", {}, 1}));
  EXPECT_TRUE(ExternUsesOutVariant({"aten::conv2d", {}, 1}));
  EXPECT_FALSE(ExternUsesOutVariant({"kiln::conv_nd", {}, 1}));  // the library allocates
  EXPECT_TRUE(ExternUsesOutVariant({"aten::addmm.default", {}, 1}));
  EXPECT_FALSE(ExternUsesOutVariant({"aten::mm", {}, 2}));
  EXPECT_FALSE(ExternUsesOutVariant({"aten::cumsum", {}, 1}));
}

}  // namespace
}  // namespace kiln::wrapper
