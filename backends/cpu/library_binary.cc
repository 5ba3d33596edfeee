// kiln::channel_mul(input, scale) as a oneDNN binary primitive
// (library_calls.h): a squeeze-excite block's gate, [N, C, *S] times
// [N or 1, C, 1, ...] broadcast over the spatial dims
// (passes/library_channel_ops.h), float32. It computes in the input's own
// format -- channels-last between the block's convolutions, plain
// otherwise (oneDNN's binary is jitted for both) -- so the input is never
// reordered; an output the layout plan keeps in the other format is
// reordered out.
#include <memory>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/cpu/dnnl_util.h"
#include "backends/cpu/kernel_codegen.h"
#include "backends/cpu/library_ops.h"
#include "backends/cpu/threads.h"
#include "support/status.h"

namespace kiln::backends::cpu {
namespace {

using dnnl::memory;
using namespace dnnl_util;

class ChannelMulCall : public LibraryCall {
 public:
  static absl::StatusOr<std::unique_ptr<LibraryCall>> Create(const ExternCallSpec& spec) {
    auto call = std::unique_ptr<ChannelMulCall>(new ChannelMulCall());
    call->spec_ = &spec;
    double elements = 1;
    for (int64_t v : spec.output_layouts[0].sizes) elements *= static_cast<double>(v);
    // Memory-bound: the pool from the size at which generated loops go
    // parallel (kParallelThreshold elements); measured on the 2-vCPU VM,
    // a [1, 672, 14, 14] gate takes 10.5 us on one thread and 7.1 on two,
    // [1, 144, 56, 56] 117 and 30, [1, 672, 7, 7] (33k elements) 3.5 and 3.3.
    call->threads_ = ThreadsForWork(elements / static_cast<double>(kParallelThreshold) * 2 * kWorkPerThread);
    // The primitive for channels-last values, to know at load that oneDNN
    // takes the call; SetFormats makes the one the layout plan needs.
    RETURN_IF_ERROR(call->MakePrimitive(ValueFormat::kChannelsLast, ValueFormat::kChannelsLast));
    return std::unique_ptr<LibraryCall>(std::move(call));
  }

  std::vector<bool> ChannelsLastArgs() const override { return {true, true}; }
  bool ChannelsLastOutput() const override { return true; }
  absl::Status SetFormats(const std::vector<ValueFormat>& args, ValueFormat output) override {
    RETURN_IF_ERROR(MakePrimitive(args[0], args[1]));
    ws_ = WorkspaceLayout();
    scratch_offset_ = ws_.Add(pd_.scratchpad_desc().get_size());
    return dst_.Prepare(UserDesc(spec_->output_layouts[0], output), pd_.dst_desc(), &ws_, false);
  }
  size_t workspace_bytes() const override { return ws_.total(); }
  std::string Describe() const override {
    return absl::StrCat("channel_mul [", absl::StrJoin(spec_->buffer_arg_layouts[0].sizes, ","), "] * [",
                        absl::StrJoin(spec_->buffer_arg_layouts[1].sizes, ","), "] (", impl_, ", ", threads_, "T",
                        dst_.needed ? ", reorder out" : "", ")");
  }

  struct State : CallState {
    memory src0, src1, dst, dst_user, scratch;
    std::unordered_map<int, memory> args;
  };
  std::unique_ptr<CallState> NewState() const override {
    auto s = std::make_unique<State>();
    dnnl::engine& e = Engine();
    s->src0 = memory(pd_.src_desc(0), e, DNNL_MEMORY_NONE);
    s->src1 = memory(pd_.src_desc(1), e, DNNL_MEMORY_NONE);
    std::tie(s->dst_user, s->dst) = ReorderMemories(dst_);
    s->scratch = memory(pd_.scratchpad_desc(), e, DNNL_MEMORY_NONE);
    s->args = {{DNNL_ARG_SRC_0, s->src0},
               {DNNL_ARG_SRC_1, s->src1},
               {DNNL_ARG_DST, s->dst},
               {DNNL_ARG_SCRATCHPAD, s->scratch}};
    return s;
  }
  absl::Status Run(void* const* buffers, CallState& state, RunStream& stream, void* workspace) override {
    State& s = static_cast<State&>(state);
    char* ws = static_cast<char*>(workspace);
    dnnl::stream& strm = StreamOf(stream);
    ScopedNumThreads threads(threads_);
    return Guard("channel_mul", [&] {
      s.src0.set_data_handle(DataPointer(buffers[0], spec_->buffer_arg_layouts[0]));
      s.src1.set_data_handle(DataPointer(buffers[1], spec_->buffer_arg_layouts[1]));
      s.dst_user.set_data_handle(DataPointer(buffers[2], spec_->output_layouts[0]));
      dst_.Bind(s.dst, ws);
      s.scratch.set_data_handle(ws + scratch_offset_);
      prim_.execute(strm, s.args);
      dst_.Out(strm, s.dst, s.dst_user);
    });
  }

 private:
  ChannelMulCall() = default;

  // The primitive for these formats of the input and the scale; its
  // result in the input's format (contiguous when plain).
  absl::Status MakePrimitive(ValueFormat input, ValueFormat scale) {
    const lowering::Layout& xl = spec_->buffer_arg_layouts[0];
    const memory::dims dims = Dims(xl.sizes);
    ScopedNumThreads threads(threads_);
    return Guard("channel_mul", [&] {
      dnnl::binary::desc d(dnnl::algorithm::binary_mul, UserDesc(xl, input),
                           UserDesc(spec_->buffer_arg_layouts[1], scale),
                           input == ValueFormat::kChannelsLast ? ChannelsLastDesc(dims) : ContiguousDesc(dims));
      dnnl::primitive_attr attr;
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      pd_ = dnnl::binary::primitive_desc(d, attr, Engine());
      prim_ = dnnl::binary(pd_);
      impl_ = pd_.impl_info_str();
    });
  }

  const ExternCallSpec* spec_ = nullptr;
  dnnl::binary::primitive_desc pd_;
  dnnl::binary prim_;
  std::string impl_;
  Reorder dst_;
  WorkspaceLayout ws_;
  size_t scratch_offset_ = 0;
  int threads_ = 1;
};

}  // namespace

bool IsBinaryOp(const std::string& op) { return op == "kiln::channel_mul"; }

absl::StatusOr<std::unique_ptr<LibraryCall>> PrepareBinary(const ExternCallSpec& spec) {
  const Args a = DecodeArgs(spec);
  if (spec.output_layouts.size() != 1 || spec.buffer_arg_layouts.size() != 2 || !a.IsBuffer(0) || !a.IsBuffer(1)) {
    return nullptr;
  }
  const lowering::Layout& xl = spec.buffer_arg_layouts[0];
  const lowering::Layout& sl = spec.buffer_arg_layouts[1];
  const lowering::Layout& yl = spec.output_layouts[0];
  const size_t rank = xl.sizes.size();
  bool fits = xl.dtype == DType::kFloat32 && sl.dtype == DType::kFloat32 && yl.dtype == DType::kFloat32 &&
              rank >= 3 && rank <= 5 && sl.sizes.size() == rank && yl.sizes == xl.sizes &&
              (sl.sizes[0] == 1 || sl.sizes[0] == xl.sizes[0]) && sl.sizes[1] == xl.sizes[1];
  for (size_t i = 2; fits && i < rank; ++i) fits = sl.sizes[i] == 1;
  if (!fits) return nullptr;
  return ChannelMulCall::Create(spec);
}

}  // namespace kiln::backends::cpu
