#include "lazy/lazy_ir.h"

#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "support/hash.h"

namespace kiln::lazy {

uint64_t Attr::Hash() const {
  uint64_t h = HashMix(static_cast<uint64_t>(kind) + 0x77);
  switch (kind) {
    case Kind::kNone:
      break;
    case Kind::kBool:
    case Kind::kInt:
      h = HashCombine(h, static_cast<uint64_t>(i));
      break;
    case Kind::kDouble:
      h = HashCombine(h, HashDouble(d));
      break;
    case Kind::kIntList:
      h = HashCombine(h, ints.size());
      for (int64_t v : ints) h = HashCombine(h, static_cast<uint64_t>(v));
      break;
  }
  return h;
}

std::string Attr::ToString() const {
  switch (kind) {
    case Kind::kNone:
      return "None";
    case Kind::kBool:
      return i != 0 ? "True" : "False";
    case Kind::kInt:
      return absl::StrCat(i);
    case Kind::kDouble:
      return absl::StrCat(d);
    case Kind::kIntList:
      return absl::StrCat("[", absl::StrJoin(ints, ", "), "]");
  }
  return "?";
}

uint64_t OpKind::Hash() const { return HashString(name, 0x5a2d296e9ULL); }

const OpKind& DeviceDataOp() {
  static const OpKind op{"device_data", "", "", /*lowerable=*/true};
  return op;
}

Node::Node(const OpKind& op, std::vector<NodePtr> operands, std::vector<Arg> args, Shape shape)
    : op_(&op), operands_(std::move(operands)), args_(std::move(args)), shape_(std::move(shape)) {
  uint64_t h = HashCombine(op_->Hash(), shape_.Hash());
  h = HashCombine(h, args_.size());
  for (const Arg& a : args_) {
    if (a.operand >= 0) {
      h = HashCombine(h, 0x1000 + static_cast<uint64_t>(a.operand));
    } else {
      h = HashCombine(h, a.attr.Hash());
    }
  }
  h = HashCombine(h, operands_.size());
  for (const NodePtr& o : operands_) h = HashCombine(h, o->hash());
  hash_ = h;
}

Node::Node(BackendDataPtr data, Shape shape)
    : op_(&DeviceDataOp()), shape_(std::move(shape)), data_(std::move(data)) {
  hash_ = HashCombine(op_->Hash(), shape_.Hash());
}

std::string Node::ToString() const {
  std::vector<std::string> parts;
  for (const Arg& a : args_) {
    parts.push_back(a.operand >= 0 ? absl::StrCat("%", a.operand) : a.attr.ToString());
  }
  return absl::StrCat(op_->name, "(", absl::StrJoin(parts, ", "), ") : ", shape_.ToString());
}

std::vector<const Node*> ComputePostOrder(absl::Span<const Node* const> roots) {
  std::vector<const Node*> order;
  absl::flat_hash_set<const Node*> done;
  // (node, next operand to visit)
  std::vector<std::pair<const Node*, size_t>> stack;
  for (const Node* root : roots) {
    if (done.contains(root)) continue;
    stack.emplace_back(root, 0);
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      if (next < node->operands().size()) {
        const Node* operand = node->operands()[next++].get();
        if (!done.contains(operand)) stack.emplace_back(operand, 0);
        continue;
      }
      const Node* finished = node;
      stack.pop_back();
      // A node reachable twice may have been pushed twice before finishing.
      if (done.insert(finished).second) order.push_back(finished);
    }
  }
  return order;
}

}  // namespace kiln::lazy
