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
std::string Fused(const std::string& text) {
  auto g = ir::ParseGraph(text);
  EXPECT_TRUE(g.ok()) << g.status();
  if (!g.ok()) return "<parse error>";
  const uint64_t before = GraphFingerprint(**g);
  PassStatistics stats;
  absl::StatusOr<bool> changed = FuseAttention(**g, stats);
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

}  // namespace
}  // namespace kiln::passes
