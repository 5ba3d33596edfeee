// The switches' readings: unset, "0", "1" and other values, as cuda_env.h
// documents them (the code's before/after comparisons rely on them).
#include "backends/cuda/cuda_env.h"

#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace kiln::backends::cuda::env {
namespace {

// Sets (or, with nullopt, unsets) `name` for the scope.
class Scoped {
 public:
  Scoped(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      setenv(name, value->c_str(), 1);
    } else {
      unsetenv(name);
    }
  }
  ~Scoped() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// What `read` returns with `name` set to `value` (nullopt: unset).
template <typename Read>
auto With(const char* name, std::optional<std::string> value, Read read) {
  Scoped s(name, std::move(value));
  return read();
}

TEST(CudaEnv, OffSwitchesTakeExactlyZero) {
  const std::pair<const char*, bool (*)()> switches[] = {{"KILN_CUDNN", CudnnDisabled},
                                                         {"KILN_CUDA_GRAPHS", CudaGraphsOff},
                                                         {"KILN_CUDA_DEPTHWISE", DepthwiseKernelOff},
                                                         {"KILN_CUDA_TRANSPOSE_TILES", TransposeTilesOff},
                                                         {"KILN_CUDNN_BACKEND", CudnnGraphApiOff},
                                                         {"KILN_CUDNN_GRAPH_FUSED", CudnnGraphFusedOff},
                                                         {"KILN_CUDNN_FIND", CudnnFindOff}};
  for (const auto& [name, off] : switches) {
    SCOPED_TRACE(name);
    EXPECT_FALSE(With(name, std::nullopt, off));
    EXPECT_TRUE(With(name, "0", off));
    EXPECT_FALSE(With(name, "1", off));
  }
}

TEST(CudaEnv, ForcedChoicesAndTheRest) {
  for (const auto& [name, read] : {std::pair{"KILN_CUDA_CHANNELS_LAST", ChannelsLast},
                                   std::pair{"KILN_CUDA_ATTENTION", Attention}}) {
    SCOPED_TRACE(name);
    EXPECT_EQ(With(name, std::nullopt, read), Force::kDefault);
    EXPECT_EQ(With(name, "0", read), Force::kOff);
    EXPECT_EQ(With(name, "1", read), Force::kOn);
    EXPECT_EQ(With(name, "yes", read), Force::kDefault);
  }
  EXPECT_TRUE(With("KILN_CUDA_DISABLE", "1", CudaDisabled));
  EXPECT_FALSE(With("KILN_CUDA_DISABLE", "0", CudaDisabled));
  EXPECT_FALSE(With("KILN_CUDA_DISABLE", "", CudaDisabled));
  EXPECT_TRUE(With("KILN_CUDA_GEMM_LOG", "1", GemmLog));
  EXPECT_FALSE(With("KILN_CUDA_GEMM_LOG", "0", GemmLog));
  EXPECT_TRUE(With("KILN_CUDNN_FUSED", "1", CudnnLegacyFused));
  EXPECT_FALSE(With("KILN_CUDNN_FUSED", "2", CudnnLegacyFused));
  EXPECT_TRUE(With("KILN_CUDNN_LOG", "", CudnnLog));
  EXPECT_FALSE(With("KILN_CUDNN_LOG", std::nullopt, CudnnLog));
  EXPECT_EQ(With("KILN_CUDNN_GRAPH_PLANS", "3", CudnnGraphPlans), 3);
  EXPECT_EQ(With("KILN_CUDNN_GRAPH_PLANS", "500", CudnnGraphPlans), 64);
  EXPECT_EQ(With("KILN_CUDNN_GRAPH_PLANS", "0", CudnnGraphPlans), std::nullopt);
  EXPECT_EQ(With("KILN_CUDNN_GRAPH_PLANS", "x", CudnnGraphPlans), std::nullopt);
  EXPECT_EQ(With("KILN_NVRTC_OPTIONS", " -minimal  --ptxas-options=-O2 ", ExtraNvrtcOptions),
            (std::vector<std::string>{"-minimal", "--ptxas-options=-O2"}));
}

}  // namespace
}  // namespace kiln::backends::cuda::env
