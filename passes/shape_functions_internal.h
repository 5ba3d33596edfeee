// Internals shared by the shape-function files: the argument view a
// shape function reads, helpers several op families need, and the
// per-family implementations that BuildTable() (shape_functions.cc) wires
// to op overloads. Private to //passes:shape_functions.
#ifndef KILN_PASSES_SHAPE_FUNCTIONS_INTERNAL_H_
#define KILN_PASSES_SHAPE_FUNCTIONS_INTERNAL_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "ir/ir.h"
#include "ir/ivalue.h"
#include "ir/op_registry.h"
#include "passes/shape_functions.h"
#include "passes/type_promotion.h"
#include "support/dtype.h"

namespace kiln::passes::shape_internal {

using ir::IValue;
using ir::Node;
using ir::TensorInfo;
using ir::Type;
using ir::TypeKind;
using ir::TypePtr;
using ir::Value;
using Dim = std::optional<int64_t>;
using Dims = std::vector<Dim>;
using Types = std::vector<TypePtr>;

inline TypePtr TensorOf(std::optional<DType> dtype, SymbolicSizes sizes, std::optional<ir::Device> device) {
  TensorInfo info;
  info.dtype = dtype;
  info.sizes = std::move(sizes);
  info.device = std::move(device);
  return Type::TensorWith(std::move(info));
}

// A value known to be an int: a constant, or aten::size.int(x, d) on a dim
// that x's type knows.
Dim KnownInt(const Value* v);

// The arguments of one shape-function call: node inputs, falling back to
// schema defaults for trailing arguments the node leaves out.
class Args {
 public:
  Args(const Node& node, const ir::FunctionSchema& schema, absl::Span<const TypePtr> types,
       absl::Span<const IValue* const> constants)
      : node_(node), schema_(schema), types_(types), constants_(constants) {}

  const Node& node() const { return node_; }
  size_t size() const { return types_.size(); }

  const Type* TypeAt(size_t i) const { return i < types_.size() ? types_[i].get() : nullptr; }
  const TypePtr* TypePtrAt(size_t i) const { return i < types_.size() ? &types_[i] : nullptr; }
  // Null unless input i is a tensor.
  const TensorInfo* Tensor(size_t i) const {
    const Type* t = TypeAt(i);
    return t && t->is_tensor() ? &t->tensor() : nullptr;
  }
  SymbolicSizes Sizes(size_t i) const {
    const TensorInfo* t = Tensor(i);
    return t ? t->sizes : SymbolicSizes();
  }
  std::optional<DType> DTypeOf(size_t i) const {
    const TensorInfo* t = Tensor(i);
    return t ? t->dtype : std::nullopt;
  }
  std::optional<ir::Device> DeviceOf(size_t i) const {
    const TensorInfo* t = Tensor(i);
    return t ? t->device : std::nullopt;
  }

  // The constant for argument i (a node constant or the schema default).
  const IValue* Const(size_t i) const {
    if (i < constants_.size()) return constants_[i];
    if (i < types_.size()) return nullptr;
    if (i < schema_.arguments.size() && schema_.arguments[i].default_value) {
      return &*schema_.arguments[i].default_value;
    }
    return nullptr;
  }
  Dim Int(size_t i) const {
    if (const IValue* c = Const(i)) return c->isInt() ? Dim(c->toInt()) : std::nullopt;
    // Not a constant, but perhaps aten::size of a known dim.
    if (i < node_.inputs().size()) return KnownInt(node_.input(i));
    return std::nullopt;
  }
  std::optional<bool> Bool(size_t i) const {
    const IValue* c = Const(i);
    if (c && c->isBool()) return c->toBool();
    if (c && c->isInt()) return c->toInt() != 0;
    return std::nullopt;
  }
  std::optional<double> Double(size_t i) const {
    const IValue* c = Const(i);
    if (c && c->isNumber()) return c->toNumberAsDouble();
    return std::nullopt;
  }
  const std::string* Str(size_t i) const {
    const IValue* c = Const(i);
    return c && c->isString() ? &c->toString() : nullptr;
  }
  bool IsNone(size_t i) const {
    const IValue* c = Const(i);
    if (c && c->isNone()) return true;
    const Type* t = TypeAt(i);
    return t && t->kind() == TypeKind::kNone;
  }
  // A tensor argument that is statically present (not None-typed).
  bool IsDefinedTensor(size_t i) const { return Tensor(i) != nullptr; }

  // An int[] argument whose length is known, elements possibly unknown:
  // a constant list, a single int for a fixed-size list (`int[2] stride=1`),
  // or a prim::ListConstruct.
  SymbolicSizes IntListElements(size_t i) const {
    if (i < node_.inputs().size()) {
      const Node* producer = node_.input(i)->node();
      if (producer->kind() == ir::sym::kListConstruct) {
        Dims out;
        out.reserve(producer->inputs().size());
        for (const Value* e : producer->inputs()) out.push_back(KnownInt(e));
        return out;
      }
    }
    const IValue* c = Const(i);
    if (!c) return std::nullopt;
    if (c->isInt()) {
      size_t n = 1;
      if (i < schema_.arguments.size() && schema_.arguments[i].fixed_list_size) {
        n = static_cast<size_t>(*schema_.arguments[i].fixed_list_size);
      }
      return Dims(n, c->toInt());
    }
    if (!c->isList()) return std::nullopt;
    Dims out;
    for (const IValue& e : c->elements()) {
      if (!e.isInt()) return std::nullopt;
      out.push_back(e.toInt());
    }
    return out;
  }
  // All elements known.
  std::optional<std::vector<int64_t>> IntList(size_t i) const {
    SymbolicSizes e = IntListElements(i);
    if (!e) return std::nullopt;
    std::vector<int64_t> out;
    out.reserve(e->size());
    for (const Dim& d : *e) {
      if (!d) return std::nullopt;
      out.push_back(*d);
    }
    return out;
  }
  // The types of a Tensor[] argument built by prim::ListConstruct.
  std::optional<std::vector<const Type*>> ListElementTypes(size_t i) const {
    if (i >= node_.inputs().size()) return std::nullopt;
    const Node* producer = node_.input(i)->node();
    if (producer->kind() != ir::sym::kListConstruct) return std::nullopt;
    std::vector<const Type*> out;
    for (const Value* e : producer->inputs()) out.push_back(e->type().get());
    return out;
  }

  // The device shared by the tensor inputs whose device is known; 0-dim
  // tensors do not count (a CPU scalar tensor may join a CUDA op).
  std::optional<ir::Device> CommonDevice() const {
    std::optional<ir::Device> found;
    for (size_t i = 0; i < types_.size(); ++i) {
      const TensorInfo* t = Tensor(i);
      if (!t || !t->device) continue;
      if (t->sizes && t->sizes->empty()) continue;
      if (found && *found != *t->device) return std::nullopt;
      found = t->device;
    }
    return found;
  }

  absl::Status Error(absl::string_view message) const {
    return absl::InvalidArgumentError(absl::StrCat(NodeLabel(node_), ": ", message));
  }

 private:
  const Node& node_;
  const ir::FunctionSchema& schema_;
  absl::Span<const TypePtr> types_;
  absl::Span<const IValue* const> constants_;
};

using ShapeImpl = std::function<absl::StatusOr<Types>(const Args&)>;

// The product of `dims`, nullopt when one is unknown.
std::optional<int64_t> Product(const Dims& dims);

// Normalizes a possibly negative dim against `rank`.
absl::StatusOr<size_t> WrapDim(const Args& a, int64_t dim, size_t rank);

enum class DTypeRule : uint8_t {
  kSame,        // the input's dtype
  kIntToFloat,  // integral and bool inputs give the default float dtype
  kBool,        // always bool
  kIntToLong,   // integral and bool inputs give int64 (sum, prod)
  kLong,        // always int64 (argmax)
};

std::optional<DType> ApplyRule(DTypeRule rule, std::optional<DType> in);

absl::StatusOr<SymbolicSizes> BroadcastOrError(const Args& a, const SymbolicSizes& x,
                                               const SymbolicSizes& y);
std::optional<DType> PromoteInputs(const Args& a, std::initializer_list<size_t> inputs);
absl::Status CheckDimsEqual(const Args& a, Dim x, Dim y, absl::string_view what);

// ------------------------------------------------------------ elementwise
// (shape_functions_elementwise.cc)

enum class BinaryRule : uint8_t {
  kPromote,     // result_type
  kTrueDivide,  // result_type, integral results become the default float
  kDivMode,     // div with rounding_mode (input 2): None -> true divide
  kBool,        // comparisons and logical ops
  kInplace,     // self's type; the other operand must broadcast into it
};

ShapeImpl Unary(DTypeRule rule);
ShapeImpl Binary(BinaryRule rule);
absl::StatusOr<Types> Where(const Args& a);
absl::StatusOr<Types> SizesOf0DTypeOf1(const Args& a);
absl::StatusOr<Types> ToDType(const Args& a);

// ------------------------------------------------------------ reductions
// and normalization (shape_functions_reduce.cc)

struct ReduceSpec {
  std::optional<size_t> dims_arg;     // int[]? or int; none: full reduction
  bool dims_is_single_int = false;    // `int dim` rather than `int[] dim`
  std::optional<size_t> keepdim_arg;
  std::optional<size_t> dtype_arg;
  DTypeRule rule = DTypeRule::kSame;
  bool with_indices = false;          // (values, indices) like max.dim
};

ShapeImpl Reduce(ReduceSpec spec);
absl::StatusOr<Types> SoftmaxLike(const Args& a);
absl::StatusOr<Types> LayerNorm(const Args& a);
absl::StatusOr<Types> ChannelNorm(const Args& a);

// ------------------------------------------------------------ linear algebra,
// conv and pooling (shape_functions_nn.cc)

absl::StatusOr<Types> Linear(const Args& a);
absl::StatusOr<Types> Mm(const Args& a);
absl::StatusOr<Types> Bmm(const Args& a);
absl::StatusOr<Types> Matmul(const Args& a);
absl::StatusOr<Types> Addmm(const Args& a);

// Argument positions of a convolution overload.
struct ConvSpec {
  size_t stride, padding, dilation, groups;
  std::optional<size_t> transposed_arg;  // _convolution / convolution
  bool transposed = false;               // conv_transposeNd
  std::optional<size_t> output_padding;
  bool string_padding = false;  // conv2d.padding: 'same' / 'valid'
  bool allow_unbatched = true;
};

struct PoolSpec {
  size_t k;  // spatial dims
  size_t kernel = 1, stride = 2, padding = 3;
  std::optional<size_t> dilation;
  size_t ceil_mode;
  bool with_indices = false;
};

ShapeImpl Conv(ConvSpec spec);
ShapeImpl Pool(PoolSpec spec);
ShapeImpl AdaptivePool(size_t k, bool with_indices);

// ------------------------------------------------------------ shape ops
// (shape_functions_shape_ops.cc)

absl::StatusOr<Types> TransposeLast2(const Args& a);
absl::StatusOr<Types> Transpose(const Args& a);
absl::StatusOr<Types> Permute(const Args& a);
absl::StatusOr<Types> Flatten(const Args& a);
absl::StatusOr<Types> View(const Args& a);
absl::StatusOr<Types> SizesOf1(const Args& a);
absl::StatusOr<Types> Expand(const Args& a);
absl::StatusOr<Types> Unsqueeze(const Args& a);
absl::StatusOr<Types> Squeeze(const Args& a);
absl::StatusOr<Types> Select(const Args& a);
absl::StatusOr<Types> Cat(const Args& a);
absl::StatusOr<Types> Stack(const Args& a);

// ------------------------------------------------------------ kiln:: ops of
// the ONNX importer (shape_functions_onnx.cc) and aten indexing, generator
// and statistics ops (shape_functions_indexing.cc): (overload, impl) rows
// that BuildTable appends (a null impl: the schema's return types).

std::vector<std::pair<const char*, ShapeImpl>> OnnxShapeEntries();
std::vector<std::pair<const char*, ShapeImpl>> IndexingShapeEntries();

// The types of prim::ListUnpack's `n` outputs when the list comes from
// aten::split / split_with_sizes / chunk / unbind with constant arguments
// over an input of known rank; nullopt otherwise.
std::optional<std::vector<TypePtr>> ListUnpackTypes(const Node& producer, size_t n);

}  // namespace kiln::passes::shape_internal

#endif  // KILN_PASSES_SHAPE_FUNCTIONS_INTERNAL_H_
