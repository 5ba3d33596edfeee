#include "ir/symbol.h"

#include <deque>
#include <mutex>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace kiln::ir {
namespace {

struct Entry {
  std::string qual;
  size_t sep;  // index of "::"
};

// Entries live in a deque so references stay valid as the table grows. The
// table is append-only; readers hold the lock only to find the entry.
class SymbolTable {
 public:
  SymbolTable() { entries_.push_back({"", 0}); }  // id 0: invalid

  uint32_t Intern(absl::string_view qual) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = ids_.find(qual);
    if (it != ids_.end()) return it->second;
    size_t sep = qual.find("::");
    entries_.push_back({std::string(qual), sep == absl::string_view::npos ? 0 : sep});
    uint32_t id = static_cast<uint32_t>(entries_.size() - 1);
    ids_.emplace(absl::string_view(entries_.back().qual), id);
    return id;
  }

  const Entry& Get(uint32_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    return entries_[id < entries_.size() ? id : 0];
  }

 private:
  std::mutex mu_;
  std::deque<Entry> entries_;
  absl::flat_hash_map<absl::string_view, uint32_t> ids_;
};

SymbolTable& Table() {
  static SymbolTable* table = new SymbolTable();
  return *table;
}

}  // namespace

Symbol Symbol::FromQualString(absl::string_view qual) {
  return Symbol(Table().Intern(qual));
}

Symbol Symbol::Make(absl::string_view ns, absl::string_view name) {
  std::string qual;
  qual.reserve(ns.size() + 2 + name.size());
  absl::StrAppend(&qual, ns, "::", name);
  return FromQualString(qual);
}

absl::string_view Symbol::qualString() const { return Table().Get(id_).qual; }

absl::string_view Symbol::ns() const {
  const Entry& e = Table().Get(id_);
  return absl::string_view(e.qual).substr(0, e.sep);
}

absl::string_view Symbol::name() const {
  const Entry& e = Table().Get(id_);
  if (e.qual.empty()) return {};
  return absl::string_view(e.qual).substr(e.sep + 2);
}

bool Symbol::is_prim() const { return ns() == "prim"; }
bool Symbol::is_aten() const { return ns() == "aten"; }
bool Symbol::is_attr() const { return ns() == "attr"; }

namespace sym {
const Symbol kConstant = Symbol::FromQualString("prim::Constant");
const Symbol kParam = Symbol::FromQualString("prim::Param");
const Symbol kReturn = Symbol::FromQualString("prim::Return");
const Symbol kIf = Symbol::FromQualString("prim::If");
const Symbol kLoop = Symbol::FromQualString("prim::Loop");
const Symbol kListConstruct = Symbol::FromQualString("prim::ListConstruct");
const Symbol kListUnpack = Symbol::FromQualString("prim::ListUnpack");
const Symbol kTupleConstruct = Symbol::FromQualString("prim::TupleConstruct");
const Symbol kTupleUnpack = Symbol::FromQualString("prim::TupleUnpack");
const Symbol kTupleIndex = Symbol::FromQualString("prim::TupleIndex");
const Symbol kRaiseException = Symbol::FromQualString("prim::RaiseException");
const Symbol kPrint = Symbol::FromQualString("prim::Print");
const Symbol kUninitialized = Symbol::FromQualString("prim::Uninitialized");
const Symbol kGetAttr = Symbol::FromQualString("prim::GetAttr");
const Symbol kSetAttr = Symbol::FromQualString("prim::SetAttr");
const Symbol kCallMethod = Symbol::FromQualString("prim::CallMethod");
const Symbol kCallFunction = Symbol::FromQualString("prim::CallFunction");
const Symbol kNumToTensor = Symbol::FromQualString("prim::NumToTensor");
const Symbol kValue = Symbol::FromQualString("attr::value");
const Symbol kName = Symbol::FromQualString("attr::name");
}  // namespace sym

}  // namespace kiln::ir
