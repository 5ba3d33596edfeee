#include "passes/pass.h"

namespace kiln::passes {

void PassStatistics::Add(absl::string_view counter, int64_t delta) {
  for (auto& [name, value] : counters_) {
    if (name == counter) {
      value += delta;
      return;
    }
  }
  counters_.emplace_back(std::string(counter), delta);
}

int64_t PassStatistics::Get(absl::string_view counter) const {
  for (const auto& [name, value] : counters_) {
    if (name == counter) return value;
  }
  return 0;
}

void PassStatistics::Merge(const PassStatistics& other) {
  for (const auto& [name, value] : other.counters_) Add(name, value);
}

}  // namespace kiln::passes
