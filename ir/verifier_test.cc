#include "ir/verifier.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/text_parser.h"

namespace kiln::ir {
namespace {

using ::testing::HasSubstr;

Symbol S(absl::string_view q) { return Symbol::FromQualString(q); }

Node* Append(Graph& g, absl::string_view kind, std::vector<Value*> inputs, size_t num_outputs = 1) {
  return g.insertNode(g.create(S(kind), inputs, num_outputs));
}

Value* IntConst(Graph& g, int64_t v) {
  Node* n = Append(g, "prim::Constant", {});
  n->i_(sym::kValue, v);
  return n->output()->setType(Type::Int());
}

Value* BoolConst(Graph& g, bool v) {
  Node* n = Append(g, "prim::Constant", {});
  n->i_(sym::kValue, v ? 1 : 0);
  return n->output()->setType(Type::Bool());
}

// Mutable view of a use list, to corrupt it on purpose (the IR API keeps
// use lists consistent, which is exactly what these tests must get around).
std::vector<Use>& UsesOf(Value* v) { return const_cast<std::vector<Use>&>(v->uses()); }

void ExpectInvalid(const Graph& g, absl::string_view message, VerifyOptions options = {}) {
  absl::Status s = Verify(g, options);
  ASSERT_FALSE(s.ok()) << "expected an error containing: " << message;
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr(std::string(message)));
}

// x -> relu -> If(cond) { then: relu(y) ; else: y } -> Loop carrying z.
struct ControlFlowGraph {
  Graph g;
  Value* x;
  Value* cond;
  Node* relu;
  Node* if_node;
  Node* then_relu;
  Node* loop;
  Node* body_add;
  ControlFlowGraph() {
    x = g.addInput("x");
    cond = g.addInput("cond")->setType(Type::Bool());
    relu = Append(g, "aten::relu", {x});
    relu->output()->setDebugName("y");
    if_node = Append(g, "prim::If", {cond});
    Block* then_b = if_node->addBlock();
    Block* else_b = if_node->addBlock();
    {
      WithInsertPoint guard(then_b);
      then_relu = Append(g, "aten::relu", {relu->output()});
      then_b->registerOutput(then_relu->output());
    }
    else_b->registerOutput(relu->output());
    Value* z = if_node->output()->setType(Type::Tensor());
    Value* trips = IntConst(g, 3);
    Value* go = BoolConst(g, true);
    loop = Append(g, "prim::Loop", {trips, go, z});
    Block* body = loop->addBlock();
    body->addInput("i")->setType(Type::Int());
    Value* carried = body->addInput("c");
    {
      WithInsertPoint guard(body);
      Value* one = IntConst(g, 1);
      body_add = Append(g, "aten::add", {carried, x, one});
      body->registerOutput(go);
      body->registerOutput(body_add->output());
    }
    g.registerOutput(loop->output());
  }
};

TEST(VerifierTest, AcceptsWellFormedGraphs) {
  ControlFlowGraph cf;
  EXPECT_TRUE(Verify(cf.g).ok()) << Verify(cf.g);
  Graph empty;
  EXPECT_TRUE(Verify(empty).ok());
  std::unique_ptr<Graph> copy = cf.g.copy();
  EXPECT_TRUE(Verify(*copy).ok()) << Verify(*copy);
}

TEST(VerifierTest, DescribeNodePrintsTorchScriptStyle) {
  ControlFlowGraph cf;
  EXPECT_EQ(DescribeNode(*cf.relu), "%y : Tensor = aten::relu(%x)");
  EXPECT_THAT(DescribeNode(*cf.body_add->inputs()[2]->node()), HasSubstr("prim::Constant[value=1]()"));
}

TEST(VerifierTest, UseOfValueFromAnotherGraph) {
  Graph other;
  Value* foreign = other.addInput("foreign");
  Graph g;
  Value* x = g.addInput("x");
  Node* n = Append(g, "aten::add", {x, foreign, IntConst(g, 1)});
  g.registerOutput(n->output());
  ExpectInvalid(g, "input 1 (%foreign) belongs to another graph");
  n->replaceInput(1, x);  // leave `other` with consistent use lists
}

TEST(VerifierTest, UseBeforeDefinition) {
  Graph g;
  Value* x = g.addInput("x");
  Node* late = Append(g, "aten::relu", {x});
  Node* early = Append(g, "aten::relu", {late->output()});
  early->moveBefore(late);
  g.registerOutput(early->output());
  ExpectInvalid(g, "is not defined before this use");
  early->moveAfter(late);  // Graph's destructor expects def-before-use order
  EXPECT_TRUE(Verify(g).ok());
}

TEST(VerifierTest, UseOfIfOutputInsideItsOwnBlock) {
  ControlFlowGraph cf;
  cf.then_relu->replaceInput(0, cf.if_node->output());
  ExpectInvalid(cf.g, "output of the enclosing node, which is not visible in its own blocks");
}

TEST(VerifierTest, UseOfBlockLocalValueOutsideItsBlock) {
  ControlFlowGraph cf;
  cf.loop->replaceInput(2, cf.then_relu->output());
  ExpectInvalid(cf.g, "used outside the block that defines it");
}

TEST(VerifierTest, UseOfSiblingBlockValue) {
  ControlFlowGraph cf;
  cf.if_node->blocks()[1]->replaceOutput(0, cf.then_relu->output());
  ExpectInvalid(cf.g, "used outside the block that defines it");
  cf.if_node->blocks()[1]->replaceOutput(0, cf.relu->output());  // for the destructor
}

TEST(VerifierTest, UseOfLoopBodyValueAfterTheLoop) {
  ControlFlowGraph cf;
  cf.g.return_node()->replaceInput(0, cf.body_add->output());
  ExpectInvalid(cf.g, "used outside the block that defines it");
}

TEST(VerifierTest, MissingUse) {
  ControlFlowGraph cf;
  UsesOf(cf.x).pop_back();  // body_add's use of %x
  ExpectInvalid(cf.g, "input 1 (%x) has no matching entry in its use list");
  UsesOf(cf.x).push_back(Use{cf.body_add, 1});
  EXPECT_TRUE(Verify(cf.g).ok());
}

TEST(VerifierTest, DuplicateUse) {
  ControlFlowGraph cf;
  UsesOf(cf.x).push_back(UsesOf(cf.x).front());
  ExpectInvalid(cf.g, "use list of %x has a duplicate use");
  UsesOf(cf.x).pop_back();
}

TEST(VerifierTest, DuplicateUseAmongManyUses) {
  Graph g;
  Value* x = g.addInput("x");
  Node* last = nullptr;
  for (int i = 0; i < 20; ++i) last = Append(g, "aten::relu", {x});
  g.registerOutput(last->output());
  UsesOf(x).push_back(UsesOf(x)[5]);
  ExpectInvalid(g, "use list of %x has a duplicate use");
  UsesOf(x).pop_back();
  EXPECT_TRUE(Verify(g).ok());
}

TEST(VerifierTest, UseWithWrongOffset) {
  ControlFlowGraph cf;
  UsesOf(cf.relu->output())[0].offset = 7;
  ExpectInvalid(cf.g, "use list of %y has a use that does not point back at it");
  UsesOf(cf.relu->output())[0].offset = 0;
}

TEST(VerifierTest, UseByNodeOutsideTheGraphList) {
  Graph g;
  Value* x = g.addInput("x");
  g.registerOutput(x);
  Node* floating = g.create(S("aten::relu"), {x});
  ExpectInvalid(g, "created and never inserted");
  floating->destroy();
  EXPECT_TRUE(Verify(g).ok());
}

TEST(VerifierTest, IfWithWrongBlockCount) {
  Graph g;
  Value* c = g.addInput("c")->setType(Type::Bool());
  Node* n = Append(g, "prim::If", {c}, 0);
  n->addBlock();
  ExpectInvalid(g, "prim::If needs 2 blocks (then, else), has 1");
}

TEST(VerifierTest, IfWithNonBoolCondition) {
  Graph g;
  Value* c = g.addInput("c")->setType(Type::Int());
  Node* n = Append(g, "prim::If", {c}, 0);
  n->addBlock();
  n->addBlock();
  ExpectInvalid(g, "prim::If condition must be bool, is int");
}

TEST(VerifierTest, IfBlockOutputCountMismatch) {
  ControlFlowGraph cf;
  cf.if_node->blocks()[1]->registerOutput(cf.x);
  ExpectInvalid(cf.g, "prim::If block 1 has 2 outputs but the node has 1");
}

TEST(VerifierTest, LoopShapes) {
  {
    ControlFlowGraph cf;
    cf.loop->blocks()[0]->eraseOutput(1);
    ExpectInvalid(cf.g, "prim::Loop body must return (cond, carried...) = 2 outputs, has 1");
  }
  {
    ControlFlowGraph cf;
    cf.loop->replaceInput(0, cf.cond);
    ExpectInvalid(cf.g, "prim::Loop max_trip_count must be int, is bool");
  }
  {
    ControlFlowGraph cf;
    cf.loop->addOutput();
    ExpectInvalid(cf.g, "prim::Loop has 1 carried values but 2 outputs");
  }
  {
    ControlFlowGraph cf;
    cf.loop->blocks()[0]->addInput("extra");
    ExpectInvalid(cf.g, "prim::Loop body must take (trip_count, carried...) = 2 inputs, has 3");
  }
}

TEST(VerifierTest, SchemaTypeMismatchNamesNodeAndCandidates) {
  Graph g;
  Value* n = g.addInput("n")->setType(Type::Int());
  Node* relu = Append(g, "aten::relu", {n});
  g.registerOutput(relu->output());
  ExpectInvalid(g, "`%1 : Tensor = aten::relu(%n)`: no schema of aten::relu matches the node's inputs (int)");
  ExpectInvalid(g, "candidates:\n  aten::relu(Tensor self) -> Tensor");
  VerifyOptions no_schemas;
  no_schemas.check_schemas = false;
  EXPECT_TRUE(Verify(g, no_schemas).ok());
}

TEST(VerifierTest, SchemaArityMismatch) {
  Graph g;
  Value* x = g.addInput("x");
  Node* add = Append(g, "aten::add", {x});
  g.registerOutput(add->output());
  ExpectInvalid(g, "no schema of aten::add matches");
}

TEST(VerifierTest, UnknownOpsAreNotSchemaErrors) {
  Graph g;
  Value* x = g.addInput("x");
  Node* n = Append(g, "mylib::custom", {x});
  g.registerOutput(n->output());
  EXPECT_TRUE(Verify(g).ok());
}

TEST(VerifierTest, SentinelRules) {
  {
    Graph g;
    Value* x = g.addInput("x");
    Node* c = Append(g, "prim::Constant", {x});
    g.registerOutput(c->output());
    ExpectInvalid(g, "prim::Constant has inputs");
  }
  {
    Graph g;
    g.return_node()->addOutput();
    ExpectInvalid(g, "prim::Return has outputs");
    g.return_node()->eraseOutput(0);  // the destructor never frees these
  }
  {
    Graph g;
    Value* x = g.addInput("x");
    Node* other = Append(g, "aten::relu", {x});
    g.param_node()->addInput(other->output());
    ExpectInvalid(g, "prim::Param has inputs");
    g.param_node()->removeAllInputs();
  }
}

TEST(VerifierTest, DeepNestingDoesNotRecurse) {
  Graph g;
  Value* c = g.addInput("c")->setType(Type::Bool());
  Value* x = g.addInput("x");
  Block* b = g.block();
  std::vector<Node*> ifs;
  for (int depth = 0; depth < 20000; ++depth) {
    WithInsertPoint guard(b);
    Node* n = Append(g, "prim::If", {c}, 0);
    n->addBlock();
    n->addBlock();
    ifs.push_back(n);
    b = n->blocks()[0];
  }
  {
    WithInsertPoint guard(b);
    Append(g, "aten::relu", {x});
  }
  EXPECT_TRUE(Verify(g).ok()) << Verify(g);
  // Graph's destructor recurses per nesting level: unnest from the inside.
  for (auto it = ifs.rbegin(); it != ifs.rend(); ++it) (*it)->destroy();
  EXPECT_TRUE(Verify(g).ok());
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(VerifierCorpusTest, EveryCorpusGraphVerifies) {
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator("testdata/torchscript")) {
    std::string path = e.path().string();
    if (!absl::EndsWith(path, ".graph.txt")) continue;
    ++files;
    absl::StatusOr<std::unique_ptr<Graph>> g = ParseGraph(ReadFile(path));
    ASSERT_TRUE(g.ok()) << path << ": " << g.status();
    absl::Status s = Verify(**g);
    EXPECT_TRUE(s.ok()) << path << ": " << s;
  }
  EXPECT_GE(files, 10);
}

// A chain of `n` tensor ops with the constants they need (~n nodes). Fan-in
// stays small: Graph's destructor is quadratic in the length of a use list.
std::unique_ptr<Graph> BigGraph(int n) {
  auto g = std::make_unique<Graph>();
  Value* x = g->addInput("x");
  Value* one = nullptr;
  Value* prev = x;
  Value* cur = x;
  for (int i = 0; i < n; ++i) {
    Value* next = nullptr;
    switch (i % 4) {
      case 0: one = IntConst(*g, 1); continue;
      case 1: next = Append(*g, "aten::add", {cur, prev, one})->output(); break;
      case 2: next = Append(*g, "aten::relu", {cur})->output(); break;
      default: next = Append(*g, "aten::mul", {cur, prev})->output(); break;
    }
    prev = cur;
    cur = next;
  }
  g->registerOutput(cur);
  return g;
}

TEST(VerifierTest, LargeGraphTiming) {
  std::unique_ptr<Graph> g = BigGraph(100000);
  for (bool schemas : {false, true}) {
    VerifyOptions options;
    options.check_schemas = schemas;
    auto start = std::chrono::steady_clock::now();
    absl::Status s = Verify(*g, options);
    auto elapsed = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start);
    ASSERT_TRUE(s.ok()) << s;
    std::printf("Verify(1e5 nodes, check_schemas=%d): %.3f us/node\n", schemas ? 1 : 0,
                elapsed.count() / static_cast<double>(g->numNodes()));
  }
}

}  // namespace
}  // namespace kiln::ir
