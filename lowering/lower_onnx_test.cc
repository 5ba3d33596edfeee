// Lowerings of the ONNX models' ops (lower_gather.cc, lower_onnx.cc and the
// kiln:: views of lower_views.cc): IR text in, LoopGraph text out; none of
// them falls back to an extern call or an island. The compiled results are
// compared with the interpreter by testing/compiled_differential_test
// (testing/testdata/compiled_regressions/onnx_*.txt).
#include <string>

#include "gtest/gtest.h"
#include "lowering/lower.h"
#include "lowering/lower_test_util.h"

namespace kiln::lowering {
namespace {

std::string Dump(const std::string& text) { return testing::LowerTextDump(text); }

TEST(LowerOnnxTest, EmbeddingGatherIsAnIndirectLoad) {
  EXPECT_EQ(Dump(R"(graph(%w : Float(10, 4), %ids : Long(2, 3)):
  %l : Tensor?[] = prim::ListConstruct(%ids)
  %y : Tensor = aten::index(%w, %l)
  return (%y))"),
            "arg0 : Float[10, 4] = input\n"
            "arg1 : Long[2, 3] = input\n"
            "buf0 : Float[2, 3, 4] = pointwise [2, 3, 4] load(arg0, v2 + max(min(where(load(arg1, "
            "v0 * 3 + v1) < 0, load(arg1, v0 * 3 + v1) + 10, load(arg1, v0 * 3 + v1)), 9), 0) * 4)\n"
            "inputs: arg0, arg1\noutputs: buf0\n");
}

TEST(LowerOnnxTest, GatherAlongAMiddleDim) {
  EXPECT_EQ(Dump(R"(graph(%x : Float(2, 5, 3), %j : Long(4)):
  %none : NoneType = prim::Constant()
  %l : Tensor?[] = prim::ListConstruct(%none, %j)
  %y : Tensor = aten::index(%x, %l)
  return (%y))"),
            "arg0 : Float[2, 5, 3] = input\n"
            "arg1 : Long[4] = input\n"
            "buf0 : Float[2, 4, 3] = pointwise [2, 4, 3] load(arg0, v0 * 15 + v2 + max(min(where("
            "load(arg1, v1) < 0, load(arg1, v1) + 5, load(arg1, v1)), 4), 0) * 3)\n"
            "inputs: arg0, arg1\noutputs: buf0\n");
}

TEST(LowerOnnxTest, ReduceMeanWithAxesIsAReduction) {
  EXPECT_EQ(Dump(R"(graph(%x : Float(4, 6)):
  %kind : str = prim::Constant[value="mean"]()
  %axes : int[] = prim::Constant[value=[-1]]()
  %t : bool = prim::Constant[value=1]()
  %f : bool = prim::Constant[value=0]()
  %y : Tensor = kiln::reduce(%x, %kind, %axes, %t, %f)
  return (%y))"),
            "arg0 : Float[4, 6] = input\n"
            "buf0 : Float[4, 1] = sum [4, 1] over [6] load(arg0, v0 * 6 + v2)\n"
            "buf1 : Float[4, 1] = pointwise [4, 1] load(buf0, v0) / 6.0\n"
            "inputs: arg0\noutputs: buf1\n");
}

TEST(LowerOnnxTest, SplitIsViews) {
  EXPECT_EQ(Dump(R"(graph(%x : Float(2, 6)):
  %sizes : int[] = prim::Constant[value=[2, 4]]()
  %one : int = prim::Constant[value=1]()
  %parts : Tensor[] = aten::split_with_sizes(%x, %sizes, %one)
  %a : Tensor, %b : Tensor = prim::ListUnpack(%parts)
  return (%a, %b))"),
            "arg0 : Float[2, 6] = input\n"
            "view0 : Float[2, 2] strides [6, 1] offset 0 = view of arg0\n"
            "view1 : Float[2, 4] strides [6, 1] offset 2 = view of arg0\n"
            "inputs: arg0\noutputs: view0, view1\n");
}

// native_layer_norm arrives decomposed (passes/decompositions.h): the mean
// and the reciprocal standard deviation are outputs of their own.
TEST(LowerOnnxTest, LayerNormStatisticsAreComputed) {
  EXPECT_EQ(Dump(R"(graph(%x : Float(3, 8), %w : Float(8)):
  %norm : int[] = prim::Constant[value=[8]]()
  %none : NoneType = prim::Constant()
  %eps : float = prim::Constant[value=1e-05]()
  %y : Tensor, %mean : Tensor, %rstd : Tensor = aten::native_layer_norm(%x, %norm, %w, %none, %eps)
  return (%y, %rstd))"),
            "arg0 : Float[3, 8] = input\n"
            "arg1 : Float[8] = input\n"
            "buf0 : Float[3, 1] = sum [3, 1] over [8] load(arg0, v0 * 8 + v2)\n"
            "buf1 : Float[3, 1] = pointwise [3, 1] load(buf0, v0) / 8.0\n"
            "buf2 : Float[3, 8] = pointwise [3, 8] load(arg0, v0 * 8 + v1) - load(buf1, v0)\n"
            "buf3 : Float[3, 8] = pointwise [3, 8] load(buf2, v0 * 8 + v1) * load(buf2, v0 * 8 + v1)\n"
            "buf4 : Float[3, 1] = sum [3, 1] over [8] load(buf3, v0 * 8 + v2)\n"
            "buf5 : Float[3, 1] = pointwise [3, 1] load(buf4, v0) / 8.0\n"
            "buf6 : Float[3, 1] = pointwise [3, 1] load(buf5, v0) + 1e-05\n"
            "buf7 : Float[3, 1] = pointwise [3, 1] rsqrt(load(buf6, v0))\n"
            "buf8 : Float[3, 8] = pointwise [3, 8] load(buf2, v0 * 8 + v1) * load(buf7, v0)\n"
            "buf9 : Float[3, 8] = pointwise [3, 8] load(buf8, v0 * 8 + v1) * load(arg1, v1)\n"
            "inputs: arg0, arg1\noutputs: buf9, buf7\n");
}

TEST(LowerOnnxTest, NegativeStepSliceCopiesAndTriluMasks) {
  EXPECT_EQ(Dump(R"(graph(%x : Float(4, 4)):
  %st : int[] = prim::Constant[value=[-1]]()
  %en : int[] = prim::Constant[value=[-100]]()
  %ax : int[] = prim::Constant[value=[0]]()
  %sp : int[] = prim::Constant[value=[-2]]()
  %s : Tensor = kiln::onnx_slice(%x, %st, %en, %ax, %sp)
  %one : int = prim::Constant[value=1]()
  %u : Tensor = aten::triu(%x, %one)
  return (%s, %u))"),
            "arg0 : Float[4, 4] = input\n"
            "buf0 : Float[2, 4] = pointwise [2, 4] load(arg0, v0 * -8 + v1 + 12)\n"
            "buf1 : Float[4, 4] = pointwise [4, 4] where(v1 - v0 >= 1, load(arg0, v0 * 4 + v1), 0.0)\n"
            "inputs: arg0\noutputs: buf0, buf1\n");
}

TEST(LowerOnnxTest, ConstantPadSelects) {
  EXPECT_EQ(Dump(R"(graph(%x : Float(2, 3)):
  %pads : int[] = prim::Constant[value=[0, 1, 0, 2]]()
  %mode : str = prim::Constant[value="constant"]()
  %none : NoneType = prim::Constant()
  %y : Tensor = kiln::onnx_pad(%x, %pads, %mode, %none)
  return (%y))"),
            "arg0 : Float[2, 3] = input\n"
            "buf0 : Float[2, 6] = pointwise [2, 6] where(v1 - 1 >= 0 && v1 - 1 < 3, load(arg0, v0 * 3 + "
            "max(min(v1 - 1, 2), 0)), 0.0)\n"
            "inputs: arg0\noutputs: buf0\n");
}

TEST(LowerOnnxTest, BatchedMatmulIsOneLibraryGemm) {
  EXPECT_EQ(Dump(R"(graph(%x : Float(2, 5, 8), %w : Float(8, 3), %q : Float(2, 4, 5, 8), %k : Float(2, 1, 8, 6)):
  %y : Tensor = aten::matmul(%x, %w)
  %s : Tensor = aten::matmul(%q, %k)
  return (%y, %s))"),
            "arg0 : Float[2, 5, 8] = input\n"
            "arg1 : Float[8, 3] = input\n"
            "arg2 : Float[2, 4, 5, 8] = input\n"
            "arg3 : Float[2, 1, 8, 6] = input\n"
            "view0 : Float[10, 8] = view of arg0\n"
            "buf0 : Float[10, 3] = extern aten::mm(view0, arg1)\n"
            "view1 : Float[2, 5, 3] = view of buf0\n"
            "view2 : Float[2, 4, 8, 6] strides [48, 0, 6, 1] offset 0 = view of arg3\n"
            "view3 : Float[8, 5, 8] = view of arg2\n"
            // The broadcast batch dim of %k is materialized once for bmm.
            "buf1 : Float[8, 8, 6] = pointwise [8, 8, 6] load(arg3, v1 * 6 + v2 + v0 // 4 * 48)\n"
            "buf2 : Float[8, 5, 6] = extern aten::bmm(view3, buf1)\n"
            "view4 : Float[2, 4, 5, 6] = view of buf2\n"
            "inputs: arg0, arg1, arg2, arg3\noutputs: view1, view4\n");
}

}  // namespace
}  // namespace kiln::lowering
