// Reference kernels of the "special" op family: losses, detection (NMS),
// linear quantization, signal processing (windows, mel filters, DFT, STFT),
// text features (TfIdf n-grams, string normalisation), random sampling and
// dropout, and the ONNX training-preview optimizers.
//
// Conventions are those of runtime/kernels.h: any input strides, compute in
// double / int64, contiguous outputs, InvalidArgument naming the op for bad
// input, Unimplemented for dtypes the reference kernels do not store.
#ifndef KILN_RUNTIME_KERNELS_SPECIAL_H_
#define KILN_RUNTIME_KERNELS_SPECIAL_H_

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "support/dtype.h"
#include "support/tensor.h"

namespace kiln::runtime {

// ------------------------------------------------------------------ losses

// at::Reduction's codes, as aten schemas pass them (`int reduction=1`).
enum class LossReduction : int64_t { kNone = 0, kMean = 1, kSum = 2 };
absl::StatusOr<LossReduction> LossReductionFromCode(int64_t code, const char* op);

// PyTorch's nll_loss_nd: input (C), (N, C) or (N, C, d1, ...) of log
// probabilities, target () / (N) / (N, d1, ...) of class indices. Targets
// equal to `ignore_index` contribute nothing (also to the mean's weight
// sum); other targets outside [0, C) are an error. Mean divides by the sum of
// the target classes' weights (NaN when every target is ignored).
absl::StatusOr<Tensor> NllLoss(const Tensor& input, const Tensor& target,
                               const std::optional<Tensor>& weight, LossReduction reduction,
                               int64_t ignore_index);

// PyTorch's cross_entropy_loss: log_softmax over the class dim, then
// nll_loss_nd for class-index targets, or the soft-label loss for a floating
// target of the input's shape; with optional label smoothing.
absl::StatusOr<Tensor> CrossEntropyLoss(const Tensor& input, const Tensor& target,
                                        const std::optional<Tensor>& weight,
                                        LossReduction reduction, int64_t ignore_index,
                                        double label_smoothing);

// --------------------------------------------------------------- detection

// ONNX NonMaxSuppression: boxes [B, N, 4], scores [B, C, N]. Per batch and
// class, greedily keeps the highest-scoring boxes whose score exceeds
// `score_threshold` and whose IoU with every kept box is at most
// `iou_threshold`, up to `max_output_boxes_per_class`. Returns int64
// [K, 3] rows (batch, class, box) in batch, class, selection order. Boxes are
// corners (y1, x1, y2, x2) in either diagonal order, or (xc, yc, w, h) when
// `center_point_box`.
absl::StatusOr<Tensor> NonMaxSuppression(const Tensor& boxes, const Tensor& scores,
                                         int64_t max_output_boxes_per_class,
                                         double iou_threshold, double score_threshold,
                                         bool center_point_box);

// ------------------------------------------------------------ quantization

// ONNX QuantizeLinear: saturate(round_half_even(x / scale) + zero_point).
// `scale` / `zero_point` are scalars (per tensor) or 1-D along `axis`
// (per axis). The result has `zero_point`'s dtype, else `out_dtype`.
absl::StatusOr<Tensor> QuantizeLinear(const Tensor& x, const Tensor& scale,
                                      const std::optional<Tensor>& zero_point, int64_t axis,
                                      DType out_dtype);
// ONNX DequantizeLinear: (x - zero_point) * scale, in scale's dtype.
absl::StatusOr<Tensor> DequantizeLinear(const Tensor& x, const Tensor& scale,
                                        const std::optional<Tensor>& zero_point, int64_t axis);
// ONNX DynamicQuantizeLinear: uint8 y, float scale, uint8 zero point.
absl::StatusOr<std::vector<Tensor>> DynamicQuantizeLinear(const Tensor& x);
// ONNX QLinearMatMul: integer matmul of zero-point-shifted operands,
// requantized to y's scale and zero point (per-tensor parameters).
absl::StatusOr<Tensor> QLinearMatMul(const Tensor& a, const Tensor& a_scale,
                                     const Tensor& a_zero_point, const Tensor& b,
                                     const Tensor& b_scale, const Tensor& b_zero_point,
                                     const Tensor& y_scale, const Tensor& y_zero_point);

// ------------------------------------------------------ signal processing

// Generalised cosine windows w[n] = a0 - a1 cos(2πn/M) + a2 cos(4πn/M), with
// M = length (periodic) or length - 1 (symmetric). Length 1 gives [1].
struct CosineWindow {
  double a0 = 0.5, a1 = 0.5, a2 = 0.0;
  static CosineWindow Hann() { return {0.5, 0.5, 0.0}; }
  static CosineWindow Hamming(double alpha, double beta) { return {alpha, beta, 0.0}; }
  static CosineWindow Blackman() { return {0.42, 0.5, 0.08}; }
};
absl::StatusOr<Tensor> Window(const CosineWindow& w, int64_t length, bool periodic,
                              DType dtype, const char* op);

// ONNX MelWeightMatrix: [dft_length / 2 + 1, num_mel_bins] triangular filters.
absl::StatusOr<Tensor> MelWeightMatrix(int64_t num_mel_bins, int64_t dft_length,
                                       int64_t sample_rate, double lower_edge_hertz,
                                       double upper_edge_hertz, DType dtype);

// ONNX DFT (opset 17): x is [..., 1] (real) or [..., 2] (complex); the
// transform runs along `axis` (not the last dim), zero-padded or truncated to
// `dft_length`. The result is [..., 2]; `onesided` keeps n / 2 + 1 bins; the
// inverse divides by n.
absl::StatusOr<Tensor> Dft(const Tensor& x, std::optional<int64_t> dft_length, int64_t axis,
                           bool inverse, bool onesided);

// ONNX STFT: signal [B, L, 1|2] -> [B, frames, bins, 2] with
// frames = (L - frame_length) / frame_step + 1. `window` (when given) fixes
// frame_length and multiplies each frame.
absl::StatusOr<Tensor> Stft(const Tensor& signal, int64_t frame_step,
                            const std::optional<Tensor>& window,
                            std::optional<int64_t> frame_length, bool onesided);

// -------------------------------------------------------------------- text

struct TfIdfOptions {
  int64_t min_gram_length = 1;
  int64_t max_gram_length = 1;
  int64_t max_skip_count = 0;
  std::string mode = "TF";  // TF, IDF or TFIDF
  std::vector<int64_t> ngram_counts;
  std::vector<int64_t> ngram_indexes;
  std::vector<int64_t> pool_int64s;
  std::vector<double> weights;  // empty: all 1
};
// ONNX TfIdfVectorizer over integer tokens, [C] -> [V] or [N, C] -> [N, V].
absl::StatusOr<Tensor> TfIdfVectorize(const Tensor& x, const TfIdfOptions& options);

// A string tensor as the interpreter carries it (see register_special.cc):
// row-major elements plus the shape.
struct StringTensor {
  std::vector<int64_t> sizes;
  std::vector<std::string> data;
};
// ONNX StringNormalizer: drops stopwords (case-insensitively unless
// `case_sensitive`) and applies `case_change_action` (NONE, LOWER, UPPER).
// Input [C] or [1, C]; the result keeps the rank; an all-dropped input gives
// one empty string.
absl::StatusOr<StringTensor> StringNormalize(const StringTensor& x,
                                             const std::vector<std::string>& stopwords,
                                             bool case_sensitive,
                                             const std::string& case_change_action);

// ------------------------------------------------------- random / dropout

// The generator behind the random kernels: seeded from `seed` when given
// (reproducible), else from a process-wide sequence.
std::mt19937_64 MakeGenerator(std::optional<double> seed);

absl::StatusOr<Tensor> RandomUniform(absl::Span<const int64_t> sizes, double low, double high,
                                     DType dtype, std::mt19937_64& gen);
absl::StatusOr<Tensor> RandomNormal(absl::Span<const int64_t> sizes, double mean, double stddev,
                                    DType dtype, std::mt19937_64& gen);
// Elementwise draws with probability p (each p in [0, 1]), as `dtype`.
absl::StatusOr<Tensor> Bernoulli(const Tensor& p, DType dtype, std::mt19937_64& gen);
// Per row of `weights` ([C] or [N, C], non-negative, unnormalised), draws
// `num_samples` class indices (int64 or int32 `dtype`).
absl::StatusOr<Tensor> MultinomialFromWeights(const Tensor& weights, int64_t num_samples,
                                              bool replacement, DType dtype,
                                              std::mt19937_64& gen);
// Dropout: (output, bool keep-mask). Identity with an all-true mask unless
// `train` and ratio > 0; ratio must lie in [0, 1).
absl::StatusOr<std::vector<Tensor>> Dropout(const Tensor& x, double ratio, bool train,
                                            std::mt19937_64& gen);

// -------------------------------------------------------- training (ONNX)

// One tensor group of the ai.onnx.preview.training optimizers; r (learning
// rate) and t (step count) are scalars.
absl::StatusOr<std::vector<Tensor>> AdagradStep(double r, int64_t t, const Tensor& x,
                                                const Tensor& g, const Tensor& h,
                                                double decay_factor, double epsilon,
                                                double norm_coefficient);
absl::StatusOr<std::vector<Tensor>> AdamStep(double r, int64_t t, const Tensor& x,
                                             const Tensor& g, const Tensor& v, const Tensor& h,
                                             double alpha, double beta, double epsilon,
                                             double norm_coefficient,
                                             double norm_coefficient_post);
absl::StatusOr<std::vector<Tensor>> MomentumStep(double r, int64_t t, const Tensor& x,
                                                 const Tensor& g, const Tensor& v, double alpha,
                                                 double beta, double norm_coefficient,
                                                 bool nesterov);

// ----------------------------------------------------------------- helpers

// The single element of a one-element tensor (any rank), as double / int64.
absl::StatusOr<double> ScalarDoubleOf(const Tensor& t, const char* op, const char* what);
absl::StatusOr<int64_t> ScalarIntOf(const Tensor& t, const char* op, const char* what);

}  // namespace kiln::runtime

#endif  // KILN_RUNTIME_KERNELS_SPECIAL_H_
