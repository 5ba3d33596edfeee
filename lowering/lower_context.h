// Shared state and helpers of one LowerGraph call, used by the per-family
// lowering files (lower_pointwise.cc, lower_reduce.cc, lower_views.cc,
// lower_extern.cc). Internal to the lowering package.
//
// Every tensor value of the graph maps to a TensorRef: the buffer that names
// it (for extern arguments and graph outputs) and the storage buffer plus
// layout that loads read. Loads always name the storage-owning buffer (an
// input, constant, computed or extern buffer), never a view, so generated
// kernels only take storage pointers; kView buffers exist for the wrapper
// (extern arguments, graph outputs) and point at their storage directly.
#ifndef KILN_LOWERING_LOWER_CONTEXT_H_
#define KILN_LOWERING_LOWER_CONTEXT_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "ir/ir.h"
#include "ir/ivalue.h"
#include "ir/op_registry.h"
#include "lowering/loop_ir.h"

namespace kiln::lowering {

struct TensorRef {
  std::string buffer;   // the buffer standing for this value
  std::string storage;  // the buffer owning its storage (what loads read)
  Layout layout;        // sizes/strides/offset within `storage`
  bool is_view() const { return buffer != storage || !layout.IsContiguous(); }
};

// Static facts of a node's tensor output.
struct OutputInfo {
  std::vector<int64_t> sizes;
  DType dtype = DType::kFloat32;
  std::string device = "cpu";
};

class LowerContext {
 public:
  LowerContext(const ir::OpRegistry& registry, LoopGraph* graph)
      : registry_(registry), graph_(graph) {}

  const ir::OpRegistry& registry() const { return registry_; }
  LoopGraph& graph() { return *graph_; }
  // LowerOptions::narrow_float_kernels.
  bool narrow_float_kernels() const { return narrow_float_kernels_; }
  void set_narrow_float_kernels(bool on) { narrow_float_kernels_ = on; }
  // LowerOptions::conv_bias_epilogue.
  bool conv_bias_epilogue() const { return conv_bias_epilogue_; }
  void set_conv_bias_epilogue(bool on) { conv_bias_epilogue_ = on; }
  // Appends `b` to the graph (all buffers are added through here).
  void AddBuffer(Buffer b);
  const Buffer* FindBuffer(const std::string& name) const;

  // --- values ---
  void BindTensor(const ir::Value* v, TensorRef t) {
    on_storage_[t.storage].push_back(v);
    tensors_[v] = std::move(t);
  }
  // Values currently bound to tensors on `storage` (views included).
  std::vector<const ir::Value*> ValuesOnStorage(const std::string& storage) const;
  void BindConstant(const ir::Value* v, ir::IValue c) { constants_[v] = std::move(c); }
  void BindTensorList(const ir::Value* v, std::vector<TensorRef> l) { lists_[v] = std::move(l); }
  const TensorRef* FindTensor(const ir::Value* v) const;
  const ir::IValue* FindConstant(const ir::Value* v) const;
  const std::vector<TensorRef>* FindTensorList(const ir::Value* v) const;

  // --- the node being lowered ---
  void SetNode(const ir::Node* node, const ir::Operator* op) {
    node_ = node;
    op_ = op;
  }
  const ir::Node& node() const { return *node_; }
  const ir::Operator* op() const { return op_; }
  // Unimplemented / InvalidArgument naming the current node.
  absl::Status Unimplemented(absl::string_view what) const;
  absl::Status Invalid(absl::string_view what) const;

  // --- arguments of the current node, by schema name ---
  // The input bound to argument `name`, or null (absent: the default applies).
  const ir::Value* Input(absl::string_view name) const;
  bool HasArg(absl::string_view name) const;
  // The constant passed (or the schema default); nullopt if not constant.
  std::optional<ir::IValue> Const(absl::string_view name) const;
  bool IsNone(absl::string_view name) const;
  bool IsTensorArg(absl::string_view name) const;
  absl::StatusOr<TensorRef> TensorArg(absl::string_view name) const;
  absl::StatusOr<int64_t> IntArg(absl::string_view name) const;
  absl::StatusOr<double> DoubleArg(absl::string_view name) const;
  absl::StatusOr<bool> BoolArg(absl::string_view name) const;
  // An int list (a single int counts as a one-element list); nullopt for None.
  absl::StatusOr<std::optional<std::vector<int64_t>>> IntListArg(absl::string_view name) const;
  absl::StatusOr<std::string> StringArg(absl::string_view name) const;
  // The tensor output `i` of the current node, with static shape and dtype.
  absl::StatusOr<OutputInfo> Output(size_t i = 0) const;

  // --- building buffers (origins come from the current node) ---
  TensorRef AddPointwise(const OutputInfo& out, ExprPtr body);
  TensorRef AddReduction(const OutputInfo& out, std::vector<int64_t> reduction_ranges,
                         ReductionType type, ExprPtr body);
  // A view of `base`'s storage with `layout`; InvalidArgument if it leaves
  // the storage.
  absl::StatusOr<TensorRef> AddView(const TensorRef& base, Layout layout);
  // A kConstant buffer holding `t` (contiguous), with `origin`.
  TensorRef AddConstant(const Tensor& t, std::string origin = "constant");
  std::string NewBufferName() { return "buf" + std::to_string(next_buffer_++); }
  std::string NewConstantName() { return "const" + std::to_string(next_constant_++); }
  // The node's op name without namespace or in-place underscore ("add").
  std::string Origin() const;

  // --- loads ---
  // `t` at per-dimension `indices` (each in bounds), simplified over
  // `var_ranges`. A 0-dim constant with data becomes a literal.
  ExprPtr LoadAt(const TensorRef& t, absl::Span<const ExprPtr> indices,
                 absl::Span<const int64_t> var_ranges) const;
  // `t` broadcast (right-aligned) to `out_sizes`, indexed by v0..v(n-1).
  // InvalidArgument if `t` does not broadcast to `out_sizes`.
  absl::StatusOr<ExprPtr> LoadBroadcast(const TensorRef& t,
                                        absl::Span<const int64_t> out_sizes) const;

 private:
  bool narrow_float_kernels_ = false;
  bool conv_bias_epilogue_ = false;
  const ir::OpRegistry& registry_;
  LoopGraph* graph_;
  const ir::Node* node_ = nullptr;
  const ir::Operator* op_ = nullptr;
  int next_buffer_ = 0;
  int next_constant_ = 0;
  int next_view_ = 0;
  absl::flat_hash_map<std::string, size_t> buffer_index_;
  absl::flat_hash_map<const ir::Value*, TensorRef> tensors_;
  absl::flat_hash_map<const ir::Value*, ir::IValue> constants_;
  absl::flat_hash_map<const ir::Value*, std::vector<TensorRef>> lists_;
  // May hold stale entries (values rebound elsewhere); ValuesOnStorage filters.
  absl::flat_hash_map<std::string, std::vector<const ir::Value*>> on_storage_;
};

// A lowering for one op overload (lowering/lowerings.h names them). Returns
// false (without binding the outputs) when these arguments are not handled
// here, so that the caller falls back to an extern call of the reference
// kernel.
using LoweringFn = std::function<absl::StatusOr<bool>(LowerContext&)>;
// By qualified overload name ("aten::add.Tensor").
using LoweringTable = absl::flat_hash_map<std::string, LoweringFn>;

// The overload that computes `op`'s result without writing its operand: `op`
// itself, or for an in-place op its functional variant matched against the
// current node's inputs (null when it has none).
const ir::Operator* FunctionalOverload(const LowerContext& ctx, const ir::Operator* op);

// `dim` wrapped into [0, rank) like PyTorch (a 0-dim tensor takes 0 and -1);
// InvalidArgument naming the node otherwise.
absl::StatusOr<int64_t> NormalizeDim(const LowerContext& ctx, int64_t dim, int64_t rank);

// `t` with `sizes` (same element count, row-major): a view when the strides
// allow, else a pointwise copy (lower_views.cc).
absl::StatusOr<TensorRef> ReshapeTo(LowerContext& ctx, const TensorRef& t,
                                    const std::vector<int64_t>& sizes);

// One extern call of `op` (a qualified overload such as "aten::mm") on
// buffers, with one output of `out`'s shape; noted in the graph's fallbacks
// as the current node's (lower_extern.cc).
TensorRef AddExternCall(LowerContext& ctx, const std::string& op,
                        const std::vector<TensorRef>& args, const OutputInfo& out);

// The extern-kernel fallback: the node's registry overload with a kernel.
absl::Status LowerAsExtern(LowerContext& ctx);

}  // namespace kiln::lowering

#endif  // KILN_LOWERING_LOWER_CONTEXT_H_
