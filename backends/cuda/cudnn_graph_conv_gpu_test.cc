// GPU cases of the graph-API convolutions (cudnn_graph_conv.h), in
// cuda_program_tests (so in //testing:cuda_gpu_check on the GPU machine;
// skipped here with "no CUDA device"): each convolution + relu with
// constant weights, float32 (TF32 off) and bfloat16, NCHW and channels-last
// (KILN_CUDA_CHANNELS_LAST=1), 3x3, 1x1, strided, grouped and depthwise, run
// through the graph API (KILN_CUDNN_BACKEND=1) and the legacy API (=0) in
// the same program: both against the interpreter and against each other.
// Each case prints the report's cuDNN line (which API ran it) and, with
// KILN_CUDNN_LOG=1 set for the graph run, the engine the timing chose.
// Fused epilogues (kiln::conv_post_ops) inside the graph: conv + bias +
// relu and conv + bias + residual + relu, NCHW (one convolution between the
// program's input and output) and NHWC (a chain of three), float32 with TF32
// off and on, bfloat16, run with KILN_CUDNN_GRAPH_FUSED=1 and =0 (conv +
// epilogue kernel) in the same program, both against the interpreter.
// The check of fused plans: with a reference that is off no candidate is
// kept, with the kernel path's own output one is, and its output matches.
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_loader.h"
#include "backends/cuda/cuda_program.h"
#include "backends/cuda/channels_last_plan.h"
#include "backends/cuda/cuda_conv.h"
#include "backends/cuda/cuda_test_util.h"
#include "backends/cuda/cudnn_graph_conv.h"
#include "gtest/gtest.h"
#include "runtime/interpreter.h"
#include "runtime/tensor_ops.h"
#include "support/status.h"

namespace kiln::backends::cuda {
namespace {

double RelativeL2(const Tensor& got, const Tensor& want) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double d = got.GetDouble(i) - want.GetDouble(i);
    num += d * d;
    den += want.GetDouble(i) * want.GetDouble(i);
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

TEST(CudnnGraphGpuTest, GraphApiMatchesTheLegacyApiAndTheInterpreter) {
  test::RegisterAll();
  if (!CudaDevice().is_available()) GTEST_SKIP() << "no CUDA device: " << CudaDevice::UnavailableReason();
  if (!LoadCudaLibraries().cudnn_status.ok()) GTEST_SKIP() << "no cuDNN: " << LoadCudaLibraries().cudnn_status;
  struct Case {
    const char* name;
    std::vector<int64_t> x, w;
    int stride, pad, groups;
  };
  const Case cases[] = {
      {"3x3", {4, 16, 12, 12}, {32, 16, 3, 3}, 1, 1, 1},
      {"1x1", {4, 64, 7, 7}, {32, 64, 1, 1}, 1, 0, 1},
      {"3x3 stride 2", {2, 16, 15, 15}, {24, 16, 3, 3}, 2, 1, 1},
      {"1x1 stride 2", {2, 32, 8, 8}, {64, 32, 1, 1}, 2, 0, 1},
      {"grouped", {2, 16, 9, 9}, {16, 4, 3, 3}, 1, 1, 4},
      {"depthwise stride 2", {2, 16, 10, 10}, {16, 1, 3, 3}, 2, 1, 16},
  };
  const bool tf32 = CudaDevice::ConvTf32();
  CudaDevice::SetConvTf32(false);
  for (const char* type : {"Float", "BFloat16"}) {
    const DType dtype = std::string(type) == "Float" ? DType::kFloat32 : DType::kBFloat16;
    for (const Case& c : cases) {
      for (const bool channels_last : {false, true}) {
        const std::string label = absl::StrCat(type, " ", c.name, channels_last ? " NHWC" : " NCHW");
        SCOPED_TRACE(label);
        const std::string text = absl::StrCat(
            "graph(%x : ", type, "(", c.x[0], ", ", c.x[1], ", ", c.x[2], ", ", c.x[3], "), %w : ", type, "(", c.w[0],
            ", ", c.w[1], ", ", c.w[2], ", ", c.w[3], "), %b : ", type, "(", c.w[0], ")):\n",
            "  %s : int[] = prim::Constant[value=[", c.stride, ", ", c.stride, "]]()\n",
            "  %p : int[] = prim::Constant[value=[", c.pad, ", ", c.pad, "]]()\n",
            "  %d : int[] = prim::Constant[value=[1, 1]]()\n",
            "  %g : int = prim::Constant[value=", c.groups, "]()\n",
            "  %y : Tensor = aten::conv2d(%x, %w, %b, %s, %p, %d, %g)\n",
            "  %r : Tensor = aten::relu(%y)\n  return (%r)\n");
        std::map<std::string, Tensor> weights = {{"w", test::Random(c.w, 21)}, {"b", test::Random({c.w[0]}, 22)}};
        for (auto& [name, t] : weights) t = *runtime::CastTo(t, dtype);
        absl::StatusOr<std::unique_ptr<ir::Graph>> graph = test::ParseWithConstants(text, weights);
        absl::StatusOr<std::unique_ptr<ir::Graph>> oracle = test::ParseWithConstants(text, weights);
        ASSERT_TRUE(graph.ok() && oracle.ok()) << text;
        absl::StatusOr<driver::CompiledGraph> compiled;
        {
          test::ScopedEnv plan("KILN_CUDA_CHANNELS_LAST", channels_last ? "1" : "0");
          compiled = test::CompileGraphForCuda(**graph);
        }
        ASSERT_TRUE(compiled.ok()) << compiled.status();
        const std::vector<Tensor> inputs = {*runtime::CastTo(test::Random(c.x, 23), dtype)};
        absl::StatusOr<std::vector<Tensor>> by_graph, by_legacy;
        // Depthwise shapes go to cuDNN, not kiln's own kernel (depthwise_conv.h).
        test::ScopedEnv cudnn_depthwise("KILN_CUDA_DEPTHWISE", "0");
        {
          test::ScopedEnv api("KILN_CUDNN_BACKEND", "1");
          test::ScopedEnv log("KILN_CUDNN_LOG", "1");
          by_graph = compiled->compiled->Run(inputs);
        }
        ASSERT_TRUE(by_graph.ok()) << by_graph.status();
        auto* program = dynamic_cast<CudaProgram*>(compiled->compiled.get());
        ASSERT_NE(program, nullptr);
        const CudaProgramStats& st = program->stats();
        const int64_t graph_runs = st.cudnn_graph_convolutions.load();
        std::printf("[cudnn graph test] %s, KILN_CUDNN_BACKEND=1: %s (%lld NHWC)\n", label.c_str(),
                    program->ReportLines()[0].c_str(), static_cast<long long>(st.nhwc_convolutions.load()));  // NOLINT
        {
          test::ScopedEnv api("KILN_CUDNN_BACKEND", "0");
          by_legacy = compiled->compiled->Run(inputs);
        }
        ASSERT_TRUE(by_legacy.ok()) << by_legacy.status();
        std::printf("[cudnn graph test] %s, KILN_CUDNN_BACKEND=0: %s\n", label.c_str(),
                    program->ReportLines()[0].c_str());
        std::vector<ir::IValue> args = {ir::IValue::FromTensor(inputs[0])};
        absl::StatusOr<std::vector<ir::IValue>> want = runtime::RunGraph(**oracle, args);
        ASSERT_TRUE(want.ok()) << want.status();
        const Tensor& w = (*want)[0].toTensor();
        ASSERT_EQ((*by_graph)[0].sizes(), w.sizes());
        ASSERT_EQ((*by_legacy)[0].sizes(), w.sizes());
        // float32 without TF32: both exact to rounding; bfloat16: one
        // rounding of the output (and of the interpreter's own steps).
        const double tol = dtype == DType::kFloat32 ? 1e-5 : 1e-2;
        EXPECT_LE(RelativeL2((*by_graph)[0], w), tol) << "graph API against the interpreter";
        EXPECT_LE(RelativeL2((*by_legacy)[0], w), tol) << "legacy API against the interpreter";
        EXPECT_LE(RelativeL2((*by_graph)[0], (*by_legacy)[0]), tol) << "graph API against the legacy API";
        // The first run went through the graph API (a refusal is a finding:
        // its reason is in the report), the second through the legacy API.
        EXPECT_EQ(st.gpu_convolutions.load(), 2);
        EXPECT_EQ(st.cudnn_convolutions.load(), 2) << st.cudnn_error;
        EXPECT_EQ(graph_runs, 1) << program->ReportLines()[0];
        EXPECT_EQ(st.cudnn_graph_convolutions.load(), graph_runs) << "KILN_CUDNN_BACKEND=0 ran the graph API";
      }
    }
  }
  CudaDevice::SetConvTf32(tf32);
}

// One fused program run with KILN_CUDNN_GRAPH_FUSED=`fused`: its output and
// how many epilogues ran inside cuDNN's graph / as the kernel.
struct FusedRun {
  absl::StatusOr<std::vector<Tensor>> out;
  int64_t in_graph = 0, fused = 0, nhwc = 0, convs = 0;
};

FusedRun RunWithGraphFused(driver::CompiledGraph& compiled, const std::vector<Tensor>& inputs, bool fused,
                           const std::string& label) {
  auto* program = dynamic_cast<CudaProgram*>(compiled.compiled.get());
  FusedRun r;
  if (program == nullptr) {
    r.out = absl::InternalError("not a CudaProgram");
    return r;
  }
  const CudaProgramStats& st = program->stats();
  const int64_t in_graph = st.graph_epilogues.load(), all = st.fused_epilogues.load(),
                nhwc = st.nhwc_convolutions.load(), convs = st.gpu_convolutions.load();
  {
    test::ScopedEnv api("KILN_CUDNN_GRAPH_FUSED", fused ? "1" : "0");
    test::ScopedEnv log("KILN_CUDNN_LOG", "1");
    r.out = compiled.compiled->Run(inputs);
  }
  r.in_graph = st.graph_epilogues.load() - in_graph;
  r.fused = st.fused_epilogues.load() - all;
  r.nhwc = st.nhwc_convolutions.load() - nhwc;
  r.convs = st.gpu_convolutions.load() - convs;
  const std::vector<std::string> report = program->ReportLines();
  std::printf("[cudnn fused test] %s, KILN_CUDNN_GRAPH_FUSED=%d: %lld of %lld fused epilogues inside the graph, "
              "%lld NHWC | %s | %s\n",
              label.c_str(), fused ? 1 : 0, static_cast<long long>(r.in_graph),  // NOLINT
              static_cast<long long>(r.fused), static_cast<long long>(r.nhwc),    // NOLINT
              report[0].c_str(), report[1].c_str());
  return r;
}

TEST(CudnnGraphGpuTest, FusedEpiloguesInsideTheGraphMatchTheKernelPathAndTheInterpreter) {
  test::RegisterAll();
  if (!CudaDevice().is_available()) GTEST_SKIP() << "no CUDA device: " << CudaDevice::UnavailableReason();
  if (!LoadCudaLibraries().cudnn_status.ok()) GTEST_SKIP() << "no cuDNN: " << LoadCudaLibraries().cudnn_status;
  struct Precision {
    const char* type;
    bool tf32;
    double tol;  // relative L2
  };
  // float32 without TF32: exact to rounding; with TF32 and bfloat16: the
  // inputs' rounding (the interpreter runs full float32 / rounds each op).
  const Precision precisions[] = {{"Float", false, 1e-5}, {"Float", true, 5e-3}, {"BFloat16", false, 1e-2}};
  const bool tf32 = CudaDevice::ConvTf32();
  for (const Precision& prec : precisions) {
    CudaDevice::SetConvTf32(prec.tf32);
    const DType dtype = std::string(prec.type) == "Float" ? DType::kFloat32 : DType::kBFloat16;
    // "relu": conv + bias + relu; "residual": conv + bias + x, relu (NCHW:
    // x is the program's input); "chain": test::ConvChainText's three
    // convolutions ([relu], [add, relu], [relu]) with NHWC values between.
    for (const char* shape : {"relu", "residual", "chain"}) {
      const bool chain = std::string(shape) == "chain";
      const std::string label = absl::StrCat(prec.type, prec.tf32 ? " TF32" : "", " ", shape, chain ? " NHWC" : " NCHW");
      SCOPED_TRACE(label);
      std::string text;
      std::map<std::string, Tensor> weights;
      std::vector<int64_t> x_shape;
      if (chain) {
        text = test::ConvChainText(prec.type, "relu");
        weights = {{"w1", test::Random({8, 8, 3, 3}, 1)}, {"b1", test::Random({8}, 2)},
                   {"w2", test::Random({8, 8, 3, 3}, 3)}, {"b2", test::Random({8}, 4)},
                   {"w3", test::Random({16, 8, 1, 1}, 5)}, {"b3", test::Random({16}, 6)}};
        x_shape = {2, 8, 10, 10};
      } else {
        const bool residual = std::string(shape) == "residual";
        const std::string t = prec.type;
        text = absl::StrCat("graph(%x : ", t, "(4, 16, 12, 12), %w : ", t, "(16, 16, 3, 3), %b : ", t, "(16)):\n",
                            "  %s : int[] = prim::Constant[value=[1, 1]]()\n",
                            "  %g : int = prim::Constant[value=1]()\n",
                            "  %y : ", t, "(4, 16, 12, 12) = aten::conv2d(%x, %w, %b, %s, %s, %s, %g)\n",
                            residual ? absl::StrCat("  %a : ", t, "(4, 16, 12, 12) = aten::add(%y, %x, %g)\n",
                                                    "  %r : ", t, "(4, 16, 12, 12) = aten::relu(%a)\n")
                                     : absl::StrCat("  %r : ", t, "(4, 16, 12, 12) = aten::relu(%y)\n"),
                            "  return (%r)\n");
        weights = {{"w", test::Random({16, 16, 3, 3}, 11)}, {"b", test::Random({16}, 12)}};
        x_shape = {4, 16, 12, 12};
      }
      for (auto& [name, t] : weights) t = *runtime::CastTo(t, dtype);
      absl::StatusOr<std::unique_ptr<ir::Graph>> graph = test::ParseWithConstants(text, weights);
      absl::StatusOr<std::unique_ptr<ir::Graph>> oracle = test::ParseWithConstants(text, weights);
      ASSERT_TRUE(graph.ok() && oracle.ok()) << text;
      absl::StatusOr<driver::CompiledGraph> compiled;
      {
        // Fused epilogues (and, for the chain, NHWC values) as the policy
        // gives large batches.
        test::ScopedEnv plan("KILN_CUDA_CHANNELS_LAST", "1");
        compiled = test::CompileGraphForCuda(**graph);
      }
      ASSERT_TRUE(compiled.ok()) << compiled.status();
      const std::vector<Tensor> inputs = {*runtime::CastTo(test::Random(x_shape, 13), dtype)};
      const FusedRun in_graph = RunWithGraphFused(*compiled, inputs, true, label);
      ASSERT_TRUE(in_graph.out.ok()) << in_graph.out.status();
      const FusedRun kernel = RunWithGraphFused(*compiled, inputs, false, label);
      ASSERT_TRUE(kernel.out.ok()) << kernel.out.status();
      std::vector<ir::IValue> args = {ir::IValue::FromTensor(inputs[0])};
      absl::StatusOr<std::vector<ir::IValue>> want = runtime::RunGraph(**oracle, args);
      ASSERT_TRUE(want.ok()) << want.status();
      const Tensor& w = (*want)[0].toTensor();
      ASSERT_EQ((*in_graph.out)[0].sizes(), w.sizes());
      ASSERT_EQ((*kernel.out)[0].sizes(), w.sizes());
      EXPECT_LE(RelativeL2((*in_graph.out)[0], w), prec.tol) << "in-graph epilogues against the interpreter";
      EXPECT_LE(RelativeL2((*kernel.out)[0], w), prec.tol) << "epilogue kernel against the interpreter";
      EXPECT_LE(RelativeL2((*in_graph.out)[0], (*kernel.out)[0]), prec.tol) << "in-graph against the kernel";
      const int64_t convs = chain ? 3 : 1;
      for (const FusedRun* r : {&in_graph, &kernel}) {
        EXPECT_EQ(r->convs, convs);
        EXPECT_EQ(r->fused, convs) << "every convolution is a kiln::conv_post_ops";
        EXPECT_EQ(r->nhwc, chain ? convs : 0) << "the chain's values NHWC, a lone convolution NCHW";
      }
      EXPECT_EQ(kernel.in_graph, 0) << "KILN_CUDNN_GRAPH_FUSED=0 ran an epilogue inside the graph";
      // bfloat16 NHWC is what cuDNN's runtime-fusion engines are for: a
      // refusal there is a finding (its reason is in the printed report).
      // Elsewhere (NCHW, float32) the count is printed, not required.
      if (dtype == DType::kBFloat16 && chain) {
        EXPECT_EQ(in_graph.in_graph, convs);
      }
    }
  }
  CudaDevice::SetConvTf32(tf32);
}

// bfloat16 NHWC conv 3x3 + bias + relu (what cuDNN's runtime-fusion
// engines take), called directly: a reference from other weights is off
// by far more than the tolerance, so every candidate is dropped and the
// caller's kernel path runs; the kernel path's own output as reference
// keeps a plan, whose output then matches it. Batch 2 and 3: shapes of
// their own (plans and refusals are cached per shape, process-wide).
TEST(CudnnGraphGpuTest, FusedPlansAreKeptOnlyWhenTheirOutputMatchesTheReference) {
  test::RegisterAll();
  if (!CudaDevice().is_available()) GTEST_SKIP() << "no CUDA device: " << CudaDevice::UnavailableReason();
  if (!LoadCudaLibraries().cudnn_status.ok()) GTEST_SKIP() << "no cuDNN: " << LoadCudaLibraries().cudnn_status;
  test::ScopedEnv on("KILN_CUDNN_GRAPH_FUSED", "1");
  CudaDevice device;
  ASSERT_TRUE(device.MakeCurrent(0).ok());
  const CudaDriverApi& d = LoadCudaLibraries().driver;
  absl::StatusOr<cudnnHandle_t> cudnn = device.CudnnHandle(0, nullptr);
  ASSERT_TRUE(cudnn.ok()) << cudnn.status();
  std::vector<std::shared_ptr<DeviceStorage>> keep;
  auto allocate = [&](int64_t bytes) -> absl::StatusOr<CUdeviceptr> {
    ASSIGN_OR_RETURN(std::shared_ptr<DeviceStorage> s, device.AllocateStorage(0, static_cast<size_t>(bytes)));
    keep.push_back(s);
    return s->ptr();
  };
  // `t`'s values (bfloat16) as `layout` (its strides say how they are read).
  auto upload = [&](const Tensor& t, const lowering::Layout& layout) -> DeviceView {
    const Tensor b = *runtime::CastTo(t, DType::kBFloat16);
    absl::StatusOr<CUdeviceptr> ptr = allocate(b.numel() * 2);
    EXPECT_TRUE(ptr.ok());
    EXPECT_EQ(d.cuMemcpyHtoDAsync(*ptr, b.raw_data(), static_cast<size_t>(b.numel()) * 2, nullptr), kCudaSuccess);
    return DeviceView{*ptr, layout};
  };
  auto download = [&](const DeviceView& v) {
    Tensor t = Tensor::Empty(DType::kBFloat16, {v.layout.numel()});
    EXPECT_EQ(d.cuMemcpyDtoHAsync(t.raw_data(), ViewAddress(v), static_cast<size_t>(t.numel()) * 2, nullptr),
              kCudaSuccess);
    EXPECT_EQ(d.cuStreamSynchronize(nullptr), kCudaSuccess);
    return t;  // memory order: both sides are packed alike
  };
  const int64_t c = 16, hw = 9;
  auto nhwc = [&](std::vector<int64_t> sizes) {
    return ChannelsLastLayout(lowering::Layout::Contiguous(DType::kBFloat16, std::move(sizes), "cuda"));
  };
  const DeviceView w = upload(test::Random({c, c, 3, 3}, 21), nhwc({c, c, 3, 3}));
  const DeviceView other_w = upload(test::Random({c, c, 3, 3}, 22), nhwc({c, c, 3, 3}));
  const DeviceView bias = upload(test::Random({c}, 23), lowering::Layout::Contiguous(DType::kBFloat16, {c}, "cuda"));
  ConvContext ctx;
  ctx.cudnn = *cudnn;
  ctx.channels_last = true;
  ctx.scratch = allocate;
  bool used_graph_epilogue = false;
  ctx.used_graph_epilogue = &used_graph_epilogue;
  auto problem = [&](int64_t n) {
    ConvProblem p;
    p.n = n, p.cin = c, p.h = hw, p.w = hw, p.cout = c, p.kh = 3, p.kw = 3, p.oh = hw, p.ow = hw, p.ph = 1, p.pw = 1;
    p.x = upload(test::Random({n, c, hw, hw}, 24), nhwc({n, c, hw, hw}));
    p.weight = w;
    p.bias = bias;
    absl::StatusOr<CUdeviceptr> y = allocate(n * c * hw * hw * 2);
    EXPECT_TRUE(y.ok());
    p.y = DeviceView{*y, nhwc({n, c, hw, hw})};
    ir::PostOp relu;
    relu.kind = ir::PostOpKind::kRelu;
    p.post = {relu};
    p.epilogue = MakeEpilogueArgs(p.y.layout, true, p.post, {});
    EXPECT_TRUE(p.epilogue.has_value());
    return p;
  };

  const ConvProblem off = problem(2);
  const GraphApiSummary before = CudnnGraphSummary();
  const FusedConvReference other_weights = [&](const DeviceView& y) -> absl::Status {
    ConvProblem q = off;
    q.weight = other_w;
    return *ConvThenEpilogue(q, y, ctx);
  };
  EXPECT_FALSE(CudnnGraphFusedConvolution(off, ctx, other_weights).has_value())
      << "a plan was kept against a reference from other weights";
  const GraphApiSummary after = CudnnGraphSummary();
  EXPECT_GT(after.fused_candidates_rejected, before.fused_candidates_rejected);
  std::printf("[cudnn fused check] rejected %lld candidates; first: %s\n",
              static_cast<long long>(after.fused_candidates_rejected - before.fused_candidates_rejected),  // NOLINT
              after.first_rejected_candidate.c_str());

  const ConvProblem good = problem(3);
  const FusedConvReference kernel_path = [&](const DeviceView& y) -> absl::Status {
    return *ConvThenEpilogue(good, y, ctx);
  };
  std::optional<absl::Status> done = CudnnGraphFusedConvolution(good, ctx, kernel_path);
  ASSERT_TRUE(done.has_value()) << "no plan kept against the kernel path's own output: "
                                << CudnnGraphSummary().first_fused_refusal;
  ASSERT_TRUE(done->ok()) << *done;
  EXPECT_TRUE(used_graph_epilogue);
  const Tensor fused = download(good.y);
  absl::StatusOr<CUdeviceptr> other = allocate(good.y.layout.numel() * 2);
  ASSERT_TRUE(other.ok());
  const DeviceView kernel_y{*other, good.y.layout};
  ASSERT_TRUE(ConvThenEpilogue(good, kernel_y, ctx)->ok());
  EXPECT_LE(RelativeL2(fused, download(kernel_y)), FusedPlanTolerance(DType::kBFloat16, false));
}

}  // namespace
}  // namespace kiln::backends::cuda
