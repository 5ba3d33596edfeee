#include "passes/decompositions.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "ir/ir.h"
#include "ir/text_parser.h"
#include "ir/text_printer.h"
#include "ops/row_facts.h"
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

absl::StatusOr<bool> RunPass(ir::Graph& g) {
  uint64_t before = GraphFingerprint(g);
  PassStatistics stats;
  absl::StatusOr<bool> changed = Decompose(g, stats);
  if (changed.ok()) {
    EXPECT_EQ(*changed, before != GraphFingerprint(g));
  }
  return changed;
}

// The top block's non-constant node kinds, in order.
std::string Ops(const ir::Graph& g) {
  std::vector<std::string> kinds;
  for (const ir::Node* n : g.nodes()) {
    if (n->kind() != ir::sym::kConstant) kinds.emplace_back(n->kind().qualString());
  }
  return absl::StrJoin(kinds, " ");
}

std::string Decomposed(const std::string& text) {
  auto g = Parse(text);
  if (!g) return "<parse error>";
  absl::StatusOr<bool> changed = RunPass(*g);
  if (!changed.ok()) return std::string(changed.status().message());
  if (!*changed) return "<unchanged>";
  return Ops(*g);
}

// The table is the rows' DECOMP column, nothing more or less.
TEST(DecompositionsTest, TableIsTheRowsDecompColumn) {
  std::vector<std::string> from_rows;
  for (const ops::RowFacts& row : ops::AllRowFacts()) {
    if (row.decomposition) from_rows.push_back(row.name);
  }
  std::sort(from_rows.begin(), from_rows.end());
  EXPECT_EQ(Decompositions().Names(), from_rows);
  EXPECT_GT(from_rows.size(), 20u);
  // The rows that also name a library extern keep it in compiled code.
  EXPECT_TRUE(Decompositions().Find("aten::linear")->bespoke);
  EXPECT_FALSE(Decompositions().Find("aten::gelu")->bespoke);
  EXPECT_NE(Decompositions().Find("aten::linear"), nullptr);
  EXPECT_EQ(Decompositions().Find("aten::relu"), nullptr);
}

TEST(DecompositionsTest, LinearFullText) {
  auto g = Parse(R"IR(graph(%x : Float(2, 4), %w : Float(3, 4), %b : Float(3)):
  %y : Float(2, 3) = aten::linear(%x, %w, %b) # m.py:1:1
  %z : Tensor = aten::relu(%y)
  return (%z))IR");
  ASSERT_NE(g, nullptr);
  ASSERT_TRUE(*RunPass(*g));
  PassStatistics stats;
  ASSERT_TRUE(Canonicalize(*g, stats).ok());
  EXPECT_EQ(ir::PrintGraph(*g), R"IR(graph(%x : Float(2, 4),
      %w : Float(3, 4),
      %b : Float(3)):
  %0 : Tensor = aten::t(%w) # m.py:1:1
  %1 : Tensor = aten::matmul(%x, %0) # m.py:1:1
  %2 : int = prim::Constant[value=1]() # m.py:1:1
  %y : Float(2, 3) = aten::add(%1, %b, %2) # m.py:1:1
  %z : Tensor = aten::relu(%y)
  return (%z)
)IR");
}

TEST(DecompositionsTest, EachDecomposition) {
  EXPECT_EQ(Decomposed(R"IR(graph(%x : Tensor, %w : Tensor):
  %none : NoneType = prim::Constant()
  %y : Tensor = aten::linear(%x, %w, %none)
  return (%y))IR"),
            "aten::t aten::matmul");
  EXPECT_EQ(Decomposed(R"IR(graph(%s : Tensor, %a : Tensor, %b : Tensor):
  %one : int = prim::Constant[value=1]()
  %y : Tensor = aten::addmm(%s, %a, %b, %one, %one)
  return (%y))IR"),
            "aten::mm aten::add");
  EXPECT_EQ(Decomposed(R"IR(graph(%s : Tensor, %a : Tensor, %b : Tensor):
  %two : float = prim::Constant[value=2.]()
  %half : float = prim::Constant[value=0.5]()
  %y : Tensor = aten::addmm(%s, %a, %b, %two, %half)
  return (%y))IR"),
            "aten::mm aten::mul aten::mul aten::add");
  EXPECT_EQ(Decomposed(R"IR(graph(%s : Tensor, %a : Tensor, %b : Tensor):
  %zero : int = prim::Constant[value=0]()
  %one : int = prim::Constant[value=1]()
  %y : Tensor = aten::addmm(%s, %a, %b, %zero, %one)
  return (%y))IR"),
            "aten::mm");
  EXPECT_EQ(Decomposed(R"IR(graph(%x : Tensor, %w : Tensor, %b : Tensor):
  %n : int = prim::Constant[value=8]()
  %shape : int[] = prim::ListConstruct(%n)
  %eps : float = prim::Constant[value=1.0000000000000001e-05]()
  %t : bool = prim::Constant[value=1]()
  %y : Tensor = aten::layer_norm(%x, %shape, %w, %b, %eps, %t)
  return (%y))IR"),
            "prim::ListConstruct aten::mean aten::sub aten::mul aten::mean aten::add aten::rsqrt "
            "aten::mul aten::mul aten::add");
  EXPECT_EQ(Decomposed(R"IR(graph(%x : Float(2, 3, 4, 4), %w : Tensor, %b : Tensor, %m : Tensor, %v : Tensor):
  %f : bool = prim::Constant[value=0]()
  %mom : float = prim::Constant[value=0.1]()
  %eps : float = prim::Constant[value=1.0000000000000001e-05]()
  %y : Tensor = aten::batch_norm(%x, %w, %b, %m, %v, %f, %mom, %eps, %f)
  return (%y))IR"),
            "aten::add aten::rsqrt aten::mul aten::mul aten::neg aten::add aten::view aten::mul "
            "aten::view aten::add");
  EXPECT_EQ(Decomposed(R"IR(graph(%x : Float(2, 6, 5), %w : Tensor, %b : Tensor):
  %g : int = prim::Constant[value=3]()
  %eps : float = prim::Constant[value=1.0000000000000001e-05]()
  %t : bool = prim::Constant[value=1]()
  %y : Tensor = aten::group_norm(%x, %g, %w, %b, %eps, %t)
  return (%y))IR"),
            "aten::size prim::ListConstruct aten::reshape aten::mean aten::sub aten::mul "
            "aten::mean aten::add aten::rsqrt aten::mul aten::reshape_as aten::view aten::mul "
            "aten::view aten::add");
  EXPECT_EQ(Decomposed(R"IR(graph(%x : Tensor):
  %none : str = prim::Constant[value="none"]()
  %y : Tensor = aten::gelu(%x, %none)
  return (%y))IR"),
            "aten::mul aten::erf aten::add aten::mul aten::mul");
  EXPECT_EQ(Decomposed(R"IR(graph(%x : Tensor):
  %tanh : str = prim::Constant[value="tanh"]()
  %y : Tensor = aten::gelu(%x, %tanh)
  return (%y))IR"),
            "aten::mul aten::mul aten::mul aten::add aten::mul aten::tanh aten::add aten::mul "
            "aten::mul");
  EXPECT_EQ(Decomposed(R"IR(graph(%x : Tensor):
  %y : Tensor = aten::gelu(%x)
  return (%y))IR"),
            "aten::mul aten::erf aten::add aten::mul aten::mul");  // default 'none'
  EXPECT_EQ(Decomposed(R"IR(graph(%x : Tensor):
  %y : Tensor = aten::silu(%x)
  return (%y))IR"),
            "aten::sigmoid aten::mul");
  EXPECT_EQ(Decomposed(R"IR(graph(%x : Tensor):
  %y : Tensor = aten::hardswish(%x)
  return (%y))IR"),
            "aten::add aten::clamp aten::div aten::mul");
  EXPECT_EQ(Decomposed(R"IR(graph(%x : Tensor):
  %d : int = prim::Constant[value=-1]()
  %none : NoneType = prim::Constant()
  %y : Tensor = aten::softmax(%x, %d, %none)
  return (%y))IR"),
            "prim::ListConstruct aten::amax aten::sub aten::exp aten::sum aten::div");
  EXPECT_EQ(Decomposed(R"IR(graph(%x : Tensor):
  %d : int = prim::Constant[value=1]()
  %none : NoneType = prim::Constant()
  %y : Tensor = aten::log_softmax(%x, %d, %none)
  return (%y))IR"),
            "prim::ListConstruct aten::amax aten::sub aten::exp aten::sum aten::log aten::sub");
}

// What a decomposition emits is decomposed in turn: ONNX's opset-11 Softmax
// (kiln::flat_softmax) becomes softmax.int, which becomes reductions.
TEST(DecompositionsTest, NewNodesAreDecomposedToo) {
  EXPECT_EQ(Decomposed(R"IR(graph(%x : Float(2, 3, 4)):
  %axis : int = prim::Constant[value=1]()
  %kind : int = prim::Constant[value=0]()
  %y : Tensor = kiln::flat_softmax(%x, %axis, %kind)
  return (%y))IR"),
            "aten::reshape prim::ListConstruct aten::amax aten::sub aten::exp aten::sum aten::div "
            "aten::reshape");
}

TEST(DecompositionsTest, DropoutInEvalIsIdentity) {
  auto g = Parse(R"IR(graph(%x : Tensor):
  %p : float = prim::Constant[value=0.5]()
  %f : bool = prim::Constant[value=0]()
  %y : Tensor = aten::dropout(%x, %p, %f)
  %z : Tensor = aten::relu(%y)
  return (%z))IR");
  ASSERT_NE(g, nullptr);
  ASSERT_TRUE(*RunPass(*g));
  EXPECT_EQ(Ops(*g), "aten::relu");
  EXPECT_EQ(g->outputs()[0]->node()->input(0)->debugName(), "x");
  // In training mode with p = 0 it drops nothing either.
  EXPECT_EQ(Decomposed(R"IR(graph(%x : Tensor):
  %p : float = prim::Constant[value=0.]()
  %t : bool = prim::Constant[value=1]()
  %y : Tensor = aten::dropout(%x, %p, %t)
  %z : Tensor = aten::relu(%y)
  return (%z))IR"),
            "aten::relu");
}

// ONNX Dropout (opset 12+) in inference (training_mode absent or a
// constant false) or with a ratio of 0: the mask, when used, is all true.
TEST(DecompositionsTest, OnnxDropoutInInferenceIsIdentity) {
  auto with_mask = Parse(R"IR(graph(%x : Float(2, 3)):
  %r : Tensor = prim::Constant[value={0.25}]()
  %n : NoneType = prim::Constant()
  %y : Tensor, %m : Tensor = kiln::dropout(%x, %r, %n, %n)
  %z : Tensor = aten::relu(%y)
  return (%z, %m))IR");
  ASSERT_NE(with_mask, nullptr);
  ASSERT_TRUE(*RunPass(*with_mask));
  EXPECT_EQ(Ops(*with_mask), "aten::ones_like aten::relu");
  EXPECT_EQ(with_mask->outputs()[0]->node()->input(0)->debugName(), "x");
  const std::string text = ir::PrintGraph(*with_mask);
  EXPECT_NE(text.find(absl::StrCat("prim::Constant[value=", DTypeCode(DType::kBool), "]")), std::string::npos)
      << "the mask is bool: " << text;
  auto g = Parse(R"IR(graph(%x : Float(2, 3)):
  %r : Tensor = prim::Constant[value={0.25}]()
  %t : Tensor = prim::Constant[value={0}]()
  %n : NoneType = prim::Constant()
  %y : Tensor, %m : Tensor = kiln::dropout(%x, %r, %t, %n)
  %z : Tensor = aten::relu(%y)
  return (%z))IR");
  ASSERT_NE(g, nullptr);
  ASSERT_TRUE(*RunPass(*g));
  EXPECT_EQ(g->outputs()[0]->node()->input(0)->debugName(), "x");
  // Training mode with a ratio of 0 (torchvision 0.14's swin): identity.
  EXPECT_EQ(Decomposed(R"IR(graph(%x : Float(2, 3)):
  %r : Tensor = prim::Constant[value={0}]()
  %t : Tensor = prim::Constant[value={1}]()
  %n : NoneType = prim::Constant()
  %y : Tensor, %m : Tensor = kiln::dropout(%x, %r, %t, %n)
  %z : Tensor = aten::relu(%y)
  return (%z))IR"),
            "aten::relu");
  // Training mode with a ratio that drops, or a flag or ratio only known at
  // run time: unchanged.
  EXPECT_EQ(Decomposed(R"IR(graph(%x : Float(2, 3), %train : Tensor, %ratio : Tensor):
  %r : Tensor = prim::Constant[value={0.25}]()
  %t : Tensor = prim::Constant[value={1}]()
  %n : NoneType = prim::Constant()
  %y : Tensor, %m : Tensor = kiln::dropout(%x, %r, %t, %n)
  %v : Tensor, %k : Tensor = kiln::dropout(%y, %r, %train, %n)
  %w : Tensor, %j : Tensor = kiln::dropout(%v, %ratio, %t, %n)
  %u : Tensor, %i : Tensor = kiln::dropout(%w, %n, %t, %n)
  return (%u))IR"),
            "<unchanged>");
}

TEST(DecompositionsTest, InsideBlocks) {
  auto g = Parse(R"IR(graph(%c : bool, %x : Tensor):
  %y : Tensor = prim::If(%c)
    block0():
      %s : Tensor = aten::silu(%x)
      -> (%s)
    block1():
      -> (%x)
  return (%y))IR");
  ASSERT_NE(g, nullptr);
  ASSERT_TRUE(*RunPass(*g));
  std::string text = ir::PrintGraph(*g);
  EXPECT_NE(text.find("aten::sigmoid"), std::string::npos) << text;
  EXPECT_EQ(text.find("aten::silu"), std::string::npos) << text;
}

TEST(DecompositionsTest, PreconditionsNotMet) {
  // Dropout in training mode, or with a non-constant flag.
  EXPECT_EQ(Decomposed(R"IR(graph(%x : Tensor, %train : bool):
  %p : float = prim::Constant[value=0.5]()
  %t : bool = prim::Constant[value=1]()
  %y : Tensor = aten::dropout(%x, %p, %t)
  %z : Tensor = aten::dropout(%y, %p, %train)
  return (%z))IR"),
            "<unchanged>");
  // Batch norm in training mode, or with unknown input rank, or unknown stats.
  EXPECT_EQ(Decomposed(R"IR(graph(%x : Float(2, 3, 4, 4), %u : Tensor, %w : Tensor, %m : Tensor, %v : Tensor, %o : Tensor?):
  %t : bool = prim::Constant[value=1]()
  %f : bool = prim::Constant[value=0]()
  %mom : float = prim::Constant[value=0.1]()
  %eps : float = prim::Constant[value=1.0000000000000001e-05]()
  %a : Tensor = aten::batch_norm(%x, %w, %w, %m, %v, %t, %mom, %eps, %f)
  %b : Tensor = aten::batch_norm(%u, %w, %w, %m, %v, %f, %mom, %eps, %f)
  %c : Tensor = aten::batch_norm(%x, %w, %w, %o, %v, %f, %mom, %eps, %f)
  return (%a, %b, %c))IR"),
            "<unchanged>");
  // Linear whose bias may or may not be defined.
  EXPECT_EQ(Decomposed(R"IR(graph(%x : Tensor, %w : Tensor, %b : Tensor?):
  %y : Tensor = aten::linear(%x, %w, %b)
  return (%y))IR"),
            "<unchanged>");
  // gelu with a non-constant mode; softmax with a dtype; addmm with a
  // non-constant beta; layer_norm with an unknown normalized_shape.
  EXPECT_EQ(Decomposed(R"IR(graph(%x : Tensor, %mode : str, %beta : float, %shape : int[]):
  %d : int = prim::Constant[value=-1]()
  %dt : int = prim::Constant[value=6]()
  %one : int = prim::Constant[value=1]()
  %none : NoneType = prim::Constant()
  %g : Tensor = aten::gelu(%x, %mode)
  %s : Tensor = aten::softmax(%g, %d, %dt)
  %a : Tensor = aten::addmm(%s, %s, %s, %beta, %one)
  %l : Tensor = aten::layer_norm(%a, %shape, %none, %none, %beta, %none)
  return (%l))IR"),
            "<unchanged>");
}

}  // namespace
}  // namespace kiln::passes
