#include "passes/fuse_attention.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "ir/constants.h"
#include "ir/ir.h"
#include "ir/text_parser.h"
#include "passes/fingerprint.h"
#include "passes/pass.h"

namespace kiln::passes {
namespace {

// The non-constant ops after the pass, and the fused op's scale.
std::string Fused(const std::string& text, bool bmm_form = false) {
  auto g = ir::ParseGraph(text);
  EXPECT_TRUE(g.ok()) << g.status();
  if (!g.ok()) return "<parse error>";
  const uint64_t before = GraphFingerprint(**g);
  PassStatistics stats;
  FuseAttentionOptions options;
  options.bmm_form = bmm_form;
  absl::StatusOr<bool> changed = FuseAttention(**g, stats, options);
  if (!changed.ok()) return std::string(changed.status().message());
  EXPECT_EQ(*changed, before != GraphFingerprint(**g));
  std::vector<std::string> ops;
  for (const ir::Node* n : (*g)->nodes()) {
    const std::string k(n->kind().qualString());
    if (k == "prim::Constant") continue;
    if (k == "kiln::attention") {
      std::optional<ir::IValue> scale = ir::ConstantValue(n->input(4));
      ops.push_back(absl::StrCat(k, "[", scale->toDouble(), ir::ConstantValue(n->input(3)) ? "" : ",mask", "]"));
    } else {
      ops.push_back(k);
    }
  }
  return absl::StrJoin(ops, " ");
}

TEST(FuseAttentionTest, VitForm) {
  // q / 8 before the product, as torch's MultiheadAttention exports it.
  EXPECT_EQ(Fused(R"IR(graph(%q : Float(12, 197, 64), %kt : Float(12, 64, 197), %v : Float(12, 197, 64)):
  %c : float = prim::Constant[value=8.]()
  %m1 : int = prim::Constant[value=-1]()
  %n : NoneType = prim::Constant()
  %qs : Float(12, 197, 64) = aten::div(%q, %c)
  %s : Float(12, 197, 197) = aten::matmul(%qs, %kt)
  %p : Float(12, 197, 197) = aten::softmax(%s, %m1, %n)
  %o : Float(12, 197, 64) = aten::matmul(%p, %v)
  return (%o))IR"),
            "kiln::attention[0.125]");
}

TEST(FuseAttentionTest, ScaledScoresWithMask) {
  EXPECT_EQ(Fused(R"IR(graph(%q : Float(1, 2, 5, 8), %kt : Float(1, 2, 8, 7), %v : Float(1, 2, 7, 4), %mask : Float(1, 1, 1, 7)):
  %c : float = prim::Constant[value=0.25]()
  %one : int = prim::Constant[value=1]()
  %d : int = prim::Constant[value=3]()
  %n : NoneType = prim::Constant()
  %s : Float(1, 2, 5, 7) = aten::matmul(%q, %kt)
  %ss : Float(1, 2, 5, 7) = aten::mul(%s, %c)
  %sm : Float(1, 2, 5, 7) = aten::add(%ss, %mask, %one)
  %p : Float(1, 2, 5, 7) = aten::softmax(%sm, %d, %n)
  %o : Float(1, 2, 5, 4) = aten::matmul(%p, %v)
  return (%o))IR"),
            "kiln::attention[0.25,mask]");
}

TEST(FuseAttentionTest, LeavesOtherChainsAlone) {
  // The probabilities are an output too.
  EXPECT_EQ(Fused(R"IR(graph(%q : Float(2, 5, 8), %kt : Float(2, 8, 7), %v : Float(2, 7, 4)):
  %m1 : int = prim::Constant[value=-1]()
  %n : NoneType = prim::Constant()
  %s : Float(2, 5, 7) = aten::matmul(%q, %kt)
  %p : Float(2, 5, 7) = aten::softmax(%s, %m1, %n)
  %o : Float(2, 5, 4) = aten::matmul(%p, %v)
  return (%o, %p))IR"),
            "aten::matmul aten::softmax aten::matmul");
  // Softmax over another dim.
  EXPECT_EQ(Fused(R"IR(graph(%q : Float(2, 5, 8), %kt : Float(2, 8, 7), %v : Float(2, 7, 4)):
  %d : int = prim::Constant[value=1]()
  %n : NoneType = prim::Constant()
  %s : Float(2, 5, 7) = aten::matmul(%q, %kt)
  %p : Float(2, 5, 7) = aten::softmax(%s, %d, %n)
  %o : Float(2, 5, 4) = aten::matmul(%p, %v)
  return (%o))IR"),
            "aten::matmul aten::softmax aten::matmul");
  // Broadcast batch dims.
  EXPECT_EQ(Fused(R"IR(graph(%q : Float(2, 5, 8), %kt : Float(1, 8, 7), %v : Float(2, 7, 4)):
  %m1 : int = prim::Constant[value=-1]()
  %n : NoneType = prim::Constant()
  %s : Float(2, 5, 7) = aten::matmul(%q, %kt)
  %p : Float(2, 5, 7) = aten::softmax(%s, %m1, %n)
  %o : Float(2, 5, 4) = aten::matmul(%p, %v)
  return (%o))IR"),
            "aten::matmul aten::softmax aten::matmul");
}

TEST(FuseAttentionTest, SixteenBitChains) {
  // Exported in bfloat16: the same chain in one dtype.
  EXPECT_EQ(Fused(R"IR(graph(%q : BFloat16(1, 2, 5, 8), %kt : BFloat16(1, 2, 8, 7), %v : BFloat16(1, 2, 7, 4), %mask : BFloat16(1, 1, 1, 7)):
  %c : float = prim::Constant[value=0.25]()
  %one : int = prim::Constant[value=1]()
  %d : int = prim::Constant[value=-1]()
  %n : NoneType = prim::Constant()
  %s : BFloat16(1, 2, 5, 7) = aten::matmul(%q, %kt)
  %ss : BFloat16(1, 2, 5, 7) = aten::mul(%s, %c)
  %sm : BFloat16(1, 2, 5, 7) = aten::add(%ss, %mask, %one)
  %p : BFloat16(1, 2, 5, 7) = aten::softmax(%sm, %d, %n)
  %o : BFloat16(1, 2, 5, 4) = aten::matmul(%p, %v)
  return (%o))IR"),
            "kiln::attention[0.25,mask]");
  // autocast (--precision bf16): a float32 mask promotes the scores, the
  // softmax runs in float32 and its result is cast back.
  EXPECT_EQ(Fused(R"IR(graph(%q : BFloat16(1, 2, 5, 8), %kt : BFloat16(1, 2, 8, 7), %v : BFloat16(1, 2, 7, 4), %mask : Float(1, 1, 1, 7)):
  %c : float = prim::Constant[value=0.25]()
  %one : int = prim::Constant[value=1]()
  %d : int = prim::Constant[value=-1]()
  %n : NoneType = prim::Constant()
  %bf : int = prim::Constant[value=15]()
  %f : bool = prim::Constant[value=0]()
  %s : BFloat16(1, 2, 5, 7) = aten::matmul(%q, %kt)
  %ss : BFloat16(1, 2, 5, 7) = aten::mul(%s, %c)
  %sm : Float(1, 2, 5, 7) = aten::add(%ss, %mask, %one)
  %p : Float(1, 2, 5, 7) = aten::softmax(%sm, %d, %n)
  %pb : BFloat16(1, 2, 5, 7) = aten::to(%p, %bf, %f, %f, %n)
  %o : BFloat16(1, 2, 5, 4) = aten::matmul(%pb, %v)
  return (%o))IR"),
            "kiln::attention[0.25,mask]");
  // autocast without a mask: a cast to float32 before the softmax (half).
  EXPECT_EQ(Fused(R"IR(graph(%q : Half(2, 5, 8), %kt : Half(2, 8, 7), %v : Half(2, 7, 4)):
  %d : int = prim::Constant[value=-1]()
  %n : NoneType = prim::Constant()
  %fl : int = prim::Constant[value=6]()
  %h : int = prim::Constant[value=5]()
  %f : bool = prim::Constant[value=0]()
  %s : Half(2, 5, 7) = aten::matmul(%q, %kt)
  %sf : Float(2, 5, 7) = aten::to(%s, %fl, %f, %f, %n)
  %p : Float(2, 5, 7) = aten::softmax(%sf, %d, %n)
  %ph : Half(2, 5, 7) = aten::to(%p, %h, %f, %f, %n)
  %o : Half(2, 5, 4) = aten::matmul(%ph, %v)
  return (%o))IR"),
            "kiln::attention[1]");
  // The probabilities are never cast back: the product with v is float32.
  EXPECT_EQ(Fused(R"IR(graph(%q : BFloat16(2, 5, 8), %kt : BFloat16(2, 8, 7), %v : Float(2, 7, 4)):
  %d : int = prim::Constant[value=-1]()
  %n : NoneType = prim::Constant()
  %fl : int = prim::Constant[value=6]()
  %f : bool = prim::Constant[value=0]()
  %s : BFloat16(2, 5, 7) = aten::matmul(%q, %kt)
  %sf : Float(2, 5, 7) = aten::to(%s, %fl, %f, %f, %n)
  %p : Float(2, 5, 7) = aten::softmax(%sf, %d, %n)
  %o : Float(2, 5, 4) = aten::matmul(%p, %v)
  return (%o))IR"),
            "aten::matmul aten::to aten::softmax aten::matmul");
  // Mixed operand dtypes stay unfused.
  EXPECT_EQ(Fused(R"IR(graph(%q : BFloat16(2, 5, 8), %kt : Half(2, 8, 7), %v : BFloat16(2, 7, 4)):
  %d : int = prim::Constant[value=-1]()
  %n : NoneType = prim::Constant()
  %s : BFloat16(2, 5, 7) = aten::matmul(%q, %kt)
  %p : BFloat16(2, 5, 7) = aten::softmax(%s, %d, %n)
  %o : BFloat16(2, 5, 4) = aten::matmul(%p, %v)
  return (%o))IR"),
            "aten::matmul aten::softmax aten::matmul");
}

TEST(FuseAttentionTest, TorchExportBmmForm) {
  // torch.export: bmm over [B*H, S, D], the scores viewed as [B, H, S, T]
  // for the mask and softmax, an eval-mode dropout, viewed back, bmm.
  const std::string text = R"IR(graph(%q : Float(4, 5, 8), %kt : Float(4, 8, 7), %v : Float(4, 7, 6), %mask : Float(2, 1, 1, 7)):
  %c : float = prim::Constant[value=0.25]()
  %one : int = prim::Constant[value=1]()
  %d : int = prim::Constant[value=-1]()
  %n : NoneType = prim::Constant()
  %p0 : float = prim::Constant[value=0.1]()
  %f : bool = prim::Constant[value=0]()
  %s4 : int[] = prim::Constant[value=[2, 2, 5, 7]]()
  %s3 : int[] = prim::Constant[value=[4, 5, 7]]()
  %s : Float(4, 5, 7) = aten::bmm(%q, %kt)
  %r : Float(2, 2, 5, 7) = aten::reshape(%s, %s4)
  %ss : Float(2, 2, 5, 7) = aten::mul(%r, %c)
  %sm : Float(2, 2, 5, 7) = aten::add(%ss, %mask, %one)
  %p : Float(2, 2, 5, 7) = aten::softmax(%sm, %d, %n)
  %pd : Float(2, 2, 5, 7) = aten::dropout(%p, %p0, %f)
  %p3 : Float(4, 5, 7) = aten::reshape(%pd, %s3)
  %o : Float(4, 5, 6) = aten::bmm(%p3, %v)
  return (%o))IR";
  EXPECT_EQ(Fused(text, true), "aten::reshape aten::reshape aten::reshape kiln::attention[0.25,mask] aten::reshape");
  // Only when asked (the CPU does not).
  EXPECT_EQ(Fused(text),
            "aten::bmm aten::reshape aten::mul aten::add aten::softmax aten::dropout aten::reshape aten::bmm");
  // The fused op sees [2, 2, ...] views and its result is viewed back.
  auto g = ir::ParseGraph(text);
  ASSERT_TRUE(g.ok());
  PassStatistics stats;
  FuseAttentionOptions options;
  options.bmm_form = true;
  ASSERT_TRUE(FuseAttention(**g, stats, options).ok());
  for (const ir::Node* n : (*g)->nodes()) {
    if (n->kind().qualString() != std::string("kiln::attention")) continue;
    EXPECT_EQ(n->input(0)->type()->tensor().ConcreteSizes(), (std::vector<int64_t>{2, 2, 5, 8}));
    EXPECT_EQ(n->input(1)->type()->tensor().ConcreteSizes(), (std::vector<int64_t>{2, 2, 8, 7}));
    EXPECT_EQ(n->input(2)->type()->tensor().ConcreteSizes(), (std::vector<int64_t>{2, 2, 7, 6}));
    EXPECT_EQ(n->output()->type()->tensor().ConcreteSizes(), (std::vector<int64_t>{2, 2, 5, 6}));
  }
  EXPECT_EQ((*g)->outputs()[0]->type()->tensor().ConcreteSizes(), (std::vector<int64_t>{4, 5, 6}));
  // A reshape that is not a split of the batch dim stays unfused.
  EXPECT_EQ(Fused(R"IR(graph(%q : Float(4, 5, 8), %kt : Float(4, 8, 7), %v : Float(4, 7, 6)):
  %d : int = prim::Constant[value=-1]()
  %n : NoneType = prim::Constant()
  %s4 : int[] = prim::Constant[value=[4, 7, 5]]()
  %s3 : int[] = prim::Constant[value=[4, 5, 7]]()
  %s : Float(4, 5, 7) = aten::bmm(%q, %kt)
  %r : Float(4, 7, 5) = aten::reshape(%s, %s4)
  %p : Float(4, 7, 5) = aten::softmax(%r, %d, %n)
  %p3 : Float(4, 5, 7) = aten::reshape(%p, %s3)
  %o : Float(4, 5, 6) = aten::bmm(%p3, %v)
  return (%o))IR", true),
            "aten::bmm aten::reshape aten::softmax aten::reshape aten::bmm");
}

TEST(FuseAttentionTest, CoreAtenCloneInPlaceOfTheDropout) {
  // run_decompositions() writes the eval-mode dropout as a clone (memory
  // format None) of the probabilities, and v as a contiguous clone.
  const std::string text = R"IR(graph(%q : Float(4, 5, 8), %kt : Float(4, 8, 7), %v4 : Float(2, 2, 7, 6)):
  %d : int = prim::Constant[value=-1]()
  %n : NoneType = prim::Constant()
  %cf : int = prim::Constant[value=0]()
  %s4 : int[] = prim::Constant[value=[2, 2, 5, 7]]()
  %s3 : int[] = prim::Constant[value=[4, 5, 7]]()
  %sv : int[] = prim::Constant[value=[4, 7, 6]]()
  %s : Float(4, 5, 7) = aten::bmm(%q, %kt)
  %r : Float(2, 2, 5, 7) = aten::view(%s, %s4)
  %p : Float(2, 2, 5, 7) = aten::softmax(%r, %d, %n)
  %pc : Float(2, 2, 5, 7) = aten::clone(%p, %n)
  %p3 : Float(4, 5, 7) = aten::view(%pc, %s3)
  %vc : Float(2, 2, 7, 6) = aten::clone(%v4, %cf)
  %v : Float(4, 7, 6) = aten::view(%vc, %sv)
  %o : Float(4, 5, 6) = aten::bmm(%p3, %v)
  return (%o))IR";
  EXPECT_EQ(Fused(text, true),
            "aten::clone aten::view aten::reshape aten::reshape aten::reshape kiln::attention[1] aten::reshape");
  // A clone with another use stays (the chain's intermediates have one use).
  std::string shared = text;
  shared.replace(shared.find("return (%o)"), std::string("return (%o)").size(), "return (%o, %pc)");
  EXPECT_EQ(Fused(shared, true),
            "aten::bmm aten::view aten::softmax aten::clone aten::view aten::clone aten::view aten::bmm");
}

TEST(FuseAttentionTest, TorchExportSixteenBitAndSoftmaxDtype) {
  // autocast over torch.export's form: the dropout before the cast back.
  EXPECT_EQ(Fused(R"IR(graph(%q : BFloat16(4, 5, 8), %kt : BFloat16(4, 8, 7), %v : BFloat16(4, 7, 6), %mask : Float(2, 1, 5, 7)):
  %c : float = prim::Constant[value=0.25]()
  %one : int = prim::Constant[value=1]()
  %d : int = prim::Constant[value=-1]()
  %n : NoneType = prim::Constant()
  %p0 : float = prim::Constant[value=0.]()
  %f : bool = prim::Constant[value=0]()
  %bf : int = prim::Constant[value=15]()
  %s4 : int[] = prim::Constant[value=[2, 2, 5, 7]]()
  %s3 : int[] = prim::Constant[value=[4, 5, 7]]()
  %s : BFloat16(4, 5, 7) = aten::bmm(%q, %kt)
  %r : BFloat16(2, 2, 5, 7) = aten::reshape(%s, %s4)
  %ss : BFloat16(2, 2, 5, 7) = aten::mul(%r, %c)
  %sm : Float(2, 2, 5, 7) = aten::add(%ss, %mask, %one)
  %p : Float(2, 2, 5, 7) = aten::softmax(%sm, %d, %n)
  %pd : Float(2, 2, 5, 7) = aten::dropout(%p, %p0, %f)
  %pb : BFloat16(2, 2, 5, 7) = aten::to(%pd, %bf, %f, %f, %n)
  %p3 : BFloat16(4, 5, 7) = aten::reshape(%pb, %s3)
  %o : BFloat16(4, 5, 6) = aten::bmm(%p3, %v)
  return (%o))IR", true),
            "aten::reshape aten::reshape aten::reshape kiln::attention[0.25,mask] aten::reshape");
  // softmax(..., dtype=float32) fuses; another dtype or a training dropout does not.
  const char* with_dtype = R"IR(graph(%q : Float(2, 5, 8), %kt : Float(2, 8, 7), %v : Float(2, 7, 4)):
  %d : int = prim::Constant[value=-1]()
  %dt : int = prim::Constant[value=@DT@]()
  %s : Float(2, 5, 7) = aten::matmul(%q, %kt)
  %p : Float(2, 5, 7) = aten::softmax(%s, %d, %dt)
  %o : Float(2, 5, 4) = aten::matmul(%p, %v)
  return (%o))IR";
  std::string text = with_dtype;
  text.replace(text.find("@DT@"), 4, "6");
  EXPECT_EQ(Fused(text), "kiln::attention[1]");
  text = with_dtype;
  text.replace(text.find("@DT@"), 4, "7");
  EXPECT_EQ(Fused(text), "aten::matmul aten::softmax aten::matmul");
  EXPECT_EQ(Fused(R"IR(graph(%q : Float(2, 5, 8), %kt : Float(2, 8, 7), %v : Float(2, 7, 4)):
  %d : int = prim::Constant[value=-1]()
  %n : NoneType = prim::Constant()
  %p0 : float = prim::Constant[value=0.1]()
  %t : bool = prim::Constant[value=1]()
  %s : Float(2, 5, 7) = aten::matmul(%q, %kt)
  %p : Float(2, 5, 7) = aten::softmax(%s, %d, %n)
  %pd : Float(2, 5, 7) = aten::dropout(%p, %p0, %t)
  %o : Float(2, 5, 4) = aten::matmul(%pd, %v)
  return (%o))IR"),
            "aten::matmul aten::softmax aten::dropout aten::matmul");
}

}  // namespace
}  // namespace kiln::passes
