// Kernel registration for the special op family: aten losses, windows,
// random ops and dropout, plus the kiln:: ops of ir/kiln_schemas_special.inc.
//
// String tensors (ONNX STRING) travel as the tuple (int[] sizes, str[] data):
// row-major elements plus the shape, since kiln's Tensor has no string dtype.
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "runtime/kernel_args.h"
#include "runtime/kernels.h"
#include "runtime/kernels_strings.h"
#include "runtime/kernels_special.h"
#include "runtime/tensor_ops.h"
#include "support/status.h"

namespace kiln::runtime {
namespace {

using ir::IValue;

// Optional one-element tensor argument as a number.
absl::StatusOr<std::optional<double>> OptionalScalarTensorArg(const std::string& op, Args a,
                                                              size_t i, const char* what) {
  ASSIGN_OR_RETURN(std::optional<Tensor> t, OptionalTensorArg(op, a, i));
  if (!t) return std::optional<double>();
  ASSIGN_OR_RETURN(double v, ScalarDoubleOf(*t, op.c_str(), what));
  return std::optional<double>(v);
}

absl::StatusOr<int64_t> ScalarTensorIntArg(const std::string& op, Args a, size_t i,
                                           const char* what) {
  ASSIGN_OR_RETURN(Tensor t, TensorArg(op, a, i));
  return ScalarIntOf(t, op.c_str(), what);
}

absl::StatusOr<double> ScalarTensorDoubleArg(const std::string& op, Args a, size_t i,
                                             const char* what) {
  ASSIGN_OR_RETURN(Tensor t, TensorArg(op, a, i));
  return ScalarDoubleOf(t, op.c_str(), what);
}

Result Many(absl::StatusOr<std::vector<Tensor>> ts) {
  if (!ts.ok()) return ts.status();
  std::vector<IValue> out;
  for (Tensor& t : *ts) out.push_back(IValue::FromTensor(std::move(t)));
  return out;
}

absl::StatusOr<StringTensor> StringTensorFromIValue(const IValue& v, const std::string& op) {
  const absl::Status bad = absl::InvalidArgumentError(
      absl::StrCat(op, ": expected a string tensor (int[] sizes, str[] data)"));
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

void RegisterLosses(Registrar& r) {
  // nll_loss: 1-D/2-D input; nll_loss2d: 4-D; nll_loss_nd: any rank.
  struct Nll { const char* name; int min_dim, max_dim; };
  for (const Nll& v : {Nll{"aten::nll_loss", 1, 2}, Nll{"aten::nll_loss2d", 4, 4},
                       Nll{"aten::nll_loss_nd", 1, 64}}) {
    const std::string name = v.name;
    const Nll spec = v;
    r.Add(name, [name, spec](Args a) -> Result {
      ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
      ASSIGN_OR_RETURN(Tensor target, TensorArg(name, a, 1));
      ASSIGN_OR_RETURN(std::optional<Tensor> w, OptionalTensorArg(name, a, 2));
      ASSIGN_OR_RETURN(int64_t reduction, IntArg(name, a, 3));
      ASSIGN_OR_RETURN(int64_t ignore_index, IntArg(name, a, 4));
      if (x.dim() < spec.min_dim || x.dim() > spec.max_dim) {
        return absl::InvalidArgumentError(absl::StrCat(
            name, ": input must have ", spec.min_dim, spec.min_dim == spec.max_dim ? "" : "+",
            " dims, got ", x.dim()));
      }
      ASSIGN_OR_RETURN(LossReduction red, LossReductionFromCode(reduction, spec.name));
      return One(NllLoss(x, target, w, red, ignore_index));
    });
  }
  r.Add("aten::cross_entropy_loss", [](Args a) -> Result {
    const std::string name = "aten::cross_entropy_loss";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(Tensor target, TensorArg(name, a, 1));
    ASSIGN_OR_RETURN(std::optional<Tensor> w, OptionalTensorArg(name, a, 2));
    ASSIGN_OR_RETURN(int64_t reduction, IntArg(name, a, 3));
    ASSIGN_OR_RETURN(int64_t ignore_index, IntArg(name, a, 4));
    ASSIGN_OR_RETURN(double smoothing, NumberArg(name, a, 5));
    ASSIGN_OR_RETURN(LossReduction red, LossReductionFromCode(reduction, "cross_entropy_loss"));
    return One(CrossEntropyLoss(x, target, w, red, ignore_index, smoothing));
  });
}

void RegisterWindows(Registrar& r) {
  // Layout: (window_length, [periodic, [alpha, [beta]]], *, dtype, ...).
  struct Win { const char* name; const char* kind; int params; };
  const Win wins[] = {
      {"aten::hann_window", "hann", 0},
      {"aten::hann_window.periodic", "hann", 1},
      {"aten::hamming_window", "hamming", 0},
      {"aten::hamming_window.periodic", "hamming", 1},
      {"aten::hamming_window.periodic_alpha", "hamming", 2},
      {"aten::hamming_window.periodic_alpha_beta", "hamming", 3},
      {"aten::blackman_window", "blackman", 0},
      {"aten::blackman_window.periodic", "blackman", 1},
  };
  for (const Win& w : wins) {
    const std::string name = w.name;
    const Win spec = w;
    r.Add(name, [name, spec](Args a) -> Result {
      ASSIGN_OR_RETURN(int64_t length, IntArg(name, a, 0));
      bool periodic = true;
      if (spec.params >= 1) {
        ASSIGN_OR_RETURN(periodic, BoolArg(name, a, 1));
      }
      double alpha = 0.54, beta = 0.46;
      if (spec.params >= 2) {
        ASSIGN_OR_RETURN(alpha, NumberArg(name, a, 2));
      }
      if (spec.params >= 3) {
        ASSIGN_OR_RETURN(beta, NumberArg(name, a, 3));
      }
      ASSIGN_OR_RETURN(std::optional<DType> dtype,
                       DTypeArg(name, a, static_cast<size_t>(spec.params + 1)));
      const std::string kind = spec.kind;
      const CosineWindow cw = kind == "hann"      ? CosineWindow::Hann()
                              : kind == "hamming" ? CosineWindow::Hamming(alpha, beta)
                                                  : CosineWindow::Blackman();
      return One(Window(cw, length, periodic, dtype.value_or(DType::kFloat32), spec.name));
    });
  }
}

void RegisterRandom(Registrar& r) {
  for (const char* n : {"aten::rand", "aten::randn"}) {
    const std::string name = n;
    const bool normal = name == "aten::randn";
    r.Add(name, [name, normal](Args a) -> Result {
      ASSIGN_OR_RETURN(std::vector<int64_t> sizes, IntListArg(name, a, 0));
      ASSIGN_OR_RETURN(std::optional<DType> dtype, DTypeArg(name, a, 1));
      std::mt19937_64 gen = MakeGenerator(std::nullopt);
      const DType t = dtype.value_or(DType::kFloat32);
      return One(normal ? RandomNormal(sizes, 0, 1, t, gen) : RandomUniform(sizes, 0, 1, t, gen));
    });
  }
  for (const char* n : {"aten::rand_like", "aten::randn_like"}) {
    const std::string name = n;
    const bool normal = name == "aten::randn_like";
    r.Add(name, [name, normal](Args a) -> Result {
      ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
      ASSIGN_OR_RETURN(std::optional<DType> dtype, DTypeArg(name, a, 1));
      std::mt19937_64 gen = MakeGenerator(std::nullopt);
      const DType t = dtype.value_or(x.dtype());
      return One(normal ? RandomNormal(x.sizes(), 0, 1, t, gen)
                        : RandomUniform(x.sizes(), 0, 1, t, gen));
    });
  }
  r.Add("aten::bernoulli", [](Args a) -> Result {
    const std::string name = "aten::bernoulli";
    ASSIGN_OR_RETURN(Tensor p, TensorArg(name, a, 0));
    std::mt19937_64 gen = MakeGenerator(std::nullopt);
    return One(Bernoulli(p, p.dtype(), gen));
  });
  r.Add("aten::bernoulli.p", [](Args a) -> Result {
    const std::string name = "aten::bernoulli.p";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(double p, NumberArg(name, a, 1));
    Tensor probs = Tensor::Empty(DType::kFloat64, x.sizes());
    for (int64_t i = 0; i < probs.numel(); ++i) RETURN_IF_ERROR(SetDouble(probs, i, p));
    std::mt19937_64 gen = MakeGenerator(std::nullopt);
    return One(Bernoulli(probs, x.dtype(), gen));
  });
  r.Add("aten::multinomial", [](Args a) -> Result {
    const std::string name = "aten::multinomial";
    ASSIGN_OR_RETURN(Tensor w, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(int64_t n, IntArg(name, a, 1));
    ASSIGN_OR_RETURN(bool replacement, BoolArg(name, a, 2));
    std::mt19937_64 gen = MakeGenerator(std::nullopt);
    return One(MultinomialFromWeights(w, n, replacement, DType::kInt64, gen));
  });
  r.Add("aten::dropout", [](Args a) -> Result {
    const std::string name = "aten::dropout";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(double p, NumberArg(name, a, 1));
    ASSIGN_OR_RETURN(bool train, BoolArg(name, a, 2));
    std::mt19937_64 gen = MakeGenerator(std::nullopt);
    ASSIGN_OR_RETURN(std::vector<Tensor> out, Dropout(x, p, train, gen));
    return std::vector<IValue>{IValue::FromTensor(out[0])};
  });
  r.Add("aten::native_dropout", [](Args a) -> Result {
    const std::string name = "aten::native_dropout";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(double p, NumberArg(name, a, 1));
    // train=None counts as training, as in ATen.
    bool train = true;
    if (a.size() > 2 && !a[2].isNone()) {
        ASSIGN_OR_RETURN(train, BoolArg(name, a, 2));
      }
    std::mt19937_64 gen = MakeGenerator(std::nullopt);
    return Many(Dropout(x, p, train, gen));
  });
}

// ------------------------------------------------------------ kiln:: ops

void RegisterDetectionAndQuantization(Registrar& r) {
  r.Add("kiln::non_max_suppression", [](Args a) -> Result {
    const std::string name = "kiln::non_max_suppression";
    ASSIGN_OR_RETURN(Tensor boxes, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(Tensor scores, TensorArg(name, a, 1));
    ASSIGN_OR_RETURN(std::optional<double> max_out,
                     OptionalScalarTensorArg(name, a, 2, "max_output_boxes_per_class"));
    ASSIGN_OR_RETURN(std::optional<double> iou, OptionalScalarTensorArg(name, a, 3, "iou_threshold"));
    ASSIGN_OR_RETURN(std::optional<double> score,
                     OptionalScalarTensorArg(name, a, 4, "score_threshold"));
    ASSIGN_OR_RETURN(int64_t center, IntArg(name, a, 5));
    if (center != 0 && center != 1) {
      return absl::InvalidArgumentError(absl::StrCat(name, ": center_point_box must be 0 or 1"));
    }
    // Without a score threshold every box is a candidate.
    const double score_thr = score.value_or(-std::numeric_limits<double>::infinity());
    const double cap = max_out.value_or(0.0);
    int64_t max_boxes = 0;  // also for NaN
    if (cap > 9e18) max_boxes = std::numeric_limits<int64_t>::max();
    else if (cap > 0) max_boxes = static_cast<int64_t>(cap);
    return One(NonMaxSuppression(boxes, scores, max_boxes, iou.value_or(0.0), score_thr,
                                 center == 1));
  });
  r.Add("kiln::quantize_linear", [](Args a) -> Result {
    const std::string name = "kiln::quantize_linear";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(Tensor scale, TensorArg(name, a, 1));
    ASSIGN_OR_RETURN(std::optional<Tensor> zp, OptionalTensorArg(name, a, 2));
    ASSIGN_OR_RETURN(int64_t axis, IntArg(name, a, 3));
    ASSIGN_OR_RETURN(std::optional<DType> dtype, DTypeArg(name, a, 4));
    return One(QuantizeLinear(x, scale, zp, axis, dtype.value_or(DType::kUInt8)));
  });
  r.Add("kiln::dequantize_linear", [](Args a) -> Result {
    const std::string name = "kiln::dequantize_linear";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(Tensor scale, TensorArg(name, a, 1));
    ASSIGN_OR_RETURN(std::optional<Tensor> zp, OptionalTensorArg(name, a, 2));
    ASSIGN_OR_RETURN(int64_t axis, IntArg(name, a, 3));
    return One(DequantizeLinear(x, scale, zp, axis));
  });
  r.Add("kiln::dynamic_quantize_linear", [](Args a) -> Result {
    ASSIGN_OR_RETURN(Tensor x, TensorArg("kiln::dynamic_quantize_linear", a, 0));
    return Many(DynamicQuantizeLinear(x));
  });
  r.Add("kiln::qlinear_matmul", [](Args a) -> Result {
    const std::string name = "kiln::qlinear_matmul";
    std::vector<Tensor> t;
    for (size_t i = 0; i < 8; ++i) {
      ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, i));
      t.push_back(std::move(x));
    }
    return One(QLinearMatMul(t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7]));
  });
}

void RegisterSignal(Registrar& r) {
  r.Add("kiln::window", [](Args a) -> Result {
    const std::string name = "kiln::window";
    ASSIGN_OR_RETURN(int64_t size, ScalarTensorIntArg(name, a, 0, "size"));
    ASSIGN_OR_RETURN(std::string kind, StringArg(name, a, 1));
    ASSIGN_OR_RETURN(bool periodic, BoolArg(name, a, 2));
    ASSIGN_OR_RETURN(std::optional<DType> dtype, DTypeArg(name, a, 3));
    CosineWindow w;
    if (kind == "hann") w = CosineWindow::Hann();
    else if (kind == "hamming") w = CosineWindow::Hamming(25.0 / 46.0, 21.0 / 46.0);
    else if (kind == "blackman") w = CosineWindow::Blackman();
    else return absl::InvalidArgumentError(absl::StrCat(name, ": unknown window '", kind, "'"));
    return One(Window(w, size, periodic, dtype.value_or(DType::kFloat32), "window"));
  });
  r.Add("kiln::mel_weight_matrix", [](Args a) -> Result {
    const std::string name = "kiln::mel_weight_matrix";
    ASSIGN_OR_RETURN(int64_t bins, ScalarTensorIntArg(name, a, 0, "num_mel_bins"));
    ASSIGN_OR_RETURN(int64_t dft_length, ScalarTensorIntArg(name, a, 1, "dft_length"));
    ASSIGN_OR_RETURN(int64_t rate, ScalarTensorIntArg(name, a, 2, "sample_rate"));
    ASSIGN_OR_RETURN(double lo, ScalarTensorDoubleArg(name, a, 3, "lower_edge_hertz"));
    ASSIGN_OR_RETURN(double hi, ScalarTensorDoubleArg(name, a, 4, "upper_edge_hertz"));
    ASSIGN_OR_RETURN(std::optional<DType> dtype, DTypeArg(name, a, 5));
    return One(MelWeightMatrix(bins, dft_length, rate, lo, hi, dtype.value_or(DType::kFloat32)));
  });
  r.Add("kiln::dft", [](Args a) -> Result {
    const std::string name = "kiln::dft";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    std::optional<int64_t> length;
    if (a.size() > 1 && !a[1].isNone()) {
      ASSIGN_OR_RETURN(length, ScalarTensorIntArg(name, a, 1, "dft_length"));
    }
    ASSIGN_OR_RETURN(int64_t axis, IntArg(name, a, 2));
    ASSIGN_OR_RETURN(bool inverse, BoolArg(name, a, 3));
    ASSIGN_OR_RETURN(bool onesided, BoolArg(name, a, 4));
    return One(Dft(x, length, axis, inverse, onesided));
  });
  r.Add("kiln::stft", [](Args a) -> Result {
    const std::string name = "kiln::stft";
    ASSIGN_OR_RETURN(Tensor signal, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(int64_t step, ScalarTensorIntArg(name, a, 1, "frame_step"));
    ASSIGN_OR_RETURN(std::optional<Tensor> window, OptionalTensorArg(name, a, 2));
    std::optional<int64_t> length;
    if (a.size() > 3 && !a[3].isNone()) {
      ASSIGN_OR_RETURN(length, ScalarTensorIntArg(name, a, 3, "frame_length"));
    }
    ASSIGN_OR_RETURN(bool onesided, BoolArg(name, a, 4));
    return One(Stft(signal, step, window, length, onesided));
  });
}

void RegisterText(Registrar& r) {
  r.Add("kiln::tfidf_vectorizer", [](Args a) -> Result {
    const std::string name = "kiln::tfidf_vectorizer";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    TfIdfOptions o;
    ASSIGN_OR_RETURN(o.min_gram_length, IntArg(name, a, 1));
    ASSIGN_OR_RETURN(o.max_gram_length, IntArg(name, a, 2));
    ASSIGN_OR_RETURN(o.max_skip_count, IntArg(name, a, 3));
    ASSIGN_OR_RETURN(o.mode, StringArg(name, a, 4));
    ASSIGN_OR_RETURN(o.ngram_counts, IntListArg(name, a, 5));
    ASSIGN_OR_RETURN(o.ngram_indexes, IntListArg(name, a, 6));
    ASSIGN_OR_RETURN(o.pool_int64s, IntListArg(name, a, 7));
    ASSIGN_OR_RETURN(o.weights, DoubleListArg(name, a, 8));
    return One(TfIdfVectorize(x, o));
  });
  r.Add("kiln::string_normalizer", [](Args a) -> Result {
    const std::string name = "kiln::string_normalizer";
    if (a.empty()) return ArgError(name, 0, "a string tensor");
    ASSIGN_OR_RETURN(StringTensor x, StringTensorFromIValue(a[0], name));
    ASSIGN_OR_RETURN(std::vector<std::string> stopwords, StringListArg(name, a, 1));
    ASSIGN_OR_RETURN(bool case_sensitive, BoolArg(name, a, 2));
    ASSIGN_OR_RETURN(std::string action, StringArg(name, a, 3));
    ASSIGN_OR_RETURN(StringTensor y, StringNormalize(x, stopwords, case_sensitive, action));
    return std::vector<IValue>{StringTensorToIValue(y)};
  });
  r.Add("kiln::tensor_to_strings", [](Args a) -> Result {
    const std::string name = "kiln::tensor_to_strings";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(StringTensor y, TensorToStrings(x));
    return std::vector<IValue>{StringTensorToIValue(y)};
  });
  r.Add("kiln::strings_to_tensor", [](Args a) -> Result {
    const std::string name = "kiln::strings_to_tensor";
    if (a.empty()) return ArgError(name, 0, "a string tensor");
    ASSIGN_OR_RETURN(StringTensor x, StringTensorFromIValue(a[0], name));
    ASSIGN_OR_RETURN(std::optional<DType> dtype, DTypeArg(name, a, 1));
    if (!dtype) return ArgError(name, 1, "a dtype");
    return One(StringsToTensor(x, *dtype));
  });
}

void RegisterKilnRandom(Registrar& r) {
  r.Add("kiln::dropout", [](Args a) -> Result {
    const std::string name = "kiln::dropout";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(std::optional<double> ratio, OptionalScalarTensorArg(name, a, 1, "ratio"));
    ASSIGN_OR_RETURN(std::optional<double> train,
                     OptionalScalarTensorArg(name, a, 2, "training_mode"));
    ASSIGN_OR_RETURN(std::optional<double> seed, OptionalNumberArg(name, a, 3));
    std::mt19937_64 gen = MakeGenerator(seed);
    return Many(Dropout(x, ratio.value_or(0.5), train.value_or(0.0) != 0.0, gen));
  });
  for (const char* n : {"kiln::random_uniform", "kiln::random_normal",
                        "kiln::random_uniform_like", "kiln::random_normal_like"}) {
    const std::string name = n;
    const bool normal = name.find("normal") != std::string::npos;
    const bool like = name.find("like") != std::string::npos;
    r.Add(name, [name, normal, like](Args a) -> Result {
      std::vector<int64_t> sizes;
      std::optional<DType> dtype;
      ASSIGN_OR_RETURN(dtype, DTypeArg(name, a, 3));
      if (like) {
        ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
        sizes = x.sizes();
        if (!dtype) dtype = x.dtype();
      } else {
        ASSIGN_OR_RETURN(sizes, IntListArg(name, a, 0));
      }
      ASSIGN_OR_RETURN(double p1, NumberArg(name, a, 1));
      ASSIGN_OR_RETURN(double p2, NumberArg(name, a, 2));
      ASSIGN_OR_RETURN(std::optional<double> seed, OptionalNumberArg(name, a, 4));
      std::mt19937_64 gen = MakeGenerator(seed);
      const DType t = dtype.value_or(DType::kFloat32);
      return One(normal ? RandomNormal(sizes, p1, p2, t, gen) : RandomUniform(sizes, p1, p2, t, gen));
    });
  }
  r.Add("kiln::bernoulli", [](Args a) -> Result {
    const std::string name = "kiln::bernoulli";
    ASSIGN_OR_RETURN(Tensor p, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(std::optional<DType> dtype, DTypeArg(name, a, 1));
    ASSIGN_OR_RETURN(std::optional<double> seed, OptionalNumberArg(name, a, 2));
    std::mt19937_64 gen = MakeGenerator(seed);
    return One(Bernoulli(p, dtype.value_or(p.dtype()), gen));
  });
  r.Add("kiln::multinomial", [](Args a) -> Result {
    const std::string name = "kiln::multinomial";
    ASSIGN_OR_RETURN(Tensor logits, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(int64_t n, IntArg(name, a, 1));
    ASSIGN_OR_RETURN(std::optional<DType> dtype, DTypeArg(name, a, 2));
    ASSIGN_OR_RETURN(std::optional<double> seed, OptionalNumberArg(name, a, 3));
    // ONNX passes unnormalised log-probabilities.
    const int64_t dim = logits.dim() == 0 ? 0 : logits.dim() - 1;
    ASSIGN_OR_RETURN(Tensor probs, Softmax(logits, dim, DType::kFloat64, /*log=*/false));
    std::mt19937_64 gen = MakeGenerator(seed);
    return One(MultinomialFromWeights(probs, n, /*replacement=*/true,
                                      dtype.value_or(DType::kInt32), gen));
  });
}

void RegisterTraining(Registrar& r) {
  r.Add("kiln::adagrad", [](Args a) -> Result {
    const std::string name = "kiln::adagrad";
    ASSIGN_OR_RETURN(double rate, ScalarTensorDoubleArg(name, a, 0, "R"));
    ASSIGN_OR_RETURN(int64_t t, ScalarTensorIntArg(name, a, 1, "T"));
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 2));
    ASSIGN_OR_RETURN(Tensor g, TensorArg(name, a, 3));
    ASSIGN_OR_RETURN(Tensor h, TensorArg(name, a, 4));
    ASSIGN_OR_RETURN(double decay, NumberArg(name, a, 5));
    ASSIGN_OR_RETURN(double eps, NumberArg(name, a, 6));
    ASSIGN_OR_RETURN(double norm, NumberArg(name, a, 7));
    return Many(AdagradStep(rate, t, x, g, h, decay, eps, norm));
  });
  r.Add("kiln::adam", [](Args a) -> Result {
    const std::string name = "kiln::adam";
    ASSIGN_OR_RETURN(double rate, ScalarTensorDoubleArg(name, a, 0, "R"));
    ASSIGN_OR_RETURN(int64_t t, ScalarTensorIntArg(name, a, 1, "T"));
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 2));
    ASSIGN_OR_RETURN(Tensor g, TensorArg(name, a, 3));
    ASSIGN_OR_RETURN(Tensor v, TensorArg(name, a, 4));
    ASSIGN_OR_RETURN(Tensor h, TensorArg(name, a, 5));
    ASSIGN_OR_RETURN(double alpha, NumberArg(name, a, 6));
    ASSIGN_OR_RETURN(double beta, NumberArg(name, a, 7));
    ASSIGN_OR_RETURN(double eps, NumberArg(name, a, 8));
    ASSIGN_OR_RETURN(double norm, NumberArg(name, a, 9));
    ASSIGN_OR_RETURN(double norm_post, NumberArg(name, a, 10));
    return Many(AdamStep(rate, t, x, g, v, h, alpha, beta, eps, norm, norm_post));
  });
  r.Add("kiln::momentum", [](Args a) -> Result {
    const std::string name = "kiln::momentum";
    ASSIGN_OR_RETURN(double rate, ScalarTensorDoubleArg(name, a, 0, "R"));
    ASSIGN_OR_RETURN(int64_t t, ScalarTensorIntArg(name, a, 1, "T"));
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 2));
    ASSIGN_OR_RETURN(Tensor g, TensorArg(name, a, 3));
    ASSIGN_OR_RETURN(Tensor v, TensorArg(name, a, 4));
    ASSIGN_OR_RETURN(double alpha, NumberArg(name, a, 5));
    ASSIGN_OR_RETURN(double beta, NumberArg(name, a, 6));
    ASSIGN_OR_RETURN(double norm, NumberArg(name, a, 7));
    ASSIGN_OR_RETURN(bool nesterov, BoolArg(name, a, 8));
    return Many(MomentumStep(rate, t, x, g, v, alpha, beta, norm, nesterov));
  });
}

}  // namespace

void RegisterSpecialKernels(Registrar& r) {
  RegisterLosses(r);
  RegisterWindows(r);
  RegisterRandom(r);
  RegisterDetectionAndQuantization(r);
  RegisterSignal(r);
  RegisterText(r);
  RegisterKilnRandom(r);
  RegisterTraining(r);
}

}  // namespace kiln::runtime
