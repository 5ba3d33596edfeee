// Helpers for IR-text-in, IR-text-out pass tests (testonly).
#ifndef KILN_PASSES_PASS_TEST_UTIL_H_
#define KILN_PASSES_PASS_TEST_UTIL_H_

#include <memory>
#include <string>

#include "absl/strings/string_view.h"
#include "ir/ir.h"
#include "passes/pass.h"

namespace kiln::passes::testing {

struct PassOutcome {
  bool ok = false;       // parsed, ran without error, changed bit truthful
  std::string error;     // why not ok
  bool changed = false;  // what the pass returned
  std::string printed;   // the graph after the pass
  PassStatistics stats;
};

// Parses `text`, runs `pass`, and checks the returned changed bit against
// the graph fingerprint before and after.
PassOutcome RunPassOnText(const PassFunction& pass, absl::string_view text);

// Parse + print, so that expected text compares byte-for-byte.
std::string Normalize(absl::string_view text);

// RunPassOnText, adding a test failure unless the outcome is ok.
PassOutcome RunPassExpectOk(const PassFunction& pass, absl::string_view text);

// Expects `pass` to turn `input` into `expected`, to report a change exactly
// when they differ, and to change nothing when run again on its output.
void ExpectRewrite(const PassFunction& pass, absl::string_view input,
                   absl::string_view expected);

}  // namespace kiln::passes::testing

#endif  // KILN_PASSES_PASS_TEST_UTIL_H_
