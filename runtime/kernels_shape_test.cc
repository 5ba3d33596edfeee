#include "runtime/kernels_shape.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <vector>

#include "gtest/gtest.h"
#include "ir/ivalue.h"
#include "ir/op_registry.h"
#include "runtime/register_kernels.h"
#include "runtime/tensor_ops.h"
#include "support/tensor.h"

namespace kiln::runtime::shape {
namespace {

using ir::IValue;

Tensor Make(DType dtype, std::vector<int64_t> sizes, std::vector<double> values) {
  Tensor t = Tensor::Empty(dtype, std::move(sizes));
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_TRUE(SetDouble(t, static_cast<int64_t>(i), values[i]).ok());
  }
  return t;
}

// 0, 1, 2, ... as a float tensor of `sizes`.
Tensor Iota(std::vector<int64_t> sizes, DType dtype = DType::kFloat32) {
  Tensor t = Tensor::Empty(dtype, std::move(sizes));
  for (int64_t i = 0; i < t.numel(); ++i) EXPECT_TRUE(SetDouble(t, i, static_cast<double>(i)).ok());
  return t;
}

Tensor Longs(std::vector<int64_t> sizes, std::vector<double> values) {
  return Make(DType::kInt64, std::move(sizes), std::move(values));
}

void Expect(const absl::StatusOr<Tensor>& t, DType dtype, std::vector<int64_t> sizes,
            std::vector<double> values) {
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->dtype(), dtype);
  EXPECT_EQ(t->sizes(), sizes);
  ASSERT_EQ(t->numel(), static_cast<int64_t>(values.size()));
  for (size_t i = 0; i < values.size(); ++i) {
    if (std::isnan(values[i])) {
      EXPECT_TRUE(std::isnan(t->GetDouble(static_cast<int64_t>(i)))) << i;
    } else {
      EXPECT_NEAR(t->GetDouble(static_cast<int64_t>(i)), values[i],
                  1e-6 * std::max(1.0, std::fabs(values[i])))
          << "element " << i;
    }
  }
}

void ExpectInvalid(const absl::Status& s) {
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
}
template <typename T>
void ExpectInvalid(const absl::StatusOr<T>& s) {
  ExpectInvalid(s.status());
}

bool SharesStorage(const Tensor& a, const Tensor& b) { return a.storage() == b.storage(); }

// ------------------------------------------------------------------ views

TEST(ShapeViewsTest, ViewsShareStorage) {
  Tensor x = Iota({2, 3, 4});
  auto f = Flatten(x, 1, 2);
  Expect(f, DType::kFloat32, {2, 12}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11,
                                       12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23});
  EXPECT_TRUE(SharesStorage(*f, x));
  auto s = Select(x, 1, -1);
  Expect(s, DType::kFloat32, {2, 4}, {8, 9, 10, 11, 20, 21, 22, 23});
  EXPECT_TRUE(SharesStorage(*s, x));
  auto n = Narrow(x, 2, 1, 2);
  Expect(n, DType::kFloat32, {2, 3, 2}, {1, 2, 5, 6, 9, 10, 13, 14, 17, 18, 21, 22});
  EXPECT_TRUE(SharesStorage(*n, x));
  auto d = Diagonal(Iota({3, 3}), 1, 0, 1);
  Expect(d, DType::kFloat32, {2}, {1, 5});
  auto m = Movedim(x, std::vector<int64_t>{0}, std::vector<int64_t>{2});
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->sizes(), (std::vector<int64_t>{3, 4, 2}));
  EXPECT_EQ(m->GetDouble(1), 12);
  EXPECT_TRUE(SharesStorage(*m, x));
  ExpectInvalid(Select(x, 0, 2));
  ExpectInvalid(Narrow(x, 2, 3, 2));
  ExpectInvalid(T(x));
  ExpectInvalid(Flatten(x, 2, 1));
}

TEST(ShapeViewsTest, SplitsAndChunks) {
  Tensor x = Iota({5, 2});
  auto parts = SplitBySize(x, 2, 0);
  ASSERT_TRUE(parts.ok());
  ASSERT_EQ(parts->size(), 3u);
  Expect((*parts)[2], DType::kFloat32, {1, 2}, {8, 9});
  EXPECT_TRUE(SharesStorage((*parts)[1], x));
  auto chunks = Chunk(x, 2, 0);
  ASSERT_TRUE(chunks.ok());
  ASSERT_EQ(chunks->size(), 2u);
  EXPECT_EQ((*chunks)[0].sizes(), (std::vector<int64_t>{3, 2}));
  auto sized = SplitWithSizes(x, std::vector<int64_t>{1, 0, 4}, 0);
  ASSERT_TRUE(sized.ok());
  EXPECT_EQ((*sized)[1].sizes(), (std::vector<int64_t>{0, 2}));
  ExpectInvalid(SplitWithSizes(x, std::vector<int64_t>{1, 2}, 0));
  auto u = Unbind(x, 1);
  ASSERT_TRUE(u.ok());
  Expect((*u)[1], DType::kFloat32, {5}, {1, 3, 5, 7, 9});
}

// ------------------------------------------------------------------ joins

TEST(ShapeJoinTest, CatPromotesAndHandlesNonContiguous) {
  Tensor a = Iota({2, 2});
  auto at = Transpose(a, 0, 1);  // [[0, 2], [1, 3]]
  ASSERT_TRUE(at.ok());
  Tensor b = Longs({2, 1}, {7, 8});
  Expect(Cat({*at, b}, 1), DType::kFloat32, {2, 3}, {0, 2, 7, 1, 3, 8});
  Expect(Cat({Iota({0}), b}, 0), DType::kFloat32, {2, 1}, {7, 8});  // legacy empty
  ExpectInvalid(Cat({a, Iota({2, 3})}, 0));
  ExpectInvalid(Cat({}, 0));
  Expect(Stack({Iota({2}), Iota({2})}, 1), DType::kFloat32, {2, 2}, {0, 0, 1, 1});
  ExpectInvalid(Stack({Iota({2}), Iota({3})}, 0));
}

// ------------------------------------------------------------------ indexing

TEST(ShapeIndexTest, GatherAndScatter) {
  Tensor x = Iota({2, 3});
  Tensor idx = Longs({2, 2}, {2, 0, 1, 1});
  Expect(Gather(x, 1, idx), DType::kFloat32, {2, 2}, {2, 0, 4, 4});
  ExpectInvalid(Gather(x, 1, Longs({1, 1}, {3})));
  ExpectInvalid(Gather(x, 1, Longs({1, 1}, {-1})));
  Expect(Gather(x, 1, Longs({1, 1}, {-1}), true), DType::kFloat32, {1, 1}, {2});
  Tensor zeros = Make(DType::kFloat32, {2, 3}, {0, 0, 0, 0, 0, 0});
  Tensor src = Make(DType::kFloat32, {2, 2}, {1, 2, 3, 4});
  Expect(Scatter(zeros, 1, idx, src, false, ScatterReduce::kNone), DType::kFloat32, {2, 3},
         {2, 0, 1, 0, 4, 0});
  Expect(Scatter(zeros, 1, idx, src, false, ScatterReduce::kSum), DType::kFloat32, {2, 3},
         {2, 0, 1, 0, 7, 0});
  Tensor ones = Make(DType::kFloat32, {2, 3}, {1, 1, 1, 1, 1, 1});
  Expect(Scatter(ones, 1, idx, src, false, ScatterReduce::kMean, true), DType::kFloat32,
         {2, 3}, {1.5, 1, 1, 1, 8.0 / 3, 1});
  Expect(Scatter(ones, 1, idx, src, false, ScatterReduce::kAmax, false), DType::kFloat32,
         {2, 3}, {2, 1, 1, 1, 4, 1});
  Expect(Scatter(zeros, 0, Longs({1, 1}, {1}), Tensor::ScalarDouble(5), true,
                 ScatterReduce::kNone),
         DType::kFloat32, {2, 3}, {0, 0, 0, 5, 0, 0});
  ExpectInvalid(Scatter(zeros, 1, Longs({1, 1}, {3}), src, false, ScatterReduce::kNone));
}

TEST(ShapeIndexTest, AdvancedIndexing) {
  Tensor x = Iota({3, 4});
  // x[[2, 0]]
  Expect(Index(x, {Longs({2}, {2, 0})}), DType::kFloat32, {2, 4}, {8, 9, 10, 11, 0, 1, 2, 3});
  // x[:, [-1, 1]]
  Expect(Index(x, {std::nullopt, Longs({2}, {-1, 1})}), DType::kFloat32, {3, 2},
         {3, 1, 7, 5, 11, 9});
  // x[[0, 2], [1, 3]] (broadcast pairs)
  Expect(Index(x, {Longs({2}, {0, 2}), Longs({2}, {1, 3})}), DType::kFloat32, {2}, {1, 11});
  // Separated advanced indices move the broadcast dims first.
  Tensor y = Iota({2, 3, 4});
  auto sep = Index(y, {Longs({2}, {0, 1}), std::nullopt, Longs({2}, {0, 3})});
  Expect(sep, DType::kFloat32, {2, 3}, {0, 4, 8, 15, 19, 23});
  // Boolean mask.
  Tensor mask = Make(DType::kBool, {3}, {1, 0, 1});
  Expect(Index(x, {mask}), DType::kFloat32, {2, 4}, {0, 1, 2, 3, 8, 9, 10, 11});
  ExpectInvalid(Index(x, {Longs({1}, {3})}));
  ExpectInvalid(Index(x, {Make(DType::kBool, {2}, {1, 0})}));
  ExpectInvalid(Index(x, {std::nullopt, std::nullopt, Longs({1}, {0})}));
  // index_put with accumulation and duplicates.
  Tensor z = Make(DType::kFloat32, {3}, {0, 0, 0});
  Expect(IndexPut(z, {Longs({3}, {0, 2, 0})}, Make(DType::kFloat32, {3}, {1, 2, 3}), true),
         DType::kFloat32, {3}, {4, 0, 2});
  Expect(IndexPut(x, {mask}, Tensor::ScalarDouble(-1), false), DType::kFloat32, {3, 4},
         {-1, -1, -1, -1, 4, 5, 6, 7, -1, -1, -1, -1});
  Expect(IndexSelect(x, 1, Longs({2}, {3, 0})), DType::kFloat32, {3, 2}, {3, 0, 7, 4, 11, 8});
  ExpectInvalid(IndexSelect(x, 1, Longs({1}, {4})));
}

TEST(ShapeIndexTest, MasksTakeAlongDimEmbedding) {
  Tensor x = Iota({2, 2});
  Tensor mask = Make(DType::kBool, {2}, {0, 1});  // broadcast over rows
  Expect(MaskedFill(x, mask, Tensor::ScalarDouble(9)), DType::kFloat32, {2, 2}, {0, 9, 2, 9});
  Expect(MaskedSelect(x, mask), DType::kFloat32, {2}, {1, 3});
  ExpectInvalid(MaskedFill(x, Iota({2}), Tensor::ScalarDouble(1)));
  Expect(TakeAlongDim(x, Longs({2, 1}, {1, 0}), 1), DType::kFloat32, {2, 1}, {1, 2});
  Expect(TakeAlongDim(x, Longs({2}, {3, 0}), std::nullopt), DType::kFloat32, {2}, {3, 0});
  Expect(Embedding(Iota({3, 2}), Longs({2}, {2, 0})), DType::kFloat32, {2, 2}, {4, 5, 0, 1});
  ExpectInvalid(Embedding(Iota({3, 2}), Longs({1}, {3})));
}

// ------------------------------------------------------------------ padding / copies

TEST(ShapePadTest, Modes) {
  Tensor x = Iota({1, 3});
  const Tensor zero = Tensor::ScalarDouble(0);
  Expect(Pad(x, std::vector<int64_t>{2, 1}, PadMode::kConstant, Tensor::ScalarDouble(-1)),
         DType::kFloat32, {1, 6}, {-1, -1, 0, 1, 2, -1});
  Expect(Pad(x, std::vector<int64_t>{2, 2}, PadMode::kReflect, zero), DType::kFloat32, {1, 7},
         {2, 1, 0, 1, 2, 1, 0});
  Expect(Pad(x, std::vector<int64_t>{2, 1}, PadMode::kReplicate, zero), DType::kFloat32, {1, 6},
         {0, 0, 0, 1, 2, 2});
  Expect(Pad(x, std::vector<int64_t>{1, 2}, PadMode::kCircular, zero), DType::kFloat32, {1, 6},
         {2, 0, 1, 2, 0, 1});
  // Negative pads crop; pads on the first dim come second.
  Expect(Pad(x, std::vector<int64_t>{-1, 0, 1, 0}, PadMode::kConstant, zero), DType::kFloat32,
         {2, 2}, {0, 0, 1, 2});
  ExpectInvalid(Pad(x, std::vector<int64_t>{-4, 0}, PadMode::kConstant, zero));
  ExpectInvalid(Pad(x, std::vector<int64_t>{1}, PadMode::kConstant, zero));
}

TEST(ShapeCopyTest, RepeatFlipRollTrilu) {
  Tensor x = Iota({2});
  Expect(Repeat(x, std::vector<int64_t>{2, 2}), DType::kFloat32, {2, 4}, {0, 1, 0, 1, 0, 1, 0, 1});
  Expect(Tile(Iota({2, 1}), std::vector<int64_t>{2}), DType::kFloat32, {2, 2}, {0, 0, 1, 1});
  ExpectInvalid(Repeat(Iota({2, 2}), std::vector<int64_t>{2}));
  Tensor m = Iota({2, 3});
  Expect(Flip(m, std::vector<int64_t>{-1}), DType::kFloat32, {2, 3}, {2, 1, 0, 5, 4, 3});
  Expect(Roll(m, std::vector<int64_t>{1}, std::vector<int64_t>{1}), DType::kFloat32, {2, 3},
         {2, 0, 1, 5, 3, 4});
  Expect(Roll(m, std::vector<int64_t>{-1}, {}), DType::kFloat32, {2, 3}, {1, 2, 3, 4, 5, 0});
  Expect(Trilu(m, 0, false), DType::kFloat32, {2, 3}, {0, 0, 0, 3, 4, 0});
  Expect(Trilu(m, 1, true), DType::kFloat32, {2, 3}, {0, 1, 2, 0, 0, 5});
  Expect(Diag(Iota({2}), 1), DType::kFloat32, {3, 3}, {0, 0, 0, 0, 0, 1, 0, 0, 0});
  Expect(OneHot(Longs({2}, {2, 0}), 3), DType::kInt64, {2, 3}, {0, 0, 1, 1, 0, 0});
  ExpectInvalid(OneHot(Longs({1}, {3}), 3));
  Expect(Nonzero(Make(DType::kFloat32, {2, 2}, {0, 1, 2, 0})), DType::kInt64, {2, 2},
         {0, 1, 1, 0});
}

// ------------------------------------------------------------------ generators

TEST(ShapeGenTest, ArangeFullEye) {
  Expect(Arange(Tensor::ScalarInt(0), Tensor::ScalarInt(5), Tensor::ScalarInt(2), std::nullopt),
         DType::kInt64, {3}, {0, 2, 4});
  Expect(Arange(Tensor::ScalarInt(1), Tensor::ScalarDouble(2), Tensor::ScalarDouble(0.5),
                std::nullopt),
         DType::kFloat32, {2}, {1, 1.5});
  Expect(Arange(Tensor::ScalarInt(3), Tensor::ScalarInt(0), Tensor::ScalarInt(-1), std::nullopt),
         DType::kInt64, {3}, {3, 2, 1});
  ExpectInvalid(Arange(Tensor::ScalarInt(0), Tensor::ScalarInt(5), Tensor::ScalarInt(0), std::nullopt));
  ExpectInvalid(Arange(Tensor::ScalarInt(0), Tensor::ScalarInt(5), Tensor::ScalarInt(-1), std::nullopt));
  Expect(Full(std::vector<int64_t>{2}, Tensor::ScalarInt(3), std::nullopt), DType::kInt64, {2}, {3, 3});
  Expect(Full(std::vector<int64_t>{1}, Tensor::ScalarDouble(0.5), std::nullopt), DType::kFloat32, {1}, {0.5});
  ExpectInvalid(Full(std::vector<int64_t>{-1}, Tensor::ScalarInt(3), std::nullopt));
  ExpectInvalid(Full(std::vector<int64_t>{1 << 30, 1 << 30}, Tensor::ScalarInt(3), std::nullopt));
  Expect(Eye(2, 3, 1, DType::kInt32), DType::kInt32, {2, 3}, {0, 1, 0, 0, 0, 1});
  Expect(Range(Make(DType::kInt32, {}, {10}), Make(DType::kInt32, {}, {4}),
               Make(DType::kInt32, {}, {-3})),
         DType::kInt32, {2}, {10, 7});
}

// ------------------------------------------------------------------ sorting

TEST(ShapeSortTest, SortTopKCumulative) {
  Tensor x = Make(DType::kFloat32, {2, 3}, {3, NAN, 1, 2, 2, 5});
  auto s = Sort(x, 1, false);
  ASSERT_TRUE(s.ok());
  Expect(s->values, DType::kFloat32, {2, 3}, {1, 3, NAN, 2, 2, 5});
  Expect(s->indices, DType::kInt64, {2, 3}, {2, 0, 1, 0, 1, 2});
  auto t = TopK(x, 2, 1, true);
  ASSERT_TRUE(t.ok());
  Expect(t->values, DType::kFloat32, {2, 2}, {NAN, 3, 5, 2});
  Expect(t->indices, DType::kInt64, {2, 2}, {1, 0, 2, 0});
  ExpectInvalid(TopK(x, 4, 1, true));
  // Along dim 0 of a transposed (non-contiguous) input.
  auto xt = Transpose(Iota({2, 2}), 0, 1);
  ASSERT_TRUE(xt.ok());
  auto d = Sort(*xt, 0, true);
  ASSERT_TRUE(d.ok());
  Expect(d->values, DType::kFloat32, {2, 2}, {1, 3, 0, 2});
  Tensor i = Make(DType::kInt32, {4}, {1, 2, 3, 4});
  Expect(Cumulative(i, 0, std::nullopt, false), DType::kInt64, {4}, {1, 3, 6, 10});
  Expect(Cumulative(i, 0, DType::kInt32, false, true, true), DType::kInt32, {4}, {9, 7, 4, 0});
  Expect(Cumulative(Iota({2, 2}), 0, std::nullopt, true), DType::kFloat32, {2, 2}, {0, 1, 0, 3});
}

TEST(ShapeSortTest, Unique) {
  Tensor x = Make(DType::kFloat32, {6}, {2, 1, 1, 3, 4, 3});
  auto u = Unique(x, std::nullopt, true, false);
  ASSERT_TRUE(u.ok());
  Expect(u->values, DType::kFloat32, {4}, {1, 2, 3, 4});
  Expect(u->first_indices, DType::kInt64, {4}, {1, 0, 3, 4});
  Expect(u->inverse, DType::kInt64, {6}, {1, 0, 0, 2, 3, 2});
  Expect(u->counts, DType::kInt64, {4}, {2, 1, 2, 1});
  auto unsorted = Unique(x, std::nullopt, false, false);
  ASSERT_TRUE(unsorted.ok());
  Expect(unsorted->values, DType::kFloat32, {4}, {2, 1, 3, 4});
  Expect(unsorted->inverse, DType::kInt64, {6}, {0, 1, 1, 2, 3, 2});
  auto consecutive = Unique(Make(DType::kInt64, {5}, {1, 1, 2, 1, 1}), std::nullopt, true, true);
  ASSERT_TRUE(consecutive.ok());
  Expect(consecutive->values, DType::kInt64, {3}, {1, 2, 1});
  Expect(consecutive->counts, DType::kInt64, {3}, {2, 1, 2});
  Tensor rows = Make(DType::kFloat32, {3, 2}, {1, 0, 0, 1, 1, 0});
  auto ud = Unique(rows, 0, true, false);
  ASSERT_TRUE(ud.ok());
  Expect(ud->values, DType::kFloat32, {2, 2}, {0, 1, 1, 0});
  Expect(ud->inverse, DType::kInt64, {3}, {1, 0, 1});
}

// ------------------------------------------------------------------ ONNX ops

TEST(ShapeOnnxTest, ReshapeSqueezeExpandSlice) {
  Tensor x = Iota({2, 3, 4});
  auto r = OnnxReshape(x, std::vector<int64_t>{0, -1}, false);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->sizes(), (std::vector<int64_t>{2, 12}));
  EXPECT_TRUE(SharesStorage(*r, x));
  auto z = OnnxReshape(Iota({0, 3}), std::vector<int64_t>{3, 0}, true);
  ASSERT_TRUE(z.ok());
  EXPECT_EQ(z->sizes(), (std::vector<int64_t>{3, 0}));
  ExpectInvalid(OnnxReshape(x, std::vector<int64_t>{5, -1}, false));
  ExpectInvalid(OnnxReshape(x, std::vector<int64_t>{-1, -1}, false));
  auto f = OnnxFlatten(x, 0);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->sizes(), (std::vector<int64_t>{1, 24}));
  auto u = OnnxUnsqueeze(x, std::vector<int64_t>{-1, 0});
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->sizes(), (std::vector<int64_t>{1, 2, 3, 4, 1}));
  auto sq = OnnxSqueeze(*u, std::vector<int64_t>{0, 4});
  ASSERT_TRUE(sq.ok());
  EXPECT_EQ(sq->sizes(), (std::vector<int64_t>{2, 3, 4}));
  ExpectInvalid(OnnxSqueeze(x, std::vector<int64_t>{0}));
  auto e = OnnxExpand(Iota({3, 1}), std::vector<int64_t>{2, 1, 2});
  Expect(e, DType::kFloat32, {2, 3, 2}, {0, 0, 1, 1, 2, 2, 0, 0, 1, 1, 2, 2});
  ExpectInvalid(OnnxExpand(Iota({3}), std::vector<int64_t>{2}));
  const int64_t big = std::numeric_limits<int64_t>::max();
  Expect(OnnxSlice(Iota({2, 5}), std::vector<int64_t>{-1, 1}, std::vector<int64_t>{-big, big},
                   std::vector<int64_t>{1, 0}, std::vector<int64_t>{-2, 1}),
         DType::kFloat32, {1, 3}, {9, 7, 5});
  ExpectInvalid(OnnxSlice(Iota({2}), std::vector<int64_t>{0}, std::vector<int64_t>{1}, {},
                          std::vector<int64_t>{0}));
}

TEST(ShapeOnnxTest, GatherScatterND) {
  Tensor x = Iota({2, 2});
  Expect(GatherND(x, Longs({2, 2}, {0, 0, 1, 1}), 0), DType::kFloat32, {2}, {0, 3});
  Expect(GatherND(x, Longs({2, 1}, {1, 0}), 0), DType::kFloat32, {2, 2}, {2, 3, 0, 1});
  Expect(GatherND(Iota({2, 2, 2}), Longs({2, 1}, {1, 0}), 1), DType::kFloat32, {2, 2},
         {2, 3, 4, 5});
  ExpectInvalid(GatherND(x, Longs({1, 1}, {2}), 0));
  Expect(ScatterND(x, Longs({1, 1}, {1}), Make(DType::kFloat32, {1, 2}, {7, 8}),
                   ScatterReduce::kSum),
         DType::kFloat32, {2, 2}, {0, 1, 9, 11});
  ExpectInvalid(ScatterND(x, Longs({1, 1}, {1}), Make(DType::kFloat32, {2}, {7, 8}),
                          ScatterReduce::kNone));
}

TEST(ShapeOnnxTest, MiscOnnxOps) {
  Tensor x = Iota({3, 2});
  Expect(Compress(x, Make(DType::kBool, {2}, {0, 1}), 0), DType::kFloat32, {1, 2}, {2, 3});
  Expect(Compress(x, Make(DType::kBool, {3}, {1, 0, 1}), std::nullopt), DType::kFloat32, {2},
         {0, 2});
  ExpectInvalid(Compress(x, Make(DType::kBool, {4}, {1, 0, 1, 1}), 0));
  Expect(ReverseSequence(Iota({3, 2}), Longs({2}, {3, 1}), 1, 0), DType::kFloat32, {3, 2},
         {4, 1, 2, 3, 0, 5});
  Expect(OnnxOneHot(Longs({2}, {-1, 5}), Longs({}, {3}), Make(DType::kFloat32, {2}, {0, 2}), 0),
         DType::kFloat32, {3, 2}, {0, 0, 0, 0, 2, 0});
  Expect(ShapeOf(Iota({2, 3, 4}), -2, std::nullopt), DType::kInt64, {2}, {3, 4});
  Expect(ShapeOf(Iota({2, 3, 4}), 0, 10), DType::kInt64, {3}, {2, 3, 4});
  auto list = TensorToIntList(Longs({3}, {4, -1, 0}));
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(*list, (std::vector<int64_t>{4, -1, 0}));
  ExpectInvalid(TensorToIntList(Iota({2})));
}

// ------------------------------------------------------------------ registry

TEST(ShapeRegistryTest, KernelsReachableThroughSchemas) {
  ir::OpRegistry& ops = ir::BuiltinOps();
  ASSERT_TRUE(RegisterReferenceKernels(ops).ok());
  for (const char* name : {"aten::view", "aten::squeeze.dim", "aten::cat", "aten::index.Tensor",
                           "aten::scatter_reduce.two", "aten::arange.start_step", "aten::topk",
                           "aten::_unique2", "aten::constant_pad_nd", "kiln::onnx_slice",
                           "kiln::tensor_to_int_list", "kiln::onnx_unique"}) {
    const ir::Operator* op = ops.Find(name);
    ASSERT_NE(op, nullptr) << name;
    EXPECT_TRUE(op->kernel) << name;
  }
  Tensor x = Iota({2, 3});
  auto idx = ops.Find("aten::index.Tensor")
                 ->kernel({IValue::FromTensor(x),
                           IValue::List({IValue::None(), IValue::FromTensor(Longs({1}, {2}))})});
  ASSERT_TRUE(idx.ok()) << idx.status();
  Expect((*idx)[0].toTensor(), DType::kFloat32, {2, 1}, {2, 5});
  auto split = ops.Find("aten::split.Tensor")
                   ->kernel({IValue::FromTensor(x), IValue::Int(2), IValue::Int(1)});
  ASSERT_TRUE(split.ok()) << split.status();
  ASSERT_EQ((*split)[0].elements().size(), 2u);
  auto full = ops.Find("aten::full")->kernel({IValue::IntList({2}), IValue::Bool(true),
                                              IValue::None(), IValue::None(), IValue::None(),
                                              IValue::None()});
  ASSERT_TRUE(full.ok()) << full.status();
  Expect((*full)[0].toTensor(), DType::kBool, {2}, {1, 1});
  auto topk = ops.Find("aten::topk")->kernel({IValue::FromTensor(x), IValue::Int(1),
                                              IValue::Int(-1), IValue::Bool(false),
                                              IValue::Bool(true)});
  ASSERT_TRUE(topk.ok()) << topk.status();
  ASSERT_EQ(topk->size(), 2u);
  Expect((*topk)[1].toTensor(), DType::kInt64, {2, 1}, {0, 0});
  auto list = ops.Find("kiln::tensor_to_int_list")->kernel({IValue::FromTensor(Longs({2}, {3, 4}))});
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ((*list)[0], IValue::IntList({3, 4}));
  auto pad = ops.Find("kiln::onnx_pad")
                 ->kernel({IValue::FromTensor(Iota({1, 2})), IValue::IntList({0, 1, 0, 0}),
                           IValue::String("edge"), IValue::None()});
  ASSERT_TRUE(pad.ok()) << pad.status();
  Expect((*pad)[0].toTensor(), DType::kFloat32, {1, 3}, {0, 0, 1});
  // Wrong argument kinds are errors, not crashes.
  EXPECT_FALSE(ops.Find("aten::permute")->kernel({IValue::Int(1)}).ok());
  EXPECT_FALSE(ops.Find("aten::cat")->kernel({IValue::List({IValue::Int(1)}), IValue::Int(0)}).ok());
  EXPECT_FALSE(ops.Find("aten::reflection_pad1d")
                   ->kernel({IValue::FromTensor(Iota({1, 2})), IValue::IntList({2, 0})})
                   .ok());
}


// ------------------------------------------------------------------ layouts

TEST(ShapeLayoutTest, NonContiguousInputs) {
  // x^T = [[0, 3], [1, 4], [2, 5]] (a strided view).
  auto xt = Transpose(Iota({2, 3}), 0, 1);
  ASSERT_TRUE(xt.ok());
  ASSERT_FALSE(xt->is_contiguous());
  Expect(Gather(*xt, 1, Longs({3, 1}, {1, 0, 1})), DType::kFloat32, {3, 1}, {3, 1, 5});
  Expect(Index(*xt, {Longs({2}, {2, 0})}), DType::kFloat32, {2, 2}, {2, 5, 0, 3});
  Expect(Pad(*xt, std::vector<int64_t>{1, 0}, PadMode::kReplicate, Tensor::ScalarInt(0)),
         DType::kFloat32, {3, 3}, {0, 0, 3, 1, 1, 4, 2, 2, 5});
  Expect(OnnxSlice(*xt, std::vector<int64_t>{-1}, std::vector<int64_t>{-10},
                   std::vector<int64_t>{0}, std::vector<int64_t>{-1}),
         DType::kFloat32, {3, 2}, {2, 5, 1, 4, 0, 3});
  Expect(Flip(*xt, std::vector<int64_t>{0}), DType::kFloat32, {3, 2}, {2, 5, 1, 4, 0, 3});
  Expect(Clone(*xt), DType::kFloat32, {3, 2}, {0, 3, 1, 4, 2, 5});
  // A view of a view still shares the original storage.
  auto col = Select(*xt, 1, 1);
  Expect(col, DType::kFloat32, {3}, {3, 4, 5});
  EXPECT_TRUE(col->storage() == xt->storage());
  auto c = Clone(*xt);
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->storage() == xt->storage());
  // Expanded (stride-0) inputs.
  auto e = Expand(Iota({1, 2}), std::vector<int64_t>{3, 2});
  ASSERT_TRUE(e.ok());
  Expect(Cumulative(*e, 0, std::nullopt, false), DType::kFloat32, {3, 2}, {0, 1, 0, 2, 0, 3});
}

TEST(ShapeLayoutTest, BytewiseKernelsKeepHalfPrecision) {
  Tensor h = Tensor::Empty(DType::kFloat16, {3});
  for (int i = 0; i < 3; ++i) {
    Tensor s = Tensor::ScalarDouble(i + 0.5, DType::kFloat16);
    std::memcpy(static_cast<char*>(h.raw_data()) + 2 * i, s.raw_data(), 2);
  }
  Expect(Flip(h, std::vector<int64_t>{0}), DType::kFloat16, {3}, {2.5, 1.5, 0.5});
  Expect(Cat({h, h}, 0), DType::kFloat16, {6}, {0.5, 1.5, 2.5, 0.5, 1.5, 2.5});
  Expect(Pad(h, std::vector<int64_t>{1, 0}, PadMode::kConstant, Tensor::ScalarDouble(-1)),
         DType::kFloat16, {4}, {-1, 0.5, 1.5, 2.5});
  Expect(Full(std::vector<int64_t>{2}, Tensor::ScalarDouble(0.25), DType::kFloat16),
         DType::kFloat16, {2}, {0.25, 0.25});
}

// ------------------------------------------------------------------ hostile arguments

// Every overload runtime/register_shape.cc fills.
constexpr const char* kShapeKernelNames[] = {
    "aten::_unique2", "aten::arange", "aten::arange.start", "aten::arange.start_step",
    "aten::argsort", "aten::argsort.stable", "aten::cat", "aten::chunk", "aten::clone",
    "aten::concat", "aten::constant_pad_nd", "aten::contiguous", "aten::cumprod", "aten::cumsum",
    "aten::detach", "aten::diag", "aten::diagonal", "aten::dim", "aten::embedding",
    "aten::empty.memory_format", "aten::empty_like", "aten::expand", "aten::expand_as",
    "aten::eye", "aten::eye.m", "aten::flatten.named_out_dim", "aten::flatten.using_ints",
    "aten::flip", "aten::full", "aten::full_like", "aten::gather", "aten::index_put",
    "aten::index_put.hacked_twin", "aten::index_select", "aten::masked_select",
    "aten::movedim.int", "aten::movedim.intlist", "aten::narrow", "aten::new_empty",
    "aten::new_full", "aten::new_ones", "aten::new_zeros", "aten::nonzero", "aten::numel",
    "aten::one_hot", "aten::ones", "aten::ones_like", "aten::pad", "aten::permute",
    "aten::reflection_pad1d", "aten::reflection_pad2d", "aten::reflection_pad3d", "aten::repeat",
    "aten::replication_pad1d", "aten::replication_pad2d", "aten::replication_pad3d",
    "aten::reshape", "aten::reshape_as", "aten::roll", "aten::scatter.reduce", "aten::scatter.src",
    "aten::scatter.value", "aten::scatter.value_reduce", "aten::scatter_add",
    "aten::scatter_reduce.two", "aten::select.int", "aten::size", "aten::size.int", "aten::sort",
    "aten::sort.stable", "aten::split", "aten::split.sizes", "aten::split_with_sizes",
    "aten::squeeze", "aten::squeeze.dim", "aten::stack", "aten::t", "aten::take_along_dim",
    "aten::tile", "aten::topk", "aten::transpose.int", "aten::tril", "aten::triu",
    "aten::unbind.int", "aten::unique_consecutive", "aten::unique_dim", "aten::unsqueeze",
    "aten::view", "aten::view_as", "aten::zeros", "aten::zeros_like", "kiln::compress",
    "kiln::eye_like", "kiln::gather_nd", "kiln::onnx_cumsum", "kiln::onnx_expand",
    "kiln::onnx_flatten", "kiln::onnx_gather_elements", "kiln::onnx_one_hot", "kiln::onnx_pad",
    "kiln::onnx_reshape", "kiln::onnx_scatter_elements", "kiln::onnx_slice", "kiln::onnx_squeeze",
    "kiln::onnx_unique", "kiln::onnx_unsqueeze", "kiln::range", "kiln::reverse_sequence",
    "kiln::scatter_nd", "kiln::shape", "kiln::size", "kiln::tensor_to_int",
    "kiln::tensor_to_int_list",
};


// Every kernel of this family, fed arguments of the schema's kinds drawn from
// pools of awkward values (empty and 0-dim tensors, views, extreme ints,
// unknown strings) and occasionally of the wrong kind, must return a status
// rather than crash.
TEST(ShapeRobustnessTest, HostileArgumentsNeverCrash) {
  ir::OpRegistry& ops = ir::BuiltinOps();
  ASSERT_TRUE(RegisterReferenceKernels(ops).ok());
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  const int64_t kMin = std::numeric_limits<int64_t>::min();
  auto xt = Transpose(Iota({2, 3}), 0, 1);
  ASSERT_TRUE(xt.ok());
  const std::vector<IValue> tensors = {
      IValue::FromTensor(Tensor::ScalarDouble(1.5, DType::kFloat32)),
      IValue::FromTensor(Iota({0})),
      IValue::FromTensor(Iota({2, 3})),
      IValue::FromTensor(*xt),
      IValue::FromTensor(Longs({2}, {-1, 5})),
      IValue::FromTensor(Longs({1, 1}, {0})),
      IValue::FromTensor(Longs({}, {2})),
      IValue::FromTensor(Make(DType::kBool, {2, 3}, {1, 0, 1, 0, 0, 1})),
      IValue::FromTensor(Tensor::Empty(DType::kFloat16, {2})),
      IValue::FromTensor(Tensor::Placeholder(DType::kFloat32, {2})),
  };
  const std::vector<IValue> ints = {IValue::Int(-1), IValue::Int(0), IValue::Int(1),
                                    IValue::Int(2), IValue::Int(kMax), IValue::Int(kMin),
                                    IValue::Int(int64_t{1} << 40)};
  const std::vector<IValue> int_lists = {
      IValue::IntList({}), IValue::IntList({0}), IValue::IntList({-1}),
      IValue::IntList({1, 2}), IValue::IntList({kMax}), IValue::IntList({kMin, 1}),
      IValue::IntList({2, -1, 3}), IValue::IntList({int64_t{1} << 40, int64_t{1} << 40}),
      IValue::IntList({0, 1, 0, 1})};
  const std::vector<IValue> numbers = {IValue::Int(1), IValue::Double(NAN), IValue::Bool(true),
                                       IValue::Double(1e300)};
  const std::vector<IValue> strings = {IValue::String("none"), IValue::String("add"),
                                       IValue::String("reflect"), IValue::String("bogus")};
  uint64_t seed = 12345;
  auto next = [&seed](size_t n) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<size_t>((seed >> 33) % n);
  };
  auto pick = [&](const std::vector<IValue>& pool) { return pool[next(pool.size())]; };
  std::function<IValue(const ir::TypePtr&)> value_of = [&](const ir::TypePtr& t) -> IValue {
    if (next(12) == 0) return pick(ints);  // the wrong kind, now and then
    switch (t->kind()) {
      case ir::TypeKind::kTensor: return pick(tensors);
      case ir::TypeKind::kInt:
      case ir::TypeKind::kScalarType: return pick(ints);
      case ir::TypeKind::kBool: return IValue::Bool(next(2) == 0);
      case ir::TypeKind::kFloat:
      case ir::TypeKind::kNumber: return pick(numbers);
      case ir::TypeKind::kStr: return pick(strings);
      case ir::TypeKind::kOptional:
        return next(3) == 0 ? IValue::None() : value_of(t->contained()[0]);
      case ir::TypeKind::kList: {
        const ir::TypePtr& e = t->contained()[0];
        if (e->kind() == ir::TypeKind::kInt) return pick(int_lists);
        std::vector<IValue> elems;
        for (size_t i = 0, n = next(4); i < n; ++i) elems.push_back(value_of(e));
        return IValue::List(std::move(elems));
      }
      default: return IValue::None();
    }
  };
  int calls = 0;
  for (const char* name : kShapeKernelNames) {
    const ir::Operator* op = ops.Find(name);
    ASSERT_NE(op, nullptr) << name;
    ASSERT_TRUE(op->kernel) << name;
    for (int trial = 0; trial < 150; ++trial) {
      std::vector<IValue> args;
      for (const auto& arg : op->schema.arguments) args.push_back(value_of(arg.type));
      (void)op->kernel(args);
      ++calls;
    }
    (void)op->kernel({});
  }
  EXPECT_GT(calls, 1000);
}

}  // namespace
}  // namespace kiln::runtime::shape
