#include "runtime/kernels_special.h"

#include <cmath>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ir/ivalue.h"
#include "ir/op_registry.h"
#include "runtime/kernels.h"
#include "runtime/register_kernels.h"
#include "runtime/tensor_ops.h"
#include "support/tensor.h"

namespace kiln::runtime {
namespace {

using ir::IValue;

Tensor Make(DType dtype, std::vector<int64_t> sizes, std::vector<double> values) {
  Tensor t = Tensor::Empty(dtype, std::move(sizes));
  EXPECT_EQ(t.numel(), static_cast<int64_t>(values.size()));
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_TRUE(SetDouble(t, static_cast<int64_t>(i), values[i]).ok());
  }
  return t;
}

void ExpectValues(const absl::StatusOr<Tensor>& t, DType dtype, std::vector<int64_t> sizes,
                  std::vector<double> values, double tol = 1e-5) {
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->dtype(), dtype);
  EXPECT_EQ(t->sizes(), sizes);
  ASSERT_EQ(t->numel(), static_cast<int64_t>(values.size()));
  for (size_t i = 0; i < values.size(); ++i) {
    const double got = t->GetDouble(static_cast<int64_t>(i));
    if (std::isnan(values[i])) {
      EXPECT_TRUE(std::isnan(got)) << "element " << i;
    } else {
      EXPECT_NEAR(got, values[i], tol) << "element " << i;
    }
  }
}

bool IsInvalid(const absl::Status& s) { return s.code() == absl::StatusCode::kInvalidArgument; }

// Runs a registered kernel by qualified name.
absl::StatusOr<std::vector<IValue>> Call(const std::string& name, std::vector<IValue> args) {
  static const absl::Status registered = RegisterReferenceKernels(ir::BuiltinOps());
  if (!registered.ok()) return registered;
  const ir::Operator* op = ir::BuiltinOps().Find(name);
  if (op == nullptr || !op->kernel) return absl::NotFoundError(name);
  return op->kernel(args);
}

IValue T(Tensor t) { return IValue::FromTensor(std::move(t)); }

// ------------------------------------------------------------------ losses

TEST(NllLossTest, WeightsReductionsAndIgnoreIndex) {
  Tensor x = Make(DType::kFloat32, {2, 3}, {0.1, 0.2, 0.7, 1.0, -1.0, 0.5});
  absl::StatusOr<Tensor> lp = Softmax(x, 1, std::nullopt, true);
  ASSERT_TRUE(lp.ok());
  Tensor t = Make(DType::kInt64, {2}, {2, 0});
  Tensor w = Make(DType::kFloat32, {3}, {1, 2, 3});
  const int64_t kNoIgnore = -100;
  ExpectValues(NllLoss(*lp, t, w, LossReduction::kNone, kNoIgnore), DType::kFloat32, {2},
               {2.30384874, 0.55495697});
  ExpectValues(NllLoss(*lp, t, w, LossReduction::kMean, kNoIgnore), DType::kFloat32, {},
               {0.71470141});
  ExpectValues(NllLoss(*lp, t, w, LossReduction::kMean, 0), DType::kFloat32, {}, {0.76794958});
  // Every target ignored: the mean is 0 / 0.
  ExpectValues(NllLoss(*lp, Make(DType::kInt64, {2}, {-1, -1}), std::nullopt,
                       LossReduction::kMean, -1),
               DType::kFloat32, {}, {NAN});
}

TEST(NllLossTest, SpatialDimsAndNonContiguousInput) {
  // (N=2, C=3, D=2) with x[n, c, d] = (6n + 2c + d) / 5, also read through
  // a transposed view of an (N, D, C) tensor.
  std::vector<double> v, vt;
  for (int i = 0; i < 12; ++i) v.push_back(i / 5.0);
  for (int n = 0; n < 2; ++n) {
    for (int d = 0; d < 2; ++d) {
      for (int c = 0; c < 3; ++c) vt.push_back((6 * n + 2 * c + d) / 5.0);
    }
  }
  Tensor x = Make(DType::kFloat64, {2, 3, 2}, v);
  absl::StatusOr<Tensor> xt = Transpose(Make(DType::kFloat64, {2, 2, 3}, vt), 1, 2);
  ASSERT_TRUE(xt.ok());
  ASSERT_FALSE(xt->is_contiguous());
  Tensor t = Make(DType::kInt64, {2, 2}, {0, 2, 1, 1});
  ExpectValues(NllLoss(*xt, t, std::nullopt, LossReduction::kNone, -100), DType::kFloat64, {2, 2},
               {0.0, -1.0, -1.6, -1.8});
  ExpectValues(NllLoss(x, t, std::nullopt, LossReduction::kSum, 1), DType::kFloat64, {}, {-1.0});
}

TEST(NllLossTest, RejectsBadTargets) {
  Tensor x = Make(DType::kFloat32, {2, 3}, {0, 0, 0, 0, 0, 0});
  EXPECT_TRUE(IsInvalid(NllLoss(x, Make(DType::kInt64, {2}, {0, 3}), std::nullopt,
                                LossReduction::kMean, -100).status()));
  EXPECT_TRUE(IsInvalid(NllLoss(x, Make(DType::kInt64, {3}, {0, 1, 2}), std::nullopt,
                                LossReduction::kMean, -100).status()));
  EXPECT_TRUE(IsInvalid(NllLoss(x, Make(DType::kFloat32, {2}, {0, 1}), std::nullopt,
                                LossReduction::kMean, -100).status()));
  EXPECT_TRUE(IsInvalid(NllLoss(x, Make(DType::kInt64, {2}, {0, 1}),
                                Make(DType::kFloat32, {2}, {1, 1}), LossReduction::kMean, -100)
                            .status()));
  EXPECT_TRUE(IsInvalid(LossReductionFromCode(3, "nll_loss").status()));
}

TEST(CrossEntropyTest, LabelSmoothingAndProbabilities) {
  Tensor x = Make(DType::kFloat32, {2, 3}, {0.1, 0.2, 0.7, 1.0, -1.0, 0.5});
  Tensor t = Make(DType::kInt64, {2}, {2, 0});
  Tensor w = Make(DType::kFloat32, {3}, {1, 2, 3});
  ExpectValues(CrossEntropyLoss(x, t, w, LossReduction::kMean, -100, 0.1), DType::kFloat32, {},
               {0.76854324});
  ExpectValues(CrossEntropyLoss(x, t, w, LossReduction::kNone, 0, 0.1), DType::kFloat32, {2},
               {2.28038716, 0.0});
  Tensor p = Make(DType::kFloat32, {2, 3}, {0.2, 0.3, 0.5, 1.0, 0, 0});
  ExpectValues(CrossEntropyLoss(x, p, w, LossReduction::kMean, -100, 0.2), DType::kFloat32, {},
               {1.59774446});
}

TEST(LossKernelsTest, RegisteredAtenOverloads) {
  Tensor x = Make(DType::kFloat32, {2, 3}, {0.1, 0.2, 0.7, 1.0, -1.0, 0.5});
  Tensor t = Make(DType::kInt64, {2}, {2, 0});
  auto r = Call("aten::cross_entropy_loss",
                {T(x), T(t), IValue(), IValue::Int(1), IValue::Int(-100), IValue::Double(0.0)});
  ASSERT_TRUE(r.ok()) << r.status();
  // -(log_softmax(x)[0,2] + log_softmax(x)[1,0]) / 2
  ExpectValues((*r)[0].toTensor(), DType::kFloat32, {}, {0.66145325});
  // nll_loss2d insists on 4-D input.
  auto bad = Call("aten::nll_loss2d", {T(x), T(t), IValue(), IValue::Int(1), IValue::Int(-100)});
  EXPECT_TRUE(IsInvalid(bad.status()));
}

// --------------------------------------------------------------- detection

TEST(NmsTest, SuppressesByIouAndLimitsOutput) {
  Tensor boxes = Make(DType::kFloat32, {1, 6, 4},
                      {0, 0, 1, 1, 0, 0.1, 1, 1.1, 0, -0.1, 1, 0.9,
                       0, 10, 1, 11, 0, 10.1, 1, 11.1, 0, 100, 1, 101});
  Tensor scores = Make(DType::kFloat32, {1, 1, 6}, {0.9, 0.75, 0.6, 0.95, 0.5, 0.3});
  ExpectValues(NonMaxSuppression(boxes, scores, 3, 0.5, 0.0, false), DType::kInt64, {3, 3},
               {0, 0, 3, 0, 0, 0, 0, 0, 5});
  ExpectValues(NonMaxSuppression(boxes, scores, 2, 0.5, 0.0, false), DType::kInt64, {2, 3},
               {0, 0, 3, 0, 0, 0});
  ExpectValues(NonMaxSuppression(boxes, scores, 3, 0.5, 0.4, false), DType::kInt64, {2, 3},
               {0, 0, 3, 0, 0, 0});
  ExpectValues(NonMaxSuppression(boxes, scores, 0, 0.5, 0.0, false), DType::kInt64, {0, 3}, {});
}

TEST(NmsTest, CenterPointBoxesAndBadShapes) {
  Tensor boxes = Make(DType::kFloat32, {1, 3, 4},
                      {0.5, 0.5, 1, 1, 0.5, 0.6, 1, 1, 0.5, 10.5, 1, 1});
  Tensor scores = Make(DType::kFloat32, {1, 1, 3}, {0.9, 0.95, 0.5});
  ExpectValues(NonMaxSuppression(boxes, scores, 5, 0.5, 0.0, true), DType::kInt64, {2, 3},
               {0, 0, 1, 0, 0, 2});
  EXPECT_TRUE(IsInvalid(
      NonMaxSuppression(boxes, Make(DType::kFloat32, {1, 1, 2}, {0, 0}), 5, 0.5, 0, false)
          .status()));
  EXPECT_TRUE(IsInvalid(NonMaxSuppression(boxes, scores, 5, NAN, 0, true).status()));
}

TEST(NmsTest, RegisteredKernelReadsScalarTensors) {
  Tensor boxes = Make(DType::kFloat32, {1, 2, 4}, {0, 0, 1, 1, 0, 0, 1, 1});
  Tensor scores = Make(DType::kFloat32, {1, 1, 2}, {0.5, 0.6});
  // Absent max_output_boxes_per_class selects nothing; NaN counts as 0.
  auto none = Call("kiln::non_max_suppression",
                   {T(boxes), T(scores), IValue(), IValue(), IValue(), IValue::Int(0)});
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ((*none)[0].toTensor().sizes(), (std::vector<int64_t>{0, 3}));
  auto nan = Call("kiln::non_max_suppression",
                  {T(boxes), T(scores), T(Make(DType::kFloat32, {1}, {NAN})), IValue(), IValue(),
                   IValue::Int(0)});
  ASSERT_TRUE(nan.ok()) << nan.status();
  EXPECT_EQ((*nan)[0].toTensor().sizes(), (std::vector<int64_t>{0, 3}));
  // Identical boxes: the higher score wins, the other is suppressed (IoU 1).
  auto one = Call("kiln::non_max_suppression",
                  {T(boxes), T(scores), T(Make(DType::kInt64, {1}, {10})),
                   T(Make(DType::kFloat32, {1}, {0.5})), IValue(), IValue::Int(0)});
  ASSERT_TRUE(one.ok()) << one.status();
  ExpectValues((*one)[0].toTensor(), DType::kInt64, {1, 3}, {0, 0, 1});
  auto bad = Call("kiln::non_max_suppression",
                  {T(boxes), T(scores), T(Make(DType::kInt64, {2}, {1, 2})), IValue(), IValue(),
                   IValue::Int(0)});
  EXPECT_TRUE(IsInvalid(bad.status()));
}

// ------------------------------------------------------------ quantization

TEST(QuantizeTest, RoundsHalfToEvenAndSaturates) {
  Tensor x = Make(DType::kFloat32, {6}, {0, 2, 3, 1000, -254, -1000});
  Tensor scale = Make(DType::kFloat32, {}, {2});
  Tensor zp = Make(DType::kUInt8, {}, {128});
  ExpectValues(QuantizeLinear(x, scale, zp, 1, DType::kUInt8), DType::kUInt8, {6},
               {128, 129, 130, 255, 1, 0});
  ExpectValues(QuantizeLinear(Make(DType::kFloat32, {3}, {5, -5, 300}), scale, std::nullopt, 1,
                              DType::kInt8),
               DType::kInt8, {3}, {2, -2, 127});
}

TEST(QuantizeTest, PerAxisRoundTrip) {
  Tensor x = Make(DType::kFloat32, {1, 2, 2}, {-1, 1, 4, 8});
  Tensor scale = Make(DType::kFloat32, {2}, {1, 2});
  Tensor zp = Make(DType::kUInt8, {2}, {10, 20});
  absl::StatusOr<Tensor> q = QuantizeLinear(x, scale, zp, 1, DType::kUInt8);
  ExpectValues(q, DType::kUInt8, {1, 2, 2}, {9, 11, 22, 24});
  ExpectValues(DequantizeLinear(*q, scale, zp, 1), DType::kFloat32, {1, 2, 2}, {-1, 1, 4, 8});
  EXPECT_TRUE(IsInvalid(
      QuantizeLinear(x, Make(DType::kFloat32, {3}, {1, 1, 1}), std::nullopt, 1, DType::kUInt8)
          .status()));
}

TEST(QuantizeTest, DynamicQuantizeLinear) {
  absl::StatusOr<std::vector<Tensor>> r =
      DynamicQuantizeLinear(Make(DType::kFloat32, {6}, {0, 2, -3, -2.5, 1.34, 0.5}));
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectValues((*r)[1], DType::kFloat32, {}, {0.0196078438}, 1e-9);
  ExpectValues((*r)[2], DType::kUInt8, {}, {153});
  ExpectValues((*r)[0], DType::kUInt8, {6}, {153, 255, 0, 26, 221, 179});
}

TEST(QuantizeTest, QLinearMatMul) {
  Tensor a = Make(DType::kUInt8, {2, 4}, {208, 236, 0, 238, 3, 214, 255, 29});
  Tensor b = Make(DType::kUInt8, {4, 3}, {152, 51, 244, 60, 26, 255, 0, 127, 246, 127, 254, 247});
  ExpectValues(QLinearMatMul(a, Make(DType::kFloat32, {1}, {0.0066}),
                             Make(DType::kUInt8, {1}, {113}), b,
                             Make(DType::kFloat32, {1}, {0.00705}),
                             Make(DType::kUInt8, {1}, {114}), Make(DType::kFloat32, {1}, {0.0107}),
                             Make(DType::kUInt8, {1}, {118})),
               DType::kUInt8, {2, 3}, {168, 115, 255, 1, 66, 151});
}

// ------------------------------------------------------ signal processing

TEST(SignalTest, Windows) {
  ExpectValues(Window(CosineWindow::Hann(), 4, true, DType::kFloat32, "w"), DType::kFloat32, {4},
               {0, 0.5, 1, 0.5});
  ExpectValues(Window(CosineWindow::Hann(), 5, false, DType::kFloat64, "w"), DType::kFloat64, {5},
               {0, 0.5, 1, 0.5, 0});
  ExpectValues(Window(CosineWindow::Blackman(), 5, false, DType::kFloat32, "w"), DType::kFloat32,
               {5}, {0, 0.34, 1, 0.34, 0});
  ExpectValues(Window(CosineWindow::Hann(), 1, true, DType::kFloat32, "w"), DType::kFloat32, {1},
               {1});
  EXPECT_TRUE(IsInvalid(Window(CosineWindow::Hann(), -1, true, DType::kFloat32, "w").status()));
  auto r = Call("aten::hamming_window.periodic", {IValue::Int(2), IValue::Bool(true), IValue()});
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectValues((*r)[0].toTensor(), DType::kFloat32, {2}, {0.08, 1.0});
}

TEST(SignalTest, DftForwardInverseOnesided) {
  // x = [1, 2, 0, -1] along axis 1 of [1, 4, 1].
  Tensor x = Make(DType::kFloat32, {1, 4, 1}, {1, 2, 0, -1});
  absl::StatusOr<Tensor> y = Dft(x, std::nullopt, 1, false, false);
  ExpectValues(y, DType::kFloat32, {1, 4, 2}, {2, 0, 1, -3, 0, 0, 1, 3});
  ExpectValues(Dft(*y, std::nullopt, 1, true, false), DType::kFloat32, {1, 4, 2},
               {1, 0, 2, 0, 0, 0, -1, 0});
  ExpectValues(Dft(x, std::nullopt, 1, false, true), DType::kFloat32, {1, 3, 2},
               {2, 0, 1, -3, 0, 0});
  // Zero padding to 8 points keeps bin 0 as the sum.
  absl::StatusOr<Tensor> padded = Dft(x, 8, 1, false, false);
  ASSERT_TRUE(padded.ok());
  EXPECT_EQ(padded->sizes(), (std::vector<int64_t>{1, 8, 2}));
  EXPECT_NEAR(padded->GetDouble(0), 2.0, 1e-6);
  EXPECT_TRUE(IsInvalid(Dft(x, std::nullopt, 2, false, false).status()));
  // A huge dft_length is refused instead of running for hours.
  EXPECT_EQ(Dft(x, int64_t{1} << 26, 1, false, false).status().code(),
            absl::StatusCode::kUnimplemented);
}

TEST(SignalTest, StftMatchesFramewiseDft) {
  std::vector<double> v;
  for (int i = 0; i < 8; ++i) v.push_back(i);
  Tensor s = Make(DType::kFloat32, {1, 8, 1}, v);
  absl::StatusOr<Tensor> y = Stft(s, 2, std::nullopt, 4, true);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->sizes(), (std::vector<int64_t>{1, 3, 3, 2}));
  // Frame 1 is [2, 3, 4, 5]: bin 0 = 14, bin 1 = -2 + 2i, bin 2 = -2.
  for (int k = 0; k < 6; ++k) {
    const double want[] = {14, 0, -2, 2, -2, 0};
    EXPECT_NEAR(y->GetDouble(6 + k), want[k], 1e-5) << k;
  }
  Tensor window = Make(DType::kFloat32, {4}, {0, 1, 1, 0});
  absl::StatusOr<Tensor> yw = Stft(s, 4, window, std::nullopt, false);
  ASSERT_TRUE(yw.ok()) << yw.status();
  EXPECT_EQ(yw->sizes(), (std::vector<int64_t>{1, 2, 4, 2}));
  EXPECT_NEAR(yw->GetDouble(0), 3.0, 1e-6);  // 1 + 2
  EXPECT_TRUE(IsInvalid(Stft(s, 0, std::nullopt, 4, true).status()));
  EXPECT_TRUE(IsInvalid(Stft(s, 2, std::nullopt, std::nullopt, true).status()));
}

TEST(SignalTest, MelWeightMatrixShapeAndRows) {
  absl::StatusOr<Tensor> m = MelWeightMatrix(8, 16, 8192, 0, 4096, DType::kFloat32);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->sizes(), (std::vector<int64_t>{9, 8}));
  for (int64_t i = 0; i < m->numel(); ++i) {
    EXPECT_GE(m->GetDouble(i), 0.0);
    EXPECT_LE(m->GetDouble(i), 1.0);
  }
  EXPECT_TRUE(IsInvalid(MelWeightMatrix(0, 16, 8192, 0, 4096, DType::kFloat32).status()));
}

// -------------------------------------------------------------------- text

TEST(TextTest, TfIdfBigramsWithSkips) {
  TfIdfOptions o;
  o.min_gram_length = 2;
  o.max_gram_length = 2;
  o.ngram_counts = {0, 4};
  o.ngram_indexes = {0, 1, 2, 3, 4, 5, 6};
  o.pool_int64s = {2, 3, 5, 4, 5, 6, 7, 8, 6, 7};
  Tensor x = Make(DType::kInt32, {12}, {1, 1, 3, 3, 3, 7, 8, 6, 7, 5, 6, 8});
  ExpectValues(TfIdfVectorize(x, o), DType::kFloat32, {7}, {0, 0, 0, 0, 1, 1, 1});
  o.max_skip_count = 5;
  ExpectValues(TfIdfVectorize(x, o), DType::kFloat32, {7}, {0, 0, 0, 0, 1, 3, 1});
  o.min_gram_length = 1;
  ExpectValues(TfIdfVectorize(x, o), DType::kFloat32, {7}, {0, 3, 1, 0, 1, 3, 1});
  Tensor batch = Make(DType::kInt32, {2, 6}, {1, 1, 3, 3, 3, 7, 8, 6, 7, 5, 6, 8});
  o.min_gram_length = 2;
  o.max_skip_count = 0;
  ExpectValues(TfIdfVectorize(batch, o), DType::kFloat32, {2, 7},
               {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1});
  o.max_skip_count = int64_t{1} << 62;  // wider than the row: same as skipping up to C
  ExpectValues(TfIdfVectorize(batch, o), DType::kFloat32, {2, 7},
               {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1});
  o.ngram_counts = {0, 5};  // 5 unigrams leave 5 values: not whole bigrams
  EXPECT_TRUE(IsInvalid(TfIdfVectorize(x, o).status()));
}

TEST(TextTest, StringNormalizer) {
  StringTensor x{{4}, {"monday", "tuesday", "Monday", "thursday"}};
  absl::StatusOr<StringTensor> y = StringNormalize(x, {"monday"}, true, "UPPER");
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->sizes, (std::vector<int64_t>{3}));
  EXPECT_EQ(y->data, (std::vector<std::string>{"TUESDAY", "MONDAY", "THURSDAY"}));
  y = StringNormalize(StringTensor{{1, 2}, {"MONDAY", "monday"}}, {"monday"}, false, "LOWER");
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->sizes, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(y->data, (std::vector<std::string>{""}));
  EXPECT_TRUE(IsInvalid(StringNormalize(x, {}, true, "TITLE").status()));
  EXPECT_TRUE(IsInvalid(StringNormalize(StringTensor{{2, 2}, {"a", "b", "c", "d"}}, {}, true,
                                        "NONE").status()));
  // Through the registry, in the (sizes, data) tuple form.
  auto r = Call("kiln::string_normalizer",
                {IValue::Tuple({IValue::IntList({2}), IValue::List({IValue::String("a"),
                                                                     IValue::String("B")})}),
                 IValue::List({IValue::String("b")}), IValue::Bool(false),
                 IValue::String("NONE")});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0].DebugString(), "([1], [\"a\"])");
}

// ------------------------------------------------------- random / dropout

TEST(RandomTest, ShapesRangesAndSeeds) {
  std::mt19937_64 gen = MakeGenerator(1.0);
  absl::StatusOr<Tensor> u = RandomUniform({3, 4}, -2, 3, DType::kFloat32, gen);
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->sizes(), (std::vector<int64_t>{3, 4}));
  for (int64_t i = 0; i < u->numel(); ++i) {
    EXPECT_GE(u->GetDouble(i), -2);
    EXPECT_LE(u->GetDouble(i), 3);
  }
  std::mt19937_64 again = MakeGenerator(1.0);
  absl::StatusOr<Tensor> u2 = RandomUniform({3, 4}, -2, 3, DType::kFloat32, again);
  EXPECT_TRUE(u->ValueEquals(*u2));
  absl::StatusOr<Tensor> b = Bernoulli(Make(DType::kFloat32, {4}, {0, 1, 0, 1}), DType::kInt64, gen);
  ExpectValues(b, DType::kInt64, {4}, {0, 1, 0, 1});
  EXPECT_TRUE(IsInvalid(Bernoulli(Make(DType::kFloat32, {1}, {1.5}), DType::kFloat32, gen).status()));
  absl::StatusOr<Tensor> m =
      MultinomialFromWeights(Make(DType::kFloat32, {2, 3}, {0, 0, 1, 1, 0, 0}), 5, true,
                             DType::kInt32, gen);
  ExpectValues(m, DType::kInt32, {2, 5}, {2, 2, 2, 2, 2, 0, 0, 0, 0, 0});
  EXPECT_TRUE(IsInvalid(RandomUniform({-1}, 0, 1, DType::kFloat32, gen).status()));
  EXPECT_TRUE(IsInvalid(RandomNormal({2}, 0, 1, DType::kInt64, gen).status()));
}

TEST(RandomTest, DropoutEvalAndTraining) {
  std::mt19937_64 gen = MakeGenerator(0.0);
  Tensor x = Make(DType::kFloat32, {2, 2}, {1, 2, 3, 4});
  absl::StatusOr<std::vector<Tensor>> eval = Dropout(x, 0.5, false, gen);
  ASSERT_TRUE(eval.ok());
  ExpectValues((*eval)[0], DType::kFloat32, {2, 2}, {1, 2, 3, 4});
  ExpectValues((*eval)[1], DType::kBool, {2, 2}, {1, 1, 1, 1});
  absl::StatusOr<std::vector<Tensor>> train = Dropout(x, 0.5, true, gen);
  ASSERT_TRUE(train.ok());
  for (int64_t i = 0; i < 4; ++i) {
    const bool keep = (*train)[1].GetInt(i) != 0;
    EXPECT_EQ((*train)[0].GetDouble(i), keep ? 2 * x.GetDouble(i) : 0.0);
  }
  auto r = Call("kiln::dropout", {T(x), T(Make(DType::kFloat32, {}, {0})),
                                  T(Make(DType::kBool, {}, {1})), IValue()});
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectValues((*r)[0].toTensor(), DType::kFloat32, {2, 2}, {1, 2, 3, 4});
  EXPECT_TRUE(IsInvalid(Dropout(x, 1.5, true, gen).status()));
}

// ------------------------------------------------------------------ training

TEST(TrainingTest, AdagradAdamMomentum) {
  Tensor x = Make(DType::kFloat32, {2}, {1.0, -2.0});
  Tensor g = Make(DType::kFloat32, {2}, {0.5, 0.25});
  Tensor h = Make(DType::kFloat32, {2}, {0.1, 0.0});
  absl::StatusOr<std::vector<Tensor>> ada = AdagradStep(0.1, 3, x, g, h, 0.1, 1e-5, 0.001);
  ASSERT_TRUE(ada.ok()) << ada.status();
  ExpectValues((*ada)[0], DType::kFloat32, {2}, {0.93495216, -2.07691998});
  ExpectValues((*ada)[1], DType::kFloat32, {2}, {0.351001, 0.061504});
  // Momentum, first step: beta is replaced by 1.
  absl::StatusOr<std::vector<Tensor>> mom = MomentumStep(0.1, 0, x, g, h, 0.9, 0.5, 0.0, false);
  ASSERT_TRUE(mom.ok());
  ExpectValues((*mom)[1], DType::kFloat32, {2}, {0.59, 0.25});
  ExpectValues((*mom)[0], DType::kFloat32, {2}, {0.941, -2.025});
  absl::StatusOr<std::vector<Tensor>> nes = MomentumStep(0.1, 1, x, g, h, 0.9, 0.5, 0.0, true);
  ASSERT_TRUE(nes.ok());
  // v = 0.09 + 0.25 = 0.34 -> x - 0.1 * (0.5 + 0.9 * 0.34)
  ExpectValues((*nes)[0], DType::kFloat32, {2}, {1.0 - 0.1 * (0.5 + 0.9 * 0.34),
                                                 -2.0 - 0.1 * (0.25 + 0.9 * 0.125)});
  // Adam at t = 0 uses the raw rate.
  absl::StatusOr<std::vector<Tensor>> adam =
      AdamStep(0.1, 0, x, g, h, h, 0.9, 0.999, 0.0, 0.0, 0.0);
  ASSERT_TRUE(adam.ok());
  const double v0 = 0.1 * 0.5 + 0.9 * 0.1, h0 = 0.999 * 0.1 + 0.001 * 0.25;
  EXPECT_NEAR((*adam)[0].GetDouble(0), 1.0 - 0.1 * v0 / std::sqrt(h0), 1e-6);
  EXPECT_TRUE(IsInvalid(AdagradStep(0.1, 0, x, Make(DType::kFloat32, {1}, {0}), h, 0, 0, 0).status()));
}

}  // namespace
}  // namespace kiln::runtime
