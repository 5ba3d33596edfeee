// A torch.export archive (.pt2): an uncompressed zip whose entries sit under
// one root folder (`model/archive_format`, `model/models/model.json`,
// `model/data/weights/weight_0`, ...). Read with libzip; a file is mapped
// into memory (private, copy-on-write) so that weights can become tensors
// over the mapping without a copy.
//
//   ASSIGN_OR_RETURN(auto archive, Archive::OpenFile("model.pt2"));
//   ASSIGN_OR_RETURN(std::string json, archive->ReadText("models/model.json"));
//   ASSIGN_OR_RETURN(EntryBytes w, archive->Bytes("data/weights/weight_0"));
//
// Names given to the accessors are relative to the root folder. Not thread
// safe (libzip's handle is shared); keep one archive per thread.
#ifndef KILN_FRONTEND_PT2_ARCHIVE_H_
#define KILN_FRONTEND_PT2_ARCHIVE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kiln::frontend::pt2 {

// The bytes of one entry: a view into the archive's memory (`zero_copy`,
// when the entry is stored uncompressed at a 64-byte aligned offset) or a
// copy. `keep_alive` owns the memory `data` points into.
struct EntryBytes {
  const uint8_t* data = nullptr;
  size_t size = 0;
  std::shared_ptr<const void> keep_alive;
  bool zero_copy = false;
};

struct ArchiveOptions {
  // Check each entry read without a copy against the CRC-32 in the zip
  // directory (libzip checks copied entries itself). Costs one pass over
  // the weights' bytes.
  bool verify_crc = true;
  // Largest entry read as text (the model JSON, configs).
  size_t max_text_bytes = size_t{1} << 30;
};

class Archive {
 public:
  // Maps `path` and opens it. Errors name the path.
  static absl::StatusOr<std::unique_ptr<Archive>> OpenFile(const std::string& path,
                                                           const ArchiveOptions& options = {});
  // An archive held in memory; `display_name` starts error messages.
  static absl::StatusOr<std::unique_ptr<Archive>> FromBytes(std::string bytes,
                                                            std::string display_name,
                                                            const ArchiveOptions& options = {});
  ~Archive();
  Archive(const Archive&) = delete;
  Archive& operator=(const Archive&) = delete;

  // The file name (or display name) for messages.
  const std::string& name() const { return name_; }
  // The root folder, without a trailing slash ("model").
  const std::string& root() const { return root_; }
  // `archive_format`, `archive_version`, `.data/version` as read at open.
  const std::string& format_version() const { return archive_version_; }

  bool Has(absl::string_view relative) const;
  // Relative names of the entries under `prefix` (a folder, "data/weights/"),
  // sorted.
  std::vector<std::string> List(absl::string_view prefix) const;
  // The entry's size as the zip directory says; NotFound when absent.
  absl::StatusOr<uint64_t> Size(absl::string_view relative) const;
  // A whole entry as text (a copy); its size is limited by max_text_bytes.
  absl::StatusOr<std::string> ReadText(absl::string_view relative) const;
  // A whole entry's bytes, without a copy where the layout allows.
  absl::StatusOr<EntryBytes> Bytes(absl::string_view relative) const;

  struct Memory;  // the mapped file or the owned bytes (archive.cc)
  struct Source;  // libzip's view of Memory (archive.cc)

 private:
  struct Entry {
    uint64_t index = 0;
    uint64_t size = 0;
    uint64_t compressed_size = 0;
    uint32_t crc = 0;
    bool has_crc = false;
    bool stored = false;  // uncompressed and unencrypted
  };

  Archive() = default;
  static absl::StatusOr<std::unique_ptr<Archive>> Open(std::shared_ptr<Memory> memory,
                                                       std::string name,
                                                       const ArchiveOptions& options);
  absl::Status IndexEntries();
  absl::Status CheckHeader();
  absl::StatusOr<const Entry*> Find(absl::string_view relative) const;
  std::string Describe(absl::string_view relative) const;
  // Reads the whole entry through libzip (decompressing, CRC checked).
  absl::StatusOr<std::string> ReadCopy(const Entry& e, absl::string_view relative) const;
  // Where the entry's bytes start in Memory, or -1 when libzip did not read
  // them from one place (compressed entries).
  int64_t DataOffset(const Entry& e) const;

  std::string name_;
  std::string root_;
  std::string archive_version_;
  ArchiveOptions options_;
  std::shared_ptr<Memory> memory_;
  std::unique_ptr<Source> source_;
  void* zip_ = nullptr;  // zip_t*
  absl::flat_hash_map<std::string, Entry> entries_;  // by relative name
};

}  // namespace kiln::frontend::pt2

#endif  // KILN_FRONTEND_PT2_ARCHIVE_H_
