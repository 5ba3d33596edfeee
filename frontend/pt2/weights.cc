#include "frontend/pt2/weights.h"

#include <cstring>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "support/status.h"

namespace kiln::frontend::pt2 {
namespace {

struct Folder {
  const char* dir;     // "data/weights/"
  const char* suffix;  // "_weights_config.json"
};
constexpr Folder kFolders[] = {
    {"data/weights/", "_weights_config.json"},
    {"data/constants/", "_constants_config.json"},
};

// A storage file as CPU storage: the archive's bytes when they are aligned,
// else a copy.
absl::StatusOr<std::shared_ptr<Storage>> StorageFor(const Archive& archive,
                                                    const std::string& entry, Payloads* out) {
  ASSIGN_OR_RETURN(EntryBytes bytes, archive.Bytes(entry));
  out->bytes += bytes.size;
  if (bytes.zero_copy) {
    std::shared_ptr<Storage> s = Storage::WrapCpu(const_cast<uint8_t*>(bytes.data), bytes.size,
                                                  bytes.keep_alive);
    if (s != nullptr) {
      ++out->zero_copy_files;
      return s;
    }
  }
  ++out->copied_files;
  std::shared_ptr<Storage> s = Storage::AllocateCpuUninitialized(bytes.size);
  if (bytes.size > 0) std::memcpy(s->data(), bytes.data, bytes.size);
  return s;
}

absl::StatusOr<std::vector<int64_t>> Concrete(const std::vector<SymSize>& v,
                                              const std::string& what) {
  std::optional<std::vector<int64_t>> values = StaticValues(v);
  if (!values) return absl::InvalidArgumentError(absl::StrCat(what, " is symbolic"));
  return *values;
}

}  // namespace

absl::StatusOr<Payloads> LoadPayloads(const Archive& archive, absl::string_view model,
                                      const std::set<std::string>& wanted) {
  Payloads out;
  std::set<std::string> missing = wanted;
  std::map<std::string, std::shared_ptr<Storage>> storages;  // by entry
  for (const Folder& folder : kFolders) {
    if (missing.empty()) break;
    const std::string config_entry = absl::StrCat(folder.dir, model, folder.suffix);
    if (!archive.Has(config_entry)) continue;
    ASSIGN_OR_RETURN(std::string text, archive.ReadText(config_entry));
    const std::string origin = absl::StrCat(archive.name(), ": ", archive.root(), "/", config_entry);
    ASSIGN_OR_RETURN(auto config, ParsePayloadConfig(text, origin));
    for (const auto& [fqn, meta] : config) {
      if (!missing.count(fqn)) continue;
      const std::string what = absl::StrCat(origin, ": '", fqn, "'");
      if (meta.use_pickle) {
        return absl::UnimplementedError(absl::StrCat(
            what, " is a pickled payload (an older archive, or a tensor subclass or custom object); "
                  "kiln reads raw tensor storage only and never unpickles"));
      }
      if (!meta.tensor_meta) return absl::InvalidArgumentError(absl::StrCat(what, " has no tensor_meta"));
      if (meta.path_name.empty() || meta.path_name.find('/') != std::string::npos ||
          meta.path_name == "." || meta.path_name == "..") {
        return absl::InvalidArgumentError(absl::StrCat(what, ": bad path_name '", meta.path_name, "'"));
      }
      const std::string entry = absl::StrCat(folder.dir, meta.path_name);
      auto it = storages.find(entry);
      if (it == storages.end()) {
        ASSIGN_OR_RETURN(std::shared_ptr<Storage> s, StorageFor(archive, entry, &out));
        it = storages.emplace(entry, std::move(s)).first;
      }
      const TensorMeta& m = *meta.tensor_meta;
      ASSIGN_OR_RETURN(std::vector<int64_t> sizes, Concrete(m.sizes, absl::StrCat(what, ": a size")));
      ASSIGN_OR_RETURN(std::vector<int64_t> strides,
                       Concrete(m.strides, absl::StrCat(what, ": a stride")));
      if (!m.storage_offset.value) {
        return absl::InvalidArgumentError(absl::StrCat(what, ": the storage offset is symbolic"));
      }
      absl::StatusOr<Tensor> t = Tensor::FromStorage(it->second, m.dtype, std::move(sizes),
                                                     std::move(strides), *m.storage_offset.value);
      if (!t.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(what, " does not fit entry '",
                                                       archive.root(), "/", entry,
                                                       "': ", t.status().message()));
      }
      // Constants are contiguous at offset 0 in kiln (a copy otherwise).
      out.tensors[fqn] = t->Contiguous();
      missing.erase(fqn);
    }
  }
  if (!missing.empty()) {
    return absl::NotFoundError(absl::StrCat(archive.name(), ": '", *missing.begin(),
                                            "' is in no weights or constants config of model '",
                                            model, "'"));
  }
  return out;
}

}  // namespace kiln::frontend::pt2
