#include "tools/version.h"

#include "absl/strings/str_cat.h"

namespace kiln::tools {

std::string VersionLine() {
#if defined(__clang__)
  const std::string compiler = absl::StrCat("clang ", __clang_major__, ".", __clang_minor__, ".",
                                            __clang_patchlevel__);
#elif defined(__GNUC__)
  const std::string compiler =
      absl::StrCat("gcc ", __GNUC__, ".", __GNUC_MINOR__, ".", __GNUC_PATCHLEVEL__);
#else
  const std::string compiler = "unknown compiler";
#endif
#ifdef NDEBUG
  constexpr char kBuild[] = "optimized build";
#else
  constexpr char kBuild[] = "debug build";
#endif
  return absl::StrCat("kiln ", kKilnVersion, " (", compiler, ", ", kBuild, ")");
}

}  // namespace kiln::tools
