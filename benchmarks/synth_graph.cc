#include "benchmarks/synth_graph.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <list>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"

namespace kiln::bench {
namespace {

// CPython's `random.Random`: MT19937 seeded with init_by_array, and the exact
// derivations of random(), getrandbits(), _randbelow(), randint() and
// choices() from the 32-bit stream. Matching them draw for draw is what makes
// the generated text identical to the Python script's.
class PyRandom {
 public:
  explicit PyRandom(uint32_t seed) {
    // random.Random(n) for 0 <= n < 2**32 seeds with the one-word key [n].
    const uint32_t key[1] = {seed};
    InitByArray(key);
  }

  // random.random(): 53 random bits in [0, 1).
  double Random() {
    const uint32_t a = NextWord() >> 5;
    const uint32_t b = NextWord() >> 6;
    return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0);
  }

  // random.getrandbits(k) for 1 <= k <= 32.
  uint32_t GetRandBits(int k) { return NextWord() >> (32 - k); }

  // random._randbelow(n): rejection sampling on bit_length(n) bits.
  uint32_t RandBelow(uint32_t n) {
    int k = 0;
    for (uint32_t m = n; m != 0; m >>= 1) ++k;
    uint32_t r = GetRandBits(k);
    while (r >= n) r = GetRandBits(k);
    return r;
  }

  // random.randint(a, b), both ends included.
  int RandInt(int a, int b) {
    return a + static_cast<int>(RandBelow(static_cast<uint32_t>(b - a + 1)));
  }

  // random.choice(seq).
  template <typename T>
  const T& Choice(absl::Span<const T> seq) {
    return seq[RandBelow(static_cast<uint32_t>(seq.size()))];
  }

  // random.choices(range(len(weights)), weights)[0]: bisect_right on the
  // running sums.
  size_t WeightedIndex(absl::Span<const double> cumulative) {
    const double x = Random() * cumulative.back();
    const size_t hi = cumulative.size() - 1;
    return std::upper_bound(cumulative.begin(), cumulative.begin() + hi, x) - cumulative.begin();
  }

 private:
  static constexpr int kN = 624;
  static constexpr int kM = 397;

  void InitGenrand(uint32_t s) {
    state_[0] = s;
    for (int i = 1; i < kN; ++i) {
      state_[i] = 1812433253u * (state_[i - 1] ^ (state_[i - 1] >> 30)) + static_cast<uint32_t>(i);
    }
    index_ = kN;
  }

  void InitByArray(absl::Span<const uint32_t> key) {
    InitGenrand(19650218u);
    int i = 1;
    size_t j = 0;
    for (size_t k = std::max<size_t>(kN, key.size()); k > 0; --k) {
      state_[i] = (state_[i] ^ ((state_[i - 1] ^ (state_[i - 1] >> 30)) * 1664525u)) + key[j] +
                  static_cast<uint32_t>(j);
      ++i;
      ++j;
      if (i >= kN) {
        state_[0] = state_[kN - 1];
        i = 1;
      }
      if (j >= key.size()) j = 0;
    }
    for (int k = kN - 1; k > 0; --k) {
      state_[i] = (state_[i] ^ ((state_[i - 1] ^ (state_[i - 1] >> 30)) * 1566083941u)) -
                  static_cast<uint32_t>(i);
      ++i;
      if (i >= kN) {
        state_[0] = state_[kN - 1];
        i = 1;
      }
    }
    state_[0] = 0x80000000u;
  }

  void Twist() {
    for (int i = 0; i < kN; ++i) {
      const uint32_t y = (state_[i] & 0x80000000u) | (state_[(i + 1) % kN] & 0x7fffffffu);
      state_[i] = state_[(i + kM) % kN] ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0u);
    }
    index_ = 0;
  }

  uint32_t NextWord() {
    if (index_ >= kN) Twist();
    uint32_t y = state_[index_++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
  }

  std::array<uint32_t, kN> state_;
  int index_ = kN;
};

// Python's insertion-ordered dict used as a set: O(1) insert/erase and
// iteration from the oldest entry.
class OrderedSet {
 public:
  void Insert(const std::string& v) {
    if (where_.contains(v)) return;
    order_.push_back(v);
    where_[v] = std::prev(order_.end());
  }
  void Erase(const std::string& v) {
    auto it = where_.find(v);
    if (it == where_.end()) return;
    order_.erase(it->second);
    where_.erase(it);
  }
  bool empty() const { return order_.empty(); }
  const std::list<std::string>& items() const { return order_; }

 private:
  std::list<std::string> order_;
  absl::flat_hash_map<std::string, std::list<std::string>::iterator> where_;
};

// Python's repr() of a float for the header comment (shortest round trip).
std::string PyFloatRepr(double x) {
  char buf[64];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*g", precision, x);
    if (std::strtod(buf, nullptr) == x) break;
  }
  std::string s = buf;
  if (s.find_first_of(".eni") == std::string::npos) s += ".0";
  return s;
}

enum Category { kPlain, kCse, kDead, kFold, kPeep, kSharedConst, kNumCategories };
constexpr const char* kCategoryNames[kNumCategories] = {"plain", "cse",  "dead",
                                                        "fold",  "peep", "shared_const"};

class Generator {
 public:
  Generator(uint32_t seed, double shared_frac)
      : seed_(seed), rng_(seed), shared_frac_(shared_frac) {}

  std::string Generate(int64_t num_nodes) {
    // Category weights, in the script's dict order; running sums as Python's
    // itertools.accumulate computes them.
    const double weights[] = {0.324, 0.268, 0.216, 0.025, 0.167};
    std::vector<double> cumulative;
    double sum = 0;
    for (double w : weights) cumulative.push_back(sum += w);

    Emit("%one : int = prim::Constant[value=1]()", kSharedConst);
    Emit("%zero : int = prim::Constant[value=0]()", kSharedConst);
    Emit("%onef : float = prim::Constant[value=1.]()", kSharedConst);
    Emit("%zerof : float = prim::Constant[value=0.]()", kSharedConst);
    for (int i = 0; i < kNumInputs; ++i) pool_.push_back(absl::StrCat("%x", i));

    while (num_body_lines_ < num_nodes) {
      switch (static_cast<Category>(rng_.WeightedIndex(cumulative))) {
        case kPlain:
          EmitPlain();
          break;
        case kCse:
          EmitDuplicate();
          break;
        case kDead:
          EmitDead();
          break;
        case kFold:
          EmitFoldChain();
          break;
        default:
          EmitPeephole();
          break;
      }
    }
    return Assemble(num_nodes);
  }

 private:
  static constexpr int kNumInputs = 8;

  std::string Fresh(const char* prefix) { return absl::StrCat("%", prefix, ++counter_); }

  void Emit(absl::string_view line, Category category) {
    absl::StrAppend(&body_, "  ", line, "\n");
    ++num_body_lines_;
    ++stats_[category];
  }

  // A random one of the (up to) `window` most recent entries of `values`.
  const std::string& ChooseRecent(const std::vector<std::string>& values, size_t window) {
    const size_t n = std::min(window, values.size());
    return rng_.Choice(absl::MakeConstSpan(values).subspan(values.size() - n));
  }

  // An operand: usually one of the 64 oldest unconsumed live values, else a
  // recent live value; either way it is consumed.
  std::string Pick(double p_unconsumed) {
    std::string v;
    if (!unconsumed_.empty() && rng_.Random() < p_unconsumed) {
      std::vector<const std::string*> oldest;
      for (const std::string& s : unconsumed_.items()) {
        if (oldest.size() == 64) break;
        oldest.push_back(&s);
      }
      v = *rng_.Choice(absl::MakeConstSpan(oldest));
    } else {
      v = ChooseRecent(pool_, 256);
    }
    unconsumed_.Erase(v);
    return v;
  }
  std::string PickA() { return Pick(0.95); }
  std::string PickB() { return Pick(0.9); }

  std::string Alpha(Category category) {
    if (rng_.Random() < shared_frac_) return "%one";
    std::string c = Fresh("c");
    Emit(absl::StrCat(c, " : int = prim::Constant[value=1]()"), category);
    return c;
  }

  // `a` is set for dead code (live == false), empty for live code.
  std::string TensorRhs(Category category, std::string a, bool live) {
    static constexpr const char* kBinaryOps[] = {"add", "sub", "mul"};
    static constexpr const char* kUnaryOps[] = {"relu", "tanh"};
    const bool binary = rng_.Random() < 0.75;
    const char* op = binary ? rng_.Choice(absl::MakeConstSpan(kBinaryOps))
                            : rng_.Choice(absl::MakeConstSpan(kUnaryOps));
    if (live && a.empty()) a = PickA();
    if (!binary) return absl::StrCat("aten::", op, "(", a, ")");
    const std::string b = live ? PickB() : ChooseRecent(pool_, 256);
    if (absl::string_view(op) == "mul") return absl::StrCat("aten::mul(", a, ", ", b, ")");
    return absl::StrCat("aten::", op, "(", a, ", ", b, ", ", Alpha(category), ")");
  }

  std::string Define(absl::string_view rhs, Category category, bool live = true) {
    std::string v = Fresh("t");
    Emit(absl::StrCat(v, " : Tensor = ", rhs), category);
    if (live) {
      pool_.push_back(v);
      unconsumed_.Insert(v);
    }
    return v;
  }

  void EmitPlain() {
    std::string rhs = TensorRhs(kPlain, "", true);
    Define(rhs, kPlain);
    expressions_.push_back(std::move(rhs));
  }

  void EmitDuplicate() {
    if (expressions_.empty()) return;
    const double r = rng_.Random();
    const size_t window = std::min<size_t>(expressions_.size(), 512);
    const auto back = static_cast<size_t>(std::pow(r, 2.0) * static_cast<double>(window));
    const std::string rhs = expressions_[expressions_.size() - 1 - back];
    Define(rhs, kCse);
  }

  void EmitDead() {
    std::string a;
    if (!dead_.empty() && rng_.Random() < 0.3) {
      a = ChooseRecent(dead_, 64);
    } else {
      a = ChooseRecent(pool_, 256);
    }
    const std::string rhs = TensorRhs(kDead, std::move(a), false);
    dead_.push_back(Define(rhs, kDead, false));
  }

  void EmitFoldChain() {
    const int length = rng_.RandInt(2, 4);
    std::string acc = Fresh("k");
    Emit(absl::StrCat(acc, " : int = prim::Constant[value=", rng_.RandInt(-5, 5), "]()"), kFold);
    for (int i = 0; i < length; ++i) {
      const std::string k = Fresh("k");
      Emit(absl::StrCat(k, " : int = prim::Constant[value=", rng_.RandInt(-5, 5), "]()"), kFold);
      std::string s = Fresh("s");
      Emit(absl::StrCat(s, " : int = aten::add(", acc, ", ", k, ")"), kFold);
      acc = std::move(s);
    }
    const std::string a = PickA();
    const std::string b = PickB();
    Define(absl::StrCat("aten::add(", a, ", ", b, ", ", acc, ")"), kFold);
  }

  void EmitPeephole() {
    const double r = rng_.Random();
    const std::string a = PickA();
    std::string rhs;
    if (r < 0.25) {
      rhs = absl::StrCat("aten::mul(", a, ", %one)");
    } else if (r < 0.45) {
      rhs = absl::StrCat("aten::add(", a, ", %zero, %one)");
    } else if (r < 0.6) {
      rhs = absl::StrCat("aten::sub(", a, ", %zero, %one)");
    } else if (r < 0.7) {
      rhs = absl::StrCat("aten::mul(", a, ", %onef)");
    } else if (r < 0.8) {
      rhs = absl::StrCat("aten::add(", a, ", %zerof, %one)");
    } else {
      // An int-only candidate, `n + 0` or `n * 1`, used as alpha.
      const std::string s = Fresh("s");
      const bool add = r < 0.9;
      Emit(absl::StrCat(s, " : int = aten::", add ? "add" : "mul", "(%n, ", add ? "%zero" : "%one",
                        ")"),
           kPeep);
      rhs = absl::StrCat("aten::add(", a, ", ", PickB(), ", ", s, ")");
    }
    Define(rhs, kPeep);
  }

  std::string Assemble(int64_t num_nodes) const {
    std::vector<std::string> outputs(unconsumed_.items().begin(), unconsumed_.items().end());
    if (outputs.empty()) outputs.push_back(pool_.back());
    std::string text = absl::StrCat("# synthetic TorchScript graph: generate(n_nodes=", num_nodes,
                                    ", seed=", seed_, ", shared_frac=", PyFloatRepr(shared_frac_),
                                    ") from gen/synth_graph.py\n# nodes=", num_body_lines_,
                                    " outputs=", outputs.size());
    for (int c = 0; c < kNumCategories; ++c) {
      absl::StrAppend(&text, " ", kCategoryNames[c], "=", stats_[c]);
    }
    absl::StrAppend(&text, "\ngraph(");
    for (int i = 0; i < kNumInputs; ++i) absl::StrAppend(&text, "%x", i, " : Tensor,\n      ");
    absl::StrAppend(&text, "%n : int):\n", body_, "  return (", absl::StrJoin(outputs, ", "),
                    ")\n");
    return text;
  }

  uint32_t seed_;
  PyRandom rng_;
  double shared_frac_;
  int64_t counter_ = 0;
  int64_t num_body_lines_ = 0;
  int64_t stats_[kNumCategories] = {};
  std::string body_;
  std::vector<std::string> pool_;  // live tensor values, in definition order
  OrderedSet unconsumed_;          // live values nobody uses yet
  std::vector<std::string> dead_;
  std::vector<std::string> expressions_;  // right-hand sides of plain ops
};

}  // namespace

std::string SynthGraphText(int64_t num_nodes, uint32_t seed, double shared_frac) {
  return Generator(seed, shared_frac).Generate(num_nodes);
}

}  // namespace kiln::bench
