// Small, fast, deterministic hashing used for fingerprints and structural
// hashes. Deterministic across runs (unlike absl::Hash), so fingerprints can
// be stored and compared between processes.
#ifndef KILN_SUPPORT_HASH_H_
#define KILN_SUPPORT_HASH_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include "absl/strings/string_view.h"

namespace kiln {

// Mixes `v` into `seed` (a 64-bit variant of boost::hash_combine with a
// murmur-style finalizer so that small integers spread over all bits).
inline uint64_t HashMix(uint64_t v) {
  v ^= v >> 33;
  v *= 0xff51afd7ed558ccdULL;
  v ^= v >> 33;
  v *= 0xc4ceb9fe1a85ec53ULL;
  v ^= v >> 33;
  return v;
}

inline uint64_t HashCombine(uint64_t seed, uint64_t v) {
  return seed ^ (HashMix(v) + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2));
}

// FNV-1a over bytes, finished with HashMix.
inline uint64_t HashBytes(const void* data, size_t n, uint64_t seed = 0) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  uint64_t h = 0xcbf29ce484222325ULL ^ seed;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = (h ^ w) * 0x100000001b3ULL;
    h ^= h >> 29;
  }
  for (; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ULL;
  return HashMix(h ^ n);
}

inline uint64_t HashString(absl::string_view s, uint64_t seed = 0) {
  return HashBytes(s.data(), s.size(), seed);
}

inline uint64_t HashDouble(double d) {
  if (d == 0) d = 0;  // +0 and -0 hash alike
  uint64_t bits;
  std::memcpy(&bits, &d, sizeof(bits));
  return HashMix(bits);
}

}  // namespace kiln

#endif  // KILN_SUPPORT_HASH_H_
