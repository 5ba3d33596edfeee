// Reference kernels of the control family (see kernels_sequence.h).
#include "runtime/kernels_sequence.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "runtime/tensor_ops.h"
#include "support/status.h"

namespace kiln::runtime {
namespace {

absl::Status Invalid(const char* op, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(op, ": ", what));
}

std::vector<double> ToDoubles(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = t.GetDouble(i);
  return v;
}

// ------------------------------------------------------------ activations

enum class ActKind {
  kRelu, kTanh, kSigmoid, kAffine, kLeakyRelu, kThresholdedRelu, kScaledTanh, kHardSigmoid,
  kElu, kSoftsign, kSoftplus,
};

struct Activation {
  ActKind kind = ActKind::kSigmoid;
  double alpha = 0;
  double beta = 0;

  double operator()(double x) const {
    switch (kind) {
      case ActKind::kRelu: return x > 0 ? x : 0;
      case ActKind::kTanh: return std::tanh(x);
      case ActKind::kSigmoid: return 1.0 / (1.0 + std::exp(-x));
      case ActKind::kAffine: return alpha * x + beta;
      case ActKind::kLeakyRelu: return x >= 0 ? x : alpha * x;
      case ActKind::kThresholdedRelu: return x > alpha ? x : 0;
      case ActKind::kScaledTanh: return alpha * std::tanh(beta * x);
      case ActKind::kHardSigmoid: return std::min(std::max(alpha * x + beta, 0.0), 1.0);
      case ActKind::kElu: return x >= 0 ? x : alpha * (std::exp(x) - 1);
      case ActKind::kSoftsign: return x / (1 + std::fabs(x));
      case ActKind::kSoftplus: return std::log1p(std::exp(x));
    }
    return x;
  }
};

struct ActSpec {
  const char* name;
  ActKind kind;
  bool has_alpha, has_beta;
  double alpha, beta;  // defaults
};

constexpr ActSpec kActSpecs[] = {
    {"relu", ActKind::kRelu, false, false, 0, 0},
    {"tanh", ActKind::kTanh, false, false, 0, 0},
    {"sigmoid", ActKind::kSigmoid, false, false, 0, 0},
    {"affine", ActKind::kAffine, true, true, 1.0, 0.0},
    {"leakyrelu", ActKind::kLeakyRelu, true, false, 0.01, 0},
    {"thresholdedrelu", ActKind::kThresholdedRelu, true, false, 1.0, 0},
    {"scaledtanh", ActKind::kScaledTanh, true, true, 1.0, 1.0},
    {"hardsigmoid", ActKind::kHardSigmoid, true, true, 0.2, 0.5},
    {"elu", ActKind::kElu, true, false, 1.0, 0},
    {"softsign", ActKind::kSoftsign, false, false, 0, 0},
    {"softplus", ActKind::kSoftplus, false, false, 0, 0},
};

// Resolves the activation list of every direction: [direction][slot].
absl::StatusOr<std::vector<std::vector<Activation>>> ResolveActivations(
    const char* op, const RecurrentOptions& opt, int64_t per_direction, int64_t directions,
    const std::vector<std::string>& defaults) {
  std::vector<std::string> names = opt.activations;
  if (names.empty()) {
    for (int64_t d = 0; d < directions; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
  } else if (static_cast<int64_t>(names.size()) == per_direction && directions == 2) {
    std::vector<std::string> twice = names;
    twice.insert(twice.end(), names.begin(), names.end());
    names = std::move(twice);
  }
  if (static_cast<int64_t>(names.size()) != per_direction * directions) {
    return Invalid(op, absl::StrCat("expected ", per_direction * directions,
                                    " activations, got ", names.size()));
  }
  size_t next_alpha = 0, next_beta = 0;
  std::vector<std::vector<Activation>> out(static_cast<size_t>(directions));
  for (size_t i = 0; i < names.size(); ++i) {
    std::string lower;
    for (char ch : names[i]) lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(ch))));
    const ActSpec* spec = nullptr;
    for (const ActSpec& s : kActSpecs) {
      if (lower == s.name) spec = &s;
    }
    if (spec == nullptr) return Invalid(op, absl::StrCat("unknown activation '", names[i], "'"));
    Activation a{spec->kind, spec->alpha, spec->beta};
    if (spec->has_alpha && next_alpha < opt.activation_alpha.size()) {
      a.alpha = opt.activation_alpha[next_alpha++];
    }
    if (spec->has_beta && next_beta < opt.activation_beta.size()) {
      a.beta = opt.activation_beta[next_beta++];
    }
    out[i / static_cast<size_t>(per_direction)].push_back(a);
  }
  return out;
}

// ------------------------------------------------------------ recurrent

// Checks that `t` has exactly `want` sizes; the message names the input.
absl::Status CheckShape(const char* op, const char* input, const Tensor& t,
                        const std::vector<int64_t>& want) {
  if (!t.has_data()) return Invalid(op, absl::StrCat(input, " has no data"));
  if (t.sizes() != want) {
    return Invalid(op, absl::StrCat(input, " must have shape ", ShapeToString(want), ", got ",
                                    ShapeToString(t.sizes())));
  }
  return absl::OkStatus();
}

struct Geometry {
  int64_t seq, batch, input, hidden, dirs, gates;
};

int64_t NumGates(RecurrentKind kind) {
  switch (kind) {
    case RecurrentKind::kRnn: return 1;
    case RecurrentKind::kGru: return 3;
    case RecurrentKind::kLstm: return 4;
  }
  return 1;
}

const char* KindName(RecurrentKind kind) {
  switch (kind) {
    case RecurrentKind::kRnn: return "RNN";
    case RecurrentKind::kGru: return "GRU";
    case RecurrentKind::kLstm: return "LSTM";
  }
  return "RNN";
}

// A direction's state for one batch entry: hidden and (LSTM) cell values.
struct State {
  std::vector<double> h, c;
};

class RecurrentRunner {
 public:
  RecurrentRunner(RecurrentKind kind, const RecurrentOptions& opt, Geometry g)
      : kind_(kind), opt_(opt), g_(g) {}

  // Loads the inputs (already shape-checked) as doubles.
  void Load(const RecurrentInputs& in) {
    x_ = ToDoubles(in.x);
    w_ = ToDoubles(in.w);
    r_ = ToDoubles(in.r);
    const int64_t gh = g_.gates * g_.hidden;
    b_ = in.b ? ToDoubles(*in.b) : std::vector<double>(static_cast<size_t>(g_.dirs * 2 * gh), 0.0);
    p_ = in.p ? ToDoubles(*in.p)
              : std::vector<double>(static_cast<size_t>(g_.dirs * 3 * g_.hidden), 0.0);
    if (in.initial_h) h0_ = ToDoubles(*in.initial_h);
    if (in.initial_c) c0_ = ToDoubles(*in.initial_c);
  }

  // Runs direction `d` for batch entry `b` over `len` steps, writing Y
  // (indexed [t][d][b][k] in the layout-0 order through `y_at`) and the final
  // state.
  template <typename YStore>
  State Run(int64_t d, int64_t b, int64_t len, bool reverse,
            const std::vector<Activation>& acts, YStore&& y_store) const {
    const int64_t H = g_.hidden;
    State s;
    s.h.assign(static_cast<size_t>(H), 0.0);
    s.c.assign(static_cast<size_t>(H), 0.0);
    for (int64_t k = 0; k < H; ++k) {
      if (!h0_.empty()) s.h[static_cast<size_t>(k)] = h0_[static_cast<size_t>(StateIndex(d, b, k))];
      if (!c0_.empty()) s.c[static_cast<size_t>(k)] = c0_[static_cast<size_t>(StateIndex(d, b, k))];
    }
    std::vector<double> xw(static_cast<size_t>(g_.gates * H)), hr(xw.size());
    for (int64_t step = 0; step < len; ++step) {
      const int64_t t = reverse ? len - 1 - step : step;
      // xw = X_t W^T + Wb, hr = H_{t-1} R^T + Rb, one entry per gate row.
      for (int64_t row = 0; row < g_.gates * H; ++row) {
        double acc = b_[static_cast<size_t>(BiasIndex(d, 0, row))];
        for (int64_t i = 0; i < g_.input; ++i) {
          acc += x_[static_cast<size_t>(XIndex(t, b, i))] *
                 w_[static_cast<size_t>((d * g_.gates * H + row) * g_.input + i)];
        }
        xw[static_cast<size_t>(row)] = acc;
        double racc = b_[static_cast<size_t>(BiasIndex(d, 1, row))];
        for (int64_t i = 0; i < H; ++i) {
          racc += s.h[static_cast<size_t>(i)] *
                  r_[static_cast<size_t>((d * g_.gates * H + row) * H + i)];
        }
        hr[static_cast<size_t>(row)] = racc;
      }
      switch (kind_) {
        case RecurrentKind::kRnn: StepRnn(xw, hr, acts, s); break;
        case RecurrentKind::kGru: StepGru(d, xw, hr, acts, s); break;
        case RecurrentKind::kLstm: StepLstm(d, xw, hr, acts, s); break;
      }
      for (int64_t k = 0; k < H; ++k) y_store(t, k, s.h[static_cast<size_t>(k)]);
    }
    return s;
  }

 private:
  double Clip(double v) const {
    if (!opt_.clip) return v;
    return std::min(std::max(v, -*opt_.clip), *opt_.clip);
  }
  int64_t XIndex(int64_t t, int64_t b, int64_t i) const {
    return opt_.layout == 0 ? (t * g_.batch + b) * g_.input + i
                            : (b * g_.seq + t) * g_.input + i;
  }
  int64_t StateIndex(int64_t d, int64_t b, int64_t k) const {
    return opt_.layout == 0 ? (d * g_.batch + b) * g_.hidden + k
                            : (b * g_.dirs + d) * g_.hidden + k;
  }
  // part 0: Wb, part 1: Rb.
  int64_t BiasIndex(int64_t d, int64_t part, int64_t row) const {
    return (d * 2 + part) * g_.gates * g_.hidden + row;
  }

  void StepRnn(const std::vector<double>& xw, const std::vector<double>& hr,
               const std::vector<Activation>& acts, State& s) const {
    for (size_t k = 0; k < s.h.size(); ++k) s.h[k] = acts[0](Clip(xw[k] + hr[k]));
  }

  void StepGru(int64_t d, const std::vector<double>& xw, const std::vector<double>& hr,
               const std::vector<Activation>& acts, State& s) const {
    const size_t H = s.h.size();
    std::vector<double> z(H), r(H), next(H);
    for (size_t k = 0; k < H; ++k) {
      z[k] = acts[0](Clip(xw[k] + hr[k]));
      r[k] = acts[0](Clip(xw[H + k] + hr[H + k]));
    }
    for (size_t k = 0; k < H; ++k) {
      double pre;
      if (opt_.linear_before_reset) {
        // hr already holds H_{t-1} Rh^T + Rbh.
        pre = xw[2 * H + k] + r[k] * hr[2 * H + k];
      } else {
        // (r . H_{t-1}) Rh^T + Rbh: the reset applies before the product.
        const int64_t row = static_cast<int64_t>(2 * H + k);
        double acc = b_[static_cast<size_t>(BiasIndex(d, 1, row))];
        for (size_t i = 0; i < H; ++i) {
          acc += r[i] * s.h[i] *
                 r_[static_cast<size_t>((d * g_.gates * g_.hidden + row) * g_.hidden +
                                        static_cast<int64_t>(i))];
        }
        pre = xw[2 * H + k] + acc;
      }
      const double candidate = acts[1](Clip(pre));
      next[k] = (1 - z[k]) * candidate + z[k] * s.h[k];
    }
    s.h = std::move(next);
  }

  void StepLstm(int64_t d, const std::vector<double>& xw, const std::vector<double>& hr,
                const std::vector<Activation>& acts, State& s) const {
    const size_t H = s.h.size();
    const double* p = p_.data() + d * 3 * g_.hidden;  // i, o, f
    for (size_t k = 0; k < H; ++k) {
      const double c_prev = s.c[k];
      const double i = acts[0](Clip(xw[k] + hr[k] + p[k] * c_prev));
      double f = acts[0](Clip(xw[2 * H + k] + hr[2 * H + k] + p[2 * H + k] * c_prev));
      if (opt_.input_forget) f = 1 - i;
      const double cand = acts[1](Clip(xw[3 * H + k] + hr[3 * H + k]));
      const double c = f * c_prev + i * cand;
      const double o = acts[0](Clip(xw[H + k] + hr[H + k] + p[H + k] * c));
      s.c[k] = c;
      s.h[k] = o * acts[2](c);
    }
  }

  RecurrentKind kind_;
  const RecurrentOptions& opt_;
  Geometry g_;
  std::vector<double> x_, w_, r_, b_, p_, h0_, c0_;
};

}  // namespace

absl::StatusOr<RecurrentOutputs> Recurrent(RecurrentKind kind, const RecurrentInputs& in,
                                           const RecurrentOptions& opt) {
  const char* op = KindName(kind);
  if (opt.layout != 0 && opt.layout != 1) return Invalid(op, "layout must be 0 or 1");
  int64_t dirs;
  if (opt.direction == "forward" || opt.direction == "reverse") {
    dirs = 1;
  } else if (opt.direction == "bidirectional") {
    dirs = 2;
  } else {
    return Invalid(op, absl::StrCat("unknown direction '", opt.direction, "'"));
  }
  if (!in.x.has_data() || in.x.dim() != 3) return Invalid(op, "X must be a 3-D tensor");
  if (!IsFloatingPoint(in.x.dtype()) || !IsStorableDType(in.x.dtype())) {
    return absl::UnimplementedError(
        absl::StrCat(op, ": unsupported dtype ", DTypeName(in.x.dtype())));
  }
  if (!in.r.has_data() || in.r.dim() != 3) return Invalid(op, "R must be a 3-D tensor");
  Geometry g;
  g.gates = NumGates(kind);
  g.dirs = dirs;
  g.seq = in.x.size(opt.layout == 0 ? 0 : 1);
  g.batch = in.x.size(opt.layout == 0 ? 1 : 0);
  g.input = in.x.size(2);
  g.hidden = in.r.size(2);
  if (opt.hidden_size > 0 && opt.hidden_size != g.hidden) {
    return Invalid(op, absl::StrCat("hidden_size ", opt.hidden_size, " disagrees with R's shape ",
                                    ShapeToString(in.r.sizes())));
  }
  // Keep the reference loops bounded: sizes come from the model.
  // (Counted in double: the product of model-given sizes may overflow int64.)
  const double work = static_cast<double>(g.seq) * static_cast<double>(g.batch) *
                      static_cast<double>(dirs * g.gates) * static_cast<double>(g.hidden) *
                      static_cast<double>(g.input + g.hidden);
  if (g.hidden <= 0 || work > 1.7e10) {
    return Invalid(op, "hidden size must be positive and the problem small enough");
  }
  const int64_t gh = g.gates * g.hidden;
  RETURN_IF_ERROR(CheckShape(op, "W", in.w, {dirs, gh, g.input}));
  RETURN_IF_ERROR(CheckShape(op, "R", in.r, {dirs, gh, g.hidden}));
  if (in.b) RETURN_IF_ERROR(CheckShape(op, "B", *in.b, {dirs, 2 * gh}));
  const std::vector<int64_t> state_shape =
      opt.layout == 0 ? std::vector<int64_t>{dirs, g.batch, g.hidden}
                      : std::vector<int64_t>{g.batch, dirs, g.hidden};
  if (in.initial_h) RETURN_IF_ERROR(CheckShape(op, "initial_h", *in.initial_h, state_shape));
  if (kind == RecurrentKind::kLstm) {
    if (in.initial_c) RETURN_IF_ERROR(CheckShape(op, "initial_c", *in.initial_c, state_shape));
    if (in.p) RETURN_IF_ERROR(CheckShape(op, "P", *in.p, {dirs, 3 * g.hidden}));
  }
  std::vector<int64_t> lens(static_cast<size_t>(g.batch), g.seq);
  if (in.sequence_lens) {
    RETURN_IF_ERROR(CheckShape(op, "sequence_lens", *in.sequence_lens, {g.batch}));
    if (!IsIntegral(in.sequence_lens->dtype(), /*include_bool=*/false)) {
      return Invalid(op, "sequence_lens must be integers");
    }
    for (int64_t b = 0; b < g.batch; ++b) {
      const int64_t len = in.sequence_lens->GetInt(b);
      if (len < 0 || len > g.seq) {
        return Invalid(op, absl::StrCat("sequence_lens[", b, "] = ", len, " is outside [0, ",
                                        g.seq, "]"));
      }
      lens[static_cast<size_t>(b)] = len;
    }
  }
  std::vector<std::string> defaults;
  switch (kind) {
    case RecurrentKind::kRnn: defaults = {"Tanh"}; break;
    case RecurrentKind::kGru: defaults = {"Sigmoid", "Tanh"}; break;
    case RecurrentKind::kLstm: defaults = {"Sigmoid", "Tanh", "Tanh"}; break;
  }
  ASSIGN_OR_RETURN(std::vector<std::vector<Activation>> acts,
                   ResolveActivations(op, opt, static_cast<int64_t>(defaults.size()), dirs,
                                      defaults));

  RecurrentRunner runner(kind, opt, g);
  runner.Load(in);
  const DType dtype = in.x.dtype();
  RecurrentOutputs out;
  out.y = opt.layout == 0 ? Tensor::Empty(dtype, {g.seq, dirs, g.batch, g.hidden})
                          : Tensor::Empty(dtype, {g.batch, g.seq, dirs, g.hidden});
  out.y_h = Tensor::Empty(dtype, state_shape);
  if (kind == RecurrentKind::kLstm) out.y_c = Tensor::Empty(dtype, state_shape);
  absl::Status status;
  for (int64_t d = 0; d < dirs; ++d) {
    const bool reverse = opt.direction == "reverse" || d == 1;
    for (int64_t b = 0; b < g.batch; ++b) {
      auto store = [&](int64_t t, int64_t k, double v) {
        const int64_t at = opt.layout == 0 ? ((t * dirs + d) * g.batch + b) * g.hidden + k
                                           : ((b * g.seq + t) * dirs + d) * g.hidden + k;
        absl::Status s = SetDouble(out.y, at, v);
        if (status.ok()) status = s;
      };
      const State final_state =
          runner.Run(d, b, lens[static_cast<size_t>(b)], reverse, acts[static_cast<size_t>(d)],
                     store);
      for (int64_t k = 0; k < g.hidden; ++k) {
        const int64_t at = opt.layout == 0 ? (d * g.batch + b) * g.hidden + k
                                           : (b * dirs + d) * g.hidden + k;
        RETURN_IF_ERROR(SetDouble(out.y_h, at, final_state.h[static_cast<size_t>(k)]));
        if (kind == RecurrentKind::kLstm) {
          RETURN_IF_ERROR(SetDouble(out.y_c, at, final_state.c[static_cast<size_t>(k)]));
        }
      }
    }
  }
  RETURN_IF_ERROR(status);
  return out;
}

// ------------------------------------------------------------ sequences

namespace {

// Byte address of the element at logical (row-major) index `flat`.
const char* ElementAddress(const Tensor& t, int64_t flat) {
  int64_t offset = 0;
  for (int64_t d = t.dim() - 1; d >= 0; --d) {
    const int64_t size = t.size(d);
    if (size == 0) return static_cast<const char*>(t.raw_data());
    offset += (flat % size) * t.strides()[static_cast<size_t>(d)];
    flat /= size;
  }
  return static_cast<const char*>(t.raw_data()) +
         offset * static_cast<int64_t>(t.element_size());
}

}  // namespace

absl::StatusOr<int64_t> SequencePosition(const char* op, const Tensor& position, int64_t size,
                                         bool allow_end) {
  if (!position.has_data() || position.numel() != 1 ||
      !IsIntegral(position.dtype(), /*include_bool=*/false)) {
    return Invalid(op, "position must be a single integer");
  }
  const int64_t p = position.GetInt(0);
  const int64_t hi = allow_end ? size : size - 1;
  if (p < -size || p > hi) {
    return Invalid(op, absl::StrCat("position ", p, " is out of range for a sequence of ",
                                    size, " tensors"));
  }
  return p < 0 ? p + size : p;
}

absl::StatusOr<Tensor> SequenceAt(const std::vector<Tensor>& seq, const Tensor& position) {
  ASSIGN_OR_RETURN(int64_t p, SequencePosition("SequenceAt", position,
                                               static_cast<int64_t>(seq.size()), false));
  return seq[static_cast<size_t>(p)];
}

absl::StatusOr<std::vector<Tensor>> SequenceInsert(const std::vector<Tensor>& seq,
                                                   const Tensor& value,
                                                   const std::optional<Tensor>& position) {
  const int64_t n = static_cast<int64_t>(seq.size());
  int64_t p = n;
  if (position) {
    ASSIGN_OR_RETURN(p, SequencePosition("SequenceInsert", *position, n, true));
  }
  if (!seq.empty() && seq.front().dtype() != value.dtype()) {
    return Invalid("SequenceInsert", "the tensor's dtype differs from the sequence's");
  }
  std::vector<Tensor> out = seq;
  out.insert(out.begin() + p, value);
  return out;
}

absl::StatusOr<std::vector<Tensor>> SequenceErase(const std::vector<Tensor>& seq,
                                                  const std::optional<Tensor>& position) {
  const int64_t n = static_cast<int64_t>(seq.size());
  if (n == 0) return Invalid("SequenceErase", "the sequence is empty");
  int64_t p = n - 1;
  if (position) {
    ASSIGN_OR_RETURN(p, SequencePosition("SequenceErase", *position, n, false));
  }
  std::vector<Tensor> out = seq;
  out.erase(out.begin() + p);
  return out;
}

absl::StatusOr<std::vector<Tensor>> SplitToSequence(const Tensor& input,
                                                    const std::optional<Tensor>& split,
                                                    int64_t axis, bool keepdims) {
  const char* op = "SplitToSequence";
  if (!input.has_data()) return Invalid(op, "input has no data");
  if (input.dim() == 0) return Invalid(op, "input must have rank >= 1");
  ASSIGN_OR_RETURN(int64_t dim, NormalizeDim(axis, input.dim(), op));
  const int64_t extent = input.size(dim);
  std::vector<Tensor> out;
  if (!split) {
    for (int64_t i = 0; i < extent; ++i) {
      ASSIGN_OR_RETURN(Tensor piece, Slice(input, dim, i, i + 1));
      if (!keepdims) {
        ASSIGN_OR_RETURN(piece, Squeeze(piece, dim));
      }
      out.push_back(std::move(piece));
    }
    return out;
  }
  if (!split->has_data() || !IsIntegral(split->dtype(), false) || split->dim() > 1) {
    return Invalid(op, "split must be an integer scalar or 1-D tensor");
  }
  std::vector<int64_t> lengths;
  if (split->dim() == 0) {
    const int64_t piece = split->GetInt(0);
    if (piece <= 0) return Invalid(op, "split must be positive");
    for (int64_t at = 0; at < extent; at += piece) lengths.push_back(std::min(piece, extent - at));
  } else {
    int64_t total = 0;
    for (int64_t i = 0; i < split->numel(); ++i) {
      const int64_t len = split->GetInt(i);
      if (len < 0) return Invalid(op, "split lengths must be non-negative");
      total += len;
      if (total > extent) break;
      lengths.push_back(len);
    }
    if (total != extent) {
      return Invalid(op, absl::StrCat("split lengths must sum to the axis size ", extent));
    }
  }
  int64_t at = 0;
  for (int64_t len : lengths) {
    ASSIGN_OR_RETURN(Tensor piece, Slice(input, dim, at, at + len));
    out.push_back(std::move(piece));
    at += len;
  }
  return out;
}

absl::StatusOr<Tensor> ConcatFromSequence(const std::vector<Tensor>& seq, int64_t axis,
                                          bool new_axis) {
  const char* op = "ConcatFromSequence";
  if (seq.empty()) return Invalid(op, "the sequence is empty");
  const Tensor& first = seq.front();
  const int64_t rank = first.dim();
  ASSIGN_OR_RETURN(int64_t dim, NormalizeDim(axis, new_axis ? rank + 1 : rank, op));
  std::vector<Tensor> parts;
  for (const Tensor& t : seq) {
    if (!t.has_data()) return Invalid(op, "a tensor has no data");
    if (t.dtype() != first.dtype()) return Invalid(op, "tensors have different dtypes");
    bool matches = t.dim() == rank;
    for (int64_t d = 0; matches && d < rank; ++d) {
      if ((new_axis || d != dim) && t.size(d) != first.size(d)) matches = false;
    }
    if (!matches) {
      return Invalid(op, absl::StrCat("shape ", ShapeToString(t.sizes()),
                                      " does not match ", ShapeToString(first.sizes())));
    }
    if (new_axis) {
      ASSIGN_OR_RETURN(Tensor u, Unsqueeze(t, dim));
      parts.push_back(std::move(u));
    } else {
      parts.push_back(t);
    }
  }
  std::vector<int64_t> sizes = parts.front().sizes();
  int64_t total = 0;
  for (const Tensor& t : parts) total += t.size(dim);
  sizes[static_cast<size_t>(dim)] = total;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= sizes[static_cast<size_t>(d)];
  for (int64_t d = dim + 1; d < static_cast<int64_t>(sizes.size()); ++d) {
    inner *= sizes[static_cast<size_t>(d)];
  }
  Tensor out = Tensor::Empty(first.dtype(), sizes);
  char* dst = static_cast<char*>(out.raw_data());
  const size_t esize = out.element_size();
  int64_t offset = 0;
  for (const Tensor& t : parts) {
    const int64_t len = t.size(dim);
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t a = 0; a < len; ++a) {
        for (int64_t i = 0; i < inner; ++i) {
          const int64_t src = (o * len + a) * inner + i;
          const int64_t to = (o * total + offset + a) * inner + i;
          std::memcpy(dst + static_cast<size_t>(to) * esize, ElementAddress(t, src), esize);
        }
      }
    }
    offset += len;
  }
  return out;
}

absl::StatusOr<Tensor> StackScanOutputs(const std::vector<Tensor>& seq, int64_t axis,
                                        std::optional<DType> dtype,
                                        const std::optional<std::vector<int64_t>>& element_shape) {
  if (!seq.empty()) return ConcatFromSequence(seq, axis, /*new_axis=*/true);
  const char* op = "StackScanOutputs";
  if (!dtype || !element_shape) {
    return Invalid(op, "the loop ran zero times and the scan output's dtype and shape are unknown");
  }
  std::vector<int64_t> sizes = *element_shape;
  for (int64_t d : sizes) {
    if (d < 0) return Invalid(op, "element sizes must be non-negative");
  }
  ASSIGN_OR_RETURN(int64_t dim, NormalizeDim(axis, static_cast<int64_t>(sizes.size()) + 1, op));
  sizes.insert(sizes.begin() + dim, 0);
  return Tensor::Empty(*dtype, std::move(sizes));
}

}  // namespace kiln::runtime
