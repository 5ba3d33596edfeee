#include "wrapper/python_printer.h"

#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "wrapper/codegen.h"
#include "wrapper/device_op_overrides.h"
#include "wrapper/memory_planning.h"
#include "wrapper/test_fixtures.h"

namespace kiln::wrapper {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::F32;

// What backends/cpu and a CUDA device register (the wrapper cannot depend on
// them): Inductor's strings, so the golden reads like Inductor's output.
class HostOps : public DeviceOpOverrides {
 public:
  HostOps() : DeviceOpOverrides("cpu") {}
  std::vector<std::string> HeaderLines() const override {
    return {"empty_strided_cpu = torch._C._dynamo.guards._empty_strided_cpu"};
  }
  std::vector<std::string> DefinedNames() const override { return {"empty_strided_cpu"}; }
  bool NeedsDeviceGuard() const override { return false; }
  std::string EmptyStrided(const std::string& sizes, const std::string& strides,
                           const std::string& dtype, const std::string&) const override {
    return "empty_strided_cpu(" + sizes + ", " + strides + ", " + dtype + ")";
  }
  std::string KernelDefinition(const std::string& name, const std::vector<std::string>& arg_types,
                               const std::string& body) const override {
    std::string types;
    for (const std::string& t : arg_types) types += (types.empty() ? "" : ", ") + t;
    return name + " = async_compile.cpp_pybinding([" + types + "], " + body + ")";
  }
};

class GpuOps : public DeviceOpOverrides {
 public:
  GpuOps() : DeviceOpOverrides("cuda") {}
  std::string DeviceGuard(int index) const override {
    return "torch.cuda._DeviceGuard(" + std::to_string(index) + ")";
  }
  std::vector<std::string> GuardPrologue(int index) const override {
    return {"torch.cuda.set_device(" + std::to_string(index) + ")"};
  }
};

[[maybe_unused]] const bool kDeviceOpsRegistered = [] {
  EXPECT_TRUE(RegisterDeviceOpOverrides(std::make_unique<HostOps>()).ok());
  EXPECT_TRUE(RegisterDeviceOpOverrides(std::make_unique<GpuOps>()).ok());
  return true;
}();

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

TEST(PythonPrinterTest, LargeConstantsLoadFromFiles) {
  WrapperProgram p;
  Tensor big = Tensor::Empty(DType::kFloat32, {20, 20});
  for (int64_t i = 0; i < big.numel(); ++i) big.data<float>()[i] = static_cast<float>(i) * 0.5f;
  Tensor small = Tensor::Empty(DType::kFloat32, {2});
  const std::string long_name(100, 'w');
  p.constants = {{"small0", small}, {long_name, big}};
  p.layouts = {{"small0", F32({2})}, {long_name, F32({20, 20})}};
  p.outputs = {long_name};

  // No folder: the old placeholder, and no files.
  auto text = PrintPythonWrapper(p);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_THAT(*text, HasSubstr("values not printed"));
  EXPECT_THAT(*text, Not(HasSubstr("kiln_load_constant")));
  auto none = PythonWrapperConstantFiles(p, {});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());

  PythonPrinterOptions options;
  options.constants_dir = "constants";
  text = PrintPythonWrapper(p, options);
  ASSERT_TRUE(text.ok()) << text.status();
  const std::string file = "1_" + std::string(64, 'w') + ".bin";
  EXPECT_THAT(*text, HasSubstr("kiln_constants_dir = os.path.join(os.path.dirname(os.path.abspath("
                               "__file__)), 'constants')\n"));
  EXPECT_THAT(*text, HasSubstr(long_name + " = kiln_load_constant('" + file +
                               "', 400, torch.float32).reshape((20, 20, ))\n"));
  EXPECT_THAT(*text, HasSubstr("small0 = torch.tensor([0.0, 0.0], dtype=torch.float32)"));
  EXPECT_THAT(*text, Not(HasSubstr("values not printed")));
  auto files = PythonWrapperConstantFiles(p, options);
  ASSERT_TRUE(files.ok()) << files.status();
  ASSERT_EQ(files->size(), 1u);
  EXPECT_EQ((*files)[0].constant, long_name);
  EXPECT_EQ((*files)[0].file_name, file);
  ASSERT_EQ((*files)[0].contents.size(), 400u * sizeof(float));
  float f399 = 0;
  std::memcpy(&f399, (*files)[0].contents.data() + 399 * sizeof(float), sizeof(float));
  EXPECT_EQ(f399, 199.5f);

  // A non-contiguous constant layout is filled by copy.
  WrapperProgram t = p;
  t.layouts[1].second.strides = {1, 20};
  text = PrintPythonWrapper(t, options);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_THAT(*text, HasSubstr(long_name + " = empty_strided_cpu((20, 20, ), (1, 20, ), torch.float32); " +
                               long_name + ".copy_(kiln_load_constant("));

  for (const char* bad : {"..", ".", "../x", "a/b", "/abs", "c\\d", "x'y"}) {
    options.constants_dir = bad;
    EXPECT_FALSE(PrintPythonWrapper(p, options).ok()) << bad;
    EXPECT_FALSE(PythonWrapperConstantFiles(p, options).ok()) << bad;
  }
}

TEST(PythonPrinterTest, ExternsUseTorchCallsThatExist) {
  WrapperProgram p;
  p.inputs = {"x", "w", "m"};
  Layout conv_out = F32({1, 4, 6, 6});
  Layout strided_out = F32({1, 4, 6, 6});
  strided_out.strides = {144, 1, 24, 4};
  p.layouts = {{"x", F32({1, 3, 8, 8})}, {"w", F32({4, 3, 3, 3})}, {"m", F32({4, 4})},
               {"buf0", conv_out},       {"buf1", F32({4, 4})},     {"buf2", F32({4, 4})},
               {"buf3", strided_out},    {"buf4", F32({8, 4})},     {"buf6", F32({4, 1})},
               {"buf5", F32({4, 4})}};
  p.outputs = {"buf0", "buf1", "buf2", "buf3", "buf4", "buf6", "buf5"};
  auto ints = [](std::vector<int64_t> v) {
    std::vector<ir::IValue> out;
    for (int64_t i : v) out.push_back(ir::IValue::Int(i));
    return ir::IValue::List(out);
  };
  std::vector<lowering::ExternArg> conv_args = {
      {"x", {}}, {"w", {}}, {"", ir::IValue::None()}, {"", ints({1, 1})},
      {"", ints({0, 0})}, {"", ints({1, 1})}, {"", ir::IValue::Int(1)}};
  p.lines = {
      AllocateLine{"buf0", conv_out},
      ExternKernelLine{"aten::conv2d", conv_args, {"buf0"}},
      AllocateLine{"buf1", F32({4, 4})},
      ExternKernelLine{"aten::addmm",
                       {{"m", {}}, {"m", {}}, {"m", {}}, {"", ir::IValue::Int(2)}, {"", ir::IValue::Int(3)}},
                       {"buf1"}},
      AllocateLine{"buf2", F32({4, 4})},
      ExternKernelLine{"aten::matmul", {{"m", {}}, {"m", {}}}, {"buf2"}},
      AllocateLine{"buf3", strided_out},
      ExternKernelLine{"aten::conv2d", conv_args, {"buf3"}},
      ExternKernelAllocLine{"aten::cat", {lowering::ExternArg{"", {}, true, {"m", "buf1"}}, {"", ir::IValue::Int(0)}},
                            {"buf4"}, {F32({8, 4})}},
      ExternKernelAllocLine{"kiln::reduce",
                            {{"m", {}}, {"", ir::IValue::String("mean")}, {"", ints({-1})},
                             {"", ir::IValue::Bool(true)}, {"", ir::IValue::Bool(false)}},
                            {"buf6"}, {F32({4, 1})}},
      ExternKernelAllocLine{"kiln::frobnicate", {{"m", {}}}, {"buf5"}, {F32({4, 4})}},
  };
  auto text = PrintPythonWrapper(p);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_THAT(*text, Not(HasSubstr("buf0 = empty_strided_cpu")));
  EXPECT_THAT(*text, HasSubstr("    buf0 = extern_kernels.convolution(x, w, stride=[1, 1], padding=[0, 0], "
                               "dilation=[1, 1], transposed=False, output_padding=[0, 0], groups=1, "
                               "bias=None)\n    assert_size_stride(buf0, (1, 4, 6, 6, ), (144, 36, 6, 1, ))\n"));
  EXPECT_THAT(*text, HasSubstr("    extern_kernels.addmm(m, m, m, alpha=3, beta=2, out=buf1)\n"));
  EXPECT_THAT(*text, HasSubstr("    torch.matmul(m, m, out=buf2)\n"));
  // A result layout the call would not return: filled by copy.
  EXPECT_THAT(*text, HasSubstr("    buf3 = empty_strided_cpu((1, 4, 6, 6, ), (144, 1, 24, 4, ), torch.float32)\n"
                               "    buf3.copy_(extern_kernels.convolution(x, w, "));
  EXPECT_THAT(*text, HasSubstr("    buf4 = aten.cat.default([m, buf1], 0)\n"));
  // kiln::reduce has a Python version; other kiln ops raise when reached.
  EXPECT_THAT(*text, HasSubstr("def kiln_reduce(x, kind, axes, keepdims, noop_with_empty_axes):\n"));
  EXPECT_THAT(*text, HasSubstr("    buf6 = kiln_reduce(m, 'mean', [-1], True, False)\n"));
  EXPECT_THAT(*text, HasSubstr("def kiln_unsupported(op):\n"));
  EXPECT_THAT(*text, HasSubstr("    buf5 = kiln_unsupported('kiln::frobnicate')(m)\n"));
  EXPECT_THAT(*text, Not(HasSubstr("torch.ops.kiln")));

  // Without kiln-only ops, no helper.
  p.lines.pop_back();
  p.outputs.pop_back();
  p.layouts.pop_back();
  text = PrintPythonWrapper(p);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_THAT(*text, Not(HasSubstr("kiln_unsupported")));
}

TEST(PythonPrinterTest, UnusualExternsStillPrint) {
  // Shapes GenerateWrapper does not produce (a proto may): the generic
  // .out overload, never an error.
  WrapperProgram p;
  p.inputs = {"m"};
  p.layouts = {{"m", F32({4, 4})}, {"buf0", F32({4, 4})}, {"buf1", F32({4, 4})}, {"buf2", F32({4, 4})}};
  p.outputs = {"buf0", "buf1", "buf2"};
  p.lines = {AllocateLine{"buf0", F32({4, 4})},
             ExternKernelLine{"aten::mm", {{"m", {}}, {"m", {}}, {"m", {}}}, {"buf0"}},
             AllocateLine{"buf1", F32({4, 4})},
             AllocateLine{"buf2", F32({4, 4})},
             ExternKernelLine{"aten::frexp", {{"m", {}}}, {"buf1", "buf2"}}};
  auto text = PrintPythonWrapper(p);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_THAT(*text, HasSubstr("    aten.mm.out(m, m, m, out=buf0)\n"));
  EXPECT_THAT(*text, HasSubstr("    aten.frexp.out(m, out=(buf1, buf2, ))\n"));
}

TEST(PythonPrinterTest, KernelArgumentsWithOffsetsPassTheirStorageBase) {
  WrapperProgram p;
  Layout whole = F32({8});
  Layout tail = F32({4});
  tail.offset = 4;
  p.inputs = {"arg0"};
  p.layouts = {{"arg0", F32({4})}, {"buf0", whole}, {"buf1", tail}};
  p.outputs = {"buf0"};
  p.lines = {KernelDefinitionLine{"k", "cpu", "void k() {}"}, AllocateLine{"buf0", whole},
             ReinterpretLine{"buf1", "buf0", tail}, KernelCallLine{"k", "cpu", {"arg0", "buf1"}}};
  auto text = PrintPythonWrapper(p);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_THAT(*text, HasSubstr("    buf1 = reinterpret_tensor(buf0, (4, ), (1, ), 4)  # alias\n"
                               "    k(arg0, buf1.as_strided((1, ), (1, ), 0))\n"));
}

TEST(PythonPrinterTest, EmptyDeviceBlockGetsPass) {
  WrapperProgram p;
  p.lines = {EnterDeviceContextManagerLine{"xpu", 1}, ExitDeviceContextManagerLine{}};
  auto text = PrintPythonWrapper(p);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_THAT(*text, HasSubstr("    with torch.get_device_module('xpu').device(1):\n        pass\n    return ()\n"));
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

  // kiln's helper names, island names and the device's names are taken too.
  auto passthrough = [](const std::string& name) {
    WrapperProgram p;
    p.inputs = {name};
    p.outputs = {name};
    p.layouts = {{name, F32({2})}};
    return PrintPythonWrapper(p);
  };
  EXPECT_TRUE(passthrough("island").ok());
  EXPECT_TRUE(passthrough("island_x").ok());
  for (const char* taken : {"kiln_unsupported", "kiln_load_constant", "kiln_constants_dir",
                            "kiln_interpret", "island_3", "empty_strided_cpu"}) {
    EXPECT_FALSE(passthrough(taken).ok()) << taken;
  }

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
