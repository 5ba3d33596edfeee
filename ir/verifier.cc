#include "ir/verifier.h"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace kiln::ir {
namespace {

void AppendValueName(const Value* v, std::string* out) {
  absl::StrAppend(out, "%", v->debugName());
}

std::string ValueName(const Value* v) {
  std::string s;
  AppendValueName(v, &s);
  return s;
}

void AppendAttribute(const Attribute& a, std::string* out) {
  absl::StrAppend(out, a.name.name(), "=");
  const AttributeValue& v = a.value;
  switch (KindOf(v)) {
    case AttributeKind::i: absl::StrAppend(out, std::get<int64_t>(v)); break;
    case AttributeKind::f: absl::StrAppend(out, std::get<double>(v)); break;
    case AttributeKind::s: absl::StrAppend(out, "\"", std::get<std::string>(v), "\""); break;
    case AttributeKind::t: out->append("<Tensor>"); break;
    case AttributeKind::ty: std::get<TypePtr>(v)->AppendTo(out); break;
    default: absl::StrAppend(out, "<", AttributeKindName(KindOf(v)), ">");
  }
}

// The scope walk's record of each value, by unique: the Value* itself while
// in scope, tagged with the low bit once its block has closed. Storing the
// pointer (not a flag) means a foreign value that happens to share a unique
// is never mistaken for the one in scope. A flat array when uniques are
// dense (the normal case), a hash map when a huge explicit numeric name made
// them sparse.
class ValueStates {
 public:
  enum State : uint8_t { kUnseen, kInScope, kClosed, kOther };

  explicit ValueStates(const Graph& g) {
    const size_t dense_limit = std::max<size_t>(size_t{1} << 20, 16 * (g.numNodes() + 1));
    use_dense_ = g.nextUnique() <= dense_limit;
    if (use_dense_) dense_.assign(g.nextUnique(), 0);
  }
  // kOther: the unique is taken by a different value.
  State Get(const Value* v) const {
    uintptr_t e = Slot(v->unique());
    if (e == 0) return kUnseen;
    if (e == Ptr(v)) return kInScope;
    if (e == (Ptr(v) | 1)) return kClosed;
    return kOther;
  }
  void Open(const Value* v) { SetSlot(v->unique(), Ptr(v)); }
  void Close(const Value* v) { SetSlot(v->unique(), Ptr(v) | 1); }

 private:
  static uintptr_t Ptr(const Value* v) { return reinterpret_cast<uintptr_t>(v); }
  uintptr_t Slot(size_t unique) const {
    if (use_dense_) return unique < dense_.size() ? dense_[unique] : 0;
    auto it = sparse_.find(unique);
    return it == sparse_.end() ? 0 : it->second;
  }
  void SetSlot(size_t unique, uintptr_t e) {
    if (use_dense_) {
      if (unique < dense_.size()) dense_[unique] = e;
    } else {
      sparse_[unique] = e;
    }
  }

  bool use_dense_ = true;
  std::vector<uintptr_t> dense_;
  absl::flat_hash_map<size_t, uintptr_t> sparse_;
};

class Verifier {
 public:
  Verifier(const Graph& g, const VerifyOptions& options)
      : g_(g),
        check_schemas_(options.check_schemas),
        ops_(options.ops ? *options.ops : BuiltinOps()),
        states_(g) {}

  absl::Status Run() {
    defined_.reserve(g_.nextUnique() < (size_t{1} << 22) ? g_.nextUnique() : 0);
    frames_.reserve(16);
    if (absl::Status s = EnterBlock(g_.block(), nullptr); !s.ok()) return s;
    while (!frames_.empty()) {
      Frame& f = frames_.back();
      const Node* n = f.cursor;
      if (n == f.block->return_node()) {
        if (absl::Status s = ExitBlock(); !s.ok()) return s;
        continue;
      }
      if (absl::Status s = CheckNode(*n, *f.block); !s.ok()) return s;
      ++visited_nodes_;
      if (!n->blocks().empty()) {
        // Outputs become visible after the blocks (ExitBlock of the last).
        if (absl::Status s = EnterBlock(n->blocks()[0], n); !s.ok()) return s;
        continue;
      }
      if (absl::Status s = DefineOutputs(*n); !s.ok()) return s;
      f.cursor = n->next();
    }
    if (visited_nodes_ != g_.numNodes()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "graph owns ", g_.numNodes(), " nodes but only ", visited_nodes_,
          " are in its blocks (a node was created and never inserted, or unlinked "
          "without destroy())"));
    }
    if (total_uses_ != total_input_slots_) return DiagnoseUseLists();
    return absl::OkStatus();
  }

 private:
  struct Frame {
    const Block* block;
    const Node* cursor;
    size_t defined_mark;  // defined_.size() when the block was entered
    size_t block_index;   // index of `block` in its owner's blocks()
  };

  absl::Status Fail(const Node& n, absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat(what, " in `", DescribeNode(n), "`"));
  }

  absl::Status EnterBlock(const Block* b, const Node* owner) {
    if (b == nullptr) return Fail(*owner, "null block");
    if (b->owningNode() != owner) {
      return owner ? Fail(*owner, "block's owningNode() is not the node that holds it")
                   : absl::InvalidArgumentError("top block has an owning node");
    }
    if (b->owningGraph() != &g_) {
      return owner ? Fail(*owner, "block belongs to another graph")
                   : absl::InvalidArgumentError("top block belongs to another graph");
    }
    const Node* param = b->param_node();
    const Node* ret = b->return_node();
    if (param->kind() != sym::kParam || param->owningBlock() != b) {
      return Fail(*param, "block's input node is not its prim::Param");
    }
    if (!param->inputs().empty()) return Fail(*param, "prim::Param has inputs");
    if (!param->blocks().empty() || !ret->blocks().empty()) {
      return Fail(*param, "block sentinel has blocks");
    }
    if (ret->kind() != sym::kReturn || ret->owningBlock() != b) {
      return Fail(*ret, "block's output node is not its prim::Return");
    }
    if (!ret->outputs().empty()) return Fail(*ret, "prim::Return has outputs");
    size_t index = 0;
    if (owner) {
      while (owner->blocks()[index] != b) ++index;
    }
    frames_.push_back(Frame{b, ret->next(), defined_.size(), index});
    return Define(*param);
  }

  absl::Status ExitBlock() {
    Frame f = frames_.back();
    const Node& ret = *f.block->return_node();
    if (ret.prev()->next() != &ret) return Fail(ret, "broken node list before the block's return");
    if (absl::Status s = CheckInputs(ret); !s.ok()) return s;
    // Values of this block go out of scope.
    for (size_t i = f.defined_mark; i < defined_.size(); ++i) {
      states_.Close(defined_[i]);
    }
    defined_.resize(f.defined_mark);
    frames_.pop_back();
    const Node* owner = f.block->owningNode();
    if (owner == nullptr) return absl::OkStatus();  // the top block
    if (f.block_index + 1 < owner->blocks().size()) {
      return EnterBlock(owner->blocks()[f.block_index + 1], owner);
    }
    if (absl::Status s = DefineOutputs(*owner); !s.ok()) return s;
    frames_.back().cursor = owner->next();
    return absl::OkStatus();
  }

  absl::Status DefineOutputs(const Node& n) { return Define(n); }

  // Brings n's outputs into scope and checks their back-pointers and uses.
  absl::Status Define(const Node& n) {
    absl::Span<Value* const> outs = n.outputs();
    for (size_t i = 0; i < outs.size(); ++i) {
      const Value* v = outs[i];
      if (v == nullptr) return Fail(n, absl::StrCat("output ", i, " is null"));
      if (v->node() != &n || v->offset() != i) {
        return Fail(n, absl::StrCat("output ", i, " (", ValueName(v),
                                    ") has a wrong node()/offset() back-pointer"));
      }
      if (v->unique() >= g_.nextUnique()) {
        return Fail(n, absl::StrCat("output ", ValueName(v), " has unique ", v->unique(),
                                    " >= the graph's nextUnique() ", g_.nextUnique()));
      }
      if (states_.Get(v) != ValueStates::kUnseen) {
        return Fail(n, absl::StrCat("output ", ValueName(v), " reuses unique ", v->unique(),
                                    " (uniques must be unique, and a value defined once)"));
      }
      states_.Open(v);
      defined_.push_back(v);
      if (absl::Status s = CheckUses(*v); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

  absl::Status CheckUses(const Value& v) {
    const std::vector<Use>& uses = v.uses();
    for (const Use& u : uses) {
      if (u.user == nullptr || u.offset >= u.user->inputs().size() ||
          u.user->inputs()[u.offset] != &v) {
        return Fail(*v.node(), absl::StrCat("use list of ", ValueName(&v),
                                            " has a use that does not point back at it",
                                            u.user ? absl::StrCat(" (user `", DescribeNode(*u.user),
                                                                  "`, input ", u.offset, ")")
                                                   : std::string(" (null user)")));
      }
    }
    // Duplicate uses would let a missing one go unnoticed by the count check.
    bool duplicate = false;
    if (uses.size() <= 8) {
      for (size_t i = 0; i < uses.size() && !duplicate; ++i) {
        for (size_t j = i + 1; j < uses.size(); ++j) {
          if (uses[i] == uses[j]) {
            duplicate = true;
            break;
          }
        }
      }
    } else {
      scratch_.clear();
      for (const Use& u : uses) scratch_.emplace_back(u.user, u.offset);
      std::sort(scratch_.begin(), scratch_.end());
      duplicate = std::adjacent_find(scratch_.begin(), scratch_.end()) != scratch_.end();
    }
    if (duplicate) {
      return Fail(*v.node(), absl::StrCat("use list of ", ValueName(&v), " has a duplicate use"));
    }
    total_uses_ += uses.size();
    return absl::OkStatus();
  }

  absl::Status CheckInputs(const Node& n) {
    absl::Span<Value* const> ins = n.inputs();
    total_input_slots_ += ins.size();
    for (size_t i = 0; i < ins.size(); ++i) {
      const Value* v = ins[i];
      if (v == nullptr) return Fail(n, absl::StrCat("input ", i, " is null"));
      switch (states_.Get(v)) {
        case ValueStates::kInScope:
          continue;
        case ValueStates::kClosed:
          return Fail(n, absl::StrCat("input ", i, " (", ValueName(v),
                                      ") is used outside the block that defines it"));
        case ValueStates::kUnseen:
        case ValueStates::kOther:
          break;
      }
      return Fail(n, UndefinedInputMessage(n, i));
    }
    return absl::OkStatus();
  }

  std::string UndefinedInputMessage(const Node& n, size_t i) const {
    const Value* v = n.inputs()[i];
    std::string name = ValueName(v);
    if (v->node() == nullptr || v->node()->owningGraph() != &g_) {
      return absl::StrCat("input ", i, " (", name, ") belongs to another graph");
    }
    for (const Block* b = n.owningBlock(); b && b->owningNode(); b = b->owningNode()->owningBlock()) {
      if (b->owningNode() == v->node()) {
        return absl::StrCat("input ", i, " (", name,
                            ") is an output of the enclosing node, which is not visible in its "
                            "own blocks");
      }
    }
    if (!v->node()->inBlockList() && v->node()->kind() != sym::kParam) {
      return absl::StrCat("input ", i, " (", name, ") is defined by a node that is not in the graph");
    }
    return absl::StrCat("input ", i, " (", name,
                        ") is not defined before this use (defined later, or in a block that "
                        "does not enclose this node)");
  }

  absl::Status CheckNode(const Node& n, const Block& b) {
    if (n.kind() == sym::kParam || n.kind() == sym::kReturn) {
      return Fail(n, "block sentinel kind inside a block's node list");
    }
    if (n.owningBlock() != &b) return Fail(n, "node's owningBlock() is not the block listing it");
    if (n.owningGraph() != &g_) return Fail(n, "node belongs to another graph");
    if (n.prev()->next() != &n || n.next()->prev() != &n) return Fail(n, "broken node list links");
    if (n.prev() != b.return_node() && !n.prev()->isBefore(&n)) {
      return Fail(n, "topological position is not after the previous node's");
    }
    if (absl::Status s = CheckInputs(n); !s.ok()) return s;
    const Symbol kind = n.kind();
    if (kind == sym::kConstant) {
      if (!n.inputs().empty()) return Fail(n, "prim::Constant has inputs");
      if (!n.blocks().empty()) return Fail(n, "prim::Constant has blocks");
    } else if (kind == sym::kIf) {
      if (absl::Status s = CheckIf(n); !s.ok()) return s;
    } else if (kind == sym::kLoop) {
      if (absl::Status s = CheckLoop(n); !s.ok()) return s;
    } else if (check_schemas_) {
      if (absl::Status s = CheckSchema(n); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

  static bool IsKindOrAny(const TypePtr& t, TypeKind k) {
    return t->kind() == k || t->kind() == TypeKind::kAny;
  }

  absl::Status CheckIf(const Node& n) const {
    if (n.inputs().size() != 1) {
      return Fail(n, absl::StrCat("prim::If takes 1 input (the condition), has ", n.inputs().size()));
    }
    if (!IsKindOrAny(n.input(0)->type(), TypeKind::kBool)) {
      return Fail(n, absl::StrCat("prim::If condition must be bool, is ",
                                  n.input(0)->type()->ToString()));
    }
    if (n.blocks().size() != 2) {
      return Fail(n, absl::StrCat("prim::If needs 2 blocks (then, else), has ", n.blocks().size()));
    }
    for (size_t i = 0; i < 2; ++i) {
      const Block* blk = n.blocks()[i];
      if (!blk->inputs().empty()) return Fail(n, absl::StrCat("prim::If block ", i, " has inputs"));
      if (blk->outputs().size() != n.outputs().size()) {
        return Fail(n, absl::StrCat("prim::If block ", i, " has ", blk->outputs().size(),
                                    " outputs but the node has ", n.outputs().size()));
      }
    }
    return absl::OkStatus();
  }

  absl::Status CheckLoop(const Node& n) const {
    const size_t num_in = n.inputs().size();
    if (num_in < 2) {
      return Fail(n, absl::StrCat("prim::Loop takes (max_trip_count, cond, carried...), has ",
                                  num_in, " inputs"));
    }
    const size_t carried = num_in - 2;
    if (!IsKindOrAny(n.input(0)->type(), TypeKind::kInt)) {
      return Fail(n, absl::StrCat("prim::Loop max_trip_count must be int, is ",
                                  n.input(0)->type()->ToString()));
    }
    if (!IsKindOrAny(n.input(1)->type(), TypeKind::kBool)) {
      return Fail(n, absl::StrCat("prim::Loop start condition must be bool, is ",
                                  n.input(1)->type()->ToString()));
    }
    if (n.blocks().size() != 1) {
      return Fail(n, absl::StrCat("prim::Loop needs 1 body block, has ", n.blocks().size()));
    }
    if (n.outputs().size() != carried) {
      return Fail(n, absl::StrCat("prim::Loop has ", carried, " carried values but ",
                                  n.outputs().size(), " outputs"));
    }
    const Block* body = n.blocks()[0];
    if (body->inputs().size() != carried + 1) {
      return Fail(n, absl::StrCat("prim::Loop body must take (trip_count, carried...) = ",
                                  carried + 1, " inputs, has ", body->inputs().size()));
    }
    if (body->outputs().size() != carried + 1) {
      return Fail(n, absl::StrCat("prim::Loop body must return (cond, carried...) = ", carried + 1,
                                  " outputs, has ", body->outputs().size()));
    }
    if (!IsKindOrAny(body->inputs()[0]->type(), TypeKind::kInt)) {
      return Fail(n, "prim::Loop body's trip count input must be int");
    }
    if (!IsKindOrAny(body->outputs()[0]->type(), TypeKind::kBool)) {
      return Fail(n, "prim::Loop body's first output (the condition) must be bool");
    }
    return absl::OkStatus();
  }

  absl::Status CheckSchema(const Node& n) const {
    absl::Span<const std::unique_ptr<Operator>> overloads = ops_.Overloads(n.kind());
    if (overloads.empty() || ops_.Match(n) != nullptr) return absl::OkStatus();
    std::string msg = absl::StrCat("no schema of ", n.kind().qualString(),
                                   " matches the node's inputs (");
    for (size_t i = 0; i < n.inputs().size(); ++i) {
      absl::StrAppend(&msg, i ? ", " : "", n.input(i)->type()->ToString());
    }
    absl::StrAppend(&msg, ") and ", n.outputs().size(), " output(s); candidates:");
    constexpr size_t kMaxListed = 12;
    for (size_t i = 0; i < overloads.size() && i < kMaxListed; ++i) {
      absl::StrAppend(&msg, "\n  ", overloads[i]->schema.ToString());
    }
    if (overloads.size() > kMaxListed) {
      absl::StrAppend(&msg, "\n  ... and ", overloads.size() - kMaxListed, " more");
    }
    return absl::InvalidArgumentError(absl::StrCat("`", DescribeNode(n), "`: ", msg));
  }

  // The totals disagree: find a slot without its Use, slowly (error path).
  absl::Status DiagnoseUseLists() const {
    std::vector<const Block*> work{g_.block()};
    while (!work.empty()) {
      const Block* b = work.back();
      work.pop_back();
      auto check = [&](const Node& n) -> absl::Status {
        for (size_t i = 0; i < n.inputs().size(); ++i) {
          const auto& uses = n.input(i)->uses();
          if (std::find(uses.begin(), uses.end(), Use{const_cast<Node*>(&n), i}) == uses.end()) {
            return Fail(n, absl::StrCat("input ", i, " (", ValueName(n.input(i)),
                                        ") has no matching entry in its use list"));
          }
        }
        return absl::OkStatus();
      };
      for (const Node* n : b->nodes()) {
        if (absl::Status s = check(*n); !s.ok()) return s;
        for (const Block* sub : n->blocks()) work.push_back(sub);
      }
      if (absl::Status s = check(*b->return_node()); !s.ok()) return s;
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "use lists hold ", total_uses_, " uses but nodes have ", total_input_slots_,
        " inputs: some value is used by a node that is not in the graph"));
  }

  const Graph& g_;
  const bool check_schemas_;
  const OpRegistry& ops_;
  ValueStates states_;
  std::vector<Frame> frames_;
  std::vector<const Value*> defined_;  // values in scope, innermost block last
  std::vector<std::pair<const Node*, size_t>> scratch_;
  size_t visited_nodes_ = 0;
  size_t total_uses_ = 0;
  size_t total_input_slots_ = 0;
};

}  // namespace

std::string DescribeNode(const Node& node) {
  std::string out;
  absl::Span<Value* const> outs = node.outputs();
  for (size_t i = 0; i < outs.size(); ++i) {
    if (i) out.append(", ");
    AppendValueName(outs[i], &out);
    out.append(" : ");
    outs[i]->type()->AppendTo(&out);
  }
  out.append(outs.empty() ? "" : " = ");
  absl::StrAppend(&out, node.kind().qualString());
  if (node.hasAttributes()) {
    out.push_back('[');
    bool first = true;
    for (const Attribute& a : node.attributes()) {
      if (!first) out.append(", ");
      first = false;
      AppendAttribute(a, &out);
    }
    out.push_back(']');
  }
  out.push_back('(');
  for (size_t i = 0; i < node.inputs().size(); ++i) {
    if (i) out.append(", ");
    if (node.input(i)) {
      AppendValueName(node.input(i), &out);
    } else {
      out.append("<null>");
    }
  }
  out.push_back(')');
  return out;
}

absl::Status Verify(const Graph& graph, const VerifyOptions& options) {
  return Verifier(graph, options).Run();
}

}  // namespace kiln::ir
