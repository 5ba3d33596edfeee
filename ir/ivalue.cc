#include "ir/ivalue.h"

#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "support/hash.h"

namespace kiln::ir {

IValue IValue::IntList(const std::vector<int64_t>& v) {
  std::vector<IValue> elems;
  elems.reserve(v.size());
  for (int64_t x : v) elems.push_back(Int(x));
  return List(std::move(elems));
}

double IValue::toNumberAsDouble() const {
  switch (tag_) {
    case Tag::kBool: return toBool() ? 1.0 : 0.0;
    case Tag::kInt: return static_cast<double>(toInt());
    default: return toDouble();
  }
}

TypePtr IValue::type() const {
  switch (tag_) {
    case Tag::kNone: return Type::None();
    case Tag::kBool: return Type::Bool();
    case Tag::kInt: return Type::Int();
    case Tag::kDouble: return Type::Float();
    case Tag::kString: return Type::Str();
    case Tag::kDevice: return Type::DeviceType();
    case Tag::kTensor: {
      const Tensor& t = toTensor();
      if (!t.defined()) return Type::Tensor();
      TensorInfo info;
      info.dtype = t.dtype();
      info.sizes.emplace(t.sizes().begin(), t.sizes().end());
      info.strides = t.strides();
      return Type::TensorWith(std::move(info));
    }
    case Tag::kList: {
      // Lists are homogeneous in TorchScript; an empty or mixed list is Any[].
      const auto& e = elements();
      if (e.empty()) return Type::List(Type::Any());
      TypePtr first = e[0].type();
      if (first->is_tensor()) first = Type::Tensor();
      for (const IValue& x : e) {
        if (x.tag() != e[0].tag()) return Type::List(Type::Any());
      }
      return Type::List(first);
    }
    case Tag::kTuple: {
      std::vector<TypePtr> elems;
      for (const IValue& x : elements()) elems.push_back(x.type());
      return Type::Tuple(std::move(elems));
    }
  }
  return Type::Any();
}

namespace {

void AppendDouble(double d, std::string* out) {
  if (std::isnan(d)) {
    out->append("nan");
  } else if (std::isinf(d)) {
    out->append(d < 0 ? "-inf" : "inf");
  } else {
    std::string s = absl::StrFormat("%.17g", d);
    // Keep a float recognisable as one: 1 -> 1.
    if (s.find_first_of(".e") == std::string::npos) s.push_back('.');
    out->append(s);
  }
}

void AppendQuoted(const std::string& s, std::string* out) {
  out->push_back('"');
  for (char c : s) {
    switch (c) {
      case '"': out->append("\\\""); break;
      case '\\': out->append("\\\\"); break;
      case '\n': out->append("\\n"); break;
      case '\t': out->append("\\t"); break;
      default: out->push_back(c);
    }
  }
  out->push_back('"');
}

}  // namespace

void IValue::AppendTo(std::string* out) const {
  switch (tag_) {
    case Tag::kNone: out->append("None"); return;
    case Tag::kBool: out->append(toBool() ? "True" : "False"); return;
    case Tag::kInt: absl::StrAppend(out, toInt()); return;
    case Tag::kDouble: AppendDouble(toDouble(), out); return;
    case Tag::kString: AppendQuoted(toString(), out); return;
    case Tag::kDevice: out->append(toDevice().ToString()); return;
    case Tag::kTensor: {
      const Tensor& t = toTensor();
      if (!t.defined()) {
        out->append("Tensor(undefined)");
        return;
      }
      absl::StrAppend(out, DTypeName(t.dtype()), "(");
      for (size_t i = 0; i < t.sizes().size(); ++i) {
        absl::StrAppend(out, i ? ", " : "", t.sizes()[i]);
      }
      out->push_back(')');
      return;
    }
    case Tag::kList:
    case Tag::kTuple: {
      const auto& e = elements();
      out->push_back(tag_ == Tag::kList ? '[' : '(');
      for (size_t i = 0; i < e.size(); ++i) {
        if (i) out->append(", ");
        e[i].AppendTo(out);
      }
      if (tag_ == Tag::kTuple && e.size() == 1) out->push_back(',');
      out->push_back(tag_ == Tag::kList ? ']' : ')');
      return;
    }
  }
}

std::string IValue::DebugString() const {
  std::string out;
  AppendTo(&out);
  return out;
}

bool operator==(const IValue& a, const IValue& b) {
  if (a.tag_ != b.tag_) return false;
  switch (a.tag_) {
    case IValue::Tag::kNone: return true;
    case IValue::Tag::kDouble: {
      double x = a.toDouble();
      double y = b.toDouble();
      return std::memcmp(&x, &y, sizeof(double)) == 0;
    }
    case IValue::Tag::kTensor: {
      const Tensor& x = a.toTensor();
      const Tensor& y = b.toTensor();
      if (!x.defined() || !y.defined()) return x.defined() == y.defined();
      return x.ValueEquals(y);
    }
    case IValue::Tag::kList:
    case IValue::Tag::kTuple:
      return a.elements() == b.elements();
    case IValue::Tag::kBool: return a.toBool() == b.toBool();
    case IValue::Tag::kInt: return a.toInt() == b.toInt();
    case IValue::Tag::kString: return a.toString() == b.toString();
    case IValue::Tag::kDevice: return a.toDevice() == b.toDevice();
  }
  return false;
}

uint64_t IValue::Hash() const {
  uint64_t h = HashMix(static_cast<uint64_t>(tag_) + 1);
  switch (tag_) {
    case Tag::kNone: return h;
    case Tag::kBool: return HashCombine(h, toBool() ? 1 : 0);
    case Tag::kInt: return HashCombine(h, static_cast<uint64_t>(toInt()));
    case Tag::kDouble: {
      // Bitwise, to agree with operator== (so -0. and 0. differ here).
      double d = toDouble();
      uint64_t bits;
      std::memcpy(&bits, &d, sizeof(bits));
      return HashCombine(h, bits);
    }
    case Tag::kString: return HashCombine(h, HashString(toString()));
    case Tag::kDevice:
      return HashCombine(HashCombine(h, HashString(toDevice().type)),
                         static_cast<uint64_t>(toDevice().index));
    case Tag::kTensor:
      return toTensor().defined() ? HashCombine(h, toTensor().ValueHash()) : h;
    case Tag::kList:
    case Tag::kTuple:
      for (const IValue& e : elements()) h = HashCombine(h, e.Hash());
      return HashCombine(h, elements().size());
  }
  return h;
}

}  // namespace kiln::ir
