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

ShapeImpl Reduce(ReduceSpec spec) {
  return [spec](const Args& a) -> absl::StatusOr<Types> {
    const TensorInfo* t = a.Tensor(0);
    if (!t) return Types(spec.with_indices ? 2 : 1, Type::Tensor());
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

}  // namespace kiln::passes::shape_internal
