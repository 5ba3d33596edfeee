#include "runtime/interpreter.h"

#include "gtest/gtest.h"
#include "ir/text_parser.h"
#include "support/tensor.h"

namespace kiln::runtime {
namespace {

using ir::IValue;

IValue Floats(std::vector<int64_t> sizes, std::vector<float> v) {
  return IValue::FromTensor(
      *Tensor::FromBytes(DType::kFloat32, std::move(sizes), v.data(), v.size() * 4));
}

absl::StatusOr<std::vector<IValue>> RunText(const char* text, std::vector<IValue> inputs) {
  absl::StatusOr<std::unique_ptr<ir::Graph>> g = ir::ParseGraph(text);
  if (!g.ok()) return g.status();
  return RunGraph(**g, inputs);
}

TEST(InterpreterTest, TensorOpsWithBroadcastingAndDefaults) {
  auto out = RunText(R"(graph(%x : Float(2, 2), %y : Float(2)):
  %one : int = prim::Constant[value=1]()
  %s : Tensor = aten::add(%x, %y, %one)
  %r : Tensor = aten::relu(%s)
  %m : Tensor = aten::sum(%r)
  return (%r, %m))",
                 {Floats({2, 2}, {1, -2, 3, -4}), Floats({2}, {1, 1})});
  ASSERT_TRUE(out.ok()) << out.status();
  const Tensor& r = (*out)[0].toTensor();
  EXPECT_EQ(r.sizes(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(r.GetDouble(0), 2);
  EXPECT_EQ(r.GetDouble(1), 0);
  EXPECT_EQ(r.GetDouble(2), 4);
  EXPECT_EQ((*out)[1].toTensor().GetDouble(0), 6);
}

TEST(InterpreterTest, LoopCarriesValuesAndIfSelectsABranch) {
  // sum_{i<4} (i even ? i : -i) = 0 - 1 + 2 - 3 = -2, through int scalar ops.
  auto out = RunText(R"(graph(%n : int):
  %true : bool = prim::Constant[value=1]()
  %zero : int = prim::Constant[value=0]()
  %two : int = prim::Constant[value=2]()
  %acc : int = prim::Loop(%n, %true, %zero)
    block0(%i : int, %a : int):
      %rem : int = aten::remainder(%i, %two)
      %even : bool = aten::eq(%rem, %zero)
      %d : int = prim::If(%even)
        block0():
          -> (%i)
        block1():
          %neg : int = aten::neg(%i)
          -> (%neg)
      %next : int = aten::add(%a, %d)
      -> (%true, %next)
  return (%acc))",
                 {IValue::Int(4)});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], IValue::Int(-2));
}

TEST(InterpreterTest, ListsAndTuples) {
  auto out = RunText(R"(graph(%x : Float(2)):
  %l : Tensor[] = prim::ListConstruct(%x, %x)
  %zero : int = prim::Constant[value=0]()
  %c : Tensor = aten::__getitem__(%l, %zero)
  %t : (Tensor, Tensor[]) = prim::TupleConstruct(%c, %l)
  %a : Tensor, %b : Tensor[] = prim::TupleUnpack(%t)
  %p : Tensor, %q : Tensor = prim::ListUnpack(%b)
  return (%a, %q))",
                 {Floats({2}, {1, 2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].toTensor().sizes(), (std::vector<int64_t>{2}));
  EXPECT_EQ((*out)[1].toTensor().GetDouble(1), 2);
}

TEST(InterpreterTest, ValuesAreReleasedAfterTheirLastUse) {
  // A chain of 50 ops keeps O(1) values alive, not 50.
  std::string text = "graph(%x : Float(2)):\n";
  std::string prev = "x";
  for (int i = 0; i < 50; ++i) {
    text += "  %v" + std::to_string(i) + " : Tensor = aten::neg(%" + prev + ")\n";
    prev = "v" + std::to_string(i);
  }
  text += "  return (%" + prev + ")\n";
  absl::StatusOr<std::unique_ptr<ir::Graph>> g = ir::ParseGraph(text);
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_TRUE(RunGraph(**g, {Floats({2}, {1, 2})}).ok());
  Interpreter interp(**g);
  auto out = interp.Run({Floats({2}, {1, 2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].toTensor().GetDouble(0), 1);  // even number of negations
  EXPECT_LE(interp.stats().peak_live_values, 3);
  EXPECT_EQ(interp.stats().nodes_executed, 50);
}

TEST(InterpreterTest, ErrorsNameTheNode) {
  auto out = RunText(R"(graph(%x : Float(2), %y : Float(3)):
  %one : int = prim::Constant[value=1]()
  %s : Tensor = aten::add(%x, %y, %one)
  return (%s))",
                 {Floats({2}, {1, 2}), Floats({3}, {1, 2, 3})});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("aten::add"), std::string::npos) << out.status();
  auto wrong_arity = RunText("graph(%x : Tensor):\n  return (%x)\n", {});
  EXPECT_FALSE(wrong_arity.ok());
}

}  // namespace
}  // namespace kiln::runtime
