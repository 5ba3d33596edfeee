// The loop-level IR (Inductor's ir.py, in C++): buffers with fixed layouts,
// and for computed buffers an inner function in a small expression language
// over index variables.
//
//   x (input, Float[1024])                         buf0 = Pointwise(ranges [1024],
//   buf0 = tanh(x + 1)          ---- lowers to --->      tanh(load(x, v0) + 1.0))
//   buf1 = sum(buf0)                               buf1 = Reduction(ranges [], reduction
//                                                         ranges [1024], sum, load(buf0, v0))
//
// Expression semantics (what generated code must compute):
//  * kFloorDiv and kMod are Python's // and % (floor division; the result of
//    % has the divisor's sign). Index arithmetic only ever applies them to
//    non-negative values, where they equal C's / and %.
//  * kRelu is max(x, 0); kSign is -1/0/1; kRound rounds half to even;
//    kMax/kMin propagate NaN (like torch.maximum/minimum).
//  * kWhere must not evaluate the loads of the branch it does not take out of
//    bounds: lowering only builds in-bounds (clamped) indices on both sides,
//    so evaluating both branches is always safe.
//  * kCast converts like static_cast (float->int truncates; x->bool is x!=0).
//  * Operands of a binary op always have the same dtype (lowering inserts
//    kCast), except index arithmetic, which is all kInt64.
//
// Index variables: a Pointwise over ranges [n0, ..., nk-1] binds v0..vk-1 to
// the output index. A Reduction binds v0..vk-1 to the output index (its
// `ranges`) and vk..vk+m-1 to the reduced index (`reduction_ranges`).
// Loads take a flat element offset into the buffer's storage (an int64
// expression: the layout's offset + sum of index * stride), so views are
// reinterpretations, never copies.
#ifndef KILN_LOWERING_LOOP_IR_H_
#define KILN_LOWERING_LOOP_IR_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "ir/ivalue.h"
#include "support/dtype.h"
#include "support/tensor.h"

namespace kiln::ir {
class Graph;  // islands hold one (ir/ir.h); loop_ir needs no //ir dependency
}  // namespace kiln::ir

namespace kiln::lowering {

// A buffer's fixed layout. Strides and offset are in elements.
struct Layout {
  std::string device = "cpu";
  DType dtype = DType::kFloat32;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  int64_t offset = 0;

  static Layout Contiguous(DType dtype, std::vector<int64_t> sizes, std::string device = "cpu");
  int64_t numel() const;
  bool IsContiguous() const;
  // Elements of storage the layout touches (offset + extent); 0 when empty.
  int64_t StorageElements() const;
  int64_t StorageBytes() const { return StorageElements() * static_cast<int64_t>(DTypeSize(dtype)); }
  std::string ToString() const;  // "Float[2, 3] strides [3, 1] offset 0 cpu"
  friend bool operator==(const Layout& a, const Layout& b);
};

enum class ExprOp : uint8_t {
  // Leaves.
  kIndexVar,    // `var`
  kIntConst,    // `int_value` (dtype kInt64 or kBool)
  kFloatConst,  // `float_value` (dtype float)
  kLoad,        // `buffer`, args[0]: flat element offset (int64)
  // Unary (args[0]).
  kNeg, kAbs, kExp, kLog, kSqrt, kRsqrt, kSin, kCos, kTan, kTanh, kSigmoid, kErf, kFloor,
  kCeil, kRound, kTrunc, kReciprocal, kRelu, kLog1p, kExpm1, kLogicalNot, kIsNan, kSign,
  // Binary (args[0], args[1]); comparisons and logical ops give kBool.
  kAdd, kSub, kMul, kDiv, kFloorDiv, kMod, kPow, kMax, kMin,
  kEq, kNe, kLt, kLe, kGt, kGe, kLogicalAnd, kLogicalOr,
  kWhere,  // args: condition (bool), then, else
  kCast,   // args[0] converted to `dtype`
};
const char* ExprOpName(ExprOp op);  // "add", "tanh", "load", ...
// Ops that cost many cycles per element (exp, log, tanh, pow, ...: library
// calls or long instruction sequences), against a few for arithmetic. The
// scheduler recomputes such a node in at most two places, and the CPU
// backend keeps its values rather than computing them twice in one kernel.
bool IsExpensiveOp(ExprOp op);

struct Expr;
using ExprPtr = std::shared_ptr<const Expr>;

struct Expr {
  ExprOp op;
  DType dtype;  // the value's type (index arithmetic is kInt64)
  int var = -1;
  int64_t int_value = 0;
  double float_value = 0;
  std::string buffer;
  std::vector<ExprPtr> args;
};

// Builders (they compute `dtype`: binary ops take their operands' promoted
// type, comparisons kBool; callers insert casts where types differ).
ExprPtr Var(int var);
ExprPtr IntConst(int64_t v, DType dtype = DType::kInt64);
ExprPtr FloatConst(double v, DType dtype = DType::kFloat32);
ExprPtr Load(std::string buffer, DType dtype, ExprPtr index);
ExprPtr Unary(ExprOp op, ExprPtr a);
ExprPtr Binary(ExprOp op, ExprPtr a, ExprPtr b);
ExprPtr Where(ExprPtr cond, ExprPtr a, ExprPtr b);
ExprPtr Cast(ExprPtr a, DType dtype);
// The flat offset of `layout` at index (v_first, ..., v_first+rank-1):
// offset + sum(v_i * stride_i), with size-1 dims skipped.
ExprPtr IndexOf(const Layout& layout, int first_var = 0);
// Added: nodes in the tree counted with multiplicity (shared subtrees count
// once per use), saturating at `cap`.
int64_t ExprTreeSize(const ExprPtr& e, int64_t cap = INT64_MAX);
// Prints `tanh(load(x, v0) + 1.0)`-style text (tests compare it).
std::string ExprToString(const ExprPtr& e);

enum class ReductionType : uint8_t {
  kSum, kProd, kMax, kMin, kArgmax, kArgmin,
  kWelfordMean,  // running mean (Welford), for mean/var/layer_norm
  kWelfordM2,    // sum of squared deviations from the mean (var = m2 / n)
};
const char* ReductionTypeName(ReductionType t);

struct Pointwise {
  std::vector<int64_t> ranges;
  ExprPtr body;
};

// The value stored is the accumulator (the body's dtype; int64 for
// argmax/argmin, which give the first extreme position in the row-major
// flattened reduction_ranges, NaN counting as the extreme) cast to the
// buffer's dtype. kWelfordM2 is the sum of squared deviations (divide by the
// count, minus the correction, in a following pointwise).
struct Reduction {
  std::vector<int64_t> ranges;            // output index space
  std::vector<int64_t> reduction_ranges;  // reduced index space
  ReductionType type = ReductionType::kSum;
  ExprPtr body;
};

// An argument of an extern kernel: a buffer, or a constant (int, float,
// list, None...) passed as is.
struct ExternArg {
  std::string buffer;                 // non-empty: a buffer
  std::optional<ir::IValue> constant;  // otherwise
  // Added by lowering: a Tensor[] argument (aten::cat's list, ...), buffers
  // in order. `is_buffer_list` tells an empty list from a constant.
  bool is_buffer_list = false;
  std::vector<std::string> buffer_list;

  // Whether the argument can be a Tensor[]: a list of buffers, or a
  // constant empty list (an empty Tensor[], e.g. kiln::conv_post_ops'
  // operands of a chain without tensor steps, lowers as a constant).
  bool IsTensorList() const {
    return is_buffer_list || !buffer_list.empty() ||
           (constant.has_value() && constant->isList() && constant->elements().empty());
  }
};

// A canonical op run by a kernel outside generated code: the reference
// kernel of its registry overload, or a library (BLAS) for matmul and
// convolution. `op` is the qualified overload name ("aten::mm").
//
// Interpreter islands (graph breaks, like torch.compile's): a connected group
// of nodes that lowering cannot turn into buffers (non-constant non-tensor
// operands, outputs without a static shape, control flow, string/sequence
// values, ...) becomes ONE ExternCall with op kIslandOp and `island` set: a
// standalone graph cloned from those nodes whose inputs are the call's buffer
// arguments (static-shape tensors, in order; constants the island needs are
// cloned into it) and whose outputs are the call's outputs (static-shape
// tensors, in order). A device runs it with runtime::Interpreter and copies
// the results into the planned output buffers. Islands are not serializable
// (the wrapper proto rejects them with an error naming the island).
inline constexpr const char* kIslandOp = "kiln::interpret";
struct ExternCall {
  std::string op;
  std::vector<ExternArg> args;
  int num_outputs = 1;
  std::shared_ptr<const ir::Graph> island;  // set iff op == kIslandOp
};

enum class BufferKind : uint8_t {
  kInput,     // a graph input
  kConstant,  // `constant` holds the data
  kComputed,  // `pointwise` or `reduction`
  kExtern,    // output `extern_output` of `extern_call`
  kView,      // `layout` reinterprets `view_of`'s storage
};

struct Buffer {
  std::string name;  // "buf3", "arg0", "const1": valid C identifiers
  BufferKind kind = BufferKind::kComputed;
  Layout layout;
  std::optional<Pointwise> pointwise;
  std::optional<Reduction> reduction;
  std::optional<ExternCall> extern_call;  // on the first output's buffer
  std::string extern_source;              // other outputs: the buffer holding the call
  int extern_output = 0;
  std::string view_of;
  Tensor constant;
  // The canonical ops that produced it, without namespace ("add", "tanh"),
  // for kernel names (cpp_fused_add_tanh_0).
  std::vector<std::string> origins;
};

// A node that did not become generated code, for reports: a member of an
// interpreter island, or an op run as an extern call (a library call such as
// GEMM or a convolution, or the op's reference kernel).
struct FallbackNote {
  enum class Kind : uint8_t { kIsland, kExtern };
  Kind kind = Kind::kExtern;
  int island = -1;      // kIsland: which island (0-based, in program order)
  std::string buffer;   // the call's first output buffer ("" for a whole-graph island)
  std::string op;       // the node's kind or overload ("aten::index.Tensor", "prim::If")
  std::string node;     // the model's node name (its scope), else "%<first output>"
  std::string reason;   // why it was not lowered to a kernel
};

// A lowered graph: buffers in topological order.
struct LoopGraph {
  std::vector<Buffer> buffers;
  std::vector<std::string> inputs;   // graph inputs, in order
  std::vector<std::string> outputs;  // graph outputs, in order (may repeat, may be inputs)
  // Set (and everything else empty) when the whole graph is one interpreter
  // island: its inputs or outputs are not static-shape tensors (sequences,
  // strings, optionals, data-dependent shapes). The compiled program then
  // simply runs this graph with runtime::Interpreter.
  std::shared_ptr<const ir::Graph> interpreted_graph;
  // Top-level nodes (prim::Constant excluded) that run in islands, and the
  // number of islands (1 for a whole-graph island).
  int num_island_nodes = 0;
  int num_islands = 0;
  // Every island member and every extern call, in program order.
  std::vector<FallbackNote> fallbacks;

  const Buffer* Find(absl::string_view name) const;
  Buffer* FindMutable(absl::string_view name);
  // Readable dump (one buffer per line), for tests and `kiln compile
  // --compile-to=loops`.
  std::string ToString() const;
};

}  // namespace kiln::lowering

#endif  // KILN_LOWERING_LOOP_IR_H_
