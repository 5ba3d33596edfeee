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

}  // namespace
}  // namespace kiln::testing
