// Convolutions as oneDNN primitives (library_calls.h): forward, float32,
// 1-3 spatial dims, any padding, groups (depthwise included), with the
// epilogue of kiln::conv_post_ops as post-ops. The primitive computes
// channels-last (Winograd's: nChw16c, reordered in and out); constant
// weights are reordered into its layout once.
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/cpu/dnnl_util.h"
#include "backends/cpu/env.h"
#include "backends/cpu/layout_util.h"
#include "backends/cpu/library_ops.h"
#include "backends/cpu/primitive_call.h"
#include "backends/cpu/threads.h"
#include "support/status.h"

namespace kiln::backends::cpu {
namespace {

using dnnl::memory;
using namespace dnnl_util;

struct ConvParams {
  int x = -1, w = -1, b = -1;  // buffer indices (b: -1 = no bias)
  std::vector<int64_t> stride, pad_l, pad_r, dilation;
  int64_t groups = 1;
  std::vector<ir::PostOp> post;
  std::vector<int> operands;  // buffer indices
};

// Reads the arguments of the convolution forms; nullopt when the call is
// not a plain forward convolution the library runs.
std::optional<ConvParams> ReadParams(const ExternCallSpec& spec, const Args& a) {
  const std::string& op = spec.op;
  ConvParams p;
  if (!a.IsBuffer(0) || !a.IsBuffer(1)) return std::nullopt;
  p.x = a.args[0].buffer;
  p.w = a.args[1].buffer;
  if (a.IsBuffer(2)) {
    p.b = a.args[2].buffer;
  } else if (!a.IsNone(2)) {
    return std::nullopt;
  }
  const lowering::Layout& wl = spec.buffer_arg_layouts[static_cast<size_t>(p.w)];
  if (wl.sizes.size() < 3 || wl.sizes.size() > 5) return std::nullopt;
  const size_t k = wl.sizes.size() - 2;
  auto per_dim = [&](size_t i, int64_t dflt) -> std::optional<std::vector<int64_t>> {
    if (i >= a.args.size()) return std::vector<int64_t>(k, dflt);
    std::optional<std::vector<int64_t>> v = a.Ints(i);
    if (v && v->size() == 1 && k > 1) v = std::vector<int64_t>(k, (*v)[0]);
    if (!v || v->size() != k) return std::nullopt;
    return v;
  };
  std::optional<std::vector<int64_t>> stride, pad, dilation;
  std::optional<int64_t> groups = int64_t{1};
  bool onnx_pads = false;
  if (op == "aten::convolution" || op == "aten::_convolution") {
    std::optional<bool> transposed = a.Bool(6);
    if (!transposed || *transposed) return std::nullopt;
    stride = per_dim(3, 1);
    pad = per_dim(4, 0);
    dilation = per_dim(5, 1);
    groups = a.Int(8);
  } else if (op == "aten::conv1d" || op == "aten::conv2d" || op == "aten::conv3d") {
    stride = per_dim(3, 1);
    pad = per_dim(4, 0);
    dilation = per_dim(5, 1);
    if (a.args.size() > 6) groups = a.Int(6);
  } else if (op == "kiln::conv_nd" || op == "kiln::conv_post_ops") {
    stride = per_dim(3, 1);
    pad = a.Ints(4);
    onnx_pads = true;
    dilation = per_dim(5, 1);
    groups = a.Int(6);
  } else {
    return std::nullopt;
  }
  if (!stride || !pad || !dilation || !groups || *groups <= 0) return std::nullopt;
  if (onnx_pads) {
    if (pad->empty()) pad = std::vector<int64_t>(2 * k, 0);
    if (pad->size() != 2 * k) return std::nullopt;
    p.pad_l.assign(pad->begin(), pad->begin() + static_cast<int64_t>(k));
    p.pad_r.assign(pad->begin() + static_cast<int64_t>(k), pad->end());
  } else {
    p.pad_l = p.pad_r = *pad;
  }
  p.stride = *stride;
  p.dilation = *dilation;
  p.groups = *groups;
  if (op == "kiln::conv_post_ops") {
    std::optional<std::vector<std::string>> names = a.Strings(7);
    std::optional<std::vector<double>> scalars = a.Numbers(8);
    if (!names || !scalars || a.args.size() != 10 || !a.args[9].is_list) return std::nullopt;
    absl::StatusOr<std::vector<ir::PostOp>> post = ir::ParsePostOps(*names, *scalars, a.args[9].buffer_list.size());
    if (!post.ok()) return std::nullopt;
    p.post = *std::move(post);
    p.operands = a.args[9].buffer_list;
  }
  for (size_t i = 0; i < k; ++i) {
    if (p.stride[i] <= 0 || p.dilation[i] <= 0 || p.pad_l[i] < 0 || p.pad_r[i] < 0) return std::nullopt;
  }
  return p;
}

// Whether a convolution takes oneDNN's Winograd algorithm (F(2x2, 3x3),
// jit_fp32_wino_2x3 on avx512_core) rather than the direct one. The rule
// is what benchmarks/conv_algorithm_bench measured faster at batch 1 on
// two threads, with the nChw16c reorders in and out included
// (backends/cpu/README.md, "Winograd"): 3x3, stride 1, no dilation, one
// group, 2-D, at least 48 input and output channels and an output of at
// least 14x14 and 30 MFLOP. Smaller images lose (512 and 256 channels on
// 7x7: tiles of 2x2 waste a quarter of an 8x8 grid), and so do few
// channels (16-32: the transforms dominate). Only measured on two threads:
// for a larger team (`threads`, the one the primitive is made for; the
// 16-core host, where the direct convolutions measured at parity with
// onnxruntime on resnet50) the direct one stays until Winograd is measured
// there. KILN_CPU_WINOGRAD=0 turns it off; a Winograd primitive oneDNN
// cannot make (its post-ops, another ISA) falls back to the direct one.
bool PrefersWinograd(const ConvParams& p, const lowering::Layout& wl, const lowering::Layout& yl, double flops,
                     int threads) {
  constexpr int64_t kMinChannels = 48;
  constexpr int64_t kMinSide = 14;
  constexpr double kMinFlops = 30e6;
  constexpr int kMaxMeasuredThreads = 2;
  if (env::WinogradDisabled() || threads > kMaxMeasuredThreads) return false;
  if (wl.sizes.size() != 4 || p.groups != 1) return false;
  for (size_t i = 0; i < 2; ++i) {
    if (p.stride[i] != 1 || p.dilation[i] != 1 || wl.sizes[2 + i] != 3 || yl.sizes[2 + i] < kMinSide) return false;
  }
  return wl.sizes[0] >= kMinChannels && wl.sizes[1] >= kMinChannels && flops >= kMinFlops;
}

class ConvCall : public PrimitiveCall<dnnl::convolution_forward> {
 public:
  static absl::StatusOr<std::unique_ptr<LibraryCall>> Create(const ExternCallSpec& spec, const ConvParams& p,
                                                             const std::vector<Tensor>& constants) {
    auto call = std::unique_ptr<ConvCall>(new ConvCall(spec));
    call->p_ = p;
    RETURN_IF_ERROR(call->Prepare(constants));
    return std::unique_ptr<LibraryCall>(std::move(call));
  }

  std::vector<bool> ChannelsLastArgs() const override {
    std::vector<bool> cl(spec_->buffer_arg_layouts.size(), false);
    cl[static_cast<size_t>(p_.x)] = true;
    for (size_t i = 0; i < p_.operands.size(); ++i) {
      if (operand_full_[i]) cl[static_cast<size_t>(p_.operands[i])] = true;
    }
    return cl;
  }
  bool ChannelsLastOutput() const override { return true; }

  absl::Status SetFormats(const std::vector<ValueFormat>& args, ValueFormat output) override {
    RETURN_IF_ERROR(StartWeights());
    const lowering::Layout& xl = spec_->buffer_arg_layouts[static_cast<size_t>(p_.x)];
    RETURN_IF_ERROR(src_.Prepare(UserDesc(xl, args[static_cast<size_t>(p_.x)]), pd_.src_desc(), &ws_, true));
    RETURN_IF_ERROR(PrepareResult(output));
    operand_reorders_.assign(p_.operands.size(), Reorder());
    for (size_t i = 0; i < p_.operands.size(); ++i) {
      const int b = p_.operands[i];
      const lowering::Layout& l = spec_->buffer_arg_layouts[static_cast<size_t>(b)];
      memory::desc user = operand_full_[i] ? UserDesc(l, args[static_cast<size_t>(b)]) : operand_descs_[i];
      RETURN_IF_ERROR(operand_reorders_[i].Prepare(user, operand_descs_[i], &ws_, true));
    }
    return absl::OkStatus();
  }

  std::vector<PackedConstant*> packed_constants() override {
    if (packed_weights_.source == nullptr) return {};
    return {&packed_weights_};
  }
  std::string Describe() const override {
    const lowering::Layout& xl = spec_->buffer_arg_layouts[static_cast<size_t>(p_.x)];
    const lowering::Layout& wl = spec_->buffer_arg_layouts[static_cast<size_t>(p_.w)];
    std::string s = absl::StrCat("conv [", absl::StrJoin(xl.sizes, ","), "] * [", absl::StrJoin(wl.sizes, ","),
                                 "] /", absl::StrJoin(p_.stride, ","), " g", p_.groups, " -> [",
                                 absl::StrJoin(spec_->output_layouts[0].sizes, ","), "]");
    if (!p_.post.empty()) absl::StrAppend(&s, " + ", PostOpsLabel(p_.post));
    absl::StrAppend(&s, " (", impl_, ", ", threads_, "T", src_.needed ? ", reorder in" : "", dst_.needed ? ", reorder out" : "",
                    packed_weights_.source != nullptr ? "" : weights_reorder_.needed ? ", weights reordered per call" : "",
                    ")");
    return s;
  }

  struct State : ResultState {
    memory src_user, src, weights_user, weights, bias;
    std::vector<memory> operand_user, operands;
  };

  std::unique_ptr<CallState> NewState() const override {
    auto s = std::make_unique<State>();
    InitResultState(*s);
    dnnl::engine& e = Engine();
    std::tie(s->src_user, s->src) = ReorderMemories(src_);
    if (packed_weights_.source != nullptr) {
      s->weights = memory(pd_.weights_desc(), e, packed_weights_.storage);
    } else {
      s->weights_user = memory(weights_reorder_.user, e, DNNL_MEMORY_NONE);
      s->weights = weights_reorder_.needed ? memory(pd_.weights_desc(), e, DNNL_MEMORY_NONE) : s->weights_user;
    }
    s->args[DNNL_ARG_SRC] = s->src;
    s->args[DNNL_ARG_WEIGHTS] = s->weights;
    if (p_.b >= 0) {
      s->bias = memory(bias_desc_, e, DNNL_MEMORY_NONE);
      s->args[DNNL_ARG_BIAS] = s->bias;
    }
    for (const Reorder& r : operand_reorders_) {
      auto [user, core] = ReorderMemories(r);
      s->operand_user.push_back(user);
      s->operands.push_back(core);
    }
    for (const auto& [position, operand] : binary_positions_) {
      s->args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(position) | DNNL_ARG_SRC_1] = s->operands[static_cast<size_t>(operand)];
    }
    return s;
  }

  absl::Status Run(void* const* buffers, CallState& state, RunStream& stream, void* workspace) override {
    State& s = static_cast<State&>(state);
    const auto& layouts = spec_->buffer_arg_layouts;
    return Execute("convolution", s, buffers[layouts.size()], stream, workspace, [&](dnnl::stream& strm, char* ws) {
      s.src_user.set_data_handle(DataPointer(buffers[p_.x], layouts[static_cast<size_t>(p_.x)]));
      src_.In(strm, s.src_user, s.src, ws);
      if (packed_weights_.source == nullptr) {
        s.weights_user.set_data_handle(DataPointer(buffers[p_.w], layouts[static_cast<size_t>(p_.w)]));
        weights_reorder_.In(strm, s.weights_user, s.weights, ws);
      }
      if (p_.b >= 0) s.bias.set_data_handle(DataPointer(buffers[p_.b], layouts[static_cast<size_t>(p_.b)]));
      for (size_t i = 0; i < p_.operands.size(); ++i) {
        const size_t b = static_cast<size_t>(p_.operands[i]);
        s.operand_user[i].set_data_handle(DataPointer(buffers[b], layouts[b]));
        operand_reorders_[i].In(strm, s.operand_user[i], s.operands[i], ws);
      }
    });
  }

 private:
  explicit ConvCall(const ExternCallSpec& spec) : PrimitiveCall(spec) {}

  // The workspace over again: the scratchpad, then the weights' reorder
  // when they are not constant (constants are packed at load).
  absl::Status StartWeights() {
    StartWorkspace();
    if (packed_weights_.source != nullptr) return absl::OkStatus();
    return weights_reorder_.Prepare(weights_user_, pd_.weights_desc(), &ws_, true);
  }

  absl::Status Prepare(const std::vector<Tensor>& constants) {
    const auto& layouts = spec_->buffer_arg_layouts;
    const lowering::Layout& xl = layouts[static_cast<size_t>(p_.x)];
    const lowering::Layout& wl = layouts[static_cast<size_t>(p_.w)];
    const lowering::Layout& yl = spec_->output_layouts[0];
    const size_t r = xl.sizes.size();
    if (r != wl.sizes.size() || r != yl.sizes.size() || xl.dtype != DType::kFloat32 ||
        wl.dtype != DType::kFloat32 || yl.dtype != DType::kFloat32) {
      return absl::InvalidArgumentError("convolution: not a float32 convolution of matching ranks");
    }
    const int64_t g = p_.groups;
    if (xl.sizes[1] % g != 0 || wl.sizes[0] % g != 0 || wl.sizes[1] * g != xl.sizes[1]) {
      return absl::InvalidArgumentError("convolution: channels do not match the groups");
    }
    memory::dims x_dims = Dims(xl.sizes), y_dims = Dims(yl.sizes);
    // Grouped weights as [G, O/G, I/G, *K] over the same memory.
    memory::dims w_dims = Dims(wl.sizes);
    if (g > 1) {
      w_dims.insert(w_dims.begin(), g);
      w_dims[1] /= g;
    }
    memory::dims dilates;
    for (int64_t d : p_.dilation) dilates.push_back(d - 1);
    weights_user_ = g > 1 ? ContiguousDesc(w_dims) : LayoutDesc(wl);
    if (g > 1 && !IsContiguousLayout(wl)) return absl::UnimplementedError("convolution: strided grouped weights");
    bias_desc_ = memory::desc();  // none
    if (p_.b >= 0) {
      const lowering::Layout& bl = layouts[static_cast<size_t>(p_.b)];
      if (bl.sizes.size() != 1 || bl.sizes[0] != yl.sizes[1] || bl.dtype != DType::kFloat32) {
        return absl::InvalidArgumentError("convolution: bias does not match the output channels");
      }
      bias_desc_ = LayoutDesc(bl);
    }
    // Post-op operands: full-size ones in channels-last, broadcast ones (a
    // per-channel gate) as they are, padded on the left to the result's rank.
    for (int b : p_.operands) {
      const lowering::Layout& l = layouts[static_cast<size_t>(b)];
      if (l.dtype != DType::kFloat32 || l.sizes.size() > r) {
        return absl::InvalidArgumentError("convolution: a post-op operand does not broadcast to the result");
      }
      lowering::Layout padded = l;
      padded.sizes.insert(padded.sizes.begin(), r - l.sizes.size(), 1);
      padded.strides.insert(padded.strides.begin(), r - l.strides.size(), 0);
      for (size_t i = 0; i < r; ++i) {
        if (padded.sizes[i] != 1 && padded.sizes[i] != yl.sizes[i]) {
          return absl::InvalidArgumentError("convolution: a post-op operand does not broadcast to the result");
        }
      }
      const bool full = padded.sizes == yl.sizes;
      operand_full_.push_back(full);
      operand_descs_.push_back(full ? ChannelsLastDesc(y_dims) : LayoutDesc(padded));
    }
    dnnl::post_ops ops;
    RETURN_IF_ERROR(AppendPostOps(p_.post, operand_descs_, &ops, &binary_positions_));
    double flops = 2.0 * static_cast<double>(wl.sizes[1]);
    for (int64_t v : yl.sizes) flops *= static_cast<double>(v);
    for (size_t i = 2; i < wl.sizes.size(); ++i) flops *= static_cast<double>(wl.sizes[i]);
    double weights = 1;
    for (int64_t v : wl.sizes) weights *= static_cast<double>(v);
    threads_ = ThreadsForWork(flops + kWorkPerWeight * weights);
    const memory::desc w_any(w_dims, memory::data_type::f32, memory::format_tag::any);
    auto make = [&](dnnl::algorithm algorithm, const memory::desc& x, const memory::desc& y) {
      return [&, algorithm, x, y] {
        return dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, algorithm, x, w_any, bias_desc_, y,
                                               Dims(p_.stride), dilates, Dims(p_.pad_l), Dims(p_.pad_r));
      };
    };
    // Winograd takes its own blocked layout for source and result (src_/dst_
    // reorder); one oneDNN cannot make (its post-ops, another ISA) falls
    // back to the direct algorithm, channels-last.
    absl::Status made = absl::UnknownError("not tried");
    if (PrefersWinograd(p_, wl, yl, flops, threads_)) {
      const memory::desc x_any(x_dims, memory::data_type::f32, memory::format_tag::any);
      const memory::desc y_any(y_dims, memory::data_type::f32, memory::format_tag::any);
      made = MakePrimitive("convolution", make(dnnl::algorithm::convolution_winograd, x_any, y_any), ops);
    }
    if (!made.ok()) {
      RETURN_IF_ERROR(MakePrimitive(
          "convolution",
          make(dnnl::algorithm::convolution_direct, ChannelsLastDesc(x_dims), ChannelsLastDesc(y_dims)), ops));
    }
    // Constant weights are packed at load (packed_constants()); others are
    // reordered each call when the primitive wants another layout.
    const Tensor& wc = constants[static_cast<size_t>(p_.w)];
    if (wc.defined() && wc.has_data() && !(weights_user_ == pd_.weights_desc())) {
      packed_weights_.user = weights_user_;
      packed_weights_.packed = pd_.weights_desc();
      packed_weights_.source = DataPointer(const_cast<void*>(wc.storage()->data()), wl);
    }
    return StartWeights();
  }

  ConvParams p_;
  PackedConstant packed_weights_;  // source null: weights from the buffer
  memory::desc weights_user_;      // the weights as the buffer holds them
  memory::desc bias_desc_;
  Reorder weights_reorder_;  // non-constant weights, each call
  std::vector<bool> operand_full_;
  std::vector<memory::desc> operand_descs_;
  std::vector<std::pair<int, int>> binary_positions_;  // post-op index -> operand
  Reorder src_;
  std::vector<Reorder> operand_reorders_;
};

}  // namespace

bool IsConvolutionOp(const std::string& op) {
  return op == "aten::convolution" || op == "aten::_convolution" || op == "aten::conv1d" || op == "aten::conv2d" ||
         op == "aten::conv3d" || op == "kiln::conv_nd" || op == "kiln::conv_post_ops";
}

absl::StatusOr<std::unique_ptr<LibraryCall>> PrepareConvolution(const ExternCallSpec& spec,
                                                                const std::vector<Tensor>& constants) {
  if (spec.output_layouts.size() != 1) return nullptr;
  const Args a = DecodeArgs(spec);
  std::optional<ConvParams> p = ReadParams(spec, a);
  if (!p) return nullptr;
  return ConvCall::Create(spec, *p, constants);
}

}  // namespace kiln::backends::cpu
