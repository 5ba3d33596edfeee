// The CPU's library calls (backends/cpu/library_calls.h) against the
// interpreter: small graphs in the shapes real models take -- residual
// blocks, depthwise/squeeze-excite blocks, grouped, dilated, 1-D and
// asymmetric convolutions, GEMMs with bias and activations, max pooling --
// compiled with the device's epilogue fusion (passes/fuse_post_ops.h) and
// without it, each compared with runtime::RunGraph on the unfused graph.
// Constant weights take the packed path, graph-input weights the per-call
// path. The checks also read the program's LibraryStats: that the library
// ran the ops (no silent fallback to reference kernels) and that values
// between convolutions stayed channels-last.
#include <dirent.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_program.h"
#include "driver/compile_graph.h"
#include "driver/initialize.h"
#include "gtest/gtest.h"
#include "ir/constants.h"
#include "ir/ir.h"
#include "ir/text_parser.h"
#include "runtime/interpreter.h"
#include "runtime/kernels.h"

namespace kiln::testing {
namespace {

using backends::cpu::CpuProgram;
using backends::cpu::LibraryStats;

class LibraryCallsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (std::getenv("KILN_CACHE_DIR") == nullptr) {
      if (const char* tmp = std::getenv("TEST_TMPDIR")) {
        setenv("KILN_CACHE_DIR", (std::string(tmp) + "/kiln_cache").c_str(), 1);
      }
    }
    ASSERT_TRUE(driver::Initialize().ok());
    ASSERT_TRUE(backends::cpu::RegisterCpuBackend().ok());
  }
};

// Deterministic values in [-scale, scale).
Tensor Random(std::vector<int64_t> sizes, uint64_t seed, double scale = 1.0) {
  Tensor t = Tensor::Empty(DType::kFloat32, sizes);
  uint64_t s = seed * 0x9E3779B97F4A7C15ULL + 1;
  for (int64_t i = 0; i < t.numel(); ++i) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    t.data<float>()[i] = static_cast<float>((static_cast<double>(s >> 11) / 9007199254740992.0 * 2 - 1) * scale);
  }
  return t;
}

struct Case {
  std::string ir;
  // Graph inputs that become constants (weights), by index, with their data.
  std::vector<std::pair<size_t, Tensor>> constants;
  std::vector<Tensor> inputs;  // the remaining graph inputs, in order
};

// Parses the case and turns the listed inputs into prim::Constant nodes.
std::unique_ptr<ir::Graph> Build(const Case& c) {
  absl::StatusOr<std::unique_ptr<ir::Graph>> g = ir::ParseGraph(c.ir);
  EXPECT_TRUE(g.ok()) << g.status();
  if (!g.ok()) return nullptr;
  ir::Graph& graph = **g;
  std::vector<size_t> erase;
  for (const auto& [index, tensor] : c.constants) {
    ir::Value* in = graph.inputs()[index];
    ir::WithInsertPoint at(*graph.nodes().begin());
    absl::StatusOr<ir::Value*> k = ir::InsertConstant(graph, ir::IValue::FromTensor(tensor));
    EXPECT_TRUE(k.ok()) << k.status();
    in->replaceAllUsesWith(*k);
    erase.push_back(index);
  }
  std::sort(erase.rbegin(), erase.rend());
  for (size_t i : erase) graph.eraseInput(i);
  return *std::move(g);
}

struct Result {
  std::vector<Tensor> outputs;
  LibraryStats stats;
  int fused_ops = 0;
  int reported_reference_externs = 0;  // the driver's not-compiled report
  std::string report;
};

Result Compile(const Case& c, bool fuse) {
  Result r;
  std::unique_ptr<ir::Graph> g = Build(c);
  if (!g) return r;
  driver::CompileOptions options;
  options.device_passes = fuse;
  absl::StatusOr<driver::CompiledGraph> compiled = driver::CompileGraph(*g, options);
  EXPECT_TRUE(compiled.ok()) << compiled.status();
  if (!compiled.ok()) return r;
  for (const ir::Node* n : g->nodes()) {
    const std::string k(n->kind().qualString());
    r.fused_ops += k == "kiln::conv_post_ops" || k == "kiln::linear_post_ops";
  }
  r.reported_reference_externs = compiled->num_reference_externs;
  r.report = driver::NotCompiledReport(*compiled);
  auto* program = dynamic_cast<CpuProgram*>(compiled->compiled.get());
  EXPECT_NE(program, nullptr);
  if (program == nullptr) return r;
  r.stats = program->library_stats();
  // Twice: the second run reuses the pooled buffers and the call states.
  for (int run = 0; run < 2; ++run) {
    absl::StatusOr<std::vector<Tensor>> out = program->Run(c.inputs);
    EXPECT_TRUE(out.ok()) << out.status();
    if (out.ok()) r.outputs = *std::move(out);
  }
  return r;
}

std::vector<Tensor> Interpret(const Case& c) {
  std::unique_ptr<ir::Graph> g = Build(c);
  std::vector<ir::IValue> in;
  for (const Tensor& t : c.inputs) in.push_back(ir::IValue::FromTensor(t));
  absl::StatusOr<std::vector<ir::IValue>> out = runtime::RunGraph(*g, in);
  EXPECT_TRUE(out.ok()) << out.status();
  std::vector<Tensor> tensors;
  if (out.ok()) {
    for (const ir::IValue& v : *out) tensors.push_back(v.toTensor());
  }
  return tensors;
}

void ExpectClose(const std::vector<Tensor>& got, const std::vector<Tensor>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t k = 0; k < got.size(); ++k) {
    ASSERT_EQ(got[k].sizes(), want[k].sizes()) << what << " output " << k;
    double worst = 0, scale = 0;
    for (int64_t i = 0; i < want[k].numel(); ++i) scale = std::max(scale, std::fabs(want[k].GetDouble(i)));
    for (int64_t i = 0; i < want[k].numel(); ++i) {
      worst = std::max(worst, std::fabs(got[k].GetDouble(i) - want[k].GetDouble(i)));
    }
    // Summation order and oneDNN's vector math: relative to the output's scale.
    EXPECT_LE(worst, 2e-5 * std::max(scale, 1.0)) << what << " output " << k << " (scale " << scale << ")";
  }
}

// Compiles with and without fusion and compares both with the interpreter.
// Returns the fused compile's stats.
LibraryStats Check(const Case& c, int min_fused_ops) {
  const std::vector<Tensor> want = Interpret(c);
  Result plain = Compile(c, false);
  ExpectClose(plain.outputs, want, "unfused");
  Result fused = Compile(c, true);
  ExpectClose(fused.outputs, want, "fused");
  EXPECT_GE(fused.fused_ops, min_fused_ops);
  EXPECT_TRUE(fused.stats.fallbacks.empty()) << absl::StrJoin(fused.stats.fallbacks, "\n");
  return fused.stats;
}

constexpr char kConvConstants[] = R"IR(
  %s1 : int[] = prim::Constant[value=[1, 1]]()
  %s2 : int[] = prim::Constant[value=[2, 2]]()
  %p0 : int[] = prim::Constant[value=[0, 0]]()
  %p1 : int[] = prim::Constant[value=[1, 1]]()
  %f : bool = prim::Constant[value=0]()
  %g1 : int = prim::Constant[value=1]()
  %n : NoneType = prim::Constant()
)IR";

// conv3x3+relu -> maxpool -> [conv1x1+relu -> conv3x3 + residual + relu] ->
// mean (without keepdim, resnet's global pool): every value stays
// channels-last; the input is the one boundary.
TEST_F(LibraryCallsTest, ResidualBlock) {
  Case c;
  c.ir = std::string(R"IR(graph(%x : Float(1, 3, 20, 20), %w0 : Float(16, 3, 3, 3), %b0 : Float(16),
      %w1 : Float(16, 16, 1, 1), %b1 : Float(16), %w2 : Float(16, 16, 3, 3), %b2 : Float(16)):)IR") +
         kConvConstants + R"IR(
  %k : int[] = prim::Constant[value=[3, 3]]()
  %dims : int[] = prim::Constant[value=[2, 3]]()
  %c0 : Float(1, 16, 10, 10) = aten::convolution(%x, %w0, %b0, %s2, %p1, %s1, %f, %p0, %g1)
  %r0 : Float(1, 16, 10, 10) = aten::relu(%c0)
  %m : Float(1, 16, 5, 5) = aten::max_pool2d(%r0, %k, %s2, %p1, %s1, %f)
  %c1 : Float(1, 16, 5, 5) = aten::convolution(%m, %w1, %b1, %s1, %p0, %s1, %f, %p0, %g1)
  %r1 : Float(1, 16, 5, 5) = aten::relu(%c1)
  %c2 : Float(1, 16, 5, 5) = aten::convolution(%r1, %w2, %b2, %s1, %p1, %s1, %f, %p0, %g1)
  %a : Float(1, 16, 5, 5) = aten::add(%c2, %m, %g1)
  %r2 : Float(1, 16, 5, 5) = aten::relu(%a)
  %y : Float(1, 16) = aten::mean(%r2, %dims, %f, %n)
  return (%y))IR";
  c.constants = {{1, Random({16, 3, 3, 3}, 1, 0.3)}, {2, Random({16}, 2)},  {3, Random({16, 16, 1, 1}, 3, 0.3)},
                 {4, Random({16}, 4)},               {5, Random({16, 16, 3, 3}, 5, 0.1)}, {6, Random({16}, 6)}};
  c.inputs = {Random({1, 3, 20, 20}, 7)};
  const LibraryStats st = Check(c, 3);
  EXPECT_EQ(st.library_calls, 5);  // three convolutions, the max pooling and the mean
  EXPECT_EQ(st.reference_externs, 0);
  EXPECT_GE(st.channels_last_values, 4);  // conv0 -> pool -> conv1 -> conv2 -> mean
  // The input in; the mean's [1, 16, 1, 1] is the same bytes in either
  // layout, so its plain result (reshaped to [1, 16]) needs no reorder.
  EXPECT_EQ(st.reorders, 1);
}

// resnet50's 3x3 stride-1 convolutions with 64 channels on 28x28 (58
// MFLOP) take oneDNN's Winograd algorithm where the CPU has it
// (library_conv.cc's rule; KILN_CPU_WINOGRAD=0 turns it off): the first
// with bias and ReLU, reordered from and to channels-last around its
// nChw16c; the second with the residual as a binary post-op too, which
// Winograd may refuse (then the direct algorithm). Different rounding
// (the 4x4 input transforms), the same tolerance as every other call.
TEST_F(LibraryCallsTest, WinogradBlock) {
  Case c;
  c.ir = std::string(R"IR(graph(%x : Float(1, 64, 28, 28), %w1 : Float(64, 64, 3, 3), %b1 : Float(64),
      %w2 : Float(64, 64, 3, 3), %b2 : Float(64)):)IR") + kConvConstants + R"IR(
  %c1 : Float(1, 64, 28, 28) = aten::convolution(%x, %w1, %b1, %s1, %p1, %s1, %f, %p0, %g1)
  %r1 : Float(1, 64, 28, 28) = aten::relu(%c1)
  %c2 : Float(1, 64, 28, 28) = aten::convolution(%r1, %w2, %b2, %s1, %p1, %s1, %f, %p0, %g1)
  %a : Float(1, 64, 28, 28) = aten::add(%c2, %x, %g1)
  %y : Float(1, 64, 28, 28) = aten::relu(%a)
  return (%y))IR";
  // He-scaled weights, as trained networks have: outputs of order 1.
  c.constants = {{1, Random({64, 64, 3, 3}, 91, 0.1)}, {2, Random({64}, 92, 0.1)},
                 {3, Random({64, 64, 3, 3}, 93, 0.1)}, {4, Random({64}, 94, 0.1)}};
  c.inputs = {Random({1, 64, 28, 28}, 95)};
  const LibraryStats st = Check(c, 2);
  EXPECT_EQ(st.library_calls, 2);
  EXPECT_EQ(st.reference_externs, 0);
  int winograd = 0;
  for (const std::string& call : st.calls) winograd += absl::StrContains(call, "wino");
  const char* off = std::getenv("KILN_CPU_WINOGRAD");
  if (off != nullptr && std::string(off) == "0") {
    EXPECT_EQ(winograd, 0) << absl::StrJoin(st.calls, "; ");
  } else if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")) {
    // oneDNN 2.6's Winograd kernels are avx512_core ones.
    EXPECT_GE(winograd, 1) << absl::StrJoin(st.calls, "; ");
  }
}

// A program's thread count changes after load: the primitives are made
// again for the new pool and compute the same values.
TEST_F(LibraryCallsTest, ThreadCountChangeKeepsResults) {
  Case c;
  c.ir = std::string(R"IR(graph(%x : Float(1, 8, 12, 12), %w : Float(16, 8, 3, 3)):)IR") + kConvConstants + R"IR(
  %y : Float(1, 16, 12, 12) = aten::convolution(%x, %w, %n, %s1, %p1, %s1, %f, %p0, %g1)
  %r : Float(1, 16, 12, 12) = aten::relu(%y)
  return (%r))IR";
  c.constants = {{1, Random({16, 8, 3, 3}, 71, 0.3)}};
  c.inputs = {Random({1, 8, 12, 12}, 72)};
  std::unique_ptr<ir::Graph> g = Build(c);
  absl::StatusOr<driver::CompiledGraph> compiled = driver::CompileGraph(*g);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  auto* program = dynamic_cast<CpuProgram*>(compiled->compiled.get());
  ASSERT_NE(program, nullptr);
  absl::StatusOr<std::vector<Tensor>> before = program->Run(c.inputs);
  ASSERT_TRUE(before.ok()) << before.status();
  ASSERT_TRUE(program->SetNumThreads(1).ok());
  EXPECT_EQ(program->num_threads(), 1);
  EXPECT_NE(program->library_stats().calls[0].find(", 1T"), std::string::npos) << program->library_stats().calls[0];
  absl::StatusOr<std::vector<Tensor>> after = program->Run(c.inputs);
  ASSERT_TRUE(after.ok()) << after.status();
  ExpectClose(*after, *before, "one thread");
  ExpectClose(*after, Interpret(c), "interpreter");
  EXPECT_FALSE(program->SetNumThreads(0).ok());
}

// The ids of the process's threads (/proc/self/task).
std::set<long> ThreadIds() {
  std::set<long> ids;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] != '.') ids.insert(std::strtol(e->d_name, nullptr, 10));
    }
    closedir(d);
  }
  return ids;
}

// One pool for the life of a program: calls of very different sizes (21
// and 5.3 MFLOP convolutions, a 1.3 MFLOP one, a generated kernel of three
// scheduling chunks) start no thread after the first run. libgomp ends the
// surplus threads of its pool whenever a parallel region has fewer threads
// (but more than one) than the one before, and starts them again at the
// next larger region, so a team size that varies per call is a thread start
// per call; every team here is the pool or one thread. The program ends
// with a pool-sized call, so threads started within a run outlive it and
// show up in the next snapshot.
TEST_F(LibraryCallsTest, NoThreadStartedPerCall) {
  Case c;
  c.ir = std::string(R"IR(graph(%x : Float(1, 32, 24, 24), %w0 : Float(64, 32, 3, 3), %w1 : Float(8, 64, 3, 3),
      %w2 : Float(256, 8, 3, 3)):)IR") + kConvConstants + R"IR(
  %c0 : Float(1, 64, 24, 24) = aten::convolution(%x, %w0, %n, %s1, %p1, %s1, %f, %p0, %g1)
  %e : Float(1, 64, 24, 24) = aten::exp(%c0)
  %c1 : Float(1, 8, 12, 12) = aten::convolution(%e, %w1, %n, %s2, %p1, %s1, %f, %p0, %g1)
  %y : Float(1, 256, 12, 12) = aten::convolution(%c1, %w2, %n, %s1, %p1, %s1, %f, %p0, %g1)
  return (%y))IR";
  c.constants = {{1, Random({64, 32, 3, 3}, 81, 0.05)}, {2, Random({8, 64, 3, 3}, 82, 0.05)},
                 {3, Random({256, 8, 3, 3}, 83, 0.1)}};
  c.inputs = {Random({1, 32, 24, 24}, 84)};
  std::unique_ptr<ir::Graph> g = Build(c);
  absl::StatusOr<driver::CompiledGraph> compiled = driver::CompileGraph(*g);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  auto* program = dynamic_cast<CpuProgram*>(compiled->compiled.get());
  ASSERT_NE(program, nullptr);
  ASSERT_TRUE(program->SetNumThreads(4).ok());
  const std::vector<Tensor> want = Interpret(c);
  absl::StatusOr<std::vector<Tensor>> out = program->Run(c.inputs);  // starts the pool
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectClose(*out, want, "first run");
  const std::set<long> pool = ThreadIds();
  for (int run = 0; run < 5; ++run) {
    out = program->Run(c.inputs);
    ASSERT_TRUE(out.ok()) << out.status();
  }
  ExpectClose(*out, want, "later runs");
  std::vector<long> started;
  for (long id : ThreadIds()) {
    if (pool.count(id) == 0) started.push_back(id);
  }
  EXPECT_TRUE(started.empty()) << started.size() << " threads started after the first run; calls: "
                               << absl::StrJoin(program->library_stats().calls, "; ");
}

// Depthwise 5x5 stride 2 with hardswish, a squeeze-excite gate (mean, two
// 1x1 convolutions, ONNX's HardSigmoid as mul/add/clamp, the gate multiply)
// and a projection: all library calls (passes/library_channel_ops.h), the
// block channels-last from the input to the result.
TEST_F(LibraryCallsTest, DepthwiseSqueezeExcite) {
  Case c;
  c.ir = std::string(R"IR(graph(%x : Float(1, 24, 14, 14), %wd : Float(24, 1, 5, 5), %bd : Float(24),
      %w1 : Float(8, 24, 1, 1), %b1 : Float(8), %w2 : Float(24, 8, 1, 1), %b2 : Float(24),
      %wp : Float(32, 24, 1, 1)):)IR") +
         kConvConstants + R"IR(
  %p2 : int[] = prim::Constant[value=[2, 2]]()
  %g24 : int = prim::Constant[value=24]()
  %dims : int[] = prim::Constant[value=[2, 3]]()
  %t : bool = prim::Constant[value=1]()
  %sixth : float = prim::Constant[value=0.16666666666666666]()
  %half : float = prim::Constant[value=0.5]()
  %zero : float = prim::Constant[value=0.]()
  %one : float = prim::Constant[value=1.]()
  %d : Float(1, 24, 7, 7) = aten::convolution(%x, %wd, %bd, %s2, %p2, %s1, %f, %p0, %g24)
  %h : Float(1, 24, 7, 7) = aten::hardswish(%d)
  %pool : Float(1, 24, 1, 1) = aten::mean(%h, %dims, %t, %n)
  %e1 : Float(1, 8, 1, 1) = aten::convolution(%pool, %w1, %b1, %s1, %p0, %s1, %f, %p0, %g1)
  %r1 : Float(1, 8, 1, 1) = aten::relu(%e1)
  %e2 : Float(1, 24, 1, 1) = aten::convolution(%r1, %w2, %b2, %s1, %p0, %s1, %f, %p0, %g1)
  %l1 : Float(1, 24, 1, 1) = aten::mul(%e2, %sixth)
  %l2 : Float(1, 24, 1, 1) = aten::add(%l1, %half, %g1)
  %gate : Float(1, 24, 1, 1) = aten::clamp(%l2, %zero, %one)
  %gated : Float(1, 24, 7, 7) = aten::mul(%gate, %h)
  %y : Float(1, 32, 7, 7) = aten::convolution(%gated, %wp, %n, %s1, %p0, %s1, %f, %p0, %g1)
  return (%y))IR";
  c.constants = {{1, Random({24, 1, 5, 5}, 11, 0.3)}, {2, Random({24}, 12)}, {3, Random({8, 24, 1, 1}, 13, 0.3)},
                 {4, Random({8}, 14)}, {5, Random({24, 8, 1, 1}, 15, 0.3)}, {6, Random({24}, 16)},
                 {7, Random({32, 24, 1, 1}, 17, 0.3)}};
  c.inputs = {Random({1, 24, 14, 14}, 18)};
  const LibraryStats st = Check(c, 3);
  EXPECT_EQ(st.library_calls, 6);  // four convolutions, the mean, the gate
  EXPECT_EQ(st.reference_externs, 0);
  EXPECT_GE(st.channels_last_values, 5);
  EXPECT_EQ(st.reorders, 2) << absl::StrJoin(st.calls, "\n");  // the input in, the result out
}

// A squeeze-excite block as efficientnet_b0 writes it (SiLU as x *
// sigmoid(x), a sigmoid gate, the dynamo exporter's mean over [-1, -2]) at
// the odd channel counts of the real models and batch 1 and 2: the mean is
// oneDNN's average pooling and the gate its binary multiply, both on the
// depthwise convolution's channels-last result, with no reorder inside.
TEST_F(LibraryCallsTest, SqueezeExciteStaysChannelsLast) {
  for (const auto& [channels, batch] : std::vector<std::pair<int64_t, int64_t>>{{72, 1}, {120, 2}, {40, 1}}) {
    SCOPED_TRACE(absl::StrCat(channels, " channels, batch ", batch));
    const std::string C = absl::StrCat(channels), N = absl::StrCat(batch), R = absl::StrCat(channels / 4);
    Case c;
    c.ir = "graph(%x : Float(" + N + ", " + C + ", 11, 11), %wd : Float(" + C + ", 1, 3, 3), %w1 : Float(" + R +
           ", " + C + ", 1, 1), %b1 : Float(" + R + "), %w2 : Float(" + C + ", " + R + ", 1, 1), %b2 : Float(" + C +
           "), %wp : Float(24, " + C + ", 1, 1)):" + kConvConstants + "  %g : int = prim::Constant[value=" + C +
           R"IR(]()
  %dims : int[] = prim::Constant[value=[-1, -2]]()
  %t : bool = prim::Constant[value=1]()
  %d : Float(N, C, 11, 11) = aten::convolution(%x, %wd, %n, %s1, %p1, %s1, %f, %p0, %g)
  %sd : Float(N, C, 11, 11) = aten::sigmoid(%d)
  %h : Float(N, C, 11, 11) = aten::mul(%d, %sd)
  %pool : Float(N, C, 1, 1) = aten::mean(%h, %dims, %t)
  %e1 : Float(N, R, 1, 1) = aten::convolution(%pool, %w1, %b1, %s1, %p0, %s1, %f, %p0, %g1)
  %s1g : Float(N, R, 1, 1) = aten::sigmoid(%e1)
  %r1 : Float(N, R, 1, 1) = aten::mul(%e1, %s1g)
  %e2 : Float(N, C, 1, 1) = aten::convolution(%r1, %w2, %b2, %s1, %p0, %s1, %f, %p0, %g1)
  %gate : Float(N, C, 1, 1) = aten::sigmoid(%e2)
  %gated : Float(N, C, 11, 11) = aten::mul(%h, %gate)
  %y : Float(N, 24, 11, 11) = aten::convolution(%gated, %wp, %n, %s1, %p0, %s1, %f, %p0, %g1)
  return (%y))IR";
    for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
             {"Float(N, C,", "Float(" + N + ", " + C + ","}, {"Float(N, R,", "Float(" + N + ", " + R + ","},
             {"Float(N, 24,", "Float(" + N + ", 24,"}}) {
      for (size_t at = c.ir.find(from); at != std::string::npos; at = c.ir.find(from, at)) c.ir.replace(at, from.size(), to);
    }
    c.constants = {{1, Random({channels, 1, 3, 3}, 91, 0.3)}, {2, Random({channels / 4, channels, 1, 1}, 92, 0.2)},
                   {3, Random({channels / 4}, 93)},           {4, Random({channels, channels / 4, 1, 1}, 94, 0.3)},
                   {5, Random({channels}, 95)},               {6, Random({24, channels, 1, 1}, 96, 0.2)}};
    c.inputs = {Random({batch, channels, 11, 11}, 97)};
    const LibraryStats st = Check(c, 3);
    EXPECT_EQ(st.library_calls, 6);
    EXPECT_EQ(st.reference_externs, 0);
    EXPECT_EQ(st.reorders, 2) << absl::StrJoin(st.calls, "\n");  // the input in, the result out
    int pools = 0, gates = 0;
    for (const std::string& call : st.calls) {
      pools += absl::StartsWith(call, "global_avg_pool");
      gates += absl::StartsWith(call, "channel_mul");
      if (absl::StartsWith(call, "global_avg_pool") || absl::StartsWith(call, "channel_mul")) {
        EXPECT_EQ(call.find("reorder"), std::string::npos) << call;
      }
    }
    EXPECT_EQ(pools, 1);
    EXPECT_EQ(gates, 1);
  }
}

// The same ops on plain values: the depthwise result is also read by a
// generated kernel (an output of exp), so it stays plain; the mean reorders
// it in (oneDNN's pooling is jitted channels-last only), the gate computes
// in the plain layout and reorders its result out for the projection. The
// second gate is a graph input shared by the batch ([1, C, 1, 1]).
TEST_F(LibraryCallsTest, SqueezeExciteOnPlainValues) {
  Case c;
  c.ir = std::string(R"IR(graph(%x : Float(2, 40, 9, 9), %wd : Float(40, 1, 3, 3), %w1 : Float(40, 40, 1, 1),
      %wp : Float(16, 40, 1, 1), %shared : Float(1, 40, 1, 1)):)IR") +
         kConvConstants + R"IR(
  %g : int = prim::Constant[value=40]()
  %dims : int[] = prim::Constant[value=[2, 3]]()
  %t : bool = prim::Constant[value=1]()
  %d : Float(2, 40, 9, 9) = aten::convolution(%x, %wd, %n, %s1, %p1, %s1, %f, %p0, %g)
  %h : Float(2, 40, 9, 9) = aten::relu(%d)
  %ex : Float(2, 40, 9, 9) = aten::exp(%h)
  %pool : Float(2, 40, 1, 1) = aten::mean(%h, %dims, %t)
  %e1 : Float(2, 40, 1, 1) = aten::convolution(%pool, %w1, %n, %s1, %p0, %s1, %f, %p0, %g1)
  %gate : Float(2, 40, 1, 1) = aten::sigmoid(%e1)
  %gated : Float(2, 40, 9, 9) = aten::mul(%gate, %h)
  %twice : Float(2, 40, 9, 9) = aten::mul(%gated, %shared)
  %y : Float(2, 16, 9, 9) = aten::convolution(%twice, %wp, %n, %s1, %p0, %s1, %f, %p0, %g1)
  return (%y, %ex))IR";
  c.constants = {{1, Random({40, 1, 3, 3}, 101, 0.3)}, {2, Random({40, 40, 1, 1}, 102, 0.2)},
                 {3, Random({16, 40, 1, 1}, 103, 0.2)}};
  c.inputs = {Random({2, 40, 9, 9}, 104), Random({1, 40, 1, 1}, 105)};
  const LibraryStats st = Check(c, 2);
  EXPECT_EQ(st.library_calls, 6);  // three convolutions, the mean, two gates
  EXPECT_EQ(st.reference_externs, 0);
  std::string pool, first_gate;
  for (const std::string& call : st.calls) {
    if (absl::StartsWith(call, "global_avg_pool")) pool = call;
    if (absl::StartsWith(call, "channel_mul") && first_gate.empty()) first_gate = call;
  }
  EXPECT_NE(pool.find("reorder in"), std::string::npos) << pool;
  // The first gate reads the plain value and writes the second's input,
  // which only library calls touch: computed plain, reordered out.
  EXPECT_NE(first_gate.find("reorder out"), std::string::npos) << first_gate;
}

// x * sigmoid(x) (efficientnet's SiLU), ONNX-style asymmetric pads
// (kiln::conv_nd), a non-constant per-channel gate as a binary post-op, and
// weights that are graph inputs (reordered each call).
TEST_F(LibraryCallsTest, SiluAsymmetricPadsAndRuntimeWeights) {
  Case c;
  c.ir = std::string(R"IR(graph(%x : Float(1, 8, 9, 9), %w : Float(16, 8, 3, 3), %b : Float(16),
      %gate : Float(1, 16, 1, 1), %w2 : Float(16, 16, 3, 3)):)IR") +
         kConvConstants + R"IR(
  %pads : int[] = prim::Constant[value=[0, 1, 1, 2]]()
  %c : Float(1, 16, 8, 10) = kiln::conv_nd(%x, %w, %b, %s1, %pads, %s1, %g1)
  %sg : Float(1, 16, 8, 10) = aten::sigmoid(%c)
  %silu : Float(1, 16, 8, 10) = aten::mul(%c, %sg)
  %c2 : Float(1, 16, 8, 10) = aten::convolution(%silu, %w2, %n, %s1, %p1, %s1, %f, %p0, %g1)
  %y : Float(1, 16, 8, 10) = aten::mul(%c2, %gate)
  return (%y))IR";
  c.constants = {{1, Random({16, 8, 3, 3}, 21, 0.3)}, {2, Random({16}, 22)}};
  c.inputs = {Random({1, 8, 9, 9}, 23), Random({1, 16, 1, 1}, 24), Random({16, 16, 3, 3}, 25, 0.2)};
  const LibraryStats st = Check(c, 2);
  EXPECT_EQ(st.library_calls, 2);
  EXPECT_EQ(st.channels_last_values, 1);  // conv -> conv
}

// Grouped (not depthwise), dilated, stride-2 and 1-D convolutions with
// leaky_relu, clamp and tanh epilogues.
TEST_F(LibraryCallsTest, GroupedDilatedAndOneDimensional) {
  Case c;
  c.ir = std::string(R"IR(graph(%x : Float(2, 8, 11, 13), %w : Float(12, 4, 3, 3), %v : Float(2, 6, 17),
      %w1 : Float(5, 6, 4)):)IR") +
         kConvConstants + R"IR(
  %g2 : int = prim::Constant[value=2]()
  %slope : float = prim::Constant[value=0.2]()
  %lo : float = prim::Constant[value=-0.5]()
  %hi : float = prim::Constant[value=0.75]()
  %st : int[] = prim::Constant[value=[2]]()
  %pd : int[] = prim::Constant[value=[1]]()
  %dl : int[] = prim::Constant[value=[2]]()
  %zp : int[] = prim::Constant[value=[0]]()
  %c : Float(2, 12, 5, 6) = aten::convolution(%x, %w, %n, %s2, %p1, %s2, %f, %p0, %g2)
  %a : Float(2, 12, 5, 6) = aten::leaky_relu(%c, %slope)
  %y : Float(2, 12, 5, 6) = aten::clamp(%a, %lo, %hi)
  %c1 : Float(2, 5, 7) = aten::convolution(%v, %w1, %n, %st, %pd, %dl, %f, %zp, %g1)
  %y1 : Float(2, 5, 7) = aten::tanh(%c1)
  return (%y, %y1))IR";
  c.constants = {{1, Random({12, 4, 3, 3}, 31, 0.3)}, {3, Random({5, 6, 4}, 32, 0.3)}};
  c.inputs = {Random({2, 8, 11, 13}, 33), Random({2, 6, 17}, 34)};
  const LibraryStats st = Check(c, 2);
  EXPECT_EQ(st.library_calls, 2);
}

// GEMMs: linear + the ONNX exporter's GELU, addmm of a transposed weight
// with relu, matmul of a 3-D activation by a constant weight plus a bias
// (folded into the weights' bias), and a batched product of activations.
TEST_F(LibraryCallsTest, Gemms) {
  Case c;
  c.ir = R"IR(graph(%x : Float(4, 16), %w : Float(32, 16), %b : Float(32), %w2 : Float(10, 32), %b2 : Float(10),
      %t : Float(2, 7, 16), %m : Float(16, 24), %bm : Float(24), %q : Float(3, 5, 8), %k : Float(3, 8, 6)):
  %one : int = prim::Constant[value=1]()
  %sq : float = prim::Constant[value=1.4142135381698608]()
  %unit : float = prim::Constant[value=1.]()
  %half : float = prim::Constant[value=0.5]()
  %h : Float(4, 32) = aten::linear(%x, %w, %b)
  %d : Float(4, 32) = aten::div(%h, %sq)
  %e : Float(4, 32) = aten::erf(%d)
  %ap : Float(4, 32) = aten::add(%e, %unit, %one)
  %mu : Float(4, 32) = aten::mul(%h, %ap)
  %gelu : Float(4, 32) = aten::mul(%mu, %half)
  %wt : Float(32, 10) = aten::t(%w2)
  %o : Float(4, 10) = aten::addmm(%b2, %gelu, %wt, %one, %one)
  %y0 : Float(4, 10) = aten::relu(%o)
  %tm : Float(2, 7, 24) = aten::matmul(%t, %m)
  %y1 : Float(2, 7, 24) = aten::add(%bm, %tm, %one)
  %y2 : Float(3, 5, 6) = aten::bmm(%q, %k)
  return (%y0, %y1, %y2))IR";
  c.constants = {{1, Random({32, 16}, 41, 0.3)}, {2, Random({32}, 42)}, {3, Random({10, 32}, 43, 0.3)},
                 {4, Random({10}, 44)},          {6, Random({16, 24}, 45, 0.3)}, {7, Random({24}, 46)}};
  c.inputs = {Random({4, 16}, 47), Random({2, 7, 16}, 48), Random({3, 5, 8}, 49), Random({3, 8, 6}, 50)};
  const LibraryStats st = Check(c, 3);
  EXPECT_EQ(st.library_calls, 4);
  EXPECT_EQ(st.reference_externs, 0);
}

int CountOps(const Case& c, const char* kind) {
  std::unique_ptr<ir::Graph> g = Build(c);
  driver::CompileOptions options;
  absl::StatusOr<driver::CompiledGraph> compiled = driver::CompileGraph(*g, options);
  EXPECT_TRUE(compiled.ok()) << compiled.status();
  int n = 0;
  for (const ir::Node* node : g->nodes()) n += node->kind().qualString() == kind;
  return n;
}

// Attention as vit writes it (q / 8, keys as a transposed view of a packed
// projection), several key blocks (online softmax across them), an additive
// padding mask and a causal -inf mask: the generated attention kernel
// against the interpreter's matmul/softmax/matmul.
TEST_F(LibraryCallsTest, Attention) {
  Case c;
  c.ir = R"IR(graph(%qkv : Float(37, 3, 4, 16), %q2 : Float(2, 3, 40, 128), %k2 : Float(2, 3, 300, 128),
      %v2 : Float(2, 3, 300, 24), %pad : Float(2, 1, 1, 300), %causal : Float(1, 1, 9, 9), %x : Float(1, 9, 8)):
  %eight : float = prim::Constant[value=8.]()
  %quarter : float = prim::Constant[value=0.25]()
  %m1 : int = prim::Constant[value=-1]()
  %one : int = prim::Constant[value=1]()
  %n : NoneType = prim::Constant()
  %i0 : int = prim::Constant[value=0]()
  %i2 : int = prim::Constant[value=2]()
  %p120 : int[] = prim::Constant[value=[1, 2, 0]]()
  %p102 : int[] = prim::Constant[value=[1, 0, 2]]()
  %p0132 : int[] = prim::Constant[value=[0, 1, 3, 2]]()
  %p021 : int[] = prim::Constant[value=[0, 2, 1]]()
  %q : Float(37, 4, 16) = aten::select(%qkv, %one, %i0)
  %k : Float(37, 4, 16) = aten::select(%qkv, %one, %one)
  %v : Float(37, 4, 16) = aten::select(%qkv, %one, %i2)
  %qh : Float(4, 37, 16) = aten::permute(%q, %p102)
  %kt : Float(4, 16, 37) = aten::permute(%k, %p120)
  %vh : Float(4, 37, 16) = aten::permute(%v, %p102)
  %qs : Float(4, 37, 16) = aten::div(%qh, %eight)
  %s : Float(4, 37, 37) = aten::matmul(%qs, %kt)
  %p : Float(4, 37, 37) = aten::softmax(%s, %m1, %n)
  %o : Float(4, 37, 16) = aten::matmul(%p, %vh)
  %k2t : Float(2, 3, 128, 300) = aten::permute(%k2, %p0132)
  %s2 : Float(2, 3, 40, 300) = aten::matmul(%q2, %k2t)
  %s2s : Float(2, 3, 40, 300) = aten::mul(%s2, %quarter)
  %s2m : Float(2, 3, 40, 300) = aten::add(%s2s, %pad, %one)
  %p2 : Float(2, 3, 40, 300) = aten::softmax(%s2m, %m1, %n)
  %o2 : Float(2, 3, 40, 24) = aten::matmul(%p2, %v2)
  %xt : Float(1, 8, 9) = aten::permute(%x, %p021)
  %xx : Float(1, 9, 9) = aten::matmul(%x, %xt)
  %xm : Float(1, 1, 9, 9) = aten::add(%xx, %causal, %one)
  %p3 : Float(1, 1, 9, 9) = aten::softmax(%xm, %m1, %n)
  %x4 : Float(1, 1, 9, 8) = aten::unsqueeze(%x, %one)
  %o3 : Float(1, 1, 9, 8) = aten::matmul(%p3, %x4)
  return (%o, %o2, %o3))IR";
  Tensor pad = Random({2, 1, 1, 300}, 61);
  for (int64_t i = 0; i < 300; ++i) {
    if (i % 7 == 3) pad.data<float>()[i] = -10000.0f;  // padded positions of the first sequence
  }
  Tensor causal = Tensor::Empty(DType::kFloat32, {1, 1, 9, 9});
  for (int64_t i = 0; i < 9; ++i) {
    for (int64_t j = 0; j < 9; ++j) causal.data<float>()[i * 9 + j] = j > i ? -__builtin_inff() : 0.0f;
  }
  c.inputs = {Random({37, 3, 4, 16}, 62), Random({2, 3, 40, 128}, 63), Random({2, 3, 300, 128}, 64),
              Random({2, 3, 300, 24}, 65), pad, causal, Random({1, 9, 8}, 66)};
  // The causal case has a 4-D product of 3-D operands: not the pass's
  // pattern (batch dims differ); the other two fuse.
  EXPECT_EQ(CountOps(c, "kiln::attention"), 2);
  const LibraryStats st = Check(c, 0);
  EXPECT_EQ(st.reference_externs, 0);
  // The driver's report says so too (it once counted every kiln::attention
  // as a reference kernel: the op table has no library for it).
  const Result fused = Compile(c, true);
  EXPECT_EQ(fused.reported_reference_externs, 0) << fused.report;
  EXPECT_NE(fused.report.find("Externs the device generated code for: kiln::attention x2"), std::string::npos)
      << fused.report;
}

// A bfloat16 chain in autocast's form (float32 mask, float32 softmax, cast
// back) fuses too; the CPU's generated kernel takes float32 only, so the op
// runs its reference kernel, which computes the chain it replaced (softmax
// in float32, probabilities rounded to bfloat16): the interpreter's result.
TEST_F(LibraryCallsTest, BFloat16AttentionRunsTheReferenceKernelOnTheCpu) {
  Case c;
  c.ir = R"IR(graph(%q : BFloat16(2, 3, 20, 16), %kt : BFloat16(2, 3, 16, 20), %v : BFloat16(2, 3, 20, 8),
      %pad : Float(2, 1, 1, 20)):
  %quarter : float = prim::Constant[value=0.25]()
  %m1 : int = prim::Constant[value=-1]()
  %one : int = prim::Constant[value=1]()
  %n : NoneType = prim::Constant()
  %bf : int = prim::Constant[value=15]()
  %f : bool = prim::Constant[value=0]()
  %s : BFloat16(2, 3, 20, 20) = aten::matmul(%q, %kt)
  %ss : BFloat16(2, 3, 20, 20) = aten::mul(%s, %quarter)
  %sm : Float(2, 3, 20, 20) = aten::add(%ss, %pad, %one)
  %p : Float(2, 3, 20, 20) = aten::softmax(%sm, %m1, %n)
  %pb : BFloat16(2, 3, 20, 20) = aten::to(%p, %bf, %f, %f, %n)
  %o : BFloat16(2, 3, 20, 8) = aten::matmul(%pb, %v)
  return (%o))IR";
  auto bf16 = [](Tensor t) {
    absl::StatusOr<Tensor> b = runtime::To(t, DType::kBFloat16);
    EXPECT_TRUE(b.ok()) << b.status();
    return b.ok() ? *b : t;
  };
  Tensor pad = Random({2, 1, 1, 20}, 71);
  for (int64_t i = 0; i < 40; ++i) {
    if (i % 5 == 2) pad.data<float>()[i] = -10000.0f;
  }
  c.inputs = {bf16(Random({2, 3, 20, 16}, 72)), bf16(Random({2, 3, 16, 20}, 73)), bf16(Random({2, 3, 20, 8}, 74)),
              pad};
  EXPECT_EQ(CountOps(c, "kiln::attention"), 1);
  const Result fused = Compile(c, true);
  ExpectClose(fused.outputs, Interpret(c), "fused bfloat16");
}

}  // namespace
}  // namespace kiln::testing
