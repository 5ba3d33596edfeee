// ONNX converters of the control family: If / Loop / Scan / SequenceMap
// (subgraphs become prim::If and prim::Loop blocks), sequences (lists of
// tensors), optionals (None or the element) and the recurrent layers.
//
// Loop-shaped ops share one pattern: a prim::Loop carries the ONNX state plus
// one list per scan output; each iteration appends to the lists with
// kiln::sequence_insert, and after the loop kiln::stack_scan_outputs stacks
// each list along its new axis.
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "frontend/onnx/ops_families.h"
#include "frontend/onnx/tensor_proto.h"
#include "ir/ir.h"
#include "ir/symbol.h"
#include "ir/type.h"
#include "support/status.h"

namespace kiln::frontend::onnx_import {
namespace {

using ir::Type;
using ir::TypeKind;
using ir::TypePtr;
using ir::Value;

// ------------------------------------------------------------ types

// The type a loop-carried value keeps across iterations: tensors may change
// shape from one iteration to the next, so only their dtype is kept.
TypePtr CarriedType(const TypePtr& t) {
  if (t->is_tensor()) {
    ir::TensorInfo info;
    info.dtype = t->tensor().dtype;
    return Type::TensorWith(std::move(info));
  }
  if (t->kind() == TypeKind::kList) return Type::List(CarriedType(t->contained()[0]));
  if (t->kind() == TypeKind::kOptional) return Type::Optional(CarriedType(t->contained()[0]));
  return t;
}

// The type of a prim::If output whose branches produce `a` and `b`.
TypePtr UnifyTypes(const TypePtr& a, const TypePtr& b) {
  if (ir::IsSubtypeOf(a, b)) return b;
  if (ir::IsSubtypeOf(b, a)) return a;
  if (a->is_tensor() && b->is_tensor()) {
    ir::TensorInfo info;
    if (a->tensor().dtype == b->tensor().dtype) info.dtype = a->tensor().dtype;
    return Type::TensorWith(std::move(info));
  }
  if (a->kind() == TypeKind::kNone) {
    return b->kind() == TypeKind::kOptional ? b : Type::Optional(b);
  }
  if (b->kind() == TypeKind::kNone) {
    return a->kind() == TypeKind::kOptional ? a : Type::Optional(a);
  }
  if (a->kind() == TypeKind::kList && b->kind() == TypeKind::kList) {
    return Type::List(UnifyTypes(a->contained()[0], b->contained()[0]));
  }
  return Type::Any();
}

bool IsListType(const TypePtr& t) { return t->kind() == TypeKind::kList; }

// ------------------------------------------------------------ helpers

// A bool tensor (ONNX's condition) as a TorchScript bool.
absl::StatusOr<Value*> ToBool(GraphBuilder& b, Value* t) { return b.Op("aten::Bool", {t}); }

// A TorchScript int as ONNX's 0-dim int64 tensor.
absl::StatusOr<Value*> IntToTensor(GraphBuilder& b, Value* i) {
  ASSIGN_OR_RETURN(Value * t, b.Op("prim::NumToTensor", {i}));
  GraphBuilder::RefineType(t, GraphBuilder::TensorTy(DType::kInt64, {}));
  return t;
}

Value* EmptyTensorList(GraphBuilder& b) { return b.List(Type::Tensor(), {}); }

// Ends a loop body: registers the outputs and returns to `outer`.
void FinishBody(GraphBuilder& b, ir::Block* body, ir::Block* outer,
                absl::Span<Value* const> outputs) {
  GraphBuilder::SetBlockOutputs(body, outputs);
  b.SetInsertionBlock(outer);
}

// A prim::Loop whose body inputs and outputs are typed for carrying values
// whose shape may change per iteration.
ir::Node* CarryingLoop(GraphBuilder& b, Value* trips, Value* cond,
                       absl::Span<Value* const> carried) {
  ir::Node* loop = b.Loop(trips, cond, carried);
  for (size_t i = 0; i < carried.size(); ++i) {
    const TypePtr t = CarriedType(carried[i]->type());
    loop->block(0)->inputs()[1 + i]->setType(t);
    loop->output(i)->setType(t);
  }
  return loop;
}

// Stacks the list a loop accumulated for scan output `out` of its body along
// a new `axis`. The body's declared dtype and shape (when complete) give the
// result of a loop that ran zero times.
absl::StatusOr<Value*> StackScanOutput(GraphBuilder& b, Value* list, int64_t axis,
                                       const onnx::ValueInfoProto& out) {
  int64_t dtype_code = -1;
  Value* shape = b.None();
  if (out.type().has_tensor_type()) {
    const onnx::TypeProto::Tensor& tt = out.type().tensor_type();
    absl::StatusOr<DType> dtype = DTypeFromOnnx(tt.elem_type());
    if (dtype.ok()) dtype_code = DTypeCode(*dtype);
    if (tt.has_shape()) {
      std::vector<int64_t> dims;
      bool complete = true;
      for (const auto& d : tt.shape().dim()) {
        if (!d.has_dim_value() || d.dim_value() < 0) complete = false;
        dims.push_back(d.dim_value());
      }
      if (complete) shape = b.IntList(dims);
    }
  }
  return b.Op("kiln::stack_scan_outputs", {list, b.Int(axis), b.Int(dtype_code), shape});
}

// ------------------------------------------------------------ If

absl::Status ConvertIf(ConvertContext& c) {
  GraphBuilder& b = c.b();
  ASSIGN_OR_RETURN(Value * cond_t, c.RequiredInput(0));
  ASSIGN_OR_RETURN(Value * cond, ToBool(b, cond_t));
  const onnx::GraphProto* then_g = c.AttrGraph("then_branch");
  const onnx::GraphProto* else_g = c.AttrGraph("else_branch");
  if (then_g == nullptr || else_g == nullptr) {
    return c.Error("needs the then_branch and else_branch graph attributes");
  }
  if (then_g->output_size() != else_g->output_size()) {
    return c.Error(absl::StrCat("then_branch has ", then_g->output_size(),
                                " outputs but else_branch has ", else_g->output_size()));
  }
  if (then_g->input_size() != 0 || else_g->input_size() != 0) {
    return c.Error("If branches take no inputs");
  }
  const size_t n = static_cast<size_t>(then_g->output_size());
  ir::Node* node = b.If(cond, n);
  ASSIGN_OR_RETURN(std::vector<Value*> then_out, c.ConvertSubgraph("then_branch", node->block(0)));
  ASSIGN_OR_RETURN(std::vector<Value*> else_out, c.ConvertSubgraph("else_branch", node->block(1)));
  GraphBuilder::SetBlockOutputs(node->block(0), then_out);
  GraphBuilder::SetBlockOutputs(node->block(1), else_out);
  for (size_t i = 0; i < n; ++i) {
    node->output(i)->setType(UnifyTypes(then_out[i]->type(), else_out[i]->type()));
    RETURN_IF_ERROR(c.SetOutput(static_cast<int>(i), node->output(i)));
  }
  return absl::OkStatus();
}

// ------------------------------------------------------------ Loop

absl::Status ConvertLoop(ConvertContext& c) {
  GraphBuilder& b = c.b();
  const onnx::GraphProto* body_g = c.AttrGraph("body");
  if (body_g == nullptr) return c.Error("needs the body graph attribute");
  const int num_carried = c.num_inputs() - 2;
  if (num_carried < 0) return c.Error("takes (M, cond, v_initial...)");
  if (body_g->input_size() != num_carried + 2) {
    return c.Error(absl::StrCat("the body takes ", body_g->input_size(),
                                " inputs; expected 2 + ", num_carried, " loop-carried"));
  }
  const int num_scan = body_g->output_size() - 1 - num_carried;
  if (num_scan < 0) {
    return c.Error(absl::StrCat("the body returns ", body_g->output_size(),
                                " outputs; expected at least 1 + ", num_carried));
  }
  std::vector<Value*> initial;
  for (int i = 0; i < num_carried; ++i) {
    ASSIGN_OR_RETURN(Value * v, c.RequiredInput(2 + i));
    initial.push_back(v);
  }

  // A missing M loops until the condition fails; a missing cond is true and
  // the body's condition output is ignored (ONNX's "for loop" form).
  Value* trips;
  if (c.has_input(0)) {
    ASSIGN_OR_RETURN(trips, b.Op("aten::Int", {c.input(0)}));
  } else {
    trips = b.Int(std::numeric_limits<int64_t>::max());
  }
  const bool has_cond = c.has_input(1);
  Value* cond_t;
  Value* cond;
  if (has_cond) {
    cond_t = c.input(1);
    ASSIGN_OR_RETURN(cond, ToBool(b, cond_t));
  } else {
    cond_t = b.TensorConstant(Tensor::ScalarInt(1, DType::kBool));
    cond = b.Bool(true);
  }

  // Carried: (cond tensor, v..., one list per scan output).
  std::vector<Value*> carried = {cond_t};
  carried.insert(carried.end(), initial.begin(), initial.end());
  for (int k = 0; k < num_scan; ++k) carried.push_back(EmptyTensorList(b));
  ir::Block* outer = b.insertion_block();
  ir::Node* loop = CarryingLoop(b, trips, cond, carried);
  ir::Block* body = loop->block(0);
  b.SetInsertionBlock(body);

  ASSIGN_OR_RETURN(Value * iteration, IntToTensor(b, body->inputs()[0]));
  std::vector<Value*> body_inputs = {iteration};
  for (int i = 0; i <= num_carried; ++i) body_inputs.push_back(body->inputs()[1 + i]);
  absl::StatusOr<std::vector<Value*>> outs = c.ConvertSubgraphInline("body", body_inputs);
  if (!outs.ok()) {
    b.SetInsertionBlock(outer);
    return outs.status();
  }
  std::vector<Value*> results;
  Value* next_cond_t = (*outs)[0];
  if (has_cond) {
    ASSIGN_OR_RETURN(Value * next_cond, ToBool(b, next_cond_t));
    results.push_back(next_cond);
  } else {
    results.push_back(b.Bool(true));
  }
  results.push_back(next_cond_t);
  for (int i = 0; i < num_carried; ++i) results.push_back((*outs)[1 + i]);
  for (int k = 0; k < num_scan; ++k) {
    Value* list = body->inputs()[2 + num_carried + k];
    ASSIGN_OR_RETURN(Value * appended,
                     b.Op("kiln::sequence_insert", {list, (*outs)[1 + num_carried + k]}));
    results.push_back(appended);
  }
  FinishBody(b, body, outer, results);

  for (int i = 0; i < num_carried; ++i) RETURN_IF_ERROR(c.SetOutput(i, loop->output(1 + i)));
  for (int k = 0; k < num_scan; ++k) {
    if (!c.has_output(num_carried + k)) continue;
    ASSIGN_OR_RETURN(Value * stacked,
                     StackScanOutput(b, loop->output(1 + num_carried + k), 0,
                                     body_g->output(1 + num_carried + k)));
    RETURN_IF_ERROR(c.SetOutput(num_carried + k, stacked));
  }
  return absl::OkStatus();
}

// ------------------------------------------------------------ Scan

struct ScanAxes {
  std::vector<int64_t> input_axes, input_reverse, output_axes, output_reverse;
};

// Emits a scan (opset-9 semantics, no batch axis) in the current insertion
// block: returns the final states followed by the scan outputs.
absl::StatusOr<std::vector<Value*>> EmitScan(ConvertContext& c, absl::Span<Value* const> states,
                                             absl::Span<Value* const> scans,
                                             const ScanAxes& axes) {
  GraphBuilder& b = c.b();
  const onnx::GraphProto* body_g = c.AttrGraph("body");
  if (body_g == nullptr) return c.Error("needs the body graph attribute");
  const size_t n = states.size();
  const size_t m = scans.size();
  if (m == 0) return c.Error("needs at least one scan input");
  if (static_cast<size_t>(body_g->input_size()) != n + m) {
    return c.Error(absl::StrCat("the body takes ", body_g->input_size(), " inputs; expected ",
                                n, " states + ", m, " scan inputs"));
  }
  if (static_cast<size_t>(body_g->output_size()) < n) {
    return c.Error("the body returns fewer outputs than there are states");
  }
  const size_t k_out = static_cast<size_t>(body_g->output_size()) - n;

  // Each scan input as a list of its slices along the scan axis.
  std::vector<Value*> slices;
  for (size_t j = 0; j < m; ++j) {
    ASSIGN_OR_RETURN(Value * list, b.Op("kiln::split_to_sequence",
                                        {scans[j], b.None(), b.Int(axes.input_axes[j]), b.Int(0)}));
    slices.push_back(list);
  }
  ASSIGN_OR_RETURN(Value * length, b.Op("aten::len", {slices[0]}));

  std::vector<Value*> carried(states.begin(), states.end());
  for (size_t k = 0; k < k_out; ++k) carried.push_back(EmptyTensorList(b));
  ir::Block* outer = b.insertion_block();
  ir::Node* loop = CarryingLoop(b, length, b.Bool(true), carried);
  ir::Block* body = loop->block(0);
  b.SetInsertionBlock(body);

  auto build_body = [&]() -> absl::StatusOr<std::vector<Value*>> {
    Value* i = body->inputs()[0];
    ASSIGN_OR_RETURN(Value * forward, IntToTensor(b, i));
    Value* backward = nullptr;  // -1 - i: counts from the end
    std::vector<Value*> body_inputs;
    for (size_t s = 0; s < n; ++s) body_inputs.push_back(body->inputs()[1 + s]);
    for (size_t j = 0; j < m; ++j) {
      Value* position = forward;
      if (axes.input_reverse[j]) {
        if (backward == nullptr) {
          ASSIGN_OR_RETURN(Value * neg, b.Op("aten::neg", {i}));
          ASSIGN_OR_RETURN(Value * minus_one, b.Op("aten::sub", {neg, b.Int(1)}));
          ASSIGN_OR_RETURN(backward, IntToTensor(b, minus_one));
        }
        position = backward;
      }
      ASSIGN_OR_RETURN(Value * element, b.Op("kiln::sequence_at", {slices[j], position}));
      body_inputs.push_back(element);
    }
    ASSIGN_OR_RETURN(std::vector<Value*> outs, c.ConvertSubgraphInline("body", body_inputs));
    std::vector<Value*> results = {b.Bool(true)};
    for (size_t s = 0; s < n; ++s) results.push_back(outs[s]);
    for (size_t k = 0; k < k_out; ++k) {
      Value* list = body->inputs()[1 + n + k];
      Value* at = axes.output_reverse[k] ? b.TensorConstant(Tensor::ScalarInt(0)) : b.None();
      ASSIGN_OR_RETURN(Value * appended, b.Op("kiln::sequence_insert", {list, outs[n + k], at}));
      results.push_back(appended);
    }
    return results;
  };
  absl::StatusOr<std::vector<Value*>> results = build_body();
  if (!results.ok()) {
    b.SetInsertionBlock(outer);
    return results.status();
  }
  FinishBody(b, body, outer, *results);

  std::vector<Value*> outs;
  for (size_t s = 0; s < n; ++s) outs.push_back(loop->output(s));
  for (size_t k = 0; k < k_out; ++k) {
    ASSIGN_OR_RETURN(Value * stacked,
                     StackScanOutput(b, loop->output(n + k), axes.output_axes[k],
                                     body_g->output(static_cast<int>(n + k))));
    outs.push_back(stacked);
  }
  return outs;
}

// An attribute list of `count` entries, `def` when absent.
absl::StatusOr<std::vector<int64_t>> ScanAttr(ConvertContext& c, absl::string_view name,
                                              size_t count, int64_t def) {
  std::vector<int64_t> v = c.AttrInts(name, {});
  if (!c.HasAttr(name)) v.assign(count, def);
  if (v.size() != count) {
    return c.Error(absl::StrCat("attribute ", name, " has ", v.size(), " entries; expected ",
                                count));
  }
  for (int64_t d : v) {
    if (absl::EndsWith(name, "directions") && d != 0 && d != 1) {
      return c.Error(absl::StrCat("attribute ", name, " entries must be 0 or 1"));
    }
  }
  return v;
}

absl::StatusOr<size_t> NumScanOutputs(ConvertContext& c, size_t num_states) {
  const onnx::GraphProto* body_g = c.AttrGraph("body");
  if (body_g == nullptr) return c.Error("needs the body graph attribute");
  if (static_cast<size_t>(body_g->output_size()) < num_states) {
    return c.Error("the body returns fewer outputs than there are states");
  }
  return static_cast<size_t>(body_g->output_size()) - num_states;
}

absl::Status ConvertScan9(ConvertContext& c) {
  ASSIGN_OR_RETURN(int64_t m, c.RequiredAttrInt("num_scan_inputs"));
  const int total = c.num_inputs();
  if (m <= 0 || m > total) return c.Error("num_scan_inputs must be in [1, number of inputs]");
  const size_t n = static_cast<size_t>(total - m);
  std::vector<Value*> states, scans;
  for (int i = 0; i < total; ++i) {
    ASSIGN_OR_RETURN(Value * v, c.RequiredInput(i));
    (static_cast<size_t>(i) < n ? states : scans).push_back(v);
  }
  ASSIGN_OR_RETURN(size_t k_out, NumScanOutputs(c, n));
  ScanAxes axes;
  ASSIGN_OR_RETURN(axes.input_axes, ScanAttr(c, "scan_input_axes", scans.size(), 0));
  ASSIGN_OR_RETURN(axes.input_reverse, ScanAttr(c, "scan_input_directions", scans.size(), 0));
  ASSIGN_OR_RETURN(axes.output_axes, ScanAttr(c, "scan_output_axes", k_out, 0));
  ASSIGN_OR_RETURN(axes.output_reverse, ScanAttr(c, "scan_output_directions", k_out, 0));
  ASSIGN_OR_RETURN(std::vector<Value*> outs, EmitScan(c, states, scans, axes));
  for (size_t i = 0; i < outs.size(); ++i) {
    RETURN_IF_ERROR(c.SetOutput(static_cast<int>(i), outs[i]));
  }
  return absl::OkStatus();
}

// Opset 8: every input and output has a leading batch axis, and an optional
// first input sequence_lens. Each batch entry is scanned in an outer loop.
absl::Status ConvertScan8(ConvertContext& c) {
  GraphBuilder& b = c.b();
  if (c.has_input(0)) {
    return c.Unsupported("sequence_lens (per-batch scan lengths) is not supported");
  }
  ASSIGN_OR_RETURN(int64_t m, c.RequiredAttrInt("num_scan_inputs"));
  const int total = c.num_inputs() - 1;
  if (m <= 0 || m > total) return c.Error("num_scan_inputs must be in [1, number of inputs - 1]");
  const size_t n = static_cast<size_t>(total - m);
  ASSIGN_OR_RETURN(size_t k_out, NumScanOutputs(c, n));
  ScanAxes axes;
  ASSIGN_OR_RETURN(axes.input_reverse, ScanAttr(c, "directions", static_cast<size_t>(m), 0));
  axes.input_axes.assign(static_cast<size_t>(m), 0);
  axes.output_axes.assign(k_out, 0);
  axes.output_reverse.assign(k_out, 0);

  // Inputs split along the batch axis.
  std::vector<Value*> batches;
  for (int i = 0; i < total; ++i) {
    ASSIGN_OR_RETURN(Value * v, c.RequiredInput(1 + i));
    ASSIGN_OR_RETURN(Value * list,
                     b.Op("kiln::split_to_sequence", {v, b.None(), b.Int(0), b.Int(0)}));
    batches.push_back(list);
  }
  ASSIGN_OR_RETURN(Value * batch, b.Op("aten::len", {batches.back()}));
  std::vector<Value*> carried;
  for (size_t k = 0; k < n + k_out; ++k) carried.push_back(EmptyTensorList(b));
  ir::Block* outer = b.insertion_block();
  ir::Node* loop = CarryingLoop(b, batch, b.Bool(true), carried);
  ir::Block* body = loop->block(0);
  b.SetInsertionBlock(body);
  auto build_body = [&]() -> absl::StatusOr<std::vector<Value*>> {
    ASSIGN_OR_RETURN(Value * position, IntToTensor(b, body->inputs()[0]));
    std::vector<Value*> states, scans;
    for (int i = 0; i < total; ++i) {
      ASSIGN_OR_RETURN(Value * entry, b.Op("kiln::sequence_at", {batches[i], position}));
      (static_cast<size_t>(i) < n ? states : scans).push_back(entry);
    }
    ASSIGN_OR_RETURN(std::vector<Value*> outs, EmitScan(c, states, scans, axes));
    std::vector<Value*> results = {b.Bool(true)};
    for (size_t k = 0; k < outs.size(); ++k) {
      ASSIGN_OR_RETURN(Value * appended,
                       b.Op("kiln::sequence_insert", {body->inputs()[1 + k], outs[k]}));
      results.push_back(appended);
    }
    return results;
  };
  absl::StatusOr<std::vector<Value*>> results = build_body();
  if (!results.ok()) {
    b.SetInsertionBlock(outer);
    return results.status();
  }
  FinishBody(b, body, outer, *results);
  for (size_t k = 0; k < n + k_out; ++k) {
    if (!c.has_output(static_cast<int>(k))) continue;
    ASSIGN_OR_RETURN(Value * stacked, b.Op("kiln::concat_from_sequence",
                                           {loop->output(k), b.Int(0), b.Int(1)}));
    RETURN_IF_ERROR(c.SetOutput(static_cast<int>(k), stacked));
  }
  return absl::OkStatus();
}

// ------------------------------------------------------------ SequenceMap

absl::Status ConvertSequenceMap(ConvertContext& c) {
  GraphBuilder& b = c.b();
  const onnx::GraphProto* body_g = c.AttrGraph("body");
  if (body_g == nullptr) return c.Error("needs the body graph attribute");
  if (body_g->input_size() != c.num_inputs()) {
    return c.Error(absl::StrCat("the body takes ", body_g->input_size(), " inputs; the node has ",
                                c.num_inputs()));
  }
  std::vector<Value*> inputs;
  for (int i = 0; i < c.num_inputs(); ++i) {
    ASSIGN_OR_RETURN(Value * v, c.RequiredInput(i));
    inputs.push_back(v);
  }
  const size_t k_out = static_cast<size_t>(body_g->output_size());
  ASSIGN_OR_RETURN(Value * length, b.Op("aten::len", {inputs[0]}));
  std::vector<Value*> carried;
  for (size_t k = 0; k < k_out; ++k) carried.push_back(EmptyTensorList(b));
  ir::Block* outer = b.insertion_block();
  ir::Node* loop = CarryingLoop(b, length, b.Bool(true), carried);
  ir::Block* body = loop->block(0);
  b.SetInsertionBlock(body);
  auto build_body = [&]() -> absl::StatusOr<std::vector<Value*>> {
    ASSIGN_OR_RETURN(Value * position, IntToTensor(b, body->inputs()[0]));
    std::vector<Value*> body_inputs;
    for (size_t i = 0; i < inputs.size(); ++i) {
      // The first input is the sequence mapped over; further sequences are
      // walked alongside it and tensors are passed whole.
      if (i == 0 || IsListType(inputs[i]->type())) {
        ASSIGN_OR_RETURN(Value * element, b.Op("kiln::sequence_at", {inputs[i], position}));
        body_inputs.push_back(element);
      } else {
        body_inputs.push_back(inputs[i]);
      }
    }
    ASSIGN_OR_RETURN(std::vector<Value*> outs, c.ConvertSubgraphInline("body", body_inputs));
    std::vector<Value*> results = {b.Bool(true)};
    for (size_t k = 0; k < k_out; ++k) {
      ASSIGN_OR_RETURN(Value * appended,
                       b.Op("kiln::sequence_insert", {body->inputs()[1 + k], outs[k]}));
      results.push_back(appended);
    }
    return results;
  };
  absl::StatusOr<std::vector<Value*>> results = build_body();
  if (!results.ok()) {
    b.SetInsertionBlock(outer);
    return results.status();
  }
  FinishBody(b, body, outer, *results);
  for (size_t k = 0; k < k_out; ++k) {
    RETURN_IF_ERROR(c.SetOutput(static_cast<int>(k), loop->output(k)));
  }
  return absl::OkStatus();
}

// ------------------------------------------------------------ sequences

Value* InputOrNone(ConvertContext& c, int i) {
  return c.has_input(i) ? c.input(i) : c.b().None();
}

void RegisterSequences(ConverterRegistry& r) {
  r.Add("SequenceConstruct", 11, [](ConvertContext& c) -> absl::Status {
    std::vector<Value*> elems;
    TypePtr elem_type = Type::Tensor();
    for (int i = 0; i < c.num_inputs(); ++i) {
      ASSIGN_OR_RETURN(Value * v, c.RequiredInput(i));
      elems.push_back(v);
    }
    if (!elems.empty() && elems[0]->type()->is_tensor() && elems[0]->type()->tensor().dtype) {
      ir::TensorInfo info;
      info.dtype = elems[0]->type()->tensor().dtype;
      elem_type = Type::TensorWith(std::move(info));
    }
    return c.SetOutput(0, c.b().List(elem_type, elems));
  });
  r.Add("SequenceEmpty", 11, [](ConvertContext& c) -> absl::Status {
    return c.SetOutput(0, EmptyTensorList(c.b()));
  });
  r.Add("SequenceAt", 11, [](ConvertContext& c) -> absl::Status {
    ASSIGN_OR_RETURN(Value * seq, c.RequiredInput(0));
    ASSIGN_OR_RETURN(Value * pos, c.RequiredInput(1));
    ASSIGN_OR_RETURN(Value * v, c.b().Op("kiln::sequence_at", {seq, pos}));
    return c.SetOutput(0, v);
  });
  r.Add("SequenceInsert", 11, [](ConvertContext& c) -> absl::Status {
    ASSIGN_OR_RETURN(Value * seq, c.RequiredInput(0));
    ASSIGN_OR_RETURN(Value * t, c.RequiredInput(1));
    ASSIGN_OR_RETURN(Value * v, c.b().Op("kiln::sequence_insert", {seq, t, InputOrNone(c, 2)}));
    return c.SetOutput(0, v);
  });
  r.Add("SequenceErase", 11, [](ConvertContext& c) -> absl::Status {
    ASSIGN_OR_RETURN(Value * seq, c.RequiredInput(0));
    ASSIGN_OR_RETURN(Value * v, c.b().Op("kiln::sequence_erase", {seq, InputOrNone(c, 1)}));
    return c.SetOutput(0, v);
  });
  r.Add("SequenceLength", 11, [](ConvertContext& c) -> absl::Status {
    ASSIGN_OR_RETURN(Value * seq, c.RequiredInput(0));
    ASSIGN_OR_RETURN(Value * v, c.b().Op("kiln::sequence_length", {seq}));
    GraphBuilder::RefineType(v, GraphBuilder::TensorTy(DType::kInt64, {}));
    return c.SetOutput(0, v);
  });
  r.Add("SplitToSequence", 11, [](ConvertContext& c) -> absl::Status {
    ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
    GraphBuilder& b = c.b();
    ASSIGN_OR_RETURN(Value * v, b.Op("kiln::split_to_sequence",
                                     {x, InputOrNone(c, 1), b.Int(c.AttrInt("axis", 0)),
                                      b.Int(c.AttrInt("keepdims", 1))}));
    return c.SetOutput(0, v);
  });
  r.Add("ConcatFromSequence", 11, [](ConvertContext& c) -> absl::Status {
    ASSIGN_OR_RETURN(Value * seq, c.RequiredInput(0));
    ASSIGN_OR_RETURN(int64_t axis, c.RequiredAttrInt("axis"));
    GraphBuilder& b = c.b();
    ASSIGN_OR_RETURN(Value * v, b.Op("kiln::concat_from_sequence",
                                     {seq, b.Int(axis), b.Int(c.AttrInt("new_axis", 0))}));
    return c.SetOutput(0, v);
  });
  r.Add("SequenceMap", 17, ConvertSequenceMap);
}

// ------------------------------------------------------------ optionals

void RegisterOptionals(ConverterRegistry& r) {
  r.Add("Optional", 15, [](ConvertContext& c) -> absl::Status {
    if (c.has_input(0)) return c.SetOutput(0, c.input(0));
    return c.SetOutput(0, c.b().None());
  });
  r.Add("OptionalHasElement", 15, [](ConvertContext& c) -> absl::Status {
    GraphBuilder& b = c.b();
    if (!c.has_input(0)) {
      return c.SetOutput(0, b.TensorConstant(Tensor::ScalarInt(0, DType::kBool)));
    }
    ASSIGN_OR_RETURN(Value * v, b.Op("kiln::optional_has_element", {c.input(0)}));
    GraphBuilder::RefineType(v, GraphBuilder::TensorTy(DType::kBool, {}));
    return c.SetOutput(0, v);
  });
  r.Add("OptionalGetElement", 15, [](ConvertContext& c) -> absl::Status {
    ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
    const TypePtr& t = x->type();
    // A plain tensor or sequence (allowed from opset 18) is its own element.
    if (t->is_tensor() || IsListType(t)) return c.SetOutput(0, x);
    ASSIGN_OR_RETURN(Value * v, c.b().Op("kiln::optional_get_element", {x}));
    if (t->kind() == TypeKind::kOptional) GraphBuilder::RefineType(v, t->contained()[0]);
    return c.SetOutput(0, v);
  });
}

// ------------------------------------------------------------ recurrent

enum class Recurrent { kRnn, kGru, kLstm };

absl::Status ConvertRecurrent(ConvertContext& c, Recurrent kind) {
  GraphBuilder& b = c.b();
  const char* op = kind == Recurrent::kLstm  ? "kiln::lstm"
                   : kind == Recurrent::kGru ? "kiln::gru"
                                             : "kiln::rnn";
  std::vector<Value*> args;
  for (int i = 0; i < 3; ++i) {
    ASSIGN_OR_RETURN(Value * v, c.RequiredInput(i));
    args.push_back(v);
  }
  const int optional_inputs = kind == Recurrent::kLstm ? 5 : 3;  // B, lens, h0[, c0, P]
  for (int i = 3; i < 3 + optional_inputs; ++i) args.push_back(InputOrNone(c, i));
  std::vector<Value*> names;
  for (const std::string& s : c.AttrStrings("activations")) names.push_back(b.Str(s));
  args.push_back(b.List(Type::Str(), names));
  std::vector<Value*> alphas, betas;
  for (float f : c.AttrFloats("activation_alpha")) alphas.push_back(b.Double(f));
  for (float f : c.AttrFloats("activation_beta")) betas.push_back(b.Double(f));
  args.push_back(b.List(Type::Float(), alphas));
  args.push_back(b.List(Type::Float(), betas));
  args.push_back(c.HasAttr("clip") ? b.Double(c.AttrFloat("clip", 0)) : b.None());
  args.push_back(b.Str(c.AttrString("direction", "forward")));
  args.push_back(b.Int(c.AttrInt("hidden_size", 0)));
  if (kind == Recurrent::kLstm) args.push_back(b.Int(c.AttrInt("input_forget", 0)));
  if (kind == Recurrent::kGru) args.push_back(b.Int(c.AttrInt("linear_before_reset", 0)));
  args.push_back(b.Int(c.AttrInt("layout", 0)));
  const size_t num_outputs = kind == Recurrent::kLstm ? 3 : 2;
  ASSIGN_OR_RETURN(std::vector<Value*> outs, b.OpN(op, args, num_outputs));
  for (size_t i = 0; i < num_outputs; ++i) {
    RETURN_IF_ERROR(c.SetOutput(static_cast<int>(i), outs[i]));
  }
  return absl::OkStatus();
}

}  // namespace

void RegisterControlConverters(ConverterRegistry& r) {
  r.Add("If", 1, ConvertIf);
  r.Add("Loop", 1, ConvertLoop);
  r.Add("Scan", 8, ConvertScan8);
  r.Add("Scan", 9, ConvertScan9);
  RegisterSequences(r);
  RegisterOptionals(r);
  r.Add("RNN", 1, [](ConvertContext& c) { return ConvertRecurrent(c, Recurrent::kRnn); });
  r.Add("GRU", 1, [](ConvertContext& c) { return ConvertRecurrent(c, Recurrent::kGru); });
  r.Add("LSTM", 1, [](ConvertContext& c) { return ConvertRecurrent(c, Recurrent::kLstm); });
}

}  // namespace kiln::frontend::onnx_import
