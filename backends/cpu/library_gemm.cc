// GEMMs as oneDNN matmul primitives (library_calls.h): aten::mm, aten::bmm,
// aten::matmul (2-D x 2-D, 3-D x 3-D, N-D x 2-D), aten::linear, aten::addmm
// (beta = alpha = 1, a bias over the columns) and kiln::linear_post_ops,
// float32. Operands keep their strides (transposes are strides, not
// copies); a constant right operand (a weight) is reordered into the
// primitive's packed layout once.
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/cpu/dnnl_util.h"
#include "backends/cpu/library_ops.h"
#include "backends/cpu/threads.h"
#include "support/status.h"

namespace kiln::backends::cpu {
namespace {

using dnnl::memory;
using namespace dnnl_util;

std::string BaseName(const std::string& op) { return op.substr(0, op.find('.')); }

struct GemmParams {
  int a = -1, b = -1, bias = -1;  // buffer indices
  bool b_is_nk = false;           // b is [N, K] (linear's weight), used transposed
  std::vector<ir::PostOp> post;
  std::vector<int> operands;
};

std::optional<GemmParams> ReadParams(const ExternCallSpec& spec, const Args& a) {
  const std::string op = BaseName(spec.op);
  GemmParams p;
  if (op == "aten::mm" || op == "aten::bmm" || op == "aten::matmul") {
    if (a.args.size() != 2 || !a.IsBuffer(0) || !a.IsBuffer(1)) return std::nullopt;
    p.a = a.args[0].buffer;
    p.b = a.args[1].buffer;
  } else if (op == "aten::linear" || op == "kiln::linear_post_ops") {
    if (!a.IsBuffer(0) || !a.IsBuffer(1)) return std::nullopt;
    p.a = a.args[0].buffer;
    p.b = a.args[1].buffer;
    p.b_is_nk = true;
    if (a.IsBuffer(2)) {
      p.bias = a.args[2].buffer;
    } else if (!a.IsNone(2)) {
      return std::nullopt;
    }
    if (op == "kiln::linear_post_ops") {
      std::optional<std::vector<std::string>> names = a.Strings(3);
      std::optional<std::vector<double>> scalars = a.Numbers(4);
      if (!names || !scalars || a.args.size() != 6 || !a.args[5].is_list) return std::nullopt;
      absl::StatusOr<std::vector<ir::PostOp>> post = ir::ParsePostOps(*names, *scalars, a.args[5].buffer_list.size());
      if (!post.ok()) return std::nullopt;
      p.post = *std::move(post);
      p.operands = a.args[5].buffer_list;
    }
  } else if (op == "aten::addmm") {
    if (!a.IsBuffer(0) || !a.IsBuffer(1) || !a.IsBuffer(2)) return std::nullopt;
    if (a.Number(3).value_or(1.0) != 1.0 || a.Number(4).value_or(1.0) != 1.0) return std::nullopt;
    if (a.args.size() > 3 && !a.Number(3)) return std::nullopt;
    if (a.args.size() > 4 && !a.Number(4)) return std::nullopt;
    p.bias = a.args[0].buffer;
    p.a = a.args[1].buffer;
    p.b = a.args[2].buffer;
  } else {
    return std::nullopt;
  }
  return p;
}

// A [..., R, C] layout as a 2-D matrix descriptor whose rows fold the
// leading dims (when their strides allow), or with `batched` as it is.
std::optional<memory::desc> MatrixDesc(const lowering::Layout& l, bool batched) {
  const size_t r = l.sizes.size();
  if (r < 2) return std::nullopt;
  auto stride = [&](size_t i) { return l.sizes[i] == 1 ? int64_t{1} : l.strides[i]; };
  if (batched) {
    memory::dims strides;
    for (size_t i = 0; i < r; ++i) strides.push_back(stride(i));
    return memory::desc(Dims(l.sizes), memory::data_type::f32, strides);
  }
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < r; ++i) rows *= l.sizes[i];
  // The leading dims must step through rows with one stride: each outer
  // non-unit dim's stride is the next inner one's stride times its size.
  int64_t row_stride = -1, inner_stride = 0, inner_size = 1;
  for (size_t i = r - 1; i-- > 0;) {
    if (l.sizes[i] == 1) continue;
    if (row_stride < 0) {
      row_stride = l.strides[i];
    } else if (l.strides[i] != inner_stride * inner_size) {
      return std::nullopt;
    }
    inner_stride = l.strides[i];
    inner_size = l.sizes[i];
  }
  const int64_t cols = l.sizes[r - 1];
  if (row_stride < 0) row_stride = std::max<int64_t>(cols, 1);
  return memory::desc({rows, cols}, memory::data_type::f32, {row_stride, stride(r - 1)});
}

class GemmCall : public LibraryCall {
 public:
  static absl::StatusOr<std::unique_ptr<LibraryCall>> Create(const ExternCallSpec& spec, const GemmParams& p,
                                                             const std::vector<Tensor>& constants) {
    auto call = std::unique_ptr<GemmCall>(new GemmCall());
    call->spec_ = &spec;
    call->p_ = p;
    RETURN_IF_ERROR(call->Prepare(constants));
    return std::unique_ptr<LibraryCall>(std::move(call));
  }

  std::vector<bool> ChannelsLastArgs() const override {
    return std::vector<bool>(spec_->buffer_arg_layouts.size(), false);
  }
  bool ChannelsLastOutput() const override { return false; }
  absl::Status SetFormats(const std::vector<ValueFormat>&, ValueFormat) override { return absl::OkStatus(); }
  size_t workspace_bytes() const override { return ws_.total(); }
  std::vector<PackedConstant*> packed_constants() override {
    if (packed_weights_.source == nullptr) return {};
    return {&packed_weights_};
  }
  std::string Describe() const override {
    const auto& l = spec_->buffer_arg_layouts;
    std::string s = absl::StrCat("gemm [", absl::StrJoin(l[static_cast<size_t>(p_.a)].sizes, ","), "] x [",
                                 absl::StrJoin(l[static_cast<size_t>(p_.b)].sizes, ","), "]", p_.b_is_nk ? "^T" : "",
                                 " -> [", absl::StrJoin(spec_->output_layouts[0].sizes, ","), "]");
    if (p_.bias >= 0) absl::StrAppend(&s, " + bias");
    if (!p_.post.empty()) absl::StrAppend(&s, " + ", PostOpsLabel(p_.post));
    absl::StrAppend(&s, " (", impl_, ", ", threads_, "T", packed_weights_.source != nullptr ? ", packed weights" : "", ")");
    return s;
  }

  struct State : CallState {
    memory a, b, bias, dst, scratch;
    std::vector<memory> operands;
    std::unordered_map<int, memory> args;
  };

  std::unique_ptr<CallState> NewState() const override {
    auto s = std::make_unique<State>();
    dnnl::engine& e = Engine();
    s->a = memory(pd_.src_desc(), e, DNNL_MEMORY_NONE);
    s->b = packed_weights_.source != nullptr ? memory(pd_.weights_desc(), e, packed_weights_.storage)
                                             : memory(pd_.weights_desc(), e, DNNL_MEMORY_NONE);
    s->dst = memory(pd_.dst_desc(), e, DNNL_MEMORY_NONE);
    s->scratch = memory(pd_.scratchpad_desc(), e, DNNL_MEMORY_NONE);
    s->args = {{DNNL_ARG_SRC, s->a}, {DNNL_ARG_WEIGHTS, s->b}, {DNNL_ARG_DST, s->dst},
               {DNNL_ARG_SCRATCHPAD, s->scratch}};
    if (p_.bias >= 0) {
      s->bias = memory(bias_desc_, e, DNNL_MEMORY_NONE);
      s->args[DNNL_ARG_BIAS] = s->bias;
    }
    for (const memory::desc& d : operand_descs_) s->operands.push_back(memory(d, e, DNNL_MEMORY_NONE));
    for (const auto& [position, operand] : binary_positions_) {
      s->args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(position) | DNNL_ARG_SRC_1] = s->operands[static_cast<size_t>(operand)];
    }
    return s;
  }

  absl::Status Run(void* const* buffers, CallState& state, RunStream& stream, void* workspace) override {
    State& s = static_cast<State&>(state);
    const auto& layouts = spec_->buffer_arg_layouts;
    const int nargs = static_cast<int>(layouts.size());
    ScopedNumThreads threads(threads_);
    return Guard("gemm", [&] {
      s.a.set_data_handle(DataPointer(buffers[p_.a], layouts[static_cast<size_t>(p_.a)]));
      if (packed_weights_.source == nullptr) {
        s.b.set_data_handle(DataPointer(buffers[p_.b], layouts[static_cast<size_t>(p_.b)]));
      }
      if (p_.bias >= 0) {
        s.bias.set_data_handle(DataPointer(buffers[p_.bias], layouts[static_cast<size_t>(p_.bias)]));
      }
      for (size_t i = 0; i < p_.operands.size(); ++i) {
        const size_t b = static_cast<size_t>(p_.operands[i]);
        s.operands[i].set_data_handle(DataPointer(buffers[b], layouts[b]));
      }
      s.dst.set_data_handle(DataPointer(buffers[nargs], spec_->output_layouts[0]));
      s.scratch.set_data_handle(static_cast<char*>(workspace) + scratch_offset_);
      prim_.execute(StreamOf(stream), s.args);
    });
  }

 private:
  GemmCall() = default;

  absl::Status Prepare(const std::vector<Tensor>& constants) {
    const auto& layouts = spec_->buffer_arg_layouts;
    const lowering::Layout& al = layouts[static_cast<size_t>(p_.a)];
    const lowering::Layout& bl = layouts[static_cast<size_t>(p_.b)];
    const lowering::Layout& yl = spec_->output_layouts[0];
    for (const lowering::Layout* l : {&al, &bl, &yl}) {
      if (l->dtype != DType::kFloat32) return absl::InvalidArgumentError("gemm: not float32");
    }
    // Equal ranks above 2: batched, as N-D descriptors (oneDNN broadcasts
    // size-1 batch dims). A 2-D right operand: rows of any rank fold.
    const bool batched = al.sizes.size() >= 3 && bl.sizes.size() == al.sizes.size();
    if (!batched && bl.sizes.size() != 2) return absl::UnimplementedError("gemm: operands of different ranks");
    std::optional<memory::desc> a = MatrixDesc(al, batched);
    std::optional<memory::desc> y = MatrixDesc(yl, batched);
    if (!a || !y) return absl::UnimplementedError("gemm: rows that do not fold");
    // The right operand as [K, N] (or [B, K, N]).
    memory::dims b_dims = Dims(bl.sizes), b_strides = Dims(bl.strides);
    if (p_.b_is_nk) {
      std::swap(b_dims[b_dims.size() - 1], b_dims[b_dims.size() - 2]);
      std::swap(b_strides[b_strides.size() - 1], b_strides[b_strides.size() - 2]);
    }
    for (size_t i = 0; i < b_dims.size(); ++i) {
      if (b_dims[i] == 1) b_strides[i] = 1;
    }
    const memory::desc b_user(b_dims, memory::data_type::f32, b_strides);
    const memory::dims a_dims = a->dims(), y_dims = y->dims();
    const int64_t k = a_dims.back();
    if (b_dims[b_dims.size() - 2] != k || b_dims.back() != y_dims.back() ||
        a_dims[a_dims.size() - 2] != y_dims[y_dims.size() - 2]) {
      return absl::InvalidArgumentError("gemm: shapes do not match");
    }
    if (k == 0 || y_dims.back() == 0 || y_dims[y_dims.size() - 2] == 0) {
      return absl::UnimplementedError("gemm: empty");
    }
    const int64_t n = y_dims.back();
    memory::dims bias_dims(y_dims.size(), 1);
    bias_dims.back() = n;
    if (p_.bias >= 0) {
      const lowering::Layout& l = layouts[static_cast<size_t>(p_.bias)];
      if (l.dtype != DType::kFloat32 || l.sizes.empty() || l.sizes.back() != n) {
        return absl::UnimplementedError("gemm: a bias that is not one value per column");
      }
      for (size_t i = 0; i + 1 < l.sizes.size(); ++i) {
        if (l.sizes[i] != 1) return absl::UnimplementedError("gemm: a bias that is not one value per column");
      }
      memory::dims strides(bias_dims.size(), 1);
      strides.back() = l.strides.back() == 0 ? 1 : l.strides.back();
      for (size_t i = 0; i + 1 < strides.size(); ++i) strides[i] = n * strides.back();
      bias_desc_ = memory::desc(bias_dims, memory::data_type::f32, strides);
    }
    for (int b : p_.operands) {
      const lowering::Layout& l = layouts[static_cast<size_t>(b)];
      if (l.dtype != DType::kFloat32) return absl::InvalidArgumentError("gemm: a post-op operand is not float32");
      if (l.sizes == yl.sizes) {
        std::optional<memory::desc> d = MatrixDesc(l, batched);
        if (!d) return absl::UnimplementedError("gemm: a post-op operand whose rows do not fold");
        operand_descs_.push_back(*d);
      } else {
        // A broadcast operand must vary along the columns only.
        for (size_t i = 0; i + 1 < l.sizes.size(); ++i) {
          if (l.sizes[i] != 1) return absl::UnimplementedError("gemm: a post-op operand broadcast over rows");
        }
        if (l.sizes.empty() || (l.sizes.back() != n && l.sizes.back() != 1)) {
          return absl::UnimplementedError("gemm: a post-op operand that does not broadcast");
        }
        memory::dims dims(y_dims.size(), 1);
        dims.back() = l.sizes.back();
        operand_descs_.push_back(ContiguousDesc(dims));
      }
    }
    dnnl::post_ops ops;
    RETURN_IF_ERROR(AppendPostOps(p_.post, operand_descs_, &ops, &binary_positions_));
    const Tensor& wc = constants[static_cast<size_t>(p_.b)];
    const bool pack = wc.defined() && wc.has_data();
    // Flops, plus the weights' bytes (a batch-1 GEMV is bound by reading them).
    double batch = 1;
    for (size_t i = 0; i + 2 < y_dims.size(); ++i) batch *= static_cast<double>(y_dims[i]);
    const double rows = static_cast<double>(y_dims[y_dims.size() - 2]);
    threads_ = ThreadsForWork(batch * (2.0 * rows * k * n + kWorkPerWeight * k * n));
    ScopedNumThreads threads(threads_);
    RETURN_IF_ERROR(Guard("gemm", [&] {
      const memory::desc b_core = pack ? memory::desc(b_dims, memory::data_type::f32, memory::format_tag::any) : b_user;
      const memory::desc bias = p_.bias >= 0 ? bias_desc_ : memory::desc();
      dnnl::matmul::desc d(*a, b_core, bias, *y);
      dnnl::primitive_attr attr;
      attr.set_post_ops(ops);
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      pd_ = dnnl::matmul::primitive_desc(d, attr, Engine());
      prim_ = dnnl::matmul(pd_);
      impl_ = pd_.impl_info_str();
    }));
    scratch_offset_ = ws_.Add(pd_.scratchpad_desc().get_size());
    if (pack) {
      packed_weights_.user = b_user;
      packed_weights_.packed = pd_.weights_desc();
      packed_weights_.source = DataPointer(const_cast<void*>(wc.storage()->data()), bl);
    }
    return absl::OkStatus();
  }

  const ExternCallSpec* spec_ = nullptr;
  GemmParams p_;
  dnnl::matmul::primitive_desc pd_;
  dnnl::matmul prim_;
  std::string impl_;
  PackedConstant packed_weights_;  // source null: the right operand from its buffer
  memory::desc bias_desc_;
  std::vector<memory::desc> operand_descs_;
  std::vector<std::pair<int, int>> binary_positions_;
  WorkspaceLayout ws_;
  size_t scratch_offset_ = 0;
  int threads_ = 1;
};

}  // namespace

bool IsGemmOp(const std::string& op) {
  const std::string b = BaseName(op);
  return b == "aten::mm" || b == "aten::bmm" || b == "aten::matmul" || b == "aten::linear" || b == "aten::addmm" ||
         b == "kiln::linear_post_ops";
}

absl::StatusOr<std::unique_ptr<LibraryCall>> PrepareGemm(const ExternCallSpec& spec,
                                                         const std::vector<Tensor>& constants) {
  if (spec.output_layouts.size() != 1) return nullptr;
  const Args a = DecodeArgs(spec);
  std::optional<GemmParams> p = ReadParams(spec, a);
  if (!p) return nullptr;
  return GemmCall::Create(spec, *p, constants);
}

}  // namespace kiln::backends::cpu
