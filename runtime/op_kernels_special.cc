// Typed entry points of the special rows (ops/defs/special.def): losses,
// windows and spectral ops, detection, quantization, text, random ops and
// training steps.
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "runtime/kernels_special.h"
#include "runtime/kernels_strings.h"
#include "runtime/op_kernels.h"
#include "runtime/tensor_ops.h"
#include "support/status.h"

namespace kiln::runtime {
namespace {

using ir::IValue;

absl::Status Invalid(const std::string& op, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(op, ": ", what));
}

// An optional one-element tensor as a number.
absl::StatusOr<std::optional<double>> OptionalScalar(const std::string& op, const OptTensor& t,
                                                     const char* what) {
  if (!t) return std::optional<double>();
  ASSIGN_OR_RETURN(double v, ScalarDoubleOf(*t, op.c_str(), what));
  return std::optional<double>(v);
}

absl::StatusOr<std::optional<int64_t>> OptionalScalarInt(const std::string& op, const OptTensor& t,
                                                         const char* what) {
  if (!t) return std::optional<int64_t>();
  ASSIGN_OR_RETURN(int64_t v, ScalarIntOf(*t, op.c_str(), what));
  return std::optional<int64_t>(v);
}

absl::StatusOr<StringTensor> StringTensorFromIValue(const IValue& v, const std::string& op) {
  const absl::Status bad = Invalid(op, "expected a string tensor (int[] sizes, str[] data)");
  if (!v.isTuple() || v.elements().size() != 2) return bad;
  const IValue& sizes = v.elements()[0];
  const IValue& data = v.elements()[1];
  if (!sizes.isList() || !data.isList()) return bad;
  StringTensor t;
  for (const IValue& s : sizes.elements()) {
    if (!s.isInt()) return bad;
    t.sizes.push_back(s.toInt());
  }
  for (const IValue& s : data.elements()) {
    if (!s.isString()) return bad;
    t.data.push_back(s.toString());
  }
  return t;
}

IValue StringTensorToIValue(const StringTensor& t) {
  std::vector<IValue> data;
  for (const std::string& s : t.data) data.push_back(IValue::String(s));
  return IValue::Tuple({IValue::IntList(t.sizes), IValue::List(std::move(data))});
}

absl::StatusOr<Tensor> RandomOf(bool normal, absl::Span<const int64_t> sizes, double a, double b,
                                DType dtype, std::optional<double> seed) {
  std::mt19937_64 gen = MakeGenerator(seed);
  return normal ? RandomNormal(sizes, a, b, dtype, gen) : RandomUniform(sizes, a, b, dtype, gen);
}

}  // namespace

// ---------------------------------------------------------------- losses

KernelBinder NllLossKernel(int min_dim, int max_dim) {
  return UnboxedNamed([min_dim, max_dim](const std::string& op, const Tensor& x,
                                         const Tensor& target, const OptTensor& w,
                                         int64_t reduction,
                                         int64_t ignore_index) -> absl::StatusOr<Tensor> {
    if (x.dim() < min_dim || x.dim() > max_dim) {
      return Invalid(op, absl::StrCat("input must have ", min_dim, min_dim == max_dim ? "" : "+",
                                      " dims, got ", x.dim()));
    }
    ASSIGN_OR_RETURN(LossReduction red, LossReductionFromCode(reduction, op.c_str()));
    return NllLoss(x, target, w, red, ignore_index);
  });
}

absl::StatusOr<Tensor> CrossEntropyLossKernel(const Tensor& self, const Tensor& target,
                                              const OptTensor& weight, int64_t reduction,
                                              int64_t ignore_index, double label_smoothing) {
  ASSIGN_OR_RETURN(LossReduction red, LossReductionFromCode(reduction, "cross_entropy_loss"));
  return CrossEntropyLoss(self, target, weight, red, ignore_index, label_smoothing);
}

// ---------------------------------------------------------------- windows and signals

KernelBinder TorchWindowKernel(WindowKind kind, int params) {
  auto run = [kind](const std::string& op, int64_t length, bool periodic, double alpha,
                    double beta, std::optional<DType> dtype) {
    const CosineWindow cw = kind == WindowKind::kHann      ? CosineWindow::Hann()
                            : kind == WindowKind::kHamming ? CosineWindow::Hamming(alpha, beta)
                                                           : CosineWindow::Blackman();
    return Window(cw, length, periodic, dtype.value_or(DType::kFloat32), op.c_str());
  };
  using D = std::optional<DType>;
  switch (params) {
    case 0:
      return UnboxedNamed([run](const std::string& op, int64_t n, D dtype) {
        return run(op, n, true, 0.54, 0.46, dtype);
      });
    case 1:
      return UnboxedNamed([run](const std::string& op, int64_t n, bool periodic, D dtype) {
        return run(op, n, periodic, 0.54, 0.46, dtype);
      });
    case 2:
      return UnboxedNamed([run](const std::string& op, int64_t n, bool periodic, double alpha,
                                D dtype) { return run(op, n, periodic, alpha, 0.46, dtype); });
    default:
      return UnboxedNamed([run](const std::string& op, int64_t n, bool periodic, double alpha,
                                double beta, D dtype) {
        return run(op, n, periodic, alpha, beta, dtype);
      });
  }
}

absl::StatusOr<Tensor> OnnxWindow(const std::string& op, const Tensor& size,
                                  const std::string& kind, bool periodic, DType dtype) {
  ASSIGN_OR_RETURN(int64_t n, ScalarIntOf(size, op.c_str(), "size"));
  CosineWindow w;
  if (kind == "hann") {
    w = CosineWindow::Hann();
  } else if (kind == "hamming") {
    w = CosineWindow::Hamming(25.0 / 46.0, 21.0 / 46.0);
  } else if (kind == "blackman") {
    w = CosineWindow::Blackman();
  } else {
    return Invalid(op, absl::StrCat("unknown window '", kind, "'"));
  }
  return Window(w, n, periodic, dtype, "window");
}

absl::StatusOr<Tensor> OnnxMelWeightMatrix(const std::string& op, const Tensor& num_mel_bins,
                                           const Tensor& dft_length, const Tensor& sample_rate,
                                           const Tensor& lower_edge_hertz,
                                           const Tensor& upper_edge_hertz, DType dtype) {
  const char* name = op.c_str();
  ASSIGN_OR_RETURN(int64_t bins, ScalarIntOf(num_mel_bins, name, "num_mel_bins"));
  ASSIGN_OR_RETURN(int64_t length, ScalarIntOf(dft_length, name, "dft_length"));
  ASSIGN_OR_RETURN(int64_t rate, ScalarIntOf(sample_rate, name, "sample_rate"));
  ASSIGN_OR_RETURN(double lo, ScalarDoubleOf(lower_edge_hertz, name, "lower_edge_hertz"));
  ASSIGN_OR_RETURN(double hi, ScalarDoubleOf(upper_edge_hertz, name, "upper_edge_hertz"));
  return MelWeightMatrix(bins, length, rate, lo, hi, dtype);
}

absl::StatusOr<Tensor> OnnxDft(const std::string& op, const Tensor& input,
                               const OptTensor& dft_length, int64_t axis, bool inverse,
                               bool onesided) {
  ASSIGN_OR_RETURN(std::optional<int64_t> length, OptionalScalarInt(op, dft_length, "dft_length"));
  return Dft(input, length, axis, inverse, onesided);
}

absl::StatusOr<Tensor> OnnxStft(const std::string& op, const Tensor& signal,
                                const Tensor& frame_step, const OptTensor& window,
                                const OptTensor& frame_length, bool onesided) {
  ASSIGN_OR_RETURN(int64_t step, ScalarIntOf(frame_step, op.c_str(), "frame_step"));
  ASSIGN_OR_RETURN(std::optional<int64_t> length, OptionalScalarInt(op, frame_length, "frame_length"));
  return Stft(signal, step, window, length, onesided);
}

// ---------------------------------------------------------------- detection, quantization

absl::StatusOr<Tensor> OnnxNonMaxSuppression(const std::string& op, const Tensor& boxes,
                                             const Tensor& scores, const OptTensor& max_out_t,
                                             const OptTensor& iou_t, const OptTensor& score_t,
                                             int64_t center) {
  ASSIGN_OR_RETURN(std::optional<double> max_out,
                   OptionalScalar(op, max_out_t, "max_output_boxes_per_class"));
  ASSIGN_OR_RETURN(std::optional<double> iou, OptionalScalar(op, iou_t, "iou_threshold"));
  ASSIGN_OR_RETURN(std::optional<double> score, OptionalScalar(op, score_t, "score_threshold"));
  if (center != 0 && center != 1) return Invalid(op, "center_point_box must be 0 or 1");
  // Without a score threshold every box is a candidate.
  const double score_thr = score.value_or(-std::numeric_limits<double>::infinity());
  const double cap = max_out.value_or(0.0);
  int64_t max_boxes = 0;  // also for NaN
  if (cap > 9e18) {
    max_boxes = std::numeric_limits<int64_t>::max();
  } else if (cap > 0) {
    max_boxes = static_cast<int64_t>(cap);
  }
  return NonMaxSuppression(boxes, scores, max_boxes, iou.value_or(0.0), score_thr, center == 1);
}

absl::StatusOr<Tensor> OnnxQuantizeLinear(const Tensor& x, const Tensor& scale,
                                          const OptTensor& zero_point, int64_t axis, DType dtype) {
  return QuantizeLinear(x, scale, zero_point, axis, dtype);
}

// ---------------------------------------------------------------- text

absl::StatusOr<Tensor> OnnxTfIdfVectorizer(const Tensor& input, int64_t min_gram_length,
                                           int64_t max_gram_length, int64_t max_skip_count,
                                           const std::string& mode, const Ints& ngram_counts,
                                           const Ints& ngram_indexes, const Ints& pool_int64s,
                                           const std::vector<double>& weights) {
  TfIdfOptions o;
  o.min_gram_length = min_gram_length;
  o.max_gram_length = max_gram_length;
  o.max_skip_count = max_skip_count;
  o.mode = mode;
  o.ngram_counts = ngram_counts;
  o.ngram_indexes = ngram_indexes;
  o.pool_int64s = pool_int64s;
  o.weights = weights;
  return TfIdfVectorize(input, o);
}

absl::StatusOr<IValue> OnnxStringNormalizer(const std::string& op, const IValue& input,
                                            const std::vector<std::string>& stopwords,
                                            bool is_case_sensitive,
                                            const std::string& case_change_action) {
  ASSIGN_OR_RETURN(StringTensor x, StringTensorFromIValue(input, op));
  ASSIGN_OR_RETURN(StringTensor y,
                   StringNormalize(x, stopwords, is_case_sensitive, case_change_action));
  return StringTensorToIValue(y);
}

absl::StatusOr<IValue> TensorToStringsKernel(const Tensor& self) {
  ASSIGN_OR_RETURN(StringTensor y, TensorToStrings(self));
  return StringTensorToIValue(y);
}

absl::StatusOr<Tensor> StringsToTensorKernel(const std::string& op, const IValue& input,
                                             DType dtype) {
  ASSIGN_OR_RETURN(StringTensor x, StringTensorFromIValue(input, op));
  return StringsToTensor(x, dtype);
}

// ---------------------------------------------------------------- random ops and dropout

KernelBinder RandomKernel(bool normal) {
  return Unboxed([normal](const Ints& size, std::optional<DType> dtype) {
    return RandomOf(normal, size, 0, 1, dtype.value_or(DType::kFloat32), std::nullopt);
  });
}

KernelBinder RandomLikeKernel(bool normal) {
  return Unboxed([normal](const Tensor& self, std::optional<DType> dtype) {
    return RandomOf(normal, self.sizes(), 0, 1, dtype.value_or(self.dtype()), std::nullopt);
  });
}

absl::StatusOr<Tensor> BernoulliKernel(const Tensor& self) {
  std::mt19937_64 gen = MakeGenerator(std::nullopt);
  return Bernoulli(self, self.dtype(), gen);
}

absl::StatusOr<Tensor> BernoulliP(const Tensor& self, double p) {
  Tensor probs = Tensor::Empty(DType::kFloat64, self.sizes());
  for (int64_t i = 0; i < probs.numel(); ++i) RETURN_IF_ERROR(SetDouble(probs, i, p));
  std::mt19937_64 gen = MakeGenerator(std::nullopt);
  return Bernoulli(probs, self.dtype(), gen);
}

absl::StatusOr<Tensor> MultinomialKernel(const Tensor& self, int64_t num_samples,
                                         bool replacement) {
  std::mt19937_64 gen = MakeGenerator(std::nullopt);
  return MultinomialFromWeights(self, num_samples, replacement, DType::kInt64, gen);
}

absl::StatusOr<Tensor> DropoutKernel(const Tensor& input, double p, bool train) {
  std::mt19937_64 gen = MakeGenerator(std::nullopt);
  ASSIGN_OR_RETURN(std::vector<Tensor> out, Dropout(input, p, train, gen));
  return out[0];
}

// train=None counts as training, as in ATen.
absl::StatusOr<std::vector<Tensor>> NativeDropout(const Tensor& input, double p,
                                                  std::optional<bool> train) {
  std::mt19937_64 gen = MakeGenerator(std::nullopt);
  return Dropout(input, p, train.value_or(true), gen);
}

absl::StatusOr<std::vector<Tensor>> OnnxDropout(const std::string& op, const Tensor& input,
                                                const OptTensor& ratio_t,
                                                const OptTensor& training_t,
                                                std::optional<double> seed) {
  ASSIGN_OR_RETURN(std::optional<double> ratio, OptionalScalar(op, ratio_t, "ratio"));
  ASSIGN_OR_RETURN(std::optional<double> train, OptionalScalar(op, training_t, "training_mode"));
  std::mt19937_64 gen = MakeGenerator(seed);
  return Dropout(input, ratio.value_or(0.5), train.value_or(0.0) != 0.0, gen);
}

KernelBinder OnnxRandomKernel(bool normal) {
  return Unboxed([normal](const Ints& shape, double a, double b, DType dtype,
                          std::optional<double> seed) {
    return RandomOf(normal, shape, a, b, dtype, seed);
  });
}

KernelBinder OnnxRandomLikeKernel(bool normal) {
  return Unboxed([normal](const Tensor& input, double a, double b, std::optional<DType> dtype,
                          std::optional<double> seed) {
    return RandomOf(normal, input.sizes(), a, b, dtype.value_or(input.dtype()), seed);
  });
}

absl::StatusOr<Tensor> OnnxBernoulli(const Tensor& input, std::optional<DType> dtype,
                                     std::optional<double> seed) {
  std::mt19937_64 gen = MakeGenerator(seed);
  return Bernoulli(input, dtype.value_or(input.dtype()), gen);
}

// ONNX passes unnormalised log-probabilities.
absl::StatusOr<Tensor> OnnxMultinomial(const Tensor& input, int64_t sample_size, DType dtype,
                                       std::optional<double> seed) {
  const int64_t dim = input.dim() == 0 ? 0 : input.dim() - 1;
  ASSIGN_OR_RETURN(Tensor probs, Softmax(input, dim, DType::kFloat64, /*log=*/false));
  std::mt19937_64 gen = MakeGenerator(seed);
  return MultinomialFromWeights(probs, sample_size, /*replacement=*/true, dtype, gen);
}

// ---------------------------------------------------------------- training steps

absl::StatusOr<std::vector<Tensor>> OnnxAdagrad(const std::string& op, const Tensor& r,
                                                const Tensor& t, const Tensor& x,
                                                const Tensor& g, const Tensor& h,
                                                double decay_factor, double epsilon,
                                                double norm_coefficient) {
  ASSIGN_OR_RETURN(double rate, ScalarDoubleOf(r, op.c_str(), "R"));
  ASSIGN_OR_RETURN(int64_t step, ScalarIntOf(t, op.c_str(), "T"));
  return AdagradStep(rate, step, x, g, h, decay_factor, epsilon, norm_coefficient);
}

absl::StatusOr<std::vector<Tensor>> OnnxAdam(const std::string& op, const Tensor& r,
                                             const Tensor& t, const Tensor& x, const Tensor& g,
                                             const Tensor& v, const Tensor& h, double alpha,
                                             double beta, double epsilon,
                                             double norm_coefficient,
                                             double norm_coefficient_post) {
  ASSIGN_OR_RETURN(double rate, ScalarDoubleOf(r, op.c_str(), "R"));
  ASSIGN_OR_RETURN(int64_t step, ScalarIntOf(t, op.c_str(), "T"));
  return AdamStep(rate, step, x, g, v, h, alpha, beta, epsilon, norm_coefficient,
                  norm_coefficient_post);
}

absl::StatusOr<std::vector<Tensor>> OnnxMomentum(const std::string& op, const Tensor& r,
                                                 const Tensor& t, const Tensor& x,
                                                 const Tensor& g, const Tensor& v, double alpha,
                                                 double beta, double norm_coefficient,
                                                 bool nesterov) {
  ASSIGN_OR_RETURN(double rate, ScalarDoubleOf(r, op.c_str(), "R"));
  ASSIGN_OR_RETURN(int64_t step, ScalarIntOf(t, op.c_str(), "T"));
  return MomentumStep(rate, step, x, g, v, alpha, beta, norm_coefficient, nesterov);
}

}  // namespace kiln::runtime
