// Random structural edits of valid programs: whatever the validator accepts
// must survive planning and printing, and reuse planning must keep a valid
// program valid (its ReuseLines never introduce a use-after-free).
#include <random>

#include <gtest/gtest.h>

#include "wrapper/codegen.h"
#include "wrapper/memory_planning.h"
#include "wrapper/python_printer.h"
#include "wrapper/test_fixtures.h"
#include "wrapper/validate.h"

namespace kiln::wrapper {
namespace {

std::vector<WrapperProgram> Seeds() {
  testing::FakeCodegen codegen;
  std::vector<WrapperProgram> seeds;
  seeds.push_back(*GenerateWrapper(testing::SampleGraph(), testing::SampleSchedule(), codegen));
  seeds.push_back(*GenerateWrapper(testing::ChainGraph(6), testing::ChainSchedule(6), codegen));
  return seeds;
}

std::string RandomName(const WrapperProgram& p, std::mt19937& rng) {
  if (p.layouts.empty()) return "x";
  return p.layouts[rng() % p.layouts.size()].first;
}

void Mutate(WrapperProgram& p, std::mt19937& rng) {
  if (p.lines.empty()) return;
  const size_t i = rng() % p.lines.size();
  const size_t j = rng() % p.lines.size();
  switch (rng() % 7) {
    case 0: std::swap(p.lines[i], p.lines[j]); break;
    case 1: p.lines.erase(p.lines.begin() + static_cast<long>(i)); break;
    case 2: p.lines.insert(p.lines.begin() + static_cast<long>(i), p.lines[j]); break;
    case 3:
      if (auto* l = std::get_if<KernelCallLine>(&p.lines[i]); l && !l->args.empty()) {
        l->args[rng() % l->args.size()] = RandomName(p, rng);
      }
      break;
    case 4:
      if (auto* l = std::get_if<FreeIfNotReusedLine>(&p.lines[i])) l->buffer = RandomName(p, rng);
      break;
    case 5: p.outputs.push_back(RandomName(p, rng)); break;
    case 6:
      if (auto* l = std::get_if<AllocateLine>(&p.lines[i]); l && !l->layout.sizes.empty()) {
        l->layout.sizes[0] = static_cast<int64_t>(rng() % 5) - 1;
      }
      break;
  }
}

TEST(RobustnessTest, RandomEditsNeverCrashAndPlanningStaysValid) {
  std::mt19937 rng(12345);
  const std::vector<WrapperProgram> seeds = Seeds();
  int accepted = 0;
  for (int iteration = 0; iteration < 3000; ++iteration) {
    WrapperProgram p = seeds[static_cast<size_t>(iteration) % seeds.size()];
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits; ++e) Mutate(p, rng);
    (void)PrintPythonWrapper(p);
    (void)PlanMemoryPool(p);
    (void)ReportMemory(p);
    if (!ValidateWrapperProgram(p).ok()) {
      EXPECT_FALSE(PlanBufferReuse(p).ok());
      continue;
    }
    ++accepted;
    ASSERT_TRUE(PlanBufferReuse(p).ok());
    ASSERT_TRUE(ValidateWrapperProgram(p).ok()) << p.ToString();
    ASSERT_TRUE(PrintPythonWrapper(p).ok());
    auto pool = PlanMemoryPool(p);
    ASSERT_TRUE(pool.ok());
    auto report = ReportMemory(p, &*pool);
    ASSERT_TRUE(report.ok());
    EXPECT_LE(report->peak_bytes, report->total_buffer_bytes);
  }
  EXPECT_GT(accepted, 100);  // the edits must not all be rejected
}

}  // namespace
}  // namespace kiln::wrapper
