#include "ir/text_parser.h"

#include <cmath>
#include <limits>
#include <string>

#include "gtest/gtest.h"
#include "ir/text_printer.h"

namespace kiln::ir {
namespace {

std::unique_ptr<Graph> MustParse(const std::string& text) {
  auto g = ParseGraph(text);
  EXPECT_TRUE(g.ok()) << g.status();
  return g.ok() ? *std::move(g) : nullptr;
}

const Node* FirstNode(const Graph& g) { return g.block()->front(); }

TEST(TextParserTest, ParsesValuesTypesAndNames) {
  auto g = MustParse(
      "graph(%x.1 : Tensor,\n"
      "      %n : int):\n"
      "  %3948 : int = prim::Constant[value=2]()\n"
      "  %y : Tensor = aten::add(%x.1, %x.1, %3948) # a.py:1:2\n"
      "  return (%y, %n)\n");
  ASSERT_NE(g, nullptr);
  ASSERT_EQ(g->inputs().size(), 2);
  EXPECT_EQ(g->inputs()[0]->debugName(), "x.1");
  EXPECT_EQ(g->inputs()[1]->type()->kind(), TypeKind::kInt);
  const Node* c = FirstNode(*g);
  EXPECT_EQ(c->kind(), sym::kConstant);
  EXPECT_EQ(c->i(sym::kValue), 2);
  EXPECT_EQ(c->output()->debugName(), "3948");
  const Node* add = c->next();
  EXPECT_EQ(add->kind(), Symbol::FromQualString("aten::add"));
  EXPECT_EQ(add->input(2), c->output());
  EXPECT_EQ(add->sourceLocation(), "a.py:1:2");
  EXPECT_EQ(g->outputs().size(), 2);
  // Fresh values never take a number that is already a name.
  Value* fresh = g->addInput();
  EXPECT_GT(fresh->unique(), 3948u);
}

TEST(TextParserTest, ParsesTensorTypeRefinements) {
  auto g = MustParse(
      "graph(%a : Float(1, 3, strides=[3, 1], requires_grad=0, device=cpu),\n"
      "      %b : Float(*, *),\n"
      "      %c : Long(requires_grad=0, device=cpu),\n"
      "      %d : FloatTensor,\n"
      "      %e : Tensor(2, *),\n"
      "      %f : Double(2, strides=[1], device=cuda:1)):\n"
      "  return (%a)\n");
  ASSERT_NE(g, nullptr);
  const TensorInfo& a = g->inputs()[0]->type()->tensor();
  EXPECT_EQ(a.dtype, DType::kFloat32);
  ASSERT_TRUE(a.HasCompleteSizes());
  EXPECT_EQ(a.ConcreteSizes(), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(a.strides, (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(a.requires_grad, false);
  EXPECT_EQ(a.device->type, "cpu");
  const TensorInfo& b = g->inputs()[1]->type()->tensor();
  ASSERT_EQ(b.rank(), 2u);
  EXPECT_FALSE(b.HasCompleteSizes());
  const TensorInfo& c = g->inputs()[2]->type()->tensor();
  EXPECT_EQ(c.rank(), 0u);
  EXPECT_EQ(c.dtype, DType::kInt64);
  EXPECT_FALSE(g->inputs()[3]->type()->tensor().rank().has_value());
  EXPECT_FALSE(g->inputs()[4]->type()->tensor().dtype.has_value());
  EXPECT_EQ(g->inputs()[4]->type()->tensor().rank(), 2u);
  EXPECT_EQ(g->inputs()[5]->type()->tensor().device->index, 1);
}

TEST(TextParserTest, ParsesContainerAndClassTypes) {
  auto g = MustParse(
      "graph(%self : __torch__.models.___torch_mangle_545.SmallCNN,\n"
      "      %l : int[],\n"
      "      %t : Tensor[],\n"
      "      %o : float?,\n"
      "      %tu : (int, Tensor),\n"
      "      %none : NoneType,\n"
      "      %s : str,\n"
      "      %dev : Device,\n"
      "      %d : Dict(str, Tensor),\n"
      "      %nested : (int, float?)[]?):\n"
      "  return (%l)\n");
  ASSERT_NE(g, nullptr);
  auto in = g->inputs();
  EXPECT_EQ(in[0]->type()->kind(), TypeKind::kClass);
  EXPECT_EQ(in[0]->type()->class_name(), "__torch__.models.___torch_mangle_545.SmallCNN");
  EXPECT_EQ(in[1]->type()->ToString(), "int[]");
  EXPECT_EQ(in[2]->type()->ToString(), "Tensor[]");
  EXPECT_EQ(in[3]->type()->kind(), TypeKind::kOptional);
  EXPECT_EQ(in[4]->type()->ToString(), "(int, Tensor)");
  EXPECT_EQ(in[5]->type()->kind(), TypeKind::kNone);
  EXPECT_EQ(in[6]->type()->kind(), TypeKind::kStr);
  EXPECT_EQ(in[7]->type()->kind(), TypeKind::kDevice);
  EXPECT_EQ(in[8]->type()->ToString(), "Dict(str, Tensor)");
  EXPECT_EQ(in[9]->type()->ToString(), "(int, float?)[]?");
}

TEST(TextParserTest, ParsesAttributeKinds) {
  auto g = MustParse(
      "graph():\n"
      "  %i : int = prim::Constant[value=-3]()\n"
      "  %b : bool = prim::Constant[value=0]()\n"
      "  %f : float = prim::Constant[value=1.]()\n"
      "  %e : float = prim::Constant[value=1.0000000000000001e-05]()\n"
      "  %ni : float = prim::Constant[value=-inf]()\n"
      "  %nan : float = prim::Constant[value=nan]()\n"
      "  %s : str = prim::Constant[value=\"a\\\"b\\n\\001\"]()\n"
      "  %is : int[] = prim::Constant[value=[0, -1]]()\n"
      "  %fs : float[] = prim::Constant[value=[1., 2.5]]()\n"
      "  %ss : str[] = prim::Constant[value=[\"x\", \"y\"]]()\n"
      "  %empty : int[] = prim::Constant[value=[]]()\n"
      "  %emptyf : float[] = prim::Constant[value=[]]()\n"
      "  %ty : int = prim::foo[t=int, tys=[int, Tensor]]()\n"
      "  return (%i)\n");
  ASSERT_NE(g, nullptr);
  const Node* n = FirstNode(*g);
  EXPECT_EQ(n->i(sym::kValue), -3);
  n = n->next();
  EXPECT_EQ(n->kindOf(sym::kValue), AttributeKind::i);  // bool stays int
  n = n->next();
  EXPECT_EQ(n->f(sym::kValue), 1.0);
  n = n->next();
  EXPECT_EQ(n->f(sym::kValue), 1.0000000000000001e-05);
  n = n->next();
  EXPECT_EQ(n->f(sym::kValue), -INFINITY);
  n = n->next();
  EXPECT_TRUE(std::isnan(n->f(sym::kValue)));
  n = n->next();
  EXPECT_EQ(n->s(sym::kValue), std::string("a\"b\n\001"));
  n = n->next();
  EXPECT_EQ(n->is(sym::kValue), (std::vector<int64_t>{0, -1}));
  n = n->next();
  EXPECT_EQ(n->fs(sym::kValue), (std::vector<double>{1.0, 2.5}));
  n = n->next();
  EXPECT_EQ(n->ss(sym::kValue), (std::vector<std::string>{"x", "y"}));
  n = n->next();
  EXPECT_EQ(n->kindOf(sym::kValue), AttributeKind::is);
  n = n->next();
  EXPECT_EQ(n->kindOf(sym::kValue), AttributeKind::fs);
  n = n->next();
  EXPECT_EQ(n->ty(Symbol::Attr("t"))->kind(), TypeKind::kInt);
  EXPECT_EQ(n->kindOf(Symbol::Attr("tys")), AttributeKind::tys);
}

TEST(TextParserTest, ParsesTensorConstants) {
  auto g = MustParse(
      "graph():\n"
      "  %w : Float(3, 2, strides=[1, 3], requires_grad=0, device=cpu) = "
      "prim::Constant[value=<Tensor>]()\n"
      "  %u : Tensor = prim::Constant[value=<Tensor>]()\n"
      "  %k : Long(requires_grad=0, device=cpu) = prim::Constant[value={4}]()\n"
      "  %h : Double(1, strides=[1], requires_grad=0, device=cpu) = prim::Constant[value={-2.5}]()\n"
      "  %v : Long(3, strides=[1], requires_grad=0, device=cpu) = "
      "prim::Constant[value= 1  2 -3 [ CPULongType{3} ]]()\n"
      "  return (%w)\n");
  ASSERT_NE(g, nullptr);
  const Node* n = FirstNode(*g);
  const Tensor& w = n->t(sym::kValue);
  EXPECT_TRUE(w.is_placeholder());
  EXPECT_EQ(w.sizes(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(w.strides(), (std::vector<int64_t>{1, 3}));
  n = n->next();
  EXPECT_TRUE(n->t(sym::kValue).is_placeholder());
  EXPECT_EQ(n->t(sym::kValue).dtype(), DType::kFloat32);
  n = n->next();
  EXPECT_EQ(n->t(sym::kValue).dtype(), DType::kInt64);
  EXPECT_EQ(n->t(sym::kValue).dim(), 0);
  EXPECT_EQ(n->t(sym::kValue).GetInt(0), 4);
  n = n->next();
  EXPECT_EQ(n->t(sym::kValue).dtype(), DType::kFloat64);
  EXPECT_EQ(n->t(sym::kValue).sizes(), (std::vector<int64_t>{1}));
  EXPECT_EQ(n->t(sym::kValue).GetDouble(0), -2.5);
  n = n->next();
  const Tensor& v = n->t(sym::kValue);
  ASSERT_EQ(v.sizes(), (std::vector<int64_t>{3}));
  EXPECT_EQ(v.GetInt(0), 1);
  EXPECT_EQ(v.GetInt(2), -3);
}

// PyTorch prints INT64_MAX for open slice ends; `kiln import -o g.txt`
// wrote it and `kiln opt g.txt` refused it (through a double it rounded past
// int64's range). Int32 keeps its range check.
TEST(TextParserTest, SingleElementLongConstantsSpanInt64) {
  auto g = MustParse(
      "graph():\n"
      "  %a : Long(requires_grad=0, device=cpu) = prim::Constant[value={9223372036854775807}]()\n"
      "  %b : Long(requires_grad=0, device=cpu) = prim::Constant[value={-9223372036854775808}]()\n"
      "  return (%a, %b)\n");
  ASSERT_NE(g, nullptr);
  const Node* n = FirstNode(*g);
  EXPECT_EQ(n->t(sym::kValue).GetInt(0), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(n->next()->t(sym::kValue).GetInt(0), std::numeric_limits<int64_t>::min());
  EXPECT_FALSE(ParseGraph("graph():\n"
                          "  %a : Int(requires_grad=0, device=cpu) = prim::Constant[value={2147483648}]()\n"
                          "  return (%a)\n")
                   .ok());
}

TEST(TextParserTest, ParsesBlocksAndZeroOutputNodes) {
  auto g = MustParse(
      "# a leading comment line\n"
      "graph(%c : bool,\n"
      "      %x : Tensor):\n"
      "  %msg : str = prim::Constant[value=\"boom\"]()\n"
      "   = prim::If(%c) # <string>:5:2\n"
      "    block0():\n"
      "      -> ()\n"
      "    block1():\n"
      "      prim::RaiseException(%msg)\n"
      "      -> ()\n"
      "  %n : int = prim::Constant[value=3]()\n"
      "  %r : Tensor = prim::Loop(%n, %c, %x)\n"
      "    block0(%i : int, %acc : Tensor):\n"
      "      %next : Tensor = aten::mul(%acc, %x)\n"
      "      -> (%c, %next)\n"
      "  return (%r)\n");
  ASSERT_NE(g, nullptr);
  const Node* if_node = FirstNode(*g)->next();
  EXPECT_EQ(if_node->kind(), sym::kIf);
  EXPECT_EQ(if_node->outputs().size(), 0);
  ASSERT_EQ(if_node->blocks().size(), 2);
  EXPECT_EQ(if_node->sourceLocation(), "<string>:5:2");
  EXPECT_EQ(if_node->blocks()[1]->front()->kind(), sym::kRaiseException);
  const Node* loop = if_node->next()->next();
  ASSERT_EQ(loop->blocks().size(), 1);
  EXPECT_EQ(loop->blocks()[0]->inputs().size(), 2);
  EXPECT_EQ(loop->blocks()[0]->outputs()[1]->debugName(), "next");
  EXPECT_EQ(CountNodes(g->block()), 6u);
}

TEST(TextParserTest, UntypedValuesAreTensorsAndScopesAreKept) {
  auto g = MustParse(
      "graph(%x):\n"
      "  %y = aten::relu(%x), scope: layer1/relu # f.py:3:4\n"
      "  return (%y)\n");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->inputs()[0]->type()->kind(), TypeKind::kTensor);
  const Node* n = FirstNode(*g);
  EXPECT_EQ(n->output()->type()->kind(), TypeKind::kTensor);
  EXPECT_EQ(n->scope(), "layer1/relu");
  EXPECT_EQ(n->sourceLocation(), "f.py:3:4");
  EXPECT_EQ(PrintNode(*n), "%y : Tensor = aten::relu(%x), scope: layer1/relu # f.py:3:4");
}

// Malformed inputs: each gives InvalidArgument with the exact position.
struct BadInput {
  const char* text;
  const char* message;
};

class TextParserErrorTest : public testing::TestWithParam<BadInput> {};

TEST_P(TextParserErrorTest, ReportsPosition) {
  auto g = ParseGraph(GetParam().text);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(g.status().message()), GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    Malformed, TextParserErrorTest,
    testing::Values(
        BadInput{"", "line 1, column 1: expected 'graph(' but found end of input"},
        BadInput{"graph(%x : Tensor:\n  return (%x)\n",
                 "line 1, column 18: expected ',' or ')' but found ':'"},
        BadInput{"graph(%x):\n  %y : Tensor = aten::relu(%z)\n  return (%y)\n",
                 "line 2, column 28: cannot find a variable named '%z'"},
        BadInput{"graph(%x):\n  %y = aten::relu(%y)\n  return (%y)\n",
                 "line 2, column 19: cannot find a variable named '%y'"},
        BadInput{"graph(%x):\n  %x = aten::relu(%x)\n  return (%x)\n",
                 "line 2, column 3: redefinition of '%x'"},
        BadInput{"graph(%x, %x):\n  return (%x)\n", "line 1, column 11: redefinition of '%x'"},
        BadInput{"graph(%x):\n  %y : Tensor aten::relu(%x)\n  return (%y)\n",
                 "line 2, column 15: expected ',' or '=' but found 'aten'"},
        BadInput{"graph(%x):\n  %y : Tensor = aten:relu(%x)\n  return (%y)\n",
                 "line 2, column 21: expected '::' but found ':'"},
        BadInput{"graph(%x):\n  %y : Tensr = aten::relu(%x)\n  return (%y)\n",
                 "line 2, column 8: unknown type 'Tensr'"},
        BadInput{"graph(%x):\n  %y : Tensor = aten::relu(%x\n  return (%y)\n",
                 "line 2, column 30: expected ',' or ')' but found end of line"},
        BadInput{"graph(%x):\n  %y : int = prim::Constant[value=\"abc]()\n  return (%y)\n",
                 "line 2, column 35: unterminated string literal"},
        BadInput{"graph(%x):\n  %y : int = prim::Constant[value=1, value=2]()\n  return (%y)\n",
                 "line 2, column 38: duplicate attribute 'value'"},
        BadInput{"graph(%x):\n  %y : int[] = prim::Constant[value=[1, \"a\"]]()\n  return (%y)\n",
                 "line 2, column 41: list elements must all have the same kind"},
        BadInput{"graph(%x):\n  %y : int = prim::Constant[value=99999999999999999999]()\n"
                 "  return (%y)\n",
                 "line 2, column 35: integer '99999999999999999999' is out of range"},
        BadInput{"graph(%x):\n  %y : Tensor = aten::relu(%x) junk\n  return (%y)\n",
                 "line 2, column 32: expected end of line but found 'junk'"},
        BadInput{"graph(%x):\n  %y : Tensor = aten::relu(%x)\n",
                 "line 3, column 1: expected a node or 'return' but found end of input"},
        BadInput{"graph(%x):\n  %y : Tensor = aten::relu(%x)\n  return (%y)\ntrailing\n",
                 "line 4, column 1: expected end of input but found 'trailing'"},
        BadInput{"graph(%c : bool):\n   = prim::If(%c)\n    block0():\n"
                 "      %a : int = prim::Constant[value=1]()\n      -> ()\n"
                 "  return (%a)\n",
                 "line 6, column 11: '%a' is defined in another block and not in scope here"},
        BadInput{"graph(%c : bool):\n  %r : int = prim::If(%c)\n    block0():\n"
                 "      -> (%r)\n  return (%r)\n",
                 "line 4, column 11: cannot find a variable named '%r'"},
        BadInput{"graph(%c : bool):\n   = prim::If(%c)\n    block0():\n  return (%c)\n",
                 "line 4, column 3: expected a node or '->' but found 'return'"},
        BadInput{"graph(%x : Float(2, strides=[1, 1])):\n  return (%x)\n",
                 "line 1, column 21: strides must have one entry per dimension"},
        BadInput{"graph(%x : Float(2)):\n  %w : Float(2) = prim::Constant[value= 1.0 [ CPUFloatType{2} ]]()\n"
                 "  return (%w)\n",
                 "line 2, column 47: tensor literal does not match its shape"},
        BadInput{"graph(%x):\n  %y : int = prim::Constant[value={}]()\n  return (%y)\n",
                 "line 2, column 36: expected a number but found '}'"},
        BadInput{"graph(%x):\n  %y : Tensor = aten::relu(%)\n  return (%y)\n",
                 "line 2, column 29: expected a value name but found ')'"},
        BadInput{"graph():\n  %w : Float(4611686018427387904, 4, 4) = "
                 "prim::Constant[value=<Tensor>]()\n  return (%w)\n",
                 "line 2, column 64: tensor shape is too large"},
        BadInput{"graph():\n  %w : Float(2) = prim::Constant[value=Columns 1 to 2 [ CPUFloatType{2} ]]()\n"
                 "  return (%w)\n",
                 "line 2, column 40: inline tensor literals split into columns are not supported"}));

TEST(TextParserTest, DeepNestingIsAnErrorNotACrash) {
  std::string text = "graph(%c : bool):\n";
  const int depth = 300;
  for (int i = 0; i < depth; ++i) text += " = prim::If(%c)\n block0():\n";
  for (int i = 0; i < depth; ++i) text += " -> ()\n";
  text += "  return (%c)\n";
  auto g = ParseGraph(text);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("nested too deeply"), absl::string_view::npos)
      << g.status();

  std::string type = "int";
  for (int i = 0; i < 1000; ++i) type = "(" + type + ")";
  auto g2 = ParseGraph("graph(%x : " + type + "):\n  return (%x)\n");
  ASSERT_FALSE(g2.ok());
  std::string list_type = "int";
  for (int i = 0; i < 1000; ++i) list_type += "[]";
  auto g3 = ParseGraph("graph(%x : " + list_type + "):\n  return (%x)\n");
  ASSERT_FALSE(g3.ok());
}

TEST(TextParserTest, ModerateNestingParses) {
  std::string text = "graph(%c : bool):\n";
  const int depth = 50;
  for (int i = 0; i < depth; ++i) text += " = prim::If(%c)\n block0():\n";
  for (int i = 0; i < depth; ++i) text += " -> ()\n";
  text += "  return (%c)\n";
  auto g = ParseGraph(text);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(CountNodes((*g)->block()), 50u);
}

TEST(TextParserTest, TruncatedCorpusPrefixesNeverCrash) {
  const std::string text =
      "graph(%self : __torch__.M,\n"
      "      %x.1 : Float(1, 3, strides=[3, 1], requires_grad=0, device=cpu)):\n"
      "  %b : Float(2, strides=[1], requires_grad=0, device=cpu) = "
      "prim::Constant[value=0.01 *  1.6205  2.1970 [ CPUFloatType{2} ]]()\n"
      "  %k : int[] = prim::Constant[value=[1, 2]]() # x.py:1:2\n"
      "   = prim::If(%k)\n    block0():\n      -> ()\n    block1():\n      -> ()\n"
      "  return (%x.1)\n";
  ASSERT_TRUE(ParseGraph(text).ok());
  for (size_t len = 0; len + 1 < text.size(); ++len) {
    auto g = ParseGraph(absl::string_view(text).substr(0, len));
    EXPECT_FALSE(g.ok()) << len;
  }
}

}  // namespace
}  // namespace kiln::ir
