#include <string>
#include <vector>

#include "backends/cpu/identifiers.h"
#include "backends/cpu/kernel_codegen.h"
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

}  // namespace
}  // namespace kiln::backends::cpu
