// The deployment artifact's weights file (DIR/model.weights): every
// constant of a compiled program in one file, mapped read-only at load and
// read in place (no copy). Also carries the artifact's metadata (kiln
// version, the generated source's hash, input and output names).
//
// Layout (little-endian):
//   header (64 bytes): magic "KILNWTS\0", u32 format version, u32 entry
//     count, u64 table offset (64), u64 table bytes, u64 data offset, u64
//     file bytes, u64 XXH3-64 of the table, u64 zero
//   table: per entry u32 kind (0 tensor, 1 metadata), u32 name bytes, the
//     name; a tensor: i32 dtype code, u32 rank, i64 sizes[rank], u64 offset,
//     u64 bytes (contiguous data); metadata: u64 value bytes, the value
//   data: each tensor's bytes at a 64-byte aligned offset
//
// The loader is untrusted-input code (weights_fuzz): every count, length,
// offset and size is checked against the file before anything is read, and
// a truncated, extended or corrupt file is an InvalidArgument naming the
// file and the entry, never a crash.
#ifndef KILN_DEPLOY_WEIGHTS_FILE_H_
#define KILN_DEPLOY_WEIGHTS_FILE_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "support/tensor.h"

namespace kiln::deploy {

inline constexpr uint32_t kWeightsFormatVersion = 1;
inline constexpr size_t kWeightsAlignment = 64;  // Storage::kAlignment
// Bounds that no real program reaches and that keep a hostile table small.
inline constexpr uint32_t kMaxWeightsEntries = 1 << 20;
inline constexpr uint32_t kMaxWeightsNameBytes = 4096;
inline constexpr uint32_t kMaxWeightsRank = 64;

struct WeightsContents {
  // Tensors over the file's bytes (contiguous, read-only memory: nothing
  // may write into them), kept alive by the mapping they share.
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> metadata;
};

// The file's bytes: `tensors` (any layout; written contiguous) and `metadata`.
absl::StatusOr<std::string> SerializeWeights(const std::vector<std::pair<std::string, Tensor>>& tensors,
                                             const std::map<std::string, std::string>& metadata);

// Parses `size` bytes at `data` (kWeightsAlignment-aligned; `owner` keeps
// them alive and is shared by the tensors). `display_name` names the file in
// errors.
absl::StatusOr<WeightsContents> ParseWeights(const void* data, size_t size,
                                             std::shared_ptr<const void> owner,
                                             absl::string_view display_name);

// Maps `path` read-only and parses it.
absl::StatusOr<WeightsContents> MapWeightsFile(const std::string& path);

}  // namespace kiln::deploy

#endif  // KILN_DEPLOY_WEIGHTS_FILE_H_
