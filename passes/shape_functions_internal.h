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
#include "ir/constants.h"
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

// The product of the dims, when all are known.
inline std::optional<int64_t> Product(const Dims& dims) {
  int64_t p = 1;
  for (const Dim& d : dims) {
    if (!d) return std::nullopt;
    p *= *d;
  }
  return p;
}

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
  // The value of a tensor argument that is a prim::Constant (ONNX
  // initializers: Resize's sizes, OneHot's depth...); null otherwise.
  const ::kiln::Tensor* ConstTensor(size_t i) const;
  // An int value held by a constant one-element tensor argument.
  Dim ConstTensorInt(size_t i) const;
  // The ints held by a constant 1-D (or 0-dim) int tensor argument.
  std::optional<std::vector<int64_t>> ConstTensorInts(size_t i) const;
  // The position of the schema argument `name`, or nullopt.
  std::optional<size_t> ArgIndex(absl::string_view name) const {
    int i = schema_.ArgumentIndex(name);
    return i < 0 ? std::nullopt : std::optional<size_t>(static_cast<size_t>(i));
  }
  size_t NumReturns() const { return schema_.returns.size(); }
  const ir::FunctionSchema& schema() const { return schema_; }

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
  // The types of a Tensor[] argument built by prim::ListConstruct, or of a
  // constant list's elements (constant propagation folds a ListConstruct of
  // constants, such as an index tensor, into one).
  std::optional<std::vector<const Type*>> ListElementTypes(size_t i) const {
    if (i >= node_.inputs().size()) return std::nullopt;
    const Node* producer = node_.input(i)->node();
    std::vector<const Type*> out;
    if (producer->kind() == ir::sym::kListConstruct) {
      for (const Value* e : producer->inputs()) out.push_back(e->type().get());
      return out;
    }
    std::optional<IValue> c = ir::ConstantValue(node_.input(i));
    if (!c || !c->isList()) return std::nullopt;
    for (const IValue& e : c->elements()) {
      if (e.isNone()) {
        constant_element_types_.push_back(Type::None());
      } else if (e.isTensor()) {
        const std::vector<int64_t>& sizes = e.toTensor().sizes();
        constant_element_types_.push_back(
            TensorOf(e.toTensor().dtype(), Dims(sizes.begin(), sizes.end()), std::nullopt));
      } else {
        return std::nullopt;
      }
      out.push_back(constant_element_types_.back().get());  // owned by this Args
    }
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
  // The types ListElementTypes hands out for constant lists.
  mutable std::vector<TypePtr> constant_element_types_;
};

using ShapeImpl = std::function<absl::StatusOr<Types>(const Args&)>;

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
// Sizes of input 0, dtype from the ScalarType argument `dtype_arg` (None: input 0's).
ShapeImpl ToDTypeAt(size_t dtype_arg);
// addcmul / addcdiv: inputs 0, 1, 2 broadcast and promote.
absl::StatusOr<Types> Ternary(const Args& a);
// clamp.Tensor(self, min?, max?): the present operands broadcast and promote.
absl::StatusOr<Types> ClampTensor(const Args& a);
// glu(self, dim): the dim halves.
absl::StatusOr<Types> Glu(const Args& a);

// ------------------------------------------------------------ reductions
// and normalization (shape_functions_reduce.cc)

struct ReduceSpec {
  std::optional<size_t> dims_arg;     // int[]? or int; none: full reduction
  bool dims_is_single_int = false;    // `int dim` rather than `int[] dim`
  std::optional<size_t> keepdim_arg;
  std::optional<size_t> dtype_arg;
  DTypeRule rule = DTypeRule::kSame;
  bool with_indices = false;          // (values, indices) like max.dim
  bool pair = false;                  // (moment, mean) like var_mean: two alike outputs
};

// The reductions of ops/defs/reduce.def, by argument layout.
inline constexpr ReduceSpec kSumAll{std::nullopt, false, std::nullopt, 1, DTypeRule::kIntToLong};
inline constexpr ReduceSpec kSumDims{1, false, 2, 3, DTypeRule::kIntToLong};
inline constexpr ReduceSpec kMeanAll{std::nullopt, false, std::nullopt, 1, DTypeRule::kSame};
inline constexpr ReduceSpec kMeanDims{1, false, 2, 3, DTypeRule::kSame};
inline constexpr ReduceSpec kProdDim{1, true, 2, 3, DTypeRule::kIntToLong};
inline constexpr ReduceSpec kExtremumDims{1, false, 2, std::nullopt, DTypeRule::kSame};
inline constexpr ReduceSpec kLogsumexpDims{1, false, 2, std::nullopt, DTypeRule::kIntToFloat};
inline constexpr ReduceSpec kArgDim{1, true, 2, std::nullopt, DTypeRule::kLong};
inline constexpr ReduceSpec kWhole{std::nullopt, false, std::nullopt, std::nullopt, DTypeRule::kSame};
inline constexpr ReduceSpec kWithIndicesDim{1, true, 2, std::nullopt, DTypeRule::kSame, true};
inline constexpr ReduceSpec kBoolWhole{std::nullopt, false, std::nullopt, std::nullopt, DTypeRule::kBool};
inline constexpr ReduceSpec kBoolDim{1, true, 2, std::nullopt, DTypeRule::kBool};
inline constexpr ReduceSpec kBoolDims{1, false, 2, std::nullopt, DTypeRule::kBool};
inline constexpr ReduceSpec kMomentAll{std::nullopt, false, std::nullopt, std::nullopt, DTypeRule::kSame};
inline constexpr ReduceSpec kMomentDims{1, false, 3, std::nullopt, DTypeRule::kSame};
inline constexpr ReduceSpec kMomentPairAll{std::nullopt, false, std::nullopt, std::nullopt,
                                           DTypeRule::kSame, false, true};
inline constexpr ReduceSpec kMomentPairDims{1, false, 3, std::nullopt, DTypeRule::kSame, false, true};
inline constexpr ReduceSpec kNormAll{std::nullopt, false, std::nullopt, std::nullopt, DTypeRule::kSame};
inline constexpr ReduceSpec kNormDims{2, false, 3, std::nullopt, DTypeRule::kSame};
inline constexpr ReduceSpec kNormDimsDtype{2, false, 3, 4, DTypeRule::kSame};
inline constexpr ReduceSpec kNormAllDtype{std::nullopt, false, std::nullopt, 2, DTypeRule::kSame};
inline constexpr ReduceSpec kVectorNorm{2, false, 3, 4, DTypeRule::kSame};
inline constexpr ReduceSpec kFrobeniusDims{1, false, 2, std::nullopt, DTypeRule::kSame};
inline constexpr ReduceSpec kCountOptDim{1, true, std::nullopt, std::nullopt, DTypeRule::kLong};
inline constexpr ReduceSpec kCountDims{1, false, std::nullopt, std::nullopt, DTypeRule::kLong};
inline constexpr ReduceSpec kArgExtreme{1, true, 2, std::nullopt, DTypeRule::kLong};

ShapeImpl Reduce(ReduceSpec spec);
absl::StatusOr<Types> SoftmaxLike(const Args& a);
// _softmax / _log_softmax(self, dim, half_to_float): Float when half_to_float.
absl::StatusOr<Types> HalfToFloatSoftmax(const Args& a);
absl::StatusOr<Types> LayerNorm(const Args& a);
absl::StatusOr<Types> ChannelNorm(const Args& a);
absl::StatusOr<Types> OnnxReduceShape(const Args& a);
absl::StatusOr<Types> NativeLayerNorm(const Args& a);
absl::StatusOr<Types> NativeBatchNorm(const Args& a);
absl::StatusOr<Types> NativeGroupNorm(const Args& a);
absl::StatusOr<Types> BatchNormTraining(const Args& a);
absl::StatusOr<Types> OnnxLayerNorm(const Args& a);

// ------------------------------------------------------------ linear algebra,
// conv and pooling (shape_functions_nn.cc)

absl::StatusOr<Types> Linear(const Args& a);
absl::StatusOr<Types> Mm(const Args& a);
absl::StatusOr<Types> Bmm(const Args& a);
absl::StatusOr<Types> Matmul(const Args& a);
// kiln::attention(q, kt, v, mask?, scale): softmax(q @ kt * scale + mask) @ v,
// [..., L, E] x [..., E, S] x [..., S, D] -> [..., L, D].
absl::StatusOr<Types> Attention(const Args& a);
absl::StatusOr<Types> Addmm(const Args& a);
absl::StatusOr<Types> Baddbmm(const Args& a);
absl::StatusOr<Types> Dot(const Args& a);
absl::StatusOr<Types> Mv(const Args& a);
absl::StatusOr<Types> Outer(const Args& a);
absl::StatusOr<Types> EinsumShape(const Args& a);
absl::StatusOr<Types> Det(const Args& a);
absl::StatusOr<Types> QLinearMatMul(const Args& a);

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

// Argument layouts of the aten convolutions and poolings (ops/defs/conv_pool.def).
// conv{1,2,3}d(input, weight, bias, stride, padding, dilation, groups)
inline const ConvSpec kConvSpec{3, 4, 5, 6};
// conv{1,2,3}d.padding: padding "valid" / "same".
inline const ConvSpec kConvStringPaddingSpec{3, 4, 5, 6, std::nullopt, false, std::nullopt, true};
// convolution(input, weight, bias, stride, padding, dilation, transposed,
//             output_padding, groups); _convolution adds flags after.
inline const ConvSpec kConvolutionSpec{3, 4, 5, 8, 6, false, 7, false, false};
// conv_transposeNd(input, weight, bias, stride, padding, output_padding, groups, dilation)
inline const ConvSpec kConvTransposeSpec{3, 4, 7, 6, std::nullopt, true, 5};
// max_poolNd(self, kernel_size, stride, padding, dilation, ceil_mode)
inline const PoolSpec kMaxPool1d{1, 1, 2, 3, 4, 5, false};
inline const PoolSpec kMaxPool2d{2, 1, 2, 3, 4, 5, false};
inline const PoolSpec kMaxPool3d{3, 1, 2, 3, 4, 5, false};
inline const PoolSpec kMaxPool1dIndices{1, 1, 2, 3, 4, 5, true};
inline const PoolSpec kMaxPool2dIndices{2, 1, 2, 3, 4, 5, true};
inline const PoolSpec kMaxPool3dIndices{3, 1, 2, 3, 4, 5, true};
// avg_poolNd(self, kernel_size, stride, padding, ceil_mode, ...)
inline const PoolSpec kAvgPool1d{1, 1, 2, 3, std::nullopt, 4, false};
inline const PoolSpec kAvgPool2d{2, 1, 2, 3, std::nullopt, 4, false};
inline const PoolSpec kAvgPool3d{3, 1, 2, 3, std::nullopt, 4, false};

// ONNX convolutions: kiln::conv_nd(input, weight, bias?, stride, pads, dilation, groups) and
// friends, pads all begins then all ends.
absl::StatusOr<Types> OnnxConv(const Args& a);
absl::StatusOr<Types> OnnxConvTranspose(const Args& a);
absl::StatusOr<Types> OnnxConvInteger(const Args& a);
absl::StatusOr<Types> OnnxQLinearConv(const Args& a);
// kiln::{max,avg,lp}_pool_nd(x, kernel, stride, pads, dilation, ceil_mode, ...).
ShapeImpl OnnxPool(bool with_indices);
absl::StatusOr<Types> GlobalPool(const Args& a);
ShapeImpl MaxUnpool(size_t k);
absl::StatusOr<Types> OnnxMaxUnpool(const Args& a);
// upsample_*{k}d (output_size) and .vec (output_size? or scale_factors?).
ShapeImpl Upsample(size_t k, bool vec);
absl::StatusOr<Types> GridSampler(const Args& a);
// pixel_shuffle / depth_to_space (up) and pixel_unshuffle / space_to_depth.
ShapeImpl PixelShuffle(bool up);
absl::StatusOr<Types> OnnxResize(const Args& a);
absl::StatusOr<Types> RoiAlign(const Args& a);

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
absl::StatusOr<Types> SqueezeDims(const Args& a);  // squeeze.dims(self, int[] dim)
absl::StatusOr<Types> Select(const Args& a);
absl::StatusOr<Types> Cat(const Args& a);
absl::StatusOr<Types> Stack(const Args& a);
absl::StatusOr<Types> Narrow(const Args& a);
absl::StatusOr<Types> SliceShape(const Args& a);
absl::StatusOr<Types> Diagonal(const Args& a);
absl::StatusOr<Types> Diag(const Args& a);
absl::StatusOr<Types> Movedim(const Args& a);
absl::StatusOr<Types> Unbind(const Args& a);
absl::StatusOr<Types> SplitLike(const Args& a);
absl::StatusOr<Types> ListUnpack(const Args& a);
absl::StatusOr<Types> OnnxReshape(const Args& a);
absl::StatusOr<Types> OnnxFlatten(const Args& a);
absl::StatusOr<Types> OnnxSqueeze(const Args& a);
absl::StatusOr<Types> OnnxUnsqueeze(const Args& a);
absl::StatusOr<Types> OnnxExpand(const Args& a);
absl::StatusOr<Types> OnnxSlice(const Args& a);

// ------------------------------------------------------------ indexing,
// factories, sorting (shape_functions_index.cc)

// The sizes of input `index` (gather, gather_elements), the dtype of input 0.
ShapeImpl IndexShaped(size_t index);
absl::StatusOr<Types> IndexSelect(const Args& a);
absl::StatusOr<Types> AdvancedIndex(const Args& a);
absl::StatusOr<Types> MaskedFill(const Args& a);
// A 1-D result of data-dependent length.
ShapeImpl DataDependent1d(DTypeRule rule);
absl::StatusOr<Types> TakeAlongDim(const Args& a);
absl::StatusOr<Types> Embedding(const Args& a);
absl::StatusOr<Types> Nonzero(const Args& a);
// constant_pad_nd / pad / reflection_pad / replication_pad: PyTorch-order pads.
absl::StatusOr<Types> TorchPad(const Args& a);
absl::StatusOr<Types> Repeat(const Args& a);
absl::StatusOr<Types> Tile(const Args& a);
absl::StatusOr<Types> GatherNd(const Args& a);
absl::StatusOr<Types> OnnxPad(const Args& a);
absl::StatusOr<Types> Compress(const Args& a);
absl::StatusOr<Types> Arange(const Args& a);
// The tensor factories' argument layouts.
enum class FillForm : uint8_t {
  kConstant,  // (size, dtype?...): float32 by default
  kFull,      // (size, fill_value, dtype?...): the fill's kind by default
  kLike,      // (self, dtype?...): self's
  kFullLike,  // (self, fill_value, dtype?...)
  kNew,       // (self, size, dtype?...)
  kNewFull,   // (self, size, fill_value, dtype?...)
};
ShapeImpl FullShape(FillForm form);
absl::StatusOr<Types> ScalarTensor(const Args& a);
absl::StatusOr<Types> Eye(const Args& a);
absl::StatusOr<Types> OneHot(const Args& a);
absl::StatusOr<Types> OnnxEyeLike(const Args& a);
absl::StatusOr<Types> OnnxRange(const Args& a);
absl::StatusOr<Types> OnnxOneHot(const Args& a);
absl::StatusOr<Types> TopK(const Args& a);
absl::StatusOr<Types> Sort(const Args& a);
absl::StatusOr<Types> Cumulative(const Args& a);
absl::StatusOr<Types> CumExtremum(const Args& a);
// unique_dim / _unique2 / unique_consecutive (3 outputs), kiln::onnx_unique (4).
ShapeImpl Unique(size_t outputs);

// ------------------------------------------------------------ special,
// sequences, shape queries (shape_functions_special.cc)

absl::StatusOr<Types> Loss(const Args& a);
absl::StatusOr<Types> TorchWindow(const Args& a);
absl::StatusOr<Types> OnnxWindow(const Args& a);
absl::StatusOr<Types> MelWeightMatrix(const Args& a);
absl::StatusOr<Types> Dft(const Args& a);
absl::StatusOr<Types> Stft(const Args& a);
absl::StatusOr<Types> NonMaxSuppression(const Args& a);
absl::StatusOr<Types> QuantizeLinear(const Args& a);
absl::StatusOr<Types> DequantizeLinear(const Args& a);
absl::StatusOr<Types> DynamicQuantizeLinear(const Args& a);
absl::StatusOr<Types> TfIdfVectorizer(const Args& a);
absl::StatusOr<Types> StringsToTensor(const Args& a);
absl::StatusOr<Types> Multinomial(const Args& a);
absl::StatusOr<Types> DropoutPair(const Args& a);
absl::StatusOr<Types> OnnxRandom(const Args& a);
absl::StatusOr<Types> OnnxRandomLike(const Args& a);
absl::StatusOr<Types> OnnxMultinomial(const Args& a);
// Output i has the type of input inputs[i] (training steps).
ShapeImpl SameAsInputs(std::vector<size_t> inputs);
// kiln::lstm / gru / rnn: Y, Y_h[, Y_c].
ShapeImpl Recurrent(size_t outputs, size_t hidden_arg, size_t layout_arg);
absl::StatusOr<Types> SequenceElement(const Args& a);
absl::StatusOr<Types> StackScanOutputs(const Args& a);
absl::StatusOr<Types> OptionalElement(const Args& a);
// A 0-dim tensor of `dtype`.
ShapeImpl ScalarTensorOf(DType dtype);
absl::StatusOr<Types> OnnxShape(const Args& a);

}  // namespace kiln::passes::shape_internal

#endif  // KILN_PASSES_SHAPE_FUNCTIONS_INTERNAL_H_
