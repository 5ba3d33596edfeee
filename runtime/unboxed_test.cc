#include "runtime/unboxed.h"

#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ir/schema_parser.h"

namespace kiln::runtime {
namespace {

using ir::IValue;

ir::FunctionSchema Schema(const char* text) {
  absl::StatusOr<ir::FunctionSchema> s = ir::ParseSchema(text);
  EXPECT_TRUE(s.ok()) << s.status();
  return *s;
}

absl::StatusOr<Tensor> Scale(const Tensor& x, double factor, const std::vector<int64_t>& dims,
                             std::optional<int64_t> offset) {
  Tensor out = Tensor::Empty(DType::kFloat32, x.sizes());
  (void)factor;
  (void)dims;
  (void)offset;
  return out;
}

TEST(UnboxedTest, BindsAndDecodesInSchemaOrder) {
  std::vector<int64_t> seen_dims;
  double seen_factor = 0;
  std::optional<int64_t> seen_offset = 7;
  KernelBinder bind = Unboxed([&](const Tensor& x, double factor, const std::vector<int64_t>& dims,
                                  std::optional<int64_t> offset) {
    seen_factor = factor;
    seen_dims = dims;
    seen_offset = offset;
    return Scale(x, factor, dims, offset);
  });
  ir::FunctionSchema s =
      Schema("test::scale(Tensor x, Scalar factor, int[2] dims=1, int? offset=None) -> Tensor");
  absl::StatusOr<ir::KernelFn> fn = bind(s);
  ASSERT_TRUE(fn.ok()) << fn.status();
  // An int for `int[2]` repeats; trailing arguments take their defaults.
  Tensor x = Tensor::Empty(DType::kFloat32, {2, 3});
  absl::StatusOr<std::vector<IValue>> out = (*fn)({IValue::FromTensor(x), IValue::Int(3)});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 1u);
  EXPECT_TRUE((*out)[0].isTensor());
  EXPECT_EQ(seen_factor, 3.0);
  EXPECT_EQ(seen_dims, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(seen_offset, std::nullopt);
}

TEST(UnboxedTest, WrongValueKindNamesOpAndArgument) {
  KernelBinder bind = Unboxed([](const Tensor& x, int64_t n) { return x; });
  absl::StatusOr<ir::KernelFn> fn = bind(Schema("test::f(Tensor x, int n) -> Tensor"));
  ASSERT_TRUE(fn.ok());
  absl::StatusOr<std::vector<IValue>> out =
      (*fn)({IValue::FromTensor(Tensor::Empty(DType::kFloat32, {1})), IValue::String("x")});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().message(), "test::f: argument 1 (n) must be an int");
}

TEST(UnboxedTest, BindingChecksParameterTypesAgainstTheSchema) {
  KernelBinder bind = Unboxed([](const Tensor& x, int64_t n) { return x; });
  absl::StatusOr<ir::KernelFn> fn = bind(Schema("test::f(Tensor x, float n) -> Tensor"));
  ASSERT_FALSE(fn.ok());
  EXPECT_NE(fn.status().message().find("does not take schema argument 'n' of type float"),
            std::string::npos)
      << fn.status();
  // Too many parameters.
  EXPECT_FALSE(bind(Schema("test::g(Tensor x) -> Tensor")).ok());
  // A left-out argument that changes the result.
  KernelBinder short_bind = Unboxed([](const Tensor& x) { return x; });
  EXPECT_FALSE(short_bind(Schema("test::h(Tensor x, bool keepdim=False) -> Tensor")).ok());
  // ... and placement arguments, which never do.
  EXPECT_TRUE(short_bind(Schema("test::h(Tensor x, *, Device? device=None, bool? pin_memory=None) -> Tensor")).ok());
  // Result count.
  KernelBinder pair = Unboxed([](const Tensor& x) { return std::make_tuple(x, x); });
  EXPECT_FALSE(pair(Schema("test::p(Tensor x) -> Tensor")).ok());
  EXPECT_TRUE(pair(Schema("test::p(Tensor x) -> (Tensor, Tensor)")).ok());
}

TEST(UnboxedTest, NamedKernelsGetTheQualifiedName) {
  std::string seen;
  KernelBinder bind = UnboxedNamed([&](const std::string& op, const Tensor& x) -> absl::StatusOr<Tensor> {
    seen = op;
    return x;
  });
  absl::StatusOr<ir::KernelFn> fn = bind(Schema("test::named.overload(Tensor x) -> Tensor"));
  ASSERT_TRUE(fn.ok());
  ASSERT_TRUE((*fn)({IValue::FromTensor(Tensor::Empty(DType::kFloat32, {1}))}).ok());
  EXPECT_EQ(seen, "test::named.overload");
}

TEST(UnboxedTest, ListResultsAndOperands) {
  KernelBinder bind = Unboxed([](const Operand& a, const std::optional<Operand>& b) {
    std::vector<Tensor> out{a.value};
    if (b) out.push_back(b->value);
    return out;
  });
  absl::StatusOr<ir::KernelFn> fn = bind(Schema("test::l(Scalar a, Tensor? b=None) -> Tensor[]"));
  ASSERT_TRUE(fn.ok()) << fn.status();
  absl::StatusOr<std::vector<IValue>> out = (*fn)({IValue::Double(2.5), IValue::None()});
  ASSERT_TRUE(out.ok());
  ASSERT_EQ(out->size(), 1u);
  ASSERT_TRUE((*out)[0].isList());
  EXPECT_EQ((*out)[0].elements().size(), 1u);
}

}  // namespace
}  // namespace kiln::runtime
