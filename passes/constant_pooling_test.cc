#include "passes/constant_pooling.h"

#include "gtest/gtest.h"
#include "passes/pass_registry.h"
#include "passes/pass_test_util.h"

namespace kiln::passes {
namespace {

using testing::ExpectRewrite;
using testing::Normalize;
using testing::PassOutcome;
using testing::RunPassExpectOk;

PassOutcome Pool(absl::string_view text) { return RunPassExpectOk(PoolConstants, text); }

void ExpectPool(absl::string_view input, absl::string_view expected) {
  ExpectRewrite(PoolConstants, input, expected);
}

TEST(ConstantPooling, MergesAndHoistsIncludingSubBlocks) {
  ExpectPool(R"IR(graph(%x : Tensor, %c : bool):
  %a : Tensor = aten::relu(%x)
  %one : int = prim::Constant[value=1]()
  %y : Tensor = prim::If(%c)
    block0():
      %uno : int = prim::Constant[value=1]()
      %two : int = prim::Constant[value=2]()
      %p : Tensor = aten::add(%a, %x, %uno)
      %q : Tensor = aten::mul(%p, %two)
      -> (%q)
    block1():
      %two.1 : int = prim::Constant[value=2]()
      %r : Tensor = aten::mul(%a, %two.1)
      -> (%r)
  %z : Tensor = aten::add(%y, %x, %one)
  return (%z)
)IR",
             R"IR(graph(%x : Tensor, %c : bool):
  %one : int = prim::Constant[value=1]()
  %two : int = prim::Constant[value=2]()
  %a : Tensor = aten::relu(%x)
  %y : Tensor = prim::If(%c)
    block0():
      %p : Tensor = aten::add(%a, %x, %one)
      %q : Tensor = aten::mul(%p, %two)
      -> (%q)
    block1():
      %r : Tensor = aten::mul(%a, %two)
      -> (%r)
  %z : Tensor = aten::add(%y, %x, %one)
  return (%z)
)IR");
}

TEST(ConstantPooling, HoistsWithoutMerging) {
  ExpectPool(R"IR(graph(%x : Tensor):
  %a : Tensor = aten::relu(%x)
  %two : int = prim::Constant[value=2]()
  %b : Tensor = aten::mul(%a, %two)
  %three : int = prim::Constant[value=3]()
  %c : Tensor = aten::mul(%b, %three)
  return (%c)
)IR",
             R"IR(graph(%x : Tensor):
  %two : int = prim::Constant[value=2]()
  %three : int = prim::Constant[value=3]()
  %a : Tensor = aten::relu(%x)
  %b : Tensor = aten::mul(%a, %two)
  %c : Tensor = aten::mul(%b, %three)
  return (%c)
)IR");
}

TEST(ConstantPooling, AlreadyPooledIsNoChange) {
  const char* text = R"IR(graph(%x : Tensor):
  %two : int = prim::Constant[value=2]()
  %three : int = prim::Constant[value=3]()
  %s : int[] = prim::Constant[value=[2, 3]]()
  %a : Tensor = aten::relu(%x)
  %b : Tensor = aten::mul(%a, %two)
  %c : Tensor = aten::mul(%b, %three)
  %d : Tensor = aten::view(%c, %s)
  return (%d)
)IR";
  PassOutcome out = Pool(text);
  EXPECT_FALSE(out.changed);
  EXPECT_EQ(out.printed, Normalize(text));
  EXPECT_EQ(out.stats.Get("constants_moved"), 0);
}

TEST(ConstantPooling, ReordersOutOfOrderPrefix) {
  // Order is by first appearance, not by first use: already pooled.
  const char* text = R"IR(graph(%x : Tensor):
  %three : int = prim::Constant[value=3]()
  %two : int = prim::Constant[value=2]()
  %b : Tensor = aten::mul(%x, %two)
  %c : Tensor = aten::mul(%b, %three)
  return (%c)
)IR";
  PassOutcome out = Pool(text);
  EXPECT_FALSE(out.changed);
}

TEST(ConstantPooling, PlaceholdersAndDifferentTypesStaySeparate) {
  ExpectPool(R"IR(graph(%x : Tensor):
  %p : Float(2, strides=[1], requires_grad=0, device=cpu) = prim::Constant[value=<Tensor>]()
  %q : Float(2, strides=[1], requires_grad=0, device=cpu) = prim::Constant[value=<Tensor>]()
  %i : int = prim::Constant[value=1]()
  %b : bool = prim::Constant[value=1]()
  %t1 : Tensor = prim::Constant[value={7}]()
  %t2 : Tensor = prim::Constant[value={7}]()
  %r : (Tensor, Tensor, int, bool) = prim::TupleConstruct(%p, %q, %i, %b)
  %s : Tensor = aten::mul(%t1, %t2)
  return (%r, %s)
)IR",
             R"IR(graph(%x : Tensor):
  %p : Float(2, strides=[1], requires_grad=0, device=cpu) = prim::Constant[value=<Tensor>]()
  %q : Float(2, strides=[1], requires_grad=0, device=cpu) = prim::Constant[value=<Tensor>]()
  %i : int = prim::Constant[value=1]()
  %b : bool = prim::Constant[value=1]()
  %t1 : Tensor = prim::Constant[value={7}]()
  %r : (Tensor, Tensor, int, bool) = prim::TupleConstruct(%p, %q, %i, %b)
  %s : Tensor = aten::mul(%t1, %t1)
  return (%r, %s)
)IR");
}

TEST(ConstantPooling, DoesNotMergeTensorConstantsThatBothEscape) {
  // Both end up in the returned tuple: merging would make them alias.
  const char* text = R"IR(graph(%x : Tensor):
  %t1 : Tensor = prim::Constant[value={7}]()
  %t2 : Tensor = prim::Constant[value={7}]()
  %r : (Tensor, Tensor) = prim::TupleConstruct(%t1, %t2)
  return (%r)
)IR";
  ExpectPool(text, text);
}

TEST(ConstantPooling, DoesNotMergeWrittenTensorConstant) {
  ExpectPool(R"IR(graph(%x : Tensor):
  %t1 : Tensor = prim::Constant[value={7}]()
  %w : Tensor = aten::relu_(%t1)
  %t2 : Tensor = prim::Constant[value={7}]()
  %s : Tensor = aten::mul(%t1, %t2)
  return (%s)
)IR",
             R"IR(graph(%x : Tensor):
  %t1 : Tensor = prim::Constant[value={7}]()
  %t2 : Tensor = prim::Constant[value={7}]()
  %w : Tensor = aten::relu_(%t1)
  %s : Tensor = aten::mul(%t1, %t2)
  return (%s)
)IR");
}

TEST(ConstantPooling, HoistsOutOfLoops) {
  ExpectPool(R"IR(graph(%x : Tensor, %n : int):
  %true : bool = prim::Constant[value=1]()
  %y : Tensor = prim::Loop(%n, %true, %x)
    block0(%i : int, %acc : Tensor):
      %one : int = prim::Constant[value=1]()
      %t : bool = prim::Constant[value=1]()
      %acc2 : Tensor = aten::add(%acc, %x, %one)
      -> (%t, %acc2)
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

TEST(ConstantPooling, RegisteredUnderNameAndAlias) {
  PassRegistry r;
  ASSERT_TRUE(RegisterConstantPoolingPass(r).ok());
  auto name = r.CanonicalName("pool");
  ASSERT_TRUE(name.ok());
  EXPECT_EQ(*name, "constant_pooling");
}

}  // namespace
}  // namespace kiln::passes
