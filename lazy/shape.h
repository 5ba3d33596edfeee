// lazy::Shape: the dtype and sizes of one lazy value (PyTorch's
// torch::lazy::Shape). Shapes are part of the graph hash: a new shape means a
// new compiled computation.
#ifndef KILN_LAZY_SHAPE_H_
#define KILN_LAZY_SHAPE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "support/dtype.h"

namespace kiln::lazy {

struct Shape {
  DType dtype = DType::kFloat32;
  std::vector<int64_t> sizes;

  Shape() = default;
  Shape(DType d, std::vector<int64_t> s) : dtype(d), sizes(std::move(s)) {}

  int64_t dim() const { return static_cast<int64_t>(sizes.size()); }
  int64_t numel() const;
  uint64_t Hash() const;
  // "Float[4, 8]".
  std::string ToString() const;

  friend bool operator==(const Shape& a, const Shape& b) {
    return a.dtype == b.dtype && a.sizes == b.sizes;
  }
  friend bool operator!=(const Shape& a, const Shape& b) { return !(a == b); }
};

}  // namespace kiln::lazy

#endif  // KILN_LAZY_SHAPE_H_
