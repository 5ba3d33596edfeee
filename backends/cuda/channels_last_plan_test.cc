// The channels-last layout plan on a resnet-like chain, decided on the host
// from the resolved program (no GPU needed): which values go NHWC, which
// convolutions compute channels-last, where the boundaries are.
#include "backends/cuda/channels_last_plan.h"

#include <map>

#include "backends/cuda/conv_fusion_policy.h"
#include "backends/cuda/cuda_conv.h"
#include "backends/cuda/cuda_program.h"
#include "backends/cuda/cuda_test_util.h"
#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "runtime/tensor_ops.h"

namespace kiln::backends::cuda {
namespace {

using test::CompileGraphForCuda;
using test::ConvChainText;
using test::ParseWithConstants;
using test::Random;
using test::RegisterAll;

std::map<std::string, Tensor> ChainWeights(DType dtype) {
  std::map<std::string, Tensor> w = {{"w1", Random({8, 8, 3, 3}, 1)}, {"b1", Random({8}, 2)},
                                     {"w2", Random({8, 8, 3, 3}, 3)}, {"b2", Random({8}, 4)},
                                     {"w3", Random({16, 8, 1, 1}, 5)}, {"b3", Random({16}, 6)},
                                     {"w4", Random({8, 8, 1, 1}, 7)},  {"b4", Random({8}, 8)}};
  for (auto& [name, t] : w) t = *runtime::CastTo(t, dtype);
  return w;
}

// Compiled with the convolutions fused, as conv_fusion_policy.h compiles
// large float32 batches (these graphs are small), then resolved in `mode`.
absl::StatusOr<ResolvedProgram> Resolve(const std::string& text, DType dtype, ChannelsLastMode mode) {
  ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> g, ParseWithConstants(text, ChainWeights(dtype)));
  absl::StatusOr<driver::CompiledGraph> c;
  {
    test::ScopedEnv fused("KILN_CUDA_CHANNELS_LAST", "1");
    c = CompileGraphForCuda(*g, /*generate_only=*/true);
  }
  RETURN_IF_ERROR(c.status());
  return ResolveProgram(c->program, mode);
}
// The plan's mechanics, whatever the measured policy says.
absl::StatusOr<ResolvedProgram> Resolve(const std::string& text, DType dtype, bool channels_last) {
  return Resolve(text, dtype, channels_last ? ChannelsLastMode::kAlways : ChannelsLastMode::kOff);
}

std::vector<const ExternStep*> Convolutions(const ResolvedProgram& r) {
  std::vector<const ExternStep*> out;
  for (const ExternStep& e : r.externs) {
    if (IsConvOp(e.op)) out.push_back(&e);
  }
  return out;
}

const lowering::Layout& LayoutOf(const ResolvedProgram& r, int slot) { return r.slot_layouts[static_cast<size_t>(slot)]; }

TEST(ChannelsLastPlanTest, InnerValuesOfAConvolutionChainGoNhwc) {
  RegisterAll();
  for (const char* type : {"Float", "BFloat16"}) {
    SCOPED_TRACE(type);
    const DType dtype = std::string(type) == "Float" ? DType::kFloat32 : DType::kBFloat16;
    absl::StatusOr<ResolvedProgram> r = Resolve(ConvChainText(type, "hardswish"), dtype, true);
    ASSERT_TRUE(r.ok()) << r.status();
    const std::vector<const ExternStep*> convs = Convolutions(*r);
    ASSERT_EQ(convs.size(), 3u);
    for (const ExternStep* e : convs) {
      // Each convolution carries its epilogue: conv+relu, conv+add+relu, conv+hardswish.
      EXPECT_EQ(e->op, "kiln::conv_post_ops");
      EXPECT_TRUE(e->channels_last);
      ASSERT_GE(e->weight_constant, 0);
      EXPECT_EQ(r->constants[static_cast<size_t>(e->weight_constant)].second.dim(), 4);
    }
    // conv 1: the program input stays plain (a transpose in the call), its result NHWC.
    EXPECT_TRUE(LayoutOf(*r, convs[0]->buffer_slots[0]).IsContiguous());
    EXPECT_TRUE(IsChannelsLastLayout(LayoutOf(*r, convs[0]->output_slots[0])));
    EXPECT_FALSE(LayoutOf(*r, convs[0]->output_slots[0]).IsContiguous());
    // conv 2: NHWC in, NHWC out, its residual operand (conv 1's result) NHWC.
    EXPECT_EQ(convs[1]->buffer_slots[0], convs[0]->output_slots[0]);
    EXPECT_EQ(convs[1]->buffer_slots.back(), convs[0]->output_slots[0]);
    EXPECT_TRUE(IsChannelsLastLayout(LayoutOf(*r, convs[1]->output_slots[0])));
    // conv 3: NHWC in; the program's output stays plain (a transpose in the call).
    EXPECT_TRUE(IsChannelsLastLayout(LayoutOf(*r, convs[2]->buffer_slots[0])));
    EXPECT_TRUE(LayoutOf(*r, convs[2]->output_slots[0]).IsContiguous());
    EXPECT_EQ(r->channels_last_slots.size(), 2u);
    EXPECT_EQ(r->boundary_transposes, 2);
    // The weights and the planned sizes are untouched: same bytes, other strides.
    for (int s : r->channels_last_slots) {
      const lowering::Layout& l = LayoutOf(*r, s);
      EXPECT_EQ(l.StorageElements(), l.sizes[0] * l.sizes[1] * l.sizes[2] * l.sizes[3]);
    }

    absl::StatusOr<ResolvedProgram> off = Resolve(ConvChainText(type, "hardswish"), dtype, false);
    ASSERT_TRUE(off.ok()) << off.status();
    EXPECT_TRUE(off->channels_last_slots.empty());
    for (const ExternStep* e : Convolutions(*off)) {
      EXPECT_FALSE(e->channels_last);
      EXPECT_TRUE(LayoutOf(*off, e->output_slots[0]).IsContiguous());
    }
  }
}

// A generated kernel reading a value keeps it plain: the chain is cut there.
TEST(ChannelsLastPlanTest, AKernelReaderIsABoundary) {
  RegisterAll();
  std::string text = ConvChainText("Float", "relu");
  // r1 also feeds a sigmoid (a generated kernel) returned as a second output.
  const std::string ret = "  return (%o)\n";
  text.replace(text.find(ret), ret.size(),
               "  %sg : Float(2, 8, 10, 10) = aten::sigmoid(%r1)\n  return (%o, %sg)\n");
  absl::StatusOr<ResolvedProgram> r = Resolve(text, DType::kFloat32, true);
  ASSERT_TRUE(r.ok()) << r.status();
  const std::vector<const ExternStep*> convs = Convolutions(*r);
  ASSERT_EQ(convs.size(), 3u);
  // conv 1's result is read by the kernel: plain; conv 1 computes NCHW.
  EXPECT_TRUE(LayoutOf(*r, convs[0]->output_slots[0]).IsContiguous());
  EXPECT_FALSE(convs[0]->channels_last);
  // conv 2 -> conv 3 stays NHWC.
  EXPECT_TRUE(convs[1]->channels_last);
  EXPECT_TRUE(IsChannelsLastLayout(LayoutOf(*r, convs[1]->output_slots[0])));
  EXPECT_TRUE(convs[2]->channels_last);
  EXPECT_EQ(r->channels_last_slots.size(), 1u);
  EXPECT_EQ(r->boundary_transposes, 2);
}

// resnet's stem: conv -> relu -> max pool -> conv: the pool reads and
// writes NHWC, so only the program's input and output are converted.
TEST(ChannelsLastPlanTest, PoolingBetweenConvolutionsStaysNhwc) {
  RegisterAll();
  const std::string text = test::ConvPoolChainText("Float", "relu");
  absl::StatusOr<ResolvedProgram> r = Resolve(text, DType::kFloat32, true);
  ASSERT_TRUE(r.ok()) << r.status();
  const ExternStep* pool = nullptr;
  for (const ExternStep& e : r->externs) {
    if (e.op.rfind("aten::max_pool2d", 0) == 0) pool = &e;
  }
  ASSERT_NE(pool, nullptr);
  EXPECT_TRUE(IsChannelsLastLayout(LayoutOf(*r, pool->buffer_slots[0])));
  EXPECT_TRUE(IsChannelsLastLayout(LayoutOf(*r, pool->output_slots[0])));
  EXPECT_FALSE(LayoutOf(*r, pool->output_slots[0]).IsContiguous());
  for (const ExternStep* e : Convolutions(*r)) EXPECT_TRUE(e->channels_last);
  EXPECT_EQ(r->boundary_transposes, 2) << "the program's input and output only";
}

// resnet's downsample: a biased 1x1 convolution whose result is only the
// residual operand of the next epilogue becomes a fused op (empty chain)
// and its value stays NHWC.
TEST(ChannelsLastPlanTest, DownsampleConvolutionsStayNhwc) {
  RegisterAll();
  absl::StatusOr<ResolvedProgram> r = Resolve(test::ConvDownsampleChainText("Float", "relu"), DType::kFloat32, true);
  ASSERT_TRUE(r.ok()) << r.status();
  const std::vector<const ExternStep*> convs = Convolutions(*r);
  ASSERT_EQ(convs.size(), 4u);
  int empty_chains = 0;
  for (const ExternStep* e : convs) {
    EXPECT_EQ(e->op, "kiln::conv_post_ops");
    EXPECT_TRUE(e->channels_last);
    empty_chains += e->args.size() == 10 && e->args[9].buffer_list.empty() && e->args[7].constant &&
                    e->args[7].constant->elements().empty();
  }
  EXPECT_EQ(empty_chains, 1);
  EXPECT_EQ(r->channels_last_slots.size(), 3u) << "conv 1's, the downsample's and conv 2's results";
  EXPECT_EQ(r->boundary_transposes, 2);
}

// ConvChainText at batch 32.
std::string Batch32(std::string text) {
  for (const std::string shape : {"(2, 8, 10, 10)", "(2, 16, 10, 10)"}) {
    for (size_t at = text.find(shape); at != std::string::npos; at = text.find(shape, at)) text.replace(at + 1, 1, "32");
  }
  return text;
}

bool Fused(const std::string& text, DType dtype) {
  absl::StatusOr<std::unique_ptr<ir::Graph>> g = ParseWithConstants(text, ChainWeights(dtype));
  EXPECT_TRUE(g.ok()) << g.status() << "\n" << text;
  return g.ok() && FuseConvolutionEpilogues(**g);
}

// The default policy (conv_fusion_policy.h) fuses, and so plans, only what
// measured faster: ungrouped convolutions at batch >= 16, float32 or
// bfloat16 through cuDNN's graph API. The
// plan then follows the fused convolutions; a program without them stays
// plain and says why.
TEST(ChannelsLastPlanTest, DefaultPolicyPlansWhatMeasuredFaster) {
  RegisterAll();
  EXPECT_TRUE(Fused(Batch32(ConvChainText("Float", "relu")), DType::kFloat32));
  EXPECT_FALSE(Fused(ConvChainText("Float", "relu"), DType::kFloat32));  // batch 2
  EXPECT_TRUE(Fused(Batch32(ConvChainText("BFloat16", "relu")), DType::kBFloat16));
  {
    test::ScopedEnv legacy("KILN_CUDNN_BACKEND", "0");  // bfloat16 NHWC lost through the legacy API
    EXPECT_FALSE(Fused(Batch32(ConvChainText("BFloat16", "relu")), DType::kBFloat16));
    EXPECT_TRUE(Fused(Batch32(ConvChainText("Float", "relu")), DType::kFloat32));
  }
  // The second convolution grouped (8 channels in 2 groups).
  std::string grouped = Batch32(ConvChainText("Float", "relu"));
  const std::string conv2 = "aten::conv2d(%r1, %w2, %b2, %s, %p1, %s, %g)";
  ASSERT_NE(grouped.find(conv2), std::string::npos) << grouped;
  grouped.replace(grouped.find(conv2), conv2.size(), "aten::conv2d(%r1, %w2, %b2, %s, %p1, %s, %two)");
  grouped.insert(grouped.find("  %s : int[]"), "  %two : int = prim::Constant[value=2]()\n");
  EXPECT_FALSE(Fused(grouped, DType::kFloat32));
  {
    test::ScopedEnv always("KILN_CUDA_CHANNELS_LAST", "1");
    EXPECT_TRUE(Fused(ConvChainText("Float", "relu"), DType::kFloat32));
  }
  {
    test::ScopedEnv never("KILN_CUDA_CHANNELS_LAST", "0");
    EXPECT_FALSE(Fused(Batch32(ConvChainText("Float", "relu")), DType::kFloat32));
  }

  // Compiled by the policy: batch 32 fused and planned, batch 2 neither.
  for (const bool large : {true, false}) {
    SCOPED_TRACE(large ? "batch 32" : "batch 2");
    const std::string text = large ? Batch32(ConvChainText("Float", "relu")) : ConvChainText("Float", "relu");
    absl::StatusOr<std::unique_ptr<ir::Graph>> g = ParseWithConstants(text, ChainWeights(DType::kFloat32));
    ASSERT_TRUE(g.ok()) << g.status();
    absl::StatusOr<driver::CompiledGraph> c = CompileGraphForCuda(**g, /*generate_only=*/true);
    ASSERT_TRUE(c.ok()) << c.status();
    absl::StatusOr<ResolvedProgram> r = ResolveProgram(c->program, ChannelsLastMode::kWhereFaster);
    ASSERT_TRUE(r.ok()) << r.status();
    int fused = 0;
    for (const ExternStep* e : Convolutions(*r)) fused += e->op == "kiln::conv_post_ops";
    EXPECT_EQ(fused, large ? 3 : 0);
    EXPECT_EQ(r->channels_last_slots.size(), large ? 2u : 0u);
    EXPECT_EQ(r->channels_last_skipped.empty(), large) << r->channels_last_skipped;
  }
}

TEST(ChannelsLastPlanTest, LayoutHelpers) {
  const lowering::Layout plain = lowering::Layout::Contiguous(DType::kFloat32, {2, 3, 4, 5}, "cuda");
  EXPECT_FALSE(IsChannelsLastLayout(plain));
  const lowering::Layout nhwc = ChannelsLastLayout(plain);
  EXPECT_EQ(nhwc.strides, (std::vector<int64_t>{60, 1, 15, 3}));
  EXPECT_TRUE(IsChannelsLastLayout(nhwc));
  // One channel: both layouts are the same memory order.
  EXPECT_TRUE(IsChannelsLastLayout(lowering::Layout::Contiguous(DType::kFloat32, {2, 1, 4, 5}, "cuda")));
}

}  // namespace
}  // namespace kiln::backends::cuda
