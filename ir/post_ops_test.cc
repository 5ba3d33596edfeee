#include "ir/post_ops.h"

#include <gtest/gtest.h>

namespace kiln::ir {
namespace {

TEST(PostOpsTest, ParsesStepsInOrder) {
  auto ops = ParsePostOps({"add", "clamp", "relu", "mul"}, {0.0, 6.0}, 2);
  ASSERT_TRUE(ops.ok()) << ops.status();
  ASSERT_EQ(ops->size(), 4u);
  EXPECT_EQ((*ops)[0].kind, PostOpKind::kAdd);
  EXPECT_EQ((*ops)[0].operand, 0);
  EXPECT_EQ((*ops)[1].kind, PostOpKind::kClamp);
  EXPECT_EQ((*ops)[1].scalars, (std::vector<double>{0.0, 6.0}));
  EXPECT_EQ((*ops)[2].operand, -1);
  EXPECT_EQ((*ops)[3].operand, 1);
}

TEST(PostOpsTest, RoundTripsEveryKind) {
  for (int k = 0; k <= static_cast<int>(PostOpKind::kMul); ++k) {
    PostOp op;
    op.kind = static_cast<PostOpKind>(k);
    op.scalars.assign(static_cast<size_t>(PostOpScalarCount(op.kind)), 0.5);
    std::vector<std::string> names;
    std::vector<double> scalars;
    AppendPostOp(op, &names, &scalars);
    auto back = ParsePostOps(names, scalars, static_cast<size_t>(PostOpOperandCount(op.kind)));
    ASSERT_TRUE(back.ok()) << PostOpName(op.kind) << ": " << back.status();
    EXPECT_EQ((*back)[0].kind, op.kind);
    EXPECT_EQ((*back)[0].scalars, op.scalars);
  }
}

TEST(PostOpsTest, RejectsMalformedLists) {
  EXPECT_FALSE(ParsePostOps({"softmax"}, {}, 0).ok());       // unknown
  EXPECT_FALSE(ParsePostOps({"clamp"}, {1.0}, 0).ok());      // too few scalars
  EXPECT_FALSE(ParsePostOps({"add"}, {}, 0).ok());           // no operand
  EXPECT_FALSE(ParsePostOps({"relu"}, {1.0}, 0).ok());       // left-over scalar
  EXPECT_FALSE(ParsePostOps({"relu"}, {}, 1).ok());          // left-over operand
  auto err = ParsePostOps({"relu", "bogus"}, {}, 0);
  ASSERT_FALSE(err.ok());
  EXPECT_NE(std::string(err.status().message()).find("post-op 1"), std::string::npos);
}

}  // namespace
}  // namespace kiln::ir
