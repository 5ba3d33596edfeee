// Builders for hand-written loop IR in tests (expressions and contiguous
// layouts), shared by the device implementations' tests. The lowering's own
// builders live in its .cc files, which device tests need not link.
#ifndef KILN_LOWERING_TEST_GRAPHS_H_
#define KILN_LOWERING_TEST_GRAPHS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "lowering/loop_ir.h"
#include "support/dtype.h"

namespace kiln::lowering::testing {

// Tests bring these in with `using namespace lowering::testing`.
using lowering::Expr;
using lowering::ExprOp;
using lowering::ExprPtr;

inline ExprPtr Make(ExprOp op, DType dtype, std::vector<ExprPtr> args = {}) {
  auto e = std::make_shared<Expr>();
  e->op = op;
  e->dtype = dtype;
  e->args = std::move(args);
  return e;
}
inline ExprPtr V(int i) {
  auto e = std::make_shared<Expr>();
  e->op = ExprOp::kIndexVar;
  e->dtype = DType::kInt64;
  e->var = i;
  return e;
}
inline ExprPtr I(int64_t v) {
  auto e = std::make_shared<Expr>();
  e->op = ExprOp::kIntConst;
  e->dtype = DType::kInt64;
  e->int_value = v;
  return e;
}
inline ExprPtr F(double v) {
  auto e = std::make_shared<Expr>();
  e->op = ExprOp::kFloatConst;
  e->dtype = DType::kFloat32;
  e->float_value = v;
  return e;
}
inline ExprPtr Ld(const std::string& buffer, ExprPtr index, DType dtype = DType::kFloat32) {
  auto e = std::make_shared<Expr>();
  e->op = ExprOp::kLoad;
  e->dtype = dtype;
  e->buffer = buffer;
  e->args = {std::move(index)};
  return e;
}
inline ExprPtr Bin(ExprOp op, ExprPtr a, ExprPtr b) {
  const DType t = a->dtype == DType::kInt64 && b->dtype == DType::kInt64 ? DType::kInt64 : DType::kFloat32;
  return Make(op, t, {a, b});
}
inline ExprPtr Un(ExprOp op, ExprPtr a) {
  const DType t = a->dtype;
  return Make(op, t, {a});
}
// Row-major flat index of (v_first, v_first+1) over [rows, cols].
inline ExprPtr Flat2(int first, int64_t cols) {
  return Bin(ExprOp::kAdd, Bin(ExprOp::kMul, V(first), I(cols)), V(first + 1));
}

inline Layout Contig(std::vector<int64_t> sizes, DType dtype = DType::kFloat32) {
  Layout l;
  l.dtype = dtype;
  l.sizes = sizes;
  l.strides.assign(sizes.size(), 1);
  for (size_t i = sizes.size(); i-- > 1;) l.strides[i - 1] = l.strides[i] * sizes[i];
  return l;
}

}  // namespace kiln::lowering::testing

#endif  // KILN_LOWERING_TEST_GRAPHS_H_
