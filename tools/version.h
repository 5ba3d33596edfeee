// kiln's version: what `kiln --version` prints and what the CLI stamps into
// the files it generates (report.md, program.cpp, wrapper.py, JSON, traces).
#ifndef KILN_TOOLS_VERSION_H_
#define KILN_TOOLS_VERSION_H_

#include <string>

namespace kiln::tools {

// The release number (semantic versioning). The one place it is written.
inline constexpr char kKilnVersion[] = "0.1.0";

// "kiln 0.1.0 (gcc 12.2.0, optimized build)": the release, the compiler that
// built this binary and whether assertions are on (-c opt or not).
std::string VersionLine();

}  // namespace kiln::tools

#endif  // KILN_TOOLS_VERSION_H_
