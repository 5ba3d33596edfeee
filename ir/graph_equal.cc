#include "ir/graph_equal.h"

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "ir/text_printer.h"

namespace kiln::ir {
namespace {

bool TensorsEqual(const Tensor& a, const Tensor& b) {
  if (a.is_placeholder() && b.is_placeholder()) {
    return a.dtype() == b.dtype() && a.sizes() == b.sizes() && a.strides() == b.strides();
  }
  return a.ValueEquals(b);
}

bool AttributesEqual(const AttributeValue& a, const AttributeValue& b) {
  if (a.index() != b.index()) return false;
  if (const auto* ta = std::get_if<Tensor>(&a)) return TensorsEqual(*ta, std::get<Tensor>(b));
  if (const auto* la = std::get_if<std::vector<Tensor>>(&a)) {
    const auto& lb = std::get<std::vector<Tensor>>(b);
    if (la->size() != lb.size()) return false;
    for (size_t i = 0; i < la->size(); ++i) {
      if (!TensorsEqual((*la)[i], lb[i])) return false;
    }
    return true;
  }
  return AttributeValueEquals(a, b);
}

class Comparer {
 public:
  explicit Comparer(std::string* diff) : diff_(diff) {}

  bool Blocks(const Block* a, const Block* b, absl::string_view where) {
    if (!Values(a->inputs(), b->inputs(), /*define=*/true, absl::StrCat(where, " inputs"))) {
      return false;
    }
    NodeIterator ia = a->nodes().begin();
    NodeIterator ib = b->nodes().begin();
    const NodeIterator ea = a->nodes().end();
    const NodeIterator eb = b->nodes().end();
    size_t index = 0;
    for (; ia != ea && ib != eb; ++ia, ++ib, ++index) {
      if (!Nodes(**ia, **ib, absl::StrCat(where, " node ", index))) return false;
    }
    if (ia != ea || ib != eb) {
      return Fail(absl::StrCat(where, ": different number of nodes (", CountNodes(a),
                               " vs ", CountNodes(b), " including sub-blocks)"));
    }
    return Values(a->outputs(), b->outputs(), /*define=*/false, absl::StrCat(where, " outputs"));
  }

 private:
  bool Fail(std::string message) {
    if (diff_) *diff_ = std::move(message);
    return false;
  }

  // Inputs/outputs of blocks and nodes. `define`: the values are new
  // definitions to pair up; otherwise they are uses of paired values.
  bool Values(absl::Span<Value* const> a, absl::Span<Value* const> b, bool define,
              absl::string_view where) {
    if (a.size() != b.size()) {
      return Fail(absl::StrCat(where, ": ", a.size(), " values vs ", b.size()));
    }
    for (size_t i = 0; i < a.size(); ++i) {
      if (define) {
        if (a[i]->debugName() != b[i]->debugName()) {
          return Fail(absl::StrCat(where, " #", i, ": name %", a[i]->debugName(), " vs %",
                                   b[i]->debugName()));
        }
        if (!TypeEquals(a[i]->type(), b[i]->type())) {
          return Fail(absl::StrCat(where, " #", i, ": type ", a[i]->type()->ToString(), " vs ",
                                   b[i]->type()->ToString()));
        }
        map_[a[i]] = b[i];
      } else {
        auto it = map_.find(a[i]);
        if (it == map_.end() || it->second != b[i]) {
          return Fail(absl::StrCat(where, " #", i, ": uses %", a[i]->debugName(), " vs %",
                                   b[i]->debugName()));
        }
      }
    }
    return true;
  }

  bool Nodes(const Node& a, const Node& b, absl::string_view where) {
    // Printing nodes is costly: only done for the message on a mismatch.
    auto context = [&] {
      return absl::StrCat(where, " (", PrintNode(a), " vs ", PrintNode(b), ")");
    };
    if (a.kind() != b.kind()) return Fail(absl::StrCat(context(), ": kinds differ"));
    if (!Values(a.inputs(), b.inputs(), false, absl::StrCat(where, " inputs"))) return false;
    const auto& aa = a.attributes();
    const auto& ba = b.attributes();
    if (aa.size() != ba.size()) return Fail(absl::StrCat(context(), ": attribute counts differ"));
    for (size_t i = 0; i < aa.size(); ++i) {
      if (aa[i].name != ba[i].name || !AttributesEqual(aa[i].value, ba[i].value)) {
        return Fail(absl::StrCat(context(), ": attribute '", aa[i].name.name(), "' differs"));
      }
    }
    if (a.sourceLocation() != b.sourceLocation()) {
      return Fail(absl::StrCat(context(), ": source locations differ"));
    }
    if (a.scope() != b.scope()) return Fail(absl::StrCat(context(), ": scopes differ"));
    if (a.blocks().size() != b.blocks().size()) {
      return Fail(absl::StrCat(context(), ": block counts differ"));
    }
    for (size_t i = 0; i < a.blocks().size(); ++i) {
      if (!Blocks(a.blocks()[i], b.blocks()[i], absl::StrCat(where, " block", i))) return false;
    }
    // Outputs come into scope after the node's blocks.
    return Values(a.outputs(), b.outputs(), true, absl::StrCat(where, " outputs"));
  }

  std::string* diff_;
  absl::flat_hash_map<const Value*, const Value*> map_;
};

}  // namespace

bool GraphsStructurallyEqual(const Graph& a, const Graph& b, std::string* diff) {
  return Comparer(diff).Blocks(a.block(), b.block(), "graph");
}

}  // namespace kiln::ir
