#include "passes/fuse_post_ops.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "ir/constants.h"
#include "ir/ir.h"
#include "ir/text_parser.h"
#include "ir/text_printer.h"
#include "passes/canonicalize.h"
#include "passes/fingerprint.h"
#include "passes/pass.h"

namespace kiln::passes {
namespace {

std::unique_ptr<ir::Graph> Parse(const std::string& text) {
  auto g = ir::ParseGraph(text);
  EXPECT_TRUE(g.ok()) << g.status();
  return g.ok() ? *std::move(g) : nullptr;
}

absl::StatusOr<bool> RunPass(ir::Graph& g, PassStatistics* stats_out = nullptr,
                             const FusePostOpsOptions& options = FusePostOpsOptions()) {
  const uint64_t before = GraphFingerprint(g);
  PassStatistics stats;
  absl::StatusOr<bool> changed = FusePostOps(g, stats, options);
  if (changed.ok()) {
    EXPECT_EQ(*changed, before != GraphFingerprint(g));
  }
  if (stats_out != nullptr) *stats_out = stats;
  return changed;
}

// Runs the pass; the printed graph, or "<unchanged>".
std::string Fused(const std::string& text) {
  auto g = Parse(text);
  if (!g) return "<parse error>";
  absl::StatusOr<bool> changed = RunPass(*g);
  if (!changed.ok()) return std::string(changed.status().message());
  if (!*changed) return "<unchanged>";
  PassStatistics stats;
  EXPECT_TRUE(Canonicalize(*g, stats).ok());
  // Idempotent: a second run finds nothing more.
  absl::StatusOr<bool> again = RunPass(*g);
  EXPECT_TRUE(again.ok() && !*again) << "second run changed the graph";
  return ir::PrintGraph(*g);
}

constexpr char kConvHeader[] = R"IR(graph(%x : Float(1, 4, 8, 8), %w : Float(4, 4, 3, 3), %b : Float(4), %skip : Float(1, 4, 8, 8)):
  %s : int[] = prim::Constant[value=[1, 1]]()
  %z2 : int[] = prim::Constant[value=[0, 0]]()
  %f : bool = prim::Constant[value=0]()
  %g : int = prim::Constant[value=1]()
  %y : Float(1, 4, 8, 8) = aten::convolution(%x, %w, %b, %s, %s, %s, %f, %z2, %g)
)IR";

TEST(FusePostOpsTest, ResidualAddThenRelu) {
  EXPECT_EQ(Fused(std::string(kConvHeader) + R"IR(  %one : int = prim::Constant[value=1]()
  %r : Float(1, 4, 8, 8) = aten::add(%y, %skip, %one)
  %out : Float(1, 4, 8, 8) = aten::relu(%r)
  return (%out))IR"),
            R"IR(graph(%x : Float(1, 4, 8, 8),
      %w : Float(4, 4, 3, 3),
      %b : Float(4),
      %skip : Float(1, 4, 8, 8)):
  %0 : int[] = prim::Constant[value=[1, 1]]()
  %1 : int[] = prim::Constant[value=[1, 1, 1, 1]]()
  %2 : int[] = prim::Constant[value=[1, 1]]()
  %3 : int = prim::Constant[value=1]()
  %4 : str[] = prim::Constant[value=["add", "relu"]]()
  %5 : float[] = prim::Constant[value=[]]()
  %6 : Tensor[] = prim::ListConstruct(%skip)
  %out : Float(1, 4, 8, 8) = kiln::conv_post_ops(%x, %w, %b, %0, %1, %2, %3, %4, %5, %6)
  return (%out)
)IR");
}

std::string FusedOps(const std::string& text, const FusePostOpsOptions& options = FusePostOpsOptions()) {
  auto g = Parse(text);
  if (!g) return "<parse error>";
  absl::StatusOr<bool> changed = RunPass(*g, nullptr, options);
  if (!changed.ok()) return std::string(changed.status().message());
  std::vector<std::string> out;
  for (const ir::Node* n : g->nodes()) {
    const std::string k(n->kind().qualString());
    if (k == "prim::Constant" || k == "prim::ListConstruct") continue;
    std::string item = k;
    if (k == "kiln::conv_post_ops" || k == "kiln::linear_post_ops") {
      const size_t first = k == "kiln::conv_post_ops" ? 7 : 3;
      std::optional<ir::IValue> names = ir::ConstantValue(n->input(first));
      std::optional<ir::IValue> scalars = ir::ConstantValue(n->input(first + 1));
      std::vector<std::string> parts;
      for (const ir::IValue& e : names->elements()) parts.push_back(e.toString());
      for (const ir::IValue& e : scalars->elements()) parts.push_back(absl::StrCat(e.toDouble()));
      item += "[" + absl::StrJoin(parts, ",") + "]/" +
              std::to_string(n->input(first + 2)->node()->inputs().size());
    }
    out.push_back(item);
  }
  return absl::StrJoin(out, " ");
}

TEST(FusePostOpsTest, Activations) {
  const std::string h = kConvHeader;
  EXPECT_EQ(FusedOps(h + "  %o : Float(1, 4, 8, 8) = aten::hardswish(%y)\n  return (%o)"),
            "kiln::conv_post_ops[hardswish]/0");
  EXPECT_EQ(FusedOps(h + R"IR(  %lo : float = prim::Constant[value=0.]()
  %hi : float = prim::Constant[value=6.]()
  %o : Float(1, 4, 8, 8) = aten::clamp(%y, %lo, %hi)
  return (%o))IR"),
            "kiln::conv_post_ops[clamp,0,6]/0");
  // ONNX's HardSigmoid: y * (1/6) + 0.5, clamped to [0, 1].
  EXPECT_EQ(FusedOps(h + R"IR(  %a : float = prim::Constant[value=0.5]()
  %n : NoneType = prim::Constant()
  %one : float = prim::Constant[value=1.]()
  %m : Float(1, 4, 8, 8) = aten::mul(%y, %a)
  %p : Float(1, 4, 8, 8) = aten::add(%m, %a, %one)
  %o : Float(1, 4, 8, 8) = aten::clamp(%p, %n, %one)
  return (%o))IR"),
            "kiln::conv_post_ops[linear,clamp_max,0.5,0.5,1]/0");
  EXPECT_EQ(FusedOps(h + R"IR(  %sg : Float(1, 4, 8, 8) = aten::sigmoid(%y)
  %o : Float(1, 4, 8, 8) = aten::mul(%sg, %y)
  return (%o))IR"),
            "kiln::conv_post_ops[silu]/0");
}

TEST(FusePostOpsTest, LinearWithGeluAsOnnxWritesIt) {
  EXPECT_EQ(FusedOps(R"IR(graph(%x : Float(2, 8), %w : Float(16, 8), %b : Float(16)):
  %y : Float(2, 16) = aten::linear(%x, %w, %b)
  %c : float = prim::Constant[value=1.4142135381698608]()
  %one : float = prim::Constant[value=1.]()
  %half : float = prim::Constant[value=0.5]()
  %d : Float(2, 16) = aten::div(%y, %c)
  %e : Float(2, 16) = aten::erf(%d)
  %a : Float(2, 16) = aten::add(%e, %one, %one)
  %m : Float(2, 16) = aten::mul(%y, %a)
  %o : Float(2, 16) = aten::mul(%m, %half)
  return (%o))IR"),
            "kiln::linear_post_ops[gelu]/0");
}

// GPT-2's MLP as torch.onnx.export (opset 17) writes it: Gemm -> Reshape
// to [B, S, N] -> the tanh GELU spelled out, x^3 as Pow.
constexpr char kGeluTanhOpset17[] = R"IR(graph(%x : Float(4, 8), %wt : Float(16, 8), %b : Float(16)):
  %one : int = prim::Constant[value=1]()
  %shape : int[] = prim::Constant[value=[2, 2, 16]]()
  %half : Float() = prim::Constant[value={0.5}]()
  %three : Float() = prim::Constant[value={3}]()
  %c : Float() = prim::Constant[value={0.044715}]()
  %k : Float() = prim::Constant[value={0.797885}]()
  %onef : Float() = prim::Constant[value={1}]()
  %w : Float(8, 16) = aten::t(%wt)
  %g : Float(4, 16) = aten::addmm(%b, %x, %w, %one, %one)
  %v : Float(2, 2, 16) = aten::reshape(%g, %shape)
  %h : Float(2, 2, 16) = aten::mul(%v, %half)
  %p : Float(2, 2, 16) = aten::pow(%v, %three)
  %q : Float(2, 2, 16) = aten::mul(%p, %c)
  %a : Float(2, 2, 16) = aten::add(%v, %q)
  %z : Float(2, 2, 16) = aten::mul(%a, %k)
  %t : Float(2, 2, 16) = aten::tanh(%z)
  %e : Float(2, 2, 16) = aten::add(%t, %onef)
  %o : Float(2, 2, 16) = aten::mul(%h, %e)
  return (%o))IR";

TEST(FusePostOpsTest, GeluTanhAfterAReshapedGemm) {
  // The GEMM runs the GELU as oneDNN's gelu_tanh post-op, in its own
  // [4, 16] shape; the reshape moves after the fused op.
  EXPECT_EQ(Fused(kGeluTanhOpset17), R"IR(graph(%x : Float(4, 8),
      %wt : Float(16, 8),
      %b : Float(16)):
  %w : Float(8, 16) = aten::t(%wt)
  %0 : str[] = prim::Constant[value=["gelu_tanh"]]()
  %1 : float[] = prim::Constant[value=[]]()
  %2 : Tensor[] = prim::ListConstruct()
  %3 : Float(4, 16) = kiln::linear_post_ops(%x, %wt, %b, %0, %1, %2)
  %4 : int[] = prim::Constant[value=[2, 2, 16]]()
  %o : Float(2, 2, 16) = aten::reshape(%3, %4)
  return (%o)
)IR");
}

// The text of kGeluTanhOpset17 with `from` replaced by `to`.
std::string Opset17With(const std::string& from, const std::string& to) {
  std::string text = kGeluTanhOpset17;
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return at == std::string::npos ? text : text.replace(at, from.size(), to);
}

TEST(FusePostOpsTest, GeluTanhNeedsTheExactFormulaAndNoOtherUses) {
  // Another cubic coefficient is not GELU.
  EXPECT_EQ(FusedOps(Opset17With("{0.044715}", "{0.04}")).find("linear_post_ops"), std::string::npos);
  // x^2 instead of x^3.
  EXPECT_EQ(FusedOps(Opset17With("value={3}", "value={2}")).find("linear_post_ops"), std::string::npos);
  // An intermediate value used outside the pattern.
  EXPECT_EQ(FusedOps(Opset17With("return (%o)", "return (%o, %t)")).find("linear_post_ops"), std::string::npos);
  // The GEMM's value itself used outside (through the reshape).
  EXPECT_EQ(FusedOps(Opset17With("return (%o)", "return (%o, %v)")).find("linear_post_ops"), std::string::npos);
  // Other steps move before a reshape too; a tensor operand (it broadcasts
  // against the reshaped shape) does not.
  const std::string head = R"IR(graph(%x : Float(4, 8), %wt : Float(16, 8), %b : Float(16), %r : Float(2, 2, 16)):
  %one : int = prim::Constant[value=1]()
  %shape : int[] = prim::Constant[value=[2, 2, 16]]()
  %w : Float(8, 16) = aten::t(%wt)
  %g : Float(4, 16) = aten::addmm(%b, %x, %w, %one, %one)
  %v : Float(2, 2, 16) = aten::reshape(%g, %shape)
)IR";
  EXPECT_EQ(FusedOps(head + "  %o : Float(2, 2, 16) = aten::relu(%v)\n  return (%o)"),
            "aten::t kiln::linear_post_ops[relu]/0 aten::reshape");
  EXPECT_EQ(FusedOps(head + "  %o : Float(2, 2, 16) = aten::add(%v, %r, %one)\n  return (%o)"),
            "aten::t aten::addmm aten::reshape aten::add");
}

TEST(FusePostOpsTest, GeluTanhAsTheDynamoExporterWritesIt) {
  // torch.onnx.dynamo_export: a bias-free Gemm (aten::mm by a constant
  // weight), x^3 as products, the 0.5 applied last, operands swapped.
  auto g = Parse(R"IR(graph(%x : Float(4, 8), %wi : Float(8, 16)):
  %shape : int[] = prim::Constant[value=[2, 2, 16]]()
  %half : Float() = prim::Constant[value={0.5}]()
  %c : Float() = prim::Constant[value={0.044715}]()
  %k : Float() = prim::Constant[value={0.797885}]()
  %onef : Float() = prim::Constant[value={1}]()
  %g : Float(4, 16) = aten::mm(%x, %wi)
  %v : Float(2, 2, 16) = aten::reshape(%g, %shape)
  %s : Float(2, 2, 16) = aten::mul(%v, %v)
  %cube : Float(2, 2, 16) = aten::mul(%v, %s)
  %q : Float(2, 2, 16) = aten::mul(%c, %cube)
  %a : Float(2, 2, 16) = aten::add(%q, %v)
  %z : Float(2, 2, 16) = aten::mul(%k, %a)
  %t : Float(2, 2, 16) = aten::tanh(%z)
  %e : Float(2, 2, 16) = aten::add(%onef, %t)
  %m : Float(2, 2, 16) = aten::mul(%e, %v)
  %o : Float(2, 2, 16) = aten::mul(%m, %half)
  return (%o))IR");
  ASSERT_NE(g, nullptr);
  Tensor w = Tensor::Empty(DType::kFloat32, {8, 16});
  for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = static_cast<float>(i % 7) - 3.0f;
  {
    ir::WithInsertPoint at(*g->nodes().begin());
    ir::Value* constant = *ir::InsertConstant(*g, ir::IValue::FromTensor(w));
    g->inputs()[1]->replaceAllUsesWith(constant);
  }
  PassStatistics stats;
  ASSERT_TRUE(FusePostOps(*g, stats).ok());
  std::vector<std::string> kinds;
  for (const ir::Node* n : g->nodes()) {
    const std::string k(n->kind().qualString());
    if (k != "prim::Constant" && k != "prim::ListConstruct") kinds.push_back(k);
  }
  EXPECT_EQ(absl::StrJoin(kinds, " "), "kiln::linear_post_ops aten::reshape") << ir::PrintGraph(*g);
  EXPECT_NE(ir::PrintGraph(*g).find(R"(prim::Constant[value=["gelu_tanh"]]())"), std::string::npos)
      << ir::PrintGraph(*g);
}

TEST(FusePostOpsTest, AddmmOfTransposedWeight) {
  EXPECT_EQ(FusedOps(R"IR(graph(%x : Float(1, 8), %w : Float(4, 8), %b : Float(4)):
  %t : Float(8, 4) = aten::t(%w)
  %one : int = prim::Constant[value=1]()
  %y : Float(1, 4) = aten::addmm(%b, %x, %t, %one, %one)
  %o : Float(1, 4) = aten::relu(%y)
  return (%o))IR"),
            "aten::t kiln::linear_post_ops[relu]/0");
}

// fuse_conv_post_ops (CUDA): bfloat16/float16 convolution chains fuse, a
// step that would promote to float32 stops the chain, GEMMs stay as they are.
TEST(FusePostOpsTest, ConvolutionsOnlyWithNarrowFloats) {
  FusePostOpsOptions conv_only;
  conv_only.gemms = false;
  conv_only.narrow_floats = true;
  constexpr char kBf16[] = R"IR(graph(%x : BFloat16(1, 4, 8, 8), %w : BFloat16(4, 4, 3, 3), %b : BFloat16(4), %skip : BFloat16(1, 4, 8, 8), %f32 : Float(1, 4, 8, 8)):
  %s : int[] = prim::Constant[value=[1, 1]]()
  %z2 : int[] = prim::Constant[value=[0, 0]]()
  %f : bool = prim::Constant[value=0]()
  %g : int = prim::Constant[value=1]()
  %one : int = prim::Constant[value=1]()
  %y : BFloat16(1, 4, 8, 8) = aten::convolution(%x, %w, %b, %s, %s, %s, %f, %z2, %g)
  %r : BFloat16(1, 4, 8, 8) = aten::add(%y, %skip, %one)
  %h : BFloat16(1, 4, 8, 8) = aten::hardswish(%r)
  %p : Float(1, 4, 8, 8) = aten::add(%h, %f32, %one)
  return (%p))IR";
  EXPECT_EQ(FusedOps(kBf16, conv_only), "kiln::conv_post_ops[add,hardswish]/1 aten::add");
  // The default options keep narrow chains as they are (the CPU's library is float32).
  EXPECT_EQ(FusedOps(kBf16), "aten::convolution aten::add aten::hardswish aten::add");
  constexpr char kGemm[] = R"IR(graph(%x : Float(1, 8), %w : Float(4, 8), %b : Float(4)):
  %y : Float(1, 4) = aten::linear(%x, %w, %b)
  %o : Float(1, 4) = aten::relu(%y)
  return (%o))IR";
  EXPECT_EQ(FusedOps(kGemm, conv_only), "aten::linear aten::relu");
  EXPECT_EQ(FusedOps(kGemm), "kiln::linear_post_ops[relu]/0");
}

// bias_only_convs: resnet's downsample convolution (bias, no step, read by
// the residual add that joins another convolution's epilogue) becomes a
// fused op with an empty chain; one read by anything else stays.
TEST(FusePostOpsTest, BiasOnlyConvolutionsFeedingConvolutions) {
  FusePostOpsOptions o;
  o.gemms = false;
  o.narrow_floats = true;
  o.bias_only_convs = true;
  constexpr char kDownsample[] = R"IR(graph(%x : Float(1, 4, 8, 8), %w : Float(4, 4, 1, 1), %b : Float(4), %wd : Float(4, 4, 1, 1), %bd : Float(4)):
  %s : int[] = prim::Constant[value=[1, 1]]()
  %z2 : int[] = prim::Constant[value=[0, 0]]()
  %f : bool = prim::Constant[value=0]()
  %g : int = prim::Constant[value=1]()
  %y : Float(1, 4, 8, 8) = aten::convolution(%x, %w, %b, %s, %z2, %s, %f, %z2, %g)
  %d : Float(1, 4, 8, 8) = aten::convolution(%x, %wd, %bd, %s, %z2, %s, %f, %z2, %g)
  %r : Float(1, 4, 8, 8) = aten::add(%y, %d, %g)
  %o : Float(1, 4, 8, 8) = aten::relu(%r)
  return (%o))IR";
  EXPECT_EQ(FusedOps(kDownsample, o), "kiln::conv_post_ops[]/0 kiln::conv_post_ops[add,relu]/1");
  // Without the option the downsample convolution stays.
  o.bias_only_convs = false;
  EXPECT_EQ(FusedOps(kDownsample, o), "aten::convolution kiln::conv_post_ops[add,relu]/1");
  o.bias_only_convs = true;
  // Read by a transpose (convnext's depthwise convolution): stays.
  EXPECT_EQ(FusedOps(std::string(kConvHeader) + R"IR(  %p : int[] = prim::Constant[value=[0, 2, 3, 1]]()
  %t : Float(1, 8, 8, 4) = aten::permute(%y, %p)
  return (%t))IR", o),
            "aten::convolution aten::permute");
}

TEST(FusePostOpsTest, StopsWhereTheChainBranchesOrLeaves) {
  const std::string h = kConvHeader;
  // The convolution's result is used twice: nothing fuses.
  EXPECT_EQ(FusedOps(h + R"IR(  %r : Float(1, 4, 8, 8) = aten::relu(%y)
  return (%r, %y))IR"),
            "aten::convolution aten::relu");
  // relu's result is a graph output and feeds tanh: relu fuses, tanh stays.
  EXPECT_EQ(FusedOps(h + R"IR(  %r : Float(1, 4, 8, 8) = aten::relu(%y)
  %t : Float(1, 4, 8, 8) = aten::tanh(%r)
  return (%r, %t))IR"),
            "kiln::conv_post_ops[relu]/0 aten::tanh");
  // An operand that would broadcast the result to a larger shape.
  EXPECT_EQ(FusedOps(R"IR(graph(%x : Float(1, 4, 8, 8), %w : Float(4, 4, 1, 1), %big : Float(2, 4, 8, 8)):
  %s : int[] = prim::Constant[value=[1, 1]]()
  %z : int[] = prim::Constant[value=[0, 0]]()
  %f : bool = prim::Constant[value=0]()
  %n : NoneType = prim::Constant()
  %g : int = prim::Constant[value=1]()
  %y : Float(1, 4, 8, 8) = aten::convolution(%x, %w, %n, %s, %z, %s, %f, %z, %g)
  %o : Float(2, 4, 8, 8) = aten::add(%y, %big, %g)
  return (%o))IR"),
            "aten::convolution aten::add");
  // A transposed convolution is no anchor; float64 results are left alone.
  EXPECT_EQ(FusedOps(R"IR(graph(%x : Double(1, 4, 8, 8), %w : Double(4, 4, 1, 1)):
  %s : int[] = prim::Constant[value=[1, 1]]()
  %z : int[] = prim::Constant[value=[0, 0]]()
  %f : bool = prim::Constant[value=0]()
  %n : NoneType = prim::Constant()
  %g : int = prim::Constant[value=1]()
  %y : Double(1, 4, 8, 8) = aten::convolution(%x, %w, %n, %s, %z, %s, %f, %z, %g)
  %o : Double(1, 4, 8, 8) = aten::relu(%y)
  return (%o))IR"),
            "aten::convolution aten::relu");
  // add with alpha != 1 and a tensor operand is not an epilogue step.
  EXPECT_EQ(FusedOps(h + R"IR(  %two : int = prim::Constant[value=2]()
  %o : Float(1, 4, 8, 8) = aten::add(%y, %skip, %two)
  return (%o))IR"),
            "aten::convolution aten::add");
}

TEST(FusePostOpsTest, ExtendsAnExistingFusedOp) {
  auto g = Parse(std::string(kConvHeader) + R"IR(  %r : Float(1, 4, 8, 8) = aten::relu(%y)
  return (%r))IR");
  ASSERT_NE(g, nullptr);
  ASSERT_TRUE(*RunPass(*g));
  // Append a step after the fused op, as a later rewrite could.
  ir::Value* fused = g->outputs()[0];
  ir::Node* tanh = g->create(ir::Symbol::FromQualString("aten::tanh"), {fused}, 1);
  tanh->output()->setType(fused->type());
  tanh->insertBefore(g->return_node());
  g->return_node()->replaceInput(0, tanh->output());
  ASSERT_TRUE(*RunPass(*g));
  int fused_ops = 0;
  for (const ir::Node* n : g->nodes()) {
    EXPECT_NE(n->kind().qualString(), "aten::tanh");
    fused_ops += n->kind().qualString() == "kiln::conv_post_ops";
  }
  EXPECT_EQ(fused_ops, 1);
}

// Folding needs constants with data, which IR text cannot carry.
TEST(FusePostOpsTest, FoldsBatchNormAndChannelConstantsIntoTheWeights) {
  auto g = Parse(R"IR(graph(%x : Float(1, 2, 4, 4)):
  %s : int[] = prim::Constant[value=[1, 1]]()
  %z : int[] = prim::Constant[value=[0, 0]]()
  %f : bool = prim::Constant[value=0]()
  %g : int = prim::Constant[value=1]()
  %eps : float = prim::Constant[value=0.5]()
  %mom : float = prim::Constant[value=0.1]()
  return (%x))IR");
  ASSERT_NE(g, nullptr);
  auto constant = [&](std::vector<int64_t> sizes, std::vector<float> values) {
    Tensor t = Tensor::Empty(DType::kFloat32, sizes);
    for (size_t i = 0; i < values.size(); ++i) t.data<float>()[i] = values[i];
    ir::WithInsertPoint at(g->return_node());
    return *ir::InsertConstant(*g, ir::IValue::FromTensor(t));
  };
  ir::Value* x = g->inputs()[0];
  ir::Value* w = constant({2, 2, 1, 1}, {1, 2, 3, 4});
  ir::Value* b = constant({2}, {10, 20});
  ir::Value* gamma = constant({2}, {2, 3});
  ir::Value* beta = constant({2}, {1, -1});
  ir::Value* mean = constant({2}, {5, 6});
  ir::Value* var = constant({2}, {3.5, 8.5});  // + eps = 4, 9: sqrt 2, 3
  ir::Value* scale = constant({2, 1, 1}, {10, 100});
  auto node = [&](const char* kind, std::vector<ir::Value*> in) {
    ir::Node* n = g->create(ir::Symbol::FromQualString(kind), in, 1);
    n->output()->setType(x->type());
    n->insertBefore(g->return_node());
    return n->output();
  };
  ir::Value* by_name[6];
  const char* names[] = {"s", "z", "f", "g", "eps", "mom"};
  for (int i = 0; i < 6; ++i) {
    for (ir::Node* n : g->nodes()) {
      if (n->output()->hasDebugName() && n->output()->debugName() == names[i]) by_name[i] = n->output();
    }
  }
  ir::Value* y = node("aten::convolution",
                      {x, w, b, by_name[0], by_name[1], by_name[0], by_name[2], by_name[1], by_name[3]});
  ir::Value* bn = node("aten::batch_norm", {y, gamma, beta, mean, var, by_name[2], by_name[5], by_name[4], by_name[2]});
  ir::Value* scaled = node("aten::mul", {bn, scale});
  ir::Value* out = node("aten::relu", {scaled});
  g->return_node()->replaceInput(0, out);
  PassStatistics stats;
  ASSERT_TRUE(*RunPass(*g, &stats));
  EXPECT_EQ(stats.Get("constants_folded"), 1);
  EXPECT_EQ(stats.Get("post_ops_fused"), 1);
  const ir::Node* fused = g->outputs()[0]->node();
  ASSERT_EQ(fused->kind().qualString(), "kiln::conv_post_ops");
  const Tensor nw = ir::ConstantValue(fused->input(1))->toTensor();
  const Tensor nb = ir::ConstantValue(fused->input(2))->toTensor();
  // channel 0: scale 2/2 = 1, shift 1 - 5 = -4, then * 10; channel 1: 3/3 = 1, -1 - 6 = -7, * 100.
  EXPECT_FLOAT_EQ(nw.data<float>()[0], 10);
  EXPECT_FLOAT_EQ(nw.data<float>()[1], 20);
  EXPECT_FLOAT_EQ(nw.data<float>()[2], 300);
  EXPECT_FLOAT_EQ(nw.data<float>()[3], 400);
  EXPECT_FLOAT_EQ(nb.data<float>()[0], (10 * 1 - 4) * 10);
  EXPECT_FLOAT_EQ(nb.data<float>()[1], (20 * 1 - 7) * 100);
  std::optional<ir::IValue> post = ir::ConstantValue(fused->input(7));
  ASSERT_EQ(post->elements().size(), 1u);
  EXPECT_EQ(post->elements()[0].toString(), "relu");
}

}  // namespace
}  // namespace kiln::passes
