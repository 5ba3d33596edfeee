// Pooling as a oneDNN primitive (library_calls.h), float32, channels-last
// like the convolutions around it: aten::max_pool1d/2d/3d (values only) and
// kiln::global_avg_pool (a squeeze-excite block's mean over every spatial
// dim, passes/library_channel_ops.h). oneDNN 2.6's pooling is jitted for
// channels-last sources only (a plain one runs ref:any, ~500x slower: a
// [1, 72, 28, 28] mean 610 us against 1.3 us), so a plain source is
// reordered in; its reduction primitive is ref:any for channels-last
// sources, so the mean is an average pooling with the whole image as its
// window.
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/cpu/dnnl_util.h"
#include "backends/cpu/library_ops.h"
#include "backends/cpu/primitive_call.h"
#include "support/status.h"

namespace kiln::backends::cpu {
namespace {

using dnnl::memory;
using namespace dnnl_util;

// A pooling window over the spatial dims, in oneDNN's terms.
struct PoolGeometry {
  const char* name = "";
  dnnl::algorithm algorithm = dnnl::algorithm::pooling_max;
  memory::dims kernel, stride, pad_l, pad_r, dilates;  // dilates: 0 = dense
};

// aten::max_poolNd(self, kernel_size, stride=[], padding=0, dilation=1,
// ceil_mode=False): the output's sizes (from shape propagation) decide
// ceil_mode's extra right padding.
std::optional<PoolGeometry> MaxPoolGeometry(const ExternCallSpec& spec) {
  const Args a = DecodeArgs(spec);
  const lowering::Layout& xl = spec.buffer_arg_layouts[0];
  const lowering::Layout& yl = spec.output_layouts[0];
  const size_t k = xl.sizes.size() - 2;
  auto per_dim = [&](size_t i, std::vector<int64_t> dflt) -> std::optional<std::vector<int64_t>> {
    if (i >= a.args.size()) return dflt;
    std::optional<std::vector<int64_t>> v = a.Ints(i);
    if (v && v->empty()) return dflt;
    if (v && v->size() == 1 && k > 1) v = std::vector<int64_t>(k, (*v)[0]);
    if (!v || v->size() != k) return std::nullopt;
    return v;
  };
  std::optional<std::vector<int64_t>> kernel = per_dim(1, {});
  if (!kernel) return std::nullopt;
  std::optional<std::vector<int64_t>> stride = per_dim(2, *kernel);
  std::optional<std::vector<int64_t>> pad = per_dim(3, std::vector<int64_t>(k, 0));
  std::optional<std::vector<int64_t>> dilation = per_dim(4, std::vector<int64_t>(k, 1));
  if (!stride || !pad || !dilation) return std::nullopt;
  PoolGeometry g;
  g.name = "max_pool";
  g.algorithm = dnnl::algorithm::pooling_max;
  for (size_t i = 0; i < k; ++i) {
    const int64_t in = xl.sizes[2 + i], out = yl.sizes[2 + i];
    const int64_t extent = ((*kernel)[i] - 1) * (*dilation)[i] + 1;
    const int64_t right = (out - 1) * (*stride)[i] + extent - in - (*pad)[i];
    if ((*kernel)[i] <= 0 || (*stride)[i] <= 0 || (*dilation)[i] <= 0 || (*pad)[i] < 0 || right < 0) {
      return std::nullopt;
    }
    g.pad_r.push_back(right);
    g.dilates.push_back((*dilation)[i] - 1);
  }
  g.kernel = Dims(*kernel);
  g.stride = Dims(*stride);
  g.pad_l = Dims(*pad);
  return g;
}

// kiln::global_avg_pool(input): [N, C, *S] -> [N, C, 1, ...], the whole
// image as one window.
std::optional<PoolGeometry> GlobalAvgPoolGeometry(const ExternCallSpec& spec) {
  const lowering::Layout& xl = spec.buffer_arg_layouts[0];
  const lowering::Layout& yl = spec.output_layouts[0];
  const size_t k = xl.sizes.size() - 2;
  if (yl.sizes[0] != xl.sizes[0] || yl.sizes[1] != xl.sizes[1]) return std::nullopt;
  PoolGeometry g;
  g.name = "global_avg_pool";
  g.algorithm = dnnl::algorithm::pooling_avg_exclude_padding;  // no padding: either average
  for (size_t i = 0; i < k; ++i) {
    if (xl.sizes[2 + i] <= 0 || yl.sizes[2 + i] != 1) return std::nullopt;
    g.kernel.push_back(xl.sizes[2 + i]);
  }
  g.stride = g.kernel;
  g.pad_l.assign(k, 0);
  g.pad_r.assign(k, 0);
  g.dilates.assign(k, 0);
  return g;
}

class PoolCall : public PrimitiveCall<dnnl::pooling_v2_forward> {
 public:
  static absl::StatusOr<std::unique_ptr<LibraryCall>> Create(const ExternCallSpec& spec, PoolGeometry g) {
    auto call = std::unique_ptr<PoolCall>(new PoolCall(spec));
    call->g_ = std::move(g);
    RETURN_IF_ERROR(call->Prepare());
    return std::unique_ptr<LibraryCall>(std::move(call));
  }

  std::vector<bool> ChannelsLastArgs() const override { return {true}; }
  bool ChannelsLastOutput() const override { return true; }
  absl::Status SetFormats(const std::vector<ValueFormat>& args, ValueFormat output) override {
    StartWorkspace();
    RETURN_IF_ERROR(src_.Prepare(UserDesc(spec_->buffer_arg_layouts[0], args[0]), pd_.src_desc(), &ws_, true));
    return PrepareResult(output);
  }
  std::string Describe() const override {
    return absl::StrCat(g_.name, " [", absl::StrJoin(spec_->buffer_arg_layouts[0].sizes, ","), "] -> [",
                        absl::StrJoin(spec_->output_layouts[0].sizes, ","), "] (", impl_, ", ", threads_, "T",
                        src_.needed ? ", reorder in" : "", dst_.needed ? ", reorder out" : "", ")");
  }

  struct State : ResultState {
    memory src_user, src;
  };
  std::unique_ptr<CallState> NewState() const override {
    auto s = std::make_unique<State>();
    InitResultState(*s);
    std::tie(s->src_user, s->src) = ReorderMemories(src_);
    s->args[DNNL_ARG_SRC] = s->src;
    return s;
  }
  absl::Status Run(void* const* buffers, CallState& state, RunStream& stream, void* workspace) override {
    State& s = static_cast<State&>(state);
    return Execute(g_.name, s, buffers[1], stream, workspace, [&](dnnl::stream& strm, char* ws) {
      s.src_user.set_data_handle(DataPointer(buffers[0], spec_->buffer_arg_layouts[0]));
      src_.In(strm, s.src_user, s.src, ws);
    });
  }

 private:
  explicit PoolCall(const ExternCallSpec& spec) : PrimitiveCall(spec) {}

  absl::Status Prepare() {
    const lowering::Layout& xl = spec_->buffer_arg_layouts[0];
    const lowering::Layout& yl = spec_->output_layouts[0];
    double work = 1;
    for (int64_t v : yl.sizes) work *= static_cast<double>(v);
    for (int64_t v : g_.kernel) work *= static_cast<double>(v);
    threads_ = ThreadsForWork(work);
    return MakePrimitive(g_.name, [&] {
      return dnnl::pooling_v2_forward::desc(dnnl::prop_kind::forward_inference, g_.algorithm,
                                            ChannelsLastDesc(Dims(xl.sizes)), ChannelsLastDesc(Dims(yl.sizes)),
                                            g_.stride, g_.kernel, g_.dilates, g_.pad_l, g_.pad_r);
    });
  }

  PoolGeometry g_;
  Reorder src_;
};

}  // namespace

bool IsPoolOp(const std::string& op) {
  return op == "aten::max_pool1d" || op == "aten::max_pool2d" || op == "aten::max_pool3d" ||
         op == "kiln::global_avg_pool";
}

absl::StatusOr<std::unique_ptr<LibraryCall>> PreparePool(const ExternCallSpec& spec) {
  if (spec.output_layouts.size() != 1 || spec.buffer_arg_layouts.size() != 1 || !DecodeArgs(spec).IsBuffer(0)) {
    return nullptr;
  }
  const lowering::Layout& xl = spec.buffer_arg_layouts[0];
  const lowering::Layout& yl = spec.output_layouts[0];
  if (xl.dtype != DType::kFloat32 || yl.dtype != DType::kFloat32 || xl.sizes.size() < 3 || xl.sizes.size() > 5 ||
      xl.sizes.size() != yl.sizes.size()) {
    return nullptr;
  }
  std::optional<PoolGeometry> g =
      spec.op == "kiln::global_avg_pool" ? GlobalAvgPoolGeometry(spec) : MaxPoolGeometry(spec);
  if (!g) return nullptr;
  return PoolCall::Create(spec, *std::move(g));
}

}  // namespace kiln::backends::cpu
