#include "wrapper/memory_planning.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "support/status.h"
#include "wrapper/layout_math.h"
#include "wrapper/validate.h"

namespace kiln::wrapper {
namespace {

absl::Status Overflow() {
  return absl::InvalidArgumentError("program storage bytes overflow int64");
}

// Range add / range max over line indices: Inductor's SegmentedTree for the
// estimated live bytes at each line.
class MaxTree {
 public:
  explicit MaxTree(const std::vector<int64_t>& values) : n_(values.size()) {
    size_ = 1;
    while (size_ < n_) size_ *= 2;
    max_.assign(2 * size_, 0);
    add_.assign(2 * size_, 0);
    for (size_t i = 0; i < n_; ++i) max_[size_ + i] = values[i];
    for (size_t i = size_; i-- > 1;) max_[i] = std::max(max_[2 * i], max_[2 * i + 1]);
  }
  // Inclusive ranges; empty when lo > hi.
  void Add(size_t lo, size_t hi, int64_t delta) {
    if (lo <= hi && hi < n_) Add(1, 0, size_ - 1, lo, hi, delta);
  }
  int64_t Max(size_t lo, size_t hi) const {
    return lo <= hi && hi < n_ ? Max(1, 0, size_ - 1, lo, hi) : 0;
  }

 private:
  void Add(size_t node, size_t l, size_t r, size_t lo, size_t hi, int64_t delta) {
    if (hi < l || r < lo) return;
    if (lo <= l && r <= hi) {
      max_[node] += delta;
      add_[node] += delta;
      return;
    }
    const size_t mid = (l + r) / 2;
    Add(2 * node, l, mid, lo, hi, delta);
    Add(2 * node + 1, mid + 1, r, lo, hi, delta);
    max_[node] = add_[node] + std::max(max_[2 * node], max_[2 * node + 1]);
  }
  int64_t Max(size_t node, size_t l, size_t r, size_t lo, size_t hi) const {
    if (hi < l || r < lo) return INT64_MIN / 4;
    if (lo <= l && r <= hi) return max_[node];
    const size_t mid = (l + r) / 2;
    return add_[node] + std::max(Max(2 * node, l, mid, lo, hi), Max(2 * node + 1, mid + 1, r, lo, hi));
  }

  size_t n_ = 0;
  size_t size_ = 1;
  std::vector<int64_t> max_;
  std::vector<int64_t> add_;
};

// Walks lines and follows storage: which name owns which storage, and how
// many bytes each storage has. Storage ids are the owner's first name.
struct StorageMap {
  absl::flat_hash_map<std::string, std::string> storage_of;  // name -> storage
  absl::flat_hash_map<std::string, int64_t> bytes;           // storage -> bytes

  // A storage the lines allocate.
  void Allocate(const std::string& name, int64_t size) {
    storage_of[name] = name;
    bytes[name] = size;
  }
  void Alias(const std::string& name, const std::string& of) {
    auto it = storage_of.find(of);
    std::string storage = it == storage_of.end() ? of : it->second;  // before any rehash
    storage_of[name] = std::move(storage);
  }
  std::string StorageOf(const std::string& name) const {
    auto it = storage_of.find(name);
    return it == storage_of.end() ? name : it->second;
  }
  int64_t BytesOf(const std::string& name) const {
    auto it = bytes.find(StorageOf(name));
    return it == bytes.end() ? 0 : it->second;
  }
};

bool IsCall(const Line& line) {
  return std::holds_alternative<KernelCallLine>(line) ||
         std::holds_alternative<ExternKernelLine>(line) ||
         std::holds_alternative<ExternKernelAllocLine>(line);
}

// Every buffer name a line reads (views and storages).
void ForEachUse(const Line& line, const std::function<void(const std::string&)>& fn) {
  if (const auto* l = std::get_if<KernelCallLine>(&line)) {
    for (const std::string& a : l->args) fn(a);
  } else if (const auto* l = std::get_if<ExternKernelLine>(&line)) {
    for (const auto& a : l->args) {
      if (!a.buffer.empty()) fn(a.buffer);
      for (const std::string& b : a.buffer_list) fn(b);  // Tensor[] arguments
    }
    for (const std::string& o : l->outputs) fn(o);
  } else if (const auto* l = std::get_if<ExternKernelAllocLine>(&line)) {
    for (const auto& a : l->args) {
      if (!a.buffer.empty()) fn(a.buffer);
      for (const std::string& b : a.buffer_list) fn(b);  // Tensor[] arguments
    }
  } else if (const auto* l = std::get_if<MultiOutputLine>(&line)) {
    fn(l->source);
  } else if (const auto* l = std::get_if<ReinterpretLine>(&line)) {
    fn(l->base);
  }
}

// Live bytes after each line, as the lines stand (no reuse yet): the
// estimate the peak check works on.
absl::StatusOr<std::vector<int64_t>> LiveBytesPerLine(const WrapperProgram& program) {
  StorageMap storage;
  std::vector<int64_t> live(program.lines.size(), 0);
  int64_t current = 0;
  for (size_t i = 0; i < program.lines.size(); ++i) {
    const Line& line = program.lines[i];
    int64_t delta = 0;
    if (const auto* l = std::get_if<AllocateLine>(&line)) {
      delta = StorageBytesOrZero(l->layout);
      storage.Allocate(l->buffer, delta);
    } else if (const auto* l = std::get_if<ExternKernelAllocLine>(&line)) {
      for (size_t k = 0; k < l->outputs.size(); ++k) {
        if (l->outputs[k].empty()) continue;
        const int64_t b = StorageBytesOrZero(l->layouts[k]);
        storage.Allocate(l->outputs[k], b);
        if (__builtin_add_overflow(delta, b, &delta)) return Overflow();
      }
    } else if (const auto* l = std::get_if<ReuseLine>(&line)) {
      storage.Alias(l->new_buffer, l->old_buffer);
    } else if (const auto* l = std::get_if<ReinterpretLine>(&line)) {
      storage.Alias(l->buffer, l->base);
    } else if (const auto* l = std::get_if<MultiOutputLine>(&line)) {
      storage.Alias(l->result, l->source);
    } else if (const auto* l = std::get_if<FreeIfNotReusedLine>(&line)) {
      if (!l->is_reused) delta = -storage.BytesOf(l->buffer);
    } else if (const auto* l = std::get_if<FreeLine>(&line)) {
      delta = -storage.BytesOf(l->buffer);
    }
    if (__builtin_add_overflow(current, delta, &current)) return Overflow();
    // A free takes effect after its line; an allocation at its line.
    live[i] = delta < 0 ? current - delta : current;
  }
  return live;
}

}  // namespace

ReuseKey ReuseKeyOf(const Layout& layout) {
  return ReuseKey{layout.device, layout.dtype, StorageBytesOrZero(layout), kBufferAlignment};
}

absl::StatusOr<ReusePlanStats> PlanBufferReuse(WrapperProgram& program,
                                               const ReusePlanOptions& options) {
  RETURN_IF_ERROR(ValidateWrapperProgram(program));
  ReusePlanStats stats;
  std::vector<Line>& lines = program.lines;
  const absl::flat_hash_set<std::string> outputs(program.outputs.begin(), program.outputs.end());

  if (options.drop_trailing_frees) {
    for (size_t i = lines.size(); i-- > 0;) {
      if (const auto* l = std::get_if<FreeIfNotReusedLine>(&lines[i])) {
        if (outputs.contains(l->buffer)) break;
      } else if (!std::holds_alternative<FreeLine>(lines[i]) &&
                 !std::holds_alternative<NullLine>(lines[i])) {
        break;
      }
      if (!std::holds_alternative<NullLine>(lines[i])) ++stats.dropped_trailing_frees;
      lines[i] = NullLine{};
    }
  }
  if (!options.allow_reuse) return stats;

  // Storage each name lives in, which storages the lines allocated (only
  // those may be pooled), and the last line that uses each storage through
  // any name (views included).
  StorageMap storage;
  absl::flat_hash_set<std::string> poolable;
  absl::flat_hash_map<std::string, size_t> last_use;
  for (size_t i = 0; i < lines.size(); ++i) {
    const Line& line = lines[i];
    if (const auto* l = std::get_if<AllocateLine>(&line)) {
      storage.Allocate(l->buffer, StorageBytesOrZero(l->layout));
      poolable.insert(l->buffer);
    } else if (const auto* l = std::get_if<ExternKernelAllocLine>(&line)) {
      for (const std::string& out : l->outputs) {
        if (!out.empty()) storage.Allocate(out, 0);
      }
    } else if (const auto* l = std::get_if<ReuseLine>(&line)) {
      storage.Alias(l->new_buffer, l->old_buffer);
    } else if (const auto* l = std::get_if<ReinterpretLine>(&line)) {
      storage.Alias(l->buffer, l->base);
    } else if (const auto* l = std::get_if<MultiOutputLine>(&line)) {
      storage.Alias(l->result, l->source);
    }
    ForEachUse(line, [&](const std::string& name) { last_use[storage.StorageOf(name)] = i; });
  }
  for (const std::string& out : program.outputs) last_use[storage.StorageOf(out)] = lines.size();

  std::unique_ptr<MaxTree> tree;
  int64_t overall_peak = 0;
  if (options.check_peak && !lines.empty()) {
    ASSIGN_OR_RETURN(std::vector<int64_t> live, LiveBytesPerLine(program));
    overall_peak = *std::max_element(live.begin(), live.end());
    tree = std::make_unique<MaxTree>(live);
  }

  std::vector<size_t> calls_before(lines.size() + 1, 0);  // call lines before index i
  for (size_t i = 0; i < lines.size(); ++i) calls_before[i + 1] = calls_before[i] + IsCall(lines[i]);

  absl::flat_hash_map<ReuseKey, std::vector<size_t>> pool;  // LIFO of free line indices
  absl::flat_hash_map<std::string, ReuseKey> key_of;          // storage -> key
  for (size_t i = 0; i < lines.size(); ++i) {
    Line& line = lines[i];
    if (auto* l = std::get_if<AllocateLine>(&line)) {
      const ReuseKey key = ReuseKeyOf(l->layout);
      auto it = pool.find(key);
      if (it == pool.end() || it->second.empty()) {
        key_of.emplace(l->buffer, key);
        continue;
      }
      const size_t free_index = it->second.back();
      it->second.pop_back();
      // No call between the free and this allocation (Inductor: freed at the
      // immediately preceding node).
      const bool adjacent = calls_before[i] == calls_before[free_index];
      if (tree != nullptr && !adjacent &&
          key.storage_bytes + tree->Max(free_index + 1, i - 1) > overall_peak) {
        it->second.push_back(free_index);
        ++stats.refused_for_peak;
        key_of.emplace(l->buffer, key);
        continue;
      }
      if (tree != nullptr && i > free_index + 1) {
        tree->Add(free_index + 1, i - 1, key.storage_bytes);
      }
      auto& free_line = std::get<FreeIfNotReusedLine>(lines[free_index]);
      free_line.is_reused = true;
      const std::string old_buffer = free_line.buffer;
      const std::string new_buffer = l->buffer;
      line = ReuseLine{old_buffer, new_buffer, l->layout, /*delete_old=*/true};
      key_of.emplace(new_buffer, key);
      ++stats.reused;
    } else if (auto* l = std::get_if<FreeIfNotReusedLine>(&line)) {
      if (l->is_reused) continue;
      const std::string owner = storage.StorageOf(l->buffer);
      // Only whole storages the lines allocated, and none whose views are
      // still used after this free.
      if (!poolable.contains(owner)) continue;
      auto use = last_use.find(owner);
      if (use != last_use.end() && use->second > i) continue;
      auto key = key_of.find(l->buffer);
      if (key == key_of.end()) continue;
      pool[key->second].push_back(i);
    }
  }
  RETURN_IF_ERROR(ValidateWrapperProgram(program));
  return stats;
}

const PoolAssignment* PoolPlan::Find(const std::string& buffer) const {
  for (const PoolAssignment& a : assignments) {
    if (std::find(a.buffers.begin(), a.buffers.end(), buffer) != a.buffers.end()) return &a;
  }
  return nullptr;
}

std::string PoolPlan::ToString() const {
  std::string out = absl::StrCat("arena ", arena_bytes, " bytes, outside ", outside_bytes, " bytes\n");
  for (const PoolAssignment& a : assignments) {
    absl::StrAppend(&out, absl::StrJoin(a.buffers, "="), " ", a.bytes, " bytes ",
                    a.offset < 0 ? std::string("outside") : absl::StrCat("@", a.offset),
                    " lines [", a.begin, ", ", a.end, "]", a.is_output ? " output" : "", "\n");
  }
  return out;
}

absl::StatusOr<PoolPlan> PlanMemoryPool(const WrapperProgram& program, const PoolOptions& options) {
  RETURN_IF_ERROR(ValidateWrapperProgram(program));
  if (options.alignment < 1 || options.alignment > (int64_t{1} << 30) ||
      (options.alignment & (options.alignment - 1)) != 0) {
    return absl::InvalidArgumentError("pool alignment must be a power of two up to 2^30");
  }
  PoolPlan plan;
  absl::flat_hash_map<std::string, size_t> group_of;  // buffer -> assignment index
  const int64_t last_line = program.lines.empty() ? 0 : static_cast<int64_t>(program.lines.size()) - 1;
  for (size_t i = 0; i < program.lines.size(); ++i) {
    const Line& line = program.lines[i];
    const int64_t li = static_cast<int64_t>(i);
    if (const auto* l = std::get_if<AllocateLine>(&line)) {
      group_of[l->buffer] = plan.assignments.size();
      PoolAssignment a;
      a.buffers = {l->buffer};
      a.bytes = StorageBytesOrZero(l->layout);
      a.begin = li;
      a.end = -1;  // not freed (yet)
      plan.assignments.push_back(std::move(a));
    } else if (const auto* l = std::get_if<ReuseLine>(&line)) {
      auto it = group_of.find(l->old_buffer);
      if (it == group_of.end()) continue;  // storage an extern allocated: not pooled
      const size_t group = it->second;  // copied: the insertion below may rehash
      group_of[l->new_buffer] = group;
      plan.assignments[group].buffers.push_back(l->new_buffer);
    } else if (const auto* l = std::get_if<FreeIfNotReusedLine>(&line)) {
      auto it = group_of.find(l->buffer);
      if (it != group_of.end() && !l->is_reused) plan.assignments[it->second].end = li;
    } else if (const auto* l = std::get_if<FreeLine>(&line)) {
      auto it = group_of.find(l->buffer);
      if (it != group_of.end()) plan.assignments[it->second].end = li;
    }
  }
  // Outputs may be views of pooled storage: their storage is an output too.
  absl::flat_hash_map<std::string, std::string> base_of;
  for (const Line& line : program.lines) {
    if (const auto* l = std::get_if<ReinterpretLine>(&line)) base_of[l->buffer] = l->base;
    if (const auto* l = std::get_if<MultiOutputLine>(&line)) base_of[l->result] = l->source;
  }
  for (std::string out : program.outputs) {
    for (size_t hops = 0; hops <= base_of.size() && base_of.contains(out); ++hops) out = base_of[out];
    auto it = group_of.find(out);
    if (it != group_of.end()) plan.assignments[it->second].is_output = true;
  }
  for (PoolAssignment& a : plan.assignments) {
    if (a.end < 0 || a.is_output) a.end = last_line;
  }

  std::vector<size_t> order;
  for (size_t k = 0; k < plan.assignments.size(); ++k) {
    PoolAssignment& a = plan.assignments[k];
    if (a.is_output && !options.include_outputs) {
      a.offset = -1;
      if (__builtin_add_overflow(plan.outside_bytes, a.bytes, &plan.outside_bytes)) return Overflow();
      continue;
    }
    order.push_back(k);
  }
  // Largest first, then longest-lived, then program order (deterministic).
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    const PoolAssignment& a = plan.assignments[x];
    const PoolAssignment& b = plan.assignments[y];
    if (a.bytes != b.bytes) return a.bytes > b.bytes;
    return a.end - a.begin > b.end - b.begin;
  });
  const int64_t align = options.alignment;
  auto aligned = [align](int64_t v, int64_t* out) {
    if (__builtin_add_overflow(v, align - 1, out)) return false;
    *out &= ~(align - 1);
    return true;
  };
  std::vector<size_t> placed;
  for (size_t k : order) {
    PoolAssignment& a = plan.assignments[k];
    std::vector<const PoolAssignment*> overlapping;
    for (size_t p : placed) {
      const PoolAssignment& b = plan.assignments[p];
      if (b.bytes > 0 && a.begin <= b.end && b.begin <= a.end) overlapping.push_back(&b);
    }
    std::sort(overlapping.begin(), overlapping.end(),
              [](const PoolAssignment* x, const PoolAssignment* y) { return x->offset < y->offset; });
    int64_t offset = 0;
    for (const PoolAssignment* b : overlapping) {
      int64_t end = 0;
      if (__builtin_add_overflow(offset, a.bytes, &end)) return Overflow();
      if (end <= b->offset) break;  // fits in the gap before b
      int64_t after = 0;
      if (__builtin_add_overflow(b->offset, b->bytes, &after) || !aligned(after, &after)) {
        return Overflow();
      }
      offset = std::max(offset, after);
    }
    a.offset = offset;
    int64_t end = 0;
    if (__builtin_add_overflow(offset, a.bytes, &end) || !aligned(end, &end)) return Overflow();
    plan.arena_bytes = std::max(plan.arena_bytes, end);
    placed.push_back(k);
  }
  return plan;
}

std::string MemoryReport::ToString() const {
  std::string out = absl::StrCat("buffers ", num_buffers, " (", num_reused, " reused), sum ",
                                 total_buffer_bytes, " bytes, planned peak ", peak_bytes, " bytes");
  if (total_buffer_bytes > 0) {
    absl::StrAppend(&out, " (", (100 * static_cast<double>(peak_bytes)) / total_buffer_bytes,
                    "% of sum)");
  }
  if (pool_bytes.has_value()) absl::StrAppend(&out, ", pool ", *pool_bytes, " bytes");
  return out;
}

absl::StatusOr<MemoryReport> ReportMemory(const WrapperProgram& program, const PoolPlan* pool) {
  RETURN_IF_ERROR(ValidateWrapperProgram(program));
  MemoryReport report;
  auto add = [](int64_t* total, int64_t v) { return !__builtin_add_overflow(*total, v, total); };
  for (const Line& line : program.lines) {
    if (const auto* l = std::get_if<AllocateLine>(&line)) {
      ++report.num_buffers;
      if (!add(&report.total_buffer_bytes, StorageBytesOrZero(l->layout))) return Overflow();
    } else if (const auto* l = std::get_if<ReuseLine>(&line)) {
      ++report.num_buffers;
      ++report.num_reused;
      if (!add(&report.total_buffer_bytes, StorageBytesOrZero(l->layout))) return Overflow();
    } else if (const auto* l = std::get_if<ExternKernelAllocLine>(&line)) {
      for (size_t k = 0; k < l->outputs.size(); ++k) {
        if (l->outputs[k].empty()) continue;
        ++report.num_buffers;
        if (!add(&report.total_buffer_bytes, StorageBytesOrZero(l->layouts[k]))) return Overflow();
      }
    }
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> live, LiveBytesPerLine(program));
  for (int64_t v : live) report.peak_bytes = std::max(report.peak_bytes, v);
  if (pool != nullptr) {
    int64_t total = pool->arena_bytes;
    if (!add(&total, pool->outside_bytes)) return Overflow();
    // Extern kernels allocate their outputs outside any pool.
    for (const Line& line : program.lines) {
      if (const auto* l = std::get_if<ExternKernelAllocLine>(&line)) {
        for (size_t k = 0; k < l->outputs.size(); ++k) {
          if (!l->outputs[k].empty() && !add(&total, StorageBytesOrZero(l->layouts[k]))) {
            return Overflow();
          }
        }
      }
    }
    report.pool_bytes = total;
  }
  return report;
}

}  // namespace kiln::wrapper
