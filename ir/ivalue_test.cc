#include "ir/ivalue.h"

#include <cmath>
#include <limits>

#include "absl/container/flat_hash_set.h"
#include "gtest/gtest.h"

namespace kiln::ir {
namespace {

TEST(IValueTest, TagsAndAccessors) {
  EXPECT_TRUE(IValue().isNone());
  EXPECT_TRUE(IValue::Bool(true).toBool());
  EXPECT_EQ(IValue::Int(-3).toInt(), -3);
  EXPECT_EQ(IValue::Double(2.5).toDouble(), 2.5);
  EXPECT_EQ(IValue::String("x").toString(), "x");
  EXPECT_EQ(IValue::FromDevice(Device{"cuda", 1}).toDevice().ToString(), "cuda:1");
  IValue list = IValue::IntList({1, 2});
  ASSERT_TRUE(list.isList());
  EXPECT_EQ(list.elements().size(), 2u);
  EXPECT_EQ(list.elements()[1].toInt(), 2);
  EXPECT_TRUE(IValue::Tuple({IValue::Int(1)}).isTuple());
}

TEST(IValueTest, EqualityIsStructuralAndKindSensitive) {
  EXPECT_EQ(IValue::Int(1), IValue::Int(1));
  EXPECT_NE(IValue::Int(1), IValue::Double(1.0));
  EXPECT_NE(IValue::Int(1), IValue::Bool(true));
  EXPECT_NE(IValue::List({IValue::Int(1)}), IValue::Tuple({IValue::Int(1)}));
  EXPECT_EQ(IValue::IntList({1, 2}), IValue::IntList({1, 2}));
  EXPECT_NE(IValue::IntList({1, 2}), IValue::IntList({1, 2, 3}));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(IValue::Double(nan), IValue::Double(nan));
  EXPECT_NE(IValue::Double(0.0), IValue::Double(-0.0));
  EXPECT_EQ(IValue::FromTensor(Tensor::ScalarInt(3)), IValue::FromTensor(Tensor::ScalarInt(3)));
  EXPECT_NE(IValue::FromTensor(Tensor::ScalarInt(3)), IValue::FromTensor(Tensor::ScalarInt(4)));
}

TEST(IValueTest, HashAgreesWithEquality) {
  EXPECT_EQ(IValue::IntList({1, 2}).Hash(), IValue::IntList({1, 2}).Hash());
  EXPECT_NE(IValue::Int(1).Hash(), IValue::Double(1.0).Hash());
  absl::flat_hash_set<IValue> set = {IValue::Int(1), IValue::Int(1), IValue::String("a"),
                                     IValue::None()};
  EXPECT_EQ(set.size(), 3u);
  EXPECT_TRUE(set.contains(IValue::String("a")));
}

TEST(IValueTest, Printing) {
  EXPECT_EQ(IValue().DebugString(), "None");
  EXPECT_EQ(IValue::Bool(false).DebugString(), "False");
  EXPECT_EQ(IValue::Double(1.0).DebugString(), "1.");
  EXPECT_EQ(IValue::Double(0.5).DebugString(), "0.5");
  EXPECT_EQ(IValue::Double(-std::numeric_limits<double>::infinity()).DebugString(), "-inf");
  EXPECT_EQ(IValue::String("a\"b").DebugString(), "\"a\\\"b\"");
  EXPECT_EQ(IValue::IntList({0, 0}).DebugString(), "[0, 0]");
  EXPECT_EQ(IValue::Tuple({IValue::Int(1)}).DebugString(), "(1,)");
  EXPECT_EQ(IValue::FromTensor(Tensor::Empty(DType::kFloat32, {2, 3})).DebugString(),
            "Float(2, 3)");
}

TEST(IValueTest, Types) {
  EXPECT_EQ(IValue::Int(1).type()->kind(), TypeKind::kInt);
  EXPECT_EQ(IValue::IntList({1}).type()->ToString(), "int[]");
  EXPECT_EQ(IValue::List({}).type()->ToString(), "Any[]");
  EXPECT_EQ(IValue::Tuple({IValue::Int(1), IValue::String("s")}).type()->ToString(),
            "(int, str)");
  EXPECT_EQ(IValue::FromTensor(Tensor::Empty(DType::kFloat32, {2})).type()->ToString(),
            "Float(2, strides=[1])");
}

}  // namespace
}  // namespace kiln::ir
