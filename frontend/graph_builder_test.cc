#include "frontend/graph_builder.h"

#include "gtest/gtest.h"
#include "ir/text_printer.h"
#include "ir/verifier.h"

namespace kiln::frontend {
namespace {

TEST(GraphBuilderTest, BuildsAVerifiedGraphWithTypedOutputs) {
  ir::Graph g;
  GraphBuilder b(&g);
  ir::Value* x = b.AddInput("x", GraphBuilder::TensorTy(DType::kFloat32, {2, 3}));
  absl::StatusOr<ir::Value*> y = b.Op("aten::add", {x, x, b.Int(1)});
  ASSERT_TRUE(y.ok()) << y.status();
  absl::StatusOr<ir::Value*> z = b.Op("aten::relu", {*y});
  ASSERT_TRUE(z.ok()) << z.status();
  b.AddOutput(*z);
  ASSERT_TRUE(ir::Verify(g).ok()) << ir::Verify(g);
  EXPECT_EQ(ir::PrintGraph(g),
            "graph(%x : Float(2, 3)):\n"
            "  %1 : int = prim::Constant[value=1]()\n"
            "  %2 : Tensor = aten::add(%x, %x, %1)\n"
            "  %3 : Tensor = aten::relu(%2)\n"
            "  return (%3)\n");
}

TEST(GraphBuilderTest, WrongArgumentsAreAnErrorNamingTheCandidates) {
  ir::Graph g;
  GraphBuilder b(&g);
  ir::Value* x = b.AddInput("x", ir::Type::Tensor());
  absl::StatusOr<ir::Value*> y = b.Op("aten::relu", {x, x});
  ASSERT_FALSE(y.ok());
  EXPECT_NE(y.status().message().find("aten::relu(Tensor self)"), std::string::npos)
      << y.status();
  EXPECT_FALSE(b.Op("aten::no_such_op", {x}).ok());
}

TEST(GraphBuilderTest, ListsAndLoops) {
  ir::Graph g;
  GraphBuilder b(&g);
  ir::Value* x = b.AddInput("x", ir::Type::Tensor());
  ir::Value* list = b.List(ir::Type::Tensor(), {x, x});
  absl::StatusOr<ir::Value*> cat = b.Op("aten::cat", {list, b.Int(0)});
  ASSERT_TRUE(cat.ok()) << cat.status();
  ir::Node* loop = b.Loop(b.Int(3), b.Bool(true), {*cat});
  ir::Block* body = loop->block(0);
  b.SetInsertionBlock(body);
  absl::StatusOr<ir::Value*> next = b.Op("aten::neg", {body->inputs()[1]});
  ASSERT_TRUE(next.ok());
  GraphBuilder::SetBlockOutputs(body, {b.Bool(true), *next});
  b.SetInsertionBlock(g.block());
  b.AddOutput(loop->output(0));
  EXPECT_TRUE(ir::Verify(g).ok()) << ir::Verify(g) << ir::PrintGraph(g);
}

}  // namespace
}  // namespace kiln::frontend
