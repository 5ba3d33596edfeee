// Shape functions of the ONNX importer's kiln:: ops and of the aten
// indexing / generator ops (shape_functions_onnx.cc,
// shape_functions_indexing.cc): IR text in, inferred types out.
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "ir/ir.h"
#include "ir/text_parser.h"
#include "passes/pass.h"
#include "passes/shape_propagation.h"

namespace kiln::passes {
namespace {

std::unique_ptr<ir::Graph> Propagated(const std::string& text) {
  auto g = ir::ParseGraph(text);
  EXPECT_TRUE(g.ok()) << g.status();
  if (!g.ok()) return nullptr;
  PassStatistics stats;
  absl::StatusOr<bool> changed = PropagateShapes(**g, stats);
  EXPECT_TRUE(changed.ok()) << changed.status();
  return *std::move(g);
}

std::string TypeOf(const ir::Graph& g, const std::string& name) {
  const ir::Value* v = g.findValue(name);
  return v ? v->type()->ToString() : "<no value " + name + ">";
}

TEST(OnnxShapeFunctionsTest, ReshapesAndViews) {
  auto g = Propagated(R"IR(graph(%x : Float(2, 3, 4)):
  %f : bool = prim::Constant[value=0]()
  %s : int[] = prim::Constant[value=[0, -1, 2]]()
  %ax : int[] = prim::Constant[value=[0, -1]]()
  %one : int = prim::Constant[value=1]()
  %two : int = prim::Constant[value=2]()
  %none : NoneType = prim::Constant()
  %e : int[] = prim::Constant[value=[3, 1, 1, 4]]()
  %r : Tensor = kiln::onnx_reshape(%x, %s, %f)
  %fl : Tensor = kiln::onnx_flatten(%x, %two)
  %u : Tensor = kiln::onnx_unsqueeze(%x, %ax)
  %sq : Tensor = kiln::onnx_squeeze(%u, %none)
  %ex : Tensor = kiln::onnx_expand(%x, %e)
  return (%r, %fl, %u, %sq, %ex))IR");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(TypeOf(*g, "r"), "Float(2, 6, 2)");   // 0 copies dim 0, -1 inferred
  EXPECT_EQ(TypeOf(*g, "fl"), "Float(6, 4)");
  EXPECT_EQ(TypeOf(*g, "u"), "Float(1, 2, 3, 4, 1)");
  EXPECT_EQ(TypeOf(*g, "sq"), "Float(2, 3, 4)");
  EXPECT_EQ(TypeOf(*g, "ex"), "Float(3, 2, 3, 4)");  // bidirectional broadcast
}

TEST(OnnxShapeFunctionsTest, AllowZeroReshapeOfEmptyIsAnErrorWhenCountsDiffer) {
  auto g = ir::ParseGraph(R"IR(graph(%x : Float(2, 3, 4)):
  %t : bool = prim::Constant[value=1]()
  %z : int[] = prim::Constant[value=[0, 24]]()
  %rz : Tensor = kiln::onnx_reshape(%x, %z, %t)
  return (%rz))IR");
  ASSERT_TRUE(g.ok()) << g.status();
  PassStatistics stats;
  absl::StatusOr<bool> changed = PropagateShapes(**g, stats);
  ASSERT_FALSE(changed.ok());
  EXPECT_TRUE(absl::StrContains(changed.status().message(), "kiln::onnx_reshape")) << changed.status();
}

TEST(OnnxShapeFunctionsTest, SliceShapeRangeReducePad) {
  auto g = Propagated(R"IR(graph(%x : Float(10, 6), %i : Long(4, 2)):
  %st : int[] = prim::Constant[value=[-1, 1]]()
  %en : int[] = prim::Constant[value=[-100, 1000]]()
  %ax : int[] = prim::Constant[value=[0, 1]]()
  %sp : int[] = prim::Constant[value=[-3, 2]]()
  %zero : int = prim::Constant[value=0]()
  %none : NoneType = prim::Constant()
  %kind : str = prim::Constant[value="mean"]()
  %keep : bool = prim::Constant[value=1]()
  %drop : bool = prim::Constant[value=0]()
  %axes : int[] = prim::Constant[value=[-1]]()
  %pads : int[] = prim::Constant[value=[1, 0, 2, 3]]()
  %mode : str = prim::Constant[value="constant"]()
  %a : Long() = prim::Constant[value={1}]()
  %b : Long() = prim::Constant[value={10}]()
  %c : Long() = prim::Constant[value={3}]()
  %s : Tensor = kiln::onnx_slice(%x, %st, %en, %ax, %sp)
  %shape : Tensor = kiln::shape(%x, %zero, %none)
  %range : Tensor = kiln::range(%a, %b, %c)
  %red : Tensor = kiln::reduce(%x, %kind, %axes, %keep, %drop)
  %all : Tensor = kiln::reduce(%x, %kind, %none, %drop, %drop)
  %pad : Tensor = kiln::onnx_pad(%x, %pads, %mode, %none)
  %g : Tensor = kiln::gather_nd(%x, %i, %zero)
  return (%s, %shape, %range, %red, %all, %pad, %g))IR");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(TypeOf(*g, "s"), "Float(4, 3)");  // 9, 6, 3, 0 and 1, 3, 5
  EXPECT_EQ(TypeOf(*g, "shape"), "Long(2)");
  EXPECT_EQ(TypeOf(*g, "range"), "Long(3)");  // 1, 4, 7
  EXPECT_EQ(TypeOf(*g, "red"), "Float(10, 1)");
  EXPECT_EQ(TypeOf(*g, "all"), "Float()");
  EXPECT_EQ(TypeOf(*g, "pad"), "Float(13, 9)");
  EXPECT_EQ(TypeOf(*g, "g"), "Float(4)");
}

TEST(OnnxShapeFunctionsTest, LayerNormStatisticsAndSplits) {
  auto g = Propagated(R"IR(graph(%x : Float(2, 5, 8), %w : Float(8)):
  %axis : int = prim::Constant[value=-1]()
  %eps : float = prim::Constant[value=1e-05]()
  %none : NoneType = prim::Constant()
  %norm : int[] = prim::Constant[value=[8]]()
  %sizes : int[] = prim::Constant[value=[3, 5]]()
  %dim : int = prim::Constant[value=2]()
  %y : Tensor, %mean : Tensor, %rstd : Tensor = kiln::layer_norm(%x, %axis, %w, %none, %eps)
  %ny : Tensor, %nmean : Tensor, %nrstd : Tensor = aten::native_layer_norm(%x, %norm, %w, %none, %eps)
  %parts : Tensor[] = aten::split_with_sizes(%x, %sizes, %dim)
  %p0 : Tensor, %p1 : Tensor = prim::ListUnpack(%parts)
  return (%y, %mean, %rstd, %ny, %nmean, %nrstd, %p0, %p1))IR");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(TypeOf(*g, "y"), "Float(2, 5, 8)");
  EXPECT_EQ(TypeOf(*g, "mean"), "Float(2, 5, 1)");
  EXPECT_EQ(TypeOf(*g, "nrstd"), "Float(2, 5, 1)");
  EXPECT_EQ(TypeOf(*g, "p0"), "Float(2, 5, 3)");
  EXPECT_EQ(TypeOf(*g, "p1"), "Float(2, 5, 5)");
}

TEST(OnnxShapeFunctionsTest, AdvancedIndexing) {
  auto g = Propagated(R"IR(graph(%w : Float(100, 16), %ids : Long(2, 7), %x : Float(4, 5, 6), %j : Long(3)):
  %none : NoneType = prim::Constant()
  %l1 : Tensor?[] = prim::ListConstruct(%ids)
  %emb : Tensor = aten::index(%w, %l1)
  %l2 : Tensor?[] = prim::ListConstruct(%none, %j)
  %mid : Tensor = aten::index(%x, %l2)
  %l3 : Tensor?[] = prim::ListConstruct(%j, %none, %j)
  %split : Tensor = aten::index(%x, %l3)
  return (%emb, %mid, %split))IR");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(TypeOf(*g, "emb"), "Float(2, 7, 16)");
  EXPECT_EQ(TypeOf(*g, "mid"), "Float(4, 3, 6)");
  EXPECT_EQ(TypeOf(*g, "split"), "Float(3, 5)");  // non-adjacent index dims lead
}

TEST(OnnxShapeFunctionsTest, ReshapeRankFromARuntimeShapeTensor) {
  // The shape's values are unknown, its length is not: the rank is.
  auto g = Propagated(R"IR(graph(%x : Float(2, 3, 4), %shape : Long(3)):
  %f : bool = prim::Constant[value=0]()
  %s : int[] = kiln::tensor_to_int_list(%shape)
  %r : Tensor = kiln::onnx_reshape(%x, %s, %f)
  return (%r))IR");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(TypeOf(*g, "r"), "Float(*, *, *)");
}

TEST(OnnxShapeFunctionsTest, InferNodeTypesKeepsExistingFacts) {
  auto g = ir::ParseGraph(R"IR(graph(%x : Float(2, 3)):
  %one : int = prim::Constant[value=1]()
  %y : Float(*, *) = aten::unsqueeze(%x, %one)
  return (%y))IR");
  ASSERT_TRUE(g.ok()) << g.status();
  ir::Node* n = (*g)->findValue("y")->node();
  // A contradiction (the annotation says rank 2) is left for the compile.
  ASSERT_TRUE(InferNodeTypes(*n).ok());
  EXPECT_EQ(TypeOf(**g, "y"), "Float(*, *)");
}

}  // namespace
}  // namespace kiln::passes
