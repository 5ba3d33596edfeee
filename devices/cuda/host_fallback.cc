#include "devices/cuda/host_fallback.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/ivalue.h"
#include "ir/op_registry.h"
#include "runtime/interpreter.h"
#include "runtime/register_kernels.h"
#include "support/status.h"

namespace kiln::devices::cuda {
namespace {

absl::Status EnsureReferenceKernels() {
  static const absl::Status* status = new absl::Status(runtime::RegisterReferenceKernels(ir::BuiltinOps()));
  return *status;
}

std::string Shape(const Tensor& t) { return absl::StrCat("[", absl::StrJoin(t.sizes(), ", "), "]"); }

absl::Status CopyResults(const std::string& what, const std::vector<Tensor>& results, std::vector<Tensor>& outputs) {
  if (results.size() != outputs.size()) {
    return absl::InternalError(absl::StrCat(what, " returned ", results.size(), " tensors for ", outputs.size(),
                                            " outputs"));
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    absl::Status s = CopyStrided(results[i], outputs[i]);
    if (!s.ok()) return absl::InternalError(absl::StrCat(what, " output ", i, ": ", s.message()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CopyStrided(const Tensor& src, Tensor& dst) {
  if (src.dtype() != dst.dtype() || src.sizes() != dst.sizes()) {
    return absl::InvalidArgumentError(absl::StrCat("copy: ", DTypeName(src.dtype()), Shape(src), " into ",
                                                   DTypeName(dst.dtype()), Shape(dst)));
  }
  const int64_t n = src.numel();
  if (n == 0) return absl::OkStatus();
  if (!src.has_data() || !dst.has_data()) return absl::InvalidArgumentError("copy: tensor without data");
  const size_t es = src.element_size();
  if (src.is_contiguous() && dst.is_contiguous()) {
    std::memmove(dst.raw_data(), src.raw_data(), static_cast<size_t>(n) * es);
    return absl::OkStatus();
  }
  const char* s = static_cast<const char*>(src.raw_data());
  char* d = static_cast<char*>(dst.raw_data());
  const int64_t rank = src.dim();
  std::vector<int64_t> idx(static_cast<size_t>(rank), 0);
  int64_t so = 0, doff = 0;
  for (int64_t flat = 0; flat < n; ++flat) {
    std::memcpy(d + doff * static_cast<int64_t>(es), s + so * static_cast<int64_t>(es), es);
    for (int64_t i = rank - 1; i >= 0; --i) {
      if (++idx[i] < src.size(i)) {
        so += src.strides()[i];
        doff += dst.strides()[i];
        break;
      }
      so -= (idx[i] - 1) * src.strides()[i];
      doff -= (idx[i] - 1) * dst.strides()[i];
      idx[i] = 0;
    }
  }
  return absl::OkStatus();
}

absl::Status RunHostExtern(const std::string& op, const std::vector<lowering::ExternArg>& args,
                           const std::vector<Tensor>& buffer_args, std::vector<Tensor>& outputs) {
  RETURN_IF_ERROR(EnsureReferenceKernels());
  std::vector<ir::IValue> values;
  size_t next = 0;
  for (const lowering::ExternArg& a : args) {
    if (!a.buffer.empty()) {
      if (next >= buffer_args.size()) return absl::InternalError("extern: too few buffer arguments");
      values.push_back(ir::IValue::FromTensor(buffer_args[next++]));
    } else if (a.is_buffer_list) {
      if (buffer_args.size() - next < a.buffer_list.size()) {
        return absl::InternalError("extern: too few buffer arguments");
      }
      std::vector<ir::IValue> list;
      for (size_t i = 0; i < a.buffer_list.size(); ++i) list.push_back(ir::IValue::FromTensor(buffer_args[next++]));
      values.push_back(ir::IValue::List(std::move(list)));
    } else {
      values.push_back(a.constant.has_value() ? *a.constant : ir::IValue::None());
    }
  }
  const ir::Operator* overload = ir::BuiltinOps().Find(op);
  if (overload == nullptr || !overload->kernel) {
    return absl::UnimplementedError(absl::StrCat("extern kernel '", op, "' has no reference kernel"));
  }
  absl::StatusOr<std::vector<ir::IValue>> results = overload->kernel(values);
  if (!results.ok()) {
    return absl::Status(results.status().code(), absl::StrCat("extern ", op, ": ", results.status().message()));
  }
  std::vector<Tensor> tensors;
  for (const ir::IValue& r : *results) {
    if (r.isTensor()) {
      tensors.push_back(r.toTensor());
    } else if (r.isList() || r.isTuple()) {
      for (const ir::IValue& e : r.elements()) {
        if (e.isTensor()) tensors.push_back(e.toTensor());
      }
    }
  }
  return CopyResults(absl::StrCat("extern ", op), tensors, outputs);
}

absl::Status RunHostIsland(const ir::Graph& island, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) {
  RETURN_IF_ERROR(EnsureReferenceKernels());
  if (inputs.size() != island.inputs().size() || outputs.size() != island.outputs().size()) {
    return absl::InvalidArgumentError(absl::StrCat("interpreter island: ", inputs.size(), " inputs and ",
                                                   outputs.size(), " outputs given, ", island.inputs().size(),
                                                   " and ", island.outputs().size(), " expected"));
  }
  runtime::Interpreter interpreter(island);
  std::vector<ir::IValue> values;
  for (const Tensor& t : inputs) values.push_back(ir::IValue::FromTensor(t));
  absl::StatusOr<std::vector<ir::IValue>> results = interpreter.Run(values);
  if (!results.ok()) {
    return absl::Status(results.status().code(), absl::StrCat("interpreter island: ", results.status().message()));
  }
  std::vector<Tensor> tensors;
  for (size_t i = 0; i < results->size(); ++i) {
    if (!(*results)[i].isTensor()) {
      return absl::InternalError(absl::StrCat("interpreter island output ", i, " is not a tensor"));
    }
    tensors.push_back((*results)[i].toTensor());
  }
  return CopyResults("interpreter island", tensors, outputs);
}

}  // namespace kiln::devices::cuda
