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

}  // namespace
}  // namespace kiln::passes
