// A simple, conservative may-alias and mutation analysis shared by the
// passes that delete, merge or hoist nodes (dce, cse, constant_pooling).
//
// Values of mutable type (tensors, lists, dicts, objects, tuples/optionals of
// those, Any) are partitioned into alias classes with union-find:
//  * an output joins the inputs its schema annotation names (`Tensor(a)`
//    views, `Tensor(a!)` in-place results);
//  * prim::If outputs join both branches' outputs; prim::Loop carried values
//    join the initial input, the body input, the body output and the result;
//  * one special *wildcard* class holds everything whose aliasing is not
//    tracked: graph inputs, anything put into a list/tuple/dict or taken out
//    of one (`t(*)`), module attributes, and the inputs and outputs of ops
//    without a usable schema.
// A node *writes* a class when its schema marks an argument `!`; nodes with
// untracked effects (unknown ops, CONSERVATIVE alias kind, calls, SetAttr,
// Python ops) write the wildcard class. Immutable values (int, float, str,
// ...) belong to no class and are never written.
//
// Linear in the graph size, built once per pass run, no recursion.
#ifndef KILN_PASSES_ALIAS_SETS_H_
#define KILN_PASSES_ALIAS_SETS_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/types/span.h"
#include "ir/ir.h"
#include "passes/op_info_cache.h"

namespace kiln::passes {

// prim::If with one input and two blocks whose outputs match the node's;
// prim::Loop (max_trips, cond, carried...) whose body has inputs (trip,
// carried...) and outputs (cond, carried...). Passes treat control flow of
// any other shape as an opaque node with blocks.
bool IsWellFormedIf(const ir::Node& n);
bool IsWellFormedLoop(const ir::Node& n);

// Tensors, containers, objects, Any; not int/float/bool/str/None/Device/...
bool IsMutableType(const ir::Type& type);

// Passes recurse over nested blocks; deeper graphs are rejected with an
// error instead of risking the stack (the text parser stops at 256).
constexpr int kMaxBlockDepth = 1024;

class AliasSets {
 public:
  static constexpr uint32_t kNoClass = 0xffffffffu;

  AliasSets(const ir::Graph& graph, OpInfoCache& ops);

  // The class of a mutable-typed value (a dense id below NumClassIds()), or
  // kNoClass for an immutable value.
  uint32_t ClassOf(const ir::Value* v) const;
  uint32_t WildcardClass() const { return Find(wildcard_); }
  size_t NumClassIds() const { return parent_.size(); }

  // Some node writes the value's class.
  bool IsMutated(const ir::Value* v) const;
  // The value may alias a graph output.
  bool MayAliasGraphOutput(const ir::Value* v) const;
  // May alias a graph output or something untracked (the wildcard class).
  bool Escapes(const ir::Value* v) const;

  // The classes `node` writes (empty for most nodes). With untracked
  // effects this includes WildcardClass().
  std::vector<uint32_t> WrittenClasses(const ir::Node& node) const;
  bool HasAnyWriters() const { return !writes_.empty(); }
  // How deeply blocks nest (0: no node has blocks). Recursive passes refuse
  // graphs nested deeper than kMaxBlockDepth.
  int max_block_depth() const { return max_block_depth_; }
  bool ClassHasWriters(uint32_t cls) const { return flags_[Find(cls)] & kWritten; }

  // Records that every use of `from` now uses `to` (after CSE / pooling
  // merged two nodes): their classes become one.
  void Merge(const ir::Value* from, const ir::Value* to);

 private:
  enum : uint8_t { kWritten = 1, kGraphOutput = 2 };

  uint32_t Index(const ir::Value* v) const;
  uint32_t Find(uint32_t i) const;
  void Union(uint32_t a, uint32_t b);
  void UnionValues(const ir::Value* a, const ir::Value* b);
  void MakeWildcard(const ir::Value* v);
  void AddWrite(const ir::Node& node, const ir::Value* v);
  void AddWildcardWrite(const ir::Node& node);

  void AnalyzeNode(const ir::Node& node, OpInfoCache& ops);
  void AnalyzeFromSchema(const ir::Node& node, const ir::Operator& op);
  void AnalyzeUntracked(const ir::Node& node, const OpInfo& info);

  // Path-compressed lazily; mutable so that queries can compress.
  mutable std::vector<uint32_t> parent_;
  std::vector<uint8_t> flags_;  // per root after Finish()
  uint32_t wildcard_;
  int max_block_depth_ = 0;
  // node -> written class ids (value indices until Finish() maps them).
  absl::flat_hash_map<const ir::Node*, std::vector<uint32_t>> writes_;
};

}  // namespace kiln::passes

#endif  // KILN_PASSES_ALIAS_SETS_H_
