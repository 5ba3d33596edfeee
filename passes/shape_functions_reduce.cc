#include "passes/shape_functions_internal.h"

#include "support/status.h"

namespace kiln::passes::shape_internal {

// softmax(self, dim, dtype=None): a constant dtype overrides.
absl::StatusOr<Types> SoftmaxLike(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  std::optional<DType> dtype = t->dtype;
  if (!a.IsNone(2)) {
    Dim code = a.Int(2);
    dtype = code ? DTypeFromCode(*code) : std::nullopt;
  }
  return Types{TensorOf(dtype, t->sizes, t->device)};
}

absl::StatusOr<Types> HalfToFloatSoftmax(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  std::optional<bool> half_to_float = a.Bool(2);
  std::optional<DType> dtype = t->dtype;
  if (!half_to_float) dtype = std::nullopt;
  else if (*half_to_float) dtype = DType::kFloat32;
  return Types{TensorOf(dtype, t->sizes, t->device)};
}

ShapeImpl Reduce(ReduceSpec spec) {
  return [spec](const Args& a) -> absl::StatusOr<Types> {
    const TensorInfo* t = a.Tensor(0);
    if (!t) return Types(spec.with_indices || spec.pair ? 2 : 1, Type::Tensor());
    std::optional<DType> dtype = ApplyRule(spec.rule, t->dtype);
    if (spec.dtype_arg && !a.IsNone(*spec.dtype_arg)) {
      Dim code = a.Int(*spec.dtype_arg);
      dtype = code ? DTypeFromCode(*code) : std::nullopt;
    }
    std::optional<bool> keepdim = false;
    if (spec.keepdim_arg) keepdim = a.Bool(*spec.keepdim_arg);

    // Which dims: nullopt list = all dims.
    bool all_dims = !spec.dims_arg;
    std::optional<std::vector<int64_t>> dims;
    bool dims_known = true;
    if (spec.dims_arg) {
      if (a.IsNone(*spec.dims_arg)) {
        all_dims = true;
      } else if (spec.dims_is_single_int) {
        Dim d = a.Int(*spec.dims_arg);
        if (d) dims = std::vector<int64_t>{*d};
        dims_known = d.has_value();
      } else {
        dims = a.IntList(*spec.dims_arg);
        dims_known = dims.has_value();
        if (dims && dims->empty()) all_dims = true;  // sum(dim=[]) reduces everything
      }
    }
    SymbolicSizes out;
    if (t->sizes && keepdim) {
      const Dims& in = *t->sizes;
      if (all_dims) {
        out = *keepdim ? Dims(in.size(), Dim(1)) : Dims();
      } else if (dims_known) {
        std::vector<bool> reduced(in.size(), false);
        for (int64_t d : *dims) {
          ASSIGN_OR_RETURN(size_t w, WrapDim(a, d, in.size()));
          if (w < reduced.size()) reduced[w] = true;
        }
        Dims o;
        for (size_t i = 0; i < in.size(); ++i) {
          if (!reduced[i]) {
            o.push_back(in[i]);
          } else if (*keepdim) {
            o.push_back(1);
          }
        }
        out = std::move(o);
      } else if (*keepdim) {
        out = Dims(in.size(), std::nullopt);
      }
    }
    Types result{TensorOf(dtype, out, t->device)};
    if (spec.with_indices) result.push_back(TensorOf(DType::kInt64, out, t->device));
    if (spec.pair) result.push_back(TensorOf(dtype, out, t->device));
    return result;
  };
}

// ------------------------------------------------------------ normalization

// layer_norm(input, normalized_shape, weight?, bias?, eps, cudnn_enable).
absl::StatusOr<Types> LayerNorm(const Args& a) {
  const TensorInfo* x = a.Tensor(0);
  if (!x) return Types{Type::Tensor()};
  SymbolicSizes shape = a.IntListElements(1);
  if (x->sizes && shape) {
    const Dims& xs = *x->sizes;
    if (shape->size() > xs.size()) {
      return a.Error(absl::StrCat("normalized_shape ", SizesToString(shape),
                                  " has more dims than the input ", SizesToString(x->sizes)));
    }
    size_t lead = xs.size() - shape->size();
    for (size_t i = 0; i < shape->size(); ++i) {
      RETURN_IF_ERROR(CheckDimsEqual(a, xs[lead + i], (*shape)[i],
                                     "input's trailing sizes do not match normalized_shape"));
    }
    for (size_t arg : {size_t{2}, size_t{3}}) {
      const TensorInfo* p = a.Tensor(arg);
      if (p && p->sizes && p->sizes->size() == shape->size()) {
        for (size_t i = 0; i < shape->size(); ++i) {
          RETURN_IF_ERROR(CheckDimsEqual(a, (*p->sizes)[i], (*shape)[i],
                                         "weight/bias sizes do not match normalized_shape"));
        }
      }
    }
  }
  return Types{TensorOf(x->dtype, x->sizes, x->device)};
}

// batch_norm / instance_norm: per-channel parameters must match dim 1.
absl::StatusOr<Types> ChannelNorm(const Args& a) {
  const TensorInfo* x = a.Tensor(0);
  if (!x) return Types{Type::Tensor()};
  if (x->sizes && x->sizes->size() >= 2) {
    Dim channels = (*x->sizes)[1];
    for (size_t arg : {size_t{1}, size_t{2}, size_t{3}, size_t{4}}) {
      const TensorInfo* p = a.Tensor(arg);
      if (p && p->sizes && p->sizes->size() == 1) {
        RETURN_IF_ERROR(CheckDimsEqual(a, (*p->sizes)[0], channels,
                                       "per-channel parameter does not match the channels"));
      }
    }
  }
  return Types{TensorOf(x->dtype, x->sizes, x->device)};
}

namespace {

// Sizes with the dims from `axis` on (normalized) set to 1: the statistics
// of a layer norm over dims >= axis.
SymbolicSizes StatSizes(const SymbolicSizes& x, size_t axis) {
  if (!x) return std::nullopt;
  Dims out = *x;
  for (size_t i = axis; i < out.size(); ++i) out[i] = 1;
  return out;
}

}  // namespace

// kiln::reduce(self, kind, axes?, keepdims, noop_with_empty_axes): ONNX keeps
// the dtype; no axes (or empty ones) reduce every dim unless noop.
absl::StatusOr<Types> OnnxReduceShape(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  std::optional<bool> keepdims = a.Bool(3);
  std::optional<bool> noop = a.Bool(4);
  std::optional<std::vector<int64_t>> axes;
  bool axes_known = true;
  if (!a.IsNone(2)) {
    axes = a.IntList(2);
    axes_known = axes.has_value();
  }
  if (!t->sizes || !keepdims || !axes_known) {
    SymbolicSizes out;
    if (t->sizes && keepdims && *keepdims) out = Dims(t->sizes->size(), std::nullopt);
    return Types{TensorOf(t->dtype, out, t->device)};
  }
  const Dims& in = *t->sizes;
  if (!axes || axes->empty()) {
    if (!noop) return Types{TensorOf(t->dtype, std::nullopt, t->device)};
    if (*noop) return Types{TensorOf(t->dtype, t->sizes, t->device)};
    return Types{TensorOf(t->dtype, *keepdims ? Dims(in.size(), Dim(1)) : Dims(), t->device)};
  }
  std::vector<bool> reduced(in.size(), false);
  for (int64_t d : *axes) {
    ASSIGN_OR_RETURN(size_t w, WrapDim(a, d, in.size()));
    if (w < reduced.size()) reduced[w] = true;
  }
  Dims out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (!reduced[i]) {
      out.push_back(in[i]);
    } else if (*keepdims) {
      out.push_back(1);
    }
  }
  return Types{TensorOf(t->dtype, out, t->device)};
}

// native_layer_norm(input, normalized_shape, weight?, bias?, eps):
// (y, mean, rstd), the statistics of shape [*lead, 1 * len(normalized_shape)].
absl::StatusOr<Types> NativeLayerNorm(const Args& a) {
  ASSIGN_OR_RETURN(Types y, LayerNorm(a));
  const TensorInfo* x = a.Tensor(0);
  SymbolicSizes shape = a.IntListElements(1);
  SymbolicSizes stats;
  if (x && x->sizes && shape && shape->size() <= x->sizes->size()) {
    stats = StatSizes(x->sizes, x->sizes->size() - shape->size());
  }
  std::optional<DType> dtype = x ? x->dtype : std::nullopt;
  std::optional<ir::Device> device = x ? x->device : std::nullopt;
  return Types{y[0], TensorOf(dtype, stats, device), TensorOf(dtype, stats, device)};
}

// native_batch_norm(input, weight, bias, running_mean, running_var,
// training, momentum, eps): (y, save_mean, save_rstd), the statistics [C]
// when training and empty otherwise (ATen's CPU kernel).
absl::StatusOr<Types> NativeBatchNorm(const Args& a) {
  ASSIGN_OR_RETURN(Types y, ChannelNorm(a));
  const TensorInfo* x = a.Tensor(0);
  std::optional<bool> training = a.Bool(5);
  SymbolicSizes stats;
  if (training && !*training) {
    stats = Dims{0};
  } else if (training && x && x->sizes && x->sizes->size() >= 2) {
    stats = Dims{(*x->sizes)[1]};
  } else if (training) {
    stats = Dims{std::nullopt};
  }
  std::optional<DType> dtype = x ? x->dtype : std::nullopt;
  std::optional<ir::Device> device = x ? x->device : std::nullopt;
  return Types{y[0], TensorOf(dtype, stats, device), TensorOf(dtype, stats, device)};
}

// native_group_norm(input, weight, bias, N, C, HxW, group, eps): (y, mean [N, group], rstd).
absl::StatusOr<Types> NativeGroupNorm(const Args& a) {
  const TensorInfo* x = a.Tensor(0);
  if (!x) return Types(3, Type::Tensor());
  Dims stats{a.Int(3), a.Int(6)};
  return Types{TensorOf(x->dtype, x->sizes, x->device), TensorOf(x->dtype, stats, x->device),
               TensorOf(x->dtype, stats, x->device)};
}

// kiln::batch_norm_training(x, scale, bias, mean, var, momentum, eps):
// (y, running_mean, running_var).
absl::StatusOr<Types> BatchNormTraining(const Args& a) {
  const TensorInfo* x = a.Tensor(0);
  if (!x) return Types(3, Type::Tensor());
  auto like = [&](size_t i) -> TypePtr {
    const TensorInfo* t = a.Tensor(i);
    return t ? TensorOf(t->dtype, t->sizes, t->device) : Type::Tensor();
  };
  return Types{TensorOf(x->dtype, x->sizes, x->device), like(3), like(4)};
}

// kiln::layer_norm(x, axis, scale?, bias?, eps): (y, mean, inv_std_dev), the
// statistics keeping dims >= axis as size 1, in x's dtype.
absl::StatusOr<Types> OnnxLayerNorm(const Args& a) {
  const TensorInfo* x = a.Tensor(0);
  if (!x) return Types(3, Type::Tensor());
  Dim axis = a.Int(1);
  SymbolicSizes stats;
  if (x->sizes && axis) {
    const int64_t rank = static_cast<int64_t>(x->sizes->size());
    if (*axis < -rank || *axis > rank) {
      return a.Error(absl::StrCat("axis ", *axis, " out of range for rank ", rank));
    }
    stats = StatSizes(x->sizes, static_cast<size_t>(*axis < 0 ? *axis + rank : *axis));
  } else if (x->sizes) {
    stats = Dims(x->sizes->size(), std::nullopt);
  }
  return Types{TensorOf(x->dtype, x->sizes, x->device), TensorOf(x->dtype, stats, x->device),
               TensorOf(x->dtype, stats, x->device)};
}

}  // namespace kiln::passes::shape_internal
