#include "lazy/graph_executor.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "lazy/backend_interface.h"
#include "lazy/lowering_context.h"
#include "lazy/metrics.h"
#include "support/hash.h"
#include "support/status.h"

ABSL_FLAG(int64_t, kiln_lazy_compile_cache_size, 64,
          "Entries of the lazy tensor compile cache (LRU; compiled computations by graph key).");

namespace kiln::lazy {

struct LazyGraphExecutor::Collected {
  std::vector<std::shared_ptr<LazyTensorData>> tensors;  // pending, deduplicated
  std::vector<size_t> result_of;                         // tensor -> result index
  std::vector<NodePtr> roots;                            // distinct pending nodes
  std::vector<const Node*> post_order;
  std::vector<BackendDataPtr> parameters;
  std::vector<size_t> parameter_sequence;
  const DeviceContext* context = nullptr;
  uint64_t hash = 0;
};

LazyGraphExecutor& LazyGraphExecutor::Get() {
  static LazyGraphExecutor* executor = new LazyGraphExecutor();
  return *executor;
}

LazyGraphExecutor::LazyGraphExecutor()
    : compile_cache_(static_cast<size_t>(
          std::max<int64_t>(1, absl::GetFlag(FLAGS_kiln_lazy_compile_cache_size)))) {}

DeviceContext* LazyGraphExecutor::GetDeviceContext(const BackendDevice& device) {
  absl::MutexLock lock(&contexts_mu_);
  std::unique_ptr<DeviceContext>& ctx = contexts_[device];
  if (ctx == nullptr) ctx = std::make_unique<DeviceContext>(device);
  return ctx.get();
}

void LazyGraphExecutor::SetCompileCacheSize(size_t entries) {
  const size_t evicted = compile_cache_.SetCapacity(std::max<size_t>(1, entries));
  GlobalMetrics().cache_evictions.fetch_add(static_cast<int64_t>(evicted));
}

void LazyGraphExecutor::ClearCaches() {
  compile_cache_.Clear();
  absl::MutexLock lock(&contexts_mu_);
  for (auto& [device, ctx] : contexts_) ctx->uploads.Clear();
}

absl::StatusOr<BackendDataPtr> LazyGraphExecutor::UploadCached(const Tensor& host,
                                                               const BackendDevice& device) {
  if (!host.has_data()) {
    return absl::InvalidArgumentError("lazy tensor: cannot upload a tensor without data");
  }
  DeviceContext* ctx = GetDeviceContext(device);
  HostValueKey probe{host, host.ValueHash()};
  Metrics& m = GlobalMetrics();
  if (std::shared_ptr<BackendData> hit = ctx->uploads.Get(probe)) {
    m.upload_cache_hits.fetch_add(1, std::memory_order_relaxed);
    return hit;
  }
  ASSIGN_OR_RETURN(BackendImplInterface * backend, GetBackend());
  BackendDataPtr data;
  {
    ScopedTimer timer(&m.upload_ns);
    ASSIGN_OR_RETURN(data, backend->MakeComputationDataFromTensor(
                               host, Shape(host.dtype(), host.sizes()), device));
  }
  m.uploads.fetch_add(1, std::memory_order_relaxed);
  // The key owns a copy: the caller may overwrite its host tensor later.
  Tensor contiguous = host.Contiguous();
  ASSIGN_OR_RETURN(Tensor copy, Tensor::FromBytes(host.dtype(), host.sizes(), contiguous.raw_data(),
                                                  static_cast<size_t>(host.numel()) *
                                                      host.element_size()));
  ctx->uploads.Put(HostValueKey{std::move(copy), probe.hash}, data);
  return data;
}

absl::StatusOr<BackendDataPtr> LazyGraphExecutor::UploadScalar(double value, DType dtype,
                                                               const BackendDevice& device) {
  Tensor host = IsFloatingPoint(dtype) ? Tensor::ScalarDouble(value, dtype)
                                       : Tensor::ScalarInt(static_cast<int64_t>(value), dtype);
  return UploadCached(host, device);
}

absl::StatusOr<NodePtr> LazyGraphExecutor::GetIrValue(LazyTensorData& tensor) {
  RETURN_IF_ERROR(tensor.error);
  absl::MutexLock lock(&tensor.mu);
  if (tensor.ir != nullptr) return tensor.ir;
  if (tensor.data == nullptr) {
    if (!tensor.host.defined()) {
      return absl::FailedPreconditionError(
          absl::StrCat("lazy tensor ", tensor.id, " has neither data nor a pending computation"));
    }
    ASSIGN_OR_RETURN(tensor.data, UploadCached(tensor.host, tensor.device));
  }
  tensor.ir = std::make_shared<Node>(tensor.data, tensor.shape);
  return tensor.ir;
}

void LazyGraphExecutor::InitPendingTensor(const std::shared_ptr<LazyTensorData>& tensor,
                                          NodePtr node) {
  if (tensor->context == nullptr) tensor->context = GetDeviceContext(tensor->device);
  DeviceContext* ctx = tensor->context;
  tensor->InitPending(std::move(node), ctx);
  absl::MutexLock lock(&ctx->live_mu);
  ctx->live.emplace(tensor->id, tensor);
}

absl::StatusOr<Tensor> LazyGraphExecutor::ToHost(const std::shared_ptr<LazyTensorData>& tensor) {
  RETURN_IF_ERROR(tensor->error);
  for (int attempt = 0; attempt < 2; ++attempt) {
    BackendDataPtr data;
    {
      absl::MutexLock lock(&tensor->mu);
      if (tensor->host.defined()) return tensor->host;
      data = tensor->data;
    }
    if (data != nullptr) {
      ASSIGN_OR_RETURN(BackendImplInterface * backend, GetBackend());
      return backend->MakeTensorFromComputationData(data, std::nullopt);
    }
    std::shared_ptr<LazyTensorData> one[] = {tensor};
    RETURN_IF_ERROR(SyncTensors(one));
  }
  return absl::InternalError(absl::StrCat("lazy tensor ", tensor->id, " has no data after a sync"));
}

absl::Status LazyGraphExecutor::Collect(absl::Span<const std::shared_ptr<LazyTensorData>> tensors,
                                        bool mark_step, Collected* out) {
  absl::flat_hash_set<int64_t> seen_tensors;
  absl::flat_hash_map<const Node*, size_t> root_index;
  const BackendDevice* device = nullptr;
  for (const std::shared_ptr<LazyTensorData>& t : tensors) {
    if (t == nullptr || !seen_tensors.insert(t->id).second) continue;
    RETURN_IF_ERROR(t->error);
    NodePtr pending;
    {
      absl::MutexLock lock(&t->mu);
      if (t->data != nullptr || t->ir == nullptr || t->ir->is_device_data()) continue;
      pending = t->ir;
    }
    if (device == nullptr) {
      device = &t->device;
    } else if (t->device != *device) {
      return absl::InvalidArgumentError(absl::StrCat("lazy sync: tensors on ", device->ToString(),
                                                     " and ", t->device.ToString(),
                                                     " cannot sync in one computation"));
    }
    auto [it, inserted] = root_index.try_emplace(pending.get(), out->roots.size());
    if (inserted) out->roots.push_back(pending);
    out->tensors.push_back(t);
    out->result_of.push_back(it->second);
  }
  if (out->roots.empty()) return absl::OkStatus();
  out->context = GetDeviceContext(*device);

  uint64_t h = HashMix(mark_step ? 0x6d61726bULL : 0x72656164ULL);
  h = HashCombine(h, static_cast<uint64_t>(device->type()));
  h = HashCombine(h, static_cast<uint64_t>(device->ordinal()));
  h = HashCombine(h, out->roots.size());
  std::vector<const Node*> roots;
  roots.reserve(out->roots.size());
  for (const NodePtr& r : out->roots) {
    h = HashCombine(h, r->hash());
    roots.push_back(r.get());
  }
  out->post_order = ComputePostOrder(roots);
  // The aliasing pattern: which leaves share data (by handle).
  absl::flat_hash_map<BackendData::Handle, size_t> param_index;
  for (const Node* n : out->post_order) {
    if (!n->is_device_data()) continue;
    auto [it, inserted] = param_index.try_emplace(n->data()->GetHandle(), out->parameters.size());
    if (inserted) out->parameters.push_back(n->data());
    out->parameter_sequence.push_back(it->second);
  }
  h = HashCombine(h, out->parameter_sequence.size());
  for (size_t s : out->parameter_sequence) h = HashCombine(h, s);
  out->hash = h;
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> LazyGraphExecutor::GetGraphHash(
    absl::Span<const std::shared_ptr<LazyTensorData>> tensors, bool mark_step) {
  Collected c;
  RETURN_IF_ERROR(Collect(tensors, mark_step, &c));
  return c.roots.empty() ? 0 : c.hash;
}

absl::Status LazyGraphExecutor::SyncTensors(
    absl::Span<const std::shared_ptr<LazyTensorData>> tensors, bool mark_step) {
  Metrics& m = GlobalMetrics();
  ASSIGN_OR_RETURN(BackendImplInterface * backend, GetBackend());
  // The device lock: the device of the first pending tensor (Collect checks
  // that every pending tensor is on it).
  DeviceContext* ctx = nullptr;
  for (const std::shared_ptr<LazyTensorData>& t : tensors) {
    if (t == nullptr) continue;
    RETURN_IF_ERROR(t->error);
    absl::MutexLock lock(&t->mu);
    if (t->data == nullptr && t->ir != nullptr && !t->ir->is_device_data()) {
      ctx = t->context != nullptr ? t->context : GetDeviceContext(t->device);
      break;
    }
  }
  if (ctx == nullptr) return absl::OkStatus();  // nothing pending
  absl::MutexLock device_lock(&ctx->sync_mu);

  Collected c;
  std::shared_ptr<CachedComputation> cached;
  {
    ScopedTimer timer(&m.lookup_ns);
    RETURN_IF_ERROR(Collect(tensors, mark_step, &c));
    if (c.roots.empty()) return absl::OkStatus();
    cached = compile_cache_.Get(c.hash);
  }
  m.syncs.fetch_add(1, std::memory_order_relaxed);
  const BackendDevice& device = c.context->device;
  if (cached != nullptr) {
    m.cache_hits.fetch_add(1, std::memory_order_relaxed);
  } else {
    m.cache_misses.fetch_add(1, std::memory_order_relaxed);
    ScopedTimer timer(&m.compile_ns);
    std::unique_ptr<LoweringContext> lowering =
        backend->CreateLoweringContext("SyncTensorsGraph", device, c.post_order);
    for (const NodePtr& root : c.roots) {
      ASSIGN_OR_RETURN(size_t index, lowering->AddResult(root.get()));
      (void)index;
    }
    ASSIGN_OR_RETURN(ComputationPtr computation, lowering->Build());
    computation->in_mark_step = mark_step;
    ASSIGN_OR_RETURN(std::vector<ComputationPtr> compiled, backend->Compile({computation}));
    m.compiles.fetch_add(1, std::memory_order_relaxed);
    if (compiled.size() != 1 || compiled[0] == nullptr) {
      return absl::InternalError("lazy backend: Compile did not return one computation");
    }
    if (compiled[0]->parameters_size() != c.parameters.size()) {
      return absl::InternalError(absl::StrCat(
          "lazy backend: the computation has ", compiled[0]->parameters_size(),
          " parameters but the graph has ", c.parameters.size(), " distinct device data"));
    }
    cached = std::make_shared<CachedComputation>();
    cached->computation = std::move(compiled[0]);
    const size_t evicted = compile_cache_.Put(c.hash, cached);
    m.cache_evictions.fetch_add(static_cast<int64_t>(evicted), std::memory_order_relaxed);
  }

  std::vector<BackendDataPtr> results;
  {
    ScopedTimer timer(&m.execute_ns);
    ASSIGN_OR_RETURN(results, backend->ExecuteComputation(cached->computation, c.parameters, device));
  }
  m.executions.fetch_add(1, std::memory_order_relaxed);
  if (results.size() != c.roots.size()) {
    return absl::InternalError(absl::StrCat("lazy backend: ", results.size(),
                                            " results for ", c.roots.size(), " synced values"));
  }
  for (size_t i = 0; i < c.tensors.size(); ++i) {
    LazyTensorData& t = *c.tensors[i];
    DeviceContext* live_in = nullptr;
    {
      absl::MutexLock lock(&t.mu);
      t.data = results[c.result_of[i]];
      t.ir = nullptr;
      std::swap(live_in, t.live_in);
    }
    if (live_in != nullptr) {
      absl::MutexLock lock(&live_in->live_mu);
      live_in->live.erase(t.id);
    }
  }
  return absl::OkStatus();
}

absl::Status LazyGraphExecutor::MarkStep(const BackendDevice& device) {
  GlobalMetrics().mark_steps.fetch_add(1, std::memory_order_relaxed);
  DeviceContext* ctx = GetDeviceContext(device);
  std::vector<std::shared_ptr<LazyTensorData>> live;
  {
    absl::MutexLock lock(&ctx->live_mu);
    live.reserve(ctx->live.size());
    for (auto& [id, weak] : ctx->live) {
      if (std::shared_ptr<LazyTensorData> t = weak.lock()) live.push_back(std::move(t));
    }
  }
  // Creation order, so that the same program gives the same roots.
  std::sort(live.begin(), live.end(),
            [](const auto& a, const auto& b) { return a->id < b->id; });
  return SyncTensors(live, /*mark_step=*/true);
}

}  // namespace kiln::lazy
