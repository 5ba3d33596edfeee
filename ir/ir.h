// The graph IR: Graph -> Block -> Node -> Value, with use lists.
//
// This follows TorchScript's data model (torch/csrc/jit/ir/ir.h):
//  * A Value is produced by exactly one Node (block inputs are the outputs of
//    the block's prim::Param node) and knows its uses.
//  * A Block is a circular list of nodes whose sentinel is its prim::Return
//    node; the return node's inputs are the block outputs.
//  * prim::If has two blocks (then, else) whose outputs map to the node's
//    outputs. prim::Loop's inputs are (max_trip_count, start_cond, carried...),
//    its body inputs (trip_count, carried...), its body outputs
//    (next_cond, carried...), and its outputs the carried values.
//  * A node in a sub-block may use values visible to its parent node; the
//    parent's own outputs are not visible inside its blocks.
//  * Each node has a topological position so `isBefore` is O(1) within a block.
//
// The Graph owns every Node, Value and Block. Nothing here is thread-safe.
#ifndef KILN_IR_IR_H_
#define KILN_IR_IR_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "absl/container/node_hash_set.h"
#include "absl/types/span.h"
#include "ir/attributes.h"
#include "ir/symbol.h"
#include "ir/type.h"

namespace kiln::ir {

class Graph;
class Block;
class Node;
class Value;

struct Use {
  Node* user;
  size_t offset;  // index into user->inputs()
  friend bool operator==(const Use& a, const Use& b) {
    return a.user == b.user && a.offset == b.offset;
  }
};

class Value {
 public:
  Node* node() const { return node_; }
  size_t offset() const { return offset_; }
  size_t unique() const { return unique_; }
  Graph* owningGraph() const;

  const TypePtr& type() const { return type_; }
  Value* setType(TypePtr type) {
    type_ = std::move(type);
    return this;
  }

  // In no particular order (removal swaps the last use into the gap).
  const std::vector<Use>& uses() const { return uses_; }
  bool hasUses() const { return !uses_.empty(); }

  bool hasDebugName() const { return !name_.empty(); }
  // The name if set, otherwise the unique number ("%3" prints for unnamed).
  std::string debugName() const;
  const std::string& debugNameRaw() const { return name_; }
  // The name without a trailing ".N" suffix.
  absl::string_view debugNameBase() const;
  // Sets the name with TorchScript's rules: if another value owns `name`, that
  // other value is renamed to `base.N`. "" clears the name. An all-digit name
  // is kept only when it cannot clash with an unnamed value's number;
  // otherwise the value stays unnamed.
  Value* setDebugName(absl::string_view name);
  static bool isValidName(absl::string_view name);

  void replaceFirstUseWith(Value* v);
  void replaceAllUsesWith(Value* v);
  // Replaces only the uses whose user comes after `node` (see Node::isAfter).
  void replaceAllUsesAfterNodeWith(const Node* node, Value* v);
  // Copies type and debug name.
  Value* copyMetadata(Value* from);

 private:
  friend class Node;
  friend class Graph;
  friend class Block;
  friend class GraphInternals;
  Value(Node* node, size_t offset);

  Node* node_;
  size_t offset_;
  size_t unique_;
  std::vector<Use> uses_;
  std::string name_;
  TypePtr type_;
};

// Range over a block's nodes, in order. Destroying or moving the node the
// iterator is on invalidates it: save `next()` first.
class NodeIterator {
 public:
  NodeIterator(Node* n, bool reverse) : n_(n), reverse_(reverse) {}
  Node* operator*() const { return n_; }
  NodeIterator& operator++();
  friend bool operator!=(const NodeIterator& a, const NodeIterator& b) {
    return a.n_ != b.n_;
  }
  friend bool operator==(const NodeIterator& a, const NodeIterator& b) {
    return a.n_ == b.n_;
  }

 private:
  Node* n_;
  bool reverse_;
};

class NodeRange {
 public:
  NodeRange(Node* begin, Node* end, bool reverse)
      : begin_(begin), end_(end), reverse_(reverse) {}
  NodeIterator begin() const { return NodeIterator(begin_, reverse_); }
  NodeIterator end() const { return NodeIterator(end_, reverse_); }
  bool empty() const { return begin_ == end_; }

 private:
  Node* begin_;
  Node* end_;
  bool reverse_;
};

class Node {
 public:
  Symbol kind() const { return kind_; }
  Graph* owningGraph() const { return graph_; }
  Block* owningBlock() const { return owning_block_; }
  bool inBlockList() const { return next_ != nullptr; }

  absl::Span<Value* const> inputs() const { return inputs_; }
  absl::Span<Value* const> outputs() const { return outputs_; }
  absl::Span<Block* const> blocks() const { return blocks_; }
  Value* input(size_t i = 0) const { return inputs_[i]; }
  Value* output(size_t i = 0) const { return outputs_[i]; }
  Block* block(size_t i) const { return blocks_[i]; }
  bool hasUses() const;

  Node* next() const { return next_; }
  Node* prev() const { return prev_; }

  // --- inputs ---
  Value* addInput(Value* v);
  Value* insertInput(size_t i, Value* v);
  // Replaces input i; returns the old value.
  Value* replaceInput(size_t i, Value* v);
  // Replaces every occurrence of `from` among the inputs.
  void replaceInputWith(Value* from, Value* to);
  void removeInput(size_t i);
  void removeAllInputs();

  // --- outputs ---
  Value* addOutput();
  Value* insertOutput(size_t i);
  // The output must have no uses.
  void eraseOutput(size_t i);

  // --- blocks ---
  Block* addBlock();
  void eraseBlock(size_t i);

  // --- placement; the node must not already be in a list, except for move ---
  Node* insertBefore(Node* n);
  Node* insertAfter(Node* n);
  void moveBefore(Node* n);
  void moveAfter(Node* n);
  bool isBefore(const Node* n) const;
  bool isAfter(const Node* n) const;
  // Unlinks and frees the node, its outputs (which must be unused) and its
  // blocks.
  void destroy();
  // Replaces all uses of each output i with n->output(i).
  void replaceAllUsesWith(Node* n);

  // --- attributes ---
  bool hasAttribute(Symbol name) const;
  bool hasAttributes() const { return !attrs_.empty(); }
  // Requires hasAttribute(name).
  AttributeKind kindOf(Symbol name) const;
  const AttributeValue* findAttribute(Symbol name) const;
  void setAttribute(Symbol name, AttributeValue v);
  bool removeAttribute(Symbol name);
  const std::vector<Attribute>& attributes() const { return attrs_; }
  void copyAttributes(const Node& from) { attrs_ = from.attrs_; }

  // Typed accessors in TorchScript's spelling: `n->i(attr)`, `n->i_(attr, 3)`.
  // The getters require the attribute to exist with that kind.
  int64_t i(Symbol name) const { return get<int64_t>(name); }
  Node* i_(Symbol name, int64_t v) { return set(name, v); }
  double f(Symbol name) const { return get<double>(name); }
  Node* f_(Symbol name, double v) { return set(name, v); }
  const std::string& s(Symbol name) const { return get<std::string>(name); }
  Node* s_(Symbol name, std::string v) { return set(name, std::move(v)); }
  const Tensor& t(Symbol name) const { return get<Tensor>(name); }
  Node* t_(Symbol name, Tensor v) { return set(name, std::move(v)); }
  const TypePtr& ty(Symbol name) const { return get<TypePtr>(name); }
  Node* ty_(Symbol name, TypePtr v) { return set(name, std::move(v)); }
  const std::vector<int64_t>& is(Symbol name) const {
    return get<std::vector<int64_t>>(name);
  }
  Node* is_(Symbol name, std::vector<int64_t> v) { return set(name, std::move(v)); }
  const std::vector<double>& fs(Symbol name) const {
    return get<std::vector<double>>(name);
  }
  Node* fs_(Symbol name, std::vector<double> v) { return set(name, std::move(v)); }
  const std::vector<std::string>& ss(Symbol name) const {
    return get<std::vector<std::string>>(name);
  }
  Node* ss_(Symbol name, std::vector<std::string> v) { return set(name, std::move(v)); }

  // --- debug info ---
  // The text after `# ` in printed IR, e.g. "torch/nn/functional.py:1506:17".
  absl::string_view sourceLocation() const;
  void setSourceLocation(absl::string_view loc);
  // The scope printed as `, scope: a/b`.
  absl::string_view scope() const;
  void setScope(absl::string_view scope);

 private:
  friend class Graph;
  friend class Block;
  friend class Value;
  Node(Graph* graph, Symbol kind);
  ~Node() = default;

  template <typename T>
  const T& get(Symbol name) const {
    return std::get<T>(*findAttribute(name));
  }
  template <typename T>
  Node* set(Symbol name, T v) {
    setAttribute(name, AttributeValue(std::move(v)));
    return this;
  }

  void assignTopoPosition();
  void removeFromList();
  void dropInput(size_t i);  // removes the use of input i (not the slot)
  // Appends the Use of input slot i to v's use list and records its position.
  void linkUse(size_t i, Value* v);

  Symbol kind_;
  Graph* graph_;
  Block* owning_block_ = nullptr;
  Node* next_ = nullptr;
  Node* prev_ = nullptr;
  int64_t topo_position_ = 0;
  // Inline storage: most nodes have few inputs and one output, and every
  // heap allocation costs (fresh pages are slow on small VMs).
  absl::InlinedVector<Value*, 4> inputs_;
  // input_use_pos_[i] is the index of input i's Use in inputs_[i]->uses_, so
  // that removing a use is O(1) (swap with the last use) however many uses
  // the value has. Use lists are therefore unordered.
  absl::InlinedVector<uint32_t, 4> input_use_pos_;
  absl::InlinedVector<Value*, 1> outputs_;
  std::vector<Block*> blocks_;
  std::vector<Attribute> attrs_;
  const std::string* source_location_ = nullptr;  // interned in the graph
  const std::string* scope_ = nullptr;            // interned in the graph
  size_t all_index_ = 0;  // position in Graph::all_nodes_
};

class Block {
 public:
  Graph* owningGraph() const { return graph_; }
  // Null for the graph's top block.
  Node* owningNode() const { return owning_node_; }

  absl::Span<Value* const> inputs() const { return param_->outputs(); }
  absl::Span<Value* const> outputs() const { return return_->inputs(); }
  Node* param_node() const { return param_; }
  Node* return_node() const { return return_; }

  NodeRange nodes() const { return NodeRange(return_->next_, return_, false); }
  NodeRange reverse_nodes() const { return NodeRange(return_->prev_, return_, true); }
  bool empty() const { return return_->next_ == return_; }
  Node* front() const { return return_->next_; }  // == return_node() if empty
  Node* back() const { return return_->prev_; }   // == return_node() if empty

  Value* addInput(absl::string_view name = "");
  Value* insertInput(size_t i, absl::string_view name = "");
  // The input must have no uses.
  void eraseInput(size_t i);
  size_t registerOutput(Value* v);
  void insertOutput(size_t i, Value* v);
  void eraseOutput(size_t i);
  void replaceOutput(size_t i, Value* v);

  Node* appendNode(Node* n) { return n->insertBefore(return_); }
  Node* prependNode(Node* n);

  // Clones `src`'s inputs, nodes and outputs into this (empty) block. Free
  // values of `src` (defined outside it) map through `value_map`.
  void cloneFrom(const Block* src, const std::function<Value*(Value*)>& value_map);

  // Re-spaces all topological positions (called when they get crowded).
  void reIndexTopology();

 private:
  friend class Graph;
  friend class Node;
  Block(Graph* graph, Node* owning_node);

  Graph* graph_;
  Node* owning_node_;
  Node* param_;
  Node* return_;
};

namespace internal {

// Fixed-size object slots carved from 64 KiB chunks, with a free list. Nodes
// and values are allocated here: a graph of a million nodes would otherwise
// make millions of small malloc calls and scatter related objects in memory.
// Under AddressSanitizer every slot is a separate heap block instead, so that
// use-after-free is still caught.
class SlotPool {
 public:
  explicit SlotPool(size_t slot_size);
  ~SlotPool();
  SlotPool(const SlotPool&) = delete;
  SlotPool& operator=(const SlotPool&) = delete;
  void* Allocate();
  void Free(void* p);

 private:
  size_t slot_size_;
  // Unused when ASan builds pass allocations through (ir.cc).
  [[maybe_unused]] std::vector<char*> chunks_;
  [[maybe_unused]] char* cursor_ = nullptr;
  [[maybe_unused]] char* end_ = nullptr;
  [[maybe_unused]] void* free_list_ = nullptr;
};

}  // namespace internal

class Graph {
 public:
  Graph();
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  Block* block() const { return block_; }
  absl::Span<Value* const> inputs() const { return block_->inputs(); }
  absl::Span<Value* const> outputs() const { return block_->outputs(); }
  NodeRange nodes() const { return block_->nodes(); }
  Node* param_node() const { return block_->param_node(); }
  Node* return_node() const { return block_->return_node(); }

  Value* addInput(absl::string_view name = "") { return block_->addInput(name); }
  Value* insertInput(size_t i, absl::string_view name = "") {
    return block_->insertInput(i, name);
  }
  void eraseInput(size_t i) { block_->eraseInput(i); }
  size_t registerOutput(Value* v) { return block_->registerOutput(v); }
  void eraseOutput(size_t i) { block_->eraseOutput(i); }

  // A new node not yet in any block, with `num_outputs` fresh outputs
  // (type Tensor).
  Node* create(Symbol kind, size_t num_outputs = 1);
  Node* create(Symbol kind, absl::Span<Value* const> inputs, size_t num_outputs = 1);
  // A copy of `n` (kind, attributes, types, names, debug info, and its blocks
  // recursively) whose inputs are mapped by `value_map`. Not inserted.
  Node* createClone(const Node* n, const std::function<Value*(Value*)>& value_map,
                    bool copy_blocks = true);

  // Insertion point: new nodes go before `insertPoint()`.
  Node* insertNode(Node* n) { return n->insertBefore(insert_before_); }
  void setInsertPoint(Node* n) { insert_before_ = n; }
  void setInsertPoint(Block* b) { insert_before_ = b->return_node(); }
  Node* insertPoint() const { return insert_before_; }

  // A deep copy with the same names.
  std::unique_ptr<Graph> copy() const;

  // Number of nodes alive in the graph (all blocks, sentinels excluded).
  size_t numNodes() const { return num_nodes_; }
  size_t nextUnique() const { return next_unique_; }
  // Looks a value up by debug name (names set with setDebugName).
  Value* findValue(absl::string_view name) const;

  // Interns a debug string (source location / scope) for the graph's lifetime.
  const std::string* internString(absl::string_view s);

 private:
  friend class Node;
  friend class Value;
  friend class Block;
  friend class GraphInternals;

  Node* allocNode(Symbol kind);
  Value* allocValue(Node* node, size_t offset);
  Block* allocBlock(Node* owning_node);
  void freeNode(Node* n);
  void freeValue(Value* v);
  void freeBlock(Block* b);
  // Frees `b`, every node and value in it (recursively, without recursion)
  // and the Block itself, dropping the uses its nodes make of outer values.
  void destroyBlockTree(Block* b);

  internal::SlotPool node_pool_;
  internal::SlotPool value_pool_;
  Block* block_;
  Node* insert_before_;
  size_t next_unique_ = 0;
  size_t num_nodes_ = 0;
  // Every node the graph owns, sentinels and unattached nodes included, so
  // that teardown frees everything without walking (possibly invalid) use
  // lists or recursing over nested blocks.
  std::vector<Node*> all_nodes_;
  // Keys view the owning Value's name_ (stable: Values never move), so a
  // name is stored once.
  absl::flat_hash_map<absl::string_view, Value*> unique_names_;
  absl::flat_hash_map<std::string, size_t> name_base_suffix_;
  absl::node_hash_set<std::string> strings_;  // stable addresses
};

// RAII: sets the graph's insertion point and restores it on exit.
class WithInsertPoint {
 public:
  explicit WithInsertPoint(Node* n);
  explicit WithInsertPoint(Block* b) : WithInsertPoint(b->return_node()) {}
  ~WithInsertPoint() { graph_->setInsertPoint(prev_); }

 private:
  Graph* graph_;
  Node* prev_;
};

// Privileged operations for deserialisers (the text parser, the proto loader).
class GraphInternals {
 public:
  // Gives `v` the exact name `name`, which may be all digits (a value that
  // PyTorch printed as `%42`). Caller guarantees names are unique; call
  // FinishNaming afterwards.
  static void SetNameUnchecked(Value* v, absl::string_view name);
  // Makes sure that fresh values never print with a number already used as a
  // name.
  static void FinishNaming(Graph* g);
  // Pre-sizes the name table for about `num_names` names (deserialisers know
  // roughly how many values are coming).
  static void ReserveNames(Graph* g, size_t num_names);
};

// Counts nodes in a block and its sub-blocks.
size_t CountNodes(const Block* b);

}  // namespace kiln::ir

#endif  // KILN_IR_IR_H_
