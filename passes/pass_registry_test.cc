#include "passes/pass_registry.h"

#include <memory>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/test_passes.h"

namespace kiln::passes {
namespace {

using ::testing::HasSubstr;

absl::StatusOr<bool> NoChange(ir::Graph&, PassStatistics&) { return false; }

TEST(PassRegistry, RegistersAndResolvesAliases) {
  PassRegistry r;
  ASSERT_TRUE(r.RegisterFunction("dead_code_elimination", {"dce"}, "removes dead nodes",
                                 NoChange)
                  .ok());
  EXPECT_TRUE(r.Contains("dead_code_elimination"));
  EXPECT_TRUE(r.Contains("dce"));
  EXPECT_FALSE(r.Contains("cse"));
  EXPECT_EQ(r.CanonicalName("dce").value(), "dead_code_elimination");
  absl::StatusOr<std::unique_ptr<Pass>> pass = r.Create("dce");
  ASSERT_TRUE(pass.ok());
  EXPECT_EQ((*pass)->name(), "dead_code_elimination");
  ASSERT_EQ(r.List().size(), 1u);
  EXPECT_EQ(r.List()[0]->description, "removes dead nodes");
  EXPECT_EQ(r.KnownNames(), "dead_code_elimination (dce)");
}

TEST(PassRegistry, UnknownNameListsKnownPasses) {
  PassRegistry r = testing::MakeTestRegistry();
  absl::StatusOr<std::unique_ptr<Pass>> pass = r.Create("dcee");
  ASSERT_FALSE(pass.ok());
  EXPECT_EQ(pass.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(pass.status().message()), HasSubstr("unknown pass 'dcee'"));
  EXPECT_THAT(std::string(pass.status().message()), HasSubstr("noop (nop)"));
  EXPECT_THAT(std::string(pass.status().message()), HasSubstr("remove_marker"));
}

TEST(PassRegistry, RejectsClashesAndBadNames) {
  PassRegistry r;
  ASSERT_TRUE(r.RegisterFunction("cse_pass", {"cse"}, "", NoChange).ok());
  absl::Status dup = r.RegisterFunction("cse_pass", {}, "", NoChange);
  EXPECT_EQ(dup.code(), absl::StatusCode::kAlreadyExists);
  absl::Status alias_clash = r.RegisterFunction("other", {"cse"}, "", NoChange);
  EXPECT_EQ(alias_clash.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(std::string(alias_clash.message()), HasSubstr("'cse' is already used by pass 'cse_pass'"));
  EXPECT_EQ(r.RegisterFunction("cse", {}, "", NoChange).code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(r.RegisterFunction("Bad-Name", {}, "", NoChange).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.RegisterFunction("ok_name", {"bad alias"}, "", NoChange).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.RegisterFunction("no_factory", {}, "", nullptr).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.RegisterFunction("twice", {"twice"}, "", NoChange).code(),
            absl::StatusCode::kInvalidArgument);
  // Failed registrations leave nothing behind.
  EXPECT_FALSE(r.Contains("other"));
  EXPECT_FALSE(r.Contains("ok_name"));
  EXPECT_EQ(r.List().size(), 1u);
}

class MisnamedPass : public Pass {
 public:
  absl::string_view name() const override { return "something_else"; }
  absl::StatusOr<bool> Run(ir::Graph&) override { return false; }
};

TEST(PassRegistry, FactoryMustProduceThePassItNames) {
  PassRegistry r;
  ASSERT_TRUE(r.Register({"misnamed", {}, "", [] { return std::make_unique<MisnamedPass>(); }})
                  .ok());
  absl::StatusOr<std::unique_ptr<Pass>> pass = r.Create("misnamed");
  EXPECT_EQ(pass.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(pass.status().message()), HasSubstr("'something_else'"));
}

}  // namespace
}  // namespace kiln::passes
