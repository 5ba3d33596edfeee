#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/hash/hash.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

ABSL_FLAG(int, selftest_answer, 0, "set to 42 by the BUILD file's args");

namespace {

absl::StatusOr<int> ParsePositive(int v) {
  if (v <= 0) return absl::InvalidArgumentError(absl::StrCat("bad: ", v));
  return v;
}

TEST(AbslSelftest, StatusOr) {
  EXPECT_EQ(*ParsePositive(3), 3);
  absl::StatusOr<int> bad = ParsePositive(-1);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), ::testing::HasSubstr("-1"));
}

TEST(AbslSelftest, FlagsParsed) { EXPECT_EQ(absl::GetFlag(FLAGS_selftest_answer), 42); }

TEST(AbslSelftest, ContainersStringsTime) {
  absl::flat_hash_map<std::string, int> m;
  for (auto piece : absl::StrSplit("a,b,c", ',')) m[piece] = 1;
  EXPECT_EQ(m.size(), 3u);
  EXPECT_EQ(absl::StrFormat("%d-%s", 7, "x"), "7-x");
  EXPECT_NE(absl::Hash<int>()(1), absl::Hash<int>()(2));
  absl::Mutex mu;
  absl::MutexLock lock(&mu);
  EXPECT_GT(absl::ToUnixSeconds(absl::Now()), 0);
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleMock(&argc, argv);
  absl::ParseCommandLine(argc, argv);
  return RUN_ALL_TESTS();
}
