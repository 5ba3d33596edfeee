// The extern-kernel fallback: any op with a registry kernel runs as an
// ExternCall of its overload (mm/bmm/matmul/linear/addmm/convolution always
// do), so every graph the interpreter runs also lowers.
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "lowering/elementwise.h"
#include "lowering/islands.h"
#include "lowering/lower_context.h"
#include "ops/row.h"
#include "support/status.h"

namespace kiln::lowering {
namespace {

absl::StatusOr<ExternArg> ArgFor(const LowerContext& ctx, const ir::Value* v, size_t position) {
  ExternArg arg;
  if (const TensorRef* t = ctx.FindTensor(v)) {
    arg.buffer = t->buffer;
  } else if (const std::vector<TensorRef>* list = ctx.FindTensorList(v)) {
    arg.is_buffer_list = true;
    for (const TensorRef& t : *list) arg.buffer_list.push_back(t.buffer);
  } else if (const ir::IValue* c = ctx.FindConstant(v)) {
    arg.constant = *c;
  } else {
    return ctx.Unimplemented(absl::StrCat("input ", position, " (%", v->debugName(),
                                          ") is neither a tensor nor a constant"));
  }
  return arg;
}

// A convolution library call (its op row's EXTERN column) whose argument 2
// is the per-output-channel bias added last: not a fused op, whose epilogue
// follows the bias (kiln::conv_post_ops).
bool IsConvolution(const ir::Operator& op) {
  const auto& args = op.schema.arguments;
  return op.extern_form.library == ops::Library::kConv && args.size() > 2 &&
         args[2].name == "bias" && op.schema.ArgumentIndex("post_ops") < 0;
}

// The bias of a convolution node to split off (LowerOptions::
// conv_bias_epilogue): a 1-D tensor with one value per output channel.
const TensorRef* SplittableConvBias(const LowerContext& ctx, const ir::Operator& op) {
  const ir::Node& node = ctx.node();
  if (!ctx.conv_bias_epilogue() || !IsConvolution(op) || node.inputs().size() < 3 ||
      node.outputs().size() != 1) {
    return nullptr;
  }
  const TensorRef* bias = ctx.FindTensor(node.input(2));
  absl::StatusOr<OutputInfo> out = ctx.Output(0);
  if (bias == nullptr || !out.ok() || out->sizes.size() < 3 || bias->layout.sizes.size() != 1 ||
      bias->layout.sizes[0] != out->sizes[1]) {
    return nullptr;
  }
  return bias;
}

}  // namespace

TensorRef AddExternCall(LowerContext& ctx, const std::string& op, const std::vector<TensorRef>& args,
                        const OutputInfo& out) {
  ExternCall call;
  call.op = op;
  for (const TensorRef& a : args) call.args.push_back(ExternArg{a.buffer, std::nullopt});
  Buffer b;
  b.name = ctx.NewBufferName();
  b.kind = BufferKind::kExtern;
  b.layout = Layout::Contiguous(out.dtype, out.sizes, out.device);
  b.origins = {ctx.Origin()};
  b.extern_call = std::move(call);
  TensorRef ref{b.name, b.name, b.layout};
  FallbackNote note;
  note.kind = FallbackNote::Kind::kExtern;
  note.buffer = b.name;
  note.op = op;
  note.node = NodeName(ctx.node());
  note.reason = "library call";
  ctx.graph().fallbacks.push_back(std::move(note));
  ctx.AddBuffer(std::move(b));
  return ref;
}

absl::Status LowerAsExtern(LowerContext& ctx) {
  const ir::Node& node = ctx.node();
  const ir::Operator* op = ctx.op();
  if (op == nullptr) return ctx.Unimplemented("no registry overload matches");
  // Lowered code never writes its inputs: run the functional variant.
  op = FunctionalOverload(ctx, op);
  if (op == nullptr) return ctx.Unimplemented("mutating op without a functional variant");
  if (!op->kernel) return ctx.Unimplemented("no lowering and no reference kernel");

  ExternCall call;
  call.op = op->schema.QualifiedName();
  call.num_outputs = static_cast<int>(node.outputs().size());
  const auto& schema_args = op->schema.arguments;
  for (size_t i = 0; i < schema_args.size(); ++i) {
    if (i < node.inputs().size()) {
      ASSIGN_OR_RETURN(ExternArg arg, ArgFor(ctx, node.input(i), i));
      call.args.push_back(std::move(arg));
    } else if (schema_args[i].default_value) {
      call.args.push_back(ExternArg{"", schema_args[i].default_value});
    } else {
      return ctx.Invalid(absl::StrCat("missing argument '", schema_args[i].name, "'"));
    }
  }
  for (size_t i = schema_args.size(); i < node.inputs().size(); ++i) {  // varargs
    ASSIGN_OR_RETURN(ExternArg arg, ArgFor(ctx, node.input(i), i));
    call.args.push_back(std::move(arg));
  }
  const TensorRef* split_bias = SplittableConvBias(ctx, *op);
  if (split_bias != nullptr) call.args[2] = ExternArg{"", ir::IValue::None()};

  std::string holder;
  for (size_t i = 0; i < node.outputs().size(); ++i) {
    const ir::Value* out = node.output(i);
    if (!out->type() || !out->type()->is_tensor()) {
      if (out->hasUses()) return ctx.Unimplemented("extern op with a used non-tensor output");
      continue;
    }
    ASSIGN_OR_RETURN(OutputInfo info, ctx.Output(i));
    Buffer b;
    b.name = ctx.NewBufferName();
    b.kind = BufferKind::kExtern;
    b.layout = Layout::Contiguous(info.dtype, info.sizes, info.device);
    b.origins = {ctx.Origin()};
    b.extern_output = static_cast<int>(i);
    if (holder.empty()) {
      holder = b.name;
      b.extern_call = call;
    } else {
      b.extern_source = holder;
    }
    TensorRef result{b.name, b.name, b.layout};
    ctx.AddBuffer(std::move(b));
    if (split_bias != nullptr) {
      // y[n, c, ...] = conv[n, c, ...] + bias[c], in the compute type.
      const DType compute = ComputeDType(info.dtype);
      std::vector<ExprPtr> index;
      for (size_t d = 0; d < info.sizes.size(); ++d) index.push_back(Var(static_cast<int>(d)));
      ExprPtr conv = Cast(ctx.LoadAt(result, index, info.sizes), compute);
      ExprPtr bias = Cast(ctx.LoadAt(*split_bias, {Var(1)}, info.sizes), compute);
      result = ctx.AddPointwise(info, Cast(Binary(ExprOp::kAdd, conv, bias), info.dtype));
    }
    ctx.BindTensor(out, result);
  }
  if (holder.empty()) return ctx.Unimplemented("extern op without tensor outputs");
  return absl::OkStatus();
}

}  // namespace kiln::lowering
