#include <cmath>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "gtest/gtest.h"
#include "ir/text_parser.h"
#include "runtime/interpreter.h"
#include "sim/register.h"
#include "sim/sim_codegen.h"
#include "sim/sim_device.h"
#include "sim/sim_isa.h"
#include "sim/sim_launch.h"
#include "driver/compile_graph.h"
#include "wrapper/python_printer.h"

namespace kiln_sim {
namespace {

using kiln::Tensor;

constexpr const char* kDoubleKernel = R"(.kernel twice
.param x Float
.param y Float
.section 1 pointwise
.ranges 6
.store 1 0
%0 = var Long 0
%1 = load Float @0 %0
%2 = float Float 2
%3 = mul Float %1 %2
.result %3
.end
)";

TEST(SimKernel, TextRoundTrips) {
  auto kernel = ParseKernel(kDoubleKernel);
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  EXPECT_EQ(PrintKernel(*kernel), kDoubleKernel);
}

TEST(SimKernel, MalformedKernelsAreRejected) {
  const std::string good = kDoubleKernel;
  auto replace = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  const std::vector<std::string> bad = {
      "",
      replace(".kernel twice", ".kernel"),
      replace("%1 = load Float @0 %0", "%1 = load Float @7 %0"),   // no parameter 7
      replace("%1 = load Float @0 %0", "%1 = load Long @0 %0"),    // dtype mismatch
      replace("%3 = mul Float %1 %2", "%3 = mul Float %1 %9"),     // later register
      replace("%3 = mul Float %1 %2", "%3 = mul Float %1"),        // operand count
      replace("%3 = mul Float %1 %2", "%4 = mul Float %1 %2"),     // not in order
      replace("%3 = mul Float %1 %2", "%3 = frobnicate Float %1"), // unknown op
      replace("%0 = var Long 0", "%0 = var Long 3"),               // no variable 3
      replace(".ranges 6", ".ranges -6"),
      replace(".store 1 0", ".store 0"),
      replace(".result %3", ".result %8"),
      replace(".end", ""),
      replace(".param y Float", ".param y Half"),
      replace(".section 1 pointwise", ".section 5 pointwise"),
  };
  for (const std::string& text : bad) {
    EXPECT_FALSE(ParseKernel(text).ok()) << text;
  }
}

TEST(SimKernel, LaunchRunsWhenTheStreamRunsAndChecksBounds) {
  auto kernel = ParseKernel(kDoubleKernel);
  ASSERT_TRUE(kernel.ok());
  auto shared = std::make_shared<const Kernel>(*kernel);
  SimDevice sim;
  auto stream_owned = sim.CreateStream(0);
  auto* stream = dynamic_cast<SimStream*>(stream_owned->get());
  std::vector<float> x = {1, 2, 3, 4, 5, 6}, y(6, 0);
  Grid grid{2, 2};  // 4 threads for 6 elements: the grid-stride loop covers the rest
  ASSERT_TRUE(Launch(*stream, shared, grid, {{x.data(), 6}, {y.data(), 6}}).ok());
  EXPECT_EQ(y[0], 0);  // queued, not run
  ASSERT_TRUE(stream->Synchronize().ok());
  EXPECT_EQ(y, (std::vector<float>{2, 4, 6, 8, 10, 12}));
  // A buffer too small for the index space is an error, not a crash.
  std::vector<float> small(3, 0);
  absl::Status s = Execute(*shared, grid, {{x.data(), 6}, {small.data(), 3}});
  EXPECT_TRUE(absl::IsOutOfRange(s)) << s;
  EXPECT_FALSE(Execute(*shared, grid, {{x.data(), 6}}).ok());
  auto props = sim.GetDeviceProperties(0);
  Grid sized = GridFor(*shared, *props);
  EXPECT_EQ(sized.threads_per_block, 256);
  EXPECT_EQ(sized.blocks, 1);
}

Tensor Filled(std::vector<int64_t> sizes, double phase) {
  Tensor t = Tensor::Empty(kiln::DType::kFloat32, sizes);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(std::sin(phase + 0.37 * i));
  return t;
}

// Compiles `text` for "sim", runs it and kiln's interpreter on the same
// inputs, and compares every output.
void ExpectSimMatchesInterpreter(const std::string& text, const std::vector<Tensor>& inputs) {
  ASSERT_TRUE(RegisterSimBackend().ok());
  auto reference = kiln::ir::ParseGraph(text);
  ASSERT_TRUE(reference.ok()) << reference.status();
  std::vector<kiln::ir::IValue> values;
  for (const Tensor& t : inputs) values.push_back(kiln::ir::IValue::FromTensor(t));
  auto want = kiln::runtime::RunGraph(**reference, values);
  ASSERT_TRUE(want.ok()) << want.status();

  auto graph = kiln::ir::ParseGraph(text);
  ASSERT_TRUE(graph.ok());
  kiln::driver::CompileOptions options;
  options.device = "sim";
  auto compiled = kiln::driver::CompileGraph(**graph, options);
  ASSERT_TRUE(compiled.ok()) << compiled.status() << "\n" << text;
  // Every kernel body is sim bytecode.
  for (const auto& line : compiled->program.lines) {
    if (const auto* def = std::get_if<kiln::wrapper::KernelDefinitionLine>(&line)) {
      EXPECT_EQ(def->kernel_body.rfind(".kernel sim_fused_", 0), 0u) << def->kernel_body;
    }
  }
  auto got = compiled->compiled->Run(inputs);
  ASSERT_TRUE(got.ok()) << got.status() << "\n" << compiled->program.ToString();
  ASSERT_EQ(got->size(), want->size());
  for (size_t o = 0; o < got->size(); ++o) {
    const Tensor& expected = (*want)[o].toTensor();
    ASSERT_EQ((*got)[o].sizes(), expected.sizes()) << "output " << o;
    ASSERT_EQ((*got)[o].dtype(), expected.dtype()) << "output " << o;
    for (int64_t i = 0; i < expected.numel(); ++i) {
      ASSERT_NEAR((*got)[o].GetDouble(i), expected.GetDouble(i), 1e-5)
          << "output " << o << " element " << i << "\n" << text;
    }
  }
}

TEST(SimCompile, PointwiseReductionsAndExternsMatchTheInterpreter) {
  ExpectSimMatchesInterpreter(R"(graph(%x : Float(4, 8), %w : Float(8, 8)):
  %one : int = prim::Constant[value=1]()
  %n : NoneType = prim::Constant()
  %a : Tensor = aten::mm(%x, %w)
  %b : Tensor = aten::add(%a, %x, %one)
  %c : Tensor = aten::tanh(%b)
  %s : Tensor = aten::softmax(%c, %one, %n)
  return (%s, %c))",
                              {Filled({4, 8}, 0.1), Filled({8, 8}, 0.7)});
  ExpectSimMatchesInterpreter(R"(graph(%x : Float(4, 8), %w : Float(8), %b : Float(8)):
  %shape : int[] = prim::Constant[value=[8]]()
  %eps : float = prim::Constant[value=1.0000000000000001e-05]()
  %f : bool = prim::Constant[value=0]()
  %y : Tensor = aten::layer_norm(%x, %shape, %w, %b, %eps, %f)
  %d : int = prim::Constant[value=1]()
  %k : bool = prim::Constant[value=0]()
  %m : Tensor = aten::argmax(%x, %d, %k)
  return (%y, %m))",
                              {Filled({4, 8}, 0.3), Filled({8}, 1.1), Filled({8}, 2.2)});
  ExpectSimMatchesInterpreter(R"(graph(%x : Float(2, 3), %y : Float(2, 3)):
  %l : Tensor[] = prim::ListConstruct(%x, %y)
  %d : int = prim::Constant[value=0]()
  %c : Tensor = aten::cat(%l, %d)
  %r : Tensor = aten::relu(%c)
  %t : Tensor = aten::t(%r)
  %s : Tensor = aten::sigmoid(%t)
  return (%s, %r))",
                              {Filled({2, 3}, 0.5), Filled({2, 3}, 1.5)});
}

TEST(SimCompile, ProgramsRunUnderTheirDeviceGuardAndPrintSimPython) {
  ASSERT_TRUE(RegisterSimBackend().ok());
  auto graph = kiln::ir::ParseGraph(R"(graph(%x : Float(16)):
  %a : Tensor = aten::exp(%x)
  %b : Tensor = aten::neg(%a)
  return (%b))");
  ASSERT_TRUE(graph.ok());
  kiln::driver::CompileOptions options;
  options.device = "sim";
  auto compiled = kiln::driver::CompileGraph(**graph, options);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  const std::string lines = compiled->program.ToString();
  EXPECT_NE(lines.find("EnterDeviceContextManagerLine sim:0"), std::string::npos) << lines;
  auto out = compiled->compiled->Run({Filled({16}, 0)});
  ASSERT_TRUE(out.ok()) << out.status();
  const SimRunStats* stats = SimProgramStats(*compiled->compiled);
  ASSERT_NE(stats, nullptr);
  EXPECT_EQ(stats->kernel_launches, 1);
  EXPECT_EQ(stats->host_externs, 0);
  EXPECT_GT(stats->peak_device_bytes, 0);
  EXPECT_EQ(*RegisteredSimDevice()->MemoryAllocated(0), 0);  // everything freed

  auto python = kiln::wrapper::PrintPythonWrapper(compiled->program);
  ASSERT_TRUE(python.ok()) << python.status();
  EXPECT_NE(python->find("import kiln_sim\n"), std::string::npos) << *python;
  EXPECT_NE(python->find("with kiln_sim.device_guard(0):"), std::string::npos) << *python;
  EXPECT_NE(python->find("= kiln_sim.load_kernel(r'''\n.kernel sim_fused_"), std::string::npos) << *python;
  EXPECT_NE(python->find("kiln_sim.launch(sim_fused_"), std::string::npos) << *python;
}

TEST(SimCompile, AnIndexedDeviceNameRunsOnThatIndex) {
  ASSERT_TRUE(RegisterSimBackend().ok());
  SimDevice& sim = *RegisteredSimDevice();
  const int64_t peak_before = *sim.MaxMemoryAllocated(1);
  auto graph = kiln::ir::ParseGraph(R"(graph(%x : Float(64)):
  %a : Tensor = aten::sigmoid(%x)
  %b : Tensor = aten::mul(%a, %x)
  return (%b))");
  ASSERT_TRUE(graph.ok());
  kiln::driver::CompileOptions options;
  options.device = "sim:1";
  auto compiled = kiln::driver::CompileGraph(**graph, options);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  const std::string lines = compiled->program.ToString();
  EXPECT_NE(lines.find("EnterDeviceContextManagerLine sim:1"), std::string::npos) << lines;
  Tensor x = Filled({64}, 0.25);
  auto out = compiled->compiled->Run({x});
  ASSERT_TRUE(out.ok()) << out.status();
  for (int64_t i = 0; i < 64; ++i) {
    const double v = x.GetDouble(i);
    EXPECT_NEAR((*out)[0].GetDouble(i), v / (1 + std::exp(-v)), 1e-6);
  }
  // Nothing else in this binary uses sim:1: its memory served this program.
  EXPECT_EQ(peak_before, 0);
  EXPECT_GE(*sim.MaxMemoryAllocated(1), 64 * 4);
  EXPECT_GE(SimProgramStats(*compiled->compiled)->peak_device_bytes, 64 * 4);
  EXPECT_EQ(*sim.MemoryAllocated(1), 0);
  EXPECT_EQ(sim.CurrentDevice(), 0);  // the program's guards restored the index
}

}  // namespace
}  // namespace kiln_sim
