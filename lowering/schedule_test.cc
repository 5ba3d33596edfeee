#include "lowering/schedule.h"

#include <string>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "lowering/lower_test_util.h"

namespace kiln::lowering {
namespace {

using testing::LowerText;
using testing::ScheduleToString;

// Lowers and schedules; the scheduled graph dump followed by the steps
// (or the error).
std::string LowerAndSchedule(const std::string& text) {
  absl::StatusOr<LoopGraph> g = LowerText(text);
  if (!g.ok()) return "lower error: " + std::string(g.status().message());
  absl::StatusOr<Schedule> s = ScheduleGraph(*g);
  if (!s.ok()) return "schedule error: " + std::string(s.status().message());
  return g->ToString() + ScheduleToString(*s);
}

TEST(ScheduleTest, PointwiseChainInlinesIntoOneKernel) {
  EXPECT_EQ(LowerAndSchedule(R"(graph(%x : Float(4, 8)):
  %one : int = prim::Constant[value=1]()
  %h : float = prim::Constant[value=0.5]()
  %a : Tensor = aten::add(%x, %h, %one)
  %b : Tensor = aten::mul(%a, %x)
  %c : Tensor = aten::tanh(%b)
  %d : Tensor = aten::sigmoid(%c)
  return (%d))"),
      "arg0 : Float[4, 8] = input\n"
      "buf3 : Float[4, 8] = pointwise [4, 8] sigmoid(tanh((load(arg0, v0 * 8 + v1) + 0.5) * load(arg0, v0 * 8 + v1)))\n"
      "inputs: arg0\n"
      "outputs: buf3\n"
      "kernel cpp_fused_add_mul_sigmoid_tanh_0 [buf3] reads [arg0] outer [4, 8]\n");
}

// softmax arrives decomposed (amax, sub, exp, sum, div); exp(x - max) is
// recomputed in the sum and the division rather than stored.
TEST(ScheduleTest, SoftmaxIsOneKernelOverRows) {
  EXPECT_EQ(LowerAndSchedule(R"(graph(%x : Float(4, 8)):
  %dim : int = prim::Constant[value=-1]()
  %none : NoneType = prim::Constant()
  %y : Tensor = aten::softmax(%x, %dim, %none)
  return (%y))"),
      "arg0 : Float[4, 8] = input\n"
      "buf0 : Float[4, 1] = max [4, 1] over [8] load(arg0, v0 * 8 + v2)\n"
      "buf3 : Float[4, 1] = sum [4, 1] over [8] exp(load(arg0, v0 * 8 + v2) - load(buf0, v0))\n"
      "buf4 : Float[4, 8] = pointwise [4, 8] exp(load(arg0, v0 * 8 + v1) - load(buf0, v0)) / load(buf3, v0)\n"
      "inputs: arg0\n"
      "outputs: buf4\n"
      "kernel cpp_fused_amax_div_exp_sub_sum_0 [buf0, buf3, buf4] reads [arg0] outer [4]\n");
}

// layer_norm arrives decomposed: the mean, the mean of squared deviations
// and the normalizing epilogue share one kernel per row.
TEST(ScheduleTest, LayerNormStatisticsAndEpilogueShareAKernel) {
  EXPECT_EQ(LowerAndSchedule(R"(graph(%x : Float(4, 8), %w : Float(8), %b : Float(8)):
  %shape : int[] = prim::Constant[value=[8]]()
  %eps : float = prim::Constant[value=1.0000000000000001e-05]()
  %t : bool = prim::Constant[value=1]()
  %y : Tensor = aten::layer_norm(%x, %shape, %w, %b, %eps, %t)
  return (%y))"),
      "arg0 : Float[4, 8] = input\n"
      "arg1 : Float[8] = input\n"
      "arg2 : Float[8] = input\n"
      "buf0 : Float[4, 1] = sum [4, 1] over [8] load(arg0, v0 * 8 + v2)\n"
      "buf4 : Float[4, 1] = sum [4, 1] over [8] (load(arg0, v0 * 8 + v2) - load(buf0, v0) / 8.0) * (load(arg0, v0 * 8 + v2) - load(buf0, v0) / 8.0)\n"
      "buf10 : Float[4, 8] = pointwise [4, 8] (load(arg0, v0 * 8 + v1) - load(buf0, v0) / 8.0) * rsqrt(load(buf4, v0) / 8.0 + 1e-05) * load(arg1, v1) + load(arg2, v1)\n"
      "inputs: arg0, arg1, arg2\n"
      "outputs: buf10\n"
      "kernel cpp_fused_add_mean_mul_rsqrt_sub_0 [buf0, buf4, buf10] reads [arg0, arg1, arg2] outer [4]\n");
}

TEST(ScheduleTest, ExternSplitsKernelsAndTransposeReadIsAffine) {
  EXPECT_EQ(LowerAndSchedule(R"(graph(%x : Float(8, 8), %w : Float(8, 8)):
  %r : Tensor = aten::relu(%x)
  %m : Tensor = aten::mm(%r, %w)
  %t : Tensor = aten::t(%m)
  %e : Tensor = aten::exp(%t)
  %one : int = prim::Constant[value=1]()
  %s : Tensor = aten::add(%e, %x, %one)
  return (%s))"),
      "arg0 : Float[8, 8] = input\n"
      "arg1 : Float[8, 8] = input\n"
      "buf0 : Float[8, 8] = pointwise [8, 8] relu(load(arg0, v0 * 8 + v1))\n"
      "buf1 : Float[8, 8] = extern aten::mm(buf0, arg1)\n"
      "buf3 : Float[8, 8] = pointwise [8, 8] exp(load(buf1, v0 + v1 * 8)) + load(arg0, v0 * 8 + v1)\n"
      "inputs: arg0, arg1\n"
      "outputs: buf3\n"
      "kernel cpp_fused_relu_0 [buf0] reads [arg0] outer [8, 8]\n"
      "extern buf1\n"
      "kernel cpp_fused_add_exp_1 [buf3] reads [arg0, buf1] outer [8, 8]\n");
}

TEST(ScheduleTest, MeanEpilogueJoinsReduction) {
  EXPECT_EQ(LowerAndSchedule(R"(graph(%x : Float(4, 8)):
  %dims : int[] = prim::Constant[value=[1]]()
  %f : bool = prim::Constant[value=0]()
  %none : NoneType = prim::Constant()
  %sq : Tensor = aten::mul(%x, %x)
  %s : Tensor = aten::mean(%sq, %dims, %f, %none)
  %r : Tensor = aten::sqrt(%s)
  return (%r))"),
      "arg0 : Float[4, 8] = input\n"
      "buf1 : Float[4] = sum [4] over [8] load(arg0, v0 * 8 + v1) * load(arg0, v0 * 8 + v1)\n"
      "buf3 : Float[4] = pointwise [4] sqrt(load(buf1, v0) / 8.0)\n"
      "inputs: arg0\n"
      "outputs: buf3\n"
      "kernel cpp_fused_mean_mul_sqrt_0 [buf1, buf3] reads [arg0] outer [4]\n");
}

TEST(ScheduleTest, ControlFlowRunsInAnInterpreterIsland) {
  EXPECT_EQ(LowerAndSchedule(R"(graph(%x : Float(2, 3)):
  %c : Tensor = prim::If(%x)
    block0():
      -> (%x)
    block1():
      -> (%x)
  return (%c))"),
      "arg0 : Float[2, 3] = input\nbuf0 : Float[2, 3] = extern kiln::interpret(arg0)\n"
      "inputs: arg0\noutputs: buf0\nislands: 1 (1 nodes)\nextern buf0\n");
}

TEST(ScheduleTest, UnknownShapesRunTheWholeGraphInTheInterpreter) {
  EXPECT_EQ(LowerAndSchedule(R"(graph(%x : Tensor):
  %r : Tensor = aten::relu(%x)
  return (%r))"),
      "inputs: \noutputs: \nwhole graph interpreted\nislands: 1 (1 nodes)\n");
}

TEST(ScheduleTest, CatInPlaceReluAndExternFallback) {
  EXPECT_EQ(LowerAndSchedule(R"(graph(%x : Float(2, 3), %y : Float(2, 3)):
  %l : Tensor[] = prim::ListConstruct(%x, %y)
  %d : int = prim::Constant[value=0]()
  %c : Tensor = aten::cat(%l, %d)
  %r : Tensor = aten::relu_(%c)
  %s : Tensor = aten::sin(%c)
  %m : Tensor = aten::cumsum(%s, %d)
  return (%m, %r))"),
      "arg0 : Float[2, 3] = input\n"
      "arg1 : Float[2, 3] = input\n"
      "buf1 : Float[4, 3] = pointwise [4, 3] relu(where(v0 < 2, load(arg0, v1 + min(v0, 1) * 3), load(arg1, v1 + max(v0 - 2, 0) * 3)))\n"
      "buf2 : Float[4, 3] = pointwise [4, 3] sin(load(buf1, v0 * 3 + v1))\n"
      "buf3 : Float[4, 3] = extern aten::cumsum(buf2, 0, None)\n"
      "inputs: arg0, arg1\n"
      "outputs: buf3, buf1\n"
      "kernel cpp_fused_cat_relu_sin_0 [buf1, buf2] reads [arg0, arg1] outer [4, 3]\n"
      "extern buf3\n");
}

TEST(ScheduleTest, KernelNamesAreSanitizedAndCapped) {
  LoopGraph g;
  Buffer in;
  in.name = "arg0";
  in.kind = BufferKind::kInput;
  in.layout = Layout::Contiguous(DType::kFloat32, {4});
  g.buffers.push_back(in);
  g.inputs = {"arg0"};
  Buffer b;
  b.name = "buf0";
  b.layout = in.layout;
  b.pointwise = Pointwise{{4}, Unary(ExprOp::kNeg, Load("arg0", DType::kFloat32, Var(0)))};
  b.origins = {"j", "i", "h", "g", "f", "e", "d", "c", "b", "a\"; rm -rf /"};
  g.buffers.push_back(b);
  g.outputs = {"buf0"};
  absl::StatusOr<Schedule> s = ScheduleGraph(g);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->steps.size(), 1u);
  EXPECT_EQ(s->steps[0].kernel.name, "cpp_fused_a___rm__rf___b_c_d_e_f_g_h_0");
}

TEST(ScheduleTest, UnknownOutputIsAnError) {
  LoopGraph g;
  g.outputs = {"nope"};
  EXPECT_FALSE(ScheduleGraph(g).ok());
}

// gelu then softmax, both decomposed: the transcendental erf is computed
// once into a buffer (it would otherwise be recomputed by each of the three
// reads of the softmax), the cheap rest of gelu inlines into the softmax
// kernel.
TEST(ScheduleTest, ExpensivePointwiseProducerIsStoredOnceBeforeSoftmax) {
  const std::string schedule = LowerAndSchedule(R"(graph(%x : Float(4, 32, 128)):
  %dim : int = prim::Constant[value=-1]()
  %none : NoneType = prim::Constant()
  %mode : str = prim::Constant[value="none"]()
  %g : Tensor = aten::gelu(%x, %mode)
  %y : Tensor = aten::softmax(%g, %dim, %none)
  return (%y))");
  EXPECT_TRUE(absl::StrContains(
      schedule, "kernel cpp_fused_erf_mul_0 [buf1] reads [arg0] outer [4, 32, 128]\n"))
      << schedule;
  EXPECT_TRUE(absl::StrContains(
      schedule,
      "kernel cpp_fused_add_amax_div_exp_mul_sub_sum_1 [buf5, buf8, buf9] reads [arg0, buf1] outer [4, 32]\n"))
      << schedule;
}

}  // namespace
}  // namespace kiln::lowering
