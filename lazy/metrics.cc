#include "lazy/metrics.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace kiln::lazy {
namespace {

std::string Timer(const char* name, int64_t ns, int64_t count) {
  return absl::StrFormat("  %-18s %12.3f ms total  %10.3f us avg (%d)\n", name, ns / 1e6,
                         count > 0 ? ns / 1e3 / static_cast<double>(count) : 0.0, count);
}

}  // namespace

std::string MetricsSnapshot::ToString() const {
  std::string out = "lazy tensor metrics\n counters:\n";
  auto counter = [&](const char* name, int64_t v) {
    absl::StrAppend(&out, absl::StrFormat("  %-18s %d\n", name, v));
  };
  counter("Sync", syncs);
  counter("MarkStep", mark_steps);
  counter("CachedCompile", cache_hits);
  counter("UncachedCompile", cache_misses);
  counter("Compile", compiles);
  counter("CacheEviction", cache_evictions);
  counter("Execute", executions);
  counter("EagerFallback", fallbacks);
  counter("EagerOp", eager_ops);
  counter("Upload", uploads);
  counter("UploadCacheHit", upload_cache_hits);
  counter("TracedOp", traced_ops);
  absl::StrAppend(&out, " timers:\n");
  absl::StrAppend(&out, Timer("SyncLookup", lookup_ns, syncs));
  absl::StrAppend(&out, Timer("Compile", compile_ns, compiles));
  absl::StrAppend(&out, Timer("Execute", execute_ns, executions));
  absl::StrAppend(&out, Timer("EagerFallback", fallback_ns, fallbacks));
  absl::StrAppend(&out, Timer("EagerOp", eager_ns, eager_ops));
  absl::StrAppend(&out, Timer("Upload", upload_ns, uploads));
  return out;
}

MetricsSnapshot Metrics::Snapshot() const {
  MetricsSnapshot s;
  s.syncs = syncs.load();
  s.mark_steps = mark_steps.load();
  s.cache_hits = cache_hits.load();
  s.cache_misses = cache_misses.load();
  s.compiles = compiles.load();
  s.cache_evictions = cache_evictions.load();
  s.executions = executions.load();
  s.fallbacks = fallbacks.load();
  s.eager_ops = eager_ops.load();
  s.uploads = uploads.load();
  s.upload_cache_hits = upload_cache_hits.load();
  s.traced_ops = traced_ops.load();
  s.lookup_ns = lookup_ns.load();
  s.compile_ns = compile_ns.load();
  s.execute_ns = execute_ns.load();
  s.fallback_ns = fallback_ns.load();
  s.eager_ns = eager_ns.load();
  s.upload_ns = upload_ns.load();
  return s;
}

void Metrics::Reset() {
  for (std::atomic<int64_t>* a :
       {&syncs, &mark_steps, &cache_hits, &cache_misses, &compiles, &cache_evictions, &executions,
        &fallbacks, &eager_ops, &uploads, &upload_cache_hits, &traced_ops, &lookup_ns,
        &compile_ns, &execute_ns, &fallback_ns, &eager_ns, &upload_ns}) {
    a->store(0);
  }
}

Metrics& GlobalMetrics() {
  static Metrics* metrics = new Metrics();
  return *metrics;
}

}  // namespace kiln::lazy
