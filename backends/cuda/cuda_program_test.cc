// The CUDA program: wrapper lines resolved into steps (no GPU needed), the
// backend's NVRTC units (NVRTC needs no GPU), and, on a GPU, compiled graphs
// against the interpreter.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "backends/cuda/attention_lines.h"
#include "backends/cuda/conv_epilogue.h"
#include "backends/cuda/cubin_cache.h"
#include "backends/cuda/cublaslt_gemm.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_loader.h"
#include "backends/cuda/cuda_program.h"
#include "backends/cuda/cuda_conv.h"
#include "backends/cuda/cuda_session.h"
#include "backends/cuda/cuda_test_util.h"
#include "backends/cuda/depthwise_conv.h"
#include "backends/cuda/kernel_prelude.h"
#include "backends/cuda/output_difference.h"
#include "backends/cuda/runtime_kernels.h"
#include "gtest/gtest.h"
#include "ir/op_registry.h"
#include "ir/text_parser.h"
#include "passes/shape_functions.h"
#include "runtime/interpreter.h"
#include "runtime/register_kernels.h"
#include "runtime/tensor_ops.h"
#include "support/status.h"
#include "driver/compile_graph.h"

namespace kiln::backends::cuda {
namespace {

using test::CompileForCuda;
using test::Random;
using test::RegisterAll;

std::string CacheDir() {
  const char* t = std::getenv("TEST_TMPDIR");
  return absl::StrCat(t != nullptr ? t : "/tmp", "/cuda_program_test_cache");
}

// add/tanh, a row sum, a matmul (extern), a transpose view.
constexpr char kMixed[] = R"(graph(%x : Float(8, 16), %w : Float(16, 4)):
  %one : int = prim::Constant[value=1]()
  %d : int[] = prim::Constant[value=[-1]]()
  %f : bool = prim::Constant[value=0]()
  %n : NoneType = prim::Constant()
  %a : Tensor = aten::add(%x, %x, %one)
  %t : Tensor = aten::tanh(%a)
  %m : Tensor = aten::mm(%t, %w)
  %mt : Tensor = aten::t(%m)
  %s : Tensor = aten::sum(%mt, %d, %f, %n)
  return (%s, %m))";

TEST(ResolveProgramTest, StepsFollowTheLines) {
  RegisterAll();
  absl::StatusOr<driver::CompiledGraph> c = CompileForCuda(kMixed, nullptr, /*generate_only=*/true);
  ASSERT_TRUE(c.ok()) << c.status();
  absl::StatusOr<ResolvedProgram> r = ResolveProgram(c->program);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->input_slots.size(), 2u);
  EXPECT_EQ(r->output_slots.size(), 2u);
  EXPECT_EQ(r->kernel_names.size(), static_cast<size_t>(c->num_kernels));
  int launches = 0, externs = 0, aliases = 0;
  for (const ProgramStep& s : r->steps) {
    launches += s.kind == ProgramStep::Kind::kLaunch;
    externs += s.kind == ProgramStep::Kind::kExtern;
    aliases += s.kind == ProgramStep::Kind::kAlias;
  }
  EXPECT_EQ(launches, c->num_kernels);
  EXPECT_EQ(externs, 1);
  (void)aliases;  // views are read in place by kernels; no ReinterpretLine needed here
  ASSERT_EQ(r->externs.size(), 1u);
  EXPECT_TRUE(absl::StartsWith(r->externs[0].op, "aten::mm")) << r->externs[0].op;
  EXPECT_EQ(r->externs[0].buffer_slots.size(), 2u);
  for (size_t i = 0; i < r->slot_names.size(); ++i) {
    EXPECT_EQ(r->slot_layouts[i].sizes.size(), r->slot_layouts[i].strides.size()) << r->slot_names[i];
  }
}

TEST(ResolveProgramTest, RejectsUndefinedKernelsAndUnknownBuffers) {
  RegisterAll();
  absl::StatusOr<driver::CompiledGraph> c = CompileForCuda(kMixed, nullptr, /*generate_only=*/true);
  ASSERT_TRUE(c.ok());
  wrapper::WrapperProgram p = c->program;
  p.lines.push_back(wrapper::KernelCallLine{"no_such_kernel", "cuda", {}});
  EXPECT_TRUE(absl::StrContains(ResolveProgram(p).status().message(), "undefined kernel"));
  p = c->program;
  p.lines.push_back(wrapper::FreeLine{"no_such_buffer"});
  EXPECT_TRUE(absl::StrContains(ResolveProgram(p).status().message(), "no_such_buffer"));
  p = c->program;
  p.outputs.push_back("missing_output");
  EXPECT_FALSE(ResolveProgram(p).ok());
}

TEST(CudaCodegenTest, MergesKernelsSharingThePreludeIntoUnits) {
  CudaBackendOptions options;
  options.kernels_per_unit = 2;
  CudaCodegen codegen("cuda", options);
  std::vector<CudaKernelSource> kernels(5);
  for (int i = 0; i < 5; ++i) {
    kernels[static_cast<size_t>(i)].name = absl::StrCat("k", i);
    kernels[static_cast<size_t>(i)].source =
        i == 4 ? "extern \"C\" __global__ void k4() {}\n"
               : absl::StrCat(CudaKernelPrelude(), "extern \"C\" __global__ void k", i, "() {}\n");
  }
  std::vector<CudaCodegen::Unit> units = codegen.MakeUnits(kernels);
  ASSERT_EQ(units.size(), 3u);  // k4 alone, {k0,k1}, {k2,k3}
  EXPECT_EQ(units[0].kernels, std::vector<std::string>{"k4"});
  EXPECT_EQ(units[1].kernels, (std::vector<std::string>{"k0", "k1"}));
  EXPECT_EQ(units[2].kernels, (std::vector<std::string>{"k2", "k3"}));
  EXPECT_TRUE(absl::StartsWith(units[1].source, CudaKernelPrelude()));
  // The prelude appears once per unit.
  const std::string prelude = CudaKernelPrelude();
  EXPECT_EQ(units[1].source.find(prelude, 1), std::string::npos);
  EXPECT_EQ(codegen.NvrtcOptions()[0].rfind("--gpu-architecture=sm_", 0), 0u);
}

// The default: units balanced over the compile threads (two per thread at
// most), kernels dealt longest first to the lightest unit, heaviest unit first.
TEST(CudaCodegenTest, BalancesKernelsOverTheCompileThreads) {
  CudaBackendOptions options;
  options.hardware_threads = 2;
  options.max_threads = 8;  // capped by the hardware: 2 threads, 4 units
  CudaCodegen codegen("cuda", options);
  EXPECT_EQ(codegen.CompileThreads(), 2);
  // Bodies of 100, 10, 60, 50, 45 and 40 characters.
  const int lengths[] = {100, 10, 60, 50, 45, 40};
  std::vector<CudaKernelSource> kernels;
  for (int i = 0; i < 6; ++i) {
    CudaKernelSource k;
    k.name = absl::StrCat("k", i);
    k.source = absl::StrCat(CudaKernelPrelude(), std::string(static_cast<size_t>(lengths[i]), ' '));
    kernels.push_back(std::move(k));
  }
  std::vector<CudaCodegen::Unit> units = codegen.MakeUnits(kernels);
  ASSERT_EQ(units.size(), 4u);
  // 100 | 60 | 50 + 10 | 45 + 40, heaviest first.
  EXPECT_EQ(units[0].kernels, std::vector<std::string>{"k0"});
  EXPECT_EQ(units[1].kernels, (std::vector<std::string>{"k4", "k5"}));
  EXPECT_EQ(units[2].kernels, std::vector<std::string>{"k2"});
  EXPECT_EQ(units[3].kernels, (std::vector<std::string>{"k3", "k1"}));
  for (const CudaCodegen::Unit& u : units) EXPECT_TRUE(absl::StartsWith(u.source, CudaKernelPrelude()));
  // Fewer kernels than units: one kernel per unit.
  kernels.resize(3);
  EXPECT_EQ(codegen.MakeUnits(kernels).size(), 3u);
  EXPECT_TRUE(codegen.MakeUnits({}).empty());
}

// `text` compiled up to the Wrapper IR, its kernels regenerated by
// `codegen` (CompileGraph's codegen instance is gone after it returns), so
// that codegen.Compile can build the program's NVRTC units.
absl::StatusOr<wrapper::WrapperProgram> WrapperFromOwnCodegen(const std::string& text, CudaCodegen& codegen) {
  ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> graph, ir::ParseGraph(text));
  driver::CompileOptions options;
  options.device = "cuda";
  options.generate_only = true;
  ASSIGN_OR_RETURN(driver::CompiledGraph c, driver::CompileGraph(*graph, options));
  return wrapper::GenerateWrapper(c.loop_graph, c.schedule, codegen);
}

// Kernel generation + NVRTC for the whole program, without a GPU: the
// compile succeeds up to loading, which reports the device unavailable.
TEST(CudaCodegenTest, CompilesEveryKernelWithNvrtc) {
  RegisterAll();
  if (!LoadCudaLibraries().nvrtc_status.ok()) GTEST_SKIP() << LoadCudaLibraries().nvrtc_status;
  if (CudaDevice().is_available()) GTEST_SKIP() << "covered by the GPU tests";
  CudaBackendOptions backend;
  backend.cache_dir = CacheDir();
  CudaCodegen codegen("cuda", backend);
  absl::StatusOr<wrapper::WrapperProgram> program = WrapperFromOwnCodegen(kMixed, codegen);
  ASSERT_TRUE(program.ok()) << program.status();
  absl::StatusOr<std::unique_ptr<wrapper::CompiledProgram>> compiled = codegen.Compile(*program);
  ASSERT_FALSE(compiled.ok());
  EXPECT_TRUE(absl::IsUnavailable(compiled.status())) << compiled.status();
  EXPECT_TRUE(absl::StrContains(compiled.status().message(), "compiled for --gpu-architecture=sm_90"))
      << compiled.status();
  // A program whose kernels this codegen did not generate is refused.
  CudaCodegen other("cuda", backend);
  EXPECT_TRUE(absl::IsFailedPrecondition(other.Compile(*program).status()));
  // kernels.cu without a device: the prelude once, each distinct kernel
  // once, one unit NVRTC compiles.
  const std::string file = KernelsFileWithoutDevice(*program);
  const std::string& prelude = CudaKernelPrelude();
  const size_t at = file.find(prelude);
  ASSERT_NE(at, std::string::npos);
  EXPECT_EQ(file.find(prelude, at + 1), std::string::npos);
  std::set<std::string> names;
  int definitions = 0;
  for (const wrapper::Line& line : program->lines) {
    const auto* def = std::get_if<wrapper::KernelDefinitionLine>(&line);
    if (def == nullptr) continue;
    ++definitions;
    const size_t mark = def->kernel_body.find("// kiln kernel ");
    ASSERT_NE(mark, std::string::npos);
    const std::string name = def->kernel_body.substr(mark, def->kernel_body.find('\n', mark) - mark);
    if (!names.insert(name).second) continue;
    const size_t first = file.find(name + "\n");
    EXPECT_NE(first, std::string::npos) << name;
    EXPECT_EQ(file.find(name + "\n", first + 1), std::string::npos) << name;
  }
  EXPECT_GT(definitions, 0);
  EXPECT_TRUE(absl::StrContains(file, absl::StrCat(names.size(), " distinct kernels"))) << file.substr(0, 300);
  absl::StatusOr<std::string> cubin = CompileWithNvrtc(file, {"--gpu-architecture=sm_90", "-std=c++17"});
  EXPECT_TRUE(cubin.ok()) << cubin.status();
}

// A bert-like attention block over `type` ("Float", "BFloat16"): q, k, v as
// head views of one QKV projection [2, 37, 3*2*32] (no copies), kt = k
// transposed, scores scaled, a padding mask [2, 1, 1, 37] added, softmax,
// product with v. For BFloat16 it is autocast's form: the float32 mask
// promotes the scores, the softmax runs in float32 and is cast back.
std::string AttentionGraphText(const std::string& type) {
  const bool narrow = type != "Float";
  return absl::StrCat(
      "graph(%qkv : ", type, "(2, 37, 192), %mask : Float(2, 1, 1, 37)):\n"
      "  %shape : int[] = prim::Constant[value=[2, 37, 3, 2, 32]]()\n"
      "  %perm : int[] = prim::Constant[value=[2, 0, 3, 1, 4]]()\n"
      "  %z : int = prim::Constant[value=0]()\n"
      "  %one : int = prim::Constant[value=1]()\n"
      "  %two : int = prim::Constant[value=2]()\n"
      "  %m1 : int = prim::Constant[value=-1]()\n"
      "  %m2 : int = prim::Constant[value=-2]()\n"
      "  %c : float = prim::Constant[value=0.17677669529663687]()\n"
      "  %n : NoneType = prim::Constant()\n"
      "  %bf : int = prim::Constant[value=15]()\n"
      "  %f : bool = prim::Constant[value=0]()\n"
      "  %r : Tensor = aten::reshape(%qkv, %shape)\n"
      "  %p5 : Tensor = aten::permute(%r, %perm)\n"
      "  %q : Tensor = aten::select(%p5, %z, %z)\n"
      "  %k : Tensor = aten::select(%p5, %z, %one)\n"
      "  %v : Tensor = aten::select(%p5, %z, %two)\n"
      "  %kt : Tensor = aten::transpose(%k, %m1, %m2)\n"
      "  %s : Tensor = aten::matmul(%q, %kt)\n"
      "  %ss : Tensor = aten::mul(%s, %c)\n"
      "  %sm : Tensor = aten::add(%ss, %mask, %one)\n"
      "  %pr : Tensor = aten::softmax(%sm, %m1, %n)\n",
      narrow ? "  %pb : Tensor = aten::to(%pr, %bf, %f, %f, %n)\n  %o : Tensor = aten::matmul(%pb, %v)\n"
             : "  %o : Tensor = aten::matmul(%pr, %v)\n",
      "  return (%o)\n");
}

// Without a GPU: the CUDA pipeline fuses the chain into kiln::attention,
// the codegen turns it into a generated kernel (a launch, no extern), the
// whole program (attention kernel included) compiles with NVRTC, and
// KILN_CUDA_ATTENTION=0 leaves the chain unfused.
TEST(CudaCodegenTest, AttentionBecomesAGeneratedKernel) {
  RegisterAll();
  {
    // float32 graphs keep GEMMs + softmax unless asked (FuseAttentionIn).
    absl::StatusOr<driver::CompiledGraph> c =
        CompileForCuda(AttentionGraphText("Float"), nullptr, /*generate_only=*/true);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_FALSE(absl::StrContains(c->program.ToString(), "kiln::attention"));
  }
  test::ScopedEnv every_dtype("KILN_CUDA_ATTENTION", "1");
  for (const char* type : {"Float", "BFloat16"}) {
    SCOPED_TRACE(type);
    absl::StatusOr<driver::CompiledGraph> c = CompileForCuda(AttentionGraphText(type), nullptr, /*generate_only=*/true);
    ASSERT_TRUE(c.ok()) << c.status();
    int attention_lines = 0;
    for (const wrapper::Line& line : c->program.lines) {
      const auto* e = std::get_if<wrapper::ExternKernelLine>(&line);
      attention_lines += e != nullptr && e->op == "kiln::attention";
    }
    EXPECT_EQ(attention_lines, 1) << c->program.ToString();
    absl::StatusOr<AttentionLowering> lowered = LowerAttentionExterns(c->program);
    ASSERT_TRUE(lowered.ok()) << lowered.status();
    EXPECT_EQ(lowered->fused, 1);
    EXPECT_EQ(AttentionSummary(*lowered), "attention: 1 kiln::attention calls as generated flash-attention kernels");
    EXPECT_TRUE(lowered->refused.empty()) << lowered->refused[0];
    absl::StatusOr<ResolvedProgram> r = ResolveProgram(lowered->program);
    ASSERT_TRUE(r.ok()) << r.status();
    for (const ExternStep& e : r->externs) EXPECT_NE(e.op, "kiln::attention");
    EXPECT_NE(std::find(r->kernel_names.begin(), r->kernel_names.end(), "kiln_attention_0"), r->kernel_names.end());
    const std::string file = KernelsFileWithoutDevice(c->program);
    EXPECT_TRUE(absl::StrContains(file, std::string(type) == "Float" ? "float32 FMA" : "tensor cores"));
    {
      test::ScopedEnv off("KILN_CUDA_ATTENTION", "0");
      absl::StatusOr<driver::CompiledGraph> plain =
          CompileForCuda(AttentionGraphText(type), nullptr, /*generate_only=*/true);
      ASSERT_TRUE(plain.ok()) << plain.status();
      EXPECT_FALSE(absl::StrContains(plain->program.ToString(), "kiln::attention"));
    }
    if (!LoadCudaLibraries().nvrtc_status.ok() || CudaDevice().is_available()) continue;
    CudaBackendOptions backend;
    backend.cache_dir = CacheDir();
    CudaCodegen codegen("cuda", backend);
    absl::StatusOr<wrapper::WrapperProgram> program = WrapperFromOwnCodegen(AttentionGraphText(type), codegen);
    ASSERT_TRUE(program.ok()) << program.status();
    absl::StatusOr<std::unique_ptr<wrapper::CompiledProgram>> compiled = codegen.Compile(*program);
    EXPECT_TRUE(absl::IsUnavailable(compiled.status())) << compiled.status();
    absl::StatusOr<std::string> cubin = CompileWithNvrtc(file, {"--gpu-architecture=sm_90", "-std=c++17"});
    EXPECT_TRUE(cubin.ok()) << cubin.status();
  }
}

// A head dim the kernel does not take (160 > 128): the call stays a
// kiln::attention extern (the host's reference kernel) and the summary
// says why.
TEST(CudaCodegenTest, AttentionTheKernelRefusesStaysAnExternWithItsReason) {
  RegisterAll();
  test::ScopedEnv every_dtype("KILN_CUDA_ATTENTION", "1");
  absl::StatusOr<driver::CompiledGraph> c = CompileForCuda(R"IR(graph(%q : Float(1, 2, 8, 160), %kt : Float(1, 2, 160, 8), %v : Float(1, 2, 8, 160)):
  %m1 : int = prim::Constant[value=-1]()
  %n : NoneType = prim::Constant()
  %s : Tensor = aten::matmul(%q, %kt)
  %p : Tensor = aten::softmax(%s, %m1, %n)
  %o : Tensor = aten::matmul(%p, %v)
  return (%o))IR", nullptr, /*generate_only=*/true);
  ASSERT_TRUE(c.ok()) << c.status();
  absl::StatusOr<AttentionLowering> lowered = LowerAttentionExterns(c->program);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  EXPECT_EQ(lowered->fused, 0);
  ASSERT_EQ(lowered->refused.size(), 1u);
  EXPECT_TRUE(absl::StrContains(lowered->refused[0], "head dims 160/160 above 128")) << lowered->refused[0];
  EXPECT_TRUE(absl::StrContains(AttentionSummary(*lowered), "1 left to the host's reference kernel"));
  absl::StatusOr<ResolvedProgram> r = ResolveProgram(lowered->program);
  ASSERT_TRUE(r.ok()) << r.status();
  int externs = 0;
  for (const ExternStep& e : r->externs) externs += e.op == "kiln::attention";
  EXPECT_EQ(externs, 1);
}

// linear, gelu, layer_norm, mm with a transpose, softmax over `type`
// ("BFloat16", "Half") tensors.
std::string NarrowGraphText(const std::string& type) {
  return absl::StrCat(
        "graph(%x : ", type, "(32, 64), %w : ", type, "(64, 64), %b : ", type, "(64), %g : ", type, "(64), %h : ",
        type, "(64)):\n"
        "  %approx : str = prim::Constant[value=\"none\"]()\n"
        "  %shape : int[] = prim::Constant[value=[64]]()\n"
        "  %eps : float = prim::Constant[value=1.0000000000000001e-05]()\n"
        "  %f : bool = prim::Constant[value=0]()\n"
        "  %d : int = prim::Constant[value=-1]()\n"
        "  %n : NoneType = prim::Constant()\n"
        "  %y : Tensor = aten::linear(%x, %w, %b)\n"
        "  %a : Tensor = aten::gelu(%y, %approx)\n"
        "  %l : Tensor = aten::layer_norm(%a, %shape, %g, %h, %eps, %f)\n"
        "  %t : Tensor = aten::t(%l)\n"
        "  %s : Tensor = aten::mm(%l, %t)\n"
        "  %p : Tensor = aten::softmax(%s, %d, %n)\n"
        "  return (%p, %l)\n");
}

// Without a GPU: the narrow graph lowers into kernels (and two cuBLAS
// externs), no island, and every kernel compiles with NVRTC.
TEST(CudaCodegenTest, NarrowFloatGraphsLowerIntoKernels) {
  RegisterAll();
  for (const char* type : {"BFloat16", "Half"}) {
    absl::StatusOr<driver::CompiledGraph> c = CompileForCuda(NarrowGraphText(type), nullptr, /*generate_only=*/true);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->num_islands, 0);
    EXPECT_EQ(c->num_externs, 2) << "linear and mm";
    EXPECT_GE(c->num_kernels, 3);
    if (!LoadCudaLibraries().nvrtc_status.ok()) continue;
    for (const wrapper::Line& line : c->program.lines) {
      const auto* def = std::get_if<wrapper::KernelDefinitionLine>(&line);
      if (def == nullptr) continue;
      absl::StatusOr<std::string> cubin = CompileWithNvrtc(def->kernel_body, {"--gpu-architecture=sm_90", "-std=c++17"});
      EXPECT_TRUE(cubin.ok()) << cubin.status();
    }
  }
}

// Every runtime-kernel unit compiles on its own (the prelude + its body),
// as GetRuntimeFunction compiles it.
TEST(CudaCodegenTest, RuntimeKernelUnitsCompileWithNvrtc) {
  if (!LoadCudaLibraries().nvrtc_status.ok()) GTEST_SKIP() << LoadCudaLibraries().nvrtc_status;
  std::vector<std::pair<std::string, const std::string*>> units = {{"base", &RuntimeKernelSource()},
                                                                    {"epilogue", &EpilogueKernelSource()},
                                                                    {"difference", &DifferenceKernelSource()}};
  for (int t = 0; t < 3; ++t) {
    for (int k = 0; k < static_cast<int>(std::size(kDepthwiseSizes)); ++k) {
      for (int s = 0; s < static_cast<int>(std::size(kDepthwiseStrides)); ++s) {
        for (const bool nhwc : {false, true}) {
          units.emplace_back(DepthwiseKernelName(t, kDepthwiseSizes[k], kDepthwiseStrides[s], nhwc),
                             &DepthwiseKernelSource(t, k, s, nhwc));
        }
      }
    }
  }
  for (const auto& [name, body] : units) {
    absl::StatusOr<std::string> cubin =
        CompileWithNvrtc(absl::StrCat(RuntimeKernelPrelude(), *body), {"--gpu-architecture=sm_90", "-std=c++17"});
    EXPECT_TRUE(cubin.ok()) << name << ": " << cubin.status();
  }
}

// What the copy kernel does with a plan, on the host: unit i of the
// output from the view's unit at the unravelled index (the kernel's loop).
std::vector<unsigned char> CopyByPlan(const ContiguousCopyPlan& plan, const std::vector<unsigned char>& memory,
                                      CUdeviceptr base) {
  std::vector<unsigned char> out(static_cast<size_t>(plan.units * plan.unit_bytes));
  for (int64_t i = 0; i < plan.units; ++i) {
    int64_t rem = i, at = 0;
    for (int d = plan.view.rank - 1; d >= 0; --d) {
      at += (rem % plan.view.sizes[d]) * plan.view.strides[d];
      rem /= plan.view.sizes[d];
    }
    const size_t from = static_cast<size_t>(plan.src - base) + static_cast<size_t>(at * plan.unit_bytes);
    std::copy_n(memory.begin() + static_cast<std::ptrdiff_t>(from), plan.unit_bytes,
                out.begin() + static_cast<std::ptrdiff_t>(i * plan.unit_bytes));
  }
  return out;
}

TEST(RuntimeKernelsTest, ContiguousCopyPlansWideUnitsAndMatchesTheView) {
  struct PlanCase {
    std::string name;
    DType dtype;
    std::vector<int64_t> sizes, strides;
    int64_t offset;
    int unit_bytes, rank;
  };
  const std::vector<PlanCase> cases = {
      // The heads of a [B, S, 3*H*D] projection viewed [B, H, S, D] (bf16 q/v): 8 elements a unit.
      {"bf16_heads", DType::kBFloat16, {2, 3, 5, 64}, {5 * 576, 64, 576, 1}, 128, 16, 4},
      {"f32_heads", DType::kFloat32, {2, 3, 5, 64}, {5 * 576, 64, 576, 1}, 64, 16, 4},
      {"half_contiguous_merges", DType::kFloat16, {4, 6, 8}, {48, 8, 1}, 0, 16, 1},
      // Odd rows (vit's 197): one element a unit; size-1 dims dropped.
      {"bf16_odd_rows", DType::kBFloat16, {2, 1, 7, 197}, {5000, 5000, 600, 1}, 0, 2, 3},
      {"bf16_odd_rows_merge", DType::kBFloat16, {2, 7, 197}, {7 * 600, 600, 1}, 0, 2, 2},
      // A misaligned start: narrower units.
      {"bf16_offset_by_two", DType::kBFloat16, {3, 16}, {40, 1}, 2, 4, 2},
      // Transposed innermost dim: element by element.
      {"f32_transposed", DType::kFloat32, {5, 6}, {1, 5}, 0, 4, 2},
      {"i64_heads", DType::kInt64, {2, 4, 6}, {48, 6, 12}, 0, 8, 3},
  };
  for (const PlanCase& c : cases) {
    SCOPED_TRACE(c.name);
    lowering::Layout l;
    l.dtype = c.dtype;
    l.sizes = c.sizes;
    l.strides = c.strides;
    l.offset = c.offset;
    const int64_t elem = static_cast<int64_t>(DTypeSize(c.dtype));
    int64_t span = 0, n = 1;
    for (size_t d = 0; d < c.sizes.size(); ++d) {
      span += (c.sizes[d] - 1) * c.strides[d];
      n *= c.sizes[d];
    }
    const CUdeviceptr base = 0x10000, dst = 0x80000;
    absl::StatusOr<ContiguousCopyPlan> plan = PlanContiguousCopy(l, base, dst);
    ASSERT_TRUE(plan.ok()) << plan.status();
    EXPECT_EQ(plan->unit_bytes, c.unit_bytes);
    EXPECT_EQ(plan->view.rank, c.rank);
    EXPECT_EQ(plan->units * plan->unit_bytes, n * elem);
    std::vector<unsigned char> memory(static_cast<size_t>((c.offset + span + 1) * elem));
    for (size_t i = 0; i < memory.size(); ++i) memory[i] = static_cast<unsigned char>(i * 7 + i / 251);
    // The reference: element by element, row-major over the view.
    std::vector<unsigned char> want;
    for (int64_t i = 0; i < n; ++i) {
      int64_t rem = i, at = c.offset;
      for (size_t d = c.sizes.size(); d-- > 0;) {
        at += (rem % c.sizes[d]) * c.strides[d];
        rem /= c.sizes[d];
      }
      want.insert(want.end(), memory.begin() + at * elem, memory.begin() + (at + 1) * elem);
    }
    EXPECT_EQ(CopyByPlan(*plan, memory, base), want);
  }
  lowering::Layout bad;
  bad.dtype = DType::kUInt8;
  bad.sizes = {4};
  bad.strides = {1};
  EXPECT_FALSE(PlanContiguousCopy(bad, 0, 0).ok());
}

// ---------------------------------------------------------------- GPU

// Expects `got` to match the interpreter's outputs of `graph` on `inputs`.
void ExpectMatchesInterpreter(const ir::Graph& graph, const std::vector<Tensor>& inputs,
                              const std::vector<Tensor>& got, double tol) {
  std::vector<ir::IValue> args;
  for (const Tensor& t : inputs) args.push_back(ir::IValue::FromTensor(t));
  absl::StatusOr<std::vector<ir::IValue>> want = runtime::RunGraph(graph, args);
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_EQ(got.size(), want->size());
  for (size_t o = 0; o < got.size(); ++o) {
    const Tensor& w = (*want)[o].toTensor();
    ASSERT_EQ(got[o].sizes(), w.sizes());
    for (int64_t i = 0; i < w.numel(); ++i) {
      ASSERT_NEAR(got[o].GetDouble(i), w.GetDouble(i), tol) << "output " << o << " element " << i;
    }
  }
}


TEST(CudaProgramGpuTest, MixedGraphMatchesTheInterpreter) {
  RegisterAll();
  if (!CudaDevice().is_available()) GTEST_SKIP() << "no CUDA device: " << CudaDevice::UnavailableReason();
  std::unique_ptr<ir::Graph> graph;
  absl::StatusOr<driver::CompiledGraph> c = CompileForCuda(kMixed, &graph);
  ASSERT_TRUE(c.ok()) << c.status();
  std::vector<Tensor> inputs = {Random({8, 16}, 1), Random({16, 4}, 2)};
  for (int run = 0; run < 2; ++run) {  // the second run reuses cached blocks
    absl::StatusOr<std::vector<Tensor>> got = c->compiled->Run(inputs);
    ASSERT_TRUE(got.ok()) << got.status();
    ExpectMatchesInterpreter(*graph, inputs, *got, 1e-4);
  }
  auto* program = dynamic_cast<CudaProgram*>(c->compiled.get());
  ASSERT_NE(program, nullptr);
  EXPECT_EQ(program->stats().cublas_calls.load(), 2);
  EXPECT_EQ(program->stats().host_fallbacks.load(), 0);
}

// Sessions: inputs uploaded once, the second call captured as a CUDA graph
// and replayed; every replay's outputs match the interpreter, also after
// other work reused the allocator's blocks in between.
TEST(CudaProgramGpuTest, SessionCapturesAGraphAndReplaysIt) {
  RegisterAll();
  if (!CudaDevice().is_available()) GTEST_SKIP() << "no CUDA device: " << CudaDevice::UnavailableReason();
  std::unique_ptr<ir::Graph> graph;
  absl::StatusOr<driver::CompiledGraph> c = CompileForCuda(kMixed, &graph);
  ASSERT_TRUE(c.ok()) << c.status();
  auto* program = dynamic_cast<CudaProgram*>(c->compiled.get());
  ASSERT_NE(program, nullptr);
  std::vector<Tensor> inputs = {Random({8, 16}, 3), Random({16, 4}, 4)};
  absl::StatusOr<std::unique_ptr<CudaSession>> session =
      CudaSession::Create(*program, inputs, CudaSessionOptions{/*cuda_graphs=*/true});
  ASSERT_TRUE(session.ok()) << session.status();
  for (int call = 0; call < 4; ++call) {
    ASSERT_TRUE((*session)->Run().ok());
    EXPECT_EQ((*session)->replaying_graph(), call >= 1) << "call " << call;
    // Unrelated work between replays takes blocks from the allocator.
    ASSERT_TRUE(program->Run({Random({8, 16}, 100 + call), Random({16, 4}, 200 + call)}).ok());
    absl::StatusOr<std::vector<Tensor>> got = (*session)->FetchOutputs();
    ASSERT_TRUE(got.ok()) << got.status();
    ExpectMatchesInterpreter(*graph, inputs, *got, 1e-4);
  }
  ASSERT_EQ((*session)->Notes().size(), 2u);
  EXPECT_TRUE(absl::StrContains((*session)->Notes()[0], "1 cuBLAS calls")) << (*session)->Notes()[0];
  EXPECT_TRUE(absl::StrContains((*session)->Notes()[1], "captured")) << (*session)->Notes()[1];
  absl::StatusOr<std::vector<double>> ms = (*session)->Time(5);
  ASSERT_TRUE(ms.ok()) << ms.status();
  EXPECT_EQ(ms->size(), 5u);
  absl::StatusOr<std::vector<wrapper::StepProfile>> profile = (*session)->Profile(2);
  ASSERT_TRUE(profile.ok()) << profile.status();
  int kernels = 0, cublas = 0;
  for (const wrapper::StepProfile& p : *profile) {
    EXPECT_EQ(p.calls, 2) << p.name;
    kernels += p.kind == std::string("kernel");
    cublas += p.kind == std::string("cublas");
  }
  EXPECT_EQ(cublas, 1);
  EXPECT_EQ(kernels, c->num_kernels);
}

// A host fallback inside the program: no capture, and the note says why.
TEST(CudaProgramGpuTest, SessionWithAHostFallbackStaysEager) {
  RegisterAll();
  if (!CudaDevice().is_available()) GTEST_SKIP() << "no CUDA device: " << CudaDevice::UnavailableReason();
  // cumsum has no GPU kernel: it runs on the host through its reference kernel.
  constexpr char kText[] = R"(graph(%x : Float(4, 8)):
  %d : int = prim::Constant[value=1]()
  %n : NoneType = prim::Constant()
  %c : Tensor = aten::cumsum(%x, %d, %n)
  %t : Tensor = aten::tanh(%c)
  return (%t))";
  std::unique_ptr<ir::Graph> graph;
  absl::StatusOr<driver::CompiledGraph> c = CompileForCuda(kText, &graph);
  ASSERT_TRUE(c.ok()) << c.status();
  auto* program = dynamic_cast<CudaProgram*>(c->compiled.get());
  ASSERT_NE(program, nullptr);
  std::vector<Tensor> inputs = {Random({4, 8}, 5)};
  absl::StatusOr<std::unique_ptr<CudaSession>> session =
      CudaSession::Create(*program, inputs, CudaSessionOptions{/*cuda_graphs=*/true});
  ASSERT_TRUE(session.ok()) << session.status();
  absl::StatusOr<std::vector<double>> ms = (*session)->Time(3);
  ASSERT_TRUE(ms.ok()) << ms.status();
  EXPECT_FALSE((*session)->replaying_graph());
  ASSERT_EQ((*session)->Notes().size(), 2u);
  EXPECT_TRUE(absl::StrContains((*session)->Notes()[0], "1 host fallbacks")) << (*session)->Notes()[0];
  EXPECT_TRUE(absl::StrContains((*session)->Notes()[1], "host fallback inside (aten::cumsum"))
      << (*session)->Notes()[1];
  absl::StatusOr<std::vector<Tensor>> got = (*session)->FetchOutputs();
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectMatchesInterpreter(*graph, inputs, *got, 1e-4);
}

// Convolutions through cuDNN (when it loads) or kiln's depthwise kernel
// (depthwise_conv.h) in full float32 against the interpreter: plain,
// strided + padded + dilated, grouped, depthwise, 1-D; with and without bias.
TEST(CudaProgramGpuTest, ConvolutionsMatchTheInterpreter) {
  RegisterAll();
  if (!CudaDevice().is_available()) GTEST_SKIP() << "no CUDA device: " << CudaDevice::UnavailableReason();
  struct Case {
    const char* name;
    std::vector<int64_t> x, w;
    bool bias;
    const char* stride;
    const char* pad;
    const char* dilation;
    int groups;
    bool kiln_depthwise = false;  // kiln's depthwise kernel takes it, not cuDNN
  };
  const Case cases[] = {
      {"3x3", {2, 8, 12, 12}, {16, 8, 3, 3}, true, "[1, 1]", "[1, 1]", "[1, 1]", 1},
      {"strided_dilated", {1, 4, 15, 17}, {6, 4, 3, 3}, false, "[2, 2]", "[2, 1]", "[2, 1]", 1},
      {"grouped", {2, 8, 9, 9}, {8, 4, 3, 3}, true, "[1, 1]", "[1, 1]", "[1, 1]", 2},
      {"depthwise", {2, 8, 10, 10}, {8, 1, 3, 3}, true, "[2, 2]", "[1, 1]", "[1, 1]", 8, true},
      {"depthwise_7x7", {2, 8, 13, 11}, {8, 1, 7, 7}, false, "[1, 1]", "[3, 3]", "[1, 1]", 8, true},
      {"depthwise_multiplier", {2, 4, 9, 9}, {8, 1, 5, 5}, true, "[2, 2]", "[2, 2]", "[1, 1]", 4, true},
      {"depthwise_dilated", {2, 8, 10, 10}, {8, 1, 3, 3}, true, "[1, 1]", "[2, 2]", "[2, 2]", 8},
      {"pointwise", {3, 16, 7, 7}, {32, 16, 1, 1}, true, "[1, 1]", "[0, 0]", "[1, 1]", 1},
      {"1d", {2, 6, 20}, {4, 6, 5}, true, "[1]", "[2]", "[1]", 1},
  };
  const bool tf32 = CudaDevice::ConvTf32();
  CudaDevice::SetConvTf32(false);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto shape = [](const std::vector<int64_t>& s) {
      std::string t;
      for (size_t i = 0; i < s.size(); ++i) absl::StrAppend(&t, i ? ", " : "", s[i]);
      return t;
    };
    const bool one_d = c.x.size() == 3;
    const std::string text = absl::StrCat(
        "graph(%x : Float(", shape(c.x), "), %w : Float(", shape(c.w), ")", c.bias ? absl::StrCat(", %b : Float(", c.w[0], ")") : "",
        "):\n  %s : int[] = prim::Constant[value=", c.stride, "]()\n  %p : int[] = prim::Constant[value=", c.pad,
        "]()\n  %d : int[] = prim::Constant[value=", c.dilation, "]()\n  %g : int = prim::Constant[value=", c.groups,
        "]()\n", c.bias ? "" : "  %b : NoneType = prim::Constant()\n", "  %y : Tensor = aten::", one_d ? "conv1d" : "conv2d",
        "(%x, %w, %b, %s, %p, %d, %g)\n  %r : Tensor = aten::relu(%y)\n  return (%r)\n");
    std::unique_ptr<ir::Graph> graph;
    absl::StatusOr<driver::CompiledGraph> compiled = CompileForCuda(text, &graph);
    ASSERT_TRUE(compiled.ok()) << compiled.status() << "\n" << text;
    EXPECT_EQ(compiled->num_reference_externs, 0) << "the report names the convolution a library call";
    std::vector<Tensor> inputs = {Random(c.x, 11), Random(c.w, 12)};
    if (c.bias) inputs.push_back(Random({c.w[0]}, 13));
    absl::StatusOr<std::vector<Tensor>> got = compiled->compiled->Run(inputs);
    ASSERT_TRUE(got.ok()) << got.status();
    ExpectMatchesInterpreter(*graph, inputs, *got, 1e-4);
    auto* program = dynamic_cast<CudaProgram*>(compiled->compiled.get());
    ASSERT_NE(program, nullptr);
    EXPECT_EQ(program->stats().host_fallbacks.load(), 0);
    EXPECT_EQ(program->stats().gpu_convolutions.load(), 1);
    if (LoadCudaLibraries().cudnn_status.ok()) {
      EXPECT_EQ(program->stats().cudnn_convolutions.load(), c.kiln_depthwise ? 0 : 1) << program->stats().cudnn_error;
    }
  }
  CudaDevice::SetConvTf32(tf32);
}

// A resnet-like chain (conv+relu, conv+residual add+relu, 1x1 conv + a
// non-relu activation) with constant weights, float32 and bfloat16: with the
// channels-last plan (NHWC values between the convolutions, KRSC weights,
// fused epilogues; a max pool between convolutions reading and writing
// NHWC: KILN_CUDA_CHANNELS_LAST=1) and without it (=0: NCHW, epilogues in
// generated kernels), against the interpreter running the unfused graph.
TEST(CudaProgramGpuTest, ConvolutionChainsRunChannelsLastWithFusedEpilogues) {
  RegisterAll();
  if (!CudaDevice().is_available()) GTEST_SKIP() << "no CUDA device: " << CudaDevice::UnavailableReason();
  const bool tf32 = CudaDevice::ConvTf32();
  CudaDevice::SetConvTf32(false);
  for (const char* type : {"Float", "BFloat16"}) {
    for (const char* activation : {"hardswish", "silu", "sigmoid", "pool", "downsample"}) {
      for (const bool channels_last : {true, false}) {
        SCOPED_TRACE(absl::StrCat(type, " ", activation, channels_last ? " NHWC" : " NCHW"));
        // "pool": a max pool between the first and second convolution, relu last.
        const bool pool = std::string(activation) == "pool";
        // "downsample": the residual through a biased 1x1 convolution (a fused op with an empty chain).
        const bool downsample = std::string(activation) == "downsample";
        const DType dtype = std::string(type) == "Float" ? DType::kFloat32 : DType::kBFloat16;
        std::map<std::string, Tensor> weights = {{"w1", Random({8, 8, 3, 3}, 1)}, {"b1", Random({8}, 2)},
                                                 {"w2", Random({8, 8, 3, 3}, 3)}, {"b2", Random({8}, 4)},
                                                 {"w3", Random({16, 8, 1, 1}, 5)}, {"b3", Random({16}, 6)},
                                                 {"w4", Random({8, 8, 1, 1}, 8)},  {"b4", Random({8}, 9)}};
        for (auto& [name, t] : weights) t = *runtime::CastTo(t, dtype);
        const std::string text = pool         ? test::ConvPoolChainText(type, "relu")
                                 : downsample ? test::ConvDownsampleChainText(type, "relu")
                                              : test::ConvChainText(type, activation);
        absl::StatusOr<std::unique_ptr<ir::Graph>> graph = test::ParseWithConstants(text, weights);
        absl::StatusOr<std::unique_ptr<ir::Graph>> oracle = test::ParseWithConstants(text, weights);
        ASSERT_TRUE(graph.ok() && oracle.ok());
        absl::StatusOr<driver::CompiledGraph> c;
        {
          test::ScopedEnv plan("KILN_CUDA_CHANNELS_LAST", channels_last ? "1" : "0");
          c = test::CompileGraphForCuda(**graph);
        }
        ASSERT_TRUE(c.ok()) << c.status();
        std::vector<Tensor> inputs = {*runtime::CastTo(Random({2, 8, 10, 10}, 7), dtype)};
        absl::StatusOr<std::vector<Tensor>> got = c->compiled->Run(inputs);
        ASSERT_TRUE(got.ok()) << got.status();
        // The opt-in cuDNN fused path (bias [+ residual] [+ relu] in one call)
        // gives the same result (within the numeric tolerance below).
        absl::StatusOr<std::vector<Tensor>> fused;
        {
          test::ScopedEnv cudnn_fused("KILN_CUDNN_FUSED", "1");
          fused = c->compiled->Run(inputs);
        }
        ASSERT_TRUE(fused.ok()) << fused.status();
        std::vector<ir::IValue> args = {ir::IValue::FromTensor(inputs[0])};
        absl::StatusOr<std::vector<ir::IValue>> want = runtime::RunGraph(**oracle, args);
        ASSERT_TRUE(want.ok()) << want.status();
        const Tensor& w = (*want)[0].toTensor();
        ASSERT_EQ((*got)[0].sizes(), w.sizes());
        for (const Tensor& out : {(*got)[0], (*fused)[0]}) {
          double num = 0, den = 0, worst = 0;
          for (int64_t i = 0; i < w.numel(); ++i) {
            const double d = out.GetDouble(i) - w.GetDouble(i);
            num += d * d;
            den += w.GetDouble(i) * w.GetDouble(i);
            worst = std::max(worst, std::fabs(d));
          }
          if (dtype == DType::kFloat32) {
            EXPECT_LE(worst, 1e-4);
          } else {
            EXPECT_LE(std::sqrt(num / den), 1e-2);
          }
        }
        auto* program = dynamic_cast<CudaProgram*>(c->compiled.get());
        ASSERT_NE(program, nullptr);
        const CudaProgramStats& st = program->stats();
        EXPECT_EQ(st.host_fallbacks.load(), 0);
        const int convs = downsample ? 4 : 3;
        // The plan needs cuDNN (kiln's own convolutions are NCHW only).
        const bool planned = channels_last && LoadCudaLibraries().cudnn_status.ok();
        EXPECT_EQ(st.gpu_convolutions.load(), 2 * convs);
        // =1 fuses every convolution's epilogue (what the policy does for large
        // float32 batches); =0 leaves them to generated kernels.
        EXPECT_EQ(st.fused_epilogues.load(), channels_last ? 2 * convs : 0)
            << "conv+relu, conv+add+relu, conv+" << activation;
        if (pool) {
          EXPECT_EQ(program->resolved().boundary_transposes, planned ? 2 : 0);
        }
        if (LoadCudaLibraries().cudnn_status.ok()) {
          EXPECT_EQ(st.nhwc_convolutions.load(), planned ? 2 * convs : 0) << st.nhwc_error;
          EXPECT_EQ(st.nhwc_refusals.load(), 0) << st.nhwc_error;
        }
        std::string report;
        for (const std::string& line : program->ReportLines()) absl::StrAppend(&report, line, "\n");
        EXPECT_TRUE(absl::StrContains(report, absl::StrCat(planned ? convs : 0, " of ", convs, " convolutions NHWC")))
            << report;
      }
    }
  }
  CudaDevice::SetConvTf32(tf32);
}

// The channels-last chain (boundary transposes' scratch, KRSC weights, the
// epilogue kernel) captured into a CUDA graph and replayed.
TEST(CudaProgramGpuTest, ChannelsLastChainReplaysAsAGraph) {
  RegisterAll();
  if (!CudaDevice().is_available()) GTEST_SKIP() << "no CUDA device: " << CudaDevice::UnavailableReason();
  const bool tf32 = CudaDevice::ConvTf32();
  CudaDevice::SetConvTf32(false);
  const std::map<std::string, Tensor> weights = {
      {"w1", Random({8, 8, 3, 3}, 1)}, {"b1", Random({8}, 2)}, {"w2", Random({8, 8, 3, 3}, 3)},
      {"b2", Random({8}, 4)},          {"w3", Random({16, 8, 1, 1}, 5)}, {"b3", Random({16}, 6)},
      {"w4", Random({8, 8, 1, 1}, 8)}, {"b4", Random({8}, 9)}};
  const std::string text = test::ConvDownsampleChainText("Float", "silu");
  absl::StatusOr<std::unique_ptr<ir::Graph>> graph = test::ParseWithConstants(text, weights);
  absl::StatusOr<std::unique_ptr<ir::Graph>> oracle = test::ParseWithConstants(text, weights);
  ASSERT_TRUE(graph.ok() && oracle.ok());
  absl::StatusOr<driver::CompiledGraph> c;
  {
    test::ScopedEnv always("KILN_CUDA_CHANNELS_LAST", "1");  // batch 2: below the policy's batch
    c = test::CompileGraphForCuda(**graph);
  }
  ASSERT_TRUE(c.ok()) << c.status();
  auto* program = dynamic_cast<CudaProgram*>(c->compiled.get());
  ASSERT_NE(program, nullptr);
  std::vector<Tensor> inputs = {Random({2, 8, 10, 10}, 7)};
  absl::StatusOr<std::unique_ptr<CudaSession>> session =
      CudaSession::Create(*program, inputs, CudaSessionOptions{/*cuda_graphs=*/true});
  ASSERT_TRUE(session.ok()) << session.status();
  for (int call = 0; call < 3; ++call) {
    ASSERT_TRUE((*session)->Run().ok());
    EXPECT_EQ((*session)->replaying_graph(), call >= 1) << "call " << call;
    absl::StatusOr<std::vector<Tensor>> got = (*session)->FetchOutputs();
    ASSERT_TRUE(got.ok()) << got.status();
    ExpectMatchesInterpreter(**oracle, inputs, *got, 1e-4);
  }
  if (LoadCudaLibraries().cudnn_status.ok()) {
    EXPECT_TRUE(absl::StrContains((*session)->Notes()[0], "(4 channels-last, 4 with fused epilogues)"))
        << (*session)->Notes()[0];
  }
  CudaDevice::SetConvTf32(tf32);
}

// float16/bfloat16 graphs: kernels with 16-bit storage and cuBLAS GemmEx,
// no host fallback, no island; relative L2 against the interpreter (which
// rounds after every op) within the narrow type's precision.
TEST(CudaProgramGpuTest, NarrowFloatGraphsRunOnTheGpu) {
  RegisterAll();
  if (!CudaDevice().is_available()) GTEST_SKIP() << "no CUDA device: " << CudaDevice::UnavailableReason();
  for (const char* type : {"BFloat16", "Half"}) {
    SCOPED_TRACE(type);
    const std::string text = NarrowGraphText(type);
    std::unique_ptr<ir::Graph> graph;
    absl::StatusOr<driver::CompiledGraph> c = CompileForCuda(text, &graph);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->num_islands, 0);
    const DType dtype = std::string(type) == "Half" ? DType::kFloat16 : DType::kBFloat16;
    std::vector<Tensor> inputs;
    uint32_t seed = 21;
    for (const std::vector<int64_t>& sizes : std::vector<std::vector<int64_t>>{{32, 64}, {64, 64}, {64}, {64}, {64}}) {
      absl::StatusOr<Tensor> t = runtime::CastTo(Random(sizes, seed++), dtype);
      ASSERT_TRUE(t.ok()) << t.status();
      inputs.push_back(*t);
    }
    absl::StatusOr<std::vector<Tensor>> got = c->compiled->Run(inputs);
    ASSERT_TRUE(got.ok()) << got.status();
    std::vector<ir::IValue> args;
    for (const Tensor& t : inputs) args.push_back(ir::IValue::FromTensor(t));
    absl::StatusOr<std::vector<ir::IValue>> want = runtime::RunGraph(*graph, args);
    ASSERT_TRUE(want.ok()) << want.status();
    for (size_t o = 0; o < got->size(); ++o) {
      const Tensor& w = (*want)[o].toTensor();
      ASSERT_EQ((*got)[o].dtype(), dtype);
      double num = 0, den = 0;
      for (int64_t i = 0; i < w.numel(); ++i) {
        const double d = (*got)[o].GetDouble(i) - w.GetDouble(i);
        num += d * d;
        den += w.GetDouble(i) * w.GetDouble(i);
      }
      EXPECT_LE(std::sqrt(num / den), dtype == DType::kBFloat16 ? 1e-2 : 2e-3) << "output " << o;
    }
    auto* program = dynamic_cast<CudaProgram*>(c->compiled.get());
    ASSERT_NE(program, nullptr);
    EXPECT_EQ(program->stats().host_fallbacks.load(), 0) << "every step on the GPU";
    EXPECT_EQ(program->stats().cublas_calls.load(), 2);
  }
}

// The fused attention kernel on the GPU against the interpreter and against
// the unfused path (KILN_CUDA_ATTENTION=0: cuBLAS + softmax kernel), in
// float32 and bfloat16 (autocast's casts); no host fallback; a session
// captures it into a CUDA graph; the profile has the kernel as its own row.
TEST(CudaProgramGpuTest, FusedAttentionMatchesTheInterpreterAndTheUnfusedPath) {
  RegisterAll();
  if (!CudaDevice().is_available()) GTEST_SKIP() << "no CUDA device: " << CudaDevice::UnavailableReason();
  for (const char* type : {"Float", "BFloat16"}) {
    SCOPED_TRACE(type);
    const bool narrow = std::string(type) != "Float";
    std::vector<Tensor> inputs;
    Tensor qkv = Random({2, 37, 192}, 31);
    if (narrow) {
      absl::StatusOr<Tensor> t = runtime::CastTo(qkv, DType::kBFloat16);
      ASSERT_TRUE(t.ok());
      qkv = *t;
    }
    Tensor mask = Tensor::Empty(DType::kFloat32, {2, 1, 1, 37});
    for (int64_t i = 0; i < 74; ++i) mask.data<float>()[i] = (i % 37) >= 37 - 6 * (i / 37 + 1) ? -10000.0f : 0.0f;
    inputs = {qkv, mask};
    std::unique_ptr<ir::Graph> graph;
    absl::StatusOr<driver::CompiledGraph> fused;
    {
      test::ScopedEnv every_dtype("KILN_CUDA_ATTENTION", "1");  // float32 too
      fused = CompileForCuda(AttentionGraphText(type), &graph);
    }
    ASSERT_TRUE(fused.ok()) << fused.status();
    absl::StatusOr<driver::CompiledGraph> plain;
    {
      test::ScopedEnv off("KILN_CUDA_ATTENTION", "0");
      plain = CompileForCuda(AttentionGraphText(type), nullptr);
    }
    ASSERT_TRUE(plain.ok()) << plain.status();
    absl::StatusOr<std::vector<Tensor>> got = fused->compiled->Run(inputs);
    ASSERT_TRUE(got.ok()) << got.status();
    absl::StatusOr<std::vector<Tensor>> base = plain->compiled->Run(inputs);
    ASSERT_TRUE(base.ok()) << base.status();
    std::vector<ir::IValue> args;
    for (const Tensor& t : inputs) args.push_back(ir::IValue::FromTensor(t));
    absl::StatusOr<std::vector<ir::IValue>> want = runtime::RunGraph(*graph, args);
    ASSERT_TRUE(want.ok()) << want.status();
    const Tensor& w = (*want)[0].toTensor();
    auto rel_l2 = [&](const Tensor& a) {
      double num = 0, den = 0;
      for (int64_t i = 0; i < w.numel(); ++i) {
        const double d = a.GetDouble(i) - w.GetDouble(i);
        num += d * d;
        den += w.GetDouble(i) * w.GetDouble(i);
      }
      return std::sqrt(num / den);
    };
    const double tol = narrow ? 1e-2 : 1e-5;
    EXPECT_LE(rel_l2((*got)[0]), tol) << "fused vs interpreter";
    EXPECT_LE(rel_l2((*base)[0]), tol) << "unfused vs interpreter";
    auto* program = dynamic_cast<CudaProgram*>(fused->compiled.get());
    ASSERT_NE(program, nullptr);
    EXPECT_EQ(program->stats().host_fallbacks.load(), 0);
    EXPECT_EQ(program->stats().cublas_calls.load(), 0) << "both products inside the attention kernel";
    absl::StatusOr<std::unique_ptr<CudaSession>> session =
        CudaSession::Create(*program, inputs, CudaSessionOptions{/*cuda_graphs=*/true});
    ASSERT_TRUE(session.ok()) << session.status();
    for (int call = 0; call < 3; ++call) ASSERT_TRUE((*session)->Run().ok());
    EXPECT_TRUE((*session)->replaying_graph());
    absl::StatusOr<std::vector<Tensor>> replayed = (*session)->FetchOutputs();
    ASSERT_TRUE(replayed.ok()) << replayed.status();
    EXPECT_LE(rel_l2((*replayed)[0]), tol) << "graph replay";
    absl::StatusOr<std::vector<wrapper::StepProfile>> profile = (*session)->Profile(1);
    ASSERT_TRUE(profile.ok()) << profile.status();
    bool row = false;
    for (const wrapper::StepProfile& p : *profile) row = row || p.name == "kiln_attention_0";
    EXPECT_TRUE(row) << "the attention kernel has its own profile row";
    bool reported = false;
    for (const std::string& line : program->ReportLines()) {
      reported = reported || absl::StartsWith(line, "attention: 1 kiln::attention calls as generated");
    }
    EXPECT_TRUE(reported);
  }
}

// Embedding lookups on the GPU (no host fallback): aten::embedding, and
// ONNX's Gather as aten::index.Tensor, with int64 and int32 indices,
// negative ones counting from the end.
TEST(CudaProgramGpuTest, GathersRunOnTheGpu) {
  RegisterAll();
  if (!CudaDevice().is_available()) GTEST_SKIP() << "no CUDA device: " << CudaDevice::UnavailableReason();
  constexpr char kText[] = R"(graph(%w : Float(50, 12), %ids : Long(3, 7), %j : Int(5)):
  %pad : int = prim::Constant[value=-1]()
  %f : bool = prim::Constant[value=0]()
  %e : Tensor = aten::embedding(%w, %ids, %pad, %f, %f)
  %l : Tensor?[] = prim::ListConstruct(%j)
  %g : Tensor = aten::index(%w, %l)
  %t : Tensor = aten::tanh(%g)
  return (%e, %t))";
  std::unique_ptr<ir::Graph> graph;
  absl::StatusOr<driver::CompiledGraph> c = CompileForCuda(kText, &graph);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->num_reference_externs, 0) << "gathers run in kiln's runtime kernels";
  Tensor ids = Tensor::Empty(DType::kInt64, {3, 7});
  // embedding takes indices in [0, rows) (torch raises on negative ones);
  // index counts negative ones from the end.
  for (int64_t i = 0; i < ids.numel(); ++i) ids.data<int64_t>()[i] = (i * 7) % 50;
  Tensor j = Tensor::Empty(DType::kInt32, {5});
  for (int64_t i = 0; i < j.numel(); ++i) j.data<int32_t>()[i] = static_cast<int32_t>(49 - 23 * i);
  std::vector<Tensor> inputs = {Random({50, 12}, 31), ids, j};
  absl::StatusOr<std::vector<Tensor>> got = c->compiled->Run(inputs);
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectMatchesInterpreter(*graph, inputs, *got, 1e-6);
  auto* program = dynamic_cast<CudaProgram*>(c->compiled.get());
  ASSERT_NE(program, nullptr);
  EXPECT_EQ(program->stats().host_fallbacks.load(), 0);
}

// Attention's batched 4-D matmuls on cuBLAS: heads as transposed views of
// [B, S, H, D] (copied contiguous first), contiguous batches (one strided
// call), and a broadcast batch side.
TEST(CudaProgramGpuTest, BatchedMatmulsRunOnTheGpu) {
  RegisterAll();
  if (!CudaDevice().is_available()) GTEST_SKIP() << "no CUDA device: " << CudaDevice::UnavailableReason();
  constexpr char kText[] = R"(graph(%x : Float(2, 5, 3, 4), %m : Float(1, 3, 5, 5)):
  %one : int = prim::Constant[value=1]()
  %two : int = prim::Constant[value=2]()
  %perm : int[] = prim::Constant[value=[0, 2, 3, 1]]()
  %d : int = prim::Constant[value=-1]()
  %n : NoneType = prim::Constant()
  %q : Tensor = aten::transpose(%x, %one, %two)
  %kt : Tensor = aten::permute(%x, %perm)
  %s : Tensor = aten::matmul(%q, %kt)
  %p : Tensor = aten::softmax(%s, %d, %n)
  %o : Tensor = aten::matmul(%p, %q)
  %b : Tensor = aten::matmul(%m, %p)
  return (%o, %b))";
  std::unique_ptr<ir::Graph> graph;
  absl::StatusOr<driver::CompiledGraph> c = CompileForCuda(kText, &graph);
  ASSERT_TRUE(c.ok()) << c.status();
  std::vector<Tensor> inputs = {Random({2, 5, 3, 4}, 41), Random({1, 3, 5, 5}, 42)};
  absl::StatusOr<std::vector<Tensor>> got = c->compiled->Run(inputs);
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectMatchesInterpreter(*graph, inputs, *got, 1e-4);
  auto* program = dynamic_cast<CudaProgram*>(c->compiled.get());
  ASSERT_NE(program, nullptr);
  EXPECT_EQ(program->stats().host_fallbacks.load(), 0);
  EXPECT_EQ(program->stats().cublas_calls.load(), 3);
}

// GEMMs through cuBLASLt with their algorithms timed (cublaslt_gemm.h):
// row- and column-major operands, a strided batch, a broadcast batch side
// (cuBLAS takes it), an operand at an offset that is not 16-byte aligned,
// and a bfloat16 product; the first call (which times the candidates) and
// the second (the kept plans) both match the interpreter.
TEST(CudaProgramGpuTest, CublasLtGemmsMatchTheInterpreter) {
  RegisterAll();
  if (!CudaDevice().is_available()) GTEST_SKIP() << "no CUDA device: " << CudaDevice::UnavailableReason();
  constexpr char kFloat[] = R"(graph(%a : Float(37, 20), %b : Float(20, 33), %x : Float(3, 37, 20), %y : Float(3, 20, 33), %w : Float(37, 21), %v : Float(1, 20, 33)):
  %one : int = prim::Constant[value=1]()
  %big : int = prim::Constant[value=21]()
  %c : Tensor = aten::mm(%a, %b)
  %at : Tensor = aten::t(%a)
  %bt : Tensor = aten::t(%b)
  %e : Tensor = aten::mm(%bt, %at)
  %g : Tensor = aten::bmm(%x, %y)
  %h : Tensor = aten::matmul(%x, %v)
  %ws : Tensor = aten::slice(%w, %one, %one, %big, %one)
  %k : Tensor = aten::mm(%ws, %b)
  return (%c, %e, %g, %h, %k))";
  // bfloat16 operands: the products differ from the interpreter's by the
  // result's rounding (|values| up to about 5: a bfloat16 step of 3e-2).
  constexpr char kBFloat16[] = R"(graph(%a : BFloat16(37, 20), %b : BFloat16(20, 33)):
  %c : Tensor = aten::mm(%a, %b)
  return (%c))";
  const LtPlanCounts before = LtPlansMade();
  for (const auto& [text, tol] : {std::pair<const char*, double>{kFloat, 1e-4}, {kBFloat16, 7e-2}}) {
    std::unique_ptr<ir::Graph> graph;
    absl::StatusOr<driver::CompiledGraph> c = CompileForCuda(text, &graph);
    ASSERT_TRUE(c.ok()) << c.status();
    const bool bf16 = text == kBFloat16;
    for (int call = 0; call < 2; ++call) {  // the first call times the candidates, the second reuses the plans
      std::vector<Tensor> inputs;
      if (bf16) {
        for (auto [sizes, seed] : {std::pair<std::vector<int64_t>, uint32_t>{{37, 20}, 71u + static_cast<uint32_t>(call)}, {{20, 33}, 72u}}) {
          absl::StatusOr<Tensor> t = runtime::CastTo(Random(sizes, seed), DType::kBFloat16);
          ASSERT_TRUE(t.ok()) << t.status();
          inputs.push_back(*std::move(t));
        }
      } else {
        inputs = {Random({37, 20}, 61 + call), Random({20, 33}, 62), Random({3, 37, 20}, 63),
                  Random({3, 20, 33}, 64),     Random({37, 21}, 65), Random({1, 20, 33}, 66)};
      }
      absl::StatusOr<std::vector<Tensor>> got = c->compiled->Run(inputs);
      ASSERT_TRUE(got.ok()) << got.status();
      ExpectMatchesInterpreter(*graph, inputs, *got, tol);
    }
    auto* program = dynamic_cast<CudaProgram*>(c->compiled.get());
    ASSERT_NE(program, nullptr);
    EXPECT_EQ(program->stats().host_fallbacks.load(), 0);
  }
  const LtPlanCounts after = LtPlansMade();
  if (LoadCudaLibraries().cublaslt_status.ok()) {
    EXPECT_GE(after.plans - before.plans, 4) << "mm, the transposed mm, bmm and the bfloat16 mm take cuBLASLt plans";
    if (GemmAutotune()) {
      EXPECT_GE(after.timed - before.timed, 1);
    }
  }
}

// 2-D pooling on the GPU: max (padding, stride, dilation, ceil_mode, a NaN)
// and average (count_include_pad off, ceil_mode, a divisor override).
TEST(CudaProgramGpuTest, PoolingRunsOnTheGpu) {
  RegisterAll();
  if (!CudaDevice().is_available()) GTEST_SKIP() << "no CUDA device: " << CudaDevice::UnavailableReason();
  constexpr char kText[] = R"(graph(%x : Float(2, 3, 11, 9)):
  %k : int[] = prim::Constant[value=[3, 3]]()
  %s : int[] = prim::Constant[value=[2, 2]]()
  %p : int[] = prim::Constant[value=[1, 1]]()
  %d : int[] = prim::Constant[value=[1, 2]]()
  %t : bool = prim::Constant[value=1]()
  %f : bool = prim::Constant[value=0]()
  %n : NoneType = prim::Constant()
  %six : int = prim::Constant[value=6]()
  %m : Tensor = aten::max_pool2d(%x, %k, %s, %p, %d, %t)
  %a : Tensor = aten::avg_pool2d(%x, %k, %s, %p, %t, %f, %n)
  %b : Tensor = aten::avg_pool2d(%x, %k, %s, %p, %f, %t, %six)
  return (%m, %a, %b))";
  std::unique_ptr<ir::Graph> graph;
  absl::StatusOr<driver::CompiledGraph> c = CompileForCuda(kText, &graph);
  ASSERT_TRUE(c.ok()) << c.status();
  Tensor x = Random({2, 3, 11, 9}, 51);
  x.data<float>()[17] = std::numeric_limits<float>::quiet_NaN();
  std::vector<Tensor> inputs = {x};
  absl::StatusOr<std::vector<Tensor>> got = c->compiled->Run(inputs);
  ASSERT_TRUE(got.ok()) << got.status();
  std::vector<ir::IValue> args = {ir::IValue::FromTensor(x)};
  absl::StatusOr<std::vector<ir::IValue>> want = runtime::RunGraph(*graph, args);
  ASSERT_TRUE(want.ok()) << want.status();
  for (size_t o = 0; o < got->size(); ++o) {
    const Tensor& w = (*want)[o].toTensor();
    ASSERT_EQ((*got)[o].sizes(), w.sizes()) << "output " << o;
    for (int64_t i = 0; i < w.numel(); ++i) {
      const double g = (*got)[o].GetDouble(i), e = w.GetDouble(i);
      if (std::isnan(e)) {
        EXPECT_TRUE(std::isnan(g)) << "output " << o << " element " << i;
      } else {
        EXPECT_NEAR(g, e, 1e-5) << "output " << o << " element " << i;
      }
    }
  }
  auto* program = dynamic_cast<CudaProgram*>(c->compiled.get());
  ASSERT_NE(program, nullptr);
  EXPECT_EQ(program->stats().host_fallbacks.load(), 0);
}

// kiln::shape (ONNX's Shape) never downloads its input: computed once from
// the static shape, copied on the device by every call.
TEST(CudaProgramGpuTest, ShapeOfAStaticTensorStaysOnTheGpu) {
  RegisterAll();
  if (!CudaDevice().is_available()) GTEST_SKIP() << "no CUDA device: " << CudaDevice::UnavailableReason();
  constexpr char kText[] = R"(graph(%x : Float(4, 6, 5)):
  %one : int = prim::Constant[value=1]()
  %n : NoneType = prim::Constant()
  %s : Tensor = kiln::shape(%x, %one, %n)
  %t : Tensor = aten::tanh(%x)
  return (%s, %t))";
  std::unique_ptr<ir::Graph> graph;
  absl::StatusOr<driver::CompiledGraph> c = CompileForCuda(kText, &graph);
  ASSERT_TRUE(c.ok()) << c.status();
  std::vector<Tensor> inputs = {Random({4, 6, 5}, 61)};
  for (int call = 0; call < 2; ++call) {
    absl::StatusOr<std::vector<Tensor>> got = c->compiled->Run(inputs);
    ASSERT_TRUE(got.ok()) << got.status();
    ExpectMatchesInterpreter(*graph, inputs, *got, 1e-6);
  }
  auto* program = dynamic_cast<CudaProgram*>(c->compiled.get());
  ASSERT_NE(program, nullptr);
  EXPECT_EQ(program->stats().host_fallbacks.load(), 0);
}

// Every convolution extern the CUDA lowering writes is one the GPU path
// takes (ParseConv, shared by the plain and the channels-last path): a fused
// op whose chain has no tensor operand carries lowering's constant empty
// list, one with a residual its buffer list. (The GPU tests found the first
// sent to the host; this checks it without a GPU.)
TEST(ResolveProgramTest, FusedConvolutionsParseForTheGpu) {
  RegisterAll();
  const char* text = R"(graph(%x : Float(2, 8, 12, 12), %w : Float(8, 8, 3, 3), %b : Float(8)):
  %s : int[] = prim::Constant[value=[1, 1]]()
  %p : int[] = prim::Constant[value=[1, 1]]()
  %d : int[] = prim::Constant[value=[1, 1]]()
  %g : int = prim::Constant[value=1]()
  %one : int = prim::Constant[value=1]()
  %y : Tensor = aten::conv2d(%x, %w, %b, %s, %p, %d, %g)
  %r : Tensor = aten::relu(%y)
  %y2 : Tensor = aten::conv2d(%r, %w, %b, %s, %p, %d, %g)
  %a : Tensor = aten::add(%y2, %x, %one)
  %r2 : Tensor = aten::relu(%a)
  return (%r2)
)";
  absl::StatusOr<driver::CompiledGraph> c;
  {
    test::ScopedEnv fused("KILN_CUDA_CHANNELS_LAST", "1");  // a small graph, fused as large ones are
    c = CompileForCuda(text, nullptr, /*generate_only=*/true);
  }
  ASSERT_TRUE(c.ok()) << c.status();
  for (bool channels_last : {false, true}) {
    absl::StatusOr<ResolvedProgram> r =
        ResolveProgram(c->program, channels_last ? ChannelsLastMode::kAlways : ChannelsLastMode::kOff);
    ASSERT_TRUE(r.ok()) << r.status();
    int fused = 0;
    for (const ExternStep& e : r->externs) {
      std::vector<DeviceView> args, outs;
      for (int slot : e.buffer_slots) args.push_back(DeviceView{CUdeviceptr(4096), r->slot_layouts[slot]});
      for (int slot : e.output_slots) outs.push_back(DeviceView{CUdeviceptr(8192), r->slot_layouts[slot]});
      fused += e.op == "kiln::conv_post_ops";
      std::optional<ConvProblem> problem = ParseConv(e.op, e.args, args, outs);
      ASSERT_TRUE(problem.has_value()) << e.op << " with " << args.size() << " buffers";
      EXPECT_TRUE(problem->epilogue.has_value());
    }
    EXPECT_EQ(fused, 2);
  }
}

}  // namespace
}  // namespace kiln::backends::cuda
