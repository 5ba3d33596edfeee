#include "passes/pass_test_util.h"

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ir/text_parser.h"
#include "ir/text_printer.h"
#include "ir/verifier.h"
#include "passes/fingerprint.h"

namespace kiln::passes::testing {

PassOutcome RunPassOnText(const PassFunction& pass, absl::string_view text) {
  PassOutcome out;
  auto graph = ir::ParseGraph(text);
  if (!graph.ok()) {
    out.error = absl::StrCat("parse: ", graph.status().message());
    return out;
  }
  const uint64_t before = GraphFingerprint(**graph);
  auto changed = pass(**graph, out.stats);
  if (!changed.ok()) {
    out.error = absl::StrCat("pass: ", changed.status().message());
    return out;
  }
  out.changed = *changed;
  out.printed = ir::PrintGraph(**graph);
  const bool really_changed = GraphFingerprint(**graph) != before;
  if (really_changed != out.changed) {
    out.error = absl::StrCat("changed bit says ", out.changed, " but the fingerprint says ",
                             really_changed);
    return out;
  }
  absl::Status verified = ir::Verify(**graph);
  if (!verified.ok()) {
    out.error = absl::StrCat("verify after pass: ", verified.message(), "\n", out.printed);
    return out;
  }
  out.ok = true;
  return out;
}

std::string Normalize(absl::string_view text) {
  auto graph = ir::ParseGraph(text);
  if (!graph.ok()) return absl::StrCat("<parse error: ", graph.status().message(), ">");
  return ir::PrintGraph(**graph);
}

PassOutcome RunPassExpectOk(const PassFunction& pass, absl::string_view text) {
  PassOutcome out = RunPassOnText(pass, text);
  EXPECT_TRUE(out.ok) << out.error;
  return out;
}

void ExpectRewrite(const PassFunction& pass, absl::string_view input,
                   absl::string_view expected) {
  PassOutcome out = RunPassExpectOk(pass, input);
  EXPECT_EQ(out.printed, Normalize(expected));
  EXPECT_EQ(out.changed, Normalize(input) != Normalize(expected));
  PassOutcome again = RunPassExpectOk(pass, out.printed);
  EXPECT_FALSE(again.changed) << again.printed;
  EXPECT_EQ(again.printed, out.printed);
}

}  // namespace kiln::passes::testing
