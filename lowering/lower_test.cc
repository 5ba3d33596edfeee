#include "lowering/lower.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "lowering/lower_test_util.h"
#include "ops/row_facts.h"

namespace kiln::lowering {
namespace {

using testing::LowerText;
using testing::ParsePropagated;

std::string Dump(const std::string& text) {
  absl::StatusOr<LoopGraph> g = LowerText(text);
  if (!g.ok()) return std::string(g.status().message());
  return g->ToString();
}

// The lowering table is the rows' LOWER column, nothing more or less.
TEST(LowerTest, TableIsTheRowsLowerColumn) {
  std::vector<std::string> from_rows;
  for (const ops::RowFacts& row : ops::AllRowFacts()) {
    if (row.lowering) from_rows.push_back(row.name);
  }
  std::sort(from_rows.begin(), from_rows.end());
  EXPECT_EQ(LoweredOverloads(), from_rows);
  EXPECT_GT(from_rows.size(), 100u);
}

// An in-place overload lowers through its functional variant's row.
TEST(LowerTest, InPlaceOpLowersThroughItsFunctionalRow) {
  EXPECT_EQ(Dump(R"(graph(%x : Float(2, 3)):
  %one : int = prim::Constant[value=1]()
  %y : Tensor = aten::add_(%x, %x, %one)
  %z : Tensor = aten::relu_(%y)
  return (%z))"),
            "arg0 : Float[2, 3] = input\n"
            "buf0 : Float[2, 3] = pointwise [2, 3] load(arg0, v0 * 3 + v1) + load(arg0, v0 * 3 + v1)\n"
            "buf1 : Float[2, 3] = pointwise [2, 3] relu(load(buf0, v0 * 3 + v1))\n"
            "inputs: arg0\n"
            "outputs: buf1\n");
}

TEST(LowerTest, AddTanh) {
  EXPECT_EQ(Dump(R"(graph(%x : Float(2, 3)):
  %one : int = prim::Constant[value=1]()
  %c : float = prim::Constant[value=1.]()
  %y : Tensor = aten::add(%x, %c, %one)
  %z : Tensor = aten::tanh(%y)
  return (%z))"),
            "arg0 : Float[2, 3] = input\n"
            "buf0 : Float[2, 3] = pointwise [2, 3] load(arg0, v0 * 3 + v1) + 1.0\n"
            "buf1 : Float[2, 3] = pointwise [2, 3] tanh(load(buf0, v0 * 3 + v1))\n"
            "inputs: arg0\noutputs: buf1\n");
}


// Small integer exponents become products; others stay pow.
TEST(LowerTest, PowOfSmallIntegerExponentsIsAProduct) {
  EXPECT_EQ(Dump(R"(graph(%x : Float(4)):
  %three : float = prim::Constant[value=3.]()
  %four : int = prim::Constant[value=4]()
  %half : float = prim::Constant[value=0.5]()
  %a : Tensor = aten::pow(%x, %three)
  %b : Tensor = aten::pow(%x, %four)
  %c : Tensor = aten::pow(%x, %half)
  return (%a, %b, %c))"),
            "arg0 : Float[4] = input\n"
            "buf0 : Float[4] = pointwise [4] load(arg0, v0) * load(arg0, v0) * load(arg0, v0)\n"
            "buf1 : Float[4] = pointwise [4] load(arg0, v0) * load(arg0, v0) * (load(arg0, v0) * load(arg0, v0))\n"
            "buf2 : Float[4] = pointwise [4] pow(load(arg0, v0), 0.5)\n"
            "inputs: arg0\noutputs: buf0, buf1, buf2\n");
}

// torch 2.x core ATen spellings lower through their rows.
TEST(LowerTest, CoreAtenOpsOfTorch2) {
  EXPECT_EQ(Dump(R"(graph(%x : Float(2, 1, 3)):
  %dims : int[] = prim::Constant[value=[1, -1]]()
  %s : Tensor = aten::squeeze(%x, %dims)
  %a : Tensor = aten::alias(%s)
  %double : int = prim::Constant[value=7]()
  %c : Tensor = aten::_to_copy(%a, %double)
  %keep : bool = prim::Constant[value=0]()
  %one : int[] = prim::Constant[value=[1]]()
  %any : Tensor = aten::any(%c, %one, %keep)
  return (%c, %any))"),
            "arg0 : Float[2, 1, 3] = input\n"
            "view0 : Float[2, 3] = view of arg0\n"
            "buf0 : Double[2, 3] = pointwise [2, 3] cast(load(arg0, v0 * 3 + v1), Double)\n"
            "buf1 : Bool[2] = max [2] over [3] cast(load(buf0, v0 * 3 + v1), Bool)\n"
            "inputs: arg0\noutputs: buf0, buf1\n");
}

TEST(LowerTest, ViewsReinterpretAndNonViewableReshapeCopies) {
  EXPECT_EQ(Dump(R"(graph(%x : Float(2, 3, 4)):
  %p : int[] = prim::Constant[value=[2, 0, 1]]()
  %y : Tensor = aten::permute(%x, %p)
  %d : int = prim::Constant[value=2]()
  %s : int = prim::Constant[value=1]()
  %e : int = prim::Constant[value=3]()
  %one : int = prim::Constant[value=1]()
  %z : Float(4, 2, 2) = aten::slice(%y, %d, %s, %e, %one)
  %sh : int[] = prim::Constant[value=[16]]()
  %r : Tensor = aten::reshape(%z, %sh)
  return (%z, %r))"),
            "arg0 : Float[2, 3, 4] = input\n"
            "view0 : Float[4, 2, 3] strides [1, 12, 4] offset 0 = view of arg0\n"
            "view1 : Float[4, 2, 2] strides [1, 12, 4] offset 4 = view of arg0\n"
            "buf0 : Float[16] = pointwise [16] load(arg0, v0 % 2 * 4 + v0 // 2 % 2 * 12 + v0 // 4 + 4)\n"
            "inputs: arg0\n"
            "outputs: view1, buf0\n");
}

TEST(LowerTest, ArgmaxKeepdimAndVarianceViaWelford) {
  EXPECT_EQ(Dump(R"(graph(%x : Float(3, 5)):
  %d : int = prim::Constant[value=1]()
  %t : bool = prim::Constant[value=1]()
  %f : bool = prim::Constant[value=0]()
  %a : Tensor = aten::argmax(%x, %d, %t)
  %dims : int[] = prim::Constant[value=[1]]()
  %v : Tensor = aten::var(%x, %dims, %t, %f)
  return (%a, %v))"),
            "arg0 : Float[3, 5] = input\n"
            "buf0 : Long[3, 1] = argmax [3, 1] over [5] load(arg0, v0 * 5 + v2)\n"
            "buf1 : Float[3] = welford_m2 [3] over [5] load(arg0, v0 * 5 + v1)\n"
            "buf2 : Float[3] = pointwise [3] load(buf1, v0) / 4.0\n"
            "inputs: arg0\n"
            "outputs: buf0, buf2\n");
}

TEST(LowerTest, NonTensorOutputRunsTheWholeGraphInTheInterpreter) {
  EXPECT_EQ(Dump(R"(graph(%x : Float(2, 3)):
  %n : int = aten::size(%x, %x)
  return (%n))"),
            "inputs: \noutputs: \nwhole graph interpreted\nislands: 1 (1 nodes)\n");
}

TEST(LowerTest, TypePromotionAndWhere) {
  EXPECT_EQ(Dump(R"(graph(%x : Int(2, 3), %y : Float(3)):
  %one : int = prim::Constant[value=1]()
  %a : Tensor = aten::add(%x, %y, %one)
  %c : Tensor = aten::gt(%x, %one)
  %w : Tensor = aten::where(%c, %a, %y)
  return (%w))"),
            "arg0 : Int[2, 3] = input\n"
            "arg1 : Float[3] = input\n"
            "buf0 : Float[2, 3] = pointwise [2, 3] cast(load(arg0, v0 * 3 + v1), Float) + load(arg1, v1)\n"
            "buf1 : Bool[2, 3] = pointwise [2, 3] load(arg0, v0 * 3 + v1) > 1\n"
            "buf2 : Float[2, 3] = pointwise [2, 3] where(load(buf1, v0 * 3 + v1), load(buf0, v0 * 3 + v1), load(arg1, v1))\n"
            "inputs: arg0, arg1\n"
            "outputs: buf2\n");
}

TEST(LowerTest, ExternFallbackKeepsConstantArgs) {
  std::string out = Dump(R"(graph(%x : Float(1, 2, 8, 8), %w : Float(4, 2, 3, 3)):
  %none : NoneType = prim::Constant()
  %s : int[] = prim::Constant[value=[1, 1]]()
  %p : int[] = prim::Constant[value=[0, 0]]()
  %g : int = prim::Constant[value=1]()
  %y : Tensor = aten::conv2d(%x, %w, %none, %s, %p, %s, %g)
  return (%y))");
  EXPECT_TRUE(absl::StrContains(out, "buf0 : Float[1, 4, 6, 6] = extern aten::conv2d(arg0, arg1, None, [1, 1], [0, 0], [1, 1], 1)")) << out;
}

TEST(LowerTest, ConvBiasBecomesAPointwiseEpilogueWhenAsked) {
  constexpr char kText[] = R"(graph(%x : Float(1, 2, 8, 8), %w : Float(4, 2, 3, 3), %b : Float(4)):
  %s : int[] = prim::Constant[value=[1, 1]]()
  %p : int[] = prim::Constant[value=[0, 0]]()
  %g : int = prim::Constant[value=1]()
  %y : Tensor = aten::conv2d(%x, %w, %b, %s, %p, %s, %g)
  %r : Tensor = aten::relu(%y)
  return (%r))";
  // By default the bias stays an argument of the extern.
  EXPECT_TRUE(absl::StrContains(Dump(kText), "extern aten::conv2d(arg0, arg1, arg2,")) << Dump(kText);
  absl::StatusOr<std::unique_ptr<ir::Graph>> graph = ParsePropagated(kText);
  ASSERT_TRUE(graph.ok()) << graph.status();
  LowerOptions options;
  options.conv_bias_epilogue = true;
  absl::StatusOr<LoopGraph> g = LowerGraph(**graph, options);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->ToString(),
            "arg0 : Float[1, 2, 8, 8] = input\n"
            "arg1 : Float[4, 2, 3, 3] = input\n"
            "arg2 : Float[4] = input\n"
            "buf0 : Float[1, 4, 6, 6] = extern aten::conv2d(arg0, arg1, None, [1, 1], [0, 0], [1, 1], 1)\n"
            "buf1 : Float[1, 4, 6, 6] = pointwise [1, 4, 6, 6] load(buf0, v1 * 36 + v2 * 6 + v3) + load(arg2, v1)\n"
            "buf2 : Float[1, 4, 6, 6] = pointwise [1, 4, 6, 6] relu(load(buf1, v1 * 36 + v2 * 6 + v3))\n"
            "inputs: arg0, arg1, arg2\noutputs: buf2\n");
}

}  // namespace
}  // namespace kiln::lowering
