#include "runtime/tensor_ops.h"

#include <cmath>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "support/tensor.h"

namespace kiln::runtime {
namespace {

Tensor Arange(int64_t n, std::vector<int64_t> sizes, DType dtype = DType::kInt64) {
  Tensor t = Tensor::Empty(dtype, std::move(sizes));
  for (int64_t i = 0; i < n; ++i) EXPECT_TRUE(SetInt(t, i, i).ok());
  return t;
}

std::vector<int64_t> Values(const Tensor& t) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.GetInt(i));
  return v;
}

TEST(TensorOpsTest, CopyIntoAnyStrides) {
  Tensor src = Tensor::Empty(DType::kFloat32, {2, 3});
  for (int i = 0; i < 6; ++i) src.data<float>()[i] = static_cast<float>(i);
  Tensor storage = Tensor::Empty(DType::kFloat32, {6});
  Tensor transposed = Tensor::View(storage, {2, 3}, {1, 2}, 0);
  ASSERT_TRUE(CopyInto(src, transposed).ok());
  EXPECT_EQ(storage.data<float>()[1], 3.0f);  // (1, 0) at offset 1
  EXPECT_EQ(storage.data<float>()[2], 1.0f);  // (0, 1) at offset 2
  EXPECT_EQ(storage.data<float>()[5], 5.0f);
  Tensor back = Tensor::Empty(DType::kFloat32, {2, 3});
  ASSERT_TRUE(CopyInto(transposed, back).ok());
  for (int i = 0; i < 6; ++i) EXPECT_EQ(back.data<float>()[i], static_cast<float>(i));
  Tensor wrong = Tensor::Empty(DType::kFloat32, {3, 2});
  absl::Status s = CopyInto(src, wrong);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("Float[2, 3] into Float[3, 2]"), std::string::npos) << s;
  Tensor other_dtype = Tensor::Empty(DType::kInt64, {2, 3});
  EXPECT_FALSE(CopyInto(src, other_dtype).ok());
}

TEST(TensorOpsTest, TransposeIsAView) {
  Tensor t = Arange(6, {2, 3});
  auto tt = Transpose(t, 0, 1);
  ASSERT_TRUE(tt.ok());
  EXPECT_EQ(tt->sizes(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(tt->strides(), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(tt->storage(), t.storage());
  EXPECT_EQ(Values(*tt), (std::vector<int64_t>{0, 3, 1, 4, 2, 5}));
  EXPECT_FALSE(Transpose(t, 0, 2).ok());
}

TEST(TensorOpsTest, PermuteAndErrors) {
  Tensor t = Arange(24, {2, 3, 4});
  auto p = Permute(t, {2, 0, 1});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->sizes(), (std::vector<int64_t>{4, 2, 3}));
  EXPECT_EQ(p->GetInt(1), 4);  // [0,0,1] -> t[0,1,0]
  EXPECT_FALSE(Permute(t, {0, 0, 1}).ok());
  EXPECT_FALSE(Permute(t, {0, 1}).ok());
}

TEST(TensorOpsTest, SliceWithStepAndNegativeBounds) {
  Tensor t = Arange(10, {10});
  auto s = Slice(t, 0, 1, 8, 3);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(Values(*s), (std::vector<int64_t>{1, 4, 7}));
  auto tail = Slice(t, 0, -3, 100);
  ASSERT_TRUE(tail.ok());
  EXPECT_EQ(Values(*tail), (std::vector<int64_t>{7, 8, 9}));
  EXPECT_FALSE(Slice(t, 0, 0, 5, 0).ok());
}

TEST(TensorOpsTest, ExpandAndBroadcast) {
  Tensor t = Arange(3, {3, 1});
  auto e = Expand(t, {2, 3, 2});
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->strides(), (std::vector<int64_t>{0, 1, 0}));
  EXPECT_EQ(Values(*e), (std::vector<int64_t>{0, 0, 1, 1, 2, 2, 0, 0, 1, 1, 2, 2}));
  EXPECT_FALSE(Expand(t, {4, 2}).ok());
  auto b = BroadcastShapes({2, 1, 4}, {3, 1});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, (std::vector<int64_t>{2, 3, 4}));
  auto bad = BroadcastShapes({2, 3}, {4});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("[2, 3] and [4]"), absl::string_view::npos);
}

TEST(TensorOpsTest, ReshapeViewsWhenPossibleElseCopies) {
  Tensor t = Arange(6, {2, 3});
  auto r = Reshape(t, {3, -1});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->sizes(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(r->storage(), t.storage());
  auto tt = Transpose(t, 0, 1);
  ASSERT_TRUE(tt.ok());
  auto flat = Reshape(*tt, {6});
  ASSERT_TRUE(flat.ok());
  EXPECT_NE(flat->storage(), t.storage());
  EXPECT_EQ(Values(*flat), (std::vector<int64_t>{0, 3, 1, 4, 2, 5}));
  EXPECT_FALSE(Reshape(t, {4, -1}).ok());
  EXPECT_FALSE(Reshape(t, {-1, -1}).ok());
}

TEST(TensorOpsTest, SqueezeUnsqueeze) {
  Tensor t = Arange(3, {1, 3, 1});
  EXPECT_EQ(Squeeze(t).sizes(), (std::vector<int64_t>{3}));
  auto s = Squeeze(t, -1);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->sizes(), (std::vector<int64_t>{1, 3}));
  auto u = Unsqueeze(*s, 2);
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->sizes(), (std::vector<int64_t>{1, 3, 1}));
  EXPECT_FALSE(Unsqueeze(*s, 3).ok());
}

TEST(TensorOpsTest, AsStridedChecksBounds) {
  Tensor t = Arange(6, {6});
  auto v = AsStrided(t, {2, 2}, {3, 1}, 1);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(Values(*v), (std::vector<int64_t>{1, 2, 4, 5}));
  EXPECT_FALSE(AsStrided(t, {2, 2}, {3, 1}, 2).ok());
}

TEST(TensorOpsTest, CastSaturatesAndHandlesNan) {
  Tensor f = Tensor::Empty(DType::kFloat32, {3});
  ASSERT_TRUE(SetDouble(f, 0, 2.7).ok());
  ASSERT_TRUE(SetDouble(f, 1, -1e30).ok());
  ASSERT_TRUE(SetDouble(f, 2, NAN).ok());
  auto i = CastTo(f, DType::kInt64);
  ASSERT_TRUE(i.ok());
  EXPECT_EQ(i->GetInt(0), 2);
  EXPECT_EQ(i->GetInt(1), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(i->GetInt(2), 0);
  EXPECT_EQ(CastTo(f, DType::kComplex64).status().code(), absl::StatusCode::kUnimplemented);
}

TEST(TensorOpsTest, HalfAndBFloat16RoundToNearestEven) {
  Tensor f = Tensor::Empty(DType::kFloat64, {6});
  // 1 + 2^-11 is halfway between half's 1 and 1 + 2^-10: ties to even (1).
  // 1 + 3 * 2^-11 is halfway between 1 + 2^-10 and 1 + 2^-9: ties to even.
  const double values[] = {1 + std::ldexp(1.0, -11), 1 + 3 * std::ldexp(1.0, -11), 65519.0,
                           65520.0, 1e-7, -0.0};
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(SetDouble(f, i, values[i]).ok());
  auto h = CastTo(f, DType::kFloat16);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->GetDouble(0), 1.0);
  EXPECT_EQ(h->GetDouble(1), 1 + std::ldexp(1.0, -9));
  EXPECT_EQ(h->GetDouble(2), 65504.0);
  EXPECT_TRUE(std::isinf(h->GetDouble(3)));
  EXPECT_EQ(h->GetDouble(4), std::ldexp(2.0, -24));  // nearest subnormal (1.68 units)
  EXPECT_TRUE(std::signbit(h->GetDouble(5)));
  auto b = CastTo(f, DType::kBFloat16);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->GetDouble(0), 1.0);
  EXPECT_EQ(b->GetDouble(2), 65536.0);
  // Back to float keeps the rounded value; int reads truncate.
  auto back = CastTo(*h, DType::kFloat32);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->GetDouble(2), 65504.0);
  EXPECT_EQ(h->GetInt(2), 65504);
}

// A contiguous float32 tensor (the fast path) and a transposed view of it
// (the element loop) cast to bfloat16 and to float16 give the same bits,
// ties, subnormals, overflow to infinity, infinities and NaNs included.
TEST(TensorOpsTest, Float32ToNarrowFloatFastPathMatchesTheElementLoop) {
  const float values[] = {1.0f + std::ldexp(1.0f, -8), 1.0f + 3 * std::ldexp(1.0f, -11),
                          std::numeric_limits<float>::max(), -std::numeric_limits<float>::infinity(),
                          std::ldexp(1.5f, -24), -0.0f,
                          std::numeric_limits<float>::quiet_NaN(), 65520.0f};
  Tensor f = Tensor::Empty(DType::kFloat32, {2, 4});
  for (int i = 0; i < 8; ++i) f.data<float>()[i] = values[i];
  for (const DType narrow : {DType::kBFloat16, DType::kFloat16}) {
    SCOPED_TRACE(DTypeName(narrow));
    auto fast = CastTo(f, narrow);
    ASSERT_TRUE(fast.ok()) << fast.status();
    auto transposed = Transpose(f, 0, 1);
    ASSERT_TRUE(transposed.ok());
    ASSERT_FALSE(transposed->is_contiguous());
    auto slow = CastTo(*transposed, narrow);
    ASSERT_TRUE(slow.ok()) << slow.status();
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < 4; ++j) {
        const double v = values[i * 4 + j];
        const uint16_t want = narrow == DType::kBFloat16 ? DoubleToBFloat16Bits(v) : DoubleToHalfBits(v);
        EXPECT_EQ(fast->data<uint16_t>()[i * 4 + j], want) << i << "," << j;
        EXPECT_EQ(slow->data<uint16_t>()[j * 2 + i], want) << i << "," << j;
      }
    }
  }
}

TEST(TensorOpsTest, UnsignedWideTypes) {
  Tensor t = Tensor::Empty(DType::kUInt64, {2});
  ASSERT_TRUE(SetDouble(t, 0, 1.8e19).ok());
  ASSERT_TRUE(SetInt(t, 1, -1).ok());
  EXPECT_EQ(t.GetDouble(0), 1.8e19);
  EXPECT_EQ(t.GetDouble(1), 18446744073709551615.0);
  Tensor u = Tensor::Empty(DType::kUInt32, {1});
  ASSERT_TRUE(SetInt(u, 0, 4000000000).ok());
  EXPECT_EQ(u.GetInt(0), 4000000000);
  auto as16 = CastTo(u, DType::kUInt16);
  ASSERT_TRUE(as16.ok());
  EXPECT_EQ(as16->GetInt(0), 4000000000 % 65536);
  EXPECT_EQ(DTypeName(DType::kUInt16), "UInt16");
  EXPECT_EQ(DTypeFromCode(29), DType::kUInt64);
  EXPECT_TRUE(IsIntegral(DType::kUInt32, false));
}

}  // namespace
}  // namespace kiln::runtime
