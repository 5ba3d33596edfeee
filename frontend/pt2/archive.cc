#include "frontend/pt2/archive.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zip.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "support/status.h"

namespace kiln::frontend::pt2 {

// The archive's bytes: a private mapping of the file, or owned bytes.
struct Archive::Memory {
  const uint8_t* data = nullptr;
  size_t size = 0;
  void* mapping = nullptr;  // munmap'ed on destruction
  void* owned = nullptr;    // free'd on destruction (64-byte aligned, like a file mapping)

  Memory() = default;
  Memory(const Memory&) = delete;
  Memory& operator=(const Memory&) = delete;
  ~Memory() {
    if (mapping != nullptr) munmap(mapping, size);
    std::free(owned);
  }
};

// A read-only libzip source over Memory that remembers where its last read
// started: reading an entry's first bytes through libzip reveals where the
// entry's data lies, without parsing zip headers here.
struct Archive::Source {
  std::shared_ptr<Memory> memory;
  uint64_t pos = 0;
  int64_t last_read_start = -1;
  zip_error_t error;

  static zip_int64_t Callback(void* userdata, void* data, zip_uint64_t len, zip_source_cmd_t cmd) {
    auto* s = static_cast<Source*>(userdata);
    const uint64_t size = s->memory->size;
    switch (cmd) {
      case ZIP_SOURCE_OPEN:
        s->pos = 0;
        return 0;
      case ZIP_SOURCE_READ: {
        if (s->pos >= size) return 0;
        const uint64_t n = std::min<uint64_t>(len, size - s->pos);
        std::memcpy(data, s->memory->data + s->pos, n);
        s->last_read_start = static_cast<int64_t>(s->pos);
        s->pos += n;
        return static_cast<zip_int64_t>(n);
      }
      case ZIP_SOURCE_CLOSE:
        return 0;
      case ZIP_SOURCE_STAT: {
        if (len < sizeof(zip_stat_t)) {
          zip_error_set(&s->error, ZIP_ER_INVAL, 0);
          return -1;
        }
        auto* st = static_cast<zip_stat_t*>(data);
        zip_stat_init(st);
        st->size = size;
        st->valid |= ZIP_STAT_SIZE;
        return sizeof(zip_stat_t);
      }
      case ZIP_SOURCE_ERROR:
        return zip_error_to_data(&s->error, data, len);
      case ZIP_SOURCE_FREE:
        return 0;  // owned by the Archive
      case ZIP_SOURCE_SEEK: {
        const zip_int64_t p = zip_source_seek_compute_offset(s->pos, size, data, len, &s->error);
        if (p < 0) return -1;
        s->pos = static_cast<uint64_t>(p);
        return 0;
      }
      case ZIP_SOURCE_TELL:
        return static_cast<zip_int64_t>(s->pos);
      case ZIP_SOURCE_SUPPORTS:
        return zip_source_make_command_bitmap(ZIP_SOURCE_OPEN, ZIP_SOURCE_READ, ZIP_SOURCE_CLOSE,
                                              ZIP_SOURCE_STAT, ZIP_SOURCE_ERROR, ZIP_SOURCE_FREE,
                                              ZIP_SOURCE_SEEK, ZIP_SOURCE_TELL,
                                              ZIP_SOURCE_SUPPORTS, -1);
      default:
        zip_error_set(&s->error, ZIP_ER_OPNOTSUPP, 0);
        return -1;
    }
  }
};

namespace {

zip_t* Zip(void* z) { return static_cast<zip_t*>(z); }

// zlib's crc32 takes 32-bit lengths.
uint32_t Crc32(const uint8_t* data, size_t size) {
  uLong crc = crc32(0L, Z_NULL, 0);
  while (size > 0) {
    const uInt chunk = static_cast<uInt>(std::min<size_t>(size, 1u << 30));
    crc = crc32(crc, data, chunk);
    data += chunk;
    size -= chunk;
  }
  return static_cast<uint32_t>(crc);
}

}  // namespace

Archive::~Archive() {
  if (zip_ != nullptr) zip_discard(Zip(zip_));
  if (source_ != nullptr) zip_error_fini(&source_->error);
}

absl::StatusOr<std::unique_ptr<Archive>> Archive::OpenFile(const std::string& path,
                                                           const ArchiveOptions& options) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::NotFoundError(absl::StrCat(path, ": cannot open: ", std::strerror(errno)));
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a regular file"));
  }
  if (st.st_size == 0) {
    close(fd);
    return absl::InvalidArgumentError(absl::StrCat(path, ": empty file (not a .pt2 archive)"));
  }
  auto memory = std::make_shared<Memory>();
  // Private and writable: a kernel that wrote into a weight would change its
  // own copy of the page, never the file.
  void* m = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ | PROT_WRITE, MAP_PRIVATE,
                 fd, 0);
  close(fd);
  if (m == MAP_FAILED) {
    return absl::InternalError(absl::StrCat(path, ": cannot map: ", std::strerror(errno)));
  }
  memory->mapping = m;
  memory->data = static_cast<const uint8_t*>(m);
  memory->size = static_cast<size_t>(st.st_size);
  return Open(std::move(memory), path, options);
}

absl::StatusOr<std::unique_ptr<Archive>> Archive::FromBytes(std::string bytes,
                                                            std::string display_name,
                                                            const ArchiveOptions& options) {
  auto memory = std::make_shared<Memory>();
  // Aligned like a mapping, so that in-memory archives read the same way.
  memory->owned = std::aligned_alloc(64, (bytes.size() + 63) / 64 * 64 + 64);
  if (memory->owned == nullptr) return absl::ResourceExhaustedError("out of memory");
  if (!bytes.empty()) std::memcpy(memory->owned, bytes.data(), bytes.size());
  memory->data = static_cast<const uint8_t*>(memory->owned);
  memory->size = bytes.size();
  return Open(std::move(memory), std::move(display_name), options);
}

absl::StatusOr<std::unique_ptr<Archive>> Archive::Open(std::shared_ptr<Memory> memory,
                                                       std::string name,
                                                       const ArchiveOptions& options) {
  std::unique_ptr<Archive> a(new Archive());
  a->name_ = std::move(name);
  a->options_ = options;
  a->memory_ = memory;
  a->source_ = std::make_unique<Source>();
  a->source_->memory = std::move(memory);
  zip_error_init(&a->source_->error);
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* src = zip_source_function_create(&Source::Callback, a->source_.get(), &error);
  if (src == nullptr) {
    const std::string msg = zip_error_strerror(&error);
    zip_error_fini(&error);
    return absl::InternalError(absl::StrCat(a->name_, ": libzip: ", msg));
  }
  // ZIP_CHECKCONS: the local headers must agree with the central directory.
  zip_t* z = zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &error);
  if (z == nullptr) {
    const std::string msg = zip_error_strerror(&error);
    zip_error_fini(&error);
    zip_source_free(src);
    return absl::InvalidArgumentError(
        absl::StrCat(a->name_, ": not a readable zip archive (libzip: ", msg, ")"));
  }
  zip_error_fini(&error);
  a->zip_ = z;
  RETURN_IF_ERROR(a->IndexEntries());
  RETURN_IF_ERROR(a->CheckHeader());
  return a;
}

absl::Status Archive::IndexEntries() {
  const zip_int64_t n = zip_get_num_entries(Zip(zip_), 0);
  if (n <= 0) return absl::InvalidArgumentError(absl::StrCat(name_, ": the archive is empty"));
  for (zip_int64_t i = 0; i < n; ++i) {
    zip_stat_t st;
    if (zip_stat_index(Zip(zip_), static_cast<zip_uint64_t>(i), 0, &st) != 0 ||
        !(st.valid & ZIP_STAT_NAME)) {
      return absl::InvalidArgumentError(
          absl::StrCat(name_, ": cannot read zip entry ", i, ": ", zip_strerror(Zip(zip_))));
    }
    const absl::string_view full(st.name);
    if (absl::EndsWith(full, "/")) continue;  // a folder entry
    const size_t slash = full.find('/');
    if (slash == absl::string_view::npos || slash == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          name_, ": entry '", full, "' is not under a root folder (a .pt2 archive keeps every entry in one folder)"));
    }
    const absl::string_view root = full.substr(0, slash);
    if (root_.empty()) {
      root_ = std::string(root);
    } else if (root != root_) {
      return absl::InvalidArgumentError(absl::StrCat(name_, ": entries under two root folders, '",
                                                     root_, "' and '", root, "'"));
    }
    Entry e;
    e.index = static_cast<uint64_t>(i);
    e.size = (st.valid & ZIP_STAT_SIZE) ? st.size : 0;
    e.compressed_size = (st.valid & ZIP_STAT_COMP_SIZE) ? st.comp_size : e.size;
    e.has_crc = (st.valid & ZIP_STAT_CRC) != 0;
    e.crc = st.crc;
    e.stored = (st.valid & ZIP_STAT_COMP_METHOD) && st.comp_method == ZIP_CM_STORE &&
               (!(st.valid & ZIP_STAT_ENCRYPTION_METHOD) || st.encryption_method == ZIP_EM_NONE);
    if (e.stored && e.compressed_size != e.size) {
      return absl::InvalidArgumentError(absl::StrCat(
          name_, ": entry '", full, "' is stored uncompressed but its sizes disagree (", e.size,
          " vs ", e.compressed_size, " bytes)"));
    }
    if (!entries_.emplace(std::string(full.substr(slash + 1)), e).second) {
      return absl::InvalidArgumentError(absl::StrCat(name_, ": entry '", full, "' appears twice"));
    }
  }
  if (root_.empty()) return absl::InvalidArgumentError(absl::StrCat(name_, ": the archive has no files"));
  return absl::OkStatus();
}

absl::Status Archive::CheckHeader() {
  ASSIGN_OR_RETURN(std::string format, ReadText("archive_format"));
  if (absl::StripAsciiWhitespace(format) != "pt2") {
    return absl::InvalidArgumentError(absl::StrCat(Describe("archive_format"), ": says '",
                                                   format.substr(0, 40), "', expected 'pt2'"));
  }
  if (Has("archive_version")) {
    ASSIGN_OR_RETURN(std::string v, ReadText("archive_version"));
    int version = 0;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(v), &version)) {
      return absl::InvalidArgumentError(absl::StrCat(Describe("archive_version"),
                                                     ": not a version number: '",
                                                     v.substr(0, 40), "'"));
    }
    archive_version_ = std::string(absl::StripAsciiWhitespace(v));
  }
  if (Has("byteorder")) {
    ASSIGN_OR_RETURN(std::string order, ReadText("byteorder"));
    if (absl::StripAsciiWhitespace(order) != "little") {
      return absl::UnimplementedError(absl::StrCat(Describe("byteorder"), ": '",
                                                   order.substr(0, 40),
                                                   "': only little-endian archives are supported"));
    }
  }
  return absl::OkStatus();
}

std::string Archive::Describe(absl::string_view relative) const {
  return absl::StrCat(name_, ": entry '", root_, "/", relative, "'");
}

bool Archive::Has(absl::string_view relative) const { return entries_.contains(relative); }

std::vector<std::string> Archive::List(absl::string_view prefix) const {
  std::vector<std::string> out;
  for (const auto& [name, e] : entries_) {
    if (absl::StartsWith(name, prefix)) out.push_back(name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

absl::StatusOr<const Archive::Entry*> Archive::Find(absl::string_view relative) const {
  auto it = entries_.find(relative);
  if (it == entries_.end()) {
    return absl::NotFoundError(absl::StrCat(Describe(relative), " is missing"));
  }
  return &it->second;
}

absl::StatusOr<uint64_t> Archive::Size(absl::string_view relative) const {
  ASSIGN_OR_RETURN(const Entry* e, Find(relative));
  return e->size;
}

absl::StatusOr<std::string> Archive::ReadCopy(const Entry& e, absl::string_view relative) const {
  zip_file_t* f = zip_fopen_index(Zip(zip_), e.index, 0);
  if (f == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(Describe(relative), ": cannot open: ", zip_strerror(Zip(zip_))));
  }
  // Grow as bytes arrive: the directory's size may be forged.
  std::string out;
  char buf[1 << 16];
  absl::Status status = absl::OkStatus();
  for (;;) {
    const zip_int64_t n = zip_fread(f, buf, sizeof(buf));
    if (n < 0) {
      status = absl::InvalidArgumentError(
          absl::StrCat(Describe(relative), ": cannot read: ", zip_file_strerror(f)));
      break;
    }
    if (n == 0) break;
    if (out.size() + static_cast<uint64_t>(n) > e.size) {
      status = absl::InvalidArgumentError(absl::StrCat(
          Describe(relative), ": holds more than the ", e.size, " bytes the zip directory says"));
      break;
    }
    out.append(buf, static_cast<size_t>(n));
  }
  zip_fclose(f);
  RETURN_IF_ERROR(status);
  if (out.size() != e.size) {
    return absl::InvalidArgumentError(absl::StrCat(Describe(relative), ": holds ", out.size(),
                                                   " bytes, the zip directory says ", e.size));
  }
  return out;
}

absl::StatusOr<std::string> Archive::ReadText(absl::string_view relative) const {
  ASSIGN_OR_RETURN(const Entry* e, Find(relative));
  if (e->size > options_.max_text_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(Describe(relative), ": ", e->size,
                                                   " bytes is more than the limit of ",
                                                   options_.max_text_bytes));
  }
  return ReadCopy(*e, relative);
}

int64_t Archive::DataOffset(const Entry& e) const {
  if (!e.stored || e.size == 0) return -1;
  zip_file_t* f = zip_fopen_index(Zip(zip_), e.index, 0);
  if (f == nullptr) return -1;
  uint8_t probe[64];
  const size_t want = static_cast<size_t>(std::min<uint64_t>(sizeof(probe), e.size));
  source_->last_read_start = -1;
  const zip_int64_t n = zip_fread(f, probe, want);
  const int64_t start = source_->last_read_start;
  zip_fclose(f);
  // Trust the position only when the bytes there are the ones libzip
  // returned and the whole entry fits in memory.
  if (n != static_cast<zip_int64_t>(want) || start < 0 ||
      static_cast<uint64_t>(start) > memory_->size ||
      e.size > memory_->size - static_cast<uint64_t>(start) ||
      std::memcmp(memory_->data + start, probe, want) != 0) {
    return -1;
  }
  return start;
}

absl::StatusOr<EntryBytes> Archive::Bytes(absl::string_view relative) const {
  ASSIGN_OR_RETURN(const Entry* e, Find(relative));
  EntryBytes out;
  const int64_t offset = DataOffset(*e);
  if (offset >= 0 && reinterpret_cast<uintptr_t>(memory_->data + offset) % 64 == 0) {
    const uint8_t* data = memory_->data + offset;
    if (options_.verify_crc && e->has_crc && Crc32(data, e->size) != e->crc) {
      return absl::InvalidArgumentError(absl::StrCat(
          Describe(relative), ": CRC-32 mismatch (the bytes disagree with the zip directory)"));
    }
    out.data = data;
    out.size = e->size;
    out.keep_alive = memory_;
    out.zero_copy = true;
    return out;
  }
  ASSIGN_OR_RETURN(std::string copy, ReadCopy(*e, relative));
  auto owned = std::make_shared<std::string>(std::move(copy));
  out.data = reinterpret_cast<const uint8_t*>(owned->data());
  out.size = owned->size();
  out.keep_alive = std::move(owned);
  return out;
}

}  // namespace kiln::frontend::pt2
