#include "backends/cpu/packed_cache.h"

#include "absl/strings/str_cat.h"
#include "support/disk_cache.h"

namespace kiln::backends::cpu {
namespace {

constexpr size_t kMagicBytes = 8;
constexpr int kPackedEntryFormat = 1;
// Bounds a parser accepts (real headers: a few hundred slots of ~200 bytes).
constexpr uint64_t kMaxHeaderBytes = uint64_t{64} << 20;
constexpr uint32_t kMaxFingerprintBytes = 4096;

void PutU32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void PutU64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void PutString(std::string* out, const std::string& s) {
  PutU32(out, static_cast<uint32_t>(s.size()));
  out->append(s);
}

// Reads little-endian fields from a byte range; any read past its end
// fails (and every later one).
class Reader {
 public:
  explicit Reader(absl::string_view bytes) : bytes_(bytes) {}
  bool U32(uint32_t* v) { return Fixed(4, v); }
  bool U64(uint64_t* v) { return Fixed(8, v); }
  bool String(std::string* s) {
    uint32_t n = 0;
    if (!U32(&n) || n > kMaxFingerprintBytes || n > bytes_.size() - at_) return ok_ = false;
    s->assign(bytes_.data() + at_, n);
    at_ += n;
    return true;
  }
  size_t remaining() const { return bytes_.size() - at_; }

 private:
  template <typename T>
  bool Fixed(size_t n, T* v) {
    if (!ok_ || n > bytes_.size() - at_) return ok_ = false;
    T out = 0;
    for (size_t i = 0; i < n; ++i) out |= static_cast<T>(static_cast<unsigned char>(bytes_[at_ + i])) << (8 * i);
    at_ += n;
    *v = out;
    return true;
  }
  absl::string_view bytes_;
  size_t at_ = 0;
  bool ok_ = true;
};

uint64_t DataStart(uint64_t header_bytes) {
  const uint64_t end = kMagicBytes + 8 + header_bytes;
  return (end + kPackedDataAlignment - 1) / kPackedDataAlignment * kPackedDataAlignment;
}

}  // namespace

std::string PackedEntryKey(absl::string_view constants_identity, absl::string_view library_version,
                           const std::vector<PackedSlot>& slots, uint64_t data_bytes) {
  CacheKeyBuilder key;
  key.Add("kiln-cpu-packed").Add(absl::StrCat(kPackedEntryFormat)).Add(constants_identity).Add(library_version);
  key.Add(absl::StrCat(slots.size(), ":", data_bytes));
  for (const PackedSlot& s : slots) {
    key.Add(absl::StrCat(s.constant, ":", s.source_offset, ":", s.offset, ":", s.bytes)).Add(s.user).Add(s.packed);
  }
  return key.Hex();
}

std::string PackedEntryHead(const std::vector<PackedSlot>& slots, uint64_t data_bytes) {
  std::string header;
  PutU32(&header, static_cast<uint32_t>(slots.size()));
  for (const PackedSlot& s : slots) {
    PutU32(&header, s.constant);
    PutU64(&header, s.source_offset);
    PutU64(&header, s.offset);
    PutU64(&header, s.bytes);
    PutString(&header, s.user);
    PutString(&header, s.packed);
  }
  PutU64(&header, data_bytes);
  std::string out(kPackedEntryMagic, kMagicBytes);
  PutU64(&out, header.size());
  out.append(header);
  out.resize(DataStart(header.size()), '\0');
  return out;
}

absl::StatusOr<PackedEntry> ParsePackedEntry(absl::string_view bytes, absl::string_view display_name) {
  auto bad = [&](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat(display_name, ": ", what));
  };
  if (bytes.size() < kMagicBytes + 8 || bytes.substr(0, kMagicBytes) != absl::string_view(kPackedEntryMagic, kMagicBytes)) {
    return bad("not a packed-weights entry (magic)");
  }
  uint64_t header_bytes = 0;
  Reader size_reader(bytes.substr(kMagicBytes, 8));
  size_reader.U64(&header_bytes);
  if (header_bytes > kMaxHeaderBytes || header_bytes > bytes.size() - kMagicBytes - 8) {
    return bad(absl::StrCat("header of ", header_bytes, " bytes runs past the entry's ", bytes.size()));
  }
  Reader r(bytes.substr(kMagicBytes + 8, header_bytes));
  PackedEntry out;
  out.data_offset = DataStart(header_bytes);
  uint32_t count = 0;
  if (!r.U32(&count)) return bad("truncated header");
  // Each slot takes at least 36 header bytes: a count beyond that is a lie.
  if (count > r.remaining() / 36) return bad(absl::StrCat(count, " slots in a header of ", header_bytes, " bytes"));
  out.slots.resize(count);
  for (PackedSlot& s : out.slots) {
    if (!r.U32(&s.constant) || !r.U64(&s.source_offset) || !r.U64(&s.offset) || !r.U64(&s.bytes) ||
        !r.String(&s.user) || !r.String(&s.packed)) {
      return bad("truncated header");
    }
  }
  if (!r.U64(&out.data_bytes)) return bad("truncated header");
  if (r.remaining() != 0) return bad(absl::StrCat(r.remaining(), " bytes after the header's fields"));
  if (out.data_offset > bytes.size() || out.data_bytes != bytes.size() - out.data_offset) {
    return bad(absl::StrCat("data of ", out.data_bytes, " bytes at ", out.data_offset, " does not end the entry of ",
                            bytes.size()));
  }
  for (size_t i = 0; i < out.slots.size(); ++i) {
    const PackedSlot& s = out.slots[i];
    if (s.offset % 64 != 0 || s.offset > out.data_bytes || s.bytes > out.data_bytes - s.offset) {
      return bad(absl::StrCat("slot ", i, ": ", s.bytes, " bytes at ", s.offset, " outside the data"));
    }
  }
  return out;
}

}  // namespace kiln::backends::cpu
