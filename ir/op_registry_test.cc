#include "ir/op_registry.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/op_traits.h"
#include "ir/schema_parser.h"
#include "ir/text_parser.h"

namespace kiln::ir {
namespace {

using ::testing::HasSubstr;

Symbol S(absl::string_view q) { return Symbol::FromQualString(q); }

std::string MatchName(Symbol kind, std::vector<TypePtr> types,
                      std::optional<size_t> outs = std::nullopt) {
  const Operator* op = BuiltinOps().Match(kind, types, outs);
  return op ? op->schema.QualifiedName() : "<none>";
}

TEST(BuiltinOpsTest, PopulatedWithoutErrors) {
  ASSERT_TRUE(BuiltinOpsStatus().ok()) << BuiltinOpsStatus();
  EXPECT_GT(BuiltinOps().NumOperators(), 700u);
  EXPECT_GT(BuiltinOps().NumSymbols(), 300u);
  EXPECT_EQ(&BuiltinOps(), &BuiltinOps());  // one process-wide registry
}

TEST(BuiltinOpsTest, EverySchemaRoundTripsThroughToString) {
  for (Symbol sym : BuiltinOps().Symbols()) {
    for (const auto& op : BuiltinOps().Overloads(sym)) {
      std::string printed = op->schema.ToString();
      absl::StatusOr<FunctionSchema> again = ParseSchema(printed);
      ASSERT_TRUE(again.ok()) << printed << ": " << again.status();
      EXPECT_TRUE(*again == op->schema) << printed;
    }
  }
}

TEST(OpRegistryTest, MatchPicksTheOverloadByTypes) {
  const TypePtr T = Type::Tensor();
  const TypePtr I = Type::Int();
  const TypePtr F = Type::Float();
  const TypePtr B = Type::Bool();
  const TypePtr IL = Type::List(Type::Int());
  const TypePtr refined = Type::TensorWith(TensorInfo{DType::kFloat32, {{2, 3}}, {}, {}, {}, {}});
  const Symbol add = S("aten::add");
  EXPECT_EQ(MatchName(add, {T, T, I}), "aten::add.Tensor");
  EXPECT_EQ(MatchName(add, {refined, refined, I}), "aten::add.Tensor");
  EXPECT_EQ(MatchName(add, {T, F, I}), "aten::add.Scalar");
  EXPECT_EQ(MatchName(add, {I, I}), "aten::add.int");
  EXPECT_EQ(MatchName(add, {F, I}), "aten::add.float_int");
  EXPECT_EQ(MatchName(add, {B, B}), "aten::add");  // (Scalar, Scalar)
  EXPECT_EQ(MatchName(add, {IL, IL}), "aten::add.t");
  EXPECT_EQ(MatchName(add, {T, T}), "aten::add.Tensor");  // alpha defaulted
  EXPECT_EQ(MatchName(add, {Type::Str(), I}), "<none>");
  EXPECT_EQ(MatchName(S("aten::size"), {T}), "aten::size");
  EXPECT_EQ(MatchName(S("aten::size"), {T, I}), "aten::size.int");
  EXPECT_EQ(MatchName(S("aten::len"), {IL}), "aten::len.t");
  EXPECT_EQ(MatchName(S("aten::len"), {T}), "aten::len.Tensor");
  EXPECT_EQ(MatchName(S("aten::max"), {T, I, B}, 2), "aten::max.dim");
  EXPECT_EQ(MatchName(S("aten::max"), {T, T}, 1), "aten::max.other");
  EXPECT_EQ(MatchName(S("aten::max"), {T}, 1), "aten::max");
  EXPECT_EQ(MatchName(S("aten::max"), {T, I, B}, 1), "<none>");  // wrong output count
  EXPECT_EQ(MatchName(S("aten::conv2d"), {T, T, Type::None(), IL, IL, IL, I}), "aten::conv2d");
  EXPECT_EQ(MatchName(S("aten::conv2d"), {T, T, Type::None(), IL, Type::Str(), IL, I}),
            "aten::conv2d.padding");
  EXPECT_EQ(MatchName(S("aten::conv2d"), {T, T}), "aten::conv2d");
  EXPECT_EQ(MatchName(S("aten::conv2d"), {T}), "<none>");  // weight has no default
  EXPECT_EQ(MatchName(S("aten::gelu"), {T, Type::Str()}), "aten::gelu");
  EXPECT_EQ(MatchName(S("aten::softmax"), {T, I, Type::None()}), "aten::softmax.int");
  EXPECT_EQ(MatchName(S("aten::relu"), {I}), "<none>");
  EXPECT_EQ(MatchName(S("aten::relu"), {Type::Any()}), "aten::relu");  // Any is lenient
  EXPECT_EQ(MatchName(S("aten::__is__"), {T, Type::None()}), "aten::__is__");
  EXPECT_EQ(MatchName(S("aten::Int"), {T}), "aten::Int.Tensor");
  EXPECT_EQ(MatchName(S("aten::floordiv"), {I, I}), "aten::floordiv.int");
  EXPECT_EQ(MatchName(S("aten::__getitem__"), {IL, I}), "aten::__getitem__.t");
  EXPECT_EQ(MatchName(S("aten::dim"), {T}), "aten::dim");
  EXPECT_EQ(MatchName(S("aten::cat"), {Type::List(refined), I}), "aten::cat");
  // Varargs take anything; unknown kinds match nothing.
  EXPECT_EQ(MatchName(S("prim::ListConstruct"), {I, I, I}), "prim::ListConstruct");
  EXPECT_EQ(MatchName(S("prim::TupleUnpack"), {Type::Tuple({I, F})}, 2), "prim::TupleUnpack");
  EXPECT_EQ(MatchName(S("aten::no_such_op"), {T}), "<none>");
}

TEST(OpRegistryTest, TraitsFromSchemas) {
  const OpRegistry& ops = BuiltinOps();
  const Operator* relu_ = ops.Find("aten::relu_");
  ASSERT_NE(relu_, nullptr);
  EXPECT_TRUE(relu_->traits.mutates);
  EXPECT_FALSE(relu_->traits.is_view);
  EXPECT_EQ(relu_->traits.functional_variant, S("aten::relu"));
  EXPECT_EQ(ops.Find("aten::relu")->traits.inplace_variant, S("aten::relu_"));
  EXPECT_EQ(InplaceVariant(S("aten::hardtanh")), S("aten::hardtanh_"));
  EXPECT_EQ(FunctionalVariant(S("aten::add_")), S("aten::add"));
  EXPECT_FALSE(InplaceVariant(S("aten::conv2d")).valid());
  EXPECT_FALSE(FunctionalVariant(S("aten::__and__")).valid());
  EXPECT_TRUE(ops.Find("aten::view")->traits.is_view);
  EXPECT_TRUE(ops.Find("aten::transpose.int")->traits.is_view);
  EXPECT_TRUE(ops.Find("aten::chunk")->traits.is_view);
  EXPECT_FALSE(ops.Find("aten::relu")->traits.is_view);
  EXPECT_FALSE(ops.Find("aten::relu")->traits.mutates);
  EXPECT_EQ(ops.Find("aten::relu")->traits.alias_kind, AliasKind::kFromSchema);
  EXPECT_EQ(ops.Find("prim::If")->traits.alias_kind, AliasKind::kInternalSpecialCase);
  EXPECT_TRUE(ops.Find("aten::add.Tensor")->traits.commutative);
  EXPECT_FALSE(ops.Find("aten::sub.Tensor")->traits.commutative);
  EXPECT_TRUE(ops.Find("aten::dropout")->traits.nondeterministic);
  EXPECT_TRUE(ops.Find("aten::warn")->traits.has_side_effects);
}

TEST(OpRegistryTest, RegisterFindAndFillSlots) {
  OpRegistry r;
  ASSERT_TRUE(r.Register("my::op(Tensor x, int k=2) -> Tensor").ok());
  ASSERT_TRUE(r.Register("my::op.pair(Tensor x, Tensor y) -> Tensor").ok());
  absl::StatusOr<Operator*> dup = r.Register("my::op(Tensor y) -> Tensor");
  EXPECT_EQ(dup.status().code(), absl::StatusCode::kAlreadyExists);
  absl::StatusOr<Operator*> bad = r.Register("my::op(Tensor y -> Tensor");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.NumOperators(), 2u);
  EXPECT_EQ(r.Overloads(S("my::op")).size(), 2u);
  const Operator* first = r.Find("my::op");
  ASSERT_NE(first, nullptr);
  // Pointers stay valid as overloads are added.
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(r.Register(absl::StrCat("my::op.v", i, "(str s) -> str")).ok());
  EXPECT_EQ(r.Find("my::op"), first);
  EXPECT_EQ(r.Find("my::op.nope"), nullptr);
  EXPECT_EQ(r.Find("nonsense"), nullptr);

  ASSERT_TRUE(r.SetKernel("my::op", [](absl::Span<const IValue> in) -> absl::StatusOr<std::vector<IValue>> {
                 return std::vector<IValue>{in[0]};
               }).ok());
  ASSERT_TRUE(r.SetShapeFn("my::op.pair", [](const Node&, absl::Span<const TypePtr> types,
                                              absl::Span<const IValue* const>)
                                               -> absl::StatusOr<std::vector<TypePtr>> {
                 return std::vector<TypePtr>{types[0]};
               }).ok());
  EXPECT_EQ(r.SetKernel("my::missing", nullptr).code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(first->kernel);
  auto out = first->kernel({IValue::Int(7)});
  ASSERT_TRUE(out.ok());
  EXPECT_EQ((*out)[0], IValue::Int(7));
  EXPECT_TRUE(r.Find("my::op.pair")->shape_fn);
}

// Builds `kind(inputs...)` in g with one output per `num_outputs`.
Node* Add(Graph& g, absl::string_view kind, std::vector<Value*> inputs, size_t num_outputs = 1) {
  return g.insertNode(g.create(S(kind), inputs, num_outputs));
}

Value* Const(Graph& g, int64_t v, TypePtr type = Type::Int()) {
  Node* n = Add(g, "prim::Constant", {});
  n->i_(sym::kValue, v);
  n->output()->setType(std::move(type));
  return n->output();
}

TEST(OpTraitsTest, SideEffectsFollowPyTorch) {
  Graph g;
  Value* x = g.addInput("x");
  Value* msg = g.addInput("msg")->setType(Type::Str());
  EXPECT_TRUE(HasSideEffects(*Add(g, "prim::Print", {x}, 0)));
  EXPECT_TRUE(HasSideEffects(*Add(g, "prim::RaiseException", {msg}, 0)));
  EXPECT_TRUE(HasSideEffects(*Add(g, "aten::warn", {msg}, 0)));
  EXPECT_TRUE(HasSideEffects(*Add(g, "prim::CallMethod", {x})));
  EXPECT_TRUE(HasSideEffects(*Add(g, "prim::AddStatValue", {msg})));  // no schema, fixed list
  EXPECT_FALSE(HasSideEffects(*Add(g, "aten::relu", {x})));
  EXPECT_FALSE(HasSideEffects(*Add(g, "aten::relu_", {x})));  // mutation is not a side effect
  EXPECT_FALSE(HasSideEffects(*Add(g, "prim::ListConstruct", {x, x})));
  EXPECT_FALSE(HasSideEffects(*Add(g, "prim::SomethingNew", {x})));  // unknown prim: none
  EXPECT_TRUE(HasSideEffects(*Add(g, "aten::something_new", {x})));  // unknown aten: unsafe
  EXPECT_TRUE(HasSideEffects(*Add(g, "aten::relu", {msg})));        // matches no overload
  EXPECT_EQ(GetAliasKind(*Add(g, "aten::something_new", {x})), AliasKind::kConservative);
  EXPECT_EQ(GetAliasKind(*Add(g, "prim::SomethingNew", {x})), AliasKind::kInternalSpecialCase);
}

TEST(OpTraitsTest, DropoutIsDeterministicWhenNotTraining) {
  Graph g;
  Value* x = g.addInput("x");
  Value* p = g.addInput("p")->setType(Type::Float());
  Value* flag = g.addInput("train")->setType(Type::Bool());
  Value* off = Const(g, 0, Type::Bool());
  Value* on = Const(g, 1, Type::Bool());
  EXPECT_FALSE(IsNondeterministic(*Add(g, "aten::dropout", {x, p, off})));
  EXPECT_TRUE(IsNondeterministic(*Add(g, "aten::dropout", {x, p, on})));
  EXPECT_TRUE(IsNondeterministic(*Add(g, "aten::dropout", {x, p, flag})));
  EXPECT_TRUE(IsNondeterministic(*Add(g, "aten::rand_like", {x})));
  EXPECT_FALSE(IsNondeterministic(*Add(g, "aten::relu", {x})));
}

TEST(OpTraitsTest, CommutativityNeedsUnitAlpha) {
  Graph g;
  Value* x = g.addInput("x");
  Value* y = g.addInput("y");
  Value* n = g.addInput("n")->setType(Type::Int());
  EXPECT_TRUE(IsCommutative(*Add(g, "aten::add", {x, y, Const(g, 1)})));
  EXPECT_FALSE(IsCommutative(*Add(g, "aten::add", {x, y, Const(g, 2)})));
  EXPECT_FALSE(IsCommutative(*Add(g, "aten::add", {x, y, n})));
  EXPECT_TRUE(IsCommutative(*Add(g, "aten::mul", {x, y})));
  EXPECT_FALSE(IsCommutative(*Add(g, "aten::sub", {x, y, Const(g, 1)})));
  EXPECT_TRUE(IsCommutative(*Add(g, "aten::mul", {n, n})));  // mul.int
  EXPECT_TRUE(IsMutating(*Add(g, "aten::add_", {x, y, Const(g, 1)})));
  EXPECT_FALSE(IsMutating(*Add(g, "aten::add", {x, y, Const(g, 1)})));
  EXPECT_TRUE(IsMutating(*Add(g, "aten::something_new", {x})));
  EXPECT_TRUE(IsView(*Add(g, "aten::t", {x})));
  EXPECT_FALSE(IsView(*Add(g, "aten::relu", {x})));
}

std::vector<std::string> CorpusFiles() {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator("testdata/torchscript")) {
    std::string p = e.path().string();
    if (absl::EndsWith(p, ".graph.txt")) files.push_back(p);
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void CollectUnmatched(const Block* b, std::vector<std::string>* out) {
  for (const Node* n : b->nodes()) {
    if (!BuiltinOps().Match(*n)) {
      std::string types;
      for (const Value* v : n->inputs()) absl::StrAppend(&types, types.empty() ? "" : ", ", v->type()->ToString());
      out->push_back(absl::StrCat(n->kind().qualString(), "(", types, ")"));
    }
    for (const Block* sub : n->blocks()) CollectUnmatched(sub, out);
  }
}

TEST(OpRegistryCorpusTest, EveryCorpusNodeMatchesASchema) {
  std::vector<std::string> files = CorpusFiles();
  ASSERT_GE(files.size(), 10u);
  for (const std::string& f : files) {
    absl::StatusOr<std::unique_ptr<Graph>> g = ParseGraph(ReadFile(f));
    ASSERT_TRUE(g.ok()) << f << ": " << g.status();
    std::vector<std::string> unmatched;
    CollectUnmatched((*g)->block(), &unmatched);
    EXPECT_TRUE(unmatched.empty()) << f << ": " << absl::StrJoin(unmatched, "\n");
  }
}

}  // namespace
}  // namespace kiln::ir
