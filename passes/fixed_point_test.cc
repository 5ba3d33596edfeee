#include "passes/fixed_point.h"

#include <memory>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/test_passes.h"

namespace kiln::passes {
namespace {

using ::testing::HasSubstr;
using testing::CountMarkers;
using testing::MakeSmallGraph;
using testing::MakeTestRegistry;

FixedPointBody Body(Pass& pass) {
  return [&pass](ir::Graph& g, bool*) { return pass.Run(g); };
}

TEST(FixedPoint, RunsUntilNothingChanges) {
  PassRegistry r = MakeTestRegistry();
  auto add = r.Create("add_marker").value();
  auto remove = r.Create("remove_marker").value();
  auto g = MakeSmallGraph();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(add->Run(*g).ok());
  absl::StatusOr<FixedPointResult> result = RunToFixedPoint("remove", {}, *g, Body(*remove));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->changed);
  EXPECT_EQ(result->iterations, 4);  // three removals, then one with no change
  EXPECT_FALSE(result->hit_cap);
  EXPECT_EQ(CountMarkers(*g), 0u);
}

TEST(FixedPoint, CapStopsANonConvergingBody) {
  PassRegistry r = MakeTestRegistry();
  auto add = r.Create("add_marker").value();
  auto g = MakeSmallGraph();
  FixedPointOptions options;
  options.max_iterations = 5;
  absl::StatusOr<FixedPointResult> result = RunToFixedPoint("grow", options, *g, Body(*add));
  ASSERT_TRUE(result.ok());
  EXPECT_TRUE(result->hit_cap);
  EXPECT_EQ(result->iterations, 5);
  EXPECT_EQ(CountMarkers(*g), 5u);

  options.fail_at_cap = true;
  result = RunToFixedPoint("grow", options, *g, Body(*add));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().message(),
            "grow: no fixed point after 5 iterations (the graph was still changing)");
}

TEST(FixedPoint, DetectsCycles) {
  PassRegistry r = MakeTestRegistry();
  auto toggle = r.Create("toggle_marker").value();
  auto g = MakeSmallGraph();
  absl::StatusOr<FixedPointResult> result =
      RunToFixedPoint("fixpoint(toggle_marker)", {}, *g, Body(*toggle));
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(std::string(result.status().message()),
              HasSubstr("fixpoint(toggle_marker): cycle detected: the graph after iteration 2 "
                        "is the same as at entry"));

  // A pass claiming a change it did not make is a cycle of length one.
  auto liar = r.Create("lie_changed").value();
  result = RunToFixedPoint("liar", {}, *g, Body(*liar));
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(std::string(result.status().message()), HasSubstr("after iteration 1 is the same as at entry"));

  // Without detection the cap ends it.
  FixedPointOptions options;
  options.detect_cycles = false;
  result = RunToFixedPoint("toggle", options, *g, Body(*toggle));
  ASSERT_TRUE(result.ok());
  EXPECT_TRUE(result->hit_cap);
}

TEST(FixedPoint, BodyErrorsAndStopsPassThrough) {
  PassRegistry r = MakeTestRegistry();
  auto fail = r.Create("fail").value();
  auto g = MakeSmallGraph();
  absl::StatusOr<FixedPointResult> result = RunToFixedPoint("f", {}, *g, Body(*fail));
  EXPECT_EQ(result.status().message(), "test failure");

  int calls = 0;
  FixedPointOptions no_cycles;  // the body claims changes it does not make
  no_cycles.detect_cycles = false;
  result = RunToFixedPoint("s", no_cycles, *g, [&](ir::Graph&, bool* stop) -> absl::StatusOr<bool> {
    *stop = ++calls == 2;
    return true;
  });
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->stopped);
  EXPECT_EQ(result->iterations, 2);

  FixedPointOptions bad;
  bad.max_iterations = 0;
  EXPECT_EQ(RunToFixedPoint("b", bad, *g, Body(*fail)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(FixedPoint, FixedPointPassWrapsAPass) {
  PassRegistry r = MakeTestRegistry();
  auto g = MakeSmallGraph();
  auto add = r.Create("add_marker").value();
  ASSERT_TRUE(add->Run(*g).ok());
  ASSERT_TRUE(add->Run(*g).ok());
  FixedPointPass pass(r.Create("remove_marker").value());
  EXPECT_EQ(pass.name(), "fixpoint(remove_marker)");
  absl::StatusOr<bool> changed = pass.Run(*g);
  ASSERT_TRUE(changed.ok());
  EXPECT_TRUE(*changed);
  EXPECT_EQ(pass.inner().statistics().Get("markers_removed"), 2);
  changed = pass.Run(*g);
  ASSERT_TRUE(changed.ok());
  EXPECT_FALSE(*changed);
}

}  // namespace
}  // namespace kiln::passes
