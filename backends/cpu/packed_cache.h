// The packed weights of a program's library calls (library_calls.h) kept on
// disk, so that a warm load maps them instead of reordering every GEMM and
// convolution weight into oneDNN's layout again (BERT-base: 340 MB, 45-180
// ms of packing and page faults on the 2-core machine).
//
// An entry is only looked up for a program whose constants have an identity
// (GeneratedProgram::constants_identity: the driver's program cache key, set
// when the constants came from, or went into, that cache), so the key needs
// no hash of the weights themselves. Key = XXH3-128 of that identity,
// oneDNN's version and every slot: which constant it reads, from where, the
// source's and the packed layout's descriptors (DescFingerprint, dnnl_util.h).
// A different CPU (ISA), thread count or oneDNN version that packs
// differently gives other descriptors, hence another key: a miss, never a
// misread. Entries live in CacheDirectory("cpu_packed") under
// support/disk_cache.h's protocol (rename-published, checksummed, LRU), as
//
//   "KILNPKW1" | u64 header bytes | header | zero padding to 4096 | data
//   header: u32 slots, per slot {u32 constant, u64 source offset, u64 data
//           offset (64-aligned), u64 bytes, u32 n + n bytes user descriptor,
//           u32 n + n bytes packed descriptor}, u64 data bytes
//
// and the slots recorded there must equal the program's (checked on a hit,
// besides the key). The parser is untrusted-input code
// (packed_cache_fuzz): a bad entry is a miss and is replaced.
#ifndef KILN_BACKENDS_CPU_PACKED_CACHE_H_
#define KILN_BACKENDS_CPU_PACKED_CACHE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kiln::backends::cpu {

inline constexpr char kPackedEntryMagic[] = "KILNPKW1";
// Where the data starts in an entry (a page: the slices keep the alignment
// the arena gave them).
inline constexpr size_t kPackedDataAlignment = 4096;

// One packed constant of a program.
struct PackedSlot {
  uint32_t constant = 0;       // index in GeneratedProgram::constants
  uint64_t source_offset = 0;  // bytes from that constant's storage base to what is packed
  uint64_t offset = 0;         // of the packed bytes in the data (64-aligned)
  uint64_t bytes = 0;
  std::string user;    // DescFingerprint of the source
  std::string packed;  // DescFingerprint of the packed layout
  bool operator==(const PackedSlot& o) const {
    return constant == o.constant && source_offset == o.source_offset && offset == o.offset && bytes == o.bytes &&
           user == o.user && packed == o.packed;
  }
};

// The cache key (32 hex digits). `library_version`: the packing library's
// version (oneDNN's major.minor.patch and commit).
std::string PackedEntryKey(absl::string_view constants_identity, absl::string_view library_version,
                           const std::vector<PackedSlot>& slots, uint64_t data_bytes);

// Magic, header and padding: the entry is this followed by `data_bytes`.
std::string PackedEntryHead(const std::vector<PackedSlot>& slots, uint64_t data_bytes);

struct PackedEntry {
  std::vector<PackedSlot> slots;
  uint64_t data_offset = 0;  // from the start of the entry
  uint64_t data_bytes = 0;
};

// Parses an entry (InvalidArgument naming `display_name` and what is wrong):
// every slot lies in the data, which ends where the entry does.
absl::StatusOr<PackedEntry> ParsePackedEntry(absl::string_view bytes, absl::string_view display_name);

}  // namespace kiln::backends::cpu

#endif  // KILN_BACKENDS_CPU_PACKED_CACHE_H_
