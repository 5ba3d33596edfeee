#include "wrapper/device_op_overrides.h"

#include <memory>
#include <string>
#include <variant>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "wrapper/codegen.h"
#include "wrapper/python_printer.h"
#include "wrapper/test_fixtures.h"
#include "wrapper/wrapper_ir.h"

namespace kiln::wrapper {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A made-up accelerator with its own Python API ("accel"), guarded blocks
// and a launch convention with a grid.
class AccelOps : public DeviceOpOverrides {
 public:
  AccelOps() : DeviceOpOverrides("accel") {}
  std::vector<std::string> HeaderLines() const override {
    return {"import accel_runtime", "empty_strided_accel = accel_runtime.empty_strided"};
  }
  std::vector<std::string> DefinedNames() const override {
    return {"accel_runtime", "empty_strided_accel"};
  }
  std::string ImportGetRawStreamAs(const std::string& name) const override {
    return "from accel_runtime import raw_stream as " + name;
  }
  std::string SetDevice(int index) const override {
    return "accel_runtime.set_device(" + std::to_string(index) + ")";
  }
  std::string Synchronize() const override { return "accel_runtime.synchronize()"; }
  std::string DeviceGuard(int index) const override {
    return "accel_runtime.device(" + std::to_string(index) + ")";
  }
  std::vector<std::string> GuardPrologue(int index) const override { return {SetDevice(index)}; }
  std::string EmptyStrided(const std::string& sizes, const std::string& strides,
                           const std::string& dtype, const std::string&) const override {
    return "empty_strided_accel(" + sizes + ", " + strides + ", " + dtype + ")";
  }
  std::string KernelDefinition(const std::string& name, const std::vector<std::string>&,
                               const std::string& body) const override {
    return name + " = accel_runtime.load_kernel(" + body + ")";
  }
  std::string KernelLaunch(const std::string& name,
                           const std::vector<std::string>& args) const override {
    std::string joined;
    for (const std::string& a : args) joined += (joined.empty() ? "" : ", ") + a;
    return "accel_runtime.launch(" + name + ", grid=(1, 1, 1), args=[" + joined + "])";
  }
};

// A host-like device: no guards.
class UnguardedOps : public DeviceOpOverrides {
 public:
  UnguardedOps() : DeviceOpOverrides("hostlike") {}
  bool NeedsDeviceGuard() const override { return false; }
};

void RegisterOnce() {
  static const bool registered = [] {
    EXPECT_TRUE(RegisterDeviceOpOverrides(std::make_unique<AccelOps>()).ok());
    EXPECT_TRUE(RegisterDeviceOpOverrides(std::make_unique<UnguardedOps>()).ok());
    return true;
  }();
  (void)registered;
}

TEST(DeviceOpOverridesRegistry, FindsByTypeAndIndexedName) {
  RegisterOnce();
  auto by_type = FindDeviceOpOverrides("accel");
  ASSERT_TRUE(by_type.ok()) << by_type.status();
  EXPECT_EQ((*by_type)->type(), "accel");
  auto by_index = FindDeviceOpOverrides("accel:3");
  ASSERT_TRUE(by_index.ok());
  EXPECT_EQ(*by_index, *by_type);
  EXPECT_EQ(&DeviceOpOverridesOrGeneric("accel:1"), *by_type);
  EXPECT_EQ(RegisteredDeviceOpOverrides(), (std::vector<std::string>{"accel", "hostlike"}));
}

TEST(DeviceOpOverridesRegistry, ErrorsNameTheProblem) {
  RegisterOnce();
  auto missing = FindDeviceOpOverrides("tpu");
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(absl::IsNotFound(missing.status()));
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("[accel, hostlike]"));
  EXPECT_TRUE(absl::IsAlreadyExists(RegisterDeviceOpOverrides(std::make_unique<AccelOps>())));
  EXPECT_TRUE(absl::IsInvalidArgument(RegisterDeviceOpOverrides(nullptr)));
  class BadName : public DeviceOpOverrides {
   public:
    BadName() : DeviceOpOverrides("Bad Name'") {}
  };
  EXPECT_TRUE(absl::IsInvalidArgument(RegisterDeviceOpOverrides(std::make_unique<BadName>())));
}

TEST(DeviceOpOverrides, GenericDefaultsUsePyTorchsDeviceNeutralApis) {
  const DeviceOpOverrides& xpu = GenericDeviceOpOverrides("xpu:1");
  EXPECT_EQ(xpu.type(), "xpu");
  EXPECT_EQ(xpu.SetDevice(1), "torch.get_device_module('xpu').set_device(1)");
  EXPECT_EQ(xpu.Synchronize(), "torch.get_device_module('xpu').synchronize()");
  EXPECT_EQ(xpu.DeviceGuard(2), "torch.get_device_module('xpu').device(2)");
  EXPECT_TRUE(xpu.GuardPrologue(2).empty());
  EXPECT_TRUE(xpu.NeedsDeviceGuard());
  EXPECT_EQ(xpu.ImportGetRawStreamAs("get_raw_stream"),
            "get_raw_stream = lambda index: torch.get_device_module('xpu').current_stream(index)");
  EXPECT_EQ(xpu.EmptyStrided("(4, )", "(1, )", "torch.float32", "'xpu:1'"),
            "empty_strided((4, ), (1, ), device='xpu:1', dtype=torch.float32)");
  EXPECT_EQ(xpu.KernelLaunch("k", {"a", "b"}), "k(a, b)");
  EXPECT_EQ(&GenericDeviceOpOverrides("xpu"), &xpu);  // cached
  // Text that is not a device type never reaches the output.
  EXPECT_EQ(GenericDeviceOpOverrides("x'); import os; ('").SetDevice(0),
            "torch.get_device_module('unknown_device').set_device(0)");
}

WrapperProgram AccelProgram() {
  Layout on_accel = testing::F32({4});
  on_accel.device = "accel:1";
  WrapperProgram p;
  p.inputs = {"arg0"};
  p.outputs = {"buf0"};
  p.layouts = {{"arg0", on_accel}, {"buf0", on_accel}};
  p.lines = {KernelDefinitionLine{"accel_k", "accel", "ADD R0, R1"},
             EnterDeviceContextManagerLine{"accel", 1},
             AllocateLine{"buf0", on_accel},
             KernelCallLine{"accel_k", "accel", {"arg0", "buf0"}},
             ExitDeviceContextManagerLine{}};
  return p;
}

TEST(DeviceOpOverrides, PythonPrinterUsesTheDevicesStrings) {
  RegisterOnce();
  PythonPrinterOptions options;
  options.benchmark_harness = false;
  auto text = PrintPythonWrapper(AccelProgram(), options);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_THAT(*text, HasSubstr("import accel_runtime\nempty_strided_accel = accel_runtime.empty_strided\n"));
  EXPECT_THAT(*text, HasSubstr("accel_k = accel_runtime.load_kernel(r'''\nADD R0, R1\n''')\n"));
  EXPECT_THAT(*text, HasSubstr("    with accel_runtime.device(1):\n"
                               "        accel_runtime.set_device(1)\n"
                               "        buf0 = empty_strided_accel((4, ), (1, ), torch.float32)\n"
                               "        accel_runtime.launch(accel_k, grid=(1, 1, 1), args=[arg0, buf0])\n"
                               "    return (buf0, )\n"));
  EXPECT_THAT(*text, Not(HasSubstr("empty_strided_cpu")));
}

TEST(DeviceOpOverrides, NamesTheDeviceDefinesAreReserved) {
  RegisterOnce();
  WrapperProgram p = AccelProgram();
  p.layouts[0].first = "accel_runtime";
  p.inputs[0] = "accel_runtime";
  std::get<KernelCallLine>(p.lines[3]).args[0] = "accel_runtime";
  auto text = PrintPythonWrapper(p);
  ASSERT_FALSE(text.ok());
  EXPECT_THAT(std::string(text.status().message()), HasSubstr("accel_runtime"));
}

// A codegen for any device type, with the fixtures' empty kernel bodies.
class AnyDeviceCodegen : public DeviceCodegen {
 public:
  explicit AnyDeviceCodegen(std::string device) : device_(std::move(device)) {}
  std::string device() const override { return device_; }
  absl::StatusOr<std::string> KernelSource(const lowering::LoopGraph&,
                                           const lowering::FusedKernel& kernel) override {
    return "// " + kernel.name;
  }
  absl::StatusOr<std::unique_ptr<CompiledProgram>> Compile(const WrapperProgram&) override {
    return absl::UnimplementedError("not needed");
  }

 private:
  std::string device_;
};

// The sample graph with every kernel and buffer on `device`.
std::vector<std::string> LineKinds(const std::string& device) {
  lowering::LoopGraph graph = testing::SampleGraph();
  for (lowering::Buffer& b : graph.buffers) b.layout.device = device;
  lowering::Schedule schedule = testing::SampleSchedule();
  for (lowering::ScheduleStep& step : schedule.steps) step.kernel.device = device;
  AnyDeviceCodegen codegen(device);
  auto program = GenerateWrapper(graph, schedule, codegen);
  EXPECT_TRUE(program.ok()) << program.status();
  std::vector<std::string> kinds;
  if (!program.ok()) return kinds;
  for (const Line& line : program->lines) kinds.push_back(LineKindName(line));
  return kinds;
}

TEST(DeviceOpOverrides, GuardLinesFollowTheDevicesOverrides) {
  RegisterOnce();
  const std::vector<std::string> guarded = LineKinds("accel:1");
  ASSERT_FALSE(guarded.empty());
  EXPECT_THAT(guarded, ::testing::Contains("EnterDeviceContextManagerLine"));
  EXPECT_EQ(guarded.back(), "ExitDeviceContextManagerLine");
  for (const char* device : {"hostlike", "unregistered"}) {
    EXPECT_THAT(LineKinds(device), Not(::testing::Contains("EnterDeviceContextManagerLine")))
        << device;
  }
}

}  // namespace
}  // namespace kiln::wrapper
