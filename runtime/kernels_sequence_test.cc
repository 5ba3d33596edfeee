#include "runtime/kernels_sequence.h"

#include <cmath>
#include <optional>
#include <string>
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

Tensor Make(DType dtype, std::vector<int64_t> sizes, std::vector<double> values) {
  Tensor t = Tensor::Empty(dtype, std::move(sizes));
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_TRUE(SetDouble(t, static_cast<int64_t>(i), values[i]).ok());
  }
  return t;
}

// Deterministic float32 test data: 0.5 * sin(0.7 k + seed), as the
// expectations' generator (an independent numpy implementation) makes it.
Tensor Gen(std::vector<int64_t> sizes, double seed) {
  Tensor t = Tensor::Empty(DType::kFloat32, std::move(sizes));
  for (int64_t k = 0; k < t.numel(); ++k) {
    EXPECT_TRUE(SetDouble(t, k, static_cast<float>(std::sin(0.7 * k + seed) * 0.5)).ok());
  }
  return t;
}

void ExpectValues(const Tensor& t, std::vector<int64_t> sizes, std::vector<double> values,
                  double tol = 2e-6) {
  EXPECT_EQ(t.dtype(), DType::kFloat32);
  ASSERT_EQ(t.sizes(), sizes);
  ASSERT_EQ(t.numel(), static_cast<int64_t>(values.size()));
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_NEAR(t.GetDouble(static_cast<int64_t>(i)), values[i], tol) << "element " << i;
  }
}

std::vector<int64_t> StateShape(int64_t layout, int64_t dirs, int64_t batch, int64_t hidden) {
  return layout == 0 ? std::vector<int64_t>{dirs, batch, hidden}
                     : std::vector<int64_t>{batch, dirs, hidden};
}

// seq 3, batch 2, input 2, hidden 2 with the generator's seeds.
RecurrentInputs SmallInputs(int64_t gates, int64_t dirs, int64_t layout, bool bias, bool init) {
  RecurrentInputs in;
  in.x = Gen(layout == 0 ? std::vector<int64_t>{3, 2, 2} : std::vector<int64_t>{2, 3, 2}, 1.0);
  in.w = Gen({dirs, gates * 2, 2}, 2.0);
  in.r = Gen({dirs, gates * 2, 2}, 3.0);
  if (bias) in.b = Gen({dirs, 2 * gates * 2}, 4.0);
  if (init) {
    in.initial_h = Gen(StateShape(layout, dirs, 2, 2), 5.0);
    in.initial_c = Gen(StateShape(layout, dirs, 2, 2), 6.0);
  }
  return in;
}

// ------------------------------------------------------------ recurrent

TEST(RecurrentTest, LstmBidirectionalSequenceLensPeepholes) {
  RecurrentInputs in = SmallInputs(4, 2, 0, true, true);
  in.p = Gen({2, 6}, 7.0);
  in.sequence_lens = Make(DType::kInt32, {2}, {3, 2});
  RecurrentOptions opt;
  opt.direction = "bidirectional";
  opt.hidden_size = 2;
  auto out = Recurrent(RecurrentKind::kLstm, in, opt);
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectValues(out->y, {3, 2, 2, 2},
               {0.0541565672, 0.0911900012, 0.145986709, 0.19877303, 0.0378963096, 0.0842630208,
                0.0554864946, 0.108144171, 0.148819541, 0.154559682, 0.194983785, 0.209406479,
                0.0518819804, 0.148726007, 0.0241612316, 0.0944556856, 0.122283756, 0.183407352,
                0, 0, -0.000534289024, 0.0162062323, 0, 0});
  ExpectValues(out->y_h, {2, 2, 2},
               {0.122283756, 0.183407352, 0.194983785, 0.209406479, 0.0378963096, 0.0842630208,
                0.0554864946, 0.108144171});
  ExpectValues(out->y_c, {2, 2, 2},
               {0.464007404, 0.420063903, 0.526148463, 0.526600553, 0.12738789, 0.363786097,
                0.158118753, 0.402019148});
}

TEST(RecurrentTest, LstmBatchFirstClipInputForget) {
  RecurrentInputs in = SmallInputs(4, 1, 1, true, true);
  RecurrentOptions opt;
  opt.layout = 1;
  opt.clip = 0.3;
  opt.input_forget = true;
  auto out = Recurrent(RecurrentKind::kLstm, in, opt);
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectValues(out->y, {2, 3, 1, 2},
               {0.0263078358, 0.100318171, 0.0673180154, 0.109005519, 0.0903584292, 0.113952835,
                0.155127773, 0.16261528, 0.140674924, 0.152422413, 0.131709404, 0.137522739});
  ExpectValues(out->y_h, {2, 1, 2}, {0.0903584292, 0.113952835, 0.131709404, 0.137522739});
  ExpectValues(out->y_c, {2, 1, 2}, {0.215609623, 0.274463339, 0.319990691, 0.328016962});
}

TEST(RecurrentTest, GruReverseLinearBeforeReset) {
  RecurrentInputs in = SmallInputs(3, 1, 0, true, true);
  RecurrentOptions opt;
  opt.direction = "reverse";
  opt.linear_before_reset = true;
  auto out = Recurrent(RecurrentKind::kGru, in, opt);
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectValues(out->y, {3, 1, 2, 2},
               {0.0327681001, 0.268203327, 0.0973743709, 0.281746203, -0.27321924, 0.197429484,
                -0.0218961037, 0.209758551, -0.161248491, 0.0682339403, 0.229166957,
                0.297102877});
  ExpectValues(out->y_h, {1, 2, 2}, {0.0327681001, 0.268203327, 0.0973743709, 0.281746203});
  EXPECT_FALSE(out->y_c.defined());
}

TEST(RecurrentTest, GruDefaultsWithoutBiasOrInitialState) {
  RecurrentInputs in = SmallInputs(3, 1, 0, false, false);
  auto out = Recurrent(RecurrentKind::kGru, in, RecurrentOptions());
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectValues(out->y, {3, 1, 2, 2},
               {0.171791714, 0.0108928221, 0.0788180495, 0.034195148, -0.103047151,
                -0.00607670347, -0.118733539, -0.0234179871, 0.0573936287, -0.00902666576,
                0.0832011704, 0.029466544});
  ExpectValues(out->y_h, {1, 2, 2}, {0.0573936287, -0.00902666576, 0.0832011704, 0.029466544});
}

// Through the registry: argument decoding, activation parameters consumed in
// order (LeakyRelu takes alpha 0.2; ScaledTanh alpha 1.5 and beta 0.5).
TEST(RecurrentTest, RnnBidirectionalActivationsThroughRegistry) {
  ir::OpRegistry& ops = ir::BuiltinOps();
  ASSERT_TRUE(RegisterReferenceKernels(ops).ok());
  const ir::Operator* op = ops.Find("kiln::rnn");
  ASSERT_NE(op, nullptr);
  ASSERT_TRUE(op->kernel);
  RecurrentInputs in = SmallInputs(1, 2, 0, true, true);
  std::vector<IValue> args = {
      IValue::FromTensor(in.x),
      IValue::FromTensor(in.w),
      IValue::FromTensor(in.r),
      IValue::FromTensor(*in.b),
      IValue::FromTensor(Make(DType::kInt64, {2}, {1, 3})),
      IValue::FromTensor(*in.initial_h),
      IValue::List({IValue::String("LeakyRelu"), IValue::String("ScaledTanh")}),
      IValue::List({IValue::Double(0.2), IValue::Double(1.5)}),
      IValue::List({IValue::Double(0.5)}),
      IValue::None(),
      IValue::String("bidirectional"),
      IValue::Int(2),
      IValue::Int(0)};
  auto out = op->kernel(args);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 2u);
  ExpectValues((*out)[0].toTensor(), {3, 2, 2, 2},
               {-0.0856859687, -0.0984155711, -0.139847652, -0.167830165, 0.193840642,
                0.828243804, 0.336603615, 0.879565999, 0, 0, -0.194193503, -0.062777993, 0, 0,
                0.697256681, 0.712887953, 0, 0, -0.0932229245, -0.133682714, 0, 0, 0.225965599,
                0.520984986});
  ExpectValues((*out)[1].toTensor(), {2, 2, 2},
               {-0.0856859687, -0.0984155711, -0.0932229245, -0.133682714, 0.193840642,
                0.828243804, 0.336603615, 0.879565999});
}

TEST(RecurrentTest, RejectsBadInputs) {
  RecurrentInputs in = SmallInputs(4, 1, 0, true, true);
  RecurrentOptions opt;
  opt.direction = "sideways";
  EXPECT_EQ(Recurrent(RecurrentKind::kLstm, in, opt).status().code(),
            absl::StatusCode::kInvalidArgument);
  opt = RecurrentOptions();
  opt.hidden_size = 5;
  EXPECT_FALSE(Recurrent(RecurrentKind::kLstm, in, opt).ok());
  opt = RecurrentOptions();
  opt.activations = {"Sigmoid", "Bogus", "Tanh"};
  EXPECT_FALSE(Recurrent(RecurrentKind::kLstm, in, opt).ok());
  opt.activations = {"Sigmoid"};
  EXPECT_FALSE(Recurrent(RecurrentKind::kLstm, in, opt).ok());
  // W for GRU's three gates given to LSTM.
  RecurrentInputs gru = SmallInputs(3, 1, 0, true, true);
  auto wrong = Recurrent(RecurrentKind::kLstm, gru, RecurrentOptions());
  EXPECT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("LSTM"), absl::string_view::npos);
  in.sequence_lens = Make(DType::kInt64, {2}, {4, 1});
  EXPECT_FALSE(Recurrent(RecurrentKind::kLstm, in, RecurrentOptions()).ok());
  in.sequence_lens = Make(DType::kInt64, {3}, {1, 1, 1});
  EXPECT_FALSE(Recurrent(RecurrentKind::kLstm, in, RecurrentOptions()).ok());
  in.sequence_lens.reset();
  in.x = Make(DType::kInt64, {3, 2, 2}, {});
  EXPECT_FALSE(Recurrent(RecurrentKind::kLstm, in, RecurrentOptions()).ok());
}

// ------------------------------------------------------------ sequences

std::vector<Tensor> ThreeTensors() {
  return {Make(DType::kFloat32, {1}, {10}), Make(DType::kFloat32, {2}, {20, 21}),
          Make(DType::kFloat32, {1}, {30})};
}

Tensor Pos(int64_t p) { return Tensor::ScalarInt(p, DType::kInt64); }

TEST(SequenceTest, AtInsertEraseWithNegativePositions) {
  const std::vector<Tensor> seq = ThreeTensors();
  auto at = SequenceAt(seq, Pos(-2));
  ASSERT_TRUE(at.ok()) << at.status();
  EXPECT_EQ(at->GetDouble(1), 21);
  EXPECT_FALSE(SequenceAt(seq, Pos(3)).ok());
  EXPECT_FALSE(SequenceAt(seq, Pos(-4)).ok());
  EXPECT_FALSE(SequenceAt({}, Pos(0)).ok());

  auto inserted = SequenceInsert(seq, Make(DType::kFloat32, {1}, {5}), Pos(-3));
  ASSERT_TRUE(inserted.ok()) << inserted.status();
  ASSERT_EQ(inserted->size(), 4u);
  EXPECT_EQ((*inserted)[0].GetDouble(0), 5);
  EXPECT_EQ(seq.size(), 3u);  // the input is untouched
  auto at_end = SequenceInsert(seq, Make(DType::kFloat32, {1}, {5}), Pos(3));
  ASSERT_TRUE(at_end.ok());
  EXPECT_EQ((*at_end)[3].GetDouble(0), 5);
  auto appended = SequenceInsert(seq, Make(DType::kFloat32, {1}, {6}), std::nullopt);
  ASSERT_TRUE(appended.ok());
  EXPECT_EQ((*appended)[3].GetDouble(0), 6);
  EXPECT_FALSE(SequenceInsert(seq, Make(DType::kInt64, {1}, {6}), std::nullopt).ok());
  EXPECT_FALSE(SequenceInsert(seq, Make(DType::kFloat32, {1}, {6}), Pos(4)).ok());

  auto erased = SequenceErase(seq, Pos(-3));
  ASSERT_TRUE(erased.ok());
  ASSERT_EQ(erased->size(), 2u);
  EXPECT_EQ((*erased)[0].GetDouble(0), 20);
  auto popped = SequenceErase(seq, std::nullopt);
  ASSERT_TRUE(popped.ok());
  ASSERT_EQ(popped->size(), 2u);
  EXPECT_EQ(popped->back().GetDouble(1), 21);
  EXPECT_FALSE(SequenceErase({}, std::nullopt).ok());
  EXPECT_FALSE(SequenceAt(seq, Make(DType::kFloat32, {}, {0})).ok());
}

TEST(SequenceTest, SplitToSequenceForms) {
  // [[0, 1, 2], [3, 4, 5]] transposed: non-contiguous [3, 2] input.
  Tensor base = Make(DType::kInt64, {2, 3}, {0, 1, 2, 3, 4, 5});
  auto x = Transpose(base, 0, 1);
  ASSERT_TRUE(x.ok());
  auto ones = SplitToSequence(*x, std::nullopt, 0, false);
  ASSERT_TRUE(ones.ok()) << ones.status();
  ASSERT_EQ(ones->size(), 3u);
  EXPECT_EQ((*ones)[1].sizes(), (std::vector<int64_t>{2}));
  EXPECT_EQ((*ones)[1].GetInt(1), 4);
  auto kept = SplitToSequence(*x, std::nullopt, -1, true);
  ASSERT_TRUE(kept.ok());
  ASSERT_EQ(kept->size(), 2u);
  EXPECT_EQ((*kept)[1].sizes(), (std::vector<int64_t>{3, 1}));
  auto scalar = SplitToSequence(*x, Tensor::ScalarInt(2), 0, true);
  ASSERT_TRUE(scalar.ok());
  ASSERT_EQ(scalar->size(), 2u);
  EXPECT_EQ((*scalar)[1].sizes(), (std::vector<int64_t>{1, 2}));
  auto listed = SplitToSequence(*x, Make(DType::kInt64, {2}, {1, 2}), 0, false);
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ((*listed)[1].sizes(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ((*listed)[1].GetInt(3), 5);
  EXPECT_FALSE(SplitToSequence(*x, Make(DType::kInt64, {2}, {1, 1}), 0, true).ok());
  EXPECT_FALSE(SplitToSequence(*x, Tensor::ScalarInt(0), 0, true).ok());
  EXPECT_FALSE(SplitToSequence(*x, std::nullopt, 2, true).ok());
}

TEST(SequenceTest, ConcatFromSequence) {
  std::vector<Tensor> seq = {Make(DType::kInt32, {2, 1}, {1, 2}),
                             Make(DType::kInt32, {2, 2}, {3, 4, 5, 6})};
  auto cat = ConcatFromSequence(seq, -1, false);
  ASSERT_TRUE(cat.ok()) << cat.status();
  EXPECT_EQ(cat->dtype(), DType::kInt32);
  EXPECT_EQ(cat->sizes(), (std::vector<int64_t>{2, 3}));
  std::vector<int64_t> got;
  for (int64_t i = 0; i < cat->numel(); ++i) got.push_back(cat->GetInt(i));
  EXPECT_EQ(got, (std::vector<int64_t>{1, 3, 4, 2, 5, 6}));
  EXPECT_FALSE(ConcatFromSequence(seq, 0, false).ok());
  EXPECT_FALSE(ConcatFromSequence(seq, 0, true).ok());

  std::vector<Tensor> same = {Make(DType::kFloat32, {2}, {1, 2}),
                              Make(DType::kFloat32, {2}, {3, 4})};
  auto stacked = ConcatFromSequence(same, -1, true);  // axis -1 of the new rank 2
  ASSERT_TRUE(stacked.ok()) << stacked.status();
  EXPECT_EQ(stacked->sizes(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(stacked->GetDouble(1), 3);
  EXPECT_FALSE(ConcatFromSequence({}, 0, true).ok());
  EXPECT_FALSE(ConcatFromSequence(same, 2, true).ok());
}

TEST(SequenceTest, StackScanOutputsHandlesZeroIterations) {
  std::vector<Tensor> two = {Make(DType::kFloat32, {2}, {1, 2}),
                             Make(DType::kFloat32, {2}, {3, 4})};
  auto stacked = StackScanOutputs(two, 1, DType::kFloat32, std::vector<int64_t>{2});
  ASSERT_TRUE(stacked.ok()) << stacked.status();
  EXPECT_EQ(stacked->sizes(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(stacked->GetDouble(1), 3);
  auto empty = StackScanOutputs({}, 0, DType::kInt32, std::vector<int64_t>{3, 1});
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->dtype(), DType::kInt32);
  EXPECT_EQ(empty->sizes(), (std::vector<int64_t>{0, 3, 1}));
  auto last = StackScanOutputs({}, -1, DType::kFloat32, std::vector<int64_t>{3});
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(last->sizes(), (std::vector<int64_t>{3, 0}));
  EXPECT_FALSE(StackScanOutputs({}, 0, std::nullopt, std::vector<int64_t>{3}).ok());
  EXPECT_FALSE(StackScanOutputs({}, 0, DType::kFloat32, std::nullopt).ok());
  EXPECT_FALSE(StackScanOutputs({}, 3, DType::kFloat32, std::vector<int64_t>{3}).ok());
}

TEST(SequenceTest, RegistryKernelsAreFunctional) {
  ir::OpRegistry& ops = ir::BuiltinOps();
  ASSERT_TRUE(RegisterReferenceKernels(ops).ok());
  std::vector<IValue> elems;
  for (const Tensor& t : ThreeTensors()) elems.push_back(IValue::FromTensor(t));
  const IValue list = IValue::List(elems);

  auto len = ops.Find("kiln::sequence_length")->kernel({list});
  ASSERT_TRUE(len.ok()) << len.status();
  EXPECT_EQ((*len)[0].toTensor().GetInt(0), 3);
  EXPECT_EQ((*len)[0].toTensor().dtype(), DType::kInt64);

  auto inserted = ops.Find("kiln::sequence_insert")
                      ->kernel({list, IValue::FromTensor(Make(DType::kFloat32, {1}, {1})),
                                IValue::None()});
  ASSERT_TRUE(inserted.ok()) << inserted.status();
  EXPECT_EQ((*inserted)[0].elements().size(), 4u);
  EXPECT_EQ(list.elements().size(), 3u);

  auto has = ops.Find("kiln::optional_has_element")->kernel({IValue::None()});
  ASSERT_TRUE(has.ok());
  EXPECT_EQ((*has)[0].toTensor().dtype(), DType::kBool);
  EXPECT_EQ((*has)[0].toTensor().GetInt(0), 0);
  has = ops.Find("kiln::optional_has_element")->kernel({list});
  ASSERT_TRUE(has.ok());
  EXPECT_EQ((*has)[0].toTensor().GetInt(0), 1);
  auto got = ops.Find("kiln::optional_get_element")->kernel({list});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)[0], list);
  EXPECT_FALSE(ops.Find("kiln::optional_get_element")->kernel({IValue::None()}).ok());

  auto bool_of = ops.Find("aten::Bool.Tensor")->kernel({IValue::FromTensor(Make(DType::kBool, {1}, {1}))});
  ASSERT_TRUE(bool_of.ok()) << bool_of.status();
  EXPECT_EQ((*bool_of)[0], IValue::Bool(true));
  auto int_of = ops.Find("aten::Int.Tensor")->kernel({IValue::FromTensor(Make(DType::kInt64, {}, {7}))});
  ASSERT_TRUE(int_of.ok()) << int_of.status();
  EXPECT_EQ((*int_of)[0], IValue::Int(7));
  EXPECT_FALSE(ops.Find("aten::Bool.Tensor")
                   ->kernel({IValue::FromTensor(Make(DType::kBool, {2}, {1, 0}))})
                   .ok());
  auto empty_scan = ops.Find("kiln::stack_scan_outputs")
                        ->kernel({IValue::List({}), IValue::Int(0),
                                  IValue::Int(DTypeCode(DType::kFloat32)), IValue::IntList({2})});
  ASSERT_TRUE(empty_scan.ok()) << empty_scan.status();
  EXPECT_EQ((*empty_scan)[0].toTensor().sizes(), (std::vector<int64_t>{0, 2}));

  // Wrong argument kinds are errors, not crashes.
  EXPECT_FALSE(ops.Find("kiln::sequence_at")->kernel({IValue::Int(1), IValue::Int(0)}).ok());
  EXPECT_FALSE(ops.Find("kiln::lstm")->kernel({}).ok());
  EXPECT_FALSE(ops.Find("kiln::concat_from_sequence")->kernel({list}).ok());
}

}  // namespace
}  // namespace kiln::runtime
