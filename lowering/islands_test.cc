// Interpreter islands: IR text in, LoopGraph dump (+ each island's graph)
// out.
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ir/text_printer.h"
#include "lowering/lower.h"
#include "lowering/lower_test_util.h"

namespace kiln::lowering {
namespace {

using testing::LowerText;

std::string Dump(const std::string& text) {
  absl::StatusOr<LoopGraph> g = LowerText(text);
  if (!g.ok()) return std::string(g.status().message());
  std::string out = g->ToString();
  for (const Buffer& b : g->buffers) {
    if (b.extern_call && b.extern_call->island) {
      absl::StrAppend(&out, "island of ", b.name, ":\n", ir::PrintGraph(*b.extern_call->island));
    }
  }
  return out;
}

TEST(IslandsTest, DynamicIntOperandJoinsItsConsumerIntoOneIsland) {
  // %k comes from a tensor at run time: tensor_to_int_list and triu run in
  // one island; the relu before and the neg after stay compiled.
  EXPECT_EQ(Dump(R"(graph(%x : Float(4, 5), %kt : Long(1)):
  %r : Tensor = aten::relu(%x)
  %k : int = aten::IntImplicit(%kt)
  %t : Float(4, 5) = aten::triu(%r, %k)
  %n : Tensor = aten::neg(%t)
  return (%n))"),
            "arg0 : Float[4, 5] = input\n"
            "arg1 : Long[1] = input\n"
            "buf0 : Float[4, 5] = pointwise [4, 5] relu(load(arg0, v0 * 5 + v1))\n"
            "buf1 : Float[4, 5] = extern kiln::interpret(arg1, buf0)\n"
            "buf2 : Float[4, 5] = pointwise [4, 5] neg(load(buf1, v0 * 5 + v1))\n"
            "inputs: arg0, arg1\n"
            "outputs: buf2\n"
            "islands: 1 (2 nodes)\n"
            "island of buf1:\n"
            "graph(%kt : Long(1),\n"
            "      %r : Float(4, 5)):\n"
            "  %k : int = aten::IntImplicit(%kt)\n"
            "  %t : Float(4, 5) = aten::triu(%r, %k)\n"
            "  return (%t)\n");
}

TEST(IslandsTest, ControlFlowIsAnIslandWithStaticBoundary) {
  const std::string out = Dump(R"(graph(%x : Float(2, 3), %c : Bool()):
  %b : bool = aten::Bool(%c)
  %y : Float(2, 3) = prim::If(%b)
    block0():
      %p : Tensor = aten::relu(%x)
      -> (%p)
    block1():
      -> (%x)
  %z : Tensor = aten::tanh(%y)
  return (%z))");
  EXPECT_NE(out.find("buf0 : Float[2, 3] = extern kiln::interpret(arg1, arg0)"), std::string::npos)
      << out;
  EXPECT_NE(out.find("tanh(load(buf0"), std::string::npos) << out;
  EXPECT_NE(out.find("islands: 1 (2 nodes)"), std::string::npos) << out;
  EXPECT_NE(out.find("prim::If"), std::string::npos) << out;
}

TEST(IslandsTest, NonTensorGraphOutputMakesAWholeGraphIsland) {
  EXPECT_EQ(Dump(R"(graph(%x : Float(2, 3)):
  %l : Tensor[] = prim::ListConstruct(%x, %x)
  return (%l))"),
            "inputs: \noutputs: \nwhole graph interpreted\nislands: 1 (1 nodes)\n");
}

TEST(IslandsTest, SequenceGraphInputMakesAWholeGraphIsland) {
  EXPECT_EQ(Dump(R"(graph(%s : Tensor[]):
  %i : int = prim::Constant[value=0]()
  %x : Tensor = aten::__getitem__(%s, %i)
  return (%x))"),
            "inputs: \noutputs: \nwhole graph interpreted\nislands: 1 (1 nodes)\n");
}

TEST(IslandsTest, FullyLowerableGraphHasNoIslands) {
  const std::string out = Dump(R"(graph(%x : Float(2, 3)):
  %z : Tensor = aten::tanh(%x)
  return (%z))");
  EXPECT_EQ(out.find("islands"), std::string::npos) << out;
  EXPECT_EQ(out.find("interpret"), std::string::npos) << out;
}

}  // namespace
}  // namespace kiln::lowering

namespace kiln::lowering {
namespace {

std::string Notes(const std::string& text) {
  absl::StatusOr<LoopGraph> g = testing::LowerText(text);
  if (!g.ok()) return std::string(g.status().message());
  std::string out;
  for (const FallbackNote& n : g->fallbacks) {
    absl::StrAppend(&out, n.kind == FallbackNote::Kind::kIsland ? absl::StrCat("island ", n.island)
                                                                 : std::string("extern"),
                    " | ", n.op, " | ", n.node, " | ", n.reason, "\n");
  }
  return out;
}

TEST(IslandsTest, FallbacksNameTheOpTheNodeAndTheReason) {
  // The scope is the model's node name (the ONNX importer sets it).
  EXPECT_EQ(Notes(R"(graph(%x : Float(4, 5), %kt : Long(1)):
  %r : Tensor = aten::relu(%x), scope: /model/Relu
  %k : int = aten::IntImplicit(%kt), scope: /model/Trilu
  %t : Float(4, 5) = aten::triu(%r, %k), scope: /model/Trilu
  %s : Float(4, 5), %si : Long(4, 5) = aten::sort(%t)
  return (%s))"),
            "island 0 | aten::IntImplicit | /model/Trilu | its output %k (int) feeds an island and "
            "is neither a tensor nor a constant\n"
            "island 0 | aten::triu | /model/Trilu | lowering: argument 'diagonal' must be a constant "
            "int in %t : Float(4, 5) = aten::triu(%r, %k)\n"
            "extern | aten::sort | %s | no loop lowering for this op\n");
}

TEST(IslandsTest, WholeGraphIslandNotesEveryNode) {
  EXPECT_EQ(Notes(R"(graph(%x : Float(2, 3)):
  %n : int = aten::size(%x, %x)
  return (%n))"),
            "island 0 | aten::size | %n | whole graph interpreted: graph output %n (int) is not a "
            "tensor\n");
}

}  // namespace
}  // namespace kiln::lowering
