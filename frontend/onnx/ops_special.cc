// ONNX converters of the special family: losses (onto ATen's nll_loss_nd /
// log_softmax), NonMaxSuppression, linear quantization, windows / mel
// filters / DFT / STFT, TfIdfVectorizer, StringNormalizer, dropout and the
// random generators, the ai.onnx.preview.training optimizers and Gradient.
// Ops without an ATen equivalent map onto kiln:: ops
// (rows in ops/defs/special.def).
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "frontend/onnx/ops_families.h"
#include "frontend/onnx/tensor_proto.h"
#include "ir/ir.h"
#include "ir/type.h"
#include "support/status.h"

namespace kiln::frontend::onnx_import {
namespace {

using ir::Value;

constexpr char kTraining[] = "ai.onnx.preview.training";

// Input i, or None when absent.
Value* InputOrNone(ConvertContext& c, int i) {
  Value* v = c.input(i);
  return v != nullptr ? v : c.b().None();
}

// A dtype attribute holding an ONNX TensorProto.DataType code.
absl::StatusOr<DType> DTypeAttr(ConvertContext& c, absl::string_view name, int64_t def) {
  const int64_t code = c.AttrInt(name, def);
  absl::StatusOr<DType> d = DTypeFromOnnx(static_cast<int32_t>(code));
  if (!d.ok()) return c.Unsupported(absl::StrCat("attribute '", name, "': ", d.status().message()));
  return *d;
}

// An optional dtype attribute as a ScalarType argument (None when absent).
absl::StatusOr<Value*> OptionalDTypeArg(ConvertContext& c, absl::string_view name) {
  if (!c.HasAttr(name)) return c.b().None();
  ASSIGN_OR_RETURN(DType d, DTypeAttr(c, name, 1));
  return c.b().ScalarType(d);
}

// The float `seed` attribute, or None.
Value* SeedArg(ConvertContext& c) {
  const onnx::AttributeProto* a = c.FindAttr("seed");
  if (a == nullptr) return c.b().None();
  if (a->has_i()) return c.b().Double(static_cast<double>(a->i()));
  return c.b().Double(static_cast<double>(a->f()));
}

absl::Status SetOutputs(ConvertContext& c, const std::vector<Value*>& outs) {
  for (size_t i = 0; i < outs.size(); ++i) RETURN_IF_ERROR(c.SetOutput(static_cast<int>(i), outs[i]));
  return absl::OkStatus();
}

// ------------------------------------------------------------------ losses

absl::StatusOr<int64_t> ReductionCode(ConvertContext& c) {
  const std::string r = c.AttrString("reduction", "mean");
  if (r == "none") return 0;
  if (r == "mean") return 1;
  if (r == "sum") return 2;
  return c.Error(absl::StrCat("reduction must be none, mean or sum, got '", r, "'"));
}

// ONNX's ignore_index is optional; without it no target is ignored. Targets
// must lie in [0, C), so INT64_MIN never matches one.
int64_t IgnoreIndex(ConvertContext& c) {
  return c.AttrInt("ignore_index", std::numeric_limits<int64_t>::min());
}

absl::Status ConvertNllLoss(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  ASSIGN_OR_RETURN(Value * target, c.RequiredInput(1));
  ASSIGN_OR_RETURN(int64_t reduction, ReductionCode(c));
  GraphBuilder& b = c.b();
  ASSIGN_OR_RETURN(Value * loss, b.Op("aten::nll_loss_nd", {x, target, InputOrNone(c, 2),
                                                            b.Int(reduction),
                                                            b.Int(IgnoreIndex(c))}));
  return c.SetOutput(0, loss);
}

absl::Status ConvertSoftmaxCrossEntropy(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  ASSIGN_OR_RETURN(Value * target, c.RequiredInput(1));
  ASSIGN_OR_RETURN(int64_t reduction, ReductionCode(c));
  GraphBuilder& b = c.b();
  // The classes are dim 1 of (N, C, d1, ...): log_softmax there, then NLL.
  ASSIGN_OR_RETURN(Value * log_prob, b.Op("aten::log_softmax", {x, b.Int(1), b.None()}));
  ASSIGN_OR_RETURN(Value * loss, b.Op("aten::nll_loss_nd", {log_prob, target, InputOrNone(c, 2),
                                                            b.Int(reduction),
                                                            b.Int(IgnoreIndex(c))}));
  RETURN_IF_ERROR(c.SetOutput(0, loss));
  return c.SetOutput(1, log_prob);
}

// --------------------------------------------------- detection, quantization

absl::Status ConvertNms(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * boxes, c.RequiredInput(0));
  ASSIGN_OR_RETURN(Value * scores, c.RequiredInput(1));
  GraphBuilder& b = c.b();
  ASSIGN_OR_RETURN(Value * y, b.Op("kiln::non_max_suppression",
                                   {boxes, scores, InputOrNone(c, 2), InputOrNone(c, 3),
                                    InputOrNone(c, 4), b.Int(c.AttrInt("center_point_box", 0))}));
  return c.SetOutput(0, y);
}

absl::Status ConvertQuantizeLinear(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  ASSIGN_OR_RETURN(Value * scale, c.RequiredInput(1));
  GraphBuilder& b = c.b();
  ASSIGN_OR_RETURN(Value * y, b.Op("kiln::quantize_linear",
                                   {x, scale, InputOrNone(c, 2), b.Int(c.AttrInt("axis", 1)),
                                    b.ScalarType(DType::kUInt8)}));
  return c.SetOutput(0, y);
}

absl::Status ConvertDequantizeLinear(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  ASSIGN_OR_RETURN(Value * scale, c.RequiredInput(1));
  GraphBuilder& b = c.b();
  ASSIGN_OR_RETURN(Value * y, b.Op("kiln::dequantize_linear",
                                   {x, scale, InputOrNone(c, 2), b.Int(c.AttrInt("axis", 1))}));
  return c.SetOutput(0, y);
}

absl::Status ConvertDynamicQuantizeLinear(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  ASSIGN_OR_RETURN(std::vector<Value*> outs, c.b().OpN("kiln::dynamic_quantize_linear", {x}, 3));
  return SetOutputs(c, outs);
}

absl::Status ConvertQLinearMatMul(ConvertContext& c) {
  std::vector<Value*> args;
  for (int i = 0; i < 8; ++i) {
    ASSIGN_OR_RETURN(Value * v, c.RequiredInput(i));
    args.push_back(v);
  }
  ASSIGN_OR_RETURN(Value * y, c.b().Op("kiln::qlinear_matmul", args));
  return c.SetOutput(0, y);
}

// ------------------------------------------------------- signal processing

ConverterFn WindowConverter(const char* kind) {
  return [kind](ConvertContext& c) -> absl::Status {
    ASSIGN_OR_RETURN(Value * size, c.RequiredInput(0));
    ASSIGN_OR_RETURN(DType dtype, DTypeAttr(c, "output_datatype", 1));
    GraphBuilder& b = c.b();
    ASSIGN_OR_RETURN(Value * y, b.Op("kiln::window", {size, b.Str(kind),
                                                      b.Bool(c.AttrInt("periodic", 1) != 0),
                                                      b.ScalarType(dtype)}));
    return c.SetOutput(0, y);
  };
}

absl::Status ConvertMelWeightMatrix(ConvertContext& c) {
  std::vector<Value*> args;
  for (int i = 0; i < 5; ++i) {
    ASSIGN_OR_RETURN(Value * v, c.RequiredInput(i));
    args.push_back(v);
  }
  ASSIGN_OR_RETURN(DType dtype, DTypeAttr(c, "output_datatype", 1));
  args.push_back(c.b().ScalarType(dtype));
  ASSIGN_OR_RETURN(Value * y, c.b().Op("kiln::mel_weight_matrix", args));
  return c.SetOutput(0, y);
}

absl::Status ConvertDft(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  GraphBuilder& b = c.b();
  ASSIGN_OR_RETURN(Value * y, b.Op("kiln::dft", {x, InputOrNone(c, 1), b.Int(c.AttrInt("axis", 1)),
                                                b.Bool(c.AttrInt("inverse", 0) != 0),
                                                b.Bool(c.AttrInt("onesided", 0) != 0)}));
  return c.SetOutput(0, y);
}

absl::Status ConvertStft(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * signal, c.RequiredInput(0));
  ASSIGN_OR_RETURN(Value * step, c.RequiredInput(1));
  GraphBuilder& b = c.b();
  ASSIGN_OR_RETURN(Value * y, b.Op("kiln::stft", {signal, step, InputOrNone(c, 2),
                                                 InputOrNone(c, 3),
                                                 b.Bool(c.AttrInt("onesided", 1) != 0)}));
  return c.SetOutput(0, y);
}

// -------------------------------------------------------------------- text

absl::Status ConvertTfIdf(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  if (!c.AttrStrings("pool_strings").empty()) {
    return c.Unsupported("string pools (pool_strings) need string tensors");
  }
  ASSIGN_OR_RETURN(int64_t min_gram, c.RequiredAttrInt("min_gram_length"));
  ASSIGN_OR_RETURN(int64_t max_gram, c.RequiredAttrInt("max_gram_length"));
  ASSIGN_OR_RETURN(int64_t max_skip, c.RequiredAttrInt("max_skip_count"));
  ASSIGN_OR_RETURN(std::vector<int64_t> counts, c.RequiredAttrInts("ngram_counts"));
  ASSIGN_OR_RETURN(std::vector<int64_t> indexes, c.RequiredAttrInts("ngram_indexes"));
  const std::string mode = c.AttrString("mode", "");
  if (mode.empty()) return c.Error("required string attribute 'mode' is missing");
  std::vector<double> weights;
  for (float w : c.AttrFloats("weights")) weights.push_back(static_cast<double>(w));
  GraphBuilder& b = c.b();
  ASSIGN_OR_RETURN(Value * y, b.Op("kiln::tfidf_vectorizer",
                                   {x, b.Int(min_gram), b.Int(max_gram), b.Int(max_skip),
                                    b.Str(mode), b.IntList(counts), b.IntList(indexes),
                                    b.IntList(c.AttrInts("pool_int64s")),
                                    b.DoubleList(weights)}));
  return c.SetOutput(0, y);
}

absl::Status ConvertStringNormalizer(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  GraphBuilder& b = c.b();
  std::vector<Value*> stopwords;
  for (const std::string& s : c.AttrStrings("stopwords")) stopwords.push_back(b.Str(s));
  ASSIGN_OR_RETURN(Value * y,
                   b.Op("kiln::string_normalizer",
                        {x, b.List(ir::Type::Str(), stopwords),
                         b.Bool(c.AttrInt("is_case_sensitive", 0) != 0),
                         b.Str(c.AttrString("case_change_action", "NONE"))}));
  return c.SetOutput(0, y);
}

// ------------------------------------------------------- dropout / random

// Dropout before opset 12: `ratio` is an attribute and inference never
// drops. Opsets 7-9 type the mask like the input.
absl::Status ConvertDropoutLegacy(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  GraphBuilder& b = c.b();
  Value* ratio = b.TensorConstant(Tensor::ScalarDouble(c.AttrFloat("ratio", 0.5f)));
  ASSIGN_OR_RETURN(std::vector<Value*> outs,
                   b.OpN("kiln::dropout", {x, ratio, b.None(), b.None()}, 2));
  if (c.has_output(1) && c.opset() < 10) {
    ASSIGN_OR_RETURN(DType dtype, c.InputDType(0));
    ASSIGN_OR_RETURN(outs[1], b.Op("aten::to", {outs[1], b.ScalarType(dtype), b.Bool(false),
                                                b.Bool(false), b.None()}));
  }
  return SetOutputs(c, outs);
}

absl::Status ConvertDropout(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  GraphBuilder& b = c.b();
  ASSIGN_OR_RETURN(std::vector<Value*> outs,
                   b.OpN("kiln::dropout", {x, InputOrNone(c, 1), InputOrNone(c, 2), SeedArg(c)},
                         2));
  return SetOutputs(c, outs);
}

absl::Status ConvertRandom(ConvertContext& c, bool normal, bool like) {
  GraphBuilder& b = c.b();
  const char* p1 = normal ? "mean" : "low";
  const char* p2 = normal ? "scale" : "high";
  Value* a1 = b.Double(c.AttrFloat(p1, 0.0f));
  Value* a2 = b.Double(c.AttrFloat(p2, 1.0f));
  Value* y = nullptr;
  if (like) {
    ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
    ASSIGN_OR_RETURN(Value * dtype, OptionalDTypeArg(c, "dtype"));
    ASSIGN_OR_RETURN(y, b.Op(normal ? "kiln::random_normal_like" : "kiln::random_uniform_like",
                             {x, a1, a2, dtype, SeedArg(c)}));
  } else {
    ASSIGN_OR_RETURN(std::vector<int64_t> shape, c.RequiredAttrInts("shape"));
    ASSIGN_OR_RETURN(DType dtype, DTypeAttr(c, "dtype", 1));
    ASSIGN_OR_RETURN(y, b.Op(normal ? "kiln::random_normal" : "kiln::random_uniform",
                             {b.IntList(shape), a1, a2, b.ScalarType(dtype), SeedArg(c)}));
  }
  return c.SetOutput(0, y);
}

absl::Status ConvertBernoulli(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  ASSIGN_OR_RETURN(Value * dtype, OptionalDTypeArg(c, "dtype"));
  ASSIGN_OR_RETURN(Value * y, c.b().Op("kiln::bernoulli", {x, dtype, SeedArg(c)}));
  return c.SetOutput(0, y);
}

absl::Status ConvertMultinomial(ConvertContext& c) {
  ASSIGN_OR_RETURN(Value * x, c.RequiredInput(0));
  ASSIGN_OR_RETURN(DType dtype, DTypeAttr(c, "dtype", 6));  // INT32
  GraphBuilder& b = c.b();
  ASSIGN_OR_RETURN(Value * y, b.Op("kiln::multinomial", {x, b.Int(c.AttrInt("sample_size", 1)),
                                                        b.ScalarType(dtype), SeedArg(c)}));
  return c.SetOutput(0, y);
}

// ------------------------------------------------------------------ training

// The optimizers take (R, T, then `groups` lists of n tensors each) and
// return `outputs_per` lists of n tensors; each tensor index is one kernel
// call.
absl::StatusOr<int64_t> OptimizerArity(ConvertContext& c, int groups, int outputs_per) {
  const int64_t n = (c.num_inputs() - 2) / groups;
  if (c.num_inputs() < 2 + groups || (c.num_inputs() - 2) % groups != 0) {
    return c.Error(absl::StrCat("expects R, T and ", groups, " equally long tensor lists, got ",
                                c.num_inputs(), " inputs"));
  }
  if (c.num_outputs() > n * outputs_per) {
    return c.Error(absl::StrCat("has ", c.num_outputs(), " outputs for ", n, " tensors"));
  }
  return n;
}

absl::Status ConvertOptimizer(ConvertContext& c, const char* kind, int groups,
                              const std::vector<Value*>& attrs) {
  const int outputs_per = groups - 1;
  ASSIGN_OR_RETURN(int64_t n, OptimizerArity(c, groups, outputs_per));
  ASSIGN_OR_RETURN(Value * r, c.RequiredInput(0));
  ASSIGN_OR_RETURN(Value * t, c.RequiredInput(1));
  for (int64_t i = 0; i < n; ++i) {
    std::vector<Value*> args = {r, t};
    for (int g = 0; g < groups; ++g) {
      ASSIGN_OR_RETURN(Value * v, c.RequiredInput(static_cast<int>(2 + g * n + i)));
      args.push_back(v);
    }
    args.insert(args.end(), attrs.begin(), attrs.end());
    ASSIGN_OR_RETURN(std::vector<Value*> outs,
                     c.b().OpN(kind, args, static_cast<size_t>(outputs_per)));
    for (int k = 0; k < outputs_per; ++k) {
      RETURN_IF_ERROR(c.SetOutput(static_cast<int>(k * n + i), outs[static_cast<size_t>(k)]));
    }
  }
  return absl::OkStatus();
}

absl::Status ConvertAdagrad(ConvertContext& c) {
  GraphBuilder& b = c.b();
  return ConvertOptimizer(c, "kiln::adagrad", 3,
                          {b.Double(c.AttrFloat("decay_factor", 0.0f)),
                           b.Double(c.AttrFloat("epsilon", 1e-6f)),
                           b.Double(c.AttrFloat("norm_coefficient", 0.0f))});
}

absl::Status ConvertAdam(ConvertContext& c) {
  GraphBuilder& b = c.b();
  return ConvertOptimizer(c, "kiln::adam", 4,
                          {b.Double(c.AttrFloat("alpha", 0.9f)), b.Double(c.AttrFloat("beta", 0.999f)),
                           b.Double(c.AttrFloat("epsilon", 1e-6f)),
                           b.Double(c.AttrFloat("norm_coefficient", 0.0f)),
                           b.Double(c.AttrFloat("norm_coefficient_post", 0.0f))});
}

absl::Status ConvertMomentum(ConvertContext& c) {
  GraphBuilder& b = c.b();
  for (const char* required : {"alpha", "beta", "mode", "norm_coefficient"}) {
    if (!c.HasAttr(required)) {
      return c.Error(absl::StrCat("required attribute '", required, "' is missing"));
    }
  }
  const std::string mode = c.AttrString("mode", "standard");
  if (mode != "standard" && mode != "nesterov") {
    return c.Error(absl::StrCat("mode must be standard or nesterov, got '", mode, "'"));
  }
  return ConvertOptimizer(c, "kiln::momentum", 3,
                          {b.Double(c.AttrFloat("alpha", 0.0f)), b.Double(c.AttrFloat("beta", 0.0f)),
                           b.Double(c.AttrFloat("norm_coefficient", 0.0f)),
                           b.Bool(mode == "nesterov")});
}

// ---------------------------------------------------------------- Gradient

// Reverse-mode differentiation of the kiln ops between the node's inputs
// (xs) and the value named by attribute `y`, emitted as more kiln ops. Covers
// elementwise add/sub/mul/div/neg of same-shaped operands, enough for the
// ONNX Gradient tests; anything else is Unsupported naming the op.
bool IsNumber(const Value* v) {
  const ir::TypeKind k = v->type()->kind();
  return k == ir::TypeKind::kInt || k == ir::TypeKind::kFloat || k == ir::TypeKind::kNumber;
}

class GradientBuilder {
 public:
  explicit GradientBuilder(ConvertContext& c) : c_(c), b_(c.b()) {}

  absl::Status Run() {
    const std::string y_name = c_.AttrString("y", "");
    if (y_name.empty()) return c_.Error("required attribute 'y' is missing");
    const std::vector<std::string> xs = c_.AttrStrings("xs");
    if (xs.size() != static_cast<size_t>(c_.num_inputs()) ||
        c_.num_outputs() != c_.num_inputs()) {
      return c_.Error("needs one input and one output per name in 'xs'");
    }
    Value* y = c_.LookupName(y_name);
    if (y == nullptr || y->node()->owningBlock() != b_.insertion_block()) {
      return c_.Unsupported(absl::StrCat("cannot find the value of y '", y_name, "'"));
    }
    ASSIGN_OR_RETURN(Value * seed, b_.Op("aten::ones_like", {y}));
    grads_[y] = seed;
    // Walk back from y's producer in program order reversed.
    bool reached = false;
    std::vector<ir::Node*> order;
    for (ir::Node* n : b_.insertion_block()->reverse_nodes()) {
      if (n == y->node()) reached = true;
      if (reached) order.push_back(n);
    }
    absl::flat_hash_set<Value*> stops;
    for (int i = 0; i < c_.num_inputs(); ++i) {
      ASSIGN_OR_RETURN(Value * x, c_.RequiredInput(i));
      stops.insert(x);
    }
    for (ir::Node* n : order) {
      Value* g = nullptr;
      for (Value* out : n->outputs()) {
        auto it = grads_.find(out);
        if (it != grads_.end()) g = it->second;
      }
      if (g == nullptr) continue;
      if (n->outputs().size() == 1 && stops.contains(n->output(0))) continue;
      RETURN_IF_ERROR(Backward(n, g));
    }
    for (int i = 0; i < c_.num_inputs(); ++i) {
      Value* x = c_.input(i);
      auto it = grads_.find(x);
      Value* gx = nullptr;
      if (it != grads_.end()) {
        gx = it->second;
      } else {
        ASSIGN_OR_RETURN(gx, b_.Op("aten::full_like", {x, b_.Double(0.0)}));
      }
      RETURN_IF_ERROR(c_.SetOutput(i, gx));
    }
    return absl::OkStatus();
  }

 private:
  absl::Status Accumulate(Value* v, Value* g) {
    if (!v->type()->is_tensor()) return absl::OkStatus();
    auto it = grads_.find(v);
    if (it == grads_.end()) {
      grads_[v] = g;
      return absl::OkStatus();
    }
    ASSIGN_OR_RETURN(Value * sum, b_.Op("aten::add", {it->second, g, b_.Int(1)}));
    it->second = sum;
    return absl::OkStatus();
  }

  // Broadcasting would need a reduction of g back to the operand's shape.
  absl::Status RequireSameShape(ir::Node* n, Value* operand) {
    const ir::TypePtr& a = operand->type();
    const ir::TypePtr& o = n->output(0)->type();
    if (a->is_tensor() && o->is_tensor() && a->tensor().HasCompleteSizes() &&
        o->tensor().HasCompleteSizes() && a->tensor().sizes == o->tensor().sizes) {
      return absl::OkStatus();
    }
    return c_.Unsupported(absl::StrCat("gradient through broadcasting ",
                                       n->kind().qualString(), " is not supported"));
  }

  absl::Status Backward(ir::Node* n, Value* g) {
    const std::string kind(n->kind().qualString());
    auto tensor_in = [&](size_t i) {
      return i < n->inputs().size() && n->input(i)->type()->is_tensor();
    };
    if ((kind == "aten::add" || kind == "aten::sub") && tensor_in(0) && tensor_in(1)) {
      RETURN_IF_ERROR(RequireSameShape(n, n->input(0)));
      RETURN_IF_ERROR(RequireSameShape(n, n->input(1)));
      RETURN_IF_ERROR(Accumulate(n->input(0), g));
      // d/db of a + alpha * b (a - alpha * b).
      Value* alpha = n->inputs().size() > 2 ? n->input(2) : b_.Int(1);
      ASSIGN_OR_RETURN(Value * gb, b_.Op("aten::mul", {g, alpha}));
      if (kind == "aten::sub") {
        ASSIGN_OR_RETURN(gb, b_.Op("aten::neg", {gb}));
      }
      return Accumulate(n->input(1), gb);
    }
    if (kind == "aten::mul" && tensor_in(0) && tensor_in(1)) {
      RETURN_IF_ERROR(RequireSameShape(n, n->input(0)));
      RETURN_IF_ERROR(RequireSameShape(n, n->input(1)));
      ASSIGN_OR_RETURN(Value * ga, b_.Op("aten::mul", {g, n->input(1)}));
      ASSIGN_OR_RETURN(Value * gb, b_.Op("aten::mul", {g, n->input(0)}));
      RETURN_IF_ERROR(Accumulate(n->input(0), ga));
      return Accumulate(n->input(1), gb);
    }
    if (kind == "aten::div" && n->inputs().size() == 2 && tensor_in(0) && tensor_in(1)) {
      RETURN_IF_ERROR(RequireSameShape(n, n->input(0)));
      RETURN_IF_ERROR(RequireSameShape(n, n->input(1)));
      ASSIGN_OR_RETURN(Value * ga, b_.Op("aten::div", {g, n->input(1)}));
      // d(a/b)/db = -(a/b) / b * g
      ASSIGN_OR_RETURN(Value * q, b_.Op("aten::div", {n->output(0), n->input(1)}));
      ASSIGN_OR_RETURN(Value * gq, b_.Op("aten::mul", {g, q}));
      ASSIGN_OR_RETURN(Value * gb, b_.Op("aten::neg", {gq}));
      RETURN_IF_ERROR(Accumulate(n->input(0), ga));
      return Accumulate(n->input(1), gb);
    }
    // A tensor combined with a Python number (x + 2.0, x * 0.5).
    if ((kind == "aten::add" || kind == "aten::sub") && tensor_in(0) &&
        IsNumber(n->input(1))) {
      return Accumulate(n->input(0), g);
    }
    if ((kind == "aten::mul" || kind == "aten::div") && tensor_in(0) &&
        n->inputs().size() == 2 && IsNumber(n->input(1))) {
      ASSIGN_OR_RETURN(Value * ga, b_.Op(kind, {g, n->input(1)}));
      return Accumulate(n->input(0), ga);
    }
    if (kind == "aten::neg" && tensor_in(0)) {
      ASSIGN_OR_RETURN(Value * ga, b_.Op("aten::neg", {g}));
      return Accumulate(n->input(0), ga);
    }
    if (kind == "prim::Constant") return absl::OkStatus();
    return c_.Unsupported(absl::StrCat("no gradient for ", kind));
  }

  ConvertContext& c_;
  GraphBuilder& b_;
  absl::flat_hash_map<Value*, Value*> grads_;
};

absl::Status ConvertGradient(ConvertContext& c) { return GradientBuilder(c).Run(); }

}  // namespace

void RegisterSpecialConverters(ConverterRegistry& r) {
  r.Add("NegativeLogLikelihoodLoss", 12, ConvertNllLoss);
  r.Add("SoftmaxCrossEntropyLoss", 12, ConvertSoftmaxCrossEntropy);

  r.Add("NonMaxSuppression", 10, ConvertNms);
  r.Add("QuantizeLinear", 10, ConvertQuantizeLinear);
  r.Add("DequantizeLinear", 10, ConvertDequantizeLinear);
  r.Add("DynamicQuantizeLinear", 11, ConvertDynamicQuantizeLinear);
  r.Add("QLinearMatMul", 10, ConvertQLinearMatMul);

  r.Add("HannWindow", 17, WindowConverter("hann"));
  r.Add("HammingWindow", 17, WindowConverter("hamming"));
  r.Add("BlackmanWindow", 17, WindowConverter("blackman"));
  r.Add("MelWeightMatrix", 17, ConvertMelWeightMatrix);
  r.Add("DFT", 17, ConvertDft);
  r.Add("STFT", 17, ConvertStft);

  r.Add("TfIdfVectorizer", 9, ConvertTfIdf);
  r.Add("StringNormalizer", 10, ConvertStringNormalizer);

  r.Add("Dropout", 1, ConvertDropoutLegacy);
  r.Add("Dropout", 12, ConvertDropout);
  r.Add("RandomUniform", 1, [](ConvertContext& c) { return ConvertRandom(c, false, false); });
  r.Add("RandomNormal", 1, [](ConvertContext& c) { return ConvertRandom(c, true, false); });
  r.Add("RandomUniformLike", 1, [](ConvertContext& c) { return ConvertRandom(c, false, true); });
  r.Add("RandomNormalLike", 1, [](ConvertContext& c) { return ConvertRandom(c, true, true); });
  r.Add("Bernoulli", 15, ConvertBernoulli);
  r.Add("Multinomial", 7, ConvertMultinomial);

  r.Add(kTraining, "Adagrad", 1, ConvertAdagrad);
  r.Add(kTraining, "Adam", 1, ConvertAdam);
  r.Add(kTraining, "Momentum", 1, ConvertMomentum);
  r.Add(kTraining, "Gradient", 1, ConvertGradient);
}

}  // namespace kiln::frontend::onnx_import
