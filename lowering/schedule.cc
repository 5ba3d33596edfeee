// Kernel formation: after dead-buffer elimination and inlining
// (schedule_passes.h), computed buffers join fused kernels in topological
// order; extern calls are steps of their own and close every open kernel.
#include "lowering/schedule.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "lowering/expr_rewrite.h"
#include "lowering/schedule_passes.h"

namespace kiln::lowering {
namespace {

constexpr size_t kMaxNameOrigins = 8;

// A kernel being formed.
struct OpenKernel {
  size_t step = 0;
  bool has_reduction = false;
  std::vector<int64_t> ranges;            // the reduction's (or the pointwise) ranges
  std::vector<int64_t> reduction_ranges;  // when has_reduction
  std::vector<int64_t> outer_ranges;
  absl::flat_hash_set<std::string> members;
};

bool EndsWithOnes(const std::vector<int64_t>& r, size_t m) {
  if (r.size() < m) return false;
  for (size_t i = r.size() - m; i < r.size(); ++i) {
    if (r[i] != 1) return false;
  }
  return true;
}

// The outer ranges `b` would share with `k`, or nullopt when it cannot join.
std::optional<std::vector<int64_t>> JoinedOuter(const OpenKernel& k, const Buffer& b) {
  if (b.reduction) {
    if (k.has_reduction && b.reduction->ranges == k.ranges &&
        b.reduction->reduction_ranges == k.reduction_ranges) {
      return k.outer_ranges;
    }
    return std::nullopt;
  }
  const std::vector<int64_t>& r = b.pointwise->ranges;
  if (r == k.ranges) return k.outer_ranges;
  if (!k.has_reduction) return std::nullopt;
  // An epilogue over the reduced input space of a trailing keepdim reduction.
  size_t m = k.reduction_ranges.size();
  if (m == 0 || !EndsWithOnes(k.ranges, m)) return std::nullopt;
  std::vector<int64_t> outer(k.ranges.begin(), k.ranges.end() - m);
  std::vector<int64_t> expanded = outer;
  expanded.insert(expanded.end(), k.reduction_ranges.begin(), k.reduction_ranges.end());
  if (r != expanded) return std::nullopt;
  return outer;
}

// Every load `b` makes of a buffer in `k` is at that buffer's own index
// (the same outer iteration), so sharing the loop nest is safe.
using BufferMap = absl::flat_hash_map<std::string, const Buffer*>;

bool ReadsAtOwnIndex(const OpenKernel& k, const Buffer& b, const BufferMap& graph) {
  std::vector<const Expr*> loads;
  CollectLoads(*BodyOf(b), &loads);
  for (const Expr* l : loads) {
    if (!k.members.contains(l->buffer)) continue;
    auto it = graph.find(l->buffer);
    if (it == graph.end()) return false;
    const Buffer* producer = it->second;
    if (producer->pointwise && producer->pointwise->ranges != k.ranges && b.reduction) return false;
    if (ExprToString(l->args[0]) != ExprToString(IndexOf(producer->layout))) return false;
  }
  return true;
}

std::string Sanitize(const std::string& s) {
  std::string out;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    out.push_back(ok ? c : '_');
  }
  return out.empty() ? "op" : out;
}

std::string KernelName(const std::string& device, const std::vector<std::string>& buffers,
                       const BufferMap& graph, int index) {
  std::set<std::string> origins;
  for (const std::string& name : buffers) {
    auto it = graph.find(name);
    if (it == graph.end()) continue;
    for (const std::string& o : it->second->origins) origins.insert(Sanitize(o));
  }
  std::vector<std::string> parts(origins.begin(), origins.end());
  if (parts.size() > kMaxNameOrigins) parts.resize(kMaxNameOrigins);
  std::string prefix = device == "cpu" ? "cpp" : Sanitize(device);
  return absl::StrCat(prefix, "_fused_", absl::StrJoin(parts, "_"), "_", index);
}

}  // namespace

absl::StatusOr<Schedule> ScheduleGraph(LoopGraph& graph, const std::string& device) {
  for (const std::string& out : graph.outputs) {
    if (graph.Find(out) == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("schedule: unknown output buffer ", out));
    }
  }
  EliminateDeadBuffers(graph);
  InlinePointwise(graph);
  BufferMap by_name;
  for (const Buffer& b : graph.buffers) by_name[b.name] = &b;

  Schedule schedule;
  std::vector<OpenKernel> open;  // kernels after the last extern step
  // The step producing each buffer (-1: inputs, constants, their views).
  absl::flat_hash_map<std::string, int> step_of;
  for (const Buffer& b : graph.buffers) {
    int producer = -1;
    switch (b.kind) {
      case BufferKind::kInput:
      case BufferKind::kConstant:
        break;
      case BufferKind::kView: {
        auto it = step_of.find(b.view_of);
        producer = it == step_of.end() ? -1 : it->second;
        break;
      }
      case BufferKind::kExtern:
        if (b.extern_call) {
          open.clear();
          ScheduleStep step;
          step.kind = ScheduleStep::Kind::kExtern;
          step.buffer = b.name;
          schedule.steps.push_back(std::move(step));
          producer = static_cast<int>(schedule.steps.size()) - 1;
        } else {
          auto it = step_of.find(b.extern_source);
          producer = it == step_of.end() ? -1 : it->second;
        }
        break;
      case BufferKind::kComputed: {
        if (!BodyOf(b)) {
          return absl::InvalidArgumentError(absl::StrCat("schedule: ", b.name, " has no body"));
        }
        int last_dep = -1;
        std::vector<const Expr*> loads;
        CollectLoads(*BodyOf(b), &loads);
        for (const Expr* l : loads) {
          auto it = step_of.find(l->buffer);
          if (it != step_of.end()) last_dep = std::max(last_dep, it->second);
        }
        OpenKernel* target = nullptr;
        std::vector<int64_t> outer;
        for (size_t i = open.size(); i-- > 0;) {
          OpenKernel& k = open[i];
          if (static_cast<int>(k.step) < last_dep) break;
          std::optional<std::vector<int64_t>> joined = JoinedOuter(k, b);
          if (joined && ReadsAtOwnIndex(k, b, by_name)) {
            target = &k;
            outer = *joined;
            break;
          }
        }
        if (target == nullptr) {
          ScheduleStep step;
          step.kind = ScheduleStep::Kind::kKernel;
          step.kernel.device = device;
          schedule.steps.push_back(std::move(step));
          OpenKernel k;
          k.step = schedule.steps.size() - 1;
          if (b.reduction) {
            k.has_reduction = true;
            k.ranges = b.reduction->ranges;
            k.reduction_ranges = b.reduction->reduction_ranges;
          } else {
            k.ranges = b.pointwise->ranges;
          }
          k.outer_ranges = k.ranges;
          open.push_back(std::move(k));
          target = &open.back();
          outer = target->outer_ranges;
        }
        target->outer_ranges = outer;
        target->members.insert(b.name);
        schedule.steps[target->step].kernel.buffers.push_back(b.name);
        schedule.steps[target->step].kernel.outer_ranges = outer;
        producer = static_cast<int>(target->step);
        break;
      }
    }
    step_of[b.name] = producer;
  }

  int index = 0;
  for (ScheduleStep& step : schedule.steps) {
    if (step.kind != ScheduleStep::Kind::kKernel) continue;
    FusedKernel& k = step.kernel;
    std::set<std::string> written(k.buffers.begin(), k.buffers.end());
    std::set<std::string> reads;
    for (const std::string& name : k.buffers) {
      std::vector<const Expr*> loads;
      CollectLoads(*BodyOf(*by_name.at(name)), &loads);
      for (const Expr* l : loads) {
        if (!written.count(l->buffer)) reads.insert(l->buffer);
      }
    }
    k.reads.assign(reads.begin(), reads.end());
    k.name = KernelName(device, k.buffers, by_name, index++);
  }
  return schedule;
}

}  // namespace kiln::lowering
