#include "passes/dce.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "passes/pass_log.h"
#include "passes/pass_registry.h"
#include "passes/pass_test_util.h"

namespace kiln::passes {
namespace {

using testing::ExpectRewrite;
using testing::Normalize;
using testing::PassOutcome;
using testing::RunPassExpectOk;

PassOutcome Dce(absl::string_view text) { return RunPassExpectOk(EliminateDeadCode, text); }

void ExpectDce(absl::string_view input, absl::string_view expected) {
  ExpectRewrite(EliminateDeadCode, input, expected);
}

TEST(Dce, RemovesDeadChainInOneRun) {
  PassOutcome out = Dce(R"IR(graph(%x : Tensor):
  %a : Tensor = aten::relu(%x)
  %b : Tensor = aten::tanh(%a)
  %c : Tensor = aten::sigmoid(%b)
  %y : Tensor = aten::neg(%x)
  return (%y)
)IR");
  EXPECT_TRUE(out.changed);
  EXPECT_EQ(out.printed, Normalize(R"IR(graph(%x : Tensor):
  %y : Tensor = aten::neg(%x)
  return (%y)
)IR"));
  EXPECT_EQ(out.stats.Get("nodes_removed"), 3);
}

TEST(Dce, LogsRemovalsAtUpdateLevel) {
  std::vector<std::string> lines;
  SetLogSink([&](absl::string_view line) { lines.emplace_back(line); });
  ASSERT_TRUE(SetLogLevels(">dead_code_elimination").ok());
  Dce(R"IR(graph(%x : Tensor):
  %a : Tensor = aten::relu(%x)
  return (%x)
)IR");
  ASSERT_TRUE(SetLogLevels("").ok());
  SetLogSink(nullptr);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("removed %a : Tensor = aten::relu(%x)"), std::string::npos) << lines[0];
}

TEST(Dce, NoChangeReturnsFalse) {
  const char* text = R"IR(graph(%x : Tensor):
  %one : int = prim::Constant[value=1]()
  %a : Tensor = aten::relu(%x)
  %y : Tensor = aten::add(%a, %x, %one)
  return (%y)
)IR";
  PassOutcome out = Dce(text);
  EXPECT_FALSE(out.changed);
  EXPECT_EQ(out.printed, Normalize(text));
}

TEST(Dce, KeepsSideEffects) {
  ExpectDce(R"IR(graph(%x : Tensor, %c : bool):
  %a : Tensor = aten::relu(%x)
  %dead : Tensor = aten::tanh(%x)
  %msg : str = prim::Constant[value="boom"]()
   = prim::Print(%a)
   = prim::If(%c)
    block0():
       = prim::RaiseException(%msg)
      -> ()
    block1():
      -> ()
  return (%x)
)IR",
            R"IR(graph(%x : Tensor, %c : bool):
  %a : Tensor = aten::relu(%x)
  %msg : str = prim::Constant[value="boom"]()
   = prim::Print(%a)
   = prim::If(%c)
    block0():
       = prim::RaiseException(%msg)
      -> ()
    block1():
      -> ()
  return (%x)
)IR");
}

TEST(Dce, KeepsInPlaceWriteToLiveValue) {
  const char* text = R"IR(graph(%x : Tensor):
  %a : Tensor = aten::neg(%x)
  %b : Tensor = aten::relu_(%a)
  return (%a)
)IR";
  ExpectDce(text, text);
}

TEST(Dce, RemovesInPlaceWriteToDeadLocal) {
  ExpectDce(R"IR(graph(%x : Tensor):
  %a : Tensor = aten::neg(%x)
  %b : Tensor = aten::relu_(%a)
  return (%x)
)IR",
            R"IR(graph(%x : Tensor):
  return (%x)
)IR");
}

TEST(Dce, RemovesWriteAfterLastRead) {
  // The write happens after every read of %a: nobody can observe it.
  ExpectDce(R"IR(graph(%x : Tensor):
  %a : Tensor = aten::neg(%x)
  %y : Tensor = aten::tanh(%a)
  %b : Tensor = aten::relu_(%a)
  return (%y)
)IR",
            R"IR(graph(%x : Tensor):
  %a : Tensor = aten::neg(%x)
  %y : Tensor = aten::tanh(%a)
  return (%y)
)IR");
}

TEST(Dce, KeepsWriteThroughView) {
  const char* text = R"IR(graph(%x : Tensor):
  %zero : int = prim::Constant[value=0]()
  %a : Tensor = aten::neg(%x)
  %v : Tensor = aten::select(%a, %zero, %zero)
  %w : Tensor = aten::relu_(%v)
  return (%a)
)IR";
  ExpectDce(text, text);
}

TEST(Dce, KeepsWriteToGraphInput) {
  const char* text = R"IR(graph(%x : Tensor):
  %w : Tensor = aten::relu_(%x)
  %one : int = prim::Constant[value=1]()
  return (%one)
)IR";
  ExpectDce(text, text);
}

TEST(Dce, KeepsWriteToValueInList) {
  // Once in a list, %a may alias whatever comes out of it.
  const char* text = R"IR(graph(%x : Tensor):
  %zero : int = prim::Constant[value=0]()
  %a : Tensor = aten::neg(%x)
  %l : Tensor[] = prim::ListConstruct(%a)
  %w : Tensor = aten::relu_(%a)
  %c : Tensor = aten::cat(%l, %zero)
  return (%c)
)IR";
  ExpectDce(text, text);
}

TEST(Dce, PrunesDeadIfOutputs) {
  ExpectDce(R"IR(graph(%x : Tensor, %c : bool):
  %y : Tensor, %z : Tensor = prim::If(%c)
    block0():
      %a : Tensor = aten::relu(%x)
      %b : Tensor = aten::tanh(%x)
      -> (%a, %b)
    block1():
      %d : Tensor = aten::neg(%x)
      -> (%x, %d)
  return (%y)
)IR",
            R"IR(graph(%x : Tensor, %c : bool):
  %y : Tensor = prim::If(%c)
    block0():
      %a : Tensor = aten::relu(%x)
      -> (%a)
    block1():
      -> (%x)
  return (%y)
)IR");
}

TEST(Dce, RemovesDeadIfAndItsCondition) {
  ExpectDce(R"IR(graph(%x : Tensor, %n : int):
  %zero : int = prim::Constant[value=0]()
  %c : bool = aten::gt(%n, %zero)
  %y : Tensor = prim::If(%c)
    block0():
      %a : Tensor = aten::relu(%x)
      -> (%a)
    block1():
      -> (%x)
  return (%x)
)IR",
            R"IR(graph(%x : Tensor, %n : int):
  return (%x)
)IR");
}

TEST(Dce, PrunesLoopCarriedValueThatOnlyFeedsItself) {
  ExpectDce(R"IR(graph(%x : Tensor, %n : int):
  %true : bool = prim::Constant[value=1]()
  %one : int = prim::Constant[value=1]()
  %zero : int = prim::Constant[value=0]()
  %y : Tensor, %count : int = prim::Loop(%n, %true, %x, %zero)
    block0(%i : int, %acc : Tensor, %k : int):
      %acc2 : Tensor = aten::add(%acc, %x, %one)
      %k2 : int = aten::add(%k, %one)
      -> (%true, %acc2, %k2)
  return (%y)
)IR",
            R"IR(graph(%x : Tensor, %n : int):
  %true : bool = prim::Constant[value=1]()
  %one : int = prim::Constant[value=1]()
  %y : Tensor = prim::Loop(%n, %true, %x)
    block0(%i : int, %acc : Tensor):
      %acc2 : Tensor = aten::add(%acc, %x, %one)
      -> (%true, %acc2)
  return (%y)
)IR");
}

TEST(Dce, KeepsCarriedValueUsedByAnotherLiveSlot) {
  // %k is not used after the loop but feeds %acc inside the body.
  const char* text = R"IR(graph(%x : Tensor, %n : int):
  %true : bool = prim::Constant[value=1]()
  %one : int = prim::Constant[value=1]()
  %zero : int = prim::Constant[value=0]()
  %y : Tensor, %count : int = prim::Loop(%n, %true, %x, %zero)
    block0(%i : int, %acc : Tensor, %k : int):
      %acc2 : Tensor = aten::add(%acc, %x, %k)
      %k2 : int = aten::add(%k, %one)
      -> (%true, %acc2, %k2)
  return (%y)
)IR";
  ExpectDce(text, text);
}

TEST(Dce, LoopMutationNeedsFixedPoint) {
  // Each iteration writes into %a through a view; the next iteration (and
  // the caller) read %a, so the write is live although nothing after it in
  // the body reads it.
  const char* text = R"IR(graph(%x : Tensor, %n : int):
  %true : bool = prim::Constant[value=1]()
  %one : int = prim::Constant[value=1]()
  %zero : int = prim::Constant[value=0]()
  %init : Tensor = aten::neg(%x)
  %out : Tensor = prim::Loop(%n, %true, %init)
    block0(%i : int, %a : Tensor):
      %b : Tensor = aten::select(%a, %zero, %zero)
      %c : Tensor = aten::add_(%b, %one, %one)
      -> (%true, %a)
  return (%out)
)IR";
  ExpectDce(text, text);
}

TEST(Dce, LoopCarriedReadBeforeWriteIsLive) {
  // %t is read at the top of the next iteration, before the in-place
  // write: only a second marking round finds that.
  const char* text = R"IR(graph(%x : Tensor, %n : int):
  %true : bool = prim::Constant[value=1]()
  %init : Tensor = aten::neg(%x)
  %res : Tensor, %t : Tensor = prim::Loop(%n, %true, %x, %init)
    block0(%i : int, %acc : Tensor, %s : Tensor):
      %acc2 : Tensor = aten::mul(%acc, %s)
      %w : Tensor = aten::relu_(%s)
      -> (%true, %acc2, %s)
  return (%res)
)IR";
  ExpectDce(text, text);
}

TEST(Dce, KeepsLoopWithSideEffect) {
  const char* text = R"IR(graph(%x : Tensor, %n : int):
  %true : bool = prim::Constant[value=1]()
   = prim::Loop(%n, %true)
    block0(%i : int):
       = prim::Print(%i)
      -> (%true)
  return (%x)
)IR";
  ExpectDce(text, text);
}

TEST(Dce, RemovesPureLoopWithNoLiveResult) {
  ExpectDce(R"IR(graph(%x : Tensor, %n : int):
  %true : bool = prim::Constant[value=1]()
  %one : int = prim::Constant[value=1]()
  %y : Tensor = prim::Loop(%n, %true, %x)
    block0(%i : int, %acc : Tensor):
      %acc2 : Tensor = aten::add(%acc, %x, %one)
      -> (%true, %acc2)
  return (%x)
)IR",
            R"IR(graph(%x : Tensor, %n : int):
  return (%x)
)IR");
}

TEST(Dce, NestedBlocks) {
  ExpectDce(R"IR(graph(%x : Tensor, %c : bool, %n : int):
  %true : bool = prim::Constant[value=1]()
  %one : int = prim::Constant[value=1]()
  %r : Tensor, %unused : Tensor = prim::If(%c)
    block0():
      %l : Tensor = prim::Loop(%n, %true, %x)
        block0(%i : int, %acc : Tensor):
          %dead : Tensor = aten::tanh(%acc)
          %acc2 : Tensor, %other : Tensor = prim::If(%c)
            block0():
              %p : Tensor = aten::relu(%acc)
              %q : Tensor = aten::neg(%acc)
              -> (%p, %q)
            block1():
              -> (%acc, %acc)
          -> (%true, %acc2)
      -> (%l, %l)
    block1():
      %e : Tensor = aten::sigmoid(%x)
      -> (%x, %e)
  return (%r)
)IR",
            R"IR(graph(%x : Tensor, %c : bool, %n : int):
  %true : bool = prim::Constant[value=1]()
  %r : Tensor = prim::If(%c)
    block0():
      %l : Tensor = prim::Loop(%n, %true, %x)
        block0(%i : int, %acc : Tensor):
          %acc2 : Tensor = prim::If(%c)
            block0():
              %p : Tensor = aten::relu(%acc)
              -> (%p)
            block1():
              -> (%acc)
          -> (%true, %acc2)
      -> (%l)
    block1():
      -> (%x)
  return (%r)
)IR");
}

TEST(Dce, RegisteredUnderNameAndAlias) {
  PassRegistry r;
  ASSERT_TRUE(RegisterDeadCodeEliminationPass(r).ok());
  auto name = r.CanonicalName("dce");
  ASSERT_TRUE(name.ok());
  EXPECT_EQ(*name, "dead_code_elimination");
}

}  // namespace
}  // namespace kiln::passes
