// Typed entry points of the resampling rows (ops/defs/resample.def).
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "runtime/kernels_nn.h"
#include "runtime/kernels_shape.h"
#include "runtime/op_kernels.h"
#include "runtime/tensor_ops.h"
#include "support/status.h"

namespace kiln::runtime {
namespace {

using OptScale = std::optional<double>;

absl::Status Invalid(const std::string& op, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(op, ": ", what));
}

nn::ResizeOptions TorchOptions(Resample mode, bool align) {
  nn::ResizeOptions o;
  switch (mode) {
    case Resample::kNearest:
      o.mode = nn::ResizeMode::kNearest;
      o.coord = nn::CoordMode::kTorchNearest;
      return o;
    case Resample::kNearestExact:
      o.mode = nn::ResizeMode::kNearest;
      o.coord = nn::CoordMode::kTorchNearestExact;
      return o;
    case Resample::kLinear: o.mode = nn::ResizeMode::kLinear; break;
    case Resample::kCubic: o.mode = nn::ResizeMode::kCubic; break;
  }
  o.coord = align ? nn::CoordMode::kTorchLinearAlignCorners : nn::CoordMode::kTorchLinear;
  return o;
}

bool HasAlignCorners(Resample mode) {
  return mode == Resample::kLinear || mode == Resample::kCubic;
}

// Output sizes over the last n dims: output_size, or floor(in * scale).
absl::StatusOr<std::vector<int64_t>> TorchOutSizes(const std::string& op, const Tensor& x,
                                                   size_t n,
                                                   const std::optional<std::vector<int64_t>>& size,
                                                   const std::vector<double>& scales) {
  if (x.dim() != static_cast<int64_t>(n) + 2) {
    return Invalid(op, absl::StrCat("expected a ", n + 2, "-D input, got shape ",
                                    ShapeToString(x.sizes())));
  }
  std::vector<int64_t> out = x.sizes();
  for (size_t d = 0; d < n; ++d) {
    const int64_t in = x.size(static_cast<int64_t>(d) + 2);
    if (size) {
      out[d + 2] = (*size)[d];
    } else {
      if (!(scales[d] > 0) || !(static_cast<double>(in) * scales[d] < 1e12)) {
        return Invalid(op, "scale factors must be positive and finite");
      }
      out[d + 2] = static_cast<int64_t>(std::floor(static_cast<double>(in) * scales[d]));
    }
    if (out[d + 2] <= 0) return Invalid(op, "output sizes must be positive");
  }
  return out;
}

// upsample(self, output_size, align, scales (one per spatial dim, or None)).
absl::StatusOr<Tensor> Upsample(const std::string& op, Resample mode, size_t n, const Tensor& x,
                                std::vector<int64_t> size, bool align,
                                const std::vector<OptScale>& given) {
  if (size.size() == 1 && n > 1) size.assign(n, size[0]);
  if (size.size() != n) {
    return Invalid(op, absl::StrCat("output_size must have ", n, " values, got ", size.size()));
  }
  std::vector<double> scales(x.dim() > 0 ? static_cast<size_t>(x.dim()) : 0, 0.0);
  ASSIGN_OR_RETURN(std::vector<int64_t> out, TorchOutSizes(op, x, n, size, scales));
  for (size_t d = 0; d < n && d < given.size(); ++d) scales[d + 2] = given[d].value_or(0.0);
  if (align) std::fill(scales.begin(), scales.end(), 0.0);
  return nn::Resize(op, x, out, scales, TorchOptions(mode, align));
}

absl::StatusOr<Tensor> UpsampleVec(const std::string& op, Resample mode, size_t n,
                                   const Tensor& x, const Dims& size, bool align,
                                   const std::optional<std::vector<double>>& factors) {
  if (size.has_value() == factors.has_value()) {
    return Invalid(op, "exactly one of output_size and scale_factors must be given");
  }
  if ((size && size->size() != n) || (factors && factors->size() != n)) {
    return Invalid(op, absl::StrCat("output_size / scale_factors must have ", n, " values"));
  }
  std::vector<double> spatial = factors ? *factors : std::vector<double>(n, 0.0);
  ASSIGN_OR_RETURN(std::vector<int64_t> out, TorchOutSizes(op, x, n, size, spatial));
  std::vector<double> scales(2, 0.0);
  scales.insert(scales.end(), spatial.begin(), spatial.end());
  if (align) std::fill(scales.begin(), scales.end(), 0.0);
  return nn::Resize(op, x, out, scales, TorchOptions(mode, align));
}

template <typename T>
absl::StatusOr<T> ByName(const std::string& op, const char* what, const std::string& name,
                         std::initializer_list<std::pair<const char*, T>> table) {
  for (const auto& [s, v] : table) {
    if (name == s) return v;
  }
  return Invalid(op, absl::StrCat("unknown ", what, " '", name, "'"));
}

}  // namespace

KernelBinder UpsampleKernel(size_t n, Resample mode) {
  using Ints = std::vector<int64_t>;
  if (HasAlignCorners(mode)) {
    switch (n) {
      case 1:
        return UnboxedNamed([mode](const std::string& op, const Tensor& x, const Ints& size,
                                   bool align, OptScale s) {
          return Upsample(op, mode, 1, x, size, align, {s});
        });
      case 2:
        return UnboxedNamed([mode](const std::string& op, const Tensor& x, const Ints& size,
                                   bool align, OptScale h, OptScale w) {
          return Upsample(op, mode, 2, x, size, align, {h, w});
        });
      default:
        return UnboxedNamed([mode](const std::string& op, const Tensor& x, const Ints& size,
                                   bool align, OptScale d, OptScale h, OptScale w) {
          return Upsample(op, mode, 3, x, size, align, {d, h, w});
        });
    }
  }
  switch (n) {
    case 1:
      return UnboxedNamed([mode](const std::string& op, const Tensor& x, const Ints& size,
                                 OptScale s) { return Upsample(op, mode, 1, x, size, false, {s}); });
    case 2:
      return UnboxedNamed([mode](const std::string& op, const Tensor& x, const Ints& size,
                                 OptScale h, OptScale w) {
        return Upsample(op, mode, 2, x, size, false, {h, w});
      });
    default:
      return UnboxedNamed([mode](const std::string& op, const Tensor& x, const Ints& size,
                                 OptScale d, OptScale h, OptScale w) {
        return Upsample(op, mode, 3, x, size, false, {d, h, w});
      });
  }
}

KernelBinder UpsampleVecKernel(size_t n, Resample mode) {
  using Factors = std::optional<std::vector<double>>;
  if (HasAlignCorners(mode)) {
    return UnboxedNamed([n, mode](const std::string& op, const Tensor& x, const Dims& size,
                                  bool align, const Factors& factors) {
      return UpsampleVec(op, mode, n, x, size, align, factors);
    });
  }
  return UnboxedNamed([n, mode](const std::string& op, const Tensor& x, const Dims& size,
                                const Factors& factors) {
    return UpsampleVec(op, mode, n, x, size, false, factors);
  });
}

absl::StatusOr<Tensor> GridSampler(const std::string& op, const Tensor& x, const Tensor& grid,
                                   int64_t interpolation_mode, int64_t padding_mode,
                                   bool align_corners) {
  if (x.dim() == 5) return absl::UnimplementedError(op + ": 3-D grid sampling");
  return nn::GridSample2d(op, x, grid, interpolation_mode, padding_mode, align_corners);
}

absl::StatusOr<Tensor> PixelShuffle(const std::string& op, const Tensor& self, int64_t factor) {
  return nn::DepthToSpace(op, self, factor, /*dcr=*/false);
}

absl::StatusOr<Tensor> PixelUnshuffle(const std::string& op, const Tensor& self, int64_t factor) {
  return nn::SpaceToDepth(op, self, factor, /*dcr=*/false);
}

absl::StatusOr<Tensor> OnnxResize(const std::string& op, const Tensor& x, const OptTensor& roi,
                                  const OptTensor& scales_t, const OptTensor& sizes_t,
                                  const std::string& mode, const std::string& coordinate_mode,
                                  const std::string& nearest_mode, double cubic_coeff_a,
                                  bool exclude_outside, double extrapolation_value) {
  nn::ResizeOptions o;
  ASSIGN_OR_RETURN(o.mode, ByName<nn::ResizeMode>(op, "mode", mode,
                                                  {{"nearest", nn::ResizeMode::kNearest},
                                                   {"linear", nn::ResizeMode::kLinear},
                                                   {"bilinear", nn::ResizeMode::kLinear},
                                                   {"trilinear", nn::ResizeMode::kLinear},
                                                   {"cubic", nn::ResizeMode::kCubic}}));
  ASSIGN_OR_RETURN(o.coord, ByName<nn::CoordMode>(
                                op, "coordinate_transformation_mode", coordinate_mode,
                                {{"half_pixel", nn::CoordMode::kHalfPixel},
                                 {"pytorch_half_pixel", nn::CoordMode::kPytorchHalfPixel},
                                 {"align_corners", nn::CoordMode::kAlignCorners},
                                 {"asymmetric", nn::CoordMode::kAsymmetric},
                                 {"tf_half_pixel_for_nn", nn::CoordMode::kTfHalfPixelForNn},
                                 {"half_pixel_symmetric", nn::CoordMode::kHalfPixelSymmetric},
                                 {"tf_crop_and_resize", nn::CoordMode::kTfCropAndResize}}));
  ASSIGN_OR_RETURN(o.nearest, ByName<nn::NearestMode>(
                                  op, "nearest_mode", nearest_mode,
                                  {{"round_prefer_floor", nn::NearestMode::kRoundPreferFloor},
                                   {"round_prefer_ceil", nn::NearestMode::kRoundPreferCeil},
                                   {"floor", nn::NearestMode::kFloor},
                                   {"ceil", nn::NearestMode::kCeil},
                                   {"simple", nn::NearestMode::kSimple}}));
  o.cubic_a = cubic_coeff_a;
  o.exclude_outside = exclude_outside;
  o.extrapolation_value = extrapolation_value;
  const int64_t rank = x.dim();
  // ONNX passes empty tensors for unused inputs.
  auto present = [](const OptTensor& t) {
    return t && t->defined() && t->has_data() && t->numel() > 0;
  };
  std::vector<int64_t> out(static_cast<size_t>(rank));
  std::vector<double> scales(static_cast<size_t>(rank));
  if (present(sizes_t)) {
    if (sizes_t->numel() != rank) return Invalid(op, absl::StrCat("sizes must have ", rank, " values"));
    for (int64_t d = 0; d < rank; ++d) {
      out[d] = sizes_t->GetInt(d);
      if (out[d] < 0) return Invalid(op, "sizes must be non-negative");
      scales[d] =
          x.size(d) > 0 ? static_cast<double>(out[d]) / static_cast<double>(x.size(d)) : 1.0;
    }
  } else if (present(scales_t)) {
    if (scales_t->numel() != rank) return Invalid(op, absl::StrCat("scales must have ", rank, " values"));
    for (int64_t d = 0; d < rank; ++d) {
      scales[d] = scales_t->GetDouble(d);
      if (!(scales[d] > 0) || !std::isfinite(scales[d])) return Invalid(op, "scales must be positive");
      const double size = scales[d] * static_cast<double>(x.size(d));
      if (size > 1e15) return Invalid(op, "scaled size is too large");
      out[d] = static_cast<int64_t>(size);
    }
  } else {
    return Invalid(op, "one of scales and sizes must be given");
  }
  if (present(roi)) {
    for (int64_t i = 0; i < roi->numel(); ++i) o.roi.push_back(roi->GetDouble(i));
  }
  return nn::Resize(op, x, out, scales, o);
}

absl::StatusOr<Tensor> OnnxRoiAlign(const std::string& op, const Tensor& x, const Tensor& rois,
                                    const Tensor& batch_indices, const std::string& mode,
                                    int64_t output_height, int64_t output_width,
                                    int64_t sampling_ratio, double spatial_scale,
                                    const std::string& coordinate_mode) {
  if (mode != "avg" && mode != "max") return Invalid(op, "mode must be 'avg' or 'max'");
  if (coordinate_mode != "half_pixel" && coordinate_mode != "output_half_pixel") {
    return Invalid(op, "coordinate_transformation_mode must be half_pixel or output_half_pixel");
  }
  nn::RoiAlignOptions o;
  o.output_height = output_height;
  o.output_width = output_width;
  o.sampling_ratio = sampling_ratio;
  o.spatial_scale = spatial_scale;
  o.max_mode = mode == "max";
  o.half_pixel = coordinate_mode == "half_pixel";
  return nn::RoiAlign(op, x, rois, batch_indices, o);
}

absl::StatusOr<Tensor> OnnxDepthToSpace(const std::string& op, const Tensor& x, int64_t blocksize,
                                        const std::string& mode) {
  if (mode != "DCR" && mode != "CRD") return Invalid(op, "mode must be DCR or CRD");
  if (x.dim() != 4) return Invalid(op, "input must be 4-D");
  return nn::DepthToSpace(op, x, blocksize, mode == "DCR");
}

absl::StatusOr<Tensor> OnnxSpaceToDepth(const std::string& op, const Tensor& x,
                                        int64_t blocksize) {
  if (x.dim() != 4) return Invalid(op, "input must be 4-D");
  return nn::SpaceToDepth(op, x, blocksize, /*dcr=*/true);
}

}  // namespace kiln::runtime
