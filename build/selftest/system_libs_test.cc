#include "build/selftest/system_libs.h"

#include "gtest/gtest.h"

namespace kiln::selftest {
namespace {

TEST(SystemLibs, Onnx) { EXPECT_EQ(ParseOnnxModel(""), 0); }

TEST(SystemLibs, Re2) {
  EXPECT_TRUE(Re2Matches("conv2d_3", "[a-z]+\\d+d_\\d+"));
  EXPECT_FALSE(Re2Matches("relu", "\\d+"));
}

TEST(SystemLibs, OpenBlas) {
  const double a[] = {1, 2, 3}, b[] = {4, 5, 6};
  EXPECT_DOUBLE_EQ(Dot3(a, b), 32.0);
}

TEST(SystemLibs, Dl) { EXPECT_TRUE(HasSymbol("malloc")); }

}  // namespace
}  // namespace kiln::selftest
