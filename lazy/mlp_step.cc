#include "lazy/mlp_step.h"

#include "lazy/test_util.h"
#include "support/dtype.h"

namespace kiln::lazy::testing {

Mlp InitialMlp() {
  return {LazyTensor::FromTensor(RandomTensor({kMlpIn, kMlpHidden}, 1, 0.2f)),
          LazyTensor::FromTensor(RandomTensor({kMlpHidden}, 2, 0.1f)),
          LazyTensor::FromTensor(RandomTensor({kMlpHidden, kMlpOut}, 3, 0.2f)),
          LazyTensor::FromTensor(RandomTensor({kMlpOut}, 4, 0.1f))};
}

LazyTensor TrainStep(Mlp& p, const LazyTensor& x, const LazyTensor& y, double learning_rate) {
  const int64_t batch = x.sizes()[0];
  LazyTensor h_pre = Addmm(p.b1, x, p.w1);
  LazyTensor h = h_pre.Relu();
  LazyTensor out = Addmm(p.b2, h, p.w2);
  LazyTensor diff = out - y;
  LazyTensor loss = diff.Square().Mean();
  // d loss / d out for the mean over batch * kMlpOut elements.
  LazyTensor d_out = diff * (2.0 / static_cast<double>(batch * kMlpOut));
  LazyTensor d_w2 = h.T().Mm(d_out);
  LazyTensor d_b2 = d_out.Sum({0});
  LazyTensor d_h = d_out.Mm(p.w2.T());
  LazyTensor d_h_pre = d_h * h_pre.Gt(0.0).To(DType::kFloat32);
  LazyTensor d_w1 = x.T().Mm(d_h_pre);
  LazyTensor d_b1 = d_h_pre.Sum({0});
  p.w1 = p.w1 - d_w1 * learning_rate;
  p.b1 = p.b1 - d_b1 * learning_rate;
  p.w2 = p.w2 - d_w2 * learning_rate;
  p.b2 = p.b2 - d_b2 * learning_rate;
  return loss;
}

}  // namespace kiln::lazy::testing
