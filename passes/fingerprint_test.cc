#include "passes/fingerprint.h"

#include <chrono>
#include <cstdio>
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "ir/ir.h"

namespace kiln::passes {
namespace {

using ir::Graph;
using ir::Node;
using ir::Symbol;
using ir::Value;

const Symbol kRelu = Symbol::FromQualString("aten::relu");
const Symbol kAdd = Symbol::FromQualString("aten::add");
const Symbol kSub = Symbol::FromQualString("aten::sub");

std::unique_ptr<Graph> MakeGraph() {
  auto g = std::make_unique<Graph>();
  Value* x = g->addInput("x");
  Value* y = g->addInput("y");
  Node* relu = g->insertNode(g->create(kRelu, {x}));
  Node* add = g->insertNode(g->create(kAdd, {relu->output(), y}));
  g->registerOutput(add->output());
  return g;
}

TEST(Fingerprint, SameStructureSameFingerprint) {
  auto a = MakeGraph();
  auto b = MakeGraph();
  EXPECT_EQ(GraphFingerprint(*a), GraphFingerprint(*b));
  EXPECT_EQ(GraphFingerprint(*a), GraphFingerprint(*a->copy()));
}

TEST(Fingerprint, RecreatingAnIdenticalNodeKeepsTheFingerprint) {
  auto g = MakeGraph();
  uint64_t before = GraphFingerprint(*g);
  // Replace relu with a fresh, identical node: new Value uniques, same IR.
  Node* relu = g->block()->front();
  Node* fresh = g->create(kRelu, {g->inputs()[0]});
  fresh->insertBefore(relu);
  relu->output()->replaceAllUsesWith(fresh->output());
  relu->destroy();
  EXPECT_EQ(GraphFingerprint(*g), before);
}

TEST(Fingerprint, SeesEveryKindOfChange) {
  uint64_t base = GraphFingerprint(*MakeGraph());

  auto kind = MakeGraph();
  Node* add = kind->return_node()->input()->node();
  Node* sub = kind->create(kSub, {add->input(0), add->input(1)});
  sub->insertBefore(add);
  add->output()->replaceAllUsesWith(sub->output());
  add->destroy();
  EXPECT_NE(GraphFingerprint(*kind), base);

  auto swapped = MakeGraph();
  add = swapped->return_node()->input()->node();
  Value* a0 = add->input(0);
  Value* a1 = add->input(1);
  add->replaceInput(0, a1);
  add->replaceInput(1, a0);
  EXPECT_NE(GraphFingerprint(*swapped), base);

  auto attr = MakeGraph();
  attr->block()->front()->i_(Symbol::Attr("alpha"), 2);
  uint64_t with_attr = GraphFingerprint(*attr);
  EXPECT_NE(with_attr, base);
  attr->block()->front()->i_(Symbol::Attr("alpha"), 3);
  EXPECT_NE(GraphFingerprint(*attr), with_attr);

  auto type = MakeGraph();
  type->inputs()[0]->setType(ir::Type::Int());
  EXPECT_NE(GraphFingerprint(*type), base);

  auto shape = MakeGraph();
  ir::TensorInfo info;
  info.sizes = std::vector<std::optional<int64_t>>{2, 3};
  shape->inputs()[0]->setType(ir::Type::TensorWith(info));
  uint64_t with_shape = GraphFingerprint(*shape);
  EXPECT_NE(with_shape, base);
  info.sizes = std::vector<std::optional<int64_t>>{2, 4};
  shape->inputs()[0]->setType(ir::Type::TensorWith(info));
  EXPECT_NE(GraphFingerprint(*shape), with_shape);

  auto name = MakeGraph();
  name->block()->front()->output()->setDebugName("r");
  EXPECT_NE(GraphFingerprint(*name), base);

  auto loc = MakeGraph();
  loc->block()->front()->setSourceLocation("model.py:3:4");
  EXPECT_NE(GraphFingerprint(*loc), base);

  auto output = MakeGraph();
  output->registerOutput(output->inputs()[0]);
  EXPECT_NE(GraphFingerprint(*output), base);

  auto dead = MakeGraph();
  dead->insertNode(dead->create(kRelu, {dead->inputs()[1]}));
  EXPECT_NE(GraphFingerprint(*dead), base);
}

// Block structure counts: the same nodes inside or after an If differ.
// A graph whose only node holds `t` (and a list of it) as attributes.
std::unique_ptr<Graph> ConstantGraph(const Tensor& t) {
  auto g = std::make_unique<Graph>();
  Node* c = g->insertNode(g->create(Symbol::FromQualString("prim::Constant")));
  c->t_(Symbol::FromQualString("attr::value"), t);
  c->setAttribute(Symbol::FromQualString("attr::values"), std::vector<Tensor>{t, t});
  g->registerOutput(c->output());
  return g;
}

TEST(Fingerprint, TheMemoGivesTheSameFingerprintAndSeesNewTensors) {
  Tensor t = Tensor::Empty(DType::kFloat32, {64});
  static_cast<float*>(t.raw_data())[3] = 1.5f;
  auto g = ConstantGraph(t);
  TensorHashMemo memo;
  const uint64_t plain = GraphFingerprint(*g);
  EXPECT_EQ(GraphFingerprint(*g, memo), plain);
  EXPECT_EQ(GraphFingerprint(*g, memo), plain);  // from the memo
  // An equal tensor in other storage: the same; other contents or another
  // view of the same storage: different, memo or not.
  absl::StatusOr<Tensor> copy = Tensor::FromBytes(DType::kFloat32, {64}, t.raw_data(), 64 * sizeof(float));
  ASSERT_TRUE(copy.ok());
  EXPECT_EQ(GraphFingerprint(*ConstantGraph(*copy), memo), plain);
  Tensor other = Tensor::Empty(DType::kFloat32, {64});
  static_cast<float*>(other.raw_data())[3] = 2.5f;
  EXPECT_NE(GraphFingerprint(*ConstantGraph(other), memo), plain);
  EXPECT_EQ(GraphFingerprint(*ConstantGraph(other), memo), GraphFingerprint(*ConstantGraph(other)));
  Tensor view = Tensor::View(t, {32}, {1}, 0);
  EXPECT_EQ(GraphFingerprint(*ConstantGraph(view), memo), GraphFingerprint(*ConstantGraph(view)));
  EXPECT_NE(GraphFingerprint(*ConstantGraph(view), memo), plain);
}

// Constants adding up to a large model's weights are hashed ahead on
// several threads: the same fingerprint as without a memo, and a change in
// one of them still seen.
TEST(Fingerprint, HashingAheadOnThreadsGivesTheSameFingerprint) {
  auto g = std::make_unique<Graph>();
  std::vector<Tensor> weights;
  for (int k = 0; k < 5; ++k) {
    Tensor t = Tensor::Empty(DType::kFloat32, {4 << 20});  // 16 MiB each, 80 MiB in all
    static_cast<float*>(t.raw_data())[k * 1000] = static_cast<float>(k + 1);
    weights.push_back(t);
    Node* c = g->insertNode(g->create(Symbol::FromQualString("prim::Constant")));
    c->t_(Symbol::FromQualString("attr::value"), t);
  }
  const uint64_t plain = GraphFingerprint(*g);
  TensorHashMemo memo;
  EXPECT_EQ(GraphFingerprint(*g, memo), plain);
  EXPECT_EQ(GraphFingerprint(*g, memo), plain);
  auto changed = std::make_unique<Graph>();
  for (int k = 0; k < 5; ++k) {
    Tensor t = weights[k];
    if (k == 3) {
      absl::StatusOr<Tensor> copy =
          Tensor::FromBytes(DType::kFloat32, {4 << 20}, t.raw_data(), (4 << 20) * sizeof(float));
      ASSERT_TRUE(copy.ok());
      static_cast<float*>(copy->raw_data())[7] = 9.0f;
      t = *copy;
    }
    Node* c = changed->insertNode(changed->create(Symbol::FromQualString("prim::Constant")));
    c->t_(Symbol::FromQualString("attr::value"), t);
  }
  const uint64_t other = GraphFingerprint(*changed, memo);
  EXPECT_NE(other, plain);
  EXPECT_EQ(other, GraphFingerprint(*changed));
}

TEST(Fingerprint, BlocksAreStructural) {
  auto build = [](bool inside) {
    auto g = std::make_unique<Graph>();
    Value* c = g->addInput("c");
    Value* x = g->addInput("x");
    Node* if_node = g->insertNode(g->create(ir::sym::kIf, {c}, 0));
    ir::Block* then_b = if_node->addBlock();
    if_node->addBlock();
    if (inside) {
      then_b->appendNode(g->create(kRelu, {x}));
    } else {
      g->insertNode(g->create(kRelu, {x}));
    }
    return g;
  };
  EXPECT_NE(GraphFingerprint(*build(true)), GraphFingerprint(*build(false)));
  EXPECT_EQ(GraphFingerprint(*build(true)), GraphFingerprint(*build(true)));
}

// GraphFingerprint itself is iterative; the depth here is bounded by what
// ir::Block::destroyContents (recursive) survives under ASan.
TEST(Fingerprint, DeepNesting) {
  Graph g;
  Value* c = g.addInput("c");
  ir::Block* b = g.block();
  for (int i = 0; i < 2000; ++i) {
    Node* n = b->appendNode(g.create(ir::sym::kIf, {c}, 0));
    b = n->addBlock();
    n->addBlock();
  }
  b->appendNode(g.create(kRelu, {c}));
  uint64_t fp = GraphFingerprint(g);
  EXPECT_EQ(fp, GraphFingerprint(g));
}

TEST(Fingerprint, SparseUniquesAreFine) {
  auto g = MakeGraph();
  uint64_t before = GraphFingerprint(*g);
  // An all-digit name moves nextUnique() far ahead.
  Value* v = g->insertNode(g->create(kRelu, {g->inputs()[0]}))->output();
  v->setDebugName("4000000000");
  EXPECT_GT(g->nextUnique(), 4000000000u);
  Node* late = g->insertNode(g->create(kRelu, {v}));
  uint64_t fp = GraphFingerprint(*g);
  EXPECT_NE(fp, before);
  EXPECT_EQ(fp, GraphFingerprint(*g));
  late->destroy();
  EXPECT_NE(GraphFingerprint(*g), fp);
}

// Not a benchmark, just a guard against accidental quadratic behaviour; the
// number is printed for the record.
TEST(Fingerprint, LinearTime) {
  Graph g;
  Value* v = g.addInput("x");
  constexpr int kNodes = 100000;
  for (int i = 0; i < kNodes; ++i) {
    Node* n = g.insertNode(g.create(i % 2 ? kRelu : kAdd, i % 2 ? std::vector<Value*>{v}
                                                             : std::vector<Value*>{v, v}));
    if (i % 3 == 0) n->i_(Symbol::Attr("alpha"), i);
    v = n->output();
  }
  g.registerOutput(v);
  auto start = std::chrono::steady_clock::now();
  uint64_t fp = GraphFingerprint(g);
  double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start)
                  .count();
  std::printf("GraphFingerprint: %.1f ns/node (fp %016llx)\n", ns / kNodes,
              static_cast<unsigned long long>(fp));
  EXPECT_LT(ns / kNodes, 5000.0);  // very loose: sanitizers, loaded CI
}

}  // namespace
}  // namespace kiln::passes
