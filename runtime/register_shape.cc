// Kernel registration for the shape op family: decodes schema arguments and
// calls runtime/kernels_shape.h.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "runtime/kernel_args.h"
#include "runtime/kernels_shape.h"
#include "runtime/tensor_ops.h"
#include "support/status.h"

namespace kiln::runtime {
namespace {

using ir::IValue;
namespace sk = ::kiln::runtime::shape;

// A `Scalar` (or a tensor standing for one) as a 0-dim tensor.
absl::StatusOr<Tensor> ScalarArg(const std::string& op, Args a, size_t i) {
  if (i >= a.size()) return ArgError(op, i, "a number");
  const IValue& v = a[i];
  if (v.isTensor()) return v.toTensor();
  if (v.isBool()) return Tensor::ScalarInt(v.toBool() ? 1 : 0, DType::kBool);
  if (v.isInt()) return Tensor::ScalarInt(v.toInt());
  if (v.isDouble()) return Tensor::ScalarDouble(v.toDouble());
  return ArgError(op, i, "a number");
}

absl::StatusOr<std::optional<int64_t>> OptionalIntArg(const std::string& op, Args a, size_t i) {
  if (i >= a.size() || a[i].isNone()) return std::optional<int64_t>();
  ASSIGN_OR_RETURN(int64_t v, IntArg(op, a, i));
  return std::optional<int64_t>(v);
}

// Tensor?[] (None entries stay nullopt).
absl::StatusOr<std::vector<std::optional<Tensor>>> OptionalTensorListArg(const std::string& op,
                                                                         Args a, size_t i) {
  if (i >= a.size() || !a[i].isList()) return ArgError(op, i, "a list of optional tensors");
  std::vector<std::optional<Tensor>> out;
  for (const IValue& e : a[i].elements()) {
    if (e.isNone()) out.emplace_back();
    else if (e.isTensor()) out.emplace_back(e.toTensor());
    else return ArgError(op, i, "a list of optional tensors");
  }
  return out;
}

Result List(absl::StatusOr<std::vector<Tensor>> ts) {
  if (!ts.ok()) return ts.status();
  std::vector<IValue> elems;
  for (Tensor& t : *ts) elems.push_back(IValue::FromTensor(std::move(t)));
  return std::vector<IValue>{IValue::List(std::move(elems))};
}

Result Two(absl::StatusOr<sk::ValuesIndices> r) {
  if (!r.ok()) return r.status();
  return std::vector<IValue>{IValue::FromTensor(r->values), IValue::FromTensor(r->indices)};
}

Result IntResult(int64_t v) { return std::vector<IValue>{IValue::Int(v)}; }

absl::StatusOr<sk::ScatterReduce> ReduceByName(const std::string& op, const std::string& name) {
  if (name == "none") return sk::ScatterReduce::kNone;
  if (name == "sum" || name == "add") return sk::ScatterReduce::kSum;
  if (name == "prod" || name == "multiply" || name == "mul") return sk::ScatterReduce::kProd;
  if (name == "mean") return sk::ScatterReduce::kMean;
  if (name == "amax" || name == "max") return sk::ScatterReduce::kAmax;
  if (name == "amin" || name == "min") return sk::ScatterReduce::kAmin;
  return absl::InvalidArgumentError(absl::StrCat(op, ": unknown reduction '", name, "'"));
}

void RegisterViews(Registrar& r) {
  for (const char* n : {"aten::view", "aten::reshape"}) {
    const std::string name = n;
    r.Add(name, [name](Args a) -> Result {
      ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
      ASSIGN_OR_RETURN(std::vector<int64_t> s, IntListArg(name, a, 1));
      return One(sk::View(x, s));
    });
  }
  for (const char* n : {"aten::view_as", "aten::reshape_as"}) {
    const std::string name = n;
    r.Add(name, [name](Args a) -> Result {
      ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
      ASSIGN_OR_RETURN(Tensor o, TensorArg(name, a, 1));
      return One(sk::View(x, o.sizes()));
    });
  }
  for (const char* n : {"aten::flatten.using_ints", "aten::flatten.named_out_dim"}) {
    const std::string name = n;
    r.Add(name, [name](Args a) -> Result {
      ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
      ASSIGN_OR_RETURN(int64_t s, IntArg(name, a, 1));
      ASSIGN_OR_RETURN(int64_t e, IntArg(name, a, 2));
      return One(sk::Flatten(x, s, e));
    });
  }
  r.Add("aten::squeeze", [](Args a) -> Result {
    ASSIGN_OR_RETURN(Tensor x, TensorArg("aten::squeeze", a, 0));
    return One(Squeeze(x));
  });
  r.Add("aten::squeeze.dim", [](Args a) -> Result {
    const std::string name = "aten::squeeze.dim";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(int64_t d, IntArg(name, a, 1));
    return One(Squeeze(x, d));
  });
  r.Add("aten::unsqueeze", [](Args a) -> Result {
    const std::string name = "aten::unsqueeze";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(int64_t d, IntArg(name, a, 1));
    return One(Unsqueeze(x, d));
  });
  r.Add("aten::permute", [](Args a) -> Result {
    const std::string name = "aten::permute";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(std::vector<int64_t> d, IntListArg(name, a, 1));
    return One(Permute(x, d));
  });
  r.Add("aten::transpose.int", [](Args a) -> Result {
    const std::string name = "aten::transpose.int";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(int64_t d0, IntArg(name, a, 1));
    ASSIGN_OR_RETURN(int64_t d1, IntArg(name, a, 2));
    return One(Transpose(x, d0, d1));
  });
  r.Add("aten::t", [](Args a) -> Result {
    ASSIGN_OR_RETURN(Tensor x, TensorArg("aten::t", a, 0));
    return One(sk::T(x));
  });
  r.Add("aten::expand", [](Args a) -> Result {
    const std::string name = "aten::expand";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(std::vector<int64_t> s, IntListArg(name, a, 1));
    return One(Expand(x, s));
  });
  r.Add("aten::expand_as", [](Args a) -> Result {
    const std::string name = "aten::expand_as";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(Tensor o, TensorArg(name, a, 1));
    return One(Expand(x, o.sizes()));
  });
  r.Add("aten::contiguous", [](Args a) -> Result {
    ASSIGN_OR_RETURN(Tensor x, TensorArg("aten::contiguous", a, 0));
    if (!x.has_data()) return absl::InvalidArgumentError("aten::contiguous: tensor has no data");
    return One(x.Contiguous());
  });
  r.Add("aten::clone", [](Args a) -> Result {
    ASSIGN_OR_RETURN(Tensor x, TensorArg("aten::clone", a, 0));
    return One(sk::Clone(x));
  });
  r.Add("aten::detach", [](Args a) -> Result {
    ASSIGN_OR_RETURN(Tensor x, TensorArg("aten::detach", a, 0));
    return One(x);
  });
  r.Add("aten::select.int", [](Args a) -> Result {
    const std::string name = "aten::select.int";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(int64_t d, IntArg(name, a, 1));
    ASSIGN_OR_RETURN(int64_t i, IntArg(name, a, 2));
    return One(sk::Select(x, d, i));
  });
  r.Add("aten::narrow", [](Args a) -> Result {
    const std::string name = "aten::narrow";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(int64_t d, IntArg(name, a, 1));
    ASSIGN_OR_RETURN(int64_t s, IntArg(name, a, 2));
    ASSIGN_OR_RETURN(int64_t l, IntArg(name, a, 3));
    return One(sk::Narrow(x, d, s, l));
  });
  r.Add("aten::narrow.Tensor", [](Args a) -> Result {
    const std::string name = "aten::narrow.Tensor";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(int64_t d, IntArg(name, a, 1));
    ASSIGN_OR_RETURN(Tensor st, TensorArg(name, a, 2));
    ASSIGN_OR_RETURN(int64_t l, IntArg(name, a, 3));
    ASSIGN_OR_RETURN(std::vector<int64_t> s, sk::TensorToIntList(st));
    if (s.size() != 1) return absl::InvalidArgumentError(name + ": start must hold one integer");
    return One(sk::Narrow(x, d, s[0], l));
  });
  r.Add("aten::slice.Tensor", [](Args a) -> Result {
    const std::string name = "aten::slice.Tensor";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(int64_t d, IntArg(name, a, 1));
    ASSIGN_OR_RETURN(std::optional<int64_t> s, OptionalIntArg(name, a, 2));
    ASSIGN_OR_RETURN(std::optional<int64_t> e, OptionalIntArg(name, a, 3));
    ASSIGN_OR_RETURN(int64_t step, IntArg(name, a, 4));
    return One(sk::SliceDim(x, d, s, e, step));
  });
  r.Add("aten::diagonal", [](Args a) -> Result {
    const std::string name = "aten::diagonal";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(int64_t o, IntArg(name, a, 1));
    ASSIGN_OR_RETURN(int64_t d1, IntArg(name, a, 2));
    ASSIGN_OR_RETURN(int64_t d2, IntArg(name, a, 3));
    return One(sk::Diagonal(x, o, d1, d2));
  });
  for (const char* n : {"aten::movedim.intlist", "aten::movedim.int"}) {
    const std::string name = n;
    r.Add(name, [name](Args a) -> Result {
      ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
      ASSIGN_OR_RETURN(std::vector<int64_t> s, IntListArg(name, a, 1));
      ASSIGN_OR_RETURN(std::vector<int64_t> d, IntListArg(name, a, 2));
      return One(sk::Movedim(x, s, d));
    });
  }
  r.Add("aten::unbind.int", [](Args a) -> Result {
    const std::string name = "aten::unbind.int";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(int64_t d, IntArg(name, a, 1));
    return List(sk::Unbind(x, d));
  });
  r.Add("aten::chunk", [](Args a) -> Result {
    const std::string name = "aten::chunk";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(int64_t c, IntArg(name, a, 1));
    ASSIGN_OR_RETURN(int64_t d, IntArg(name, a, 2));
    return List(sk::Chunk(x, c, d));
  });
  r.Add("aten::split.Tensor", [](Args a) -> Result {
    const std::string name = "aten::split.Tensor";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(int64_t s, IntArg(name, a, 1));
    ASSIGN_OR_RETURN(int64_t d, IntArg(name, a, 2));
    return List(sk::SplitBySize(x, s, d));
  });
  for (const char* n : {"aten::split.sizes", "aten::split", "aten::split_with_sizes"}) {
    const std::string name = n;
    r.Add(name, [name](Args a) -> Result {
      ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
      ASSIGN_OR_RETURN(std::vector<int64_t> s, IntListArg(name, a, 1));
      ASSIGN_OR_RETURN(int64_t d, IntArg(name, a, 2));
      return List(sk::SplitWithSizes(x, s, d));
    });
  }
}

void RegisterJoinsAndIndexing(Registrar& r) {
  for (const char* n : {"aten::cat", "aten::concat"}) {
    const std::string name = n;
    r.Add(name, [name](Args a) -> Result {
      ASSIGN_OR_RETURN(std::vector<Tensor> ts, TensorListArg(name, a, 0));
      ASSIGN_OR_RETURN(int64_t d, IntArg(name, a, 1));
      return One(sk::Cat(ts, d));
    });
  }
  r.Add("aten::stack", [](Args a) -> Result {
    const std::string name = "aten::stack";
    ASSIGN_OR_RETURN(std::vector<Tensor> ts, TensorListArg(name, a, 0));
    ASSIGN_OR_RETURN(int64_t d, IntArg(name, a, 1));
    return One(sk::Stack(ts, d));
  });
  r.Add("aten::gather", [](Args a) -> Result {
    const std::string name = "aten::gather";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(int64_t d, IntArg(name, a, 1));
    ASSIGN_OR_RETURN(Tensor i, TensorArg(name, a, 2));
    return One(sk::Gather(x, d, i));
  });
  r.Add("kiln::onnx_gather_elements", [](Args a) -> Result {
    const std::string name = "kiln::onnx_gather_elements";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(int64_t d, IntArg(name, a, 1));
    ASSIGN_OR_RETURN(Tensor i, TensorArg(name, a, 2));
    return One(sk::Gather(x, d, i, /*allow_negative=*/true));
  });
  // scatter overloads: (self, dim, index, src|value[, reduce]).
  struct ScatterSchema {
    const char* name;
    bool scalar;
    int reduce_arg;  // -1: none
    bool add;
  };
  const ScatterSchema scatters[] = {
      {"aten::scatter.src", false, -1, false},     {"aten::scatter.value", true, -1, false},
      {"aten::scatter.reduce", false, 4, false},   {"aten::scatter.value_reduce", true, 4, false},
      {"aten::scatter_add", false, -1, true},
  };
  for (const ScatterSchema& s : scatters) {
    const std::string name = s.name;
    r.Add(name, [name, s](Args a) -> Result {
      ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
      ASSIGN_OR_RETURN(int64_t d, IntArg(name, a, 1));
      ASSIGN_OR_RETURN(Tensor i, TensorArg(name, a, 2));
      Tensor src;
      if (s.scalar) {
        ASSIGN_OR_RETURN(src, ScalarArg(name, a, 3));
      } else {
        ASSIGN_OR_RETURN(src, TensorArg(name, a, 3));
      }
      sk::ScatterReduce red = s.add ? sk::ScatterReduce::kSum : sk::ScatterReduce::kNone;
      if (s.reduce_arg >= 0) {
        ASSIGN_OR_RETURN(std::string rs, StringArg(name, a, static_cast<size_t>(s.reduce_arg)));
        if (rs != "add" && rs != "multiply") {
          return absl::InvalidArgumentError(name + ": reduce must be 'add' or 'multiply'");
        }
        ASSIGN_OR_RETURN(red, ReduceByName(name, rs));
      }
      return One(sk::Scatter(x, d, i, src, s.scalar, red));
    });
  }
  r.Add("aten::scatter_reduce.two", [](Args a) -> Result {
    const std::string name = "aten::scatter_reduce.two";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(int64_t d, IntArg(name, a, 1));
    ASSIGN_OR_RETURN(Tensor i, TensorArg(name, a, 2));
    ASSIGN_OR_RETURN(Tensor src, TensorArg(name, a, 3));
    ASSIGN_OR_RETURN(std::string rs, StringArg(name, a, 4));
    ASSIGN_OR_RETURN(bool include_self, BoolArg(name, a, 5));
    if (rs != "sum" && rs != "prod" && rs != "mean" && rs != "amax" && rs != "amin") {
      return absl::InvalidArgumentError(absl::StrCat(name, ": unknown reduce '", rs, "'"));
    }
    ASSIGN_OR_RETURN(sk::ScatterReduce red, ReduceByName(name, rs));
    return One(sk::Scatter(x, d, i, src, false, red, include_self));
  });
  r.Add("kiln::onnx_scatter_elements", [](Args a) -> Result {
    const std::string name = "kiln::onnx_scatter_elements";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(int64_t d, IntArg(name, a, 1));
    ASSIGN_OR_RETURN(Tensor i, TensorArg(name, a, 2));
    ASSIGN_OR_RETURN(Tensor src, TensorArg(name, a, 3));
    ASSIGN_OR_RETURN(std::string rs, StringArg(name, a, 4));
    ASSIGN_OR_RETURN(sk::ScatterReduce red, ReduceByName(name, rs));
    if (red == sk::ScatterReduce::kMean) return absl::InvalidArgumentError(name + ": unknown reduction 'mean'");
    return One(sk::Scatter(x, d, i, src, false, red, true, /*allow_negative=*/true));
  });
  r.Add("aten::index_select", [](Args a) -> Result {
    const std::string name = "aten::index_select";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(int64_t d, IntArg(name, a, 1));
    ASSIGN_OR_RETURN(Tensor i, TensorArg(name, a, 2));
    return One(sk::IndexSelect(x, d, i));
  });
  for (const char* n : {"aten::index.Tensor", "aten::index.Tensor_hacked_twin"}) {
    const std::string name = n;
    r.Add(name, [name](Args a) -> Result {
      ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
      ASSIGN_OR_RETURN(auto idx, OptionalTensorListArg(name, a, 1));
      return One(sk::Index(x, idx));
    });
  }
  for (const char* n : {"aten::index_put", "aten::index_put.hacked_twin"}) {
    const std::string name = n;
    r.Add(name, [name](Args a) -> Result {
      ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
      ASSIGN_OR_RETURN(auto idx, OptionalTensorListArg(name, a, 1));
      ASSIGN_OR_RETURN(Tensor v, TensorArg(name, a, 2));
      ASSIGN_OR_RETURN(bool acc, BoolArg(name, a, 3));
      return One(sk::IndexPut(x, idx, v, acc));
    });
  }
  for (const char* n : {"aten::masked_fill.Scalar", "aten::masked_fill.Tensor"}) {
    const std::string name = n;
    r.Add(name, [name](Args a) -> Result {
      ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
      ASSIGN_OR_RETURN(Tensor m, TensorArg(name, a, 1));
      ASSIGN_OR_RETURN(Tensor v, ScalarArg(name, a, 2));
      if (v.dim() != 0) return absl::InvalidArgumentError(name + ": value must be a 0-dim tensor");
      return One(sk::MaskedFill(x, m, v));
    });
  }
  r.Add("aten::masked_select", [](Args a) -> Result {
    const std::string name = "aten::masked_select";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(Tensor m, TensorArg(name, a, 1));
    return One(sk::MaskedSelect(x, m));
  });
  r.Add("aten::take_along_dim", [](Args a) -> Result {
    const std::string name = "aten::take_along_dim";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(Tensor i, TensorArg(name, a, 1));
    ASSIGN_OR_RETURN(std::optional<int64_t> d, OptionalIntArg(name, a, 2));
    return One(sk::TakeAlongDim(x, i, d));
  });
  r.Add("aten::embedding", [](Args a) -> Result {
    const std::string name = "aten::embedding";
    ASSIGN_OR_RETURN(Tensor w, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(Tensor i, TensorArg(name, a, 1));
    return One(sk::Embedding(w, i));
  });
  r.Add("kiln::gather_nd", [](Args a) -> Result {
    const std::string name = "kiln::gather_nd";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(Tensor i, TensorArg(name, a, 1));
    ASSIGN_OR_RETURN(int64_t b, IntArg(name, a, 2));
    return One(sk::GatherND(x, i, b));
  });
  r.Add("kiln::scatter_nd", [](Args a) -> Result {
    const std::string name = "kiln::scatter_nd";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(Tensor i, TensorArg(name, a, 1));
    ASSIGN_OR_RETURN(Tensor u, TensorArg(name, a, 2));
    ASSIGN_OR_RETURN(std::string rs, StringArg(name, a, 3));
    ASSIGN_OR_RETURN(sk::ScatterReduce red, ReduceByName(name, rs));
    if (red == sk::ScatterReduce::kMean) return absl::InvalidArgumentError(name + ": unknown reduction 'mean'");
    return One(sk::ScatterND(x, i, u, red));
  });
}

absl::StatusOr<sk::PadMode> PadModeByName(const std::string& op, const std::string& mode) {
  if (mode == "constant") return sk::PadMode::kConstant;
  if (mode == "reflect") return sk::PadMode::kReflect;
  if (mode == "replicate" || mode == "edge") return sk::PadMode::kReplicate;
  if (mode == "circular" || mode == "wrap") return sk::PadMode::kCircular;
  return absl::InvalidArgumentError(absl::StrCat(op, ": unknown padding mode '", mode, "'"));
}

void RegisterPadding(Registrar& r) {
  r.Add("aten::constant_pad_nd", [](Args a) -> Result {
    const std::string name = "aten::constant_pad_nd";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(std::vector<int64_t> p, IntListArg(name, a, 1));
    ASSIGN_OR_RETURN(Tensor v, ScalarArg(name, a, 2));
    return One(sk::Pad(x, p, sk::PadMode::kConstant, v, "constant_pad_nd"));
  });
  r.Add("aten::pad", [](Args a) -> Result {
    const std::string name = "aten::pad";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(std::vector<int64_t> p, IntListArg(name, a, 1));
    ASSIGN_OR_RETURN(std::string mode, StringArg(name, a, 2));
    if (mode == "edge" || mode == "wrap") {
      return absl::InvalidArgumentError(absl::StrCat(name, ": unknown padding mode '", mode, "'"));
    }
    ASSIGN_OR_RETURN(sk::PadMode m, PadModeByName(name, mode));
    Tensor v = Tensor::ScalarDouble(0);
    if (a.size() > 3 && !a[3].isNone()) {
      ASSIGN_OR_RETURN(v, ScalarArg(name, a, 3));
      if (m != sk::PadMode::kConstant) {
        return absl::InvalidArgumentError(name + ": a value is only allowed in constant mode");
      }
    }
    return One(sk::Pad(x, p, m, v, "pad"));
  });
  struct PadSchema {
    const char* name;
    int dims;
    sk::PadMode mode;
  };
  const PadSchema pads[] = {
      {"aten::reflection_pad1d", 1, sk::PadMode::kReflect},
      {"aten::reflection_pad2d", 2, sk::PadMode::kReflect},
      {"aten::reflection_pad3d", 3, sk::PadMode::kReflect},
      {"aten::replication_pad1d", 1, sk::PadMode::kReplicate},
      {"aten::replication_pad2d", 2, sk::PadMode::kReplicate},
      {"aten::replication_pad3d", 3, sk::PadMode::kReplicate},
  };
  for (const PadSchema& s : pads) {
    const std::string name = s.name;
    r.Add(name, [name, s](Args a) -> Result {
      ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
      ASSIGN_OR_RETURN(std::vector<int64_t> p, IntListArg(name, a, 1));
      if (static_cast<int>(p.size()) != 2 * s.dims ||
          (x.dim() != s.dims + 1 && x.dim() != s.dims + 2)) {
        return absl::InvalidArgumentError(
            absl::StrCat(name, ": expects ", 2 * s.dims, " pads and a tensor of rank ",
                         s.dims + 1, " or ", s.dims + 2));
      }
      if (s.mode == sk::PadMode::kReflect) {
        for (size_t i = 0; i < p.size(); ++i) {
          const int64_t size = x.size(x.dim() - 1 - static_cast<int64_t>(i / 2));
          if (p[i] >= size) {
            return absl::InvalidArgumentError(absl::StrCat(
                name, ": padding ", p[i], " must be smaller than the dim size ", size));
          }
        }
      }
      return One(sk::Pad(x, p, s.mode, Tensor::ScalarInt(0), name.c_str()));
    });
  }
  r.Add("kiln::onnx_pad", [](Args a) -> Result {
    const std::string name = "kiln::onnx_pad";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(std::vector<int64_t> p, IntListArg(name, a, 1));
    ASSIGN_OR_RETURN(std::string mode, StringArg(name, a, 2));
    ASSIGN_OR_RETURN(std::optional<Tensor> v, OptionalTensorArg(name, a, 3));
    if (mode == "replicate" || mode == "circular") {
      return absl::InvalidArgumentError(absl::StrCat(name, ": unknown padding mode '", mode, "'"));
    }
    ASSIGN_OR_RETURN(sk::PadMode m, PadModeByName(name, mode));
    const int64_t rank = x.dim();
    if (static_cast<int64_t>(p.size()) != 2 * rank) {
      return absl::InvalidArgumentError(absl::StrCat(name, ": expects ", 2 * rank,
                                                     " pads for a tensor of rank ", rank,
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
    return One(sk::Pad(x, torch_order, m, value, "Pad"));
  });
}

void RegisterCopies(Registrar& r) {
  for (const char* n : {"aten::repeat", "aten::tile"}) {
    const std::string name = n;
    const bool tile = name == "aten::tile";
    r.Add(name, [name, tile](Args a) -> Result {
      ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
      ASSIGN_OR_RETURN(std::vector<int64_t> rep, IntListArg(name, a, 1));
      return One(tile ? sk::Tile(x, rep) : sk::Repeat(x, rep));
    });
  }
  r.Add("aten::flip", [](Args a) -> Result {
    const std::string name = "aten::flip";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(std::vector<int64_t> d, IntListArg(name, a, 1));
    return One(sk::Flip(x, d));
  });
  r.Add("aten::roll", [](Args a) -> Result {
    const std::string name = "aten::roll";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(std::vector<int64_t> s, IntListArg(name, a, 1));
    ASSIGN_OR_RETURN(std::vector<int64_t> d, IntListArg(name, a, 2));
    return One(sk::Roll(x, s, d));
  });
  for (const char* n : {"aten::tril", "aten::triu"}) {
    const std::string name = n;
    const bool upper = name == "aten::triu";
    r.Add(name, [name, upper](Args a) -> Result {
      ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
      ASSIGN_OR_RETURN(int64_t k, IntArg(name, a, 1));
      return One(sk::Trilu(x, k, upper));
    });
  }
  r.Add("aten::diag", [](Args a) -> Result {
    const std::string name = "aten::diag";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(int64_t k, IntArg(name, a, 1));
    return One(sk::Diag(x, k));
  });
  r.Add("aten::one_hot", [](Args a) -> Result {
    const std::string name = "aten::one_hot";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(int64_t n, IntArg(name, a, 1));
    return One(sk::OneHot(x, n));
  });
  r.Add("aten::nonzero", [](Args a) -> Result {
    ASSIGN_OR_RETURN(Tensor x, TensorArg("aten::nonzero", a, 0));
    return One(sk::Nonzero(x));
  });
}

void RegisterGenerators(Registrar& r) {
  // arange overloads: positions of start / end / step (-1: default) and dtype.
  struct ArangeSchema {
    const char* name;
    int start, end, step, dtype;
  };
  const ArangeSchema aranges[] = {
      {"aten::arange", -1, 0, -1, 1},
      {"aten::arange.start", 0, 1, -1, 2},
      {"aten::arange.start_step", 0, 1, 2, 3},
  };
  for (const ArangeSchema& s : aranges) {
    const std::string name = s.name;
    r.Add(name, [name, s](Args a) -> Result {
      Tensor start = Tensor::ScalarInt(0), step = Tensor::ScalarInt(1);
      if (s.start >= 0) { ASSIGN_OR_RETURN(start, ScalarArg(name, a, static_cast<size_t>(s.start))); }
      ASSIGN_OR_RETURN(Tensor end, ScalarArg(name, a, static_cast<size_t>(s.end)));
      if (s.step >= 0) { ASSIGN_OR_RETURN(step, ScalarArg(name, a, static_cast<size_t>(s.step))); }
      ASSIGN_OR_RETURN(std::optional<DType> dt, DTypeArg(name, a, static_cast<size_t>(s.dtype)));
      return One(sk::Arange(start, end, step, dt));
    });
  }
  r.Add("aten::full", [](Args a) -> Result {
    const std::string name = "aten::full";
    ASSIGN_OR_RETURN(std::vector<int64_t> s, IntListArg(name, a, 0));
    ASSIGN_OR_RETURN(Tensor v, ScalarArg(name, a, 1));
    ASSIGN_OR_RETURN(std::optional<DType> dt, DTypeArg(name, a, 2));
    return One(sk::Full(s, v, dt));
  });
  // zeros / ones / empty(size, dtype...): float32 by default.
  struct ConstSchema {
    const char* name;
    int value;
  };
  for (const ConstSchema& c : {ConstSchema{"aten::zeros", 0}, ConstSchema{"aten::ones", 1},
                               ConstSchema{"aten::empty.memory_format", 0}}) {
    const std::string name = c.name;
    const int value = c.value;
    r.Add(name, [name, value](Args a) -> Result {
      ASSIGN_OR_RETURN(std::vector<int64_t> s, IntListArg(name, a, 0));
      ASSIGN_OR_RETURN(std::optional<DType> dt, DTypeArg(name, a, 1));
      return One(sk::Full(s, Tensor::ScalarInt(value), dt.value_or(DType::kFloat32)));
    });
  }
  // *_like(self, [fill,] dtype...): self's shape and dtype by default.
  for (const ConstSchema& c : {ConstSchema{"aten::zeros_like", 0}, ConstSchema{"aten::ones_like", 1},
                               ConstSchema{"aten::empty_like", 0}, ConstSchema{"aten::full_like", -1}}) {
    const std::string name = c.name;
    const int value = c.value;
    r.Add(name, [name, value](Args a) -> Result {
      ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
      Tensor v = Tensor::ScalarInt(value);
      size_t dtype_arg = 1;
      if (value < 0) {
        ASSIGN_OR_RETURN(v, ScalarArg(name, a, 1));
        dtype_arg = 2;
      }
      ASSIGN_OR_RETURN(std::optional<DType> dt, DTypeArg(name, a, dtype_arg));
      return One(sk::Full(x.sizes(), v, dt.value_or(x.dtype())));
    });
  }
  // new_*(self, size, [fill,] dtype...): self's dtype by default.
  for (const ConstSchema& c : {ConstSchema{"aten::new_zeros", 0}, ConstSchema{"aten::new_ones", 1},
                               ConstSchema{"aten::new_empty", 0}, ConstSchema{"aten::new_full", -1}}) {
    const std::string name = c.name;
    const int value = c.value;
    r.Add(name, [name, value](Args a) -> Result {
      ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
      ASSIGN_OR_RETURN(std::vector<int64_t> s, IntListArg(name, a, 1));
      Tensor v = Tensor::ScalarInt(value);
      size_t dtype_arg = 2;
      if (value < 0) {
        ASSIGN_OR_RETURN(v, ScalarArg(name, a, 2));
        dtype_arg = 3;
      }
      ASSIGN_OR_RETURN(std::optional<DType> dt, DTypeArg(name, a, dtype_arg));
      return One(sk::Full(s, v, dt.value_or(x.dtype())));
    });
  }
  r.Add("aten::eye", [](Args a) -> Result {
    const std::string name = "aten::eye";
    ASSIGN_OR_RETURN(int64_t n, IntArg(name, a, 0));
    ASSIGN_OR_RETURN(std::optional<DType> dt, DTypeArg(name, a, 1));
    return One(sk::Eye(n, n, 0, dt.value_or(DType::kFloat32)));
  });
  r.Add("aten::eye.m", [](Args a) -> Result {
    const std::string name = "aten::eye.m";
    ASSIGN_OR_RETURN(int64_t n, IntArg(name, a, 0));
    ASSIGN_OR_RETURN(int64_t m, IntArg(name, a, 1));
    ASSIGN_OR_RETURN(std::optional<DType> dt, DTypeArg(name, a, 2));
    return One(sk::Eye(n, m, 0, dt.value_or(DType::kFloat32)));
  });
  r.Add("kiln::eye_like", [](Args a) -> Result {
    const std::string name = "kiln::eye_like";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(int64_t k, IntArg(name, a, 1));
    ASSIGN_OR_RETURN(std::optional<DType> dt, DTypeArg(name, a, 2));
    if (x.dim() != 2) return absl::InvalidArgumentError(name + ": input must be 2-D");
    return One(sk::Eye(x.size(0), x.size(1), k, dt.value_or(x.dtype())));
  });
  r.Add("kiln::range", [](Args a) -> Result {
    const std::string name = "kiln::range";
    ASSIGN_OR_RETURN(Tensor s, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(Tensor l, TensorArg(name, a, 1));
    ASSIGN_OR_RETURN(Tensor d, TensorArg(name, a, 2));
    return One(sk::Range(s, l, d));
  });
  r.Add("kiln::onnx_one_hot", [](Args a) -> Result {
    const std::string name = "kiln::onnx_one_hot";
    ASSIGN_OR_RETURN(Tensor i, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(Tensor d, TensorArg(name, a, 1));
    ASSIGN_OR_RETURN(Tensor v, TensorArg(name, a, 2));
    ASSIGN_OR_RETURN(int64_t axis, IntArg(name, a, 3));
    return One(sk::OnnxOneHot(i, d, v, axis));
  });
}

Result UniqueOutputs(absl::StatusOr<sk::UniqueResult> u, bool inverse, bool counts) {
  if (!u.ok()) return u.status();
  const Tensor empty = Tensor::Empty(DType::kInt64, {0});
  return std::vector<IValue>{IValue::FromTensor(u->values),
                             IValue::FromTensor(inverse ? u->inverse : empty),
                             IValue::FromTensor(counts ? u->counts : empty)};
}

void RegisterSorting(Registrar& r) {
  r.Add("aten::topk", [](Args a) -> Result {
    const std::string name = "aten::topk";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(int64_t k, IntArg(name, a, 1));
    ASSIGN_OR_RETURN(int64_t d, IntArg(name, a, 2));
    ASSIGN_OR_RETURN(bool largest, BoolArg(name, a, 3));
    return Two(sk::TopK(x, k, d, largest));
  });
  r.Add("aten::sort", [](Args a) -> Result {
    const std::string name = "aten::sort";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(int64_t d, IntArg(name, a, 1));
    ASSIGN_OR_RETURN(bool desc, BoolArg(name, a, 2));
    return Two(sk::Sort(x, d, desc));
  });
  r.Add("aten::sort.stable", [](Args a) -> Result {
    const std::string name = "aten::sort.stable";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(int64_t d, IntArg(name, a, 2));
    ASSIGN_OR_RETURN(bool desc, BoolArg(name, a, 3));
    return Two(sk::Sort(x, d, desc));
  });
  for (const char* n : {"aten::argsort", "aten::argsort.stable"}) {
    const std::string name = n;
    const size_t first = name == "aten::argsort" ? 1 : 2;
    r.Add(name, [name, first](Args a) -> Result {
      ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
      ASSIGN_OR_RETURN(int64_t d, IntArg(name, a, first));
      ASSIGN_OR_RETURN(bool desc, BoolArg(name, a, first + 1));
      ASSIGN_OR_RETURN(sk::ValuesIndices s, sk::Sort(x, d, desc));
      return One(s.indices);
    });
  }
  for (const char* n : {"aten::cumsum", "aten::cumprod"}) {
    const std::string name = n;
    const bool prod = name == "aten::cumprod";
    r.Add(name, [name, prod](Args a) -> Result {
      ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
      ASSIGN_OR_RETURN(int64_t d, IntArg(name, a, 1));
      ASSIGN_OR_RETURN(std::optional<DType> dt, DTypeArg(name, a, 2));
      return One(sk::Cumulative(x, d, dt, prod));
    });
  }
  r.Add("kiln::onnx_cumsum", [](Args a) -> Result {
    const std::string name = "kiln::onnx_cumsum";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(int64_t d, IntArg(name, a, 1));
    ASSIGN_OR_RETURN(bool exclusive, BoolArg(name, a, 2));
    ASSIGN_OR_RETURN(bool reverse, BoolArg(name, a, 3));
    return One(sk::Cumulative(x, d, x.dtype(), false, exclusive, reverse));
  });
  r.Add("aten::unique_dim", [](Args a) -> Result {
    const std::string name = "aten::unique_dim";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(int64_t d, IntArg(name, a, 1));
    // ATen's unique_dim computes inverse and counts whatever the flags say.
    return UniqueOutputs(sk::Unique(x, d, true, false), true, true);
  });
  r.Add("aten::_unique2", [](Args a) -> Result {
    const std::string name = "aten::_unique2";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(bool inv, BoolArg(name, a, 2));
    ASSIGN_OR_RETURN(bool cnt, BoolArg(name, a, 3));
    return UniqueOutputs(sk::Unique(x, std::nullopt, true, false), inv, cnt);
  });
  r.Add("aten::unique_consecutive", [](Args a) -> Result {
    const std::string name = "aten::unique_consecutive";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(bool inv, BoolArg(name, a, 1));
    ASSIGN_OR_RETURN(bool cnt, BoolArg(name, a, 2));
    ASSIGN_OR_RETURN(std::optional<int64_t> d, OptionalIntArg(name, a, 3));
    return UniqueOutputs(sk::Unique(x, d, true, true), inv, cnt);
  });
  r.Add("kiln::onnx_unique", [](Args a) -> Result {
    const std::string name = "kiln::onnx_unique";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(std::optional<int64_t> d, OptionalIntArg(name, a, 1));
    ASSIGN_OR_RETURN(bool sorted, BoolArg(name, a, 2));
    ASSIGN_OR_RETURN(sk::UniqueResult u, sk::Unique(x, d, sorted, false));
    return std::vector<IValue>{IValue::FromTensor(u.values), IValue::FromTensor(u.first_indices),
                               IValue::FromTensor(u.inverse), IValue::FromTensor(u.counts)};
  });
}

void RegisterShapeQueries(Registrar& r) {
  r.Add("aten::size.int", [](Args a) -> Result {
    const std::string name = "aten::size.int";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(int64_t d, IntArg(name, a, 1));
    if (x.dim() == 0) return absl::InvalidArgumentError(name + ": a 0-dim tensor has no dims");
    ASSIGN_OR_RETURN(int64_t n, NormalizeDim(d, x.dim(), "size"));
    return IntResult(x.size(n));
  });
  r.Add("aten::size", [](Args a) -> Result {
    ASSIGN_OR_RETURN(Tensor x, TensorArg("aten::size", a, 0));
    return std::vector<IValue>{IValue::IntList(x.sizes())};
  });
  r.Add("aten::dim", [](Args a) -> Result {
    ASSIGN_OR_RETURN(Tensor x, TensorArg("aten::dim", a, 0));
    return IntResult(x.dim());
  });
  r.Add("aten::numel", [](Args a) -> Result {
    ASSIGN_OR_RETURN(Tensor x, TensorArg("aten::numel", a, 0));
    return IntResult(x.numel());
  });
  r.Add("aten::len.Tensor", [](Args a) -> Result {
    ASSIGN_OR_RETURN(Tensor x, TensorArg("aten::len.Tensor", a, 0));
    if (x.dim() == 0) return absl::InvalidArgumentError("aten::len.Tensor: len() of a 0-d tensor");
    return IntResult(x.size(0));
  });
  r.Add("kiln::tensor_to_int_list", [](Args a) -> Result {
    ASSIGN_OR_RETURN(Tensor x, TensorArg("kiln::tensor_to_int_list", a, 0));
    ASSIGN_OR_RETURN(std::vector<int64_t> v, sk::TensorToIntList(x));
    return std::vector<IValue>{IValue::IntList(v)};
  });
  r.Add("kiln::tensor_to_int", [](Args a) -> Result {
    const std::string name = "kiln::tensor_to_int";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(std::vector<int64_t> v, sk::TensorToIntList(x));
    if (v.size() != 1) return absl::InvalidArgumentError(name + ": expects exactly one element");
    return IntResult(v[0]);
  });
  r.Add("kiln::shape", [](Args a) -> Result {
    const std::string name = "kiln::shape";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(int64_t s, IntArg(name, a, 1));
    ASSIGN_OR_RETURN(std::optional<int64_t> e, OptionalIntArg(name, a, 2));
    return One(sk::ShapeOf(x, s, e));
  });
  r.Add("kiln::size", [](Args a) -> Result {
    ASSIGN_OR_RETURN(Tensor x, TensorArg("kiln::size", a, 0));
    return One(Tensor::ScalarInt(x.numel()));
  });
}

void RegisterOnnxShapes(Registrar& r) {
  r.Add("kiln::onnx_reshape", [](Args a) -> Result {
    const std::string name = "kiln::onnx_reshape";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(std::vector<int64_t> s, IntListArg(name, a, 1));
    ASSIGN_OR_RETURN(bool allowzero, BoolArg(name, a, 2));
    return One(sk::OnnxReshape(x, s, allowzero));
  });
  r.Add("kiln::onnx_flatten", [](Args a) -> Result {
    const std::string name = "kiln::onnx_flatten";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(int64_t axis, IntArg(name, a, 1));
    return One(sk::OnnxFlatten(x, axis));
  });
  r.Add("kiln::onnx_squeeze", [](Args a) -> Result {
    const std::string name = "kiln::onnx_squeeze";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> axes, DimsArg(name, a, 1));
    return One(sk::OnnxSqueeze(x, axes));
  });
  r.Add("kiln::onnx_unsqueeze", [](Args a) -> Result {
    const std::string name = "kiln::onnx_unsqueeze";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(std::vector<int64_t> axes, IntListArg(name, a, 1));
    return One(sk::OnnxUnsqueeze(x, axes));
  });
  r.Add("kiln::onnx_expand", [](Args a) -> Result {
    const std::string name = "kiln::onnx_expand";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(std::vector<int64_t> s, IntListArg(name, a, 1));
    return One(sk::OnnxExpand(x, s));
  });
  r.Add("kiln::onnx_slice", [](Args a) -> Result {
    const std::string name = "kiln::onnx_slice";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(std::vector<int64_t> starts, IntListArg(name, a, 1));
    ASSIGN_OR_RETURN(std::vector<int64_t> ends, IntListArg(name, a, 2));
    ASSIGN_OR_RETURN(std::vector<int64_t> axes, IntListArg(name, a, 3));
    ASSIGN_OR_RETURN(std::vector<int64_t> steps, IntListArg(name, a, 4));
    return One(sk::OnnxSlice(x, starts, ends, axes, steps));
  });
  r.Add("kiln::compress", [](Args a) -> Result {
    const std::string name = "kiln::compress";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(Tensor c, TensorArg(name, a, 1));
    ASSIGN_OR_RETURN(std::optional<int64_t> axis, OptionalIntArg(name, a, 2));
    return One(sk::Compress(x, c, axis));
  });
  r.Add("kiln::reverse_sequence", [](Args a) -> Result {
    const std::string name = "kiln::reverse_sequence";
    ASSIGN_OR_RETURN(Tensor x, TensorArg(name, a, 0));
    ASSIGN_OR_RETURN(Tensor l, TensorArg(name, a, 1));
    ASSIGN_OR_RETURN(int64_t b, IntArg(name, a, 2));
    ASSIGN_OR_RETURN(int64_t t, IntArg(name, a, 3));
    return One(sk::ReverseSequence(x, l, b, t));
  });
}

}  // namespace

void RegisterShapeKernels(Registrar& r) {
  RegisterViews(r);
  RegisterJoinsAndIndexing(r);
  RegisterPadding(r);
  RegisterCopies(r);
  RegisterGenerators(r);
  RegisterSorting(r);
  RegisterShapeQueries(r);
  RegisterOnnxShapes(r);
}

}  // namespace kiln::runtime
