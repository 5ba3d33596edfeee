// What an imported program takes and returns, with its symbolic sizes: the
// guard a caller checks before running the (shape-specialized) graph.
#ifndef KILN_FRONTEND_PT2_SIGNATURE_H_
#define KILN_FRONTEND_PT2_SIGNATURE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "frontend/pt2/program.h"
#include "ir/ir.h"
#include "ir/ivalue.h"
#include "support/dtype.h"

namespace kiln::frontend::pt2 {

struct SignatureInput {
  std::string name;
  bool is_tensor = true;  // else a symbolic int
  DType dtype = DType::kFloat32;
  // A constant or an expression per dim; for an int input, its one value.
  std::vector<SymSize> sizes;
};

struct Signature {
  std::vector<SignatureInput> inputs;
  std::vector<std::string> outputs;
  // Every symbol's range (a symbol torch left unconstrained is absent).
  std::map<std::string, RangeConstraint> ranges;
  // Buffers the program writes (eager PyTorch would update module state;
  // kiln returns the user outputs only).
  std::vector<std::string> mutated_buffers;
  // The sizes of the graph's values that depend on symbols, by value name.
  absl::flat_hash_map<std::string, std::vector<SymSize>> symbolic_values;

  // Checks a call: one value per input, tensors of the right dtype and
  // rank, constant dims equal, each symbol bound to one value within its
  // range, and every dim whose expression has its symbols bound equal to
  // the expression's value. Errors name the input and dim.
  absl::Status CheckInputs(absl::Span<const ir::IValue> inputs) const;
  // CheckInputs, returning each symbol's value.
  absl::StatusOr<absl::flat_hash_map<std::string, int64_t>> BindSymbols(
      absl::Span<const ir::IValue> inputs) const;
  // Types the values of `graph` (the imported program, or a copy) whose
  // sizes depend on symbols with their sizes at `inputs` (a
  // wrapper::GraphRefiner for SpecializingProgram).
  absl::Status Specialize(ir::Graph& graph, absl::Span<const ir::IValue> inputs) const;
  // The sizes torch traced the program with (symbolic dims take their hint);
  // error when a dim has no hint.
  absl::StatusOr<std::vector<std::vector<int64_t>>> ExampleShapes() const;
  bool HasSymbolicSizes() const;
};

}  // namespace kiln::frontend::pt2

#endif  // KILN_FRONTEND_PT2_SIGNATURE_H_
