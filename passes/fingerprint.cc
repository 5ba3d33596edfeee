#include "passes/fingerprint.h"

#include <algorithm>
#include <variant>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "support/hash.h"
#include "support/parallel.h"

namespace kiln::passes {
namespace {

using ir::Block;
using ir::Node;
using ir::Type;
using ir::Value;

// Distinct tags keep e.g. "one input, no attributes" apart from "no inputs,
// one attribute".
enum Tag : uint64_t {
  kBlockBegin = 0x6b31,
  kBlockEnd,
  kNodeBegin,
  kInputs,
  kAttributes,
  kOutputs,
  kBlocks,
  kUndefinedValue,
  kNoName,
  kNoLocation,
  kNoScope,
  kNullType,
  kTypeTooDeep,
};

// TensorHashMemo::HashAhead: below this many bytes of new tensors, none
// is hashed ahead; above, at most this many threads (bound by memory
// bandwidth).
constexpr size_t kParallelHashBytes = size_t{64} << 20;
constexpr size_t kMaxHashThreads = 16;

// Types nest only as deep as someone wrote them; past this, hash the kind.
constexpr int kMaxTypeDepth = 32;

uint64_t HashOptionalInt(bool present, int64_t v) {
  return present ? HashMix(static_cast<uint64_t>(v) ^ 0x5bd1e995) : 0x1f;
}

uint64_t TypeHash(const Type& t, int depth) {
  uint64_t h = HashMix(static_cast<uint64_t>(t.kind()) + 1);
  if (depth > kMaxTypeDepth) return HashCombine(h, kTypeTooDeep);
  if (t.is_tensor()) {
    const ir::TensorInfo& info = t.tensor();
    h = HashCombine(h, info.dtype ? static_cast<uint64_t>(*info.dtype) + 1 : 0);
    if (info.sizes) {
      h = HashCombine(h, info.sizes->size() + 1);
      for (const auto& d : *info.sizes) h = HashCombine(h, HashOptionalInt(d.has_value(), d.value_or(0)));
    } else {
      h = HashCombine(h, 0);
    }
    if (info.strides) {
      h = HashCombine(h, info.strides->size() + 1);
      for (int64_t s : *info.strides) h = HashCombine(h, static_cast<uint64_t>(s));
    } else {
      h = HashCombine(h, 0);
    }
    h = HashCombine(h, info.device ? HashString(info.device->type, static_cast<uint64_t>(
                                                                       info.device->index))
                                   : 0);
    h = HashCombine(h, info.requires_grad ? 1 + *info.requires_grad : 0);
    h = HashCombine(h, info.undefined ? 1 + *info.undefined : 0);
  }
  if (!t.contained().empty()) {
    h = HashCombine(h, t.contained().size());
    for (const ir::TypePtr& c : t.contained()) {
      h = HashCombine(h, c ? TypeHash(*c, depth + 1) : kNullType);
    }
  }
  if (!t.class_name().empty()) h = HashCombine(h, HashString(t.class_name()));
  return h;
}

// Numbers values in definition order. Dense (a vector indexed by
// Value::unique) unless the unique ids are sparse, e.g. after a parser kept a
// huge number from the input text.
class ValueNumbering {
 public:
  explicit ValueNumbering(const ir::Graph& g) {
    size_t bound = g.nextUnique();
    dense_ = bound <= 8 * (g.numNodes() + g.inputs().size()) + 4096;
    if (dense_) ids_.assign(bound, 0);
  }
  void Define(const Value* v) {
    uint32_t id = next_++;
    size_t u = v->unique();
    if (dense_ && u < ids_.size()) {
      ids_[u] = id;
    } else {
      sparse_[v] = id;
    }
  }
  // 0 for a value not (yet) defined: an invalid graph still fingerprints.
  uint32_t Lookup(const Value* v) const {
    size_t u = v->unique();
    if (dense_ && u < ids_.size()) {
      // A dense slot may hold a stale id only if two values share a unique,
      // which Graph never does.
      return ids_[u];
    }
    auto it = sparse_.find(v);
    return it == sparse_.end() ? 0 : it->second;
  }

 private:
  bool dense_;
  uint32_t next_ = 1;
  std::vector<uint32_t> ids_;
  absl::flat_hash_map<const Value*, uint32_t> sparse_;
};

class Fingerprinter {
 public:
  Fingerprinter(const ir::Graph& g, TensorHashMemo* memo) : numbering_(g), memo_(memo) {}

  uint64_t Run(const Block* top) {
    // An explicit stack instead of recursion. `stage` tracks the cursor node:
    // 0 = not hashed yet, k >= 1 = hashed and k - 1 of its blocks entered.
    struct Frame {
      const Block* block;
      Node* cursor;
      size_t stage;
    };
    std::vector<Frame> stack;
    EnterBlock(top);
    stack.push_back({top, top->front(), 0});
    while (!stack.empty()) {
      Frame& f = stack.back();
      if (f.cursor == f.block->return_node()) {
        LeaveBlock(f.block);
        stack.pop_back();
        continue;
      }
      Node* n = f.cursor;
      if (f.stage == 0) {
        HashNodeHead(n);
        f.stage = 1;
      }
      size_t entered = f.stage - 1;
      if (entered < n->blocks().size()) {
        ++f.stage;
        const Block* b = n->block(entered);
        EnterBlock(b);
        stack.push_back({b, b->front(), 0});  // invalidates `f`
        continue;
      }
      // A node's outputs are not visible inside its blocks: define them last.
      DefineOutputs(n);
      f.cursor = n->next();
      f.stage = 0;
    }
    return h_;
  }

 private:
  void Mix(uint64_t v) { h_ = HashCombine(h_, v); }

  uint64_t SymbolHash(ir::Symbol s) {
    uint32_t id = s.id();
    if (id >= symbol_hashes_.size()) symbol_hashes_.resize(id + 1, 0);
    uint64_t& slot = symbol_hashes_[id];
    if (slot == 0) slot = HashString(s.qualString()) | 1;
    return slot;
  }

  void HashValueMeta(const Value* v) {
    Mix(v->type() ? TypeHash(*v->type(), 0) : kNullType);
    Mix(v->hasDebugName() ? HashString(v->debugNameRaw()) : kNoName);
  }

  void EnterBlock(const Block* b) {
    Mix(kBlockBegin);
    Mix(b->inputs().size());
    for (const Value* v : b->inputs()) {
      numbering_.Define(v);
      HashValueMeta(v);
    }
  }

  void LeaveBlock(const Block* b) {
    Mix(kBlockEnd);
    HashInputs(b->return_node());
  }

  void HashInputs(const Node* n) {
    Mix(kInputs);
    Mix(n->inputs().size());
    for (const Value* v : n->inputs()) {
      uint32_t id = numbering_.Lookup(v);
      Mix(id == 0 ? HashCombine(kUndefinedValue, v->unique()) : id);
    }
  }

  void HashNodeHead(const Node* n) {
    Mix(kNodeBegin);
    Mix(SymbolHash(n->kind()));
    HashInputs(n);
    Mix(kAttributes);
    Mix(n->attributes().size());
    for (const ir::Attribute& a : n->attributes()) {
      Mix(SymbolHash(a.name));
      Mix(AttributeHash(a.value));
    }
    absl::string_view loc = n->sourceLocation();
    Mix(loc.empty() ? kNoLocation : HashString(loc));
    absl::string_view scope = n->scope();
    Mix(scope.empty() ? kNoScope : HashString(scope));
    Mix(kBlocks);
    Mix(n->blocks().size());
  }

  // ir::AttributeValueHash, tensors through the memo when there is one.
  uint64_t AttributeHash(const ir::AttributeValue& v) {
    if (memo_ == nullptr) return ir::AttributeValueHash(v);
    if (const auto* t = std::get_if<Tensor>(&v)) return HashCombine(v.index(), memo_->ValueHash(*t));
    if (const auto* ts = std::get_if<std::vector<Tensor>>(&v)) {
      uint64_t h = ts->size();
      for (const Tensor& t : *ts) h = HashCombine(h, memo_->ValueHash(t));
      return HashCombine(v.index(), h);
    }
    return ir::AttributeValueHash(v);
  }

  void DefineOutputs(const Node* n) {
    Mix(kOutputs);
    Mix(n->outputs().size());
    for (const Value* v : n->outputs()) {
      numbering_.Define(v);
      HashValueMeta(v);
    }
  }

  uint64_t h_ = 0x6b696c6e;  // "kiln"
  ValueNumbering numbering_;
  TensorHashMemo* memo_;
  std::vector<uint64_t> symbol_hashes_;
};

}  // namespace

uint64_t TypeFingerprint(const ir::Type& type) { return TypeHash(type, 0); }

TensorHashMemo::Key TensorHashMemo::KeyOf(const Tensor& t) {
  return Key{t.storage().get(), t.storage_offset(), static_cast<int>(t.dtype()), t.sizes(), t.strides()};
}

void TensorHashMemo::HashAhead(const ir::Graph& graph) {
  // The tensors of every node's attributes (prim::Constant's value), in
  // blocks too, each key once.
  std::vector<Tensor> pending;
  absl::flat_hash_map<Key, size_t> seen;
  size_t bytes = 0;
  auto add = [&](const Tensor& t) {
    if (t.storage() == nullptr) return;
    Key key = KeyOf(t);
    if (hashes_.contains(key) || !seen.try_emplace(std::move(key), pending.size()).second) return;
    pending.push_back(t);
    bytes += static_cast<size_t>(t.numel()) * t.element_size();
  };
  std::vector<const ir::Block*> blocks{graph.block()};
  while (!blocks.empty()) {
    const ir::Block* b = blocks.back();
    blocks.pop_back();
    for (const Node* n : b->nodes()) {
      for (const ir::Attribute& a : n->attributes()) {
        if (const auto* t = std::get_if<Tensor>(&a.value)) add(*t);
        if (const auto* ts = std::get_if<std::vector<Tensor>>(&a.value)) {
          for (const Tensor& t : *ts) add(t);
        }
      }
      for (const ir::Block* inner : n->blocks()) blocks.push_back(inner);
    }
  }
  if (bytes < kParallelHashBytes || pending.size() <= 1 || HardwareThreads() <= 1) {
    return;  // ValueHash hashes them as it meets them
  }
  std::vector<uint64_t> hashes(pending.size());
  ParallelFor(pending.size(), std::min(kMaxHashThreads, HardwareThreads()),
              [&](size_t k) { hashes[k] = pending[k].ValueHash(); });
  for (size_t k = 0; k < pending.size(); ++k) {
    hashes_.emplace(KeyOf(pending[k]), hashes[k]);
    kept_.push_back(pending[k].storage());
  }
}

uint64_t TensorHashMemo::ValueHash(const Tensor& t) {
  const std::shared_ptr<Storage>& storage = t.storage();
  if (storage == nullptr) return t.ValueHash();  // no data: sizes only
  Key key = KeyOf(t);
  auto [it, inserted] = hashes_.try_emplace(std::move(key), 0);
  if (inserted) {
    it->second = t.ValueHash();
    kept_.push_back(storage);
  }
  return it->second;
}

uint64_t GraphFingerprint(const ir::Graph& graph) {
  return Fingerprinter(graph, nullptr).Run(graph.block());
}

uint64_t GraphFingerprint(const ir::Graph& graph, TensorHashMemo& memo) {
  memo.HashAhead(graph);
  return Fingerprinter(graph, &memo).Run(graph.block());
}

}  // namespace kiln::passes
