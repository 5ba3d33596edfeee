// Math-family kernels (kernels_math.h) and their registry adapters. Expected
// values come from PyTorch 1.13 where noted.
#include "runtime/kernels_math.h"

#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "gtest/gtest.h"
#include "ir/ivalue.h"
#include "ir/op_registry.h"
#include "runtime/register_kernels.h"
#include "runtime/tensor_ops.h"
#include "support/tensor.h"

namespace kiln::runtime {
namespace {

using ir::IValue;

Tensor Make(DType dtype, std::vector<int64_t> sizes, const std::vector<double>& values) {
  Tensor t = Tensor::Empty(dtype, std::move(sizes));
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_TRUE(SetDouble(t, static_cast<int64_t>(i), values[i]).ok());
  }
  return t;
}

void ExpectValues(const Tensor& t, DType dtype, const std::vector<int64_t>& sizes,
                  const std::vector<double>& values, double tol = 1e-5) {
  EXPECT_EQ(t.dtype(), dtype) << DTypeName(t.dtype());
  ASSERT_EQ(t.sizes(), sizes);
  ASSERT_EQ(t.numel(), static_cast<int64_t>(values.size()));
  for (size_t i = 0; i < values.size(); ++i) {
    const double got = t.GetDouble(static_cast<int64_t>(i));
    if (std::isnan(values[i])) {
      EXPECT_TRUE(std::isnan(got)) << "element " << i;
    } else if (std::isinf(values[i])) {
      EXPECT_EQ(got, values[i]) << "element " << i;
    } else {
      EXPECT_NEAR(got, values[i], tol * (1 + std::fabs(values[i]))) << "element " << i;
    }
  }
}

const ir::OpRegistry& Ops() {
  ir::OpRegistry& ops = ir::BuiltinOps();
  static const bool registered = RegisterReferenceKernels(ops).ok();
  EXPECT_TRUE(registered);
  return ops;
}

std::vector<IValue> RunKernel(const char* op, std::vector<IValue> args) {
  const ir::Operator* o = Ops().Find(op);
  EXPECT_NE(o, nullptr) << op;
  if (o == nullptr || !o->kernel) return {};
  auto r = o->kernel(args);
  EXPECT_TRUE(r.ok()) << op << ": " << r.status();
  return r.ok() ? *r : std::vector<IValue>{};
}

TEST(MathUnaryTest, FloatFunctionsMatchTorch) {
  Tensor x = Make(DType::kFloat32, {2, 3}, {-1.5, 0.25, 2.0, 0.5, -0.75, 3.0});
  auto atan = MathUnary("atan", x);
  ASSERT_TRUE(atan.ok());
  ExpectValues(*atan, DType::kFloat32, {2, 3},
               {-0.98279375, 0.24497867, 1.10714877, 0.46364760, -0.64350110, 1.24904573});
  auto logsig = MathUnary("log_sigmoid", x);
  ASSERT_TRUE(logsig.ok());
  ExpectValues(*logsig, DType::kFloat32, {2, 3},
               {-1.70141327, -0.57593942, -0.12692802, -0.47407699, -1.13687098, -0.04858735});
  auto selu = MathUnary("selu", x);
  ASSERT_TRUE(selu.ok());
  ExpectValues(*selu, DType::kFloat32, {2, 3},
               {-1.36581433, 0.26267526, 2.10140204, 0.52535051, -0.92763197, 3.15210295});
  auto erfinv = MathUnary("erfinv", Make(DType::kFloat64, {4}, {-0.9, 0.0, 0.5, 0.999}));
  ASSERT_TRUE(erfinv.ok());
    // (torch's float32 erfinv(0.999) is 2.3267567; the exact value is below.)
  ExpectValues(*erfinv, DType::kFloat64, {4}, {-1.16308715, 0.0, 0.47693628, 2.32675377}, 1e-7);
}

TEST(MathUnaryTest, IntegerRulesFollowATen) {
  Tensor i = Make(DType::kInt32, {3}, {-2, 0, 3});
  auto sign = MathUnary("sign", i);
  ASSERT_TRUE(sign.ok());
  ExpectValues(*sign, DType::kInt32, {3}, {-1, 0, 1});
  auto exp2 = MathUnary("exp2", i);  // integers promote to float32
  ASSERT_TRUE(exp2.ok());
  ExpectValues(*exp2, DType::kFloat32, {3}, {0.25, 1, 8});
  auto isnan = MathUnary("isnan", i);
  ASSERT_TRUE(isnan.ok());
  ExpectValues(*isnan, DType::kBool, {3}, {0, 0, 0});
  EXPECT_EQ(MathUnary("frac", i).status().code(), absl::StatusCode::kUnimplemented);
  auto bnot = MathUnary("bitwise_not", Make(DType::kUInt8, {2}, {0, 5}));
  ASSERT_TRUE(bnot.ok());
  ExpectValues(*bnot, DType::kUInt8, {2}, {255, 250});
  auto bnot_bool = MathUnary("bitwise_not", Make(DType::kBool, {2}, {0, 1}));
  ASSERT_TRUE(bnot_bool.ok());
  ExpectValues(*bnot_bool, DType::kBool, {2}, {1, 0});
  EXPECT_FALSE(MathUnary("no_such_op", i).ok());
}

TEST(MathUnaryTest, ParameterisedAndNonContiguous) {
  Tensor x = Make(DType::kFloat32, {2, 3}, {-2, -0.25, 0.4, 0.6, NAN, INFINITY});
  auto xt = Transpose(x, 0, 1);  // [3, 2], strided
  ASSERT_TRUE(xt.ok());
  const std::optional<double> hard[] = {-0.5, 0.5};
  auto ht = MathUnary("hardtanh", *xt, hard);
  ASSERT_TRUE(ht.ok());
  ExpectValues(*ht, DType::kFloat32, {3, 2}, {-0.5, 0.5, -0.25, NAN, 0.4, 0.5});
  const std::optional<double> nan_to_num[] = {1.0, std::nullopt, -7.0};
  auto n2n = MathUnary("nan_to_num", x, nan_to_num);
  ASSERT_TRUE(n2n.ok());
  ExpectValues(*n2n, DType::kFloat32, {2, 3},
               {-2, -0.25, 0.4, 0.6, 1.0, std::numeric_limits<float>::max()});
}

TEST(MathBinaryTest, RemainderFmodFloorDivide) {
  Operand a = Operand::FromTensor(Make(DType::kFloat32, {3}, {-7, 7, -7}));
  Operand b = Operand::FromTensor(Make(DType::kFloat32, {3}, {3, -3, -3}));
  auto rem = MathBinary("remainder", a, b);
  ASSERT_TRUE(rem.ok());
  ExpectValues(*rem, DType::kFloat32, {3}, {2, -2, -1});  // torch.remainder
  auto fmod = MathBinary("fmod", a, b);
  ASSERT_TRUE(fmod.ok());
  ExpectValues(*fmod, DType::kFloat32, {3}, {-1, 1, -1});
  // Integers with a scalar: [-7, 7] // 2 = [-4, 3] (floor), % 3 = [2, 1].
  Operand ia = Operand::FromTensor(Make(DType::kInt64, {2}, {-7, 7}));
  auto fd = MathBinary("floor_divide", ia, Operand::Int(2));
  ASSERT_TRUE(fd.ok());
  ExpectValues(*fd, DType::kInt64, {2}, {-4, 3});
  auto irem = MathBinary("remainder", ia, Operand::Int(3));
  ASSERT_TRUE(irem.ok());
  ExpectValues(*irem, DType::kInt64, {2}, {2, 1});
  EXPECT_FALSE(MathBinary("remainder", ia, Operand::Int(0)).ok());
}

TEST(MathBinaryTest, BroadcastPromotionAndShifts) {
  // int32 [2, 1] atan2 float32 [3] -> float32 [2, 3].
  Operand a = Operand::FromTensor(Make(DType::kInt32, {2, 1}, {1, -1}));
  Operand b = Operand::FromTensor(Make(DType::kFloat32, {3}, {1, 0, -1}));
  auto at = MathBinary("atan2", a, b);
  ASSERT_TRUE(at.ok());
  const double pi = 3.14159265358979;
  ExpectValues(*at, DType::kFloat32, {2, 3},
               {pi / 4, pi / 2, 3 * pi / 4, -pi / 4, -pi / 2, -3 * pi / 4});
  auto la = MathBinary("logaddexp", Operand::FromTensor(Make(DType::kFloat32, {2}, {1, -1000})),
                       Operand::FromTensor(Make(DType::kFloat32, {2}, {2, -1000})));
  ASSERT_TRUE(la.ok());
  ExpectValues(*la, DType::kFloat32, {2}, {2.31326175, -999.30682373});
  Operand u = Operand::FromTensor(Make(DType::kUInt8, {3}, {200, 1, 16}));
  Operand s = Operand::FromTensor(Make(DType::kUInt8, {3}, {1, 7, 9}));
  auto shr = MathBinary("bitwise_right_shift", u, s);
  ASSERT_TRUE(shr.ok());
  ExpectValues(*shr, DType::kUInt8, {3}, {100, 0, 0});
  auto shl = MathBinary("bitwise_left_shift", u, s);
  ASSERT_TRUE(shl.ok());
  ExpectValues(*shl, DType::kUInt8, {3}, {144, 128, 0});
  EXPECT_FALSE(MathBinary("bitwise_left_shift", b, b).ok());
  EXPECT_FALSE(MathBinary("atan2", Operand::FromTensor(Make(DType::kFloat32, {2}, {1, 2})),
                          Operand::FromTensor(Make(DType::kFloat32, {3}, {1, 2, 3})))
                   .ok());
}

TEST(MathReduceTest, MaxDimVarNorm) {
  Tensor a = Make(DType::kFloat32, {3, 2}, {1, 2, 3, 4, 5, 6});
  auto mx = MaxMinDim(a, 0, /*keepdim=*/true, /*is_max=*/true);
  ASSERT_TRUE(mx.ok());
  ExpectValues(mx->first, DType::kFloat32, {1, 2}, {5, 6});
  ExpectValues(mx->second, DType::kInt64, {1, 2}, {2, 2});
  auto var = VarStdMean(a, std::vector<int64_t>{0}, 1, false, false);
  ASSERT_TRUE(var.ok());
  ExpectValues(var->first, DType::kFloat32, {2}, {4, 4});
  ExpectValues(var->second, DType::kFloat32, {2}, {3, 4});
  auto sd = VarStdMean(a, std::vector<int64_t>{1}, 0, false, true);
  ASSERT_TRUE(sd.ok());
  ExpectValues(sd->first, DType::kFloat32, {3}, {0.5, 0.5, 0.5});
  auto n3 = VectorNorm(a, 3, std::vector<int64_t>{1}, false, std::nullopt);
  ASSERT_TRUE(n3.ok());
  ExpectValues(*n3, DType::kFloat32, {3}, {2.08008385, 4.49794149, 6.98636866});
  auto ninf = VectorNorm(a, INFINITY, std::nullopt, false, std::nullopt);
  ASSERT_TRUE(ninf.ok());
  ExpectValues(*ninf, DType::kFloat32, {}, {6});
  // NaN wins max.dim and reports its index (torch: index 1).
  auto nan = MaxMinDim(Make(DType::kFloat32, {1, 3}, {1, NAN, NAN}), 1, false, true);
  ASSERT_TRUE(nan.ok());
  ExpectValues(nan->second, DType::kInt64, {1}, {1});
  EXPECT_FALSE(MaxMinDim(Tensor::Empty(DType::kFloat32, {0, 2}), 0, false, true).ok());
  EXPECT_FALSE(VarStdMean(Make(DType::kInt64, {2}, {1, 2}), std::nullopt, 1, false, false).ok());
}

TEST(MathReduceTest, CumulativeAndBoolean) {
  // cummax of a transposed (non-contiguous) view along dim 0.
  Tensor m = Make(DType::kFloat32, {2, 3}, {1, 3, 2, 1, 0, 5});
  auto mt = Transpose(m, 0, 1);  // [[1, 1], [3, 0], [2, 5]]
  ASSERT_TRUE(mt.ok());
  auto cm = CumMaxMin(*mt, 0, true);
  ASSERT_TRUE(cm.ok());
  ExpectValues(cm->first, DType::kFloat32, {3, 2}, {1, 1, 3, 1, 3, 5});
  ExpectValues(cm->second, DType::kInt64, {3, 2}, {0, 0, 1, 0, 1, 2});
  auto lcse = LogCumSumExp(Make(DType::kFloat32, {3}, {1, 2, 3}), 0);
  ASSERT_TRUE(lcse.ok());
  ExpectValues(*lcse, DType::kFloat32, {3}, {1.0, 2.31326175, 3.40760589});
  auto any = AllAny(m, std::vector<int64_t>{1}, true, false);
  ASSERT_TRUE(any.ok());
  ExpectValues(*any, DType::kBool, {2, 1}, {1, 1});
  auto all = AllAny(m, std::nullopt, false, true);
  ASSERT_TRUE(all.ok());
  ExpectValues(*all, DType::kBool, {}, {0});
  auto nz = CountNonzero(m, std::vector<int64_t>{0});
  ASSERT_TRUE(nz.ok());
  ExpectValues(*nz, DType::kInt64, {3}, {2, 1, 2});
}

TEST(MathReduceTest, OnnxReduceKeepsDtypeAndHandlesEmptySets) {
  Tensor i = Make(DType::kInt32, {2, 2}, {1, 2, 3, 4});
  auto sum = OnnxReduce("sum", i, std::vector<int64_t>{1}, true, false);
  ASSERT_TRUE(sum.ok());
  ExpectValues(*sum, DType::kInt32, {2, 1}, {3, 7});
  auto all = OnnxReduce("sum_square", i, std::nullopt, false, false);
  ASSERT_TRUE(all.ok());
  ExpectValues(*all, DType::kInt32, {}, {30});
  auto noop = OnnxReduce("max", i, std::vector<int64_t>{}, false, true);
  ASSERT_TRUE(noop.ok());
  ExpectValues(*noop, DType::kInt32, {2, 2}, {1, 2, 3, 4});
  Tensor empty = Tensor::Empty(DType::kFloat32, {2, 0, 4});
  auto esum = OnnxReduce("sum", empty, std::vector<int64_t>{1}, true, false);
  ASSERT_TRUE(esum.ok());
  ExpectValues(*esum, DType::kFloat32, {2, 1, 4}, std::vector<double>(8, 0.0));
  auto emax = OnnxReduce("max", empty, std::vector<int64_t>{1}, false, false);
  ASSERT_TRUE(emax.ok());
  ExpectValues(*emax, DType::kFloat32, {2, 4}, std::vector<double>(8, -INFINITY));
  auto lse = OnnxReduce("log_sum_exp", empty, std::vector<int64_t>{1}, false, false);
  ASSERT_TRUE(lse.ok());
  ExpectValues(*lse, DType::kFloat32, {2, 4}, std::vector<double>(8, -INFINITY));
  EXPECT_FALSE(OnnxReduce("median", i, std::nullopt, false, false).ok());
  EXPECT_FALSE(OnnxReduce("sum", i, std::vector<int64_t>{2}, false, false).ok());
}

TEST(MathReduceTest, ArgExtremeSoftmaxHardmax) {
  Tensor t = Make(DType::kFloat32, {2, 3}, {1, 3, 3, 2, 2, 0});
  auto first = ArgExtreme(t, 1, false, false, true);
  ASSERT_TRUE(first.ok());
  ExpectValues(*first, DType::kInt64, {2}, {1, 0});
  auto last = ArgExtreme(t, 1, true, true, true);
  ASSERT_TRUE(last.ok());
  ExpectValues(*last, DType::kInt64, {2, 1}, {2, 1});
  auto hm = Hardmax(t, 1);
  ASSERT_TRUE(hm.ok());
  ExpectValues(*hm, DType::kFloat32, {2, 3}, {0, 1, 0, 1, 0, 0});
  // Coerced to [1, 6] at axis 0: one softmax over all six elements.
  auto fs = FlatSoftmax(t, 0, 0);
  ASSERT_TRUE(fs.ok());
  double total = 0;
  for (int64_t k = 0; k < 6; ++k) total += fs->GetDouble(k);
  EXPECT_NEAR(total, 1.0, 1e-6);
  auto fh = FlatSoftmax(t, 0, 2);
  ASSERT_TRUE(fh.ok());
  ExpectValues(*fh, DType::kFloat32, {2, 3}, {0, 1, 0, 0, 0, 0});
  EXPECT_FALSE(FlatSoftmax(t, 3, 0).ok());
}

TEST(MathLinalgTest, ProductsMatchTorch) {
  auto addmm = Addmm(Make(DType::kFloat32, {2}, {1, 2}),
                     Make(DType::kFloat32, {2, 2}, {1, 2, 3, 4}),
                     Make(DType::kFloat32, {2, 2}, {1, 0, 0, 1}), 0.5, 2);
  ASSERT_TRUE(addmm.ok());
  ExpectValues(*addmm, DType::kFloat32, {2, 2}, {2.5, 5, 6.5, 9});
  auto lin = Linear(Make(DType::kFloat32, {1, 2}, {1, 2}),
                    Make(DType::kFloat32, {3, 2}, {1, 0, 0, 1, 1, 1}),
                    Make(DType::kFloat32, {3}, {10, 20, 30}));
  ASSERT_TRUE(lin.ok());
  ExpectValues(*lin, DType::kFloat32, {1, 3}, {11, 22, 33});
  auto outer = Outer(Make(DType::kInt64, {2}, {1, 2}), Make(DType::kFloat32, {2}, {3, 4}));
  ASSERT_TRUE(outer.ok());
  ExpectValues(*outer, DType::kFloat32, {2, 2}, {3, 4, 6, 8});
  EXPECT_FALSE(Dot(Make(DType::kFloat32, {2}, {1, 2}), Make(DType::kFloat32, {3}, {1, 2, 3})).ok());
  auto det = Det(Make(DType::kFloat32, {2, 3, 3},
                      {2, 1, 0, 1, 3, 1, 0, 1, 4, 0, 1, 2, 1, 0, 3, 4, -3, 8}));
  ASSERT_TRUE(det.ok());
  ExpectValues(*det, DType::kFloat32, {2}, {18, -2});
  EXPECT_FALSE(Det(Make(DType::kFloat32, {2, 3}, {1, 2, 3, 4, 5, 6})).ok());
}

TEST(MathLinalgTest, Einsum) {
  Tensor a = Make(DType::kFloat32, {2, 3}, {0, 1, 2, 3, 4, 5});
  Tensor b = Make(DType::kFloat32, {3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  const Tensor ab[] = {a, b};
  auto mm = Einsum("ij, jk -> ik", ab);
  ASSERT_TRUE(mm.ok()) << mm.status();
  ExpectValues(*mm, DType::kFloat32, {2, 4}, {20, 23, 26, 29, 56, 68, 80, 92});
  const Tensor sq[] = {Make(DType::kFloat32, {3, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8})};
  auto trace = Einsum("ii", sq);
  ASSERT_TRUE(trace.ok());
  ExpectValues(*trace, DType::kFloat32, {}, {12});
  const Tensor ell[] = {a, Make(DType::kFloat32, {3}, {1, 2, 3})};
  auto e = Einsum("...j,j", ell);
  ASSERT_TRUE(e.ok()) << e.status();
  ExpectValues(*e, DType::kFloat32, {2}, {8, 26});
  std::vector<double> iota(24);
  for (int k = 0; k < 24; ++k) iota[k] = k;
  const Tensor bil[] = {Make(DType::kFloat32, {2, 3}, std::vector<double>(6, 1.0)),
                        Make(DType::kFloat32, {2, 3, 4}, iota),
                        Make(DType::kFloat32, {2, 4}, std::vector<double>(8, 1.0))};
  auto bl = Einsum("bn,anm,bm->ba", bil);
  ASSERT_TRUE(bl.ok());
  ExpectValues(*bl, DType::kFloat32, {2, 2}, {66, 210, 66, 210});
  EXPECT_FALSE(Einsum("ij,jk->ik", {a}).ok());
  EXPECT_FALSE(Einsum("ij,jk->iz", ab).ok());
  EXPECT_FALSE(Einsum("ij,kk->ik", ab).ok());
}

// -0 orders below +0 in amax/amin/max/min (kernels_reduce.cc), whatever
// order the zeros come in; the compiled paths follow the same rule.
TEST(MathRegistryTest, ExtremesOrderNegativeZeroBelowPositiveZero) {
  const Tensor rows = Make(DType::kFloat32, {2, 3}, {0.0, -0.0, 0.0, -0.0, 0.0, -0.0});
  auto sign_bits = [](const Tensor& t) {
    std::vector<bool> bits;
    for (int64_t i = 0; i < t.numel(); ++i) bits.push_back(std::signbit(t.GetDouble(i)));
    return bits;
  };
  const std::vector<bool> negative = {true, true}, positive = {false, false};
  auto amin = RunKernel("aten::amin", {IValue::FromTensor(rows), IValue::IntList({1}), IValue::Bool(false)});
  ASSERT_EQ(amin.size(), 1u);
  EXPECT_EQ(sign_bits(amin[0].toTensor()), negative);
  auto amax = RunKernel("aten::amax", {IValue::FromTensor(rows), IValue::IntList({1}), IValue::Bool(false)});
  ASSERT_EQ(amax.size(), 1u);
  EXPECT_EQ(sign_bits(amax[0].toTensor()), positive);
  auto min_dim = RunKernel("aten::min.dim", {IValue::FromTensor(rows), IValue::Int(1), IValue::Bool(false)});
  ASSERT_EQ(min_dim.size(), 2u);
  EXPECT_EQ(sign_bits(min_dim[0].toTensor()), negative);
  ExpectValues(min_dim[1].toTensor(), DType::kInt64, {2}, {0, 0});  // the first extreme's index
  auto max_dim = RunKernel("aten::max.dim", {IValue::FromTensor(rows), IValue::Int(1), IValue::Bool(false)});
  ASSERT_EQ(max_dim.size(), 2u);
  EXPECT_EQ(sign_bits(max_dim[0].toTensor()), positive);
  auto all_min = RunKernel("aten::min", {IValue::FromTensor(Make(DType::kFloat32, {2}, {0.0, -0.0}))});
  ASSERT_EQ(all_min.size(), 1u);
  EXPECT_TRUE(std::signbit(all_min[0].toTensor().GetDouble(0)));
  auto all_max = RunKernel("aten::max", {IValue::FromTensor(Make(DType::kFloat32, {2}, {-0.0, 0.0}))});
  ASSERT_EQ(all_max.size(), 1u);
  EXPECT_FALSE(std::signbit(all_max[0].toTensor().GetDouble(0)));
}

// PyTorch 1.13: logsumexp of a row holding +inf is inf (not NaN), of only
// -inf is -inf, with NaN NaN.
TEST(MathRegistryTest, LogsumexpOfInfinities) {
  const double inf = INFINITY;
  const Tensor rows = Make(DType::kFloat32, {4, 2}, {inf, 1, -inf, -inf, inf, -inf, NAN, 1});
  auto r = RunKernel("aten::logsumexp", {IValue::FromTensor(rows), IValue::IntList({1}), IValue::Bool(false)});
  ASSERT_EQ(r.size(), 1u);
  const Tensor& t = r[0].toTensor();
  EXPECT_EQ(t.GetDouble(0), inf);
  EXPECT_EQ(t.GetDouble(1), -inf);
  EXPECT_EQ(t.GetDouble(2), inf);
  EXPECT_TRUE(std::isnan(t.GetDouble(3)));
}

TEST(MathRegistryTest, AdaptersDecodeArguments) {
  Tensor x = Make(DType::kFloat32, {2, 2}, {1, -2, 3, -4});
  auto mx = RunKernel("aten::max.dim", {IValue::FromTensor(x), IValue::Int(1), IValue::Bool(false)});
  ASSERT_EQ(mx.size(), 2u);
  ExpectValues(mx[0].toTensor(), DType::kFloat32, {2}, {1, 3});
  ExpectValues(mx[1].toTensor(), DType::kInt64, {2}, {0, 0});
  auto rsub = RunKernel("aten::rsub.Scalar", {IValue::FromTensor(x), IValue::Int(1), IValue::Int(2)});
  ASSERT_EQ(rsub.size(), 1u);
  ExpectValues(rsub[0].toTensor(), DType::kFloat32, {2, 2}, {-1, 5, -5, 9});
  auto red = RunKernel("kiln::reduce", {IValue::FromTensor(x), IValue::String("l1"),
                                  IValue::IntList({0}), IValue::Bool(false), IValue::Bool(false)});
  ASSERT_EQ(red.size(), 1u);
  ExpectValues(red[0].toTensor(), DType::kFloat32, {2}, {4, 6});
  auto half = RunKernel("aten::to.other", {IValue::FromTensor(x),
                                     IValue::FromTensor(Tensor::Empty(DType::kFloat16, {1})),
                                     IValue::Bool(false), IValue::Bool(false), IValue::None()});
  ASSERT_EQ(half.size(), 1u);
  ExpectValues(half[0].toTensor(), DType::kFloat16, {2, 2}, {1, -2, 3, -4});
  const ir::Operator* glu = Ops().Find("aten::glu");
  ASSERT_NE(glu, nullptr);
  EXPECT_FALSE(glu->kernel({IValue::FromTensor(Make(DType::kFloat32, {3}, {1, 2, 3})),
                            IValue::Int(0)})
                   .ok());
  EXPECT_FALSE(glu->kernel({IValue::Int(3)}).ok());
}

}  // namespace
}  // namespace kiln::runtime
