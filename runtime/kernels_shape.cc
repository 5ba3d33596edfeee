// Reference kernels of the shape family (see kernels_shape.h).
//
// Inputs are first made contiguous, so element i of an input lives at byte
// i * element_size of its data; outputs are built element by element with
// bytewise copies (any dtype) or SetDouble/SetInt where values are computed.
#include "runtime/kernels_shape.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <numeric>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "support/promotion.h"
#include "runtime/tensor_ops.h"
#include "support/status.h"

namespace kiln::runtime::shape {
namespace {

constexpr int64_t kMaxBytes = int64_t{1} << 32;

absl::Status Invalid(const char* op, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(op, ": ", what));
}

absl::Status RequireData(const Tensor& t, const char* op) {
  if (!t.defined()) return Invalid(op, "undefined tensor");
  if (!t.has_data()) return Invalid(op, "tensor has no data (placeholder)");
  return absl::OkStatus();
}

// A new zero-filled contiguous tensor; refuses negative or huge shapes
// instead of letting the allocator abort.
absl::StatusOr<Tensor> NewTensor(DType dtype, std::vector<int64_t> sizes, const char* op) {
  int64_t n = 1;
  for (int64_t s : sizes) {
    if (s < 0) return Invalid(op, absl::StrCat("negative size in ", ShapeToString(sizes)));
    if (s != 0 && n > kMaxBytes / s) {
      return Invalid(op, absl::StrCat("result of shape ", ShapeToString(sizes), " is too large"));
    }
    n *= s;
  }
  if (n * static_cast<int64_t>(DTypeSize(dtype)) > kMaxBytes) {
    return Invalid(op, absl::StrCat("result of shape ", ShapeToString(sizes), " is too large"));
  }
  return Tensor::Empty(dtype, std::move(sizes));
}

int64_t Numel(Sizes sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

std::vector<int64_t> RowMajorStrides(Sizes sizes) {
  std::vector<int64_t> strides(sizes.size(), 1);
  for (size_t i = sizes.size(); i-- > 1;) strides[i - 1] = strides[i] * std::max<int64_t>(sizes[i], 1);
  return strides;
}

// Coordinates of flat index `flat` under row-major `sizes`.
void Unravel(int64_t flat, Sizes sizes, std::vector<int64_t>& coords) {
  coords.resize(sizes.size());
  for (size_t d = sizes.size(); d-- > 0;) {
    const int64_t s = sizes[d] > 0 ? sizes[d] : 1;
    coords[d] = flat % s;
    flat /= s;
  }
}

// Contiguous byte view of a tensor's elements.
struct Bytes {
  Tensor t;  // contiguous
  const char* data;
  size_t es;
  const char* at(int64_t i) const { return data + static_cast<size_t>(i) * es; }
};

absl::StatusOr<Bytes> ContiguousBytes(const Tensor& x, const char* op) {
  RETURN_IF_ERROR(RequireData(x, op));
  Bytes b;
  b.t = x.Contiguous();
  b.data = static_cast<const char*>(b.t.raw_data());
  b.es = b.t.element_size();
  return b;
}

char* MutableAt(Tensor& out, int64_t i) {
  return static_cast<char*>(out.raw_data()) + static_cast<size_t>(i) * out.element_size();
}

// The bytes of scalar `value` (a 0-dim or one-element tensor) in `dtype`.
absl::StatusOr<Tensor> ScalarIn(const Tensor& value, DType dtype, const char* op) {
  RETURN_IF_ERROR(RequireData(value, op));
  if (value.numel() != 1) {
    return Invalid(op, absl::StrCat("expected a single value, got shape ",
                                    ShapeToString(value.sizes())));
  }
  if (IsFloatingPoint(value.dtype()) || IsComplex(value.dtype())) {
    return Tensor::ScalarDouble(value.GetDouble(0), dtype);
  }
  return Tensor::ScalarInt(value.GetInt(0), dtype);
}

void FillWith(Tensor& out, const Tensor& scalar) {
  const size_t es = out.element_size();
  const char* src = static_cast<const char*>(scalar.raw_data());
  for (int64_t i = 0, n = out.numel(); i < n; ++i) std::memcpy(MutableAt(out, i), src, es);
}

absl::Status RequireIntegral(const Tensor& t, const char* op, const char* what) {
  if (!IsIntegral(t.dtype(), /*include_bool=*/false)) {
    return Invalid(op, absl::StrCat(what, " must be an integer tensor, got ",
                                    DTypeName(t.dtype())));
  }
  return absl::OkStatus();
}

// Index `i` into a dim of size `n`: wraps negatives when allowed, else
// requires [0, n).
absl::StatusOr<int64_t> CheckIndex(int64_t i, int64_t n, bool allow_negative, const char* op) {
  if (allow_negative && i < 0) i += n;
  if (i < 0 || i >= n) {
    return Invalid(op, absl::StrCat("index ", i, " is out of bounds for a dim of size ", n));
  }
  return i;
}

bool IsFloatLike(DType t) { return IsFloatingPoint(t) || IsComplex(t); }

// Stores a computed value into element i of contiguous `out` (any dtype).
absl::Status PutDouble(Tensor& out, int64_t i, double v) {
  if (IsStorableDType(out.dtype())) return SetDouble(out, i, v);
  Tensor s = Tensor::ScalarDouble(v, out.dtype());
  std::memcpy(MutableAt(out, i), s.raw_data(), out.element_size());
  return absl::OkStatus();
}

absl::Status PutInt(Tensor& out, int64_t i, int64_t v) {
  if (IsStorableDType(out.dtype())) return SetInt(out, i, v);
  Tensor s = Tensor::ScalarInt(v, out.dtype());
  std::memcpy(MutableAt(out, i), s.raw_data(), out.element_size());
  return absl::OkStatus();
}

// Casts to `dtype` when needed (contiguous result either way).
absl::StatusOr<Tensor> As(const Tensor& x, DType dtype) {
  if (x.dtype() == dtype) return x.Contiguous();
  return CastTo(x, dtype);
}

// (Total order used by sort/unique: NaN above everything.)
int CompareElements(const Tensor& t, int64_t a, int64_t b) {
  if (IsFloatLike(t.dtype())) {
    const double x = t.GetDouble(a), y = t.GetDouble(b);
    const bool nx = std::isnan(x), ny = std::isnan(y);
    if (nx || ny) return nx == ny ? 0 : (nx ? 1 : -1);
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  if (t.dtype() == DType::kUInt64) {
    const uint64_t x = static_cast<uint64_t>(t.GetInt(a)), y = static_cast<uint64_t>(t.GetInt(b));
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  const int64_t x = t.GetInt(a), y = t.GetInt(b);
  return x < y ? -1 : (x > y ? 1 : 0);
}

// Outer/inner decomposition around `dim` of a contiguous tensor.
struct Around {
  int64_t outer = 1, size = 1, inner = 1;
};
Around Split3(Sizes sizes, int64_t dim) {
  Around a;
  for (int64_t d = 0; d < static_cast<int64_t>(sizes.size()); ++d) {
    if (d < dim) a.outer *= sizes[d];
    else if (d == dim) a.size = sizes[d];
    else a.inner *= sizes[d];
  }
  return a;
}

}  // namespace

// ------------------------------------------------------------------ views

absl::StatusOr<Tensor> View(const Tensor& x, Sizes sizes) {
  RETURN_IF_ERROR(RequireData(x, "view"));
  return Reshape(x, sizes);
}

absl::StatusOr<Tensor> Flatten(const Tensor& x, int64_t start_dim, int64_t end_dim) {
  RETURN_IF_ERROR(RequireData(x, "flatten"));
  if (x.dim() == 0) return Reshape(x, {1});
  ASSIGN_OR_RETURN(int64_t s, NormalizeDim(start_dim, x.dim(), "flatten"));
  ASSIGN_OR_RETURN(int64_t e, NormalizeDim(end_dim, x.dim(), "flatten"));
  if (s > e) return Invalid("flatten", "start_dim cannot come after end_dim");
  std::vector<int64_t> sizes;
  for (int64_t d = 0; d < s; ++d) sizes.push_back(x.size(d));
  int64_t n = 1;
  for (int64_t d = s; d <= e; ++d) n *= x.size(d);
  sizes.push_back(n);
  for (int64_t d = e + 1; d < x.dim(); ++d) sizes.push_back(x.size(d));
  return Reshape(x, sizes);
}

absl::StatusOr<Tensor> T(const Tensor& x) {
  RETURN_IF_ERROR(RequireData(x, "t"));
  if (x.dim() > 2) return Invalid("t", absl::StrCat("expects a tensor of rank <= 2, got ", x.dim()));
  if (x.dim() < 2) return x;
  return Transpose(x, 0, 1);
}

absl::StatusOr<Tensor> Select(const Tensor& x, int64_t dim, int64_t index) {
  RETURN_IF_ERROR(RequireData(x, "select"));
  if (x.dim() == 0) return Invalid("select", "cannot select from a 0-dim tensor");
  ASSIGN_OR_RETURN(int64_t d, NormalizeDim(dim, x.dim(), "select"));
  ASSIGN_OR_RETURN(int64_t i, CheckIndex(index, x.size(d), true, "select"));
  std::vector<int64_t> sizes = x.sizes(), strides = x.strides();
  const int64_t offset = x.storage_offset() + i * strides[d];
  sizes.erase(sizes.begin() + d);
  strides.erase(strides.begin() + d);
  return Tensor::View(x, sizes, strides, offset);
}

absl::StatusOr<Tensor> Narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length) {
  RETURN_IF_ERROR(RequireData(x, "narrow"));
  if (x.dim() == 0) return Invalid("narrow", "cannot narrow a 0-dim tensor");
  ASSIGN_OR_RETURN(int64_t d, NormalizeDim(dim, x.dim(), "narrow"));
  const int64_t n = x.size(d);
  if (start < -n || start > n) {
    return Invalid("narrow", absl::StrCat("start ", start, " out of range for a dim of size ", n));
  }
  if (start < 0) start += n;
  if (length < 0 || start > n - length) {
    return Invalid("narrow", absl::StrCat("start ", start, " + length ", length,
                                          " exceeds dim size ", n));
  }
  return Slice(x, d, start, start + length, 1);
}

absl::StatusOr<Tensor> SliceDim(const Tensor& x, int64_t dim, std::optional<int64_t> start,
                                std::optional<int64_t> end, int64_t step) {
  RETURN_IF_ERROR(RequireData(x, "slice"));
  if (step <= 0) return Invalid("slice", "step must be positive");
  if (x.dim() > 0) {
    // A step beyond the dim size selects at most one element; capping it
    // keeps the length and stride arithmetic in range.
    ASSIGN_OR_RETURN(int64_t d, NormalizeDim(dim, x.dim(), "slice"));
    step = std::min(step, std::max<int64_t>(x.size(d), 1));
  }
  return Slice(x, dim, start.value_or(0), end.value_or(std::numeric_limits<int64_t>::max()), step);
}

absl::StatusOr<Tensor> Diagonal(const Tensor& x, int64_t offset, int64_t dim1, int64_t dim2) {
  RETURN_IF_ERROR(RequireData(x, "diagonal"));
  if (x.dim() < 2) return Invalid("diagonal", "needs a tensor of rank >= 2");
  ASSIGN_OR_RETURN(int64_t a, NormalizeDim(dim1, x.dim(), "diagonal"));
  ASSIGN_OR_RETURN(int64_t b, NormalizeDim(dim2, x.dim(), "diagonal"));
  if (a == b) return Invalid("diagonal", "dim1 and dim2 must differ");
  // Offsets beyond either size give an empty diagonal; clamping keeps the
  // arithmetic in range.
  const int64_t limit = std::max(x.size(a), x.size(b)) + 1;
  offset = std::clamp(offset, -limit, limit);
  int64_t start = x.storage_offset();
  int64_t len = 0;
  if (offset >= 0) {
    len = std::max<int64_t>(std::min(x.size(a), x.size(b) - offset), 0);
    if (len > 0) start += offset * x.strides()[b];
  } else {
    len = std::max<int64_t>(std::min(x.size(a) + offset, x.size(b)), 0);
    if (len > 0) start -= offset * x.strides()[a];
  }
  std::vector<int64_t> sizes, strides;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (d == a || d == b) continue;
    sizes.push_back(x.size(d));
    strides.push_back(x.strides()[d]);
  }
  sizes.push_back(len);
  strides.push_back(x.strides()[a] + x.strides()[b]);
  return Tensor::View(x, sizes, strides, len > 0 ? start : x.storage_offset());
}

absl::StatusOr<Tensor> Movedim(const Tensor& x, Sizes source, Sizes destination) {
  RETURN_IF_ERROR(RequireData(x, "movedim"));
  if (source.size() != destination.size()) {
    return Invalid("movedim", "source and destination differ in length");
  }
  const int64_t r = x.dim();
  std::vector<int64_t> perm(static_cast<size_t>(r), -1);
  std::vector<bool> src_used(static_cast<size_t>(r), false);
  for (size_t i = 0; i < source.size(); ++i) {
    ASSIGN_OR_RETURN(int64_t s, NormalizeDim(source[i], r, "movedim"));
    ASSIGN_OR_RETURN(int64_t d, NormalizeDim(destination[i], r, "movedim"));
    if (r == 0) continue;
    if (perm[d] != -1 || src_used[s]) return Invalid("movedim", "repeated dim");
    perm[d] = s;
    src_used[s] = true;
  }
  int64_t next = 0;
  for (int64_t d = 0; d < r; ++d) {
    if (perm[d] != -1) continue;
    while (src_used[next]) ++next;
    perm[d] = next;
    src_used[next] = true;
  }
  return Permute(x, perm);
}

absl::StatusOr<std::vector<Tensor>> Unbind(const Tensor& x, int64_t dim) {
  RETURN_IF_ERROR(RequireData(x, "unbind"));
  if (x.dim() == 0) return Invalid("unbind", "cannot unbind a 0-dim tensor");
  ASSIGN_OR_RETURN(int64_t d, NormalizeDim(dim, x.dim(), "unbind"));
  std::vector<Tensor> out;
  for (int64_t i = 0; i < x.size(d); ++i) {
    ASSIGN_OR_RETURN(Tensor t, Select(x, d, i));
    out.push_back(std::move(t));
  }
  return out;
}

absl::StatusOr<std::vector<Tensor>> SplitWithSizes(const Tensor& x, Sizes split_sizes,
                                                   int64_t dim) {
  RETURN_IF_ERROR(RequireData(x, "split_with_sizes"));
  if (x.dim() == 0) return Invalid("split_with_sizes", "cannot split a 0-dim tensor");
  ASSIGN_OR_RETURN(int64_t d, NormalizeDim(dim, x.dim(), "split_with_sizes"));
  int64_t total = 0;
  for (int64_t s : split_sizes) {
    if (s < 0) return Invalid("split_with_sizes", "negative split size");
    if (s > x.size(d) - total) {
      total = -1;
      break;
    }
    total += s;
  }
  if (total != x.size(d)) {
    return Invalid("split_with_sizes",
                   absl::StrCat("split sizes ", ShapeToString(split_sizes),
                                " do not sum to the dim size ", x.size(d)));
  }
  std::vector<Tensor> out;
  int64_t start = 0;
  for (int64_t s : split_sizes) {
    ASSIGN_OR_RETURN(Tensor t, Slice(x, d, start, start + s, 1));
    out.push_back(std::move(t));
    start += s;
  }
  return out;
}

absl::StatusOr<std::vector<Tensor>> SplitBySize(const Tensor& x, int64_t split_size,
                                                int64_t dim) {
  RETURN_IF_ERROR(RequireData(x, "split"));
  if (x.dim() == 0) return Invalid("split", "cannot split a 0-dim tensor");
  ASSIGN_OR_RETURN(int64_t d, NormalizeDim(dim, x.dim(), "split"));
  const int64_t n = x.size(d);
  if (split_size < 0 || (split_size == 0 && n != 0)) {
    return Invalid("split", absl::StrCat("split_size ", split_size, " is invalid for a dim of size ", n));
  }
  if (n == 0) return std::vector<Tensor>{x};
  std::vector<int64_t> sizes;
  for (int64_t s = 0; s < n; s += split_size) sizes.push_back(std::min(split_size, n - s));
  return SplitWithSizes(x, sizes, d);
}

absl::StatusOr<std::vector<Tensor>> Chunk(const Tensor& x, int64_t chunks, int64_t dim) {
  RETURN_IF_ERROR(RequireData(x, "chunk"));
  if (chunks <= 0) return Invalid("chunk", "chunks must be positive");
  if (x.dim() == 0) return Invalid("chunk", "cannot chunk a 0-dim tensor");
  ASSIGN_OR_RETURN(int64_t d, NormalizeDim(dim, x.dim(), "chunk"));
  const int64_t n = x.size(d);
  const int64_t size = n / chunks + (n % chunks != 0 ? 1 : 0);
  if (size == 0) {
    // Every chunk of an empty dim is empty (ATen returns `chunks` of them).
    if (chunks > (int64_t{1} << 20)) return Invalid("chunk", "too many chunks of an empty dim");
    return SplitWithSizes(x, std::vector<int64_t>(static_cast<size_t>(chunks), 0), d);
  }
  return SplitBySize(x, size, d);
}

// ------------------------------------------------------------------ copies

absl::StatusOr<Tensor> Clone(const Tensor& x) {
  ASSIGN_OR_RETURN(Bytes b, ContiguousBytes(x, "clone"));
  ASSIGN_OR_RETURN(Tensor out, NewTensor(x.dtype(), x.sizes(), "clone"));
  if (x.numel() > 0) std::memcpy(out.raw_data(), b.data, static_cast<size_t>(x.numel()) * b.es);
  return out;
}

absl::StatusOr<Tensor> Cat(const std::vector<Tensor>& tensors, int64_t dim) {
  if (tensors.empty()) return Invalid("cat", "expects a non-empty list of tensors");
  std::optional<DType> dtype;
  const Tensor* ref = nullptr;
  for (const Tensor& t : tensors) {
    RETURN_IF_ERROR(RequireData(t, "cat"));
    if (!dtype) {
      dtype = t.dtype();
    } else {
      std::optional<DType> p = PromoteTypes(*dtype, t.dtype());
      if (!p) return Invalid("cat", "operand dtypes have no common type");
      dtype = *p;
    }
    const bool legacy_empty = t.dim() == 1 && t.size(0) == 0;
    if (!legacy_empty && ref == nullptr) ref = &t;
  }
  if (ref == nullptr) return NewTensor(*dtype, {0}, "cat");
  if (ref->dim() == 0) return Invalid("cat", "zero-dimensional tensors cannot be concatenated");
  ASSIGN_OR_RETURN(int64_t d, NormalizeDim(dim, ref->dim(), "cat"));
  std::vector<int64_t> out_sizes = ref->sizes();
  out_sizes[d] = 0;
  std::vector<Tensor> parts;
  for (const Tensor& t : tensors) {
    if (t.dim() == 1 && t.size(0) == 0) continue;
    if (t.dim() != ref->dim()) {
      return Invalid("cat", absl::StrCat("tensors must have the same rank: got ",
                                         ShapeToString(ref->sizes()), " and ",
                                         ShapeToString(t.sizes())));
    }
    for (int64_t k = 0; k < t.dim(); ++k) {
      if (k != d && t.size(k) != ref->size(k)) {
        return Invalid("cat", absl::StrCat("sizes must match except in dim ", d, ": got ",
                                           ShapeToString(ref->sizes()), " and ",
                                           ShapeToString(t.sizes())));
      }
    }
    out_sizes[d] += t.size(d);
    ASSIGN_OR_RETURN(Tensor c, As(t, *dtype));
    parts.push_back(std::move(c));
  }
  ASSIGN_OR_RETURN(Tensor out, NewTensor(*dtype, out_sizes, "cat"));
  const Around o = Split3(out_sizes, d);
  const size_t es = out.element_size();
  int64_t offset = 0;
  for (const Tensor& p : parts) {
    const int64_t chunk = p.size(d) * o.inner;
    const char* src = static_cast<const char*>(p.raw_data());
    for (int64_t i = 0; i < o.outer; ++i) {
      if (chunk == 0) continue;
      std::memcpy(MutableAt(out, i * o.size * o.inner + offset), src + static_cast<size_t>(i * chunk) * es,
                  static_cast<size_t>(chunk) * es);
    }
    offset += chunk;
  }
  return out;
}

absl::StatusOr<Tensor> Stack(const std::vector<Tensor>& tensors, int64_t dim) {
  if (tensors.empty()) return Invalid("stack", "expects a non-empty list of tensors");
  for (const Tensor& t : tensors) {
    RETURN_IF_ERROR(RequireData(t, "stack"));
    if (t.sizes() != tensors[0].sizes()) {
      return Invalid("stack", absl::StrCat("all tensors must have the same shape: got ",
                                           ShapeToString(tensors[0].sizes()), " and ",
                                           ShapeToString(t.sizes())));
    }
  }
  ASSIGN_OR_RETURN(int64_t d, NormalizeDim(dim, tensors[0].dim() + 1, "stack"));
  std::vector<Tensor> expanded;
  for (const Tensor& t : tensors) {
    ASSIGN_OR_RETURN(Tensor u, Unsqueeze(t, d));
    expanded.push_back(std::move(u));
  }
  return Cat(expanded, d);
}

absl::StatusOr<Tensor> Gather(const Tensor& x, int64_t dim, const Tensor& index,
                              bool allow_negative) {
  const char* op = "gather";
  ASSIGN_OR_RETURN(Bytes xb, ContiguousBytes(x, op));
  RETURN_IF_ERROR(RequireData(index, op));
  RETURN_IF_ERROR(RequireIntegral(index, op, "index"));
  const int64_t r = std::max<int64_t>(x.dim(), 1);
  ASSIGN_OR_RETURN(int64_t d, NormalizeDim(dim, x.dim(), op));
  if (std::max<int64_t>(index.dim(), 1) != r) {
    return Invalid(op, absl::StrCat("index rank ", index.dim(), " differs from input rank ", x.dim()));
  }
  std::vector<int64_t> xs = x.sizes(), is = index.sizes();
  if (xs.empty()) xs = {1};
  if (is.empty()) is = {1};
  for (int64_t k = 0; k < r; ++k) {
    if (k != d && is[k] > xs[k]) {
      return Invalid(op, absl::StrCat("index shape ", ShapeToString(index.sizes()),
                                      " exceeds input shape ", ShapeToString(x.sizes()),
                                      " outside dim ", d));
    }
  }
  ASSIGN_OR_RETURN(Tensor out, NewTensor(x.dtype(), index.sizes(), op));
  const std::vector<int64_t> xstr = RowMajorStrides(xs);
  std::vector<int64_t> c;
  for (int64_t i = 0, n = index.numel(); i < n; ++i) {
    Unravel(i, is, c);
    ASSIGN_OR_RETURN(int64_t j, CheckIndex(index.GetInt(i), xs[d], allow_negative, op));
    c[d] = j;
    int64_t src = 0;
    for (int64_t k = 0; k < r; ++k) src += c[k] * xstr[k];
    std::memcpy(MutableAt(out, i), xb.at(src), xb.es);
  }
  return out;
}

namespace {

// Combines `v` into element `at` of contiguous `out` per `reduce`.
absl::Status Combine(Tensor& out, int64_t at, const Tensor& src, int64_t src_at,
                     ScatterReduce reduce, bool first_touch) {
  if (reduce == ScatterReduce::kNone) {
    std::memcpy(MutableAt(out, at), static_cast<const char*>(src.raw_data()) + src_at * src.element_size(),
                out.element_size());
    return absl::OkStatus();
  }
  if (IsFloatLike(out.dtype())) {
    const double v = src.GetDouble(src_at);
    const double cur = out.GetDouble(at);
    double r = v;
    if (!first_touch) {
      switch (reduce) {
        case ScatterReduce::kSum:
        case ScatterReduce::kMean: r = cur + v; break;
        case ScatterReduce::kProd: r = cur * v; break;
        case ScatterReduce::kAmax: r = (std::isnan(cur) || cur >= v) && !std::isnan(v) ? cur : v; break;
        case ScatterReduce::kAmin: r = (std::isnan(cur) || cur <= v) && !std::isnan(v) ? cur : v; break;
        case ScatterReduce::kNone: break;
      }
    }
    return PutDouble(out, at, r);
  }
  const int64_t v = src.GetInt(src_at);
  const int64_t cur = out.GetInt(at);
  int64_t r = v;
  if (!first_touch) {
    switch (reduce) {
      case ScatterReduce::kSum:
      case ScatterReduce::kMean: r = static_cast<int64_t>(static_cast<uint64_t>(cur) + static_cast<uint64_t>(v)); break;
      case ScatterReduce::kProd: r = static_cast<int64_t>(static_cast<uint64_t>(cur) * static_cast<uint64_t>(v)); break;
      case ScatterReduce::kAmax: r = std::max(cur, v); break;
      case ScatterReduce::kAmin: r = std::min(cur, v); break;
      case ScatterReduce::kNone: break;
    }
  }
  if (out.dtype() == DType::kBool) r = r != 0;
  return PutInt(out, at, r);
}

// Mean reductions divide each touched element by its count (+1 with self).
absl::Status FinishMean(Tensor& out, const std::vector<int64_t>& counts, bool include_self) {
  for (int64_t i = 0, n = out.numel(); i < n; ++i) {
    const int64_t c = counts[static_cast<size_t>(i)] + (include_self ? 1 : 0);
    if (counts[static_cast<size_t>(i)] == 0 || c == 0) continue;
    if (IsFloatLike(out.dtype())) {
      RETURN_IF_ERROR(PutDouble(out, i, out.GetDouble(i) / static_cast<double>(c)));
    } else {
      const int64_t v = out.GetInt(i);
      int64_t q = v / c;
      if ((v % c != 0) && ((v < 0) != (c < 0))) --q;  // floor, as ATen does
      RETURN_IF_ERROR(PutInt(out, i, q));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Tensor> Scatter(const Tensor& self, int64_t dim, const Tensor& index,
                               const Tensor& src, bool src_is_scalar, ScatterReduce reduce,
                               bool include_self, bool allow_negative) {
  const char* op = "scatter";
  ASSIGN_OR_RETURN(Tensor out, Clone(self));
  RETURN_IF_ERROR(RequireData(index, op));
  RETURN_IF_ERROR(RequireData(src, op));
  RETURN_IF_ERROR(RequireIntegral(index, op, "index"));
  if (reduce != ScatterReduce::kNone && !IsStorableDType(self.dtype())) {
    return absl::UnimplementedError(absl::StrCat(op, ": reductions on ", DTypeName(self.dtype())));
  }
  const int64_t r = std::max<int64_t>(self.dim(), 1);
  ASSIGN_OR_RETURN(int64_t d, NormalizeDim(dim, self.dim(), op));
  std::vector<int64_t> ss = self.sizes(), is = index.sizes();
  if (ss.empty()) ss = {1};
  if (is.empty()) is = {1};
  if (static_cast<int64_t>(is.size()) != r) {
    return Invalid(op, absl::StrCat("index rank ", index.dim(), " differs from self rank ", self.dim()));
  }
  Tensor values;
  std::vector<int64_t> srcs;
  if (src_is_scalar) {
    ASSIGN_OR_RETURN(values, ScalarIn(src, self.dtype(), op));
  } else {
    ASSIGN_OR_RETURN(values, As(src, self.dtype()));
    srcs = src.sizes();
    if (srcs.empty()) srcs = {1};
    if (static_cast<int64_t>(srcs.size()) != r) {
      return Invalid(op, absl::StrCat("src rank ", src.dim(), " differs from self rank ", self.dim()));
    }
  }
  for (int64_t k = 0; k < r; ++k) {
    if ((k != d && is[k] > ss[k]) || (!src_is_scalar && is[k] > srcs[k])) {
      return Invalid(op, absl::StrCat("index shape ", ShapeToString(index.sizes()),
                                      " is larger than self ", ShapeToString(self.sizes()),
                                      " or src"));
    }
  }
  const std::vector<int64_t> ostr = RowMajorStrides(ss);
  const std::vector<int64_t> sstr = src_is_scalar ? std::vector<int64_t>() : RowMajorStrides(srcs);
  std::vector<int64_t> counts;
  std::vector<bool> touched;
  if (reduce != ScatterReduce::kNone) {
    counts.assign(static_cast<size_t>(out.numel()), 0);
    touched.assign(static_cast<size_t>(out.numel()), include_self);
  }
  std::vector<int64_t> c;
  for (int64_t i = 0, n = index.numel(); i < n; ++i) {
    Unravel(i, is, c);
    int64_t src_at = 0;
    if (!src_is_scalar) {
      for (int64_t k = 0; k < r; ++k) src_at += c[k] * sstr[k];
    }
    ASSIGN_OR_RETURN(int64_t j, CheckIndex(index.GetInt(i), ss[d], allow_negative, op));
    c[d] = j;
    int64_t at = 0;
    for (int64_t k = 0; k < r; ++k) at += c[k] * ostr[k];
    bool first = false;
    if (reduce != ScatterReduce::kNone) {
      first = !touched[static_cast<size_t>(at)];
      touched[static_cast<size_t>(at)] = true;
      ++counts[static_cast<size_t>(at)];
    }
    RETURN_IF_ERROR(Combine(out, at, values, src_at, reduce, first));
  }
  if (reduce == ScatterReduce::kMean) RETURN_IF_ERROR(FinishMean(out, counts, include_self));
  return out;
}

absl::StatusOr<Tensor> IndexSelect(const Tensor& x, int64_t dim, const Tensor& index) {
  const char* op = "index_select";
  ASSIGN_OR_RETURN(Bytes xb, ContiguousBytes(x, op));
  RETURN_IF_ERROR(RequireData(index, op));
  RETURN_IF_ERROR(RequireIntegral(index, op, "index"));
  if (index.dim() > 1) return Invalid(op, "index must be 0-dim or 1-dim");
  ASSIGN_OR_RETURN(int64_t d, NormalizeDim(dim, x.dim(), op));
  std::vector<int64_t> xs = x.sizes();
  if (xs.empty()) xs = {1};
  const Around a = Split3(xs, d);
  std::vector<int64_t> out_sizes = x.sizes();
  if (!out_sizes.empty()) out_sizes[d] = index.numel();
  ASSIGN_OR_RETURN(Tensor out, NewTensor(x.dtype(), out_sizes, op));
  const int64_t m = index.numel();
  for (int64_t j = 0; j < m; ++j) {
    ASSIGN_OR_RETURN(int64_t k, CheckIndex(index.GetInt(j), a.size, false, op));
    for (int64_t o = 0; o < a.outer; ++o) {
      if (a.inner == 0) continue;
      std::memcpy(MutableAt(out, (o * m + j) * a.inner), xb.at((o * a.size + k) * a.inner),
                  static_cast<size_t>(a.inner) * xb.es);
    }
  }
  return out;
}

namespace {

// Advanced indexing resolved to the flat (contiguous) source offset of each
// result element.
struct IndexPlan {
  std::vector<int64_t> result_sizes;
  std::vector<int64_t> offsets;
};

absl::StatusOr<IndexPlan> PlanIndex(const Tensor& x,
                                    const std::vector<std::optional<Tensor>>& indices,
                                    const char* op) {
  // Expand masks into per-dim integer indices.
  std::vector<std::optional<Tensor>> idx;
  int64_t consumed = 0;
  for (const std::optional<Tensor>& t : indices) {
    if (!t || !t->defined()) {
      idx.push_back(std::nullopt);
      ++consumed;
      continue;
    }
    RETURN_IF_ERROR(RequireData(*t, op));
    if (t->dtype() == DType::kBool || t->dtype() == DType::kUInt8) {
      if (t->dim() == 0) return Invalid(op, "0-dim boolean indices are not supported");
      for (int64_t k = 0; k < t->dim(); ++k) {
        if (consumed + k >= x.dim() || t->size(k) != x.size(consumed + k)) {
          return Invalid(op, absl::StrCat("mask of shape ", ShapeToString(t->sizes()),
                                          " does not match the indexed shape ",
                                          ShapeToString(x.sizes()), " at dim ", consumed + k));
        }
      }
      ASSIGN_OR_RETURN(Tensor nz, Nonzero(*t));
      for (int64_t k = 0; k < t->dim(); ++k) {
        ASSIGN_OR_RETURN(Tensor col, Select(nz, 1, k));
        idx.push_back(col);
      }
      consumed += t->dim();
      continue;
    }
    RETURN_IF_ERROR(RequireIntegral(*t, op, "indices"));
    idx.push_back(*t);
    ++consumed;
  }
  if (consumed > x.dim()) {
    return Invalid(op, absl::StrCat("too many indices (", consumed, ") for a tensor of rank ", x.dim()));
  }
  while (static_cast<int64_t>(idx.size()) < x.dim()) idx.push_back(std::nullopt);

  std::vector<int64_t> bshape;
  int64_t first = -1, last = -1;
  bool any = false;
  for (int64_t k = 0; k < static_cast<int64_t>(idx.size()); ++k) {
    if (!idx[k]) continue;
    if (!any) {
      bshape = idx[k]->sizes();
      any = true;
      first = k;
    } else {
      auto b = BroadcastShapes(bshape, idx[k]->sizes());
      if (!b.ok()) return Invalid(op, std::string(b.status().message()));
      bshape = *b;
    }
    last = k;
  }
  bool adjacent = true;
  for (int64_t k = first; any && k <= last; ++k) adjacent = adjacent && idx[k].has_value();

  // Expanded (broadcast) contiguous copies of the index tensors.
  std::vector<Tensor> bidx(idx.size());
  for (size_t k = 0; k < idx.size(); ++k) {
    if (!idx[k]) continue;
    ASSIGN_OR_RETURN(Tensor e, Expand(*idx[k], bshape));
    bidx[k] = e.Contiguous();
  }

  IndexPlan plan;
  // Result layout: the None dims before the block, the broadcast shape, then
  // the rest (adjacent) or the broadcast shape first (separated).
  std::vector<int64_t> layout;  // for each result dim: source dim, or -1 (broadcast)
  const int64_t bstart_before = adjacent && any ? first : 0;
  for (int64_t k = 0; k < bstart_before; ++k) {
    plan.result_sizes.push_back(x.size(k));
    layout.push_back(k);
  }
  if (any) {
    for (int64_t s : bshape) {
      plan.result_sizes.push_back(s);
      layout.push_back(-1);
    }
  }
  for (int64_t k = bstart_before; k < x.dim(); ++k) {
    if (idx[k]) continue;
    plan.result_sizes.push_back(x.size(k));
    layout.push_back(k);
  }
  const int64_t n = Numel(plan.result_sizes);
  if (n * 8 > kMaxBytes) return Invalid(op, "result too large");
  const std::vector<int64_t> xstr = RowMajorStrides(x.sizes());
  const int64_t bn = static_cast<int64_t>(bshape.size());
  plan.offsets.resize(static_cast<size_t>(n));
  std::vector<int64_t> c;
  for (int64_t i = 0; i < n; ++i) {
    Unravel(i, plan.result_sizes, c);
    int64_t off = 0, bflat = 0, bpos = 0;
    for (size_t r = 0; r < layout.size(); ++r) {
      if (layout[r] >= 0) {
        off += c[r] * xstr[static_cast<size_t>(layout[r])];
      } else {
        bflat = bflat * bshape[static_cast<size_t>(bpos)] + c[r];
        ++bpos;
      }
    }
    (void)bn;
    for (size_t k = 0; k < idx.size(); ++k) {
      if (!idx[k]) continue;
      ASSIGN_OR_RETURN(int64_t j, CheckIndex(bidx[k].GetInt(bflat), x.size(static_cast<int64_t>(k)), true, op));
      off += j * xstr[k];
    }
    plan.offsets[static_cast<size_t>(i)] = off;
  }
  return plan;
}

}  // namespace

absl::StatusOr<Tensor> Index(const Tensor& x, const std::vector<std::optional<Tensor>>& indices) {
  const char* op = "index";
  ASSIGN_OR_RETURN(Bytes xb, ContiguousBytes(x, op));
  ASSIGN_OR_RETURN(IndexPlan plan, PlanIndex(x, indices, op));
  ASSIGN_OR_RETURN(Tensor out, NewTensor(x.dtype(), plan.result_sizes, op));
  for (size_t i = 0; i < plan.offsets.size(); ++i) {
    std::memcpy(MutableAt(out, static_cast<int64_t>(i)), xb.at(plan.offsets[i]), xb.es);
  }
  return out;
}

absl::StatusOr<Tensor> IndexPut(const Tensor& self,
                                const std::vector<std::optional<Tensor>>& indices,
                                const Tensor& values, bool accumulate) {
  const char* op = "index_put";
  ASSIGN_OR_RETURN(Tensor out, Clone(self));
  RETURN_IF_ERROR(RequireData(values, op));
  ASSIGN_OR_RETURN(IndexPlan plan, PlanIndex(self, indices, op));
  auto expanded = Expand(values, plan.result_sizes);
  if (!expanded.ok()) {
    return Invalid(op, absl::StrCat("values of shape ", ShapeToString(values.sizes()),
                                    " cannot be broadcast to the indexed shape ",
                                    ShapeToString(plan.result_sizes)));
  }
  ASSIGN_OR_RETURN(Tensor v, As(*expanded, self.dtype()));
  if (accumulate && !IsStorableDType(self.dtype())) {
    return absl::UnimplementedError(absl::StrCat(op, ": accumulate on ", DTypeName(self.dtype())));
  }
  for (size_t i = 0; i < plan.offsets.size(); ++i) {
    RETURN_IF_ERROR(Combine(out, plan.offsets[i], v, static_cast<int64_t>(i),
                            accumulate ? ScatterReduce::kSum : ScatterReduce::kNone, false));
  }
  return out;
}

absl::StatusOr<Tensor> MaskedFill(const Tensor& self, const Tensor& mask, const Tensor& value) {
  const char* op = "masked_fill";
  RETURN_IF_ERROR(RequireData(self, op));
  RETURN_IF_ERROR(RequireData(mask, op));
  if (mask.dtype() != DType::kBool) return Invalid(op, "mask must be a bool tensor");
  auto shape = BroadcastShapes(self.sizes(), mask.sizes());
  if (!shape.ok()) return Invalid(op, std::string(shape.status().message()));
  ASSIGN_OR_RETURN(Tensor fill, ScalarIn(value, self.dtype(), op));
  ASSIGN_OR_RETURN(Tensor se, Expand(self, *shape));
  ASSIGN_OR_RETURN(Tensor me, Expand(mask, *shape));
  ASSIGN_OR_RETURN(Tensor out, Clone(se));
  for (int64_t i = 0, n = out.numel(); i < n; ++i) {
    if (me.GetInt(i) != 0) std::memcpy(MutableAt(out, i), fill.raw_data(), out.element_size());
  }
  return out;
}

absl::StatusOr<Tensor> MaskedSelect(const Tensor& self, const Tensor& mask) {
  const char* op = "masked_select";
  RETURN_IF_ERROR(RequireData(self, op));
  RETURN_IF_ERROR(RequireData(mask, op));
  if (mask.dtype() != DType::kBool) return Invalid(op, "mask must be a bool tensor");
  auto shape = BroadcastShapes(self.sizes(), mask.sizes());
  if (!shape.ok()) return Invalid(op, std::string(shape.status().message()));
  ASSIGN_OR_RETURN(Tensor se, Expand(self, *shape));
  ASSIGN_OR_RETURN(Tensor me, Expand(mask, *shape));
  ASSIGN_OR_RETURN(Bytes sb, ContiguousBytes(se, op));
  std::vector<int64_t> picked;
  for (int64_t i = 0, n = me.numel(); i < n; ++i) {
    if (me.GetInt(i) != 0) picked.push_back(i);
  }
  ASSIGN_OR_RETURN(Tensor out, NewTensor(self.dtype(), {static_cast<int64_t>(picked.size())}, op));
  for (size_t i = 0; i < picked.size(); ++i) {
    std::memcpy(MutableAt(out, static_cast<int64_t>(i)), sb.at(picked[i]), sb.es);
  }
  return out;
}

absl::StatusOr<Tensor> TakeAlongDim(const Tensor& x, const Tensor& indices,
                                    std::optional<int64_t> dim) {
  const char* op = "take_along_dim";
  RETURN_IF_ERROR(RequireData(x, op));
  RETURN_IF_ERROR(RequireData(indices, op));
  RETURN_IF_ERROR(RequireIntegral(indices, op, "indices"));
  if (!dim) {
    ASSIGN_OR_RETURN(Tensor xf, Reshape(x, {-1}));
    ASSIGN_OR_RETURN(Tensor idf, Reshape(indices, {-1}));
    return Gather(xf, 0, idf, true);
  }
  if (x.dim() != indices.dim()) {
    return Invalid(op, "input and indices must have the same rank");
  }
  ASSIGN_OR_RETURN(int64_t d, NormalizeDim(*dim, x.dim(), op));
  if (x.dim() == 0) return Gather(x, 0, indices, true);
  std::vector<int64_t> xs = x.sizes(), is = indices.sizes();
  xs[d] = 1;
  is[d] = 1;
  auto b = BroadcastShapes(xs, is);
  if (!b.ok()) return Invalid(op, std::string(b.status().message()));
  std::vector<int64_t> xt = *b, it = *b;
  xt[d] = x.size(d);
  it[d] = indices.size(d);
  ASSIGN_OR_RETURN(Tensor xe, Expand(x, xt));
  ASSIGN_OR_RETURN(Tensor ie, Expand(indices, it));
  return Gather(xe, d, ie, true);
}

absl::StatusOr<Tensor> Embedding(const Tensor& weight, const Tensor& indices) {
  const char* op = "embedding";
  RETURN_IF_ERROR(RequireData(weight, op));
  RETURN_IF_ERROR(RequireData(indices, op));
  if (weight.dim() != 2) return Invalid(op, "weight must be 2-D");
  RETURN_IF_ERROR(RequireIntegral(indices, op, "indices"));
  ASSIGN_OR_RETURN(Tensor flat, Reshape(indices, {-1}));
  ASSIGN_OR_RETURN(Tensor rows, IndexSelect(weight, 0, flat));
  std::vector<int64_t> sizes = indices.sizes();
  sizes.push_back(weight.size(1));
  return Reshape(rows, sizes);
}

// ------------------------------------------------------------------ padding

absl::StatusOr<Tensor> Pad(const Tensor& x, Sizes pads, PadMode mode, const Tensor& value,
                           const char* op) {
  ASSIGN_OR_RETURN(Bytes xb, ContiguousBytes(x, op));
  if (pads.size() % 2 != 0) return Invalid(op, "padding length must be even");
  const int64_t r = x.dim();
  if (static_cast<int64_t>(pads.size()) / 2 > r) {
    return Invalid(op, absl::StrCat("padding of length ", pads.size(),
                                    " is too long for a tensor of rank ", r));
  }
  std::vector<int64_t> before(static_cast<size_t>(r), 0), out_sizes = x.sizes();
  for (size_t i = 0; i < pads.size() / 2; ++i) {
    const int64_t d = r - 1 - static_cast<int64_t>(i);
    const int64_t b = pads[2 * i], e = pads[2 * i + 1];
    if (b > kMaxBytes || b < -kMaxBytes || e > kMaxBytes || e < -kMaxBytes) {
      return Invalid(op, "padding too large");
    }
    before[d] = b;
    out_sizes[d] = x.size(d) + b + e;
    if (out_sizes[d] < 0) {
      return Invalid(op, absl::StrCat("padding ", ShapeToString(pads), " gives a negative size for ",
                                      ShapeToString(x.sizes())));
    }
    if (mode != PadMode::kConstant && x.size(d) == 0 && out_sizes[d] > 0) {
      return Invalid(op, "cannot pad an empty dim by reflection, replication or wrapping");
    }
  }
  ASSIGN_OR_RETURN(Tensor out, NewTensor(x.dtype(), out_sizes, op));
  Tensor fill;
  if (mode == PadMode::kConstant) {
    ASSIGN_OR_RETURN(fill, ScalarIn(value, x.dtype(), op));
  }
  const std::vector<int64_t> xstr = RowMajorStrides(x.sizes());
  std::vector<int64_t> c;
  for (int64_t i = 0, n = out.numel(); i < n; ++i) {
    Unravel(i, out_sizes, c);
    int64_t off = 0;
    bool outside = false;
    for (int64_t d = 0; d < r; ++d) {
      const int64_t size = x.size(d);
      int64_t j = c[d] - before[d];
      if (j < 0 || j >= size) {
        switch (mode) {
          case PadMode::kConstant: outside = true; break;
          case PadMode::kReplicate: j = j < 0 ? 0 : size - 1; break;
          case PadMode::kCircular: j = ((j % size) + size) % size; break;
          case PadMode::kReflect: {
            if (size == 1) { j = 0; break; }
            const int64_t period = 2 * (size - 1);
            j = ((j % period) + period) % period;
            if (j >= size) j = period - j;
            break;
          }
        }
      }
      if (outside) break;
      off += j * xstr[d];
    }
    if (outside) {
      std::memcpy(MutableAt(out, i), fill.raw_data(), xb.es);
    } else {
      std::memcpy(MutableAt(out, i), xb.at(off), xb.es);
    }
  }
  return out;
}

// ------------------------------------------------------------------ repeat

absl::StatusOr<Tensor> Repeat(const Tensor& x, Sizes repeats) {
  const char* op = "repeat";
  ASSIGN_OR_RETURN(Bytes xb, ContiguousBytes(x, op));
  if (static_cast<int64_t>(repeats.size()) < x.dim()) {
    return Invalid(op, "number of repeats cannot be smaller than the tensor's rank");
  }
  const size_t r = repeats.size();
  std::vector<int64_t> in_sizes(r, 1), out_sizes(r);
  for (int64_t d = 0; d < x.dim(); ++d) in_sizes[r - static_cast<size_t>(x.dim()) + static_cast<size_t>(d)] = x.size(d);
  for (size_t d = 0; d < r; ++d) {
    if (repeats[d] < 0) return Invalid(op, "repeats must be non-negative");
    if (repeats[d] != 0 && in_sizes[d] > kMaxBytes / repeats[d]) return Invalid(op, "result too large");
    out_sizes[d] = in_sizes[d] * repeats[d];
  }
  ASSIGN_OR_RETURN(Tensor out, NewTensor(x.dtype(), out_sizes, op));
  const std::vector<int64_t> istr = RowMajorStrides(in_sizes);
  std::vector<int64_t> c;
  for (int64_t i = 0, n = out.numel(); i < n; ++i) {
    Unravel(i, out_sizes, c);
    int64_t off = 0;
    for (size_t d = 0; d < r; ++d) off += (c[d] % in_sizes[d]) * istr[d];
    std::memcpy(MutableAt(out, i), xb.at(off), xb.es);
  }
  return out;
}

absl::StatusOr<Tensor> Tile(const Tensor& x, Sizes dims) {
  std::vector<int64_t> reps(dims.begin(), dims.end());
  while (static_cast<int64_t>(reps.size()) < x.dim()) reps.insert(reps.begin(), 1);
  return Repeat(x, reps);
}

absl::StatusOr<Tensor> Flip(const Tensor& x, Sizes dims) {
  const char* op = "flip";
  ASSIGN_OR_RETURN(Bytes xb, ContiguousBytes(x, op));
  std::vector<bool> flip(static_cast<size_t>(std::max<int64_t>(x.dim(), 1)), false);
  for (int64_t d : dims) {
    ASSIGN_OR_RETURN(int64_t n, NormalizeDim(d, x.dim(), op));
    if (flip[static_cast<size_t>(n)]) return Invalid(op, "repeated dim");
    flip[static_cast<size_t>(n)] = true;
  }
  ASSIGN_OR_RETURN(Tensor out, NewTensor(x.dtype(), x.sizes(), op));
  const std::vector<int64_t> str = RowMajorStrides(x.sizes());
  std::vector<int64_t> c;
  for (int64_t i = 0, n = out.numel(); i < n; ++i) {
    Unravel(i, x.sizes(), c);
    int64_t off = 0;
    for (int64_t d = 0; d < x.dim(); ++d) off += (flip[d] ? x.size(d) - 1 - c[d] : c[d]) * str[d];
    std::memcpy(MutableAt(out, i), xb.at(off), xb.es);
  }
  return out;
}

absl::StatusOr<Tensor> Roll(const Tensor& x, Sizes shifts, Sizes dims) {
  const char* op = "roll";
  RETURN_IF_ERROR(RequireData(x, op));
  if (dims.empty()) {
    if (shifts.size() != 1) return Invalid(op, "without dims, exactly one shift is allowed");
    ASSIGN_OR_RETURN(Tensor flat, Reshape(x, {-1}));
    const int64_t dim0[] = {0};
    ASSIGN_OR_RETURN(Tensor rolled, Roll(flat, shifts, dim0));
    return Reshape(rolled, x.sizes());
  }
  if (shifts.size() != dims.size()) return Invalid(op, "shifts and dims differ in length");
  ASSIGN_OR_RETURN(Bytes xb, ContiguousBytes(x, op));
  std::vector<int64_t> shift(static_cast<size_t>(std::max<int64_t>(x.dim(), 1)), 0);
  for (size_t i = 0; i < dims.size(); ++i) {
    ASSIGN_OR_RETURN(int64_t d, NormalizeDim(dims[i], x.dim(), op));
    const int64_t n = x.dim() == 0 ? 1 : x.size(d);
    if (n > 0) shift[d] = ((shifts[i] % n + n) % n + shift[d]) % n;
  }
  ASSIGN_OR_RETURN(Tensor out, NewTensor(x.dtype(), x.sizes(), op));
  const std::vector<int64_t> str = RowMajorStrides(x.sizes());
  std::vector<int64_t> c;
  for (int64_t i = 0, n = out.numel(); i < n; ++i) {
    Unravel(i, x.sizes(), c);
    int64_t off = 0;
    for (int64_t d = 0; d < x.dim(); ++d) {
      off += ((c[d] - shift[d] + x.size(d)) % x.size(d)) * str[d];
    }
    std::memcpy(MutableAt(out, i), xb.at(off), xb.es);
  }
  return out;
}

absl::StatusOr<Tensor> Trilu(const Tensor& x, int64_t k, bool upper) {
  const char* op = upper ? "triu" : "tril";
  ASSIGN_OR_RETURN(Tensor out, Clone(x));
  if (x.dim() < 2) return Invalid(op, "needs a tensor of rank >= 2");
  const int64_t rows = x.size(x.dim() - 2), cols = x.size(x.dim() - 1);
  const Tensor zero = Tensor::ScalarInt(0, x.dtype());
  for (int64_t i = 0, n = out.numel(); i < n; ++i) {
    const int64_t col = i % cols, row = (i / cols) % rows;
    const bool keep = upper ? col - row >= k : col - row <= k;
    if (!keep) std::memcpy(MutableAt(out, i), zero.raw_data(), out.element_size());
  }
  return out;
}

absl::StatusOr<Tensor> Diag(const Tensor& x, int64_t diagonal) {
  const char* op = "diag";
  RETURN_IF_ERROR(RequireData(x, op));
  if (x.dim() == 2) {
    ASSIGN_OR_RETURN(Tensor v, Diagonal(x, diagonal, 0, 1));
    return Clone(v);
  }
  if (x.dim() != 1) return Invalid(op, "expects a 1-D or 2-D tensor");
  if (diagonal > kMaxBytes || diagonal < -kMaxBytes) return Invalid(op, "diagonal too large");
  ASSIGN_OR_RETURN(Bytes xb, ContiguousBytes(x, op));
  const int64_t n = x.size(0) + std::abs(diagonal);
  ASSIGN_OR_RETURN(Tensor out, NewTensor(x.dtype(), {n, n}, op));
  for (int64_t i = 0; i < x.size(0); ++i) {
    const int64_t row = diagonal >= 0 ? i : i - diagonal;
    const int64_t col = diagonal >= 0 ? i + diagonal : i;
    std::memcpy(MutableAt(out, row * n + col), xb.at(i), xb.es);
  }
  return out;
}

absl::StatusOr<Tensor> OneHot(const Tensor& x, int64_t num_classes) {
  const char* op = "one_hot";
  RETURN_IF_ERROR(RequireData(x, op));
  if (x.dtype() != DType::kInt64) return Invalid(op, "expects an int64 tensor");
  if (num_classes < -1) return Invalid(op, "num_classes must be -1 or non-negative");
  if (num_classes == -1) {
    if (x.numel() == 0) return Invalid(op, "cannot infer num_classes of an empty tensor");
    int64_t m = 0;
    for (int64_t i = 0; i < x.numel(); ++i) m = std::max(m, x.GetInt(i));
    if (m >= kMaxBytes) return Invalid(op, absl::StrCat("class ", m, " is too large"));
    num_classes = m + 1;
  }
  std::vector<int64_t> sizes = x.sizes();
  sizes.push_back(num_classes);
  ASSIGN_OR_RETURN(Tensor out, NewTensor(DType::kInt64, sizes, op));
  for (int64_t i = 0, n = x.numel(); i < n; ++i) {
    ASSIGN_OR_RETURN(int64_t c, CheckIndex(x.GetInt(i), num_classes, false, op));
    RETURN_IF_ERROR(SetInt(out, i * num_classes + c, 1));
  }
  return out;
}

absl::StatusOr<Tensor> Nonzero(const Tensor& x) {
  const char* op = "nonzero";
  RETURN_IF_ERROR(RequireData(x, op));
  std::vector<int64_t> hits;
  const bool fl = IsFloatLike(x.dtype());
  for (int64_t i = 0, n = x.numel(); i < n; ++i) {
    if (fl ? x.GetDouble(i) != 0 : x.GetInt(i) != 0) hits.push_back(i);
  }
  const int64_t r = x.dim();
  ASSIGN_OR_RETURN(Tensor out, NewTensor(DType::kInt64, {static_cast<int64_t>(hits.size()), r}, op));
  std::vector<int64_t> c;
  for (size_t h = 0; h < hits.size(); ++h) {
    Unravel(hits[h], x.sizes(), c);
    for (int64_t d = 0; d < r; ++d) RETURN_IF_ERROR(SetInt(out, static_cast<int64_t>(h) * r + d, c[d]));
  }
  return out;
}

// ------------------------------------------------------------------ generators

absl::StatusOr<Tensor> Arange(const Tensor& start, const Tensor& end, const Tensor& step,
                              std::optional<DType> dtype) {
  const char* op = "arange";
  for (const Tensor* t : {&start, &end, &step}) {
    RETURN_IF_ERROR(RequireData(*t, op));
    if (t->numel() != 1) return Invalid(op, "bounds must be single numbers");
  }
  const bool any_float = IsFloatLike(start.dtype()) || IsFloatLike(end.dtype()) ||
                         IsFloatLike(step.dtype());
  const DType out_dtype = dtype.value_or(any_float ? DType::kFloat32 : DType::kInt64);
  const double s = start.GetDouble(0), e = end.GetDouble(0), st = step.GetDouble(0);
  if (!std::isfinite(s) || !std::isfinite(e)) return Invalid(op, "bounds must be finite");
  if (st == 0 || std::isnan(st)) return Invalid(op, "step must be nonzero");
  if ((st > 0 && e < s) || (st < 0 && e > s)) {
    return Invalid(op, "upper bound and step sign are inconsistent");
  }
  int64_t n = 0;
  if (!any_float && IsIntegral(out_dtype, true)) {
    const int64_t si = start.GetInt(0), ei = end.GetInt(0), sti = step.GetInt(0);
    const double span = static_cast<double>(ei) - static_cast<double>(si);
    const double len = std::ceil(span / static_cast<double>(sti));
    if (len > static_cast<double>(kMaxBytes)) return Invalid(op, "result too large");
    n = static_cast<int64_t>(len);
    ASSIGN_OR_RETURN(Tensor out, NewTensor(out_dtype, {n}, op));
    for (int64_t i = 0; i < n; ++i) RETURN_IF_ERROR(PutInt(out, i, si + i * sti));
    return out;
  }
  const double len = std::ceil((e - s) / st);
  if (len > static_cast<double>(kMaxBytes)) return Invalid(op, "result too large");
  n = static_cast<int64_t>(std::max(len, 0.0));
  ASSIGN_OR_RETURN(Tensor out, NewTensor(out_dtype, {n}, op));
  for (int64_t i = 0; i < n; ++i) RETURN_IF_ERROR(PutDouble(out, i, s + static_cast<double>(i) * st));
  return out;
}

absl::StatusOr<Tensor> Full(Sizes sizes, const Tensor& fill, std::optional<DType> dtype) {
  const char* op = "full";
  RETURN_IF_ERROR(RequireData(fill, op));
  DType t = DType::kFloat32;
  if (dtype) t = *dtype;
  else if (fill.dtype() == DType::kBool) t = DType::kBool;
  else if (IsIntegral(fill.dtype(), false)) t = DType::kInt64;
  ASSIGN_OR_RETURN(Tensor out, NewTensor(t, std::vector<int64_t>(sizes.begin(), sizes.end()), op));
  ASSIGN_OR_RETURN(Tensor v, ScalarIn(fill, t, op));
  FillWith(out, v);
  return out;
}

absl::StatusOr<Tensor> Eye(int64_t n, int64_t m, int64_t k, DType dtype) {
  const char* op = "eye";
  if (n < 0 || m < 0) return Invalid(op, "sizes must be non-negative");
  ASSIGN_OR_RETURN(Tensor out, NewTensor(dtype, {n, m}, op));
  const Tensor one = Tensor::ScalarInt(1, dtype);
  // k outside (-n, m) leaves every element zero (and i + k could overflow).
  for (int64_t i = 0; k > -n && k < m && i < n; ++i) {
    const int64_t j = i + k;
    if (j >= 0 && j < m) std::memcpy(MutableAt(out, i * m + j), one.raw_data(), out.element_size());
  }
  return out;
}

// ------------------------------------------------------------------ sorting

namespace {

// Sorted order (stable) of each slice along dim; calls emit(outer, inner,
// order) per slice.
template <typename Emit>
absl::Status SortSlices(const Tensor& c, int64_t dim, bool descending, Emit emit) {
  std::vector<int64_t> sizes = c.sizes();
  if (sizes.empty()) sizes = {1};
  const Around a = Split3(sizes, dim);
  std::vector<int64_t> order(static_cast<size_t>(a.size));
  for (int64_t o = 0; o < a.outer; ++o) {
    for (int64_t in = 0; in < a.inner; ++in) {
      const int64_t base = o * a.size * a.inner + in;
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) {
        const int cmp = CompareElements(c, base + x * a.inner, base + y * a.inner);
        return descending ? cmp > 0 : cmp < 0;
      });
      RETURN_IF_ERROR(emit(o, in, a, order));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<ValuesIndices> SortImpl(const Tensor& x, int64_t k, int64_t dim, bool descending,
                                       const char* op) {
  ASSIGN_OR_RETURN(Bytes xb, ContiguousBytes(x, op));
  ASSIGN_OR_RETURN(int64_t d, NormalizeDim(dim, x.dim(), op));
  const int64_t n = x.dim() == 0 ? 1 : x.size(d);
  if (k < 0 || k > n) return Invalid(op, absl::StrCat("k ", k, " out of range for a dim of size ", n));
  std::vector<int64_t> sizes = x.sizes();
  if (!sizes.empty()) sizes[d] = k;
  ValuesIndices r;
  ASSIGN_OR_RETURN(r.values, NewTensor(x.dtype(), sizes, op));
  ASSIGN_OR_RETURN(r.indices, NewTensor(DType::kInt64, sizes, op));
  RETURN_IF_ERROR(SortSlices(xb.t, d, descending,
                             [&](int64_t o, int64_t in, const Around& a,
                                 const std::vector<int64_t>& order) -> absl::Status {
                               for (int64_t j = 0; j < k; ++j) {
                                 const int64_t dst = (o * k + j) * a.inner + in;
                                 const int64_t src = (o * a.size + order[j]) * a.inner + in;
                                 std::memcpy(MutableAt(r.values, dst), xb.at(src), xb.es);
                                 RETURN_IF_ERROR(SetInt(r.indices, dst, order[j]));
                               }
                               return absl::OkStatus();
                             }));
  return r;
}

}  // namespace

absl::StatusOr<ValuesIndices> Sort(const Tensor& x, int64_t dim, bool descending) {
  RETURN_IF_ERROR(RequireData(x, "sort"));
  ASSIGN_OR_RETURN(int64_t d, NormalizeDim(dim, x.dim(), "sort"));
  return SortImpl(x, x.dim() == 0 ? 1 : x.size(d), d, descending, "sort");
}

absl::StatusOr<ValuesIndices> TopK(const Tensor& x, int64_t k, int64_t dim, bool largest) {
  return SortImpl(x, k, dim, largest, "topk");
}

absl::StatusOr<Tensor> Cumulative(const Tensor& x, int64_t dim, std::optional<DType> dtype,
                                  bool product, bool exclusive, bool reverse) {
  const char* op = product ? "cumprod" : "cumsum";
  RETURN_IF_ERROR(RequireData(x, op));
  ASSIGN_OR_RETURN(int64_t d, NormalizeDim(dim, x.dim(), op));
  const DType t = dtype.value_or(IsIntegral(x.dtype(), true) ? DType::kInt64 : x.dtype());
  if (!IsStorableDType(t)) return absl::UnimplementedError(absl::StrCat(op, ": dtype ", DTypeName(t)));
  Tensor c = x.Contiguous();
  ASSIGN_OR_RETURN(Tensor out, NewTensor(t, x.sizes(), op));
  std::vector<int64_t> sizes = x.sizes();
  if (sizes.empty()) sizes = {1};
  const Around a = Split3(sizes, d);
  const bool fl = IsFloatLike(t);
  for (int64_t o = 0; o < a.outer; ++o) {
    for (int64_t in = 0; in < a.inner; ++in) {
      double accd = product ? 1 : 0;
      int64_t acci = product ? 1 : 0;
      for (int64_t s = 0; s < a.size; ++s) {
        const int64_t j = reverse ? a.size - 1 - s : s;
        const int64_t at = (o * a.size + j) * a.inner + in;
        if (exclusive) {
          RETURN_IF_ERROR(fl ? SetDouble(out, at, accd) : SetInt(out, at, acci));
        }
        if (fl) {
          const double v = c.GetDouble(at);
          accd = product ? accd * v : accd + v;
        } else {
          const uint64_t v = static_cast<uint64_t>(c.GetInt(at));
          acci = static_cast<int64_t>(product ? static_cast<uint64_t>(acci) * v
                                              : static_cast<uint64_t>(acci) + v);
        }
        if (!exclusive) {
          RETURN_IF_ERROR(fl ? SetDouble(out, at, accd) : SetInt(out, at, acci));
        }
      }
    }
  }
  return out;
}

absl::StatusOr<UniqueResult> Unique(const Tensor& x, std::optional<int64_t> dim, bool sorted,
                                    bool consecutive) {
  const char* op = "unique";
  RETURN_IF_ERROR(RequireData(x, op));
  Tensor c;
  int64_t d = 0;
  if (dim) {
    if (x.dim() == 0) return Invalid(op, "cannot take unique slices of a 0-dim tensor");
    ASSIGN_OR_RETURN(d, NormalizeDim(*dim, x.dim(), op));
    c = x.Contiguous();
  } else {
    ASSIGN_OR_RETURN(Tensor f, Reshape(x, {-1}));
    c = f.Contiguous();
  }
  const Around a = Split3(c.sizes(), d);
  const int64_t n = a.size;
  // Lexicographic comparison of slices i and j along d.
  auto cmp = [&](int64_t i, int64_t j) {
    for (int64_t o = 0; o < a.outer; ++o) {
      for (int64_t in = 0; in < a.inner; ++in) {
        const int r = CompareElements(c, (o * n + i) * a.inner + in, (o * n + j) * a.inner + in);
        if (r != 0) return r;
      }
    }
    return 0;
  };
  // Groups of equal slices; each group lists members in input order.
  std::vector<std::vector<int64_t>> groups;
  if (consecutive) {
    for (int64_t i = 0; i < n; ++i) {
      if (!groups.empty() && cmp(groups.back().back(), i) == 0) groups.back().push_back(i);
      else groups.push_back({i});
    }
  } else {
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) { return cmp(i, j) < 0; });
    for (int64_t i : order) {
      if (!groups.empty() && cmp(groups.back().front(), i) == 0) groups.back().push_back(i);
      else groups.push_back({i});
    }
    if (!sorted) {
      std::stable_sort(groups.begin(), groups.end(),
                       [](const auto& g, const auto& h) { return g.front() < h.front(); });
    }
  }
  const int64_t u = static_cast<int64_t>(groups.size());
  std::vector<int64_t> vsizes = c.sizes();
  vsizes[d] = u;
  UniqueResult r;
  ASSIGN_OR_RETURN(r.values, NewTensor(x.dtype(), vsizes, op));
  ASSIGN_OR_RETURN(r.first_indices, NewTensor(DType::kInt64, {u}, op));
  ASSIGN_OR_RETURN(r.counts, NewTensor(DType::kInt64, {u}, op));
  ASSIGN_OR_RETURN(r.inverse, NewTensor(DType::kInt64, dim ? std::vector<int64_t>{n} : x.sizes(), op));
  const size_t es = c.element_size();
  const char* src = static_cast<const char*>(c.raw_data());
  for (int64_t g = 0; g < u; ++g) {
    const int64_t rep = groups[g].front();
    RETURN_IF_ERROR(SetInt(r.first_indices, g, rep));
    RETURN_IF_ERROR(SetInt(r.counts, g, static_cast<int64_t>(groups[g].size())));
    for (int64_t m : groups[g]) RETURN_IF_ERROR(SetInt(r.inverse, m, g));
    for (int64_t o = 0; o < a.outer; ++o) {
      if (a.inner == 0) continue;
      std::memcpy(MutableAt(r.values, (o * u + g) * a.inner),
                  src + static_cast<size_t>((o * n + rep) * a.inner) * es,
                  static_cast<size_t>(a.inner) * es);
    }
  }
  return r;
}

// ------------------------------------------------------------------ ONNX

absl::StatusOr<Tensor> OnnxReshape(const Tensor& x, Sizes shape, bool allowzero) {
  const char* op = "Reshape";
  RETURN_IF_ERROR(RequireData(x, op));
  std::vector<int64_t> sizes(shape.begin(), shape.end());
  int infer = -1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == 0 && !allowzero) {
      if (static_cast<int64_t>(i) >= x.dim()) {
        return Invalid(op, absl::StrCat("shape ", ShapeToString(shape), " copies dim ", i,
                                        " of an input of rank ", x.dim()));
      }
      sizes[i] = x.size(static_cast<int64_t>(i));
    } else if (sizes[i] == -1) {
      if (infer >= 0) return Invalid(op, "at most one dim may be -1");
      infer = static_cast<int>(i);
    } else if (sizes[i] < 0) {
      return Invalid(op, absl::StrCat("invalid shape ", ShapeToString(shape)));
    }
  }
  auto r = Reshape(x, sizes);
  if (!r.ok()) {
    return Invalid(op, absl::StrCat("cannot reshape ", ShapeToString(x.sizes()), " to ",
                                    ShapeToString(shape), ": ", r.status().message()));
  }
  return r;
}

absl::StatusOr<Tensor> OnnxFlatten(const Tensor& x, int64_t axis) {
  const char* op = "Flatten";
  RETURN_IF_ERROR(RequireData(x, op));
  const int64_t r = x.dim();
  if (axis < -r || axis > r) return Invalid(op, absl::StrCat("axis ", axis, " out of range for rank ", r));
  if (axis < 0) axis += r;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < r; ++d) (d < axis ? outer : inner) *= x.size(d);
  return Reshape(x, {outer, inner});
}

absl::StatusOr<Tensor> OnnxSqueeze(const Tensor& x, std::optional<std::vector<int64_t>> axes) {
  const char* op = "Squeeze";
  RETURN_IF_ERROR(RequireData(x, op));
  if (!axes) return Squeeze(x);
  std::vector<bool> drop(static_cast<size_t>(x.dim()), false);
  for (int64_t a : *axes) {
    if (a < -x.dim() || a >= x.dim()) return Invalid(op, absl::StrCat("axis ", a, " out of range for rank ", x.dim()));
    const int64_t d = a < 0 ? a + x.dim() : a;
    if (x.size(d) != 1) return Invalid(op, absl::StrCat("cannot squeeze dim ", d, " of size ", x.size(d)));
    drop[d] = true;
  }
  std::vector<int64_t> sizes, strides;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (drop[d]) continue;
    sizes.push_back(x.size(d));
    strides.push_back(x.strides()[d]);
  }
  return Tensor::View(x, sizes, strides, x.storage_offset());
}

absl::StatusOr<Tensor> OnnxUnsqueeze(const Tensor& x, Sizes axes) {
  const char* op = "Unsqueeze";
  RETURN_IF_ERROR(RequireData(x, op));
  const int64_t r = x.dim() + static_cast<int64_t>(axes.size());
  std::vector<bool> is_new(static_cast<size_t>(r), false);
  for (int64_t a : axes) {
    if (a < -r || a >= r) return Invalid(op, absl::StrCat("axis ", a, " out of range for output rank ", r));
    const int64_t d = a < 0 ? a + r : a;
    if (is_new[d]) return Invalid(op, "repeated axis");
    is_new[d] = true;
  }
  std::vector<int64_t> sizes;
  int64_t k = 0;
  for (int64_t d = 0; d < r; ++d) sizes.push_back(is_new[d] ? 1 : x.size(k++));
  return Reshape(x, sizes);
}

absl::StatusOr<Tensor> OnnxExpand(const Tensor& x, Sizes shape) {
  const char* op = "Expand";
  RETURN_IF_ERROR(RequireData(x, op));
  auto b = BroadcastShapes(x.sizes(), shape);
  if (!b.ok()) return Invalid(op, std::string(b.status().message()));
  return Expand(x, *b);
}

absl::StatusOr<Tensor> OnnxSlice(const Tensor& x, Sizes starts, Sizes ends, Sizes axes,
                                 Sizes steps) {
  const char* op = "Slice";
  ASSIGN_OR_RETURN(Bytes xb, ContiguousBytes(x, op));
  const size_t k = starts.size();
  if (ends.size() != k || (!axes.empty() && axes.size() != k) || (!steps.empty() && steps.size() != k)) {
    return Invalid(op, "starts, ends, axes and steps must have the same length");
  }
  const int64_t r = x.dim();
  std::vector<int64_t> begin(static_cast<size_t>(r), 0), step(static_cast<size_t>(r), 1),
      sizes = x.sizes();
  std::vector<bool> seen(static_cast<size_t>(r), false);
  for (size_t i = 0; i < k; ++i) {
    const int64_t a = axes.empty() ? static_cast<int64_t>(i) : axes[i];
    if (a < -r || a >= r) return Invalid(op, absl::StrCat("axis ", a, " out of range for rank ", r));
    const int64_t d = a < 0 ? a + r : a;
    if (seen[d]) return Invalid(op, "repeated axis");
    seen[d] = true;
    // (INT64_MIN would overflow on negation; it selects the same elements as
    // -INT64_MAX.)
    const int64_t st = steps.empty() ? 1 : std::max(steps[i], -std::numeric_limits<int64_t>::max());
    if (st == 0) return Invalid(op, "step cannot be 0");
    const int64_t n = x.size(d);
    int64_t s = starts[i], e = ends[i];
    if (s < 0) s += n;  // (no overflow: n >= 0)
    if (e < 0) e += n;
    int64_t len = 0;
    if (st > 0) {
      s = std::clamp<int64_t>(s, 0, n);
      e = std::clamp<int64_t>(e, 0, n);
      len = e > s ? (e - s - 1) / st + 1 : 0;
    } else {
      s = std::clamp<int64_t>(s, -1, n - 1);
      e = std::clamp<int64_t>(e, -1, n - 1);
      len = s > e ? (s - e - 1) / (-st) + 1 : 0;
    }
    begin[d] = s;
    step[d] = st;
    sizes[d] = len;
  }
  ASSIGN_OR_RETURN(Tensor out, NewTensor(x.dtype(), sizes, op));
  const std::vector<int64_t> str = RowMajorStrides(x.sizes());
  std::vector<int64_t> c;
  for (int64_t i = 0, n = out.numel(); i < n; ++i) {
    Unravel(i, sizes, c);
    int64_t off = 0;
    for (int64_t d = 0; d < r; ++d) off += (begin[d] + c[d] * step[d]) * str[d];
    std::memcpy(MutableAt(out, i), xb.at(off), xb.es);
  }
  return out;
}

absl::StatusOr<Tensor> GatherND(const Tensor& x, const Tensor& indices, int64_t batch_dims) {
  const char* op = "GatherND";
  ASSIGN_OR_RETURN(Bytes xb, ContiguousBytes(x, op));
  RETURN_IF_ERROR(RequireData(indices, op));
  RETURN_IF_ERROR(RequireIntegral(indices, op, "indices"));
  const int64_t q = indices.dim(), r = x.dim();
  if (q < 1 || batch_dims < 0 || batch_dims >= std::min(q, r)) {
    return Invalid(op, "invalid ranks or batch_dims");
  }
  const int64_t k = indices.size(q - 1);
  if (k < 0 || k > r - batch_dims) return Invalid(op, "last indices dim exceeds the data rank");
  for (int64_t b = 0; b < batch_dims; ++b) {
    if (indices.size(b) != x.size(b)) return Invalid(op, "batch dims of data and indices differ");
  }
  std::vector<int64_t> out_sizes(indices.sizes().begin(), indices.sizes().end() - 1);
  int64_t slice = 1;
  for (int64_t d = batch_dims + k; d < r; ++d) {
    out_sizes.push_back(x.size(d));
    slice *= x.size(d);
  }
  ASSIGN_OR_RETURN(Tensor out, NewTensor(x.dtype(), out_sizes, op));
  const std::vector<int64_t> str = RowMajorStrides(x.sizes());
  int64_t batch = 1;
  for (int64_t b = 0; b < batch_dims; ++b) batch *= x.size(b);
  const int64_t tuples = Numel(absl::MakeConstSpan(indices.sizes()).subspan(0, q - 1));
  const int64_t per_batch = batch == 0 ? 0 : tuples / batch;
  const int64_t batch_stride = batch_dims > 0 ? str[static_cast<size_t>(batch_dims - 1)] : 0;
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t off = per_batch == 0 ? 0 : (t / per_batch) * batch_stride;
    for (int64_t j = 0; j < k; ++j) {
      const int64_t d = batch_dims + j;
      ASSIGN_OR_RETURN(int64_t v, CheckIndex(indices.GetInt(t * k + j), x.size(d), true, op));
      off += v * str[d];
    }
    if (slice > 0) {
      std::memcpy(MutableAt(out, t * slice), xb.at(off), static_cast<size_t>(slice) * xb.es);
    }
  }
  return out;
}

absl::StatusOr<Tensor> ScatterND(const Tensor& x, const Tensor& indices, const Tensor& updates,
                                 ScatterReduce reduce) {
  const char* op = "ScatterND";
  ASSIGN_OR_RETURN(Tensor out, Clone(x));
  RETURN_IF_ERROR(RequireData(indices, op));
  RETURN_IF_ERROR(RequireIntegral(indices, op, "indices"));
  const int64_t q = indices.dim(), r = x.dim();
  if (q < 1) return Invalid(op, "indices must have rank >= 1");
  const int64_t k = indices.size(q - 1);
  if (k > r) return Invalid(op, "last indices dim exceeds the data rank");
  std::vector<int64_t> want(indices.sizes().begin(), indices.sizes().end() - 1);
  int64_t slice = 1;
  for (int64_t d = k; d < r; ++d) {
    want.push_back(x.size(d));
    slice *= x.size(d);
  }
  RETURN_IF_ERROR(RequireData(updates, op));
  if (updates.sizes() != want) {
    return Invalid(op, absl::StrCat("updates shape ", ShapeToString(updates.sizes()),
                                    " should be ", ShapeToString(want)));
  }
  if (reduce != ScatterReduce::kNone && !IsStorableDType(x.dtype())) {
    return absl::UnimplementedError(absl::StrCat(op, ": reductions on ", DTypeName(x.dtype())));
  }
  ASSIGN_OR_RETURN(Tensor u, As(updates, x.dtype()));
  const std::vector<int64_t> str = RowMajorStrides(x.sizes());
  const int64_t tuples = Numel(absl::MakeConstSpan(indices.sizes()).subspan(0, q - 1));
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t off = 0;
    for (int64_t j = 0; j < k; ++j) {
      ASSIGN_OR_RETURN(int64_t v, CheckIndex(indices.GetInt(t * k + j), x.size(j), true, op));
      off += v * str[j];
    }
    for (int64_t e = 0; e < slice; ++e) {
      RETURN_IF_ERROR(Combine(out, off + e, u, t * slice + e, reduce, false));
    }
  }
  return out;
}

absl::StatusOr<Tensor> Compress(const Tensor& x, const Tensor& condition,
                                std::optional<int64_t> axis) {
  const char* op = "Compress";
  RETURN_IF_ERROR(RequireData(x, op));
  RETURN_IF_ERROR(RequireData(condition, op));
  if (condition.dim() != 1) return Invalid(op, "condition must be 1-D");
  Tensor src = x;
  int64_t d = 0;
  if (axis) {
    if (*axis < -x.dim() || *axis >= x.dim()) return Invalid(op, "axis out of range");
    d = *axis < 0 ? *axis + x.dim() : *axis;
  } else {
    ASSIGN_OR_RETURN(src, Reshape(x, {-1}));
  }
  if (condition.size(0) > src.size(d)) {
    return Invalid(op, absl::StrCat("condition of length ", condition.size(0),
                                    " is longer than the dim size ", src.size(d)));
  }
  std::vector<int64_t> keep;
  for (int64_t i = 0; i < condition.size(0); ++i) {
    const bool on = IsFloatLike(condition.dtype()) ? condition.GetDouble(i) != 0 : condition.GetInt(i) != 0;
    if (on) keep.push_back(i);
  }
  ASSIGN_OR_RETURN(Tensor idx, NewTensor(DType::kInt64, {static_cast<int64_t>(keep.size())}, op));
  for (size_t i = 0; i < keep.size(); ++i) RETURN_IF_ERROR(SetInt(idx, static_cast<int64_t>(i), keep[i]));
  return IndexSelect(src, d, idx);
}

absl::StatusOr<Tensor> ReverseSequence(const Tensor& x, const Tensor& lengths,
                                       int64_t batch_axis, int64_t time_axis) {
  const char* op = "ReverseSequence";
  ASSIGN_OR_RETURN(Bytes xb, ContiguousBytes(x, op));
  RETURN_IF_ERROR(RequireData(lengths, op));
  if (x.dim() < 2) return Invalid(op, "input must have rank >= 2");
  ASSIGN_OR_RETURN(int64_t b, NormalizeDim(batch_axis, x.dim(), op));
  ASSIGN_OR_RETURN(int64_t t, NormalizeDim(time_axis, x.dim(), op));
  if (b == t) return Invalid(op, "batch_axis and time_axis must differ");
  if (lengths.dim() != 1 || lengths.size(0) != x.size(b)) {
    return Invalid(op, "sequence_lens must be 1-D with one length per batch entry");
  }
  for (int64_t i = 0; i < lengths.numel(); ++i) {
    const int64_t len = lengths.GetInt(i);
    if (len < 0 || len > x.size(t)) return Invalid(op, absl::StrCat("sequence length ", len, " out of range"));
  }
  ASSIGN_OR_RETURN(Tensor out, NewTensor(x.dtype(), x.sizes(), op));
  const std::vector<int64_t> str = RowMajorStrides(x.sizes());
  std::vector<int64_t> c;
  for (int64_t i = 0, n = out.numel(); i < n; ++i) {
    Unravel(i, x.sizes(), c);
    const int64_t len = lengths.GetInt(c[b]);
    if (c[t] < len) c[t] = len - 1 - c[t];
    int64_t off = 0;
    for (int64_t d = 0; d < x.dim(); ++d) off += c[d] * str[d];
    std::memcpy(MutableAt(out, i), xb.at(off), xb.es);
  }
  return out;
}

absl::StatusOr<Tensor> OnnxOneHot(const Tensor& indices, const Tensor& depth,
                                  const Tensor& values, int64_t axis) {
  const char* op = "OneHot";
  RETURN_IF_ERROR(RequireData(indices, op));
  RETURN_IF_ERROR(RequireData(depth, op));
  ASSIGN_OR_RETURN(Bytes vb, ContiguousBytes(values, op));
  if (depth.numel() != 1) return Invalid(op, "depth must hold one value");
  if (values.numel() != 2) return Invalid(op, "values must hold [off_value, on_value]");
  const double dd = depth.GetDouble(0);
  if (!(dd >= 1) || dd > static_cast<double>(kMaxBytes)) return Invalid(op, "depth must be positive");
  const int64_t depth_v = static_cast<int64_t>(dd);
  const int64_t r = indices.dim() + 1;
  if (axis < -r || axis >= r) return Invalid(op, absl::StrCat("axis ", axis, " out of range for rank ", r));
  if (axis < 0) axis += r;
  std::vector<int64_t> sizes = indices.sizes();
  sizes.insert(sizes.begin() + axis, depth_v);
  ASSIGN_OR_RETURN(Tensor out, NewTensor(values.dtype(), sizes, op));
  const Around a = Split3(sizes, axis);
  const bool fl = IsFloatLike(indices.dtype());
  for (int64_t o = 0; o < a.outer; ++o) {
    for (int64_t in = 0; in < a.inner; ++in) {
      const int64_t src = o * a.inner + in;
      int64_t hot = -depth_v - 1;  // out of range: an all-off row
      if (!fl) {
        hot = indices.GetInt(src);
      } else {
        const double h = indices.GetDouble(src);
        if (std::isfinite(h) && std::fabs(h) <= static_cast<double>(kMaxBytes)) {
          hot = static_cast<int64_t>(h);
        }
      }
      if (hot < 0) hot += depth_v;
      for (int64_t j = 0; j < depth_v; ++j) {
        std::memcpy(MutableAt(out, (o * depth_v + j) * a.inner + in), vb.at(j == hot ? 1 : 0), vb.es);
      }
    }
  }
  return out;
}

absl::StatusOr<Tensor> Range(const Tensor& start, const Tensor& limit, const Tensor& delta) {
  const char* op = "Range";
  for (const Tensor* t : {&start, &limit, &delta}) {
    RETURN_IF_ERROR(RequireData(*t, op));
    if (t->numel() != 1) return Invalid(op, "start, limit and delta must be scalars");
  }
  const DType t = start.dtype();
  if (IsFloatLike(t)) {
    const double s = start.GetDouble(0), l = limit.GetDouble(0), d = delta.GetDouble(0);
    if (d == 0 || !std::isfinite(s) || !std::isfinite(l) || !std::isfinite(d)) {
      return Invalid(op, "delta must be nonzero and bounds finite");
    }
    const double len = std::max(std::ceil((l - s) / d), 0.0);
    if (len > static_cast<double>(kMaxBytes)) return Invalid(op, "result too large");
    ASSIGN_OR_RETURN(Tensor out, NewTensor(t, {static_cast<int64_t>(len)}, op));
    // Accumulate in the output precision, as the spec's loop does.
    for (int64_t i = 0; i < out.numel(); ++i) RETURN_IF_ERROR(PutDouble(out, i, s + static_cast<double>(i) * d));
    return out;
  }
  const int64_t s = start.GetInt(0), l = limit.GetInt(0), d = delta.GetInt(0);
  if (d == 0) return Invalid(op, "delta must be nonzero");
  const double len = std::max(std::ceil((static_cast<double>(l) - static_cast<double>(s)) / static_cast<double>(d)), 0.0);
  if (len > static_cast<double>(kMaxBytes)) return Invalid(op, "result too large");
  ASSIGN_OR_RETURN(Tensor out, NewTensor(t, {static_cast<int64_t>(len)}, op));
  for (int64_t i = 0; i < out.numel(); ++i) RETURN_IF_ERROR(PutInt(out, i, s + i * d));
  return out;
}

absl::StatusOr<Tensor> ShapeOf(const Tensor& x, int64_t start, std::optional<int64_t> end) {
  if (!x.defined()) return Invalid("Shape", "undefined tensor");
  const int64_t r = x.dim();
  auto clamp = [r](int64_t i) {
    if (i < 0) i = i < -r ? 0 : i + r;
    return std::min(i, r);
  };
  const int64_t s = clamp(start), e = clamp(end.value_or(r));
  const int64_t n = std::max<int64_t>(e - s, 0);
  Tensor out = Tensor::Empty(DType::kInt64, {n});
  for (int64_t i = 0; i < n; ++i) RETURN_IF_ERROR(SetInt(out, i, x.size(s + i)));
  return out;
}

absl::StatusOr<std::vector<int64_t>> TensorToIntList(const Tensor& x) {
  const char* op = "tensor_to_int_list";
  RETURN_IF_ERROR(RequireData(x, op));
  if (x.dim() > 1) return Invalid(op, absl::StrCat("expects a 0-D or 1-D tensor, got shape ", ShapeToString(x.sizes())));
  if (IsFloatLike(x.dtype())) return Invalid(op, "expects an integer tensor");
  std::vector<int64_t> out;
  for (int64_t i = 0, n = x.numel(); i < n; ++i) out.push_back(x.GetInt(i));
  return out;
}

}  // namespace kiln::runtime::shape
