// The lazy IR: what a LazyTensor op records instead of running (PyTorch's
// torch::lazy::Node). A node is one op application with single output: its
// operands (other nodes, shared ownership), its constant arguments (baked into
// the graph and the hash), its output shape, and its DAG hash. Leaves are
// device-data nodes holding a BackendData; they become the computation's
// parameters.
//
// The hash (Node::hash) covers the op, every constant argument, the argument
// layout, the output shape and dtype, and the operands' hashes, so equal
// hashes mean "the same computation up to which data the leaves hold". Which
// leaves hold the *same* data (aliasing) is added by the graph executor.
#ifndef KILN_LAZY_LAZY_IR_H_
#define KILN_LAZY_LAZY_IR_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "lazy/shape.h"

namespace kiln::lazy {

class BackendData;
using BackendDataPtr = std::shared_ptr<BackendData>;

// A constant argument of an op: a Python number, a flag, a dim list, None.
struct Attr {
  enum class Kind : uint8_t { kNone, kBool, kInt, kDouble, kIntList };
  Kind kind = Kind::kNone;
  int64_t i = 0;  // kBool (0/1) and kInt
  double d = 0;
  std::vector<int64_t> ints;

  static Attr None() { return Attr(); }
  static Attr Bool(bool v) {
    Attr a;
    a.kind = Kind::kBool;
    a.i = v ? 1 : 0;
    return a;
  }
  static Attr Int(int64_t v) {
    Attr a;
    a.kind = Kind::kInt;
    a.i = v;
    return a;
  }
  static Attr Double(double v) {
    Attr a;
    a.kind = Kind::kDouble;
    a.d = v;
    return a;
  }
  static Attr IntList(std::vector<int64_t> v) {
    Attr a;
    a.kind = Kind::kIntList;
    a.ints = std::move(v);
    return a;
  }
  uint64_t Hash() const;
  std::string ToString() const;
};

// One schema argument of a node: an operand (index into Node::operands) or
// a constant.
struct Arg {
  int operand = -1;  // >= 0: operands[operand]
  Attr attr;         // when operand < 0
};

// A kind of lazy op. `aten_kind` is what the lowering emits through
// GraphBuilder ("aten::add"; the registry picks the overload from the
// argument types), `overload` the qualified overload whose reference kernel
// runs it eagerly ("aten::add.Tensor"). An op with `lowerable` false is never
// recorded: it runs eagerly at once (the eager fallback).
struct OpKind {
  const char* name;
  const char* aten_kind;
  const char* overload;
  bool lowerable = true;
  uint64_t Hash() const;
};

// The leaf op: a node holding backend data.
const OpKind& DeviceDataOp();

class Node;
using NodePtr = std::shared_ptr<const Node>;

class Node {
 public:
  // An op node; computes the hash from the operands' hashes.
  Node(const OpKind& op, std::vector<NodePtr> operands, std::vector<Arg> args, Shape shape);
  // A device-data leaf. Its hash covers the shape only (not the data).
  explicit Node(BackendDataPtr data, Shape shape);

  const OpKind& op() const { return *op_; }
  const std::vector<NodePtr>& operands() const { return operands_; }
  const std::vector<Arg>& args() const { return args_; }
  const Shape& shape() const { return shape_; }
  uint64_t hash() const { return hash_; }
  bool is_device_data() const { return data_ != nullptr; }
  // Non-null only for device-data leaves.
  const BackendDataPtr& data() const { return data_; }

  // "add(%3, %5, alpha=1) : Float[4, 8]"-like one-liner, for debugging.
  std::string ToString() const;

 private:
  const OpKind* op_;
  std::vector<NodePtr> operands_;
  std::vector<Arg> args_;
  Shape shape_;
  BackendDataPtr data_;
  uint64_t hash_;
};

// The nodes reachable from `roots`, operands before users, each once (an
// iterative DFS: deep chains do not recurse on the stack).
std::vector<const Node*> ComputePostOrder(absl::Span<const Node* const> roots);

}  // namespace kiln::lazy

#endif  // KILN_LAZY_LAZY_IR_H_
