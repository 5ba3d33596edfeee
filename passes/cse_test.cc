#include "passes/cse.h"

#include "gtest/gtest.h"
#include "passes/pass_registry.h"
#include "passes/pass_test_util.h"

namespace kiln::passes {
namespace {

using testing::ExpectRewrite;
using testing::Normalize;
using testing::PassOutcome;
using testing::RunPassExpectOk;

PassOutcome Cse(absl::string_view text) {
  return RunPassExpectOk(EliminateCommonSubexpressions, text);
}

void ExpectCse(absl::string_view input, absl::string_view expected) {
  ExpectRewrite(EliminateCommonSubexpressions, input, expected);
}

void ExpectUnchanged(absl::string_view input) {
  PassOutcome out = Cse(input);
  EXPECT_FALSE(out.changed);
  EXPECT_EQ(out.printed, Normalize(input));
}

TEST(Cse, MergesDuplicatesAndKeepsSurvivorNames) {
  ExpectCse(R"IR(graph(%x : Tensor, %y : Tensor, %n : int):
  %a : Tensor = aten::mul(%x, %y)
  %b : Tensor = aten::mul(%x, %y)
  %c : Tensor = aten::tanh(%a)
  %d : Tensor = aten::tanh(%b)
  %e : Tensor = aten::sub(%c, %d, %n)
  return (%e)
)IR",
            R"IR(graph(%x : Tensor, %y : Tensor, %n : int):
  %a : Tensor = aten::mul(%x, %y)
  %c : Tensor = aten::tanh(%a)
  %e : Tensor = aten::sub(%c, %c, %n)
  return (%e)
)IR");
}

TEST(Cse, MergesEqualConstantsIncludingIntLists) {
  ExpectCse(R"IR(graph(%x : Tensor):
  %one : int = prim::Constant[value=1]()
  %uno : int = prim::Constant[value=1]()
  %t : bool = prim::Constant[value=1]()
  %s1 : int[] = prim::Constant[value=[2, 3]]()
  %s2 : int[] = prim::Constant[value=[2, 3]]()
  %f : float = prim::Constant[value=1.]()
  %r : (int, int, bool, int[], int[], float) = prim::TupleConstruct(%one, %uno, %t, %s1, %s2, %f)
  return (%r)
)IR",
            R"IR(graph(%x : Tensor):
  %one : int = prim::Constant[value=1]()
  %t : bool = prim::Constant[value=1]()
  %s1 : int[] = prim::Constant[value=[2, 3]]()
  %f : float = prim::Constant[value=1.]()
  %r : (int, int, bool, int[], int[], float) = prim::TupleConstruct(%one, %one, %t, %s1, %s1, %f)
  return (%r)
)IR");
}

TEST(Cse, MergesTensorConstantsWithEqualDataOnly) {
  ExpectCse(R"IR(graph(%x : Tensor):
  %a : Tensor = prim::Constant[value={2}]()
  %b : Tensor = prim::Constant[value={2}]()
  %c : Tensor = prim::Constant[value={3}]()
  %p : Float(2, strides=[1], requires_grad=0, device=cpu) = prim::Constant[value=<Tensor>]()
  %q : Float(2, strides=[1], requires_grad=0, device=cpu) = prim::Constant[value=<Tensor>]()
  %r : (Tensor, Tensor, Tensor, Tensor, Tensor) = prim::TupleConstruct(%a, %b, %c, %p, %q)
  return (%r)
)IR",
            R"IR(graph(%x : Tensor):
  %a : Tensor = prim::Constant[value={2}]()
  %c : Tensor = prim::Constant[value={3}]()
  %p : Float(2, strides=[1], requires_grad=0, device=cpu) = prim::Constant[value=<Tensor>]()
  %q : Float(2, strides=[1], requires_grad=0, device=cpu) = prim::Constant[value=<Tensor>]()
  %r : (Tensor, Tensor, Tensor, Tensor, Tensor) = prim::TupleConstruct(%a, %a, %c, %p, %q)
  return (%r)
)IR");
}

TEST(Cse, CommutativeOperands) {
  ExpectCse(R"IR(graph(%x : Tensor, %y : Tensor):
  %one : int = prim::Constant[value=1]()
  %a : Tensor = aten::mul(%x, %y)
  %b : Tensor = aten::mul(%y, %x)
  %c : Tensor = aten::add(%x, %y, %one)
  %d : Tensor = aten::add(%y, %x, %one)
  %e : Tensor = aten::sub(%x, %y, %one)
  %f : Tensor = aten::sub(%y, %x, %one)
  %r : (Tensor, Tensor, Tensor, Tensor, Tensor, Tensor) = prim::TupleConstruct(%a, %b, %c, %d, %e, %f)
  return (%r)
)IR",
            R"IR(graph(%x : Tensor, %y : Tensor):
  %one : int = prim::Constant[value=1]()
  %a : Tensor = aten::mul(%x, %y)
  %c : Tensor = aten::add(%x, %y, %one)
  %e : Tensor = aten::sub(%x, %y, %one)
  %f : Tensor = aten::sub(%y, %x, %one)
  %r : (Tensor, Tensor, Tensor, Tensor, Tensor, Tensor) = prim::TupleConstruct(%a, %a, %c, %c, %e, %f)
  return (%r)
)IR");
}

TEST(Cse, AddWithAlphaOtherThanOneIsNotCommutative) {
  ExpectUnchanged(R"IR(graph(%x : Tensor, %y : Tensor):
  %two : int = prim::Constant[value=2]()
  %c : Tensor = aten::add(%x, %y, %two)
  %d : Tensor = aten::add(%y, %x, %two)
  %r : (Tensor, Tensor) = prim::TupleConstruct(%c, %d)
  return (%r)
)IR");
}

TEST(Cse, NoMergeAcrossInPlaceWrite) {
  // %a is written in place between the two reads: they differ.
  ExpectUnchanged(R"IR(graph(%x : Tensor):
  %a : Tensor = aten::neg(%x)
  %b : Tensor = aten::tanh(%a)
  %w : Tensor = aten::relu_(%a)
  %c : Tensor = aten::tanh(%a)
  %r : (Tensor, Tensor) = prim::TupleConstruct(%b, %c)
  return (%r)
)IR");
}

TEST(Cse, NoMergeOfReadsOfAViewOfAWrittenValue) {
  ExpectUnchanged(R"IR(graph(%x : Tensor):
  %zero : int = prim::Constant[value=0]()
  %a : Tensor = aten::neg(%x)
  %v : Tensor = aten::select(%a, %zero, %zero)
  %b : Tensor = aten::tanh(%v)
  %w : Tensor = aten::relu_(%a)
  %c : Tensor = aten::tanh(%v)
  %r : (Tensor, Tensor) = prim::TupleConstruct(%b, %c)
  return (%r)
)IR");
}

TEST(Cse, NeverMergesSideEffectsOrNondeterminism) {
  ExpectUnchanged(R"IR(graph(%x : Tensor):
  %p : float = prim::Constant[value=0.5]()
  %t : bool = prim::Constant[value=1]()
   = prim::Print(%x)
   = prim::Print(%x)
  %a : Tensor = aten::dropout(%x, %p, %t)
  %b : Tensor = aten::dropout(%x, %p, %t)
  %c : Tensor = aten::rand_like(%x)
  %d : Tensor = aten::rand_like(%x)
  %r : (Tensor, Tensor, Tensor, Tensor) = prim::TupleConstruct(%a, %b, %c, %d)
  return (%r)
)IR");
}

TEST(Cse, DoesNotMakeGraphOutputsAlias) {
  ExpectUnchanged(R"IR(graph(%x : Tensor):
  %a : Tensor = aten::relu(%x)
  %b : Tensor = aten::relu(%x)
  return (%a, %b)
)IR");
}

TEST(Cse, InnerBlockUsesOuterNodeButNotSiblingOrLater) {
  ExpectCse(R"IR(graph(%x : Tensor, %c : bool):
  %a : Tensor = aten::relu(%x)
  %r : Tensor = prim::If(%c)
    block0():
      %b : Tensor = aten::relu(%x)
      %t : Tensor = aten::tanh(%x)
      %s : Tensor = aten::mul(%b, %t)
      -> (%s)
    block1():
      %t2 : Tensor = aten::tanh(%x)
      -> (%t2)
  %t3 : Tensor = aten::tanh(%x)
  %o : Tensor = aten::mul(%r, %t3)
  return (%o)
)IR",
            R"IR(graph(%x : Tensor, %c : bool):
  %a : Tensor = aten::relu(%x)
  %r : Tensor = prim::If(%c)
    block0():
      %t : Tensor = aten::tanh(%x)
      %s : Tensor = aten::mul(%a, %t)
      -> (%s)
    block1():
      %t2 : Tensor = aten::tanh(%x)
      -> (%t2)
  %t3 : Tensor = aten::tanh(%x)
  %o : Tensor = aten::mul(%r, %t3)
  return (%o)
)IR");
}

TEST(Cse, LoopBodyAndNestedBlocks) {
  ExpectCse(R"IR(graph(%x : Tensor, %n : int, %c : bool):
  %true : bool = prim::Constant[value=1]()
  %one : int = prim::Constant[value=1]()
  %y : Tensor = prim::Loop(%n, %true, %x)
    block0(%i : int, %acc : Tensor):
      %one2 : int = prim::Constant[value=1]()
      %p : Tensor = aten::add(%acc, %x, %one2)
      %q : Tensor = aten::add(%x, %acc, %one)
      %z : Tensor = prim::If(%c)
        block0():
          %w : Tensor = aten::add(%acc, %x, %one)
          -> (%w)
        block1():
          -> (%q)
      %s : Tensor = aten::mul(%p, %z)
      -> (%true, %s)
  return (%y)
)IR",
            R"IR(graph(%x : Tensor, %n : int, %c : bool):
  %true : bool = prim::Constant[value=1]()
  %one : int = prim::Constant[value=1]()
  %y : Tensor = prim::Loop(%n, %true, %x)
    block0(%i : int, %acc : Tensor):
      %p : Tensor = aten::add(%acc, %x, %one)
      %z : Tensor = prim::If(%c)
        block0():
          -> (%p)
        block1():
          -> (%p)
      %s : Tensor = aten::mul(%p, %z)
      -> (%true, %s)
  return (%y)
)IR");
}

TEST(Cse, NodesWithBlocksAreNotMerged) {
  ExpectUnchanged(R"IR(graph(%x : Tensor, %c : bool):
  %a : Tensor = prim::If(%c)
    block0():
      -> (%x)
    block1():
      -> (%x)
  %b : Tensor = prim::If(%c)
    block0():
      -> (%x)
    block1():
      -> (%x)
  %r : Tensor = aten::mul(%a, %b)
  return (%r)
)IR");
}

TEST(Cse, DifferentAttributesOrTypesAreNotMerged) {
  ExpectUnchanged(R"IR(graph(%x : Tensor):
  %a : int = prim::Constant[value=1]()
  %b : int = prim::Constant[value=2]()
  %c : bool = prim::Constant[value=1]()
  %d : float = prim::Constant[value=0.]()
  %e : float = prim::Constant[value=-0.]()
  %r : (int, int, bool, float, float) = prim::TupleConstruct(%a, %b, %c, %d, %e)
  return (%r)
)IR");
}

TEST(Cse, RegisteredUnderNameAndAlias) {
  PassRegistry r;
  ASSERT_TRUE(RegisterCommonSubexpressionEliminationPass(r).ok());
  auto name = r.CanonicalName("cse");
  ASSERT_TRUE(name.ok());
  EXPECT_EQ(*name, "common_subexpression_elimination");
}

}  // namespace
}  // namespace kiln::passes
