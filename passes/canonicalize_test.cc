#include "passes/canonicalize.h"

#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "ir/ir.h"
#include "ir/text_parser.h"
#include "ir/text_printer.h"
#include "passes/fingerprint.h"
#include "passes/pass.h"

namespace kiln::passes {
namespace {

std::unique_ptr<ir::Graph> Parse(const std::string& text) {
  auto g = ir::ParseGraph(text);
  EXPECT_TRUE(g.ok()) << g.status();
  return g.ok() ? *std::move(g) : nullptr;
}

bool RunPass(ir::Graph& g, const CanonicalizeOptions& options = {}) {
  uint64_t before = GraphFingerprint(g);
  PassStatistics stats;
  absl::StatusOr<bool> changed = Canonicalize(g, stats, options);
  EXPECT_TRUE(changed.ok());
  EXPECT_EQ(*changed, before != GraphFingerprint(g));
  return *changed;
}

TEST(CanonicalizeTest, NumbersAnonymousValuesInDefinitionOrder) {
  auto g = Parse(R"IR(graph(%x : Tensor, %7 : Tensor):
  %42 : int = prim::Constant[value=1]()
  %y : Tensor = aten::add(%x, %7, %42)
  %3 : Tensor = prim::If(%42)
    block0():
      %9 : Tensor = aten::relu(%y)
      -> (%9)
    block1():
      -> (%x)
  %5 : Tensor = prim::Loop(%42, %42, %3)
    block0(%100 : int, %101 : Tensor):
      %z : Tensor = aten::tanh(%101)
      -> (%42, %z)
  return (%5))IR");
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(RunPass(*g));
  EXPECT_EQ(ir::PrintGraph(*g), R"IR(graph(%x : Tensor,
      %0 : Tensor):
  %1 : int = prim::Constant[value=1]()
  %y : Tensor = aten::add(%x, %0, %1)
  %2 : Tensor = prim::If(%1)
    block0():
      %3 : Tensor = aten::relu(%y)
      -> (%3)
    block1():
      -> (%x)
  %4 : Tensor = prim::Loop(%1, %1, %2)
    block0(%5 : int, %6 : Tensor):
      %z : Tensor = aten::tanh(%6)
      -> (%1, %z)
  return (%4)
)IR");
  // Idempotent.
  EXPECT_FALSE(RunPass(*g));
  // Fresh values do not clash with the numbers now used as names.
  ir::Node* n = g->create(ir::Symbol::FromQualString("aten::relu"), {g->inputs()[0]});
  g->block()->appendNode(n);
  EXPECT_EQ(g->findValue(n->output()->debugName()), nullptr);
  EXPECT_GT(std::stoi(n->output()->debugName()), 6);
}

TEST(CanonicalizeTest, EqualGraphsBuiltDifferentlyPrintEqual) {
  // Same structure, different unique numbers: one built with extra values
  // that were later removed.
  auto build = [](bool with_garbage) {
    auto g = std::make_unique<ir::Graph>();
    ir::Value* x = g->addInput("x");
    if (with_garbage) {
      for (int i = 0; i < 5; ++i) {
        ir::Node* junk = g->create(ir::Symbol::FromQualString("aten::relu"), {x});
        g->block()->appendNode(junk);
        junk->destroy();
      }
    }
    ir::Node* a = g->block()->appendNode(g->create(ir::Symbol::FromQualString("aten::relu"), {x}));
    ir::Node* b =
        g->block()->appendNode(g->create(ir::Symbol::FromQualString("aten::tanh"), {a->output()}));
    g->registerOutput(b->output());
    return g;
  };
  auto g1 = build(false);
  auto g2 = build(true);
  EXPECT_NE(ir::PrintGraph(*g1), ir::PrintGraph(*g2));
  RunPass(*g1);
  EXPECT_TRUE(RunPass(*g2));
  EXPECT_EQ(ir::PrintGraph(*g1), ir::PrintGraph(*g2));
}

TEST(CanonicalizeTest, AlreadyCanonicalIsUnchanged) {
  auto g = Parse(R"IR(graph(%x : Tensor):
  %0 : Tensor = aten::relu(%x)
  %1 : Tensor = aten::tanh(%0)
  return (%1))IR");
  ASSERT_NE(g, nullptr);
  EXPECT_FALSE(RunPass(*g));
}

TEST(CanonicalizeTest, DropNamesNumbersEverything) {
  auto g = Parse(R"IR(graph(%x : Tensor):
  %r : Tensor = aten::relu(%x)
  %0 : Tensor = aten::tanh(%r)
  return (%0))IR");
  ASSERT_NE(g, nullptr);
  CanonicalizeOptions options;
  options.keep_names = false;
  EXPECT_TRUE(RunPass(*g, options));
  EXPECT_EQ(ir::PrintGraph(*g), R"IR(graph(%0 : Tensor):
  %1 : Tensor = aten::relu(%0)
  %2 : Tensor = aten::tanh(%1)
  return (%2)
)IR");
}

TEST(CanonicalizeTest, DeepNestingDoesNotRecurse) {
  ir::Graph g;
  ir::Value* c = g.addInput("c");
  ir::Block* b = g.block();
  for (int i = 0; i < 20000; ++i) {
    ir::Node* n = b->appendNode(g.create(ir::sym::kIf, {c}, 0));
    b = n->addBlock();
    n->addBlock();
  }
  ir::Node* leaf = b->appendNode(g.create(ir::Symbol::FromQualString("aten::relu"), {c}));
  EXPECT_TRUE(RunPass(g));
  EXPECT_EQ(leaf->output()->debugName(), "0");
}

}  // namespace
}  // namespace kiln::passes
