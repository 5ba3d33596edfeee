// End to end: hand-built loop graphs and schedules -> wrapper lines ->
// generated C++ -> g++ -> dlopen -> run, against values computed here.
#include "backends/cpu/cpu_backend.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <type_traits>
#include <variant>

#include "absl/strings/str_cat.h"
#include "backends/cpu/cpu_program.h"
#include "devices/device_registry.h"
#include "gtest/gtest.h"
#include "lowering/test_graphs.h"
#include "support/tensor.h"
#include "wrapper/codegen.h"

namespace kiln::backends::cpu {
namespace {

using namespace lowering::testing;  // NOLINT
using lowering::Buffer;
using lowering::BufferKind;
using lowering::ExternArg;
using lowering::ExternCall;
using lowering::FusedKernel;
using lowering::LoopGraph;
using lowering::ReductionType;
using lowering::Schedule;
using lowering::ScheduleStep;

constexpr int64_t kRows = 64, kCols = 48, kOut = 16;

CpuBackendOptions Options() {
  CpuBackendOptions o;
  const char* tmp = std::getenv("TEST_TMPDIR");
  o.cache_dir = absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/kiln_cpu_backend_test_", ::getpid());
  return o;
}

Buffer Input(const std::string& name, std::vector<int64_t> sizes) {
  Buffer b;
  b.name = name;
  b.kind = BufferKind::kInput;
  b.layout = Contig(std::move(sizes));
  return b;
}

// x[64,48], w[48,16]:
//   y    = sigmoid(tanh(x * 1.5 + 0.25))       (pointwise chain)
//   s    = sum(y, -1); mx = max(x, -1); am = argmax(x, -1)
//   mean = mean(x, -1); m2 = sum((x - mean)^2, -1)   (welford)
//   mm   = y @ w                               (extern: OpenBLAS)
//   r    = relu(x)                             (extern: reference kernel)
struct Program {
  LoopGraph graph;
  Schedule schedule;
};

Program MixedProgram(const std::string& x_name = "x", const std::string& y_name = "y",
                     const std::string& kernel_name = "cpp_fused_mul_add_tanh_sigmoid_sum_0") {
  Program p;
  LoopGraph& g = p.graph;
  g.buffers.push_back(Input(x_name, {kRows, kCols}));
  g.buffers.push_back(Input("w", {kCols, kOut}));
  Buffer y;
  y.name = y_name;
  y.layout = Contig({kRows, kCols});
  y.pointwise = lowering::Pointwise{
      {kRows, kCols},
      Un(ExprOp::kSigmoid,
         Un(ExprOp::kTanh, Bin(ExprOp::kAdd, Bin(ExprOp::kMul, Ld(x_name, Flat2(0, kCols)), F(1.5)), F(0.25))))};
  g.buffers.push_back(y);
  FusedKernel k{kernel_name, "cpu", {y_name}, {x_name}};
  auto reduction = [&](const std::string& name, ReductionType t, const std::string& src, DType out) {
    Buffer b;
    b.name = name;
    b.layout = Contig({kRows}, out);
    b.reduction = lowering::Reduction{{kRows}, {kCols}, t, Ld(src, Flat2(0, kCols))};
    g.buffers.push_back(b);
    k.buffers.push_back(name);
  };
  reduction("s", ReductionType::kSum, y_name, DType::kFloat32);
  reduction("mx", ReductionType::kMax, x_name, DType::kFloat32);
  reduction("am", ReductionType::kArgmax, x_name, DType::kInt64);
  reduction("mean", ReductionType::kWelfordMean, x_name, DType::kFloat32);
  reduction("m2", ReductionType::kWelfordM2, x_name, DType::kFloat32);
  Buffer mm;
  mm.name = "mm";
  mm.kind = BufferKind::kExtern;
  mm.layout = Contig({kRows, kOut});
  mm.extern_call = ExternCall{"aten::mm", {ExternArg{y_name, std::nullopt}, ExternArg{"w", std::nullopt}}, 1};
  g.buffers.push_back(mm);
  Buffer r;
  r.name = "r";
  r.kind = BufferKind::kExtern;
  r.layout = Contig({kRows, kCols});
  r.extern_call = ExternCall{"aten::relu", {ExternArg{x_name, std::nullopt}}, 1};
  g.buffers.push_back(r);
  g.inputs = {x_name, "w"};
  g.outputs = {y_name, "s", "mx", "am", "mean", "m2", "mm", "r"};
  ScheduleStep ks;
  ks.kind = ScheduleStep::Kind::kKernel;
  ks.kernel = k;
  ScheduleStep e1;
  e1.kind = ScheduleStep::Kind::kExtern;
  e1.buffer = "mm";
  ScheduleStep e2;
  e2.kind = ScheduleStep::Kind::kExtern;
  e2.buffer = "r";
  p.schedule.steps = {ks, e1, e2};
  return p;
}

std::vector<Tensor> Inputs() {
  Tensor x = Tensor::Empty(DType::kFloat32, {kRows, kCols});
  Tensor w = Tensor::Empty(DType::kFloat32, {kCols, kOut});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = std::sin(0.37 * i) * 3.0f;
  for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = std::cos(0.11 * i);
  return {x, w};
}

void CheckOutputs(const std::vector<Tensor>& in, const std::vector<Tensor>& out) {
  ASSERT_EQ(out.size(), 8u);
  const float* x = in[0].data<float>();
  const float* w = in[1].data<float>();
  std::vector<double> y(kRows * kCols);
  for (int64_t i = 0; i < kRows * kCols; ++i) y[i] = 1.0 / (1.0 + std::exp(-std::tanh(x[i] * 1.5 + 0.25)));
  for (int64_t i = 0; i < kRows * kCols; ++i) {
    ASSERT_NEAR(out[0].GetDouble(i), y[i], 1e-5) << i;
    ASSERT_NEAR(out[7].GetDouble(i), std::max(0.0f, x[i]), 0) << i;
  }
  for (int64_t r = 0; r < kRows; ++r) {
    double s = 0, mx = -INFINITY, mean = 0, m2 = 0;
    int64_t am = 0;
    for (int64_t c = 0; c < kCols; ++c) {
      const double v = x[r * kCols + c];
      s += y[r * kCols + c];
      if (v > mx) {
        mx = v;
        am = c;
      }
      mean += v;
    }
    mean /= kCols;
    for (int64_t c = 0; c < kCols; ++c) m2 += (x[r * kCols + c] - mean) * (x[r * kCols + c] - mean);
    EXPECT_NEAR(out[1].GetDouble(r), s, 1e-4);
    EXPECT_EQ(out[2].GetDouble(r), mx);
    EXPECT_EQ(out[3].GetInt(r), am);
    EXPECT_NEAR(out[4].GetDouble(r), mean, 1e-5);
    EXPECT_NEAR(out[5].GetDouble(r), m2, 1e-3);
    for (int64_t j = 0; j < kOut; ++j) {
      double acc = 0;
      for (int64_t c = 0; c < kCols; ++c) acc += y[r * kCols + c] * w[c * kOut + j];
      EXPECT_NEAR(out[6].GetDouble(r * kOut + j), acc, 1e-4);
    }
  }
}

TEST(CpuBackend, RegistersWithBothRegistries) {
  ASSERT_TRUE(RegisterCpuBackend().ok());
  ASSERT_TRUE(RegisterCpuBackend().ok());  // idempotent
  auto dev = devices::DeviceRegistry::Global().Find("cpu:0");
  ASSERT_TRUE(dev.ok()) << dev.status();
  EXPECT_TRUE(dev->device->is_available());
  auto alloc = dev->device->allocator(0);
  ASSERT_TRUE(alloc.ok());
  auto p = (*alloc)->Allocate(100, 64);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(*p) % 64, 0u);
  (*alloc)->Free(*p);
  EXPECT_TRUE(devices::DeviceRegistry::Global().Find("cpu:1").status().code() == absl::StatusCode::kNotFound);
  auto codegen = wrapper::CreateDeviceCodegen("cpu");
  ASSERT_TRUE(codegen.ok()) << codegen.status();
  EXPECT_EQ((*codegen)->device(), "cpu");
}

// MixedProgram() through the wrapper, the compiler (or the cache) and dlopen.
absl::StatusOr<std::unique_ptr<wrapper::CompiledProgram>> CompileMixed(CpuCodegen& codegen) {
  Program p = MixedProgram();
  auto lines = wrapper::GenerateWrapper(p.graph, p.schedule, codegen);
  if (!lines.ok()) return lines.status();
  return codegen.Compile(*lines);
}

TEST(CpuBackend, CompilesAndRunsPointwiseReductionsAndExterns) {
  CpuCodegen codegen(Options());
  auto cold = CompileMixed(codegen);
  ASSERT_TRUE(cold.ok()) << cold.status();
  auto* program = static_cast<CpuProgram*>(cold->get());
  EXPECT_FALSE(program->stats().cache_hit);
  std::vector<Tensor> in = Inputs();
  for (int run = 0; run < 2; ++run) {  // the second run reuses pooled buffers
    auto out = (*cold)->Run(in);
    ASSERT_TRUE(out.ok()) << out.status();
    CheckOutputs(in, *out);
  }
  auto warm = CompileMixed(codegen);
  ASSERT_TRUE(warm.ok()) << warm.status();
  auto* warm_program = static_cast<CpuProgram*>(warm->get());
  EXPECT_TRUE(warm_program->stats().cache_hit);
  std::printf("cold: codegen %.3f ms, cache+g++ %.1f ms, load %.2f ms\n",
              program->stats().codegen_seconds * 1e3, program->stats().cache_seconds * 1e3,
              program->stats().load_seconds * 1e3);
  std::printf("warm: codegen %.3f ms, cache %.2f ms, load %.2f ms\n", warm_program->stats().codegen_seconds * 1e3,
              warm_program->stats().cache_seconds * 1e3, warm_program->stats().load_seconds * 1e3);
  EXPECT_LT(warm_program->stats().cache_seconds, 0.1);
  auto out = (*warm)->Run(in);
  ASSERT_TRUE(out.ok()) << out.status();
  CheckOutputs(in, *out);

  // Bad inputs are statuses.
  EXPECT_FALSE((*warm)->Run({}).ok());
  EXPECT_FALSE((*warm)->Run({in[1], in[0]}).ok());
  EXPECT_FALSE((*warm)->Run({Tensor(), in[1]}).ok());
}

// `kiln run --profile` on the CPU: every kernel and extern call of the
// program, in program order, timed over the profiled calls, through the
// host session (wrapper::ProgramSession::Profile); outputs stay right.
TEST(CpuBackend, ProfilesEachStep) {
  CpuCodegen codegen(Options());
  auto compiled = CompileMixed(codegen);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  auto* program = static_cast<CpuProgram*>(compiled->get());
  std::vector<Tensor> in = Inputs();
  auto session = program->NewSession(in);
  ASSERT_TRUE(session.ok()) << session.status();
  auto steps = (*session)->Profile(3);
  ASSERT_TRUE(steps.ok()) << steps.status();
  ASSERT_EQ(steps->size(), 3u);  // the fused kernel, then mm and relu (schedule order)
  EXPECT_NE((*steps)[0].name.find("cpp_fused_mul_add_tanh_sigmoid_sum_0"), std::string::npos) << (*steps)[0].name;
  EXPECT_EQ((*steps)[0].kind, "kernel");
  // mm is a prepared oneDNN call (named by what it runs), relu runs its
  // reference kernel (named by its op).
  EXPECT_EQ((*steps)[1].name.rfind("gemm [64,48] x [48,16]", 0), 0u) << (*steps)[1].name;
  EXPECT_EQ((*steps)[1].kind, "onednn");
  EXPECT_EQ((*steps)[2].name, "aten::relu");
  EXPECT_EQ((*steps)[2].kind, "extern");
  for (const wrapper::StepProfile& s : *steps) {
    EXPECT_EQ(s.calls, 3);
    EXPECT_GT(s.total_ms, 0.0) << s.name;
  }
  EXPECT_EQ(program->generated().steps.size(), 3u);
  EXPECT_EQ(program->generated().steps[1].extern_index, 0);
  EXPECT_NE(program->generated().source.find("KILN_STEP(2, 1);"), std::string::npos);
  ASSERT_TRUE((*session)->Run().ok());
  auto out = (*session)->FetchOutputs();
  ASSERT_TRUE(out.ok()) << out.status();
  CheckOutputs(in, *out);
}

// CpuProgram::Run is written to be called from several threads at once
// (per-call buffers from a locked pool, a thread-local extern context): each
// thread runs its own inputs through one program and checks every output.
TEST(CpuBackend, OneProgramRunsFromSeveralThreadsAtOnce) {
  CpuCodegen codegen(Options());
  auto compiled = CompileMixed(codegen);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  wrapper::CompiledProgram& program = **compiled;
  constexpr int kThreads = 4, kRuns = 6;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&program, t] {
      std::vector<Tensor> in = Inputs();
      float* x = in[0].data<float>();
      for (int64_t i = 0; i < in[0].numel(); ++i) x[i] = x[i] * (1.0f + 0.25f * t) - 0.5f * t;
      for (int run = 0; run < kRuns; ++run) {
        auto out = program.Run(in);
        ASSERT_TRUE(out.ok()) << out.status();
        CheckOutputs(in, *out);
      }
    });
  }
  for (std::thread& t : threads) t.join();
}

TEST(CpuBackend, HostileNamesNeverReachGeneratedSource) {
  const std::string evil_x = "x); system(\"rm -rf /\"); //";
  const std::string evil_y = "y\n#include </etc/passwd>\n*/ abort(); /*";
  const std::string evil_kernel = "k\"); exit(1); //\nint main(){}";
  // The wrapper already refuses such names; the backend must be safe even
  // when handed them, so rename the buffers of a valid program.
  Program safe = MixedProgram();
  Program evil = MixedProgram(evil_x, evil_y, evil_kernel);
  CpuCodegen codegen(Options());
  EXPECT_FALSE(wrapper::GenerateWrapper(evil.graph, evil.schedule, codegen).ok());
  auto lines = wrapper::GenerateWrapper(safe.graph, safe.schedule, codegen);
  ASSERT_TRUE(lines.ok()) << lines.status();
  auto rn = [&](std::string& n) {
    if (n == "x") n = evil_x;
    else if (n == "y") n = evil_y;
    else if (n == "cpp_fused_mul_add_tanh_sigmoid_sum_0") n = evil_kernel;
  };
  for (auto& n : lines->inputs) rn(n);
  for (auto& n : lines->outputs) rn(n);
  for (auto& [n, l] : lines->layouts) rn(n);
  for (wrapper::Line& line : lines->lines) {
    std::visit(
        [&](auto& l) {
          using T = std::decay_t<decltype(l)>;
          if constexpr (std::is_same_v<T, wrapper::KernelDefinitionLine>) {
            rn(l.kernel_name);
            auto body = codegen.KernelSource(evil.graph, evil.schedule.steps[0].kernel);
            ASSERT_TRUE(body.ok()) << body.status();
            l.kernel_body = *body;
          } else if constexpr (std::is_same_v<T, wrapper::KernelCallLine>) {
            rn(l.kernel_name);
            for (auto& a : l.args) rn(a);
          } else if constexpr (std::is_same_v<T, wrapper::ExternKernelAllocLine> ||
                               std::is_same_v<T, wrapper::ExternKernelLine>) {
            for (auto& a : l.args) rn(a.buffer);
            for (auto& o : l.outputs) rn(o);
            l.op = l.outputs[0] == "mm" ? "aten::mm" : "aten::relu";
          } else if constexpr (std::is_same_v<T, wrapper::AllocateLine> || std::is_same_v<T, wrapper::FreeLine>) {
            rn(l.buffer);
          } else if constexpr (std::is_same_v<T, wrapper::FreeIfNotReusedLine>) {
            rn(l.buffer);
          }
        },
        line);
  }
  // A hostile comment and op name too.
  lines->lines.insert(lines->lines.begin(), wrapper::CommentLine{"ok\nsystem(\"reboot\");"});
  auto compiled = codegen.Compile(*lines);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  const std::string& source = static_cast<CpuProgram*>(compiled->get())->stats().source;
  EXPECT_EQ(source.find("system(\"rm"), std::string::npos);
  EXPECT_EQ(source.find("\nsystem("), std::string::npos) << "comments stay on one line";
  EXPECT_NE(source.find("// ok?system("), std::string::npos);
  EXPECT_EQ(source.find("/etc/passwd"), std::string::npos);
  EXPECT_EQ(source.find("abort()"), std::string::npos);
  EXPECT_EQ(source.find("exit(1)"), std::string::npos);
  EXPECT_EQ(source.find("int main"), std::string::npos);
  EXPECT_EQ(source.find("aten::"), std::string::npos) << "op names stay on the host";
  std::vector<Tensor> in = Inputs();
  auto out = (*compiled)->Run(in);
  ASSERT_TRUE(out.ok()) << out.status();
  CheckOutputs(in, *out);
}

TEST(CpuBackend, MalformedProgramsAreStatuses) {
  CpuCodegen codegen(Options());
  wrapper::WrapperProgram bad;
  bad.inputs = {"nope"};
  EXPECT_FALSE(codegen.Compile(bad).ok());
  wrapper::WrapperProgram call_undefined;
  call_undefined.layouts = {{"a", Contig({4})}};
  call_undefined.lines.push_back(wrapper::KernelCallLine{"k", "cpu", {"a"}});
  EXPECT_FALSE(codegen.Compile(call_undefined).ok());
  wrapper::WrapperProgram reuse_unowned;
  reuse_unowned.layouts = {{"a", Contig({4})}};
  reuse_unowned.inputs = {"a"};
  reuse_unowned.lines.push_back(wrapper::ReuseLine{"a", "b", Contig({4}), true});
  EXPECT_FALSE(codegen.Compile(reuse_unowned).ok());
  wrapper::WrapperProgram bad_layout;
  lowering::Layout l = Contig({4});
  l.strides = {1, 2};
  bad_layout.layouts = {{"a", l}};
  EXPECT_FALSE(codegen.Compile(bad_layout).ok());
}

}  // namespace
}  // namespace kiln::backends::cpu
