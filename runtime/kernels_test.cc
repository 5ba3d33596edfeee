#include "runtime/kernels.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"
#include "ir/ivalue.h"
#include "ir/op_registry.h"
#include "runtime/register_kernels.h"
#include "runtime/tensor_ops.h"
#include "support/tensor.h"

namespace kiln::runtime {
namespace {

Tensor Make(DType dtype, std::vector<int64_t> sizes, std::vector<double> values) {
  Tensor t = Tensor::Empty(dtype, std::move(sizes));
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_TRUE(SetDouble(t, static_cast<int64_t>(i), values[i]).ok());
  }
  return t;
}

void ExpectValues(const absl::StatusOr<Tensor>& t, DType dtype, std::vector<int64_t> sizes,
                  std::vector<double> values, double tol = 1e-6) {
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->dtype(), dtype);
  EXPECT_EQ(t->sizes(), sizes);
  ASSERT_EQ(t->numel(), static_cast<int64_t>(values.size()));
  for (size_t i = 0; i < values.size(); ++i) {
    if (std::isinf(values[i])) {
      EXPECT_EQ(t->GetDouble(static_cast<int64_t>(i)), values[i]) << i;
    } else if (std::isnan(values[i])) {
      EXPECT_TRUE(std::isnan(t->GetDouble(static_cast<int64_t>(i)))) << i;
    } else {
      EXPECT_NEAR(t->GetDouble(static_cast<int64_t>(i)), values[i], tol) << "element " << i;
    }
  }
}

Operand T(Tensor t) { return Operand::FromTensor(std::move(t)); }

// ------------------------------------------------------------------ unary

TEST(UnaryTest, FloatValues) {
  Tensor x = Make(DType::kFloat32, {4}, {-2, -0.5, 0, 1.5});
  ExpectValues(Unary(UnaryOp::kRelu, x), DType::kFloat32, {4}, {0, 0, 0, 1.5});
  ExpectValues(Unary(UnaryOp::kSigmoid, x), DType::kFloat32, {4},
               {0.11920292, 0.37754067, 0.5, 0.81757448});
  ExpectValues(Unary(UnaryOp::kGelu, x), DType::kFloat32, {4},
               {-0.04550026, -0.15426877, 0, 1.39978921});
  ExpectValues(Unary(UnaryOp::kGeluTanh, x), DType::kFloat32, {4},
               {-0.04540231, -0.15428599, 0, 1.39957154});
  ExpectValues(Unary(UnaryOp::kSilu, x), DType::kFloat32, {4},
               {-0.23840584, -0.18877034, 0, 1.22636175});
  ExpectValues(Unary(UnaryOp::kHardswish, x), DType::kFloat32, {4},
               {-0.33333334, -0.20833333, 0, 1.125});
  ExpectValues(Unary(UnaryOp::kHardsigmoid, x), DType::kFloat32, {4},
               {0.16666667, 0.41666666, 0.5, 0.75});
  ExpectValues(Unary(UnaryOp::kLeakyRelu, x), DType::kFloat32, {4}, {-0.02, -0.005, 0, 1.5});
  ExpectValues(Unary(UnaryOp::kElu, x), DType::kFloat32, {4},
               {-0.86466473, -0.39346933, 0, 1.5});
  ExpectValues(Unary(UnaryOp::kSoftplus, x), DType::kFloat32, {4},
               {0.12692805, 0.47407699, 0.69314718, 1.70141327});
  ExpectValues(Unary(UnaryOp::kMish, x), DType::kFloat32, {4},
               {-0.25250155, -0.22074378, 0, 1.40337825});
  ExpectValues(Unary(UnaryOp::kErf, x), DType::kFloat32, {4},
               {-0.99532227, -0.52049988, 0, 0.96610515});
  Tensor r = Make(DType::kFloat64, {4}, {0.5, 1.5, 2.5, -0.5});
  ExpectValues(Unary(UnaryOp::kRound, r), DType::kFloat64, {4}, {0, 2, 2, -0});
  ExpectValues(Unary(UnaryOp::kRsqrt, Make(DType::kFloat64, {2}, {4, 0})), DType::kFloat64, {2},
               {0.5, INFINITY});
}

TEST(UnaryTest, IntegerRules) {
  Tensor i = Make(DType::kInt64, {3}, {-3, 0, 4});
  ExpectValues(Unary(UnaryOp::kNeg, i), DType::kInt64, {3}, {3, 0, -4});
  ExpectValues(Unary(UnaryOp::kAbs, i), DType::kInt64, {3}, {3, 0, 4});
  // Float ops promote integers to the default float dtype.
  ExpectValues(Unary(UnaryOp::kSqrt, Make(DType::kInt32, {2}, {4, 9})), DType::kFloat32, {2},
               {2, 3});
  auto gelu = Unary(UnaryOp::kGelu, i);
  EXPECT_EQ(gelu.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(gelu.status().message().find("Long"), absl::string_view::npos);
}

TEST(UnaryTest, TransposedInput) {
  Tensor x = Make(DType::kFloat32, {2, 2}, {1, -2, 3, -4});
  auto xt = Transpose(x, 0, 1);
  ASSERT_TRUE(xt.ok());
  ExpectValues(Unary(UnaryOp::kAbs, *xt), DType::kFloat32, {2, 2}, {1, 3, 2, 4});
}

// ----------------------------------------------------------------- binary

TEST(BinaryTest, BroadcastingAndAlpha) {
  Tensor a = Make(DType::kFloat32, {2, 1}, {1, 2});
  Tensor b = Make(DType::kFloat32, {3}, {10, 20, 30});
  ExpectValues(Binary(BinaryOp::kAdd, T(a), T(b)), DType::kFloat32, {2, 3},
               {11, 21, 31, 12, 22, 32});
  ExpectValues(Binary(BinaryOp::kSub, T(a), T(b), Operand::Double(0.5)), DType::kFloat32, {2, 3},
               {-4, -9, -14, -3, -8, -13});
  auto bad = Binary(BinaryOp::kAdd, T(Make(DType::kFloat32, {2}, {1, 2})), T(b));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("[2] and [3]"), absl::string_view::npos);
}

// float32 operands broadcast along a middle dim and read through
// transposed strides (the fast float32 path's odometer), against the values
// by hand.
TEST(BinaryTest, Float32BroadcastOverStridedOperands) {
  // a: [2, 1, 3]; b: the transpose of a [3, 2] matrix, seen as [2, 3] and
  // broadcast to [2, 2, 3] through a [1, 2, 3] view.
  Tensor a = Make(DType::kFloat32, {2, 1, 3}, {1, 2, 3, 4, 5, 6});
  Tensor m = Make(DType::kFloat32, {3, 2}, {10, 20, 30, 40, 50, 60});
  Tensor bt = Tensor::View(m, {1, 2, 3}, {6, 1, 2}, 0);  // bt[0][i][j] = m[j][i]
  ExpectValues(Binary(BinaryOp::kSub, T(a), T(bt), Operand::Double(2)), DType::kFloat32, {2, 2, 3},
               {1 - 20, 2 - 60, 3 - 100, 1 - 40, 2 - 80, 3 - 120, 4 - 20, 5 - 60, 6 - 100, 4 - 40, 5 - 80,
                6 - 120});
  ExpectValues(Binary(BinaryOp::kMaximum, T(bt), T(Tensor::ScalarDouble(35))), DType::kFloat32, {1, 2, 3},
               {35, 35, 50, 35, 40, 60});
}

TEST(BinaryTest, TypePromotion) {
  Tensor i = Make(DType::kInt64, {2}, {1, 2});
  Tensor f = Make(DType::kFloat32, {2}, {0.5, 0.25});
  ExpectValues(Binary(BinaryOp::kMul, T(i), T(f)), DType::kFloat32, {2}, {0.5, 0.5});
  // int tensor + float scalar -> float32.
  ExpectValues(Binary(BinaryOp::kAdd, T(i), Operand::Double(2.5)), DType::kFloat32, {2},
               {3.5, 4.5});
  // int tensor + int scalar stays int64; int32 + 0-dim int64 stays int32.
  ExpectValues(Binary(BinaryOp::kAdd, T(i), Operand::Int(3)), DType::kInt64, {2}, {4, 5});
  ExpectValues(Binary(BinaryOp::kAdd, T(Make(DType::kInt32, {2}, {1, 2})),
                      T(Tensor::ScalarInt(7))),
               DType::kInt32, {2}, {8, 9});
  // 0-dim float64 with a float32 tensor stays float32.
  ExpectValues(Binary(BinaryOp::kAdd, T(f), T(Tensor::ScalarDouble(1.0))), DType::kFloat32, {2},
               {1.5, 1.25});
  // Two 0-dim tensors give a 0-dim result.
  ExpectValues(Binary(BinaryOp::kMul, T(Tensor::ScalarInt(3)), T(Tensor::ScalarDouble(0.5))),
               DType::kFloat64, {}, {1.5});
  // Integral add with a fractional alpha is an error.
  EXPECT_FALSE(Binary(BinaryOp::kAdd, T(i), T(i), Operand::Double(0.5)).ok());
}

TEST(BinaryTest, Division) {
  Tensor a = Make(DType::kInt64, {4}, {7, -7, 7, -7});
  Tensor b = Make(DType::kInt64, {4}, {2, 2, -2, -2});
  ExpectValues(Binary(BinaryOp::kDiv, T(a), T(b)), DType::kFloat32, {4}, {3.5, -3.5, -3.5, 3.5});
  ExpectValues(Binary(BinaryOp::kDivTrunc, T(a), T(b)), DType::kInt64, {4}, {3, -3, -3, 3});
  ExpectValues(Binary(BinaryOp::kDivFloor, T(a), T(b)), DType::kInt64, {4}, {3, -4, -4, 3});
  EXPECT_FALSE(Binary(BinaryOp::kDivFloor, T(a), Operand::Int(0)).ok());
  ExpectValues(Binary(BinaryOp::kDiv, T(Make(DType::kFloat32, {1}, {1})), Operand::Int(0)),
               DType::kFloat32, {1}, {INFINITY});
}

TEST(BinaryTest, PowMaxMin) {
  Tensor i = Make(DType::kInt64, {3}, {2, 3, -2});
  ExpectValues(Binary(BinaryOp::kPow, T(i), Operand::Int(3)), DType::kInt64, {3}, {8, 27, -8});
  ExpectValues(Binary(BinaryOp::kPow, T(i), Operand::Double(0.5)), DType::kFloat32, {3},
               {1.41421356, 1.73205081, NAN});
  EXPECT_FALSE(Binary(BinaryOp::kPow, T(i), Operand::Int(-1)).ok());
  Tensor f = Make(DType::kFloat32, {3}, {1, NAN, -1});
  ExpectValues(Binary(BinaryOp::kMaximum, T(f), T(Make(DType::kFloat32, {3}, {0, 0, 0}))),
               DType::kFloat32, {3}, {1, NAN, 0});
  ExpectValues(Binary(BinaryOp::kMinimum, T(f), T(Make(DType::kFloat32, {3}, {0, 0, 0}))),
               DType::kFloat32, {3}, {0, NAN, -1});
}

TEST(BinaryTest, ComparisonLogicalBitwise) {
  Tensor a = Make(DType::kInt64, {3}, {1, 2, 3});
  ExpectValues(Binary(BinaryOp::kLt, T(a), Operand::Double(2.5)), DType::kBool, {3}, {1, 1, 0});
  ExpectValues(Binary(BinaryOp::kEq, T(a), Operand::Int(2)), DType::kBool, {3}, {0, 1, 0});
  ExpectValues(Binary(BinaryOp::kGe, T(a), T(Make(DType::kFloat32, {1}, {2}))), DType::kBool,
               {3}, {0, 1, 1});
  ExpectValues(Binary(BinaryOp::kLogicalXor, T(a), T(Make(DType::kFloat32, {3}, {0, 1, 0}))),
               DType::kBool, {3}, {1, 0, 1});
  ExpectValues(Binary(BinaryOp::kBitwiseAnd, T(a), Operand::Int(6)), DType::kInt64, {3},
               {0, 2, 2});
  ExpectValues(Binary(BinaryOp::kBitwiseXor, T(Make(DType::kBool, {2}, {1, 0})), Operand::Bool(true)),
               DType::kBool, {2}, {0, 1});
  auto f = Binary(BinaryOp::kBitwiseOr, T(Make(DType::kFloat32, {1}, {1})), Operand::Int(1));
  EXPECT_EQ(f.status().code(), absl::StatusCode::kUnimplemented);
}

TEST(BinaryTest, TransposedOperands) {
  Tensor a = Make(DType::kFloat64, {2, 3}, {1, 2, 3, 4, 5, 6});
  auto at = Transpose(a, 0, 1);  // [[1,4],[2,5],[3,6]]
  ASSERT_TRUE(at.ok());
  Tensor b = Make(DType::kFloat64, {3, 2}, {10, 20, 30, 40, 50, 60});
  ExpectValues(Binary(BinaryOp::kAdd, T(*at), T(b)), DType::kFloat64, {3, 2},
               {11, 24, 32, 45, 53, 66});
}

// ------------------------------------------------------- where clamp to

TEST(MiscTest, WhereClampTo) {
  Tensor c = Make(DType::kBool, {3}, {1, 0, 1});
  ExpectValues(Where(c, T(Make(DType::kInt64, {3}, {1, 2, 3})), Operand::Double(0.5)),
               DType::kFloat32, {3}, {1, 0.5, 3});
  EXPECT_FALSE(Where(Make(DType::kFloat32, {1}, {1}), Operand::Int(1), Operand::Int(2)).ok());
  Tensor x = Make(DType::kFloat32, {4}, {-2, 0.5, 3, NAN});
  ExpectValues(Clamp(x, Operand::Int(0), Operand::Int(1)), DType::kFloat32, {4}, {0, 0.5, 1, NAN});
  ExpectValues(Clamp(Make(DType::kInt64, {3}, {-5, 1, 5}), std::nullopt, Operand::Int(2)),
               DType::kInt64, {3}, {-5, 1, 2});
  ExpectValues(Clamp(Make(DType::kInt64, {2}, {0, 5}), Operand::Double(0.5), std::nullopt),
               DType::kFloat32, {2}, {0.5, 5});
  EXPECT_FALSE(Clamp(x, std::nullopt, std::nullopt).ok());
  ExpectValues(To(x, DType::kInt32), DType::kInt32, {4}, {-2, 0, 3, 0});
  auto same = To(x, DType::kFloat32);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->storage(), x.storage());
}

// ------------------------------------------------------------- reductions

TEST(ReduceTest, DimsAndKeepdim) {
  Tensor x = Make(DType::kFloat32, {2, 3}, {1, 2, 3, 4, 5, 6});
  ReduceOptions all;
  ExpectValues(Reduce(ReduceOp::kSum, x, all), DType::kFloat32, {}, {21});
  ReduceOptions d1;
  d1.dims = std::vector<int64_t>{1};
  ExpectValues(Reduce(ReduceOp::kMean, x, d1), DType::kFloat32, {2}, {2, 5});
  ExpectValues(Reduce(ReduceOp::kProd, x, d1), DType::kFloat32, {2}, {6, 120});
  ExpectValues(Reduce(ReduceOp::kVar, x, d1), DType::kFloat32, {2}, {1, 1});
  ExpectValues(Reduce(ReduceOp::kLogsumexp, x, d1), DType::kFloat32, {2},
               {3.40760596, 6.40760596});
  ReduceOptions d0k;
  d0k.dims = std::vector<int64_t>{0};
  d0k.keepdim = true;
  ExpectValues(Reduce(ReduceOp::kAmax, x, d0k), DType::kFloat32, {1, 3}, {4, 5, 6});
  ExpectValues(Reduce(ReduceOp::kArgmin, x, d0k), DType::kInt64, {1, 3}, {0, 0, 0});
  ReduceOptions pop = d1;
  pop.correction = 0;
  ExpectValues(Reduce(ReduceOp::kVar, x, pop), DType::kFloat32, {2}, {0.66666667, 0.66666667});
}

TEST(ReduceTest, IntegersTransposedAndErrors) {
  Tensor i = Make(DType::kInt32, {2, 2}, {1, 5, 3, 2});
  auto it = Transpose(i, 0, 1);  // [[1,3],[5,2]]
  ASSERT_TRUE(it.ok());
  ReduceOptions d1;
  d1.dims = std::vector<int64_t>{-1};
  ExpectValues(Reduce(ReduceOp::kSum, *it, d1), DType::kInt64, {2}, {4, 7});
  ExpectValues(Reduce(ReduceOp::kArgmax, *it, d1), DType::kInt64, {2}, {1, 0});
  ExpectValues(Reduce(ReduceOp::kAmin, *it, d1), DType::kInt32, {2}, {1, 2});
  EXPECT_EQ(Reduce(ReduceOp::kMean, i, d1).status().code(), absl::StatusCode::kUnimplemented);
  ReduceOptions f = d1;
  f.dtype = DType::kFloat64;
  ExpectValues(Reduce(ReduceOp::kMean, *it, f), DType::kFloat64, {2}, {2, 3.5});
  ReduceOptions bad;
  bad.dims = std::vector<int64_t>{2};
  EXPECT_FALSE(Reduce(ReduceOp::kSum, i, bad).ok());
}

TEST(SoftmaxTest, StableAlongDims) {
  Tensor x = Make(DType::kFloat32, {2, 2}, {1000, 1001, 0, 0});
  ExpectValues(Softmax(x, 1, std::nullopt, false), DType::kFloat32, {2, 2},
               {0.26894142, 0.73105858, 0.5, 0.5});
  ExpectValues(Softmax(x, 1, std::nullopt, true), DType::kFloat32, {2, 2},
               {-1.31326169, -0.31326169, -0.69314718, -0.69314718});
  Tensor y = Make(DType::kFloat64, {2, 2}, {0, 1, 0, 3});
  ExpectValues(Softmax(y, 0, std::nullopt, false), DType::kFloat64, {2, 2},
               {0.5, 0.11920292, 0.5, 0.88079708});
  EXPECT_EQ(Softmax(Make(DType::kInt64, {2}, {1, 2}), 0, std::nullopt, false).status().code(),
            absl::StatusCode::kUnimplemented);
}

// ----------------------------------------------------------------- matmul

TEST(MatmulTest, Rules) {
  Tensor a = Make(DType::kFloat32, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = Make(DType::kFloat32, {3, 2}, {7, 8, 9, 10, 11, 12});
  ExpectValues(Mm(a, b), DType::kFloat32, {2, 2}, {58, 64, 139, 154});
  Tensor v = Make(DType::kFloat32, {3}, {1, 0, -1});
  ExpectValues(Matmul(a, v), DType::kFloat32, {2}, {-2, -2});
  ExpectValues(Matmul(v, b), DType::kFloat32, {2}, {-4, -4});
  ExpectValues(Matmul(v, v), DType::kFloat32, {}, {2});
  // Batched with broadcasting: [2,1,2] x [2,1] -> [2,1,1].
  Tensor batch = Make(DType::kFloat32, {2, 1, 2}, {1, 2, 3, 4});
  Tensor col = Make(DType::kFloat32, {2, 1}, {1, 1});
  ExpectValues(Matmul(batch, col), DType::kFloat32, {2, 1, 1}, {3, 7});
  auto at = Transpose(a, 0, 1);  // [3,2] non-contiguous
  ASSERT_TRUE(at.ok());
  ExpectValues(Mm(*at, Make(DType::kFloat32, {2, 1}, {1, 1})), DType::kFloat32, {3, 1},
               {5, 7, 9});
  ExpectValues(Bmm(batch, Make(DType::kFloat32, {2, 2, 1}, {1, 0, 0, 1})), DType::kFloat32,
               {2, 1, 1}, {1, 4});
  EXPECT_FALSE(Mm(a, a).ok());
  EXPECT_FALSE(Mm(a, Make(DType::kInt64, {3, 2}, {})).ok());
  ExpectValues(Mm(Make(DType::kInt64, {1, 2}, {2, 3}), Make(DType::kInt64, {2, 1}, {4, 5})),
               DType::kInt64, {1, 1}, {23});
}

// float32 and float64 products read straight from memory: each element is
// the double sum over k in order, rounded once (what the element-wise loop
// gives), for strided operands and a broadcast-free batch.
TEST(MatmulTest, FloatProductsAreOrderedDoubleSums) {
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    const int64_t batch = 2, n = 3, k = 7, m = 5;
    std::vector<double> av(batch * k * n), bv(batch * k * m);
    for (size_t i = 0; i < av.size(); ++i) av[i] = std::sin(0.37 * static_cast<double>(i)) * 1e3;
    for (size_t i = 0; i < bv.size(); ++i) bv[i] = std::cos(0.11 * static_cast<double>(i)) / 3;
    // a stored [B, k, n] and viewed transposed: a strided [B, n, k] operand.
    auto a = Transpose(Make(dtype, {batch, k, n}, av), 1, 2);
    ASSERT_TRUE(a.ok());
    Tensor b = Make(dtype, {batch, k, m}, bv);
    absl::StatusOr<Tensor> got = Bmm(*a, b);
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(got->sizes(), (std::vector<int64_t>{batch, n, m}));
    for (int64_t p = 0; p < batch; ++p) {
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t j = 0; j < m; ++j) {
          double acc = 0;
          for (int64_t r = 0; r < k; ++r) {
            acc += a->GetDouble((p * n + i) * k + r) * b.GetDouble((p * k + r) * m + j);
          }
          const double want = dtype == DType::kFloat32 ? static_cast<double>(static_cast<float>(acc)) : acc;
          EXPECT_EQ(got->GetDouble((p * n + i) * m + j), want) << DTypeName(dtype) << " " << p << "," << i << "," << j;
        }
      }
    }
  }
}

// ------------------------------------------------------ registry adapters

TEST(RegisterKernelsTest, FillsBuiltinSlots) {
  ir::OpRegistry& ops = ir::BuiltinOps();
  const absl::Status first = RegisterReferenceKernels(ops);
  ASSERT_TRUE(first.ok()) << first;
  ASSERT_TRUE(RegisterReferenceKernels(ops).ok());  // idempotent
  for (const char* name : {"aten::add.Tensor", "aten::relu", "aten::gelu", "aten::sum.dim_IntList",
                           "aten::softmax.int", "aten::matmul", "aten::to.dtype",
                           "aten::where.self", "aten::clamp", "aten::var.correction"}) {
    const ir::Operator* op = ops.Find(name);
    ASSERT_NE(op, nullptr) << name;
    EXPECT_TRUE(op->kernel) << name;
  }
  using ir::IValue;
  Tensor i = Make(DType::kInt64, {2}, {1, 2});
  // aten::add.Scalar(Tensor self, Scalar other, Scalar alpha=1)
  auto r = ops.Find("aten::add.Scalar")
               ->kernel({IValue::FromTensor(i), IValue::Double(0.5), IValue::Int(2)});
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->size(), 1u);
  ExpectValues((*r)[0].toTensor(), DType::kFloat32, {2}, {2, 3});
  // aten::sum.dim_IntList(self, int[1]? dim, bool keepdim, *, ScalarType? dtype)
  auto s = ops.Find("aten::sum.dim_IntList")
               ->kernel({IValue::FromTensor(Make(DType::kFloat32, {2, 2}, {1, 2, 3, 4})),
                         IValue::IntList({0}), IValue::Bool(true), IValue::None()});
  ASSERT_TRUE(s.ok()) << s.status();
  ExpectValues((*s)[0].toTensor(), DType::kFloat32, {1, 2}, {4, 6});
  // div with rounding mode
  auto d = ops.Find("aten::div.Scalar_mode")
               ->kernel({IValue::FromTensor(i), IValue::Int(2), IValue::String("floor")});
  ASSERT_TRUE(d.ok()) << d.status();
  ExpectValues((*d)[0].toTensor(), DType::kInt64, {2}, {0, 1});
  // to.dtype(self, ScalarType dtype=6 (Float), non_blocking, copy, memory_format)
  auto t = ops.Find("aten::to.dtype")
               ->kernel({IValue::FromTensor(i), IValue::Int(6), IValue::Bool(false),
                         IValue::Bool(false), IValue::None()});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)[0].toTensor().dtype(), DType::kFloat32);
  // Bad arguments are errors, not crashes.
  EXPECT_FALSE(ops.Find("aten::relu")->kernel({IValue::Int(1)}).ok());
  EXPECT_FALSE(ops.Find("aten::relu")->kernel({}).ok());
  auto half = ops.Find("aten::relu")->kernel(
      {IValue::FromTensor(Tensor::Empty(DType::kComplex64, {2}))});
  EXPECT_EQ(half.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(half.status().message().find("relu"), absl::string_view::npos);
}

// Rows of torch 2.x's core ATen spellings (ops/defs/*.def).
TEST(RegisterKernelsTest, CoreAtenOpsOfTorch2) {
  ir::OpRegistry& ops = ir::BuiltinOps();
  ASSERT_TRUE(RegisterReferenceKernels(ops).ok());
  using ir::IValue;
  auto run = [&](const char* name, std::vector<IValue> args) {
    const ir::Operator* op = ops.Find(name);
    if (op == nullptr || !op->kernel) {
      return absl::StatusOr<std::vector<IValue>>(absl::NotFoundError(name));
    }
    return op->kernel(args);
  };
  Tensor x = Make(DType::kFloat32, {2, 1, 3}, {0, 1, 0, 0, 0, 0});
  // squeeze.dims drops only the listed dims of size 1 (dim 2 has size 3).
  auto sq = run("aten::squeeze.dims", {IValue::FromTensor(x), IValue::IntList({1, -1})});
  ASSERT_TRUE(sq.ok()) << sq.status();
  EXPECT_EQ((*sq)[0].toTensor().sizes(), (std::vector<int64_t>{2, 3}));
  EXPECT_FALSE(run("aten::squeeze.dims", {IValue::FromTensor(x), IValue::IntList({3})}).ok());
  // any.dims over dims 1 and 2; None reduces everything.
  auto any = run("aten::any.dims", {IValue::FromTensor(x), IValue::IntList({1, 2}), IValue::Bool(false)});
  ASSERT_TRUE(any.ok()) << any.status();
  ExpectValues((*any)[0].toTensor(), DType::kBool, {2}, {1, 0});
  auto all = run("aten::any.dims", {IValue::FromTensor(x), IValue::None(), IValue::Bool(true)});
  ASSERT_TRUE(all.ok()) << all.status();
  ExpectValues((*all)[0].toTensor(), DType::kBool, {1, 1, 1}, {1});
  // copy: src cast to self's dtype and broadcast to its sizes.
  auto copy = run("aten::copy", {IValue::FromTensor(Make(DType::kInt64, {2, 2}, {0, 0, 0, 0})),
                                 IValue::FromTensor(Make(DType::kFloat32, {2}, {1.5, -2})),
                                 IValue::Bool(false)});
  ASSERT_TRUE(copy.ok()) << copy.status();
  ExpectValues((*copy)[0].toTensor(), DType::kInt64, {2, 2}, {1, -2, 1, -2});
  // _softmax with half_to_float false keeps the dtype; _to_copy casts.
  auto sm = run("aten::_softmax", {IValue::FromTensor(Make(DType::kFloat32, {2}, {0, 0})),
                                   IValue::Int(0), IValue::Bool(false)});
  ASSERT_TRUE(sm.ok()) << sm.status();
  ExpectValues((*sm)[0].toTensor(), DType::kFloat32, {2}, {0.5, 0.5});
  auto to = run("aten::_to_copy", {IValue::FromTensor(x), IValue::Int(7)});
  ASSERT_TRUE(to.ok()) << to.status();
  EXPECT_EQ((*to)[0].toTensor().dtype(), DType::kFloat64);
  // sym_stride.int / sym_storage_offset of a contiguous tensor.
  auto stride = run("aten::sym_stride.int", {IValue::FromTensor(x), IValue::Int(0)});
  ASSERT_TRUE(stride.ok()) << stride.status();
  EXPECT_EQ((*stride)[0].toInt(), 3);
  EXPECT_FALSE(run("aten::sym_stride.int", {IValue::FromTensor(x), IValue::Int(3)}).ok());
}

}  // namespace
}  // namespace kiln::runtime
