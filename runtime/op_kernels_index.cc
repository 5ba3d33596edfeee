// Typed entry points of the indexing rows (ops/defs/index.def).
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "runtime/kernels_shape.h"
#include "runtime/op_kernels.h"
#include "support/status.h"

namespace kiln::runtime {
namespace {

namespace sk = ::kiln::runtime::shape;

absl::Status Invalid(const std::string& op, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(op, ": ", what));
}

absl::StatusOr<sk::ScatterReduce> ReduceByName(const std::string& op, const std::string& name) {
  if (name == "none") return sk::ScatterReduce::kNone;
  if (name == "sum" || name == "add") return sk::ScatterReduce::kSum;
  if (name == "prod" || name == "multiply" || name == "mul") return sk::ScatterReduce::kProd;
  if (name == "mean") return sk::ScatterReduce::kMean;
  if (name == "amax" || name == "max") return sk::ScatterReduce::kAmax;
  if (name == "amin" || name == "min") return sk::ScatterReduce::kAmin;
  return Invalid(op, absl::StrCat("unknown reduction '", name, "'"));
}

absl::StatusOr<sk::PadMode> PadModeByName(const std::string& op, const std::string& mode) {
  if (mode == "constant") return sk::PadMode::kConstant;
  if (mode == "reflect") return sk::PadMode::kReflect;
  if (mode == "replicate" || mode == "edge") return sk::PadMode::kReplicate;
  if (mode == "circular" || mode == "wrap") return sk::PadMode::kCircular;
  return Invalid(op, absl::StrCat("unknown padding mode '", mode, "'"));
}

std::vector<std::optional<Tensor>> AllPresent(const std::vector<Tensor>& ts) {
  return std::vector<std::optional<Tensor>>(ts.begin(), ts.end());
}

}  // namespace

absl::StatusOr<Tensor> GatherKernel(const Tensor& self, int64_t dim, const Tensor& index, bool) {
  return sk::Gather(self, dim, index);
}

KernelBinder ScatterKernel(ScatterForm form) {
  switch (form) {
    case ScatterForm::kSrc:
      return Unboxed([](const Tensor& x, int64_t d, const Tensor& i, const Tensor& src) {
        return sk::Scatter(x, d, i, src, false, sk::ScatterReduce::kNone);
      });
    case ScatterForm::kValue:
      return Unboxed([](const Tensor& x, int64_t d, const Tensor& i, const Operand& value) {
        return sk::Scatter(x, d, i, value.value, true, sk::ScatterReduce::kNone);
      });
    case ScatterForm::kAdd:
      return Unboxed([](const Tensor& x, int64_t d, const Tensor& i, const Tensor& src) {
        return sk::Scatter(x, d, i, src, false, sk::ScatterReduce::kSum);
      });
    case ScatterForm::kSrcReduce:
    case ScatterForm::kValueReduce:
      break;
  }
  const bool scalar = form == ScatterForm::kValueReduce;
  return UnboxedNamed([scalar](const std::string& op, const Tensor& x, int64_t d, const Tensor& i,
                               const Operand& src,
                               const std::string& reduce) -> absl::StatusOr<Tensor> {
    if (reduce != "add" && reduce != "multiply") {
      return Invalid(op, "reduce must be 'add' or 'multiply'");
    }
    ASSIGN_OR_RETURN(sk::ScatterReduce red, ReduceByName(op, reduce));
    return sk::Scatter(x, d, i, src.value, scalar, red);
  });
}

absl::StatusOr<Tensor> ScatterReduceTwo(const std::string& op, const Tensor& self, int64_t dim,
                                        const Tensor& index, const Tensor& src,
                                        const std::string& reduce, bool include_self) {
  if (reduce != "sum" && reduce != "prod" && reduce != "mean" && reduce != "amax" &&
      reduce != "amin") {
    return Invalid(op, absl::StrCat("unknown reduce '", reduce, "'"));
  }
  ASSIGN_OR_RETURN(sk::ScatterReduce red, ReduceByName(op, reduce));
  return sk::Scatter(self, dim, index, src, false, red, include_self);
}

absl::StatusOr<Tensor> IndexTwin(const Tensor& self, const std::vector<Tensor>& indices) {
  return sk::Index(self, AllPresent(indices));
}

absl::StatusOr<Tensor> IndexPutTwin(const Tensor& self, const std::vector<Tensor>& indices,
                                    const Tensor& values, bool accumulate) {
  return sk::IndexPut(self, AllPresent(indices), values, accumulate);
}

absl::StatusOr<Tensor> MaskedFillKernel(const std::string& op, const Tensor& self,
                                        const Tensor& mask, const Operand& value) {
  if (value.value.dim() != 0) return Invalid(op, "value must be a 0-dim tensor");
  return sk::MaskedFill(self, mask, value.value);
}

absl::StatusOr<Tensor> EmbeddingKernel(const Tensor& weight, const Tensor& indices, int64_t, bool,
                                       bool) {
  return sk::Embedding(weight, indices);
}

absl::StatusOr<Tensor> ConstantPadNd(const Tensor& self, const Ints& pad, const Operand& value) {
  return sk::Pad(self, pad, sk::PadMode::kConstant, value.value, "constant_pad_nd");
}

absl::StatusOr<Tensor> PadKernel(const std::string& op, const Tensor& self, const Ints& pad,
                                 const std::string& mode, std::optional<double> value) {
  if (mode == "edge" || mode == "wrap") {
    return Invalid(op, absl::StrCat("unknown padding mode '", mode, "'"));
  }
  ASSIGN_OR_RETURN(sk::PadMode m, PadModeByName(op, mode));
  Tensor v = Tensor::ScalarDouble(0);
  if (value) {
    if (m != sk::PadMode::kConstant) return Invalid(op, "a value is only allowed in constant mode");
    v = Tensor::ScalarDouble(*value);
  }
  return sk::Pad(self, pad, m, v, "pad");
}

KernelBinder ModePadKernel(int n, PadKind kind) {
  const sk::PadMode mode = kind == PadKind::kReflect ? sk::PadMode::kReflect : sk::PadMode::kReplicate;
  return UnboxedNamed([n, mode](const std::string& op, const Tensor& x,
                                const Ints& p) -> absl::StatusOr<Tensor> {
    if (static_cast<int>(p.size()) != 2 * n || (x.dim() != n + 1 && x.dim() != n + 2)) {
      return Invalid(op, absl::StrCat("expects ", 2 * n, " pads and a tensor of rank ", n + 1,
                                      " or ", n + 2));
    }
    if (mode == sk::PadMode::kReflect) {
      for (size_t i = 0; i < p.size(); ++i) {
        const int64_t size = x.size(x.dim() - 1 - static_cast<int64_t>(i / 2));
        if (p[i] >= size) {
          return Invalid(op, absl::StrCat("padding ", p[i], " must be smaller than the dim size ", size));
        }
      }
    }
    return sk::Pad(x, p, mode, Tensor::ScalarInt(0), op.c_str());
  });
}

absl::StatusOr<Tensor> Tril(const Tensor& self, int64_t diagonal) {
  return sk::Trilu(self, diagonal, /*upper=*/false);
}

absl::StatusOr<Tensor> Triu(const Tensor& self, int64_t diagonal) {
  return sk::Trilu(self, diagonal, /*upper=*/true);
}

absl::StatusOr<Tensor> OnnxGatherElements(const Tensor& self, int64_t dim, const Tensor& index) {
  return sk::Gather(self, dim, index, /*allow_negative=*/true);
}

absl::StatusOr<Tensor> OnnxScatterElements(const std::string& op, const Tensor& self,
                                           int64_t dim, const Tensor& index, const Tensor& src,
                                           const std::string& reduction) {
  ASSIGN_OR_RETURN(sk::ScatterReduce red, ReduceByName(op, reduction));
  if (red == sk::ScatterReduce::kMean) return Invalid(op, "unknown reduction 'mean'");
  return sk::Scatter(self, dim, index, src, false, red, true, /*allow_negative=*/true);
}

absl::StatusOr<Tensor> OnnxScatterNd(const std::string& op, const Tensor& self,
                                     const Tensor& indices, const Tensor& updates,
                                     const std::string& reduction) {
  ASSIGN_OR_RETURN(sk::ScatterReduce red, ReduceByName(op, reduction));
  if (red == sk::ScatterReduce::kMean) return Invalid(op, "unknown reduction 'mean'");
  return sk::ScatterND(self, indices, updates, red);
}

absl::StatusOr<Tensor> OnnxPad(const std::string& op, const Tensor& x, const Ints& p,
                               const std::string& mode, const OptTensor& v) {
  if (mode == "replicate" || mode == "circular") {
    return Invalid(op, absl::StrCat("unknown padding mode '", mode, "'"));
  }
  ASSIGN_OR_RETURN(sk::PadMode m, PadModeByName(op, mode));
  const int64_t rank = x.dim();
  if (static_cast<int64_t>(p.size()) != 2 * rank) {
    return Invalid(op, absl::StrCat("expects ", 2 * rank, " pads for a tensor of rank ", rank,
                                    ", got ", p.size()));
  }
  // ONNX lists all begins then all ends, first dim first.
  std::vector<int64_t> torch_order;
  for (int64_t d = rank - 1; d >= 0; --d) {
    torch_order.push_back(p[static_cast<size_t>(d)]);
    torch_order.push_back(p[static_cast<size_t>(rank + d)]);
  }
  Tensor value = Tensor::ScalarInt(0);
  if (v && v->numel() > 0) value = *v;
  return sk::Pad(x, torch_order, m, value, "Pad");
}

}  // namespace kiln::runtime
