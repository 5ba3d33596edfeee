// Value specialization of small integer inputs (issue 12), as TorchDynamo
// specializes on int arguments: ONNX models often pass what shapes depend on
// as tensors (ReduceSum's axes, Slice's starts, Pad's pads, Trilu's k, a
// window's size, Split's sizes). When the shapes alone leave a program
// dynamic (an int list read from a tensor at run time, an output whose size
// depends on data), the inputs those values come from are compiled in as
// constants, and their values join the version's guards.
#ifndef KILN_DRIVER_VALUE_SPECIALIZATION_H_
#define KILN_DRIVER_VALUE_SPECIALIZATION_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/ir.h"
#include "ir/ivalue.h"

namespace kiln::driver {

// Inputs with more elements are never specialized on their values.
inline constexpr int64_t kMaxValueSpecializedElements = 64;

// Whether graph input `v` could be specialized on its value: an integer or
// bool tensor whose declared size (when known) is small.
bool MayValueSpecialize(const ir::Value& v);

// The inputs of `graph` (shapes already specialized to `inputs`) whose values
// the program's shapes or control flow depend on: small integer/bool tensor
// inputs upstream of a node that still needs a run-time value after shape
// resolution (kiln::tensor_to_int_list, an int read from a tensor, an If
// condition) or of a tensor whose shape stayed unknown. Resolves shapes on
// a copy; `graph` is not modified. With `inputs` null (before any call),
// every input MayValueSpecialize accepts is a candidate.
absl::StatusOr<std::vector<size_t>> InputsToSpecializeOnValues(const ir::Graph& graph,
                                                               const std::vector<ir::IValue>* inputs);

// Replaces every use of graph input `index` with a constant holding
// `value`'s data (the input stays, unused).
absl::Status BindInputValue(ir::Graph& graph, size_t index, const Tensor& value);

}  // namespace kiln::driver

#endif  // KILN_DRIVER_VALUE_SPECIALIZATION_H_
