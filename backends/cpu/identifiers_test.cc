#include "backends/cpu/identifiers.h"

#include <string>

#include "gtest/gtest.h"

namespace kiln::backends::cpu {
namespace {

TEST(SanitizeIdentifierTest, LongNamesThatDifferPastTheCutStayDistinct) {
  const std::string stem(80, 'a');
  const std::string a = SanitizeIdentifier(stem + "_2");
  const std::string b = SanitizeIdentifier(stem + "_3");
  EXPECT_NE(a, b);
  EXPECT_LE(a.size(), 72u);
  EXPECT_EQ(a, SanitizeIdentifier(stem + "_2"));  // deterministic
  EXPECT_EQ(a.find("__"), std::string::npos);
}

TEST(SanitizeIdentifierTest, ShortNamesAreKept) {
  EXPECT_EQ(SanitizeIdentifier("cpp_fused_add_0"), "cpp_fused_add_0");
}

TEST(SanitizeIdentifierTest, NamesOfThePreludeAreNeverProduced) {
  for (const char* name : {"KilnSgemmFn", "KilnHostApi", "kiln_threads", "api"}) {
    EXPECT_NE(SanitizeIdentifier(name), name) << name;
  }
}

TEST(IdentifierTableTest, CollidingSanitizedNamesGetSuffixes) {
  IdentifierTable ids;
  const std::string a = ids.Get("x.y");
  const std::string b = ids.Get("x-y");
  EXPECT_NE(a, b);
  EXPECT_EQ(a, ids.Get("x.y"));
}

}  // namespace
}  // namespace kiln::backends::cpu
