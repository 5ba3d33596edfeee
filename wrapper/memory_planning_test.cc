#include "wrapper/memory_planning.h"

#include <gtest/gtest.h>

#include "wrapper/codegen.h"
#include "wrapper/test_fixtures.h"
#include "wrapper/validate.h"

namespace kiln::wrapper {
namespace {

using testing::F32;

std::string Lines(const WrapperProgram& p) {
  std::string out;
  for (const Line& line : p.lines) {
    if (std::holds_alternative<KernelDefinitionLine>(line) ||
        std::holds_alternative<CommentLine>(line)) {
      continue;
    }
    out += LineToString(line) + "\n";
  }
  return out;
}

WrapperProgram Chain(int n) {
  testing::FakeCodegen codegen;
  auto p = GenerateWrapper(testing::ChainGraph(n), testing::ChainSchedule(n), codegen);
  EXPECT_TRUE(p.ok()) << p.status();
  return *std::move(p);
}

TEST(PlanBufferReuseTest, ChainReusesLastInFirstOut) {
  WrapperProgram p = Chain(4);
  auto stats = PlanBufferReuse(p);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->reused, 2);
  EXPECT_EQ(stats->dropped_trailing_frees, 1);
  EXPECT_EQ(Lines(p),
            "AllocateLine buf0 Float[1024] strides [1] offset 0 cpu\n"
            "KernelCallLine cpp_fused_relu_0(arg0, buf0) cpu\n"
            "AllocateLine buf1 Float[1024] strides [1] offset 0 cpu\n"
            "KernelCallLine cpp_fused_relu_1(buf0, buf1) cpu\n"
            "FreeIfNotReusedLine buf0 (reused)\n"
            "ReuseLine buf2 <- buf0 Float[1024] strides [1] offset 0 cpu\n"
            "KernelCallLine cpp_fused_relu_2(buf1, buf2) cpu\n"
            "FreeIfNotReusedLine buf1 (reused)\n"
            "ReuseLine buf3 <- buf1 Float[1024] strides [1] offset 0 cpu\n"
            "KernelCallLine cpp_fused_relu_3(buf2, buf3) cpu\n"
            "NullLine\n");
  EXPECT_TRUE(ValidateWrapperProgram(p).ok());

  auto report = ReportMemory(p);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->num_buffers, 4);
  EXPECT_EQ(report->num_reused, 2);
  EXPECT_EQ(report->total_buffer_bytes, 4 * 4096);
  EXPECT_EQ(report->peak_bytes, 2 * 4096);
}

TEST(PlanBufferReuseTest, KeyNeedsSameDeviceDtypeAndBytes) {
  WrapperProgram p;
  p.inputs = {"arg0"};
  p.outputs = {"buf3"};
  Layout i32 = F32({1024});
  i32.dtype = DType::kInt32;
  Layout other_device = F32({1024});
  other_device.device = "cuda";
  p.layouts = {{"arg0", F32({1024})}, {"buf0", F32({1024})}, {"buf1", i32},
               {"buf2", other_device}, {"buf3", F32({1024})}, {"buf4", F32({512})}};
  p.lines = {KernelDefinitionLine{"k", "cpu", ""},
             AllocateLine{"buf0", F32({1024})},
             KernelCallLine{"k", "cpu", {"arg0", "buf0"}},
             FreeIfNotReusedLine{"buf0"},
             AllocateLine{"buf1", i32},
             AllocateLine{"buf2", other_device},
             AllocateLine{"buf4", F32({512})},  // fewer bytes: no match
             AllocateLine{"buf3", F32({1024})},
             KernelCallLine{"k", "cpu", {"buf1", "buf2", "buf4", "buf3"}}};
  ASSERT_TRUE(ValidateWrapperProgram(p).ok()) << ValidateWrapperProgram(p);
  auto stats = PlanBufferReuse(p);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->reused, 1);
  ASSERT_TRUE(std::holds_alternative<ReuseLine>(p.lines[7]));
  EXPECT_EQ(std::get<ReuseLine>(p.lines[7]).old_buffer, "buf0");
  EXPECT_TRUE(std::holds_alternative<AllocateLine>(p.lines[4]));
  EXPECT_TRUE(std::holds_alternative<AllocateLine>(p.lines[5]));
  EXPECT_TRUE(std::holds_alternative<AllocateLine>(p.lines[6]));
}

// a is freed, then a large buffer lives, then c (same size as a) is
// allocated: holding a's storage across the large buffer would raise the
// peak, so Inductor's check refuses the reuse.
WrapperProgram PeakProgram() {
  WrapperProgram p;
  p.inputs = {"arg0"};
  p.outputs = {"c"};
  p.layouts = {{"arg0", F32({1024})}, {"a", F32({1024})}, {"big", F32({4096})}, {"c", F32({1024})}};
  p.lines = {KernelDefinitionLine{"k", "cpu", ""},
             AllocateLine{"a", F32({1024})},
             KernelCallLine{"k", "cpu", {"arg0", "a"}},
             FreeIfNotReusedLine{"a"},
             AllocateLine{"big", F32({4096})},
             KernelCallLine{"k", "cpu", {"arg0", "big"}},
             FreeIfNotReusedLine{"big"},
             AllocateLine{"c", F32({1024})},
             KernelCallLine{"k", "cpu", {"arg0", "c"}}};
  return p;
}

TEST(PlanBufferReuseTest, PeakCheckRefusesReuseThatRaisesThePeak) {
  WrapperProgram p = PeakProgram();
  auto stats = PlanBufferReuse(p);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->reused, 0);
  EXPECT_EQ(stats->refused_for_peak, 1);
  EXPECT_TRUE(std::holds_alternative<AllocateLine>(p.lines[7]));

  WrapperProgram unchecked = PeakProgram();
  ReusePlanOptions options;
  options.check_peak = false;
  stats = PlanBufferReuse(unchecked, options);
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->reused, 1);
  EXPECT_EQ(ReportMemory(unchecked)->peak_bytes, 16384 + 4096);
  EXPECT_EQ(ReportMemory(p)->peak_bytes, 16384);
}

TEST(PlanBufferReuseTest, NeverPoolsInputsOutputsViewsOrExternAllocations) {
  WrapperProgram p;
  p.inputs = {"arg0"};
  p.outputs = {"buf3"};
  p.layouts = {{"arg0", F32({16})}, {"buf0", F32({16})}, {"v0", F32({4, 4})},
               {"buf1", F32({16})}, {"buf2", F32({16})}, {"buf3", F32({16})}};
  p.lines = {KernelDefinitionLine{"k", "cpu", ""},
             ExternKernelAllocLine{"aten::cumsum", {{"arg0", {}}, {"", ir::IValue::Int(0)}},
                                   {"buf0"}, {F32({16})}},
             ReinterpretLine{"v0", "buf0", F32({4, 4})},
             AllocateLine{"buf1", F32({16})},
             KernelCallLine{"k", "cpu", {"v0", "buf1"}},
             FreeIfNotReusedLine{"buf0"},  // extern-allocated storage
             FreeLine{"arg0"},             // graph input
             AllocateLine{"buf2", F32({16})},
             KernelCallLine{"k", "cpu", {"buf1", "buf2"}},
             FreeIfNotReusedLine{"buf1"},
             AllocateLine{"buf3", F32({16})},  // takes buf1
             KernelCallLine{"k", "cpu", {"buf2", "buf3"}},
             FreeIfNotReusedLine{"buf2"}};
  auto stats = PlanBufferReuse(p);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->reused, 1);
  EXPECT_TRUE(std::holds_alternative<AllocateLine>(p.lines[7]));  // not arg0's, not buf0's
  ASSERT_TRUE(std::holds_alternative<ReuseLine>(p.lines[10]));
  EXPECT_EQ(std::get<ReuseLine>(p.lines[10]).old_buffer, "buf1");
}

TEST(PlanBufferReuseTest, InvalidProgramIsAnErrorNotAReuse) {
  // A view of buf0 is used after buf0's free: handing buf0 to buf1 would
  // corrupt it, and the validator refuses the program.
  WrapperProgram p;
  p.inputs = {"arg0"};
  p.outputs = {"buf1"};
  p.layouts = {{"arg0", F32({4})}, {"buf0", F32({4})}, {"v0", F32({4})}, {"buf1", F32({4})}};
  p.lines = {KernelDefinitionLine{"k", "cpu", ""},
             AllocateLine{"buf0", F32({4})},
             ReinterpretLine{"v0", "buf0", F32({4})},
             KernelCallLine{"k", "cpu", {"arg0", "buf0"}},
             FreeIfNotReusedLine{"buf0"},
             AllocateLine{"buf1", F32({4})},
             KernelCallLine{"k", "cpu", {"v0", "buf1"}}};
  EXPECT_EQ(PlanBufferReuse(p).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(std::holds_alternative<AllocateLine>(p.lines[5]));
}

TEST(PlanBufferReuseTest, SampleGraphKeepsViewBaseAlive) {
  testing::FakeCodegen codegen;
  auto p = GenerateWrapper(testing::SampleGraph(), testing::SampleSchedule(), codegen);
  ASSERT_TRUE(p.ok());
  auto stats = PlanBufferReuse(*p);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->reused, 0);  // buf0 (512 B) matches nothing later
  EXPECT_EQ(stats->dropped_trailing_frees, 2);
  auto report = ReportMemory(*p);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->total_buffer_bytes, 512 + 128 + 16 + 16);
  EXPECT_EQ(report->peak_bytes, 512 + 128);  // while mm runs
}

TEST(PlanMemoryPoolTest, PacksNonOverlappingRangesIntoOneArena) {
  WrapperProgram p = Chain(4);  // no reuse planning: four storages
  auto pool = PlanMemoryPool(p);
  ASSERT_TRUE(pool.ok()) << pool.status();
  // buf0 and buf2 never overlap; buf1 overlaps both and lives longest, so
  // it is placed first; buf3 is the output.
  EXPECT_EQ(pool->Find("buf1")->offset, 0);
  EXPECT_EQ(pool->Find("buf0")->offset, 4096);
  EXPECT_EQ(pool->Find("buf2")->offset, 4096);
  EXPECT_EQ(pool->Find("buf3")->offset, -1);
  EXPECT_TRUE(pool->Find("buf3")->is_output);
  EXPECT_EQ(pool->arena_bytes, 8192);
  EXPECT_EQ(pool->outside_bytes, 4096);
  EXPECT_EQ(pool->Find("nope"), nullptr);

  auto report = ReportMemory(p, &*pool);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(*report->pool_bytes, 8192 + 4096);
  EXPECT_EQ(report->total_buffer_bytes, 4 * 4096);
  EXPECT_EQ(report->ToString(),
            "buffers 4 (0 reused), sum 16384 bytes, planned peak 8192 bytes (50% of sum), pool "
            "12288 bytes");

  PoolOptions with_outputs;
  with_outputs.include_outputs = true;
  auto combined = PlanMemoryPool(p, with_outputs);
  ASSERT_TRUE(combined.ok());
  EXPECT_EQ(combined->arena_bytes, 8192);  // buf3 takes buf1's slot once buf1 is dead
  EXPECT_EQ(combined->Find("buf3")->offset, 0);
  EXPECT_EQ(combined->outside_bytes, 0);
}

TEST(PlanMemoryPoolTest, LargestFirstAndReuseGroupsShareAnOffset) {
  WrapperProgram p;
  p.inputs = {"arg0"};
  p.outputs = {"out"};
  p.layouts = {{"arg0", F32({8})},  {"small", F32({10})}, {"large", F32({1000})},
               {"mid", F32({100})}, {"again", F32({100})}, {"out", F32({8})}};
  p.lines = {KernelDefinitionLine{"k", "cpu", ""},
             AllocateLine{"small", F32({10})},
             AllocateLine{"large", F32({1000})},
             KernelCallLine{"k", "cpu", {"arg0", "small", "large"}},
             FreeIfNotReusedLine{"large"},
             AllocateLine{"mid", F32({100})},
             KernelCallLine{"k", "cpu", {"small", "mid"}},
             FreeIfNotReusedLine{"mid", true},
             ReuseLine{"mid", "again", F32({100}), true},
             KernelCallLine{"k", "cpu", {"small", "again"}},
             FreeIfNotReusedLine{"small"},
             AllocateLine{"out", F32({8})},
             KernelCallLine{"k", "cpu", {"again", "out"}},
             FreeIfNotReusedLine{"again"}};
  ASSERT_TRUE(ValidateWrapperProgram(p).ok()) << ValidateWrapperProgram(p);
  auto pool = PlanMemoryPool(p);
  ASSERT_TRUE(pool.ok()) << pool.status();
  EXPECT_EQ(pool->Find("large")->offset, 0);     // placed first
  EXPECT_EQ(pool->Find("mid")->offset, 0);       // large is dead by then
  EXPECT_EQ(pool->Find("again")->offset, 0);     // same storage as mid
  EXPECT_EQ(pool->Find("small")->offset, 4032);  // after large, aligned to 64
  EXPECT_EQ(pool->arena_bytes, 4032 + 64);
  EXPECT_EQ(pool->ToString(),
            "arena 4096 bytes, outside 32 bytes\n"
            "small 40 bytes @4032 lines [1, 10]\n"
            "large 4000 bytes @0 lines [2, 4]\n"
            "mid=again 400 bytes @0 lines [5, 13]\n"
            "out 32 bytes outside lines [11, 13] output\n");
}

TEST(PlanMemoryPoolTest, RejectsBadAlignment) {
  PoolOptions options;
  options.alignment = 48;
  EXPECT_FALSE(PlanMemoryPool(Chain(2), options).ok());
}

}  // namespace
}  // namespace kiln::wrapper

namespace kiln::wrapper {
namespace {

TEST(PlanBufferReuseTest, LongChainIsFast) {
  // 5000 steps: planning must stay near-linear (quadratic would time out).
  WrapperProgram p = Chain(5000);
  auto stats = PlanBufferReuse(p);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->reused, 4998);
  EXPECT_EQ(ReportMemory(p)->peak_bytes, 2 * 4096);
}

}  // namespace
}  // namespace kiln::wrapper
