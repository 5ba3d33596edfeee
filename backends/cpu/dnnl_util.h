// What the oneDNN library calls (library_calls.h) share: the engine, memory
// descriptors from kiln layouts, the extern's arguments decoded, post-ops
// from ir/post_ops.h, workspace slices and errors as absl::Status.
// Internal to backends/cpu.
#ifndef KILN_BACKENDS_CPU_DNNL_UTIL_H_
#define KILN_BACKENDS_CPU_DNNL_UTIL_H_

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "backends/cpu/library_calls.h"
#include "ir/ivalue.h"
#include "ir/post_ops.h"
#include "lowering/loop_ir.h"

namespace kiln::backends::cpu::dnnl_util {

using dnnl::memory;

dnnl::engine& Engine();
dnnl::stream& StreamOf(RunStream& s);

// oneDNN throws dnnl::error; library calls return absl::Status.
template <typename F>
absl::Status Guard(const std::string& what, F&& f) {
  try {
    f();
    return absl::OkStatus();
  } catch (const dnnl::error& e) {
    return absl::UnimplementedError(absl::StrCat(what, ": oneDNN: ", e.what()));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat(what, ": ", e.what()));
  }
}

// The extern's arguments, by position: a buffer argument's index among the
// buffers generated code passes, a constant, or a list of buffer indices.
struct Arg {
  int buffer = -1;
  const ir::IValue* constant = nullptr;
  std::vector<int> buffer_list;
  bool is_list = false;
};
struct Args {
  std::vector<Arg> args;
  int num_buffer_args = 0;
  bool IsBuffer(size_t i) const { return i < args.size() && args[i].buffer >= 0; }
  bool IsNone(size_t i) const { return i >= args.size() || (args[i].constant && args[i].constant->isNone()); }
  std::optional<int64_t> Int(size_t i) const;
  std::optional<double> Number(size_t i) const;
  std::optional<bool> Bool(size_t i) const;
  std::optional<std::vector<int64_t>> Ints(size_t i) const;
  std::optional<std::vector<std::string>> Strings(size_t i) const;
  std::optional<std::vector<double>> Numbers(size_t i) const;
};
Args DecodeArgs(const ExternCallSpec& spec);

memory::dims Dims(const std::vector<int64_t>& v);
// The layout as a strided descriptor (its offset is applied to the pointer).
memory::desc LayoutDesc(const lowering::Layout& l);
// [N, C, *S] stored as [N, *S, C] (contiguous).
memory::desc ChannelsLastDesc(const memory::dims& dims);
memory::desc ContiguousDesc(const memory::dims& dims);
// The descriptor a value of `layout` has in its buffer under `format`.
memory::desc UserDesc(const lowering::Layout& layout, ValueFormat format);
// Pointer to element 0 of a buffer with this layout.
void* DataPointer(void* base, const lowering::Layout& l);

// Appends `post` to `ops` (hardsigmoid as linear + clip, clamps as clip_v2);
// operand i's descriptor is operand_descs[i]. `binary` receives, per binary
// step, (its index among oneDNN's post-ops, its operand): where the operand
// goes in the execute arguments.
absl::Status AppendPostOps(const std::vector<ir::PostOp>& post, const std::vector<memory::desc>& operand_descs,
                           dnnl::post_ops* ops, std::vector<std::pair<int, int>>* binary);

std::string PostOpsLabel(const std::vector<ir::PostOp>& post);

// Threads a call of `work` flop-equivalents gets at batch 1: the whole
// pool (the calling thread's OpenMP count), or one thread when the work is
// under 2 * kWorkPerThread (a squeeze-excite 1x1 convolution runs on one
// thread instead of waking sixteen). Never a count in between: libgomp ends
// the surplus threads of its pool whenever a parallel region is smaller
// (but more than one thread) than the one before and starts them again at
// the next larger one, so varying team sizes start threads on every call
// (measured: ~80 thread starts per mobilenet_v3 call with 8 threads).
inline constexpr double kWorkPerThread = 1e6;
// Work counts each weight element a call reads as this many flops: at
// batch 1 a GEMV-like call (a squeeze-excite 1x1 convolution on a 1x1
// image, a linear layer) is bound by reading its weights, which several
// cores do faster than one.
inline constexpr double kWorkPerWeight = 32.0;
int ThreadsForWork(double work);

// Slices of one workspace block, 64-byte aligned.
class WorkspaceLayout {
 public:
  size_t Add(size_t bytes);  // returns the slice's offset
  size_t total() const { return total_; }

 private:
  size_t total_ = 0;
};

// A canonical text of a memory descriptor's layout (data type, dims,
// padding, blocking or Winograd parameters, extra flags), equal exactly when
// oneDNN lays the data out the same; "" for other layouts (not cached).
std::string DescFingerprint(const memory::desc& d);
// oneDNN's version and commit ("2.6.3+<hash>").
std::string LibraryVersion();

// A constant a call keeps in its primitive's layout (packed weights): at
// load, the program gathers every call's packed constants into one arena
// (PackedConstantArena) and each is reordered into its slice once.
struct PackedConstant {
  memory::desc user, packed;
  void* source = nullptr;  // the constant's element 0 (read only)
  void* storage = nullptr;  // its slice of the arena, after Pack
  size_t bytes() const { return packed.get_size(); }
  absl::Status Pack(void* slice);
};

// A reorder between a buffer's descriptor and the one a primitive wants,
// into / out of a workspace slice; a no-op when they are equal.
struct Reorder {
  bool needed = false;
  memory::desc user, core;
  dnnl::reorder prim;
  size_t offset = 0;  // the core-side temporary in the workspace
  absl::Status Prepare(const memory::desc& user_desc, const memory::desc& core_desc, WorkspaceLayout* ws,
                       bool into_core);
  // At run time: points `core` at its workspace slice (when needed), then
  // In reorders user -> core before the primitive, Out core -> user after.
  void In(dnnl::stream& s, memory& user, memory& core, char* workspace) const;
  void Bind(memory& core, char* workspace) const;
  void Out(dnnl::stream& s, memory& core, memory& user) const;
};

// A reorder's two memories for a call's state: the buffer's, and the
// primitive's side (the same memory when no reorder is needed).
std::pair<memory, memory> ReorderMemories(const Reorder& r);

}  // namespace kiln::backends::cpu::dnnl_util

#endif  // KILN_BACKENDS_CPU_DNNL_UTIL_H_
