#include "driver/precision.h"

#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "driver/initialize.h"
#include "gtest/gtest.h"
#include "ir/constants.h"
#include "ir/ir.h"
#include "ir/text_parser.h"
#include "ir/text_printer.h"

namespace kiln::driver {
namespace {

std::unique_ptr<ir::Graph> Parse(const std::string& text) {
  EXPECT_TRUE(Initialize().ok());
  absl::StatusOr<std::unique_ptr<ir::Graph>> g = ir::ParseGraph(text);
  EXPECT_TRUE(g.ok()) << g.status();
  return g.ok() ? *std::move(g) : nullptr;
}

// linear (lower precision) -> relu (follows its operand) -> softmax
// (float32) -> mm (lower precision) with a float32 input.
constexpr char kBlock[] = R"(graph(%x : Float(4, 8), %w : Float(6, 8), %b : Float(6), %v : Float(6, 3)):
  %d : int = prim::Constant[value=-1]()
  %n : NoneType = prim::Constant()
  %y : Float(4, 6) = aten::linear(%x, %w, %b)
  %r : Float(4, 6) = aten::relu(%y)
  %s : Float(4, 6) = aten::softmax(%r, %d, %n)
  %m : Float(4, 3) = aten::mm(%s, %v)
  return (%m, %r)
)";

TEST(AutocastGraph, CastsAroundLowerPrecisionAndFloat32Ops) {
  std::unique_ptr<ir::Graph> g = Parse(kBlock);
  ASSERT_NE(g, nullptr);
  absl::StatusOr<AutocastStats> stats = AutocastGraph(*g, DType::kBFloat16);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->lower_ops, 2);
  EXPECT_EQ(stats->fp32_ops, 1);
  // x, w, b, v to bf16 for the matmuls; r back to float for softmax; s to bf16.
  EXPECT_EQ(stats->casts_inserted, 6);
  EXPECT_EQ(stats->constants_converted, 0);
  const std::string text = ir::PrintGraph(*g);
  EXPECT_EQ(text, R"(graph(%x : Float(4, 8),
      %w : Float(6, 8),
      %b : Float(6),
      %v : Float(6, 3)):
  %d : int = prim::Constant[value=-1]()
  %n : NoneType = prim::Constant()
  %10 : int = prim::Constant[value=15]()
  %11 : bool = prim::Constant[value=0]()
  %12 : NoneType = prim::Constant()
  %13 : BFloat16(4, 8) = aten::to(%x, %10, %11, %11, %12)
  %14 : int = prim::Constant[value=15]()
  %15 : bool = prim::Constant[value=0]()
  %16 : NoneType = prim::Constant()
  %17 : BFloat16(6, 8) = aten::to(%w, %14, %15, %15, %16)
  %18 : int = prim::Constant[value=15]()
  %19 : bool = prim::Constant[value=0]()
  %20 : NoneType = prim::Constant()
  %21 : BFloat16(6) = aten::to(%b, %18, %19, %19, %20)
  %y : BFloat16(4, 6) = aten::linear(%13, %17, %21)
  %r : BFloat16(4, 6) = aten::relu(%y)
  %30 : int = prim::Constant[value=6]()
  %31 : bool = prim::Constant[value=0]()
  %32 : NoneType = prim::Constant()
  %33 : Float(4, 6) = aten::to(%r, %30, %31, %31, %32)
  %s : Float(4, 6) = aten::softmax(%33, %d, %n)
  %22 : int = prim::Constant[value=15]()
  %23 : bool = prim::Constant[value=0]()
  %24 : NoneType = prim::Constant()
  %25 : BFloat16(4, 6) = aten::to(%s, %22, %23, %23, %24)
  %26 : int = prim::Constant[value=15]()
  %27 : bool = prim::Constant[value=0]()
  %28 : NoneType = prim::Constant()
  %29 : BFloat16(6, 3) = aten::to(%v, %26, %27, %27, %28)
  %m : BFloat16(4, 3) = aten::mm(%25, %29)
  return (%m, %r)
)");
}

TEST(AutocastGraph, WeightsAreConvertedOnceAtCompileTime) {
  std::unique_ptr<ir::Graph> g = Parse(R"(graph(%x : Float(2, 3)):
  %y : Float(2, 3) = aten::relu(%x)
  return (%y)
)");
  ASSERT_NE(g, nullptr);
  // y = mm(x, W) + mm(x, W) with one float32 weight constant used twice.
  Tensor w = Tensor::Empty(DType::kFloat32, {3, 2});
  for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = 0.5f * static_cast<float>(i) + 0.1f;
  ir::Node* relu = *g->nodes().begin();
  ir::WithInsertPoint guard(relu);
  absl::StatusOr<ir::Value*> c = ir::InsertConstant(*g, ir::IValue::FromTensor(w));
  ASSERT_TRUE(c.ok());
  ir::Node* mm1 = g->create(ir::Symbol::FromQualString("aten::mm"), {relu->output(), *c});
  ir::Node* mm2 = g->create(ir::Symbol::FromQualString("aten::mm"), {relu->output(), *c});
  mm1->insertAfter(relu);
  mm2->insertAfter(mm1);
  g->return_node()->replaceInput(0, mm1->output());
  g->registerOutput(mm2->output());
  absl::StatusOr<AutocastStats> stats = AutocastGraph(*g, DType::kFloat16);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->constants_converted, 1) << ir::PrintGraph(*g);
  EXPECT_EQ(stats->casts_inserted, 1) << "relu's output, shared by both mm";
  ASSERT_EQ(mm1->input(1), mm2->input(1));
  std::optional<ir::IValue> converted = ir::ConstantValue(mm1->input(1));
  ASSERT_TRUE(converted && converted->isTensor());
  EXPECT_EQ(converted->toTensor().dtype(), DType::kFloat16);
  EXPECT_EQ(converted->toTensor().GetDouble(5), 2.599609375);  // 0.5 * 5 + 0.1 rounded to half
}

// A matmul reading a reshape (or transpose) of a float32 value: the cast
// goes before the view, which is applied again to the narrow value, so the
// cast can join the producer's kernel (a layer norm feeding a projection).
TEST(AutocastGraph, CastsMoveAboveShapeOnlyViews) {
  std::unique_ptr<ir::Graph> g = Parse(R"(graph(%x : Float(2, 4, 8), %w : Float(8, 6)):
  %s : int[] = prim::Constant[value=[8, 8]]()
  %e : Float(2, 4, 8) = aten::exp(%x)
  %r : Float(8, 8) = aten::reshape(%e, %s)
  %m : Float(8, 6) = aten::mm(%r, %w)
  return (%m, %r)
)");
  ASSERT_NE(g, nullptr);
  absl::StatusOr<AutocastStats> stats = AutocastGraph(*g, DType::kBFloat16);
  ASSERT_TRUE(stats.ok()) << stats.status();
  const std::string text = ir::PrintGraph(*g);
  // The cast reads exp's output, the mm a reshape of the cast; the float32
  // reshape stays for the graph's output.
  EXPECT_TRUE(absl::StrContains(text, "BFloat16(2, 4, 8) = aten::to(%e,")) << text;
  EXPECT_TRUE(absl::StrContains(text, "BFloat16(8, 8) = aten::reshape(")) << text;
  EXPECT_TRUE(absl::StrContains(text, "Float(8, 8) = aten::reshape(%e, %s)")) << text;
  EXPECT_EQ(stats->casts_inserted, 2);  // exp's output and w
}

TEST(Precision, ParsesNames) {
  EXPECT_EQ(*ParsePrecision("bf16"), Precision::kBf16);
  EXPECT_EQ(*ParsePrecision("BFloat16"), Precision::kBf16);
  EXPECT_EQ(*ParsePrecision("fp16"), Precision::kFp16);
  EXPECT_EQ(*ParsePrecision("tf32"), Precision::kTf32);
  EXPECT_EQ(*ParsePrecision("fp32"), Precision::kFp32);
  EXPECT_FALSE(ParsePrecision("int8").ok());
  EXPECT_FALSE(AutocastGraph(*Parse("graph(%x : Float(2)):\n  return (%x)\n"), DType::kFloat32).ok());
}

}  // namespace
}  // namespace kiln::driver
