// Computation: a lowered (and, after BackendImplInterface::Compile, compiled)
// lazy graph (PyTorch's torch::lazy::Computation). Parameters are the
// graph's distinct device-data leaves in post order; results are the synced
// tensors' values in the order LoweringContext::AddResult received them.
#ifndef KILN_LAZY_COMPUTATION_H_
#define KILN_LAZY_COMPUTATION_H_

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "lazy/shape.h"

namespace kiln::lazy {

class Computation {
 public:
  virtual ~Computation() = default;

  virtual size_t parameters_size() const = 0;
  virtual const std::vector<Shape>& parameter_shapes() const = 0;
  virtual const std::vector<std::string>& parameter_names() const = 0;
  // The results, one shape each (PyTorch: a tuple shape).
  virtual const std::vector<Shape>& result_shape() const = 0;
  // Human-readable form (kiln: the graph IR text).
  virtual std::string ToString() const = 0;

  // Compiled for a MarkStep (all live tensors) rather than for one read.
  bool in_mark_step = false;
};

using ComputationPtr = std::shared_ptr<Computation>;

}  // namespace kiln::lazy

#endif  // KILN_LAZY_COMPUTATION_H_
