#include "wrapper/python_printer.h"

#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "wrapper/codegen.h"
#include "wrapper/memory_planning.h"
#include "wrapper/test_fixtures.h"

namespace kiln::wrapper {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::F32;

WrapperProgram PlannedSample() {
  testing::FakeCodegen codegen;
  auto p = GenerateWrapper(testing::SampleGraph(), testing::SampleSchedule(), codegen);
  EXPECT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(PlanBufferReuse(*p).ok());
  return *std::move(p);
}

std::string ReadGolden(const std::string& name) {
  std::ifstream file("wrapper/testdata/" + name);
  std::stringstream buffer;
  buffer << file.rdbuf();
  return buffer.str();
}

TEST(PythonPrinterTest, SampleGraphGolden) {
  PythonPrinterOptions options;
  options.module_name = "sample";
  auto text = PrintPythonWrapper(PlannedSample(), options);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, ReadGolden("sample_wrapper.py.golden")) << *text;
}

TEST(PythonPrinterTest, ReuseViewsExternAllocAndDeviceContext) {
  WrapperProgram p;
  p.inputs = {"arg0", "arg1"};
  p.outputs = {"buf3", "buf4"};
  Layout cuda = F32({4});
  cuda.device = "cuda:0";
  Layout wide = F32({2, 8});
  p.layouts = {{"arg0", F32({16})}, {"arg1", cuda},     {"buf0", F32({16})}, {"buf1", wide},
               {"buf2", F32({4, 4})}, {"buf3", F32({16})}, {"buf4", F32({3})},  {"buf5", F32({3})}};
  Layout transposed = F32({4, 4});
  transposed.strides = {1, 4};
  p.layouts[4].second = transposed;
  p.lines = {KernelDefinitionLine{"k", "cpu", "void k() {}"},
             AllocateLine{"buf0", F32({16})},
             KernelCallLine{"k", "cpu", {"arg0", "buf0"}},
             FreeIfNotReusedLine{"buf0", true},
             ReuseLine{"buf0", "buf1", wide, true},
             ReinterpretLine{"buf2", "buf1", transposed},
             KernelCallLine{"k", "cpu", {"buf2"}},
             AllocateLine{"buf3", F32({16})},
             KernelCallLine{"k", "cpu", {"buf1", "buf3"}},
             FreeIfNotReusedLine{"buf1"},
             ExternKernelAllocLine{"aten::topk",
                                   {{"buf3", {}}, {"", ir::IValue::Int(3)},
                                    {"", ir::IValue::String("it's")},
                                    {"", ir::IValue::List({ir::IValue::Double(0.5), ir::IValue::None()})}},
                                   {"buf4", ""},
                                   {F32({3}), F32({3})}},
             MultiOutputLine{"buf5", "buf4", {0}},
             EnterDeviceContextManagerLine{"cuda", 0},
             CommentLine{"nothing\nhere"},
             ExitDeviceContextManagerLine{},
             FreeLine{"arg0"}};
  PythonPrinterOptions options;
  options.benchmark_harness = false;
  auto text = PrintPythonWrapper(p, options);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_THAT(*text, HasSubstr("    arg0, arg1 = args\n    args.clear()\n"
                               "    assert_size_stride(arg0, (16, ), (1, ))\n"
                               "    assert_size_stride(arg1, (4, ), (1, ))\n"));
  EXPECT_THAT(*text, HasSubstr("    buf0 = empty_strided_cpu((16, ), (1, ), torch.float32)\n"));
  EXPECT_THAT(*text, HasSubstr("    buf1 = reinterpret_tensor(buf0, (2, 8, ), (8, 1, ), 0); del buf0  # reuse\n"));
  EXPECT_THAT(*text, HasSubstr("    buf2 = reinterpret_tensor(buf1, (4, 4, ), (1, 4, ), 0)  # alias\n"));
  EXPECT_THAT(*text, HasSubstr("    del buf1\n"));
  EXPECT_THAT(*text, HasSubstr("    buf4, _ = aten.topk.default(buf3, 3, 'it\\'s', [0.5, None])\n"));
  EXPECT_THAT(*text, HasSubstr("    buf5 = buf4[0]\n"));
  EXPECT_THAT(*text, HasSubstr("    with torch.cuda._DeviceGuard(0):\n"
                               "        torch.cuda.set_device(0)\n"
                               "        # nothing here\n"
                               "    del arg0\n"));
  EXPECT_THAT(*text, HasSubstr("    return (buf3, buf4, )\n"));
  EXPECT_THAT(*text, Not(HasSubstr("benchmark_compiled_module")));
}

TEST(PythonPrinterTest, EmptyDeviceBlockGetsPass) {
  WrapperProgram p;
  p.lines = {EnterDeviceContextManagerLine{"xpu", 1}, ExitDeviceContextManagerLine{}};
  auto text = PrintPythonWrapper(p);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_THAT(*text, HasSubstr("    with torch.device('xpu', 1):\n        pass\n    return ()\n"));
  EXPECT_THAT(*text, HasSubstr("    args.clear()\n"));
}

TEST(PythonPrinterTest, HostileNamesAndBodies) {
  WrapperProgram p = PlannedSample();
  // A kernel body that would close a raw string becomes an escaped literal.
  std::get<KernelDefinitionLine>(p.lines[0]).kernel_body = "x = ''' + __import__('os')";
  auto text = PrintPythonWrapper(p);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_THAT(*text, HasSubstr("'x = \\'\\'\\' + __import__(\\'os\\')'"));

  WrapperProgram bad = PlannedSample();
  bad.layouts[0].first = "import";  // a Python keyword
  bad.inputs[0] = "import";
  EXPECT_FALSE(PrintPythonWrapper(bad).ok());

  WrapperProgram shadow = PlannedSample();
  std::get<KernelDefinitionLine>(shadow.lines[0]).kernel_name = "torch";
  EXPECT_FALSE(PrintPythonWrapper(shadow).ok());

  PythonPrinterOptions options;
  options.module_name = "x'); import os; ('";
  EXPECT_FALSE(PrintPythonWrapper(PlannedSample(), options).ok());
}

TEST(PythonPrinterTest, DebugPrinterCalls) {
  PythonPrinterOptions options;
  options.benchmark_harness = false;
  options.debug.level = DebugPrinterLevel::kPrintOnly;
  options.debug.kernel_filter = {"cpp_fused_add_mul_0"};
  auto text = PrintPythonWrapper(PlannedSample(), options);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_THAT(*text, HasSubstr("from torch._inductor.codegen.debug_utils import "
                               "_print_debugging_tensor_value_info\n"));
  EXPECT_THAT(*text,
              HasSubstr("    _print_debugging_tensor_value_info('kiln: before_launch - "
                        "cpp_fused_add_mul_0 - arg0', arg0)\n"
                        "    _print_debugging_tensor_value_info('kiln: before_launch - "
                        "cpp_fused_add_mul_0 - buf0', buf0)\n"
                        "    cpp_fused_add_mul_0(arg0, buf0)\n"
                        "    _print_debugging_tensor_value_info('kiln: after_launch - "
                        "cpp_fused_add_mul_0 - arg0', arg0)\n"));
  EXPECT_THAT(*text, Not(HasSubstr("before_launch - cpp_fused_sum_tanh_1")));

  options.debug.level = DebugPrinterLevel::kSaveOnly;
  options.debug.kernel_filter = {"mm"};
  text = PrintPythonWrapper(PlannedSample(), options);
  ASSERT_TRUE(text.ok());
  EXPECT_THAT(*text, HasSubstr("    torch.save(buf0, 'tmp/kiln_debug/before_launch_aten__mm_buf0.pt')\n"));
  EXPECT_THAT(*text, HasSubstr("    extern_kernels.mm(buf0, const0, out=buf1)\n"));
}

}  // namespace
}  // namespace kiln::wrapper
