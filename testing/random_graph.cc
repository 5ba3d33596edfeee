#include "driver/initialize.h"
#include "testing/random_graph.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <utility>
#include <variant>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "backends/cpu/cpu_backend.h"
#include "ir/ivalue.h"
#include "ir/op_registry.h"
#include "ir/text_parser.h"
#include "runtime/interpreter.h"
#include "support/promotion.h"
#include "runtime/tensor_ops.h"
#include "support/status.h"
#include "driver/compile_graph.h"

namespace kiln::testing {
namespace {

uint64_t SplitMix(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

Entropy Entropy::FromSeed(uint64_t seed) {
  Entropy e;
  e.state_ = seed;
  return e;
}

Entropy Entropy::FromBytes(const uint8_t* data, size_t size) {
  Entropy e;
  e.data_ = data;
  e.size_ = size;
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < size; ++i) h = (h ^ data[i]) * 0x100000001b3ULL;
  e.state_ = h;
  return e;
}

uint64_t Entropy::NextWord() {
  if (pos_ < size_) return data_[pos_++];
  return SplitMix(&state_);
}

int Entropy::Below(int n) {
  if (n <= 1) return 0;
  return static_cast<int>(NextWord() % static_cast<uint64_t>(n));
}

double Entropy::Uniform(double lo, double hi) {
  const double u = static_cast<double>(SplitMix(&state_) >> 11) * 0x1.0p-53;
  return lo + (hi - lo) * u;
}

namespace {

struct Val {
  std::string name;
  DType dtype = DType::kFloat32;
  std::vector<int64_t> sizes;
  // Computed bit-identically by the interpreter and the compiled code.
  bool exact = true;
  int rank() const { return static_cast<int>(sizes.size()); }
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t s : sizes) n *= s;
    return n;
  }
};

bool IsFloat(DType t) { return t == DType::kFloat32 || t == DType::kFloat64; }
bool IsInt(DType t) { return t == DType::kInt64; }
bool IsBool(DType t) { return t == DType::kBool; }

// Whether a discontinuous function of `v` is safe to compare exactly.
bool Stable(const Val& v) { return !IsFloat(v.dtype) || v.exact; }

std::optional<std::vector<int64_t>> BroadcastShapes(const std::vector<int64_t>& a,
                                                    const std::vector<int64_t>& b) {
  const size_t n = std::max(a.size(), b.size());
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (x != y && x != 1 && y != 1) return std::nullopt;
    out[i] = x == 1 ? y : x;
  }
  return out;
}

// Results past this many elements are not generated (broadcasting [n, 1]
// against [n] of a large input would make n*n).
constexpr int64_t kMaxElements = 1 << 18;

bool TooBig(const std::vector<int64_t>& sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) {
    n *= s;
    if (n > kMaxElements) return true;
  }
  return false;
}

std::string FormatFloat(double v) {
  std::string s = absl::StrFormat("%.17g", v);
  if (s.find_first_of(".en") == std::string::npos) s += ".";
  return s;
}

DTypeOperand TensorOperand(const Val& v) {
  return {v.dtype, v.rank() == 0 ? OperandClass::kZeroDim
                                 : OperandClass::kDimensioned};
}

DType Promote(std::initializer_list<DTypeOperand> ops) {
  absl::StatusOr<DType> t = ResultType(std::vector<DTypeOperand>(ops));
  return t.ok() ? *t : DType::kFloat32;
}

// A scalar operand: its text and its promotion operand.
struct Scalar {
  std::string name;
  DTypeOperand operand;
  bool is_float = false;
};

class Generator {
 public:
  Generator(Entropy& e, const GraphOptions& options) : e_(e), options_(options) {}

  RandomGraph Build() {
    special_values_ = e_.Percent(20);
    MakeInputs();
    std::vector<std::string> outputs;
    for (int i = 0; i < options_.num_expressions; ++i) {
      Val v = Gen(1 + e_.Below(options_.max_depth));
      outputs.push_back(v.name);
      if (e_.Percent(3)) outputs.push_back(v.name);  // the same value twice
    }
    if (e_.Percent(10)) outputs.push_back(inputs_[0].name);  // an input as output
    RandomGraph g;
    g.special_values = special_values_;
    std::vector<std::string> params;
    for (const Val& in : inputs_) {
      params.push_back(absl::StrCat(in.name, " : ", DTypeName(in.dtype), "(",
                                    absl::StrJoin(in.sizes, ", "), ")"));
      g.inputs.push_back({in.dtype, in.sizes});
    }
    for (const std::string& o : outputs) g.f32_tolerance.push_back(f32_history_.contains(o));
    g.text = absl::StrCat("graph(", absl::StrJoin(params, ",\n      "), "):\n", body_,
                          "  return (", absl::StrJoin(outputs, ", "), ")\n");
    return g;
  }

  bool special_values() const { return special_values_; }

 private:
  // ---- text emission ----
  std::string Fresh(absl::string_view prefix) { return absl::StrCat("%", prefix, next_++); }
  std::string Const(absl::string_view type, const std::string& value) {
    std::string n = Fresh("c");
    absl::StrAppend(&body_, "  ", n, " : ", type, " = prim::Constant",
                    value.empty() ? "" : absl::StrCat("[value=", value, "]"), "()\n");
    return n;
  }
  std::string Int(int64_t v) { return Const("int", absl::StrCat(v)); }
  std::string Float(double v) { return Const("float", FormatFloat(v)); }
  std::string Bool(bool v) { return Const("bool", v ? "1" : "0"); }
  std::string None() { return Const("NoneType", ""); }
  std::string Str(absl::string_view s) { return Const("str", absl::StrCat("\"", s, "\"")); }
  std::string IntList(const std::vector<int64_t>& v) {
    if (v.empty()) {
      std::string n = Fresh("l");
      absl::StrAppend(&body_, "  ", n, " : int[] = prim::ListConstruct()\n");
      return n;
    }
    return Const("int[]", absl::StrCat("[", absl::StrJoin(v, ", "), "]"));
  }
  std::string TensorList(const std::vector<Val>& vs) {
    std::string n = Fresh("l");
    std::vector<std::string> names;
    for (const Val& v : vs) names.push_back(v.name);
    for (const Val& v : vs) {
      if (f32_history_.contains(v.name)) f32_history_.insert(n);
    }
    absl::StrAppend(&body_, "  ", n, " : Tensor[] = prim::ListConstruct(",
                    absl::StrJoin(names, ", "), ")\n");
    return n;
  }
  Val Emit(absl::string_view op, const std::vector<std::string>& args, DType dtype,
           std::vector<int64_t> sizes, bool exact) {
    Val v{Fresh("v"), dtype, std::move(sizes), exact};
    bool f32 = dtype == DType::kFloat32;
    for (const std::string& a : args) f32 = f32 || f32_history_.contains(a);
    if (f32) f32_history_.insert(v.name);
    // Shape propagation has no function for slice/narrow/where.Scalar* (an
    // open gap): annotate their results as TorchScript does.
    const bool scalar_where =
        op == "where" && args.size() == 3 && (args[1][1] == 'c' || args[2][1] == 'c');
    const std::string type = op == "slice" || op == "narrow" || scalar_where
                                 ? absl::StrCat(DTypeName(dtype), "(", absl::StrJoin(v.sizes, ", "), ")")
                                 : "Tensor";
    absl::StrAppend(&body_, "  ", v.name, " : ", type, " = aten::", op, "(", absl::StrJoin(args, ", "),
                    ")\n");
    pool_.push_back(v);
    return v;
  }

  // ---- inputs ----
  void MakeInputs() {
    static constexpr int64_t kDims[] = {1, 2, 3, 4, 5, 7, 8, 16, 17};
    std::vector<int64_t> base;
    if (options_.allow_large && e_.Percent(8)) {
      static const std::vector<int64_t> kLarge[] = {{64, 600}, {3, 67, 211}, {40000}, {129, 257}};
      base = kLarge[e_.Below(4)];
    } else {
      const int rank = 1 + e_.Below(4);
      int64_t numel = 1;
      for (int i = 0; i < rank; ++i) {
        int64_t d = kDims[e_.Below(9)];
        if (numel * d > 256) d = 1 + e_.Below(2);
        numel *= d;
        base.push_back(d);
      }
    }
    const int n = 1 + e_.Below(std::max(1, options_.max_inputs));
    for (int i = 0; i < n; ++i) {
      Val in;
      in.name = absl::StrCat("%x", i);
      const int r = e_.Percent(70) ? static_cast<int>(base.size()) : e_.Below(base.size() + 1);
      in.sizes.assign(base.end() - r, base.end());
      for (int64_t& s : in.sizes) {
        if (e_.Percent(20)) s = 1;
      }
      if (in.sizes.empty()) in.sizes.push_back(1);  // inputs have rank >= 1
      const int d = e_.Below(100);
      in.dtype = i == 0 || d < 55 ? DType::kFloat32
                 : d < 70         ? DType::kFloat64
                 : d < 85         ? DType::kInt64
                                  : DType::kBool;
      inputs_.push_back(in);
      pool_.push_back(in);
      if (in.dtype == DType::kFloat32) f32_history_.insert(in.name);
    }
  }

  // ---- operand choice ----
  const Val& Leaf() {
    if (e_.Percent(50)) return inputs_[e_.Below(inputs_.size())];
    return pool_[e_.Below(pool_.size())];
  }
  Val Operand(int depth) {
    if (depth <= 0 || e_.Percent(25)) return Leaf();
    return Gen(depth - 1);
  }
  // A pool value broadcastable with `a` (or `a` itself).
  Val Partner(const Val& a, int depth) {
    if (depth > 0 && e_.Percent(35)) {
      Val b = Gen(depth - 1);
      auto shape = BroadcastShapes(a.sizes, b.sizes);
      if (shape && !TooBig(*shape)) return b;
    }
    std::vector<const Val*> ok;
    for (const Val& v : pool_) {
      auto shape = BroadcastShapes(a.sizes, v.sizes);
      if (shape && !TooBig(*shape)) ok.push_back(&v);
    }
    if (ok.empty() || e_.Percent(10)) return a;
    return *ok[e_.Below(ok.size())];
  }
  Val PartnerMatching(const Val& a, int depth, bool (*pred)(const Val&)) {
    for (int tries = 0; tries < 4; ++tries) {
      Val b = Partner(a, depth);
      if (pred(b)) return b;
    }
    return a;
  }

  Scalar MakeScalar(bool allow_float, bool allow_int, bool nonzero) {
    static constexpr double kFloats[] = {0.5, -1.5, 2.0, 3.0, 0.25, -0.75, 1e-3, 0.0};
    static constexpr int64_t kInts[] = {1, 2, 3, -1, -2, 0, 7};
    if (allow_float && (!allow_int || e_.Percent(60))) {
      double v = kFloats[e_.Below(8)];
      // Divisors: not 0, and not 1e-3 (it scales rounding differences by 1000).
      if (nonzero && std::fabs(v) < 0.1) v = 1.5;
      return {Float(v), {DType::kFloat64, OperandClass::kScalar}, true};
    }
    int64_t v = kInts[e_.Below(7)];
    if (nonzero && v == 0) v = 2;
    return {Int(v), {DType::kInt64, OperandClass::kScalar}, false};
  }

  std::vector<int64_t> RandomDims(int rank, bool allow_empty) {
    std::vector<int64_t> dims;
    for (int d = 0; d < rank; ++d) {
      if (e_.Percent(45)) dims.push_back(e_.Percent(30) ? d - rank : d);
    }
    if (dims.empty() && !allow_empty && rank > 0) dims.push_back(e_.Below(rank));
    return dims;
  }
  static std::vector<int64_t> Reduced(const Val& a, const std::vector<int64_t>& dims, bool keep) {
    std::vector<bool> red(a.rank(), dims.empty());
    for (int64_t d : dims) red[(d + a.rank()) % std::max(1, a.rank())] = true;
    std::vector<int64_t> out;
    for (int i = 0; i < a.rank(); ++i) {
      if (!red[i]) {
        out.push_back(a.sizes[i]);
      } else if (keep) {
        out.push_back(1);
      }
    }
    return out;
  }

  // ---- the ops ----
  Val Gen(int depth) {
    for (int tries = 0; tries < 8; ++tries) {
      const int k = e_.Below(100);
      std::optional<Val> v;
      if (k < 20) {
        v = Unary(Operand(depth));
      } else if (k < 42) {
        v = Binary(Operand(depth), depth);
      } else if (k < 52) {
        v = ScalarBinary(Operand(depth));
      } else if (k < 64) {
        v = Reduction(Operand(depth));
      } else if (k < 68) {
        v = Softmax(Operand(depth));
      } else if (k < 82) {
        v = View(Operand(depth));
      } else if (k < 87) {
        v = Where(Operand(depth), depth);
      } else if (k < 90) {
        v = Clamp(Operand(depth));
      } else if (k < 94) {
        v = Cast(Operand(depth));
      } else if (k < 96) {
        v = Mm(Operand(depth));
      } else {
        v = Cat(Operand(depth), depth);
      }
      if (v) return *v;
    }
    Val a = Leaf();
    return Emit("clone", {a.name}, a.dtype, a.sizes, a.exact);
  }

  std::optional<Val> Unary(const Val& a) {
    if (IsBool(a.dtype)) {
      return e_.Percent(50) ? Emit("logical_not", {a.name}, DType::kBool, a.sizes, true)
                            : Emit("bitwise_not", {a.name}, DType::kBool, a.sizes, true);
    }
    if (IsInt(a.dtype) && e_.Percent(60)) {
      static constexpr const char* kIntOps[] = {"abs", "neg", "relu", "sign", "bitwise_not",
                                                "square"};
      return Emit(kIntOps[e_.Below(6)], {a.name}, a.dtype, a.sizes, true);
    }
    const DType out = IsFloat(a.dtype) ? a.dtype : DType::kFloat32;
    if (e_.Percent(25)) {
      // Exact (same-bits) ops.
      static constexpr const char* kExact[] = {"abs", "neg", "relu"};
      if (IsFloat(a.dtype)) return Emit(kExact[e_.Below(3)], {a.name}, a.dtype, a.sizes, a.exact);
    }
    if (Stable(a) && e_.Percent(30)) {
      // Discontinuous: safe on exact values only.
      const int k = e_.Below(8);
      if (k == 6) return Emit("isnan", {a.name}, DType::kBool, a.sizes, true);
      if (k == 7) return Emit("logical_not", {a.name}, DType::kBool, a.sizes, true);
      if (!IsFloat(a.dtype)) return std::nullopt;
      static constexpr const char* kOps[] = {"floor", "ceil", "round", "trunc", "sign", "frac"};
      if (k == 5) return std::nullopt;  // frac: no lowering to test yet
      return Emit(kOps[k], {a.name}, a.dtype, a.sizes, true);
    }
    if (!IsFloat(a.dtype) && !e_.Percent(15)) return std::nullopt;
    // Ill-conditioned near 0: only on exact inputs.
    if (a.exact && e_.Percent(25)) {
      // sin/cos: large arguments (sums over many elements) amplify rounding.
      static constexpr const char* kSensitive[] = {"log", "rsqrt", "reciprocal", "sqrt", "sin", "tan",
                                                   "cos"};
      return Emit(kSensitive[e_.Below(7)], {a.name}, out, a.sizes, false);
    }
    static constexpr const char* kOps[] = {
        "exp",  "tanh",        "sigmoid",   "sinh", "atan",       "erf",  "square",
        "silu", "gelu",        "softplus",  "elu",  "leaky_relu", "mish", "hardtanh",
        "hardsigmoid", "hardswish", "log_sigmoid"};  // erfc, selu: not generated yet
    const char* op = kOps[e_.Below(sizeof(kOps) / sizeof(kOps[0]))];
    // Piecewise activations on integers keep the dtype in torch; keep them float-only.
    if (!IsFloat(a.dtype)) op = kOps[e_.Below(6)];
    return Emit(op, {a.name}, out, a.sizes, false);
  }

  std::optional<Val> Binary(const Val& a, int depth) {
    const int k = e_.Below(100);
    Val b = Partner(a, depth);
    auto shape = BroadcastShapes(a.sizes, b.sizes);
    if (!shape || TooBig(*shape)) return std::nullopt;
    const DType t = Promote({TensorOperand(a), TensorOperand(b)});
    const bool both_exact = Stable(a) && Stable(b);
    const bool all_int = !IsFloat(t);
    if (k < 30) {
      static constexpr const char* kOps[] = {"add", "sub", "mul"};
      const char* op = kOps[e_.Below(3)];
      if (std::strcmp(op, "sub") == 0 && (IsBool(a.dtype) || IsBool(b.dtype))) op = "mul";
      std::vector<std::string> args = {a.name, b.name};
      if (std::strcmp(op, "mul") != 0 && !IsBool(t) && e_.Percent(25)) {
        args.push_back(IsFloat(t) && e_.Percent(50) ? Float(0.5) : Int(2));
      }
      return Emit(op, args, t, *shape, all_int);
    }
    if (k < 40) {
      // True division: 0/0 vs tiny/0 (FMA contraction) differ, so both exact.
      if (!both_exact) return std::nullopt;
      const DType out = IsFloat(t) ? t : DType::kFloat32;
      if (IsFloat(t) && both_exact && e_.Percent(30)) {
        return Emit("div", {a.name, b.name, Str(e_.Percent(50) ? "floor" : "trunc")}, t, *shape,
                    true);
      }
      return Emit("div", {a.name, b.name}, out, *shape, false);
    }
    if (k < 52) {
      if (IsBool(t)) return std::nullopt;
      return Emit(e_.Percent(50) ? "maximum" : "minimum", {a.name, b.name}, t, *shape,
                  a.exact && b.exact);
    }
    if (k < 58) {
      if (!IsFloat(a.dtype) || !both_exact) return std::nullopt;
      return Emit("pow", {a.name, b.name}, t, *shape, false);
    }
    if (k < 75) {
      if (!both_exact) return std::nullopt;
      static constexpr const char* kOps[] = {"eq", "ne", "lt", "le", "gt", "ge"};
      return Emit(kOps[e_.Below(6)], {a.name, b.name}, DType::kBool, *shape, true);
    }
    if (k < 85) {
      if (!both_exact) return std::nullopt;
      static constexpr const char* kOps[] = {"logical_and", "logical_or", "logical_xor"};
      return Emit(kOps[e_.Below(3)], {a.name, b.name}, DType::kBool, *shape, true);
    }
    if (k < 93) {
      if (!all_int) return std::nullopt;
      static constexpr const char* kOps[] = {"bitwise_and", "bitwise_or", "bitwise_xor"};
      return Emit(kOps[e_.Below(3)], {a.name, b.name}, t, *shape, true);
    }
    // remainder / floor_divide on floats (an integer divisor may be zero).
    if (!IsFloat(t) || !both_exact) return std::nullopt;
    return Emit(e_.Percent(50) ? "remainder" : "floor_divide", {a.name, b.name}, t, *shape, true);
  }

  std::optional<Val> ScalarBinary(const Val& a) {
    const int k = e_.Below(100);
    if (k < 40) {
      static constexpr const char* kOps[] = {"add", "sub", "mul", "rsub"};
      const char* op = kOps[e_.Below(4)];
      if (IsBool(a.dtype) && (op[0] == 's' || op[0] == 'r')) return std::nullopt;
      Scalar s = MakeScalar(true, true, false);
      const DType t = Promote({TensorOperand(a), s.operand});
      std::vector<std::string> args = {a.name, s.name};
      if (std::strcmp(op, "mul") != 0) args.push_back(Int(e_.Percent(80) ? 1 : 2));
      return Emit(op, args, t, a.sizes, !IsFloat(t));
    }
    if (k < 55) {
      Scalar s = MakeScalar(true, true, true);
      const DType t = Promote({TensorOperand(a), s.operand});
      return Emit("div", {a.name, s.name}, IsFloat(t) ? t : DType::kFloat32, a.sizes, false);
    }
    if (k < 65) {
      if (!IsFloat(a.dtype) && !IsInt(a.dtype)) return std::nullopt;
      if (IsInt(a.dtype)) return Emit("pow", {a.name, Int(2)}, a.dtype, a.sizes, true);
      static constexpr double kExp[] = {2.0, 3.0, 0.5, -1.0, 2.5};
      const int i = e_.Below(5);
      if (i >= 2 && !a.exact) return std::nullopt;
      return Emit("pow", {a.name, Float(kExp[i])}, a.dtype, a.sizes, false);
    }
    if (k < 80) {
      if (!Stable(a)) return std::nullopt;
      static constexpr const char* kOps[] = {"eq", "ne", "lt", "le", "gt", "ge"};
      Scalar s = MakeScalar(true, true, false);
      return Emit(kOps[e_.Below(6)], {a.name, s.name}, DType::kBool, a.sizes, true);
    }
    // remainder / floor_divide by a non-zero scalar.
    if (IsBool(a.dtype) || !Stable(a)) return std::nullopt;
    Scalar s = MakeScalar(IsFloat(a.dtype), true, true);
    const DType t = Promote({TensorOperand(a), s.operand});
    return Emit(e_.Percent(50) ? "remainder" : "floor_divide", {a.name, s.name}, t, a.sizes, true);
  }

  std::optional<Val> Reduction(const Val& a) {
    if (a.rank() == 0) {
      if (IsBool(a.dtype)) return std::nullopt;
      return Emit("sum", {a.name, None()}, IsFloat(a.dtype) ? a.dtype : DType::kInt64, {},
                  !IsFloat(a.dtype));
    }
    const bool keep = e_.Percent(40);
    const int k = e_.Below(100);
    if (k < 12 && !IsBool(a.dtype)) {
      // Full reduction: sum(x) / mean(x) / amax(x, [])... to a 0-dim tensor.
      if (IsFloat(a.dtype) && e_.Percent(50)) return Emit("mean", {a.name, None()}, a.dtype, {}, false);
      return Emit("sum", {a.name, None()}, IsFloat(a.dtype) ? a.dtype : DType::kInt64, {},
                  !IsFloat(a.dtype));
    }
    std::vector<int64_t> dims = RandomDims(a.rank(), false);
    std::vector<int64_t> out = Reduced(a, dims, keep);
    if (k < 35) {
      const DType t = IsFloat(a.dtype) ? a.dtype : DType::kInt64;
      return Emit("sum", {a.name, IntList(dims), Bool(keep), None()}, t, out, !IsFloat(a.dtype));
    }
    if (k < 50) {
      if (IsBool(a.dtype)) return std::nullopt;
      return Emit(e_.Percent(50) ? "amax" : "amin", {a.name, IntList(dims), Bool(keep)}, a.dtype,
                  out, a.exact);
    }
    if (k < 62) {
      if (!IsFloat(a.dtype)) return std::nullopt;
      return Emit("mean", {a.name, IntList(dims), Bool(keep), None()}, a.dtype, out, false);
    }
    if (k < 72) {
      if (!IsFloat(a.dtype)) return std::nullopt;
      // Not over size-1 dims: var/std of one element divide 0 by 0, and the
      // interpreter's and the kernels' roundings of the mean disagree on
      // whether that is 0/0 (NaN) or tiny/0 (inf); see testing/README.md.
      for (int64_t d : dims) {
        if (a.sizes[(d + a.rank()) % a.rank()] == 1) return std::nullopt;
      }
      const char* op = e_.Percent(70) ? "var" : "std";
      return Emit(op, {a.name, IntList(dims), Bool(e_.Percent(70)), Bool(keep)}, a.dtype, out,
                  false);
    }
    if (k < 86) {
      if (IsBool(a.dtype) || !Stable(a)) return std::nullopt;
      const char* op = e_.Percent(50) ? "argmax" : "argmin";
      if (e_.Percent(20)) {
        // keepdim with dim=None is rejected by the runtime (torch 1.13 too).
        return Emit(op, {a.name, None(), Bool(false)}, DType::kInt64, {}, true);
      }
      const int64_t d = e_.Below(a.rank());
      return Emit(op, {a.name, Int(e_.Percent(30) ? d - a.rank() : d), Bool(keep)}, DType::kInt64,
                  Reduced(a, {d}, keep), true);
    }
    if (!IsFloat(a.dtype)) return std::nullopt;
    if (e_.Percent(50)) return Emit("logsumexp", {a.name, IntList(dims), Bool(keep)}, a.dtype, out, false);
    const int64_t d = e_.Below(a.rank());
    return Emit("prod", {a.name, Int(d), Bool(keep), None()}, a.dtype, Reduced(a, {d}, keep), false);
  }

  std::optional<Val> Softmax(const Val& a) {
    if (!IsFloat(a.dtype) || a.rank() == 0) return std::nullopt;
    const int64_t d = e_.Below(a.rank());
    return Emit(e_.Percent(50) ? "softmax" : "log_softmax",
                {a.name, Int(e_.Percent(30) ? d - a.rank() : d), None()}, a.dtype, a.sizes, false);
  }

  std::optional<Val> View(const Val& a) {
    const int r = a.rank();
    const int k = e_.Below(13);
    auto same = [&](absl::string_view op, std::vector<std::string> args,
                    std::vector<int64_t> sizes) {
      return Emit(op, args, a.dtype, std::move(sizes), a.exact);
    };
    switch (k) {
      case 0: {  // permute
        if (r < 2) return std::nullopt;
        std::vector<int64_t> perm(r);
        for (int i = 0; i < r; ++i) perm[i] = i;
        for (int i = r - 1; i > 0; --i) std::swap(perm[i], perm[e_.Below(i + 1)]);
        std::vector<int64_t> sizes;
        for (int64_t p : perm) sizes.push_back(a.sizes[p]);
        return same("permute", {a.name, IntList(perm)}, sizes);
      }
      case 1: {  // transpose
        if (r < 1) return std::nullopt;
        const int d0 = e_.Below(r), d1 = e_.Below(r);
        std::vector<int64_t> sizes = a.sizes;
        std::swap(sizes[d0], sizes[d1]);
        return same("transpose", {a.name, Int(d0), Int(d1 - (e_.Percent(30) ? r : 0))}, sizes);
      }
      case 2: {  // unsqueeze
        const int d = e_.Below(r + 1);
        std::vector<int64_t> sizes = a.sizes;
        sizes.insert(sizes.begin() + d, 1);
        return same("unsqueeze", {a.name, Int(e_.Percent(30) ? d - (r + 1) : d)}, sizes);
      }
      case 3: {  // squeeze
        std::vector<int64_t> sizes;
        if (r > 0 && e_.Percent(50)) {
          const int d = e_.Below(r);
          sizes = a.sizes;
          if (sizes[d] == 1) sizes.erase(sizes.begin() + d);
          return same("squeeze", {a.name, Int(d)}, sizes);
        }
        for (int64_t s : a.sizes) {
          if (s != 1) sizes.push_back(s);
        }
        return same("squeeze", {a.name}, sizes);
      }
      case 4: {  // reshape
        int64_t n = a.numel();
        std::vector<int64_t> sizes;
        const int parts = 1 + e_.Below(4);
        for (int i = 0; i < parts - 1; ++i) {
          std::vector<int64_t> divs;
          for (int64_t d = 1; d <= n && d <= 64; ++d) {
            if (n % d == 0) divs.push_back(d);
          }
          const int64_t d = divs[e_.Below(divs.size())];
          sizes.push_back(d);
          n /= d;
        }
        sizes.push_back(n);
        std::vector<int64_t> arg = sizes;
        if (e_.Percent(40)) arg[e_.Below(arg.size())] = -1;
        return same("reshape", {a.name, IntList(arg)}, sizes);
      }
      case 5: {  // flatten
        if (r < 1) return std::nullopt;
        const int s = e_.Below(r), e = s + e_.Below(r - s);
        std::vector<int64_t> sizes(a.sizes.begin(), a.sizes.begin() + s);
        int64_t m = 1;
        for (int i = s; i <= e; ++i) m *= a.sizes[i];
        sizes.push_back(m);
        sizes.insert(sizes.end(), a.sizes.begin() + e + 1, a.sizes.end());
        return same("flatten", {a.name, Int(s), Int(e_.Percent(30) ? e - r : e)}, sizes);
      }
      case 6: {  // select
        if (r < 1) return std::nullopt;
        const int d = e_.Below(r);
        const int64_t n = a.sizes[d];
        const int64_t idx = e_.Below(2 * n) - n;
        std::vector<int64_t> sizes = a.sizes;
        sizes.erase(sizes.begin() + d);
        return same("select", {a.name, Int(d), Int(idx)}, sizes);
      }
      case 7:
      case 8: {  // slice
        if (r < 1) return std::nullopt;
        const int d = e_.Below(r);
        const int64_t n = a.sizes[d];
        int64_t start = e_.Below(n + 2) - (e_.Percent(30) ? n + 1 : 0);
        const bool end_none = e_.Percent(25);
        int64_t end = end_none ? std::numeric_limits<int64_t>::max()
                               : e_.Below(n + 3) - (e_.Percent(30) ? n + 1 : 0);
        const int64_t step = 1 + e_.Below(3);
        auto clampi = [n](int64_t v) {
          if (v < 0) v += n;
          return std::min(std::max<int64_t>(v, 0), n);
        };
        int64_t s = clampi(start), en = end_none ? n : clampi(end);
        if (en <= s) {
          start = 0;
          s = 0;
          end = n;
          en = n;
        }
        std::vector<int64_t> sizes = a.sizes;
        sizes[d] = (en - s + step - 1) / step;
        return same("slice", {a.name, Int(d), Int(start), end_none ? None() : Int(end), Int(step)},
                    sizes);
      }
      case 9: {  // expand
        std::vector<int64_t> sizes, arg;
        if (e_.Percent(30)) {
          const int64_t lead = 1 + e_.Below(3);
          sizes.push_back(lead);
          arg.push_back(lead);
        }
        for (int64_t s : a.sizes) {
          if (s == 1 && e_.Percent(60)) {
            const int64_t t = 2 + e_.Below(3);
            sizes.push_back(t);
            arg.push_back(t);
          } else {
            sizes.push_back(s);
            arg.push_back(e_.Percent(50) ? -1 : s);
          }
        }
        if (TooBig(sizes)) return std::nullopt;
        return same("expand", {a.name, IntList(arg), Bool(false)}, sizes);
      }
      case 10:
        if (r > 2) return std::nullopt;
        {
          std::vector<int64_t> sizes = a.sizes;
          std::reverse(sizes.begin(), sizes.end());
          return same("t", {a.name}, sizes);
        }
      case 11:
        return same("contiguous", {a.name}, a.sizes);
      default: {  // unflatten / narrow
        if (r < 1) return std::nullopt;
        const int d = e_.Below(r);
        const int64_t n = a.sizes[d];
        const int64_t start = e_.Below(n);
        const int64_t len = 1 + e_.Below(n - start);
        std::vector<int64_t> sizes = a.sizes;
        sizes[d] = len;
        return same("narrow", {a.name, Int(d), Int(start), Int(len)}, sizes);
      }
    }
  }

  std::optional<Val> Where(const Val& a, int depth) {
    // The condition: a comparison of an exact value, or a bool value.
    Val c = PartnerMatching(a, depth, [](const Val& v) { return Stable(v); });
    if (!Stable(c)) return std::nullopt;
    if (!IsBool(c.dtype)) {
      Scalar s = MakeScalar(true, true, false);
      c = Emit(e_.Percent(50) ? "gt" : "le", {c.name, s.name}, DType::kBool, c.sizes, true);
    }
    auto shape = BroadcastShapes(a.sizes, c.sizes);
    if (!shape || TooBig(*shape)) return std::nullopt;
    if (e_.Percent(30) && !IsBool(a.dtype)) {
      Scalar s = MakeScalar(IsFloat(a.dtype), true, false);
      const DType t = Promote({TensorOperand(a), s.operand});
      return e_.Percent(50) ? Emit("where", {c.name, a.name, s.name}, t, *shape, a.exact)
                            : Emit("where", {c.name, s.name, a.name}, t, *shape, a.exact);
    }
    Val b = Partner(a, depth);
    shape = BroadcastShapes(*shape, b.sizes);
    if (!shape || TooBig(*shape)) return std::nullopt;
    const DType t = Promote({TensorOperand(a), TensorOperand(b)});
    return Emit("where", {c.name, a.name, b.name}, t, *shape, a.exact && b.exact);
  }

  std::optional<Val> Clamp(const Val& a) {
    if (IsBool(a.dtype)) return std::nullopt;
    const bool f = IsFloat(a.dtype);
    const int which = e_.Below(3);  // 0: both, 1: min only, 2: max only
    std::string lo = which == 2 ? None() : (f ? Float(-0.5 - e_.Below(2)) : Int(-1 - e_.Below(3)));
    std::string hi = which == 1 ? None() : (f ? Float(0.75 + e_.Below(2)) : Int(e_.Below(3)));
    if (e_.Percent(20)) {
      return Emit(which == 2 ? "clamp_max" : "clamp_min", {a.name, which == 2 ? hi : lo}, a.dtype,
                  a.sizes, a.exact);
    }
    return Emit("clamp", {a.name, lo, hi}, a.dtype, a.sizes, a.exact);
  }

  std::optional<Val> Cast(const Val& a) {
    static constexpr DType kTargets[] = {DType::kFloat32, DType::kFloat64, DType::kInt64,
                                         DType::kBool};
    DType t = kTargets[e_.Below(4)];
    if (IsFloat(a.dtype) && !IsFloat(t)) {
      // float -> int/bool jumps: exact values only; nan/inf -> int is undefined.
      if (!a.exact || (IsInt(t) && special_values_)) return std::nullopt;
    }
    return Emit("to", {a.name, Int(DTypeCode(t)), Bool(false), Bool(false), None()}, t, a.sizes,
                a.exact || !IsFloat(a.dtype));
  }

  std::optional<Val> Mm(const Val& a0) {
    if (!IsFloat(a0.dtype) || a0.rank() == 0) return std::nullopt;
    Val a = a0;
    if (a.rank() == 1) {
      a = Emit("unsqueeze", {a.name, Int(0)}, a.dtype, {1, a.sizes[0]}, a.exact);
    } else if (a.rank() > 2) {
      a = Emit("flatten", {a.name, Int(0), Int(-2)}, a.dtype,
               {a.numel() / a.sizes.back(), a.sizes.back()}, a.exact);
    }
    const int64_t p = a.sizes[0], q = a.sizes[1];
    Val b;
    std::vector<const Val*> ok;
    for (const Val& v : pool_) {
      if (IsFloat(v.dtype) && v.numel() % q == 0 && v.numel() / q <= 64) ok.push_back(&v);
    }
    if (ok.empty() || e_.Percent(40)) {
      b = Emit("t", {a.name}, a.dtype, {q, p}, a.exact);
    } else {
      const Val& src = *ok[e_.Below(ok.size())];
      b = Emit("reshape", {src.name, IntList({q, -1})}, src.dtype, {q, src.numel() / q}, src.exact);
    }
    if (b.dtype != a.dtype) {
      b = Emit("to", {b.name, Int(DTypeCode(a.dtype)), Bool(false), Bool(false), None()}, a.dtype,
               b.sizes, b.exact);
    }
    if (p * q * b.sizes[1] > (1 << 24)) return std::nullopt;
    return Emit("mm", {a.name, b.name}, a.dtype, {p, b.sizes[1]}, false);
  }

  std::optional<Val> Cat(const Val& a, int depth) {
    if (a.rank() == 0) return std::nullopt;
    const int r = a.rank();
    if (e_.Percent(25)) {  // stack
      const int d = e_.Below(r + 1);
      Val b = a;
      for (const Val& v : pool_) {
        if (v.sizes == a.sizes && v.dtype == a.dtype && e_.Percent(50)) b = v;
      }
      std::vector<int64_t> sizes = a.sizes;
      sizes.insert(sizes.begin() + d, 2);
      return Emit("stack", {TensorList({a, b}), Int(d)}, a.dtype, sizes, a.exact && b.exact);
    }
    const int d = e_.Below(r);
    std::vector<Val> parts = {a};
    const int n = 1 + e_.Below(3);
    for (int i = 0; i < n; ++i) {
      std::vector<const Val*> ok;
      for (const Val& v : pool_) {
        if (v.dtype != a.dtype || v.rank() != r) continue;
        bool match = true;
        for (int j = 0; j < r; ++j) match = match && (j == d || v.sizes[j] == a.sizes[j]);
        if (match) ok.push_back(&v);
      }
      parts.push_back(ok.empty() ? a : *ok[e_.Below(ok.size())]);
    }
    std::vector<int64_t> sizes = a.sizes;
    sizes[d] = 0;
    bool exact = true;
    for (const Val& v : parts) {
      sizes[d] += v.sizes[d];
      exact = exact && v.exact;
    }
    return Emit("cat", {TensorList(parts), Int(e_.Percent(30) ? d - r : d)}, a.dtype, sizes, exact);
  }

  Entropy& e_;
  GraphOptions options_;
  bool special_values_ = false;
  int next_ = 0;
  std::string body_;
  std::vector<Val> inputs_;
  std::vector<Val> pool_;
  // Values computed through float32 somewhere (compared at float32 tolerance).
  absl::flat_hash_set<std::string> f32_history_;
};

// ---- comparison ----

std::string DescribeShape(const Tensor& t) {
  return absl::StrCat(DTypeName(t.dtype()), "[", absl::StrJoin(t.sizes(), ", "), "]");
}

std::string CompareOutput(const Tensor& got, const Tensor& want, bool f32_tolerance) {
  if (got.dtype() != want.dtype() || got.sizes() != want.sizes()) {
    return absl::StrCat("compiled ", DescribeShape(got), ", interpreter ", DescribeShape(want));
  }
  const int64_t n = want.numel();
  if (!IsFloatingPoint(want.dtype())) {
    for (int64_t i = 0; i < n; ++i) {
      if (got.GetInt(i) != want.GetInt(i)) {
        return absl::StrCat("element ", i, ": compiled ", got.GetInt(i), ", interpreter ",
                            want.GetInt(i));
      }
    }
    return "";
  }
  const bool f32 = f32_tolerance || want.dtype() != DType::kFloat64;
  const double rtol = f32 ? 1e-4 : 1e-9;
  double scale = 1.0;
  for (int64_t i = 0; i < n; ++i) {
    const double w = std::fabs(want.GetDouble(i));
    if (std::isfinite(w)) scale = std::max(scale, w);
  }
  const double atol = (f32 ? 1e-5 : 1e-11) * scale;
  for (int64_t i = 0; i < n; ++i) {
    const double g = got.GetDouble(i), w = want.GetDouble(i);
    if (std::isnan(g) && std::isnan(w)) continue;
    if (g == w) continue;  // includes equal infinities
    if (!std::isfinite(g) || !std::isfinite(w) || std::fabs(g - w) > atol + rtol * std::fabs(w)) {
      return absl::StrFormat("element %d: compiled %.9g, interpreter %.9g", i, g, w);
    }
  }
  return "";
}

}  // namespace

namespace {

// Drops body lines whose result no later kept line (or the return) uses.
std::string PruneDeadLines(const std::string& text) {
  std::vector<std::string> lines = absl::StrSplit(text, '\n');
  absl::flat_hash_set<std::string> needed;
  auto use_all = [&](absl::string_view line) {
    for (size_t i = line.find('%'); i != absl::string_view::npos; i = line.find('%', i + 1)) {
      size_t j = i + 1;
      while (j < line.size() && (std::isalnum(static_cast<unsigned char>(line[j])) || line[j] == '_')) ++j;
      needed.insert(std::string(line.substr(i, j - i)));
    }
  };
  std::vector<bool> keep(lines.size(), true);
  for (size_t k = lines.size(); k-- > 0;) {
    absl::string_view line = lines[k];
    if (!absl::StartsWith(line, "  %")) {
      use_all(line);
      continue;
    }
    const size_t end = line.find(' ', 2);
    const std::string def(line.substr(2, end - 2));
    if (!needed.contains(def)) {
      keep[k] = false;
      continue;
    }
    use_all(line.substr(line.find('=')));
  }
  std::string out;
  for (size_t k = 0; k < lines.size(); ++k) {
    if (keep[k]) absl::StrAppend(&out, lines[k], k + 1 < lines.size() ? "\n" : "");
  }
  return out;
}

}  // namespace

absl::StatusOr<RandomGraph> RandomGraphFromText(const std::string& text) {
  ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> g, ir::ParseGraph(text));
  RandomGraph out;
  out.text = text;
  for (const ir::Value* in : g->inputs()) {
    const ir::TensorInfo& info = in->type()->tensor();
    if (!in->type()->is_tensor() || !info.dtype || !info.HasCompleteSizes()) {
      return absl::InvalidArgumentError("every input needs a static dtype and shape");
    }
    out.inputs.push_back({*info.dtype, info.ConcreteSizes()});
  }
  return out;
}

std::vector<RandomGraph> SingleOutputGraphs(const RandomGraph& graph) {
  std::vector<RandomGraph> out;
  const size_t ret = graph.text.rfind("  return (");
  if (ret == std::string::npos) return out;
  const size_t open = ret + 10;
  const size_t close = graph.text.find(')', open);
  if (close == std::string::npos) return out;
  for (absl::string_view name : absl::StrSplit(
           absl::string_view(graph.text).substr(open, close - open), ", ")) {
    RandomGraph g = graph;
    const size_t index = out.size();
    g.f32_tolerance = {index >= graph.f32_tolerance.size() || graph.f32_tolerance[index]};
    g.text = PruneDeadLines(
        absl::StrCat(graph.text.substr(0, open), name, graph.text.substr(close)));
    out.push_back(std::move(g));
  }
  return out;
}

RandomGraph GenerateRandomGraph(Entropy& entropy, const GraphOptions& options) {
  Generator g(entropy, options);
  return g.Build();
}

std::vector<Tensor> MakeRandomInputs(Entropy& e, const std::vector<InputSpec>& specs,
                                     bool special_values) {
  const bool special = special_values && e.Percent(50);
  std::vector<Tensor> out;
  for (const InputSpec& spec : specs) {
    const int r = static_cast<int>(spec.sizes.size());
    // The storage: contiguous, or reversed dims (a transposed view), or with a
    // leading offset.
    const int layout = e.Below(100);
    std::vector<int64_t> storage_sizes = spec.sizes;
    if (layout < 20) std::reverse(storage_sizes.begin(), storage_sizes.end());
    int64_t numel = 1;
    for (int64_t s : spec.sizes) numel *= s;
    const int64_t offset = layout >= 20 && layout < 30 ? 3 : 0;
    Tensor storage = Tensor::Empty(spec.dtype, {numel + offset});
    for (int64_t i = 0; i < numel + offset; ++i) {
      switch (spec.dtype) {
        case DType::kFloat32:
        case DType::kFloat64: {
          double v = e.Uniform(-2.0, 2.0);
          if (special && e.Percent(4)) {
            // No infinities: sums and products reorder freely in compiled
            // code, so inf - inf (NaN) shows up in different elements.
            static constexpr double kSpecial[] = {0.0, -0.0, std::numeric_limits<double>::quiet_NaN(),
                                                  1.0};
            v = kSpecial[e.Below(4)];
          } else if (e.Percent(5)) {
            v = static_cast<double>(e.Below(5) - 2) * 0.5;  // ties for argmax, round
          }
          if (spec.dtype == DType::kFloat32) {
            storage.data<float>()[i] = static_cast<float>(v);
          } else {
            storage.data<double>()[i] = v;
          }
          break;
        }
        case DType::kInt64:
          storage.data<int64_t>()[i] = e.Below(11) - 5;
          break;
        case DType::kBool:
          storage.data<bool>()[i] = e.Percent(50);
          break;
        case DType::kUInt8:
        case DType::kUInt16:
        case DType::kUInt32:
        case DType::kUInt64:
          // Replayed graphs use these; the generator does not.
          (void)runtime::SetInt(storage, i, static_cast<int64_t>(e.Below(11)));
          break;
        case DType::kInt8:
        case DType::kInt16:
        case DType::kInt32:
          (void)runtime::SetInt(storage, i, static_cast<int64_t>(e.Below(11)) - 5);
          break;
        default:
          break;
      }
    }
    std::vector<int64_t> strides = Tensor::ContiguousStrides(storage_sizes);
    if (layout < 20) std::reverse(strides.begin(), strides.end());
    out.push_back(Tensor::View(storage, spec.sizes, strides, offset));
    (void)r;
  }
  return out;
}

absl::Status EnsureBackends() {
  static const absl::Status status = [] {
    RETURN_IF_ERROR(driver::Initialize());
    return backends::cpu::RegisterCpuBackend();
  }();
  return status;
}

absl::StatusOr<std::string> DumpCompilation(const std::string& text) {
  RETURN_IF_ERROR(EnsureBackends());
  ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> g, ir::ParseGraph(text));
  driver::CompileOptions options;
  options.generate_only = true;
  ASSIGN_OR_RETURN(driver::CompiledGraph compiled, driver::CompileGraph(*g, options));
  std::string out = absl::StrCat(compiled.loop_graph.ToString(), "\n", compiled.program.ToString());
  for (const wrapper::Line& line : compiled.program.lines) {
    if (const auto* def = std::get_if<wrapper::KernelDefinitionLine>(&line)) {
      absl::StrAppend(&out, "\n", def->kernel_body);
    }
  }
  return out;
}

absl::Status RunDifferential(const RandomGraph& graph, const std::vector<Tensor>& inputs,
                             const DiffOptions& options) {
  RETURN_IF_ERROR(EnsureBackends());
  const std::string where = options.include_graph_in_errors ? "\n" + graph.text : "";
  absl::StatusOr<std::unique_ptr<ir::Graph>> interp_graph = ir::ParseGraph(graph.text);
  if (!interp_graph.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("generated graph does not parse: ", interp_graph.status().message(), where));
  }
  std::vector<ir::IValue> in_values;
  for (const Tensor& t : inputs) in_values.push_back(ir::IValue::FromTensor(t));
  absl::StatusOr<std::vector<ir::IValue>> want = runtime::RunGraph(**interp_graph, in_values);
  if (!want.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("interpreter rejects the generated graph: ", want.status().message(), where));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> compile_graph, ir::ParseGraph(graph.text));
  absl::StatusOr<driver::CompiledGraph> compiled = driver::CompileGraph(*compile_graph);
  if (!compiled.ok()) {
    return absl::InternalError(absl::StrCat("compile failed: ", compiled.status().message(), where));
  }
  absl::StatusOr<std::vector<Tensor>> got = compiled->compiled->Run(inputs);
  if (!got.ok()) {
    return absl::InternalError(
        absl::StrCat("compiled run failed: ", got.status().message(), where));
  }
  if (got->size() != want->size()) {
    return absl::InternalError(absl::StrCat("compiled program returned ", got->size(),
                                            " outputs, interpreter ", want->size(), where));
  }
  std::string errors;
  for (size_t i = 0; i < want->size(); ++i) {
    if (!(*want)[i].isTensor()) continue;
    const bool loose = i >= graph.f32_tolerance.size() || graph.f32_tolerance[i];
    std::string m = CompareOutput((*got)[i], (*want)[i].toTensor(), loose);
    if (!m.empty()) absl::StrAppend(&errors, "output ", i, ": ", m, "\n");
  }
  if (!errors.empty()) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      absl::StrAppend(&errors, "input ", i, " (first values):");
      for (int64_t k = 0; k < std::min<int64_t>(inputs[i].numel(), 12); ++k) {
        absl::StrAppend(&errors, " ", inputs[i].GetDouble(k));
      }
      absl::StrAppend(&errors, "\n");
    }
    return absl::InternalError(absl::StrCat("mismatch:\n", errors, where));
  }
  return absl::OkStatus();
}

}  // namespace kiln::testing
