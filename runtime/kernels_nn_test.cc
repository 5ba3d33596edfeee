// Tests of the nn kernels through ir's op registry (argument decoding
// included). Expected values come from PyTorch 1.13 (F.conv2d, F.max_pool2d,
// F.interpolate, F.grid_sample, ... on the same inputs) or, for the ONNX-only
// kiln:: ops, from the ONNX reference implementations / by hand.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ir/ivalue.h"
#include "ir/op_registry.h"
#include "runtime/kernels_nn.h"
#include "runtime/register_kernels.h"
#include "runtime/tensor_ops.h"
#include "support/tensor.h"

namespace kiln::runtime {
namespace {

using ir::IValue;

struct Expected {
  std::vector<int64_t> sizes;
  std::vector<double> values;
};

// Values PyTorch 1.13 printed (rounded to 6 decimals).
const Expected kConv2dG2 = {{1, 4, 2, 2},
    {-1.0, -2.25, 0.1, 1.25, -2.35, -3.15, -1.95, -1.65, 4.35, 4.6, 9.650001, 11.3, 1.9, 4.05, 2.35, 7.6}};
const Expected kConv2dDil = {{1, 2, 4, 4},
    {-2.4, -2.2, 0.6, 1.1, -1.6, -1.4, 2.6, 3.1, 3.8, 4.2, 2.6, 2.6, 5.4, 5.8, 2.6, 2.6, 0.0, 0.3, -1.2, -0.6, 1.2, 1.5, 1.2, 1.8, 0.6, 1.1, 5.0, 5.8, 2.6, 3.1, 8.2, 9.0}};
const Expected kConv1dNc = {{1, 1, 4},
    {10.0, 16.5, 27.0, 9.5}};
const Expected kConvt = {{1, 4, 4, 4},
    {1.0, 1.5, 2.0, 0.0, 0.0, -2.5, -0.5, 1.5, 3.0, 0.5, 4.0, -2.0, 1.0, 0.5, 1.0, 2.5, -1.0, -1.0, -0.5, 0.0, -3.0, 0.0, -4.5, -2.5, 0.0, 1.0, 0.5, 2.0, -2.0, -4.0, -2.5, -1.0, 0.5, 0.0, 0.5, 3.0, 2.5, 1.0, 2.5, -9.0, 0.5, 0.0, 0.5, 4.0, -5.5, 4.5, -6.5, -3.0, -2.0, -5.0, -2.5, 0.0, 7.0, 4.5, 8.5, 2.0, -3.0, -7.0, -3.5, 0.0, 6.0, -2.5, 7.0, -7.0}};
const Expected kConvtDil = {{1, 2, 6, 6},
    {2.0, 1.5, 4.0, 4.5, -4.0, -5.0, 1.0, 0.5, 5.0, 5.5, -6.0, -7.0, -2.0, -2.0, 0.0, 1.0, 2.0, 1.5, -2.0, -2.0, 2.0, 3.0, 1.0, 0.5, 4.0, 4.5, -4.0, -5.0, -2.0, -2.0, 5.0, 5.5, -6.0, -7.0, -2.0, -2.0, 0.0, 1.0, 2.0, 1.5, 4.0, 4.5, 2.0, 3.0, 1.0, 0.5, 5.0, 5.5, -4.0, -5.0, -2.0, -2.0, 0.0, 1.0, -6.0, -7.0, -2.0, -2.0, 2.0, 3.0, 2.0, 1.5, 4.0, 4.5, -4.0, -5.0, 1.0, 0.5, 5.0, 5.5, -6.0, -7.0}};
const Expected kMaxpoolV = {{1, 1, 3, 3},
    {7.0, 9.0, 10.0, 17.0, 19.0, 20.0, 22.0, 24.0, 25.0}};
const Expected kMaxpoolI = {{1, 1, 3, 3},
    {6.0, 8.0, 9.0, 16.0, 18.0, 19.0, 21.0, 23.0, 24.0}};
const Expected kMaxpoolDilV = {{1, 1, 3, 3},
    {13.0, 14.0, 15.0, 18.0, 19.0, 20.0, 23.0, 24.0, 25.0}};
const Expected kMaxpoolDilI = {{1, 1, 3, 3},
    {12.0, 13.0, 14.0, 17.0, 18.0, 19.0, 22.0, 23.0, 24.0}};
const Expected kAvgCeilNopad = {{1, 1, 3, 3},
    {4.0, 5.5, 7.0, 11.5, 13.0, 14.5, 19.0, 20.5, 22.0}};
const Expected kAvgCeilPad = {{1, 1, 3, 3},
    {1.777778, 3.666667, 3.111111, 7.666667, 13.0, 9.666667, 8.444445, 13.666667, 9.777778}};
const Expected kAvgDiv = {{1, 1, 2, 2},
    {5.333333, 8.0, 18.666666, 21.333334}};
const Expected kAavg = {{1, 1, 2, 3},
    {6.5, 8.0, 9.5, 16.5, 18.0, 19.5}};
const Expected kAmaxV = {{1, 1, 3, 2},
    {8.0, 10.0, 18.0, 20.0, 23.0, 25.0}};
const Expected kAmaxI = {{1, 1, 3, 2},
    {7.0, 9.0, 17.0, 19.0, 22.0, 24.0}};
const Expected kBnEval = {{2, 3, 4},
    {-0.499997, -0.399998, -0.217156, 0.019615, 0.717158, 1.166925, 1.664246, 2.204944, 0.348306, 0.095855, -0.17104, -0.451638, 3.656904, 4.187196, 4.738297, 5.309448, 8.636734, 9.498384, 10.385762, 11.298147, -3.509271, -3.90137, -4.30292, -4.713703}};
const Expected kBnTrain = {{2, 3, 4},
    {-1.075261, -1.033894, -0.958257, -0.86031, -1.298131, -1.09055, -0.861022, -0.611474, 1.672992, 1.55083, 1.421679, 1.285897, 0.644347, 0.863716, 1.091693, 1.327965, 2.356988, 2.754664, 3.164216, 3.585308, -0.193696, -0.383434, -0.577745, -0.776523}};
const Expected kBnTrainMean = {{3},
    {2.599299, 4.320962, 6.461289}};
const Expected kBnTrainRstd = {{3},
    {0.413674, 0.32635, 0.27938}};
const Expected kLnY = {{2, 3, 4},
    {-1.140863, -0.217597, 0.778771, -1.186672, -1.299143, -0.144452, 1.014001, -1.081047, -1.317524, -0.135524, 1.047721, -1.064711, -1.324796, -0.131957, 1.061494, -1.05796, -1.328694, -0.130034, 1.068991, -1.054267, -1.331127, -0.128832, 1.073707, -1.051937}};
const Expected kLnMean = {{2, 3, 1},
    {0.225614, 1.309938, 2.943327, 4.972984, 7.331985, 9.979252}};
const Expected kLnRstd = {{2, 3, 1},
    {5.056694, 2.547646, 1.935869, 1.6234, 1.42566, 1.286138}};
const Expected kGn = {{2, 4, 3},
    {-1.288867, -0.934126, -0.415394, 1.38163, 2.723754, 4.17139, -4.282803, -2.658855, -0.963585, 2.062149, 4.48877, 6.989398, -1.44311, -0.882692, -0.309179, 1.553529, 2.749106, 3.967324, -4.347923, -2.643997, -0.912945, 2.125706, 4.502392, 6.911722}};
const Expected kIn = {{2, 3, 4},
    {-1.140863, -0.635194, 0.289386, 1.486672, -1.598285, 0.022191, 1.814001, 3.762095, 1.817523, 0.971049, 0.076139, -0.864712, -1.324794, -0.463914, 0.430748, 1.35796, -1.65739, 0.079862, 1.86899, 3.708534, 1.831128, 0.957663, 0.063146, -0.851938}};
const Expected kUpNearest = {{1, 1, 3, 5},
    {1.0, 1.0, 2.0, 2.0, 4.0, 1.0, 1.0, 2.0, 2.0, 4.0, 3.0, 3.0, 5.0, 5.0, 9.0}};
const Expected kUpNearestExact = {{1, 1, 3, 5},
    {1.0, 1.0, 2.0, 4.0, 4.0, 3.0, 3.0, 5.0, 9.0, 9.0, 3.0, 3.0, 5.0, 9.0, 9.0}};
const Expected kUpBilinear = {{1, 1, 3, 5},
    {1.0, 1.4, 2.0, 3.2, 4.0, 2.0, 2.6, 3.5, 5.3, 6.5, 3.0, 3.8, 5.0, 7.4, 9.0}};
const Expected kUpBilinearAc = {{1, 1, 3, 5},
    {1.0, 1.5, 2.0, 3.0, 4.0, 2.0, 2.75, 3.5, 5.0, 6.5, 3.0, 4.0, 5.0, 7.0, 9.0}};
const Expected kUpBicubic = {{1, 1, 3, 5},
    {0.738723, 1.049209, 1.739584, 2.923084, 3.741307, 1.856, 2.366001, 3.5, 5.444001, 6.788001, 2.973278, 3.682793, 5.260417, 7.964918, 9.834695}};
const Expected kUpBicubicAc = {{1, 1, 3, 5},
    {1.0, 1.3125, 2.0, 3.09375, 4.0, 2.0, 2.46875, 3.5, 5.140625, 6.5, 3.0, 3.625, 5.0, 7.1875, 9.0}};
const Expected kUpBilinearSf = {{1, 1, 3, 5},
    {1.0, 1.382353, 1.970588, 3.117647, 4.0, 1.764706, 2.293253, 3.106402, 4.692042, 5.911765, 2.941177, 3.694637, 4.853806, 7.114188, 8.852942}};
const Expected kDownLinear1d = {{1, 1, 3},
    {0.666667, 3.0, 5.333333}};
const Expected kPixelShuffle = {{1, 1, 4, 4},
    {0.0, 4.0, 1.0, 5.0, 8.0, 12.0, 9.0, 13.0, 2.0, 6.0, 3.0, 7.0, 10.0, 14.0, 11.0, 15.0}};
const Expected kPixelUnshuffle = {{1, 4, 2, 2},
    {0.0, 2.0, 8.0, 10.0, 1.0, 3.0, 9.0, 11.0, 4.0, 6.0, 12.0, 14.0, 5.0, 7.0, 13.0, 15.0}};
const Expected kGs000 = {{1, 1, 2, 3},
    {0.0, 4.900001, 0.714999, 0.63, 7.5, 5.5}};
const Expected kGs001 = {{1, 1, 2, 3},
    {0.0, 5.15, 7.419998, 2.6325, 6.75, 5.5}};
const Expected kGs010 = {{1, 1, 2, 3},
    {0.0, 4.900001, 11.0, 3.0, 7.5, 5.5}};
const Expected kGs011 = {{1, 1, 2, 3},
    {0.0, 5.15, 10.6, 2.925, 6.75, 5.5}};
const Expected kGs020 = {{1, 1, 2, 3},
    {0.0, 4.900001, 11.0, 3.0, 7.5, 5.5}};
const Expected kGs021 = {{1, 1, 2, 3},
    {0.0, 5.15, 10.3, 3.325, 6.75, 5.5}};
const Expected kGs100 = {{1, 1, 2, 3},
    {0.0, 6.0, 0.0, 0.0, 8.0, 6.0}};
const Expected kGs101 = {{1, 1, 2, 3},
    {0.0, 6.0, 11.0, 3.0, 9.0, 6.0}};
const Expected kGs110 = {{1, 1, 2, 3},
    {0.0, 6.0, 11.0, 3.0, 8.0, 6.0}};
const Expected kGs111 = {{1, 1, 2, 3},
    {0.0, 6.0, 11.0, 3.0, 9.0, 6.0}};
const Expected kGs120 = {{1, 1, 2, 3},
    {0.0, 6.0, 11.0, 3.0, 8.0, 6.0}};
const Expected kGs121 = {{1, 1, 2, 3},
    {0.0, 6.0, 11.0, 3.0, 9.0, 6.0}};
const Expected kGs200 = {{1, 1, 2, 3},
    {-0.234375, 4.724695, 0.642569, 0.501038, 9.284546, 5.5}};
const Expected kGs201 = {{1, 1, 2, 3},
    {0.0, 4.886911, 8.312733, 2.580117, 8.106079, 5.5}};
const Expected kGs210 = {{1, 1, 2, 3},
    {-0.46875, 4.585752, 11.450377, 2.869125, 7.640625, 5.5}};
const Expected kGs211 = {{1, 1, 2, 3},
    {0.0, 4.840625, 10.809254, 2.700645, 7.042969, 5.5}};
const Expected kGs220 = {{1, 1, 2, 3},
    {-0.9375, 4.585752, 11.750003, 2.497502, 7.640625, 5.5}};
const Expected kGs221 = {{1, 1, 2, 3},
    {0.0, 4.744626, 10.820503, 3.049775, 7.382812, 5.5}};

const Expected kConv3d = {{2, 3, 4, 2, 3},
    {1.0, -0.5, 1.0, 2.0, -3.25, 0.0, 0.25, 0.5, 1.75, 2.75, -5.25, 4.5, -0.25, 0.0, 1.75, -6.0, -3.0, 1.75, 1.5, 1.0, -0.5, -2.5, -4.75, -2.25, 0.0, 1.0, 0.0, 4.25, -2.0, 1.0, 0.25, 0.25, -0.75, -3.75, 1.5, 1.75, 0.5, 0.0, -1.25, -3.5, -1.5, -7.0, 0.0, 0.25, 0.5, 0.0, -3.75, -3.5, -1.0, -1.25, -1.0, -1.0, 3.0, 3.25, -1.0, -1.25, -0.75, -5.25, 7.0, -4.75, -1.25, -1.25, -0.5, 2.75, -1.25, -4.5, -1.5, -1.75, -1.0, 2.5, 2.25, -1.0, 2.0, -3.25, 0.0, 0.25, -0.5, 1.75, 2.75, -5.25, 4.5, -0.25, 0.0, 1.75, -6.0, -3.0, 1.75, -0.75, 5.0, 1.75, -2.5, -4.75, -2.25, 1.75, 3.25, -1.25, 4.25, -2.0, 1.0, 0.25, 0.5, -0.75, -3.75, 1.5, 1.75, 0.5, 0.0, -1.25, -3.5, -1.5, -7.0, 0.75, 2.5, -1.75, 0.0, -3.75, -3.5, 0.0, 0.5, 0.75, -1.0, 3.0, 3.25, -1.0, -1.0, -0.75, -5.25, 7.0, -4.75, -1.25, -1.25, -0.5, 2.75, -1.25, -4.5, -1.5, -1.25, -0.25, 2.5, 2.25, -1.0, -1.75, -4.75, -1.0}};
const Expected kConvt1d = {{2, 6, 14},
    {0.25, -0.45, 0.75, 0.25, -0.65, 0.95, 0.25, -0.85, 1.15, 0.25, -1.05, 1.35, 0.25, 0.0, -0.25, -0.75, 0.25, -0.45, -0.75, 0.25, -0.65, -0.75, 0.25, -0.85, -0.75, 0.25, -1.05, 0.0, -0.75, 0.95, -0.25, -0.75, 1.15, -0.45, -0.75, 1.35, -0.65, -0.75, 1.55, -0.85, -0.75, 0.0, -0.75, 2.95, -2.25, -0.75, 3.15, -2.45, -0.75, 3.35, -2.65, -0.75, 3.55, -2.85, -0.75, 0.0, 2.75, 0.25, -0.75, 2.95, 0.25, -0.75, 3.15, 0.25, -0.75, 3.35, 0.25, -0.75, 3.55, 0.0, 0.25, -2.45, 2.75, 0.25, -2.65, 2.95, 0.25, -2.85, 3.15, 0.25, -3.05, 3.35, 0.25, 0.0, 0.25, -4.45, 4.75, 0.25, -4.65, 4.95, 0.25, -4.85, 5.15, 0.25, -5.05, 5.35, 0.25, 0.0, -4.25, -0.75, 0.25, -4.45, -0.75, 0.25, -4.65, -0.75, 0.25, -4.85, -0.75, 0.25, -5.05, 0.0, -0.75, 4.95, -4.25, -0.75, 5.15, -4.45, -0.75, 5.35, -4.65, -0.75, 5.55, -4.85, -0.75, 0.0, -0.75, 6.95, -6.25, -0.75, 7.15, -6.45, -0.75, 7.35, -6.65, -0.75, 7.55, -6.85, -0.75, 0.0, 6.75, 0.25, -0.75, 6.95, 0.25, -0.75, 7.15, 0.25, -0.75, 7.35, 0.25, -0.75, 7.55, 0.0, 0.25, -6.45, 6.75, 0.25, -6.65, 6.95, 0.25, -6.85, 7.15, 0.25, -7.05, 7.35, 0.25, 0.0}};
const Expected kMp3d = {{2, 2, 4, 2, 4},
    {-0.25, 0.0, 0.25, 0.25, 1.25, 1.5, 1.5, 1.0, 0.0, 0.25, 0.5, 0.5, 1.5, 1.5, 1.5, 1.25, 0.25, 0.5, 0.75, 0.75, 1.5, 1.5, 1.5, 1.5, 0.25, 0.5, 0.75, 0.75, 1.0, 1.25, 1.5, 1.5, 0.5, 0.75, 1.0, 1.0, 1.25, 1.5, 1.5, -0.25, 0.75, 1.0, 1.25, 1.25, 1.5, 1.5, 1.5, 0.0, 1.0, 1.25, 1.5, 1.5, 1.5, 1.5, 0.25, 0.25, 1.0, 1.25, 1.5, 1.5, -0.25, 0.0, 0.25, 0.25, 1.25, 1.5, 1.5, 1.0, 0.0, 0.25, 0.5, 0.5, 1.5, 1.5, 1.5, 1.25, 0.25, 0.5, 0.75, 0.75, 1.5, 1.5, 1.5, 1.5, 0.5, 0.75, 1.0, 1.0, 1.0, 1.25, 1.5, 1.5, 0.5, 0.75, 1.0, 1.0, 1.25, 1.5, 1.5, -0.25, 0.75, 1.0, 1.25, 1.25, 1.5, 1.5, 1.5, 0.0, 1.0, 1.25, 1.5, 1.5, 1.5, 1.5, 0.25, 0.25, 1.25, 1.5, 1.5, 1.5, -0.25, 0.0, 0.25, 0.25, 1.25, 1.5, 1.5, 1.0}};
const Expected kAp3d = {{2, 2, 4, 4, 2},
    {-0.625, -0.25, -0.25, 0.125, 0.5, 0.416667, 0.875, 0.5625, -0.5, -0.125, -0.125, 0.25, 0.625, 0.3125, 1.0, 0.34375, -0.25, 0.125, 0.125, 0.5, 0.416667, 0.333333, 0.5625, 0.25, -0.125, 0.25, 0.25, 0.625, 0.083333, 0.458333, 0.0, 0.375, 0.125, 0.5, 0.5, 0.416667, 0.333333, 0.25, 0.25, -0.0625, 0.25, 0.625, 0.625, 0.3125, 0.458333, 0.145833, 0.375, -0.28125, 0.5, 0.875, 0.416667, 0.333333, 0.25, 0.166667, -0.0625, -0.375, 0.625, 1.0, 0.083333, 0.458333, -0.083333, 0.291667, -0.625, -0.25, 0.875, 0.5625, 0.333333, 0.25, 0.166667, 0.083333, -0.375, 0.0, 1.0, 0.34375, 0.458333, 0.145833, 0.291667, -0.020833, -0.25, 0.125, 0.5625, 0.25, 0.25, 0.166667, 0.083333, 0.0, 0.0, 0.375, 0.0, 0.375, -0.083333, 0.291667, -0.25, 0.125, 0.125, 0.5, 0.25, -0.0625, 0.166667, 0.083333, 0.0, 0.375, 0.375, 0.75, 0.375, -0.28125, 0.291667, -0.020833, 0.125, 0.5, 0.5, 0.875, -0.0625, -0.375, 0.083333, 0.0, 0.375, 0.520833, 0.75, 0.78125, -0.625, -0.25, -0.25, 0.125, 0.5, 0.416667, 0.875, 0.5625}};
const Expected kAap1d = {{2, 4, 3},
    {0.05, 0.2, 0.35, 0.55, 0.7, 0.85, 1.05, 1.2, 1.35, 1.55, 1.7, 1.85, 2.05, 2.2, 2.35, 2.55, 2.7, 2.85, 3.05, 3.2, 3.35, 3.55, 3.7, 3.85}};
const Expected kAap3d = {{2, 2, 2, 3, 2},
    {-0.375, -0.125, 0.375, 0.625, 0.78125, 0.34375, -0.125, 0.125, 0.625, 0.875, 0.34375, 0.25, 0.375, 0.625, 0.78125, 0.34375, 0.15625, -0.28125, 0.625, 0.875, 0.34375, 0.25, -0.28125, -0.375, 0.78125, 0.34375, 0.15625, -0.28125, -0.125, 0.125, 0.34375, 0.25, -0.28125, -0.375, 0.125, 0.375, 0.15625, -0.28125, -0.125, 0.125, 0.625, 0.875, -0.28125, -0.375, 0.125, 0.375, 0.875, 0.78125}};
const Expected kTri = {{2, 2, 4, 3, 5},
    {-0.875, -0.775, -0.625, -0.475, -0.375, 0.125, 0.225, 0.375, 0.525, 0.625, 1.125, 1.225, 1.375, 0.15, -0.666667, -0.71875, -0.61875, -0.46875, -0.31875, -0.21875, 0.28125, 0.38125, 0.53125, 0.68125, 0.78125, 1.28125, 0.808333, 0.098958, -0.266667, -0.510417, -0.53125, -0.43125, -0.28125, -0.13125, -0.03125, 0.46875, 0.56875, 0.71875, 0.86875, 0.96875, 0.609375, 0.136458, -0.572917, -0.422917, -0.322917, -0.375, -0.275, -0.125, 0.025, 0.125, 0.625, 0.725, 0.875, 1.025, 1.125, -0.666667, -0.566667, -0.416667, -0.266667, -0.166667, -0.125, -0.025, 0.125, 0.275, 0.375, 0.875, 0.975, 1.125, 0.45, -0.0, -0.416667, -0.316667, -0.166667, -0.291667, -0.375, 0.03125, 0.13125, 0.28125, 0.43125, 0.53125, 1.03125, 0.7875, 0.421875, 0.2625, 0.15625, -0.260417, -0.275, -0.296875, -0.25, -0.21875, 0.21875, 0.31875, 0.46875, 0.61875, 0.71875, 0.703125, 0.459375, 0.09375, 0.24375, 0.34375, -0.244792, -0.259375, -0.28125, -0.13125, -0.03125, 0.375, 0.475, 0.625, 0.775, 0.875, -0.0, 0.1, 0.25, 0.4, 0.5, -0.375, -0.275, -0.125, 0.025, 0.125, 0.625, 0.725, 0.875, 0.75, 0.666667, 0.25, 0.35, 0.5, -0.175, -0.625, -0.125, -0.025, 0.125, 0.275, 0.375, 0.78125, 0.766667, 0.744792, 0.791667, 0.822917, 0.40625, 0.1625, -0.203125, -0.3625, -0.46875, 0.03125, 0.13125, 0.28125, 0.43125, 0.53125, 0.796875, 0.782292, 0.760417, 0.910417, 1.010417, 0.078125, -0.165625, -0.53125, -0.38125, -0.28125, 0.21875, 0.31875, 0.46875, 0.61875, 0.71875, 0.666667, 0.766667, 0.916667, 1.066667, 1.166667, -0.625, -0.525, -0.375, -0.225, -0.125, 0.375, 0.475, 0.625, 0.775, 0.875, 0.916667, 1.016667, 1.166667, -0.058334, -0.875, -0.375, -0.275, -0.125, 0.025, 0.125, 0.625, 0.725, 0.875, 1.025, 1.125, 1.072917, 0.6, -0.109375, -0.475, -0.71875, -0.21875, -0.11875, 0.03125, 0.18125, 0.28125, 0.78125, 0.88125, 1.03125, 1.18125, 1.28125, 0.401042, -0.071875, -0.78125, -0.63125, -0.53125, -0.03125, 0.06875, 0.21875, 0.36875, 0.46875, 0.96875, 1.06875, 1.21875, 0.853125, 0.609375, -0.875, -0.775, -0.625, -0.475, -0.375, 0.125, 0.225, 0.375, 0.525, 0.625, 1.125, 1.225, 1.375, 0.15, -0.666667}};
const Expected kNear1d = {{2, 4, 12},
    {0.0, 0.0, 0.0, 0.1, 0.1, 0.2, 0.2, 0.2, 0.3, 0.3, 0.4, 0.4, 0.5, 0.5, 0.5, 0.6, 0.6, 0.7, 0.7, 0.7, 0.8, 0.8, 0.9, 0.9, 1.0, 1.0, 1.0, 1.1, 1.1, 1.2, 1.2, 1.2, 1.3, 1.3, 1.4, 1.4, 1.5, 1.5, 1.5, 1.6, 1.6, 1.7, 1.7, 1.7, 1.8, 1.8, 1.9, 1.9, 2.0, 2.0, 2.0, 2.1, 2.1, 2.2, 2.2, 2.2, 2.3, 2.3, 2.4, 2.4, 2.5, 2.5, 2.5, 2.6, 2.6, 2.7, 2.7, 2.7, 2.8, 2.8, 2.9, 2.9, 3.0, 3.0, 3.0, 3.1, 3.1, 3.2, 3.2, 3.2, 3.3, 3.3, 3.4, 3.4, 3.5, 3.5, 3.5, 3.6, 3.6, 3.7, 3.7, 3.7, 3.8, 3.8, 3.9, 3.9}};
const Expected kMp1dNc = {{2, 4, 3},
    {4.0, 12.0, 16.0, 5.0, 13.0, 17.0, 6.0, 14.0, 18.0, 7.0, 15.0, 19.0, 24.0, 32.0, 36.0, 25.0, 33.0, 37.0, 26.0, 34.0, 38.0, 27.0, 35.0, 39.0}};
const Expected kConv2dUnbatched = {{2, 5, 5},
    {3.2, 1.6, 1.6, 1.6, -1.6, 1.6, 3.2, 3.2, 3.2, 1.6, 1.6, 3.2, 3.200001, 3.2, 1.6, 1.6, 3.2, 3.2, 3.2, 1.6, -1.6, 1.6, 1.6, 1.6, 3.2, 3.2, 1.6, 1.6, 1.6, -1.6, 1.6, 3.2, 3.2, 3.2, 1.6, 1.6, 3.2, 3.200001, 3.2, 1.6, 1.6, 3.2, 3.2, 3.2, 1.6, -1.6, 1.6, 1.6, 1.6, 3.2}};


Tensor Make(DType dtype, std::vector<int64_t> sizes, std::vector<double> values) {
  Tensor t = Tensor::Empty(dtype, std::move(sizes));
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_TRUE(SetDouble(t, static_cast<int64_t>(i), values[i]).ok());
  }
  return t;
}

Tensor Arange(std::vector<int64_t> sizes, double scale = 1.0, double offset = 0.0) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(static_cast<double>(i) * scale + offset);
  return Make(DType::kFloat32, std::move(sizes), v);
}

// (i % mod) * scale + offset over a contiguous float tensor.
Tensor Pattern(std::vector<int64_t> sizes, int64_t mod, double scale, double offset) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(static_cast<double>(i % mod) * scale + offset);
  return Make(DType::kFloat32, std::move(sizes), v);
}

IValue T(const Tensor& t) { return IValue::FromTensor(t); }
IValue L(std::vector<int64_t> v) { return IValue::IntList(v); }
IValue I(int64_t v) { return IValue::Int(v); }
IValue D(double v) { return IValue::Double(v); }
IValue B(bool v) { return IValue::Bool(v); }
IValue S(const char* v) { return IValue::String(v); }
IValue None() { return IValue::None(); }

absl::StatusOr<std::vector<IValue>> Call(const std::string& name, std::vector<IValue> args) {
  ir::OpRegistry& ops = ir::BuiltinOps();
  absl::Status s = RegisterReferenceKernels(ops);
  if (!s.ok()) return s;
  const ir::Operator* op = ops.Find(name);
  if (op == nullptr || !op->kernel) return absl::NotFoundError("no kernel for " + name);
  return op->kernel(args);
}

void ExpectTensor(const IValue& v, const Expected& e, double tol = 1e-4,
                  DType dtype = DType::kFloat32) {
  ASSERT_TRUE(v.isTensor());
  const Tensor& t = v.toTensor();
  EXPECT_EQ(t.dtype(), dtype);
  ASSERT_EQ(t.sizes(), e.sizes);
  ASSERT_EQ(t.numel(), static_cast<int64_t>(e.values.size()));
  for (size_t i = 0; i < e.values.size(); ++i) {
    EXPECT_NEAR(t.GetDouble(static_cast<int64_t>(i)), e.values[i],
                tol * (1 + std::fabs(e.values[i])))
        << "element " << i;
  }
}

// One-result op.
void ExpectOp(const std::string& name, std::vector<IValue> args, const Expected& e,
              double tol = 1e-4) {
  auto r = Call(name, std::move(args));
  ASSERT_TRUE(r.ok()) << name << ": " << r.status();
  ASSERT_EQ(r->size(), 1u);
  ExpectTensor((*r)[0], e, tol);
}

void ExpectInvalid(const std::string& name, std::vector<IValue> args, const char* fragment) {
  auto r = Call(name, std::move(args));
  ASSERT_FALSE(r.ok()) << name;
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  EXPECT_NE(std::string(r.status().message()).find(fragment), std::string::npos) << r.status();
  EXPECT_NE(std::string(r.status().message()).find(name), std::string::npos) << r.status();
}

// ------------------------------------------------------------ convolution

Tensor ConvX() { return Arange({1, 2, 4, 4}, 0.1, -1.0); }
Tensor ConvW() {
  std::vector<double> v;
  for (int i = 0; i < 36; ++i) v.push_back((i % 7) * 0.5 - 1.0);
  return Make(DType::kFloat32, {4, 1, 3, 3}, v);
}

TEST(ConvTest, Conv2dGroupsStridePadding) {
  Tensor b = Make(DType::kFloat32, {4}, {0.5, -1.0, 2.0, 0.0});
  ExpectOp("aten::conv2d", {T(ConvX()), T(ConvW()), T(b), L({2}), L({1}), L({1}), I(2)},
           kConv2dG2);
  // The same through aten::convolution and the ONNX-style kiln::conv_nd.
  ExpectOp("aten::convolution", {T(ConvX()), T(ConvW()), T(b), L({2, 2}), L({1, 1}), L({1, 1}),
                                 B(false), L({0, 0}), I(2)},
           kConv2dG2);
  ExpectOp("kiln::conv_nd", {T(ConvX()), T(ConvW()), T(b), L({2, 2}), L({1, 1, 1, 1}),
                             L({1, 1}), I(2)},
           kConv2dG2);
}

IValue StrList(std::vector<std::string> v) {
  std::vector<IValue> e;
  for (std::string& s : v) e.push_back(IValue::String(std::move(s)));
  return IValue::List(std::move(e));
}
IValue DoubleList(std::vector<double> v) {
  std::vector<IValue> e;
  for (double d : v) e.push_back(IValue::Double(d));
  return IValue::List(std::move(e));
}
IValue TensorList(std::vector<Tensor> v) {
  std::vector<IValue> e;
  for (Tensor& t : v) e.push_back(IValue::FromTensor(std::move(t)));
  return IValue::List(std::move(e));
}

// kiln::conv_post_ops is the convolution then each step through the
// replaced op's kernel: relu(clamp(conv + skip, -1, 2) * 0.5 + 0.25) by hand
// from kConv2dG2.
TEST(ConvTest, ConvPostOpsAppliesTheEpilogueInOrder) {
  Tensor b = Make(DType::kFloat32, {4}, {0.5, -1.0, 2.0, 0.0});
  Tensor skip = Arange({1, 4, 2, 2}, 0.25, -2.0);
  Expected want = kConv2dG2;
  for (size_t i = 0; i < want.values.size(); ++i) {
    double v = want.values[i] + skip.GetDouble(static_cast<int64_t>(i));
    v = std::min(std::max(v, -1.0), 2.0) * 0.5 + 0.25;
    want.values[i] = std::max(v, 0.0);
  }
  ExpectOp("kiln::conv_post_ops",
           {T(ConvX()), T(ConvW()), T(b), L({2, 2}), L({1, 1, 1, 1}), L({1, 1}), I(2),
            StrList({"add", "clamp", "linear", "relu"}), DoubleList({-1.0, 2.0, 0.5, 0.25}), TensorList({skip})},
           want);
  ExpectInvalid("kiln::conv_post_ops",
                {T(ConvX()), T(ConvW()), T(b), L({2, 2}), L({1, 1, 1, 1}), L({1, 1}), I(2), StrList({"add"}),
                 DoubleList({}), TensorList({})},
                "needs an operand");
  // An operand that would broadcast the result to a larger shape.
  ExpectInvalid("kiln::conv_post_ops",
                {T(ConvX()), T(ConvW()), T(b), L({2, 2}), L({1, 1, 1, 1}), L({1, 1}), I(2), StrList({"mul"}),
                 DoubleList({}), TensorList({Arange({2, 4, 2, 2})})},
                "changes the result's dtype or shape");
}

TEST(ConvTest, LinearPostOps) {
  Tensor x = Make(DType::kFloat32, {2, 3}, {1, -2, 3, 0.5, 0.25, -1});
  Tensor w = Make(DType::kFloat32, {2, 3}, {1, 0, -1, 2, 1, 0});
  Tensor b = Make(DType::kFloat32, {2}, {0.5, -0.5});
  // x @ w.T + b = [[-1.5, -0.5], [2, 0.75]]; silu then * [1, 2].
  auto silu = [](double v) { return v / (1 + std::exp(-v)); };
  ExpectOp("kiln::linear_post_ops",
           {T(x), T(w), T(b), StrList({"silu", "mul"}), DoubleList({}),
            TensorList({Make(DType::kFloat32, {2}, {1, 2})})},
           Expected{{2, 2}, {silu(-1.5), 2 * silu(-0.5), silu(2), 2 * silu(0.75)}});
}

TEST(ConvTest, Conv2dDilation) {
  // w[:, :1].repeat(1, 2, 1, 1)[:2]
  std::vector<double> v;
  Tensor w = ConvW();
  for (int oc = 0; oc < 2; ++oc) {
    for (int ic = 0; ic < 2; ++ic) {
      for (int k = 0; k < 9; ++k) v.push_back(w.GetDouble(oc * 9 + k));
    }
  }
  ExpectOp("aten::conv2d", {T(ConvX()), T(Make(DType::kFloat32, {2, 2, 3, 3}, v)), None(),
                            L({1, 1}), L({2, 2}), L({2, 2}), I(1)},
           kConv2dDil);
}

TEST(ConvTest, Conv1dNonContiguousInput) {
  // arange(12).reshape(4, 3).t().unsqueeze(0): a transposed view.
  auto xt = Transpose(Arange({4, 3}), 0, 1);
  ASSERT_TRUE(xt.ok());
  auto x = Unsqueeze(*xt, 0);
  ASSERT_TRUE(x.ok());
  ASSERT_FALSE(x->is_contiguous());
  Tensor w = Make(DType::kFloat32, {1, 3, 2}, {1, -1, 0.5, 2, 0, 1});
  ExpectOp("aten::conv1d", {T(*x), T(w), None(), L({1}), L({1}), L({2}), I(1)}, kConv1dNc);
}

TEST(ConvTest, ConvTranspose) {
  std::vector<double> wv;
  for (int i = 0; i < 36; ++i) wv.push_back(i % 5 - 2.0);
  Tensor w = Make(DType::kFloat32, {2, 2, 3, 3}, wv);
  Tensor x = Arange({1, 2, 2, 2}, 0.5);
  Tensor b = Make(DType::kFloat32, {4}, {1, -1, 0.5, 0});
  ExpectOp("aten::conv_transpose2d.input",
           {T(x), T(w), T(b), L({2, 2}), L({1, 1}), L({1, 1}), I(2), L({1, 1})}, kConvt);
  ExpectOp("aten::_convolution", {T(x), T(w), T(b), L({2}), L({1}), L({1}), B(true), L({1}),
                                  I(2), B(false), B(false), B(false), B(false)},
           kConvt);
  // Cropping pads [1, 1] + output_padding 1 == cropping begin 1, end 0.
  ExpectOp("kiln::conv_transpose_nd",
           {T(x), T(w), T(b), L({2, 2}), L({1, 1, 0, 0}), L({1, 1}), L({0, 0}), I(2)}, kConvt);
  Tensor w2 = Make(DType::kFloat32, {2, 2, 3, 3}, wv);
  ExpectOp("aten::conv_transpose2d.input",
           {T(x), T(w2), None(), L({1}), L({0}), L({0}), I(1), L({2})}, kConvtDil);
}

TEST(ConvTest, OnnxAsymmetricPads) {
  // 1x1 input channel, 3x3 ones kernel, pads (top 1, left 0, bottom 0, right 1).
  Tensor x = Arange({1, 1, 3, 3});
  Tensor w = Make(DType::kFloat32, {1, 1, 3, 3}, std::vector<double>(9, 1.0));
  // Rows cover [-1, 1] and [0, 2] -> 2 rows; cols [0, 2] and [1, 3] -> 2 cols.
  ExpectOp("kiln::conv_nd", {T(x), T(w), None(), L({1, 1}), L({1, 0, 0, 1}), L({1, 1}), I(1)},
           {{1, 1, 2, 2}, {0 + 1 + 2 + 3 + 4 + 5, 1 + 2 + 4 + 5, 36, 1 + 2 + 4 + 5 + 7 + 8}});
}

TEST(ConvTest, Conv2dPaddingSame) {
  Tensor x = Arange({1, 1, 3, 3});
  Tensor w = Make(DType::kFloat32, {1, 1, 2, 2}, {1, 1, 1, 1});
  // Total padding 1 goes to the end (PyTorch's "same").
  ExpectOp("aten::conv2d.padding", {T(x), T(w), None(), L({1, 1}), S("same"), L({1, 1}), I(1)},
           {{1, 1, 3, 3}, {8, 12, 7, 20, 24, 13, 13, 15, 8}});
  ExpectOp("aten::conv2d.padding", {T(x), T(w), None(), L({1, 1}), S("valid"), L({1, 1}), I(1)},
           {{1, 1, 2, 2}, {8, 12, 20, 24}});
}

TEST(ConvTest, ConvIntegerAndQLinear) {
  Tensor x = Make(DType::kUInt8, {1, 1, 2, 2}, {2, 3, 4, 5});
  Tensor w = Make(DType::kUInt8, {1, 1, 1, 1}, {3});
  Tensor xzp = Make(DType::kUInt8, {}, {1});
  Tensor wzp = Make(DType::kUInt8, {}, {1});
  auto r = Call("kiln::conv_integer",
                {T(x), T(w), T(xzp), T(wzp), L({1, 1}), L({0, 0, 0, 0}), L({1, 1}), I(1)});
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectTensor((*r)[0], {{1, 1, 2, 2}, {2, 4, 6, 8}}, 0, DType::kInt32);
  // y = round((x - 1) * (w - 1) * 0.5 * 1 / 0.25) + 10, saturated to uint8.
  r = Call("kiln::qlinear_conv",
           {T(x), T(Make(DType::kFloat32, {}, {0.5})), T(xzp), T(w),
            T(Make(DType::kFloat32, {1}, {1.0})), T(wzp), T(Make(DType::kFloat32, {}, {0.25})),
            T(Make(DType::kUInt8, {}, {10})), None(), L({1, 1}), L({}), L({1, 1}), I(1)});
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectTensor((*r)[0], {{1, 1, 2, 2}, {14, 18, 22, 26}}, 0, DType::kUInt8);
}

TEST(ConvTest, RejectsBadArguments) {
  Tensor x = ConvX();
  ExpectInvalid("aten::conv2d", {T(x), T(ConvW()), None(), L({1}), L({0}), L({1}), I(3)},
                "groups");
  ExpectInvalid("aten::conv2d",
                {T(x), T(Arange({1, 2, 5, 5})), None(), L({1}), L({0}), L({1}), I(1)},
                "exceeds");
  ExpectInvalid("aten::conv2d",
                {T(x), T(Arange({1, 2, 0, 3})), None(), L({1}), L({0}), L({1}), I(1)},
                "kernel sizes");
  ExpectInvalid("aten::conv2d", {T(x), T(ConvW()), None(), L({0}), L({0}), L({1}), I(2)},
                "stride");
  ExpectInvalid("aten::conv2d",
                {T(x), T(ConvW()), T(Arange({3})), L({1}), L({0}), L({1}), I(2)}, "bias");
  ExpectInvalid("aten::conv1d", {T(x), T(ConvW()), None(), L({1}), L({0}), L({1}), I(1)},
                "weight must have 3 dims");
  ExpectInvalid("kiln::conv_nd", {T(x), T(ConvW()), None(), L({1, 1}), L({1, 1}), L({1, 1}), I(2)},
                "pads");
}

// ------------------------------------------------------------------ pooling

Tensor PoolX() { return Arange({1, 1, 5, 5}, 1.0, 1.0); }

TEST(PoolTest, MaxPoolWithIndices) {
  auto r = Call("aten::max_pool2d_with_indices",
                {T(PoolX()), L({3}), L({2}), L({1}), L({1}), B(true)});
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectTensor((*r)[0], kMaxpoolV);
  ExpectTensor((*r)[1], kMaxpoolI, 0, DType::kInt64);
  r = Call("aten::max_pool2d_with_indices", {T(PoolX()), L({2}), L({1}), L({0}), L({2}), B(false)});
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectTensor((*r)[0], kMaxpoolDilV);
  ExpectTensor((*r)[1], kMaxpoolDilI, 0, DType::kInt64);
  // Unbatched input, default stride (= kernel).
  ExpectOp("aten::max_pool2d", {T(Arange({1, 4, 4})), L({2, 2}), L({}), L({0}), L({1}), B(false)},
           {{1, 2, 2}, {5, 7, 13, 15}});
}

TEST(PoolTest, OnnxMaxPoolIndices) {
  // ONNX's test_maxpool_with_argmax_2d_precomputed_strides (storage_order 1).
  auto r = Call("kiln::max_pool_nd",
                {T(PoolX()), L({2, 2}), L({2, 2}), L({}), L({1, 1}), B(false), I(1)});
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectTensor((*r)[0], {{1, 1, 2, 2}, {7, 9, 17, 19}});
  ExpectTensor((*r)[1], {{1, 1, 2, 2}, {6, 16, 8, 18}}, 0, DType::kInt64);
  // Row-major indices count the batch and channel planes.
  Tensor x2 = Arange({2, 1, 2, 2});
  r = Call("kiln::max_pool_nd", {T(x2), L({2, 2}), L({2, 2}), L({}), L({}), B(false), I(0)});
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectTensor((*r)[1], {{2, 1, 1, 1}, {3, 7}}, 0, DType::kInt64);
  // SAME_UPPER-style asymmetric pads: window rows [0, 1], [1, 2] over a 2x2 input.
  r = Call("kiln::max_pool_nd",
           {T(Arange({1, 1, 2, 2})), L({2, 2}), L({1, 1}), L({0, 0, 1, 1}), L({}), B(false), I(0)});
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectTensor((*r)[0], {{1, 1, 2, 2}, {3, 3, 3, 3}});
}

TEST(PoolTest, AvgPool) {
  ExpectOp("aten::avg_pool2d", {T(PoolX()), L({3}), L({2}), L({1}), B(true), B(false), None()},
           kAvgCeilNopad);
  ExpectOp("aten::avg_pool2d", {T(PoolX()), L({3}), L({2}), L({1}), B(true), B(true), None()},
           kAvgCeilPad);
  ExpectOp("aten::avg_pool2d", {T(PoolX()), L({2}), L({2}), L({0}), B(false), B(true), I(3)},
           kAvgDiv);
  ExpectOp("aten::avg_pool1d", {T(Arange({1, 5})), L({2}), L({2}), L({1}), B(false), B(false)},
           {{1, 3}, {0, 1.5, 3.5}});
  // ONNX-style asymmetric pads, padding excluded / included.
  ExpectOp("kiln::avg_pool_nd",
           {T(Arange({1, 1, 3})), L({2}), L({1}), L({0, 1}), L({}), B(false), B(false)},
           {{1, 1, 3}, {0.5, 1.5, 2}});
  ExpectOp("kiln::avg_pool_nd",
           {T(Arange({1, 1, 3})), L({2}), L({1}), L({0, 1}), L({}), B(false), B(true)},
           {{1, 1, 3}, {0.5, 1.5, 1}});
  ExpectOp("kiln::lp_pool_nd",
           {T(Make(DType::kFloat32, {1, 1, 4}, {3, 4, -6, 8})), L({2}), L({2}), L({}), L({}),
            B(false), D(2)},
           {{1, 1, 2}, {5, 10}});
  ExpectOp("kiln::global_lp_pool", {T(Make(DType::kFloat32, {1, 1, 2}, {3, -4})), D(2)},
           {{1, 1, 1}, {5}});
}

TEST(PoolTest, AdaptivePools) {
  ExpectOp("aten::adaptive_avg_pool2d", {T(PoolX()), L({2, 3})}, kAavg);
  auto r = Call("aten::adaptive_max_pool2d", {T(PoolX()), L({3, 2})});
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectTensor((*r)[0], kAmaxV);
  ExpectTensor((*r)[1], kAmaxI, 0, DType::kInt64);
}

TEST(PoolTest, MaxUnpool) {
  // ONNX test_maxunpool_export_with_output_shape.
  Tensor x = Make(DType::kFloat32, {1, 1, 2, 2}, {5, 6, 7, 8});
  Tensor idx = Make(DType::kInt64, {1, 1, 2, 2}, {5, 7, 13, 15});
  Tensor shape = Make(DType::kInt64, {4}, {1, 1, 5, 5});
  std::vector<double> want(25, 0.0);
  want[6] = 5;
  want[8] = 6;
  want[16] = 7;
  want[18] = 8;
  ExpectOp("kiln::max_unpool_nd", {T(x), T(idx), L({2, 2}), L({2, 2}), L({}), T(shape)},
           {{1, 1, 5, 5}, want});
  std::vector<double> want4(16, 0.0);
  want4[5] = 5;
  want4[7] = 6;
  want4[13] = 7;
  want4[15] = 8;
  ExpectOp("kiln::max_unpool_nd", {T(x), T(idx), L({2, 2}), L({2, 2}), L({}), None()},
           {{1, 1, 4, 4}, want4});
  ExpectOp("aten::max_unpool2d", {T(x), T(idx), L({4, 4})}, {{1, 1, 4, 4}, want4});
  ExpectInvalid("aten::max_unpool2d",
                {T(x), T(Make(DType::kInt64, {1, 1, 2, 2}, {5, 7, 13, 16})), L({4, 4})},
                "out of range");
}

TEST(PoolTest, RejectsBadArguments) {
  ExpectInvalid("aten::max_pool2d", {T(PoolX()), L({0}), L({}), L({0}), L({1}), B(false)},
                "kernel_size");
  ExpectInvalid("aten::max_pool2d", {T(PoolX()), L({2}), L({}), L({2}), L({1}), B(false)},
                "half");
  ExpectInvalid("aten::max_pool2d", {T(PoolX()), L({7}), L({}), L({0}), L({1}), B(false)},
                "exceeds");
  ExpectInvalid("aten::avg_pool2d", {T(Arange({5})), L({2}), L({}), L({0}), B(false), B(true),
                                     None()},
                "input");
  ExpectInvalid("aten::avg_pool2d", {T(PoolX()), L({2}), L({}), L({0}), B(false), B(true), I(0)},
                "divisor_override");
}

// ------------------------------------------------------------ normalization

Tensor NormX() {
  std::vector<double> v;
  for (int i = 0; i < 24; ++i) v.push_back(std::pow(i, 1.5) * 0.1);
  return Make(DType::kFloat32, {2, 3, 4}, v);
}

TEST(NormTest, BatchNorm) {
  Tensor w = Make(DType::kFloat32, {3}, {1, 2, -1});
  Tensor b = Make(DType::kFloat32, {3}, {0, 1, 0.5});
  Tensor rm = Make(DType::kFloat32, {3}, {0.5, 1, 2});
  Tensor rv = Make(DType::kFloat32, {3}, {1, 2, 3});
  ExpectOp("aten::batch_norm",
           {T(NormX()), T(w), T(b), T(rm), T(rv), B(false), D(0.1), D(1e-5), B(false)}, kBnEval);
  ExpectOp("aten::batch_norm",
           {T(NormX()), T(w), T(b), None(), None(), B(true), D(0.1), D(1e-5), B(false)}, kBnTrain);
  auto r = Call("aten::native_batch_norm",
                {T(NormX()), T(w), T(b), None(), None(), B(true), D(0.1), D(1e-5)});
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectTensor((*r)[0], kBnTrain);
  ExpectTensor((*r)[1], kBnTrainMean);
  ExpectTensor((*r)[2], kBnTrainRstd);
  ExpectInvalid("aten::batch_norm",
                {T(NormX()), T(Arange({2})), T(b), T(rm), T(rv), B(false), D(0.1), D(1e-5),
                 B(false)},
                "weight");
  ExpectInvalid("aten::batch_norm",
                {T(NormX()), T(w), T(b), None(), None(), B(false), D(0.1), D(1e-5), B(false)},
                "running_mean");
}

TEST(NormTest, OnnxBatchNormTraining) {
  // ONNX: running = running * momentum + batch * (1 - momentum), biased var.
  Tensor x = Make(DType::kFloat32, {2, 1, 1}, {1, 3});
  auto r = Call("kiln::batch_norm_training",
                {T(x), T(Make(DType::kFloat32, {1}, {1})), T(Make(DType::kFloat32, {1}, {0})),
                 T(Make(DType::kFloat32, {1}, {10})), T(Make(DType::kFloat32, {1}, {5})), D(0.9),
                 D(0)});
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectTensor((*r)[0], {{2, 1, 1}, {-1, 1}});
  ExpectTensor((*r)[1], {{1}, {10 * 0.9 + 2 * 0.1}});
  ExpectTensor((*r)[2], {{1}, {5 * 0.9 + 1 * 0.1}});
}

TEST(NormTest, LayerGroupInstanceNorm) {
  Tensor lw = Make(DType::kFloat32, {4}, {1, 0.5, 2, -1});
  Tensor lb = Make(DType::kFloat32, {4}, {0, 0.1, 0.2, 0.3});
  auto r = Call("aten::native_layer_norm", {T(NormX()), L({4}), T(lw), T(lb), D(1e-5)});
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectTensor((*r)[0], kLnY);
  ExpectTensor((*r)[1], kLnMean);
  ExpectTensor((*r)[2], kLnRstd);
  r = Call("kiln::layer_norm", {T(NormX()), I(-1), T(lw), T(lb), D(1e-5)});
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectTensor((*r)[0], kLnY);
  ExpectTensor((*r)[2], kLnRstd);
  ExpectInvalid("aten::layer_norm", {T(NormX()), L({3}), None(), None(), D(1e-5), B(false)},
                "normalized_shape");

  std::vector<double> gv;
  for (int i = 0; i < 24; ++i) gv.push_back(std::pow(i, 1.3));
  Tensor xg = Make(DType::kFloat32, {2, 4, 3}, gv);
  ExpectOp("aten::group_norm", {T(xg), I(2), T(Make(DType::kFloat32, {4}, {1, 2, 3, 4})),
                                T(Make(DType::kFloat32, {4}, {0, 1, 0, 1})), D(1e-5), B(false)},
           kGn);
  ExpectInvalid("aten::group_norm", {T(xg), I(3), None(), None(), D(1e-5), B(false)},
                "groups");

  Tensor w = Make(DType::kFloat32, {3}, {1, 2, -1});
  Tensor b = Make(DType::kFloat32, {3}, {0, 1, 0.5});
  ExpectOp("aten::instance_norm",
           {T(NormX()), T(w), T(b), None(), None(), B(true), D(0.1), D(1e-5), B(false)}, kIn);
}

TEST(NormTest, OnnxOnlyNorms) {
  // LRN, size 3: y = x / (bias + alpha / size * sum of squares)^beta.
  Tensor x = Make(DType::kFloat32, {1, 3, 1, 1}, {1, 2, 3});
  ExpectOp("kiln::lrn", {T(x), I(3), D(3), D(1), D(1)},
           {{1, 3, 1, 1}, {1.0 / 6, 2.0 / 15, 3.0 / 14}});
  ExpectOp("kiln::lp_normalization", {T(Make(DType::kFloat32, {2, 2}, {3, 4, -1, 1})), I(1), I(2)},
           {{2, 2}, {0.6, 0.8, -0.70710678, 0.70710678}});
  ExpectOp("kiln::lp_normalization", {T(Make(DType::kFloat32, {2, 2}, {3, 4, -1, 1})), I(0), I(1)},
           {{2, 2}, {0.75, 0.8, -0.25, 0.2}});
  // Mean 2, population std 1 per channel.
  ExpectOp("kiln::mean_variance_normalization",
           {T(Make(DType::kFloat32, {1, 1, 1, 2}, {1, 3})), L({0, 2, 3})},
           {{1, 1, 1, 2}, {-1, 1}});
}

// -------------------------------------------------------------- resampling

Tensor UpX() { return Make(DType::kFloat32, {1, 1, 2, 3}, {1, 2, 4, 3, 5, 9}); }

TEST(ResampleTest, TorchUpsample) {
  ExpectOp("aten::upsample_nearest2d", {T(UpX()), L({3, 5}), None(), None()}, kUpNearest);
  ExpectOp("aten::_upsample_nearest_exact2d", {T(UpX()), L({3, 5}), None(), None()},
           kUpNearestExact);
  ExpectOp("aten::upsample_bilinear2d", {T(UpX()), L({3, 5}), B(false), None(), None()},
           kUpBilinear);
  ExpectOp("aten::upsample_bilinear2d.vec", {T(UpX()), L({3, 5}), B(true), None()},
           kUpBilinearAc);
  ExpectOp("aten::upsample_bicubic2d", {T(UpX()), L({3, 5}), B(false), None(), None()},
           kUpBicubic);
  ExpectOp("aten::upsample_bicubic2d", {T(UpX()), L({3, 5}), B(true), None(), None()},
           kUpBicubicAc);
  ExpectOp("aten::upsample_bilinear2d.vec",
           {T(UpX()), None(), B(false), IValue::List({D(1.7), D(1.7)})}, kUpBilinearSf);
  ExpectOp("aten::upsample_linear1d", {T(Arange({1, 1, 7})), L({3}), B(false), None()},
           kDownLinear1d);
  ExpectInvalid("aten::upsample_nearest2d.vec", {T(UpX()), None(), None()}, "exactly one");
}

TEST(ResampleTest, OnnxResize) {
  Tensor x = Make(DType::kFloat32, {1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor scales = Make(DType::kFloat32, {4}, {1, 1, 2, 3});
  // test_resize_upsample_scales_nearest.
  ExpectOp("kiln::resize", {T(x), None(), T(scales), None(), S("nearest"), S("half_pixel"),
                            S("round_prefer_floor"), D(-0.75), B(false), D(0)},
           {{1, 1, 4, 6}, {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2,
                           3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4}});
  // Upsample (opset 9) nearest: floor when upsampling.
  ExpectOp("kiln::resize", {T(x), None(), T(scales), None(), S("nearest"), S("asymmetric"),
                            S("simple"), D(-0.75), B(false), D(0)},
           {{1, 1, 4, 6}, {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2,
                           3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4}});
  // test_resize_upsample_scales_linear (half_pixel).
  ExpectOp("kiln::resize",
           {T(x), None(), T(Make(DType::kFloat32, {4}, {1, 1, 2, 2})), None(), S("linear"),
            S("half_pixel"), S("round_prefer_floor"), D(-0.75), B(false), D(0)},
           {{1, 1, 4, 4}, {1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5,
                           2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4}});
  // Sizes with align_corners linear: corners preserved, midpoint averaged.
  Tensor sizes = Make(DType::kInt64, {4}, {1, 1, 3, 3});
  ExpectOp("kiln::resize", {T(x), T(Make(DType::kFloat32, {0}, {})),
                            T(Make(DType::kFloat32, {0}, {})), T(sizes), S("linear"),
                            S("align_corners"), S("round_prefer_floor"), D(-0.75), B(false), D(0)},
           {{1, 1, 3, 3}, {1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4}});
  // tf_crop_and_resize past the input extrapolates.
  Tensor roi = Make(DType::kFloat32, {8}, {0, 0, 0, 0, 1, 1, 1, 2});
  ExpectOp("kiln::resize", {T(x), T(roi), None(), T(Make(DType::kInt64, {4}, {1, 1, 2, 3})),
                            S("linear"), S("tf_crop_and_resize"), S("round_prefer_floor"),
                            D(-0.75), B(false), D(10)},
           {{1, 1, 2, 3}, {1, 2, 10, 3, 4, 10}});
  // Cubic at integer source positions reproduces the input.
  ExpectOp("kiln::resize",
           {T(x), None(), T(Make(DType::kFloat32, {4}, {1, 1, 1, 1})), None(), S("cubic"),
            S("half_pixel"), S("round_prefer_floor"), D(-0.5), B(true), D(0)},
           {{1, 1, 2, 2}, {1, 2, 3, 4}});
  ExpectInvalid("kiln::resize", {T(x), None(), T(Make(DType::kFloat32, {2}, {1, 1})), None(),
                                 S("linear"), S("half_pixel"), S("floor"), D(-0.75), B(false),
                                 D(0)},
                "scales");
  ExpectInvalid("kiln::resize", {T(x), None(), T(scales), None(), S("area"), S("half_pixel"),
                                 S("floor"), D(-0.75), B(false), D(0)},
                "mode");
}

TEST(ResampleTest, GridSampler) {
  Tensor x = Arange({1, 1, 3, 4});
  Tensor grid = Make(DType::kFloat32, {1, 2, 3, 2},
                     {-1, -1, 0.3, -0.2, 1.2, 0.9, 0.95, -1.1, -0.5, 0.5, 0, 0});
  const Expected* want[3][3][2] = {
      {{&kGs000, &kGs001}, {&kGs010, &kGs011}, {&kGs020, &kGs021}},
      {{&kGs100, &kGs101}, {&kGs110, &kGs111}, {&kGs120, &kGs121}},
      {{&kGs200, &kGs201}, {&kGs210, &kGs211}, {&kGs220, &kGs221}}};
  for (int mode = 0; mode < 3; ++mode) {
    for (int pad = 0; pad < 3; ++pad) {
      for (int ac = 0; ac < 2; ++ac) {
        SCOPED_TRACE(testing::Message() << "mode " << mode << " pad " << pad << " ac " << ac);
        ExpectOp("aten::grid_sampler", {T(x), T(grid), I(mode), I(pad), B(ac == 1)},
                 *want[mode][pad][ac]);
      }
    }
  }
}

TEST(ResampleTest, PixelShuffleAndDepthToSpace) {
  ExpectOp("aten::pixel_shuffle", {T(Arange({1, 4, 2, 2})), I(2)}, kPixelShuffle);
  ExpectOp("aten::pixel_unshuffle", {T(Arange({1, 1, 4, 4})), I(2)}, kPixelUnshuffle);
  ExpectOp("kiln::depth_to_space", {T(Arange({1, 4, 2, 2})), I(2), S("CRD")}, kPixelShuffle);
  // DCR: out[c, h*b+i, w*b+j] = x[(i*b + j)*C + c, h, w]; with C = 1 the same
  // as CRD, so use two output channels.
  auto r = Call("kiln::depth_to_space", {T(Arange({1, 8, 1, 1})), I(2), S("DCR")});
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectTensor((*r)[0], {{1, 2, 2, 2}, {0, 2, 4, 6, 1, 3, 5, 7}});
  r = Call("kiln::space_to_depth", {T((*r)[0].toTensor()), I(2)});
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectTensor((*r)[0], {{1, 8, 1, 1}, {0, 1, 2, 3, 4, 5, 6, 7}});
  ExpectInvalid("aten::pixel_shuffle", {T(Arange({1, 3, 2, 2})), I(2)}, "divisible");
  ExpectInvalid("kiln::space_to_depth", {T(Arange({1, 1, 3, 3})), I(2)}, "divisible");
}

TEST(ResampleTest, RoiAlign) {
  // A constant image averages to the constant; a ramp in x averages to the
  // bin centres' x (half_pixel, sampling_ratio 2).
  Tensor x = Make(DType::kFloat32, {1, 1, 4, 4}, {0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3});
  Tensor rois = Make(DType::kFloat32, {1, 4}, {0.5, 0.5, 2.5, 2.5});
  Tensor bi = Make(DType::kInt64, {1}, {0});
  ExpectOp("kiln::roi_align",
           {T(x), T(rois), T(bi), S("avg"), I(2), I(2), I(2), D(1.0), S("half_pixel")},
           {{1, 1, 2, 2}, {0.5, 1.5, 0.5, 1.5}});
  ExpectInvalid("kiln::roi_align",
                {T(x), T(rois), T(Make(DType::kInt64, {1}, {3})), S("avg"), I(2), I(2), I(2),
                 D(1.0), S("half_pixel")},
                "batch index");
}

// ------------------------------------------------- more ranks and layouts

TEST(RanksTest, ThreeDimensionalAndOneDimensional) {
  Tensor x3 = Pattern({2, 2, 3, 4, 3}, 11, 0.25, -1);
  Tensor w3 = Pattern({3, 2, 2, 2, 2}, 5, 1, -2);
  ExpectOp("aten::conv3d", {T(x3), T(w3), T(Make(DType::kFloat32, {3}, {1, 0, -1})),
                            L({1, 2, 1}), L({1, 0, 1}), L({1, 1, 2}), I(1)},
           kConv3d);
  Tensor x1 = Arange({2, 4, 5}, 0.1);
  ExpectOp("aten::conv_transpose1d",
           {T(x1), T(Pattern({4, 3, 3}, 4, 1, -1.5)), None(), L({3}), L({2}), L({1}), I(2), L({2})},
           kConvt1d);
  ExpectOp("aten::max_pool3d", {T(x3), L({2, 2, 2}), L({1, 2, 1}), L({1, 0, 1}), L({1}), B(true)},
           kMp3d);
  ExpectOp("aten::avg_pool3d", {T(x3), L({2, 3, 2}), L({1, 1, 2}), L({1, 1, 1}), B(false),
                                B(false), None()},
           kAp3d);
  ExpectOp("aten::adaptive_avg_pool1d", {T(x1), L({3})}, kAap1d);
  ExpectOp("aten::adaptive_avg_pool3d", {T(x3), L({2, 3, 2})}, kAap3d);
  ExpectOp("aten::upsample_trilinear3d", {T(x3), L({4, 3, 5}), B(false), None(), None(), None()},
           kTri);
  ExpectOp("aten::upsample_nearest1d.vec", {T(x1), None(), IValue::List({D(2.5)})}, kNear1d);
}

TEST(RanksTest, UnbatchedAndNonContiguous) {
  Tensor x2 = Arange({3, 4, 4}, 0.1);
  ExpectOp("aten::conv2d", {T(x2), T(Pattern({2, 3, 2, 2}, 3, 1, -1)), None(), L({1}), L({1}),
                            L({1}), I(1)},
           kConv2dUnbatched);
  // arange(40).reshape(2, 5, 4).transpose(1, 2).
  auto xt = Transpose(Arange({2, 5, 4}), 1, 2);
  ASSERT_TRUE(xt.ok());
  ExpectOp("aten::max_pool1d", {T(*xt), L({3}), L({2}), L({1}), L({1}), B(false)}, kMp1dNc);
}

TEST(RobustnessTest, HostileValuesDoNotCrash) {
  // NaN / huge grid coordinates read nothing out of bounds.
  Tensor x = Arange({1, 1, 3, 4});
  Tensor grid = Make(DType::kFloat32, {1, 1, 3, 2}, {NAN, 0, 1e30, -1e30, INFINITY, 0.5});
  for (int mode = 0; mode < 3; ++mode) {
    for (int pad = 0; pad < 3; ++pad) {
      auto r = Call("aten::grid_sampler", {T(x), T(grid), I(mode), I(pad), B(false)});
      EXPECT_TRUE(r.ok()) << r.status();
    }
  }
  // Non-finite rois are rejected or sample nothing.
  Tensor rois = Make(DType::kFloat32, {2, 4}, {NAN, 0, 1, 1, 0, 0, INFINITY, 1});
  auto r = Call("kiln::roi_align", {T(x), T(rois), T(Make(DType::kInt64, {2}, {0, 0})), S("avg"),
                                    I(2), I(2), I(0), D(1.0), S("half_pixel")});
  EXPECT_FALSE(r.ok());
  r = Call("kiln::roi_align", {T(x), T(rois), T(Make(DType::kInt64, {2}, {0, 0})), S("avg"),
                               I(2), I(2), I(2), D(1.0), S("half_pixel")});
  EXPECT_TRUE(r.ok()) << r.status();
  // Enormous kernels, pads and scales are refused, not attempted.
  ExpectInvalid("kiln::max_pool_nd",
                {T(x), L({1 << 30, 1 << 30}), L({}), L({1 << 30, 1 << 30, 1 << 30, 1 << 30}),
                 L({}), B(false), I(0)},
                "too large");
  ExpectInvalid("kiln::avg_pool_nd",
                {T(x), L({2, 2}), L({}), L({0, 0, int64_t{1} << 62, 0}), L({}), B(false),
                 B(false)},
                "out of range");
  ExpectInvalid("aten::upsample_nearest2d.vec", {T(x), None(), IValue::List({D(1e300), D(1)})},
                "scale");
  ExpectInvalid("kiln::resize", {T(x), None(), None(), T(Make(DType::kInt64, {4}, {1, 1, 1 << 20, 1 << 20})),
                                 S("nearest"), S("half_pixel"), S("floor"), D(-0.75), B(false),
                                 D(0)},
                "too large");
  // Missing data (a placeholder constant) is an error, not a crash.
  ExpectInvalid("aten::max_pool2d",
                {T(Tensor::Placeholder(DType::kFloat32, {1, 1, 2, 2})), L({2}), L({}), L({0}),
                 L({1}), B(false)},
                "no data");
}

}  // namespace
}  // namespace kiln::runtime
