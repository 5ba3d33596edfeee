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

TEST(CudaEnv, OffSwitchesTakeExactlyZero) {
  struct Case {
    const char* name;
    bool (*off)();
  };
  const Case cases[] = {{"KILN_CUDNN", CudnnDisabled},
                        {"KILN_CUDA_GRAPHS", CudaGraphsOff},
                        {"KILN_CUDA_DEPTHWISE", DepthwiseKernelOff},
                        {"KILN_CUDA_TRANSPOSE_TILES", TransposeTilesOff},
                        {"KILN_CUDNN_BACKEND", CudnnGraphApiOff},
                        {"KILN_CUDNN_GRAPH_FUSED", CudnnGraphFusedOff},
                        {"KILN_CUDNN_FIND", CudnnFindOff}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    {
      Scoped s(c.name, std::nullopt);
      EXPECT_FALSE(c.off());
    }
    {
      Scoped s(c.name, "0");
      EXPECT_TRUE(c.off());
    }
    {
      Scoped s(c.name, "1");
      EXPECT_FALSE(c.off());
    }
  }
}

TEST(CudaEnv, ForcedChoicesAndTheRest) {
  for (const auto& [name, read] : {std::pair{"KILN_CUDA_CHANNELS_LAST", ChannelsLast},
                                   std::pair{"KILN_CUDA_ATTENTION", Attention}}) {
    SCOPED_TRACE(name);
    {
      Scoped s(name, std::nullopt);
      EXPECT_EQ(read(), Force::kDefault);
    }
    {
      Scoped s(name, "0");
      EXPECT_EQ(read(), Force::kOff);
    }
    {
      Scoped s(name, "1");
      EXPECT_EQ(read(), Force::kOn);
    }
    {
      Scoped s(name, "yes");
      EXPECT_EQ(read(), Force::kDefault);
    }
  }
  {
    Scoped s("KILN_CUDA_DISABLE", "1");
    EXPECT_TRUE(CudaDisabled());
  }
  {
    Scoped s("KILN_CUDA_DISABLE", "0");
    EXPECT_FALSE(CudaDisabled());
  }
  {
    Scoped s("KILN_CUDA_DISABLE", "");
    EXPECT_FALSE(CudaDisabled());
  }
  {
    Scoped s("KILN_CUDA_GEMM_LOG", "1");
    EXPECT_TRUE(GemmLog());
  }
  {
    Scoped s("KILN_CUDA_GEMM_LOG", "0");
    EXPECT_FALSE(GemmLog());
  }
  {
    Scoped s("KILN_CUDNN_FUSED", "1");
    EXPECT_TRUE(CudnnLegacyFused());
  }
  {
    Scoped s("KILN_CUDNN_FUSED", "2");
    EXPECT_FALSE(CudnnLegacyFused());
  }
  {
    Scoped s("KILN_CUDNN_LOG", "");
    EXPECT_TRUE(CudnnLog());
  }
  {
    Scoped s("KILN_CUDNN_GRAPH_PLANS", "3");
    EXPECT_EQ(CudnnGraphPlans(), 3);
  }
  {
    Scoped s("KILN_CUDNN_GRAPH_PLANS", "500");
    EXPECT_EQ(CudnnGraphPlans(), 64);
  }
  {
    Scoped s("KILN_CUDNN_GRAPH_PLANS", "0");
    EXPECT_EQ(CudnnGraphPlans(), std::nullopt);
  }
  {
    Scoped s("KILN_CUDNN_GRAPH_PLANS", "x");
    EXPECT_EQ(CudnnGraphPlans(), std::nullopt);
  }
  {
    Scoped s("KILN_NVRTC_OPTIONS", " -minimal  --ptxas-options=-O2 ");
    EXPECT_EQ(ExtraNvrtcOptions(), (std::vector<std::string>{"-minimal", "--ptxas-options=-O2"}));
  }
}

}  // namespace
}  // namespace kiln::backends::cuda::env
