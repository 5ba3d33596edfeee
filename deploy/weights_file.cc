#include "deploy/weights_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <cerrno>
#include <cstring>
#include <set>

#include "absl/strings/str_cat.h"
#include "support/dtype.h"
#include "support/status.h"

namespace kiln::deploy {
namespace {

constexpr char kMagic[8] = {'K', 'I', 'L', 'N', 'W', 'T', 'S', '\0'};
constexpr size_t kHeaderBytes = 64;
constexpr uint32_t kTensorEntry = 0;
constexpr uint32_t kMetadataEntry = 1;

uint64_t AlignUp(uint64_t v) { return (v + kWeightsAlignment - 1) / kWeightsAlignment * kWeightsAlignment; }

template <typename T>
void Put(std::string* out, T v) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &v, sizeof(T));  // kiln targets little-endian hosts
  out->append(bytes, sizeof(T));
}

template <typename T>
void PutAt(std::string* out, size_t at, T v) {
  std::memcpy(out->data() + at, &v, sizeof(T));
}

// Reads the table with bounds checks; every failure names the entry.
class Cursor {
 public:
  Cursor(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  template <typename T>
  bool Get(T* v) {
    if (size_ - pos_ < sizeof(T)) return false;
    std::memcpy(v, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool GetBytes(size_t n, std::string* out) {
    if (size_ - pos_ < n) return false;
    out->assign(reinterpret_cast<const char*>(data_ + pos_), n);
    pos_ += n;
    return true;
  }
  bool done() const { return pos_ == size_; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

struct Mapping {
  void* address = nullptr;
  size_t size = 0;
  ~Mapping() {
    if (address != nullptr) munmap(address, size);
  }
};

}  // namespace

absl::StatusOr<std::string> SerializeWeights(const std::vector<std::pair<std::string, Tensor>>& tensors,
                                             const std::map<std::string, std::string>& metadata) {
  if (tensors.size() + metadata.size() > kMaxWeightsEntries) {
    return absl::InvalidArgumentError("weights: too many entries");
  }
  std::set<std::string> names;
  std::string table;
  std::vector<Tensor> contiguous;
  std::vector<size_t> offset_fields;  // where each tensor's offset goes in `table`
  for (const auto& [name, tensor] : tensors) {
    if (name.empty() || name.size() > kMaxWeightsNameBytes || name.find('\0') != std::string::npos ||
        !names.insert(name).second) {
      return absl::InvalidArgumentError(absl::StrCat("weights: bad or repeated tensor name '", name, "'"));
    }
    if (!tensor.defined() || !tensor.has_data()) {
      return absl::InvalidArgumentError(absl::StrCat("weights: tensor '", name, "' has no data"));
    }
    if (tensor.dim() > kMaxWeightsRank) {
      return absl::InvalidArgumentError(absl::StrCat("weights: tensor '", name, "' has rank above 64"));
    }
    Put<uint32_t>(&table, kTensorEntry);
    Put<uint32_t>(&table, static_cast<uint32_t>(name.size()));
    table += name;
    Put<int32_t>(&table, static_cast<int32_t>(DTypeCode(tensor.dtype())));
    Put<uint32_t>(&table, static_cast<uint32_t>(tensor.dim()));
    for (int64_t s : tensor.sizes()) Put<int64_t>(&table, s);
    offset_fields.push_back(table.size());
    Put<uint64_t>(&table, 0);  // offset, filled in below
    contiguous.push_back(tensor.Contiguous());
    Put<uint64_t>(&table, static_cast<uint64_t>(contiguous.back().numel()) * contiguous.back().element_size());
  }
  for (const auto& [key, value] : metadata) {
    if (key.empty() || key.size() > kMaxWeightsNameBytes || key.find('\0') != std::string::npos ||
        !names.insert(key).second) {
      return absl::InvalidArgumentError(absl::StrCat("weights: bad or repeated metadata key '", key, "'"));
    }
    Put<uint32_t>(&table, kMetadataEntry);
    Put<uint32_t>(&table, static_cast<uint32_t>(key.size()));
    table += key;
    Put<uint64_t>(&table, value.size());
    table += value;
  }
  const uint64_t data_offset = AlignUp(kHeaderBytes + table.size());
  uint64_t end = data_offset;
  for (size_t i = 0; i < contiguous.size(); ++i) {
    PutAt<uint64_t>(&table, offset_fields[i], end);
    end = AlignUp(end + static_cast<uint64_t>(contiguous[i].numel()) * contiguous[i].element_size());
  }
  std::string out;
  out.reserve(end);
  out.append(kMagic, sizeof(kMagic));
  Put<uint32_t>(&out, kWeightsFormatVersion);
  Put<uint32_t>(&out, static_cast<uint32_t>(tensors.size() + metadata.size()));
  Put<uint64_t>(&out, kHeaderBytes);
  Put<uint64_t>(&out, table.size());
  Put<uint64_t>(&out, data_offset);
  Put<uint64_t>(&out, end);
  Put<uint64_t>(&out, XXH3_64bits(table.data(), table.size()));
  Put<uint64_t>(&out, 0);
  out += table;
  for (const Tensor& t : contiguous) {
    out.resize(AlignUp(out.size()), '\0');
    out.append(static_cast<const char*>(t.raw_data()), static_cast<size_t>(t.numel()) * t.element_size());
  }
  out.resize(end, '\0');
  return out;
}

absl::StatusOr<WeightsContents> ParseWeights(const void* data, size_t size, std::shared_ptr<const void> owner,
                                             absl::string_view display_name) {
  const std::string file(display_name);
  auto bad = [&](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat(file, ": ", what, " (not a kiln weights file, or a corrupt or truncated one)"));
  };
  if (reinterpret_cast<uintptr_t>(data) % kWeightsAlignment != 0) {
    return absl::InvalidArgumentError(absl::StrCat(file, ": bytes not 64-byte aligned in memory"));
  }
  const auto* bytes = static_cast<const uint8_t*>(data);
  if (size < kHeaderBytes) return bad(absl::StrCat("file of ", size, " bytes is shorter than the 64-byte header"));
  if (std::memcmp(bytes, kMagic, sizeof(kMagic)) != 0) return bad("bad magic");
  Cursor header(bytes + sizeof(kMagic), kHeaderBytes - sizeof(kMagic));
  uint32_t version = 0, count = 0;
  uint64_t table_offset = 0, table_bytes = 0, data_offset = 0, file_bytes = 0, table_hash = 0, zero = 1;
  header.Get(&version);
  header.Get(&count);
  header.Get(&table_offset);
  header.Get(&table_bytes);
  header.Get(&data_offset);
  header.Get(&file_bytes);
  header.Get(&table_hash);
  header.Get(&zero);
  if (version != kWeightsFormatVersion) {
    return bad(absl::StrCat("format version ", version, ", expected ", kWeightsFormatVersion));
  }
  if (file_bytes != size) {
    return bad(absl::StrCat("the header says ", file_bytes, " bytes, the file has ", size));
  }
  if (count > kMaxWeightsEntries) return bad(absl::StrCat(count, " entries (at most ", kMaxWeightsEntries, ")"));
  if (table_offset != kHeaderBytes || zero != 0 || table_bytes > size - kHeaderBytes ||
      data_offset % kWeightsAlignment != 0 || data_offset < kHeaderBytes + table_bytes || data_offset > size) {
    return bad("table or data offsets outside the file");
  }
  if (XXH3_64bits(bytes + table_offset, table_bytes) != table_hash) return bad("table checksum mismatch");

  WeightsContents contents;
  std::set<std::string> names;
  Cursor table(bytes + table_offset, table_bytes);
  for (uint32_t i = 0; i < count; ++i) {
    const std::string where = absl::StrCat("entry ", i);
    uint32_t kind = 0, name_bytes = 0;
    std::string name;
    if (!table.Get(&kind) || !table.Get(&name_bytes)) return bad(absl::StrCat(where, ": table ends early"));
    if (name_bytes == 0 || name_bytes > kMaxWeightsNameBytes) {
      return bad(absl::StrCat(where, ": name of ", name_bytes, " bytes"));
    }
    if (!table.GetBytes(name_bytes, &name)) return bad(absl::StrCat(where, ": table ends early"));
    if (name.find('\0') != std::string::npos) return bad(absl::StrCat(where, ": name contains NUL"));
    if (!names.insert(name).second) return bad(absl::StrCat(where, ": name '", name, "' repeated"));
    const std::string named = absl::StrCat(where, " '", name, "'");
    if (kind == kMetadataEntry) {
      uint64_t value_bytes = 0;
      std::string value;
      if (!table.Get(&value_bytes) || value_bytes > table_bytes || !table.GetBytes(value_bytes, &value)) {
        return bad(absl::StrCat(named, ": metadata value runs past the table"));
      }
      contents.metadata.emplace(name, std::move(value));
      continue;
    }
    if (kind != kTensorEntry) return bad(absl::StrCat(named, ": unknown entry kind ", kind));
    int32_t dtype_code = 0;
    uint32_t rank = 0;
    if (!table.Get(&dtype_code) || !table.Get(&rank)) return bad(absl::StrCat(named, ": table ends early"));
    const std::optional<DType> dtype = DTypeFromCode(dtype_code);
    if (!dtype.has_value()) return bad(absl::StrCat(named, ": unknown dtype code ", dtype_code));
    if (rank > kMaxWeightsRank) return bad(absl::StrCat(named, ": rank ", rank, " (at most 64)"));
    std::vector<int64_t> sizes(rank);
    int64_t numel = 1;
    for (uint32_t d = 0; d < rank; ++d) {
      if (!table.Get(&sizes[d])) return bad(absl::StrCat(named, ": table ends early"));
      if (sizes[d] < 0 || __builtin_mul_overflow(numel, sizes[d], &numel)) {
        return bad(absl::StrCat(named, ": bad size ", sizes[d], " in dim ", d));
      }
    }
    uint64_t offset = 0, nbytes = 0, expected = 0;
    if (!table.Get(&offset) || !table.Get(&nbytes)) return bad(absl::StrCat(named, ": table ends early"));
    if (__builtin_mul_overflow(static_cast<uint64_t>(numel), static_cast<uint64_t>(DTypeSize(*dtype)), &expected) ||
        expected != nbytes) {
      return bad(absl::StrCat(named, ": ", nbytes, " bytes for ", numel, " ", DTypeName(*dtype), " elements"));
    }
    if (offset % kWeightsAlignment != 0 || offset < data_offset || offset > size || nbytes > size - offset) {
      return bad(absl::StrCat(named, ": data at offset ", offset, " (", nbytes, " bytes) outside the data region"));
    }
    // Read-only memory: Storage's pointer is mutable by type only.
    auto storage = Storage::WrapCpu(const_cast<uint8_t*>(bytes + offset), nbytes, owner);
    if (storage == nullptr) return bad(absl::StrCat(named, ": unaligned data"));
    absl::StatusOr<Tensor> tensor =
        Tensor::FromStorage(std::move(storage), *dtype, sizes, Tensor::ContiguousStrides(sizes), 0);
    if (!tensor.ok()) return bad(absl::StrCat(named, ": ", tensor.status().message()));
    contents.tensors.emplace(name, *std::move(tensor));
  }
  if (!table.done()) return bad("bytes after the last table entry");
  return contents;
}

absl::StatusOr<WeightsContents> MapWeightsFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    const std::string message = absl::StrCat(path, ": cannot open: ", std::strerror(err));
    return err == ENOENT ? absl::NotFoundError(message) : absl::InvalidArgumentError(message);
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a regular file"));
  }
  if (st.st_size < static_cast<off_t>(kHeaderBytes)) {
    close(fd);
    return absl::InvalidArgumentError(absl::StrCat(path, ": file of ", st.st_size,
                                                   " bytes is shorter than the 64-byte header "
                                                   "(not a kiln weights file, or a truncated one)"));
  }
  auto mapping = std::make_shared<Mapping>();
  mapping->size = static_cast<size_t>(st.st_size);
  // Read-only: constants are never written; pages are shared with the page
  // cache (and other processes running the same model).
  void* m = mmap(nullptr, mapping->size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (m == MAP_FAILED) return absl::InternalError(absl::StrCat(path, ": cannot map: ", std::strerror(errno)));
  mapping->address = m;
  return ParseWeights(m, mapping->size, mapping, path);
}

}  // namespace kiln::deploy
