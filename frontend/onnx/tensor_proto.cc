#include "frontend/onnx/tensor_proto.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <fstream>
#include <limits>
#include <sstream>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "support/parallel.h"
#include "support/status.h"

namespace kiln::frontend::onnx_import {
namespace {

using TP = onnx::TensorProto;

// Largest tensor a model may declare (elements); bigger claims are corrupt
// files rather than real models.
constexpr int64_t kMaxElements = int64_t{1} << 34;

struct TypeEntry {
  int32_t onnx;
  const char* name;
  int64_t kiln_code;  // c10 code; -1: none
};

constexpr TypeEntry kTypes[] = {
    {TP::FLOAT, "FLOAT", 6},       {TP::UINT8, "UINT8", 0},
    {TP::INT8, "INT8", 1},         {TP::UINT16, "UINT16", 27},
    {TP::INT16, "INT16", 2},       {TP::INT32, "INT32", 3},
    {TP::INT64, "INT64", 4},       {TP::STRING, "STRING", -1},
    {TP::BOOL, "BOOL", 11},        {TP::FLOAT16, "FLOAT16", 5},
    {TP::DOUBLE, "DOUBLE", 7},     {TP::UINT32, "UINT32", 28},
    {TP::UINT64, "UINT64", 29},    {TP::COMPLEX64, "COMPLEX64", 9},
    {TP::COMPLEX128, "COMPLEX128", -1}, {TP::BFLOAT16, "BFLOAT16", 15},
};

const TypeEntry* FindType(int32_t t) {
  for (const TypeEntry& e : kTypes) {
    if (e.onnx == t) return &e;
  }
  return nullptr;
}

absl::Status Corrupt(const TP& p, absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("tensor '", p.name(), "' (", OnnxTypeName(p.data_type()), "): ", what));
}

// From this size on, a tensor's bytes are copied into memory mapped and
// populated in one call (MAP_POPULATE) rather than faulted in a page at a
// time by the copy: a model's weights are most of an import's time, and
// half of that was page faults (vit_b_16's 346 MB: ~190 -> ~110 ms here).
constexpr size_t kPopulatedBytes = size_t{1} << 20;

// A contiguous tensor holding `nbytes` copied from `bytes`, over populated
// memory; nullopt when it cannot be mapped (the caller copies as usual).
std::optional<Tensor> CopyIntoPopulatedMemory(DType dtype, std::vector<int64_t> sizes, const void* bytes,
                                              size_t nbytes) {
  void* data = ::mmap(nullptr, nbytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (data == MAP_FAILED) return std::nullopt;
  std::shared_ptr<void> owner(data, [nbytes](void* p) { ::munmap(p, nbytes); });
  std::shared_ptr<Storage> storage = Storage::WrapCpu(data, nbytes, owner);  // page-aligned
  if (storage == nullptr) return std::nullopt;
  std::memcpy(data, bytes, nbytes);
  std::vector<int64_t> strides = Tensor::ContiguousStrides(sizes);
  absl::StatusOr<Tensor> t = Tensor::FromStorage(std::move(storage), dtype, std::move(sizes), std::move(strides), 0);
  if (!t.ok()) return std::nullopt;
  return *std::move(t);
}

// TensorsFromProtos: below this many bytes in all, one thread (a small
// model gains nothing from threads); above, at most this many threads
// (the copy is bound by page allocation and memory bandwidth).
constexpr size_t kParallelCopyBytes = size_t{64} << 20;
constexpr size_t kMaxCopyThreads = 16;

template <typename Src, typename Dst>
void CopyConverted(const Src& src, Dst* dst) {
  for (int i = 0; i < src.size(); ++i) dst[i] = static_cast<Dst>(src.Get(i));
}

}  // namespace

std::string OnnxTypeName(int32_t elem_type) {
  const TypeEntry* e = FindType(elem_type);
  return e ? e->name : absl::StrCat("type code ", elem_type);
}

absl::StatusOr<DType> DTypeFromOnnx(int32_t elem_type) {
  const TypeEntry* e = FindType(elem_type);
  std::optional<DType> d = e && e->kiln_code >= 0 ? DTypeFromCode(e->kiln_code) : std::nullopt;
  if (!d) {
    return absl::UnimplementedError(
        absl::StrCat("ONNX element type ", OnnxTypeName(elem_type), " is not supported"));
  }
  return *d;
}

int32_t OnnxTypeFromDType(DType dtype) {
  for (const TypeEntry& e : kTypes) {
    if (e.kiln_code == DTypeCode(dtype)) return e.onnx;
  }
  return TP::UNDEFINED;
}

namespace {

// `in_place`, when set, stands for the raw_data field.
absl::StatusOr<Tensor> ConvertTensor(const TP& p, std::optional<absl::string_view> in_place) {
  if (p.data_location() == TP::EXTERNAL || p.external_data_size() > 0) {
    return absl::UnimplementedError(
        absl::StrCat("tensor '", p.name(), "': external data is not supported"));
  }
  if (p.has_segment()) {
    return absl::UnimplementedError(
        absl::StrCat("tensor '", p.name(), "': segmented tensors are not supported"));
  }
  ASSIGN_OR_RETURN(DType dtype, DTypeFromOnnx(p.data_type()));
  std::vector<int64_t> sizes;
  int64_t numel = 1;
  for (int64_t d : p.dims()) {
    if (d < 0) return Corrupt(p, absl::StrCat("negative dimension ", d));
    if (d > 0 && numel > kMaxElements / d) return Corrupt(p, "too many elements");
    numel *= d;
    sizes.push_back(d);
  }
  const size_t es = DTypeSize(dtype);
  const size_t nbytes = static_cast<size_t>(numel) * es;
  if (in_place.has_value() || p.has_raw_data()) {
    const absl::string_view raw = in_place.has_value() ? *in_place : absl::string_view(p.raw_data());
    if (raw.size() != nbytes) {
      return Corrupt(p, absl::StrCat("raw_data has ", raw.size(), " bytes, expected ",
                                     nbytes, " for ", numel, " elements"));
    }
    if (nbytes >= kPopulatedBytes) {
      if (std::optional<Tensor> t = CopyIntoPopulatedMemory(dtype, sizes, raw.data(), nbytes)) return *t;
    }
    return Tensor::FromBytes(dtype, std::move(sizes), raw.data(), nbytes);
  }
  int64_t present = 0;
  switch (p.data_type()) {
    case TP::FLOAT: present = p.float_data_size(); break;
    case TP::COMPLEX64: present = p.float_data_size() / 2; break;
    case TP::DOUBLE: present = p.double_data_size(); break;
    case TP::INT64: present = p.int64_data_size(); break;
    case TP::UINT32:
    case TP::UINT64: present = p.uint64_data_size(); break;
    default: present = p.int32_data_size(); break;
  }
  if (present != numel) {
    return Corrupt(p, absl::StrCat("has ", present, " values, expected ", numel));
  }
  Tensor t = Tensor::Empty(dtype, std::move(sizes));
  if (numel == 0) return t;
  void* out = t.raw_data();
  switch (p.data_type()) {
    case TP::FLOAT: CopyConverted(p.float_data(), static_cast<float*>(out)); break;
    case TP::COMPLEX64: CopyConverted(p.float_data(), static_cast<float*>(out)); break;
    case TP::DOUBLE: CopyConverted(p.double_data(), static_cast<double*>(out)); break;
    case TP::INT64: CopyConverted(p.int64_data(), static_cast<int64_t*>(out)); break;
    case TP::UINT32: CopyConverted(p.uint64_data(), static_cast<uint32_t*>(out)); break;
    case TP::UINT64: CopyConverted(p.uint64_data(), static_cast<uint64_t*>(out)); break;
    case TP::INT32: CopyConverted(p.int32_data(), static_cast<int32_t*>(out)); break;
    case TP::INT16: CopyConverted(p.int32_data(), static_cast<int16_t*>(out)); break;
    case TP::INT8: CopyConverted(p.int32_data(), static_cast<int8_t*>(out)); break;
    case TP::UINT16:
    case TP::FLOAT16:
    case TP::BFLOAT16: CopyConverted(p.int32_data(), static_cast<uint16_t*>(out)); break;
    case TP::UINT8: CopyConverted(p.int32_data(), static_cast<uint8_t*>(out)); break;
    case TP::BOOL: {
      bool* b = static_cast<bool*>(out);
      for (int i = 0; i < p.int32_data_size(); ++i) b[i] = p.int32_data(i) != 0;
      break;
    }
    default:
      return Corrupt(p, "unsupported data field");
  }
  return t;
}

}  // namespace

absl::StatusOr<Tensor> TensorFromProto(const TP& p) { return ConvertTensor(p, std::nullopt); }

absl::StatusOr<Tensor> TensorFromProto(const TP& p, absl::string_view raw_data) { return ConvertTensor(p, raw_data); }

std::vector<absl::StatusOr<Tensor>> TensorsFromProtos(
    absl::Span<const onnx::TensorProto* const> protos,
    absl::Span<const std::optional<absl::string_view>> raw_data) {
  auto convert = [&](size_t i) {
    return i < raw_data.size() && raw_data[i].has_value() ? TensorFromProto(*protos[i], *raw_data[i])
                                                          : TensorFromProto(*protos[i]);
  };
  auto bytes_of = [&](size_t i) {
    return i < raw_data.size() && raw_data[i].has_value() ? raw_data[i]->size() : protos[i]->raw_data().size();
  };
  std::vector<absl::StatusOr<Tensor>> out(protos.size(), absl::UnknownError("not converted"));
  size_t total = 0;
  for (size_t i = 0; i < protos.size(); ++i) total += bytes_of(i);
  const size_t threads = total < kParallelCopyBytes ? 1 : std::min(kMaxCopyThreads, HardwareThreads());
  std::vector<size_t> order(protos.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  // Largest first, so that no thread is left with a large tensor at the end.
  if (threads > 1) {
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return bytes_of(a) > bytes_of(b); });
  }
  ParallelFor(order.size(), threads, [&](size_t k) { out[order[k]] = convert(order[k]); });
  return out;
}

onnx::TensorProto TensorToProto(const Tensor& t, absl::string_view name) {
  TP p;
  p.set_name(std::string(name));
  p.set_data_type(OnnxTypeFromDType(t.dtype()));
  for (int64_t d : t.sizes()) p.add_dims(d);
  Tensor c = t.Contiguous();
  if (c.has_data()) {
    p.set_raw_data(std::string(static_cast<const char*>(c.raw_data()),
                               static_cast<size_t>(c.numel()) * c.element_size()));
  }
  return p;
}

absl::StatusOr<Tensor> ReadTensorFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::stringstream buf;
  buf << in.rdbuf();
  TP p;
  if (!p.ParseFromString(buf.str())) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a valid onnx.TensorProto"));
  }
  absl::StatusOr<Tensor> t = TensorFromProto(p);
  if (!t.ok()) {
    return absl::Status(t.status().code(), absl::StrCat(path, ": ", t.status().message()));
  }
  return t;
}

}  // namespace kiln::frontend::onnx_import
