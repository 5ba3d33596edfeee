#include "wrapper/debug_printer.h"

#include <cstdlib>
#include <fstream>

#include <gtest/gtest.h>

#include "wrapper/codegen.h"
#include "wrapper/test_fixtures.h"

namespace kiln::wrapper {
namespace {

WrapperProgram Sample() {
  testing::FakeCodegen codegen;
  auto p = GenerateWrapper(testing::SampleGraph(), testing::SampleSchedule(), codegen);
  EXPECT_TRUE(p.ok());
  return *std::move(p);
}

std::string Describe(const std::vector<LineDebugHooks>& plan) {
  std::string out;
  for (const LineDebugHooks& line : plan) {
    for (const DebugHook& hook : line.hooks) {
      out += std::to_string(line.line_index) + " " + hook.message +
             (hook.save_path.empty() ? "" : " -> " + hook.save_path) + "\n";
    }
  }
  return out;
}

TEST(DebugPrinterTest, ParseLevels) {
  EXPECT_EQ(*ParseDebugPrinterLevel(""), DebugPrinterLevel::kOff);
  EXPECT_EQ(*ParseDebugPrinterLevel("0"), DebugPrinterLevel::kOff);
  EXPECT_EQ(*ParseDebugPrinterLevel("1"), DebugPrinterLevel::kSaveOnly);
  EXPECT_EQ(*ParseDebugPrinterLevel(" print_only "), DebugPrinterLevel::kPrintOnly);
  EXPECT_EQ(*ParseDebugPrinterLevel("PRINT_KERNEL_NAMES_ONLY"),
            DebugPrinterLevel::kPrintKernelNamesOnly);
  EXPECT_FALSE(ParseDebugPrinterLevel("4").ok());
  EXPECT_STREQ(DebugPrinterLevelName(DebugPrinterLevel::kSaveOnly), "SAVE_ONLY");
  EXPECT_EQ(ParseKernelFilter(" A, b,,c "), (std::vector<std::string>{"a", "b", "c"}));
}

TEST(DebugPrinterTest, OffPlansNothing) {
  EXPECT_TRUE(PlanDebugHooks(Sample(), DebugPrinterConfig{}).empty());
}

TEST(DebugPrinterTest, KernelNamesOnly) {
  DebugPrinterConfig config;
  config.level = DebugPrinterLevel::kPrintKernelNamesOnly;
  EXPECT_EQ(Describe(PlanDebugHooks(Sample(), config)),
            "4 [ before_launch: cpp_fused_add_mul_0 ]\n"
            "4 [ after_launch: cpp_fused_add_mul_0 ]\n"
            "7 [ before_launch: aten::mm ]\n"
            "7 [ after_launch: aten::mm ]\n"
            "13 [ before_launch: cpp_fused_sum_tanh_1 ]\n"
            "13 [ after_launch: cpp_fused_sum_tanh_1 ]\n");
}

TEST(DebugPrinterTest, SaveOnlyWithFilter) {
  DebugPrinterConfig config;
  config.level = DebugPrinterLevel::kSaveOnly;
  config.kernel_filter = {"cpp_fused_sum_tanh_1"};
  config.save_dir = "/tmp/d";
  EXPECT_EQ(Describe(PlanDebugHooks(Sample(), config)),
            "13 kiln: before_launch - cpp_fused_sum_tanh_1 - buf2 -> "
            "/tmp/d/before_launch_cpp_fused_sum_tanh_1_buf2.pt\n"
            "13 kiln: before_launch - cpp_fused_sum_tanh_1 - buf3 -> "
            "/tmp/d/before_launch_cpp_fused_sum_tanh_1_buf3.pt\n"
            "13 kiln: before_launch - cpp_fused_sum_tanh_1 - buf4 -> "
            "/tmp/d/before_launch_cpp_fused_sum_tanh_1_buf4.pt\n"
            "13 kiln: after_launch - cpp_fused_sum_tanh_1 - buf2 -> "
            "/tmp/d/after_launch_cpp_fused_sum_tanh_1_buf2.pt\n"
            "13 kiln: after_launch - cpp_fused_sum_tanh_1 - buf3 -> "
            "/tmp/d/after_launch_cpp_fused_sum_tanh_1_buf3.pt\n"
            "13 kiln: after_launch - cpp_fused_sum_tanh_1 - buf4 -> "
            "/tmp/d/after_launch_cpp_fused_sum_tanh_1_buf4.pt\n");
}

TEST(DebugPrinterTest, AllocatingExternSeesInputsBeforeAndOutputsAfter) {
  DebugPrinterConfig config;
  config.level = DebugPrinterLevel::kPrintOnly;
  config.kernel_filter = {"topk"};
  Line line = ExternKernelAllocLine{"aten::topk", {{"arg0", {}}, {"", ir::IValue::Int(3)}},
                                    {"buf0", ""}, {}};
  std::vector<DebugHook> hooks = DebugHooksForLine(line, config);
  ASSERT_EQ(hooks.size(), 2);
  EXPECT_EQ(hooks[0].message, "kiln: before_launch - aten::topk - arg0");
  EXPECT_EQ(hooks[1].message, "kiln: after_launch - aten::topk - buf0");
  EXPECT_EQ(hooks[1].action, DebugAction::kPrintTensorStats);
  EXPECT_TRUE(DebugHooksForLine(AllocateLine{}, config).empty());
}

TEST(DebugPrinterTest, OptionsWinOverEnvironment) {
  ::setenv(kDebugPrinterEnv, "2", 1);
  ::setenv(kDebugPrinterFilterEnv, "K1,k2", 1);
  auto config = ResolveDebugPrinterConfig();
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->level, DebugPrinterLevel::kPrintOnly);
  EXPECT_EQ(config->kernel_filter, (std::vector<std::string>{"k1", "k2"}));
  DebugPrinterOptions options;
  options.level = DebugPrinterLevel::kOff;
  options.kernel_filter = "";
  config = ResolveDebugPrinterConfig(options);
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->level, DebugPrinterLevel::kOff);
  EXPECT_TRUE(config->kernel_filter.empty());
  ::setenv(kDebugPrinterEnv, "loud", 1);
  EXPECT_FALSE(ResolveDebugPrinterConfig().ok());
  ::unsetenv(kDebugPrinterEnv);
  ::unsetenv(kDebugPrinterFilterEnv);
}

TEST(DebugPrinterTest, HostileNamesStayInsideTheSaveDir) {
  DebugPrinterConfig config;
  config.level = DebugPrinterLevel::kSaveOnly;
  config.save_dir = "d";
  Line line = KernelCallLine{"../../etc/passwd", "cpu", {"a/b"}};
  std::vector<DebugHook> hooks = DebugHooksForLine(line, config);
  ASSERT_EQ(hooks.size(), 2);
  EXPECT_EQ(hooks[0].save_path, "d/before_launch__.._.._etc_passwd_a_b.pt");
}

TEST(DebugPrinterTest, RunHooks) {
  Tensor t = Tensor::Empty(DType::kFloat32, {4});
  for (int i = 0; i < 4; ++i) t.data<float>()[i] = static_cast<float>(i + 1);
  EXPECT_EQ(TensorDebugSummary(t),
            "numel 4, size [4], dtype Float, mean 2.5, min 1, max 4, std 1.29099, values [1, 2, 3, 4]");
  DebugHook print;
  print.action = DebugAction::kPrintTensorStats;
  print.message = "kiln: before_launch - k - buf0";
  std::string out;
  ASSERT_TRUE(RunDebugHook(print, &t, &out).ok());
  EXPECT_EQ(out, "kiln: before_launch - k - buf0: " + TensorDebugSummary(t) + "\n");

  DebugHook save;
  save.action = DebugAction::kSaveTensor;
  save.save_path = std::string(std::getenv("TEST_TMPDIR")) + "/t.pt";
  ASSERT_TRUE(RunDebugHook(save, &t).ok());
  std::ifstream file(save.save_path, std::ios::binary);
  std::string header;
  std::getline(file, header);
  EXPECT_EQ(header, "kiln-tensor Float 4");
  float values[4] = {};
  file.read(reinterpret_cast<char*>(values), sizeof(values));
  EXPECT_EQ(values[3], 4.0f);
  EXPECT_FALSE(RunDebugHook(save, nullptr).ok());
}

}  // namespace
}  // namespace kiln::wrapper
