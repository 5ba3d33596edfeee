#include "support/tensor.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "support/dtype.h"
#include "support/hash.h"

namespace kiln {
namespace {

TEST(DType, NamesAndCodesRoundTrip) {
  for (DType t : {DType::kUInt8, DType::kInt8, DType::kInt16, DType::kInt32,
                  DType::kInt64, DType::kFloat16, DType::kFloat32,
                  DType::kFloat64, DType::kComplex64, DType::kBool,
                  DType::kBFloat16}) {
    EXPECT_EQ(DTypeFromName(DTypeName(t)), t);
    EXPECT_EQ(DTypeFromCode(DTypeCode(t)), t);
  }
  EXPECT_EQ(DTypeName(DType::kFloat32), "Float");
  EXPECT_EQ(DTypeCode(DType::kInt64), 4);
  EXPECT_FALSE(DTypeFromName("Quaternion").has_value());
  EXPECT_FALSE(DTypeFromCode(99).has_value());
  EXPECT_EQ(DTypeSize(DType::kBFloat16), 2u);
}

// `fast(f)` and `slow(f)` give the same bits for every sign and exponent of
// a float (zeros, subnormals, the largest finite, infinities, NaNs), each
// with the given mantissas (those around the format's rounding ties) and a
// stride through the rest; returns how many floats it checked.
template <typename Fast, typename Slow>
int64_t ExpectSameBitsOverEveryExponent(Fast fast, Slow slow, const std::vector<uint32_t>& mantissas) {
  int64_t checked = 0;
  for (uint32_t sign_exp = 0; sign_exp < 512; ++sign_exp) {
    auto check = [&](uint32_t mantissa) {
      const uint32_t bits = (sign_exp << 23) | (mantissa & 0x7fffffu);
      float f;
      std::memcpy(&f, &bits, 4);
      EXPECT_EQ(fast(f), slow(f)) << std::hex << bits;
      ++checked;
    };
    for (uint32_t m : mantissas) check(m);
    for (uint32_t m = 0; m < (1u << 23); m += 4093) check(m);
    if (::testing::Test::HasFailure()) break;
  }
  return checked;
}

// The float fast path agrees with the double one bit for bit; bfloat16's
// ties sit in the low 16 bits.
TEST(DType, FloatToBFloat16MatchesTheDoublePath) {
  std::vector<uint32_t> mantissas;
  for (uint32_t low : {0x0000u, 0x0001u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu}) {
    for (uint32_t high : {0x00u, 0x01u, 0x02u, 0x3fu, 0x40u, 0x7eu, 0x7fu}) mantissas.push_back((high << 16) | low);
  }
  EXPECT_GT(ExpectSameBitsOverEveryExponent(FloatToBFloat16Bits, DoubleToBFloat16Bits, mantissas), 1000000);
}

// The same for float16: its ties sit in the low 13 bits, or more below the
// normal range (the half's subnormals, 2^-25 and the ties around it); the
// largest finite 65504 and the 65520 tie to infinity are checked by value.
TEST(DType, FloatToHalfMatchesTheDoublePath) {
  std::vector<uint32_t> mantissas;
  for (uint32_t tie_bit = 12; tie_bit < 24; ++tie_bit) {
    const uint32_t tie = 1u << tie_bit;
    for (uint32_t high : {0u, 1u, 2u, 3u, 0x3ffu, 0x3feu}) {
      for (uint32_t low : {tie - 1, tie, tie + 1}) mantissas.push_back((high << (tie_bit + 1)) | low);
    }
  }
  EXPECT_GT(ExpectSameBitsOverEveryExponent(FloatToHalfBits, DoubleToHalfBits, mantissas), 1000000);
  for (const float f : {65504.0f, 65519.996f, 65520.0f, 0x1p-25f, 0x1.000002p-25f, 0x1p-24f, 0x1.8p-24f, 0x1p-14f}) {
    EXPECT_EQ(FloatToHalfBits(f), DoubleToHalfBits(f)) << f;
  }
}

TEST(Tensor, EmptyIsContiguousAlignedAndZeroed) {
  Tensor t = Tensor::Empty(DType::kFloat32, {2, 3});
  EXPECT_TRUE(t.defined());
  EXPECT_TRUE(t.has_data());
  EXPECT_EQ(t.numel(), 6);
  EXPECT_EQ(t.strides(), (std::vector<int64_t>{3, 1}));
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % Storage::kAlignment, 0u);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(t.data<float>()[i], 0.0f);
}

TEST(Tensor, PlaceholderHasShapeButNoData) {
  Tensor t = Tensor::Placeholder(DType::kFloat32, {4, 5});
  EXPECT_TRUE(t.is_placeholder());
  EXPECT_EQ(t.raw_data(), nullptr);
  EXPECT_EQ(t.strides(), (std::vector<int64_t>{5, 1}));
  // Unknown values never compare equal, even to an identical placeholder.
  EXPECT_FALSE(t.ValueEquals(Tensor::Placeholder(DType::kFloat32, {4, 5})));
}

TEST(Tensor, FromBytesChecksSize) {
  std::vector<int32_t> v = {1, 2, 3};
  auto ok = Tensor::FromBytes(DType::kInt32, {3}, v.data(), 12);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->GetInt(2), 3);
  auto bad = Tensor::FromBytes(DType::kInt32, {4}, v.data(), 12);
  EXPECT_FALSE(bad.ok());
  auto neg = Tensor::FromBytes(DType::kInt32, {-1}, v.data(), 0);
  EXPECT_FALSE(neg.ok());
}

TEST(Tensor, StridedViewReadsLogicalOrder) {
  std::vector<float> v = {0, 1, 2, 3, 4, 5};
  Tensor t = *Tensor::FromBytes(DType::kFloat32, {2, 3}, v.data(), 24);
  Tensor tr = Tensor::View(t, {3, 2}, {1, 3}, 0);  // transpose
  EXPECT_FALSE(tr.is_contiguous());
  EXPECT_EQ(tr.GetDouble(1), 3.0);
  Tensor c = tr.Contiguous();
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_EQ(c.data<float>()[1], 3.0f);
  EXPECT_EQ(c.data<float>()[2], 1.0f);
}

TEST(Tensor, ValueEqualityAndHash) {
  std::vector<float> a = {1, 2, 3};
  std::vector<float> b = {1, 2, 4};
  Tensor ta = *Tensor::FromBytes(DType::kFloat32, {3}, a.data(), 12);
  Tensor ta2 = *Tensor::FromBytes(DType::kFloat32, {3}, a.data(), 12);
  Tensor tb = *Tensor::FromBytes(DType::kFloat32, {3}, b.data(), 12);
  EXPECT_TRUE(ta.ValueEquals(ta2));
  EXPECT_EQ(ta.ValueHash(), ta2.ValueHash());
  EXPECT_FALSE(ta.ValueEquals(tb));
  Tensor reshaped = *Tensor::FromBytes(DType::kFloat32, {1, 3}, a.data(), 12);
  EXPECT_FALSE(ta.ValueEquals(reshaped));
}

TEST(Tensor, Scalars) {
  EXPECT_EQ(Tensor::ScalarInt(7).GetInt(0), 7);
  EXPECT_EQ(Tensor::ScalarDouble(2.5, DType::kFloat32).GetDouble(0), 2.5);
  EXPECT_EQ(Tensor::ScalarDouble(2.5, DType::kInt32).GetInt(0), 2);
  EXPECT_EQ(Tensor::ScalarInt(1, DType::kBool).GetInt(0), 1);
  EXPECT_EQ(Tensor::ScalarInt(5).dim(), 0);
}

TEST(Tensor, WrappedStorageIsNotCopiedAndStaysAlive) {
  auto buffer = std::make_shared<std::vector<float>>(32, 0.0f);
  // vector's buffer is not necessarily 64-byte aligned: take an aligned
  // element inside it.
  float* base = buffer->data();
  while (reinterpret_cast<uintptr_t>(base) % Storage::kAlignment != 0) ++base;
  base[0] = 1;
  base[1] = 2;
  base[2] = 3;
  base[3] = 4;
  std::shared_ptr<Storage> s = Storage::WrapCpu(base, 4 * sizeof(float), buffer);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(Storage::WrapCpu(base + 1, 4, buffer), nullptr);  // misaligned
  absl::StatusOr<Tensor> t = Tensor::FromStorage(s, DType::kFloat32, {2}, {2}, 1);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->raw_data(), base + 1);
  EXPECT_EQ(t->GetDouble(0), 2);
  EXPECT_EQ(t->GetDouble(1), 4);
  std::weak_ptr<std::vector<float>> alive = buffer;
  buffer.reset();
  s.reset();
  EXPECT_FALSE(alive.expired());  // the tensor holds the owner
  *t = Tensor();
  EXPECT_TRUE(alive.expired());
}

TEST(Tensor, FromStorageChecksTheExtent) {
  std::shared_ptr<Storage> s = Storage::AllocateCpu(16);
  EXPECT_TRUE(Tensor::FromStorage(s, DType::kFloat32, {2, 2}, {2, 1}, 0).ok());
  EXPECT_FALSE(Tensor::FromStorage(s, DType::kFloat32, {2, 2}, {2, 1}, 1).ok());
  EXPECT_FALSE(Tensor::FromStorage(s, DType::kFloat32, {3}, {1}, 2).ok());
  EXPECT_FALSE(Tensor::FromStorage(s, DType::kFloat32, {2}, {1, 1}, 0).ok());
  EXPECT_FALSE(Tensor::FromStorage(s, DType::kFloat32, {-1}, {1}, 0).ok());
  EXPECT_FALSE(Tensor::FromStorage(s, DType::kFloat32, {INT64_MAX}, {INT64_MAX}, 0).ok());
  EXPECT_TRUE(Tensor::FromStorage(s, DType::kFloat32, {0, 5}, {5, 1}, 100).ok());  // empty
}

TEST(Hash, DeterministicAndSpread) {
  EXPECT_EQ(HashString("abc"), HashString("abc"));
  EXPECT_NE(HashString("abc"), HashString("abd"));
  EXPECT_NE(HashCombine(1, 2), HashCombine(2, 1));
  EXPECT_EQ(HashDouble(0.0), HashDouble(-0.0));
}

}  // namespace
}  // namespace kiln
