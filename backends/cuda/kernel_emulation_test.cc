// Numerical check of the generated CUDA kernels without a GPU: every kernel
// is compiled as host C++ (g++) against a small emulation of the CUDA
// execution model -- each block runs its threads as std::threads, with real
// barriers for __syncthreads and a per-warp exchange for __shfl_xor_sync --
// and the scheduled graph's outputs are compared with the interpreter's
// (rtol 1e-3, atol 1e-5), once with 16-byte aligned buffers (vector paths)
// and once with every buffer misaligned by one element (scalar paths).
// This checks the kernels' logic (indexing, lanes, tails, reductions, the
// register row cache, block/warp cooperation); the GPU test checks the rest.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <dlfcn.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/cuda/kernel_codegen.h"
#include "backends/cuda/kernel_emulation.h"
#include "backends/cuda/kernel_identifiers.h"
#include "backends/cuda/test_graphs.h"
#include "gtest/gtest.h"
#include "ir/ivalue.h"
#include "runtime/interpreter.h"
#include "support/tensor.h"

namespace kiln::backends::cuda {
namespace {

using lowering::Buffer;
using lowering::BufferKind;

struct Case {
  std::string name;
  std::string ir;
};

// One graph to run: its schedule, kernels and inputs.
struct Prepared {
  Case c;
  testing::Scheduled s;
  std::vector<CudaKernelSource> kernels;  // in schedule order
  std::vector<int> kernel_ids;            // emulated function index per kernel
  std::vector<Tensor> inputs;
};

Tensor RandomTensor(DType dtype, const std::vector<int64_t>& sizes, std::mt19937& rng) {
  Tensor t = Tensor::Empty(dtype, sizes);
  const int64_t n = t.numel();
  std::uniform_real_distribution<float> real(-2.0f, 2.0f);
  std::uniform_int_distribution<int> ints(-6, 6);
  for (int64_t i = 0; i < n; ++i) {
    switch (dtype) {
      case DType::kFloat32: t.data<float>()[i] = real(rng); break;
      case DType::kFloat64: t.data<double>()[i] = real(rng); break;
      case DType::kInt64: { int v = ints(rng); t.data<int64_t>()[i] = v == 0 ? 1 : v; break; }
      case DType::kInt32: { int v = ints(rng); t.data<int32_t>()[i] = v == 0 ? 1 : v; break; }
      case DType::kUInt8: t.data<uint8_t>()[i] = static_cast<uint8_t>(ints(rng) + 6); break;
      case DType::kBool: t.data<bool>()[i] = ints(rng) > 0; break;
      case DType::kFloat16: t.data<uint16_t>()[i] = DoubleToHalfBits(real(rng)); break;
      case DType::kBFloat16: t.data<uint16_t>()[i] = DoubleToBFloat16Bits(real(rng)); break;
      default: break;
    }
  }
  return t;
}

const std::vector<Case>& Cases() {
  static const auto* cases = new std::vector<Case>{
      // A residual add of a permuted (NHWC) branch into an NCHW trunk, as
      // convnext's blocks end: tiled through shared memory
      // (kernel_transpose.h), extents not multiples of the tile, more
      // tiles than the grid.
      {"transposed_residual_add", R"(graph(%x : Float(3, 70, 5, 9), %y : Float(3, 5, 9, 70), %g : Float(70, 1, 1)):
  %perm : int[] = prim::Constant[value=[0, 3, 1, 2]]()
  %one : int = prim::Constant[value=1]()
  %p : Tensor = aten::permute(%y, %perm)
  %m : Tensor = aten::mul(%g, %p)
  %a : Tensor = aten::add(%m, %x, %one)
  return (%a))"},
      {"bf16_transposed_residual_add", R"(graph(%x : BFloat16(2, 48, 7, 7), %y : BFloat16(2, 7, 7, 48)):
  %perm : int[] = prim::Constant[value=[0, 3, 1, 2]]()
  %one : int = prim::Constant[value=1]()
  %p : Tensor = aten::permute(%y, %perm)
  %a : Tensor = aten::add(%x, %p, %one)
  %r : Tensor = aten::relu(%a)
  return (%r))"},
      {"bf16_add_gelu", R"(graph(%x : BFloat16(8, 1030), %b : BFloat16(1030)):
  %one : int = prim::Constant[value=1]()
  %approx : str = prim::Constant[value="none"]()
  %a : Tensor = aten::add(%x, %b, %one)
  %g : Tensor = aten::gelu(%a, %approx)
  return (%g))"},
      {"half_softmax_rows", R"(graph(%x : Half(16, 1000)):
  %d : int = prim::Constant[value=-1]()
  %n : NoneType = prim::Constant()
  %s : Tensor = aten::softmax(%x, %d, %n)
  return (%s))"},
      {"bf16_layer_norm", R"(graph(%x : BFloat16(6, 768), %w : BFloat16(768), %b : BFloat16(768)):
  %shape : int[] = prim::Constant[value=[768]]()
  %eps : float = prim::Constant[value=1.0000000000000001e-05]()
  %f : bool = prim::Constant[value=0]()
  %y : Tensor = aten::layer_norm(%x, %shape, %w, %b, %eps, %f)
  return (%y))"},
      {"half_sum_dim0_and_max", R"(graph(%x : Half(300, 37)):
  %d0 : int[] = prim::Constant[value=[0]]()
  %f : bool = prim::Constant[value=0]()
  %n : NoneType = prim::Constant()
  %s : Tensor = aten::sum(%x, %d0, %f, %n)
  %d1 : int = prim::Constant[value=1]()
  %m : Tensor, %i : Tensor = aten::max(%x, %d1, %f)
  return (%s, %m, %i))"},
      // Pointwise kernels over 16-bit floats run groups of 8 (16-byte
      // accesses); a float32 operand beside them is read 32 bytes a group.
      {"bf16_float_mix_groups_of_8", R"(graph(%x : BFloat16(16, 1024), %y : Float(1024)):
  %one : int = prim::Constant[value=1]()
  %bf : int = prim::Constant[value=15]()
  %f32 : int = prim::Constant[value=6]()
  %false : bool = prim::Constant[value=0]()
  %none : NoneType = prim::Constant()
  %xf : Tensor = aten::to(%x, %f32, %false, %false, %none)
  %a : Tensor = aten::add(%xf, %y, %one)
  %t : Tensor = aten::tanh(%a)
  %r : Tensor = aten::to(%t, %bf, %false, %false, %none)
  return (%r, %a))"},
      // Groups of 8 with a tail (1003 = 125 * 8 + 3), a per-row operand and
      // a transposed read (element by element).
      {"half_groups_of_8_tail_broadcast_transpose", R"(graph(%x : Half(6, 1003), %b : Half(6, 1), %z : Half(40, 24)):
  %one : int = prim::Constant[value=1]()
  %a : Tensor = aten::mul(%x, %b)
  %s : Tensor = aten::sigmoid(%a)
  %p : int[] = prim::Constant[value=[1, 0]]()
  %zt : Tensor = aten::permute(%z, %p)
  %e : Tensor = aten::exp(%zt)
  return (%s, %e))"},
      // gpt2's attention softmax in bf16: scaled scores plus a float32 mask,
      // softmax in float32, rows with a tail (203 = 50 * 4 + 3) per warp;
      // the sum pass keeps exp() for the normalize pass (RowCache).
      {"bf16_scaled_masked_softmax_tail", R"(graph(%x : BFloat16(24, 203), %m : Float(203)):
  %one : int = prim::Constant[value=1]()
  %s : float = prim::Constant[value=0.125]()
  %f32 : int = prim::Constant[value=6]()
  %bf : int = prim::Constant[value=15]()
  %false : bool = prim::Constant[value=0]()
  %none : NoneType = prim::Constant()
  %d : int = prim::Constant[value=-1]()
  %xs : Tensor = aten::mul(%x, %s)
  %xf : Tensor = aten::to(%xs, %f32, %false, %false, %none)
  %a : Tensor = aten::add(%xf, %m, %one)
  %p : Tensor = aten::softmax(%a, %d, %none)
  %r : Tensor = aten::to(%p, %bf, %false, %false, %none)
  return (%r))"},
      // Attention heads merged back: [B, H, S, D] read as [B, S, H*D]
      // (v % D + v // D * S*D): contiguous within groups when D is a
      // multiple of the group (16 here), not when it is not (12).
      {"bf16_heads_merge", R"(graph(%x : BFloat16(2, 4, 5, 16), %y : BFloat16(2, 3, 7, 12)):
  %p : int[] = prim::Constant[value=[0, 2, 1, 3]]()
  %s1 : int[] = prim::Constant[value=[2, 5, 64]]()
  %s2 : int[] = prim::Constant[value=[2, 7, 36]]()
  %xt : Tensor = aten::permute(%x, %p)
  %xc : Tensor = aten::contiguous(%xt)
  %xr : Tensor = aten::reshape(%xc, %s1)
  %a : Tensor = aten::sigmoid(%xr)
  %yt : Tensor = aten::permute(%y, %p)
  %yc : Tensor = aten::contiguous(%yt)
  %yr : Tensor = aten::reshape(%yc, %s2)
  %b : Tensor = aten::sigmoid(%yr)
  return (%a, %b))"},
      {"f32_heads_merge", R"(graph(%x : Float(2, 4, 5, 12)):
  %p : int[] = prim::Constant[value=[0, 2, 1, 3]]()
  %s1 : int[] = prim::Constant[value=[2, 5, 48]]()
  %xt : Tensor = aten::permute(%x, %p)
  %xc : Tensor = aten::contiguous(%xt)
  %xr : Tensor = aten::reshape(%xc, %s1)
  %a : Tensor = aten::exp(%xr)
  return (%a))"},
      {"pointwise_chain", R"(graph(%x : Float(8, 1024)):
  %one : int = prim::Constant[value=1]()
  %h : float = prim::Constant[value=0.5]()
  %a : Tensor = aten::add(%x, %h, %one)
  %b : Tensor = aten::mul(%a, %x)
  %c : Tensor = aten::tanh(%b)
  %d : Tensor = aten::sigmoid(%c)
  return (%d))"},
      {"broadcast_add_odd", R"(graph(%x : Float(7, 333), %b : Float(333)):
  %one : int = prim::Constant[value=1]()
  %y : Tensor = aten::add(%x, %b, %one)
  %z : Tensor = aten::relu(%y)
  return (%z))"},
      {"one_d_tail", R"(graph(%x : Float(1001)):
  %r : Tensor = aten::gelu(%x)
  return (%r))"},
      {"transpose", R"(graph(%x : Float(24, 40)):
  %p : int[] = prim::Constant[value=[1, 0]]()
  %y : Tensor = aten::permute(%x, %p)
  %z : Tensor = aten::exp(%y)
  return (%z))"},
      // Zeros of both signs (|x| < 1 truncates to +-0): amax/amin/max/min
      // order -0 below +0 whatever order the warps and blocks combine them
      // in; the reciprocals turn a wrong sign into inf against -inf.
      {"signed_zero_extremes", R"(graph(%x : Float(6, 2000), %y : Float(3000)):
  %lo : float = prim::Constant[value=-0.9]()
  %hi : float = prim::Constant[value=0.9]()
  %dims : int[] = prim::Constant[value=[-1]]()
  %f : bool = prim::Constant[value=0]()
  %cx : Tensor = aten::clamp(%x, %lo, %hi)
  %zx : Tensor = aten::trunc(%cx)
  %m : Tensor = aten::amax(%zx, %dims, %f)
  %n : Tensor = aten::amin(%zx, %dims, %f)
  %rm : Tensor = aten::reciprocal(%m)
  %rn : Tensor = aten::reciprocal(%n)
  %cy : Tensor = aten::clamp(%y, %lo, %hi)
  %zy : Tensor = aten::trunc(%cy)
  %my : Tensor = aten::max(%zy)
  %ny : Tensor = aten::min(%zy)
  %rmy : Tensor = aten::reciprocal(%my)
  %rny : Tensor = aten::reciprocal(%ny)
  return (%rm, %rn, %rmy, %rny))"},
      {"row_sum_max_min", R"(graph(%x : Float(6, 2000)):
  %dims : int[] = prim::Constant[value=[-1]]()
  %f : bool = prim::Constant[value=0]()
  %none : NoneType = prim::Constant()
  %s : Tensor = aten::sum(%x, %dims, %f, %none)
  %m : Tensor = aten::amax(%x, %dims, %f)
  %n : Tensor = aten::amin(%x, %dims, %f)
  return (%s, %m, %n))"},
      {"argmax_argmin", R"(graph(%x : Float(5, 999)):
  %d : int = prim::Constant[value=1]()
  %t : bool = prim::Constant[value=1]()
  %a : Tensor = aten::argmax(%x, %d, %t)
  %b : Tensor = aten::argmin(%x, %d, %t)
  return (%a, %b))"},
      {"softmax_block", R"(graph(%x : Float(3, 8192)):
  %dim : int = prim::Constant[value=-1]()
  %none : NoneType = prim::Constant()
  %y : Tensor = aten::softmax(%x, %dim, %none)
  return (%y))"},
      {"softmax_warp", R"(graph(%x : Float(37, 40)):
  %dim : int = prim::Constant[value=-1]()
  %none : NoneType = prim::Constant()
  %y : Tensor = aten::softmax(%x, %dim, %none)
  return (%y))"},
      {"layer_norm", R"(graph(%x : Float(4, 768), %w : Float(768), %b : Float(768)):
  %shape : int[] = prim::Constant[value=[768]]()
  %eps : float = prim::Constant[value=1.0000000000000001e-05]()
  %t : bool = prim::Constant[value=1]()
  %y : Tensor = aten::layer_norm(%x, %shape, %w, %b, %eps, %t)
  return (%y))"},
      {"var_mean", R"(graph(%x : Float(9, 300)):
  %dims : int[] = prim::Constant[value=[1]]()
  %t : bool = prim::Constant[value=1]()
  %f : bool = prim::Constant[value=0]()
  %none : NoneType = prim::Constant()
  %v : Tensor = aten::var(%x, %dims, %t, %f)
  %m : Tensor = aten::mean(%x, %dims, %f, %none)
  return (%v, %m))"},
      {"sum_dim0_thread_per_output", R"(graph(%x : Float(33, 1100)):
  %dims : int[] = prim::Constant[value=[0]]()
  %f : bool = prim::Constant[value=0]()
  %none : NoneType = prim::Constant()
  %s : Tensor = aten::sum(%x, %dims, %f, %none)
  return (%s))"},
      {"full_sum_and_small_outer", R"(graph(%x : Float(3000), %y : Float(50, 6)):
  %none : NoneType = prim::Constant()
  %s : Tensor = aten::sum(%x, %none)
  %dims : int[] = prim::Constant[value=[0]]()
  %f : bool = prim::Constant[value=0]()
  %m : Tensor = aten::amax(%y, %dims, %f)
  return (%s, %m))"},
      {"int64_ops", R"(graph(%x : Long(16, 12), %y : Long(16, 12)):
  %one : int = prim::Constant[value=1]()
  %a : Tensor = aten::add(%x, %y, %one)
  %b : Tensor = aten::mul(%a, %x)
  %c : Tensor = aten::floor_divide(%b, %y)
  %d : Tensor = aten::remainder(%c, %y)
  return (%d))"},
      {"where_casts", R"(graph(%x : Int(4, 10), %y : Float(10)):
  %one : int = prim::Constant[value=1]()
  %a : Tensor = aten::add(%x, %y, %one)
  %c : Tensor = aten::gt(%x, %one)
  %w : Tensor = aten::where(%c, %a, %y)
  return (%w, %c))"},
      {"int_reductions", R"(graph(%x : Long(8, 100)):
  %dims : int[] = prim::Constant[value=[1]]()
  %f : bool = prim::Constant[value=0]()
  %none : NoneType = prim::Constant()
  %s : Tensor = aten::sum(%x, %dims, %f, %none)
  %m : Tensor = aten::amax(%x, %dims, %f)
  return (%s, %m))"},
      {"double_tanh_sum", R"(graph(%x : Double(5, 64)):
  %t : Tensor = aten::tanh(%x)
  %dims : int[] = prim::Constant[value=[1]]()
  %f : bool = prim::Constant[value=0]()
  %none : NoneType = prim::Constant()
  %s : Tensor = aten::sum(%t, %dims, %f, %none)
  return (%s))"},
      {"multi_output_pointwise", R"(graph(%x : Float(6, 20)):
  %two : float = prim::Constant[value=2.0]()
  %a : Tensor = aten::mul(%x, %two)
  %b : Tensor = aten::tanh(%a)
  return (%a, %b))"},
      {"subtract_row_mean", R"(graph(%x : Float(10, 96)):
  %dims : int[] = prim::Constant[value=[-1]]()
  %t : bool = prim::Constant[value=1]()
  %none : NoneType = prim::Constant()
  %one : int = prim::Constant[value=1]()
  %m : Tensor = aten::mean(%x, %dims, %t, %none)
  %y : Tensor = aten::sub(%x, %m, %one)
  return (%y))"},
      {"softmax_dim0", R"(graph(%x : Float(40, 37)):
  %dim : int = prim::Constant[value=0]()
  %none : NoneType = prim::Constant()
  %y : Tensor = aten::softmax(%x, %dim, %none)
  return (%y))"},
      {"log_softmax", R"(graph(%x : Float(12, 130)):
  %dim : int = prim::Constant[value=1]()
  %none : NoneType = prim::Constant()
  %y : Tensor = aten::log_softmax(%x, %dim, %none)
  return (%y))"},
      {"argmax_long", R"(graph(%x : Long(7, 50)):
  %d : int = prim::Constant[value=1]()
  %f : bool = prim::Constant[value=0]()
  %a : Tensor = aten::argmax(%x, %d, %f)
  return (%a))"},
      {"nan_max_argmax", R"(graph(%x : Float(6, 50)):
  %y : Tensor = aten::log(%x)
  %dims : int[] = prim::Constant[value=[-1]]()
  %f : bool = prim::Constant[value=0]()
  %m : Tensor = aten::amax(%y, %dims, %f)
  %d : int = prim::Constant[value=1]()
  %a : Tensor = aten::argmax(%y, %d, %f)
  %n : Tensor = aten::amin(%y, %dims, %f)
  return (%m, %a, %n))"},
      {"nchw_add_relu_collapsed", R"(graph(%x : Float(2, 5, 7, 7), %y : Float(2, 5, 7, 7)):
  %one : int = prim::Constant[value=1]()
  %a : Tensor = aten::add(%x, %y, %one)
  %r : Tensor = aten::relu(%a)
  return (%r))"},
      {"nchw_channel_affine", R"(graph(%x : Float(2, 5, 7, 7), %w : Float(5, 1, 1), %b : Float(5, 1, 1)):
  %one : int = prim::Constant[value=1]()
  %m : Tensor = aten::mul(%x, %w)
  %a : Tensor = aten::add(%m, %b, %one)
  %r : Tensor = aten::sigmoid(%a)
  return (%r))"},
      {"nchw_slice_then_add", R"(graph(%x : Float(2, 6, 7, 9)):
  %d : int = prim::Constant[value=3]()
  %s : int = prim::Constant[value=1]()
  %e : int = prim::Constant[value=8]()
  %one : int = prim::Constant[value=1]()
  %z : Float(2, 6, 7, 7) = aten::slice(%x, %d, %s, %e, %one)
  %h : float = prim::Constant[value=0.5]()
  %y : Tensor = aten::mul(%z, %h)
  return (%y))"},
      {"mean_over_hw", R"(graph(%x : Float(2, 5, 7, 7)):
  %dims : int[] = prim::Constant[value=[2, 3]]()
  %t : bool = prim::Constant[value=1]()
  %none : NoneType = prim::Constant()
  %m : Tensor = aten::mean(%x, %dims, %t, %none)
  return (%m))"},
  };
  return *cases;
}

class Emulator {
 public:
  // Compiles every kernel of every case into one shared library.
  absl::Status Build(std::vector<Prepared>& prepared) {
    std::string tu = kEmulation;
    absl::StrAppend(&tu, kPreludeOnce(prepared));
    int id = 0;
    for (Prepared& p : prepared) {
      for (size_t i = 0; i < p.kernels.size(); ++i) {
        const CudaKernelSource& k = p.kernels[i];
        const size_t at = k.source.find("// kiln kernel ");
        if (at == std::string::npos) return absl::InternalError("no kernel marker");
        std::string part = k.source.substr(at);
        const std::string decl = absl::StrCat(") ", k.name, "(");
        const size_t d = part.find(decl);
        if (d == std::string::npos) return absl::InternalError("no kernel declaration");
        part.replace(d, decl.size(), absl::StrCat(") kiln_k", id, "("));
        absl::StrAppend(&tu, part, "\n");
        // The launcher: parameters are the reads then the buffers.
        const lowering::FusedKernel& fk = KernelOf(p, i);
        std::vector<std::string> args;
        int a = 0;
        for (const std::string& name : fk.reads) {
          const Buffer* b = p.s.graph.Find(name);
          auto type = CudaStorageTypeName(b->layout.dtype);
          if (!type.ok()) return type.status();
          args.push_back(absl::StrCat("static_cast<const ", *type, "*>(a[", a++, "])"));
        }
        for (const std::string& name : fk.buffers) {
          const Buffer* b = p.s.graph.Find(name);
          auto type = CudaStorageTypeName(b->layout.dtype);
          if (!type.ok()) return type.status();
          args.push_back(absl::StrCat("static_cast<", *type, "*>(a[", a++, "])"));
        }
        absl::StrAppend(&tu, "extern \"C\" void kiln_launch_", id, "(void** a, long long grid, int block) {\n",
                        "  kiln_run_grid(grid, block, [&] { kiln_k", id, "(", absl::StrJoin(args, ", "), "); });\n}\n");
        p.kernel_ids.push_back(id++);
      }
    }
    const char* tmp = std::getenv("TEST_TMPDIR");
    const std::string dir = tmp != nullptr ? tmp : "/tmp";
    // A name per build: dlopen of a path already loaded returns that library.
    static int builds = 0;
    const std::string stem = absl::StrCat(dir, "/kiln_cuda_emulation_", builds++);
    const std::string src = stem + ".cc";
    const std::string lib = stem + ".so";
    std::ofstream(src) << tu;
    const std::string cmd = absl::StrCat("g++ -std=c++17 -O1 -w -shared -fPIC -o ", lib, " ", src, " 2>&1");
    if (std::system(cmd.c_str()) != 0) return absl::InternalError("g++ failed on " + src);
    handle_ = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) return absl::InternalError(dlerror());
    return absl::OkStatus();
  }

  using Launch = void (*)(void**, long long, int);
  Launch Get(int id) { return reinterpret_cast<Launch>(dlsym(handle_, absl::StrCat("kiln_launch_", id).c_str())); }

  static const lowering::FusedKernel& KernelOf(const Prepared& p, size_t i) {
    size_t n = 0;
    for (const lowering::ScheduleStep& step : p.s.schedule.steps) {
      if (step.kind != lowering::ScheduleStep::Kind::kKernel) continue;
      if (n++ == i) return step.kernel;
    }
    return p.s.schedule.steps.front().kernel;
  }

 private:
  // The prelude of the first kernel (identical in every source).
  static std::string kPreludeOnce(const std::vector<Prepared>& prepared) {
    for (const Prepared& p : prepared) {
      for (const CudaKernelSource& k : p.kernels) return k.source.substr(0, k.source.find("// kiln kernel "));
    }
    return "";
  }
  void* handle_ = nullptr;
};

// Runs one prepared graph on the emulator; buffers start `misalign` bytes
// past a 64-byte boundary. Returns the graph outputs as (element -> double).
absl::StatusOr<std::vector<std::vector<double>>> RunEmulated(Emulator& emu, const Prepared& p, size_t misalign) {
  const lowering::LoopGraph& g = p.s.graph;
  std::map<std::string, std::vector<char>> storage;
  std::map<std::string, char*> base;
  for (const Buffer& b : g.buffers) {
    if (b.kind == BufferKind::kView) continue;
    if (b.kind == BufferKind::kExtern) return absl::UnimplementedError("externs are not emulated");
    std::vector<char>& s = storage[b.name];
    s.assign(static_cast<size_t>(std::max<int64_t>(b.layout.StorageBytes(), 1)) + 128, 0);
    char* aligned = s.data() + (64 - reinterpret_cast<uintptr_t>(s.data()) % 64) % 64;
    base[b.name] = aligned + misalign * DTypeSize(b.layout.dtype);
  }
  for (const Buffer& b : g.buffers) {
    if (b.kind != BufferKind::kView) continue;
    std::string root = b.view_of;
    for (int guard = 0; guard < 64 && g.Find(root) != nullptr && g.Find(root)->kind == BufferKind::kView; ++guard) {
      root = g.Find(root)->view_of;
    }
    base[b.name] = base[root];
  }
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const Tensor t = p.inputs[i].Contiguous();
    std::memcpy(base[g.inputs[i]], t.raw_data(), static_cast<size_t>(t.numel()) * DTypeSize(t.dtype()));
  }
  for (const Buffer& b : g.buffers) {
    if (b.kind == BufferKind::kConstant && b.constant.has_data()) {
      const Tensor t = b.constant.Contiguous();
      std::memcpy(base[b.name], t.raw_data(), static_cast<size_t>(t.numel()) * DTypeSize(t.dtype()));
    }
  }
  for (size_t i = 0; i < p.kernels.size(); ++i) {
    const lowering::FusedKernel& fk = Emulator::KernelOf(p, i);
    std::vector<void*> args;
    for (const std::string& r : fk.reads) args.push_back(base[r]);
    for (const std::string& b : fk.buffers) args.push_back(base[b]);
    Emulator::Launch launch = emu.Get(p.kernel_ids[i]);
    if (launch == nullptr) return absl::InternalError("missing launcher");
    launch(args.data(), p.kernels[i].launch.grid_x, p.kernels[i].launch.block_x);
  }
  std::vector<std::vector<double>> outs;
  for (const std::string& name : g.outputs) {
    const Buffer* b = g.Find(name);
    const lowering::Layout& l = b->layout;
    std::vector<double> v;
    const int64_t n = l.numel();
    for (int64_t flat = 0; flat < n; ++flat) {
      int64_t rem = flat, off = l.offset;
      for (size_t d = l.sizes.size(); d-- > 0;) {
        off += (rem % l.sizes[d]) * l.strides[d];
        rem /= l.sizes[d];
      }
      const char* at = base[name] + off * static_cast<int64_t>(DTypeSize(l.dtype));
      double x = 0;
      switch (l.dtype) {
        case DType::kFloat32: x = *reinterpret_cast<const float*>(at); break;
        case DType::kFloat64: x = *reinterpret_cast<const double*>(at); break;
        case DType::kInt64: x = static_cast<double>(*reinterpret_cast<const int64_t*>(at)); break;
        case DType::kInt32: x = *reinterpret_cast<const int32_t*>(at); break;
        case DType::kUInt8: x = *reinterpret_cast<const uint8_t*>(at); break;
        case DType::kBool: x = *reinterpret_cast<const bool*>(at) ? 1 : 0; break;
        case DType::kFloat16: x = HalfBitsToFloat(*reinterpret_cast<const uint16_t*>(at)); break;
        case DType::kBFloat16: x = BFloat16BitsToFloat(*reinterpret_cast<const uint16_t*>(at)); break;
        default: return absl::UnimplementedError("output dtype");
      }
      v.push_back(x);
    }
    outs.push_back(std::move(v));
  }
  return outs;
}

// Lowers, schedules and generates `c`'s kernels for `target` (every step a
// kernel), with inputs drawn from `rng`.
absl::StatusOr<Prepared> Prepare(const Case& c, const CudaTarget& target, std::mt19937& rng) {
  auto s = testing::LowerAndSchedule(c.ir);
  if (!s.ok()) return s.status();
  Prepared p;
  p.c = c;
  p.s = std::move(*s);
  for (const lowering::ScheduleStep& step : p.s.schedule.steps) {
    if (step.kind != lowering::ScheduleStep::Kind::kKernel) {
      return absl::InternalError(absl::StrCat(c.name, " has an extern step"));
    }
    auto k = GenerateCudaKernel(p.s.graph, step.kernel, target);
    if (!k.ok()) return k.status();
    p.kernels.push_back(std::move(*k));
  }
  if (p.kernels.empty()) return absl::InternalError(absl::StrCat(c.name, " lowered to no kernel"));
  for (const std::string& in : p.s.graph.inputs) {
    const Buffer* b = p.s.graph.Find(in);
    p.inputs.push_back(RandomTensor(b->layout.dtype, b->layout.sizes, rng));
  }
  return p;
}

// The transposed-operand cases generated with and without the tiled
// schedule (kernel_transpose.h) compute the same bits: the tiles change
// where values are read from, not what is computed.
TEST(CudaKernelEmulation, TransposeTilesChangeNoBits) {
  CudaTarget target;
  target.multiprocessor_count = 2;
  std::vector<Prepared> prepared;
  for (const Case& c : Cases()) {
    if (c.name.find("transposed") == std::string::npos) continue;
    for (const bool tiles : {true, false}) {
      if (!tiles) setenv("KILN_CUDA_TRANSPOSE_TILES", "0", 1);
      std::mt19937 rng(11);  // the same inputs for both
      absl::StatusOr<Prepared> p = Prepare(c, target, rng);
      unsetenv("KILN_CUDA_TRANSPOSE_TILES");
      ASSERT_TRUE(p.ok()) << p.status();
      const bool tiled = p->kernels[0].source.find("l_tile0") != std::string::npos;
      ASSERT_EQ(tiled, tiles) << c.name;
      prepared.push_back(*std::move(p));
    }
  }
  ASSERT_EQ(prepared.size(), 4u);
  Emulator emu;
  const absl::Status built = emu.Build(prepared);
  if (!built.ok()) GTEST_SKIP() << "host compiler unavailable: " << built;
  for (size_t i = 0; i < prepared.size(); i += 2) {
    auto tiled = RunEmulated(emu, prepared[i], 0);
    auto plain = RunEmulated(emu, prepared[i + 1], 0);
    ASSERT_TRUE(tiled.ok() && plain.ok()) << prepared[i].c.name;
    ASSERT_EQ(tiled->size(), plain->size());
    for (size_t o = 0; o < tiled->size(); ++o) {
      ASSERT_EQ((*tiled)[o].size(), (*plain)[o].size());
      for (size_t k = 0; k < (*tiled)[o].size(); ++k) {
        ASSERT_EQ(std::memcmp(&(*tiled)[o][k], &(*plain)[o][k], sizeof(double)), 0)
            << prepared[i].c.name << " element " << k << ": " << (*tiled)[o][k] << " tiled, " << (*plain)[o][k];
      }
    }
  }
}

TEST(CudaKernelEmulation, KernelsMatchTheInterpreter) {
  CudaTarget target;
  target.multiprocessor_count = 2;  // small grids: the grid-stride loops wrap
  std::vector<Prepared> prepared;
  std::mt19937 rng(7);
  for (const Case& c : Cases()) {
    absl::StatusOr<Prepared> p = Prepare(c, target, rng);
    ASSERT_TRUE(p.ok()) << c.name << ": " << p.status();
    prepared.push_back(*std::move(p));
  }
  Emulator emu;
  const auto start = std::chrono::steady_clock::now();
  const absl::Status built = emu.Build(prepared);
  std::printf("host compile of %zu graphs: %.1f s\n", prepared.size(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  if (!built.ok()) GTEST_SKIP() << "host compiler unavailable: " << built;

  for (const Prepared& p : prepared) {
    std::vector<ir::IValue> in;
    for (const Tensor& t : p.inputs) in.push_back(ir::IValue::FromTensor(t));
    auto expected = runtime::RunGraph(*p.s.ir, in);
    ASSERT_TRUE(expected.ok()) << p.c.name << ": " << expected.status();
    for (size_t misalign : {size_t{0}, size_t{1}}) {
      auto got = RunEmulated(emu, p, misalign);
      ASSERT_TRUE(got.ok()) << p.c.name << ": " << got.status();
      ASSERT_EQ(got->size(), expected->size()) << p.c.name;
      for (size_t o = 0; o < got->size(); ++o) {
        const Tensor& e = (*expected)[o].toTensor();
        ASSERT_EQ(static_cast<int64_t>((*got)[o].size()), e.numel()) << p.c.name;
        int bad = 0;
        for (int64_t i = 0; i < e.numel() && bad < 5; ++i) {
          const double want = IsFloatingPoint(e.dtype()) ? e.GetDouble(i) : static_cast<double>(e.GetInt(i));
          const double have = (*got)[o][static_cast<size_t>(i)];
          // Narrow floats: kernels round once at the store, the interpreter
          // after every op; a few units in the last place apart. Infinities
          // must match exactly (a relative tolerance of inf would accept
          // -inf for inf).
          const double tol = e.dtype() == DType::kBFloat16 ? 3e-2 : e.dtype() == DType::kFloat16 ? 4e-3 : 1e-3;
          const double atol = e.dtype() == DType::kBFloat16 || e.dtype() == DType::kFloat16 ? tol : 1e-5;
          const bool close = (std::isnan(want) && std::isnan(have)) || have == want ||
                             (std::isfinite(want) && std::fabs(have - want) <= atol + tol * std::fabs(want));
          if (!close) {
            ++bad;
            ADD_FAILURE() << p.c.name << " output " << o << " element " << i << ": got " << have << ", want " << want
                          << " (misalign " << misalign << ")";
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace kiln::backends::cuda
