#include "ir/proto/proto_convert.h"

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "ir/ir.h"
#include "ir/proto/graph_compare.h"
#include "ir/proto/sample_graphs.h"

namespace kiln::ir {
namespace {

using testing::GraphDifference;

std::unique_ptr<Graph> BinaryRoundTrip(const Graph& g) {
  auto bytes = SerializeGraph(g);
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  if (!bytes.ok()) return nullptr;
  auto loaded = DeserializeGraph(*bytes);
  EXPECT_TRUE(loaded.ok()) << loaded.status();
  return loaded.ok() ? *std::move(loaded) : nullptr;
}

std::unique_ptr<Graph> TextRoundTrip(const Graph& g) {
  auto text = GraphToTextProto(g);
  EXPECT_TRUE(text.ok()) << text.status();
  if (!text.ok()) return nullptr;
  auto loaded = GraphFromTextProto(*text);
  EXPECT_TRUE(loaded.ok()) << loaded.status() << "\n" << *text;
  return loaded.ok() ? *std::move(loaded) : nullptr;
}

void ExpectLossless(const Graph& g) {
  auto binary = BinaryRoundTrip(g);
  ASSERT_NE(binary, nullptr);
  EXPECT_EQ(GraphDifference(g, *binary), "");
  auto text = TextRoundTrip(g);
  ASSERT_NE(text, nullptr);
  EXPECT_EQ(GraphDifference(g, *text), "");
  // A second trip produces the very same bytes.
  EXPECT_EQ(*SerializeGraph(g), *SerializeGraph(*binary));
  EXPECT_EQ(*SerializeGraph(g), *SerializeGraph(*text));
}

Node* FindByOutputName(const Graph& g, absl::string_view name) {
  Value* v = g.findValue(name);
  return v == nullptr ? nullptr : v->node();
}

uint64_t Bits(double d) {
  uint64_t b;
  std::memcpy(&b, &d, sizeof(b));
  return b;
}

TEST(ProtoConvertTest, FeatureGraphRoundTripsLosslessly) {
  auto g = testing::MakeFeatureGraph();
  ExpectLossless(*g);
}

TEST(ProtoConvertTest, ControlFlowGraphRoundTripsLosslessly) {
  auto g = testing::MakeControlFlowGraph();
  ExpectLossless(*g);
}

TEST(ProtoConvertTest, ChainGraphRoundTripsLosslessly) {
  auto g = testing::MakeChainGraph(2000);
  ExpectLossless(*g);
}

TEST(ProtoConvertTest, EmptyGraphRoundTrips) {
  Graph g;
  ExpectLossless(g);
}

TEST(ProtoConvertTest, DoubleBitsSurviveTextFormat) {
  auto g = testing::MakeFeatureGraph();
  auto loaded = TextRoundTrip(*g);
  ASSERT_NE(loaded, nullptr);
  for (const char* name : {"nan_payload", "signaling_nan", "neg_zero", "denorm"}) {
    Node* a = FindByOutputName(*g, name);
    Node* b = FindByOutputName(*loaded, name);
    ASSERT_NE(b, nullptr) << name;
    EXPECT_EQ(Bits(a->f(sym::kValue)), Bits(b->f(sym::kValue))) << name;
  }
  EXPECT_EQ(Bits(FindByOutputName(*loaded, "nan_payload")->f(sym::kValue)),
            0x7ff8dead0000beefULL);
  const auto& fs = FindByOutputName(*loaded, "fs")->fs(sym::kValue);
  ASSERT_EQ(fs.size(), 3);
  EXPECT_EQ(Bits(fs[1]), Bits(-0.0));
  EXPECT_EQ(Bits(fs[2]), 0x7ff0000000000abcULL);
}

TEST(ProtoConvertTest, TensorBytesSurvive) {
  auto g = testing::MakeFeatureGraph();
  auto loaded = BinaryRoundTrip(*g);
  ASSERT_NE(loaded, nullptr);
  for (const char* name : {"t_float", "t_long", "t_bool", "t_half", "t_scalar", "t_empty"}) {
    const Tensor& a = FindByOutputName(*g, name)->t(sym::kValue);
    const Tensor& b = FindByOutputName(*loaded, name)->t(sym::kValue);
    ASSERT_TRUE(b.has_data()) << name;
    ASSERT_EQ(a.dtype(), b.dtype()) << name;
    ASSERT_EQ(a.sizes(), b.sizes()) << name;
    const size_t nbytes = static_cast<size_t>(a.numel()) * a.element_size();
    EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), nbytes), 0) << name;
  }
  // A strided view comes back as its values, contiguous.
  const Tensor& view = FindByOutputName(*loaded, "t_view")->t(sym::kValue);
  EXPECT_TRUE(view.is_contiguous());
  EXPECT_EQ(view.sizes(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(view.GetInt(0), 1);
  EXPECT_EQ(view.GetInt(1), 4);
  EXPECT_EQ(view.GetInt(5), 6);
  const Tensor& placeholder = FindByOutputName(*loaded, "t_placeholder_strided")->t(sym::kValue);
  EXPECT_TRUE(placeholder.is_placeholder());
  EXPECT_EQ(placeholder.strides(), (std::vector<int64_t>{1, 3}));
}

TEST(ProtoConvertTest, NamesAndNumbersAreExact) {
  auto g = testing::MakeFeatureGraph();
  auto loaded = BinaryRoundTrip(*g);
  ASSERT_NE(loaded, nullptr);
  // The numeric name stays a name; unnamed values keep their numbers without
  // acquiring names.
  Value* v42 = loaded->findValue("42");
  ASSERT_NE(v42, nullptr);
  EXPECT_TRUE(v42->hasDebugName());
  const Value* unnamed = loaded->inputs()[2];
  EXPECT_FALSE(unnamed->hasDebugName());
  EXPECT_EQ(unnamed->unique(), g->inputs()[2]->unique());
  // Fresh values never reuse a number that is printed already.
  Node* fresh = loaded->create(sym::kConstant);
  EXPECT_GT(fresh->output()->unique(), 42);
  EXPECT_GE(fresh->output()->unique(), g->nextUnique());
  fresh->destroy();
}

TEST(ProtoConvertTest, OutOfOrderUnnamedValuesKeepTheirNumbersAsNames) {
  // Values created in an order that differs from program order.
  Graph g;
  Node* late = g.create(Symbol::FromQualString("aten::relu"), 1);
  Node* early = g.create(Symbol::FromQualString("aten::neg"), 1);
  g.insertNode(early);
  late->addInput(early->output());
  g.insertNode(late);
  g.registerOutput(late->output());
  ASSERT_LT(late->output()->unique(), early->output()->unique());
  auto loaded = BinaryRoundTrip(g);
  ASSERT_NE(loaded, nullptr);
  // Printed numbers are kept (as names, since they cannot be re-created in
  // this allocation order).
  const Node* loaded_late = loaded->outputs()[0]->node();
  EXPECT_EQ(loaded_late->output()->debugName(), late->output()->debugName());
  EXPECT_EQ(loaded_late->input()->debugName(), early->output()->debugName());
}

TEST(ProtoConvertTest, TypesAreSharedAfterLoading) {
  auto g = testing::MakeChainGraph(100);
  auto loaded = BinaryRoundTrip(*g);
  ASSERT_NE(loaded, nullptr);
  // Singleton types come back as the singletons.
  EXPECT_EQ(loaded->inputs()[0]->type(), Type::Tensor());
  EXPECT_EQ(loaded->findValue("one")->type(), Type::Int());
}

TEST(ProtoConvertTest, ProtoHasFormatVersionAndTypeTable) {
  auto g = testing::MakeChainGraph(10);
  auto proto = ToProto(*g);
  ASSERT_TRUE(proto.ok()) << proto.status();
  EXPECT_EQ(proto->format_version(), kProtoFormatVersion);
  EXPECT_EQ(proto->types_size(), 2);  // Tensor and int
  EXPECT_EQ(proto->block().nodes(0).kind(), "prim::Constant");
  auto back = FromProto(*proto);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(GraphDifference(*g, **back), "");
}

TEST(ProtoConvertTest, TextProtoIsReadable) {
  auto g = testing::MakeControlFlowGraph();
  auto text = GraphToTextProto(*g);
  ASSERT_TRUE(text.ok());
  EXPECT_NE(text->find("kind: \"prim::If\""), std::string::npos) << *text;
  EXPECT_NE(text->find("format_version: 1"), std::string::npos) << *text;
}

TEST(ProtoConvertTest, SavingRejectsTooDeepNesting) {
  Graph g;
  Block* b = g.block();
  for (int i = 0; i <= kMaxProtoBlockDepth; ++i) {
    Node* n = b->appendNode(g.create(sym::kIf, 0));
    b = n->addBlock();
  }
  auto bytes = SerializeGraph(g);
  EXPECT_FALSE(bytes.ok());
}

TEST(ProtoConvertTest, MaximalNestingRoundTrips) {
  Graph g;
  Block* b = g.block();
  Value* x = g.addInput("x");
  for (int i = 0; i < kMaxProtoBlockDepth; ++i) {
    Node* n = b->appendNode(g.create(sym::kIf, {x}, 0));
    b = n->addBlock();
  }
  ExpectLossless(g);
}

}  // namespace
}  // namespace kiln::ir

namespace kiln::ir {
namespace {

// The checked-in fuzz seeds are valid graphs of the current format (rerun
// make_fuzz_seeds when the format changes).
TEST(ProtoConvertTest, FuzzSeedsLoad) {
  for (const char* name : {"feature_graph.pb", "control_flow.pb", "chain_20.pb", "empty.pb"}) {
    std::ifstream in(std::string("ir/proto/testdata/fuzz_seeds/") + name, std::ios::binary);
    ASSERT_TRUE(in) << name;
    std::stringstream bytes;
    bytes << in.rdbuf();
    auto g = DeserializeGraph(bytes.str());
    EXPECT_TRUE(g.ok()) << name << ": " << g.status();
  }
}

}  // namespace
}  // namespace kiln::ir
