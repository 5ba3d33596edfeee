// aten::einsum(equation, tensors): one buffer whose index space is the
// output's labels; the contracted labels (those not in the output) are a sum
// reduction over the product of the operands' loads. Repeated labels in one
// operand read its diagonal; "..." stands for the broadcast leading dims.
//
// A general contraction as a loop nest: exact for every equation, but a
// two-operand contraction over a large inner dim runs at loop speed, not
// GEMM speed (exporters write matmuls as MatMul, which is a BLAS call; an
// Einsum left in a model is usually small).
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "lowering/elementwise.h"
#include "lowering/lower_context.h"
#include "lowering/lowerings.h"
#include "support/status.h"

namespace kiln::lowering {
namespace {

// A label: a letter, or the k-th broadcast dim of "..." (right-aligned,
// counted from the last one: -1, -2, ...).
using Label = int;

bool IsLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// One operand's term ("ij", "...ii") expanded to labels for its rank.
absl::StatusOr<std::vector<Label>> TermLabels(const LowerContext& ctx, const std::string& term,
                                              int64_t rank, int64_t* ellipsis_dims) {
  std::vector<Label> labels;
  int64_t letters = 0;
  const size_t dots = term.find("...");
  for (char c : term) letters += IsLetter(c);
  if (dots == std::string::npos) {
    if (letters != rank) {
      return ctx.Invalid(absl::StrCat("einsum term '", term, "' has ", letters, " labels for rank ", rank));
    }
  } else if (letters > rank) {
    return ctx.Invalid(absl::StrCat("einsum term '", term, "' has more labels than rank ", rank));
  }
  const int64_t broadcast = dots == std::string::npos ? 0 : rank - letters;
  *ellipsis_dims = std::max(*ellipsis_dims, broadcast);
  for (size_t i = 0; i < term.size(); ++i) {
    if (term.compare(i, 3, "...") == 0) {
      for (int64_t k = broadcast; k >= 1; --k) labels.push_back(static_cast<Label>(-k));
      i += 2;
      continue;
    }
    if (!IsLetter(term[i])) {
      return ctx.Invalid(absl::StrCat("einsum: unexpected character '", std::string(1, term[i]), "'"));
    }
    labels.push_back(static_cast<Label>(term[i]));
  }
  return labels;
}

absl::StatusOr<bool> Einsum(LowerContext& ctx) {
  ASSIGN_OR_RETURN(std::string equation, ctx.StringArg("equation"));
  ASSIGN_OR_RETURN(OutputInfo out, ctx.Output(0));
  const ir::Value* list = ctx.Input("tensors");
  const std::vector<TensorRef>* operands = list ? ctx.FindTensorList(list) : nullptr;
  if (operands == nullptr || operands->empty()) return false;
  if (IsComplex(out.dtype)) return false;
  std::string eq;
  for (char c : equation) {
    if (c != ' ') eq.push_back(c);
  }
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms = absl::StrSplit(lhs, ',');
  if (terms.size() != operands->size()) return ctx.Invalid("einsum: one term per operand expected");
  int64_t ellipsis = 0;
  std::vector<std::vector<Label>> in_labels;
  std::map<Label, int64_t> size;  // broadcast dims take the largest size
  std::map<Label, int> count;
  for (size_t k = 0; k < terms.size(); ++k) {
    const std::vector<int64_t>& s = (*operands)[k].layout.sizes;
    ASSIGN_OR_RETURN(std::vector<Label> labels,
                     TermLabels(ctx, terms[k], static_cast<int64_t>(s.size()), &ellipsis));
    for (size_t d = 0; d < labels.size(); ++d) {
      auto [it, fresh] = size.try_emplace(labels[d], s[d]);
      if (!fresh && it->second != s[d]) {
        if (labels[d] < 0 && (it->second == 1 || s[d] == 1)) {
          it->second = std::max(it->second, s[d]);
        } else {
          return ctx.Invalid("einsum: a label has two different sizes");
        }
      }
      ++count[labels[d]];
    }
    in_labels.push_back(std::move(labels));
  }
  std::vector<Label> out_labels;
  if (arrow != std::string::npos) {
    int64_t unused = 0;
    const std::string rhs = eq.substr(arrow + 2);
    int64_t letters = 0;
    for (char c : rhs) letters += IsLetter(c);
    const int64_t rank = letters + (rhs.find("...") != std::string::npos ? ellipsis : 0);
    ASSIGN_OR_RETURN(out_labels, TermLabels(ctx, rhs, rank, &unused));
  } else {
    // Implicit output: the broadcast dims, then the labels used once, sorted.
    for (int64_t k = ellipsis; k >= 1; --k) out_labels.push_back(static_cast<Label>(-k));
    for (const auto& [label, n] : count) {
      if (label > 0 && n == 1) out_labels.push_back(label);
    }
  }
  std::vector<int64_t> expected;
  std::map<Label, int> var;
  for (size_t i = 0; i < out_labels.size(); ++i) {
    if (var.count(out_labels[i])) return ctx.Invalid("einsum: a label repeats in the output");
    auto it = size.find(out_labels[i]);
    if (it == size.end()) return ctx.Invalid("einsum: an output label no operand has");
    var[out_labels[i]] = static_cast<int>(i);
    expected.push_back(it->second);
  }
  if (expected != out.sizes) return ctx.Invalid("einsum result shape disagrees with the output type");
  std::vector<int64_t> reduction_ranges;
  for (const auto& [label, n] : size) {
    if (var.count(label)) continue;
    var[label] = static_cast<int>(out_labels.size() + reduction_ranges.size());
    reduction_ranges.push_back(n);
  }
  std::vector<int64_t> var_ranges = out.sizes;
  var_ranges.insert(var_ranges.end(), reduction_ranges.begin(), reduction_ranges.end());
  const DType acc = ComputeDType(out.dtype);
  ExprPtr body;
  for (size_t k = 0; k < operands->size(); ++k) {
    const TensorRef& t = (*operands)[k];
    std::vector<ExprPtr> index;
    for (size_t d = 0; d < in_labels[k].size(); ++d) {
      // A broadcast size-1 dim reads index 0.
      index.push_back(t.layout.sizes[d] == 1 && size[in_labels[k][d]] != 1 ? IntConst(0)
                                                                           : Var(var[in_labels[k][d]]));
    }
    ExprPtr v = Cast(ctx.LoadAt(t, index, var_ranges), acc);
    body = body ? Binary(ExprOp::kMul, body, v) : v;
  }
  TensorRef r = reduction_ranges.empty()
                    ? ctx.AddPointwise(out, body)
                    : ctx.AddReduction(out, reduction_ranges, ReductionType::kSum, body);
  ctx.BindTensor(ctx.node().output(0), r);
  return true;
}

}  // namespace

LoweringFn LowerEinsum() { return Einsum; }

}  // namespace kiln::lowering
