#include "devices/identifiers.h"

#include <cctype>
#include <string>

#include "gtest/gtest.h"

namespace kiln::devices {
namespace {

bool IsBufName(absl::string_view mapped) { return mapped.rfind("buf", 0) == 0; }

IdentifierRules ReservingRules() {
  IdentifierRules r;
  r.reserved_words = {"int", "main"};
  r.reserved_prefixes = {"l_"};
  return r;
}

TEST(SanitizeIdentifierTest, OnlySafeCharactersLeave) {
  const std::string id = SanitizeIdentifier("x); system(\"rm -rf /\"); //", IdentifierRules());
  for (char c : id) EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c)) || c == '_') << id;
  EXPECT_EQ(id.find("__"), std::string::npos);
  EXPECT_EQ(SanitizeIdentifier("a\xc3\xa9-b", IdentifierRules()), "a_b");
}

TEST(SanitizeIdentifierTest, ReservedAndMalformedNamesArePrefixed) {
  const IdentifierRules rules = ReservingRules();
  EXPECT_EQ(SanitizeIdentifier("int", rules), "b_int");
  EXPECT_EQ(SanitizeIdentifier("l_t0", rules), "b_l_t0");
  EXPECT_EQ(SanitizeIdentifier("1abc", rules), "b_1abc");
  EXPECT_EQ(SanitizeIdentifier("_x", rules), "b_x");
  EXPECT_EQ(SanitizeIdentifier("", rules), "b");
  EXPECT_EQ(SanitizeIdentifier("value", rules), "value");
}

TEST(SanitizeIdentifierTest, PrefixOtherNamesKeepsOnlyOwnNames) {
  IdentifierRules rules;
  rules.prefix_other_names = true;
  rules.is_own_name = IsBufName;
  EXPECT_EQ(SanitizeIdentifier("buf0", rules), "buf0");
  EXPECT_EQ(SanitizeIdentifier("expf", rules), "b_expf");
}

TEST(SanitizeIdentifierTest, LongNamesKeepAHashOfTheWholeName) {
  const std::string stem(80, 'a');
  const std::string a = SanitizeIdentifier(stem + "_2", IdentifierRules());
  const std::string b = SanitizeIdentifier(stem + "_3", IdentifierRules());
  EXPECT_NE(a, b);
  EXPECT_EQ(a.size(), 48u + 2u + 16u);
  EXPECT_EQ(a.substr(0, 50), std::string(48, 'a') + "_h");
  EXPECT_EQ(a, SanitizeIdentifier(stem + "_2", IdentifierRules()));
  EXPECT_EQ(SanitizeIdentifier(std::string(64, 'a'), IdentifierRules()), std::string(64, 'a'));
}

TEST(IdentifierTableTest, CollidingSanitizedNamesGetSuffixes) {
  const IdentifierRules rules = ReservingRules();
  IdentifierTable ids(rules);
  const std::string a = ids.Get("x.y");
  const std::string b = ids.Get("x-y");
  EXPECT_EQ(a, "x_y");
  EXPECT_EQ(b, "x_y_1");
  EXPECT_EQ(a, ids.Get("x.y"));
  EXPECT_TRUE(ids.Contains("x-y"));
  EXPECT_FALSE(ids.Contains("x+y"));
}

TEST(SanitizeCommentTest, PrintableAsciiOnlyAndBounded) {
  EXPECT_EQ(SanitizeComment("a\nb\\c*/"), "a?b?c*/");
  EXPECT_EQ(SanitizeComment(std::string(500, 'x')).size(), 120u);
}

}  // namespace
}  // namespace kiln::devices
