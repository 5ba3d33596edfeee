// Shape functions of the resampling rows (ops/defs/resample.def).
#include <cmath>

#include "passes/shape_functions_internal.h"
#include "support/status.h"

namespace kiln::passes::shape_internal {

// upsample_*{k}d(self, output_size, ...) and .vec(input, output_size?,
// [align_corners,] scale_factors?): [N, C, *out], out = output_size or
// floor(in * scale).
ShapeImpl Upsample(size_t k, bool vec) {
  return [k, vec](const Args& a) -> absl::StatusOr<Types> {
    const TensorInfo* x = a.Tensor(0);
    if (!x) return Types{Type::Tensor()};
    if (!x->sizes) return Types{TensorOf(x->dtype, std::nullopt, x->device)};
    const Dims& xs = *x->sizes;
    if (xs.size() != k + 2) {
      return a.Error(absl::StrCat("expected a ", k + 2, "-D input, got sizes ", SizesToString(x->sizes)));
    }
    Dims out{xs[0], xs[1]};
    SymbolicSizes size;
    if (!vec || !a.IsNone(1)) {
      size = a.IntListElements(1);
      if (size && size->size() == 1 && k > 1) size = Dims(k, (*size)[0]);
    }
    if (size && size->size() == k) {
      out.insert(out.end(), size->begin(), size->end());
      return Types{TensorOf(x->dtype, out, x->device)};
    }
    std::optional<size_t> scales_arg = a.ArgIndex("scale_factors");
    const IValue* factors = vec && scales_arg ? a.Const(*scales_arg) : nullptr;
    for (size_t i = 0; i < k; ++i) {
      Dim o;
      if (factors && factors->isList() && factors->elements().size() == k && xs[2 + i]) {
        const IValue& f = factors->elements()[i];
        if (f.isNumber()) {
          o = static_cast<int64_t>(std::floor(static_cast<double>(*xs[2 + i]) * f.toNumberAsDouble()));
        }
      }
      out.push_back(o);
    }
    return Types{TensorOf(x->dtype, out, x->device)};
  };
}

// grid_sampler(input [N, C, H, W], grid [N, Ho, Wo, 2], ...) -> [N, C, Ho, Wo].
absl::StatusOr<Types> GridSampler(const Args& a) {
  const TensorInfo* x = a.Tensor(0);
  const TensorInfo* g = a.Tensor(1);
  if (!x) return Types{Type::Tensor()};
  if (!x->sizes || !g || !g->sizes) return Types{TensorOf(x->dtype, std::nullopt, x->device)};
  const Dims& xs = *x->sizes;
  const Dims& gs = *g->sizes;
  if (xs.size() < 3 || gs.size() != xs.size()) return a.Error("grid does not fit the input");
  Dims out{xs[0], xs[1]};
  out.insert(out.end(), gs.begin() + 1, gs.end() - 1);
  return Types{TensorOf(x->dtype, out, x->device)};
}

// pixel_shuffle / depth_to_space (up): [*, C / r^2, H * r, W * r];
// pixel_unshuffle / space_to_depth: [*, C * r^2, H / r, W / r].
ShapeImpl PixelShuffle(bool up) {
  return [up](const Args& a) -> absl::StatusOr<Types> {
    const TensorInfo* x = a.Tensor(0);
    if (!x) return Types{Type::Tensor()};
    Dim r = a.Int(1);
    if (!x->sizes) return Types{TensorOf(x->dtype, std::nullopt, x->device)};
    Dims out = *x->sizes;
    if (out.size() < 3) return a.Error("expected at least 3 dims");
    const size_t c = out.size() - 3, h = c + 1, w = c + 2;
    if (!r || *r <= 0) return Types{TensorOf(x->dtype, Dims(out.size()), x->device)};
    const int64_t f = *r;
    auto scale = [](Dim d, int64_t m) { return d ? Dim(*d * m) : std::nullopt; };
    auto shrink = [&](Dim d, int64_t m) -> absl::StatusOr<Dim> {
      if (!d) return Dim();
      if (*d % m != 0) return a.Error(absl::StrCat("size ", *d, " is not divisible by ", m));
      return Dim(*d / m);
    };
    if (up) {
      ASSIGN_OR_RETURN(out[c], shrink(out[c], f * f));
      out[h] = scale(out[h], f);
      out[w] = scale(out[w], f);
    } else {
      out[c] = scale(out[c], f * f);
      ASSIGN_OR_RETURN(out[h], shrink(out[h], f));
      ASSIGN_OR_RETURN(out[w], shrink(out[w], f));
    }
    return Types{TensorOf(x->dtype, out, x->device)};
  };
}

// kiln::resize(x, roi?, scales?, sizes?, ...): sizes, else floor(in * scale),
// when those inputs are constants; the rank otherwise.
absl::StatusOr<Types> OnnxResize(const Args& a) {
  const TensorInfo* x = a.Tensor(0);
  if (!x) return Types{Type::Tensor()};
  if (!x->sizes) return Types{TensorOf(x->dtype, std::nullopt, x->device)};
  const Dims& xs = *x->sizes;
  Dims out(xs.size());
  std::optional<std::vector<int64_t>> sizes = a.ConstTensorInts(3);
  const ::kiln::Tensor* scales = a.ConstTensor(2);
  if (sizes && sizes->size() == xs.size()) {
    for (size_t d = 0; d < xs.size(); ++d) out[d] = (*sizes)[d];
  } else if ((!sizes || sizes->empty()) && scales && scales->numel() == static_cast<int64_t>(xs.size())) {
    for (size_t d = 0; d < xs.size(); ++d) {
      if (xs[d]) {
        out[d] = static_cast<int64_t>(scales->GetDouble(static_cast<int64_t>(d)) *
                                      static_cast<double>(*xs[d]));
      }
    }
  }
  return Types{TensorOf(x->dtype, out, x->device)};
}

// kiln::roi_align(x [N, C, H, W], rois [R, 4], batch_indices [R], mode,
// output_height, output_width, ...) -> [R, C, oh, ow].
absl::StatusOr<Types> RoiAlign(const Args& a) {
  const TensorInfo* x = a.Tensor(0);
  if (!x) return Types{Type::Tensor()};
  Dim r, c;
  if (const TensorInfo* rois = a.Tensor(1); rois && rois->sizes && !rois->sizes->empty()) {
    r = (*rois->sizes)[0];
  }
  if (x->sizes && x->sizes->size() == 4) c = (*x->sizes)[1];
  return Types{TensorOf(x->dtype, Dims{r, c, a.Int(4), a.Int(5)}, x->device)};
}

}  // namespace kiln::passes::shape_internal
