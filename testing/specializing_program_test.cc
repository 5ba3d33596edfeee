// SpecializingProgram (driver): one compile per input signature,
// results equal to the interpreter's, LRU eviction.
#include "driver/specializing_program.h"

#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "gtest/gtest.h"
#include "ir/op_registry.h"
#include "ir/text_parser.h"
#include "runtime/register_kernels.h"
#include "runtime/tensor_ops.h"

namespace kiln::testing {
namespace {

constexpr const char* kGraph = R"IR(graph(%x : Float(2, 3)):
  %y : Tensor = aten::relu(%x)
  %z : Tensor = aten::mul(%y, %x)
  return (%z)
)IR";

void RegisterBackends() {
  if (const char* tmp = std::getenv("TEST_TMPDIR")) {
    setenv("KILN_CACHE_DIR", (std::string(tmp) + "/kiln_cache").c_str(), 1);
  }
  ASSERT_TRUE(runtime::RegisterReferenceKernels(ir::BuiltinOps()).ok());
  ASSERT_TRUE(backends::cpu::RegisterCpuBackend().ok());
}

Tensor Ramp(std::vector<int64_t> sizes) {
  Tensor t = Tensor::Empty(DType::kFloat32, sizes);
  for (int64_t i = 0; i < t.numel(); ++i) EXPECT_TRUE(runtime::SetDouble(t, i, i - 3.0).ok());
  return t;
}

void ExpectReluTimesX(const Tensor& x, const Tensor& z) {
  ASSERT_EQ(z.sizes(), x.sizes());
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double v = x.GetDouble(i);
    EXPECT_EQ(z.GetDouble(i), (v > 0 ? v : 0) * v) << i;
  }
}

TEST(SpecializingProgramTest, CompilesOncePerInputSignature) {
  RegisterBackends();
  auto graph = ir::ParseGraph(kGraph);
  ASSERT_TRUE(graph.ok()) << graph.status();
  auto program = driver::SpecializingProgram::Create(**graph);
  ASSERT_TRUE(program.ok()) << program.status();
  auto& p = **program;
  EXPECT_EQ(p.num_compiles(), 1);
  for (const std::vector<int64_t>& sizes :
       {std::vector<int64_t>{2, 3}, {4, 5}, {2, 3}, {4, 5}, {7}}) {
    const Tensor x = Ramp(sizes);
    auto out = p.Run({x});
    ASSERT_TRUE(out.ok()) << out.status();
    ExpectReluTimesX(x, (*out)[0]);
  }
  EXPECT_EQ(p.num_compiles(), 3);  // declared [2, 3], then [4, 5] and [7]
  EXPECT_FALSE(p.Run({}).ok());   // wrong arity is an error, not a compile
  EXPECT_FALSE(p.RunValues({ir::IValue::Int(3)}).ok());  // so is a non-tensor
  EXPECT_EQ(p.num_compiles(), 3);
}

TEST(SpecializingProgramTest, EvictsTheLeastRecentlyUsedVersion) {
  RegisterBackends();
  auto graph = ir::ParseGraph(kGraph);
  ASSERT_TRUE(graph.ok());
  auto program = driver::SpecializingProgram::Create(**graph, {}, /*max_specializations=*/1);
  ASSERT_TRUE(program.ok()) << program.status();
  for (const std::vector<int64_t>& sizes : {std::vector<int64_t>{4, 5}, {2, 3}}) {
    ASSERT_TRUE((*program)->Run({Ramp(sizes)}).ok());
  }
  EXPECT_EQ((*program)->num_compiles(), 3);
}

// Several threads at once, each cycling through its own shapes with room for
// only two versions: compiles, lookups and LRU evictions interleave while
// other threads still run evicted versions (held by shared_ptr).
TEST(SpecializingProgramTest, RunsFromSeveralThreadsAtOnce) {
  RegisterBackends();
  auto graph = ir::ParseGraph(kGraph);
  ASSERT_TRUE(graph.ok());
  auto program = driver::SpecializingProgram::Create(**graph, {}, /*max_specializations=*/2);
  ASSERT_TRUE(program.ok()) << program.status();
  driver::SpecializingProgram& p = **program;
  constexpr int kThreads = 4;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&p, t] {
      const std::vector<std::vector<int64_t>> shapes = {{2, 3}, {4, 5}, {3, int64_t{2} + t}, {7}};
      for (int round = 0; round < 3; ++round) {
        for (const std::vector<int64_t>& sizes : shapes) {
          const Tensor x = Ramp(sizes);
          auto out = p.Run({x});
          ASSERT_TRUE(out.ok()) << out.status();
          ExpectReluTimesX(x, (*out)[0]);
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_GE(p.num_compiles(), 4);
}

// Dynamic dims (ONNX dim_params): nothing compiles up front; each call's
// shapes compile a version whose shape arithmetic folded to constants, with
// no interpreter island.
TEST(SpecializingProgramTest, DynamicDimsSpecializeWithoutIslands) {
  RegisterBackends();
  auto graph = ir::ParseGraph(R"IR(graph(%x : Float(*, 4)):
  %zero : int = prim::Constant[value=0]()
  %none : NoneType = prim::Constant()
  %f : bool = prim::Constant[value=0]()
  %shape : Tensor = kiln::shape(%x, %zero, %none)
  %s : int[] = kiln::tensor_to_int_list(%shape)
  %flat : int[] = prim::Constant[value=[-1]]()
  %r : Tensor = kiln::onnx_reshape(%x, %flat, %f)
  %back : Tensor = kiln::onnx_reshape(%r, %s, %f)
  %y : Tensor = aten::mul(%back, %x)
  return (%y)
)IR");
  ASSERT_TRUE(graph.ok()) << graph.status();
  auto program = driver::SpecializingProgram::Create(**graph);
  ASSERT_TRUE(program.ok()) << program.status();
  EXPECT_EQ((*program)->num_compiles(), 0);
  for (int64_t rows : {2, 5, 2}) {
    const Tensor x = Ramp({rows, 4});
    auto out = (*program)->Run({x});
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ((*out)[0].sizes(), x.sizes());
    for (int64_t i = 0; i < x.numel(); ++i) EXPECT_EQ((*out)[0].GetDouble(i), x.GetDouble(i) * x.GetDouble(i));
  }
  EXPECT_EQ((*program)->num_compiles(), 2);
  for (const driver::CompileSummary& s : (*program)->compile_summaries()) {
    EXPECT_EQ(s.num_islands, 0);
    EXPECT_EQ(s.num_reference_externs, 0);
  }
}

// ReduceSum with its axes as an input (opset 13): the axes' values decide the
// output's shape, so the program specializes on them (guarded by value).
TEST(SpecializingProgramTest, SmallIntegerInputsSpecializeOnTheirValues) {
  RegisterBackends();
  auto graph = ir::ParseGraph(R"IR(graph(%x : Float(3, 4), %axes : Long(1)):
  %kind : str = prim::Constant[value="sum"]()
  %keep : bool = prim::Constant[value=0]()
  %a : int[] = kiln::tensor_to_int_list(%axes)
  %y : Tensor = kiln::reduce(%x, %kind, %a, %keep, %keep)
  return (%y)
)IR");
  ASSERT_TRUE(graph.ok()) << graph.status();
  auto program = driver::SpecializingProgram::Create(**graph);
  ASSERT_TRUE(program.ok()) << program.status();
  EXPECT_EQ((*program)->num_compiles(), 0);  // the shapes depend on a value
  const Tensor x = Ramp({3, 4});
  for (int64_t axis : {1, 0, 1}) {
    Tensor axes = Tensor::ScalarInt(axis);
    axes = Tensor::View(axes, {1}, {1}, 0);
    auto out = (*program)->RunValues({ir::IValue::FromTensor(x), ir::IValue::FromTensor(axes)});
    ASSERT_TRUE(out.ok()) << out.status();
    const Tensor& y = (*out)[0].toTensor();
    ASSERT_EQ(y.sizes(), std::vector<int64_t>{axis == 1 ? 3 : 4});
    for (int64_t i = 0; i < y.numel(); ++i) {
      double want = 0;
      for (int64_t j = 0; j < (axis == 1 ? 4 : 3); ++j) want += x.GetDouble(axis == 1 ? i * 4 + j : j * 4 + i);
      EXPECT_EQ(y.GetDouble(i), want) << axis << " " << i;
    }
  }
  EXPECT_EQ((*program)->num_compiles(), 2);  // axis 1, axis 0; the third call reuses
  for (const driver::CompileSummary& s : (*program)->compile_summaries()) EXPECT_EQ(s.num_islands, 0);
}

// A call whose shapes cannot work is an error naming the node, not a crash.
TEST(SpecializingProgramTest, ImpossibleShapesAreAClearError) {
  RegisterBackends();
  auto graph = ir::ParseGraph(R"IR(graph(%x : Float(*, 3), %w : Float(3, 5)):
  %y : Tensor = aten::mm(%x, %w)
  return (%y)
)IR");
  ASSERT_TRUE(graph.ok()) << graph.status();
  auto program = driver::SpecializingProgram::Create(**graph);
  ASSERT_TRUE(program.ok()) << program.status();
  auto bad = (*program)->Run({Ramp({2, 4}), Ramp({3, 5})});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(std::string(bad.status().message()).find("aten::mm"), std::string::npos) << bad.status();
  auto good = (*program)->Run({Ramp({2, 3}), Ramp({3, 5})});
  EXPECT_TRUE(good.ok()) << good.status();
}

// What did not compile is reported: op, node name, reason.
TEST(SpecializingProgramTest, ReportNamesExternsAndIslands) {
  RegisterBackends();
  // A float tensor read as an int is not specialized on its value (only
  // small integer inputs are): the triu stays an island.
  auto graph = ir::ParseGraph(R"IR(graph(%x : Float(4, 5), %kt : Float(1)):
  %k : int = aten::Int(%kt), scope: /m/Trilu
  %t : Float(4, 5) = aten::triu(%x, %k), scope: /m/Trilu
  %s : Float(4, 5), %si : Long(4, 5) = aten::sort(%t), scope: /m/Sort
  return (%s)
)IR");
  ASSERT_TRUE(graph.ok()) << graph.status();
  driver::CompiledGraph compiled;
  auto program = driver::SpecializingProgram::Create(**graph, {}, 8, &compiled);
  ASSERT_TRUE(program.ok()) << program.status();
  EXPECT_EQ(compiled.num_islands, 1);
  EXPECT_EQ(compiled.num_reference_externs, 1);
  const std::string report = driver::NotCompiledReport(compiled);
  EXPECT_NE(report.find("| island 0 | aten::triu | /m/Trilu | lowering: argument 'diagonal' must be a "
                        "constant int"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("| reference extern | aten::sort | /m/Sort | no loop lowering for this op |"),
            std::string::npos)
      << report;
  EXPECT_EQ(driver::NotCompiledOps(compiled),
            (std::vector<std::string>{"aten::Int.Tensor (island 1)", "aten::sort (extern 1)",
                                      "aten::triu (island 1)"}));
}

}  // namespace
}  // namespace kiln::testing
