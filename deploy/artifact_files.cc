#include "deploy/artifact_files.h"

#include <xxhash.h>

#include <cstdio>

namespace kiln::deploy {

std::string SourceHash(const std::string& source) {
  const XXH128_hash_t h = XXH3_128bits(source.data(), source.size());
  char hex[33];
  std::snprintf(hex, sizeof(hex), "%016llx%016llx", static_cast<unsigned long long>(h.high64),
                static_cast<unsigned long long>(h.low64));
  return hex;
}

}  // namespace kiln::deploy
