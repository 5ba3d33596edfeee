#include "passes/constant_propagation.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "ir/ir.h"
#include "ir/ivalue.h"
#include "ir/op_registry.h"
#include "ir/text_parser.h"
#include "ir/text_printer.h"
#include "ir/verifier.h"
#include "ir/constants.h"
#include "passes/pass_log.h"
#include "passes/pass_registry.h"
#include "support/tensor.h"

namespace kiln::passes {
namespace {

using ir::IValue;

// Printed IR with unnamed values renumbered by first appearance, so that
// expectations do not depend on how many values a pass created.
std::string Renumber(const std::string& text) {
  std::string out;
  std::vector<std::pair<std::string, int>> seen;
  for (size_t i = 0; i < text.size();) {
    if (text[i] == '%' && i + 1 < text.size() && isdigit(static_cast<unsigned char>(text[i + 1]))) {
      size_t j = i + 1;
      while (j < text.size() && (isalnum(static_cast<unsigned char>(text[j])) || text[j] == '_' ||
                                 text[j] == '.')) {
        ++j;
      }
      std::string name = text.substr(i, j - i);
      int id = -1;
      for (const auto& [n, k] : seen) {
        if (n == name) id = k;
      }
      if (id < 0) {
        id = static_cast<int>(seen.size());
        seen.emplace_back(name, id);
      }
      absl::StrAppend(&out, "%", id);
      i = j;
    } else {
      out.push_back(text[i++]);
    }
  }
  return out;
}

std::unique_ptr<ir::Graph> Parse(const std::string& text) {
  auto g = ir::ParseGraph(text);
  EXPECT_TRUE(g.ok()) << g.status();
  return g.ok() ? *std::move(g) : std::make_unique<ir::Graph>();
}

std::string Canonical(const ir::Graph& g) { return Renumber(ir::PrintGraph(g)); }

struct Result {
  bool changed = false;
  std::string text;
  PassStatistics stats;
};

Result RunPass(const std::string& text, const ConstantPropagationOptions& options = {}) {
  std::unique_ptr<ir::Graph> g = Parse(text);
  Result r;
  absl::StatusOr<bool> changed = PropagateConstants(*g, r.stats, options);
  EXPECT_TRUE(changed.ok()) << changed.status();
  r.changed = changed.ok() && *changed;
  ir::VerifyOptions vo;
  vo.ops = options.ops;
  absl::Status verified = ir::Verify(*g, vo);
  EXPECT_TRUE(verified.ok()) << verified << "\n" << ir::PrintGraph(*g);
  r.text = Canonical(*g);
  return r;
}

void ExpectFolds(const std::string& in, const std::string& expected,
                 const ConstantPropagationOptions& options = {}) {
  Result r = RunPass(in, options);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(r.text, Canonical(*Parse(expected)));
}

void ExpectUnchanged(const std::string& in, const ConstantPropagationOptions& options = {}) {
  Result r = RunPass(in, options);
  EXPECT_FALSE(r.changed);
  EXPECT_EQ(r.text, Canonical(*Parse(in)));
}

// ------------------------------------------------------------ constants.h

TEST(ConstantsTest, ReadsEveryAttributeKind) {
  auto g = Parse(R"IR(graph():
  %i : int = prim::Constant[value=3]()
  %b : bool = prim::Constant[value=1]()
  %f : float = prim::Constant[value=1.5]()
  %s : str = prim::Constant[value="hi"]()
  %d : Device = prim::Constant[value="cuda:1"]()
  %n : NoneType = prim::Constant()
  %il : int[] = prim::Constant[value=[1, 2]]()
  %bl : bool[] = prim::Constant[value=[0, 1]]()
  %fl : float[] = prim::Constant[value=[1., 2.5]]()
  %t : Tensor = prim::Constant[value={2}]()
  %x : Tensor = aten::relu(%t)
  return (%i, %b, %f, %s, %d, %n, %il, %bl, %fl, %x)
)IR");
  EXPECT_EQ(*ConstantValue(g->findValue("i")), IValue::Int(3));
  EXPECT_EQ(*ConstantValue(g->findValue("b")), IValue::Bool(true));
  EXPECT_EQ(*ConstantValue(g->findValue("f")), IValue::Double(1.5));
  EXPECT_EQ(*ConstantValue(g->findValue("s")), IValue::String("hi"));
  EXPECT_EQ(*ConstantValue(g->findValue("d")), IValue::FromDevice(ir::Device{"cuda", 1}));
  EXPECT_TRUE(ConstantValue(g->findValue("n"))->isNone());
  EXPECT_EQ(*ConstantValue(g->findValue("il")), IValue::IntList({1, 2}));
  EXPECT_EQ(*ConstantValue(g->findValue("bl")),
            IValue::List({IValue::Bool(false), IValue::Bool(true)}));
  EXPECT_EQ(*ConstantValue(g->findValue("fl")),
            IValue::List({IValue::Double(1.), IValue::Double(2.5)}));
  std::optional<IValue> t = ConstantValue(g->findValue("t"));
  ASSERT_TRUE(t && t->isTensor());
  EXPECT_EQ(t->toTensor().GetInt(0), 2);
  EXPECT_FALSE(ConstantValue(g->findValue("x")));
  EXPECT_TRUE(IsConstant(g->findValue("i")));
  EXPECT_FALSE(IsConstant(g->findValue("x")));
}

TEST(ConstantsTest, InsertConstantRoundTrips) {
  ir::Graph g;
  const std::vector<IValue> values = {
      IValue::None(),
      IValue::Bool(true),
      IValue::Int(-7),
      IValue::Double(0.25),
      IValue::String("s"),
      IValue::FromDevice(ir::Device{"cpu", -1}),
      IValue::IntList({4, 5}),
      IValue::List({IValue::Bool(true)}),
      IValue::List({IValue::Double(2.)}),
      IValue::List({IValue::String("a"), IValue::String("b")}),
      IValue::FromTensor(Tensor::ScalarInt(9)),
  };
  for (const IValue& v : values) {
    absl::StatusOr<ir::Value*> c = InsertConstant(g, v);
    ASSERT_TRUE(c.ok()) << c.status();
    g.registerOutput(*c);
    std::optional<IValue> back = ConstantValue(*c);
    ASSERT_TRUE(back) << v.DebugString();
    EXPECT_EQ(*back, v);
  }
  EXPECT_EQ(g.outputs()[1]->type()->kind(), ir::TypeKind::kBool);
  EXPECT_EQ(g.outputs()[7]->type()->ToString(), "bool[]");
  // The printed graph parses back to the same constants.
  auto reparsed = ir::ParseGraph(ir::PrintGraph(g));
  ASSERT_TRUE(reparsed.ok()) << reparsed.status() << "\n" << ir::PrintGraph(g);
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(*ConstantValue((*reparsed)->outputs()[i]), values[i]) << i;
  }
}

TEST(ConstantsTest, EmptyListTakesTheHintedType) {
  ir::Graph g;
  auto c = InsertConstant(g, IValue::List({}), ir::Type::List(ir::Type::Float()));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ((*c)->type()->ToString(), "float[]");
  EXPECT_EQ((*c)->node()->kindOf(ir::sym::kValue), ir::AttributeKind::fs);
}

TEST(ConstantsTest, TuplesAndMixedListsAreNotRepresentable) {
  ir::Graph g;
  EXPECT_FALSE(IsRepresentableConstant(IValue::Tuple({IValue::Int(1)})));
  EXPECT_FALSE(IsRepresentableConstant(IValue::List({IValue::Int(1), IValue::Double(2)})));
  EXPECT_FALSE(InsertConstant(g, IValue::Tuple({})).ok());
  EXPECT_EQ(g.numNodes(), 0u);
}

TEST(ConstantsTest, NeverMutatedSeesWritersAndEscapes) {
  auto g = Parse(R"IR(graph(%x : int):
  %a : int[] = prim::ListConstruct(%x)
  %b : int[] = prim::ListConstruct(%x)
  %c : int[] = prim::ListConstruct(%x)
  %n : int = aten::len(%a)
  %r : int[] = aten::append(%b, %x)
  %t : (int[]) = prim::TupleConstruct(%c)
  return (%n, %t)
)IR");
  EXPECT_TRUE(IsNeverMutated(g->findValue("a")));
  EXPECT_FALSE(IsNeverMutated(g->findValue("b")));
  EXPECT_FALSE(IsNeverMutated(g->findValue("c")));
}

// ------------------------------------------------------------ scalar folding

TEST(ConstantPropagationTest, FoldsIntChainsAndDropsDeadConstants) {
  ExpectFolds(R"IR(graph(%x : Tensor, %y : Tensor):
  %k0 : int = prim::Constant[value=2]()
  %k1 : int = prim::Constant[value=-5]()
  %s1 : int = aten::add(%k0, %k1)
  %k2 : int = prim::Constant[value=4]()
  %s2 : int = aten::mul(%s1, %k2)
  %t : Tensor = aten::add(%x, %y, %s2)
  return (%t)
)IR",
              R"IR(graph(%x : Tensor, %y : Tensor):
  %0 : int = prim::Constant[value=-12]()
  %t : Tensor = aten::add(%x, %y, %0)
  return (%t)
)IR");
}

TEST(ConstantPropagationTest, FoldsFloatBoolAndStringOps) {
  ExpectFolds(R"IR(graph():
  %a : float = prim::Constant[value=1.5]()
  %b : int = prim::Constant[value=2]()
  %c : float = aten::mul(%a, %b)
  %lt : bool = aten::lt(%b, %a)
  %not : bool = aten::__not__(%lt)
  %and : bool = aten::__and__(%not, %lt)
  %s : str = prim::Constant[value="ab"]()
  %ss : str = aten::add(%s, %s)
  %n : int = aten::len(%ss)
  %fd : int = aten::floordiv(%b, %b)
  %m : int = prim::Constant[value=-7]()
  %r : int = aten::remainder(%m, %b)
  %q : int = aten::floordiv(%m, %b)
  %i : int = aten::Int(%c)
  %f : float = aten::Float(%b)
  %neg : int = aten::neg(%b)
  return (%c, %not, %and, %ss, %n, %fd, %r, %q, %i, %f, %neg)
)IR",
              R"IR(graph():
  %0 : float = prim::Constant[value=3.]()
  %1 : bool = prim::Constant[value=1]()
  %2 : bool = prim::Constant[value=0]()
  %3 : str = prim::Constant[value="abab"]()
  %4 : int = prim::Constant[value=4]()
  %5 : int = prim::Constant[value=1]()
  %6 : int = prim::Constant[value=1]()
  %7 : int = prim::Constant[value=-4]()
  %8 : int = prim::Constant[value=3]()
  %9 : float = prim::Constant[value=2.]()
  %10 : int = prim::Constant[value=-2]()
  return (%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10)
)IR");
}

TEST(ConstantPropagationTest, DoesNotFoldWhatWouldRaise) {
  ExpectUnchanged(R"IR(graph():
  %a : int = prim::Constant[value=7]()
  %z : int = prim::Constant[value=0]()
  %big : int = prim::Constant[value=9223372036854775807]()
  %fd : int = aten::floordiv(%a, %z)
  %r : int = aten::remainder(%a, %z)
  %o : int = aten::add(%big, %a)
  %l : int[] = prim::Constant[value=[1, 2]]()
  %g : int = aten::__getitem__(%l, %a)
  return (%fd, %r, %o, %g)
)IR");
}

TEST(ConstantPropagationTest, LogsWhyItDidNotFold) {
  std::vector<std::string> lines;
  SetLogSink([&](absl::string_view line) { lines.emplace_back(line); });
  ASSERT_TRUE(SetLogLevels(">>constant_propagation").ok());
  RunPass(R"IR(graph():
  %a : int = prim::Constant[value=7]()
  %z : int = prim::Constant[value=0]()
  %fd : int = aten::floordiv(%a, %z)
  return (%fd)
)IR");
  ASSERT_TRUE(SetLogLevels("").ok());
  SetLogSink(nullptr);
  bool found = false;
  for (const std::string& l : lines) {
    if (l.find("[DEBUG constant_propagation] not folding aten::floordiv") != std::string::npos &&
        l.find("division by zero") != std::string::npos) {
      found = true;
    }
  }
  EXPECT_TRUE(found) << absl::StrJoin(lines, "");
}

TEST(ConstantPropagationTest, IsNoneFolds) {
  ExpectFolds(R"IR(graph():
  %n : NoneType = prim::Constant()
  %i : int = prim::Constant[value=1]()
  %a : bool = aten::__is__(%n, %n)
  %b : bool = aten::__isnot__(%i, %n)
  return (%a, %b)
)IR",
              R"IR(graph():
  %0 : bool = prim::Constant[value=1]()
  %1 : bool = prim::Constant[value=1]()
  return (%0, %1)
)IR");
}

// ------------------------------------------------------------ lists, tuples

TEST(ConstantPropagationTest, FoldsListConstructAndItsReaders) {
  ExpectFolds(R"IR(graph(%x : Tensor):
  %a : int = prim::Constant[value=3]()
  %b : int = prim::Constant[value=1]()
  %l : int[] = prim::ListConstruct(%a, %b)
  %v : Tensor = aten::view(%x, %l)
  %n : int = aten::len(%l)
  %e : int = aten::__getitem__(%l, %b)
  %p : int, %q : int = prim::ListUnpack(%l)
  return (%v, %n, %e, %p, %q)
)IR",
              R"IR(graph(%x : Tensor):
  %0 : int[] = prim::Constant[value=[3, 1]]()
  %v : Tensor = aten::view(%x, %0)
  %1 : int = prim::Constant[value=2]()
  %2 : int = prim::Constant[value=1]()
  %3 : int = prim::Constant[value=3]()
  %4 : int = prim::Constant[value=1]()
  return (%v, %1, %2, %3, %4)
)IR");
}

TEST(ConstantPropagationTest, KeepsMutatedLists) {
  ExpectUnchanged(R"IR(graph():
  %a : int = prim::Constant[value=3]()
  %l : int[] = prim::ListConstruct(%a)
  %r : int[] = aten::append(%l, %a)
  %n : int = aten::len(%l)
  return (%n)
)IR");
}

TEST(ConstantPropagationTest, IndexesConstantTuples) {
  ExpectFolds(R"IR(graph():
  %a : int = prim::Constant[value=3]()
  %s : str = prim::Constant[value="x"]()
  %t : (int, str) = prim::TupleConstruct(%a, %s)
  %i : int = prim::Constant[value=-1]()
  %e : str = prim::TupleIndex(%t, %i)
  %u : int, %v : str = prim::TupleUnpack(%t)
  return (%e, %u)
)IR",
              R"IR(graph():
  %a : int = prim::Constant[value=3]()
  %s : str = prim::Constant[value="x"]()
  %t : (int, str) = prim::TupleConstruct(%a, %s)
  %0 : str = prim::Constant[value="x"]()
  %1 : int = prim::Constant[value=3]()
  return (%0, %1)
)IR");
}

// ------------------------------------------------------------ control flow

TEST(ConstantPropagationTest, InlinesTheTakenBranchAndFoldsInsideIt) {
  ExpectFolds(R"IR(graph(%x : Tensor):
  %c : bool = prim::Constant[value=0]()
  %two : int = prim::Constant[value=2]()
  %r : Tensor, %k : int = prim::If(%c)
    block0():
      %y : Tensor = aten::relu(%x)
      -> (%y, %two)
    block1():
      %z : Tensor = aten::tanh(%x)
      %k2 : int = aten::mul(%two, %two)
      -> (%z, %k2)
  %out : Tensor = aten::add(%r, %x, %k)
  return (%out)
)IR",
              R"IR(graph(%x : Tensor):
  %z : Tensor = aten::tanh(%x)
  %0 : int = prim::Constant[value=4]()
  %out : Tensor = aten::add(%z, %x, %0)
  return (%out)
)IR");
}

TEST(ConstantPropagationTest, FoldsInsideNonConstantBranches) {
  ExpectFolds(R"IR(graph(%x : Tensor, %c : bool):
  %two : int = prim::Constant[value=2]()
  %r : int = prim::If(%c)
    block0():
      %t : bool = prim::Constant[value=1]()
      %k : int = prim::If(%t)
        block0():
          %s : int = aten::add(%two, %two)
          -> (%s)
        block1():
          -> (%two)
      -> (%k)
    block1():
      -> (%two)
  return (%r)
)IR",
              R"IR(graph(%x : Tensor, %c : bool):
  %two : int = prim::Constant[value=2]()
  %r : int = prim::If(%c)
    block0():
      %0 : int = prim::Constant[value=4]()
      -> (%0)
    block1():
      -> (%two)
  return (%r)
)IR");
}

TEST(ConstantPropagationTest, RemovesZeroTripLoops) {
  ExpectFolds(R"IR(graph(%x : Tensor, %n : int):
  %zero : int = prim::Constant[value=0]()
  %true : bool = prim::Constant[value=1]()
  %false : bool = prim::Constant[value=0]()
  %a : Tensor = prim::Loop(%zero, %true, %x)
    block0(%i : int, %acc : Tensor):
      %y : Tensor = aten::relu(%acc)
      -> (%true, %y)
  %b : Tensor = prim::Loop(%n, %false, %a)
    block0(%j : int, %acc2 : Tensor):
      %z : Tensor = aten::tanh(%acc2)
      -> (%true, %z)
  %c : Tensor = prim::Loop(%n, %true, %b)
    block0(%k : int, %acc3 : Tensor):
      %w : Tensor = aten::tanh(%acc3)
      -> (%true, %w)
  return (%c)
)IR",
              R"IR(graph(%x : Tensor, %n : int):
  %true : bool = prim::Constant[value=1]()
  %c : Tensor = prim::Loop(%n, %true, %x)
    block0(%k : int, %acc3 : Tensor):
      %w : Tensor = aten::tanh(%acc3)
      -> (%true, %w)
  return (%c)
)IR");
}

TEST(ConstantPropagationTest, NothingToDoLeavesTheGraphAlone) {
  ExpectUnchanged(R"IR(graph(%x : Tensor, %n : int):
  %one : int = prim::Constant[value=1]()
  %s : int = aten::add(%n, %one)
  %y : Tensor = aten::add(%x, %x, %s)
  %unused : int = prim::Constant[value=5]()
  %t : Tensor = prim::Constant[value=<Tensor>]()
  %d : int = aten::dim(%t)
  %p : Tensor = aten::add(%t, %t, %one)
  return (%y, %d, %p)
)IR");
}

TEST(ConstantPropagationTest, DeepNestingDoesNotRecurse) {
  ir::Graph g;
  ir::Value* cond = g.addInput("c");
  cond->setType(ir::Type::Bool());
  ir::Block* b = g.block();
  const int kDepth = 20000;
  for (int i = 0; i < kDepth; ++i) {
    ir::Node* n = b->appendNode(g.create(ir::sym::kIf, {cond}, 0));
    n->addBlock();
    b = n->addBlock();
  }
  ir::WithInsertPoint guard(b);
  ir::Value* two = *InsertConstant(g, IValue::Int(2));
  ir::Node* add = g.insertNode(g.create(ir::Symbol::FromQualString("aten::add"), {two, two}));
  add->output()->setType(ir::Type::Int());
  ir::Node* use = g.insertNode(g.create(ir::Symbol::FromQualString("aten::neg"), {add->output()}));
  use->output()->setType(ir::Type::Int());
  PassStatistics stats;
  auto changed = PropagateConstants(g, stats);
  ASSERT_TRUE(changed.ok());
  EXPECT_TRUE(*changed);
  EXPECT_EQ(stats.Get("nodes_folded"), 2);
}

// ------------------------------------------------------------ kernels

// A test-local registry: schemas for a few tensor ops, with kernels.
class KernelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Add("aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", AddKernel);
    Add("aten::add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)",
        AddKernel);
    Add("aten::neg(Tensor self) -> Tensor", nullptr);
    Add("aten::relu(Tensor self) -> Tensor", [](absl::Span<const IValue>)
            -> absl::StatusOr<std::vector<IValue>> {
          return absl::InternalError("relu kernel exploded");
        });
    auto* drop = Add("aten::dropout(Tensor input, float p, bool train) -> Tensor",
                     [](absl::Span<const IValue> in) -> absl::StatusOr<std::vector<IValue>> {
                       return std::vector<IValue>{in[0]};
                     });
    drop->traits.nondeterministic = true;
    options_.ops = &ops_;
  }

  ir::Operator* Add(const char* schema, ir::KernelFn fn) {
    auto op = ops_.Register(schema);
    EXPECT_TRUE(op.ok()) << op.status();
    (*op)->kernel = std::move(fn);
    return *op;
  }

  static absl::StatusOr<std::vector<IValue>> AddKernel(absl::Span<const IValue> in) {
    if (in.size() < 2 || !in[0].isTensor() || !in[1].isTensor()) {
      return absl::InvalidArgumentError("add: want two tensors");
    }
    const Tensor& a = in[0].toTensor();
    const Tensor& b = in[1].toTensor();
    if (a.sizes() != b.sizes() || a.dtype() != DType::kFloat32 || b.dtype() != DType::kFloat32) {
      return absl::InvalidArgumentError("add: shapes or dtypes differ");
    }
    const double alpha = in.size() > 2 && in[2].isNumber() ? in[2].toNumberAsDouble() : 1.0;
    Tensor out = Tensor::Empty(DType::kFloat32, a.sizes());
    for (int64_t i = 0; i < a.numel(); ++i) {
      out.data<float>()[i] = static_cast<float>(a.GetDouble(i) + alpha * b.GetDouble(i));
    }
    return std::vector<IValue>{IValue::FromTensor(out)};
  }

  // graph(): %a = [1, 2, 3] float tensor; %b = aten::add(%a, %a);
  // return aten::neg(%b). (A tensor returned from the graph is not folded:
  // the caller could write it.)
  std::unique_ptr<ir::Graph> TensorAddGraph(const char* op = "aten::add", int64_t n = 3) {
    auto g = std::make_unique<ir::Graph>();
    Tensor t = Tensor::Empty(DType::kFloat32, {n});
    for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = static_cast<float>(i + 1);
    ir::Value* a = *InsertConstant(*g, IValue::FromTensor(t));
    ir::Node* add = g->insertNode(g->create(ir::Symbol::FromQualString(op), {a, a}));
    ir::Node* neg =
        g->insertNode(g->create(ir::Symbol::FromQualString("aten::neg"), {add->output()}));
    g->registerOutput(neg->output());
    return g;
  }

  ir::OpRegistry ops_;
  ConstantPropagationOptions options_;
};

TEST_F(KernelTest, FoldsThroughTheKernelSlot) {
  auto g = TensorAddGraph();
  PassStatistics stats;
  auto changed = PropagateConstants(*g, stats, options_);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(g->numNodes(), 2u);
  ir::Value* folded = g->outputs()[0]->node()->input(0);
  std::optional<IValue> v = ConstantValue(folded);
  ASSERT_TRUE(v && v->isTensor());
  EXPECT_EQ(v->toTensor().GetDouble(2), 6.0);
  EXPECT_EQ(folded->type()->ToString(),
            "Float(3, strides=[1], requires_grad=0, device=cpu)");
}

TEST_F(KernelTest, RespectsTheElementCap) {
  auto g = TensorAddGraph("aten::add", 4);
  options_.max_tensor_elements = 3;
  PassStatistics stats;
  auto changed = PropagateConstants(*g, stats, options_);
  ASSERT_TRUE(changed.ok());
  EXPECT_FALSE(*changed);
  EXPECT_EQ(g->numNodes(), 3u);
}

// A result whose type already says it is above the cap is not evaluated (a
// large model's constant gathers cost more than the rest of the pipeline);
// one of unknown size is evaluated and refused after.
TEST_F(KernelTest, DoesNotEvaluateWhatItsTypeSaysIsAboveTheCap) {
  int calls = 0;
  Add("aten::tile_twice(Tensor self) -> Tensor",
      [&calls](absl::Span<const IValue> in) -> absl::StatusOr<std::vector<IValue>> {
        ++calls;
        const Tensor& a = in[0].toTensor();
        Tensor out = Tensor::Empty(DType::kFloat32, {2 * a.numel()});
        for (int64_t i = 0; i < out.numel(); ++i) out.data<float>()[i] = static_cast<float>(a.GetDouble(i % a.numel()));
        return std::vector<IValue>{IValue::FromTensor(out)};
      });
  options_.max_tensor_elements = 3;
  // %b : Float(4) = aten::tile_twice(%a : Float(2) constant); return neg(%b)
  auto g = std::make_unique<ir::Graph>();
  Tensor two = Tensor::Empty(DType::kFloat32, {2});
  two.data<float>()[0] = 1.5f;
  two.data<float>()[1] = 2.5f;
  ir::Value* a = *InsertConstant(*g, IValue::FromTensor(two));
  ir::Node* tile = g->insertNode(g->create(ir::Symbol::FromQualString("aten::tile_twice"), {a}));
  ir::TensorInfo four;
  four.dtype = DType::kFloat32;
  four.sizes = std::vector<std::optional<int64_t>>{4};
  tile->output()->setType(ir::Type::TensorWith(four));
  ir::Node* neg = g->insertNode(g->create(ir::Symbol::FromQualString("aten::neg"), {tile->output()}));
  g->registerOutput(neg->output());
  PassStatistics stats;
  auto changed = PropagateConstants(*g, stats, options_);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_FALSE(*changed);
  EXPECT_EQ(calls, 0);
  // Unknown sizes: evaluated, then refused by the result's size.
  tile->output()->setType(ir::Type::Tensor());
  changed = PropagateConstants(*g, stats, options_);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_FALSE(*changed);
  EXPECT_EQ(calls, 1);
  // Within the cap, it folds.
  options_.max_tensor_elements = 4;
  changed = PropagateConstants(*g, stats, options_);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(calls, 2);
}

TEST_F(KernelTest, DoesNotFoldATensorTheCallerReceives) {
  auto g = TensorAddGraph();
  ir::Node* neg = g->outputs()[0]->node();
  g->return_node()->replaceInput(0, neg->input(0));
  neg->destroy();
  PassStatistics stats;
  auto changed = PropagateConstants(*g, stats, options_);
  ASSERT_TRUE(changed.ok());
  EXPECT_FALSE(*changed);
}

TEST_F(KernelTest, DoesNotFoldMutatingOrNondeterministicOps) {
  for (const char* op : {"aten::add_", "aten::dropout"}) {
    auto g = TensorAddGraph(op);
    if (std::string(op) == "aten::dropout") {
      // dropout(input, p, train=True)
      ir::WithInsertPoint guard(g->outputs()[0]->node()->input(0)->node());
      ir::Node* n = g->outputs()[0]->node()->input(0)->node();
      n->removeInput(1);
      n->addInput(*InsertConstant(*g, IValue::Double(0.5)));
      n->addInput(*InsertConstant(*g, IValue::Bool(true)));
    }
    const size_t before = g->numNodes();
    PassStatistics stats;
    auto changed = PropagateConstants(*g, stats, options_);
    ASSERT_TRUE(changed.ok());
    EXPECT_FALSE(*changed) << op;
    EXPECT_EQ(g->numNodes(), before) << op;
  }
}

TEST_F(KernelTest, KernelErrorsLeaveTheNode) {
  auto g = TensorAddGraph();
  ir::Node* add = g->outputs()[0]->node()->input(0)->node();
  ir::WithInsertPoint guard(g->return_node());
  ir::Node* relu =
      g->insertNode(g->create(ir::Symbol::FromQualString("aten::relu"), {add->input(0)}));
  g->registerOutput(relu->output());
  PassStatistics stats;
  auto changed = PropagateConstants(*g, stats, options_);
  ASSERT_TRUE(changed.ok());
  EXPECT_TRUE(*changed);  // the add folded
  EXPECT_EQ(g->outputs()[1]->node()->kind().qualString(), "aten::relu");
}

TEST_F(KernelTest, SkipsPlaceholderTensors) {
  ExpectUnchanged(R"IR(graph():
  %a : Float(3, strides=[1], requires_grad=0, device=cpu) = prim::Constant[value=<Tensor>]()
  %b : Tensor = aten::add(%a, %a)
  return (%b)
)IR",
                  options_);
}

TEST_F(KernelTest, WithoutAKernelNothingFolds) {
  auto g = TensorAddGraph();
  PassStatistics stats;
  auto changed = PropagateConstants(*g, stats);  // BuiltinOps(): no kernels yet
  ASSERT_TRUE(changed.ok());
  EXPECT_FALSE(*changed);
}

TEST(ConstantPropagationRegistryTest, RegistersUnderBothNames) {
  PassRegistry registry;
  ASSERT_TRUE(RegisterConstantPropagationPass(registry).ok());
  EXPECT_TRUE(registry.Contains("constant_propagation"));
  EXPECT_EQ(*registry.CanonicalName("constprop"), "constant_propagation");
}

}  // namespace
}  // namespace kiln::passes
