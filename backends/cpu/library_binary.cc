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
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/cpu/dnnl_util.h"
#include "backends/cpu/kernel_codegen.h"
#include "backends/cpu/library_ops.h"
#include "backends/cpu/primitive_call.h"
#include "support/status.h"

namespace kiln::backends::cpu {
namespace {

using dnnl::memory;
using namespace dnnl_util;

class ChannelMulCall : public PrimitiveCall<dnnl::binary> {
 public:
  static absl::StatusOr<std::unique_ptr<LibraryCall>> Create(const ExternCallSpec& spec) {
    auto call = std::unique_ptr<ChannelMulCall>(new ChannelMulCall(spec));
    double elements = 1;
    for (int64_t v : spec.output_layouts[0].sizes) elements *= static_cast<double>(v);
    // Memory-bound: the pool from the size at which generated loops go
    // parallel (kParallelThreshold elements); measured on the 2-vCPU VM,
    // a [1, 672, 14, 14] gate takes 10.5 us on one thread and 7.1 on two,
    // [1, 144, 56, 56] 117 and 30, [1, 672, 7, 7] (33k elements) 3.5 and 3.3.
    call->threads_ = ThreadsForWork(elements / static_cast<double>(kParallelThreshold) * 2 * kWorkPerThread);
    // The primitive for channels-last values, to know at load that oneDNN
    // takes the call; SetFormats makes the one the layout plan needs.
    RETURN_IF_ERROR(call->MakeBinary(ValueFormat::kChannelsLast, ValueFormat::kChannelsLast));
    return std::unique_ptr<LibraryCall>(std::move(call));
  }

  std::vector<bool> ChannelsLastArgs() const override { return {true, true}; }
  bool ChannelsLastOutput() const override { return true; }
  absl::Status SetFormats(const std::vector<ValueFormat>& args, ValueFormat output) override {
    RETURN_IF_ERROR(MakeBinary(args[0], args[1]));
    StartWorkspace();
    return PrepareResult(output);
  }
  std::string Describe() const override {
    return absl::StrCat("channel_mul [", absl::StrJoin(spec_->buffer_arg_layouts[0].sizes, ","), "] * [",
                        absl::StrJoin(spec_->buffer_arg_layouts[1].sizes, ","), "] (", impl_, ", ", threads_, "T",
                        dst_.needed ? ", reorder out" : "", ")");
  }

  struct State : ResultState {
    memory src0, src1;
  };
  std::unique_ptr<CallState> NewState() const override {
    auto s = std::make_unique<State>();
    InitResultState(*s);
    s->src0 = memory(pd_.src_desc(0), Engine(), DNNL_MEMORY_NONE);
    s->src1 = memory(pd_.src_desc(1), Engine(), DNNL_MEMORY_NONE);
    s->args[DNNL_ARG_SRC_0] = s->src0;
    s->args[DNNL_ARG_SRC_1] = s->src1;
    return s;
  }
  absl::Status Run(void* const* buffers, CallState& state, RunStream& stream, void* workspace) override {
    State& s = static_cast<State&>(state);
    return Execute("channel_mul", s, buffers[2], stream, workspace, [&](dnnl::stream&, char*) {
      s.src0.set_data_handle(DataPointer(buffers[0], spec_->buffer_arg_layouts[0]));
      s.src1.set_data_handle(DataPointer(buffers[1], spec_->buffer_arg_layouts[1]));
    });
  }

 private:
  explicit ChannelMulCall(const ExternCallSpec& spec) : PrimitiveCall(spec) {}

  // The primitive for these formats of the input and the scale; its
  // result in the input's format (contiguous when plain).
  absl::Status MakeBinary(ValueFormat input, ValueFormat scale) {
    const lowering::Layout& xl = spec_->buffer_arg_layouts[0];
    const memory::dims dims = Dims(xl.sizes);
    return MakePrimitive("channel_mul", [&] {
      return dnnl::binary::desc(dnnl::algorithm::binary_mul, UserDesc(xl, input),
                                UserDesc(spec_->buffer_arg_layouts[1], scale),
                                input == ValueFormat::kChannelsLast ? ChannelsLastDesc(dims) : ContiguousDesc(dims));
    });
  }
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
