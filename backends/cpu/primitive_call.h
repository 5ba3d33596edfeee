// PrimitiveCall: what a library call (library_calls.h) that runs one oneDNN
// primitive with one result does the same way for every op (convolution:
// library_conv.cc; pooling: library_pool.cc; channel_mul: library_binary.cc). The primitive is made
// with a user-managed scratchpad, the workspace starts with that scratchpad,
// and a run binds the result to its buffer (reordered out where the layout
// plan keeps it in another format), executes on the call's thread count and
// maps oneDNN's errors to absl::Status. Each op adds its descriptor, its
// sources and their reorders. Internal to backends/cpu.
#ifndef KILN_BACKENDS_CPU_PRIMITIVE_CALL_H_
#define KILN_BACKENDS_CPU_PRIMITIVE_CALL_H_

#include <oneapi/dnnl/dnnl.hpp>

#include <cstddef>
#include <string>
#include <tuple>
#include <unordered_map>

#include "absl/status/status.h"
#include "backends/cpu/dnnl_util.h"
#include "backends/cpu/library_calls.h"
#include "backends/cpu/threads.h"

namespace kiln::backends::cpu {

template <typename Primitive>
class PrimitiveCall : public LibraryCall {
 public:
  size_t workspace_bytes() const override { return ws_.total(); }

 protected:
  // A run's memories of the result and the scratchpad and the execute
  // arguments; an op's state adds its sources.
  struct ResultState : CallState {
    dnnl::memory dst, dst_user, scratch;
    std::unordered_map<int, dnnl::memory> args;
  };

  explicit PrimitiveCall(const ExternCallSpec& spec) : spec_(&spec) {}

  // Makes the primitive from the op descriptor `make_desc()` returns (it may
  // throw too), under threads_: primitives are made for the thread count
  // they run with. `post_ops`: the op's fused epilogue (convolution).
  template <typename MakeDesc>
  absl::Status MakePrimitive(const std::string& what, MakeDesc&& make_desc,
                             const dnnl::post_ops& post_ops = dnnl::post_ops()) {
    ScopedNumThreads threads(threads_);
    return dnnl_util::Guard(what, [&] {
      dnnl::primitive_attr attr;
      attr.set_post_ops(post_ops);
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      pd_ = typename Primitive::primitive_desc(make_desc(), attr, dnnl_util::Engine());
      prim_ = Primitive(pd_);
      impl_ = pd_.impl_info_str();
    });
  }

  // Starts the workspace over with the primitive's scratchpad (SetFormats
  // then adds the sources' reorders and calls PrepareResult).
  void StartWorkspace() {
    ws_ = dnnl_util::WorkspaceLayout();
    scratch_offset_ = ws_.Add(pd_.scratchpad_desc().get_size());
  }
  absl::Status PrepareResult(ValueFormat output) {
    return dst_.Prepare(dnnl_util::UserDesc(spec_->output_layouts[0], output), pd_.dst_desc(), &ws_, false);
  }

  // The result's and the scratchpad's memories and arguments of a new state.
  void InitResultState(ResultState& s) const {
    std::tie(s.dst_user, s.dst) = dnnl_util::ReorderMemories(dst_);
    s.scratch = dnnl::memory(pd_.scratchpad_desc(), dnnl_util::Engine(), DNNL_MEMORY_NONE);
    s.args = {{DNNL_ARG_DST, s.dst}, {DNNL_ARG_SCRATCHPAD, s.scratch}};
  }

  // Runs the primitive under threads_, its result into `result` (the output
  // buffer generated code passes): `bind_sources(stream, workspace)` first
  // points the state's sources at their buffers (and reorders them in).
  template <typename BindSources>
  absl::Status Execute(const std::string& what, ResultState& s, void* result, RunStream& stream, void* workspace,
                       BindSources&& bind_sources) const {
    char* ws = static_cast<char*>(workspace);
    dnnl::stream& strm = dnnl_util::StreamOf(stream);
    ScopedNumThreads threads(threads_);
    return dnnl_util::Guard(what, [&] {
      bind_sources(strm, ws);
      s.dst_user.set_data_handle(dnnl_util::DataPointer(result, spec_->output_layouts[0]));
      dst_.Bind(s.dst, ws);
      s.scratch.set_data_handle(ws + scratch_offset_);
      prim_.execute(strm, s.args);
      dst_.Out(strm, s.dst, s.dst_user);
    });
  }

  const ExternCallSpec* spec_;
  typename Primitive::primitive_desc pd_;
  Primitive prim_;
  std::string impl_;  // oneDNN's implementation, for Describe
  int threads_ = 1;
  dnnl_util::Reorder dst_;
  dnnl_util::WorkspaceLayout ws_;

 private:
  size_t scratch_offset_ = 0;
};

}  // namespace kiln::backends::cpu

#endif  // KILN_BACKENDS_CPU_PRIMITIVE_CALL_H_
