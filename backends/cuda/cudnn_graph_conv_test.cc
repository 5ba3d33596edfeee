// The graph-API convolution without a GPU: how a ConvProblem becomes cuDNN
// tensor and convolution specs (dims in N, C, H, W order, strides with
// size-1 dims placed in the layout's order, byte alignment, uids), the plan
// cache's key, the numerical-note filter, the switch; and, where libcudnn.so.9
// is installed (no GPU needed for these descriptors), the tensors,
// convolution and forward operation finalized by cuDNN itself; the fused
// epilogue's mapping (bias, residual add, activations; what it refuses), its
// key, and its tensors, pointwise descriptors and operations finalized by
// cuDNN (fp32/bf16, NCHW/NHWC, with and without a residual).
#include "backends/cuda/cudnn_graph_conv.h"

#include <cstdlib>

#include "absl/strings/match.h"
#include "ir/post_ops.h"
#include "backends/cuda/cuda_loader.h"
#include "gtest/gtest.h"

namespace kiln::backends::cuda {
namespace {

DeviceView View(CUdeviceptr base, DType dtype, std::vector<int64_t> sizes, std::vector<int64_t> strides) {
  DeviceView v;
  v.base = base;
  v.layout.device = "cuda";
  v.layout.dtype = dtype;
  v.layout.sizes = std::move(sizes);
  v.layout.strides = std::move(strides);
  return v;
}

// x [2, 8, 10, 10] * w [16, 8/groups, 3, 3], pad 1, stride `s`: NCHW or
// channels-last (x, y NHWC; w KRSC).
ConvProblem Conv3x3(DType dtype, bool channels_last, int64_t groups = 1, int64_t s = 1) {
  ConvProblem p;
  p.n = 2, p.cin = 8, p.h = 10, p.w = 10, p.cout = 16, p.kh = 3, p.kw = 3;
  p.sh = p.sw = s;
  p.ph = p.pw = 1;
  p.groups = groups;
  p.oh = p.ow = (10 + 2 - 3) / s + 1;
  const int64_t c = 8 / groups, o = p.oh;
  if (channels_last) {
    p.x = View(0x10000, dtype, {2, 8, 10, 10}, {800, 1, 80, 8});
    p.weight = View(0x20000, dtype, {16, c, 3, 3}, {9 * c, 1, 3 * c, c});
    p.y = View(0x30000, dtype, {2, 16, o, o}, {16 * o * o, 1, 16 * o, 16});
  } else {
    p.x = View(0x10000, dtype, {2, 8, 10, 10}, {800, 100, 10, 1});
    p.weight = View(0x20000, dtype, {16, c, 3, 3}, {9 * c, 9, 3, 1});
    p.y = View(0x30000, dtype, {2, 16, o, o}, {16 * o * o, o * o, o, 1});
  }
  return p;
}

TEST(CudnnGraphConvTest, ByteAlignmentIsTheLargestPowerOfTwoUpTo16) {
  EXPECT_EQ(ByteAlignment(0), 16);
  EXPECT_EQ(ByteAlignment(0x7f0000000100), 16);
  EXPECT_EQ(ByteAlignment(0x1008), 8);
  EXPECT_EQ(ByteAlignment(0x100c), 4);
  EXPECT_EQ(ByteAlignment(0x1002), 2);
  EXPECT_EQ(ByteAlignment(0x1001), 1);
}

TEST(CudnnGraphConvTest, UnitDimsTakeTheStridesOfTheLayoutOrder) {
  const std::vector<int> nchw = {0, 1, 2, 3}, nhwc = {0, 2, 3, 1};
  // A 1x1 KRSC filter stored as [K, C, 1, 1] with KCRS strides: the unit R
  // and S dims get channels-last strides.
  EXPECT_EQ(NormalizeUnitStrides({16, 8, 1, 1}, {8, 1, 1, 1}, nhwc), (std::vector<int64_t>{8, 1, 8, 8}));
  EXPECT_EQ(NormalizeUnitStrides({16, 8, 1, 1}, {8, 1, 8, 8}, nchw), (std::vector<int64_t>{8, 1, 1, 1}));
  // A unit batch and channel, in either order.
  EXPECT_EQ(NormalizeUnitStrides({1, 1, 5, 7}, {99, 99, 7, 1}, nchw), (std::vector<int64_t>{35, 35, 7, 1}));
  EXPECT_EQ(NormalizeUnitStrides({1, 1, 5, 7}, {99, 99, 7, 1}, nhwc), (std::vector<int64_t>{35, 1, 7, 1}));
  // Non-unit dims keep their strides (a view with padding between rows).
  EXPECT_EQ(NormalizeUnitStrides({2, 3, 4, 5}, {200, 60, 12, 2}, nchw), (std::vector<int64_t>{200, 60, 12, 2}));
}

TEST(CudnnGraphConvTest, DescribesPlainAndChannelsLastConvolutions) {
  absl::StatusOr<GraphConvSpec> plain = DescribeGraphConv(Conv3x3(DType::kFloat32, false), false);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->x.uid, kGraphUidX);
  EXPECT_EQ(plain->w.uid, kGraphUidW);
  EXPECT_EQ(plain->y.uid, kGraphUidY);
  EXPECT_EQ(plain->x.data_type, kCudnnDataFloat);
  EXPECT_EQ(plain->x.dims, (std::vector<int64_t>{2, 8, 10, 10}));
  EXPECT_EQ(plain->x.strides, (std::vector<int64_t>{800, 100, 10, 1}));
  EXPECT_EQ(plain->w.dims, (std::vector<int64_t>{16, 8, 3, 3}));
  EXPECT_EQ(plain->w.strides, (std::vector<int64_t>{72, 9, 3, 1}));
  EXPECT_EQ(plain->y.dims, (std::vector<int64_t>{2, 16, 10, 10}));
  EXPECT_EQ(plain->pre_padding, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(plain->post_padding, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(plain->stride, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(plain->dilation, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(plain->x.alignment, 16);

  // bfloat16 channels-last, grouped and strided: dims stay N, C, H, W (K,
  // C/groups, R, S); the strides say NHWC.
  absl::StatusOr<GraphConvSpec> nhwc = DescribeGraphConv(Conv3x3(DType::kBFloat16, true, 2, 2), true);
  ASSERT_TRUE(nhwc.ok()) << nhwc.status();
  EXPECT_EQ(nhwc->x.data_type, kCudnnDataBfloat16);
  EXPECT_EQ(nhwc->x.strides, (std::vector<int64_t>{800, 1, 80, 8}));
  EXPECT_EQ(nhwc->w.dims, (std::vector<int64_t>{16, 4, 3, 3}));
  EXPECT_EQ(nhwc->w.strides, (std::vector<int64_t>{36, 1, 12, 4}));
  EXPECT_EQ(nhwc->y.dims, (std::vector<int64_t>{2, 16, 5, 5}));
  EXPECT_EQ(nhwc->y.strides, (std::vector<int64_t>{400, 1, 80, 16}));
  EXPECT_EQ(nhwc->stride, (std::vector<int64_t>{2, 2}));
}

TEST(CudnnGraphConvTest, DescribesOneDimensionalAndPointwiseConvolutions) {
  // 1-D: x [2, 6, 20] * w [4, 6, 5], pad 2 -> [2, 4, 20] as H = 1.
  ConvProblem p;
  p.spatial_dims = 1;
  p.n = 2, p.cin = 6, p.h = 1, p.w = 20, p.cout = 4, p.kh = 1, p.kw = 5, p.oh = 1, p.ow = 20, p.pw = 2;
  p.x = View(0x1000, DType::kFloat16, {2, 6, 20}, {120, 20, 1});
  p.weight = View(0x2002, DType::kFloat16, {4, 6, 5}, {30, 5, 1});
  p.y = View(0x3000, DType::kFloat16, {2, 4, 20}, {80, 20, 1});
  absl::StatusOr<GraphConvSpec> s = DescribeGraphConv(p, false);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->x.data_type, kCudnnDataHalf);
  EXPECT_EQ(s->x.dims, (std::vector<int64_t>{2, 6, 1, 20}));
  EXPECT_EQ(s->x.strides, (std::vector<int64_t>{120, 20, 20, 1}));
  EXPECT_EQ(s->w.dims, (std::vector<int64_t>{4, 6, 1, 5}));
  EXPECT_EQ(s->w.alignment, 2);
  EXPECT_EQ(s->pre_padding, (std::vector<int64_t>{0, 2}));

  // A channels-last 1x1 convolution whose weight has KCRS strides (the two
  // layouts of a 1x1 weight address the same bytes): R, S ordered as KRSC.
  ConvProblem q;
  q.n = 4, q.cin = 32, q.h = 7, q.w = 7, q.cout = 64, q.kh = 1, q.kw = 1, q.oh = 7, q.ow = 7;
  q.x = View(0x1000, DType::kBFloat16, {4, 32, 7, 7}, {32 * 49, 1, 7 * 32, 32});
  q.weight = View(0x2000, DType::kBFloat16, {64, 32, 1, 1}, {32, 1, 1, 1});
  q.y = View(0x3000, DType::kBFloat16, {4, 64, 7, 7}, {64 * 49, 1, 7 * 64, 64});
  s = DescribeGraphConv(q, true);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->w.strides, (std::vector<int64_t>{32, 1, 32, 32}));
  // The same buffers described as a plain convolution (cuDNN refused the
  // channels-last path): the strides still say NHWC for x and y.
  s = DescribeGraphConv(q, false);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->x.strides, (std::vector<int64_t>{32 * 49, 1, 7 * 32, 32}));
  EXPECT_EQ(s->w.strides, (std::vector<int64_t>{32, 1, 1, 1}));
}

TEST(CudnnGraphConvTest, RejectsWhatItCannotDescribe) {
  ConvProblem p = Conv3x3(DType::kFloat32, false);
  p.x.layout.dtype = p.weight.layout.dtype = p.y.layout.dtype = DType::kFloat64;
  absl::StatusOr<GraphConvSpec> s = DescribeGraphConv(p, false);
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(absl::StrContains(s.status().message(), "not float32/float16/bfloat16")) << s.status();

  p = Conv3x3(DType::kFloat32, false);
  p.cout = 12;  // the weight says 16
  s = DescribeGraphConv(p, false);
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(absl::StrContains(s.status().message(), "do not match")) << s.status();

  p = Conv3x3(DType::kFloat32, false);
  p.x.layout.sizes = {2, 8, 10, 10, 1};
  p.x.layout.strides = {800, 100, 10, 1, 1};
  EXPECT_FALSE(DescribeGraphConv(p, false).ok());
}

TEST(CudnnGraphConvTest, PlanKeysSeparateWhatPlansDependOn) {
  const GraphConvSpec base = *DescribeGraphConv(Conv3x3(DType::kFloat32, false), false);
  const std::string key = GraphPlanKey(base, 0, true, true);
  EXPECT_EQ(key, GraphPlanKey(*DescribeGraphConv(Conv3x3(DType::kFloat32, false), false), 0, true, true));
  EXPECT_NE(key, GraphPlanKey(base, 1, true, true));
  EXPECT_NE(key, GraphPlanKey(base, 0, false, true));
  EXPECT_NE(key, GraphPlanKey(base, 0, true, false));
  GraphConvSpec other = base;
  other.x.alignment = 2;
  EXPECT_NE(key, GraphPlanKey(other, 0, true, true));
  other = base;
  other.x.strides = {800, 1, 80, 8};
  EXPECT_NE(key, GraphPlanKey(other, 0, true, true));
  other = base;
  other.dilation = {2, 2};
  EXPECT_NE(key, GraphPlanKey(other, 0, true, true));
  other = base;
  other.x.data_type = kCudnnDataHalf;
  EXPECT_NE(key, GraphPlanKey(other, 0, true, true));
}

TEST(CudnnGraphConvTest, NumericalNotesFilterEngines) {
  const std::vector<int> none, tensor_core = {kCudnnNumericalNoteTensorCore},
                               down_convert = {kCudnnNumericalNoteTensorCore, kCudnnNumericalNoteDownConvertInputs};
  EXPECT_TRUE(GraphEngineAllowed(none, kCudnnDataFloat, false));
  EXPECT_TRUE(GraphEngineAllowed(tensor_core, kCudnnDataFloat, true));    // TF32 allowed
  EXPECT_FALSE(GraphEngineAllowed(tensor_core, kCudnnDataFloat, false));  // full float32
  EXPECT_TRUE(GraphEngineAllowed(tensor_core, kCudnnDataBfloat16, false));
  EXPECT_TRUE(GraphEngineAllowed(tensor_core, kCudnnDataHalf, false));
  EXPECT_FALSE(GraphEngineAllowed(down_convert, kCudnnDataFloat, true));
  EXPECT_FALSE(GraphEngineAllowed(down_convert, kCudnnDataHalf, true));
}

TEST(CudnnGraphConvTest, SwitchAndCandidateCount) {
  unsetenv("KILN_CUDNN_BACKEND");
  unsetenv("KILN_CUDNN_GRAPH_PLANS");
  EXPECT_TRUE(CudnnGraphApiEnabled());
  EXPECT_EQ(GraphPlanCandidates(), kGraphPlanCandidates);
  setenv("KILN_CUDNN_BACKEND", "0", 1);
  EXPECT_FALSE(CudnnGraphApiEnabled());
  setenv("KILN_CUDNN_BACKEND", "1", 1);
  EXPECT_TRUE(CudnnGraphApiEnabled());
  setenv("KILN_CUDNN_GRAPH_PLANS", "3", 1);
  EXPECT_EQ(GraphPlanCandidates(), 3);
  setenv("KILN_CUDNN_GRAPH_PLANS", "zero", 1);
  EXPECT_EQ(GraphPlanCandidates(), kGraphPlanCandidates);
  unsetenv("KILN_CUDNN_BACKEND");
  unsetenv("KILN_CUDNN_GRAPH_PLANS");
}

// Without a handle (no GPU) the graph API is off: nullopt, so the caller
// takes the legacy path (or kiln's own kernels).
TEST(CudnnGraphConvTest, WithoutAHandleTheCallerFallsBack) {
  ConvContext ctx;
  EXPECT_FALSE(CudnnGraphConvolution(Conv3x3(DType::kFloat32, false), ctx).has_value());
}

// cuDNN itself finalizes the descriptors (tensor, convolution and operation
// descriptors need no handle): the attribute names, types and values reach
// it as it expects. An operation whose y does not fit x and w is refused.
TEST(CudnnGraphConvTest, CudnnFinalizesTheOperation) {
  const CudaLibraries& libs = LoadCudaLibraries();
  if (!libs.cudnn_status.ok()) GTEST_SKIP() << "no cuDNN: " << libs.cudnn_status;
  struct Case {
    const char* name;
    ConvProblem problem;
    bool channels_last;
  };
  const Case cases[] = {
      {"fp32 NCHW 3x3", Conv3x3(DType::kFloat32, false), false},
      {"bf16 NHWC grouped strided", Conv3x3(DType::kBFloat16, true, 2, 2), true},
      {"fp16 NHWC depthwise", Conv3x3(DType::kFloat16, true, 8), true},
      {"bf16 NCHW grouped", Conv3x3(DType::kBFloat16, false, 4), false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<GraphConvSpec> spec = DescribeGraphConv(c.problem, c.channels_last);
    ASSERT_TRUE(spec.ok()) << spec.status();
    absl::StatusOr<GraphConvOperation> op = BuildGraphConvOperation(*spec);
    ASSERT_TRUE(op.ok()) << op.status();
    EXPECT_NE(op->op.get(), nullptr);
  }
  GraphConvSpec bad = *DescribeGraphConv(Conv3x3(DType::kFloat32, false), false);
  bad.y.dims = {2, 16, 9, 9};  // a 3x3, pad 1, stride 1 convolution of 10x10 gives 10x10
  bad.y.strides = {16 * 81, 81, 9, 1};
  absl::StatusOr<GraphConvOperation> op = BuildGraphConvOperation(bad);
  EXPECT_FALSE(op.ok());
  if (!op.ok()) {
    EXPECT_TRUE(absl::StrContains(op.status().message(), "cudnnBackendFinalize")) << op.status();
  }
}

// Conv3x3 as a kiln::conv_post_ops: a bias, then `post` over operands of
// y's shape and strides (a residual), placed after y.
ConvProblem FusedConv3x3(DType dtype, bool channels_last, std::vector<ir::PostOp> post, int operands) {
  ConvProblem p = Conv3x3(dtype, channels_last);
  p.bias = View(0x40000, dtype, {16}, {1});
  for (int i = 0; i < operands; ++i) {
    DeviceView r = p.y;
    r.base = 0x50000 + 0x10000 * static_cast<CUdeviceptr>(i);
    p.post_operands.push_back(r);
  }
  p.post = std::move(post);
  return p;
}

ir::PostOp Step(ir::PostOpKind kind, int operand = -1, std::vector<double> scalars = {}) {
  ir::PostOp op;
  op.kind = kind;
  op.operand = operand;
  op.scalars = std::move(scalars);
  return op;
}

TEST(CudnnGraphFusedTest, MapsBiasResidualAndActivations) {
  // resnet's bottleneck end: bias, add(residual), relu.
  ConvProblem p = FusedConv3x3(DType::kFloat32, false, {Step(ir::PostOpKind::kAdd, 0), Step(ir::PostOpKind::kRelu)}, 1);
  GraphConvSpec conv = *DescribeGraphConv(p, false);
  absl::StatusOr<GraphEpilogueSpec> e = DescribeGraphEpilogue(p, conv, false);
  ASSERT_TRUE(e.ok()) << e.status();
  ASSERT_EQ(e->operands.size(), 2u);
  EXPECT_EQ(e->operands[0].uid, kGraphUidBias);
  EXPECT_EQ(e->operands[0].dims, (std::vector<int64_t>{1, 16, 1, 1}));
  EXPECT_EQ(e->operands[0].strides, (std::vector<int64_t>{16, 1, 1, 1}));
  EXPECT_EQ(e->operands[1].uid, kGraphUidFirstOperand);
  EXPECT_EQ(e->operands[1].dims, conv.y.dims);
  EXPECT_EQ(e->operands[1].strides, conv.y.strides);
  ASSERT_EQ(e->steps.size(), 3u);
  EXPECT_EQ(e->steps[0].mode, kCudnnPointwiseAdd);
  EXPECT_EQ(e->steps[0].operand_uid, kGraphUidBias);
  EXPECT_EQ(e->steps[1].mode, kCudnnPointwiseAdd);
  EXPECT_EQ(e->steps[1].operand_uid, kGraphUidFirstOperand);
  EXPECT_EQ(e->steps[2].mode, kCudnnPointwiseReluFwd);
  EXPECT_EQ(e->steps[2].operand_uid, 0);

  // Channels-last: the bias is ordered like y (NHWC strides for its unit dims).
  p = FusedConv3x3(DType::kBFloat16, true, {Step(ir::PostOpKind::kRelu)}, 0);
  conv = *DescribeGraphConv(p, true);
  e = DescribeGraphEpilogue(p, conv, true);
  ASSERT_TRUE(e.ok()) << e.status();
  ASSERT_EQ(e->operands.size(), 1u);
  EXPECT_EQ(e->operands[0].data_type, kCudnnDataBfloat16);
  EXPECT_EQ(e->operands[0].strides, (std::vector<int64_t>{16, 1, 16, 16}));
  ASSERT_EQ(e->steps.size(), 2u);

  // Activations whose math is post_ops.h's.
  const std::pair<ir::PostOpKind, int> unary[] = {
      {ir::PostOpKind::kSigmoid, kCudnnPointwiseSigmoidFwd}, {ir::PostOpKind::kTanh, kCudnnPointwiseTanhFwd},
      {ir::PostOpKind::kSilu, kCudnnPointwiseSwishFwd},      {ir::PostOpKind::kGelu, kCudnnPointwiseGeluFwd},
      {ir::PostOpKind::kGeluTanh, kCudnnPointwiseGeluApproxTanhFwd}};
  for (const auto& [kind, mode] : unary) {
    p = FusedConv3x3(DType::kFloat32, false, {Step(kind)}, 0);
    e = DescribeGraphEpilogue(p, *DescribeGraphConv(p, false), false);
    ASSERT_TRUE(e.ok()) << ir::PostOpName(kind) << ": " << e.status();
    EXPECT_EQ(e->steps.back().mode, mode) << ir::PostOpName(kind);
  }
  p = FusedConv3x3(DType::kFloat32, false, {Step(ir::PostOpKind::kElu, -1, {0.5})}, 0);
  e = DescribeGraphEpilogue(p, *DescribeGraphConv(p, false), false);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->steps.back().mode, kCudnnPointwiseEluFwd);
  ASSERT_TRUE(e->steps.back().elu_alpha.has_value());
  EXPECT_FLOAT_EQ(*e->steps.back().elu_alpha, 0.5f);

  // A biased convolution with an empty chain (resnet's downsample): one ADD.
  p = FusedConv3x3(DType::kFloat32, false, {}, 0);
  e = DescribeGraphEpilogue(p, *DescribeGraphConv(p, false), false);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->steps.size(), 1u);
}

TEST(CudnnGraphFusedTest, RefusesWhatItDoesNotMap) {
  auto refusal = [](const ConvProblem& p) {
    absl::StatusOr<GraphEpilogueSpec> e = DescribeGraphEpilogue(p, *DescribeGraphConv(p, false), false);
    return e.ok() ? std::string("ok") : std::string(e.status().message());
  };
  // Steps without a pointwise mode of the same math.
  EXPECT_TRUE(absl::StrContains(refusal(FusedConv3x3(DType::kFloat32, false, {Step(ir::PostOpKind::kHardswish)}, 0)),
                                "step 0 (hardswish)"));
  EXPECT_TRUE(absl::StrContains(
      refusal(FusedConv3x3(DType::kFloat32, false, {Step(ir::PostOpKind::kRelu), Step(ir::PostOpKind::kMul, 0)}, 1)),
      "step 1 (mul)"));
  EXPECT_TRUE(absl::StrContains(
      refusal(FusedConv3x3(DType::kFloat32, false, {Step(ir::PostOpKind::kLinear, -1, {2.0, 1.0})}, 0)),
      "(linear)"));
  // A broadcast residual (a per-channel gate shape) and a stride-0 one.
  ConvProblem p = FusedConv3x3(DType::kFloat32, false, {Step(ir::PostOpKind::kAdd, 0)}, 1);
  p.post_operands[0].layout.sizes = {2, 16, 1, 1};
  p.post_operands[0].layout.strides = {16, 1, 1, 1};
  EXPECT_TRUE(absl::StrContains(refusal(p), "of y's shape")) << refusal(p);
  p = FusedConv3x3(DType::kFloat32, false, {Step(ir::PostOpKind::kAdd, 0)}, 1);
  p.post_operands[0].layout.strides = {16, 1, 0, 0};
  EXPECT_TRUE(absl::StrContains(refusal(p), "broadcasts")) << refusal(p);
  // An operand index out of range; nothing to fuse.
  p = FusedConv3x3(DType::kFloat32, false, {Step(ir::PostOpKind::kAdd, 3)}, 1);
  EXPECT_TRUE(absl::StrContains(refusal(p), "reads operand 3")) << refusal(p);
  p = FusedConv3x3(DType::kFloat32, false, {}, 0);
  p.bias.reset();
  EXPECT_TRUE(absl::StrContains(refusal(p), "empty chain")) << refusal(p);
}

TEST(CudnnGraphFusedTest, KeysSeparateChains) {
  const ConvProblem relu = FusedConv3x3(DType::kFloat32, false, {Step(ir::PostOpKind::kRelu)}, 0);
  const ConvProblem residual =
      FusedConv3x3(DType::kFloat32, false, {Step(ir::PostOpKind::kAdd, 0), Step(ir::PostOpKind::kRelu)}, 1);
  const ConvProblem sigmoid = FusedConv3x3(DType::kFloat32, false, {Step(ir::PostOpKind::kSigmoid)}, 0);
  const ConvProblem elu = FusedConv3x3(DType::kFloat32, false, {Step(ir::PostOpKind::kElu, -1, {0.5})}, 0);
  const ConvProblem elu2 = FusedConv3x3(DType::kFloat32, false, {Step(ir::PostOpKind::kElu, -1, {2.0})}, 0);
  std::vector<std::string> keys;
  for (const ConvProblem* p : {&relu, &residual, &sigmoid, &elu, &elu2}) {
    keys.push_back(GraphEpilogueKey(*DescribeGraphEpilogue(*p, *DescribeGraphConv(*p, false), false)));
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    for (size_t j = i + 1; j < keys.size(); ++j) EXPECT_NE(keys[i], keys[j]) << i << " " << j;
  }
  // The residual's strides and alignment are part of it.
  ConvProblem moved = residual;
  moved.post_operands[0].base += 2;
  EXPECT_NE(keys[1], GraphEpilogueKey(*DescribeGraphEpilogue(moved, *DescribeGraphConv(moved, false), false)));
}

TEST(CudnnGraphFusedTest, Switch) {
  unsetenv("KILN_CUDNN_GRAPH_FUSED");
  EXPECT_TRUE(CudnnGraphFusedEnabled()) << "on by default";
  setenv("KILN_CUDNN_GRAPH_FUSED", "1", 1);
  EXPECT_TRUE(CudnnGraphFusedEnabled());
  setenv("KILN_CUDNN_GRAPH_FUSED", "0", 1);
  EXPECT_FALSE(CudnnGraphFusedEnabled());
  unsetenv("KILN_CUDNN_GRAPH_FUSED");
  ConvContext ctx;  // no handle: the caller's conv + epilogue kernel path
  EXPECT_FALSE(CudnnGraphFusedConvolution(FusedConv3x3(DType::kFloat32, false, {Step(ir::PostOpKind::kRelu)}, 0), ctx,
                                          FusedConvReference())
                   .has_value());
}

// Fused plans are checked against a reference on packed outputs only: the
// comparison walks [first element, first + numel).
TEST(CudnnGraphFusedTest, PackedLayoutsAreTheOnesWithoutGapsOrOverlaps) {
  using lowering::Layout;
  const Layout nchw = Layout::Contiguous(DType::kFloat32, {2, 3, 4, 5}, "cuda");
  EXPECT_TRUE(IsPackedLayout(nchw));
  Layout nhwc = nchw;
  nhwc.strides = {60, 1, 15, 3};
  EXPECT_TRUE(IsPackedLayout(nhwc));
  nhwc.offset = 7;  // where it starts does not matter
  EXPECT_TRUE(IsPackedLayout(nhwc));
  Layout unit = Layout::Contiguous(DType::kFloat32, {1, 3, 1, 1}, "cuda");
  unit.strides = {99, 1, 42, 42};  // size-1 dims address nothing
  EXPECT_TRUE(IsPackedLayout(unit));
  Layout slice = nchw;
  slice.strides = {80, 20, 5, 1};  // 3 of a wider tensor's 4 channels: a gap
  EXPECT_FALSE(IsPackedLayout(slice));
  Layout overlap = nchw;
  overlap.strides = {60, 20, 5, 0};  // a broadcast
  EXPECT_FALSE(IsPackedLayout(overlap));
  Layout negative = nchw;
  negative.strides = {60, 20, -5, 1};
  EXPECT_FALSE(IsPackedLayout(negative));
  EXPECT_FALSE(IsPackedLayout(Layout::Contiguous(DType::kFloat32, {2, 0, 3}, "cuda")));
}

TEST(CudnnGraphFusedTest, ToleranceFollowsThePrecision) {
  EXPECT_LT(FusedPlanTolerance(DType::kFloat32, false), FusedPlanTolerance(DType::kFloat32, true));
  EXPECT_LT(FusedPlanTolerance(DType::kFloat32, true), FusedPlanTolerance(DType::kBFloat16, false));
  EXPECT_EQ(FusedPlanTolerance(DType::kBFloat16, true), FusedPlanTolerance(DType::kBFloat16, false));
  EXPECT_LE(FusedPlanTolerance(DType::kFloat16, false), FusedPlanTolerance(DType::kBFloat16, false));
  // resnet50's wrong engines were at relative L2 0.16-0.23 over the model.
  EXPECT_LT(FusedPlanTolerance(DType::kBFloat16, false), 0.05);
}

// cuDNN finalizes the fused graph's descriptors (no handle needed below the
// operation graph): the convolution into a virtual float tensor, the bias
// and residual tensors, each pointwise descriptor and operation, y last.
TEST(CudnnGraphFusedTest, CudnnFinalizesTheFusedOperations) {
  const CudaLibraries& libs = LoadCudaLibraries();
  if (!libs.cudnn_status.ok()) GTEST_SKIP() << "no cuDNN: " << libs.cudnn_status;
  for (const DType dtype : {DType::kFloat32, DType::kBFloat16}) {
    for (const bool channels_last : {false, true}) {
      for (const bool residual : {false, true}) {
        SCOPED_TRACE(absl::StrCat(DTypeName(dtype), channels_last ? " NHWC" : " NCHW",
                                  residual ? " bias+residual+relu" : " bias+relu"));
        std::vector<ir::PostOp> post;
        if (residual) post.push_back(Step(ir::PostOpKind::kAdd, 0));
        post.push_back(Step(ir::PostOpKind::kRelu));
        const ConvProblem p = FusedConv3x3(dtype, channels_last, post, residual ? 1 : 0);
        absl::StatusOr<GraphConvSpec> conv = DescribeGraphConv(p, channels_last);
        ASSERT_TRUE(conv.ok()) << conv.status();
        absl::StatusOr<GraphEpilogueSpec> e = DescribeGraphEpilogue(p, *conv, channels_last);
        ASSERT_TRUE(e.ok()) << e.status();
        absl::StatusOr<GraphFusedOperation> g = BuildGraphFusedOperation(*conv, *e);
        ASSERT_TRUE(g.ok()) << g.status();
        const size_t steps = residual ? 3 : 2;
        EXPECT_EQ(g->operations.size(), steps);
        EXPECT_EQ(g->pointwise.size(), steps);
        // operands (bias [, residual]) + one output per step
        EXPECT_EQ(g->tensors.size(), (residual ? 2 : 1) + steps);
        const std::vector<cudnnBackendDescriptor_t> ops = g->ops();
        ASSERT_EQ(ops.size(), steps + 1);
        EXPECT_EQ(ops[0], g->conv.op.get());
        for (cudnnBackendDescriptor_t op : ops) EXPECT_NE(op, nullptr);
      }
    }
  }
  // Every other mapped activation finalizes too (ELU with its alpha).
  for (const ir::PostOp& step : {Step(ir::PostOpKind::kSigmoid), Step(ir::PostOpKind::kTanh),
                                 Step(ir::PostOpKind::kSilu), Step(ir::PostOpKind::kGelu),
                                 Step(ir::PostOpKind::kGeluTanh), Step(ir::PostOpKind::kElu, -1, {0.5})}) {
    SCOPED_TRACE(ir::PostOpName(step.kind));
    const ConvProblem p = FusedConv3x3(DType::kBFloat16, true, {step}, 0);
    const GraphConvSpec conv = *DescribeGraphConv(p, true);
    absl::StatusOr<GraphFusedOperation> g = BuildGraphFusedOperation(conv, *DescribeGraphEpilogue(p, conv, true));
    EXPECT_TRUE(g.ok()) << g.status();
  }
  // cuDNN 9.19 checks pointwise modes and operand shapes only when the
  // operation graph is finalized (which needs a handle: the GPU test). A
  // step reading a tensor the epilogue did not describe is kiln's error.
  const ConvProblem p = FusedConv3x3(DType::kFloat32, false, {Step(ir::PostOpKind::kAdd, 0)}, 1);
  const GraphConvSpec conv = *DescribeGraphConv(p, false);
  GraphEpilogueSpec bad = *DescribeGraphEpilogue(p, conv, false);
  bad.steps[1].operand_uid = 77;
  absl::StatusOr<GraphFusedOperation> g = BuildGraphFusedOperation(conv, bad);
  EXPECT_FALSE(g.ok());
  if (!g.ok()) {
    EXPECT_TRUE(absl::StrContains(g.status().message(), "reads tensor 77")) << g.status();
  }
}

}  // namespace
}  // namespace kiln::backends::cuda
