#include <string>

#include "build/selftest/b.pb.h"
#include "gtest/gtest.h"

TEST(ProtoSelftest, RoundTripWithImport) {
  kiln::selftest::Tensor t;
  t.set_name("x");
  t.mutable_shape()->add_dims(2);
  t.mutable_shape()->add_dims(3);
  std::string wire;
  ASSERT_TRUE(t.SerializeToString(&wire));
  kiln::selftest::Tensor u;
  ASSERT_TRUE(u.ParseFromString(wire));
  EXPECT_EQ(u.name(), "x");
  EXPECT_EQ(u.shape().dims_size(), 2);
  EXPECT_EQ(u.shape().dims(1), 3);
}
