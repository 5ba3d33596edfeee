#include "passes/shape_propagation.h"

#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "ir/ir.h"
#include "ir/op_registry.h"
#include "ir/text_parser.h"
#include "ir/text_printer.h"
#include "passes/fingerprint.h"
#include "passes/pass.h"
#include "passes/shape_functions.h"

namespace kiln::passes {
namespace {

std::unique_ptr<ir::Graph> Parse(const std::string& text) {
  auto g = ir::ParseGraph(text);
  EXPECT_TRUE(g.ok()) << g.status();
  return g.ok() ? *std::move(g) : nullptr;
}

// Runs the pass and checks that its changed bit agrees with the fingerprint.
absl::StatusOr<bool> RunPass(ir::Graph& g) {
  uint64_t before = GraphFingerprint(g);
  PassStatistics stats;
  absl::StatusOr<bool> changed = PropagateShapes(g, stats);
  if (changed.ok()) {
    EXPECT_EQ(*changed, before != GraphFingerprint(g));
  }
  return changed;
}

std::string TypeOf(const ir::Graph& g, const std::string& name) {
  const ir::Value* v = g.findValue(name);
  return v ? v->type()->ToString() : "<no value " + name + ">";
}

std::string ReadCorpus(const std::string& name) {
  std::ifstream in("testdata/torchscript/" + name, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(ShapeFunctionsTest, AllTableEntriesRegister) {
  ASSERT_TRUE(RegisterShapeFunctions().ok()) << RegisterShapeFunctions();
  size_t installed = 0;
  for (const std::string& name : ShapeFunctionOverloads()) {
    // A row may name an overload of another torch version's schema list
    // (//testing:ops_completeness_test checks every row's name).
    const ir::Operator* op = ir::BuiltinOps().Find(name);
    if (op == nullptr) continue;
    EXPECT_TRUE(static_cast<bool>(op->shape_fn)) << name;
    ++installed;
  }
  EXPECT_GT(installed, 400u);
}

TEST(ShapePropagationTest, ElementwiseAndPromotion) {
  auto g = Parse(R"IR(graph(%x : Float(2, 3), %i : Int(3), %b : Bool(2, 1)):
  %one : int = prim::Constant[value=1]()
  %half : float = prim::Constant[value=0.5]()
  %r : Tensor = aten::relu(%x)
  %s : Tensor = aten::add(%i, %half, %one)
  %t : Tensor = aten::mul(%x, %i)
  %u : Tensor = aten::div(%i, %i)
  %v : Tensor = aten::gt(%x, %b)
  %w : Tensor = aten::add(%b, %one, %one)
  %e : Tensor = aten::exp(%i)
  return (%r, %s, %t, %u, %v, %w, %e))IR");
  ASSERT_NE(g, nullptr);
  ASSERT_TRUE(*RunPass(*g));
  EXPECT_EQ(TypeOf(*g, "r"), "Float(2, 3)");
  EXPECT_EQ(TypeOf(*g, "s"), "Float(3)");  // int tensor + float scalar: default float
  EXPECT_EQ(TypeOf(*g, "t"), "Float(2, 3)");
  EXPECT_EQ(TypeOf(*g, "u"), "Float(3)");   // true division
  EXPECT_EQ(TypeOf(*g, "v"), "Bool(2, 3)");
  EXPECT_EQ(TypeOf(*g, "w"), "Long(2, 1)");  // bool tensor + int scalar
  EXPECT_EQ(TypeOf(*g, "e"), "Float(3)");
  // A second run finds nothing new.
  EXPECT_FALSE(*RunPass(*g));
}

TEST(ShapePropagationTest, UnknownStaysUnknown) {
  auto g = Parse(R"IR(graph(%x : Tensor, %y : Float(*, 3), %n : int):
  %one : int = prim::Constant[value=1]()
  %a : Tensor = aten::add(%x, %y, %one)
  %b : Tensor = aten::relu(%y)
  %c : Tensor = aten::unsqueeze(%y, %n)
  return (%a, %b, %c))IR");
  ASSERT_NE(g, nullptr);
  ASSERT_TRUE(*RunPass(*g));
  EXPECT_EQ(TypeOf(*g, "a"), "Tensor");
  EXPECT_EQ(TypeOf(*g, "b"), "Float(*, 3)");
  EXPECT_EQ(TypeOf(*g, "c"), "Float(*, *, *)");
}

TEST(ShapePropagationTest, NothingToInferIsNoChange) {
  auto g = Parse(R"IR(graph(%x : Tensor):
  %one : int = prim::Constant[value=1]()
  %a : Tensor = aten::add(%x, %x, %one)
  %b : Tensor = aten::tanh(%a)
  %c : Tensor = test::unknown_op(%b)
  return (%c))IR");
  ASSERT_NE(g, nullptr);
  EXPECT_FALSE(*RunPass(*g));
}

TEST(ShapePropagationTest, BroadcastMismatchNamesTheNode) {
  auto g = Parse(R"IR(graph(%x : Float(2, 3), %y : Float(4)):
  %one : int = prim::Constant[value=1]()
  %bad : Tensor = aten::add(%x, %y, %one) # model.py:7:3
  return (%bad))IR");
  ASSERT_NE(g, nullptr);
  absl::StatusOr<bool> r = RunPass(*g);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::StrContains(r.status().message(), "aten::add node %bad")) << r.status();
  EXPECT_TRUE(absl::StrContains(r.status().message(), "model.py:7:3")) << r.status();
}

TEST(ShapePropagationTest, BroadcastUnknownAgainstKnown) {
  auto g = Parse(R"IR(graph(%x : Float(*, 1, 5), %y : Float(3, 1)):
  %one : int = prim::Constant[value=1]()
  %z : Tensor = aten::mul(%x, %y)
  return (%z))IR");
  ASSERT_NE(g, nullptr);
  ASSERT_TRUE(*RunPass(*g));
  EXPECT_EQ(TypeOf(*g, "z"), "Float(*, 3, 5)");
}

TEST(ShapePropagationTest, LinearMatmulAndErrors) {
  auto g = Parse(R"IR(graph(%x : Float(8, 16, 32), %w : Float(10, 32), %b : Float(10), %m : Float(32, 7), %v : Float(32)):
  %none : NoneType = prim::Constant()
  %l : Tensor = aten::linear(%x, %w, %b)
  %l2 : Tensor = aten::linear(%x, %w, %none)
  %mm : Tensor = aten::matmul(%x, %m)
  %mv : Tensor = aten::matmul(%x, %v)
  %wt : Tensor = aten::t(%w)
  return (%l, %l2, %mm, %mv, %wt))IR");
  ASSERT_NE(g, nullptr);
  ASSERT_TRUE(*RunPass(*g));
  EXPECT_EQ(TypeOf(*g, "l"), "Float(8, 16, 10)");
  EXPECT_EQ(TypeOf(*g, "l2"), "Float(8, 16, 10)");
  EXPECT_EQ(TypeOf(*g, "mm"), "Float(8, 16, 7)");
  EXPECT_EQ(TypeOf(*g, "mv"), "Float(8, 16)");
  EXPECT_EQ(TypeOf(*g, "wt"), "Float(32, 10)");

  auto bad = Parse(R"IR(graph(%x : Float(8, 31), %w : Float(10, 32)):
  %none : NoneType = prim::Constant()
  %l : Tensor = aten::linear(%x, %w, %none)
  return (%l))IR");
  ASSERT_NE(bad, nullptr);
  absl::StatusOr<bool> r = RunPass(*bad);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::StrContains(r.status().message(), "aten::linear node %l")) << r.status();
  EXPECT_TRUE(absl::StrContains(r.status().message(), "31 vs 32")) << r.status();
}

TEST(ShapePropagationTest, ConvPoolFlattenCat) {
  auto g = Parse(R"IR(graph(%x : Float(2, 3, 32, 32), %w : Float(16, 3, 3, 3), %b : Float(16), %dw : Float(16, 1, 3, 3)):
  %s1 : int[] = prim::Constant[value=[1, 1]]()
  %s2 : int[] = prim::Constant[value=[2, 2]]()
  %p0 : int[] = prim::Constant[value=[0, 0]]()
  %one : int = prim::Constant[value=1]()
  %g16 : int = prim::Constant[value=16]()
  %neg : int = prim::Constant[value=-1]()
  %false : bool = prim::Constant[value=0]()
  %true : bool = prim::Constant[value=1]()
  %c : Tensor = aten::conv2d(%x, %w, %b, %s2, %s1, %s1, %one)
  %d : Tensor = aten::conv2d(%c, %dw, %b, %s1, %s1, %s1, %g16)
  %k3 : int[] = prim::Constant[value=[3, 3]]()
  %mp : Tensor = aten::max_pool2d(%d, %k3, %s2, %p0, %s1, %false)
  %mpc : Tensor = aten::max_pool2d(%d, %k3, %s2, %p0, %s1, %true)
  %ap : Tensor = aten::adaptive_avg_pool2d(%mp, %s1)
  %f : Tensor = aten::flatten(%ap, %one, %neg)
  %list : Tensor[] = prim::ListConstruct(%mp, %mp)
  %cat : Tensor = aten::cat(%list, %one)
  %conv_ : Tensor = aten::_convolution(%x, %w, %b, %s2, %s1, %s1, %false, %p0, %one, %false, %false, %true, %true)
  return (%f, %mpc, %cat, %conv_))IR");
  ASSERT_NE(g, nullptr);
  ASSERT_TRUE(*RunPass(*g));
  EXPECT_EQ(TypeOf(*g, "c"), "Float(2, 16, 16, 16)");
  EXPECT_EQ(TypeOf(*g, "d"), "Float(2, 16, 16, 16)");
  EXPECT_EQ(TypeOf(*g, "mp"), "Float(2, 16, 7, 7)");
  EXPECT_EQ(TypeOf(*g, "mpc"), "Float(2, 16, 8, 8)");  // ceil_mode
  EXPECT_EQ(TypeOf(*g, "ap"), "Float(2, 16, 1, 1)");
  EXPECT_EQ(TypeOf(*g, "f"), "Float(2, 16)");
  EXPECT_EQ(TypeOf(*g, "cat"), "Float(2, 32, 7, 7)");
  EXPECT_EQ(TypeOf(*g, "conv_"), "Float(2, 16, 16, 16)");
}

TEST(ShapePropagationTest, CatMismatchIsAnError) {
  auto g = Parse(R"IR(graph(%x : Float(2, 3), %y : Float(4, 5)):
  %zero : int = prim::Constant[value=0]()
  %list : Tensor[] = prim::ListConstruct(%x, %y)
  %cat : Tensor = aten::cat(%list, %zero)
  return (%cat))IR");
  ASSERT_NE(g, nullptr);
  absl::StatusOr<bool> r = RunPass(*g);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::StrContains(r.status().message(), "aten::cat node %cat")) << r.status();
}

TEST(ShapePropagationTest, ViewReshapeReductionsSoftmax) {
  auto g = Parse(R"IR(graph(%x : Float(4, 6, 8)):
  %neg : int = prim::Constant[value=-1]()
  %zero : int = prim::Constant[value=0]()
  %one : int = prim::Constant[value=1]()
  %true : bool = prim::Constant[value=1]()
  %false : bool = prim::Constant[value=0]()
  %none : NoneType = prim::Constant()
  %n : int = aten::size(%x, %zero)
  %shape : int[] = prim::ListConstruct(%n, %neg)
  %v : Tensor = aten::view(%x, %shape)
  %shape2 : int[] = prim::Constant[value=[-1, 12]]()
  %r : Tensor = aten::reshape(%x, %shape2)
  %dims : int[] = prim::ListConstruct(%neg)
  %m : Tensor = aten::mean(%x, %dims, %true, %none)
  %s : Tensor = aten::sum(%x, %dims, %false, %none)
  %sm : Tensor = aten::softmax(%x, %neg, %none)
  %tr : Tensor = aten::transpose(%x, %zero, %neg)
  %len : int = aten::len(%shape)
  %gt : bool = aten::gt(%len, %one)
  return (%v, %r, %m, %s, %sm, %tr, %gt))IR");
  ASSERT_NE(g, nullptr);
  ASSERT_TRUE(*RunPass(*g));
  EXPECT_EQ(TypeOf(*g, "v"), "Float(4, 48)");
  EXPECT_EQ(TypeOf(*g, "r"), "Float(16, 12)");
  EXPECT_EQ(TypeOf(*g, "m"), "Float(4, 6, 1)");
  EXPECT_EQ(TypeOf(*g, "s"), "Float(4, 6)");
  EXPECT_EQ(TypeOf(*g, "sm"), "Float(4, 6, 8)");
  EXPECT_EQ(TypeOf(*g, "tr"), "Float(8, 6, 4)");
  EXPECT_EQ(TypeOf(*g, "gt"), "bool");

  auto bad = Parse(R"IR(graph(%x : Float(4, 6)):
  %shape : int[] = prim::Constant[value=[5, -1]]()
  %v : Tensor = aten::view(%x, %shape)
  return (%v))IR");
  ASSERT_NE(bad, nullptr);
  EXPECT_FALSE(RunPass(*bad).ok());
}

TEST(ShapePropagationTest, IfJoinsBranches) {
  auto g = Parse(R"IR(graph(%c : bool, %x : Float(2, 3), %y : Float(2, 5)):
  %a : Tensor, %b : Tensor = prim::If(%c)
    block0():
      %r : Tensor = aten::relu(%x)
      -> (%r, %x)
    block1():
      %t : Tensor = aten::tanh(%y)
      -> (%t, %x)
  return (%a, %b))IR");
  ASSERT_NE(g, nullptr);
  ASSERT_TRUE(*RunPass(*g));
  EXPECT_EQ(TypeOf(*g, "r"), "Float(2, 3)");
  EXPECT_EQ(TypeOf(*g, "t"), "Float(2, 5)");
  EXPECT_EQ(TypeOf(*g, "a"), "Float(2, *)");
  EXPECT_EQ(TypeOf(*g, "b"), "Float(2, 3)");
}

TEST(ShapePropagationTest, LoopReachesFixedPoint) {
  auto g = Parse(R"IR(graph(%x : Float(2, 3), %n : int):
  %true : bool = prim::Constant[value=1]()
  %zero : int = prim::Constant[value=0]()
  %one : int = prim::Constant[value=1]()
  %same : Tensor, %grow : Tensor, %rank : Tensor = prim::Loop(%n, %true, %x, %x, %x)
    block0(%i : int, %s : Tensor, %g : Tensor, %k : Tensor):
      %s2 : Tensor = aten::add(%s, %s, %one)
      %l : Tensor[] = prim::ListConstruct(%g, %g)
      %g2 : Tensor = aten::cat(%l, %zero)
      %k2 : Tensor = aten::unsqueeze(%k, %zero)
      -> (%true, %s2, %g2, %k2)
  return (%same, %grow, %rank))IR");
  ASSERT_NE(g, nullptr);
  ASSERT_TRUE(*RunPass(*g));
  EXPECT_EQ(TypeOf(*g, "same"), "Float(2, 3)");
  EXPECT_EQ(TypeOf(*g, "s"), "Float(2, 3)");
  EXPECT_EQ(TypeOf(*g, "grow"), "Float(*, 3)");
  EXPECT_EQ(TypeOf(*g, "g2"), "Float(*, 3)");
  EXPECT_EQ(TypeOf(*g, "rank"), "FloatTensor");  // rank changes: dtype only
  EXPECT_FALSE(*RunPass(*g));
}

TEST(ShapePropagationTest, ContradictingAnnotationIsAnError) {
  auto g = Parse(R"IR(graph(%x : Float(2, 3)):
  %r : Float(2, 4) = aten::relu(%x)
  return (%r))IR");
  ASSERT_NE(g, nullptr);
  absl::StatusOr<bool> r = RunPass(*g);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::StrContains(r.status().message(), "aten::relu node %r")) << r.status();
}

TEST(ShapePropagationTest, ShapeChangingInplaceOpLeavesGraphAlone) {
  auto g = Parse(R"IR(graph(%x : Float(2, 3)):
  %zero : int = prim::Constant[value=0]()
  %r : Tensor = aten::relu(%x)
  %u : Tensor = aten::unsqueeze_(%r, %zero)
  return (%r))IR");
  ASSERT_NE(g, nullptr);
  EXPECT_FALSE(*RunPass(*g));
  EXPECT_EQ(TypeOf(*g, "r"), "Tensor");
}

// Traced graphs carry PyTorch's own types: erase them and infer them again
// from the graph inputs.
TEST(ShapePropagationTest, ReinfersTracedCorpusTypes) {
  for (const char* name : {"mlp.traced.graph.txt", "small_cnn.traced.graph.txt",
                           "ln_gelu_softmax.traced.graph.txt", "resnet18.traced.graph.txt",
                           "mobilenet_v2.traced.graph.txt", "squeezenet1_1.traced.graph.txt"}) {
    SCOPED_TRACE(name);
    std::string text = ReadCorpus(name);
    ASSERT_FALSE(text.empty());
    auto g = Parse(text);
    ASSERT_NE(g, nullptr);
    std::vector<std::pair<ir::Value*, ir::TypePtr>> expected;
    size_t erased = 0;
    for (ir::Node* n : g->nodes()) {
      if (n->kind() == ir::sym::kConstant) continue;
      for (ir::Value* out : n->outputs()) {
        if (!out->type()->is_tensor()) continue;
        expected.emplace_back(out, out->type());
        out->setType(ir::Type::Tensor());
        ++erased;
      }
    }
    ASSERT_GT(erased, 0u);
    absl::StatusOr<bool> changed = RunPass(*g);
    ASSERT_TRUE(changed.ok()) << changed.status();
    EXPECT_TRUE(*changed);
    size_t complete = 0;
    for (const auto& [v, want] : expected) {
      const ir::TensorInfo& got = v->type()->tensor();
      const ir::TensorInfo& w = want->tensor();
      if (!w.HasCompleteSizes() || !w.dtype) continue;
      EXPECT_EQ(got.dtype, w.dtype) << v->debugName();
      EXPECT_EQ(got.sizes, w.sizes) << v->debugName();
      ++complete;
    }
    EXPECT_GT(complete, 0u);
  }
}

// Frozen graphs have an untyped input: give it a type and follow it to the
// logits, through the If that checks the rank.
TEST(ShapePropagationTest, FrozenCorpusFromTypedInput) {
  for (const char* name : {"resnet18.frozen.parseable.graph.txt",
                           "mobilenet_v2.frozen.parseable.graph.txt",
                           "squeezenet1_1.frozen.parseable.graph.txt"}) {
    SCOPED_TRACE(name);
    auto g = Parse(ReadCorpus(name));
    ASSERT_NE(g, nullptr);
    ir::TensorInfo in;
    in.dtype = DType::kFloat32;
    in.sizes = std::vector<std::optional<int64_t>>{1, 3, 224, 224};
    g->inputs().back()->setType(ir::Type::TensorWith(in));
    absl::StatusOr<bool> changed = RunPass(*g);
    ASSERT_TRUE(changed.ok()) << changed.status();
    EXPECT_TRUE(*changed);
    EXPECT_EQ(g->outputs()[0]->type()->ToString(), "Float(1, 1000, device=cpu)");
  }
}

TEST(ShapePropagationTest, NestingDepthIsCapped) {
  for (int depth : {300, 600}) {
    ir::Graph g;
    ir::Value* c = g.addInput("c");
    ir::Block* b = g.block();
    for (int i = 0; i < depth; ++i) {
      ir::Node* n = b->appendNode(g.create(ir::sym::kIf, {c}, 0));
      b = n->addBlock();
      n->addBlock();
    }
    PassStatistics stats;
    absl::StatusOr<bool> r = PropagateShapes(g, stats);
    EXPECT_EQ(r.ok(), depth < 512) << depth;
  }
}

}  // namespace
}  // namespace kiln::passes
