#include "ir/proto/graph_compare.h"

#include <complex>
#include <cstring>
#include <string>
#include <variant>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace kiln::ir::testing {
namespace {

bool SameTensor(const Tensor& a, const Tensor& b) {
  if (a.defined() != b.defined()) return false;
  if (!a.defined()) return true;
  if (a.dtype() != b.dtype() || a.sizes() != b.sizes()) return false;
  if (a.is_placeholder() != b.is_placeholder()) return false;
  if (a.is_placeholder()) return a.strides() == b.strides();
  return a.ValueEquals(b);
}

bool SameBits(std::complex<double> a, std::complex<double> b) {
  return std::memcmp(&a, &b, sizeof(a)) == 0;
}

bool SameAttribute(const AttributeValue& a, const AttributeValue& b) {
  if (a.index() != b.index()) return false;
  // Complex values bitwise (AttributeValueEquals uses ==, false for NaN).
  if (const auto* c = std::get_if<std::complex<double>>(&a)) {
    return SameBits(*c, std::get<std::complex<double>>(b));
  }
  if (const auto* cs = std::get_if<std::vector<std::complex<double>>>(&a)) {
    const auto& other = std::get<std::vector<std::complex<double>>>(b);
    if (cs->size() != other.size()) return false;
    for (size_t i = 0; i < cs->size(); ++i) {
      if (!SameBits((*cs)[i], other[i])) return false;
    }
    return true;
  }
  if (const auto* t = std::get_if<Tensor>(&a)) return SameTensor(*t, std::get<Tensor>(b));
  if (const auto* ts = std::get_if<std::vector<Tensor>>(&a)) {
    const auto& other = std::get<std::vector<Tensor>>(b);
    if (ts->size() != other.size()) return false;
    for (size_t i = 0; i < ts->size(); ++i) {
      if (!SameTensor((*ts)[i], other[i])) return false;
    }
    return true;
  }
  return AttributeValueEquals(a, b);
}

class Comparer {
 public:
  std::string Compare(const Graph& a, const Graph& b) {
    CompareBlock(*a.block(), *b.block(), "graph");
    return diff_;
  }

 private:
  bool Fail(const std::string& what) {
    if (diff_.empty()) diff_ = what;
    return false;
  }

  bool SameValue(const Value* a, const Value* b, const std::string& where) {
    if (a->debugNameRaw() != b->debugNameRaw() || a->debugName() != b->debugName()) {
      return Fail(absl::StrCat(where, ": value %", a->debugName(), " (raw \"", a->debugNameRaw(),
                               "\") vs %", b->debugName(), " (raw \"", b->debugNameRaw(), "\")"));
    }
    if (!TypeEquals(a->type(), b->type())) {
      return Fail(absl::StrCat(where, ": type of %", a->debugName(), ": ", a->type()->ToString(),
                               " vs ", b->type()->ToString()));
    }
    map_[a] = b;
    return true;
  }

  bool SameUse(const Value* a, const Value* b, const std::string& where) {
    auto it = map_.find(a);
    if (it == map_.end() || it->second != b) {
      return Fail(absl::StrCat(where, ": uses %", a->debugName(), " vs %", b->debugName()));
    }
    return true;
  }

  bool CompareBlock(const Block& a, const Block& b, const std::string& where) {
    if (a.inputs().size() != b.inputs().size()) return Fail(where + ": input count");
    for (size_t i = 0; i < a.inputs().size(); ++i) {
      if (!SameValue(a.inputs()[i], b.inputs()[i], where + " input")) return false;
    }
    auto ia = a.nodes().begin();
    auto ib = b.nodes().begin();
    int index = 0;
    for (; ia != a.nodes().end() && ib != b.nodes().end(); ++ia, ++ib, ++index) {
      if (!CompareNode(**ia, **ib, absl::StrCat(where, " node ", index))) return false;
    }
    if ((ia != a.nodes().end()) != (ib != b.nodes().end())) return Fail(where + ": node count");
    if (a.outputs().size() != b.outputs().size()) return Fail(where + ": output count");
    for (size_t i = 0; i < a.outputs().size(); ++i) {
      if (!SameUse(a.outputs()[i], b.outputs()[i], where + " output")) return false;
    }
    return true;
  }

  bool CompareNode(const Node& a, const Node& b, const std::string& where) {
    if (a.kind() != b.kind()) {
      return Fail(absl::StrCat(where, ": kind ", a.kind().qualString(), " vs ",
                               b.kind().qualString()));
    }
    const std::string at = absl::StrCat(where, " (", a.kind().qualString(), ")");
    if (a.sourceLocation() != b.sourceLocation()) return Fail(at + ": source location");
    if (a.scope() != b.scope()) return Fail(at + ": scope");
    if (a.inputs().size() != b.inputs().size()) return Fail(at + ": input count");
    for (size_t i = 0; i < a.inputs().size(); ++i) {
      if (!SameUse(a.inputs()[i], b.inputs()[i], at)) return false;
    }
    if (a.attributes().size() != b.attributes().size()) return Fail(at + ": attribute count");
    for (size_t i = 0; i < a.attributes().size(); ++i) {
      const Attribute& x = a.attributes()[i];
      const Attribute& y = b.attributes()[i];
      if (x.name != y.name || !SameAttribute(x.value, y.value)) {
        return Fail(absl::StrCat(at, ": attribute ", x.name.qualString()));
      }
    }
    if (a.outputs().size() != b.outputs().size()) return Fail(at + ": output count");
    if (a.blocks().size() != b.blocks().size()) return Fail(at + ": block count");
    for (size_t i = 0; i < a.blocks().size(); ++i) {
      if (!CompareBlock(*a.blocks()[i], *b.blocks()[i], absl::StrCat(at, " block ", i))) {
        return false;
      }
    }
    for (size_t i = 0; i < a.outputs().size(); ++i) {
      if (!SameValue(a.outputs()[i], b.outputs()[i], at + " output")) return false;
    }
    return true;
  }

  absl::flat_hash_map<const Value*, const Value*> map_;
  std::string diff_;
};

}  // namespace

std::string GraphDifference(const Graph& a, const Graph& b) { return Comparer().Compare(a, b); }

}  // namespace kiln::ir::testing
