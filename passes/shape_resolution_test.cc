// resolve_shapes: shape arithmetic folds once the inputs' shapes are known,
// and every tensor gets a static type. IR text in, IR text out.
#include "passes/shape_resolution.h"

#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "ir/ir.h"
#include "ir/text_parser.h"
#include "ir/text_printer.h"
#include "passes/pass.h"
#include "passes/shape_functions.h"

namespace kiln::passes {
namespace {

// The reference kernels are what folds tensors; without them (passes/ cannot
// link runtime/) constant propagation folds only scalar and list ops, which
// is what these graphs need: kiln::shape / aten::size answered from types,
// int arithmetic, list construction.
TEST(ShapeResolutionTest, ReshapeToAComputedShapeBecomesStatic) {
  auto g = ir::ParseGraph(R"IR(graph(%x : Float(2, 3, 4)):
  %zero : int = prim::Constant[value=0]()
  %one : int = prim::Constant[value=1]()
  %two : int = prim::Constant[value=2]()
  %minus : int = prim::Constant[value=-1]()
  %f : bool = prim::Constant[value=0]()
  %n : int = aten::size(%x, %zero)
  %c : int = aten::size(%x, %one)
  %w : int = aten::size(%x, %two)
  %cw : int = aten::mul(%c, %w)
  %s : int[] = prim::ListConstruct(%n, %cw)
  %r : Tensor = kiln::onnx_reshape(%x, %s, %f)
  %y : Tensor = aten::relu(%r)
  return (%y))IR");
  ASSERT_TRUE(g.ok()) << g.status();
  PassStatistics stats;
  absl::StatusOr<bool> changed = ResolveShapes(**g, stats);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(ir::PrintGraph(**g),
            "graph(%x : Float(2, 3, 4)):\n"
            "  %f : bool = prim::Constant[value=0]()\n"
            "  %17 : int[] = prim::Constant[value=[2, 12]]()\n"
            "  %r : Float(2, 12) = kiln::onnx_reshape(%x, %17, %f)\n"
            "  %y : Float(2, 12) = aten::relu(%r)\n"
            "  return (%y)\n");
}

TEST(ShapeResolutionTest, OnnxShapeOfAStaticTensorFolds) {
  auto g = ir::ParseGraph(R"IR(graph(%x : Float(5, 7)):
  %zero : int = prim::Constant[value=0]()
  %none : NoneType = prim::Constant()
  %two : int = prim::Constant[value=2]()
  %s : Tensor = kiln::shape(%x, %zero, %none)
  %n : Tensor = kiln::size(%x)
  %s2 : Tensor = aten::mul(%s, %two)
  %n2 : Tensor = aten::mul(%n, %two)
  return (%s2, %n2))IR");
  ASSERT_TRUE(g.ok()) << g.status();
  PassStatistics stats;
  ASSERT_TRUE(ResolveShapes(**g, stats).ok());
  const std::string text = ir::PrintGraph(**g);
  EXPECT_EQ(text.find("kiln::shape"), std::string::npos) << text;
  EXPECT_EQ(text.find("kiln::size"), std::string::npos) << text;
  EXPECT_EQ((*g)->outputs()[0]->type()->ToString(), "Long(2, device=cpu)");
  EXPECT_EQ((*g)->outputs()[1]->type()->ToString(), "Long()");  // 0-dim tensors carry no device fact
}

TEST(ShapeResolutionTest, NothingToResolveIsNoChange) {
  auto g = ir::ParseGraph(R"IR(graph(%x : Float(2, 3)):
  %y : Float(2, 3) = aten::relu(%x)
  return (%y))IR");
  ASSERT_TRUE(g.ok()) << g.status();
  PassStatistics stats;
  absl::StatusOr<bool> changed = ResolveShapes(**g, stats);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_FALSE(*changed);
}

TEST(ShapeResolutionTest, ForgetDerivedTypesKeepsInputsAndConstants) {
  auto g = ir::ParseGraph(R"IR(graph(%x : Float(2, 3)):
  %one : int = prim::Constant[value=1]()
  %y : Float(2, 3) = aten::relu(%x)
  %z : Float(2, 1, 3) = aten::unsqueeze(%y, %one)
  return (%z))IR");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_TRUE(ForgetDerivedTypes(**g, /*dtypes=*/false));
  EXPECT_EQ(ir::PrintGraph(**g),
            "graph(%x : Float(2, 3)):\n"
            "  %one : int = prim::Constant[value=1]()\n"
            "  %y : FloatTensor = aten::relu(%x)\n"
            "  %z : FloatTensor = aten::unsqueeze(%y, %one)\n"
            "  return (%z)\n");
  EXPECT_TRUE(ForgetDerivedTypes(**g, /*dtypes=*/true));
  EXPECT_FALSE(ForgetDerivedTypes(**g, /*dtypes=*/true));
  // Re-inferred from the input.
  PassStatistics stats;
  ASSERT_TRUE(ResolveShapes(**g, stats).ok());
  EXPECT_EQ((*g)->outputs()[0]->type()->ToString(), "Float(2, 1, 3)");
}

}  // namespace
}  // namespace kiln::passes
