#include "passes/node_equality.h"

#include <algorithm>
#include <variant>
#include <vector>

#include "ir/attributes.h"
#include "support/hash.h"
#include "support/tensor.h"

namespace kiln::passes {
namespace {

bool IsComparableTensor(const Tensor& t) {
  if (!t.defined() || !t.has_data()) return false;
  const int64_t numel = t.numel();
  return numel >= 0 &&
         static_cast<size_t>(numel) <= kMaxMergeableTensorBytes / std::max<size_t>(1, t.element_size());
}

bool InputsEqual(const ir::Node& a, const ir::Node& b, bool commutative) {
  auto ai = a.inputs();
  auto bi = b.inputs();
  if (ai.size() != bi.size()) return false;
  size_t first = 0;
  if (commutative && ai.size() >= 2) {
    const bool same = ai[0] == bi[0] && ai[1] == bi[1];
    const bool swapped = ai[0] == bi[1] && ai[1] == bi[0];
    if (!same && !swapped) return false;
    first = 2;
  }
  for (size_t i = first; i < ai.size(); ++i) {
    if (ai[i] != bi[i]) return false;
  }
  return true;
}

bool AttributesEqual(const ir::Node& a, const ir::Node& b) {
  const auto& aa = a.attributes();
  const auto& ba = b.attributes();
  if (aa.size() != ba.size()) return false;
  for (size_t i = 0; i < aa.size(); ++i) {
    // Usually in the same order; fall back to a search by name.
    const ir::Attribute* match = nullptr;
    if (ba[i].name == aa[i].name) {
      match = &ba[i];
    } else {
      for (const ir::Attribute& x : ba) {
        if (x.name == aa[i].name) {
          match = &x;
          break;
        }
      }
    }
    if (match == nullptr || !ir::AttributeValueEquals(aa[i].value, match->value)) return false;
  }
  return true;
}

}  // namespace

bool HasComparableAttributes(const ir::Node& node) {
  for (const ir::Attribute& attr : node.attributes()) {
    if (const auto* t = std::get_if<Tensor>(&attr.value)) {
      if (!IsComparableTensor(*t)) return false;
    } else if (const auto* ts = std::get_if<std::vector<Tensor>>(&attr.value)) {
      for (const Tensor& x : *ts) {
        if (!IsComparableTensor(x)) return false;
      }
    }
  }
  return true;
}

uint64_t HashNode(const ir::Node& node, bool commutative) {
  uint64_t h = HashCombine(node.kind().id(), node.outputs().size());
  for (const ir::Value* out : node.outputs()) {
    h = HashCombine(h, out->type() ? static_cast<uint64_t>(out->type()->kind()) : 0xff);
  }
  auto in = node.inputs();
  size_t first = 0;
  if (commutative && in.size() >= 2) {
    uint64_t x = in[0]->unique();
    uint64_t y = in[1]->unique();
    h = HashCombine(h, std::min(x, y));
    h = HashCombine(h, std::max(x, y));
    first = 2;
  }
  for (size_t i = first; i < in.size(); ++i) h = HashCombine(h, in[i]->unique());
  // Attribute order does not matter for equality, so combine commutatively.
  uint64_t attrs = 0;
  for (const ir::Attribute& a : node.attributes()) {
    attrs += HashMix(HashCombine(a.name.id(), ir::AttributeValueHash(a.value)));
  }
  return HashCombine(h, attrs);
}

bool NodesEqual(const ir::Node& a, const ir::Node& b, bool commutative) {
  if (&a == &b) return true;
  if (a.kind() != b.kind() || a.outputs().size() != b.outputs().size() ||
      !a.blocks().empty() || !b.blocks().empty()) {
    return false;
  }
  if (!InputsEqual(a, b, commutative)) return false;
  for (size_t i = 0; i < a.outputs().size(); ++i) {
    if (!ir::TypeEquals(a.output(i)->type(), b.output(i)->type())) return false;
  }
  return AttributesEqual(a, b);
}

}  // namespace kiln::passes
