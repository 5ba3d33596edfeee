#include "ir/attributes.h"

#include <cstring>

#include "support/hash.h"

namespace kiln::ir {

const char* AttributeKindName(AttributeKind k) {
  static const char* const kNames[] = {"f",  "fs", "i", "is", "s",  "ss",
                                       "t",  "ts", "ty", "tys", "c", "cs"};
  return kNames[static_cast<int>(k)];
}

namespace {

bool DoubleBitsEqual(double a, double b) {
  return std::memcmp(&a, &b, sizeof(double)) == 0;
}

uint64_t DoubleBitsHash(double d) {
  uint64_t bits;
  std::memcpy(&bits, &d, sizeof(bits));
  return HashMix(bits);
}

struct EqualsVisitor {
  const AttributeValue& other;
  bool operator()(double a) const { return DoubleBitsEqual(a, std::get<double>(other)); }
  bool operator()(const std::vector<double>& a) const {
    const auto& b = std::get<std::vector<double>>(other);
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (!DoubleBitsEqual(a[i], b[i])) return false;
    }
    return true;
  }
  bool operator()(const Tensor& a) const { return a.ValueEquals(std::get<Tensor>(other)); }
  bool operator()(const std::vector<Tensor>& a) const {
    const auto& b = std::get<std::vector<Tensor>>(other);
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (!a[i].ValueEquals(b[i])) return false;
    }
    return true;
  }
  bool operator()(const TypePtr& a) const { return TypeEquals(a, std::get<TypePtr>(other)); }
  bool operator()(const std::vector<TypePtr>& a) const {
    const auto& b = std::get<std::vector<TypePtr>>(other);
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (!TypeEquals(a[i], b[i])) return false;
    }
    return true;
  }
  bool operator()(std::complex<double> a) const {
    const auto b = std::get<std::complex<double>>(other);
    return DoubleBitsEqual(a.real(), b.real()) && DoubleBitsEqual(a.imag(), b.imag());
  }
  bool operator()(const std::vector<std::complex<double>>& a) const {
    const auto& b = std::get<std::vector<std::complex<double>>>(other);
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (!DoubleBitsEqual(a[i].real(), b[i].real()) ||
          !DoubleBitsEqual(a[i].imag(), b[i].imag())) {
        return false;
      }
    }
    return true;
  }
  template <typename T>
  bool operator()(const T& a) const {
    return a == std::get<T>(other);
  }
};

struct HashVisitor {
  uint64_t operator()(double a) const { return DoubleBitsHash(a); }
  uint64_t operator()(const std::vector<double>& a) const {
    uint64_t h = a.size();
    for (double d : a) h = HashCombine(h, DoubleBitsHash(d));
    return h;
  }
  uint64_t operator()(int64_t a) const { return HashMix(static_cast<uint64_t>(a)); }
  uint64_t operator()(const std::vector<int64_t>& a) const {
    return HashBytes(a.data(), a.size() * sizeof(int64_t));
  }
  uint64_t operator()(const std::string& a) const { return HashString(a); }
  uint64_t operator()(const std::vector<std::string>& a) const {
    uint64_t h = a.size();
    for (const auto& s : a) h = HashCombine(h, HashString(s));
    return h;
  }
  uint64_t operator()(const Tensor& a) const { return a.ValueHash(); }
  uint64_t operator()(const std::vector<Tensor>& a) const {
    uint64_t h = a.size();
    for (const auto& t : a) h = HashCombine(h, t.ValueHash());
    return h;
  }
  uint64_t operator()(const TypePtr& a) const { return HashString(a->ToString()); }
  uint64_t operator()(const std::vector<TypePtr>& a) const {
    uint64_t h = a.size();
    for (const auto& t : a) h = HashCombine(h, HashString(t->ToString()));
    return h;
  }
  uint64_t operator()(std::complex<double> a) const {
    return HashCombine(DoubleBitsHash(a.real()), DoubleBitsHash(a.imag()));
  }
  uint64_t operator()(const std::vector<std::complex<double>>& a) const {
    uint64_t h = a.size();
    for (auto c : a) h = HashCombine(h, (*this)(c));
    return h;
  }
};

}  // namespace

bool AttributeValueEquals(const AttributeValue& a, const AttributeValue& b) {
  if (a.index() != b.index()) return false;
  return std::visit(EqualsVisitor{b}, a);
}

uint64_t AttributeValueHash(const AttributeValue& v) {
  return HashCombine(v.index(), std::visit(HashVisitor{}, v));
}

}  // namespace kiln::ir
