#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "backends/cpu/identifiers.h"
#include "backends/cpu/kept_values.h"
#include "backends/cpu/kernel_codegen.h"
#include "backends/cpu/row_reciprocals.h"
#include "gtest/gtest.h"
#include "lowering/test_graphs.h"

namespace kiln::backends::cpu {
namespace {

using namespace lowering::testing;  // NOLINT
using lowering::Buffer;
using lowering::BufferKind;
using lowering::FusedKernel;
using lowering::LoopGraph;

LoopGraph PointwiseGraph(int64_t n) {
  LoopGraph g;
  Buffer x;
  x.name = "arg0";
  x.kind = BufferKind::kInput;
  x.layout = Contig({n});
  Buffer b;
  b.name = "buf0";
  b.layout = Contig({n});
  b.pointwise = lowering::Pointwise{{n}, Un(ExprOp::kTanh, Bin(ExprOp::kAdd, Ld("arg0", V(0)), F(1.0)))};
  g.buffers = {x, b};
  g.inputs = {"arg0"};
  g.outputs = {"buf0"};
  return g;
}

TEST(Identifiers, SanitizeKeepsOnlySafeCharacters) {
  EXPECT_EQ(SanitizeIdentifier("buf0"), "buf0");
  const std::string hostile = SanitizeIdentifier("x); system(\"rm -rf /\"); //");
  for (char c : hostile) EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c)) || c == '_') << hostile;
  EXPECT_EQ(hostile.find("__"), std::string::npos);
  EXPECT_EQ(SanitizeIdentifier("1abc")[0], 'b');
  EXPECT_EQ(SanitizeIdentifier("int"), "b_int");
  EXPECT_EQ(SanitizeIdentifier("l_t0"), "b_l_t0");
  EXPECT_EQ(SanitizeIdentifier(""), "b");
  IdentifierTable t;
  EXPECT_NE(t.Get("a-b"), t.Get("a+b"));
  EXPECT_EQ(t.Get("a-b"), t.Get("a-b"));
  EXPECT_EQ(SanitizeComment("a\nb\\c*/"), "a?b?c*/");
}

TEST(KernelSource, PointwiseIsParallelAndVectorized) {
  LoopGraph g = PointwiseGraph(1 << 20);
  FusedKernel k{"cpp_fused_add_tanh_0", "cpu", {"buf0"}, {"arg0"}};
  auto src = CpuKernelSource(g, k);
  ASSERT_TRUE(src.ok()) << src.status();
  // Parameters are named by position (reads, then written buffers).
  EXPECT_NE(src->find("static void cpp_fused_add_tanh_0(const float* p0, float* p1)"), std::string::npos)
      << *src;
  EXPECT_NE(src->find("#pragma omp parallel for simd"), std::string::npos) << *src;
  EXPECT_NE(src->find("tanhf("), std::string::npos) << *src;
}

TEST(KernelSource, SmallPointwiseStaysOnOneThread) {
  LoopGraph g = PointwiseGraph(16);
  auto src = CpuKernelSource(g, FusedKernel{"k", "cpu", {"buf0"}, {"arg0"}});
  ASSERT_TRUE(src.ok());
  EXPECT_EQ(src->find("parallel"), std::string::npos) << *src;
  EXPECT_NE(src->find("#pragma omp simd"), std::string::npos) << *src;
}

TEST(KernelSource, BadInputIsAnErrorNotACrash) {
  LoopGraph g = PointwiseGraph(8);
  // Unknown buffer in the kernel.
  EXPECT_FALSE(CpuKernelSource(g, FusedKernel{"k", "cpu", {"nope"}, {"arg0"}}).ok());
  // A load from a buffer the kernel does not list.
  EXPECT_FALSE(CpuKernelSource(g, FusedKernel{"k", "cpu", {"buf0"}, {}}).ok());
  // An unbound index variable.
  g.buffers[1].pointwise->body = Ld("arg0", V(3));
  EXPECT_FALSE(CpuKernelSource(g, FusedKernel{"k", "cpu", {"buf0"}, {"arg0"}}).ok());
  // Wrong arity.
  g.buffers[1].pointwise->body = Make(ExprOp::kAdd, DType::kFloat32, {F(1)});
  EXPECT_FALSE(CpuKernelSource(g, FusedKernel{"k", "cpu", {"buf0"}, {"arg0"}}).ok());
  // A null body.
  g.buffers[1].pointwise->body = nullptr;
  EXPECT_FALSE(CpuKernelSource(g, FusedKernel{"k", "cpu", {"buf0"}, {"arg0"}}).ok());
  // A very deep expression.
  ExprPtr deep = F(0);
  for (int i = 0; i < 5000; ++i) deep = Un(ExprOp::kNeg, deep);
  g.buffers[1].pointwise->body = deep;
  auto r = CpuKernelSource(g, FusedKernel{"k", "cpu", {"buf0"}, {"arg0"}});
  EXPECT_FALSE(r.ok());
  // Destroying a deep shared_ptr chain recursively would overflow the
  // stack; unwind it iteratively.
  g.buffers[1].pointwise->body = nullptr;
  while (deep != nullptr && deep.use_count() == 1 && !deep->args.empty()) {
    ExprPtr next = deep->args[0];
    deep = next;
  }
  // Layout that does not match the ranges.
  LoopGraph g2 = PointwiseGraph(8);
  g2.buffers[1].layout = Contig({9});
  EXPECT_FALSE(CpuKernelSource(g2, FusedKernel{"k", "cpu", {"buf0"}, {"arg0"}}).ok());
}

TEST(KernelSource, ReductionsUseVectorAccumulators) {
  LoopGraph g;
  Buffer x;
  x.name = "x";
  x.kind = BufferKind::kInput;
  x.layout = Contig({256, 512});
  g.buffers.push_back(x);
  const lowering::ReductionType types[] = {lowering::ReductionType::kSum, lowering::ReductionType::kMax,
                                           lowering::ReductionType::kArgmax,
                                           lowering::ReductionType::kWelfordM2};
  FusedKernel k{"k", "cpu", {}, {"x"}};
  for (int i = 0; i < 4; ++i) {
    Buffer b;
    b.name = "r" + std::to_string(i);
    b.layout = Contig({256}, i == 2 ? DType::kInt64 : DType::kFloat32);
    b.reduction = lowering::Reduction{{256}, {512}, types[i], Ld("x", Flat2(0, 512))};
    g.buffers.push_back(b);
    k.buffers.push_back(b.name);
  }
  auto src = CpuKernelSource(g, k);
  ASSERT_TRUE(src.ok()) << src.status();
  EXPECT_NE(src->find("reduction(+:l_acc)"), std::string::npos) << *src;
  EXPECT_NE(src->find("reduction(max:l_acc)"), std::string::npos) << *src;
  EXPECT_NE(src->find("l_m2"), std::string::npos) << *src;
  EXPECT_NE(src->find("#pragma omp parallel for"), std::string::npos) << *src;
}

// A float reduction of `type` over `red_ranges` for every index of `out_ranges`
// (input laid out contiguously as out_ranges ++ red_ranges).
std::string ReductionSource(std::vector<int64_t> out_ranges, std::vector<int64_t> red_ranges,
                            lowering::ReductionType type) {
  LoopGraph g;
  std::vector<int64_t> all = out_ranges;
  all.insert(all.end(), red_ranges.begin(), red_ranges.end());
  Buffer x;
  x.name = "x";
  x.kind = BufferKind::kInput;
  x.layout = Contig(all);
  // Row-major flat index over all index variables.
  ExprPtr index = V(0);
  for (size_t i = 1; i < all.size(); ++i) {
    index = Bin(ExprOp::kAdd, Bin(ExprOp::kMul, index, I(all[i])), V(static_cast<int>(i)));
  }
  Buffer r;
  r.name = "r";
  r.layout = Contig(out_ranges);
  r.reduction = lowering::Reduction{out_ranges, red_ranges, type, Ld("x", index)};
  g.buffers = {x, r};
  auto src = CpuKernelSource(g, FusedKernel{"k", "cpu", {"r"}, {"x"}});
  return src.ok() ? *src : src.status().ToString();
}

TEST(KernelSource, LongRowsKeepSeveralVectorAccumulators) {
  // 300 = 4 blocks of 64 + a scalar tail of 44.
  const std::string sum = ReductionSource({256}, {300}, lowering::ReductionType::kSum);
  EXPECT_NE(sum.find("float l_acc_p[64];"), std::string::npos) << sum;
  EXPECT_NE(sum.find("for (int64_t l_vb = 0; l_vb < INT64_C(256); l_vb += INT64_C(64))"), std::string::npos) << sum;
  EXPECT_NE(sum.find("l_acc_p[l_vi] += "), std::string::npos) << sum;
  EXPECT_NE(sum.find("for (int64_t l_v1 = INT64_C(256); l_v1 < INT64_C(300); ++l_v1)"), std::string::npos) << sum;
  EXPECT_NE(sum.find("#pragma omp simd reduction(+:l_acc)"), std::string::npos) << sum;
  // Max keeps partial NaN flags too; the generated code names no std:: entity.
  const std::string mx = ReductionSource({256}, {512}, lowering::ReductionType::kMax);
  EXPECT_NE(mx.find("int l_nan_p[64];"), std::string::npos) << mx;
  EXPECT_NE(mx.find("reduction(max:l_acc) reduction(|:l_nan)"), std::string::npos) << mx;
  EXPECT_EQ(mx.find("std::"), std::string::npos) << mx;
  // The zero-sign flag is an integer compare of the bit pattern (+0 for max,
  // -0 for min), which gcc vectorizes; `v == 0 && signbit(v)` it did not.
  EXPECT_NE(mx.find("l_zs_p[l_vi] |= (__builtin_bit_cast(unsigned int, l_t2) == 0);"), std::string::npos) << mx;
  EXPECT_EQ(mx.find("signbit"), std::string::npos) << mx;
  const std::string mn = ReductionSource({256}, {512}, lowering::ReductionType::kMin);
  EXPECT_NE(mn.find("(__builtin_bit_cast(unsigned int, l_t2) == 0x80000000u)"), std::string::npos) << mn;
  EXPECT_EQ(mx.find("for (int64_t l_v1 = INT64_C(512)"), std::string::npos) << "no tail when blocks divide the row";
  // Welford's two passes are both blocked.
  const std::string m2 = ReductionSource({64}, {1024}, lowering::ReductionType::kWelfordM2);
  EXPECT_NE(m2.find("l_acc_p[l_vi] += "), std::string::npos) << m2;
  EXPECT_NE(m2.find("l_m2_p[l_vi] += "), std::string::npos) << m2;
  // Several reduced dims: the outer ones loop around the blocked innermost.
  const std::string multi = ReductionSource({8}, {3, 1, 200}, lowering::ReductionType::kSum);
  EXPECT_NE(multi.find("for (int64_t l_v1 = 0; l_v1 < INT64_C(3); ++l_v1)"), std::string::npos) << multi;
  EXPECT_NE(multi.find("const int64_t l_v2 = 0;"), std::string::npos) << multi;
  EXPECT_NE(multi.find("const int64_t l_v3 = l_vb + l_vi;"), std::string::npos) << multi;
}

TEST(KernelSource, ShortRowsAndIntegersKeepOneAccumulator) {
  const std::string short_rows = ReductionSource({256}, {100}, lowering::ReductionType::kSum);
  EXPECT_EQ(short_rows.find("l_acc_p"), std::string::npos) << short_rows;
  EXPECT_NE(short_rows.find("#pragma omp simd reduction(+:l_acc)"), std::string::npos) << short_rows;
  // A full reduction parallelizes the reduced loop instead.
  const std::string full = ReductionSource({}, {1 << 20}, lowering::ReductionType::kSum);
  EXPECT_EQ(full.find("l_acc_p"), std::string::npos) << full;
  EXPECT_NE(full.find("#pragma omp parallel for simd reduction(+:l_acc)"), std::string::npos) << full;
}

TEST(KernelSource, ParallelLoopsTakeLargeChunks) {
  // [4096, 4096] sum: 64 rows (1 MB of float32) per dynamic chunk.
  const std::string sum = ReductionSource({4096}, {4096}, lowering::ReductionType::kSum);
  EXPECT_NE(sum.find("schedule(dynamic, 64)"), std::string::npos) << sum;
  // Small loops still split: [64, 1024] gives 16-row (16K-element) chunks.
  const std::string small = ReductionSource({64}, {1024}, lowering::ReductionType::kSum);
  EXPECT_NE(small.find("schedule(dynamic, 16)"), std::string::npos) << small;
}

// The loops of softmax(-1) over [rows, cols] as lowering builds them: max
// and sum over [rows, 1] x [cols] (index variables v0, v1 = 0, v2), then
// the pointwise over [rows, cols] (v0, v1). `normalize` is the pointwise's
// body given the row's exp(x - max) (over v0, v1), max and sum loads.
ExprPtr RowElement(int64_t cols) { return Bin(ExprOp::kAdd, Bin(ExprOp::kMul, V(0), I(cols)), V(2)); }
using Normalize = std::function<ExprPtr(ExprPtr e, ExprPtr max, ExprPtr sum)>;
std::pair<LoopGraph, FusedKernel> RowKernel(int64_t rows, int64_t cols, const Normalize& normalize) {
  LoopGraph g;
  Buffer x;
  x.name = "x";
  x.kind = BufferKind::kInput;
  x.layout = Contig({rows, cols});
  auto row_max = [] { return Ld("mx", V(0)); };
  Buffer mx;
  mx.name = "mx";
  mx.layout = Contig({rows, 1});
  mx.reduction = lowering::Reduction{{rows, 1}, {cols}, lowering::ReductionType::kMax, Ld("x", RowElement(cols))};
  Buffer sum;
  sum.name = "sum";
  sum.layout = Contig({rows, 1});
  sum.reduction = lowering::Reduction{{rows, 1}, {cols}, lowering::ReductionType::kSum,
                                      Un(ExprOp::kExp, Bin(ExprOp::kSub, Ld("x", RowElement(cols)), row_max()))};
  Buffer out;
  out.name = "out";
  out.layout = Contig({rows, cols});
  out.pointwise = lowering::Pointwise{
      {rows, cols},
      normalize(Un(ExprOp::kExp, Bin(ExprOp::kSub, Ld("x", Flat2(0, cols)), row_max())), row_max(), Ld("sum", V(0)))};
  g.buffers = {x, mx, sum, out};
  g.inputs = {"x"};
  g.outputs = {"out"};
  FusedKernel k{"k", "cpu", {"mx", "sum", "out"}, {"x"}};
  k.outer_ranges = {rows};
  return {g, k};
}

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Issue 12: the sum pass keeps exp(x - max) in the output buffer and the
// normalize pass reads it back, so each element's exp is computed once.
TEST(KernelSource, SoftmaxComputesEachExpOnce) {
  auto [g, k] = RowKernel(64, 4096, [](ExprPtr e, ExprPtr, ExprPtr sum) { return Bin(ExprOp::kDiv, e, sum); });
  auto src = CpuKernelSource(g, k);
  ASSERT_TRUE(src.ok()) << src.status();
  // One exp call site: the sum pass's blocked loop (4096 = 64 blocks, no tail).
  EXPECT_EQ(Count(*src, "expf("), 1) << *src;
  // Parameters: x (p0), then mx, sum, out (p3). The sum pass stores into out
  // at the element the normalize pass writes, which reads it back.
  const size_t sum_pass = src->find("l_acc_p[l_vi] += ");
  const size_t normalize = src->find("p2[(INT64_C(0) + l_v0 * INT64_C(1))] = l_acc;");
  ASSERT_NE(sum_pass, std::string::npos) << *src;
  ASSERT_NE(normalize, std::string::npos) << *src;
  const size_t keep = src->find("p3[");
  EXPECT_LT(keep, sum_pass) << *src;
  EXPECT_LT(src->find("expf("), keep) << *src;
  EXPECT_NE(src->find("= p3[", normalize), std::string::npos) << *src;
  // It multiplies by the row's reciprocal, computed once per row; a row
  // whose reciprocal overflows runs the division.
  const size_t reciprocal = src->find("const float l_r0 = static_cast<float>(0x1p+0) / ", normalize);
  ASSERT_NE(reciprocal, std::string::npos) << *src;
  EXPECT_NE(src->find("if ((__builtin_isinf(l_r0) == 0 || ", reciprocal), std::string::npos) << *src;
  EXPECT_NE(src->find(" * l_r0;", reciprocal), std::string::npos) << *src;
  EXPECT_NE(src->find("} else {", reciprocal), std::string::npos) << *src;

  // Rows with a scalar tail (300 = 4 blocks of 64 + 44): the blocked loop
  // and the tail each keep their values; the normalize pass has no exp.
  auto [g2, k2] = RowKernel(64, 300, [](ExprPtr e, ExprPtr, ExprPtr sum) { return Bin(ExprOp::kDiv, e, sum); });
  auto tail = CpuKernelSource(g2, k2);
  ASSERT_TRUE(tail.ok()) << tail.status();
  EXPECT_EQ(Count(*tail, "expf("), 2) << *tail;
  EXPECT_EQ(Count(tail->substr(tail->find("p2[(INT64_C(0)")), "expf("), 0) << *tail;
}

TEST(KeptValues, TheLargestSharedExpensiveSubexpressionIsKept) {
  // The pointwise uses exp(x - max) inside a larger expression: that node
  // (not the whole body, which the sum does not compute) is kept.
  auto [g, k] = RowKernel(8, 256, [](ExprPtr e, ExprPtr, ExprPtr sum) {
    return Un(ExprOp::kTanh, Bin(ExprOp::kMul, Bin(ExprOp::kDiv, e, sum), F(2.0)));
  });
  std::vector<KeptValue> kept = PlanKeptValues(g, k);
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].reduction, "sum");
  EXPECT_EQ(kept[0].target, "out");
  EXPECT_EQ(lowering::ExprToString(kept[0].value), "exp(load(x, v0 * 256 + v2) - load(mx, v0))");
  EXPECT_EQ(lowering::ExprToString(kept[0].store_index), "v0 * 256 + v2");
  EXPECT_EQ(lowering::ExprToString(kept[0].target_body), "tanh(load(out, v0 * 256 + v1) / load(sum, v0) * 2.0)");
}

TEST(KeptValues, NothingIsKeptWithoutAnIdenticalExpensiveValue) {
  // log_softmax: (x - max) - log(sum) shares no expensive value with the
  // sum's body (log(sum) is per row, x - max is cheap).
  auto [g, k] = RowKernel(8, 256, [](ExprPtr, ExprPtr max, ExprPtr sum) {
    return Bin(ExprOp::kSub, Bin(ExprOp::kSub, Ld("x", Flat2(0, 256)), max), Un(ExprOp::kLog, sum));
  });
  EXPECT_TRUE(PlanKeptValues(g, k).empty());
  auto src = CpuKernelSource(g, k);
  ASSERT_TRUE(src.ok()) << src.status();
  EXPECT_EQ(Count(*src, "p3["), 1) << "only the pointwise's own store: " << *src;

  // The same exp at other elements (the row reversed) is a different value.
  auto [g2, k2] = RowKernel(8, 256, [](ExprPtr, ExprPtr max, ExprPtr sum) {
    ExprPtr reversed = Bin(ExprOp::kAdd, Bin(ExprOp::kMul, V(0), I(256)), Bin(ExprOp::kSub, I(255), V(1)));
    return Bin(ExprOp::kDiv, Un(ExprOp::kExp, Bin(ExprOp::kSub, Ld("x", reversed), max)), sum);
  });
  EXPECT_TRUE(PlanKeptValues(g2, k2).empty());

  // An output buffer the kernel also reads is never written early.
  auto [g3, k3] = RowKernel(8, 256, [](ExprPtr e, ExprPtr, ExprPtr sum) { return Bin(ExprOp::kDiv, e, sum); });
  k3.reads.push_back("out");
  EXPECT_TRUE(PlanKeptValues(g3, k3).empty());

  // A pointwise over other elements than the reduction's (a transposed
  // [cols, rows] output of the same values) is not matched.
  auto [g4, k4] = RowKernel(8, 256, [](ExprPtr e, ExprPtr, ExprPtr sum) { return Bin(ExprOp::kDiv, e, sum); });
  g4.buffers[3].pointwise->ranges = {8, 16, 16};
  g4.buffers[3].layout = Contig({8, 16, 16});
  EXPECT_TRUE(PlanKeptValues(g4, k4).empty());
}

TEST(RowReciprocals, OnlyDivisionsOfRowVaryingValuesByRowValues) {
  // Over [rows, cols] with the row index v0 shared (inner variables from 1).
  ExprPtr x = Ld("x", Flat2(0, 64));
  ExprPtr by_sum = Bin(ExprOp::kDiv, x, Ld("sum", V(0)));
  ExprPtr by_three = Bin(ExprOp::kDiv, by_sum, F(3.0));
  std::vector<ExprPtr> both = RowInvariantDivisions(by_three, 1);
  EXPECT_EQ(both.size(), 2u);
  // A divisor that varies along the row, a dividend that does not, and
  // integer division are left alone.
  EXPECT_TRUE(RowInvariantDivisions(Bin(ExprOp::kDiv, Ld("sum", V(0)), x), 1).empty());
  EXPECT_TRUE(RowInvariantDivisions(Bin(ExprOp::kDiv, Ld("sum", V(0)), F(300.0)), 1).empty());
  EXPECT_TRUE(RowInvariantDivisions(Bin(ExprOp::kDiv, V(1), I(3)), 1).empty());
  // With no shared dims (first inner variable 0) nothing is row-invariant
  // but constants.
  EXPECT_EQ(RowInvariantDivisions(by_three, 0).size(), 1u);
}

}  // namespace
}  // namespace kiln::backends::cpu
