// The production registry: every pass library registers without clashes,
// and the test-only passes stay out of it.
#include "passes/all_passes.h"

#include "gtest/gtest.h"
#include "passes/pipeline.h"

namespace kiln::passes {
namespace {

TEST(AllPasses, RegistryBuildsWithoutClashes) {
  const PassRegistry& r = DefaultPassRegistry();
  EXPECT_FALSE(r.Contains("noop"));
  EXPECT_FALSE(r.Contains("fail"));
  PassRegistry fresh;
  absl::Status s = RegisterAllPasses(fresh);
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(fresh.List().size(), r.List().size());
  for (const PassInfo* info : r.List()) {
    absl::StatusOr<std::unique_ptr<Pass>> pass = r.Create(info->name);
    ASSERT_TRUE(pass.ok()) << pass.status();
    EXPECT_EQ((*pass)->name(), info->name);
  }
  EXPECT_TRUE(Pipeline::Create("-O0", r).ok());
}

}  // namespace
}  // namespace kiln::passes
