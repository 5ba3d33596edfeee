#include "ir/ir.h"

#include <memory>

#include "gtest/gtest.h"

namespace kiln::ir {
namespace {

const Symbol kAdd = Symbol::FromQualString("aten::add");
const Symbol kRelu = Symbol::FromQualString("aten::relu");

TEST(Symbol, InternsAndSplits) {
  Symbol a = Symbol::FromQualString("aten::add");
  EXPECT_EQ(a, kAdd);
  EXPECT_EQ(a.ns(), "aten");
  EXPECT_EQ(a.name(), "add");
  EXPECT_EQ(a.qualString(), "aten::add");
  EXPECT_TRUE(a.is_aten());
  EXPECT_EQ(Symbol::Make("prim", "Constant"), sym::kConstant);
  EXPECT_NE(Symbol::FromQualString("aten::mul"), kAdd);
}

TEST(Graph, BuildAndQuery) {
  Graph g;
  Value* x = g.addInput("x");
  Node* relu = g.insertNode(g.create(kRelu, {x}));
  Node* add = g.insertNode(g.create(kAdd, {relu->output(), x}));
  g.registerOutput(add->output());
  EXPECT_EQ(g.numNodes(), 2u);
  EXPECT_EQ(x->uses().size(), 2u);
  EXPECT_EQ(x->uses()[0].user, relu);
  EXPECT_EQ(x->uses()[1].offset, 1u);
  EXPECT_TRUE(relu->isBefore(add));
  EXPECT_TRUE(add->isAfter(relu));
  EXPECT_FALSE(add->isBefore(relu));
  EXPECT_EQ(g.outputs()[0], add->output());
}

TEST(Graph, DebugNamesFollowTorchScriptRules) {
  Graph g;
  Value* a = g.addInput("x");
  Value* b = g.addInput();
  EXPECT_EQ(b->debugName(), std::to_string(b->unique()));
  b->setDebugName("x");  // steals the name; a becomes x.1
  EXPECT_EQ(b->debugName(), "x");
  EXPECT_EQ(a->debugName(), "x.1");
  // b is renamed; like TorchScript, the suffix counter for "x" has moved
  // past 2 already (it is bumped after each rename).
  Value* c = g.addInput("x");
  EXPECT_EQ(c->debugName(), "x");
  EXPECT_EQ(b->debugName(), "x.3");
  EXPECT_EQ(b->debugNameBase(), "x");
  EXPECT_EQ(g.findValue("x.1"), a);
  EXPECT_FALSE(Value::isValidName("123"));
  EXPECT_TRUE(Value::isValidName("a1"));
  c->setDebugName("");
  EXPECT_FALSE(c->hasDebugName());
  EXPECT_EQ(g.findValue("x"), nullptr);
}

TEST(Graph, NumericNamesNeverClashWithFreshValues) {
  Graph g;
  Value* a = g.addInput();
  a->setDebugName("100");
  EXPECT_EQ(a->debugName(), "100");
  Value* b = g.addInput();
  EXPECT_GT(b->unique(), 100u);
  // A number that a fresh value may already print with is refused.
  Value* c = g.addInput();
  c->setDebugName("0");
  EXPECT_FALSE(c->hasDebugName());
}

TEST(Graph, ReplaceAllUsesAndDestroy) {
  Graph g;
  Value* x = g.addInput("x");
  Value* y = g.addInput("y");
  Node* n1 = g.insertNode(g.create(kRelu, {x}));
  Node* n2 = g.insertNode(g.create(kAdd, {n1->output(), n1->output()}));
  g.registerOutput(n2->output());
  n1->output()->replaceAllUsesWith(y);
  EXPECT_EQ(n2->input(0), y);
  EXPECT_EQ(n2->input(1), y);
  EXPECT_EQ(y->uses().size(), 2u);
  EXPECT_FALSE(n1->hasUses());
  n1->destroy();
  EXPECT_EQ(g.numNodes(), 1u);
  EXPECT_EQ(x->uses().size(), 0u);
}

TEST(Node, InputEditsKeepUseOffsets) {
  Graph g;
  Value* a = g.addInput("a");
  Value* b = g.addInput("b");
  Value* c = g.addInput("c");
  Node* n = g.insertNode(g.create(kAdd, {a, b}));
  n->insertInput(0, c);  // c a b
  EXPECT_EQ(a->uses()[0].offset, 1u);
  EXPECT_EQ(b->uses()[0].offset, 2u);
  n->removeInput(1);  // c b
  EXPECT_TRUE(a->uses().empty());
  EXPECT_EQ(b->uses()[0].offset, 1u);
  n->replaceInput(0, a);  // a b
  EXPECT_TRUE(c->uses().empty());
  EXPECT_EQ(a->uses()[0].offset, 0u);
  n->replaceInputWith(b, a);  // a a
  EXPECT_EQ(a->uses().size(), 2u);
  n->removeAllInputs();
  EXPECT_TRUE(a->uses().empty());
}

TEST(Node, Attributes) {
  Graph g;
  Node* n = g.create(sym::kConstant);
  Symbol value = sym::kValue;
  n->i_(value, 3);
  EXPECT_TRUE(n->hasAttribute(value));
  EXPECT_EQ(n->kindOf(value), AttributeKind::i);
  EXPECT_EQ(n->i(value), 3);
  n->f_(value, 2.5);  // overwrite keeps one entry
  EXPECT_EQ(n->attributes().size(), 1u);
  EXPECT_EQ(n->f(value), 2.5);
  n->is_(Symbol::Attr("dims"), {1, 2});
  EXPECT_EQ(n->attributes()[1].name, Symbol::Attr("dims"));
  EXPECT_TRUE(n->removeAttribute(value));
  EXPECT_FALSE(n->hasAttribute(value));
  n->destroy();
}

TEST(Node, TopologicalPositionsSurviveCrowding) {
  Graph g;
  Value* x = g.addInput("x");
  Node* first = g.insertNode(g.create(kRelu, {x}));
  Node* last = g.insertNode(g.create(kRelu, {x}));
  // Insert many nodes right after `first`, halving the gap each time, which
  // forces re-indexing.
  std::vector<Node*> inserted;
  for (int i = 0; i < 200; ++i) {
    Node* n = g.create(kRelu, {x});
    n->insertAfter(first);
    inserted.push_back(n);
  }
  EXPECT_TRUE(first->isBefore(last));
  // Later insertions sit closer to `first`.
  for (size_t i = 1; i < inserted.size(); ++i) {
    EXPECT_TRUE(inserted[i]->isBefore(inserted[i - 1]));
  }
  Node* cur = g.block()->front();
  while (cur->next() != g.return_node()) {
    EXPECT_TRUE(cur->isBefore(cur->next()));
    cur = cur->next();
  }
}

TEST(Node, MoveAndPrepend) {
  Graph g;
  Value* x = g.addInput("x");
  Node* a = g.insertNode(g.create(kRelu, {x}));
  Node* b = g.insertNode(g.create(kRelu, {x}));
  b->moveBefore(a);
  EXPECT_TRUE(b->isBefore(a));
  EXPECT_EQ(g.block()->front(), b);
  Node* c = g.create(kRelu, {x});
  g.block()->prependNode(c);
  EXPECT_EQ(g.block()->front(), c);
  a->moveAfter(c);
  EXPECT_EQ(c->next(), a);
}

// if cond: y = relu(x) else: y = x ; return y
TEST(Blocks, IfNodeScopingAndCrossBlockOrder) {
  Graph g;
  Value* x = g.addInput("x");
  Value* cond = g.addInput("c");
  cond->setType(Type::Bool());
  Node* pre = g.insertNode(g.create(kRelu, {x}));
  Node* if_node = g.insertNode(g.create(sym::kIf, {cond}, 1));
  Block* then_b = if_node->addBlock();
  Block* else_b = if_node->addBlock();
  Node* inner = then_b->appendNode(g.create(kRelu, {x}));
  then_b->registerOutput(inner->output());
  else_b->registerOutput(x);
  Node* post = g.insertNode(g.create(kRelu, {if_node->output()}));
  g.registerOutput(post->output());
  EXPECT_EQ(g.numNodes(), 4u);
  EXPECT_EQ(CountNodes(g.block()), 4u);
  EXPECT_TRUE(pre->isBefore(inner));
  EXPECT_TRUE(inner->isBefore(post));
  EXPECT_FALSE(post->isBefore(inner));
  EXPECT_EQ(inner->owningBlock()->owningNode(), if_node);
  // Destroying the If frees its blocks and their nodes.
  g.eraseOutput(0);
  post->destroy();
  if_node->destroy();
  EXPECT_EQ(g.numNodes(), 1u);
  EXPECT_EQ(x->uses().size(), 1u);
}

TEST(Graph, CopyIsDeepAndKeepsNames) {
  Graph g;
  Value* x = g.addInput("x");
  Value* c = g.addInput("c");
  Node* if_node = g.insertNode(g.create(sym::kIf, {c}, 1));
  if_node->output()->setDebugName("out");
  Block* t = if_node->addBlock();
  Block* e = if_node->addBlock();
  Node* r = t->appendNode(g.create(kRelu, {x}));
  r->setSourceLocation("a.py:1:2");
  t->registerOutput(r->output());
  e->registerOutput(x);
  g.registerOutput(if_node->output());
  std::unique_ptr<Graph> copy = g.copy();
  EXPECT_EQ(copy->numNodes(), g.numNodes());
  Node* cif = copy->block()->front();
  EXPECT_EQ(cif->kind(), sym::kIf);
  EXPECT_EQ(cif->output()->debugName(), "out");
  EXPECT_EQ(cif->block(0)->front()->sourceLocation(), "a.py:1:2");
  EXPECT_EQ(cif->block(0)->front()->input(0), copy->inputs()[0]);
  EXPECT_EQ(cif->block(1)->outputs()[0], copy->inputs()[0]);
  EXPECT_NE(cif->block(0)->front(), r);
}

TEST(Graph, CreateCloneMapsInputs) {
  Graph g;
  Value* x = g.addInput("x");
  Value* y = g.addInput("y");
  Node* n = g.insertNode(g.create(kAdd, {x, x}));
  n->i_(Symbol::Attr("alpha"), 2);
  Node* c = g.createClone(n, [&](Value* v) { return v == x ? y : v; });
  g.insertNode(c);
  EXPECT_EQ(c->input(0), y);
  EXPECT_EQ(c->i(Symbol::Attr("alpha")), 2);
  EXPECT_EQ(y->uses().size(), 2u);
}

TEST(Graph, WithInsertPointRestores) {
  Graph g;
  Value* x = g.addInput("x");
  Node* a = g.insertNode(g.create(kRelu, {x}));
  {
    WithInsertPoint guard(a);
    Node* b = g.insertNode(g.create(kRelu, {x}));
    EXPECT_TRUE(b->isBefore(a));
  }
  EXPECT_EQ(g.insertPoint(), g.return_node());
}

TEST(Types, PrintLikeTorchScript) {
  TensorInfo info;
  info.dtype = DType::kFloat32;
  info.sizes = std::vector<std::optional<int64_t>>{1, 3};
  info.strides = std::vector<int64_t>{3, 1};
  info.requires_grad = false;
  info.device = Device{"cpu", -1};
  EXPECT_EQ(Type::TensorWith(info)->ToString(),
            "Float(1, 3, strides=[3, 1], requires_grad=0, device=cpu)");
  TensorInfo scalar;
  scalar.dtype = DType::kInt64;
  scalar.sizes = std::vector<std::optional<int64_t>>{};
  scalar.requires_grad = false;
  scalar.device = Device{"cpu", -1};
  EXPECT_EQ(Type::TensorWith(scalar)->ToString(), "Long(requires_grad=0, device=cpu)");
  TensorInfo unknown_dims;
  unknown_dims.sizes = std::vector<std::optional<int64_t>>{std::nullopt, 4};
  EXPECT_EQ(Type::TensorWith(unknown_dims)->ToString(), "Tensor(*, 4)");
  TensorInfo dtype_only;
  dtype_only.dtype = DType::kFloat64;
  EXPECT_EQ(Type::TensorWith(dtype_only)->ToString(), "DoubleTensor");
  EXPECT_EQ(Type::Tensor()->ToString(), "Tensor");
  EXPECT_EQ(Type::List(Type::Int())->ToString(), "int[]");
  EXPECT_EQ(Type::Optional(Type::Float())->ToString(), "float?");
  EXPECT_EQ(Type::Tuple({Type::Int(), Type::Tensor()})->ToString(), "(int, Tensor)");
  EXPECT_EQ(Type::None()->ToString(), "NoneType");
  EXPECT_EQ(Type::Class("__torch__.M")->ToString(), "__torch__.M");
}

TEST(Types, Subtyping) {
  TensorInfo info;
  info.dtype = DType::kFloat32;
  TypePtr f = Type::TensorWith(info);
  EXPECT_TRUE(IsSubtypeOf(f, Type::Tensor()));
  EXPECT_FALSE(IsSubtypeOf(Type::Tensor(), f));
  EXPECT_TRUE(IsSubtypeOf(Type::Int(), Type::Number()));
  EXPECT_TRUE(IsSubtypeOf(Type::None(), Type::Optional(Type::Int())));
  EXPECT_TRUE(IsSubtypeOf(Type::Int(), Type::Optional(Type::Int())));
  EXPECT_FALSE(IsSubtypeOf(Type::Float(), Type::Int()));
  EXPECT_TRUE(IsSubtypeOf(Type::List(f), Type::List(Type::Tensor())));
  EXPECT_TRUE(TypeEquals(Type::List(Type::Int()), Type::List(Type::Int())));
}

}  // namespace
}  // namespace kiln::ir

namespace kiln::ir {
namespace {

TEST(Teardown, DeepNestingNeedsNoRecursion) {
  Graph g;
  Value* c = g.addInput("c");
  c->setType(Type::Bool());
  Block* b = g.block();
  for (int i = 0; i < 20000; ++i) {
    Node* n = b->appendNode(g.create(sym::kIf, {c}, 0));
    n->addBlock();
    n->addBlock();
    b = n->block(0);
  }
  // Erasing the outermost If destroys the whole tower iteratively.
  Graph g2;
  Value* c2 = g2.addInput("c");
  Node* outer = g2.insertNode(g2.create(sym::kIf, {c2}, 0));
  Block* inner = outer->addBlock();
  outer->addBlock();
  for (int i = 0; i < 20000; ++i) {
    Node* n = inner->appendNode(g2.create(sym::kIf, {c2}, 0));
    n->addBlock();
    n->addBlock();
    inner = n->block(0);
  }
  outer->destroy();
  EXPECT_EQ(g2.numNodes(), 0u);
  EXPECT_TRUE(c2->uses().empty());
}

TEST(Teardown, InvalidGraphsAndUnattachedNodesAreFreed) {
  Graph g;
  Value* x = g.addInput("x");
  Node* a = g.create(Symbol::FromQualString("aten::relu"), {x});
  Node* b = g.insertNode(g.create(Symbol::FromQualString("aten::relu"), {a->output()}));
  (void)b;  // `a` is never inserted: b uses a value that is not in scope.
  Node* ret_out_user = g.create(Symbol::FromQualString("aten::relu"), 1);
  g.return_node()->addOutput();  // outputs on a Return node are freed too
  (void)ret_out_user;
}

TEST(Teardown, LongUseListsAreLinear) {
  Graph g;
  Value* x = g.addInput("x");
  for (int i = 0; i < 100000; ++i) {
    g.insertNode(g.create(Symbol::FromQualString("aten::relu"), {x}));
  }
  Node* outer = g.insertNode(g.create(sym::kIf, {x}, 0));
  Block* blk = outer->addBlock();
  outer->addBlock();
  for (int i = 0; i < 100000; ++i) {
    blk->appendNode(g.create(Symbol::FromQualString("aten::relu"), {x}));
  }
  EXPECT_EQ(x->uses().size(), 200001u);
  outer->destroy();
  EXPECT_EQ(x->uses().size(), 100000u);
}

}  // namespace
}  // namespace kiln::ir
