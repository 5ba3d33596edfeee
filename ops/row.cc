#include "ops/row.h"

namespace kiln::ops {

const char* ExternName(const ExternForm& e) {
  switch (e.library) {
    case Library::kNone: return "none";
    case Library::kBlas: return e.out_variant ? "blas" : "blas (allocating)";
    case Library::kConv: return e.out_variant ? "conv" : "conv (allocating)";
    case Library::kDnn: return e.out_variant ? "dnn" : "dnn (allocating)";
  }
  return "?";
}

}  // namespace kiln::ops
