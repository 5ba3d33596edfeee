#include "ir/ir.h"

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <limits>
#include <new>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace kiln::ir {
namespace {

constexpr int64_t kLowerBound = std::numeric_limits<int64_t>::min();
constexpr int64_t kUpperBound = std::numeric_limits<int64_t>::max();
constexpr int64_t kMidPoint = 0;
constexpr int64_t kAppendInterval = int64_t{1} << 40;

bool AllDigits(absl::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

}  // namespace

// ---------------------------------------------------------------- Value

Value::Value(Node* node, size_t offset)
    : node_(node), offset_(offset), unique_(0), type_(Type::Tensor()) {}

Graph* Value::owningGraph() const { return node_->owningGraph(); }

std::string Value::debugName() const {
  return name_.empty() ? std::to_string(unique_) : name_;
}

absl::string_view Value::debugNameBase() const {
  absl::string_view name = name_;
  size_t dot = name.find_last_of('.');
  if (dot != absl::string_view::npos && dot + 1 < name.size() &&
      AllDigits(name.substr(dot + 1))) {
    return name.substr(0, dot);
  }
  return name;
}

bool Value::isValidName(absl::string_view name) {
  // Empty clears the name; all-digit names are reserved for unnamed values.
  return name.empty() || !AllDigits(name);
}

Value* Value::setDebugName(absl::string_view requested) {
  // A copy: `requested` may view a name that the renaming below rewrites.
  const std::string wanted(requested);
  const absl::string_view name = wanted;
  Graph* g = owningGraph();
  auto& names = g->unique_names_;
  if (!name_.empty()) {
    names.erase(name_);
    name_.clear();
  }
  if (name.empty()) return this;
  if (AllDigits(name)) {
    // Kept only when no fresh value can have printed with this number yet.
    uint64_t n = 0;
    if (!absl::SimpleAtoi(name, &n) || n < g->next_unique_ ||
        names.contains(name)) {
      return this;
    }
    g->next_unique_ = n + 1;
    name_ = std::string(name);
    names[absl::string_view(name_)] = this;
    return this;
  }
  auto owner = names.find(name);
  if (owner != names.end()) {
    // Rename the current owner to base.N, as TorchScript does.
    size_t suffix = 1;
    absl::string_view base = name;
    size_t dot = name.find_last_of('.');
    if (dot != absl::string_view::npos && dot + 1 < name.size() &&
        AllDigits(name.substr(dot + 1))) {
      uint64_t parsed = 0;
      if (absl::SimpleAtoi(name.substr(dot + 1), &parsed)) suffix = parsed;
      base = name.substr(0, dot);
    }
    std::string base_str(base);
    auto it = g->name_base_suffix_.find(base_str);
    if (it != g->name_base_suffix_.end()) suffix = std::max(suffix, it->second + 1);
    std::string replacement;
    do {
      replacement = absl::StrCat(base_str, ".", suffix++);
    } while (names.contains(replacement));
    g->name_base_suffix_[base_str] = suffix;
    Value* old_owner = owner->second;
    old_owner->setDebugName(replacement);
  }
  name_ = std::string(name);
  names[absl::string_view(name_)] = this;
  return this;
}

void Value::replaceFirstUseWith(Value* v) {
  assert(!uses_.empty());
  Use u = uses_.front();
  u.user->replaceInput(u.offset, v);
}

void Value::replaceAllUsesWith(Value* v) {
  if (v == this) return;
  for (const Use& u : uses_) {
    u.user->inputs_[u.offset] = v;
    u.user->input_use_pos_[u.offset] = static_cast<uint32_t>(v->uses_.size());
    v->uses_.push_back(u);
  }
  uses_.clear();
}

void Value::replaceAllUsesAfterNodeWith(const Node* node, Value* v) {
  if (v == this) return;
  auto keep = std::partition(uses_.begin(), uses_.end(), [&](const Use& u) {
    return !u.user->isAfter(node);
  });
  for (auto it = keep; it != uses_.end(); ++it) {
    it->user->inputs_[it->offset] = v;
    it->user->input_use_pos_[it->offset] = static_cast<uint32_t>(v->uses_.size());
    v->uses_.push_back(*it);
  }
  uses_.erase(keep, uses_.end());
  for (size_t k = 0; k < uses_.size(); ++k) {
    uses_[k].user->input_use_pos_[uses_[k].offset] = static_cast<uint32_t>(k);
  }
}

Value* Value::copyMetadata(Value* from) {
  setType(from->type());
  if (from->hasDebugName()) setDebugName(from->debugNameRaw());
  return this;
}

// ---------------------------------------------------------------- Node

NodeIterator& NodeIterator::operator++() {
  n_ = reverse_ ? n_->prev() : n_->next();
  return *this;
}

Node::Node(Graph* graph, Symbol kind) : kind_(kind), graph_(graph) {}

bool Node::hasUses() const {
  for (const Value* o : outputs_) {
    if (o->hasUses()) return true;
  }
  return false;
}

void Node::linkUse(size_t i, Value* v) {
  input_use_pos_[i] = static_cast<uint32_t>(v->uses_.size());
  v->uses_.push_back(Use{this, i});
}

Value* Node::addInput(Value* v) {
  inputs_.push_back(v);
  input_use_pos_.push_back(0);
  linkUse(inputs_.size() - 1, v);
  return v;
}

Value* Node::insertInput(size_t i, Value* v) {
  // Later inputs move up one slot: fix the offsets their Uses record.
  for (size_t j = i; j < inputs_.size(); ++j) {
    ++inputs_[j]->uses_[input_use_pos_[j]].offset;
  }
  inputs_.insert(inputs_.begin() + static_cast<std::ptrdiff_t>(i), v);
  input_use_pos_.insert(input_use_pos_.begin() + static_cast<std::ptrdiff_t>(i), 0);
  linkUse(i, v);
  return v;
}

void Node::dropInput(size_t i) {
  std::vector<Use>& uses = inputs_[i]->uses_;
  const uint32_t pos = input_use_pos_[i];
  assert(pos < uses.size() && uses[pos].user == this && uses[pos].offset == i);
  const Use last = uses.back();
  uses[pos] = last;
  last.user->input_use_pos_[last.offset] = pos;
  uses.pop_back();
}

Value* Node::replaceInput(size_t i, Value* v) {
  Value* old = inputs_[i];
  if (old == v) return old;
  dropInput(i);
  inputs_[i] = v;
  linkUse(i, v);
  return old;
}

void Node::replaceInputWith(Value* from, Value* to) {
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (inputs_[i] == from) replaceInput(i, to);
  }
}

void Node::removeInput(size_t i) {
  dropInput(i);
  for (size_t j = i + 1; j < inputs_.size(); ++j) {
    --inputs_[j]->uses_[input_use_pos_[j]].offset;
  }
  inputs_.erase(inputs_.begin() + static_cast<std::ptrdiff_t>(i));
  input_use_pos_.erase(input_use_pos_.begin() + static_cast<std::ptrdiff_t>(i));
}

void Node::removeAllInputs() {
  for (size_t i = inputs_.size(); i-- > 0;) dropInput(i);
  inputs_.clear();
  input_use_pos_.clear();
}

Value* Node::addOutput() {
  Value* v = graph_->allocValue(this, outputs_.size());
  outputs_.push_back(v);
  return v;
}

Value* Node::insertOutput(size_t i) {
  Value* v = graph_->allocValue(this, i);
  outputs_.insert(outputs_.begin() + static_cast<std::ptrdiff_t>(i), v);
  for (size_t j = i + 1; j < outputs_.size(); ++j) outputs_[j]->offset_ = j;
  return v;
}

void Node::eraseOutput(size_t i) {
  Value* v = outputs_[i];
  assert(!v->hasUses());
  outputs_.erase(outputs_.begin() + static_cast<std::ptrdiff_t>(i));
  for (size_t j = i; j < outputs_.size(); ++j) outputs_[j]->offset_ = j;
  graph_->freeValue(v);
}

Block* Node::addBlock() {
  Block* b = graph_->allocBlock(this);
  blocks_.push_back(b);
  return b;
}

void Node::eraseBlock(size_t i) {
  Block* b = blocks_[i];
  blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(i));
  graph_->destroyBlockTree(b);
}

Node* Node::insertBefore(Node* n) {
  assert(!inBlockList() && n->inBlockList());
  Node* prev = n->prev_;
  prev_ = prev;
  next_ = n;
  prev->next_ = this;
  n->prev_ = this;
  owning_block_ = n->owning_block_;
  assignTopoPosition();
  return this;
}

Node* Node::insertAfter(Node* n) {
  assert(!inBlockList() && n->inBlockList());
  return insertBefore(n->next_);
}

void Node::moveBefore(Node* n) {
  removeFromList();
  insertBefore(n);
}

void Node::moveAfter(Node* n) {
  removeFromList();
  insertAfter(n);
}

void Node::removeFromList() {
  assert(inBlockList());
  prev_->next_ = next_;
  next_->prev_ = prev_;
  next_ = prev_ = nullptr;
  owning_block_ = nullptr;
}

void Node::assignTopoPosition() {
  Block* b = owning_block_;
  const bool prev_is_param = prev_ == b->return_;  // front of the list
  const bool next_is_return = next_ == b->return_;
  const int64_t prev_pos = prev_is_param ? kLowerBound : prev_->topo_position_;
  const int64_t next_pos = next_is_return ? kUpperBound : next_->topo_position_;
  if (prev_is_param && next_is_return) {
    topo_position_ = kMidPoint;
    return;
  }
  if (next_is_return) {  // append
    if (prev_pos < kUpperBound - kAppendInterval) {
      topo_position_ = prev_pos + kAppendInterval;
      return;
    }
  } else if (prev_is_param) {  // prepend
    if (next_pos > kLowerBound + kAppendInterval) {
      topo_position_ = next_pos - kAppendInterval;
      return;
    }
  } else {
    // Halfway, computed without overflow.
    const int64_t mid = prev_pos + (next_pos - prev_pos) / 2;
    if (mid != prev_pos) {
      topo_position_ = mid;
      return;
    }
  }
  b->reIndexTopology();
}

bool Node::isBefore(const Node* n) const {
  if (this == n) return false;
  if (owning_block_ == n->owning_block_) {
    // Sentinels: the param node is before everything, the return after.
    if (this == owning_block_->param_ || n == owning_block_->return_) return true;
    if (n == owning_block_->param_ || this == owning_block_->return_) return false;
    return topo_position_ < n->topo_position_;
  }
  // Walk both up to a common block.
  auto depth = [](const Node* x) {
    int d = 0;
    for (const Block* b = x->owning_block_; b && b->owning_node_;
         b = b->owning_node_->owning_block_) {
      ++d;
    }
    return d;
  };
  const Node* a = this;
  const Node* b = n;
  int da = depth(a);
  int db = depth(b);
  while (da > db) {
    a = a->owning_block_->owning_node_;
    --da;
  }
  while (db > da) {
    b = b->owning_block_->owning_node_;
    --db;
  }
  while (a->owning_block_ != b->owning_block_) {
    a = a->owning_block_->owning_node_;
    b = b->owning_block_->owning_node_;
  }
  if (a == b) {
    // One is nested inside the other: the outer node is "before" the inner
    // one only in the sense that it owns it; treat as not before.
    return false;
  }
  return a->isBefore(b);
}

bool Node::isAfter(const Node* n) const { return n->isBefore(this); }

void Node::destroy() {
  assert(kind_ != sym::kParam && kind_ != sym::kReturn);
  for (size_t i = outputs_.size(); i-- > 0;) eraseOutput(i);
  for (size_t i = blocks_.size(); i-- > 0;) eraseBlock(i);
  removeAllInputs();
  if (inBlockList()) removeFromList();
  if (graph_->insert_before_ == this) graph_->insert_before_ = graph_->return_node();
  graph_->freeNode(this);
}

void Node::replaceAllUsesWith(Node* n) {
  assert(outputs_.size() == n->outputs_.size());
  for (size_t i = 0; i < outputs_.size(); ++i) {
    outputs_[i]->replaceAllUsesWith(n->outputs_[i]);
  }
}

bool Node::hasAttribute(Symbol name) const { return findAttribute(name) != nullptr; }

AttributeKind Node::kindOf(Symbol name) const { return KindOf(*findAttribute(name)); }

const AttributeValue* Node::findAttribute(Symbol name) const {
  for (const Attribute& a : attrs_) {
    if (a.name == name) return &a.value;
  }
  return nullptr;
}

void Node::setAttribute(Symbol name, AttributeValue v) {
  for (Attribute& a : attrs_) {
    if (a.name == name) {
      a.value = std::move(v);
      return;
    }
  }
  attrs_.push_back(Attribute{name, std::move(v)});
}

bool Node::removeAttribute(Symbol name) {
  for (auto it = attrs_.begin(); it != attrs_.end(); ++it) {
    if (it->name == name) {
      attrs_.erase(it);
      return true;
    }
  }
  return false;
}

absl::string_view Node::sourceLocation() const {
  return source_location_ ? absl::string_view(*source_location_) : absl::string_view();
}

void Node::setSourceLocation(absl::string_view loc) {
  source_location_ = loc.empty() ? nullptr : graph_->internString(loc);
}

absl::string_view Node::scope() const {
  return scope_ ? absl::string_view(*scope_) : absl::string_view();
}

void Node::setScope(absl::string_view scope) {
  scope_ = scope.empty() ? nullptr : graph_->internString(scope);
}

// ---------------------------------------------------------------- Block

Block::Block(Graph* graph, Node* owning_node)
    : graph_(graph), owning_node_(owning_node) {
  param_ = graph->allocNode(sym::kParam);
  return_ = graph->allocNode(sym::kReturn);
  // The sentinels are not counted as nodes.
  graph->num_nodes_ -= 2;
  param_->owning_block_ = this;
  return_->owning_block_ = this;
  return_->next_ = return_;
  return_->prev_ = return_;
  param_->topo_position_ = kLowerBound;
  return_->topo_position_ = kUpperBound;
}

Value* Block::addInput(absl::string_view name) {
  Value* v = param_->addOutput();
  if (!name.empty()) v->setDebugName(name);
  return v;
}

Value* Block::insertInput(size_t i, absl::string_view name) {
  Value* v = param_->insertOutput(i);
  if (!name.empty()) v->setDebugName(name);
  return v;
}

void Block::eraseInput(size_t i) { param_->eraseOutput(i); }

size_t Block::registerOutput(Value* v) {
  return_->addInput(v);
  return return_->inputs_.size() - 1;
}

void Block::insertOutput(size_t i, Value* v) { return_->insertInput(i, v); }

void Block::eraseOutput(size_t i) { return_->removeInput(i); }

void Block::replaceOutput(size_t i, Value* v) { return_->replaceInput(i, v); }

Node* Block::prependNode(Node* n) {
  return n->insertBefore(return_->next_);
}

void Block::reIndexTopology() {
  int64_t pos = kLowerBound;
  for (Node* n : nodes()) {
    pos += kAppendInterval;
    n->topo_position_ = pos;
  }
}

void Block::cloneFrom(const Block* src,
                      const std::function<Value*(Value*)>& value_map) {
  absl::flat_hash_map<const Value*, Value*> local;
  auto env = [&](Value* v) -> Value* {
    auto it = local.find(v);
    if (it != local.end()) return it->second;
    return value_map(v);
  };
  for (Value* in : src->inputs()) local[in] = addInput()->copyMetadata(in);
  for (Node* n : src->nodes()) {
    Node* c = graph_->createClone(n, env);
    appendNode(c);
    for (size_t i = 0; i < n->outputs().size(); ++i) local[n->output(i)] = c->output(i);
  }
  for (Value* out : src->outputs()) registerOutput(env(out));
}

// ---------------------------------------------------------------- Graph

namespace internal {

#if defined(__SANITIZE_ADDRESS__)
#define KILN_SLOT_POOL_PASSTHROUGH 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KILN_SLOT_POOL_PASSTHROUGH 1
#endif
#endif

SlotPool::SlotPool(size_t slot_size)
    : slot_size_((std::max(slot_size, sizeof(void*)) + alignof(std::max_align_t) - 1) /
                 alignof(std::max_align_t) * alignof(std::max_align_t)) {}

SlotPool::~SlotPool() {
  for (char* c : chunks_) ::operator delete(c);
}

void* SlotPool::Allocate() {
#ifdef KILN_SLOT_POOL_PASSTHROUGH
  return ::operator new(slot_size_);
#else
  if (free_list_ != nullptr) {
    void* p = free_list_;
    free_list_ = *static_cast<void**>(p);
    return p;
  }
  if (cursor_ == end_) {
    constexpr size_t kChunkBytes = 64 * 1024;
    const size_t slots = std::max<size_t>(1, kChunkBytes / slot_size_);
    chunks_.push_back(static_cast<char*>(::operator new(slots * slot_size_)));
    cursor_ = chunks_.back();
    end_ = cursor_ + slots * slot_size_;
  }
  void* p = cursor_;
  cursor_ += slot_size_;
  return p;
#endif
}

void SlotPool::Free(void* p) {
#ifdef KILN_SLOT_POOL_PASSTHROUGH
  ::operator delete(p);
#else
  *static_cast<void**>(p) = free_list_;
  free_list_ = p;
#endif
}

}  // namespace internal

Graph::Graph() : node_pool_(sizeof(Node)), value_pool_(sizeof(Value)) {
  block_ = allocBlock(nullptr);
  insert_before_ = block_->return_node();
}

Graph::~Graph() {
  // Ownership is flat: each node owns its outputs and its Block objects, and
  // every node is in all_nodes_. Use lists are not maintained here, so this
  // is linear and safe even for graphs that fail verification.
  for (Node* n : all_nodes_) {
    for (Value* o : n->outputs_) {
      o->~Value();
      value_pool_.Free(o);
    }
    for (Block* b : n->blocks_) delete b;
    n->~Node();
    node_pool_.Free(n);
  }
  delete block_;
}

Node* Graph::allocNode(Symbol kind) {
  ++num_nodes_;
  Node* n = new (node_pool_.Allocate()) Node(this, kind);
  n->all_index_ = all_nodes_.size();
  all_nodes_.push_back(n);
  return n;
}

void Graph::destroyBlockTree(Block* root) {
  // Pre-order: param, body nodes (each followed by its blocks), return.
  // Destroyed in reverse, every user goes before the value it uses.
  std::vector<Node*> order;
  std::vector<Block*> blocks;
  struct Frame {
    Block* block;
    Node* next;  // next body node to visit; return node when done
    size_t nested = 0;  // index into `next`'s blocks still to visit
    bool node_emitted = false;
  };
  std::vector<Frame> stack;
  stack.push_back({root, root->front()});
  blocks.push_back(root);
  order.push_back(root->param_);
  while (!stack.empty()) {
    Frame& f = stack.back();
    if (f.next == f.block->return_) {
      order.push_back(f.block->return_);
      stack.pop_back();
      continue;
    }
    Node* n = f.next;
    if (!f.node_emitted) {
      order.push_back(n);
      f.node_emitted = true;
    }
    if (f.nested < n->blocks_.size()) {
      Block* b = n->blocks_[f.nested++];
      blocks.push_back(b);
      order.push_back(b->param_);
      stack.push_back({b, b->front()});  // invalidates f
      continue;
    }
    f.next = n->next_;
    f.nested = 0;
    f.node_emitted = false;
  }
  for (size_t k = order.size(); k-- > 0;) {
    Node* n = order[k];
    n->removeAllInputs();
    if (insert_before_ == n) insert_before_ = block_->return_node();
  }
  for (size_t k = order.size(); k-- > 0;) {
    Node* n = order[k];
    for (Value* o : n->outputs_) freeValue(o);
    n->outputs_.clear();
    n->blocks_.clear();
    const bool sentinel = n->kind_ == sym::kParam || n->kind_ == sym::kReturn;
    if (sentinel) ++num_nodes_;  // sentinels are not counted
    freeNode(n);
  }
  for (Block* b : blocks) freeBlock(b);
}

Value* Graph::allocValue(Node* node, size_t offset) {
  Value* v = new (value_pool_.Allocate()) Value(node, offset);
  v->unique_ = next_unique_++;
  return v;
}

Block* Graph::allocBlock(Node* owning_node) { return new Block(this, owning_node); }

void Graph::freeNode(Node* n) {
  --num_nodes_;
  Node* last = all_nodes_.back();
  last->all_index_ = n->all_index_;
  all_nodes_[n->all_index_] = last;
  all_nodes_.pop_back();
  n->~Node();
  node_pool_.Free(n);
}

void Graph::freeValue(Value* v) {
  if (!v->name_.empty()) {
    auto it = unique_names_.find(v->name_);
    if (it != unique_names_.end() && it->second == v) unique_names_.erase(it);
  }
  v->~Value();
  value_pool_.Free(v);
}

void Graph::freeBlock(Block* b) { delete b; }

Node* Graph::create(Symbol kind, size_t num_outputs) {
  Node* n = allocNode(kind);
  for (size_t i = 0; i < num_outputs; ++i) n->addOutput();
  return n;
}

Node* Graph::create(Symbol kind, absl::Span<Value* const> inputs,
                    size_t num_outputs) {
  Node* n = create(kind, num_outputs);
  n->inputs_.reserve(inputs.size());
  n->input_use_pos_.reserve(inputs.size());
  for (Value* v : inputs) n->addInput(v);
  return n;
}

Node* Graph::createClone(const Node* n,
                         const std::function<Value*(Value*)>& value_map,
                         bool copy_blocks) {
  Node* c = create(n->kind(), 0);
  for (Value* o : n->outputs()) c->addOutput()->copyMetadata(o);
  c->attrs_ = n->attrs_;
  if (n->source_location_) c->setSourceLocation(*n->source_location_);
  if (n->scope_) c->setScope(*n->scope_);
  for (Value* in : n->inputs()) c->addInput(value_map(in));
  if (copy_blocks) {
    for (Block* b : n->blocks()) c->addBlock()->cloneFrom(b, value_map);
  }
  return c;
}

std::unique_ptr<Graph> Graph::copy() const {
  auto g = std::make_unique<Graph>();
  absl::flat_hash_map<const Value*, Value*> map;
  for (Value* in : inputs()) {
    Value* v = g->addInput();
    v->setType(in->type());
    if (in->hasDebugName()) GraphInternals::SetNameUnchecked(v, in->debugNameRaw());
    map[in] = v;
  }
  auto env = [&](Value* v) -> Value* { return map.at(v); };
  // Clone node by node so that names are copied verbatim (including numeric
  // ones), then fix up fresh-number generation.
  std::function<void(const Block*, Block*)> clone_block = [&](const Block* src,
                                                               Block* dst) {
    for (Node* n : src->nodes()) {
      Node* c = g->create(n->kind(), 0);
      for (Value* o : n->outputs()) {
        Value* co = c->addOutput();
        co->setType(o->type());
        if (o->hasDebugName()) GraphInternals::SetNameUnchecked(co, o->debugNameRaw());
        map[o] = co;
      }
      c->attrs_ = n->attrs_;
      if (n->source_location_) c->setSourceLocation(*n->source_location_);
      if (n->scope_) c->setScope(*n->scope_);
      for (Value* in : n->inputs()) c->addInput(env(in));
      dst->appendNode(c);
      for (Block* b : n->blocks()) {
        Block* cb = c->addBlock();
        for (Value* in : b->inputs()) {
          Value* v = cb->addInput();
          v->setType(in->type());
          if (in->hasDebugName()) GraphInternals::SetNameUnchecked(v, in->debugNameRaw());
          map[in] = v;
        }
        clone_block(b, cb);
        for (Value* out : b->outputs()) cb->registerOutput(env(out));
      }
    }
  };
  clone_block(block_, g->block_);
  for (Value* out : outputs()) g->registerOutput(env(out));
  GraphInternals::FinishNaming(g.get());
  return g;
}

Value* Graph::findValue(absl::string_view name) const {
  auto it = unique_names_.find(name);
  return it == unique_names_.end() ? nullptr : it->second;
}

const std::string* Graph::internString(absl::string_view s) {
  auto it = strings_.find(s);
  if (it == strings_.end()) it = strings_.emplace(s).first;
  return &*it;
}

WithInsertPoint::WithInsertPoint(Node* n)
    : graph_(n->owningGraph()), prev_(graph_->insertPoint()) {
  graph_->setInsertPoint(n);
}

void GraphInternals::SetNameUnchecked(Value* v, absl::string_view name) {
  Graph* g = v->owningGraph();
  if (!v->name_.empty()) g->unique_names_.erase(absl::string_view(v->name_));
  v->name_ = std::string(name);
  g->unique_names_[absl::string_view(v->name_)] = v;
}

void GraphInternals::ReserveNames(Graph* g, size_t num_names) {
  g->unique_names_.reserve(num_names);
}

void GraphInternals::FinishNaming(Graph* g) {
  size_t next = g->next_unique_;
  for (const auto& [name, v] : g->unique_names_) {
    uint64_t n = 0;
    if (AllDigits(name) && absl::SimpleAtoi(name, &n) && n >= next) next = n + 1;
  }
  g->next_unique_ = next;
}

size_t CountNodes(const Block* b) {
  size_t n = 0;
  for (Node* node : b->nodes()) {
    ++n;
    for (Block* sub : node->blocks()) n += CountNodes(sub);
  }
  return n;
}

}  // namespace kiln::ir
