#include <algorithm>
#include <string>
#include <utility>

#include "frontend/onnx/converter.h"
#include "frontend/onnx/ops_families.h"

namespace kiln::frontend::onnx_import {
namespace {

// "ai.onnx" is the default domain's long name.
std::string CanonicalDomain(absl::string_view domain) {
  if (domain == "ai.onnx") return "";
  return std::string(domain);
}

}  // namespace

void ConverterRegistry::Add(absl::string_view domain, absl::string_view op_type,
                            int64_t since_version, ConverterFn fn) {
  table_[{CanonicalDomain(domain), std::string(op_type)}][since_version] = std::move(fn);
}

const ConverterFn* ConverterRegistry::Find(absl::string_view domain, absl::string_view op_type,
                                           int64_t opset) const {
  auto it = table_.find(std::make_pair(CanonicalDomain(domain), std::string(op_type)));
  if (it == table_.end()) return nullptr;
  auto v = it->second.upper_bound(opset);
  if (v == it->second.begin()) return nullptr;
  return &std::prev(v)->second;
}

bool ConverterRegistry::Knows(absl::string_view domain, absl::string_view op_type) const {
  return table_.contains(std::make_pair(CanonicalDomain(domain), std::string(op_type)));
}

int64_t ConverterRegistry::NewestOpset(absl::string_view domain) const {
  const std::string canonical = CanonicalDomain(domain);
  int64_t newest = 0;
  for (const auto& [key, versions] : table_) {
    if (key.first == canonical && !versions.empty()) {
      newest = std::max(newest, versions.rbegin()->first);
    }
  }
  return newest;
}

std::vector<std::pair<std::string, std::string>> ConverterRegistry::OpTypes() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [key, versions] : table_) out.push_back(key);
  std::sort(out.begin(), out.end());
  return out;
}

const ConverterRegistry& DefaultConverters() {
  static const ConverterRegistry* registry = [] {
    auto* r = new ConverterRegistry();
    RegisterNnConverters(*r);
    RegisterShapeConverters(*r);
    RegisterMathConverters(*r);
    RegisterSpecialConverters(*r);
    RegisterControlConverters(*r);
    return r;
  }();
  return *registry;
}

}  // namespace kiln::frontend::onnx_import
