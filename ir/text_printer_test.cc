#include "ir/text_printer.h"

#include <cmath>
#include <limits>
#include <string>

#include "gtest/gtest.h"
#include "ir/tensor_text.h"

namespace kiln::ir {
namespace {

std::string Repr(double d) {
  std::string s;
  AppendDoubleRepr(d, &s);
  return s;
}

std::string TensorText(const Tensor& t) {
  std::string s;
  AppendTensorAttribute(t, &s);
  return s;
}

Tensor FloatTensor(std::vector<int64_t> sizes, const std::vector<float>& values) {
  Tensor t = Tensor::Empty(DType::kFloat32, std::move(sizes));
  for (size_t i = 0; i < values.size(); ++i) t.data<float>()[i] = values[i];
  return t;
}

TEST(TextPrinterTest, DoubleReprFollowsIValue) {
  EXPECT_EQ(Repr(1.0), "1.");
  EXPECT_EQ(Repr(0.0), "0.");
  EXPECT_EQ(Repr(-0.0), "-0.");
  EXPECT_EQ(Repr(-3.0), "-3.");
  EXPECT_EQ(Repr(0.1), "0.10000000000000001");
  EXPECT_EQ(Repr(1e-05), "1.0000000000000001e-05");
  EXPECT_EQ(Repr(1e10), "10000000000");
  EXPECT_EQ(Repr(9999999999.0), "9999999999.");
  EXPECT_EQ(Repr(1e20), "1e+20");
  EXPECT_EQ(Repr(2.5), "2.5");
  EXPECT_EQ(Repr(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(Repr(-std::numeric_limits<double>::infinity()), "-inf");
  EXPECT_EQ(Repr(std::nan("")), "nan");
  EXPECT_EQ(Repr(5e-324), "4.9406564584124654e-324");
}

TEST(TextPrinterTest, TensorAttributeForms) {
  EXPECT_EQ(TensorText(Tensor::Placeholder(DType::kFloat32, {2, 3})), "<Tensor>");
  EXPECT_EQ(TensorText(Tensor::ScalarDouble(3.5, DType::kFloat32)), "{3.5}");
  EXPECT_EQ(TensorText(Tensor::ScalarDouble(0.1, DType::kFloat32)), "{0.1}");
  EXPECT_EQ(TensorText(Tensor::ScalarInt(4)), "{4}");
  EXPECT_EQ(TensorText(Tensor::ScalarInt(1, DType::kBool)), "{1}");
  EXPECT_EQ(TensorText(Tensor::Empty(DType::kFloat32, {11})), "<Tensor>");
  // small_cnn.frozen's fc.bias.
  EXPECT_EQ(TensorText(FloatTensor({10}, {0.016205f, 0.021970f, -0.007703f, -0.011804f, 0.009670f,
                                          0.019517f, -0.001443f, 0.018629f, -0.005549f,
                                          -0.021730f})),
            "0.01 *  1.6205  2.1970 -0.7703 -1.1804  0.9670  1.9517 -0.1443  1.8629 -0.5549 "
            "-2.1730 [ CPUFloatType{10} ]");
  EXPECT_EQ(TensorText(FloatTensor({3}, {1, 2, -3})), " 1  2 -3 [ CPUFloatType{3} ]");
  EXPECT_EQ(TensorText(FloatTensor({2}, {0.5f, 1.25f})), " 0.5000  1.2500 [ CPUFloatType{2} ]");
  EXPECT_EQ(TensorText(FloatTensor({2, 2}, {1, 2, 3, 4})), " 1  2  3  4 [ CPUFloatType{2,2} ]");
  EXPECT_EQ(TensorText(Tensor::Empty(DType::kFloat32, {0})), "[ CPUFloatType{0} ]");
}

class PrinterGraphTest : public testing::Test {
 protected:
  Node* Append(const char* kind, std::vector<Value*> inputs, size_t outputs = 1) {
    Node* n = g_.create(Symbol::FromQualString(kind), inputs, outputs);
    g_.block()->appendNode(n);
    return n;
  }
  Graph g_;
};

TEST_F(PrinterGraphTest, HeaderNodesAndReturn) {
  Value* x = g_.addInput("x");
  Value* n = g_.addInput("n");
  n->setType(Type::Int());
  Node* relu = Append("aten::relu", {x});
  relu->output()->setDebugName("y");
  g_.registerOutput(relu->output());
  g_.registerOutput(n);
  EXPECT_EQ(PrintGraph(g_),
            "graph(%x : Tensor,\n"
            "      %n : int):\n"
            "  %y : Tensor = aten::relu(%x)\n"
            "  return (%y, %n)\n");
}

TEST_F(PrinterGraphTest, UnnamedValuesPrintTheirNumbers) {
  Value* x = g_.addInput();
  Node* a = Append("aten::neg", {x});
  Node* b = Append("aten::add", {a->output(), x}, 2);
  g_.registerOutput(b->output(1));
  EXPECT_EQ(PrintGraph(g_),
            "graph(%0 : Tensor):\n"
            "  %1 : Tensor = aten::neg(%0)\n"
            "  %2 : Tensor, %3 : Tensor = aten::add(%1, %0)\n"
            "  return (%3)\n");
}

TEST_F(PrinterGraphTest, AttributesOfEveryKind) {
  Node* n = Append("prim::Constant", {}, 1);
  n->output()->setDebugName("c");
  n->i_(Symbol::Attr("i"), -1);
  n->f_(Symbol::Attr("f"), 2.0);
  n->s_(Symbol::Attr("s"), "AssertionError: \"q\"\n\t\\\x01");
  n->is_(Symbol::Attr("is"), {0, 0});
  n->fs_(Symbol::Attr("fs"), {0.5, 1.0});
  n->ss_(Symbol::Attr("ss"), {"a", "b"});
  n->ty_(Symbol::Attr("ty"), Type::List(Type::Float()));
  n->setAttribute(Symbol::Attr("tys"), std::vector<TypePtr>{Type::Int(), Type::Tensor()});
  n->setAttribute(Symbol::Attr("ts"), std::vector<Tensor>{Tensor::ScalarInt(1)});
  n->t_(Symbol::Attr("t"), Tensor::ScalarDouble(1e-5, DType::kFloat64));
  EXPECT_EQ(PrintNode(*n),
            "%c : Tensor = prim::Constant[i=-1, f=2., s=\"AssertionError: \\\"q\\\"\\n\\t\\\\\\001\", "
            "is=[0, 0], fs=[0.5, 1.], ss=[\"a\", \"b\"], ty=float[], tys=[int, Tensor], "
            "ts=[<Tensors>], t={1e-05}]()");
  n->removeAttribute(Symbol::Attr("is"));
  n->is_(Symbol::Attr("empty"), {});
  EXPECT_NE(PrintNode(*n).find("empty=[]"), std::string::npos);
}

TEST_F(PrinterGraphTest, TypesPrintWithToString) {
  TensorInfo info;
  info.dtype = DType::kFloat32;
  info.sizes = std::vector<std::optional<int64_t>>{1, 3};
  info.strides = std::vector<int64_t>{3, 1};
  info.requires_grad = false;
  info.device = Device{};
  Value* a = g_.addInput("a");
  a->setType(Type::TensorWith(info));
  Value* b = g_.addInput("b");
  b->setType(Type::Optional(Type::Tuple({Type::Int(), Type::Str()})));
  Value* self = g_.addInput("self");
  self->setType(Type::Class("__torch__.models.MLP"));
  g_.registerOutput(a);
  EXPECT_EQ(PrintGraph(g_),
            "graph(%a : Float(1, 3, strides=[3, 1], requires_grad=0, device=cpu),\n"
            "      %b : (int, str)?,\n"
            "      %self : __torch__.models.MLP):\n"
            "  return (%a)\n");
}

TEST_F(PrinterGraphTest, BlocksZeroOutputNodesScopesAndLocations) {
  Value* c = g_.addInput("c");
  c->setType(Type::Bool());
  Node* if_node = Append("prim::If", {c}, 0);
  if_node->setSourceLocation("<string>:5:2");
  if_node->addBlock();
  Block* else_block = if_node->addBlock();
  Node* raise = g_.create(sym::kRaiseException, {c}, 0);
  else_block->appendNode(raise);
  Node* loop = Append("prim::Loop", {c, c}, 1);
  loop->output()->setDebugName("out");
  loop->output()->setType(Type::Int());
  loop->setScope("outer/inner");
  Block* body = loop->addBlock();
  Value* i = body->addInput("i");
  i->setType(Type::Int());
  body->registerOutput(c);
  body->registerOutput(i);
  g_.registerOutput(loop->output());
  const std::string expected =
      "graph(%c : bool):\n"
      "   = prim::If(%c) # <string>:5:2\n"
      "    block0():\n"
      "      -> ()\n"
      "    block1():\n"
      "       = prim::RaiseException(%c)\n"
      "      -> ()\n"
      "  %out : int = prim::Loop(%c, %c), scope: outer/inner\n"
      "    block0(%i : int):\n"
      "      -> (%c, %i)\n"
      "  return (%out)\n";
  EXPECT_EQ(PrintGraph(g_), expected);
  PrintOptions no_locations;
  no_locations.source_locations = false;
  EXPECT_EQ(PrintGraph(g_, no_locations).find(" # "), std::string::npos);
  std::string appended = "prefix";
  PrintGraphTo(g_, &appended);
  EXPECT_EQ(appended, "prefix" + expected);
}

}  // namespace
}  // namespace kiln::ir
