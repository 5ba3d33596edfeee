// The MLP training step that the lazy training-loop test and lazy_bench
// share: 64 -> 32 -> 10 with relu, an MSE loss, a hand-written backward pass
// and an SGD update, all LazyTensor ops.
#ifndef KILN_LAZY_MLP_STEP_H_
#define KILN_LAZY_MLP_STEP_H_

#include <cstdint>

#include "lazy/lazy_tensor.h"

namespace kiln::lazy::testing {

inline constexpr int64_t kMlpIn = 64, kMlpHidden = 32, kMlpOut = 10;

struct Mlp {
  LazyTensor w1, b1, w2, b2;
};

// Deterministic weights (testing::RandomTensor, seeds 1-4).
Mlp InitialMlp();

// One SGD step on (x [batch, kMlpIn], y [batch, kMlpOut]); returns the loss
// before the update.
LazyTensor TrainStep(Mlp& p, const LazyTensor& x, const LazyTensor& y, double learning_rate);

}  // namespace kiln::lazy::testing

#endif  // KILN_LAZY_MLP_STEP_H_
