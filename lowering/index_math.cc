#include "lowering/index_math.h"

#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace kiln::lowering {
namespace {

constexpr int kMaxDepth = 64;

struct Linear;

// Bounds of an atom: [0, upper), or unknown (upper < 0).
struct Term {
  ExprPtr atom;
  int64_t coef = 0;
  int64_t upper = -1;
  // Opaque `inner // divisor` or `inner % divisor` atoms keep their inner
  // linear form, so that k*c*(x // k) + c*(x % k) recombines into c*x.
  enum class Kind { kPlain, kDiv, kMod } kind = Kind::kPlain;
  int64_t divisor = 0;
  std::shared_ptr<const Linear> inner;
};

// c + sum(coef * atom). Terms keyed so that like atoms combine: variables
// order first ("0:<k>"), opaque atoms after ("1:<printed form>").
struct Linear {
  int64_t constant = 0;
  std::map<std::string, Term> terms;
};

int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t FloorMod(int64_t a, int64_t b) { return a - FloorDiv(a, b) * b; }

std::string VarKey(int var) {
  // Zero-padded so that map order is numeric order.
  std::string digits = absl::StrCat(var);
  return absl::StrCat("0:", std::string(digits.size() < 6 ? 6 - digits.size() : 0, '0'), digits);
}

void AddTerm(Linear* l, const std::string& key, const Term& t) {
  if (t.coef == 0) return;
  auto it = l->terms.find(key);
  if (it == l->terms.end()) {
    l->terms.emplace(key, t);
    return;
  }
  it->second.coef += t.coef;
  if (it->second.coef == 0) l->terms.erase(it);
}

Linear Scale(Linear l, int64_t k) {
  l.constant *= k;
  for (auto it = l.terms.begin(); it != l.terms.end();) {
    it->second.coef *= k;
    if (it->second.coef == 0) {
      it = l.terms.erase(it);
    } else {
      ++it;
    }
  }
  return l;
}

Linear Recombine(Linear l);

Linear Sum(Linear a, const Linear& b) {
  a.constant += b.constant;
  for (const auto& [key, t] : b.terms) AddTerm(&a, key, t);
  return Recombine(std::move(a));
}

// [lo, hi] of a linear form, when every atom is bounded.
std::optional<std::pair<int64_t, int64_t>> Bounds(const Linear& l) {
  int64_t lo = l.constant, hi = l.constant;
  for (const auto& [key, t] : l.terms) {
    if (t.upper < 0) return std::nullopt;
    int64_t extreme;
    if (__builtin_mul_overflow(t.coef, std::max<int64_t>(t.upper - 1, 0), &extreme)) {
      return std::nullopt;
    }
    if (__builtin_add_overflow(extreme > 0 ? hi : lo, extreme, extreme > 0 ? &hi : &lo)) {
      return std::nullopt;
    }
  }
  return std::make_pair(lo, hi);
}

ExprPtr ToExpr(const Linear& l) {
  ExprPtr sum;
  for (const auto& [key, t] : l.terms) {
    int64_t magnitude = t.coef < 0 ? -t.coef : t.coef;
    ExprPtr term = magnitude == 1 ? t.atom : Binary(ExprOp::kMul, t.atom, IntConst(magnitude));
    if (!sum) {
      sum = t.coef < 0 ? Binary(ExprOp::kMul, t.atom, IntConst(t.coef)) : term;
    } else {
      sum = Binary(t.coef < 0 ? ExprOp::kSub : ExprOp::kAdd, sum, term);
    }
  }
  if (!sum) return IntConst(l.constant);
  if (l.constant > 0) sum = Binary(ExprOp::kAdd, sum, IntConst(l.constant));
  if (l.constant < 0) sum = Binary(ExprOp::kSub, sum, IntConst(-l.constant));
  return sum;
}

std::string OpaqueKey(const ExprPtr& atom) { return absl::StrCat("1:", ExprToString(atom)); }

Linear Opaque(ExprPtr atom, int64_t upper) {
  Linear l;
  std::string key = OpaqueKey(atom);
  l.terms.emplace(key, Term{std::move(atom), 1, upper});
  return l;
}

// `inner // d` (kDiv) or `inner % d` (kMod) as an opaque atom.
Linear OpaqueDivMod(const Linear& inner, int64_t d, Term::Kind kind, int64_t upper) {
  Linear l = Opaque(Binary(kind == Term::Kind::kDiv ? ExprOp::kFloorDiv : ExprOp::kMod, ToExpr(inner), IntConst(d)),
                    upper);
  Term& t = l.terms.begin()->second;
  t.kind = kind;
  t.divisor = d;
  t.inner = std::make_shared<const Linear>(inner);
  return l;
}

// k*c*(x // k) + c*(x % k) = c*x (floor division and modulo), for every
// such pair of atoms in `l`: what a reshape's unravel followed by the
// flattening of a contiguous layout leaves.
Linear Recombine(Linear l) {
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto& [key, t] : l.terms) {
      if (t.kind != Term::Kind::kDiv || t.inner == nullptr) continue;
      const Linear inner = *t.inner;
      const int64_t k = t.divisor;
      auto mod = l.terms.find(OpaqueKey(Binary(ExprOp::kMod, ToExpr(inner), IntConst(k))));
      if (mod == l.terms.end() || mod->second.kind != Term::Kind::kMod) continue;
      const int64_t c = mod->second.coef;
      int64_t ck;
      if (__builtin_mul_overflow(c, k, &ck) || t.coef != ck) continue;
      const std::string div_key = key;
      l.terms.erase(mod);
      l.terms.erase(div_key);
      l = Sum(std::move(l), Scale(inner, c));
      changed = true;
      break;
    }
  }
  return l;
}

Linear ToLinear(const ExprPtr& e, absl::Span<const int64_t> ranges, int depth);
// A bool expression's value when every index value gives the same one.
std::optional<bool> ConstantCondition(const ExprPtr& e, absl::Span<const int64_t> ranges, int depth);

// The expression with its operands simplified (for ops that stay opaque).
ExprPtr SimplifyChildren(const ExprPtr& e, absl::Span<const int64_t> ranges, int depth) {
  if (e->args.empty() || e->op == ExprOp::kLoad) return e;
  auto copy = std::make_shared<Expr>(*e);
  for (ExprPtr& a : copy->args) {
    if (a->dtype == DType::kInt64) a = ToExpr(ToLinear(a, ranges, depth + 1));
  }
  return copy;
}

// `l` (coefficients and constant in [0, d)) as g*high + low with g a
// proper divisor of d and 0 <= low < g: the terms whose coefficients g
// divides, and the rest below g. The largest such g; none when there is
// none (or a bound is unknown).
struct FactorSplit {
  int64_t factor = 1;
  Linear high, low;
};

std::optional<FactorSplit> SplitCommonFactor(const Linear& l, int64_t d) {
  std::optional<FactorSplit> best;
  for (const auto& [unused, candidate] : l.terms) {
    const int64_t g = std::gcd(candidate.coef, d);
    if (g <= 1 || g >= d || (best && best->factor >= g)) continue;
    FactorSplit f;
    f.factor = g;
    f.high.constant = l.constant / g;
    f.low.constant = l.constant % g;
    for (const auto& [key, t] : l.terms) {
      if (t.coef % g == 0) {
        Term h = t;
        h.coef = t.coef / g;
        f.high.terms.emplace(key, h);
      } else {
        f.low.terms.emplace(key, t);
      }
    }
    auto b = Bounds(f.low);
    if (b && b->first >= 0 && b->second < g) best = std::move(f);
  }
  return best;
}

Linear DivLinear(const Linear& l, int64_t d) {
  Linear quotient, remainder;
  quotient.constant = FloorDiv(l.constant, d);
  remainder.constant = FloorMod(l.constant, d);
  for (const auto& [key, t] : l.terms) {
    Term q = t, r = t;
    q.coef = FloorDiv(t.coef, d);
    r.coef = FloorMod(t.coef, d);
    AddTerm(&quotient, key, q);
    AddTerm(&remainder, key, r);
  }
  auto b = Bounds(remainder);
  if (b && b->first >= 0 && b->second < d) return quotient;
  if (std::optional<FactorSplit> f = SplitCommonFactor(remainder, d)) {
    // (g*h + low) // (g*k) = h // k when 0 <= low < g.
    return Sum(quotient, DivLinear(f->high, d / f->factor));
  }
  int64_t upper = (b && b->first >= 0) ? b->second / d + 1 : -1;
  return Sum(quotient, OpaqueDivMod(remainder, d, Term::Kind::kDiv, upper));
}

Linear ModLinear(const Linear& l, int64_t m) {
  Linear rest;
  rest.constant = FloorMod(l.constant, m);
  for (const auto& [key, t] : l.terms) {
    Term r = t;
    r.coef = FloorMod(t.coef, m);
    AddTerm(&rest, key, r);
  }
  auto b = Bounds(rest);
  if (b && b->first >= 0 && b->second < m) return rest;
  if (std::optional<FactorSplit> f = SplitCommonFactor(rest, m)) {
    // (g*h + low) % (g*k) = g*(h % k) + low when 0 <= low < g.
    return Sum(Scale(ModLinear(f->high, m / f->factor), f->factor), f->low);
  }
  return OpaqueDivMod(rest, m, Term::Kind::kMod, m);
}

Linear ToLinear(const ExprPtr& e, absl::Span<const int64_t> ranges, int depth) {
  if (depth > kMaxDepth || e->dtype != DType::kInt64) return Opaque(e, -1);
  switch (e->op) {
    case ExprOp::kIndexVar: {
      Linear l;
      int64_t upper = (e->var >= 0 && static_cast<size_t>(e->var) < ranges.size())
                          ? ranges[e->var]
                          : -1;
      l.terms.emplace(VarKey(e->var), Term{e, 1, upper});
      return l;
    }
    case ExprOp::kIntConst: {
      Linear l;
      l.constant = e->int_value;
      return l;
    }
    case ExprOp::kAdd:
      return Sum(ToLinear(e->args[0], ranges, depth + 1), ToLinear(e->args[1], ranges, depth + 1));
    case ExprOp::kSub:
      return Sum(ToLinear(e->args[0], ranges, depth + 1),
                 Scale(ToLinear(e->args[1], ranges, depth + 1), -1));
    case ExprOp::kNeg:
      return Scale(ToLinear(e->args[0], ranges, depth + 1), -1);
    case ExprOp::kMul: {
      Linear a = ToLinear(e->args[0], ranges, depth + 1);
      Linear b = ToLinear(e->args[1], ranges, depth + 1);
      if (a.terms.empty()) return Scale(std::move(b), a.constant);
      if (b.terms.empty()) return Scale(std::move(a), b.constant);
      return Opaque(Binary(ExprOp::kMul, ToExpr(a), ToExpr(b)), -1);
    }
    case ExprOp::kFloorDiv:
    case ExprOp::kMod: {
      Linear a = ToLinear(e->args[0], ranges, depth + 1);
      Linear b = ToLinear(e->args[1], ranges, depth + 1);
      if (b.terms.empty() && b.constant > 0) {
        return e->op == ExprOp::kFloorDiv ? DivLinear(a, b.constant) : ModLinear(a, b.constant);
      }
      return Opaque(Binary(e->op, ToExpr(a), ToExpr(b)), -1);
    }
    case ExprOp::kMin:
    case ExprOp::kMax: {
      // Constant operands fold, and so does an operand that always wins
      // (bounds): what the clamp of a constant gather index leaves.
      Linear a = ToLinear(e->args[0], ranges, depth + 1);
      Linear b = ToLinear(e->args[1], ranges, depth + 1);
      auto ba = Bounds(a), bb = Bounds(b);
      if (ba && bb) {
        const bool is_min = e->op == ExprOp::kMin;
        if (ba->second <= bb->first) return is_min ? a : b;
        if (bb->second <= ba->first) return is_min ? b : a;
        // Opaque, within [lo, hi] of the winner's possible values.
        const int64_t lo = is_min ? std::min(ba->first, bb->first) : std::max(ba->first, bb->first);
        const int64_t hi = is_min ? std::min(ba->second, bb->second) : std::max(ba->second, bb->second);
        if (lo >= 0 && hi < std::numeric_limits<int64_t>::max()) {
          return Opaque(Binary(e->op, ToExpr(a), ToExpr(b)), hi + 1);
        }
      }
      return Opaque(Binary(e->op, ToExpr(a), ToExpr(b)), -1);
    }
    case ExprOp::kWhere: {
      if (std::optional<bool> c = ConstantCondition(e->args[0], ranges, depth + 1)) {
        return ToLinear(*c ? e->args[1] : e->args[2], ranges, depth + 1);
      }
      return Opaque(SimplifyChildren(e, ranges, depth), -1);
    }
    default:
      return Opaque(SimplifyChildren(e, ranges, depth), -1);
  }
}

std::optional<bool> ConstantCondition(const ExprPtr& e, absl::Span<const int64_t> ranges, int depth) {
  if (depth > kMaxDepth || e == nullptr) return std::nullopt;
  if (e->op == ExprOp::kIntConst) return e->int_value != 0;
  if (e->args.size() != 2 || e->args[0]->dtype != DType::kInt64 || e->args[1]->dtype != DType::kInt64) {
    return std::nullopt;
  }
  // a - b over its bounds decides the comparison when it does not straddle 0.
  auto b = Bounds(Sum(ToLinear(e->args[0], ranges, depth + 1), Scale(ToLinear(e->args[1], ranges, depth + 1), -1)));
  if (!b) return std::nullopt;
  const int64_t lo = b->first, hi = b->second;
  switch (e->op) {
    case ExprOp::kLt: if (hi < 0) return true; if (lo >= 0) return false; break;
    case ExprOp::kLe: if (hi <= 0) return true; if (lo > 0) return false; break;
    case ExprOp::kGt: if (lo > 0) return true; if (hi <= 0) return false; break;
    case ExprOp::kGe: if (lo >= 0) return true; if (hi < 0) return false; break;
    case ExprOp::kEq: if (lo == 0 && hi == 0) return true; if (lo > 0 || hi < 0) return false; break;
    case ExprOp::kNe: if (lo == 0 && hi == 0) return false; if (lo > 0 || hi < 0) return true; break;
    default: break;
  }
  return std::nullopt;
}

}  // namespace

ExprPtr SimplifyIndex(const ExprPtr& e, absl::Span<const int64_t> var_ranges) {
  if (!e || e->dtype != DType::kInt64) return e;
  return ToExpr(ToLinear(e, var_ranges, 0));
}

ExprPtr FlatIndex(const Layout& layout, absl::Span<const ExprPtr> indices,
                  absl::Span<const int64_t> var_ranges) {
  ExprPtr sum = IntConst(layout.offset);
  for (size_t k = 0; k < layout.sizes.size() && k < indices.size(); ++k) {
    if (layout.sizes[k] == 1 || layout.strides[k] == 0) continue;
    sum = Binary(ExprOp::kAdd, sum, Binary(ExprOp::kMul, indices[k], IntConst(layout.strides[k])));
  }
  return SimplifyIndex(sum, var_ranges);
}

std::vector<ExprPtr> UnravelIndex(const ExprPtr& flat, absl::Span<const int64_t> sizes,
                                  absl::Span<const int64_t> var_ranges) {
  std::vector<ExprPtr> out(sizes.size());
  int64_t stride = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    if (sizes[d] == 1) {
      out[d] = IntConst(0);
    } else {
      ExprPtr e = flat;
      if (stride != 1) e = Binary(ExprOp::kFloorDiv, e, IntConst(stride));
      // The leading dim needs no mod: an in-bounds flat offset is below numel.
      if (d > 0) e = Binary(ExprOp::kMod, e, IntConst(sizes[d]));
      out[d] = SimplifyIndex(e, var_ranges);
    }
    stride *= std::max<int64_t>(sizes[d], 1);
  }
  return out;
}

std::vector<ExprPtr> Vars(int first, int n) {
  std::vector<ExprPtr> v;
  v.reserve(n);
  for (int i = 0; i < n; ++i) v.push_back(Var(first + i));
  return v;
}

}  // namespace kiln::lowering
