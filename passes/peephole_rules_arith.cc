// Arithmetic peepholes: identities (x+0, x-0, x*1, x/1, x//1), int add/sub
// chains with constants, and scalar conversions that undo each other.
//
// Tensor identities follow PyTorch's alias-sensitive peephole: with an int
// scalar they apply unless x is known to be bool (which `+ 0` would promote
// to long); with a float scalar, and for division, only when x is known to
// be floating point (otherwise type promotion would change the result's
// dtype). `x + 0` maps -0.0 to +0.0, which PyTorch accepts and so do we.
#include <cstdint>

#include "ir/ir.h"
#include "ir/constants.h"
#include "passes/peephole_rule.h"

namespace kiln::passes {
namespace {

using ir::Node;
using ir::TypeKind;
using ir::Value;

ir::Symbol S(const char* q) { return ir::Symbol::FromQualString(q); }

bool IsInt(const Value* v) { return v->type()->kind() == TypeKind::kInt; }

// `op(x, c)` on two ints where c is the constant `identity` (or, for a
// commutative op, `op(c, x)`): returns x.
Value* IntIdentityOperand(Node* n, int64_t identity, bool commutative) {
  if (n->inputs().size() != 2 || n->outputs().size() != 1 || !IsInt(n->output()) ||
      !IsInt(n->input(0)) || !IsInt(n->input(1))) {
    return nullptr;
  }
  if (ConstantInt(n->input(1)) == identity) return n->input(0);
  if (commutative && ConstantInt(n->input(0)) == identity) return n->input(1);
  return nullptr;
}

// `x op scalar` with the constant `identity` leaves the tensor x unchanged
// (dtype included; see the file comment).
bool ScalarKeepsTensor(const Value* x, const Value* scalar, int64_t identity, bool division) {
  if (!x->type()->is_tensor()) return false;
  const std::optional<DType> dtype = KnownDType(x);
  if (std::optional<int64_t> i = ConstantInt(scalar)) {
    if (*i != identity) return false;
    if (division) return dtype && IsFloatingPoint(*dtype);
    return !dtype || *dtype != DType::kBool;
  }
  if (std::optional<double> d = ConstantDouble(scalar)) {
    if (*d != static_cast<double>(identity)) return false;
    return dtype && IsFloatingPoint(*dtype);
  }
  return false;
}

// aten::add/sub(Tensor x, Scalar 0[, alpha = 1]).
bool TensorAddSubZero(Node* n, RewriteContext& ctx) {
  if (n->outputs().size() != 1 || n->inputs().size() < 2 || n->inputs().size() > 3) return false;
  if (n->inputs().size() == 3 && ConstantInt(n->input(2)) != 1) return false;
  if (!ScalarKeepsTensor(n->input(0), n->input(1), 0, /*division=*/false)) return false;
  return ForwardTo(n, n->input(0), ctx);
}

bool AddZero(Node* n, RewriteContext& ctx) {
  if (Value* x = IntIdentityOperand(n, 0, /*commutative=*/true)) return ForwardTo(n, x, ctx);
  return TensorAddSubZero(n, ctx);
}

bool SubZero(Node* n, RewriteContext& ctx) {
  if (Value* x = IntIdentityOperand(n, 0, /*commutative=*/false)) return ForwardTo(n, x, ctx);
  return TensorAddSubZero(n, ctx);
}

bool MulOne(Node* n, RewriteContext& ctx) {
  if (Value* x = IntIdentityOperand(n, 1, /*commutative=*/true)) return ForwardTo(n, x, ctx);
  if (n->inputs().size() != 2 || n->outputs().size() != 1) return false;
  if (!ScalarKeepsTensor(n->input(0), n->input(1), 1, /*division=*/false)) return false;
  return ForwardTo(n, n->input(0), ctx);
}

bool DivOne(Node* n, RewriteContext& ctx) {
  if (n->inputs().size() != 2 || n->outputs().size() != 1) return false;
  if (!ScalarKeepsTensor(n->input(0), n->input(1), 1, /*division=*/true)) return false;
  return ForwardTo(n, n->input(0), ctx);
}

bool FloorDivOne(Node* n, RewriteContext& ctx) {
  if (Value* x = IntIdentityOperand(n, 1, /*commutative=*/false)) return ForwardTo(n, x, ctx);
  return false;
}

// Splits an int add/sub into (operand, constant): `y + c`, `c + y` (add
// only) or `y - c`. For an add of two constants the first is the operand.
bool SplitConstant(Node* n, Value** operand, int64_t* constant) {
  if (n->inputs().size() != 2 || n->outputs().size() != 1 || !IsInt(n->output()) ||
      !IsInt(n->input(0)) || !IsInt(n->input(1))) {
    return false;
  }
  if (std::optional<int64_t> c = ConstantInt(n->input(1))) {
    *operand = n->input(0);
    *constant = *c;
    return true;
  }
  static const ir::Symbol kAdd = S("aten::add");
  if (n->kind() == kAdd) {
    if (std::optional<int64_t> c = ConstantInt(n->input(0))) {
      *operand = n->input(1);
      *constant = *c;
      return true;
    }
  }
  return false;
}

// (x ± c1) ± c2  ->  x + c  or  x - c (the root keeps its kind), or x when
// the constants cancel.
bool IntAddSubChain(Node* n, RewriteContext& ctx) {
  Value* y = nullptr;
  int64_t c2 = 0;
  if (!SplitConstant(n, &y, &c2)) return false;
  static const ir::Symbol kAdd = S("aten::add");
  static const ir::Symbol kSub = S("aten::sub");
  Node* inner = y->node();
  const bool inner_add = inner->kind() == kAdd;
  if (!inner_add && inner->kind() != kSub) return false;
  Value* x = nullptr;
  int64_t c1 = 0;
  if (!SplitConstant(inner, &x, &c1)) return false;
  // inner = x + s1*c1; root add: x + (s1*c1 + c2); root sub: x - (c2 - s1*c1).
  int64_t signed_c1 = c1;
  if (!inner_add && __builtin_sub_overflow(int64_t{0}, c1, &signed_c1)) return false;
  int64_t c = 0;
  const bool root_add = n->kind() == kAdd;
  if (root_add ? __builtin_add_overflow(signed_c1, c2, &c)
               : __builtin_sub_overflow(c2, signed_c1, &c)) {
    return false;
  }
  if (c == 0) {
    ForwardTo(n, x, ctx);
  } else {
    Value* merged = ctx.Constant(n, ir::IValue::Int(c));
    if (merged == nullptr) return false;
    ctx.ReplaceInput(n, 0, x);
    ctx.ReplaceInput(n, 1, merged);
  }
  if (!inner->hasUses()) ctx.Erase(inner);
  return true;
}

// aten::Int(int) / aten::Float(float) / aten::Bool(bool) -> the input.
bool ConvertToSameType(Node* n, RewriteContext& ctx) {
  if (n->inputs().size() != 1 || n->outputs().size() != 1) return false;
  const TypeKind in = n->input()->type()->kind();
  const TypeKind out = n->output()->type()->kind();
  if (in != out || (in != TypeKind::kInt && in != TypeKind::kFloat && in != TypeKind::kBool)) {
    return false;
  }
  return ForwardTo(n, n->input(), ctx);
}

// aten::Int/Float/...Implicit(prim::NumToTensor(x)) -> x, when x already
// has the result's type.
bool ScalarOfNumToTensor(Node* n, RewriteContext& ctx) {
  if (n->inputs().size() != 1 || n->outputs().size() != 1) return false;
  Node* producer = n->input()->node();
  if (producer->kind() != ir::sym::kNumToTensor || producer->inputs().size() != 1) return false;
  Value* x = producer->input();
  const TypeKind out = n->output()->type()->kind();
  const TypeKind in = x->type()->kind();
  const bool fits = in == out || (out == TypeKind::kNumber &&
                                  (in == TypeKind::kInt || in == TypeKind::kFloat));
  if (!fits) return false;
  return ForwardTo(n, x, ctx);
}

}  // namespace

std::vector<PeepholeRule> ArithPeepholeRules() {
  return {
      {"add_zero", S("aten::add"), AddZero},
      {"sub_zero", S("aten::sub"), SubZero},
      {"mul_one", S("aten::mul"), MulOne},
      {"div_one", S("aten::div"), DivOne},
      {"floordiv_one", S("aten::floordiv"), FloorDivOne},
      {"int_add_sub_chain", S("aten::add"), IntAddSubChain},
      {"int_add_sub_chain", S("aten::sub"), IntAddSubChain},
      {"convert_to_same_type", S("aten::Int"), ConvertToSameType},
      {"convert_to_same_type", S("aten::Float"), ConvertToSameType},
      {"convert_to_same_type", S("aten::Bool"), ConvertToSameType},
      {"scalar_of_num_to_tensor", S("aten::Int"), ScalarOfNumToTensor},
      {"scalar_of_num_to_tensor", S("aten::Float"), ScalarOfNumToTensor},
      {"scalar_of_num_to_tensor", S("aten::IntImplicit"), ScalarOfNumToTensor},
      {"scalar_of_num_to_tensor", S("aten::FloatImplicit"), ScalarOfNumToTensor},
      {"scalar_of_num_to_tensor", S("aten::ScalarImplicit"), ScalarOfNumToTensor},
  };
}

}  // namespace kiln::passes
