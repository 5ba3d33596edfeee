// Reference kernels of the control family: ONNX's recurrent layers (RNN,
// GRU, LSTM) and ONNX's sequence (list of tensors) operations. Sequences are
// plain std::vector<Tensor>; every operation returns a new list and never
// modifies its input (ONNX sequences are values, not mutable lists).
#ifndef KILN_RUNTIME_KERNELS_SEQUENCE_H_
#define KILN_RUNTIME_KERNELS_SEQUENCE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "support/tensor.h"

namespace kiln::runtime {

// ------------------------------------------------------------ recurrent

enum class RecurrentKind { kRnn, kGru, kLstm };

struct RecurrentInputs {
  Tensor x;  // [seq, batch, input] (layout 0) or [batch, seq, input] (layout 1)
  Tensor w;  // [num_directions, gates * hidden, input]
  Tensor r;  // [num_directions, gates * hidden, hidden]
  std::optional<Tensor> b;              // [num_directions, 2 * gates * hidden]
  std::optional<Tensor> sequence_lens;  // [batch], integers
  std::optional<Tensor> initial_h;      // [num_directions, batch, hidden] (layout 1: batch first)
  std::optional<Tensor> initial_c;      // LSTM only, as initial_h
  std::optional<Tensor> p;              // LSTM peepholes [num_directions, 3 * hidden]
};

struct RecurrentOptions {
  // ONNX activation names (case-insensitive), per direction in order (f, g,
  // h for LSTM; f, g for GRU; f for RNN). Empty: the op's defaults. A list
  // for one direction is reused for both directions of a bidirectional op.
  std::vector<std::string> activations;
  // Parameters of the activations that take them, consumed in the order of
  // `activations`; missing ones take the activation's default.
  std::vector<double> activation_alpha;
  std::vector<double> activation_beta;
  std::optional<double> clip;           // clamps gate pre-activations to [-clip, clip]
  std::string direction = "forward";    // forward | reverse | bidirectional
  int64_t hidden_size = 0;              // 0: taken from R
  bool input_forget = false;            // LSTM: forget gate = 1 - input gate
  bool linear_before_reset = false;     // GRU
  int64_t layout = 0;
};

// Y [seq, dirs, batch, hidden] (layout 1: [batch, seq, dirs, hidden]);
// Y_h and Y_c [dirs, batch, hidden] (layout 1: [batch, dirs, hidden]). Steps
// past a batch entry's sequence length are zero in Y; Y_h/Y_c hold the state
// after its last valid step. `y_c` is undefined except for LSTM.
struct RecurrentOutputs {
  Tensor y;
  Tensor y_h;
  Tensor y_c;
};

absl::StatusOr<RecurrentOutputs> Recurrent(RecurrentKind kind, const RecurrentInputs& inputs,
                                           const RecurrentOptions& options);

// ------------------------------------------------------------ sequences

// A position tensor (0-dim or one-element, int32/int64) checked against
// [-size, size) (or [-size, size] when `allow_end`), made non-negative.
absl::StatusOr<int64_t> SequencePosition(const char* op, const Tensor& position, int64_t size,
                                         bool allow_end);

absl::StatusOr<Tensor> SequenceAt(const std::vector<Tensor>& seq, const Tensor& position);
// Inserts at `position` (default: the end).
absl::StatusOr<std::vector<Tensor>> SequenceInsert(const std::vector<Tensor>& seq,
                                                   const Tensor& value,
                                                   const std::optional<Tensor>& position);
// Removes the element at `position` (default: the last).
absl::StatusOr<std::vector<Tensor>> SequenceErase(const std::vector<Tensor>& seq,
                                                  const std::optional<Tensor>& position);
// ONNX SplitToSequence: `split` absent splits into size-1 pieces (dropping
// the axis unless keepdims); a scalar is the piece length (the last piece
// may be shorter); a 1-D tensor lists the piece lengths.
absl::StatusOr<std::vector<Tensor>> SplitToSequence(const Tensor& input,
                                                    const std::optional<Tensor>& split,
                                                    int64_t axis, bool keepdims);
// ONNX ConcatFromSequence: concatenates along `axis`, or stacks along a new
// axis when `new_axis` (axis then ranges over [-rank-1, rank]).
absl::StatusOr<Tensor> ConcatFromSequence(const std::vector<Tensor>& seq, int64_t axis,
                                          bool new_axis);

// ConcatFromSequence(seq, axis, new_axis) for a loop's scan output; when the
// loop ran zero times, an empty tensor of `element_shape` with a 0-length
// `axis` (an error when the element's dtype or shape is unknown).
absl::StatusOr<Tensor> StackScanOutputs(const std::vector<Tensor>& seq, int64_t axis,
                                        std::optional<DType> dtype,
                                        const std::optional<std::vector<int64_t>>& element_shape);

}  // namespace kiln::runtime

#endif  // KILN_RUNTIME_KERNELS_SEQUENCE_H_
